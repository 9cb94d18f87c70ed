/* qd_resident.pml - qd's resident helper (option tenure_us > 0) of
 * src/delegate/qd.c on top of the queue of src/delegate/queue.h, for spin.
 * The queue part (enqueue, drain, straddler, reopen) is the one of qd.pml.
 *
 * Shared state: the mutex M, the queue (counter, closed hint, SIZE slots),
 * the `resident` word (0, a thread's token, or token|AWAY; a token is even)
 * and the session state `done` and `helped`, owned by whoever holds the
 * session.  Tokens: delegator d has 2*(d+1), the plain locker the next one,
 * the destroyer (init) the last.
 *
 * Processes, as the code does it:
 *  - ND delegators, two operations each (an odd delegator's second one is an
 *    execute: it waits for its future when another thread runs it).  One
 *    call is qdt_submit(): re-enter if our AWAY value is still in `resident`
 *    (CAS back to busy; run what was accepted meanwhile, then our own
 *    operation), else try_lock / enqueue / retry, after RETRIES refusals
 *    qdt_lock(), and open a session; then run the own operation, help
 *    (qdt_help) and leave (qdt_leave).  Leaving: at each leave the tenure is
 *    a nondeterministic choice (end the session, or go AWAY; helped >=
 *    HELP_LIMIT ends it); going away is store token|AWAY, look at the
 *    counter, and if something arrived CAS back to busy and help.  After an
 *    accepted enqueue, qdt_after_enqueue(): look at `resident`; if AWAY, the
 *    bounded wait is a nondeterministic choice: it sees the word change, or
 *    it gives up and steals (CAS from the value seen), helps and ends.
 *  - NPLAIN plain lockers: lock() through qdt_lock() (take the mutex, or
 *    take an AWAY session over: help, end it keeping the mutex; never park),
 *    critical section, unlock().  A loop of trylock() until success is the
 *    same steps (k_trylock: try_lock, else steal an AWAY session), so it is
 *    covered too.  A thread that spins, or waits for a future, is modelled
 *    as blocked until what it waits for holds: a wait that never ends is
 *    then an invalid end state.
 *  - init: starts everybody, waits until all have ended, then destroy:
 *    k_destroy() steals an AWAY session (the last resident never came back)
 *    and ends it; then qd_core_destroy()'s try_lock must succeed.
 *
 * What is checked (assertions, and the end state in init):
 *   (a) every operation runs exactly once, and everything accepted has run
 *       once all processes have ended and destroy is done;
 *   (b) operations run in the order of their tickets, handed out at their
 *       linearization points: the successful fetch_add of an enqueue; the
 *       mutex acquisition of a session opener or plain locker (for one that
 *       took an away session over: once that session is ended); and for a
 *       re-entering resident's own operation the moment it runs, which must
 *       come after everything accepted before the re-entry has run (the
 *       own operation takes the place just before the operations still
 *       pending, which were all accepted during this call);
 *   (c) at most one critical section at a time, only by the mutex holder
 *       and session owner, never while the session is AWAY; a plain holder
 *       sees resident == 0 and the queue closed; the session state is only
 *       touched by its owner;
 *   (d) no invalid end state: nobody waits forever (an execute's waiter is
 *       served; a plain locker, a forced delegator or destroy is never stuck
 *       behind an away resident that will not come back; a helper's wait
 *       for an entry ends).
 *
 * Deliberately broken variants, each of which spin must catch:
 *   BUG_NO_RECHECK         the resident does not look at the counter again
 *                          after storing AWAY: an entry accepted while it
 *                          was busy, whose enqueuer saw it busy, sits in the
 *                          queue with nobody to run it (an execute waits
 *                          forever);
 *   BUG_STEAL_NO_DRAIN     a thief ends the session without running what
 *                          was accepted;
 *   BUG_LOCK_NO_STEAL      lock() (and a trylock loop) does not take an
 *                          away session over: it spins behind a resident
 *                          that never comes back;
 *   BUG_REENTER_OWN_FIRST  a re-entering resident runs its own operation
 *                          before what was accepted while it was away.
 *
 * Reachability markers (`reach(n)`, a hidden variable, no state; an inline
 * that carries one takes its number as an argument, 0 = none here):
 *   1 forced lock after RETRIES refusals      8 the enqueuer's wait sees a change
 *   2 re-entry (CAS back from AWAY)           9 help reopens a full queue
 *   3 leave: came back to help               10 the straddler writes END
 *   4 leave: found itself stolen             11 a re-entering resident's own
 *   5 an enqueuer steals and ends               operation runs while some are
 *   6 lock() steals an away session             pending (accepted during its call)
 *   7 destroy steals an away session         12 the forced path steals
 *                                            13 re-entry help stops at help_limit
 *                                               with entries pending
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
#define RETRIES 1       /* refusals before taking the mutex unconditionally */
#endif
#ifndef HELP_LIMIT
#define HELP_LIMIT 2    /* operations per session */
#endif

