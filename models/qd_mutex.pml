/* qd_mutex.pml - the mutex of the QD family (qd_mutex_t, src/delegate/queue.h
 * and qd_mutex_lock_slow() in src/delegate/qd.c), for spin.
 *
 * Processes: NT threads, each taking the mutex K times (critical section,
 * unlock).  A thread first tries the mutex (load, CAS 0 -> 1); when it is
 * held it either tries again (the yield phase, a nondeterministic choice)
 * or parks: counts itself in `sleepers`, then, until it has the mutex: look
 * at the word and CAS it 0 -> 1, else futex-wait (with a timeout) while the
 * word is 1; then uncounts itself.  unlock: look at `sleepers`, store 0,
 * and futex-wake one sleeper if the look found any.
 *
 * Abstractions.  Every step is sequentially consistent (the code's seq_cst
 * count and look against the unlock's look and release store).  The futex
 * is modelled exactly: futex_wait(w, v) atomically checks the word and, if
 * it is v, sleeps until a futex_wake on w picks it (wake-one: one sleeper,
 * chosen nondeterministically), even if the word changes meanwhile; unless
 * NO_TIMEOUT, a sleeper may also wake at any time (its timeout, which also
 * stands for spurious wake-ups).
 *
 * The unlock's look comes before its store, and one interleaving escapes
 * it (a sleeper that counts itself after the look and sleeps before the
 * store lands): the park's timeout bounds that stall.  -DNO_WINDOW makes
 * the look and the store one step; with -DNO_TIMEOUT as well, every end
 * state must still be valid: outside that window the wake-ups are exact.
 * Without NO_WINDOW, NO_TIMEOUT must fail (BUG_NO_TIMEOUT).
 *
 * What is checked: mutual exclusion (one holder at a time), every thread
 * gets the mutex K times and ends (no invalid end state: no lost wake-up,
 * no deadlock).  With -DLIVE the LTL property `live`: eventually every
 * acquisition has happened.
 *
 * Deliberately broken variants, each of which spin must catch:
 *   BUG_NO_TIMEOUT  parks without a timeout (window open): a lost wake-up;
 *   BUG_NO_COUNT    a sleeper does not count itself (exact configuration);
 *   BUG_NO_WAKE     an unlock that finds sleepers does not wake one (exact
 *                   configuration).
 *
 * Reachability markers: 1 a sleeper is woken by an unlock; 2 a timeout (or
 * spurious) wake-up; 3 a parked thread takes the mutex at its look, without
 * sleeping; 4 an unlock finds sleepers.
 */

#ifndef NT
#define NT 3            /* threads (at most 3: futex_wake_one) */
#endif
#ifndef K
#define K 2             /* acquisitions per thread */
#endif
#if defined(BUG_NO_COUNT) || defined(BUG_NO_WAKE)
#define NO_WINDOW
#define NO_TIMEOUT
#endif
#ifdef BUG_NO_TIMEOUT
#define NO_TIMEOUT
#endif

hidden byte cov;
#define reach(n) cov = n

byte word;              /* 0 free, 1 held */
byte sleepers;
bit asleep[NT];         /* on the word's futex */
byte inside;            /* holders: must stay at most 1 */
byte acquired;          /* acquisitions so far */

inline futex_wait(me)
{
    atomic {
        if
        :: word == 1 -> asleep[me] = 1
        :: else
        fi
    };
    if
    :: asleep[me] == 0
#ifndef NO_TIMEOUT
    :: atomic { asleep[me] != 0 -> asleep[me] = 0; reach(2) }
#endif
    fi
}

/* Wake one sleeper, if there is one (nondeterministically which). */
inline futex_wake_one()
{
    atomic {
        if
        :: asleep[0] -> asleep[0] = 0; woke = 1
#if NT > 1
        :: asleep[1] -> asleep[1] = 0; woke = 1
#endif
#if NT > 2
        :: asleep[2] -> asleep[2] = 0; woke = 1
#endif
        :: else
        fi
    };
    if
    :: woke -> reach(1); woke = 0
    :: else
    fi
}

proctype Thread(byte me)
{
    byte k;
    bit got, look, woke;

    do
    :: k < K ->
        /* qd_mutex_lock(): the fast CAS, then the yield phase */
        do
        :: atomic { word == 0 -> word = 1; got = 1 }; break
        :: word != 0 -> skip                 /* a failed look: yield, try again */
        :: word != 0 -> break                /* the policy says park */
        od;
        if
        :: got
        :: else ->                           /* park */
#ifndef BUG_NO_COUNT
            sleepers++;
#endif
            do
            :: atomic { word == 0 -> word = 1; got = 1 }; reach(3); break
            :: word != 0 -> futex_wait(me)
            od;
#ifndef BUG_NO_COUNT
            sleepers--
#else
            skip
#endif
        fi;
        d_step { inside++; assert(inside == 1); acquired++ };
        d_step { inside-- };
        /* qd_mutex_unlock() */
#ifdef NO_WINDOW
        atomic {
            look = sleepers != 0;
            word = 0
        };
#else
        look = sleepers != 0;
        word = 0;
#endif
#ifndef BUG_NO_WAKE
        if
        :: look -> reach(4); futex_wake_one()
        :: else
        fi;
#endif
        d_step { look = 0; got = 0; k++ }
    :: else -> break
    od
}

init {
    byte i;
    atomic {
        do
        :: i < NT -> run Thread(i); i++
        :: else -> break
        od;
        i = 0
    }
}

#ifdef LIVE
ltl live { <> (acquired == NT * K) }
#endif
