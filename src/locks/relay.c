/* relay.c - the relay lock: queueing, the head's poll, handoff.  The state
 * and the design argument are in baton/relay.h.
 *
 * Node states (the waited-on word of each queued thread):
 *   RELAY_QUEUED   behind the head; waits by the lock's policy (may park)
 *   RELAY_HEAD     at the head: polls the lock word
 *   RELAY_GRANTED  the owner handed the lock over (after `handoff`)
 *
 * Transitions of (word, handoff):
 *   (0, 0)     -> (self, 0)   acquire: fast path, an arrival's look, or the
 *                             head's poll of an idle lock
 *   (self, 0)  -> (0, 0)      release
 *   (o, 0)     -> (head, 0)   the owner's unlock after its tenure (a slice):
 *                             hand over, then GRANTED
 *   (o, 0)     -> (o, 1)      the head, after RELAY_DEMAND_SLICES slices
 *   (o, 1)     -> (head, 0)   the owner's next unlock: hand over, GRANTED
 *   (0, 1)     -> (head, 0)   the head takes a lock whose owner released
 *                             without seeing its demand (the crossing)
 *   (o, 1)     -> (o, 0)      a timed head whose deadline passed leaves
 *
 * Time-outs (baton_relay_timedlock()) follow runner.c: a timed waiter
 * queues and waits as lock()'s do.  When its deadline passes it takes a
 * free lock if it can, else claims its node with a CAS to RELAY_ABANDONED
 * (a grant that came first wins) and:
 *   - behind the head, returns; the next promotion (an exchange under every
 *     policy) passes over its node;
 *   - as the head, leaves the queue itself: it clears `head` and its demand
 *     and promotes its successor.  An owner that read `head` before still
 *     hands over to the node: the exchange of GRANTED finds it abandoned,
 *     and the owner releases instead (a release that finds `handoff` up
 *     and `head` empty releases too).
 * Abandoned nodes go to `zombies`, and an owner recycles them in its
 * tenure check (every BATON_RELAY_CHECK_EVERY releases), before it reads
 * `head`: no thread can name them any more by then.  One crossing is left:
 * an owner that read a departed head's node may clear a demand the next
 * head made meanwhile; that head then waits without it, polling the word
 * at least every RELAY_PARK_TIMEOUT_NS.
 */
#include <baton/relay.h>
#include "../base/thread.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <sched.h>

enum { RELAY_QUEUED = 0, RELAY_HEAD = 1, RELAY_GRANTED = 2, RELAY_ABANDONED = 3 };

/* The head's poll of the lock word backs off exponentially up to this many
 * spin hints (about 6 us at the ~24 ns per hint measured on the reference
 * machine, 3.6 us at 14 ns).  The owner hands over by itself when its
 * tenure ends, so the head polls only to notice an owner that let go of
 * the lock; each poll takes the line from a busy owner (a few hundred ns
 * on the reference machine), so rarely is better. */
#define RELAY_POLL_MAX 256u

/* An arriving thread looks at a held lock this many times, RELAY_LOOK_NS
 * apart, before it queues.  A look must last several cache-line transfers
 * (a few hundred ns between cores, more across sockets): our reads take
 * the line from a looping owner, whose next release then waits for it, and
 * with shorter looks that wait itself looks like an idle lock. */
#define RELAY_ARRIVAL_LOOKS 2u
#define RELAY_LOOK_NS 1000.0

/* Spin hints per look before the calibration is known: RELAY_LOOK_NS at
 * the ~24 ns per hint measured on the project's VMs (as wait.c's defaults). */
#define RELAY_LOOK_HINTS_DEFAULT 42u

static uint32_t arrival_spacing(void)
{
    static _Atomic uint32_t spacing; /* spin hints per look, computed once */
    uint32_t v = atomic_load_explicit(&spacing, memory_order_relaxed);
    if (BATON_UNLIKELY(v == 0)) {
        /* Never wait for the calibration here (milliseconds, more on a
         * loaded machine: a timed lock would overshoot its deadline by
         * that much); until a wait that needs a budget has run it, use
         * the default. */
        const baton_calibration_t *c = baton_calibration_ready();
        if (c == NULL)
            return RELAY_LOOK_HINTS_DEFAULT;
        double n = RELAY_LOOK_NS / c->pause_ns;
        v = n < 1.0 ? 1u : n > 4096.0 ? 4096u : (uint32_t)n;
        /* Relaxed: every thread computes the same value. */
        atomic_store_explicit(&spacing, v, memory_order_relaxed);
    }
    return v;
}

