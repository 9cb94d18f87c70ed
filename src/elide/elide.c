/* elide.c - elide(<kind>): hardware lock elision over any kind with a lock
 * word.
 *
 * A critical section first runs as a hardware transaction that only reads
 * the inner lock's word: threads whose critical sections touch different
 * data run at once and commit, and the lock's cache line never moves.  A
 * thread that takes the inner lock for real writes that word, which aborts
 * every transaction that read it, so a speculative critical section never
 * overlaps a real one.  A transaction that finds the lock held aborts
 * explicitly (cause "busy").  What happens after an abort is the policy
 * (chosen in the spec):
 *
 *   adaptive  (default) retry on the causes a retry can cure (conflict, the
 *             CPU's retry hint, a busy lock once it is free) up to `retries`
 *             aborts; stop at once on capacity, other explicit aborts,
 *             nesting, debug and causeless aborts (interrupts, system calls,
 *             page faults), which would recur.  Each acquisition that ends
 *             on the inner lock makes the next `skip` acquisitions of this
 *             lock skip elision, doubling per failure in a row (up to 64x);
 *             one commit resets it.
 *   base      the classic scheme: wait while the lock is busy, speculate;
 *             after an abort try the inner lock once without waiting, else
 *             speculate again; `retries` aborts bound it (starvation).
 *   nretries=N  speculate up to N times whatever the cause, then lock.
 *   sleep     as base, but a thread that finds the lock busy parks (the wait
 *             layer's park policy) instead of spinning until it is free.
 *
 * Flat nesting.  A lock taken inside a transaction joins it: its word joins
 * the read set, and the transaction commits when the outermost elided lock
 * is released.  The calling thread's elided locks are a small table in
 * thread-local storage, written inside the transaction, so an abort rolls
 * it back with everything else; outside our transactions it is empty.
 * Whether the caller is inside one of our transactions is "that table is
 * not empty", which never executes an RTM instruction outside RTM.
 *
 * Misuse.  An unlock that does not match an elided lock of the running
 * transaction is a real unlock: the owner recorded by the non-speculative
 * path must be the caller, else EPERM.  So unlocking a lock that is not
 * held never commits (XEND) outside a transaction.  A trylock inside a
 * transaction answers as POSIX says: EBUSY if the lock is held, by another
 * thread or by this transaction; a lock of a lock this transaction already
 * elides aborts it, and the real run then does what the inner kind does.
 *
 * Without usable RTM (absent, switched off, always aborting, or BATON_RTM=
 * off: see htm.c) every operation is the inner kind's, with nothing added.
 *
 * Layout.  Everything a transaction reads (the configuration and the inner
 * lock's word) is on lines nothing writes at run time except real lock
 * holders; counters and back-off state live on a line of their own, and
 * commits are counted on per-thread stripes, so bookkeeping never aborts a
 * speculating thread.
 */
#include "htm.h"
#include "../base/error.h"
#include "../api/registry.h"
#include "../base/thread.h"
#include "../base/syslock.h"
#include "../base/cs.h"
#include "../base/topology.h"

#include <pthread.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { POLICY_ADAPTIVE, POLICY_BASE, POLICY_NRETRIES, POLICY_SLEEP };
enum { SLOW_FALLBACKS = BATON_ABORT_CAUSES, SLOW_SKIPPED, NSLOW };
enum { GOT_SPEC = 1, GOT_HELD = 2, GOT_NONE = 0 };

#define STRIPES_MAX 16
#define NEST_MAX 8
#define SKIP_DOUBLINGS 6
#define PARK_SAFETY_NS 1000000u /* a parked waiter re-checks at least this often */

typedef struct stripe {
    _Alignas(BATON_CACHELINE) _Atomic uint64_t n;
} stripe_t;

