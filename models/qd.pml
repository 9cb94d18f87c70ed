/* qd.pml - the queue-delegation (QD) lock protocol of src/delegate/queue.h
 * and src/delegate/qd.c, for spin.
 *
 * Processes: ND delegators, each submitting two operations in turn (try the
 * mutex, else enqueue, else retry; after RETRIES refusals take the mutex
 * unconditionally; an odd delegator's second operation is an execute, which
 * then waits for its future), and NPLAIN plain lockers (lock, critical
 * section, unlock; a plain holder never opens the queue).  The init process waits
 * for all of them to end and then checks the final state.
 *
 * Abstractions: the byte buffer is SIZE slots; an entry is one slot (header)
 * or two (header + one argument), its length fixed by its operation, so a
 * reservation can straddle the end of the buffer.  A header holds the
 * operation's id (0 = not yet written, END = the straddler's marker); an
 * argument slot holds ARG(id), so a stale argument read as a header, or a
 * header whose argument is missing, trips an assertion.  Every step is
 * sequentially consistent; the memory orders of the C code are not modelled.
 * try_lock is one compare-and-swap step (the TTAS pre-read only saves cache
 * traffic); lock() is a blocking compare-and-swap.
 *
 * What is checked (assertions, and the end state in init):
 *   (a) every operation runs exactly once;
 *   (b) operations run in the order of their tickets, handed out at the
 *       linearization point: the successful fetch_add of an enqueue, the
 *       mutex acquisition of a helper or plain locker;
 *   (c) at most one process is in a critical section (a delegated operation
 *       or a plain holder's section), and only the mutex holder runs one;
 *   (d) no invalid end state (nobody waits forever, e.g. for an entry that
 *       is never written); with -DLIVE the LTL property `live` says that
 *       whatever was accepted eventually runs.
 * The buffer is all zero whenever a session opens the queue, and the queue
 * is closed whenever a plain locker holds the mutex.
 *
 * Deliberately broken variants, each of which spin must catch:
 *   BUG_NO_END_MARKER  the straddler writes nothing: the helper waits forever;
 *   BUG_FLUSH_EARLY    the helper stops at an entry not yet written instead
 *                      of waiting for its writer: an accepted operation is lost;
 *   BUG_CLOSE_STORE    the helper closes with a plain store of SIZE instead of
 *                      an exchange: reservations made between its load and the
 *                      store are lost.
 * NO_HINT makes enqueue ignore the closed hint (correctness must not depend
 * on it).
 *
 * Reachability markers: `reach(n)` assigns a hidden variable (no state);
 * models/check.sh asserts that the marker's statement is not in spin's
 * "unreached" list for the configurations meant to cover it:
 *   1 forced lock after RETRIES refusals     5 reopen after the queue filled
 *   2 the straddler writes END                6 enqueue refused by the counter
 *   3 the helper meets END                      (stale hint)
 *   4 close at the help limit                 7 enqueue refused by the hint
 */

#ifndef ND
#define ND 2            /* delegator processes */
#endif
#ifndef NPLAIN
#define NPLAIN 1        /* plain lock()/unlock() processes */
#endif
#ifndef SIZE
#define SIZE 3          /* queue slots */
#endif
#ifndef RETRIES
#define RETRIES 2       /* refusals before taking the mutex unconditionally */
#endif
#ifndef HELP_LIMIT
#define HELP_LIMIT 16   /* operations per help session */
#endif

#define NDOPS (2 * ND)           /* delegated operations: ids 1..NDOPS */
#define NOPS (NDOPS + NPLAIN)    /* plus one per plain locker */
#define END 255
#define ARG(id) (100 + (id))
#define OK 0
#define CLOSED 1

hidden byte cov;
#define reach(n) cov = n

/* --- the protocol's shared state --- */
bit M;                   /* the mutex: 0 free, 1 held */
byte counter = SIZE;     /* next free slot; closed when >= SIZE */
bit closed = 1;          /* the hint */
byte buf[SIZE];

/* --- bookkeeping for the checks --- */
byte oplen[NOPS + 1];    /* slots of each operation's entry */
bit accepted[NOPS + 1];
byte ticket[NOPS + 1];
byte tick;               /* tickets handed out */
byte nrun;               /* operations run */
byte runs[NOPS + 1];
bit busy;                /* a critical section is running */
byte owner;              /* _pid of the mutex holder, 0 when free */

#define accept(id) accepted[id] = 1; ticket[id] = tick; tick++

/* A critical section: entering checks (a), (b), (c); leaving is a separate
 * step, so two overlapping sections are seen. */
inline run_op(id)
{
    d_step {
        assert(!busy);
        assert(M == 1 && owner == _pid);
        assert(accepted[id] && runs[id] == 0);
        assert(ticket[id] == nrun);
        busy = 1;
        runs[id]++;
        nrun++;
        ticket[id] = 0                     /* no longer needed: fewer states */
    };
    busy = 0
}

inline assert_buffer_zero(i)
{
    d_step {
        i = 0;
        do
        :: i < SIZE -> assert(buf[i] == 0); i++
        :: else -> break
        od;
        i = 0
    }
}

/* qd_enqueue(): res = OK or CLOSED. */
inline enqueue(id, n, off, res)
{
    if
#ifndef NO_HINT
    :: closed ->
        reach(7);
        res = CLOSED
#endif
    :: else ->
        d_step {
            off = counter;
            counter = counter + n;       /* fetch_add */
            if
            :: off + n <= SIZE -> accept(id)
            :: else
            fi
        };
        if
        :: off + n <= SIZE ->
            if
            :: n == 2 -> buf[off + 1] = ARG(id)
            :: else
            fi;
            buf[off] = id;                 /* publish the header last */
            res = OK
        :: off < SIZE && off + n > SIZE ->
#ifndef BUG_NO_END_MARKER
            buf[off] = END;
#endif
            reach(2);
            res = CLOSED
        :: off >= SIZE ->
            reach(6);
            res = CLOSED
        fi;
        off = 0
    fi
}

