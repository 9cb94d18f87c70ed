/* ccsynch.pml - CC-Synch as src/delegate/ccsynch.c runs it, with its park
 * protocol, for spin.
 *
 * Processes: NT threads, each submitting K operations in turn, and the init
 * process, which plays the destroyer: once every operation has been linked
 * into the queue (accepted), it waits on the tail as cc_destroy() does, and
 * then "frees" the lock.
 *
 * An operation: take the spare node, reset it (next = NONE, word = WAIT),
 * swap it into the tail (exchange), write the request into the node got
 * back (`cur`), link cur->next, keep cur as the next spare, and wait on
 * cur's word until it leaves WAIT: either the thread sees it change while
 * it looks (the yield phase, a nondeterministic choice), or it parks:
 * count itself in `sleepers`, CAS the word from WAIT to WAIT|P, futex-wait
 * (with a timeout) while the word stays WAIT|P, then uncount.  DONE: its
 * request ran.  GO: it combines: runs the requests from cur along next (at
 * most LIMIT, or up to twice that while the next node's owner is parked:
 * the role goes to a running thread), publishing DONE into every node but
 * its own, then publishes GO into the node it stopped at (the hand-over).
 * To publish: look at `sleepers`; if zero, a plain store; else an exchange,
 * and a futex wake if the old value had the parked bit: at once for the
 * hand-over, owed until after it for a completion (the combiner pays no
 * system call inside its session; the owed wakes go by address and touch
 * nothing of the lock).
 *
 * Abstractions.  Every step is sequentially consistent; the release/acquire
 * pairs that carry the requests are not modelled.  The futex is modelled
 * exactly, since lost wake-ups are what this model is for: futex_wait(w, v)
 * atomically checks the word and, if it is v, sleeps until a futex_wake on
 * w, even if the word changes meanwhile; unless NO_TIMEOUT, a sleeper may
 * also wake at any time (its timeout), which also stands for spurious
 * wake-ups.
 *
 * The publish's look comes before its store, and the code lets one
 * interleaving through (a sleeper that counts itself after the look and
 * parks before the store lands): its timeout bounds the stall.  -DNO_WINDOW
 * makes the look and the store one step; with -DNO_TIMEOUT as well, every
 * end state must still be valid: outside that window the wake-ups are
 * exact.  Without NO_WINDOW, NO_TIMEOUT must fail (BUG_NO_TIMEOUT below):
 * the window is real and the timeout is what covers it.
 *
 * What is checked:
 *   - every operation runs exactly once, by a combiner, one at a time;
 *   - operations run in the order their threads swapped the tail (FIFO);
 *   - a thread returns only after its operation ran;
 *   - no lost wake-up and no deadlock: every end state is valid;
 *   - once the destroyer's wait has ended, no thread touches the lock or a
 *     node again (every access after the "free" fails an assertion).
 *
 * Deliberately broken variants, each of which spin must catch:
 *   BUG_NO_TIMEOUT   parks without a timeout (window open): a lost wake-up;
 *   BUG_NO_COUNT     a sleeper does not count itself (exact configuration):
 *                    the publish stores without waking it;
 *   BUG_NO_LOOK      every publish is a plain store (exact configuration);
 *   BUG_DONE_FLAG    the original algorithm's separate `completed` flag,
 *                    which the owner reads after its wait: the destroyer
 *                    may have freed the node by then;
 *   BUG_OWED_UNPAID  the owed wakes are never paid (exact configuration):
 *                    a sleeper whose request ran sleeps on.
 *
 * Reachability markers: 1 a completion's exchange finds a sleeper (its
 * wake owed); 2 a sleeper is woken by a hand-over's exchange; 3 a timeout (or spurious) wake-up; 4 a
 * combiner completes another thread's request; 5 a sleeper's CAS finds the
 * word changed and it does not sleep; 6 a publish finds sleepers and
 * exchanges; 7 the destroyer slept on the tail; 8 a combiner runs past
 * LIMIT a request whose owner is parked; 9 an owed wake is paid.
 */

