/* chain.pml - the lock-server protocol of the `server` kind with chaining
 * (`server,chain`; -DBASIC: plain `server`), src/server/basic.c and
 * chain.c, for spin.
 *
 * Processes: NC clients and the lock's home server, for one lock.  The
 * transport is the code's:
 *   request  the client stores WAITING into its grant word and bumps the
 *            request word of its mailbox (req[c]: a request the home has
 *            not consumed); the home consumes it (its `seen`);
 *   grant    the home stores GRANTED, or CHAINED when the grant hands out
 *            a waiting list, into the client's grant word;
 *   release  the holder bumps the lock's release word (relw: a release the
 *            home has not seen; one at most is outstanding), which the home
 *            polls while the lock is granted;
 *   pass     a holder stores CHAINED into the next waiter's grant word.
 * The home's state is its own: held, and the waiting list head/tail, linked
 * through the waiters' links nxt[] (the mailboxes' srt_link_t), which only
 * the home writes, in lk_append().
 *
 *   home, request   (on_acquire) first handle a release already made
 *                   (check_release: the requester's own may be it); then
 *                   grant GRANTED if the lock is not held, else append;
 *   home, release   (on_release) held = 0; grant the first waiter, or leave
 *                   the lock free.  Chaining (chain_hand_out): the grant
 *                   hands the whole list out (CHAINED if anyone follows the
 *                   first, GRANTED if not) and the home forgets it (head =
 *                   tail = none) but the lock stays held; BASIC: the first
 *                   waiter is unlinked and granted GRANTED;
 *   client          post, wait for the grant word; a CHAINED grant: read the
 *                   successor from its own link (rest); critical section;
 *                   unlock: rest? pass CHAINED to it : bump the release word.
 * So requests that reach the home while a chain is out queue there and are
 * granted after the chain's last release.
 *
 * Abstractions: one lock (the home keeps this state per lock; nested locks
 * on one server, whose requests would reuse the client's link, are not
 * modelled, nor trylock, freeing, fork, or the message counters); the
 * server runtime's scan and sleep/wake (rcl.pml checks those) are not
 * modelled: the home acts on a posted request or an outstanding release,
 * in any order for the safety checks, in turn for `live` (a fair scan).
 * Each home action is one step (it touches its own state plus one store or
 * consumption that others see); the client's look at its grant word and
 * the read of its link are one step (nobody but the home writes the link,
 * and a step of the home in between is the same as one before).  Every
 * step is sequentially consistent.
 *
 * What is checked, after every step that changes the protocol's state:
 *   - exactly one token: the lock not held at the home, or a release
 *     outstanding, or a grant word set that its client has not yet seen,
 *     or a client holding it (so never two holders, and no grant lost);
 *   - the waiting lists: every client that waits (posted, request consumed,
 *     no grant yet) is on exactly one list - the home's (from head), or a
 *     chain (from a holder's rest, or from the link of a client whose
 *     CHAINED grant it has not yet seen) - and no other client is on any;
 *     the home's list ends at tail; no list is longer than NC;
 *   - entering the critical section: nobody else is in it;
 *   - no invalid end state (a client waiting forever), and at the end the
 *     lock is free at the home with nothing queued.
 * With -DLIVE the clients loop forever and the LTL property `live` says
 * every request is eventually granted (weak fairness).
 *
 * Deliberately broken variants, each of which spin must catch:
 *   BUG_DOUBLE_GRANT  a grant that hands out a list marks the lock not held
 *                     (as if the chain looked after itself): a request that
 *                     arrives while the chain is out is granted at once;
 *   BUG_LOSE_TAIL     a client that got the lock by a pass takes it as a
 *                     plain grant (does not read its link): the rest of the
 *                     list is lost (needs NC >= 4);
 *   BUG_KEEP_LIST     the home hands the list out but keeps it, unlinking
 *                     only the first waiter;
 *   BUG_STALE_LINK    a client reads its link after any grant, not only a
 *                     CHAINED one: a GRANTED grant leaves a stale link.
 *
 * Reachability markers (see qd.pml): 1 a request finds the requester's
 * release not yet handled; 2 the home queues a request; 3 the home hands
 * out a list (CHAINED); 4 a client passes the lock; 5 a pass reaches a
 * client with a successor of its own (a chain of three); 6 a request
 * queues at the home while a chain is out; 7 a chain's last release finds
 * requests queued meanwhile and the home grants them; 8 the lock becomes
 * free on a release; 9 a request finds the lock free.
 */