/* qd_session(): the caller holds the mutex; runs its own operation id, then
 * helps until the queue is closed; then unlocks. */
inline session(id, todo, done, p, helped, hid, final, isfull)
{
    assert_buffer_zero(p);
    counter = 0;                           /* open */
    closed = 0;
    run_op(id);
    helped = 1;
    done = 0;
    do
    :: todo = counter;
        final = 0;
        isfull = 0;
        if
        :: todo == done || helped >= HELP_LIMIT ->
            if
            :: helped >= HELP_LIMIT -> reach(4)
            :: else
            fi;
#ifdef BUG_CLOSE_STORE
            counter = SIZE;
#else
            d_step { todo = counter; counter = SIZE };   /* exchange */
#endif
            closed = 1;
            final = 1;
            isfull = (todo >= SIZE)
        :: else ->
            if
            :: todo >= SIZE -> closed = 1; final = 1; isfull = 1
            :: else
            fi
        fi;
        if
        :: todo > SIZE -> todo = SIZE
        :: else
        fi;
        p = done;
        do
        :: p < todo ->
#ifdef BUG_FLUSH_EARLY
            if
            :: buf[p] == 0 -> break
            :: else
            fi;
#else
            buf[p] != 0;                   /* wait for the writer */
#endif
            if
            :: buf[p] == END ->
                buf[p] = 0;
                reach(3);
                p = SIZE;
                break
            :: else ->
                hid = buf[p];
                d_step {
                    assert(hid >= 1 && hid <= NDOPS);
                    if
                    :: oplen[hid] == 2 -> assert(buf[p + 1] == ARG(hid))
                    :: else
                    fi
                };
                run_op(hid);
                helped++;
                d_step {                   /* zero the entry */
                    if
                    :: oplen[hid] == 2 -> buf[p + 1] = 0
                    :: else
                    fi;
                    buf[p] = 0;
                    p = p + oplen[hid];
                    hid = 0
                }
            fi
        :: else -> break
        od;
        done = p;
        if
        :: !final
        :: final && isfull && helped < HELP_LIMIT ->
            /* Filled up by itself and may help more: reopen. */
            reach(5);
            assert_buffer_zero(p);
            counter = 0;
            closed = 0;
            done = 0
        :: final && !(isfull && helped < HELP_LIMIT) -> break
        fi
    od;
    todo = 0;
    d_step {
        done = 0; p = 0; helped = 0; final = 0; isfull = 0;
        assert(counter >= SIZE);
        owner = 0;
        M = 0                              /* unlock */
    }
}

proctype Delegator(byte d)
{
    byte k, id, tries, off, res;
    byte todo, done, p, helped, hid;
    bit got, final, isfull;

    do
    :: k < 2 ->
        id = 1 + 2 * d + k;
        do
        :: d_step {                        /* try_lock */
               if
               :: M == 0 -> M = 1; owner = _pid; accept(id); got = 1
               :: else
               fi
           };
           if
           :: got -> break
           :: else
           fi;
           enqueue(id, oplen[id], off, res);
           if
           :: res == OK -> break
           :: else
           fi;
           if
           :: tries >= RETRIES ->
               d_step { M == 0 -> M = 1; owner = _pid; accept(id); got = 1 };  /* lock() */
               reach(1);
               break
           :: else -> tries++              /* pause, retry */
           fi
        od;
        if
        :: got -> session(id, todo, done, p, helped, hid, final, isfull)
        :: else
        fi;
        if
        :: d % 2 == 1 && k == 1 ->
            runs[id] == 1                  /* an execute: wait for its future */
        :: else
        fi;
        d_step { k++; got = 0; tries = 0; res = 0; id = 0 }
    :: else -> break
    od
}

proctype Plain(byte id)
{
    d_step { M == 0 -> M = 1; owner = _pid; accept(id) };  /* lock() */
    assert(counter >= SIZE && closed);     /* nobody can enqueue meanwhile */
    run_op(id);
    d_step { owner = 0; M = 0 }            /* unlock() */
}

init {
    byte i;
    d_step {
        /* Entry lengths: 1 then 2 slots for an even delegator, 2 and 2 for
         * an odd one, so that with SIZE 3 or 4 one delegator's pair can
         * fill the buffer exactly or straddle its end. */
        i = 1;
        do
        :: i <= NDOPS ->
            if
            :: ((i - 1) / 2) % 2 == 0 && (i - 1) % 2 == 0 -> oplen[i] = 1
            :: else -> oplen[i] = 2
            fi;
            i++
        :: else -> break
        od;
        i = 0
    };
    atomic {
        do
        :: i < ND -> run Delegator(i); i++
        :: else -> break
        od;
        i = 0;
        do
        :: i < NPLAIN -> run Plain(NDOPS + 1 + i); i++
        :: else -> break
        od;
        i = 0
    };
    _nr_pr == 1;                           /* everybody else has ended */
    d_step {
        assert(tick == NOPS && nrun == NOPS);
        i = 1;
        do
        :: i <= NOPS -> assert(accepted[i] && runs[i] == 1); i++
        :: else -> break
        od;
        i = 0;
        assert(M == 0 && counter >= SIZE && !busy)
    };
    assert_buffer_zero(i)
}

#ifdef LIVE
/* Whatever has been accepted eventually runs, and so does everything. */
ltl live { [] ((tick > nrun) -> <> (nrun == tick)) && <> (nrun == NOPS) }
#endif
