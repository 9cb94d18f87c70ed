/* rcl.pml - the RCL (remote core locking) mailbox protocol of
 * src/delegate/rcl.c, for spin.
 *
 * Processes: NC clients with one mailbox each, one server, and the init
 * process, which plays the destroyer: it waits until every client has
 * returned from its operations, sets stop, wakes the server and joins it.
 * Client c issues two operations in program order: client 0 an execute
 * then a detached delegate, client 1 a detached delegate then an execute
 * (so both "wait for EMPTY before posting" and shutdown with a delegate
 * outstanding are exercised).
 *
 * Abstractions: a mailbox is its state word plus two fields (the operation
 * id and the detached flag); the wait layer's parked bit is not modelled.
 * Every step is sequentially consistent, which is what the seq_cst POSTED
 * store / sleep-word load (client) and sleep-word store / mailbox loads
 * (server) provide for the Dekker pair; the release/acquire pairs on the
 * state word are not modelled further.  futex_wait(sleep, 1) blocks until
 * the word is no longer 1, or returns spuriously (at most SPURIOUS times in
 * all); futex_wake is a no-op, since the waiter unblocks when the word
 * changes.  The idle budget is a count of empty scans (BUDGET).
 *
 * What is checked:
 *   - every posted operation runs exactly once, and only if it was posted;
 *   - each client's operations run in its program order;
 *   - an execute returns only after its operation ran; a detached delegate
 *     (post=0) returns only after the server took it (with -DPOST1, the
 *     post=1 delegate returns right after posting);
 *   - the server never runs an operation from a mailbox that is not
 *     POSTED-then-TAKEN by it (fields are read while they are stable);
 *   - no lost wake-up and no deadlock: every end state is valid (a client
 *     waiting while the server sleeps forever would be an invalid one);
 *   - shutdown runs everything posted before it, the server ends with every
 *     mailbox EMPTY and the destroyer's join returns.
 * With -DLIVE the LTL property `live` says every operation eventually runs
 * and the server eventually exits.
 *
 * Deliberately broken variants, each of which spin must catch:
 *   BUG_NO_RESCAN       the server sleeps without rescanning after setting its
 *                       sleep word: a post that read sleep == 0 is never seen;
 *   BUG_RESCAN_NO_STOP  the rescan looks at the mailboxes but not at stop: a
 *                       destroyer that set stop and found the sleep word still
 *                       0 never wakes the server;
 *   BUG_NO_WAKE         the client never clears the sleep word after posting;
 *   BUG_STOP_NO_WAKE    the destroyer sets stop but does not wake the server;
 *   BUG_STOP_EARLY      the server exits on stop without checking that every
 *                       mailbox is EMPTY (caught with -DPOST1);
 *   BUG_POST_ON_TAKEN   a client reuses its mailbox once its previous detached
 *                       operation is TAKEN instead of waiting for EMPTY.
 *
 * Reachability markers (see qd.pml): 1 the rescan finds a post and cancels
 * the sleep; 2 the server sleeps and is woken by a client; 3 by the
 * destroyer; 4 a spurious wake-up; 5 a client waits for EMPTY before posting;
 * 6 the server sees stop while an operation is still posted (-DPOST1).
 */

#ifndef NC
#define NC 2            /* clients (one mailbox each) */
#endif
#ifndef BUDGET
#define BUDGET 1        /* empty scans before the server goes to sleep */
#endif
#ifndef SPURIOUS
#define SPURIOUS 1      /* spurious futex wake-ups, in all */
#endif

#define NOPS (2 * NC)   /* client c's operation k has id 1 + 2c + k */
#define EMPTY 0
#define POSTED 1
#define TAKEN 2

hidden byte cov;
#define reach(n) cov = n

/* --- the protocol's shared state --- */
byte state[NC];
byte mop[NC];           /* the operation (its id) */
bit mdet[NC];           /* detached: the server publishes TAKEN first */
bit sleepw;             /* the server's sleep word */
bit stop;
byte spurious;

/* --- bookkeeping for the checks --- */
byte runs[NOPS + 1];
bit taken[NOPS + 1];
byte next[NC];          /* next operation index expected from client c */
byte returned;          /* clients that have returned from everything */
byte nrun;              /* operations run */
bit exited;             /* the server has ended */

