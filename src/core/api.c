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
#include "../delegate/delegate.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_MAX 160

/* What a baton_lock_t points to: the handle, one pointer to the kind's
 * shared table of hot operations (struct baton_lock_ops, baton/baton.h).
 * For kinds that reserve a slot for it in their state's first cache line
 * (baton_kind_t.handle_slot), the handle lives there, so that lock and
 * unlock touch one line of the lock, the line they write anyway; for the
 * others, it is the last word of the header, just before the state. */
struct baton_lock {
    const struct baton_lock_ops *ops;
};

/* The rest of a lock, read off the hot path only: the allocation starts
 * with it, and the state follows at HEADER_SIZE. */
struct lock_block {
    /* Delegation kinds' own execute/delegate; NULL: lock, call, unlock. */
    int (*execute)(void *, baton_fn, void *);
    int (*delegate)(void *, baton_fn, const void *, size_t, baton_future_t *);
    baton_wait_t fwait; /* how a future of this lock is waited for */
    int check;
    _Atomic uintptr_t owner; /* check mode only */
    const baton_kind_t *kind;
    struct baton_lock *handle;
    char spec[SPEC_MAX];
};

/* The header (the block, then room for a handle outside the state),
 * rounded up so that the state starts on its own cache line.  Every kind's
 * alignment divides it (checked in baton_lock_new). */
#define HEADER_SIZE                                                                              \
    ((sizeof(struct lock_block) + sizeof(struct baton_lock) + BATON_CACHELINE - 1) /             \
     BATON_CACHELINE * BATON_CACHELINE)

static inline void *state_of(const baton_lock_t *l)
{
    return (char *)(uintptr_t)l + l->ops->state_delta;
}

static inline struct lock_block *block_of(const baton_lock_t *l)
{
    return (struct lock_block *)((char *)state_of(l) - HEADER_SIZE);
}

/* Kinds without lock/unlock (pure delegation: rcl, ccsynch) get these. */
static void no_lock(void *s) { (void)s; }
static int no_unlock(void *s) { (void)s; return ENOTSUP; }

static int not_offered(const struct lock_block *b, const char *what)
{
    return baton_fail(ENOTSUP, "%s: lock kind '%s' offers execute and delegate only; use "
                               "baton_execute() or a kind with lock/unlock", what, b->kind->name);
}

/* --- the kinds' shared tables of hot operations ----------------------------
 * Two per kind: [0] calls the kind straight from the inline entry points;
 * [1] sends them to the out-of-line halves (owner checks, kinds without
 * lock/unlock).  Built once, read-only after: every lock of a kind points
 * to the same table, which stays in the cache of whoever uses the kind. */
#define OPS_MAX 32
static struct baton_lock_ops kind_ops[OPS_MAX][2];
static pthread_once_t kind_ops_once = PTHREAD_ONCE_INIT;

static void build_kind_ops(void)
{
    const baton_kind_t *k;
    for (size_t i = 0; i < OPS_MAX && (k = baton_registry_at(i)) != NULL; i++) {
        /* The handle in the kind's reserved slot (the state is before it),
         * or in the header's last word (the state just after it). */
        ptrdiff_t delta = k->handle_slot ? -(ptrdiff_t)k->handle_slot : (ptrdiff_t)sizeof(struct baton_lock);
        for (int slow = 0; slow < 2; slow++)
            kind_ops[i][slow] = (struct baton_lock_ops){
                .lock = k->lock ? k->lock : no_lock,
                .unlock = k->unlock ? k->unlock : no_unlock,
                .trylock = k->trylock ? k->trylock : no_unlock,
                .slow = slow || !k->lock,
                .state_delta = delta,
            };
    }
}

/* The block baton_lock_new allocates for kind k: header, then the state. */
static void lock_layout(const baton_kind_t *k, size_t *align, size_t *size)
{
    *align = k->align > BATON_CACHELINE ? k->align : BATON_CACHELINE;
    *size = HEADER_SIZE + (k->size + *align - 1) / *align * *align;
}

