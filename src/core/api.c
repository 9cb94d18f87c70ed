/* api.c - the dynamic API (baton/baton.h) over the registry's tables.
 *
 * A baton_lock_t is a small header (the hot operation pointers first)
 * followed, on its own cache line, by the kind's state.  Owner checking
 * (check=1, or every lock in a debug build) lives here, once, for every
 * kind: the header records the owner's token on lock and compares it on
 * unlock, so even kinds that do not track their owner report EPERM and
 * self-deadlock (EDEADLK).
 */
#include <baton/baton.h>
#include "registry.h"
#include "error.h"
#include "thread.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_MAX 160

struct baton_lock {
    void (*lock)(void *);
    int (*unlock)(void *);
    int (*trylock)(void *);
    void *state;
    int check;
    _Atomic uintptr_t owner; /* check mode only */
    const baton_kind_t *kind;
    char spec[SPEC_MAX];
};

/* Header size rounded up so the state starts on its own cache line. */
#define HEADER_SIZE ((sizeof(struct baton_lock) + BATON_CACHELINE - 1) / BATON_CACHELINE * BATON_CACHELINE)

baton_lock_t *baton_lock_new(const char *spec)
{
    const baton_kind_t *k;
    baton_opts_t o;
    char canon[SPEC_MAX];
    baton_clear_error();
    int rc = baton_spec_parse(spec, &k, &o, canon, sizeof canon);
    if (rc != 0) {
        errno = rc;
        return NULL;
    }
    size_t align = k->align > BATON_CACHELINE ? k->align : BATON_CACHELINE;
    size_t size = HEADER_SIZE + (k->size + align - 1) / align * align;
    struct baton_lock *l = aligned_alloc(align, size);
    if (!l) {
        errno = baton_fail(ENOMEM, "out of memory allocating a '%s' lock", k->name);
        return NULL;
    }
    memset(l, 0, size);
    l->lock = k->lock;
    l->unlock = k->unlock;
    l->trylock = k->trylock;
    l->state = (char *)l + HEADER_SIZE;
    l->check = o.check;
    l->kind = k;
    memcpy(l->spec, canon, sizeof l->spec);
    rc = k->init(l->state, &o);
    if (rc != 0) {
        free(l);
        errno = baton_fail(rc, "initialising a '%s' lock failed: %s", k->name, strerror(rc));
        return NULL;
    }
    return l;
}

int baton_lock_free(baton_lock_t *l)
{
    if (!l)
        return 0;
    if (l->check && atomic_load_explicit(&l->owner, memory_order_relaxed) != 0)
        return baton_fail(EBUSY, "lock '%s' freed while held", l->spec);
    int rc = l->kind->destroy(l->state);
    if (rc != 0)
        return baton_fail(rc, "lock '%s' freed while held", l->spec);
    free(l);
    return 0;
}

/* --- owner checking (check=1) --------------------------------------------- */

static int checked_lock(baton_lock_t *l)
{
    uintptr_t self = baton_self_token();
    if (atomic_load_explicit(&l->owner, memory_order_relaxed) == self)
        return baton_fail(EDEADLK, "lock '%s' locked again by its owner (locks are not recursive)",
                          l->spec);
    l->lock(l->state);
    /* Relaxed: only the owner writes it while holding; readers compare it
     * against their own token, which no other thread stores. */
    atomic_store_explicit(&l->owner, self, memory_order_relaxed);
    return 0;
}

static int checked_trylock(baton_lock_t *l)
{
    int rc = l->trylock(l->state);
    if (rc == 0)
        atomic_store_explicit(&l->owner, baton_self_token(), memory_order_relaxed);
    return rc;
}

static int checked_unlock(baton_lock_t *l)
{
    if (atomic_load_explicit(&l->owner, memory_order_relaxed) != baton_self_token())
        return baton_fail(EPERM, "lock '%s' unlocked by a thread that does not hold it", l->spec);
    atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
    return l->unlock(l->state);
}

/* --- the hot calls -------------------------------------------------------- */

int baton_lock(baton_lock_t *l)
{
    if (BATON_UNLIKELY(l->check))
        return checked_lock(l);
    l->lock(l->state);
    return 0;
}

int baton_trylock(baton_lock_t *l)
{
    if (BATON_UNLIKELY(l->check))
        return checked_trylock(l);
    return l->trylock(l->state);
}

int baton_unlock(baton_lock_t *l)
{
    if (BATON_UNLIKELY(l->check))
        return checked_unlock(l);
    return l->unlock(l->state);
}

int baton_execute(baton_lock_t *l, baton_fn fn, void *ctx)
{
    int rc = baton_lock(l);
    if (rc != 0)
        return rc;
    fn(ctx);
    return baton_unlock(l);
}

int baton_delegate(baton_lock_t *l, baton_fn fn, const void *args, size_t size)
{
    if (size > BATON_ARGS_MAX)
        return baton_fail(EINVAL, "delegate: %zu bytes of arguments, more than BATON_ARGS_MAX (%d); "
                                  "pass a pointer to them instead", size, BATON_ARGS_MAX);
    /* The function sees a private copy, as it would on a delegation kind
     * where it runs later on another thread. */
    _Alignas(16) unsigned char copy[BATON_ARGS_MAX];
    if (size)
        memcpy(copy, args, size);
    int rc = baton_lock(l);
    if (rc != 0)
        return rc;
    fn(copy);
    return baton_unlock(l);
}

const char *baton_lock_spec(const baton_lock_t *l)
{
    return l->spec;
}

const baton_kind_info_t *baton_lock_kind(const baton_lock_t *l)
{
    return baton_registry_info(l->kind);
}

const char *baton_version(void)
{
    return "0.1.0";
}