typedef struct elide_lock {
    /* Read-only once initialised, and read inside transactions. */
    baton_lock_t *inner;
    void *is;               /* the inner lock's state */
    const baton_kind_t *ik; /* the inner kind's table */
    bool direct;            /* call ik's lock/unlock/trylock (no owner check in the API) */
    int (*is_locked)(void *);
    int (*has_readers)(void *); /* NULL unless the inner kind is RW */
    stripe_t *commits;          /* NULL: stats=0 */
    uint32_t nstripes;
    uint32_t retries, nretries, skip_base;
    uint8_t policy, rw;
    baton_wait_t busy_wait; /* how a thread waits for the lock to be free */
    /* Written only on slow paths, outside transactions, and never read
     * inside one: by real holders (gate, owner), after aborts and failures
     * (the counters, the adaptive back-off).  One line: the slow paths are
     * slow anyway, and an interposed program may have a million locks. */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t gate; /* BATON_WAIT_PARKED: a waiter sleeps, or is about to */
    _Atomic uint32_t skip;                           /* adaptive: acquisitions left that skip elision */
    _Atomic uint32_t streak;                         /* adaptive: failed acquisitions in a row */
    _Atomic uintptr_t owner;
    _Atomic uint64_t slow[NSLOW];   /* aborts by cause, fallbacks, skips */
    struct elide_lock *prev, *next; /* every live elide lock (under all_mu) */
} elide_lock_t;

_Static_assert(sizeof(elide_lock_t) == 2 * BATON_CACHELINE, "configuration line, slow-path line");

/* The inner lock's own operations: straight to its kind's table unless the
 * API checks its owner (check=1), so that elide(x) costs next to nothing
 * more than x where it does not speculate. */
static inline void inner_lock(elide_lock_t *l)
{
    if (BATON_LIKELY(l->direct))
        l->ik->lock(l->is);
    else
        (void)baton_lock(l->inner);
}

static inline int inner_unlock(elide_lock_t *l)
{
    return BATON_LIKELY(l->direct) ? l->ik->unlock(l->is) : baton_unlock(l->inner);
}

/* Whatever thread calls (see k_release()). */
static inline int inner_release(elide_lock_t *l)
{
    return BATON_LIKELY(l->direct && l->ik->release) ? l->ik->release(l->is) : baton_lock_release(l->inner);
}

static inline int inner_trylock(elide_lock_t *l)
{
    return BATON_LIKELY(l->direct) ? l->ik->trylock(l->is) : baton_trylock(l->inner);
}

/* The inner kind's timed wait (ENOTSUP where it has none). */
static int inner_timedlock(elide_lock_t *l, const baton_deadline_t *d)
{
    if (l->direct && l->ik->timedlock)
        return l->ik->timedlock(l->is, d);
    return baton_clocklock(l->inner, d->clock, &d->at);
}

/* The calling thread's elided locks (flat nesting).  Entries are the lock's
 * address with bit 0 set for a reader's. */
typedef struct nest {
    uint32_t n;
    uintptr_t e[NEST_MAX];
} nest_t;

static _Thread_local nest_t nest __attribute__((tls_model("initial-exec")));

/* Every live elide lock, and what destroyed ones counted: the process's
 * totals (baton_elision_totals), for reports such as the interposer's exit
 * line, where the locks are not at hand.  Changed only at init and destroy. */
static baton_syslock_t all_mu = BATON_SYSLOCK_INIT;
static struct elide_lock *all_head;
static baton_stats_t all_gone;
static pthread_once_t all_once = PTHREAD_ONCE_INIT;
static _Thread_local uint32_t my_stripe __attribute__((tls_model("initial-exec"))); /* 0: none yet */
static _Atomic uint32_t next_stripe;

static inline uintptr_t tag(const elide_lock_t *l, int read) { return (uintptr_t)l | (uintptr_t)(read != 0); }

static inline int nest_find(uintptr_t t)
{
    for (uint32_t i = 0; i < nest.n; i++)
        if (nest.e[i] == t)
            return (int)i;
    return -1;
}

static inline void count(elide_lock_t *l, unsigned what)
{
    /* Relaxed: a statistic; outside any transaction. */
    baton_fetch_add(&l->slow[what], 1u, memory_order_relaxed);
}

