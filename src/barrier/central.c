/* central.c - the centralized sense-reversing counter barrier.
 *
 * The classic design (as in the seed's description of the stock OpenMP
 * barrier): every thread increments one shared counter; the thread that
 * brings it to n is the last, resets it and flips a shared sense word that
 * every other thread waits on.
 *
 * Two changes make it safe for threads that come and go.  The counter
 * never resets: it is a ticket, and ticket t belongs to episode t / n and is
 * the last of it when t % n == n - 1, so nobody has to read the episode
 * before arriving (a thread joining late would otherwise read a stale sense
 * and fall straight through).  And the sense is an episode number (see
 * barrier.h), so a waiter waits for "episode e done" rather than for a bit
 * that may have flipped twice.
 *
 * State machine of `episode` (the wait word): it counts completed episodes.
 * A thread holding ticket t of episode e finds it at e - 1 (the previous
 * episode's last arriver has not published yet) or e, and it reaches e + 1
 * only by the store of episode e's last arriver; it cannot go further before
 * this thread arrives again.  So a waiter waits until it reads exactly e + 1.
 *
 * Tickets are 64-bit: at one episode per nanosecond they last 500 years.
 */
#include "barrier.h"

typedef struct central {
    /* The counter, and the episode word beside it when few threads wait
     * (barrier.h: BAR_SHARE_LINE_MAX). */
    _Alignas(BATON_CACHELINE) _Atomic uint64_t tickets;
    _Atomic uint32_t near;
    _Atomic uint32_t *episode; /* &near or &far, set at init */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t far;
} central_t;

static int central_init(baton_barrier_t *b)
{
    central_t *c = b->state;
    atomic_init(&c->tickets, 0u);
    atomic_init(&c->near, 0u);
    atomic_init(&c->far, 0u);
    c->episode = b->n <= BAR_SHARE_LINE_MAX ? &c->near : &c->far;
    return 0;
}

static int central_wait(baton_barrier_t *b, bar_seat_t *seat)
{
    (void)seat;
    central_t *c = b->state;
    uint32_t done;
    if (bar_arrive(&c->tickets, b->n, &done)) {
        bar_publish(b, c->episode, done);
        return BATON_BARRIER_SERIAL_THREAD;
    }
    bar_wait_for(b, c->episode, done);
    return 0;
}

/* --- registry entry ------------------------------------------------------- */

const bar_kind_t bar_kind_central = {
    .name = "central",
    .summary =
        "one shared counter (a ticket per arrival); the last arriver publishes the episode to one word",
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_AUTO,
    .size = sizeof(central_t),
    .init = central_init,
    .wait = central_wait,
};