/* The owner ends its own tenure after one slice (it reads the clock every
 * 64 releases), which keeps tenures equal.  The head demands the lock only
 * after this many slices of waiting: the fallback for owners that do not
 * release (long critical sections, owners preempted while holding). */
#define RELAY_DEMAND_SLICES 4u

/* A head that demanded the lock and parks does so for at most this long
 * before it re-reads the word: the bound on what a crossing of its demand
 * with an owner's plain release can cost (see baton/relay.h).  1 ms: far
 * above a futex wake-up, far below anything a user would notice. */
#define RELAY_PARK_TIMEOUT_NS 1000000u

/* The policy of waiters behind the head under parking policies. */
static const baton_wait_t park_now = {.kind = BATON_WAIT_PARK};

int baton_relay_init(baton_relay_t *l, const baton_wait_t *wait, uint32_t slice_ns)
{
    atomic_init(&l->word, 0);
    atomic_init(&l->handoff, 0u);
    atomic_init(&l->tail, NULL);
    atomic_init(&l->head, NULL);
    atomic_init(&l->zombies, NULL);
    atomic_init(&l->count, 0u);
    l->tenure_owner = 0;
    l->tenure_start = 0;
    l->slice_ns = slice_ns ? slice_ns : BATON_RELAY_SLICE_NS_DEFAULT;
    if (wait)
        l->wait = *wait;
    else
        return baton_wait_init(&l->wait, BATON_WAIT_AUTO);
    return 0;
}

/* Recycle the nodes of waiters that gave up: by the owner, before it reads
 * `head`, or by destroy (thread.h's list of nodes left behind). */
static void zombies_recycle(baton_relay_t *l) { baton_qnode_recycle(&l->zombies); }

/* Hand first..last (linked by pool_next) to the owner's next tenure check. */
static void zombie_push(baton_relay_t *l, baton_qnode_t *first, baton_qnode_t *last)
{
    baton_qnode_defer(&l->zombies, first, last);
}

int baton_relay_destroy(baton_relay_t *l)
{
    if (baton_relay_is_locked(l) || baton_load(&l->tail, memory_order_relaxed) != NULL)
        return EBUSY;
    zombies_recycle(l);
    return 0;
}

/* Pass the head on from n, which leaves it: clear the tail if n is last,
 * else promote its successor, passing over nodes of waiters that gave up
 * (they go to `zombies`).  n is left to the caller. */
static void promote(baton_relay_t *l, baton_qnode_t *n)
{
    baton_qnode_t *cur = n, *passed = NULL, *passed_last = NULL;
    for (;;) {
        baton_qnode_t *expected = cur;
        if (baton_load(&l->tail, memory_order_relaxed) == cur &&
            baton_cas(&l->tail, &expected, NULL, memory_order_acq_rel, memory_order_relaxed))
            break;
        baton_qnode_t *next = baton_qnode_wait_next(cur);
        /* An exchange under every policy, for the old value.  acq_rel:
         * release pairs with the successor's acquire wait on its state;
         * acquire orders the wake after the exchange. */
        uint32_t old = baton_xchg(&next->state, RELAY_HEAD, memory_order_acq_rel);
        if (old == RELAY_ABANDONED) {
            baton_qnode_append(&passed, &passed_last, next);
            cur = next;
            continue;
        }
        if (old & BATON_WAIT_PARKED) {
            baton_wake_all(&next->state);
            /* If the new head shares our core it cannot run, publish itself
             * and take over the queue until we leave the core; give it the
             * chance now (a no-op costing ~0.1 us if it runs elsewhere). */
            sched_yield();
        }
        break;
    }
    if (passed != NULL)
        zombie_push(l, passed, passed_last);
}

/* Leave the queue after acquiring: clear the tail if we are last, else
 * promote our successor to head. */
static void dequeue(baton_relay_t *l, baton_qnode_t *n)
{
    /* We own the lock: nobody may hand it to our node any more. */
    baton_store(&l->head, NULL, memory_order_relaxed);
    /* A demand we made may still be up: an owner whose tenure ended can
     * grant us the lock just as we set `handoff`.  Only a head sets it and
     * we are the owner now, so clear it before promoting the next head. */
    baton_store(&l->handoff, 0u, memory_order_relaxed);
    /* Our tenure starts now (a stale tenure of ours would end it at once). */
    l->tenure_owner = baton_thread_token();
    l->tenure_start = baton_now_ns();
    promote(l, n);
    baton_qnode_put(n);
}