size_t baton_spec_footprint(const char *spec)
{
    const baton_kind_t *k;
    baton_opts_t o;
    char canon[SPEC_MAX];
    if (baton_spec_parse(spec, &k, &o, canon, sizeof canon) != 0)
        return 0;
    size_t align, size;
    lock_layout(k, &align, &size);
    return baton_alloc_cost(align, size) + (k->footprint ? k->footprint(&o) : 0);
}

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
    pthread_once(&kind_ops_once, build_kind_ops);
    size_t index = baton_registry_index(k), align, size;
    lock_layout(k, &align, &size);
    /* Both are facts about the build (a kind's table), caught by the unit
     * tests, which create every kind. */
    if (index >= OPS_MAX || HEADER_SIZE % align != 0 ||
        (k->handle_slot && (k->handle_slot % _Alignof(struct baton_lock) != 0 ||
                            k->handle_slot + sizeof(struct baton_lock) > BATON_CACHELINE ||
                            k->handle_slot + sizeof(struct baton_lock) > k->size))) {
        errno = baton_fail(EINVAL, "lock kind '%s' does not fit the dynamic API's layout", k->name);
        return NULL;
    }
    struct lock_block *b = aligned_alloc(align, size);
    if (!b) {
        errno = baton_fail(ENOMEM, "out of memory allocating a '%s' lock", k->name);
        return NULL;
    }
    memset(b, 0, size);
    char *state = (char *)b + HEADER_SIZE;
    b->execute = k->execute;
    b->delegate = k->delegate;
    if (k->caps & BATON_CAP_WAIT)
        b->fwait = o.wait;
    else
        (void)baton_wait_init(&b->fwait, BATON_WAIT_SPINPARK);
    b->check = o.check;
    b->kind = k;
    memcpy(b->spec, canon, sizeof b->spec);
    rc = k->init(state, &o);
    if (rc != 0) {
        free(b);
        /* Keep the kind's own message (a server thread that could not be
         * created, say); else say which kind failed. */
        if (baton_last_error()[0] == '\0')
            baton_fail(rc, "initialising a '%s' lock failed: %s", k->name, strerror(rc));
        errno = rc;
        return NULL;
    }
    /* The handle last: init owns its state whole, the slot included.  The
     * inline entry points take the out-of-line path for owner checks and
     * for kinds without lock/unlock: one test on the hot path. */
    const struct baton_lock_ops *ops = &kind_ops[index][o.check ? 1 : 0];
    b->handle = (struct baton_lock *)(void *)(state - ops->state_delta);
    b->handle->ops = ops;
    return b->handle;
}

int baton_lock_free(baton_lock_t *l)
{
    if (!l)
        return 0;
    struct lock_block *b = block_of(l);
    if (b->check && atomic_load_explicit(&b->owner, memory_order_relaxed) != 0)
        return baton_fail(EBUSY, "lock '%s' freed while held", b->spec);
    int rc = b->kind->destroy(state_of(l));
    if (rc != 0)
        return baton_fail(rc, "lock '%s' freed while held", b->spec);
    free(b);
    return 0;
}

/* --- owner checking (check=1) --------------------------------------------- */

static int checked_lock(baton_lock_t *l)
{
    struct lock_block *b = block_of(l);
    uintptr_t self = baton_self_token();
    if (atomic_load_explicit(&b->owner, memory_order_relaxed) == self)
        return baton_fail(EDEADLK, "lock '%s' locked again by its owner (locks are not recursive)",
                          b->spec);
    l->ops->lock(state_of(l));
    /* Relaxed: only the owner writes it while holding; readers compare it
     * against their own token, which no other thread stores. */
    atomic_store_explicit(&b->owner, self, memory_order_relaxed);
    return 0;
}

static int checked_trylock(baton_lock_t *l)
{
    int rc = l->ops->trylock(state_of(l));
    if (rc == 0)
        atomic_store_explicit(&block_of(l)->owner, baton_self_token(), memory_order_relaxed);
    return rc;
}

