/* hier.pml - the hierarchical lock server `server,hier` and, with -DCHAIN,
 * `server,hier,chain` (src/server/hier.c on basic.c and chain.c), for
 * spin.
 *
 * Processes: NG local servers with CPG clients each, and the global server,
 * for one lock.  The messages are chain.pml's, at two levels:
 *   client -> its local server: request word, grant word (GRANTED or
 *     CHAINED), the client's link, and the release word of the group's
 *     lock instance (lrel);
 *   local server -> global server: the local server's request word at the
 *     global server (greq), the group's waiter record (grant word ggrant,
 *     link gnxt), and the global instance's release word (grel).
 * A local server (hier_request, hier_released, hier_poll, ask, hand_back):
 *   client request  grant at once if the group holds the lock and no client
 *                   has it; else queue the client and, if the group neither
 *                   holds nor asked for the lock, ask the global server;
 *   client release  (the group's release word) if clients wait, grant the
 *                   next - unless BOUND local grants were made since the
 *                   global grant and another group waits (the global
 *                   list's hint, or a list of groups handed out with the
 *                   grant): then hand back, and ask again for the clients
 *                   left; with nobody waiting, hand back;
 *   global grant    (its waiter record's grant word) grant the first client;
 *   hand back       pass the lock to the next group of the list the global
 *                   grant handed out (CHAIN; read from the group's link at
 *                   this moment), else bump the global release word.
 * With CHAIN both levels hand their waiting lists out with the grant and
 * holders pass (chain.pml).  The global server is chain.pml's home, whose
 * waiters are the groups.
 *
 * Abstractions: chain.pml's (one lock, so a local server's queue of
 * requests to post upstream holds at most this lock's, and it never waits
 * for its mailbox; no trylock, freeing, fork or counters; the servers act
 * on what is ready in any order for safety, in turn for `live`; one step
 * per server action; sequentially consistent steps).  The global list's
 * hint is read exactly (it is written in the same home step as the list;
 * the code's relaxed load can be stale, which only moves a hand-back by a
 * grant or so).
 *
 * What is checked, after every step that changes the protocol's state:
 *   - exactly one token in the system: the lock not held at the global
 *     server, or its release outstanding, or a group's grant word set and
 *     not yet seen, or a group holding it with no client having it (only
 *     inside a step), or a group's release outstanding, or a client's grant
 *     word set and not yet seen, or a client holding it;
 *   - the lists of both levels: every waiting client (group) is on exactly
 *     one list of its level (the local server's or the global server's,
 *     or a chain), no other one is, and a client only on lists of its own
 *     group;
 *   - a local server never asks while its group holds the lock;
 *   - entering the critical section: nobody else is in it, and the
 *     client's group holds the lock;
 *   - no invalid end state, and at the end everything is free and empty.
 * With -DLIVE the clients loop forever and `live` says every request is
 * eventually granted (weak fairness).
 *
 * Deliberately broken variants, each of which spin must catch:
 *   BUG_NO_BOUND           a local server grants its next local waiter
 *                          whenever there is one: a group whose clients
 *                          keep asking starves the other (liveness);
 *   BUG_LOCAL_GRANT_EARLY  a local server grants a client at once when no
 *                          client of the group has the lock, whether or not
 *                          the group holds it;
 *   BUG_NO_REREQUEST       a local server that hands back at the bound does
 *                          not ask again for its clients left waiting.
 *
 * Reachability markers (see qd.pml): 1 a request queues at a local server
 * while its group holds the lock; 2 a local server grants its next waiter
 * on a release; 3 the bound: a local server hands back with clients
 * waiting and asks again; 4 past the bound with no other group waiting, a
 * local server keeps the lock; 5 the global server queues a group; 6 the
 * global server grants on a release; 7 a group's request finds its own
 * release not yet handled; 8 (CHAIN) a client passes the lock; 9 (CHAIN,
 * NG >= 3) a local server passes the lock to the next group.
 */