static inline void count_commit(elide_lock_t *l)
{
    if (!l->commits)
        return;
    uint32_t s = my_stripe;
    if (BATON_UNLIKELY(s == 0)) {
        /* Relaxed: only spreading threads over stripes matters. */
        s = my_stripe = baton_fetch_add(&next_stripe, 1u, memory_order_relaxed) + 1u;
    }
    /* Relaxed: a statistic, read as a sum. */
    baton_fetch_add(&l->commits[(s - 1u) & (l->nstripes - 1u)].n, 1u, memory_order_relaxed);
    if (BATON_UNLIKELY(baton_load(&l->streak, memory_order_relaxed) != 0))
        baton_store(&l->streak, 0u, memory_order_relaxed); /* success ends a failure streak */
}

/* Is the lock held for real, in a way that excludes this (reader's or
 * writer's) critical section?  Inside a transaction these loads put the
 * words in the read set: a real acquisition then aborts us. */
static inline int busy(const elide_lock_t *l, int read)
{
    return l->is_locked(l->is) || (!read && l->has_readers && l->has_readers(l->is));
}

/* Wait until the lock looks free: the policy's pauses, then park on the
 * gate word.  A real release wakes parked waiters (wake_waiters); releases
 * the inner kind makes on its own (a delegation kind's helper) do not come
 * through here, so a parked waiter also re-checks every PARK_SAFETY_NS.
 *
 * No lost wake-up: the waiter announces itself with a read-modify-write of
 * the gate before it looks at the lock, and the releaser, after releasing,
 * does one too.  RMWs on one word are totally ordered and each reads the
 * last value: if the releaser's comes later it sees the bit and wakes; if
 * earlier, the waiter's RMW reads from it (release/acquire), so the
 * waiter's look at the lock sees the release. */
static void wait_free(elide_lock_t *l, int read)
{
    baton_waiter_t w;
    baton_waiter_init(&w, &l->busy_wait);
    while (busy(l, read)) {
        if (baton_waiter_pause(&w, NULL, 0))
            continue;
        /* acq_rel: see above. */
        baton_fetch_or(&l->gate, BATON_WAIT_PARKED, memory_order_acq_rel);
        if (!busy(l, read))
            break;
        baton_park_timeout(&l->gate, BATON_WAIT_PARKED, PARK_SAFETY_NS);
    }
}

/* After a real release: wake threads parked in wait_free. */
static inline void wake_waiters(elide_lock_t *l)
{
    /* acq_rel RMW: pairs with the waiter's (see wait_free()); clearing the
     * bit also changes the word, so a sleeper about to park returns. */
    if (BATON_UNLIKELY(baton_fetch_and(&l->gate, ~BATON_WAIT_PARKED, memory_order_acq_rel) &
                       BATON_WAIT_PARKED))
        baton_wake_all(&l->gate);
}

/* An acquisition that ended on the inner lock (adaptive): skip elision on
 * the next few, more after each failure in a row. */
static void failed(elide_lock_t *l)
{
    count(l, SLOW_FALLBACKS);
    if (l->policy != POLICY_ADAPTIVE || l->skip_base == 0)
        return;
    /* Relaxed: heuristic state; racing updates only blur it. */
    uint32_t streak = baton_load(&l->streak, memory_order_relaxed);
    baton_store(&l->streak, streak + 1u, memory_order_relaxed);
    uint32_t d = streak < SKIP_DOUBLINGS ? streak : SKIP_DOUBLINGS;
    baton_store(&l->skip, l->skip_base << d, memory_order_relaxed);
}

static bool retry_after(const elide_lock_t *l, unsigned cause, unsigned aborts)
{
    switch (l->policy) {
    case POLICY_NRETRIES: return aborts < l->nretries;
    case POLICY_BASE:
    case POLICY_SLEEP: return aborts < l->retries;
    default:
        if (cause == BATON_ABORT_BUSY || cause == BATON_ABORT_CONFLICT || cause == BATON_ABORT_RETRY)
            return aborts < l->retries;
        return false;
    }
}

/* Start a transaction with l as its outermost elided lock: HTM_STARTED (l
 * is in the nesting table, its word in the read set), or the abort status
 * (a held lock aborts with HTM_CODE_BUSY).  An abort resumes here even after
 * this returned: the hardware restores the registers and rolls back every
 * write, the stack included. */
static inline BATON_RTM_FN __attribute__((always_inline)) uint32_t start_outer(elide_lock_t *l, int read)
{
    uint32_t st = htm_begin();
    if (st == HTM_STARTED) {
        if (busy(l, read))
            htm_abort(HTM_CODE_BUSY);
        nest.e[0] = tag(l, read);
        nest.n = 1;
    }
    return st;
}

