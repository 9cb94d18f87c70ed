/* server.c - the `server` kind: lock servers in the spirit of pLock.  A
 * dedicated server thread owns each lock's state; clients ask it for the
 * lock by message and wait for the grant (server.h: the transport and the
 * message accounting; basic.c, chain.c, hier.c: the protocols).
 *
 * One kind, four protocols, chosen by switches (the spec grammar ends a
 * kind's name at ':', so the names "server:chain" & co. cannot be kinds):
 *   server                  basic: request, grant, release       (basic.c)
 *   server,chain            grants carry the waiting list        (chain.c)
 *   server,hier             local servers per core group         (hier.c)
 *   server,hier,chain       both (hier+chain)
 * with server=K (the top-level server, shared with rcl's server=K),
 * groups=N (hier: 0 = NUMA nodes or cache groups, as hqd), local_bound=N
 * (hier: consecutive local grants while another group waits, default 64,
 * reason in hier.c), cpu= and idle_us= (the top-level server, as rcl), and
 * keep_us=T (leases, keep.c: a holder keeps the lock across its unlock
 * until the server takes it back, T us after another thread asks; default
 * 0, the paper's protocols; 100 is what makes a lock server hold up when
 * threads outnumber CPUs, see docs/results.md).
 *
 * execute and delegate are lock, run, unlock (the dynamic API's own path):
 * shipping the operation to the server is rcl's job, on the same thread
 * if asked (server=K); a lock server is for code that keeps its critical
 * sections in the client.  Owners are tracked (a thread-local set of held
 * locks): unlock by a thread that does not hold the lock gives EPERM; the
 * release op (a NORMAL pthread mutex's unlock) releases it for the holder.
 *
 * Freeing: the lock's server(s) confirm by message that the lock is not
 * granted and nobody waits (EBUSY otherwise, nothing freed); a server
 * stops with its last lock.
 */
#include "server.h"
#include "../base/error.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BOUND 64
#define KEEP_MAX 4 /* leases one thread keeps at most */

enum { OPT_SERVER, OPT_CHAIN, OPT_HIER, OPT_GROUPS, OPT_BOUND, OPT_CPU, OPT_IDLE, OPT_KEEP };

static lk_inst_t *my_inst(srv_lock_t *k) { return k->hier ? &hier_mine(k)->in : &k->inst; }

/* A server lost in a fork cannot be started again (no thread can be
 * created): nothing can grant the lock, and lock() cannot fail. */
static void ready_or_die(srt_server_t *s)
{
    if (BATON_UNLIKELY(srt_ready(s) != 0)) {
        fprintf(stderr, "baton: lock server: %s\n", baton_last_error());
        abort();
    }
}

/* --- holds, and releases by threads that do not hold the lock -------------
 *
 * A NORMAL pthread mutex may be unlocked by a thread that did not lock it
 * (the interposer's release op).  The holder's thread-local entry (where
 * to release, the rest of a chain, its lease) is out of that thread's
 * reach, so each hold also leaves in the lock what a release needs, and a
 * number (srv_lock_t.hold): the entry of a hold that another thread
 * released no longer matches it, and is dropped where it is found. */

/* A new hold of k, described by e (not cached): number it and record it.
 * Any entry of k the thread has left is of a hold another thread released
 * (the lock is not recursive: we could not have got it otherwise). */
static void begin_hold(srv_lock_t *k, lk_held_t *e)
{
    lk_held_t stale;
    while (lk_held_take(k, false, &stale)) {
    }
    /* Relaxed: only the holder writes these (or a thread releasing for it,
     * which synchronised with it first); the grant we acquired orders them
     * after the previous hold's; others only compare `hold` with the
     * number their own entry recorded. */
    const uint64_t h = baton_load(&k->hold, memory_order_relaxed) + 1u; /* odd: held */
    baton_store(&k->hold_inst, e->inst, memory_order_relaxed);
    baton_store(&k->hold_rest, e->rest, memory_order_relaxed);
    baton_store(&k->hold, h, memory_order_relaxed);
    e->hold = h;
}

/* The calling thread's entry of the hold k is in, taken out of its set;
 * entries of holds that another thread released are dropped.  Relaxed:
 * our own store of `hold` is the one we compare with, unless another
 * thread's release (or a later hold) replaced it. */