#ifndef NT
#define NT 2            /* threads */
#endif
#ifndef K
#define K 2             /* operations per thread */
#endif
#ifndef LIMIT
#define LIMIT 8         /* help_limit */
#endif
#if defined(BUG_NO_COUNT) || defined(BUG_NO_LOOK) || defined(BUG_OWED_UNPAID)
#define NO_WINDOW
#define NO_TIMEOUT
#endif
#ifdef BUG_NO_TIMEOUT
#define NO_TIMEOUT
#endif

#define NN (NT + 1)     /* nodes: one spare per thread and the initial dummy */
#define NONE 255
#define GO 0
#define WAIT 1
#define DONE 2
#define P 4             /* the parked bit */
#define NOPS (NT * K)   /* thread t's operation k has id 1 + K*t + k */
#define DESTROYER NT    /* the init process's index in asleep[] */

hidden byte cov;
#define reach(n) cov = n

/* --- the protocol's shared state --- */
byte word[NN];
byte next[NN];
byte op[NN];            /* the request: operation id */
bit completed[NN];      /* BUG_DONE_FLAG only */
byte tail;
byte spare[NT];
byte sleepers;

/* --- the futex --- */
byte asleep[NT + 1];    /* 1 + the node a thread sleeps on, 0 awake */

/* --- bookkeeping for the checks --- */
byte runs[NOPS + 1];
byte ticket;            /* tail swaps so far */
byte tk[NOPS + 1];      /* the operation's place in the swap order */
byte nrun;              /* operations run */
byte combining;         /* combiners inside a session */
byte linked;            /* operations linked into the queue */
bit freed;              /* the destroyer has freed the lock */

#define touch assert(!freed)

inline futex_wait(me, n, v)
{
    atomic {
        if
        :: word[n] == (v) -> asleep[me] = n + 1
        :: else
        fi
    };
    if
    :: asleep[me] == 0
#ifndef NO_TIMEOUT
    :: atomic { asleep[me] != 0 -> asleep[me] = 0; reach(3) }
#endif
    fi
}

inline futex_wake(n)
{
    d_step {
        i = 0;
        do
        :: i <= NT -> if :: asleep[i] == n + 1 -> asleep[i] = 0 :: else fi; i++
        :: else -> break
        od;
        i = 0
    }
}

/* cc_wait(): until word[n] leaves WAIT; its value (GO or DONE) in v. */
inline cc_wait(me, n)
{
    if
    :: (word[n] & ~P) != WAIT                /* the yield phase saw it */
    :: else ->                               /* cc_park() */
#ifndef BUG_NO_COUNT
        sleepers++;
#endif
        do
        :: atomic {                          /* CAS WAIT -> WAIT|P */
               if
               :: word[n] == WAIT -> word[n] = WAIT | P; ok = 1
               :: word[n] == (WAIT | P) -> ok = 1
               :: else -> ok = 0
               fi
           };
           if
           :: ok -> futex_wait(me, n, WAIT | P); slept = 1
           :: else -> reach(5); break
           fi;
           if
           :: (word[n] & ~P) != WAIT -> break
           :: else
           fi
        od;
        ok = 0;
#ifndef BUG_NO_COUNT
        sleepers--
#endif
    fi;
    v = word[n] & ~P
}

/* cc_publish(): store val into word[n], the old value in `old`; the last
 * touch of n.  The caller then owes the wake (owe_wake) or pays it at once
 * (wake_now). */
inline cc_publish(n, val)
{
#ifdef NO_WINDOW
    atomic {
        touch;
#ifdef BUG_NO_LOOK
        if :: true -> word[n] = val; old = 0 fi
#else
        if
        :: sleepers == 0 -> word[n] = val; old = 0
        :: else -> old = word[n]; word[n] = val; reach(6)
        fi
#endif
    };
#else
    touch;
    if                                       /* the look */
    :: sleepers == 0 -> look = 0
    :: else -> look = 1
    fi;
    if
    :: look == 0 -> d_step { touch; word[n] = val; old = 0 }     /* plain store */
    :: else -> atomic { touch; old = word[n]; word[n] = val; reach(6) }
    fi;
    look = 0;
#endif
}

/* A completion's wake, owed until after the hand-over (marker 1). */
inline owe_wake(n)
{
    if
    :: old & P -> owed = owed | (1 << n); reach(1)
    :: else
    fi;
    old = 0
}

