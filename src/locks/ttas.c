/* ttas.c - test-and-test-and-set lock with backoff: slow path and lifecycle.
 * See baton/ttas.h. */
#include <baton/ttas.h>

#include <errno.h>
#include <stddef.h>

int baton_ttas_init(baton_ttas_t *l, const baton_wait_t *wait)
{
    atomic_init(&l->word, 0u);
    if (wait)
        l->wait = *wait;
    else
        return baton_wait_init(&l->wait, BATON_WAIT_BACKOFF);
    return 0;
}

int baton_ttas_destroy(baton_ttas_t *l) { return baton_ttas_is_locked(l) ? EBUSY : 0; }

void baton_ttas_lock_slow(baton_ttas_t *l)
{
    baton_waiter_t s;
    baton_waiter_init(&s, &l->wait);
    const bool parks = baton_wait_may_park(&l->wait);
    for (;;) {
        /* Test: read until it looks free, pausing by the policy between
         * reads (relaxed: the acquiring exchange below orders the CS). */
        uint32_t v;
        while ((v = baton_load(&l->word, memory_order_relaxed)) != 0) {
            if (!baton_waiter_pause(&s, &l->word, v))
                goto sleep;
        }
        /* Test-and-set.  Under a parking policy use CAS from free so that a
         * sleeper's mark (2) is never overwritten by a 1. */
        if (!parks) {
            if (baton_xchg(&l->word, 1u, memory_order_acquire) == 0)
                return;
        } else {
            uint32_t expected = 0;
            if (baton_cas(&l->word, &expected, 1u, memory_order_acquire, memory_order_relaxed))
                return;
        }
    }
sleep:
    /* Three-state futex protocol, as in tas.c.  Acquire pairs with the
     * releasing exchange in baton_ttas_unlock(). */
    while (baton_xchg(&l->word, 2u, memory_order_acquire) != 0)
        baton_park(&l->word, 2u);
}

/* The timed lock: the same waits with a deadline.  A waiter that times out
 * while sleeping leaves the word marked 2, as in tas.c: one futex wake at
 * the next unlock that may find nobody, nothing else. */
int baton_ttas_timedlock(baton_ttas_t *l, const baton_deadline_t *d)
{
    baton_waiter_t s;
    baton_waiter_init(&s, &l->wait);
    const bool parks = baton_wait_may_park(&l->wait);
    for (;;) {
        uint32_t v;
        /* Relaxed, as in baton_ttas_lock_slow(). */
        while ((v = baton_load(&l->word, memory_order_relaxed)) != 0) {
            if (baton_deadline_left(d) == 0)
                return ETIMEDOUT;
            if (!baton_waiter_pause(&s, &l->word, v))
                goto sleep;
        }
        /* Acquire pairs with the release in baton_ttas_unlock(). */
        if (!parks) {
            if (baton_xchg(&l->word, 1u, memory_order_acquire) == 0)
                return 0;
        } else {
            uint32_t expected = 0;
            if (baton_cas(&l->word, &expected, 1u, memory_order_acquire, memory_order_relaxed))
                return 0;
        }
    }
sleep:
    /* Acquire pairs with the releasing exchange in baton_ttas_unlock(); a
     * release that came with the time-out is taken by the last exchange. */
    while (baton_xchg(&l->word, 2u, memory_order_acquire) != 0)
        if (baton_park_until(&l->word, 2u, d) == ETIMEDOUT)
            return baton_xchg(&l->word, 2u, memory_order_acquire) == 0 ? 0 : ETIMEDOUT;
    return 0;
}

/* --- registry entry ------------------------------------------------------- */
#include "../base/kind.h"

BATON_KIND_ADAPT_INIT_WAIT(baton_ttas_init)
BATON_KIND_ADAPT_MUTEX(ttas)

const baton_kind_t baton_kind_ttas = {
    .name = "ttas",
    .summary = "test-and-test-and-set with bounded exponential backoff",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_BACKOFF,
    .size = sizeof(baton_ttas_t),
    .align = _Alignof(baton_ttas_t),
    /* The unlock needs no owner, and leaves a free lock free. */
    BATON_KIND_MUTEX_OPS,
    .release = k_unlock,
};
