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
#include "../base/error.h"
#include "../base/thread.h"
#include "../base/cs.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SPEC_MAX 160

/* What a baton_lock_t points to: the handle, one pointer to the kind's
 * shared table of hot operations (struct baton_lock_ops, baton/baton.h),
 * the last word of the header, just before the state.  Its line is written
 * once, at creation: every CPU that uses the lock keeps a shared copy, and
 * lock and unlock read it without a coherence miss.  (In the state's
 * first line, beside the lock word, it was slower: a read of a line the
 * other CPU last wrote, then the CAS's upgrade; docs/results.md.) */
struct baton_lock {
    const struct baton_lock_ops *ops;
};
_Static_assert(sizeof(struct baton_lock) == BATON_LOCK_STATE,
               "the inline entry points find the state just after the handle");

/* The rest of a lock, read off the hot path only: the allocation starts
 * with it, and the state follows at HEADER_SIZE. */
struct lock_block {
    /* Delegation kinds' own execute/delegate; NULL: lock, call, unlock. */
    int (*execute)(void *, baton_fn, void *);
    int (*delegate)(void *, baton_fn, const void *, size_t, baton_future_t *);
    baton_wait_t fwait; /* how a future of this lock is waited for */
    int check;
    bool timed;              /* baton_timedlock waits (else ENOTSUP): the kind's, or its inner lock's */
    _Atomic uintptr_t owner; /* check mode only */
    const baton_kind_t *kind;
    struct baton_lock *handle;
    char spec[SPEC_MAX];
};

/* The header (the block, then room for a handle outside the state),
 * rounded up so that the state starts on its own cache line.  Every kind's
 * alignment divides it (checked in baton_lock_new). */
#define HEADER_SIZE                                                                                          \
    ((sizeof(struct lock_block) + sizeof(struct baton_lock) + BATON_CACHELINE - 1) / BATON_CACHELINE *       \
     BATON_CACHELINE)

static inline void *state_of(const baton_lock_t *l) { return (char *)(uintptr_t)l + BATON_LOCK_STATE; }

static inline struct lock_block *block_of(const baton_lock_t *l)
{
    return (struct lock_block *)((char *)state_of(l) - HEADER_SIZE);
}

/* Kinds without lock/unlock (pure delegation: rcl, ccsynch) get these. */
static void no_lock(void *s) { (void)s; }
static int no_unlock(void *s)
{
    (void)s;
    return ENOTSUP;
}

