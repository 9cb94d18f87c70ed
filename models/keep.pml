/* keep.pml - leases of the lock server (`server,keep_us=T`), src/server/
 * keep.c on the basic protocol of basic.c, for spin.
 *
 * Processes: NC clients and the lock's home, for one lock.  The basic
 * transport is chain.pml's (request word, grant word, release word).  The
 * lease word is one word: a state (NONE, HELD, CACHED), a take-back flag
 * and a generation (lgen here; 40 bits in the code, with a use count the
 * model leaves out: it only tells the home an idle lease from a busy one,
 * and the model's home may take a lease back at any moment anyway).
 *
 *   home, request   (on_acquire) a release already made is handled first;
 *                   then, if the lock is free: grant it as a lease (a new
 *                   generation, the word set to HELD, the grant LEASED);
 *                   else queue the requester;
 *   home, release   (on_release, lk_back_home) the lease ends; grant the
 *                   first waiter, or leave the lock free;
 *   home, take-back (keep_poll: once a waiter has waited keep_us, or the
 *                   lease went unused for keep_us/4 with a waiter or 1 ms
 *                   without; in the model at any moment while the lock is
 *                   leased, which covers every clock) one CAS:
 *                   CACHED -> NONE, and the lock is home (grant the first
 *                   waiter); or HELD -> HELD|REVOKE, and the lease is over
 *                   (the holder will release);
 *   client, lock    it remembers a lease it keeps (generation kgen[c]):
 *                   CAS (kgen, CACHED) -> (kgen, HELD) takes the lock with
 *                   no message; if that fails, it forgets the lease and
 *                   posts a request as in the basic protocol; a LEASED grant
 *                   reads the lease word's generation (mgen[c]);
 *   client, unlock  under a lease: CAS (mgen, HELD) -> (mgen, CACHED) keeps
 *                   the lock; it fails if the home set the flag, and then,
 *                   or when the thread keeps too many leases already (any
 *                   moment here: KEEP_MAX), it bumps the release word.
 *
 * Abstractions as chain.pml: one lock, no trylock, free, fork or counters;
 * the home acts on whatever is ready in any order (safety), in turn
 * (LIVE).  Every step is sequentially consistent; each CAS is one step.
 *
 * Checked after every step:
 *   - exactly one token: the lock free at the home, or a release
 *     outstanding, or a grant its client has not yet seen, or a client in
 *     its critical section, or the lease word CACHED (kept, not in use);
 *   - the lease word is CACHED or HELD-without-flag only while the home
 *     counts the lock as leased, and then carries the home's generation;
 *   - entering the critical section: nobody else is in it;
 *   - no invalid end state; at the end the lock is free or kept (CACHED)
 *     and nobody waits.
 * With -DLIVE the clients loop forever and `live` says every request is
 * eventually granted (weak fairness), although a client that keeps the
 * lease may take it again and again.
 *
 * Deliberately broken variants spin must catch:
 *   BUG_BLIND_RELOCK  the relock trusts the client's memory of a lease and
 *                   stores HELD without a CAS: a lease taken back meanwhile
 *                   is taken twice;
 *   BUG_TAKE_HELD   the take-back moves HELD -> NONE as if the lock were
 *                   cached, and grants the next waiter;
 *   BUG_NO_FLAG     a take-back from HELD sets no flag: the holder keeps
 *                   the lock at unlock, and the waiter waits forever;
 *   BUG_NO_TAKEBACK (LIVE) the home never takes a lease back: a client that
 *                   keeps taking its lease again starves the others.
 *
 * The generation: a client's memory of a lease that was taken back must
 * not take a later lease that another client keeps (its relock's CAS
 * fails and it asks).  That is fairness, not exclusion; the markers show
 * the failing relock (5) is reached.
 *
 * Reachability markers: 1 a relock without a message; 2 a take-back from
 * CACHED; 3 a take-back from HELD (flag); 4 an unlock finds the flag and
 * releases; 5 a relock fails (the lease was taken back) and the client
 * asks; 6 an unlock releases because the thread keeps enough leases; 7 a
 * request finds the lock free; 8 a request queues.
 */