/* Enter l's critical section (reader's if read) as the outermost elided
 * lock.  GOT_SPEC: a transaction is open with l in it.  GOT_HELD: the inner
 * lock was taken for real (base and sleep try it once after an abort; only
 * for writers).  GOT_NONE: take the inner lock the usual way. */
static BATON_RTM_FN int begin(elide_lock_t *l, int read)
{
    if (l->policy == POLICY_ADAPTIVE) {
        uint32_t s = baton_load(&l->skip, memory_order_relaxed); /* heuristic, see failed() */
        if (s != 0) {
            baton_store(&l->skip, s - 1u, memory_order_relaxed);
            count(l, SLOW_SKIPPED);
            return GOT_NONE;
        }
    }
    const bool waits_first = l->policy == POLICY_BASE || l->policy == POLICY_SLEEP;
    for (unsigned aborts = 0;;) {
        if (waits_first)
            wait_free(l, read);
        uint32_t st = start_outer(l, read);
        if (st == HTM_STARTED)
            return GOT_SPEC;
        unsigned cause = htm_cause(st);
        count(l, cause);
        if (!retry_after(l, cause, ++aborts)) {
            failed(l);
            return GOT_NONE;
        }
        if (cause == BATON_ABORT_BUSY) {
            if (!waits_first)
                wait_free(l, read);
        } else if (waits_first && !read && inner_trylock(l) == 0) {
            count(l, SLOW_FALLBACKS);
            return GOT_HELD;
        }
    }
}

/* Inside one of our transactions: l joins it. */
static BATON_RTM_FN void join(elide_lock_t *l, int read)
{
    /* A writer's lock of a lock this transaction elides would deadlock (or
     * fail) if run for real: abort, and let the real run show it.  A read
     * lock taken again for reading is allowed, as with rwlocks. */
    if (nest_find(tag(l, 0)) >= 0 || (!read && nest_find(tag(l, 1)) >= 0))
        htm_abort(HTM_CODE_SELF);
    if (busy(l, read))
        htm_abort(HTM_CODE_BUSY);
    if (nest.n == NEST_MAX)
        htm_abort(HTM_CODE_DEPTH);
    nest.e[nest.n++] = tag(l, read);
}

/* Leave an elided critical section: 1 if t was one of ours (committed when
 * it was the last), 0 if not (the caller releases for real). */
static BATON_RTM_FN int leave(elide_lock_t *l, int read)
{
    int i = nest_find(tag(l, read));
    if (i < 0)
        return 0;
    nest.e[i] = nest.e[--nest.n];
    if (nest.n == 0) {
        htm_end();
        count_commit(l);
    }
    return 1;
}

/* --- the operations ----------------------------------------------------------- */

/* A writer's entry where RTM is usable: join our open transaction, or
 * begin one (GOT_SPEC); or the policy took the inner lock (GOT_HELD, owner
 * recorded); or GOT_NONE: the caller takes the inner lock its own way. */
static inline BATON_RTM_FN __attribute__((always_inline)) int enter(elide_lock_t *l)
{
    if (nest.n > 0) {
        join(l, 0);
        return GOT_SPEC;
    }
    int got = begin(l, 0);
    if (got == GOT_HELD)
        baton_store(&l->owner, baton_thread_token(), memory_order_relaxed); /* see k_lock() */
    return got;
}

static BATON_RTM_FN void k_lock(void *s)
{
    elide_lock_t *l = s;
    if (baton_htm_mode() == BATON_HTM_NONE) {
        inner_lock(l);
        return;
    }
    if (enter(l) == GOT_NONE) {
        inner_lock(l);
        /* Relaxed: compared only with the caller's own token (k_unlock). */
        baton_store(&l->owner, baton_thread_token(), memory_order_relaxed);
    }
}

/* trylock, a writer's or a reader's: never waits.  Inside our transaction
 * it joins unless the lock is held (for real, or by this transaction:
 * EBUSY, as POSIX says); outside, one speculative try (unless adaptive
 * back-off says skip), then the inner kind's own trylock. */