#ifndef NC
#define NC 3            /* clients */
#endif
#ifndef ROUNDS
#define ROUNDS 2        /* critical sections per client (not with LIVE) */
#endif

#define NONE 255
#define WAITING 0
#define GRANTED 1
#define CHAINED 3

hidden byte cov;
#define reach(n) cov = n

/* --- the protocol's shared state --- */
bit req[NC];            /* client c's request word: posted, not consumed */
byte nreq;              /* requests not consumed (a function of req[]) */
byte grant[NC];         /* client c's grant word */
byte nxt[NC];           /* client c's link */
bit relw;               /* the lock's release word: a release not yet seen */

/* --- the home's own state --- */
bit held;
byte head = NONE, tail = NONE;

/* --- the clients' own state --- */
byte ph[NC];            /* 0 idle, 1 asked (no grant seen yet), 2 holds */
byte rest[NC];          /* the successor a CHAINED grant handed it */
#ifdef BUG_LOSE_TAIL
bit bypass[NC];         /* the grant came from a pass */
#endif

/* --- bookkeeping for the checks --- */
byte holder = NONE;     /* the client in its critical section */
bit chainout;           /* the home handed a list out; not back yet */
bit late;               /* 6 happened since */
hidden byte hn, hv;     /* scratch of the home and the clients */
/* check()'s own scratch: a d_step is undone by restoring the state vector,
 * which holds no hidden variable, so check() writes none that the undo of
 * another statement reads. */
hidden byte ci, cj, ck, cn;
hidden byte onl[NC];

/* Count the clients on the list that starts at x. */
inline walk(x)
{
    cj = x;
    ck = 0;
    do
    :: cj != NONE ->
        assert(ck < NC);                   /* no cycle */
        onl[cj]++;
        ck++;
        cj = nxt[cj]
    :: else -> break
    od
}

inline check()
{
    d_step {
        cn = 0;                            /* the token */
        if :: !held -> cn++ :: else fi;
        if :: relw -> cn++ :: else fi;
        ci = 0;
        do
        :: ci < NC ->
            if
            :: ph[ci] == 2 -> cn++
            :: ph[ci] == 1 && grant[ci] != WAITING -> cn++
            :: else
            fi;
            onl[ci] = 0;
            ci++
        :: else -> break
        od;
        assert(cn == 1);
        assert((head == NONE) == (tail == NONE));
        assert(tail == NONE || nxt[tail] == NONE);
        walk(head);                        /* the lists */
        ci = 0;
        do
        :: ci < NC ->
            if
            :: ph[ci] == 2 -> walk(rest[ci])
            :: ph[ci] == 1 && grant[ci] == CHAINED -> walk(nxt[ci])
            :: else
            fi;
            ci++
        :: else -> break
        od;
        ci = 0;
        do
        :: ci < NC ->
            assert(onl[ci] == (ph[ci] == 1 && !req[ci] && grant[ci] == WAITING));
            onl[ci] = 0;
            ci++
        :: else -> break
        od;
        ci = 0; cj = 0; ck = 0; cn = 0
    }
}

/* The home grants the first waiter (lk_grant_next). */
inline grant_next()
{
    hn = head;
#ifdef BASIC
    head = nxt[hn];
    if :: head == NONE -> tail = NONE :: else fi;
    hv = GRANTED;
#else
    if
    :: nxt[hn] != NONE -> reach(3); hv = CHAINED; chainout = 1
    :: else -> hv = GRANTED
    fi;
#ifdef BUG_KEEP_LIST
    head = nxt[hn];
    if :: head == NONE -> tail = NONE :: else fi;
#else
    head = NONE;                           /* the home forgets the list */
    tail = NONE;
#endif
#endif
    held = 1;
#ifdef BUG_DOUBLE_GRANT
    if :: hv == CHAINED -> held = 0 :: else fi;
#endif
    grant[hn] = hv;
    hn = NONE;
    hv = 0
}

