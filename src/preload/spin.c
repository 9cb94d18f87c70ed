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
 *   1 .. 2^28              the slab handle of its state (preload.h), when
 *                          the slot's back-pointer is this spinlock
 *   PL_INPLACE | 0 or 1    an in-place lock, free or held (preload.h): a
 *                          process-shared spinlock, or one that could get no
 *                          state (out of memory), for the rest of its life
 *   anything else          garbage: never initialised, copied from another
 *                          spinlock, or a planted value, possibly the handle
 *                          of another spinlock's state, which must not be
 *                          touched.  Read as glibc's x86-64 spinlock reads
 *                          the same word, where 1 is free, a larger positive
 *                          value is counted down to free by lock, and 0 and
 *                          negative values are held:
 *       trylock   1 is free: a fresh state is adopted in its place and
 *                 taken; any other value EBUSY
 *       lock      a positive value is adopted and taken (glibc takes it
 *                 after counting it down); a negative one is waited on
 *                 until the word changes (glibc spins until an unlock
 *                 writes 1), then looked at again
 *       unlock    the word becomes 0, free (glibc writes 1)
 *       destroy   the word becomes 0 (glibc leaves it)
 *
 * Process-shared spinlocks live in memory that other processes map, where
 * a handle into this process's slabs means nothing, and forwarding to
 * glibc's spinlock is not possible either: glibc's x86-64 word is 1 when
 * free and 0 or below when held, values the encoding above cannot tell from
 * handle 1, "no state yet" and garbage.  So baton implements them itself,
 * in the word (the in-place lock).  Every process that uses such a lock
 * must run under the interposer (children inherit LD_PRELOAD): a process
 * with glibc's functions would read PL_INPLACE as "held".  The same holds a
 * spinlock that could get no state, for the same reason.
 *
 * Error codes are glibc's: trylock of a held spinlock EBUSY, unlock of an
 * unheld one 0 (and nothing happens: the kind's release leaves a free lock
 * alone); any thread may unlock a held one, which glibc allows too.  Chosen where glibc differs: destroy of a held
 * spinlock returns EBUSY and changes nothing (glibc returns 0; POSIX
 * allows EBUSY).  BATON_SPIN=pthread forwards every call to glibc.
 */
#include "preload.h"

#include <errno.h>

_Static_assert(sizeof(pthread_spinlock_t) == sizeof(_Atomic uint32_t), "the spinlock is one 32-bit word");

static inline _Atomic uint32_t *word_of(pthread_spinlock_t *l) { return (_Atomic uint32_t *)(uintptr_t)l; }

/* The spinlock as its slot's back-pointer names it. */
static inline const void *owner_of(pthread_spinlock_t *l) { return (const void *)(uintptr_t)l; }

static inline bool in_place(uint32_t v) { return v == PL_INPLACE || v == PL_INPLACE_HELD; }

/* A garbage word that glibc would take (after counting it down). */
static inline bool positive(uint32_t v) { return v - 1u < 0x7fffffffu; }

/* The word holds `from` (0, or garbage that reads as free): put a fresh
 * state's handle in its place, or, when none can be made, a free in-place
 * lock.  Returns the word's value afterwards (ours or a racer's). */
static uint32_t adopt(pthread_spinlock_t *l, uint32_t from)
{
    return pl_adopt_or_inplace(&pl_spin_class, word_of(l), owner_of(l), from);
}

/* --- profiling -------------------------------------------------------------------------- */

/* No room in 4 bytes for the record: the profiler finds it by address.  s:
 * the state, or NULL for an in-place lock. */
__attribute__((noinline, cold)) static int lock_profiled(pthread_spinlock_t *l, void *s, const void *caller)
{
    pl_prof_t *p = pl_prof_get(word_of(l), PL_PROF_SPIN, caller);
    const baton_kind_t *k = pl_spin_class.kind;
    if ((s ? k->trylock(s) : pl_inplace_trylock(word_of(l))) == 0) {
        pl_prof_acquired(p, 0, false, false);
        return 0;
    }
    uint64_t t0 = pl_prof_now();
    if (s)
        k->lock(s);
    else
        pl_inplace_lock(word_of(l));
    pl_prof_acquired(p, pl_prof_now() - t0, true, false);
    return 0;
}

/* --- the calls ---------------------------------------------------------------------------- */

PRELOAD_API int pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
    PL_ENTER(pl_stock(&pl_spin_class), pl_real()->spin_init(l, pshared));
    /* Relaxed: initialisation precedes any use, which the program orders.
     * Like glibc, any value but PTHREAD_PROCESS_SHARED means private. */
    baton_store(word_of(l), pshared == PTHREAD_PROCESS_SHARED ? PL_INPLACE : 0u, memory_order_relaxed);
    return 0;
}