static BATON_RTM_FN int try_enter(elide_lock_t *l, int read, int (*inner_try)(elide_lock_t *))
{
    if (nest.n > 0) {
        if (nest_find(tag(l, 0)) >= 0 || (!read && nest_find(tag(l, 1)) >= 0) || busy(l, read))
            return EBUSY;
        if (nest.n == NEST_MAX)
            htm_abort(HTM_CODE_DEPTH);
        nest.e[nest.n++] = tag(l, read);
        return 0;
    }
    if (l->policy != POLICY_ADAPTIVE || baton_load(&l->skip, memory_order_relaxed) == 0) {
        uint32_t st = start_outer(l, read);
        if (st == HTM_STARTED)
            return 0;
        count(l, htm_cause(st));
        count(l, SLOW_FALLBACKS);
    } else {
        count(l, SLOW_SKIPPED);
    }
    return inner_try(l);
}

static int inner_trylock_owned(elide_lock_t *l)
{
    int rc = inner_trylock(l);
    if (rc == 0)
        baton_store(&l->owner, baton_thread_token(), memory_order_relaxed); /* see k_lock() */
    return rc;
}

static int inner_tryrlock(elide_lock_t *l)
{
    return l->ik->tryrlock ? l->ik->tryrlock(l->is) : l->ik->trylock(l->is);
}

static BATON_RTM_FN int k_trylock(void *s)
{
    elide_lock_t *l = s;
    if (baton_htm_mode() == BATON_HTM_NONE)
        return inner_trylock(l);
    return try_enter(l, 0, inner_trylock_owned);
}

/* A real hold's release, the inner lock's by `inner`. */
static int release_held(elide_lock_t *l, int (*inner)(elide_lock_t *))
{
    baton_store(&l->owner, (uintptr_t)0, memory_order_relaxed); /* see k_lock() */
    int rc = inner(l);
    wake_waiters(l);
    return rc;
}

/* A writer's unlock: by the owner (EPERM for any other thread), or, for
 * `any_thread`, whatever thread calls (a NORMAL pthread mutex): our own
 * elided hold, or the real hold of whichever thread took the inner lock (a
 * thread never leaves while it speculates: a transaction aborts at the
 * first system call), which the inner kind's release ends. */
static inline BATON_RTM_FN __attribute__((always_inline)) int unlock_as(elide_lock_t *l, bool any_thread)
{
    if (baton_htm_mode() == BATON_HTM_NONE)
        return any_thread ? inner_release(l) : inner_unlock(l);
    if (nest.n > 0 && leave(l, 0))
        return 0;
    /* A real release (inside a transaction too, if the lock was held before
     * it began: then it is part of the transaction).  Relaxed: only the
     * owner stores its token; others compare it with theirs, or, releasing
     * for it, synchronised with it first (0: not held for real). */
    uintptr_t owner = baton_load(&l->owner, memory_order_relaxed);
    if (any_thread ? owner == 0 : owner != baton_thread_token())
        return any_thread ? 0 : baton_fail(EPERM, "elide: unlock of a lock the caller does not hold");
    return release_held(l, any_thread ? inner_release : inner_unlock);
}

static BATON_RTM_FN int k_unlock(void *s) { return unlock_as(s, false); }
static BATON_RTM_FN int k_release(void *s) { return unlock_as(s, true); }

static BATON_RTM_FN void k_rlock(void *s)
{
    elide_lock_t *l = s;
    if (!l->rw) {
        k_lock(s);
        return;
    }
    if (baton_htm_mode() == BATON_HTM_NONE) {
        (void)baton_rlock(l->inner);
        return;
    }
    if (nest.n > 0) {
        join(l, 1);
        return;
    }
    if (begin(l, 1) != GOT_SPEC)
        (void)baton_rlock(l->inner);
}

static BATON_RTM_FN void k_runlock(void *s)
{
    elide_lock_t *l = s;
    if (!l->rw) {
        (void)k_unlock(s);
        return;
    }
    if (baton_htm_mode() != BATON_HTM_NONE && nest.n > 0 && leave(l, 1))
        return;
    (void)baton_runlock(l->inner);
    if (baton_htm_mode() != BATON_HTM_NONE)
        wake_waiters(l);
}

