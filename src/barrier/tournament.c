/* tournament.c - the tournament barrier (with a global release word).
 *
 * ceil(log2(n)) rounds of statically paired matches: in round k, rank r
 * with r mod 2^(k+1) == 0 is the winner and waits for its loser
 * r + 2^k (if that rank exists); rank r with r mod 2^(k+1) == 2^k is the
 * loser, signals its winner r - 2^k and drops out to wait for the release.
 * Rank 0 wins every round: when it has heard from all its losers every rank
 * has arrived, and it publishes the episode on one global word that every
 * loser waits on (the variant that releases through one word rather than
 * back down the tree: one store, and one word for `park` to wake at once).
 *
 * Flags.  Seat r's flag[k] holds the episodes for which r's round-k loser has
 * arrived, mod 2^31; it has one writer (the loser) and one reader (r).
 * While r waits in round k of episode e it reads e or e + 1: the loser
 * cannot arrive for e + 1 before rank 0 releases e, which needs r.  The
 * release word reads e when a loser of episode e starts waiting (it was
 * released from e - 1) and cannot pass e + 1 before that loser arrives again.
 *
 * The serial thread is rank 0's (the champion).
 */
#include "barrier.h"

typedef struct tournament {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t episode; /* the release word */
} tournament_t;

static int tour_init(baton_barrier_t *b)
{
    tournament_t *t = b->state;
    atomic_init(&t->episode, 0u);
    return 0;
}

static int tour_wait(baton_barrier_t *b, bar_seat_t *seat)
{
    tournament_t *t = b->state;
    const unsigned n = b->n, r = seat->rank, rounds = bar_rounds(n);
    const uint32_t e = seat->episode, done = (e + 1u) & BAR_EPISODE_MASK;
    seat->episode = done;
    for (unsigned k = 0; k < rounds; k++) {
        unsigned half = 1u << k;
        if ((r & (2u * half - 1u)) == 0) {
            /* Winner: wait for the loser, if there is one.  Acquire (in
             * bar_wait_while): what the loser and its own losers wrote. */
            if (r + half < n)
                (void)bar_wait_while(b, &seat->flag[k], e);
        } else {
            /* Loser: release (in bar_publish) what we and our losers wrote to
             * the winner, then wait for the episode's release; acquire (in
             * bar_wait_while): everything rank 0 had gathered. */
            bar_publish(b, &bar_seat(b, r - half)->flag[k], done);
            (void)bar_wait_while(b, &t->episode, e);
            return 0;
        }
    }
    bar_publish(b, &t->episode, done); /* release: pairs with the losers' acquire above */
    return BATON_BARRIER_SERIAL_THREAD;
}

/* --- registry entry ------------------------------------------------------- */

const bar_kind_t bar_kind_tournament = {
    .name = "tournament",
    .summary =
        "ceil(log2 n) rounds of fixed pairwise matches up to rank 0, which releases everyone through one word",
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_AUTO,
    .size = sizeof(tournament_t),
    .init = tour_init,
    .wait = tour_wait,
};