#ifndef NG
#define NG 2            /* local servers (groups) */
#endif
#ifndef CPG
#define CPG 2           /* clients per group */
#endif
#ifndef ROUNDS
#define ROUNDS 2        /* critical sections per client (not with LIVE) */
#endif
#ifndef BOUND
#define BOUND 1         /* local_bound */
#endif

#define NC (NG * CPG)   /* client c is in group c / CPG */
#define NONE 255
#define WAITING 0
#define GRANTED 1
#define CHAINED 3

hidden byte cov;
#define reach(n) cov = n

/* --- clients and their local servers --- */
bit creq[NC];           /* client c's request word: posted, not consumed */
byte ncreq[NG];         /* group g's requests not consumed (a function) */
byte cgrant[NC];        /* client c's grant word */
byte cnxt[NC];          /* client c's link */
bit lrel[NG];           /* group g's lock instance: its release word */

/* --- local servers and the global server --- */
bit greq[NG];           /* local server g's request word at the global server */
byte ngreq;             /* requests not consumed (a function of greq[]) */
byte ggrant[NG];        /* group g's waiter record: grant word */
byte gnxt[NG];          /* ... and link */
bit grel;               /* the global instance's release word */

/* --- the local servers' own state (lk_local_t) --- */
bit lheld[NG];          /* the group's instance is granted to a client */
byte lhead[NG], ltail[NG];
bit have[NG];           /* the group holds the global lock */
bit asked[NG];          /* a request upstream is queued or unanswered */
bit queued[NG];         /* ... and not yet posted */
bit chained[NG];        /* the global grant carried other groups */
byte lrun[NG];           /* local grants since the global grant (up to BOUND) */

/* --- the global server's own state --- */
bit gheld;
byte ghead = NONE, gtail = NONE;

/* --- the clients' own state --- */
byte ph[NC];            /* 0 idle, 1 asked (no grant seen yet), 2 holds */
byte rest[NC];          /* the successor a CHAINED grant handed it */

/* --- bookkeeping for the checks --- */
byte holder = NONE;
hidden byte hn, hv;     /* scratch of the servers and the clients */
/* check()'s own scratch (see chain.pml) */
hidden byte ci, cj, ck, cn, cg;
hidden byte onl[NC];
hidden byte gonl[NG];

#define GROUP(c) ((c) / CPG)
#define OTHERS_WAIT(g) ((chained[g] && gnxt[g] != NONE) || ghead != NONE)

/* --- the checks --- */

inline cwalk(x, g)                         /* a list of clients of group g */
{
    cj = x;
    ck = 0;
    do
    :: cj != NONE ->
        assert(ck < CPG && GROUP(cj) == g);
        onl[cj]++;
        ck++;
        cj = cnxt[cj]
    :: else -> break
    od
}

inline gwalk(x)                            /* a list of groups */
{
    cj = x;
    ck = 0;
    do
    :: cj != NONE ->
        assert(ck < NG);
        gonl[cj]++;
        ck++;
        cj = gnxt[cj]
    :: else -> break
    od
}