/* Timed entries never speculate: a transaction cannot sleep, and the
 * caller's trylock (the API's first step) already made one speculative
 * try.  Inside one of our transactions they join it as lock does (a busy
 * lock aborts it, and the real run, outside any transaction, waits). */
static BATON_RTM_FN int k_timedlock(void *s, const baton_deadline_t *d)
{
    elide_lock_t *l = s;
    if (baton_htm_mode() != BATON_HTM_NONE && nest.n > 0) {
        join(l, 0);
        return 0;
    }
    int rc = inner_timedlock(l, d);
    if (rc == 0 && baton_htm_mode() != BATON_HTM_NONE)
        baton_store(&l->owner, baton_thread_token(), memory_order_relaxed); /* see k_lock() */
    return rc;
}

BATON_KIND_ADAPT_AT(timed, elide_lock_t, baton_lock_timed, l->inner)

static BATON_RTM_FN int k_timedrlock(void *s, const baton_deadline_t *d)
{
    elide_lock_t *l = s;
    if (!l->rw)
        return k_timedlock(s, d);
    if (baton_htm_mode() != BATON_HTM_NONE && nest.n > 0) {
        join(l, 1);
        return 0;
    }
    return baton_rclocklock(l->inner, d->clock, &d->at);
}

static BATON_RTM_FN int k_tryrlock(void *s)
{
    elide_lock_t *l = s;
    if (!l->rw)
        return k_trylock(s);
    if (baton_htm_mode() == BATON_HTM_NONE)
        return inner_tryrlock(l);
    return try_enter(l, 1, inner_tryrlock);
}

static int k_is_locked(void *s)
{
    elide_lock_t *l = s;
    return l->is_locked(l->is);
}

/* execute and delegate: speculatively when the lock can be elided, else the
 * inner kind's own path (a delegation kind's queue, say). */
static BATON_RTM_FN int k_execute(void *s, baton_fn fn, void *ctx)
{
    elide_lock_t *l = s;
    if (baton_htm_mode() == BATON_HTM_NONE)
        return baton_execute(l->inner, fn, ctx);
    if (enter(l) == GOT_NONE)
        return baton_execute(l->inner, fn, ctx);
    baton_run_op(l, fn, ctx, NULL);
    return k_unlock(s);
}

static BATON_RTM_FN int k_delegate(void *s, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    elide_lock_t *l = s;
    if (baton_htm_mode() != BATON_HTM_NONE) {
        if (enter(l) != GOT_NONE) {
            /* The function sees a private copy, as on a delegation kind. */
            _Alignas(16) unsigned char copy[BATON_ARGS_MAX];
            if (size)
                memcpy(copy, args, size);
            baton_run_op(l, fn, copy, NULL);
            int rc = k_unlock(s);
            if (f)
                baton_future_complete_own(f, rc); /* ran in this call: nobody waits yet */
            return rc;
        }
    }
    return f ? baton_delegate_future(l->inner, fn, args, size, f) : baton_delegate(l->inner, fn, args, size);
}

/* Add l's elision counters to *out (relaxed loads: a snapshot). */
static void add_tx(const elide_lock_t *l, baton_stats_t *out)
{
    uint64_t commits = 0, aborts = 0;
    for (uint32_t i = 0; l->commits && i < l->nstripes; i++)
        commits += baton_load(&l->commits[i].n, memory_order_relaxed);
    for (unsigned c = 0; c < BATON_ABORT_CAUSES; c++) {
        uint64_t a = baton_load(&l->slow[c], memory_order_relaxed);
        out->tx_aborts[c] += a;
        aborts += a;
    }
    out->tx_commits += commits;
    out->tx_attempts += commits + aborts;
    out->tx_fallbacks += baton_load(&l->slow[SLOW_FALLBACKS], memory_order_relaxed);
    out->tx_skipped += baton_load(&l->slow[SLOW_SKIPPED], memory_order_relaxed);
}

static void k_stats(void *s, baton_stats_t *out)
{
    elide_lock_t *l = s;
    (void)baton_lock_stats(l->inner, out); /* the inner kind's own, if it keeps any */
    add_tx(l, out);
}