/* A timed head whose deadline d passed: take the lock if it is free or
 * granted (true); otherwise give the node up and leave the queue (false). */
static bool head_leave(baton_relay_t *l, baton_qnode_t *n, uintptr_t self)
{
    uintptr_t w = 0;
    /* Acquire pairs with the owner's release store of 0. */
    if (baton_cas(&l->word, &w, self, memory_order_acquire, memory_order_relaxed))
        return true;
    /* Acquire (also on failure): a GRANTED read here is the hand-over. */
    uint32_t st = baton_load(&n->state, memory_order_acquire);
    do {
        if ((st & ~BATON_WAIT_PARKED) == RELAY_GRANTED)
            return true;
    } while (!baton_cas(&n->state, &st, RELAY_ABANDONED, memory_order_acquire, memory_order_acquire));
    /* No longer the head: take our node and our demand back (only a head
     * sets them), then pass the head on.  Relaxed: the successor's
     * promotion (a release) publishes them; an owner that reads them stale
     * hands over to our abandoned node, which fails and releases. */
    baton_store(&l->head, NULL, memory_order_relaxed);
    baton_store(&l->handoff, 0u, memory_order_relaxed);
    promote(l, n);
    n->pool_next = NULL;
    zombie_push(l, n, n);
    return false;
}

/* After demanding the lock: wait until the owner grants it, or until the
 * word is free (the owner released without seeing the demand), by the
 * lock's policy; parking is bounded by RELAY_PARK_TIMEOUT_NS. */
static bool await_grant(baton_relay_t *l, baton_qnode_t *n, uintptr_t self, const baton_deadline_t *d)
{
    baton_waiter_t s;
    baton_waiter_init(&s, &l->wait);
    for (;;) {
        /* Acquire pairs with the release in the owner's hand-over. */
        uint32_t st = baton_load(&n->state, memory_order_acquire);
        if ((st & ~BATON_WAIT_PARKED) == RELAY_GRANTED)
            return true;
        uintptr_t w = baton_load(&l->word, memory_order_relaxed);
        if (w == 0) {
            /* Acquire pairs with the owner's release store of 0. */
            if (baton_cas(&l->word, &w, self, memory_order_acquire, memory_order_relaxed)) {
                baton_store(&l->handoff, 0u, memory_order_relaxed);
                return true;
            }
            continue;
        }
        if (d != NULL && baton_deadline_left(d) == 0)
            return head_leave(l, n, self);
        if (baton_waiter_pause(&s, &n->state, st))
            continue;
        if (!(st & BATON_WAIT_PARKED) &&
            !baton_cas(&n->state, &st, st | BATON_WAIT_PARKED, memory_order_relaxed, memory_order_relaxed))
            continue;
        baton_park_for(&n->state, st | BATON_WAIT_PARKED, RELAY_PARK_TIMEOUT_NS, d);
    }
}

/* The slow path of lock (d NULL) and of timedlock: 0 once held, ETIMEDOUT
 * once d has passed (see the top). */