inline check()
{
    d_step {
        cn = 0;                            /* the token */
        if :: !gheld -> cn++ :: else fi;
        if :: grel -> cn++ :: else fi;
        ci = 0;
        do
        :: ci < NG ->
            if :: asked[ci] && ggrant[ci] != WAITING -> cn++ :: else fi;
            if :: have[ci] && !lheld[ci] -> cn++ :: else fi;
            if :: lrel[ci] -> cn++ :: else fi;
            assert(!(asked[ci] && have[ci]));
            assert((lhead[ci] == NONE) == (ltail[ci] == NONE));
            assert(ltail[ci] == NONE || cnxt[ltail[ci]] == NONE);
            gonl[ci] = 0;
            ci++
        :: else -> break
        od;
        ci = 0;
        do
        :: ci < NC ->
            if
            :: ph[ci] == 2 -> cn++
            :: ph[ci] == 1 && cgrant[ci] != WAITING -> cn++
            :: else
            fi;
            onl[ci] = 0;
            ci++
        :: else -> break
        od;
        assert(cn == 1);
        assert((ghead == NONE) == (gtail == NONE));
        assert(gtail == NONE || gnxt[gtail] == NONE);
        /* clients' lists */
        ci = 0;
        do
        :: ci < NG -> cwalk(lhead[ci], ci); ci++
        :: else -> break
        od;
        ci = 0;
        do
        :: ci < NC ->
            cg = GROUP(ci);
            if
            :: ph[ci] == 2 -> cwalk(rest[ci], cg)
            :: ph[ci] == 1 && cgrant[ci] == CHAINED -> cwalk(cnxt[ci], cg)
            :: else
            fi;
            ci++
        :: else -> break
        od;
        ci = 0;
        do
        :: ci < NC ->
            assert(onl[ci] == (ph[ci] == 1 && !creq[ci] && cgrant[ci] == WAITING));
            onl[ci] = 0;
            ci++
        :: else -> break
        od;
        /* groups' lists */
        gwalk(ghead);
        ci = 0;
        do
        :: ci < NG ->
            if
            :: have[ci] && chained[ci] -> gwalk(gnxt[ci])
            :: asked[ci] && ggrant[ci] == CHAINED -> gwalk(gnxt[ci])
            :: else
            fi;
            ci++
        :: else -> break
        od;
        ci = 0;
        do
        :: ci < NG ->
            assert(gonl[ci] == (asked[ci] && !queued[ci] && !greq[ci] && ggrant[ci] == WAITING));
            gonl[ci] = 0;
            ci++
        :: else -> break
        od;
        ci = 0; cj = 0; ck = 0; cn = 0; cg = 0
    }
}

/* --- the local servers --- */

/* lk_grant_next at group g's instance (local_grant_next: run counts it). */
inline local_grant_next(g)
{
    if :: lrun[g] < BOUND -> lrun[g]++ :: else fi;
    hn = lhead[g];
#ifdef CHAIN
    if :: cnxt[hn] != NONE -> hv = CHAINED :: else -> hv = GRANTED fi;
    lhead[g] = NONE;
    ltail[g] = NONE;
#else
    lhead[g] = cnxt[hn];
    if :: lhead[g] == NONE -> ltail[g] = NONE :: else fi;
    hv = GRANTED;
#endif
    lheld[g] = 1;
    cgrant[hn] = hv;
    hn = NONE;
    hv = 0
}

/* ask() and hier_post(): the request goes out at once (one lock: the
 * mailbox is free, the previous request having been answered). */
inline ask(g)
{
    asked[g] = 1;
    queued[g] = 1;
    ggrant[g] = WAITING;
    if
    :: !greq[g] -> queued[g] = 0; greq[g] = 1; ngreq++
    :: else
    fi
}

inline hand_back(g)
{
    have[g] = 0;
    if :: chained[g] -> hn = gnxt[g] :: else -> hn = NONE fi;
    chained[g] = 0;
    if
    :: hn != NONE -> reach(9); ggrant[hn] = CHAINED   /* pass to the next group */
    :: else -> assert(!grel); grel = 1                /* release to the global server */
    fi;
    hn = NONE
}

/* Client c's request reaches its local server g (hier_request). */
inline local_take(g, c)
{
    creq[c] = 0;
    ncreq[g]--;
#ifdef BUG_LOCAL_GRANT_EARLY
    if
    :: !lheld[g] ->
#else
    if
    :: !lheld[g] && have[g] ->
#endif
        if :: lrun[g] < BOUND -> lrun[g]++ :: else fi;
        lheld[g] = 1;
        cgrant[c] = GRANTED
    :: else ->
        if :: have[g] -> reach(1) :: else fi;
        cnxt[c] = NONE;                    /* lk_append */
        if
        :: ltail[g] != NONE -> cnxt[ltail[g]] = c
        :: else -> lhead[g] = c
        fi;
        ltail[g] = c;
        if :: !have[g] && !asked[g] -> ask(g) :: else fi
    fi
}