PRELOAD_API int pthread_spin_destroy(pthread_spinlock_t *l)
{
    PL_ENTER(pl_stock(&pl_spin_class), pl_real()->spin_destroy(l));
    _Atomic uint32_t *w = word_of(l);
    /* Acquire: pairs with the release CAS in pl_adopt() (the program orders
     * destroy after every use). */
    uint32_t v = baton_load(w, memory_order_acquire);
    if (v == PL_INPLACE_HELD)
        return EBUSY;
    void *s = pl_state_lookup(&pl_spin_class, v, owner_of(l));
    if (s != NULL) {
        int rc = pl_state_free(&pl_spin_class, s, v);
        if (rc != 0)
            return rc; /* EBUSY: held */
    }
    baton_store(w, 0u, memory_order_relaxed); /* ordered after use by the program */
    if (BATON_UNLIKELY(pl_profiling))
        pl_prof_destroyed(w);
    return 0;
}

/* Stock, profiling, no state yet, in place, or garbage. */
__attribute__((noinline)) static int lock_slow(pthread_spinlock_t *l, const void *caller)
{
    PL_ENTER(pl_stock(&pl_spin_class), pl_real()->spin_lock(l));
    _Atomic uint32_t *w = word_of(l);
    for (;;) {
        uint32_t v = baton_load(w, memory_order_acquire); /* pairs with the release CAS in pl_adopt() */
        void *s = pl_state_lookup(&pl_spin_class, v, owner_of(l));
        if (s == NULL && (v == 0 || positive(v))) {
            (void)adopt(l, v);
            continue;
        }
        if (s == NULL && !in_place(v)) {
            pl_wait_change(w, v); /* garbage that reads as held */
            continue;
        }
        if (BATON_UNLIKELY(pl_profiling))
            return lock_profiled(l, s, caller);
        if (s != NULL)
            pl_spin_class.kind->lock(s);
        else
            pl_inplace_lock(w);
        return 0;
    }
}

PRELOAD_API int pthread_spin_lock(pthread_spinlock_t *l)
{
    /* The class must be configured before its `kind` is read. */
    pl_init();
    /* Acquire: pairs with the release CAS in pl_adopt(). */
    void *s = pl_state_lookup(&pl_spin_class, baton_load(word_of(l), memory_order_acquire), owner_of(l));
    if (BATON_LIKELY(s != NULL && !pl_profiling)) {
        pl_spin_class.kind->lock(s);
        return 0;
    }
    return lock_slow(l, __builtin_return_address(0));
}

PRELOAD_API int pthread_spin_trylock(pthread_spinlock_t *l)
{
    PL_ENTER(pl_stock(&pl_spin_class), pl_real()->spin_trylock(l));
    _Atomic uint32_t *w = word_of(l);
    uint32_t v = baton_load(w, memory_order_acquire); /* pairs with the release CAS in pl_adopt() */
    void *s = pl_state_lookup(&pl_spin_class, v, owner_of(l));
    if (BATON_UNLIKELY(s == NULL && (v == 0 || v == 1))) {
        /* No state yet, or garbage that reads as free. */
        v = adopt(l, v);
        s = pl_state_lookup(&pl_spin_class, v, owner_of(l));
    }
    int rc = s != NULL ? pl_spin_class.kind->trylock(s) : in_place(v) ? pl_inplace_trylock(w) : EBUSY;
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
    PL_ENTER(pl_stock(&pl_spin_class), pl_real()->spin_unlock(l));
    _Atomic uint32_t *w = word_of(l);
    uint32_t v = baton_load(w, memory_order_acquire); /* pairs with the release CAS in pl_adopt() */
    void *s = pl_state_lookup(&pl_spin_class, v, owner_of(l));
    if (s != NULL) {
        /* Whatever thread calls, as glibc's (a spinlock has no owner): the
         * kind's release, which leaves a free lock alone (unlocking a free
         * spinlock is a no-op, as in glibc).  Only the profiler, which must
         * not count a release that does not happen, looks first; a kind's
         * look is racy for a lock another thread holds (a server kind's),
         * so the release itself must not depend on it. */
        if (BATON_UNLIKELY(pl_profiling)) {
            if (!pl_spin_class.kind->is_locked(s))
                return 0;
            pl_prof_released(pl_prof_get(word_of(l), PL_PROF_SPIN, NULL));
        }
        (void)pl_spin_class.release(s);
    } else if (v == PL_INPLACE_HELD) {
        if (BATON_UNLIKELY(pl_profiling))
            pl_prof_released(pl_prof_get(word_of(l), PL_PROF_SPIN, NULL));
        pl_inplace_unlock(w);
    } else if (v != 0 && v != PL_INPLACE) {
        /* Garbage: free from now on, as glibc's unlock writes 1.  A CAS, so
         * that a racer's adoption is not undone.  Relaxed: nothing is
         * published (the next user adopts with a CAS of its own). */
        (void)baton_cas(w, &v, 0u, memory_order_relaxed, memory_order_relaxed);
    }
    return 0;
}