static int lock_slow(baton_relay_t *l, uintptr_t self, const baton_deadline_t *d)
{
    /* Before queueing, look at the word twice, a microsecond apart: if the
     * owner has let go of the lock (no release for a whole look, and the
     * word free), take it without queueing.  When an owner loops on the
     * lock, every look sees a release, we keep off its tenure, and we
     * queue. */
    const uint32_t spacing = arrival_spacing();
    uint32_t last = baton_load(&l->count, memory_order_relaxed);
    for (uint32_t i = 0; i < RELAY_ARRIVAL_LOOKS; i++) {
        for (uint32_t k = 0; k < spacing; k++)
            baton_cpu_relax();
        uintptr_t w = baton_load(&l->word, memory_order_relaxed);
        uint32_t c = baton_load(&l->count, memory_order_relaxed);
        /* Free, and no release for a whole look: the owner is away (it
         * left, or works between critical sections for longer than a
         * look), not looping on the lock, whose tenure we would steal. */
        if (w == 0 && c == last && !baton_load(&l->handoff, memory_order_relaxed) &&
            baton_cas(&l->word, &w, self, memory_order_acquire, memory_order_relaxed))
            return 0;
        last = c;
    }
    if (d != NULL && baton_deadline_left(d) == 0)
        return ETIMEDOUT;
    baton_qnode_t *n = baton_qnode_get();
    atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&n->state, RELAY_QUEUED, memory_order_relaxed);
    /* acq_rel: release publishes our node's initialisation to the
     * predecessor that will link and promote it. */
    baton_qnode_t *pred = baton_xchg(&l->tail, n, memory_order_acq_rel);
    if (pred) {
        baton_store(&pred->next, n, memory_order_release);
        /* Behind the head we wait at least the rest of its slice, longer
         * than any spin budget: under a policy that may park, park at
         * once, so that only the owner and the head compete for cores.
         * The head promotes us when it acquires, a whole slice before we
         * matter, which hides our wake-up latency. */
        const baton_wait_t *w = baton_wait_may_park(&l->wait) ? &park_now : &l->wait;
        if (d == NULL) {
            (void)baton_wait_while_eq(w, &n->state, RELAY_QUEUED); /* acquire inside */
        } else {
            uint32_t seen;
            /* Acquire inside.  Past the deadline, give the node up unless
             * promoted first; relaxed, as we publish nothing, and a
             * promotion read on failure is re-read with acquire. */
            while (baton_wait_while_eq_until(w, &n->state, RELAY_QUEUED, d, &seen) == ETIMEDOUT) {
                uint32_t st = baton_load(&n->state, memory_order_relaxed);
                if ((st & ~BATON_WAIT_PARKED) == RELAY_QUEUED &&
                    baton_cas(&n->state, &st, RELAY_ABANDONED, memory_order_relaxed, memory_order_relaxed))
                    return ETIMEDOUT; /* the next promotion passes over the node */
            }
        }
    } else {
        /* Head at once: nobody will promote us, so say it ourselves (the
         * grant wait below waits for the state to leave RELAY_HEAD). */
        baton_store(&n->state, RELAY_HEAD, memory_order_relaxed);
    }

    /* We are the head.  Publish our node for a hand-over.  Release pairs
     * with the owner's acquire load in baton_relay_tenure_over(). */
    baton_store(&l->head, n, memory_order_release);
    /* Poll the word until it is free or a slice has passed, then demand
     * the lock.  Under the pure park policy there is no polling. */
    const bool poll = l->wait.kind != BATON_WAIT_PARK;
    const uint64_t start = baton_now_ns();
    uint32_t delay = 1;
    unsigned polls = 0;
    bool seen_free = false, gave_way = false;
    uint32_t seen_count = 0;
    for (;;) {
        /* An owner whose tenure ended may grant us the lock at any time.
         * Acquire pairs with the release in baton_relay_hand_over(). */
        if (baton_load(&n->state, memory_order_acquire) == RELAY_GRANTED)
            break;
        if (d != NULL && baton_deadline_left(d) == 0) {
            if (!head_leave(l, n, self))
                return ETIMEDOUT;
            break; /* took it: leave the queue as below */
        }
        uintptr_t w = baton_load(&l->word, memory_order_relaxed);
        /* Relaxed: a racy read of the owner's release count; a stale value
         * only delays or hastens our CAS, which decides. */
        uint32_t c = baton_load(&l->count, memory_order_relaxed);
        if (w == 0 && seen_free && c == seen_count && gave_way) {
            /* Free, with no release since we last looked and after we let
             * the owner run: nobody is using the lock (its owner left, or
             * waits for something else), so taking it costs nobody a
             * tenure.  Acquire pairs with the owner's release store of 0. */
            if (baton_cas(&l->word, &w, self, memory_order_acquire, memory_order_relaxed))
                break;
            continue;
        }
        /* Free once, or free with releases in between, is an owner busy
         * between critical sections, or one that shares our core and that
         * the scheduler paused; taking the lock then would cut its tenure
         * short (every time, if the queue keeps the two on one core). */
        if (w != 0 || c != seen_count || !seen_free)
            gave_way = false;
        seen_free = w == 0;
        seen_count = c;
        /* Reading the clock costs ~20 ns: while the polls are short, only
         * every 8th poll; once they yield, every poll (a yield may give
         * the core away for a whole scheduler slice). */
        bool yielding = delay >= RELAY_POLL_MAX && l->wait.kind != BATON_WAIT_SPIN;
        if (poll && ((!yielding && (++polls & 7u) != 0) ||
                     baton_now_ns() - start < RELAY_DEMAND_SLICES * (uint64_t)l->slice_ns)) {
            for (uint32_t i = 0; i < delay; i++)
                baton_cpu_relax();
            if (delay < RELAY_POLL_MAX) {
                delay *= 2;
            } else {
                if (yielding)
                    /* Polling for longer than a few microseconds: if the
                     * owner shares our core, let it run (with a core to
                     * ourselves this returns at once, for ~0.1 us). */
                    sched_yield();
                gave_way = seen_free; /* a full poll interval (and a yield) */
            }
            continue;
        }
        /* Demand the lock.  Release: publishes l->head to the owner, whose
         * unlock reads `handoff` with acquire. */
        baton_store(&l->handoff, 1u, memory_order_release);
        if (!await_grant(l, n, self, d))
            return ETIMEDOUT;
        break;
    }
    dequeue(l, n);
    return 0;
}