void baton_elision_totals(baton_stats_t *out)
{
    memset(out, 0, sizeof *out);
    baton_syslock_lock(&all_mu);
    for (unsigned c = 0; c < BATON_ABORT_CAUSES; c++)
        out->tx_aborts[c] = all_gone.tx_aborts[c];
    out->tx_attempts = all_gone.tx_attempts;
    out->tx_commits = all_gone.tx_commits;
    out->tx_fallbacks = all_gone.tx_fallbacks;
    out->tx_skipped = all_gone.tx_skipped;
    for (const elide_lock_t *l = all_head; l; l = l->next)
        add_tx(l, out);
    baton_syslock_unlock(&all_mu);
}

/* A child of fork() may create locks at once: the table's lock must not be
 * held by a thread that did not cross. */
static void all_prepare(void) { baton_syslock_lock(&all_mu); }
static void all_release(void) { baton_syslock_unlock(&all_mu); }
static void all_setup(void) { (void)pthread_atfork(all_prepare, all_release, all_release); }

static void all_insert(elide_lock_t *l)
{
    pthread_once(&all_once, all_setup);
    baton_syslock_lock(&all_mu);
    l->prev = NULL;
    l->next = all_head;
    if (all_head)
        all_head->prev = l;
    all_head = l;
    baton_syslock_unlock(&all_mu);
}

static void all_remove(elide_lock_t *l)
{
    baton_syslock_lock(&all_mu);
    add_tx(l, &all_gone);
    if (l->prev)
        l->prev->next = l->next;
    else
        all_head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    baton_syslock_unlock(&all_mu);
}

/* --- registry entry ------------------------------------------------------- */

enum { OPT_ADAPTIVE, OPT_BASE, OPT_NRETRIES, OPT_SLEEP, OPT_RETRIES, OPT_SKIP, OPT_STATS };

static const baton_option_desc_t elide_options[] = {
    [OPT_ADAPTIVE] = {"adaptive", 0, 1, 0, "policy: abort-cause aware retries and back-off (the default)"},
    [OPT_BASE] = {"base", 0, 1, 0, "policy: wait while busy, speculate again (bounded by retries)"},
    [OPT_NRETRIES] = {"nretries", 1, 10000, 0, "policy: lock after N aborts (0: not chosen)"},
    [OPT_SLEEP] = {"sleep", 0, 1, 0, "policy: as base, parking while the lock is busy"},
    [OPT_RETRIES] = {"retries", 1, 10000, 5, "adaptive, base, sleep: aborts before taking the lock"},
    [OPT_SKIP] = {"skip", 0, 1u << 20, 16,
                  "adaptive: acquisitions that skip elision after one that failed (doubles per "
                  "failure in a row, up to 64x)"},
    [OPT_STATS] = {"stats", 0, 1, 1, "count commits (per-thread stripes; aborts are always counted)"},
};

static uint32_t stripes_for_machine(void)
{
    long cpus = baton_topo_online();
    uint32_t n = 1;
    while (n < STRIPES_MAX && (long)n < cpus)
        n <<= 1;
    return n;
}

