/* keep.c - leases (`server,keep_us=T`): a client that was granted the lock
 * keeps it across its own unlock, so that its next lock costs no message,
 * until the home takes it back.  The home takes it back T microseconds
 * after another client first asks for it, or sooner if the holder leaves
 * it unused for a quarter of that, or at once for a trylock or a free if
 * the lock is not inside a critical section; a lease nobody asks for
 * expires after a millisecond unused.
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
 * bits 0-1, a take-back flag in bit 2, a use count in bits 3-23 (bumped by
 * each unlock that keeps the lock, so the home can tell an idle lease from
 * a busy one) and the lease's generation above (40 bits):
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
#include "../wait/wait_internal.h"


/* A kept lease that the holder has not taken again for a quarter of
 * keep_us, while another thread waits, is taken back before keep_us is up:
 * its holder is busy elsewhere (or not running), and the waiter need not
 * wait the rest.  Why not sooner: when threads outnumber CPUs the waiter is
 * itself most often not running, and every hand-over costs a context
 * switch; a holder that relocks every few microseconds (a loop with some
 * work between its critical sections) keeps its lease.  Measured on 2 CPUs,
 * 16 threads, 3.7 us between sections: an idle limit of 2 us handed the
 * lock over at nearly every section and ran at 0.09 Mops/s; without one,
 * 0.24 (docs/results.md).  (Handing the lease over as soon as the first
 * waiter is seen spinning rather than parked, which would be cheap with a
 * core to spare, made the 16-thread, 37 ns run 3x slower here: the spinner
 * shared its CPU with the server.) */
#define KEEP_IDLE_DIV 4

/* A kept lease unused for this long while nobody waits expires: the home
 * takes it back.  Its holder may have forgotten it (a thread keeps at most
 * KEEP_MAX leases, server.c, and forgets the oldest for a new one), and a
 * lease nobody asks for would otherwise stay on the home's list of active
 * locks for good (a program that walks a million mutexes would leave a
 * million).  Long enough that a holder which comes back every few hundred
 * microseconds keeps it, and that the home's timed wake-ups to look cost
 * next to nothing (one per lease per millisecond at most). */
#define KEEP_EXPIRE_NS 1000000u

/* --- the home's side ----------------------------------------------------------- */

uint32_t keep_grant(lk_inst_t *in, srt_waiter_t *w, uint32_t v)
{
    if (in->keep_ns == 0 || v != SRT_GRANTED || w->wake != NULL)
        return v;
    in->leased = 1;
    /* 40 bits: a wrap would take days of grants, and would only let a
     * stale memory of a lease take a kept lease (unfair, never unsafe:
     * models/keep.pml). */
    in->lease_gen = (in->lease_gen + 1) & ((1ull << (64 - LS_GEN_SHIFT)) - 1);
    if (in->lease_gen == 0)
        in->lease_gen = 1;
    /* Relaxed: the grant's release store publishes it to the holder (its
     * acquire of the grant comes before its read, in keep_word()). */
    baton_store(&in->lease, (in->lease_gen << LS_GEN_SHIFT) | LS_HELD, memory_order_relaxed);
    /* Waiters left behind this grant start the clock at once. */
    in->deadline = 0;
    in->sample_word = LS_NONE; /* matches no leased word */
    in->sample_at = baton_now_ns();
    if (in->head)
        keep_asked(in);
    return SRT_LEASED;
}

void keep_asked(lk_inst_t *in)
{
    if (!in->leased || in->deadline != 0)
        return;
    const uint64_t now = baton_now_ns();
    in->deadline = now + in->keep_ns;
    in->sample_word = LS_NONE; /* matches no leased word */
    in->sample_at = now;
}

/* Ask for the lease back: true if the lock came home (it was CACHED);
 * false if the holder is in its critical section and will release (the
 * flag is set).  Either way the lease is over. */
