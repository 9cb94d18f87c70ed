/* baton/tas.h - test-and-set spin lock (typed API).
 *
 * The simplest mutual exclusion lock: one word, acquired with an atomic
 * exchange.  Under a spinning policy (spin, backoff, yield) waiters retry
 * the exchange between pauses, so every waiter writes the lock's cache line:
 * cheap uncontended, and unfair and bus-hungry under contention.  Under a
 * parking policy (park, spinpark, monitor) the word follows the three-state
 * futex mutex protocol (0 free, 1 held, 2 held with possible sleepers):
 * waiters spin with compare-and-swap for the policy's budget, then mark the
 * word 2 and sleep; an unlock that finds 2 wakes one sleeper.
 *
 * Owner: not tracked (unlock by a non-owner is undefined unless the lock is
 * created through the dynamic API with check=1).  Fairness: none.
 */
#ifndef BATON_TAS_H
#define BATON_TAS_H

#include <baton/wait.h>
#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct baton_tas {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t word; /* 0 free, 1 held, 2 held + sleepers */
    baton_wait_t wait;
} baton_tas_t;

enum { BATON_TAS_FREE = 0, BATON_TAS_HELD = 1, BATON_TAS_SLEEPERS = 2 };

BATON_API int baton_tas_init(baton_tas_t *l, const baton_wait_t *wait); /* wait NULL: spin */
BATON_API int baton_tas_destroy(baton_tas_t *l);                        /* EBUSY if held */
BATON_API void baton_tas_lock_slow(baton_tas_t *l);
/* Wait for the lock until d: 0, or ETIMEDOUT (see tas.c). */
BATON_API int baton_tas_timedlock(baton_tas_t *l, const baton_deadline_t *d);

static inline int baton_tas_trylock(baton_tas_t *l)
{
    /* Acquire pairs with the release in baton_tas_unlock().  Under a
     * parking policy an exchange could turn "held with sleepers" (2) into
     * 1 and lose a wake-up, so it is a compare-and-swap from free there. */
    if (!baton_wait_may_park(&l->wait))
        return baton_xchg(&l->word, BATON_TAS_HELD, memory_order_acquire) == BATON_TAS_FREE ? 0 : EBUSY;
    uint32_t expected = BATON_TAS_FREE;
    return baton_cas(&l->word, &expected, BATON_TAS_HELD, memory_order_acquire, memory_order_relaxed) ? 0
                                                                                                      : EBUSY;
}

static inline void baton_tas_lock(baton_tas_t *l)
{
    if (BATON_LIKELY(baton_tas_trylock(l) == 0))
        return;
    baton_tas_lock_slow(l);
}

static inline int baton_tas_unlock(baton_tas_t *l)
{
    if (!baton_wait_may_park(&l->wait)) {
        /* Release pairs with the acquire exchange of the next owner. */
        baton_store(&l->word, BATON_TAS_FREE, memory_order_release);
    } else if (baton_xchg(&l->word, BATON_TAS_FREE, memory_order_release) == BATON_TAS_SLEEPERS) {
        baton_wake_one(&l->word);
    }
    return 0;
}

static inline int baton_tas_is_locked(baton_tas_t *l)
{
    return baton_load(&l->word, memory_order_relaxed) != BATON_TAS_FREE;
}

#ifdef __cplusplus
}
#endif
#endif