static bool take_mine(srv_lock_t *k, lk_held_t *e)
{
    while (lk_held_take(k, false, e))
        if (e->hold == baton_load(&k->hold, memory_order_relaxed))
            return true;
    return false;
}

/* Does the calling thread hold k? */
static bool held_by_me(srv_lock_t *k)
{
    lk_held_t e;
    if (!take_mine(k, &e))
        return false;
    (void)lk_held_push(&e); /* cannot fail: the place it had */
    return true;
}

/* Hand the lock on from a hold that ended: to the next waiter of a chain,
 * else back to its home. */
static void release_to(srv_lock_t *k, lk_inst_t *in, srt_waiter_t *rest)
{
    if (rest && chain_pass(rest, &k->wait))
        return;
    lk_release_home(in);
}

/* Ask for the lock; returns the answer. */
static uint32_t acquire(srv_lock_t *k, uint32_t op)
{
    lk_held_t e;
    /* A lease this thread keeps (keep.c): take the lock again without a
     * message, unless the home took it back meanwhile.  Pushing the entry
     * back cannot fail: it takes the place the cached one had. */
    if (k->keep && lk_held_take(k, true, &e) && keep_relock(e.inst, e.lease)) {
        e.cached = 0;
        begin_hold(k, &e);
        (void)lk_held_push(&e);
        return SRT_LEASED;
    }
    lk_inst_t *in = my_inst(k);
    ready_or_die(in->home);
    srt_mailbox_t *mb = lk_post(in->home, in, op);
    const uint32_t v = lk_wait(mb, &k->wait);
    if (v == SRT_REFUSED)
        return v;
    /* A chained grant handed us the waiters behind us: read them now,
     * before any request of ours can queue our link elsewhere. */
    e = (lk_held_t){.lock = k,
                    .inst = in,
                    .rest = v == SRT_CHAINED ? chain_rest(&mb->w) : NULL,
                    .lease = v == SRT_LEASED ? keep_word(in) : 0};
    begin_hold(k, &e);
    if (BATON_UNLIKELY(!lk_held_push(&e))) {
        fprintf(stderr, "baton: lock server: out of memory for the held-lock set\n");
        abort();
    }
    return v;
}

static void k_lock(void *st) { (void)acquire(st, LK_LOCK); }

/* How long a trylock of a hierarchical lock asks again while no thread
 * holds the lock (k_trylock()). */
#define TRY_AGAIN_NS 20000000ull

static int k_trylock(void *st)
{
    srv_lock_t *k = st;
    uint64_t until = 0;
    for (;;) {
        if (acquire(k, LK_TRY) != SRT_REFUSED)
            return 0;
        /* Refused.  In a hierarchy a release reaches the global server
         * through the releaser's group's local server, after the unlock has
         * returned: a trylock from another group that comes after the unlock
         * (the program ordered them) can find the global lock still held by
         * the releaser's group.  glibc's trylock fails only on a held lock,
         * so while no thread holds it (`hold` even; relaxed: the unlock
         * stored it before its release, and our trylock comes after), the
         * refusal was such a release in flight, or a grant whose holder has
         * not numbered its hold yet: ask again, for a bounded time (the
         * local server runs, or is woken by the release). */
        if (!k->hier || (baton_load(&k->hold, memory_order_relaxed) & 1u) != 0)
            return EBUSY;
        const uint64_t now = baton_now_ns();
        if (until == 0)
            until = now + TRY_AGAIN_NS;
        else if (now >= until)
            return EBUSY;
        sched_yield();
    }
}

/* The holder's unlock of the hold e. */
static int unlock_mine(srv_lock_t *k, lk_held_t *e)
{
    /* The hold ends before the lock leaves us (another thread may take it
     * at once, and begin its own).  Relaxed: see begin_hold(). */
    baton_store(&k->hold, e->hold + 1u, memory_order_relaxed);
    /* Keep the lease; a thread keeps KEEP_MAX at most (every lock call
     * searches them), and forgets its oldest for a new one.  The thread
     * never touches a forgotten lease again (another thread may have
     * freed its lock); it stays kept until the home takes it back, when
     * someone asks or when it expires (keep.c). */
    if (e->lease && keep_unlock(e->inst, &e->lease)) {
        if (lk_held_cached() >= KEEP_MAX)
            lk_held_forget_oldest();
        e->cached = 1; /* cannot fail: the place it had */
        (void)lk_held_push(e);
        return 0;
    }
    release_to(k, e->inst, e->rest);
    return 0;
}