/* Group g's release word (check_release, on_release, hier_released). */
inline local_released(g)
{
    lrel[g] = 0;
    lheld[g] = 0;
    if
#ifdef BUG_NO_BOUND
    :: lhead[g] != NONE ->
#else
    :: lhead[g] != NONE && !(lrun[g] >= BOUND && OTHERS_WAIT(g)) ->
        if :: lrun[g] >= BOUND -> reach(4) :: else fi;
#endif
        reach(2);
        local_grant_next(g)
    :: else ->
        hand_back(g);
        if
        :: lhead[g] != NONE ->
            reach(3);
#ifndef BUG_NO_REREQUEST
            ask(g)
#endif
        :: else
        fi
    fi
}

/* Group g's waiter record answered (hier_poll). */
inline local_granted(g)
{
    asked[g] = 0;
    have[g] = 1;
    lrun[g] = 0;
    chained[g] = (ggrant[g] == CHAINED);
    assert(lhead[g] != NONE);              /* the asker is still there */
    local_grant_next(g)
}

/* --- the global server --- */

inline global_grant_next()
{
    hn = ghead;
#ifdef CHAIN
    if :: gnxt[hn] != NONE -> hv = CHAINED :: else -> hv = GRANTED fi;
    ghead = NONE;
    gtail = NONE;
#else
    ghead = gnxt[hn];
    if :: ghead == NONE -> gtail = NONE :: else fi;
    hv = GRANTED;
#endif
    gheld = 1;
    ggrant[hn] = hv;
    hn = NONE;
    hv = 0
}

inline global_released()
{
    grel = 0;
    gheld = 0;
    if
    :: ghead != NONE -> reach(6); global_grant_next()
    :: else
    fi
}

inline global_take(g)
{
    greq[g] = 0;
    ngreq--;
    if :: grel -> reach(7); global_released() :: else fi;
    if
    :: !gheld -> gheld = 1; ggrant[g] = GRANTED
    :: else ->
        reach(5);
        gnxt[g] = NONE;
        if
        :: gtail != NONE -> gnxt[gtail] = g
        :: else -> ghead = g
        fi;
        gtail = g
    fi
}

/* --- the processes --- */

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
        atomic {                           /* lk_post */
            cgrant[c] = WAITING;
            creq[c] = 1;
            ncreq[GROUP(c)]++;
            ph[c] = 1;
            check()
        };
        atomic {                           /* lk_wait, then chain_rest */
            cgrant[c] != WAITING ->
            if
            :: cgrant[c] == CHAINED -> rest[c] = cnxt[c]
            :: else
            fi;
            ph[c] = 2;
            check()
        };
        atomic {                           /* the critical section */
            assert(holder == NONE && have[GROUP(c)]);
            holder = c
        };
        atomic {                           /* unlock */
            assert(holder == c);
            holder = NONE;
            if
            :: rest[c] != NONE ->          /* chain_pass */
                reach(8);
                hn = rest[c];
                rest[c] = NONE;
                cgrant[hn] = CHAINED;
                hn = NONE
            :: else ->                     /* lk_release_home */
                assert(!lrel[GROUP(c)]);
                lrel[GROUP(c)] = 1
            fi;
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
/* For liveness the servers must be fair, as the code's scan is: each takes
 * the next thing to do in turn from where it stopped (a local server: its
 * clients' request words, the group's release word, the group's grant
 * word; the global server: the local servers' request words, its release
 * word), one per step.  (A server that picked any ready one could ignore
 * one forever: weak fairness is per process.) */
#define LREADY(g, p) ((p < CPG && creq[g * CPG + p]) || (p == CPG && lrel[g]) || \
                      (p == CPG + 1 && asked[g] && !queued[g] && ggrant[g] != WAITING))
