/* keep.c - leases (`server,keep_us=T`): a client that was granted the lock
 * keeps it across its own unlock, so that its next lock costs no message,
 * until the home takes it back.  The home takes it back T microseconds
 * after another client first asks for it (or at once for a trylock or a
 * free, if the lock is not inside a critical section).
 *
 * Why.  A lock server hands the lock over in FIFO order, one holder after
 * another.  When the clients outnumber the CPUs, the next waiter is most
 * often not running, and every hand-over waits for the scheduler to run it
 * (a wake-up, a context switch: tens of microseconds in a virtual
 * machine), so FIFO hand-over collapses where a mutex that lets the running
 * thread take the lock again does not.  A lease is that running thread's
 * chance, bounded in time: the waiters still get the lock in FIFO order,
 * and none waits more than T (plus the hand-over) per holder ahead of it.
 * Without competition the lease is never taken back and a lock/unlock pair
 * costs two compare-and-swaps on a line only the holder uses.
 *
 * The lease word (lk_inst_t.lease, a line of its own) holds the state in
 * bits 0-1, a take-back flag in bit 2 and the lease's generation above:
 *   HELD     the holder is in its critical section;
 *   CACHED   the holder has unlocked but keeps the lock;
 *   NONE     the home has the lock back (or never leased it).
 * The holder moves HELD -> CACHED at unlock and CACHED -> HELD at its next
 * lock, each with one compare-and-swap; the home moves CACHED -> NONE (the
 * lock is back: grant the next waiter) or HELD -> HELD|REVOKE (the holder
 * finds the flag when its unlock's compare-and-swap fails and releases to
 * the home as in the basic protocol).  The generation keeps a thread's
 * stale memory of a lease from matching a later one.
 *
 * Messages.  A lease grant is one grant; taking it back is one message
 * from the home to the holder (counted as a grant-direction message), and,
 * from HELD, the holder's release follows as usual.  Relocks under a lease
 * are no messages at all.
 *
 * Which grants lease.  Plain grants to client threads: the basic lock's,
 * and a chaining lock's grants with an empty list (a list handed out is
 * already a string of holders that pass without the home).  A hierarchical
 * lock's local server keeps the lock in its group already; leases are not
 * offered there (server.c refuses the combination).
 */
#include "server.h"

#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --- the home's side ----------------------------------------------------------- */

uint32_t keep_grant(lk_inst_t *in, srt_waiter_t *w, uint32_t v)
{
    if (in->keep_ns == 0 || v != SRT_GRANTED || w->wake != NULL)
        return v;
    in->leased = 1;
    in->lease_gen++; /* 61 bits: never wraps */
    /* Relaxed: the grant's release store publishes it to the holder (its
     * acquire of the grant comes before its read, in keep_word()). */
    baton_store(&in->lease, (in->lease_gen << LS_GEN_SHIFT) | LS_HELD, memory_order_relaxed);
    /* Waiters left behind this grant start the clock at once. */
    in->deadline = in->head ? now_ns() + in->keep_ns : 0;
    return SRT_LEASED;
}

void keep_asked(lk_inst_t *in)
{
    if (in->leased && in->deadline == 0)
        in->deadline = now_ns() + in->keep_ns;
}

/* Ask for the lease back: true if the lock came home (it was CACHED);
 * false if the holder is in its critical section and will release (the
 * flag is set).  Either way the lease is over. */
static bool take_back(lk_inst_t *in)
{
    /* Acquire: pairs with the holder's release CAS to CACHED (its critical
     * section happens before our next grant, which passes it on). */
    uint64_t cur = baton_load(&in->lease, memory_order_acquire);
    for (;;) {
        if ((cur & LS_STATE) == LS_CACHED) {
            if (baton_cas(&in->lease, &cur, (uint64_t)LS_NONE, memory_order_acquire,
                               memory_order_acquire)) /* as the load above */
                break;
        } else {
            /* HELD: the holder's unlock fails its CAS and releases.  The
             * flag publishes nothing (the holder's release, a seq_cst bump
             * of the release word, carries its section); acquire only
             * because a failure may read CACHED, which the next round
             * takes as the load above does. */
            if ((cur & LS_REVOKE) ||
                baton_cas(&in->lease, &cur, cur | LS_REVOKE, memory_order_acquire,
                          memory_order_acquire)) {
                in->leased = 0;
                in->deadline = 0;
                lk_count(in, in->own_role, in->req_role, 1);
                return false;
            }
        }
    }
    in->leased = 0;
    in->deadline = 0;
    lk_count(in, in->own_role, in->req_role, 1);
    return true;
}

bool keep_take_back(srt_server_t *s, lk_inst_t *in)
{
    if (!in->leased)
        return false;
    /* Acquire: as in take_back().  Only a cached lease is taken at once. */
    if ((baton_load(&in->lease, memory_order_acquire) & LS_STATE) != LS_CACHED)
        return false;
    if (!take_back(in))
        return false;
    lk_back_home(s, in);
    return true;
}

uint32_t keep_poll(srt_server_t *s, lk_inst_t *in)
{
    if (!in->leased || in->deadline == 0 || now_ns() < in->deadline)
        return 0;
    if (take_back(in))
        lk_back_home(s, in);
    return 1;
}

bool keep_pending(const lk_inst_t *in)
{
    return in->leased && in->deadline != 0;
}

/* --- the holder's side ------------------------------------------------------------ */

uint64_t keep_word(lk_inst_t *in)
{
    /* Relaxed: written by the home before its grant, which we acquired.
     * The home may have flagged it already: expect the plain HELD word,
     * so the unlock's CAS fails and releases. */
    return baton_load(&in->lease, memory_order_relaxed) & ~(uint64_t)LS_REVOKE;
}

bool keep_unlock(lk_inst_t *in, uint64_t held)
{
    uint64_t exp = held;
    /* Release: pairs with the home's acquire when it takes the lease back
     * (our critical section happens before the next holder's). */
    return baton_cas(&in->lease, &exp, (held & ~(uint64_t)LS_STATE) | LS_CACHED,
                     memory_order_release, memory_order_relaxed);
}

bool keep_relock(lk_inst_t *in, uint64_t held)
{
    uint64_t exp = (held & ~(uint64_t)LS_STATE) | LS_CACHED;
    /* Acquire: pairs with nothing new when it succeeds (the lock never
     * left us); it keeps our section after the CAS that claims it. */
    return baton_cas(&in->lease, &exp, held, memory_order_acquire, memory_order_relaxed);
}
