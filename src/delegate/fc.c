/* fc.c - flat combining: the `fc` kind.
 *
 * Flat combining (Hendler, Incze, Shavit, Tzafrir, "Flat combining and the
 * synchronization-parallelism tradeoff", SPAA 2010), as the queue
 * delegation evaluation configures it.
 *
 * State: a combiner lock (a 32-bit word taken with CAS from 0, a waited-on
 * word so that lock() callers can park on it) and a publication list of
 * records, one per (thread, lock), found through slots.h: a reclist.h list,
 * so records are only ever added, at its head; a thread that exits marks
 * its record free and a later thread takes it over, so the list is as long
 * as the largest number of threads that used the lock at once.  (The
 * original algorithm also unlinks records left idle for long; ours stay,
 * since the list never outgrows the threads that were live together.)
 *
 * An operation: write fn, its argument (ctx, or an inline copy of up to
 * BATON_ARGS_MAX bytes) and the future into the record, then publish
 * FC_PENDING with a release store.  Then, until the record reads FC_DONE:
 * if the combiner lock is free, take it and combine; otherwise wait by the
 * lock's policy.  A combiner runs its own request, then traverses the list
 * up to `num_rep` times running every pending request; it stops after a
 * traversal that ran fewer than `rep_threshold` requests, or once it has
 * run `help_limit` in this session (the queue delegation evaluation's
 * addition, so that no combiner serves forever).
 *
 * lock/trylock/unlock take the combiner lock itself: the holder runs no
 * one's requests, and waiters keep waiting until a combiner comes.  There is
 * no detached mode: execute and delegate both wait until their operation has
 * run (the caps lack BATON_CAP_DETACH).
 *
 * Options:
 *   num_rep=<n>        traversals per combining session (default 4096)
 *   rep_threshold=<n>  stop after a traversal that ran fewer (default 1)
 *   help_limit=<n>     operations per session at most (default 4096)
 * The wait policy (default spinpark) is how waiters and lock() wait; a
 * waiter waits as a helper wait (wait_internal.h: under spinpark it yields
 * where spinpark would spin, since the combiner may need its CPU).
 */
#include "../base/cs.h"
#include "../base/reclist.h"
#include "../base/slots.h"
#include "../base/kind.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <string.h>

/* Record states (the waited-on word). */
enum { FC_IDLE = 0, FC_PENDING = 1, FC_DONE = 2 };

/* How long a waiter parks before it looks at the combiner lock again (see
 * fc_wait()). */
#define FC_PARK_TIMEOUT_NS 100000u

typedef struct fc_rec {
    baton_rec_t rec;        /* first: the owner flag and the list link (reclist.h) */
    _Atomic uint32_t state; /* FC_IDLE, FC_PENDING, FC_DONE (+ parked bit) */
    /* The request: written by the owner while the state is not pending,
     * read by a combiner only between seeing FC_PENDING and storing FC_DONE. */
    baton_fn fn;
    void *arg; /* ctx, or args below */
    baton_future_t *f;
    _Alignas(16) unsigned char args[BATON_ARGS_MAX];
} __attribute__((aligned(BATON_CACHELINE))) fc_rec_t;

_Static_assert(sizeof(fc_rec_t) == BATON_CACHELINE, "a publication record is one line");
_Static_assert(offsetof(fc_rec_t, rec) == 0, "the reclist header comes first");

typedef struct fc_lock {
    /* Written by whoever takes or drops the combiner role, and the counters
     * only by the combiner: one line. */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t combiner; /* 0 free, 1 held (+ parked bit) */
    _Atomic uint64_t sessions;
    _Atomic uint64_t ops;
    /* Read-mostly. */
    _Alignas(BATON_CACHELINE) baton_reclist_t recs;
    baton_wait_t wait;
    uint32_t num_rep;
    uint32_t rep_threshold;
    uint32_t help_limit;
    baton_slot_owner_t slots;
} fc_lock_t;

static fc_lock_t *lock_of(baton_slot_owner_t *o)
{
    return (fc_lock_t *)(void *)((char *)o - offsetof(fc_lock_t, slots));
}

/* --- records ----------------------------------------------------------------- */

/* The list's records are fc_rec_t's, whose header comes first. */
static fc_rec_t *fc_first(fc_lock_t *l) { return (fc_rec_t *)(void *)baton_reclist_first(&l->recs); }
static fc_rec_t *fc_next(const fc_rec_t *r) { return (fc_rec_t *)(void *)baton_reclist_next(&r->rec); }

/* A thread's first operation on the lock: take over a record whose thread
 * has exited, or push a new one.  (On its exit, baton_reclist_release()
 * frees it for the next thread: its last operation has run, since execute
 * and delegate both wait for that, so nothing in it is pending and it can
 * go on as it is.) */
static void *fc_make(baton_slot_owner_t *o)
{
    fc_lock_t *l = lock_of(o);
    baton_rec_t *old = baton_reclist_adopt(&l->recs);
    if (old != NULL)
        return old;
    fc_rec_t *r = baton_reclist_new(sizeof *r, "a flat combining record");
    atomic_init(&r->state, FC_IDLE);
    baton_reclist_push(&l->recs, &r->rec);
    return r;
}