static int not_offered(const struct lock_block *b, const char *what)
{
    return baton_fail(ENOTSUP,
                      "%s: lock kind '%s' offers execute and delegate only; use "
                      "baton_execute() or a kind with lock/unlock",
                      what, b->kind->name);
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
        for (int slow = 0; slow < 2; slow++)
            kind_ops[i][slow] = (struct baton_lock_ops){
                .lock = k->lock ? k->lock : no_lock,
                .unlock = k->unlock ? k->unlock : no_unlock,
                .trylock = k->trylock ? k->trylock : no_unlock,
                .slow = slow || !k->lock,
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
    if (index >= OPS_MAX || HEADER_SIZE % align != 0) {
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
    b->timed = k->timedlock != NULL && (k->timed == NULL || k->timed(state));
    /* The handle last: init owns its state whole, the slot included.  The
     * inline entry points take the out-of-line path for owner checks and
     * for kinds without lock/unlock: one test on the hot path. */
    const struct baton_lock_ops *ops = &kind_ops[index][o.check ? 1 : 0];
    b->handle = (struct baton_lock *)(void *)(state - BATON_LOCK_STATE);
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
    uintptr_t self = baton_thread_token();
    if (atomic_load_explicit(&b->owner, memory_order_relaxed) == self)
        return baton_fail(EDEADLK, "lock '%s' locked again by its owner (locks are not recursive)", b->spec);
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
        atomic_store_explicit(&block_of(l)->owner, baton_thread_token(), memory_order_relaxed);
    return rc;
}

static int checked_unlock(baton_lock_t *l)
{
    struct lock_block *b = block_of(l);
    if (atomic_load_explicit(&b->owner, memory_order_relaxed) != baton_thread_token())
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
    o->lock((char *)l + BATON_LOCK_STATE);
    return 0;
}

int baton_trylock(baton_lock_t *l)
{
    const struct baton_lock_ops *o = l->ops;
    if (BATON_UNLIKELY(o->slow))
        return baton_trylock_slow(l);
    return o->trylock((char *)l + BATON_LOCK_STATE);
}

int baton_unlock(baton_lock_t *l)
{
    const struct baton_lock_ops *o = l->ops;
    if (BATON_UNLIKELY(o->slow))
        return baton_unlock_slow(l);
    return o->unlock((char *)l + BATON_LOCK_STATE);
}

/* --- timed acquisition ------------------------------------------------------ *
 * POSIX's order of checks, as glibc makes them: a clock other than
 * CLOCK_REALTIME or CLOCK_MONOTONIC is refused first (EINVAL), then the
 * lock is tried, and only a call that would block looks at the deadline
 * (EINVAL for a tv_nsec out of range; an uncontended lock with a bad
 * timespec is taken).  A kind without a timed acquisition answers ENOTSUP
 * whether or not it would block, so that its callers find out at once. */

static bool clock_supported(clockid_t clock) { return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC; }

static int bad_clock(baton_lock_t *l, const char *what, clockid_t clock)
{
    return baton_fail(EINVAL, "%s on lock '%s': clock %d is neither CLOCK_REALTIME nor CLOCK_MONOTONIC", what,
                      block_of(l)->spec, (int)clock);
}

/* The blocking half: check the deadline, then wait through the kind. */
static int timed_wait(baton_lock_t *l, int (*op)(void *, const baton_deadline_t *), clockid_t clock,
                      const struct timespec *abstime, const char *what)
{
    if (abstime == NULL || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
        return baton_fail(EINVAL, "%s on lock '%s': the deadline's tv_nsec is out of range [0, 1e9)", what,
                          block_of(l)->spec);
    baton_deadline_t d = {.at = *abstime, .clock = clock};
    return op(state_of(l), &d);
}

static int no_timed(baton_lock_t *l, const char *what)
{
    return baton_fail(ENOTSUP,
                      "%s: lock kind '%s' has no timed acquisition (docs/architecture.md, "
                      "\"Timed waits\", says why); use baton_lock() or baton_trylock()",
                      what, block_of(l)->kind->name);
}

int baton_clocklock(baton_lock_t *l, clockid_t clock, const struct timespec *abstime)
{
    if (!clock_supported(clock))
        return bad_clock(l, "timedlock", clock);
    struct lock_block *b = block_of(l);
    if (!b->kind->lock)
        return not_offered(b, "timedlock");
    if (!b->timed)
        return no_timed(l, "timedlock");
    uintptr_t self = baton_thread_token();
    /* Relaxed: as in checked_lock(). */
    if (b->check && atomic_load_explicit(&b->owner, memory_order_relaxed) == self)
        return baton_fail(EDEADLK, "lock '%s' locked again by its owner (locks are not recursive)", b->spec);
    int rc = l->ops->trylock(state_of(l));
    if (rc == EBUSY)
        rc = timed_wait(l, b->kind->timedlock, clock, abstime, "timedlock");
    if (rc == 0 && b->check)
        atomic_store_explicit(&b->owner, self, memory_order_relaxed); /* as in checked_lock() */
    return rc;
}

int baton_timedlock(baton_lock_t *l, const struct timespec *abstime)
{
    return baton_clocklock(l, CLOCK_REALTIME, abstime);
}

/* --- execute, delegate, futures ------------------------------------------ */

/* An operation on l from inside one of l's own critical sections would wait
 * for itself: report it.  The chain is empty outside critical sections, so
 * the common case costs one thread-local load. */
static inline int self_deadlock(baton_lock_t *l, const char *what)
{
    if (BATON_LIKELY(baton_cs_top == NULL) || !baton_cs_inside(state_of(l))) {
        if (BATON_LIKELY(!block_of(l)->check) ||
            atomic_load_explicit(&block_of(l)->owner, memory_order_relaxed) != baton_thread_token())
            return 0;
    }
    return baton_fail(EDEADLK,
                      "%s on lock '%s' by a thread that holds it or is running one of "
                      "its critical sections (it would wait for itself)",
                      what, block_of(l)->spec);
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

static int delegate_common(baton_lock_t *l, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    if (size > BATON_ARGS_MAX)
        return baton_fail(EINVAL,
                          "delegate: %zu bytes of arguments, more than BATON_ARGS_MAX (%d); "
                          "pass a pointer to them instead",
                          size, BATON_ARGS_MAX);
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

int baton_delegate_future(baton_lock_t *l, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    baton_future_prepare(f, &block_of(l)->fwait);
    int rc = delegate_common(l, fn, args, size, f);
    if (rc != 0 && !baton_future_ready(f))
        baton_future_complete_own(f, rc); /* refused: ready at once, so waiting never hangs */
    return rc;
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

int baton_rtrylock(baton_lock_t *l)
{
    if (!block_of(l)->kind->rlock)
        return baton_trylock(l);
    if (!block_of(l)->kind->tryrlock)
        return baton_fail(ENOTSUP, "rtrylock: lock kind '%s' has no reader trylock", block_of(l)->kind->name);
    return block_of(l)->kind->tryrlock(state_of(l));
}

int baton_rclocklock(baton_lock_t *l, clockid_t clock, const struct timespec *abstime)
{
    if (!block_of(l)->kind->rlock)
        return baton_clocklock(l, clock, abstime);
    if (!clock_supported(clock))
        return bad_clock(l, "rtimedlock", clock);
    if (!block_of(l)->kind->timedrlock || !block_of(l)->kind->tryrlock)
        return no_timed(l, "rtimedlock");
    int rc = block_of(l)->kind->tryrlock(state_of(l));
    if (rc == EBUSY)
        rc = timed_wait(l, block_of(l)->kind->timedrlock, clock, abstime, "rtimedlock");
    return rc;
}

int baton_rtimedlock(baton_lock_t *l, const struct timespec *abstime)
{
    return baton_rclocklock(l, CLOCK_REALTIME, abstime);
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

void *baton_lock_state(baton_lock_t *l) { return state_of(l); }

const baton_kind_t *baton_lock_ops(const baton_lock_t *l) { return block_of(l)->kind; }

int baton_lock_timed(const baton_lock_t *l) { return block_of(l)->timed; }

int baton_lock_checks(const baton_lock_t *l) { return block_of(l)->check; }

const char *baton_lock_spec(const baton_lock_t *l) { return block_of(l)->spec; }

const baton_kind_info_t *baton_lock_kind(const baton_lock_t *l)
{
    return baton_registry_info(block_of(l)->kind);
}

const char *baton_version(void) { return BATON_VERSION_STRING; }