static int k_unlock(void *st)
{
    srv_lock_t *k = st;
    lk_held_t e;
    if (!take_mine(k, &e))
        return EPERM;
    return unlock_mine(k, &e);
}

/* Whatever thread calls: the holder unlocks as above; another thread ends
 * the hold the lock records and releases it where the holder would have,
 * without keeping a lease (the home ends it when the release comes). */
static int k_release(void *st)
{
    srv_lock_t *k = st;
    lk_held_t e;
    if (take_mine(k, &e))
        return unlock_mine(k, &e);
    /* Relaxed: the caller synchronised with the holder (a join, a lock of
     * its own), which orders the hold's record before these loads. */
    const uint64_t h = baton_load(&k->hold, memory_order_relaxed);
    if (!(h & 1u))
        return 0; /* not held */
    lk_inst_t *in = baton_load(&k->hold_inst, memory_order_relaxed);
    srt_waiter_t *rest = baton_load(&k->hold_rest, memory_order_relaxed);
    baton_store(&k->hold, h + 1u, memory_order_relaxed); /* see begin_hold() */
    release_to(k, in, rest);
    return 0;
}

static int k_is_locked(void *st)
{
    srv_lock_t *k = st;
    /* Relaxed: a racy look (the holder always sees its own lock held).  A
     * lease kept but not in use is not held. */
    return held_by_me(k) || ((baton_load(&k->inst.hint, memory_order_relaxed) & LK_HINT_HELD) != 0 &&
                             (baton_load(&k->inst.lease, memory_order_relaxed) & LS_STATE) != LS_CACHED);
}

/* Is the lock idle at this instance's home?  (0, or EBUSY.) */
static int ask_free(srv_lock_t *k, lk_inst_t *in)
{
    /* A server that cannot be started again after a fork runs nothing
     * that could touch the lock. */
    if (srt_ready(in->home) != 0)
        return 0;
    srt_mailbox_t *mb = lk_post(in->home, in, LK_FREE);
    return lk_wait(mb, &k->wait) == SRT_GRANTED ? 0 : EBUSY;
}

static int k_destroy(void *st)
{
    srv_lock_t *k = st;
    if (held_by_me(k))
        return EBUSY;
    /* A lease this thread keeps: hand the lock back first (the home takes
     * any other thread's cached lease back itself). */
    lk_held_t e;
    if (k->keep && lk_held_take(k, true, &e) && keep_relock(e.inst, e.lease))
        lk_release_home(e.inst);
    /* The groups first: each one hands the lock back to the global server
     * before it answers, if its last client's release was still pending. */
    for (uint32_t g = 0; k->hier && g < k->ngroups; g++)
        if (ask_free(k, &k->groups[g].in) != 0)
            return EBUSY;
    if (ask_free(k, &k->inst) != 0)
        return EBUSY;
    if (BATON_UNLIKELY(srt_self() == k->server)) {
        /* Freed by an operation shipped to its own server (rcl): joining
         * the server from its own thread is impossible, so its last lock
         * gives EBUSY, as rcl's does.  A hierarchical lock always does:
         * its local servers hold references to this server, and stopping
         * them could drop the last one from here. */
        if (k->hier || srt_put_nonlast(k->server) != 0)
            return EBUSY;
        return 0;
    }
    if (k->hier)
        hier_fini(k);
    srt_put(k->server);
    return 0;
}