void baton_relay_lock_slow(baton_relay_t *l, uintptr_t self) { (void)lock_slow(l, self, NULL); }

int baton_relay_timedlock(baton_relay_t *l, const baton_deadline_t *d)
{
    uintptr_t self = baton_thread_token();
    uintptr_t expected = 0;
    /* Acquire pairs with the release store in baton_relay_unlock(). */
    if (!baton_load(&l->handoff, memory_order_relaxed) &&
        baton_cas(&l->word, &expected, self, memory_order_acquire, memory_order_relaxed))
        return 0;
    return lock_slow(l, self, d);
}

baton_qnode_t *baton_relay_tenure_over(baton_relay_t *l, uintptr_t self)
{
    /* Nodes of timed waiters that gave up, before we read `head` (see the
     * top).  Relaxed look: the exchange inside orders. */
    if (BATON_UNLIKELY(baton_load(&l->zombies, memory_order_relaxed) != NULL))
        zombies_recycle(l);
    /* Acquire pairs with the head's release store of its node. */
    baton_qnode_t *h = baton_load(&l->head, memory_order_acquire);
    if (h == NULL) {
        l->tenure_owner = 0; /* nobody waits: no tenure is running */
        return NULL;
    }
    uint64_t now = baton_now_ns();
    if (l->tenure_owner != self) {
        l->tenure_owner = self;
        l->tenure_start = now;
        return NULL;
    }
    if (now - l->tenure_start < l->slice_ns)
        return NULL;
    l->tenure_owner = 0;
    return h;
}

void baton_relay_hand_over(baton_relay_t *l, baton_qnode_t *h)
{
    /* h is the head's node: the caller saw `handoff` with acquire, or read
     * l->head with acquire; both pair with the head's release. */
    uintptr_t token = atomic_load_explicit(&h->owner, memory_order_relaxed);
    /* handoff first, then the word: a barger that sees handoff 0 still
     * finds the word held (ours, then the head's) and fails its CAS. */
    baton_store(&l->handoff, 0u, memory_order_relaxed);
    baton_store(&l->word, token, memory_order_relaxed);
    /* An exchange under every policy: the old value says whether the head
     * sleeps (wake it) or gave up its wait (then release instead).
     * acq_rel: release publishes the word and the critical section to the
     * head; acquire orders the wake after it. */
    uint32_t old = baton_xchg(&h->state, RELAY_GRANTED, memory_order_acq_rel);
    if (BATON_UNLIKELY(old == RELAY_ABANDONED)) {
        /* Release pairs with the acquiring CAS of the next owner. */
        baton_store(&l->word, 0, memory_order_release);
        return;
    }
    if (old & BATON_WAIT_PARKED)
        baton_wake_all(&h->state);
}

/* --- registry entry ------------------------------------------------------- */
#include "../base/kind.h"

static const baton_option_desc_t relay_options[] = {
    {"slice_us", 1, 1000000, BATON_RELAY_SLICE_NS_DEFAULT / 1000u,
     "how long the queue head waits before the owner must hand over (us)"},
};

/* Written out: the option is in microseconds, the typed init takes
 * nanoseconds. */
static int k_init(void *s, const baton_opts_t *o)
{
    return baton_relay_init(s, &o->wait, (uint32_t)(o->value[0] * 1000u));
}

BATON_KIND_ADAPT_MUTEX(relay)
BATON_KIND_ADAPT(release, baton_relay_release)

const baton_kind_t baton_kind_relay = {
    .name = "relay",
    .summary =
        "the previous default: barging owner keeps the lock on its core, FIFO queue, handoff after a slice",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_OWNER | BATON_CAP_NOCOLLAPSE | BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_AUTO,
    .size = sizeof(baton_relay_t),
    .align = _Alignof(baton_relay_t),
    .options = relay_options,
    .noptions = sizeof relay_options / sizeof relay_options[0],
    BATON_KIND_MUTEX_OPS,
    .release = k_release,
};