/* --- combining ------------------------------------------------------------------ */

/* Run r's request.  The combiner is the lock's serial path: a parked
 * owner's wake is owed to o and paid once the combiner lock is dropped
 * (wait_internal.h). */
static void fc_run(fc_lock_t *l, fc_rec_t *r, baton_owed_t *o)
{
    baton_run_op_owed(l, r->fn, r->arg, r->f, o);
    /* Release (inside): pairs with the owner's acquire in fc_wait(), so the
     * operation's effects are visible when it returns.  After this the
     * combiner does not touch the request fields again. */
    baton_wait_store_owed(&l->wait, &r->state, FC_DONE, o);
}

static bool fc_pending(fc_rec_t *r)
{
    /* Acquire pairs with the owner's release store of FC_PENDING: the
     * request fields are visible. */
    return (baton_load(&r->state, memory_order_acquire) & ~BATON_WAIT_PARKED) == FC_PENDING;
}

/* One combining session; the caller holds the combiner lock. */
static void fc_combine(fc_lock_t *l, fc_rec_t *mine, baton_owed_t *o)
{
    uint64_t done = 0;
    if (fc_pending(mine)) {
        fc_run(l, mine, o);
        done = 1;
    }
    for (uint32_t pass = 0; pass < l->num_rep && done < l->help_limit; pass++) {
        uint32_t ran = 0;
        /* fc_first(): an acquire load, pairing with the push of each record. */
        for (fc_rec_t *r = fc_first(l); r != NULL && done < l->help_limit; r = fc_next(r)) {
            if (!fc_pending(r))
                continue;
            fc_run(l, r, o);
            ran++;
            done++;
        }
        if (ran < l->rep_threshold)
            break;
    }
    /* Relaxed: only the combiner writes the counters (the combiner lock
     * orders successive combiners); readers take a racy snapshot. */
    baton_store(&l->sessions, baton_load(&l->sessions, memory_order_relaxed) + 1, memory_order_relaxed);
    baton_store(&l->ops, baton_load(&l->ops, memory_order_relaxed) + done, memory_order_relaxed);
}

static bool fc_try_combiner(fc_lock_t *l)
{
    uint32_t expected = 0;
    /* Acquire pairs with the release in fc_drop_combiner(): the previous
     * combiner's (or lock holder's) critical sections happen before ours. */
    return baton_cas(&l->combiner, &expected, 1u, memory_order_acquire, memory_order_relaxed);
}

static void fc_drop_combiner(fc_lock_t *l)
{
    /* Release (inside): pairs with the acquire CAS of fc_try_combiner();
     * wakes lock() callers parked on the word. */
    baton_wait_store(&l->wait, &l->combiner, 0u);
}

/* Publish the request already written into r and wait until it has run,
 * combining whenever the combiner lock is free. */
static void fc_wait(fc_lock_t *l, fc_rec_t *r)
{
    /* Release: pairs with the combiner's acquire in fc_pending(), which
     * then sees fn, arg, f and the argument copy. */
    baton_store(&r->state, FC_PENDING, memory_order_release);
    /* A helper wait (wait_internal.h): under spinpark we yield where
     * spinpark would spin, since the combiner may need our CPU. */
    baton_helper_waiter_t s;
    baton_helper_waiter_init(&s, &l->wait);
    for (;;) {
        /* Acquire pairs with the release in fc_run(). */
        uint32_t st = baton_load(&r->state, memory_order_acquire);
        if ((st & ~BATON_WAIT_PARKED) == FC_DONE)
            return;
        /* Relaxed look; the CAS in fc_try_combiner() orders. */
        if (baton_load(&l->combiner, memory_order_relaxed) == 0 && fc_try_combiner(l)) {
            baton_owed_t owed;
            baton_owed_init(&owed);
            fc_combine(l, r, &owed);
            fc_drop_combiner(l);
            baton_wake_owed(&owed); /* after the drop: off the serial path */
            continue;               /* a session runs its combiner's request first: ours is done */
        }
        if (baton_helper_pause(&s, &r->state, st))
            continue;
        /* Park, but only for a while.  Nobody wakes us when the combiner
         * lock is released: a combiner may finish its last traversal just
         * before our FC_PENDING lands, see it still idle, and drop the lock
         * after our look above found it held.  Then no combiner will ever
         * run our request, and we must notice the free lock ourselves.  The
         * timeout bounds that stall; a combiner that does run our request
         * wakes us at once through the parked bit. */
        if (!(st & BATON_WAIT_PARKED) &&
            /* Relaxed: the bit publishes nothing; the combiner's exchange
             * reads it in modification order, and if it came first this CAS
             * fails and we re-read. */
            !baton_cas(&r->state, &st, st | BATON_WAIT_PARKED, memory_order_relaxed, memory_order_relaxed))
            continue;
        baton_park_timeout(&r->state, st | BATON_WAIT_PARKED, FC_PARK_TIMEOUT_NS);
    }
}