proctype Client(byte c)
{
    byte k, id;
    bit det;

    do
    :: k < 2 ->
        id = 1 + 2 * c + k;
        det = (c + k) % 2;
        if
        :: state[c] != EMPTY -> reach(5)
        :: else
        fi;
#ifdef BUG_POST_ON_TAKEN
        state[c] != POSTED;
#else
        state[c] == EMPTY;                 /* the previous detached op finished */
#endif
        d_step { mop[c] = id; mdet[c] = det };     /* plain stores */
        state[c] = POSTED;                 /* seq_cst */
#ifndef BUG_NO_WAKE
        if
        :: sleepw == 1 ->                  /* seq_cst load */
            sleepw = 0                     /* exchange; futex_wake if it was 1 */
        :: else
        fi;
#endif
        if
        :: det ->
#ifdef POST1
            skip
#else
            state[c] != POSTED;            /* TAKEN or EMPTY: accepted */
            assert(taken[id])
#endif
        :: else ->
            state[c] == EMPTY;
            assert(runs[id] == 1)
        fi;
        d_step { k++; id = 0; det = 0 }
    :: else -> break
    od;
    returned++
}

proctype Server()
{
    byte i, idle, id;
    bit found, hit;

    do
    :: d_step { found = 0; i = 0 };
        do
        :: i < NC ->
            if
            :: state[i] == POSTED ->       /* acquire */
                found = 1;
                id = mop[i];
                if
                :: mdet[i] -> d_step { state[i] = TAKEN; taken[id] = 1 }
                :: else
                fi;
                d_step {                   /* run the operation */
                    assert(id == mop[i]);  /* the fields did not change */
                    assert(id == 1 + 2 * i + next[i]);  /* program order */
                    assert(runs[id] == 0);
                    runs[id]++;
                    nrun++;
                    next[i]++
                };
                state[i] = EMPTY;          /* release */
                id = 0
            :: else
            fi;
            i++
        :: else -> i = 0; break
        od;
        if
        :: found -> idle = 0
        :: else ->
#ifdef BUG_STOP_EARLY
            if
            :: stop -> break
            :: else
            fi;
#endif
            if
            :: d_step {                    /* stop, and every mailbox EMPTY */
                   stop ->
                   i = 0;
                   hit = 0;
                   do
                   :: i < NC -> if :: state[i] != EMPTY -> hit = 1 :: else fi; i++
                   :: else -> break
                   od;
                   i = 0
               };
               if
               :: !hit -> break
               :: else -> reach(6); hit = 0     /* stop, but a post is pending */
               fi
            :: else
            fi;
            idle++;
            if
            :: idle > BUDGET ->
                sleepw = 1;                /* seq_cst */
#ifndef BUG_NO_RESCAN
                do                         /* rescan */
                :: i < NC ->
                    if
                    :: state[i] == POSTED -> hit = 1
                    :: else
                    fi;
                    i++
                :: else -> i = 0; break
                od;
#ifndef BUG_RESCAN_NO_STOP
                if
                :: stop -> hit = 1
                :: else
                fi;
#endif
#endif
                if
                :: hit ->
                    reach(1);
                    d_step { sleepw = 0; hit = 0 }
                :: else ->
                    if                     /* futex_wait(sleep, 1) */
                    :: sleepw != 1 ->
                        if
                        :: stop -> reach(3)
                        :: else -> reach(2)
                        fi
                    :: spurious < SPURIOUS ->
                        spurious++;
                        reach(4)
                    fi;
                    d_step { sleepw = 0; idle = 0 }
                fi
            :: else
            fi
        fi
    od;
    idle = 0;
    d_step {
        i = 0;
        do
        :: i < NC -> assert(state[i] == EMPTY); i++
        :: else -> break
        od;
        i = 0;
        exited = 1
    }
}

init {
    byte i;
    atomic {
        run Server();
        do
        :: i < NC -> run Client(i); i++
        :: else -> break
        od;
        i = 0
    };
    returned == NC;                        /* every client returned */
    stop = 1;
#ifndef BUG_STOP_NO_WAKE
    sleepw = 0;                            /* exchange; futex_wake if it was 1 */
#endif
    _nr_pr == 1;                           /* join the server */
    d_step {
        i = 1;
        do
        :: i <= NOPS -> assert(runs[i] == 1); i++
        :: else -> break
        od;
        i = 0;
        do
        :: i < NC -> assert(state[i] == EMPTY && next[i] == 2); i++
        :: else -> break
        od;
        i = 0
    }
}

#ifdef LIVE
ltl live { <> (nrun == NOPS && exited) }
#endif