#ifndef NC
#define NC 2            /* clients */
#endif
#ifndef ROUNDS
#define ROUNDS 3        /* critical sections per client (not with LIVE) */
#endif

#define NONE 255
#define WAITING 0
#define LEASED 4
#define L_NONE 0
#define L_HELD 1
#define L_CACHED 2

/* A new generation.  The code's never wraps; with LIVE the clients loop
 * forever and the model's wraps at 3, which is safe: the generation only
 * keeps a client's stale memory of a lease from taking a later lease kept
 * by another client (fairness), exclusion never depends on it (the lease
 * word is the one token). */
#ifdef LIVE
#define NEWGEN() gen = gen % 3 + 1
#else
#define NEWGEN() gen++
#endif

hidden byte cov;
#define reach(n) cov = n

/* shared */
bit req[NC];
byte nreq;
byte grant[NC];
bit relw;
byte lstate;            /* the lease word: state */
bit lflag;              /* ... the take-back flag */
byte lgen;              /* ... the generation */

/* the home's own */
bit held, leased;
byte gen;               /* the last lease's generation */
byte q[NC];             /* the waiting list, FIFO */
byte qn;

/* the clients' own */
byte ph[NC];            /* 0 idle, 1 asked, 2 in its critical section */
byte kgen[NC];          /* the lease it keeps (0: none) */
byte mgen[NC];          /* the lease it holds under (0: a plain grant) */

byte holder = NONE;
hidden byte ci, cn, hi;

inline check()
{
    d_step {
        cn = 0;
        if :: !held -> cn++ :: else fi;
        if :: relw -> cn++ :: else fi;
        if :: lstate == L_CACHED -> cn++ :: else fi;
        ci = 0;
        do
        :: ci < NC ->
            if
            :: ph[ci] == 2 -> cn++
            :: ph[ci] == 1 && grant[ci] != WAITING -> cn++
            :: else
            fi;
            ci++
        :: else -> break
        od;
        assert(cn == 1);
        assert(lstate != L_CACHED || (leased && lgen == gen));
        ci = 0; cn = 0
    }
}

/* Grant the first waiter (lk_grant_next, keep_grant). */
inline grant_next()
{
    hi = q[0];
    ci = 0;
    do
    :: ci + 1 < qn -> q[ci] = q[ci + 1]; ci++
    :: else -> break
    od;
    qn--;
    q[qn] = NONE;
    ci = 0;
    held = 1;
    leased = 1;
    NEWGEN();
    lstate = L_HELD; lflag = 0; lgen = gen;
    grant[hi] = LEASED;
    hi = 0
}

/* The lock is home (a release, or a cached lease taken back). */
inline back_home()
{
    held = 0;
    leased = 0;
    if
    :: qn > 0 -> grant_next()
    :: else
    fi
}

inline take(c)
{
    req[c] = 0;
    nreq--;
    if :: relw -> relw = 0; back_home() :: else fi;
    if
    :: !held ->
        reach(7);
        held = 1;
        leased = 1;
        NEWGEN();
        lstate = L_HELD; lflag = 0; lgen = gen;
        grant[c] = LEASED
    :: else ->
        reach(8);
        q[qn] = c;
        qn++
    fi
}

/* keep_poll's take_back() */
inline take_back()
{
    if
    :: lstate == L_CACHED ->
        reach(2);
        lstate = L_NONE; lflag = 0;
        back_home()
    :: lstate == L_HELD ->
        reach(3);
#if defined(BUG_TAKE_HELD)
        lstate = L_NONE;
        back_home()
#elif defined(BUG_NO_FLAG)
        leased = 0
#else
        lflag = 1;
        leased = 0
#endif
    fi
}

