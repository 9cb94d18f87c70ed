/* tas.c - test-and-set lock: slow path and lifecycle.  See baton/tas.h. */
#include <baton/tas.h>

#include <errno.h>
#include <stddef.h>

int baton_tas_init(baton_tas_t *l, const baton_wait_t *wait)
{
    atomic_init(&l->word, BATON_TAS_FREE);
    if (wait)
        l->wait = *wait;
    else
        return baton_wait_init(&l->wait, BATON_WAIT_SPIN);
    return 0;
}

int baton_tas_destroy(baton_tas_t *l) { return baton_tas_is_locked(l) ? EBUSY : 0; }

/* The sleeping half of the three-state futex mutex: mark the word "held with
 * sleepers" and sleep until an exchange finds it free.  Every acquisition
 * from here leaves the mark, so the next unlock wakes one more sleeper (it
 * may find none: that costs a syscall, never a lost wake-up). */
static void lock_parked(_Atomic uint32_t *word)
{
    /* Acquire pairs with the release exchange in the unlock. */
    while (baton_xchg(word, BATON_TAS_SLEEPERS, memory_order_acquire) != BATON_TAS_FREE)
        baton_park(word, BATON_TAS_SLEEPERS);
}

void baton_tas_lock_slow(baton_tas_t *l)
{
    baton_waiter_t s;
    baton_waiter_init(&s, &l->wait);
    if (!baton_wait_may_park(&l->wait)) {
        /* Retry the exchange itself: this is what makes it test-and-set. */
        do {
            (void)baton_waiter_pause(&s, &l->word, BATON_TAS_HELD);
        } while (baton_xchg(&l->word, BATON_TAS_HELD, memory_order_acquire) != BATON_TAS_FREE);
        return;
    }
    /* Parking policy.  An exchange with 1 would erase a sleeper's mark, so
     * the spin phase retries with compare-and-swap from free (still a
     * write to the line each time), then sleeps. */
    for (;;) {
        uint32_t expected = BATON_TAS_FREE;
        if (baton_cas(&l->word, &expected, BATON_TAS_HELD, memory_order_acquire, memory_order_relaxed))
            return;
        if (!baton_waiter_pause(&s, &l->word, expected))
            break;
    }
    lock_parked(&l->word);
}

/* The timed lock: the same waits with a deadline.  A waiter that times out
 * under a parking policy leaves the word marked "held with sleepers" (2):
 * the next unlock then makes one futex wake that may find nobody, as after
 * any sleeper's acquisition (a syscall, never a lost wake-up); nothing else
 * of it stays. */
int baton_tas_timedlock(baton_tas_t *l, const baton_deadline_t *d)
{
    baton_waiter_t s;
    baton_waiter_init(&s, &l->wait);
    if (!baton_wait_may_park(&l->wait)) {
        /* Acquire pairs with the release in baton_tas_unlock(). */
        while (baton_xchg(&l->word, BATON_TAS_HELD, memory_order_acquire) != BATON_TAS_FREE) {
            if (baton_deadline_left(d) == 0)
                return ETIMEDOUT;
            (void)baton_waiter_pause(&s, &l->word, BATON_TAS_HELD);
        }
        return 0;
    }
    for (;;) {
        uint32_t expected = BATON_TAS_FREE;
        /* Acquire: as in baton_tas_lock_slow(). */
        if (baton_cas(&l->word, &expected, BATON_TAS_HELD, memory_order_acquire, memory_order_relaxed))
            return 0;
        if (baton_deadline_left(d) == 0)
            return ETIMEDOUT;
        if (!baton_waiter_pause(&s, &l->word, expected))
            break;
    }
    /* Acquire pairs with the release exchange in the unlock.  After a
     * time-out the exchange looks once more: a release that came with it
     * is taken. */
    while (baton_xchg(&l->word, BATON_TAS_SLEEPERS, memory_order_acquire) != BATON_TAS_FREE)
        if (baton_park_until(&l->word, BATON_TAS_SLEEPERS, d) == ETIMEDOUT)
            return baton_xchg(&l->word, BATON_TAS_SLEEPERS, memory_order_acquire) == BATON_TAS_FREE
                       ? 0
                       : ETIMEDOUT;
    return 0;
}

/* --- registry entry ------------------------------------------------------- */
#include "../base/kind.h"

BATON_KIND_ADAPT_INIT_WAIT(baton_tas_init)
BATON_KIND_ADAPT_MUTEX(tas)

const baton_kind_t baton_kind_tas = {
    .name = "tas",
    .summary = "test-and-set: one exchange to acquire; waiters retry the exchange",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPIN,
    .size = sizeof(baton_tas_t),
    .align = _Alignof(baton_tas_t),
    /* The unlock needs no owner, and leaves a free lock free. */
    BATON_KIND_MUTEX_OPS,
    .release = k_unlock,
};