/* The home sees a release (check_release, on_release). */
inline on_release()
{
    relw = 0;
    held = 0;
    if :: head != NONE && late -> reach(7) :: else fi;
    chainout = 0;
    late = 0;
    if
    :: head != NONE -> grant_next()
    :: else -> reach(8)
    fi
}

/* The home consumes client c's request (eng_request, on_acquire). */
inline take(c)
{
    req[c] = 0;
    nreq--;
    if :: relw -> reach(1); on_release() :: else fi;
    if
    :: !held ->
        reach(9);
        held = 1;
        grant[c] = GRANTED
    :: else ->
        reach(2);
        if :: chainout -> reach(6); late = 1 :: else fi;
        nxt[c] = NONE;                     /* lk_append */
        if
        :: tail != NONE -> nxt[tail] = c
        :: else -> head = c
        fi;
        tail = c
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
        atomic {                           /* lk_post */
            grant[c] = WAITING;
#ifdef BUG_LOSE_TAIL
            bypass[c] = 0;
#endif
            req[c] = 1;
            nreq++;
            ph[c] = 1;
            check()
        };
        atomic {                           /* lk_wait, then chain_rest */
            grant[c] != WAITING ->
#if defined(BUG_STALE_LINK)
            rest[c] = nxt[c];
#elif defined(BUG_LOSE_TAIL)
            if
            :: grant[c] == CHAINED && !bypass[c] -> rest[c] = nxt[c]
            :: else
            fi;
#else
            if
            :: grant[c] == CHAINED -> rest[c] = nxt[c]
            :: else
            fi;
#endif
            ph[c] = 2;
            check()
        };
        atomic {                           /* the critical section */
            assert(holder == NONE);
            holder = c
        };
        atomic {                           /* unlock */
            assert(holder == c);
            holder = NONE;
            if
            :: rest[c] != NONE ->          /* chain_pass */
                reach(4);
                hn = rest[c];
                if :: nxt[hn] != NONE -> reach(5) :: else fi;
                rest[c] = NONE;
#ifdef BUG_LOSE_TAIL
                bypass[hn] = 1;
#endif
                grant[hn] = CHAINED;
                hn = NONE
            :: else ->                     /* lk_release_home */
                assert(!relw);
                relw = 1
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
/* For liveness the home must be fair, as the code's scan is: it takes the
 * next thing to do in turn from where it stopped (the clients' request
 * words, then the release word), one per step.  (A home that picked any
 * ready one could ignore one forever: weak fairness is per process.) */
#define READY(p) ((p < NC && req[p]) || (p == NC && relw))
proctype Home()
{
    byte p;
end_idle:
    do
    :: atomic {
           nreq > 0 || relw ->
           do
           :: READY(p) -> break
           :: else -> p = (p + 1) % (NC + 1)
           od;
           if
           :: p < NC -> take(p)
           :: else -> on_release()
           fi;
           p = (p + 1) % (NC + 1);
           check()
       }
    od
}
#else
/* For safety the home takes whatever is ready in any order: every order of
 * the code's scan is among them. */
#define TAKE(k) :: req[k] -> take(k)
proctype Home()
{
end_idle:
    do
    :: atomic {
           if
           :: relw -> on_release()
           TAKE(0)
           TAKE(1)
#if NC > 2
           TAKE(2)
#endif
#if NC > 3
           TAKE(3)
#endif
#if NC > 4
           TAKE(4)
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
        :: i < NC -> nxt[i] = NONE; rest[i] = NONE; i++
        :: else -> break
        od;
        i = 0;
        run Home();
        do
        :: i < NC -> run Client(i); i++
        :: else -> break
        od;
        i = 0
    };
#if !defined(LIVE)
    _nr_pr == 2;                           /* every client has finished */
    !relw;                                 /* and the home saw the last release */
    d_step {
        assert(!held && head == NONE && tail == NONE && nreq == 0 && holder == NONE);
        do
        :: i < NC -> assert(ph[i] == 0 && rest[i] == NONE); i++
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
#else
ltl live { GOT(0) && GOT(1) && GOT(2) && GOT(3) && GOT(4) }
#endif
#endif