/* The hand-over's wake, at once (marker 2). */
inline wake_now(n)
{
    if
    :: old & P -> futex_wake(n); reach(2)
    :: else
    fi;
    old = 0
}

proctype Thread(byte t)
{
    byte k, id, nx, cur, tmp, nxt, n, i, old, v, owed, w;
    bit ok, slept, look;

    do
    :: k < K ->
        id = 1 + K * t + k;
        nx = spare[t];
        d_step { touch; next[nx] = NONE; word[nx] = WAIT; completed[nx] = 0 };
        atomic { touch; cur = tail; tail = nx; ticket++; tk[id] = ticket };
        op[cur] = id;
        d_step { next[cur] = nx; linked++ };  /* release: the request is visible */
        spare[t] = cur;
        cc_wait(t, cur);
#ifdef BUG_DONE_FLAG
        touch;
        if
        :: completed[cur] -> v = DONE
        :: else -> v = GO
        fi;
#endif
        if
        :: v == DONE -> assert(runs[id] == 1)
        :: else ->
            /* combine */
            d_step { touch; combining++; assert(combining == 1) };
            tmp = cur;
            n = 0;
            do
            :: next[tmp] != NONE &&
               (n < LIMIT || (n < 2 * LIMIT && sleepers != 0 && (word[tmp] & P))) ->
                touch;
                if
                :: n >= LIMIT -> reach(8)
                :: else
                fi;
                nxt = next[tmp];
                n++;
                d_step {                     /* run the request */
                    assert(runs[op[tmp]] == 0);
                    runs[op[tmp]]++;
                    nrun++;
                    assert(tk[op[tmp]] == nrun)   /* FIFO */
                };
                if
                :: tmp != cur ->
                    reach(4);
#ifdef BUG_DONE_FLAG
                    completed[tmp] = 1;
                    cc_publish(tmp, GO);     /* the original clears wait */
#else
                    cc_publish(tmp, DONE);
#endif
                    owe_wake(tmp)
                :: else
                fi;
                tmp = nxt
            :: else -> break
            od;
            combining--;
            cc_publish(tmp, GO);             /* hand over: nothing after it */
            wake_now(tmp);
#ifndef BUG_OWED_UNPAID
            w = 0;                           /* pay the owed wakes, by address */
            do
            :: w < NN ->
                if
                :: owed & (1 << w) -> futex_wake(w); reach(9)
                :: else
                fi;
                w++
            :: else -> break
            od;
            w = 0;                           /* (a plain step: break may not jump into a d_step) */
#endif
            d_step { tmp = 0; nxt = 0; n = 0; owed = 0 }
        fi;
        assert(runs[id] == 1);
        d_step { k++; id = 0; nx = 0; cur = 0; v = 0; slept = 0 }
    :: else -> break
    od
}

init {
    byte i, t, me, v;
    bit ok, slept;
    atomic {
        /* node NT is the dummy tail (GO); node t is thread t's spare */
        do
        :: i < NN -> word[i] = WAIT; next[i] = NONE; i++
        :: else -> break
        od;
        word[NT] = GO;
        tail = NT;
        i = 0;
        do
        :: i < NT -> spare[i] = i; i++
        :: else -> break
        od;
        i = 0;
        do
        :: i < NT -> run Thread(i); i++
        :: else -> break
        od;
        i = 0
    };
    /* cc_destroy(): every operation accepted; wait until the tail's word
     * has left WAIT and the tail did not move. */
    linked == NOPS;
    me = DESTROYER;
    do
    :: t = tail;
       cc_wait(me, t);
       if
       :: tail == t -> break
       :: else
       fi
    od;
    if
    :: slept -> reach(7)
    :: else
    fi;
    freed = 1;
    /* Every thread returns having run everything (the end-state check
     * waits for them: a thread blocked for ever is an invalid end state). */
    _nr_pr == 1;
    d_step {
        i = 1;
        do
        :: i <= NOPS -> assert(runs[i] == 1); i++
        :: else -> break
        od;
        i = 0
    }
}

#ifdef LIVE
ltl live { <> (nrun == NOPS && freed) }
#endif