static int k_init(void *st, const baton_opts_t *o)
{
    srv_lock_t *k = st;
    const bool chain = o->value[OPT_CHAIN] != 0, hier = o->value[OPT_HIER] != 0;
    atomic_init(&k->hold, (uint64_t)0);
    atomic_init(&k->hold_inst, NULL);
    atomic_init(&k->hold_rest, NULL);
    if (!hier && (o->value[OPT_GROUPS] != 0 || o->value[OPT_BOUND] != DEFAULT_BOUND))
        return baton_fail(EINVAL, "server: groups= and local_bound= apply to the hierarchical "
                                  "lock only; add hier (e.g. \"server,hier,groups=2\")");
    if (hier && o->value[OPT_KEEP] != 0)
        return baton_fail(EINVAL, "server: keep_us= does not apply to the hierarchical lock (its "
                                  "local servers keep the lock in their group); drop hier or "
                                  "keep_us");
    lk_engine_init();
    k->wait = o->wait;
    /* The server grants one waiter at a time: a client that parked early
     * holds up the clients behind it for its wake-up (wait.h:
     * BATON_WAIT_FULL_SPIN; bench server on 16 cores, docs/results.md). */
    k->wait.flags |= BATON_WAIT_FULL_SPIN;
    k->hier = hier;
    int rc = srt_get("server", (int)o->value[OPT_SERVER], (unsigned)o->value[OPT_CPU], o->value[OPT_IDLE],
                     &k->server);
    if (rc != 0)
        return rc;
    lk_inst_init(&k->inst, k->server, &k->wait, chain, false, hier ? BATON_ROLE_LOCAL : BATON_ROLE_CLIENT,
                 BATON_ROLE_GLOBAL);
    k->keep = o->value[OPT_KEEP] != 0;
    k->inst.keep_ns = o->value[OPT_KEEP] * 1000u;
    if (hier) {
        rc = hier_init(k, o, chain, (uint32_t)o->value[OPT_BOUND], o->value[OPT_IDLE],
                       (int)o->value[OPT_GROUPS]);
        if (rc != 0) {
            srt_put(k->server);
            return rc;
        }
    }
    return 0;
}

static void add_counts(baton_stats_t *out, lk_inst_t *in)
{
    for (int r = 0; r < BATON_ROLES; r++) {
        /* Relaxed: a racy snapshot of counters their home writes. */
        out->msg_sent[r] += baton_load(&in->sent[r], memory_order_relaxed);
        out->msg_received[r] += baton_load(&in->recv[r], memory_order_relaxed);
    }
}

static void k_stats(void *st, baton_stats_t *out)
{
    srv_lock_t *k = st;
    add_counts(out, &k->inst);
    for (uint32_t g = 0; k->hier && g < k->ngroups; g++)
        add_counts(out, &k->groups[g].in);
}

static size_t k_footprint(const baton_opts_t *o)
{
    return o->value[OPT_HIER] ? hier_footprint(o, (int)o->value[OPT_GROUPS]) : 0;
}

static const baton_option_desc_t server_options[] = {
    [OPT_SERVER] = {"server", 0, SRT_SERVERS - 1, 0,
                    "the server thread that holds the lock (shared with rcl,server=K)"},
    [OPT_CHAIN] = {"chain", 0, 1, 0, "1: grants carry the waiting list; holders pass the lock on"},
    [OPT_HIER] = {"hier", 0, 1, 0, "1: a local server per core group caches the lock"},
    [OPT_GROUPS] = {"groups", 0, 1024, 0, "hier: core groups (0: NUMA nodes, else shared caches)"},
    [OPT_BOUND] = {"local_bound", 1, 1000000, DEFAULT_BOUND,
                   "hier: local grants in a row while another group waits"},
    [OPT_CPU] = {"cpu", 0, SRT_CPU_AUTO, SRT_CPU_AUTO,
                 "CPU the server is pinned to; 1023: the server-th CPU from the end of the mask"},
    [OPT_IDLE] = {"idle_us", 1, 1000000, 100, "how long an idle server scans before it parks"},
    [OPT_KEEP] = {"keep_us", 0, 1000000, 0,
                  "leases: a holder keeps the lock across its unlock until the server takes it "
                  "back, this long after another thread asks (0: no leases)"},
};

const baton_kind_t baton_kind_server = {
    .name = "server",
    .summary = "lock server: a server thread grants the lock by messages (,chain: grants carry "
               "the waiting list; ,hier: local servers per core group; keep_us=100: leases, "
               "for more threads than CPUs)",
    /* Not BATON_CAP_NOCOLLAPSE: the default (no leases) hands the lock over
     * in FIFO order and collapses when threads outnumber CPUs. */
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_SERVER | BATON_CAP_OWNER,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(srv_lock_t),
    .align = _Alignof(srv_lock_t),
    .options = server_options,
    .noptions = sizeof server_options / sizeof server_options[0],
    .init = k_init,
    .destroy = k_destroy,
    .lock = k_lock,
    .trylock = k_trylock,
    .unlock = k_unlock,
    .release = k_release,
    .is_locked = k_is_locked,
    .stats = k_stats,
    .footprint = k_footprint,
};