static bool take_back(lk_inst_t *in)
{
    bool home;
    /* Acquire: pairs with the holder's release CAS to CACHED (its critical
     * section happens before our next grant, which passes it on). */
    uint64_t cur = baton_load(&in->lease, memory_order_acquire);
    for (;;) {
        if ((cur & LS_STATE) == LS_CACHED) {
            if (baton_cas(&in->lease, &cur, (uint64_t)LS_NONE, memory_order_acquire,
                          memory_order_acquire)) { /* as the load above */
                home = true;
                break;
            }
        } else if ((cur & LS_REVOKE) ||
                   baton_cas(&in->lease, &cur, cur | LS_REVOKE, memory_order_acquire, memory_order_acquire)) {
            /* HELD: the holder's unlock fails its CAS and releases.  The
             * flag publishes nothing (the holder's release, a seq_cst bump
             * of the release word, carries its section); acquire only
             * because a failure may read CACHED, which the next round
             * takes as the load above does. */
            home = false;
            break;
        }
    }
    in->leased = 0;
    in->deadline = 0;
    lk_count(in, in->own_role, in->req_role, 1);
    return home;
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

/* How long between two looks at a lease (idle, or expired). */
static uint64_t look_period(const lk_inst_t *in)
{
    return in->deadline ? in->keep_ns / KEEP_IDLE_DIV : KEEP_EXPIRE_NS;
}

uint32_t keep_poll(srt_server_t *s, lk_inst_t *in)
{
    if (!in->leased)
        return 0;
    const uint64_t now = baton_now_ns();
    if (in->deadline == 0 || now < in->deadline) {
        if (now - in->sample_at < look_period(in))
            return 0;
        /* An idle lease: kept, and not taken again since the last look
         * (the use count moves at every unlock that keeps it).  Relaxed:
         * only a look; take_back() reads again with acquire. */
        const uint64_t w = baton_load(&in->lease, memory_order_relaxed);
        const bool idle = (w & LS_STATE) == LS_CACHED && w == in->sample_word;
        in->sample_word = w;
        in->sample_at = now;
        if (!idle)
            return 0;
    }
    if (take_back(in))
        lk_back_home(s, in);
    return 1;
}

uint64_t keep_next(const lk_inst_t *in)
{
    if (!in->leased)
        return 0;
    const uint64_t look = in->sample_at + look_period(in);
    return in->deadline && in->deadline < look ? in->deadline : look;
}

bool keep_pending(const lk_inst_t *in)
{
    const uint64_t t = keep_next(in);
    return t != 0 && baton_now_ns() >= t;
}

/* --- the holder's side ------------------------------------------------------------ */

uint64_t keep_word(lk_inst_t *in)
{
    /* Relaxed: written by the home before its grant, which we acquired.
     * The home may have flagged it already: expect the plain HELD word,
     * so the unlock's CAS fails and releases. */
    return baton_load(&in->lease, memory_order_relaxed) & ~(uint64_t)LS_REVOKE;
}

bool keep_unlock(lk_inst_t *in, uint64_t *held)
{
    uint64_t exp = *held;
    const uint64_t use = (exp + LS_USE_ONE) & LS_USE_MASK;
    const uint64_t kept = (exp & ~(LS_STATE | LS_USE_MASK)) | use | LS_CACHED;
    /* Release: pairs with the home's acquire when it takes the lease back
     * (our critical section happens before the next holder's). */
    if (!baton_cas(&in->lease, &exp, kept, memory_order_release, memory_order_relaxed))
        return false;
    *held = (kept & ~LS_STATE) | LS_HELD;
    return true;
}

bool keep_relock(lk_inst_t *in, uint64_t held)
{
    uint64_t exp = (held & ~LS_STATE) | LS_CACHED;
    /* Acquire: pairs with nothing new when it succeeds (the lock never
     * left us); it keeps our section after the CAS that claims it. */
    return baton_cas(&in->lease, &exp, held, memory_order_acquire, memory_order_relaxed);
}