static int fc_execute(void *state, baton_fn fn, void *ctx)
{
    fc_lock_t *l = state;
    fc_rec_t *r = baton_slot_get(&l->slots);
    r->fn = fn;
    r->arg = ctx;
    r->f = NULL;
    fc_wait(l, r);
    return 0;
}

static int fc_delegate(void *state, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    fc_lock_t *l = state;
    fc_rec_t *r = baton_slot_get(&l->slots);
    if (size)
        memcpy(r->args, args, size);
    r->fn = fn;
    r->arg = r->args;
    r->f = f;
    fc_wait(l, r);
    return 0;
}

/* --- lock interface: the combiner lock itself ------------------------------------- */

static void fc_lock(void *state)
{
    fc_lock_t *l = state;
    while (!fc_try_combiner(l))
        /* Acquire inside (the retried CAS orders anyway); parks under
         * parking policies, woken by fc_drop_combiner(). */
        (void)baton_wait_while_eq(&l->wait, &l->combiner, 1u);
}

/* The combiner lock until d: the same wait, woken by fc_drop_combiner(). */
static int fc_timedlock(void *state, const baton_deadline_t *d)
{
    fc_lock_t *l = state;
    uint32_t seen;
    while (!fc_try_combiner(l))
        /* Acquire inside, as in fc_lock(); the retried CAS decides. */
        if (baton_wait_while_eq_until(&l->wait, &l->combiner, 1u, d, &seen) == ETIMEDOUT)
            return fc_try_combiner(l) ? 0 : ETIMEDOUT;
    return 0;
}

static int fc_trylock(void *state)
{
    fc_lock_t *l = state;
    /* Relaxed look first, so a busy lock's line is not taken exclusive. */
    if (baton_load(&l->combiner, memory_order_relaxed) != 0 || !fc_try_combiner(l))
        return EBUSY;
    return 0;
}

static int fc_unlock(void *state)
{
    fc_drop_combiner(state);
    return 0;
}

static int fc_is_locked(void *state)
{
    fc_lock_t *l = state;
    /* Relaxed: a snapshot. */
    return baton_load(&l->combiner, memory_order_relaxed) != 0;
}

/* --- lifecycle ------------------------------------------------------------------- */

static int fc_init(void *state, const baton_opts_t *o)
{
    fc_lock_t *l = state;
    atomic_init(&l->combiner, 0u);
    atomic_init(&l->sessions, 0u);
    atomic_init(&l->ops, 0u);
    baton_reclist_init(&l->recs);
    l->wait = o->wait;
    l->num_rep = (uint32_t)o->value[0];
    l->rep_threshold = (uint32_t)o->value[1];
    l->help_limit = (uint32_t)o->value[2];
    l->slots.make = fc_make;
    l->slots.release = baton_reclist_release;
    return baton_slot_owner_register(&l->slots);
}

/* What fc_init allocates: the live-owner entry (records come per thread,
 * on its first operation). */
static size_t fc_footprint(const baton_opts_t *o)
{
    (void)o;
    return baton_slot_owner_footprint();
}

static int fc_destroy(void *state)
{
    fc_lock_t *l = state;
    if (!fc_try_combiner(l))
        return EBUSY;
    /* No thread can have a request pending here (each waits for its own),
     * but should one be, running it is the only safe way out. */
    baton_owed_t owed;
    baton_owed_init(&owed);
    for (fc_rec_t *r = fc_first(l); r != NULL; r = fc_next(r))
        if (fc_pending(r))
            fc_run(l, r, &owed);
    baton_wake_owed(&owed);
    /* After this no exiting thread releases one of our records. */
    baton_slot_owner_unregister(&l->slots);
    baton_reclist_free(&l->recs);
    return 0;
}

static void fc_stats(void *state, baton_stats_t *out)
{
    fc_lock_t *l = state;
    /* Relaxed: a racy snapshot, as baton_lock_stats() documents. */
    out->help_sessions = baton_load(&l->sessions, memory_order_relaxed);
    out->helped_ops = baton_load(&l->ops, memory_order_relaxed);
}

/* --- registry entry ------------------------------------------------------------- */

static const baton_option_desc_t fc_options[] = {
    {"num_rep", 1, 1u << 20, 4096, "traversals of the publication list per combining session"},
    {"rep_threshold", 1, 1u << 20, 1, "end the session after a traversal that ran fewer requests"},
    {"help_limit", 1, 1u << 24, 4096, "requests one combining session runs at most"},
};

const baton_kind_t baton_kind_fc = {
    .name = "fc",
    .summary = "flat combining: a combiner runs the requests published in per-thread records",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(fc_lock_t),
    .align = _Alignof(fc_lock_t),
    .options = fc_options,
    .noptions = sizeof fc_options / sizeof fc_options[0],
    .init = fc_init,
    .destroy = fc_destroy,
    .lock = fc_lock,
    .trylock = fc_trylock,
    .timedlock = fc_timedlock,
    /* The unlock needs no owner (the combiner word), and leaves a free lock
     * free. */
    .unlock = fc_unlock,
    .release = fc_unlock,
    .is_locked = fc_is_locked,
    .execute = fc_execute,
    .delegate = fc_delegate,
    .stats = fc_stats,
    .footprint = fc_footprint,
};
