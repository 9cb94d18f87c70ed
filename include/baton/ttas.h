/* baton/ttas.h - test-and-test-and-set lock with bounded exponential backoff
 * (typed API).
 *
 * Waiters read the word until it looks free and only then try the atomic
 * exchange, so they spin in their own cache while the lock is held; between
 * reads they wait according to the policy (default: backoff, doubling up to
 * the calibrated maximum).  Under a parking policy the word follows the same
 * three-state futex protocol as tas.
 *
 * Owner: not tracked.  Fairness: none.
 */
#ifndef BATON_TTAS_H
#define BATON_TTAS_H

#include <baton/wait.h>
#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct baton_ttas {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t word; /* 0 free, 1 held, 2 held + sleepers */
    baton_wait_t wait;
} baton_ttas_t;

BATON_API int baton_ttas_init(baton_ttas_t *l, const baton_wait_t *wait); /* wait NULL: backoff */
BATON_API int baton_ttas_destroy(baton_ttas_t *l);
BATON_API void baton_ttas_lock_slow(baton_ttas_t *l);
/* Wait for the lock until d: 0, or ETIMEDOUT (see ttas.c). */
BATON_API int baton_ttas_timedlock(baton_ttas_t *l, const baton_deadline_t *d);

static inline int baton_ttas_trylock(baton_ttas_t *l)
{
    /* Test first so a failing trylock does not take the line exclusive.
     * Acquire pairs with the release in baton_ttas_unlock(). */
    if (baton_load(&l->word, memory_order_relaxed) != 0)
        return EBUSY;
    /* Under a parking policy never overwrite a sleeper mark (2): CAS. */
    if (!baton_wait_may_park(&l->wait))
        return baton_xchg(&l->word, 1u, memory_order_acquire) == 0 ? 0 : EBUSY;
    uint32_t expected = 0;
    return baton_cas(&l->word, &expected, 1u, memory_order_acquire, memory_order_relaxed) ? 0 : EBUSY;
}

static inline void baton_ttas_lock(baton_ttas_t *l)
{
    uint32_t expected = 0;
    /* A CAS from free is as cheap as the exchange when uncontended and
     * never overwrites a sleeper mark. */
    if (BATON_LIKELY(baton_cas(&l->word, &expected, 1u, memory_order_acquire, memory_order_relaxed)))
        return;
    baton_ttas_lock_slow(l);
}

static inline int baton_ttas_unlock(baton_ttas_t *l)
{
    if (!baton_wait_may_park(&l->wait)) {
        baton_store(&l->word, 0u, memory_order_release); /* pairs with the acquiring exchange */
    } else if (baton_xchg(&l->word, 0u, memory_order_release) == 2u) {
        baton_wake_one(&l->word);
    }
    return 0;
}

static inline int baton_ttas_is_locked(baton_ttas_t *l)
{
    return baton_load(&l->word, memory_order_relaxed) != 0;
}

#ifdef __cplusplus
}
#endif
#endif
