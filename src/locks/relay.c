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
 */
#include <baton/relay.h>
#include "../base/thread.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <sched.h>

enum { RELAY_QUEUED = 0, RELAY_HEAD = 1, RELAY_GRANTED = 2 };

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

static uint32_t arrival_spacing(void)
{
    static _Atomic uint32_t spacing; /* spin hints per look, computed once */
    uint32_t v = atomic_load_explicit(&spacing, memory_order_relaxed);
    if (BATON_UNLIKELY(v == 0)) {
        double n = RELAY_LOOK_NS / baton_calibration()->pause_ns;
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

int baton_relay_destroy(baton_relay_t *l)
{
    if (baton_relay_is_locked(l) || baton_load(&l->tail, memory_order_relaxed) != NULL)
        return EBUSY;
    return 0;
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
    l->tenure_owner = baton_relay_self();
    l->tenure_start = baton_now_ns();
    baton_qnode_t *expected = n;
    if (baton_load(&l->tail, memory_order_relaxed) == n &&
        baton_cas(&l->tail, &expected, NULL, memory_order_acq_rel, memory_order_relaxed)) {
        baton_qnode_put(n);
        return;
    }
    baton_qnode_t *next = baton_qnode_wait_next(n);
    if (!baton_wait_may_park(&l->wait)) {
        baton_store(&next->state, RELAY_HEAD, memory_order_release);
    } else if (baton_xchg(&next->state, RELAY_HEAD, memory_order_acq_rel) & BATON_WAIT_PARKED) {
        baton_wake_all(&next->state);
        /* If the new head shares our core it cannot run, publish itself
         * and take over the queue until we leave the core; give it the
         * chance now (a no-op costing ~0.1 us if it runs elsewhere). */
        sched_yield();
    }
    baton_qnode_put(n);
}

/* After demanding the lock: wait until the owner grants it, or until the
 * word is free (the owner released without seeing the demand), by the
 * lock's policy; parking is bounded by RELAY_PARK_TIMEOUT_NS. */
static void await_grant(baton_relay_t *l, baton_qnode_t *n, uintptr_t self)
{
    baton_waiter_t s;
    baton_waiter_init(&s, &l->wait);
    for (;;) {
        /* Acquire pairs with the release in the owner's hand-over. */
        uint32_t st = baton_load(&n->state, memory_order_acquire);
        if ((st & ~BATON_WAIT_PARKED) == RELAY_GRANTED)
            return;
        uintptr_t w = baton_load(&l->word, memory_order_relaxed);
        if (w == 0) {
            /* Acquire pairs with the owner's release store of 0. */
            if (baton_cas(&l->word, &w, self, memory_order_acquire, memory_order_relaxed)) {
                baton_store(&l->handoff, 0u, memory_order_relaxed);
                return;
            }
            continue;
        }
        if (baton_waiter_pause(&s, &n->state, st))
            continue;
        if (!(st & BATON_WAIT_PARKED) &&
            !baton_cas(&n->state, &st, st | BATON_WAIT_PARKED, memory_order_relaxed, memory_order_relaxed))
            continue;
        baton_park_timeout(&n->state, st | BATON_WAIT_PARKED, RELAY_PARK_TIMEOUT_NS);
    }
}

void baton_relay_lock_slow(baton_relay_t *l, uintptr_t self)
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
            return;
        last = c;
    }
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
        (void)baton_wait_while_eq(baton_wait_may_park(&l->wait) ? &park_now : &l->wait, &n->state,
                                  RELAY_QUEUED); /* acquire inside */
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
        await_grant(l, n, self);
        break;
    }
    dequeue(l, n);
}

baton_qnode_t *baton_relay_tenure_over(baton_relay_t *l, uintptr_t self)
{
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
    /* Release publishes the word and the critical section to the head. */
    baton_wait_store(&l->wait, &h->state, RELAY_GRANTED);
}

/* --- registry entry ------------------------------------------------------- */
#include "../base/kind.h"

static const baton_option_desc_t relay_options[] = {
    {"slice_us", 1, 1000000, BATON_RELAY_SLICE_NS_DEFAULT / 1000u,
     "how long the queue head waits before the owner must hand over (us)"},
};

static int k_init(void *s, const baton_opts_t *o)
{
    return baton_relay_init(s, &o->wait, (uint32_t)(o->value[0] * 1000u));
}
static int k_destroy(void *s) { return baton_relay_destroy(s); }
static void k_lock(void *s) { baton_relay_lock(s); }
static int k_trylock(void *s) { return baton_relay_trylock(s); }
static int k_unlock(void *s) { return baton_relay_unlock(s); }
static int k_release(void *s) { return baton_relay_release(s); }
static int k_is_locked(void *s) { return baton_relay_is_locked(s); }

const baton_kind_t baton_kind_relay = {
    .name = "relay",
    .summary = "the previous default: barging owner keeps the lock on its core, FIFO queue, handoff after a slice",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE |
            BATON_CAP_WAIT | BATON_CAP_OWNER | BATON_CAP_NOCOLLAPSE,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_AUTO,
    .size = sizeof(baton_relay_t), .align = _Alignof(baton_relay_t),
    .options = relay_options, .noptions = sizeof relay_options / sizeof relay_options[0],
    .init = k_init, .destroy = k_destroy, .lock = k_lock, .trylock = k_trylock,
    .unlock = k_unlock, .release = k_release, .is_locked = k_is_locked,
};