#ifdef ALL_EXECUTE
#define IS_EXECUTE(d, k) true
#else
#define IS_EXECUTE(d, k) ((d) % 2 == 1 && (k) == 1)
#endif

#define NDOPS (2 * ND)           /* delegated operations: ids 1..NDOPS */
#define NOPS (NDOPS + NPLAIN)    /* plus one per plain locker */
#define END 255
#define ARG(id) (100 + (id))
#define OK 0
#define CLOSED 1
#define AWAY 1
#define DTOK (2 * (ND + NPLAIN + 1))   /* the destroyer's token */

hidden byte cov;
#define reach(n) cov = n

/* --- the protocol's shared state --- */
bit M;                   /* the mutex: 0 free, 1 held */
byte counter = SIZE;     /* next free slot; closed when >= SIZE */
bit closed = 1;          /* the hint */
byte buf[SIZE];
byte resident;           /* 0, token, or token|AWAY */
byte done, helped;       /* session state (l->done, l->helped) */

/* --- bookkeeping for the checks --- */
byte oplen[NOPS + 1];    /* slots of each operation's entry */
bit accepted[NOPS + 1];
byte ticket[NOPS + 1];
byte tick;               /* tickets handed out */
byte nrun;               /* operations run */
byte runs[NOPS + 1];
bit busy;                /* a critical section is running */
byte owner;              /* _pid of the mutex holder / session owner, 0 when free */

#define accept(id) accepted[id] = 1; ticket[id] = tick; tick++
#define mine assert(owner == _pid && M == 1 && (resident & AWAY) == 0)

/* Locals every process that can own a session declares. */
#define SESSION_LOCALS byte todo, p, hid, r, dl; bit stolen

/* A critical section: entering checks (a), (b), (c); leaving is a separate
 * step, so two overlapping sections are seen. */