static int k_init(void *s, const baton_opts_t *o)
{
    elide_lock_t *l = s;
    char inner[160];
    int rc = baton_opts_inner(o, inner, sizeof inner);
    if (rc)
        return rc;
    int chosen = (o->value[OPT_ADAPTIVE] != 0) + (o->value[OPT_BASE] != 0) + (o->value[OPT_NRETRIES] != 0) +
                 (o->value[OPT_SLEEP] != 0);
    if (chosen > 1)
        return baton_fail(EINVAL, "elide(%s): choose one policy of adaptive, base, nretries=N, sleep", inner);
    l->inner = baton_lock_new(inner);
    if (!l->inner)
        return errno ? errno : EINVAL; /* the message names what was wrong */
    const baton_kind_t *ik = baton_lock_ops(l->inner);
    if (ik == &baton_kind_elide || !ik->is_locked) {
        baton_lock_free(l->inner);
        return baton_fail(EINVAL, "elide(%s): %s", inner,
                          ik == &baton_kind_elide
                              ? "already elided"
                              : "this kind has no lock word a transaction could watch; elide wraps "
                                "kinds with lock/unlock (mutex, delegation and readers-writer kinds)");
    }
    l->is = baton_lock_state(l->inner);
    l->ik = ik;
    l->direct = !baton_lock_checks(l->inner) && ik->lock && ik->unlock && ik->trylock;
    l->is_locked = ik->is_locked;
    l->rw = (ik->caps & BATON_CAP_RW) != 0 && ik->rlock != NULL;
    l->has_readers = l->rw ? ik->has_readers : NULL;
    l->policy = o->value[OPT_BASE]       ? POLICY_BASE
                : o->value[OPT_NRETRIES] ? POLICY_NRETRIES
                : o->value[OPT_SLEEP]    ? POLICY_SLEEP
                                         : POLICY_ADAPTIVE;
    l->retries = (uint32_t)o->value[OPT_RETRIES];
    l->nretries = (uint32_t)o->value[OPT_NRETRIES];
    l->skip_base = (uint32_t)o->value[OPT_SKIP];
    (void)baton_wait_init(&l->busy_wait, l->policy == POLICY_SLEEP ? BATON_WAIT_PARK : BATON_WAIT_SPINPARK);
    atomic_init(&l->gate, 0u);
    atomic_init(&l->owner, (uintptr_t)0);
    atomic_init(&l->skip, 0u);
    atomic_init(&l->streak, 0u);
    for (unsigned i = 0; i < NSLOW; i++)
        atomic_init(&l->slow[i], 0u);
    l->commits = NULL;
    l->nstripes = 0;
    if (o->value[OPT_STATS]) {
        l->nstripes = stripes_for_machine();
        l->commits = aligned_alloc(BATON_CACHELINE, l->nstripes * sizeof(stripe_t));
        if (!l->commits) {
            baton_lock_free(l->inner);
            return baton_fail(ENOMEM, "elide(%s): out of memory for its counters", inner);
        }
        for (uint32_t i = 0; i < l->nstripes; i++)
            atomic_init(&l->commits[i].n, 0u);
    }
    baton_htm_setup();
    all_insert(l);
    return 0;
}

/* What k_init allocates: the inner lock and the commit stripes. */
static size_t k_footprint(const baton_opts_t *o)
{
    char inner[160];
    if (baton_opts_inner(o, inner, sizeof inner) != 0)
        return 0; /* init refuses it */
    size_t stripes = o->value[OPT_STATS] ? stripes_for_machine() * sizeof(stripe_t) : 0;
    return baton_spec_footprint(inner) + (stripes ? baton_alloc_cost(BATON_CACHELINE, stripes) : 0);
}

static int k_destroy(void *s)
{
    elide_lock_t *l = s;
    int rc = baton_lock_free(l->inner);
    if (rc == 0) {
        all_remove(l);
        free(l->commits);
    }
    return rc;
}

const baton_kind_t baton_kind_elide = {
    .name = "elide",
    .summary = "elide(<kind>): hardware lock elision (Intel RTM) over any kind with a lock word; "
               "exactly <kind> where RTM is unusable",
    /* Not BATON_CAP_RW: readers share the lock only when the inner kind is a
     * readers-writer kind (elide(rw(mcs)), elide(mrqd)); over a mutex kind
     * rlock is lock, as for every mutex kind. */
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WRAPPER |
            BATON_CAP_TIMED,
    .waits = BATON_WAITS_NONE,
    .default_wait = BATON_NO_WAIT,
    .size = sizeof(elide_lock_t),
    .align = _Alignof(elide_lock_t),
    .options = elide_options,
    .noptions = sizeof elide_options / sizeof elide_options[0],
    .init = k_init,
    .destroy = k_destroy,
    .lock = k_lock,
    .trylock = k_trylock,
    .unlock = k_unlock,
    .release = k_release,
    .is_locked = k_is_locked,
    .rlock = k_rlock,
    .runlock = k_runlock,
    .tryrlock = k_tryrlock,
    .timedlock = k_timedlock,
    .timedrlock = k_timedrlock,
    .timed = k_timed,
    .execute = k_execute,
    .delegate = k_delegate,
    .stats = k_stats,
    .wrapper = true,
    .footprint = k_footprint,
};
