/* spin.c - pthread_spin_* for libbaton-preload.so.
 *
 * pthread_spinlock_t is one 32-bit word, too small for any kind's state,
 * so the word names one:
 *
 *   0                      no state yet: zeroed memory, pthread_spin_init
 *                          (private), or destroyed.  The first lock creates
 *                          a state of the BATON_SPIN kind (default ttas) and
 *                          publishes its handle with one CAS from 0, so a
 *                          spinlock that was zeroed but never initialised
 *                          works too (glibc's ports with 0 as "free" allow
 *                          that; its x86-64 one reads 0 as held), and an
 *                          initialised spinlock that is never locked costs
 *                          nothing.
 *   1 .. 2^31-1            the slab handle of its state (preload.h; handles
 *                          stay below 2^28)
 *   SPIN_SHARED | 0 or 1   a process-shared spinlock, free or held, in
 *                          place.
 *
 * Process-shared spinlocks live in memory that other processes map, where
 * a handle into this process's slabs means nothing, and forwarding to
 * glibc's spinlock is not possible either: glibc's x86-64 word is 1 when
 * free and 0 or below when held, values the encoding above cannot tell from
 * handle 1, "no state yet" and SPIN_SHARED.  So
 * baton implements them itself, in the word: a test-and-test-and-set lock
 * on the SPIN_SHARED values, waiting through the wait layer (spin for the
 * calibrated budget, then yield; never a futex, which would be private to
 * this process).  Every process that uses such a lock must run under the
 * interposer (children inherit LD_PRELOAD): a process with glibc's
 * functions would read SPIN_SHARED as "held".
 *
 * Error codes are glibc's: trylock of a held spinlock EBUSY, unlock of an
 * unheld one 0 (and nothing happens: the kind is not asked to release a
 * lock nobody holds).  Chosen where glibc differs: destroy of a held
 * spinlock returns EBUSY and changes nothing (glibc returns 0; POSIX
 * allows EBUSY).  BATON_SPIN=pthread forwards every call to glibc.
 */
#include "preload.h"

#include <errno.h>
#include <sched.h>

#define SPIN_SHARED 0x80000000u
#define SPIN_SHARED_HELD (SPIN_SHARED | 1u)

_Static_assert(sizeof(pthread_spinlock_t) == sizeof(_Atomic uint32_t), "the spinlock is one 32-bit word");
_Static_assert((uint64_t)PL_MAX_CHUNKS * PL_CHUNK_SLOTS < SPIN_SHARED, "handles leave the top bit free");

static inline _Atomic uint32_t *word_of(pthread_spinlock_t *l)
{
    return (_Atomic uint32_t *)(uintptr_t)l;
}

/* A handle names a state: neither 0 nor a process-shared value. */
static inline bool is_handle(uint32_t v)
{
    return v - 1u < SPIN_SHARED - 1u;
}

/* The word was 0: create a state and publish its handle; returns the word's
 * value afterwards (ours or a racer's), or 0 with *err set. */
__attribute__((noinline)) static uint32_t create_state(_Atomic uint32_t *w, int *err)
{
    pl_class_t *c = &pl_spin_class;
    uint32_t h;
    void *s = pl_state_new(c, &h, err);
    if (s == NULL)
        return 0;
    uint32_t expected = 0;
    /* Release: publishes the initialised state; pairs with the acquire loads
     * of the word in every entry point.  Acquire on failure: a racer's state
     * is initialised before we use it. */
    if (baton_cas(w, &expected, h, memory_order_acq_rel, memory_order_acquire))
        return h;
    (void)pl_state_free(c, s, h);
    return expected;
}

/* --- the in-place lock of process-shared spinlocks -------------------------------- */

static int shared_trylock(_Atomic uint32_t *w)
{
    uint32_t expected = SPIN_SHARED;
    /* Relaxed look first (test-and-test-and-set); acquire CAS: pairs with the
     * release store in shared_unlock(). */
    if (baton_load(w, memory_order_relaxed) != SPIN_SHARED)
        return EBUSY;
    return baton_cas(w, &expected, SPIN_SHARED_HELD, memory_order_acquire, memory_order_relaxed) ? 0 : EBUSY;
}

__attribute__((noinline, cold)) static void shared_lock_wait(_Atomic uint32_t *w)
{
    baton_wait_t policy;
    (void)baton_wait_init(&policy, BATON_WAIT_SPINPARK);
    baton_waiter_t waiter;
    baton_waiter_init(&waiter, &policy);
    while (shared_trylock(w) != 0) {
        /* Relaxed: a hint of when to try again; the CAS decides. */
        while (baton_load(w, memory_order_relaxed) == SPIN_SHARED_HELD)
            if (!baton_waiter_pause(&waiter, NULL, 0))
                sched_yield(); /* past the spin budget: nobody would wake a sleeper */
    }
}

static void shared_unlock(_Atomic uint32_t *w)
{
    /* Release: pairs with the acquire CAS in shared_trylock(). */
    baton_store(w, SPIN_SHARED, memory_order_release);
}

/* --- profiling -------------------------------------------------------------------------- */

/* No room in 4 bytes for the record: the profiler finds it by address. */
__attribute__((noinline, cold)) static int lock_profiled(pthread_spinlock_t *l, uint32_t v, const void *caller)
{
    pl_prof_t *p = pl_prof_get(word_of(l), PL_PROF_SPIN, caller);
    const baton_kind_t *k = pl_spin_class.kind;
    void *s = is_handle(v) ? pl_state_at(&pl_spin_class, v) : NULL;
    if ((s ? k->trylock(s) : shared_trylock(word_of(l))) == 0) {
        pl_prof_acquired(p, 0, false, false);
        return 0;
    }
    uint64_t t0 = pl_prof_now();
    if (s)
        k->lock(s);
    else
        shared_lock_wait(word_of(l));
    pl_prof_acquired(p, pl_prof_now() - t0, true, false);
    return 0;
}