proctype Local(byte g)
{
    byte p, c;
end_idle:
    do
    :: atomic {
           ncreq[g] > 0 || lrel[g] || (asked[g] && !queued[g] && ggrant[g] != WAITING) ->
           do
           :: LREADY(g, p) -> break
           :: else -> p = (p + 1) % (CPG + 2)
           od;
           if
           :: p < CPG -> c = g * CPG + p; local_take(g, c); c = 0
           :: p == CPG -> local_released(g)
           :: else -> local_granted(g)
           fi;
           p = (p + 1) % (CPG + 2);
           check()
       }
    od
}

#define GREADY(p) ((p < NG && greq[p]) || (p == NG && grel))
proctype Global()
{
    byte p;
end_idle:
    do
    :: atomic {
           grel || ngreq > 0 ->
           do
           :: GREADY(p) -> break
           :: else -> p = (p + 1) % (NG + 1)
           od;
           if
           :: p < NG -> global_take(p)
           :: else -> global_released()
           fi;
           p = (p + 1) % (NG + 1);
           check()
       }
    od
}
#else
/* For safety the servers take whatever is ready in any order: every order
 * of the code's scan is among them. */
#define LTAKE(k) :: creq[g * CPG + k] -> c = g * CPG + k; local_take(g, c); c = 0
proctype Local(byte g)
{
    byte c;
end_idle:
    do
    :: atomic {
           if
           :: lrel[g] -> local_released(g)
           :: asked[g] && !queued[g] && ggrant[g] != WAITING -> local_granted(g)
           LTAKE(0)
#if CPG > 1
           LTAKE(1)
#endif
#if CPG > 2
           LTAKE(2)
#endif
           fi;
           check()
       }
    od
}

#define GTAKE(k) :: greq[k] -> global_take(k)
proctype Global()
{
end_idle:
    do
    :: atomic {
           if
           :: grel -> global_released()
           GTAKE(0)
           GTAKE(1)
#if NG > 2
           GTAKE(2)
#endif
#if NG > 3
           GTAKE(3)
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
        :: i < NC ->
            cnxt[i] = NONE;
            rest[i] = NONE;
            if :: i < NG -> lhead[i] = NONE; ltail[i] = NONE; gnxt[i] = NONE :: else fi;
            i++
        :: else -> break
        od;
        i = 0;
        run Global();
        do
        :: i < NG -> run Local(i); i++
        :: else -> break
        od;
        i = 0;
        do
        :: i < NC -> run Client(i); i++
        :: else -> break
        od;
        i = 0
    };
#if !defined(LIVE)
    _nr_pr == NG + 2;                      /* every client has finished */
    !gheld;                                /* and the lock went back */
    d_step {
        assert(holder == NONE && ghead == NONE && !grel);
        do
        :: i < NG ->
            assert(!have[i] && !asked[i] && !lheld[i] && !lrel[i] && lhead[i] == NONE && !greq[i]);
            i++
        :: else -> break
        od;
        i = 0
    }
#endif
}

#ifdef LIVE
#define GOT(c) [] (ph[c] == 1 -> <> (holder == c))
#if NC == 2
ltl live { GOT(0) && GOT(1) }
#elif NC == 3
ltl live { GOT(0) && GOT(1) && GOT(2) }
#elif NC == 4
ltl live { GOT(0) && GOT(1) && GOT(2) && GOT(3) }
#elif NC == 5
ltl live { GOT(0) && GOT(1) && GOT(2) && GOT(3) && GOT(4) }
#else
ltl live { GOT(0) && GOT(1) && GOT(2) && GOT(3) && GOT(4) && GOT(5) }
#endif
#endif
