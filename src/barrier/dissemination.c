/* dissemination.c - the dissemination barrier.
 *
 * ceil(log2(n)) rounds with no shared counter: in round k the thread of
 * rank r signals rank (r + 2^k) mod n and waits for the signal of rank
 * (r - 2^k) mod n.  After the last round every rank has heard, directly or
 * through others, from every rank, so all have arrived.  Each flag has one
 * writer and one reader; no word is written by more than one thread, and the
 * critical path of the last arrival is one signal per round (with two
 * threads: one cache-line transfer, the least any barrier can do).
 *
 * Flags.  Seat r's flag[k] holds the number of episodes for which r's round-k
 * signal has come, mod 2^31 (barrier.h: episodes rather than senses).  While
 * rank r waits in round k of its episode e, the flag reads e, e + 1 or
 * e + 2: its writer may finish episode e and signal round k of e + 1 before
 * r has looked, but it cannot finish e + 1 before r arrives at it.  The
 * values only grow, so r waits while the flag reads e.
 *
 * The serial thread is rank 0's.
 */
#include "barrier.h"

static int diss_init(baton_barrier_t *b)
{
    (void)b; /* seats come zeroed: every flag and episode reads 0 */
    return 0;
}

static int diss_wait(baton_barrier_t *b, bar_seat_t *seat)
{
    const unsigned n = b->n, r = seat->rank, rounds = bar_rounds(n);
    const uint32_t e = seat->episode, done = (e + 1u) & BAR_EPISODE_MASK;
    seat->episode = done;
    unsigned step = 1;
    for (unsigned k = 0; k < rounds; k++, step <<= 1) {
        unsigned to = r + step < n ? r + step : r + step - n;
        /* Release (in bar_publish): what we know (our writes and the
         * signals we received) goes to rank `to`. */
        bar_publish(b, &bar_seat(b, to)->flag[k], done);
        /* Acquire (in bar_wait_while): what rank r - 2^k knew. */
        (void)bar_wait_while(b, &seat->flag[k], e);
    }
    return r == 0 ? BATON_BARRIER_SERIAL_THREAD : 0;
}

/* --- registry entry ------------------------------------------------------- */

const bar_kind_t bar_kind_dissemination = {
    .name = "dissemination",
    .summary =
        "ceil(log2 n) rounds of point-to-point signals, no shared counter; lowest latency with a core per thread",
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_AUTO,
    .size = 0,
    .init = diss_init,
    .wait = diss_wait,
};