proctype Client(byte c)
{
#if !defined(LIVE)
    byte r;
#endif
    do
#if !defined(LIVE)
    :: r < ROUNDS ->
#else
    :: true ->
#endif
        if
        :: kgen[c] != 0 ->
            atomic {                       /* keep_relock: one CAS */
                if
#ifdef BUG_BLIND_RELOCK
                :: true ->
#else
                :: lstate == L_CACHED && lgen == kgen[c] ->
#endif
                    reach(1);
                    lstate = L_HELD;
                    mgen[c] = kgen[c];
                    kgen[c] = 0;
                    ph[c] = 2
                :: else ->
                    reach(5);
                    kgen[c] = 0
                fi;
                check()
            }
        :: else
        fi;
        if
        :: ph[c] == 0 ->
            atomic {                       /* lk_post */
                grant[c] = WAITING;
                req[c] = 1;
                nreq++;
                ph[c] = 1;
                check()
            };
            atomic {                       /* lk_wait, keep_word */
                grant[c] != WAITING ->
                mgen[c] = lgen;
                ph[c] = 2;
                check()
            }
        :: else
        fi;
        atomic {                           /* the critical section */
            assert(holder == NONE);
            holder = c
        };
        atomic {                           /* unlock */
            assert(holder == c);
            holder = NONE;
            if
            :: lstate == L_HELD && !lflag && lgen == mgen[c] ->
                if
                :: kgen[c] = mgen[c];      /* keep_unlock: the CAS */
                   lstate = L_CACHED
                :: reach(6);               /* KEEP_MAX: release instead */
                   assert(!relw);
                   relw = 1
                fi
            :: else ->
                if :: lflag && lgen == mgen[c] -> reach(4) :: else fi;
                assert(!relw);
                relw = 1                   /* lk_release_home */
            fi;
            mgen[c] = 0;
            ph[c] = 0;
            check()
        };
#if !defined(LIVE)
        r++
    :: else -> break
#endif
    od
}

#ifdef LIVE
/* In turn: the request words, the release word, the take-back. */
#ifdef BUG_NO_TAKEBACK
#define CAN_TAKE_BACK 0
#else
#define CAN_TAKE_BACK (leased && qn > 0)
#endif
#define READY(p) ((p < NC && req[p]) || (p == NC && relw) || (p == NC + 1 && CAN_TAKE_BACK))
proctype Home()
{
    byte p;
end_idle:
    do
    :: atomic {
           (nreq > 0 || relw || CAN_TAKE_BACK) ->
           do
           :: READY(p) -> break
           :: else -> p = (p + 1) % (NC + 2)
           od;
           if
           :: p < NC -> take(p)
           :: p == NC -> relw = 0; back_home()
           :: else -> take_back()
           fi;
           p = (p + 1) % (NC + 2);
           check()
       }
    od
}
#else
#define TAKE(k) :: req[k] -> take(k)
proctype Home()
{
end_idle:
    do
    :: atomic {
           if
           :: relw -> relw = 0; back_home()
           :: leased -> take_back()       /* also with nobody waiting: expiry */
           TAKE(0)
           TAKE(1)
#if NC > 2
           TAKE(2)
#endif
           fi;
           check()
       }
    od
}
#endif

init {
    byte i;
    atomic {
        do
        :: i < NC -> q[i] = NONE; i++
        :: else -> break
        od;
        i = 0;
        run Home();
        do
        :: i < NC -> run Client(i); i++
        :: else -> break
        od
    };
#if !defined(LIVE)
    _nr_pr == 2;
    !relw;
    d_step {
        assert(qn == 0 && nreq == 0 && holder == NONE);
        assert(!held || lstate == L_CACHED)
    }
#endif
}

#ifdef LIVE
#define GOT(c) [] (ph[c] == 1 -> <> (holder == c))
#if NC == 2
ltl live { GOT(0) && GOT(1) }
#else
ltl live { GOT(0) && GOT(1) && GOT(2) }
#endif
#endif
