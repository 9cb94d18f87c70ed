/* ccsynch.pml - CC-Synch as src/delegate/ccsynch.c runs it, with its park
 * protocol, for spin.
 *
 * Processes: NT threads, each submitting K operations in turn, and the init
 * process, which plays the destroyer: once every operation has been linked
 * into the queue (accepted), it waits on the tail as cc_destroy() does, and
 * then "frees" the lock.
 *
 * An operation: take the spare node, reset it (next = NONE, wait = 1,
 * completed = 0), swap it into the tail (exchange), write the request into
 * the node got back (`cur`), link cur->next, keep cur as the next spare, and
 * wait on cur->wait.  The wait either sees the word change, or parks:
 * count itself in `sleepers`, set cur's parked flag, CAS the word from 1 to
 * 1|P, futex-wait on 1|P while the word is 1|P, then clear the flag and the
 * count.  When the wait ends: if completed, done; else combine: run the
 * requests from cur along next (at most LIMIT), completing every node but
 * our own with a plain store of wait = 0 (which overwrites a parked bit)
 * and remembering it; every BATCH completions, and before the hand-over,
 * flush: if sleepers != 0, futex-wake every remembered node whose parked
 * flag is set.  Then hand over: exchange the stop node's wait with 0 and
 * futex-wake if the old value had the parked bit.
 *
 * Abstractions.  Every step is sequentially consistent: the code's seq_cst
 * count, flag and CAS (sleeper) and its release store, seq_cst fence and
 * loads (combiner) give the flush's Dekker pattern; the release/acquire
 * pairs that carry the requests are not modelled further.  The futex is
 * modelled exactly, since lost wake-ups are what this model is for:
 * futex_wait(w, v) atomically checks the word and, if it is v, sleeps until
 * a futex_wake on w (or a spurious wake-up, at most SPURIOUS in all), even
 * if the word changes meanwhile; futex_wake(w) wakes every sleeper on w.
 * The spin/yield phase before parking is a nondeterministic choice between
 * waiting for the word and parking.
 *
 * What is checked:
 *   - every operation runs exactly once, by a combiner, one at a time;
 *   - operations run in the order their threads swapped the tail (FIFO);
 *   - a thread returns only after its operation ran;
 *   - no lost wake-up and no deadlock: every end state is valid;
 *   - the destroyer's wait ends only when no thread will touch the lock or
 *     a node again (every access after the "free" fails an assertion).
 *
 * Deliberately broken variants, each of which spin must catch:
 *   BUG_NO_FLUSH        completions never wake anyone (a plain store of 0
 *                       overwrites the parked bit, nobody looks at sleepers);
 *   BUG_NO_COUNT        a sleeper does not count itself: the flush skips;
 *   BUG_PLAIN_HANDOVER  the hand-over is a plain store too, without a look;
 *   BUG_FLUSH_LATE      the last flush comes after the hand-over, when the
 *                       destroyer may have freed the nodes.
 *
 * Reachability markers: 1 a sleeper is woken by a flush inside a session
 * (BATCH reached), 8 by the session's last flush (BATCH > 1); 2 by a
 * hand-over; 3 a spurious wake-up; 4 a combiner completes another thread's
 * request; 5 a sleeper's CAS finds the word changed and it does not sleep;
 * 6 a flush inside a session; 7 the destroyer slept on the tail.
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
#ifndef BATCH
#define BATCH 1         /* CC_WAKE_BATCH */
#endif
#ifndef SPURIOUS
#define SPURIOUS 1
#endif

#define NN (NT + 1)     /* nodes: one spare per thread and the initial dummy */
#define NONE 255
#define P 2             /* the parked bit: a word is 0, 1 or 1|P = 3 */
#define NOPS (NT * K)   /* thread t's operation k has id 1 + K*t + k */
#define DESTROYER NT    /* the init process's index in asleep[] */

hidden byte cov;
#define reach(n) cov = n

/* --- the protocol's shared state --- */
byte wait[NN];
bit completed[NN];
byte next[NN];
byte op[NN];            /* the request: operation id */
bit parked[NN];
byte tail;
byte spare[NT];
byte sleepers;