inline run_op(id)
{
    d_step {
        assert(!busy);
        mine;
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
    :: closed ->
        res = CLOSED
    :: else ->
        d_step {
            off = counter;
            counter = counter + n;         /* fetch_add */
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
            buf[off] = END;
            reach(10);
            res = CLOSED
        :: off >= SIZE ->
            res = CLOSED
        fi;
        off = 0
    fi
}

/* qd_drain_to(q, todo, &done, &helped): run the entries in [done, todo). */
inline drain_to()
{
    d_step {
        mine;
        if
        :: todo > SIZE -> todo = SIZE
        :: else
        fi;
        p = done
    };
    do
    :: p < todo ->
        buf[p] != 0;                       /* wait for the writer */
        if
        :: buf[p] == END ->
            d_step { buf[p] = 0; p = SIZE };
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
            d_step {                       /* zero the entry */
                mine;
                helped++;
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
    atomic { mine; done = p; p = 0; todo = 0 }
}

/* qdt_help(): help while the queue stays open and something new arrives. */
inline qdt_help(mk, lim)
{
    do
    :: todo = counter;
        if
        :: todo == done -> todo = 0; break
        :: todo != done && helped >= HELP_LIMIT -> todo = 0; reach(lim); break
        :: else ->
            if
            :: todo >= SIZE ->
                closed = 1;
                drain_to();
                reach(mk);
                assert_buffer_zero(p);
                counter = 0;               /* reopen */
                closed = 0;
                d_step { mine; done = 0 }
            :: else ->
                drain_to()
            fi
        fi
    od
}

/* qdt_end(l, keep): close, run what is left, end the session; unlock
 * unless keep.  `thief`: a thief's end (for BUG_STEAL_NO_DRAIN). */
inline qdt_end(keep, thief)
{
    resident = 0;
    d_step { todo = counter; counter = SIZE };   /* exchange */
    closed = 1;
#ifdef BUG_STEAL_NO_DRAIN
    if
    :: thief -> todo = 0
    :: else -> drain_to()
    fi;
#else
    drain_to();
#endif
    if
    :: keep
    :: else -> d_step { mine; owner = 0; M = 0 }   /* unlock */
    fi
}

/* qdt_open(l, token): we just took the mutex. */
inline qdt_open()
{
    assert_buffer_zero(p);
    d_step {
        assert(owner == _pid && M == 1 && resident == 0 && counter >= SIZE && closed);
        done = 0;
        helped = 0;
        resident = tok
    };
    counter = 0;                           /* open (release) */
    closed = 0
}

/* qdt_leave(l, token): stay resident (away) if the tenure allows, else end. */
inline qdt_leave()
{
    do
    :: helped >= HELP_LIMIT -> qdt_end(0, 0); break
    :: helped < HELP_LIMIT -> qdt_end(0, 0); break     /* tenure over */
    :: helped < HELP_LIMIT ->
        d_step { mine; dl = done; resident = tok | AWAY };
#ifdef BUG_NO_RECHECK
        break
#else
        todo = counter;
        if
        :: todo == dl -> break
        :: else
        fi;
        d_step {                           /* CAS back to busy */
            if
            :: resident == (tok | AWAY) -> resident = tok; stolen = 1; assert(owner == _pid)
            :: else
            fi
        };
        if
        :: stolen -> stolen = 0; reach(3)
        :: else -> reach(4); break         /* stolen: the thief runs it */
        fi;
        qdt_help(0, 0)
#endif
    od;
    atomic { todo = 0; dl = 0; stolen = 0 }
}

/* qdt_steal() from the value r seen. */
inline qdt_steal()
{
    d_step {
        if
        :: resident == r -> assert(M == 1); resident = tok; owner = _pid; stolen = 1
        :: else
        fi
    }
}

/* qdt_after_enqueue(l, token). */
inline after_enqueue()
{
    r = resident;
    if
    :: (r & AWAY) == 0                     /* none, or busy: it runs ours */
    :: else ->
        if
        :: resident != r -> reach(8)       /* the wait sees a change */
        :: true ->                         /* it gives up: steal */
            qdt_steal();
            if
            :: stolen -> reach(5); qdt_help(0, 0); qdt_end(0, 1)
            :: else
            fi
        fi
    fi;
    atomic { r = 0; stolen = 0 }
}

/* qdt_lock(l) for lock() and the forced path; accepts id once it holds the
 * mutex with the queue closed.  A failed try_lock followed by a look that
 * sees no AWAY value only pauses and retries: modelled as blocking. */
inline qdt_lock(id, mk)
{
    do
    :: d_step { M == 0 -> M = 1; owner = _pid; accept(id) }; break
#ifndef BUG_LOCK_NO_STEAL
    :: d_step { (resident & AWAY) != 0 -> r = resident; assert(M == 1) };
        qdt_steal();
        if
        :: stolen -> reach(mk); qdt_help(0, 0); qdt_end(1, 1); d_step { accept(id) }; break
        :: else
        fi
#endif
    od;
    atomic { r = 0; stolen = 0 }
}

proctype Delegator(byte d)
{
    byte k, id, tries, off, res, tok, tinv;
    bit got, reent;
    SESSION_LOCALS;

    tok = 2 * (d + 1);
    do
    :: k < 2 ->
        id = 1 + 2 * d + k;
        d_step {                           /* re-enter: CAS AWAY -> busy */
            if
            :: resident == (tok | AWAY) ->
                assert(owner == _pid && M == 1);
                resident = tok; reent = 1; tinv = tick
            :: else
            fi
        };
        if
        :: reent ->
            reach(2);
#ifndef BUG_REENTER_OWN_FIRST
            qdt_help(0, 13);               /* accepted while away: first */
#endif
            atomic {
                /* Everything accepted before the re-entry has run; the own
                 * operation goes just before those still pending. */
                assert(nrun >= tinv);
                if
                :: tick > nrun -> reach(11)
                :: else
                fi;
                p = 1;
                do
                :: p <= NOPS ->
                    if
                    :: accepted[p] && runs[p] == 0 -> ticket[p]++
                    :: else
                    fi;
                    p++
                :: else -> break
                od;
                p = 0;
                accepted[id] = 1; ticket[id] = nrun; tick++
            };
            run_op(id)
        :: else ->
            do
            :: d_step {                    /* try_lock */
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
               :: res == OK -> after_enqueue(); break
               :: else
               fi;
               if
               :: tries >= RETRIES -> qdt_lock(id, 12); got = 1; reach(1); break
               :: else -> tries++          /* pause, retry */
               fi
            od;
            if
            :: got -> qdt_open(); run_op(id)
            :: else
            fi
        fi;
        if
        :: got || reent ->
            d_step { mine; helped++ };
            qdt_help(9, 0);
            qdt_leave()
        :: else
        fi;
        if
        :: IS_EXECUTE(d, k) ->
            runs[id] == 1                  /* an execute: wait for its future */
        :: else
        fi;
        d_step { k++; got = 0; reent = 0; tinv = 0; tries = 0; res = 0; id = 0 }
    :: else -> break
    od
}

proctype Plain(byte id; byte tok)
{
    SESSION_LOCALS;

    qdt_lock(id, 6);                       /* lock() */
    atomic { assert(counter >= SIZE && closed && resident == 0) };
    run_op(id);
    d_step { owner = 0; M = 0 }            /* unlock() */
}

init {
    byte i, tok;
    SESSION_LOCALS;

    d_step {
        /* Entry lengths as in qd.pml: 1 then 2 slots for an even delegator,
         * 2 and 2 for an odd one. */
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
        i = 0;
        tok = DTOK
    };
    atomic {
        do
        :: i < ND -> run Delegator(i); i++
        :: else -> break
        od;
        i = 0;
        do
        :: i < NPLAIN -> run Plain(NDOPS + 1 + i, 2 * (ND + 1 + i)); i++
        :: else -> break
        od;
        i = 0
    };
    _nr_pr == 1;                           /* everybody else has ended */
    /* Every call has returned: whatever was accepted has run (nothing
     * waits for a resident that does not come back). */
    assert(nrun == tick);
    /* k_destroy(): end an away session (its resident never came back). */
    r = resident;
    if
    :: (r & AWAY) != 0 ->
        qdt_steal();
        assert(stolen);
        reach(7);
        qdt_help(0, 0);
        qdt_end(0, 1)
    :: else -> assert(r == 0)
    fi;
    d_step {
        /* qd_core_destroy(): its try_lock succeeds. */
        assert(M == 0 && owner == 0 && resident == 0 && counter >= SIZE && closed && !busy);
        assert(tick == NOPS && nrun == NOPS);
        i = 1;
        do
        :: i <= NOPS -> assert(accepted[i] && runs[i] == 1); i++
        :: else -> break
        od;
        i = 0
    };
    assert_buffer_zero(i)
}