static int checked_unlock(baton_lock_t *l)
{
    struct lock_block *b = block_of(l);
    if (atomic_load_explicit(&b->owner, memory_order_relaxed) != baton_self_token())
        return baton_fail(EPERM, "lock '%s' unlocked by a thread that does not hold it", b->spec);
    atomic_store_explicit(&b->owner, 0, memory_order_relaxed);
    return l->ops->unlock(state_of(l));
}

int baton_lock_release(baton_lock_t *l)
{
    struct lock_block *b = block_of(l);
    if (!b->kind->lock)
        return not_offered(b, "release");
    /* Relaxed: as in checked_unlock(); the caller synchronised with the
     * holder. */
    if (b->check)
        atomic_store_explicit(&b->owner, 0, memory_order_relaxed);
    return b->kind->release ? b->kind->release(state_of(l)) : l->ops->unlock(state_of(l));
}

/* --- the hot calls -------------------------------------------------------- *
 * baton/baton.h inlines them (GNU inline: the header's definitions are for
 * inlining only); these are the library's own definitions, for callers that
 * do not inline and for the ABI. */

int baton_lock_slow(baton_lock_t *l)
{
    struct lock_block *b = block_of(l);
    return !b->kind->lock ? not_offered(b, "lock") : checked_lock(l);
}

int baton_trylock_slow(baton_lock_t *l)
{
    struct lock_block *b = block_of(l);
    return !b->kind->lock ? not_offered(b, "trylock") : checked_trylock(l);
}

int baton_unlock_slow(baton_lock_t *l)
{
    struct lock_block *b = block_of(l);
    return !b->kind->lock ? not_offered(b, "unlock") : checked_unlock(l);
}

int baton_lock(baton_lock_t *l)
{
    const struct baton_lock_ops *o = l->ops;
    if (BATON_UNLIKELY(o->slow))
        return baton_lock_slow(l);
    o->lock((char *)l + o->state_delta);
    return 0;
}

int baton_trylock(baton_lock_t *l)
{
    const struct baton_lock_ops *o = l->ops;
    if (BATON_UNLIKELY(o->slow))
        return baton_trylock_slow(l);
    return o->trylock((char *)l + o->state_delta);
}

int baton_unlock(baton_lock_t *l)
{
    const struct baton_lock_ops *o = l->ops;
    if (BATON_UNLIKELY(o->slow))
        return baton_unlock_slow(l);
    return o->unlock((char *)l + o->state_delta);
}

/* --- execute, delegate, futures ------------------------------------------ */

_Thread_local baton_cs_frame_t *baton_cs_top __attribute__((tls_model("initial-exec")));

/* An operation on l from inside one of l's own critical sections would wait
 * for itself: report it.  The chain is empty outside critical sections, so
 * the common case costs one thread-local load. */
static inline int self_deadlock(baton_lock_t *l, const char *what)
{
    if (BATON_LIKELY(baton_cs_top == NULL) || !baton_cs_inside(state_of(l))) {
        if (BATON_LIKELY(!block_of(l)->check) ||
            atomic_load_explicit(&block_of(l)->owner, memory_order_relaxed) != baton_self_token())
            return 0;
    }
    return baton_fail(EDEADLK, "%s on lock '%s' by a thread that holds it or is running one of "
                               "its critical sections (it would wait for itself)", what, block_of(l)->spec);
}

static int run_locked(baton_lock_t *l, baton_fn fn, void *ctx)
{
    int rc = baton_lock(l);
    if (rc != 0)
        return rc;
    baton_cs_frame_t frame;
    baton_cs_enter(&frame, state_of(l));
    fn(ctx);
    baton_cs_leave(&frame);
    return baton_unlock(l);
}

int baton_execute(baton_lock_t *l, baton_fn fn, void *ctx)
{
    int rc = self_deadlock(l, "execute");
    if (BATON_UNLIKELY(rc != 0))
        return rc;
    if (block_of(l)->execute)
        return block_of(l)->execute(state_of(l), fn, ctx);
    return run_locked(l, fn, ctx);
}