/* --- the futex --- */
byte asleep[NT + 1];    /* 1 + the node a thread sleeps on, 0 awake */
byte spurious;

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
        :: wait[n] == (v) -> asleep[me] = n + 1
        :: else
        fi
    };
    if
    :: asleep[me] == 0
    :: atomic { spurious < SPURIOUS && asleep[me] != 0 -> spurious++; asleep[me] = 0; reach(3) }
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

/* cc_wait(): wait until wait[n] is 0. */
inline cc_wait(me, n)
{
    if
    :: (wait[n] & 1) == 0                    /* the spin/yield phase saw it */
    :: else ->                               /* park */
#ifndef BUG_NO_COUNT
        sleepers++;
#endif
        parked[n] = 1;
        atomic {
            if
            :: wait[n] == 1 -> wait[n] = 1 | P; ok = 1
            :: wait[n] == (1 | P) -> ok = 1
            :: else -> ok = 0; reach(5)
            fi
        };
        if
        :: ok ->
            do
            :: wait[n] == (1 | P) ->
                futex_wait(me, n, 1 | P);
                slept = 1
            :: else -> break
            od
        :: else
        fi;
        ok = 0;
        parked[n] = 0;
#ifndef BUG_NO_COUNT
        sleepers--
#endif
    fi
}

/* The flush: wake the remembered nodes whose sleepers flagged them; mk is
 * the marker of this call site (1 inside a session, 8 the last flush). */
inline cc_flush(mk)
{
    touch;
    if
    :: sleepers != 0 ->
        j = 0;
        do
        :: j < nrem ->
            if
            :: parked[rem[j]] -> futex_wake(rem[j]); reach(mk)
            :: else
            fi;
            j++
        :: else -> break
        od;
        j = 0
    :: else
    fi;
    d_step {
        j = 0;
        do
        :: j < BATCH -> rem[j] = 0; j++
        :: else -> break
        od;
        j = 0;
        nrem = 0
    }
}

proctype Thread(byte t)
{
    byte k, id, nx, cur, tmp, nxt, n, i, j, old, nrem;
    byte rem[BATCH];
    bit ok, slept;

    do
    :: k < K ->
        id = 1 + K * t + k;
        nx = spare[t];
        d_step { touch; next[nx] = NONE; wait[nx] = 1; completed[nx] = 0 };
        atomic { touch; cur = tail; tail = nx; ticket++; tk[id] = ticket };
        op[cur] = id;
        d_step { next[cur] = nx; linked++ };  /* release: the request is visible */
        spare[t] = cur;
        cc_wait(t, cur);
        if
        :: completed[cur] -> assert(runs[id] == 1)
        :: else ->
            /* combine */
            d_step { touch; combining++; assert(combining == 1) };
            tmp = cur;
            n = 0;
            do
            :: n < LIMIT && next[tmp] != NONE ->
                touch;
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
                    d_step { completed[tmp] = 1; wait[tmp] = 0 };   /* plain store */
#ifdef BUG_NO_FLUSH
                    skip
#else
                    rem[nrem] = tmp;
                    nrem++;
                    if
                    :: nrem == BATCH -> cc_flush(1); reach(6)
                    :: else
                    fi
#endif
                :: else
                fi;
                tmp = nxt
            :: else -> break
            od;
#if !defined(BUG_NO_FLUSH) && !defined(BUG_FLUSH_LATE)
            cc_flush(8);
#endif
            combining--;
            /* hand over */
#ifdef BUG_PLAIN_HANDOVER
            d_step { touch; wait[tmp] = 0 };
#else
            atomic { touch; old = wait[tmp]; wait[tmp] = 0 };
            if
            :: old & P -> futex_wake(tmp); reach(2)
            :: else
            fi;
#endif
#if !defined(BUG_NO_FLUSH) && defined(BUG_FLUSH_LATE)
            cc_flush(8);
#endif
            d_step { tmp = 0; nxt = 0; n = 0; old = 0 }
        fi;
        assert(runs[id] == 1);
        d_step { k++; id = 0; nx = 0; cur = 0 }
    :: else -> break
    od
}

init {
    byte i, j, t, me;
    bit ok, slept;
    atomic {
        /* node NT is the dummy tail (wait = 0); node t is thread t's spare */
        do
        :: i < NN -> wait[i] = 1; next[i] = NONE; i++
        :: else -> break
        od;
        wait[NT] = 0;
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
    /* cc_destroy(): every operation accepted; wait until the tail's wait
     * is clear and the tail did not move. */
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