/* --- the calls ---------------------------------------------------------------------------- */

PRELOAD_API int pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
    pl_init();
    if (pl_spin_class.stock)
        return pl_real()->spin_init(l, pshared);
    /* Relaxed: initialisation precedes any use, which the program orders.
     * Like glibc, any value but PTHREAD_PROCESS_SHARED means private. */
    baton_store(word_of(l), pshared == PTHREAD_PROCESS_SHARED ? SPIN_SHARED : 0u, memory_order_relaxed);
    return 0;
}

PRELOAD_API int pthread_spin_destroy(pthread_spinlock_t *l)
{
    pl_init();
    if (pl_spin_class.stock)
        return pl_real()->spin_destroy(l);
    _Atomic uint32_t *w = word_of(l);
    /* Acquire: pairs with the release CAS in create_state() (the program
     * orders destroy after every use). */
    uint32_t v = baton_load(w, memory_order_acquire);
    if (v == SPIN_SHARED_HELD)
        return EBUSY;
    if (is_handle(v)) {
        int rc = pl_state_free(&pl_spin_class, pl_state_at(&pl_spin_class, v), v);
        if (rc != 0)
            return rc; /* EBUSY: held */
    }
    baton_store(w, 0u, memory_order_relaxed); /* ordered after use by the program */
    if (BATON_UNLIKELY(pl_profiling))
        pl_prof_destroyed(w);
    return 0;
}

/* Stock, profiling, no state yet, or process-shared. */
__attribute__((noinline)) static int lock_slow(pthread_spinlock_t *l, const void *caller)
{
    if (pl_spin_class.stock)
        return pl_real()->spin_lock(l);
    _Atomic uint32_t *w = word_of(l);
    uint32_t v = baton_load(w, memory_order_acquire); /* pairs with the release CAS in create_state() */
    if (v == 0) {
        int err = 0;
        v = create_state(w, &err);
        if (v == 0)
            return err == ENOMEM ? EAGAIN : err;
    }
    if (BATON_UNLIKELY(pl_profiling))
        return lock_profiled(l, v, caller);
    if (is_handle(v))
        pl_spin_class.kind->lock(pl_state_at(&pl_spin_class, v));
    else if (shared_trylock(w) != 0)
        shared_lock_wait(w);
    return 0;
}

PRELOAD_API int pthread_spin_lock(pthread_spinlock_t *l)
{
    /* The class must be configured before its `stock` and `kind` are read
     * (a glibc spinlock's 1 would look like handle 1). */
    pl_init();
    /* Acquire: pairs with the release CAS in create_state(). */
    uint32_t v = baton_load(word_of(l), memory_order_acquire);
    if (BATON_LIKELY(is_handle(v) && !pl_spin_class.stock && !pl_profiling)) {
        pl_spin_class.kind->lock(pl_state_at(&pl_spin_class, v));
        return 0;
    }
    return lock_slow(l, __builtin_return_address(0));
}

PRELOAD_API int pthread_spin_trylock(pthread_spinlock_t *l)
{
    pl_init();
    if (pl_spin_class.stock)
        return pl_real()->spin_trylock(l);
    _Atomic uint32_t *w = word_of(l);
    uint32_t v = baton_load(w, memory_order_acquire); /* pairs with the release CAS in create_state() */
    if (BATON_UNLIKELY(v == 0)) {
        int err = 0;
        v = create_state(w, &err);
        if (v == 0)
            return err == ENOMEM ? EAGAIN : err;
    }
    int rc = is_handle(v) ? pl_spin_class.kind->trylock(pl_state_at(&pl_spin_class, v)) : shared_trylock(w);
    if (BATON_UNLIKELY(pl_profiling)) {
        pl_prof_t *p = pl_prof_get(word_of(l), PL_PROF_SPIN, __builtin_return_address(0));
        if (rc == 0)
            pl_prof_acquired(p, 0, false, false);
        else
            pl_prof_trylock_failed(p);
    }
    return rc == 0 ? 0 : EBUSY;
}

PRELOAD_API int pthread_spin_unlock(pthread_spinlock_t *l)
{
    pl_init();
    if (pl_spin_class.stock)
        return pl_real()->spin_unlock(l);
    _Atomic uint32_t *w = word_of(l);
    uint32_t v = baton_load(w, memory_order_acquire); /* pairs with the release CAS in create_state() */
    if (is_handle(v)) {
        const baton_kind_t *k = pl_spin_class.kind;
        void *s = pl_state_at(&pl_spin_class, v);
        /* Unlocking a free spinlock is a no-op, as in glibc; asking the kind
         * would corrupt some (a ticket lock would serve a ticket nobody
         * drew).  Holders always see their own lock held. */
        if (!k->is_locked(s))
            return 0;
        if (BATON_UNLIKELY(pl_profiling))
            pl_prof_released(pl_prof_get(word_of(l), PL_PROF_SPIN, NULL));
        (void)k->unlock(s); /* EPERM from an owner-checking kind: not ours; glibc says 0 */
    } else if (v == SPIN_SHARED_HELD) {
        if (BATON_UNLIKELY(pl_profiling))
            pl_prof_released(pl_prof_get(word_of(l), PL_PROF_SPIN, NULL));
        shared_unlock(w);
    }
    return 0;
}