static int delegate_common(baton_lock_t *l, baton_fn fn, const void *args, size_t size,
                           baton_future_t *f)
{
    if (size > BATON_ARGS_MAX)
        return baton_fail(EINVAL, "delegate: %zu bytes of arguments, more than BATON_ARGS_MAX (%d); "
                                  "pass a pointer to them instead", size, BATON_ARGS_MAX);
    int rc = self_deadlock(l, "delegate");
    if (BATON_UNLIKELY(rc != 0))
        return rc;
    if (block_of(l)->delegate)
        return block_of(l)->delegate(state_of(l), fn, args, size, f);
    /* Mutex kinds run it now.  The function sees a private copy, as it
     * would on a delegation kind where it runs later on another thread. */
    _Alignas(16) unsigned char copy[BATON_ARGS_MAX];
    if (size)
        memcpy(copy, args, size);
    rc = run_locked(l, fn, copy);
    if (f)
        baton_future_complete_own(f, rc); /* ran in this call: nobody waits yet */
    return rc;
}

int baton_delegate(baton_lock_t *l, baton_fn fn, const void *args, size_t size)
{
    return delegate_common(l, fn, args, size, NULL);
}

int baton_delegate_future(baton_lock_t *l, baton_fn fn, const void *args, size_t size,
                          baton_future_t *f)
{
    baton_future_prepare(f, &block_of(l)->fwait);
    int rc = delegate_common(l, fn, args, size, f);
    if (rc != 0 && !baton_future_ready(f))
        baton_future_complete_own(f, rc); /* refused: ready at once, so waiting never hangs */
    return rc;
}

int baton_future_wait(baton_future_t *f)
{
    /* Acquire: pairs with the release of baton_future_complete(); often the
     * operation has run (or the caller ran it itself). */
    if (BATON_LIKELY((baton_load(&f->state, memory_order_acquire) & ~BATON_WAIT_PARKED) != 0))
        return f->status;
    baton_wait_t w;
    memcpy(&w, &f->wait, sizeof w);
    /* A helper wait: the operation runs on another thread, which may need
     * our CPU (wait_internal.h).  The acquire inside pairs with the release
     * of baton_future_complete(). */
    (void)baton_wait_for_helper(&w, &f->state, 0u);
    return f->status;
}

int baton_future_ready(const baton_future_t *f)
{
    /* Acquire pairs with the release of baton_future_complete().  The cast
     * drops const only for C11's atomic_load signature. */
    return (baton_load((_Atomic uint32_t *)&f->state, memory_order_acquire) & ~BATON_WAIT_PARKED) != 0;
}

/* --- readers, statistics ------------------------------------------------------ */

int baton_rlock(baton_lock_t *l)
{
    if (block_of(l)->kind->rlock) {
        block_of(l)->kind->rlock(state_of(l));
        return 0;
    }
    return baton_lock(l);
}

int baton_runlock(baton_lock_t *l)
{
    if (block_of(l)->kind->runlock) {
        block_of(l)->kind->runlock(state_of(l));
        return 0;
    }
    return baton_unlock(l);
}

int baton_lock_stats(const baton_lock_t *l, baton_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (!block_of(l)->kind->stats)
        return ENOTSUP;
    block_of(l)->kind->stats(state_of(l), out);
    return 0;
}

int baton_is_locked(baton_lock_t *l)
{
    return block_of(l)->kind->is_locked ? block_of(l)->kind->is_locked(state_of(l)) : 0;
}

void *baton_lock_state(baton_lock_t *l)
{
    return state_of(l);
}

const baton_kind_t *baton_lock_ops(const baton_lock_t *l)
{
    return block_of(l)->kind;
}

int baton_lock_checks(const baton_lock_t *l)
{
    return block_of(l)->check;
}

const char *baton_lock_spec(const baton_lock_t *l)
{
    return block_of(l)->spec;
}

const baton_kind_info_t *baton_lock_kind(const baton_lock_t *l)
{
    return baton_registry_info(block_of(l)->kind);
}

const char *baton_version(void)
{
    return BATON_VERSION_STRING;
}
