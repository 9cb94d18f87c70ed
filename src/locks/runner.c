/* runner.c - the runner lock: arrival, the queue, the heir's wait, and the
 * owner's slow release.  The state and the design argument are in
 * baton/runner.h.
 *
 * Node states (the waited-on word of each queued thread; the wait layer's
 * BATON_WAIT_PARKED bit is set while its thread sleeps):
 *   RUN_WAIT      behind the head: sleeps (or spins, under a policy that
 *                 never parks)
 *   RUN_HEAD      the heir: spins, or sleeps with BATON_WAIT_PARKED
 *   RUN_GRANTED   the owner handed the lock over; the word already holds
 *                 the heir's token
 *   RUN_ABANDONED a timed waiter gave up (its deadline passed); the node
 *                 is no longer its thread's
 *
 * Transitions of the word:
 *   0      -> self    acquire: the fast path, an arrival's spin, the heir
 *   self   -> 0       release
 *   self   -> heir    the owner's release while DEMAND is up and the heir's
 *                     node reads RUN_HEAD without BATON_WAIT_PARKED (the
 *                     CAS of that node RUN_HEAD -> RUN_GRANTED decides)
 *
 * Who wakes whom:
 *   - the thread that leaves the queue head (it acquired) promotes its
 *     successor: names it `heir`, with its deadline, then RUN_WAIT ->
 *     RUN_HEAD, with a futex wake if it slept, or, in the tenure regime,
 *     asleep (RUN_HEAD | BATON_WAIT_PARKED, no wake);
 *   - the owner's check (every BATON_RUNNER_CHECK_EVERY releases while
 *     flag WATCH is up, which it is whenever a thread is queued) wakes a
 *     heir that sleeps unannounced, a wake-up latency before its deadline;
 *   - an owner's slow release wakes a heir that announced its sleep;
 *   - an owner whose heir is two wake-up latencies past its deadline
 *     without having demanded the lock yields its CPU once after its
 *     release (the heir most likely waits for that CPU);
 *   - timeouts bound every sleep, the safety net for a crossing and for an
 *     owner that stops releasing.
 *
 * Time-outs (baton_runner_timedlock()).  A timed waiter arrives, queues and
 * waits exactly like lock()'s, with its sleeps cut short by its deadline,
 * so it keeps every rule above (it takes the lock only while it runs; it
 * sleeps behind the head).  When the deadline passes it takes a free lock
 * if it can; otherwise it claims its node with a CAS to RUN_ABANDONED (a
 * hand-over that came first wins, and the waiter holds the lock) and:
 *   - behind the head, simply returns.  Whoever promotes a successor
 *     exchanges RUN_HEAD into its node (under every policy, for the old
 *     value) and passes over an abandoned one at once, to the node behind
 *     it or by clearing the tail.
 *   - as the heir, leaves the queue itself: it clears `heir` and its
 *     requests in `flags`, and promotes its successor (passing over
 *     abandoned nodes) or clears the tail, as an heir that acquired does.
 *     That needs no lock: only the heir changes the queue's head, and the
 *     owner's hand-over is a CAS on the heir's node, which the abandoned
 *     state makes fail.
 * Nodes passed over, and a departed heir's, may still be named by an
 * owner that read `heir` (or followed a link) before they were abandoned:
 * they are not recycled at once but pushed onto `zombies` (flag ZOMBIE
 * sends the next release to the slow path), and an owner recycles the
 * list at the start of its slow release, before it reads `heir`: by then
 * no thread can name them (one owner at a time; a departed heir cleared
 * `heir` before it pushed its node).  So a waiter that times out leaves
 * nothing that holds anyone up: the queue moves past it at once, or at the
 * next promotion for a node behind the head, which waits for the head
 * anyway.
 */
#include <baton/runner.h>
#include "../base/thread.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <stddef.h>
#include <sched.h>

enum { RUN_WAIT = 0, RUN_HEAD = 1, RUN_GRANTED = 2, RUN_ABANDONED = 3 };

/* The heir's requests in `flags` (ZOMBIE is the lock's, not the heir's). */
#define HEIR_FLAGS (BATON_RUNNER_DEMAND | BATON_RUNNER_HEIR_PARKED)

/* --- tuning ----------------------------------------------------------------
 *
 * Every length below is derived from one measured figure, the wake-up
 * latency: how long after the moment it should run a sleeping waiter runs
 * (a futex wake, or the expiry of a timed sleep).  Each wake-up the lock
 * causes is timed and folded into a running average, shared by every
 * runner lock of the process; nothing is measured at start-up. */

/* Before the first sample: 20 us, the middle of the 10-30 us measured on
 * the project's 2-CPU VMs (bare metal: 2-10 us). */
#define WAKE_NS_DEFAULT 20000u
#define WAKE_NS_MIN 1000u
#define WAKE_NS_MAX 2000000u
/* The average's weight of a new sample: 1/8. */
#define WAKE_EWMA_SHIFT 3

/* A tenure (how long the heir lets the owner keep the lock before it
 * demands it) is this many wake-up latencies: a hand-over then costs the
 * lock at most a few percent of a tenure (the heir sleeps through most of
 * it and is up again before its end, so the latency itself is hidden; what
 * remains is the new owner's cache misses and one wake of the next heir).
 * Bounded below so that short latencies do not make hand-overs frequent,
 * and above so that a waiter at queue position k waits about k ms at most. */
#define TENURE_WAKES 8u
#define TENURE_NS_MIN 100000u
#define TENURE_NS_MAX 1000000u

/* The heir spins for about what a sleep would cost (the wake-up latency:
 * the competitive spin-then-block bound), within these limits.  The upper
 * one is low: a heir that spins while the owner is off its CPU (preempted
 * holding the lock, common when threads outnumber CPUs) burns a CPU that
 * a runnable thread could use; measured on the 2-CPU VM with 16 threads
 * and 64 locks, a 50 us cap cost 25% of the throughput against 5 us. */
#define SPIN_NS_MIN 2000u
#define SPIN_NS_MAX 5000u

/* An arriving thread spins this long for a short critical section to end
 * before it does anything else.  Short for the same reason: measured as
 * above, 300 ns ran 1.3-1.9x faster than 2 us where owners are often
 * preempted, and no slower where they are not. */
#define ARRIVAL_NS 300u

/* Then, unless the owner loops on the lock, it polls, yielding its CPU
 * between polls, for about one wake-up latency before it queues and
 * sleeps.  Under oversubscription a yield hands the CPU to a runnable
 * thread, often the owner itself, where a sleep would cost a wake-up in a
 * busy run queue (milliseconds) and keep a thread from running afterwards.
 * Longer is worse: a program's threads that yield in a loop keep its other
 * threads, the owner among them, off the CPUs.  Measured on the 2-CPU VM
 * (bench micro, S=10): 50 us ran as fast as 400 us with 16 threads and 64
 * locks, and 12% faster with 2 threads, L=100; none at all was 25% slower
 * with 16 threads and 64 locks. */
#define YIELD_WAKES 1u
#define YIELD_NS_MIN 20000u
#define YIELD_NS_MAX 200000u

/* A queued waiter sleeps at most this many tenures at a time (see
 * queue_wait()). */
#define QUEUE_SLEEP_TENURES 8u

/* Under the park policy a heir that demanded the lock spins this long for
 * the hand-over before it sleeps again. */
#define LOOK_NS 2000u
/* A heir that slept announced and finds this many releases since knows the
 * owner loops on the lock (it woke us for nothing): it sleeps unannounced
 * until shortly before its tenure ends. */
#define LOOPING_RELEASES 2u

/* Polls of the lock word back off exponentially up to this many spin
 * hints (about 1.5 us at the ~24 ns per hint measured on the project's
 * VMs): each poll takes the line from a busy owner for a few hundred ns. */
#define POLL_MAX 64u

/* An owner whose heir is this many wake-up latencies past its deadline
 * without having demanded the lock yields its CPU once after a release
 * (baton_runner_release_check()). */
#define STEP_ASIDE_WAKES 2u

/* A sleep shorter than this is not worth its two system calls: spin. */
#define SLEEP_NS_MIN 5000u

static _Atomic uint32_t wake_avg = WAKE_NS_DEFAULT;

static uint32_t wake_ns(void)
{
    /* Relaxed: a statistic; any recent value will do. */
    return atomic_load_explicit(&wake_avg, memory_order_relaxed);
}

static void wake_sample(uint64_t ns)
{
    if (ns < WAKE_NS_MIN)
        ns = WAKE_NS_MIN;
    if (ns > WAKE_NS_MAX)
        ns = WAKE_NS_MAX;
    uint32_t old = wake_ns();
    int64_t delta = ((int64_t)ns - (int64_t)old) / (1 << WAKE_EWMA_SHIFT);
    /* Relaxed: racing updates lose a sample, which a running average
     * tolerates. */
    atomic_store_explicit(&wake_avg, (uint32_t)((int64_t)old + delta), memory_order_relaxed);
}

/* A waker notes when it woke a node's thread; that thread takes the sample
 * when it runs.  Relaxed: the stamp is a statistic, read after the wake's
 * own acquire/release handshake on the node's state. */
static void stamp(baton_qnode_t *n)
{
    atomic_store_explicit(&n->stamp, baton_now_ns(), memory_order_relaxed);
}

static uint64_t take_stamp(baton_qnode_t *n, uint64_t now)
{
    uint64_t t = atomic_load_explicit(&n->stamp, memory_order_relaxed);
    if (t != 0) {
        atomic_store_explicit(&n->stamp, 0, memory_order_relaxed);
        if (now > t)
            wake_sample(now - t);
    }
    return t;
}

static uint64_t tenure_of(const baton_runner_t *l)
{
    if (l->tenure_ns)
        return l->tenure_ns;
    uint64_t t = (uint64_t)TENURE_WAKES * wake_ns();
    return t < TENURE_NS_MIN ? TENURE_NS_MIN : t > TENURE_NS_MAX ? TENURE_NS_MAX : t;
}

static uint64_t yield_budget(void)
{
    uint64_t y = (uint64_t)YIELD_WAKES * wake_ns();
    return y < YIELD_NS_MIN ? YIELD_NS_MIN : y > YIELD_NS_MAX ? YIELD_NS_MAX : y;
}

static uint64_t spin_window(void)
{
    uint64_t w = wake_ns();
    return w < SPIN_NS_MIN ? SPIN_NS_MIN : w > SPIN_NS_MAX ? SPIN_NS_MAX : w;
}


int baton_runner_init(baton_runner_t *l, const baton_wait_t *wait, uint32_t tenure_ns)
{
    atomic_init(&l->word, 0);
    atomic_init(&l->flags, 0u);
    atomic_init(&l->count, 0u);
    atomic_init(&l->tail, NULL);
    atomic_init(&l->heir, NULL);
    atomic_init(&l->deadline, 0);
    atomic_init(&l->owner_cpu, UINT32_MAX);
    atomic_init(&l->zombies, NULL);
    l->stepped = 0;
    l->tenure_ns = tenure_ns;
    if (wait)
        l->wait = *wait;
    else
        return baton_wait_init(&l->wait, BATON_WAIT_AUTO);
    return 0;
}

/* Recycle the nodes of waiters that timed out (see the top): by the lock's
 * owner, or by destroy (thread.h's list of nodes left behind). */
static void zombies_recycle(baton_runner_t *l) { baton_qnode_recycle(&l->zombies); }

/* Hand the nodes first..last (linked by pool_next) to the owner's next slow
 * release, once nothing of ours touches them any more. */
static void zombie_push(baton_runner_t *l, baton_qnode_t *first, baton_qnode_t *last)
{
    baton_qnode_defer(&l->zombies, first, last);
    /* Relaxed: a request for a slow release; the list is ordered by the
     * exchange above. */
    baton_fetch_or(&l->flags, BATON_RUNNER_ZOMBIE, memory_order_relaxed);
}

/* A waiter asks the owner's release to count (the hint that tells an owner
 * that loops from one inside a long section) and to check the heir's
 * deadline: flag WATCH.  A look first, so that a flag already up costs a
 * read, not a write to the owner's line.  seq_cst, with the queue's
 * exchange before it (lock_slow()) and with the owner's side in
 * baton_runner_release_check(): either the owner sees our node in the
 * tail, or we see that it dropped the flag; so a queued waiter is never
 * left without the check.  For an arriving waiter (not queued yet) a
 * flag dropped meanwhile costs only the hint, until it queues. */
static void watch(baton_runner_t *l)
{
    if (!(baton_load(&l->flags, memory_order_seq_cst) & BATON_RUNNER_WATCH))
        baton_fetch_or(&l->flags, BATON_RUNNER_WATCH, memory_order_seq_cst);
}

int baton_runner_destroy(baton_runner_t *l)
{
    if (baton_runner_is_locked(l) || baton_load(&l->tail, memory_order_relaxed) != NULL)
        return EBUSY;
    zombies_recycle(l);
    return 0;
}

/* What a waiter learns by looking at the lock again.  Relaxed loads: hints
 * of what the owner does; the CAS in take() decides. */
enum { SEEN_HELD, SEEN_FREE, SEEN_STABLE_FREE, SEEN_LOOPING };

typedef struct look {
    uintptr_t word;
    uint32_t count;
} look_t;

static inline void look_init(baton_runner_t *l, look_t *lk)
{
    lk->word = baton_load(&l->word, memory_order_relaxed);
    lk->count = baton_load(&l->count, memory_order_relaxed);
}

/* Free now; free at the last look too (nobody took it in between: its
 * owner left); held by the same owner as at the last look, with releases
 * in between (the owner loops on the lock); or held. */
static inline int look_again(baton_runner_t *l, look_t *lk)
{
    uintptr_t w = baton_load(&l->word, memory_order_relaxed);
    uint32_t c = baton_load(&l->count, memory_order_relaxed);
    int seen = w == 0                              ? (lk->word == 0 ? SEEN_STABLE_FREE : SEEN_FREE)
               : (w == lk->word && c != lk->count) ? SEEN_LOOPING
                                                   : SEEN_HELD;
    lk->word = w;
    lk->count = c;
    return seen;
}

static inline bool take(baton_runner_t *l, uintptr_t self)
{
    uintptr_t w = 0;
    /* Acquire pairs with the release store of a releasing owner. */
    return baton_cas(&l->word, &w, self, memory_order_acquire, memory_order_relaxed);
}

static inline void poll_pause(uint32_t *delay)
{
    for (uint32_t i = 0; i < *delay; i++)
        baton_cpu_relax();
    if (*delay < POLL_MAX)
        *delay *= 2;
}

/* Sleep on our node (state RUN_HEAD) for at most ns, and not past d (NULL:
 * none), unless it changed.  Returns the state afterwards, without
 * BATON_WAIT_PARKED. */
static uint32_t heir_sleep(baton_qnode_t *n, uint64_t ns, const baton_deadline_t *d)
{
    uint32_t st = RUN_HEAD;
    /* Relaxed: the bit publishes nothing; an owner's CAS on the node reads
     * it in modification order (a hand-over then fails, a wake succeeds). */
    if (!baton_cas(&n->state, &st, RUN_HEAD | BATON_WAIT_PARKED, memory_order_relaxed, memory_order_relaxed))
        return st & ~BATON_WAIT_PARKED; /* granted meanwhile */
    baton_park_for(&n->state, RUN_HEAD | BATON_WAIT_PARKED, ns, d);
    st = RUN_HEAD | BATON_WAIT_PARKED;
    /* Woken by the timeout (or spuriously): clear the bit ourselves; if the
     * owner cleared it, the CAS fails and we read what it left. */
    (void)baton_cas(&n->state, &st, RUN_HEAD, memory_order_relaxed, memory_order_relaxed);
    return RUN_HEAD;
}

static inline bool granted(baton_qnode_t *n)
{
    /* Acquire pairs with the owner's release CAS in baton_runner_release_slow(). */
    return baton_load(&n->state, memory_order_acquire) == RUN_GRANTED;
}

/* Pass the queue's head on from n, which leaves it (an heir that acquired,
 * or one whose deadline passed): clear the tail if n is last, else promote
 * its successor, passing over nodes whose waiters gave up (see the top;
 * they go to `zombies`).  silent: promote asleep where the successor
 * sleeps (dequeue()).  The caller has cleared `heir` and the heir's flags;
 * n itself is left to the caller. */
static void promote(baton_runner_t *l, baton_qnode_t *n, bool silent)
{
    const bool may_park = baton_wait_may_park(&l->wait);
    baton_qnode_t *cur = n, *passed = NULL, *passed_last = NULL;
    for (;;) {
        baton_qnode_t *expected = cur;
        if (baton_load(&l->tail, memory_order_relaxed) == cur &&
            baton_cas(&l->tail, &expected, NULL, memory_order_acq_rel, memory_order_relaxed))
            break;
        baton_qnode_t *next = baton_qnode_wait_next(cur);
        if (may_park) {
            /* Name the successor the heir now, with its deadline, before it
             * runs: the owner's check (baton_runner_release_check()) must
             * know it has a heir from the moment it has one.  Woken onto
             * the owner's CPU, the successor cannot run to name itself
             * while the owner loops, and an owner that saw no heir kept the
             * lock until the scheduler's tick took its CPU (turns of 5 ms
             * against a 1 ms tenure, measured at 16 threads on 2 CPUs).
             * Relaxed: the release store of `heir` publishes the deadline. */
            baton_store(&l->deadline, baton_now_ns() + tenure_of(l), memory_order_relaxed);
            /* Release pairs with the heir's acquire load in heir_wait(). */
            baton_store(&l->heir, next, memory_order_release);
            if (silent) {
                /* We took over from an owner that looped on the lock (its
                 * heir had to demand it): we will loop too, and not need
                 * the next heir for a tenure.  If it sleeps, promote it
                 * asleep: our deadline check wakes it when its tenure is
                 * due.  A wake now would only have it look, see us loop,
                 * and sleep again (and it would run on our CPU, off ours
                 * only once we slept). */
                uint32_t st = RUN_WAIT | BATON_WAIT_PARKED;
                /* Release: pairs with the successor's acquire load of its
                 * state. */
                if (baton_cas(&next->state, &st, RUN_HEAD | BATON_WAIT_PARKED, memory_order_release,
                              memory_order_relaxed))
                    break;
                /* Awake (or gone): promote it as below. */
            }
        }
        /* An exchange under every policy: the old value says whether the
         * successor sleeps (wake it) or gave up (pass over it).  acq_rel:
         * release pairs with the successor's acquire load of its state;
         * acquire so that the wake cannot be ordered before the exchange
         * that tells us it slept. */
        uint32_t old = baton_xchg(&next->state, RUN_HEAD, memory_order_acq_rel);
        if (old == RUN_ABANDONED) {
            /* Gone: we named it the heir above; take that back (we own
             * the lock, and no waiter reads `heir` but its own). */
            if (may_park)
                baton_store(&l->heir, NULL, memory_order_relaxed);
            baton_qnode_append(&passed, &passed_last, next);
            cur = next;
            continue;
        }
        if (old & BATON_WAIT_PARKED) {
            stamp(next);
            baton_wake_all(&next->state);
        }
        break;
    }
    if (passed != NULL)
        zombie_push(l, passed, passed_last);
}

enum { HEIR_TOOK, HEIR_TOOK_DEMANDED, HEIR_LEFT };

/* A timed heir whose deadline d passed: take the lock if it is free or
 * granted; otherwise give the node up and leave the queue (see the top).
 * Returns HEIR_TOOK, HEIR_TOOK_DEMANDED or HEIR_LEFT. */
static int heir_leave(baton_runner_t *l, baton_qnode_t *n, uintptr_t self, bool demanded)
{
    if (take(l, self))
        return demanded ? HEIR_TOOK_DEMANDED : HEIR_TOOK;
    /* Acquire (also on failure): a RUN_GRANTED read here is the owner's
     * hand-over, whose critical section must be visible to us. */
    uint32_t st = baton_load(&n->state, memory_order_acquire);
    do {
        if ((st & ~BATON_WAIT_PARKED) == RUN_GRANTED)
            return HEIR_TOOK_DEMANDED; /* granted: only a demanding heir is */
    } while (!baton_cas(&n->state, &st, RUN_ABANDONED, memory_order_acquire, memory_order_acquire));
    /* We are no longer the heir: nobody grants or wakes our node from here
     * (an owner's CAS on it fails).  Take our requests back, and pass the
     * head on.  Relaxed: the successor's promotion (a release) publishes
     * both; an owner that reads them stale acts on our abandoned node,
     * which is harmless. */
    baton_store(&l->heir, NULL, memory_order_relaxed);
    baton_fetch_and(&l->flags, ~HEIR_FLAGS, memory_order_relaxed);
    promote(l, n, false);
    n->pool_next = NULL;
    zombie_push(l, n, n);
    return HEIR_LEFT;
}

/* The heir's wait: returns once it owns the lock, HEIR_TOOK_DEMANDED if it
 * had demanded it (its tenure deadline passed: the lock is in the tenure
 * regime), else HEIR_TOOK; or, with a deadline d (NULL: none), HEIR_LEFT
 * once d passed and it left the queue. */
static int heir_wait(baton_runner_t *l, baton_qnode_t *n, uintptr_t self, uint64_t since,
                     const baton_deadline_t *d)
{
    const bool may_park = baton_wait_may_park(&l->wait);
    const bool spins = l->wait.kind != BATON_WAIT_PARK;
    uint64_t now = baton_now_ns();
    uint64_t deadline;
    /* Acquire pairs with the promoter's release store of `heir`: promoted
     * asleep (dequeue()), our deadline is set already. */
    if (baton_load(&l->heir, memory_order_acquire) == n) {
        deadline = baton_load(&l->deadline, memory_order_relaxed);
    } else {
        deadline = (since ? since : now) + tenure_of(l);
        /* Relaxed: published by the release store of `heir` below. */
        baton_store(&l->deadline, deadline, memory_order_relaxed);
        /* Release pairs with the owner's acquire load of `heir`. */
        baton_store(&l->heir, n, memory_order_release);
    }
    bool demanded = false, looping = false;
    uint32_t first_delay = 1;
    baton_waiter_t pause;
    baton_waiter_init(&pause, &l->wait);
    for (;;) {
        /* A spin phase: until the lock is ours, or it is time to sleep. */
        const uint64_t wake = wake_ns();
        uint64_t window = spins ? spin_window() : demanded ? LOOK_NS : 0;
        uint64_t start = now;
        uint32_t delay = first_delay;
        first_delay = 1;
        bool announce = true;
        look_t lk;
        look_init(l, &lk);
        /* On the owner's CPU (threads pinned to fewer CPUs than there
         * are threads, or the scheduler's choice) we run only while the
         * owner does not: spinning would hold the owner off the CPU, and
         * a hand-over would go to a thread that is not running.  Sleep
         * announced instead; the owner's release wakes us and yields the
         * CPU to us (baton_runner_release_slow()).  Relaxed: a hint. */
        if (may_park && (uint32_t)sched_getcpu() == baton_load(&l->owner_cpu, memory_order_relaxed) &&
            baton_load(&l->word, memory_order_relaxed) != 0)
            window = 0;
        for (;;) {
            if (granted(n))
                return HEIR_TOOK_DEMANDED;
            /* Before our tenure deadline we take the lock only when it
             * stays free across two looks (see arrive()); after it, as
             * soon as it is free. */
            int seen = look_again(l, &lk);
            if ((seen == SEEN_STABLE_FREE || (seen == SEEN_FREE && demanded)) && take(l, self))
                return demanded ? HEIR_TOOK_DEMANDED : HEIR_TOOK;
            if (d != NULL && baton_deadline_left(d) == 0)
                return heir_leave(l, n, self, demanded);
            now = baton_now_ns();
            if (!demanded && now >= deadline) {
                demanded = true;
                /* Release: pairs with the owner's acquire load of the
                 * flags (our node and `heir` are published before). */
                baton_fetch_or(&l->flags, BATON_RUNNER_DEMAND, memory_order_release);
                start = now;
                window = spins ? spin_window() : LOOK_NS;
                continue;
            }
            if (!may_park) {
                (void)baton_waiter_pause(&pause, NULL, 0); /* spin, backoff or yield */
                continue;
            }
            if (seen == SEEN_LOOPING)
                looping = true;
            if (!demanded && looping) {
                /* The owner loops on the lock: it will not need us before
                 * our deadline, and wakes us a wake-up latency ahead of it
                 * (baton_runner_release_check()).  Sleep until then,
                 * unless that is too close to be worth a sleep. */
                if (deadline > now + wake + SLEEP_NS_MIN) {
                    announce = false;
                    break;
                }
            } else if (now - start >= window) {
                break;
            }
            /* No yield here: if the owner shares our CPU, a yield hands it
             * back for a whole time slice while we still count as spinning,
             * and the owner would hand the lock to a thread that is not
             * running.  Past the window we sleep instead. */
            poll_pause(&delay);
        }
        if (!announce) {
            /* Woken by the owner, from its CPU: the scheduler then puts us on
             * an idle one (a timed wake-up would put us back on the CPU we
             * slept on, often the owner's, to wait there for its slice to
             * end).  The timeout is the safety net for an owner that stops
             * releasing the lock. */
            (void)heir_sleep(n, deadline - now + tenure_of(l), d);
            now = baton_now_ns();
            take_stamp(n, now);
            continue;
        }
        /* Announce the sleep, so that the next release wakes us.  seq_cst:
         * ordered before our look at the word below (the owner's side is a
         * plain release; a crossing costs at most the timeout). */
        uint32_t c1 = baton_load(&l->count, memory_order_relaxed); /* relaxed: a hint */
        /* Relaxed: a hint for the owner, published by the flag below. */
        atomic_store_explicit(&n->cpu, (uint32_t)sched_getcpu(), memory_order_relaxed);
        baton_fetch_or(&l->flags, BATON_RUNNER_HEIR_PARKED, memory_order_seq_cst);
        uint32_t st = RUN_HEAD;
        if (baton_cas(&n->state, &st, RUN_HEAD | BATON_WAIT_PARKED, memory_order_seq_cst,
                      memory_order_relaxed)) {
            if (baton_load(&l->word, memory_order_seq_cst) != 0)
                baton_park_for(&n->state, RUN_HEAD | BATON_WAIT_PARKED, tenure_of(l), d);
            st = RUN_HEAD | BATON_WAIT_PARKED;
            /* If the owner woke us it cleared the bit and the flag; else we do. */
            if (baton_cas(&n->state, &st, RUN_HEAD, memory_order_relaxed, memory_order_relaxed))
                baton_fetch_and(&l->flags, ~BATON_RUNNER_HEIR_PARKED, memory_order_relaxed);
        } else {
            /* Granted just now; the flag is cleared when we leave the head. */
        }
        now = baton_now_ns();
        take_stamp(n, now);
        /* Woken by a release: its thread runs, and may take the lock again
         * in a moment (an owner that loops).  Our two looks at a free lock
         * are then a poll cap apart, not a spin hint: taking the lock in
         * that moment would cut the releaser's run short and move the data
         * it works on to us. */
        first_delay = POLL_MAX;
        /* Many releases while we slept: the owner loops; sleep unannounced
         * next time. */
        if (baton_load(&l->count, memory_order_relaxed) - c1 >= LOOPING_RELEASES) /* relaxed: a hint */
            looping = true;
    }
}

/* Leave the queue head after acquiring: clear the tail if we are last, else
 * promote our successor to head. */
static void dequeue(baton_runner_t *l, baton_qnode_t *n, bool silent)
{
    /* We own the lock; only the heir sets its flags or `heir`, and we were
     * it (a fetch_and, not a store: ZOMBIE is not ours to clear).
     * Relaxed: the successor's promotion (a release) orders these stores
     * before anything it does as the next heir. */
    baton_store(&l->heir, NULL, memory_order_relaxed);
    baton_fetch_and(&l->flags, ~HEIR_FLAGS, memory_order_relaxed);
    promote(l, n, silent);
    baton_qnode_put(n);
}

/* Behind the head: sleep until promoted (at once, under a policy that may
 * park: at most the owner and the heir run).  The sleep is bounded: a
 * waiter may be promoted asleep (dequeue()), and if the owner then stops
 * releasing the lock, nobody else would wake it.  With a deadline d (NULL:
 * none): false once d passed and the node is given up (the next promotion
 * passes over it); true once promoted. */
static bool queue_wait(baton_runner_t *l, baton_qnode_t *n, const baton_deadline_t *d)
{
    if (!baton_wait_may_park(&l->wait)) {
        /* Acquire inside, pairing with the promotion in promote(). */
        if (d == NULL) {
            (void)baton_wait_while_eq(&l->wait, &n->state, RUN_WAIT);
            return true;
        }
        uint32_t seen;
        if (baton_wait_while_eq_until(&l->wait, &n->state, RUN_WAIT, d, &seen) == 0)
            return true;
    }
    for (;;) {
        /* Acquire pairs with the release of the promotion in promote(). */
        uint32_t st = baton_load(&n->state, memory_order_acquire);
        if ((st & ~BATON_WAIT_PARKED) != RUN_WAIT) {
            /* Promoted asleep, and up by our own timeout: clear the bit
             * (if the owner clears it first, it will wake us: harmless). */
            if (st & BATON_WAIT_PARKED)
                (void)baton_cas(&n->state, &st, st & ~BATON_WAIT_PARKED, memory_order_relaxed,
                                memory_order_relaxed);
            return true;
        }
        if (d != NULL && baton_deadline_left(d) == 0) {
            /* Give the node up, unless promoted first (then the loop sees
             * it).  Relaxed: we publish nothing, and a promotion read on
             * failure is re-read above with acquire. */
            if (baton_cas(&n->state, &st, RUN_ABANDONED, memory_order_relaxed, memory_order_relaxed))
                return false;
            continue;
        }
        /* Relaxed: the bit publishes nothing (the wait layer's protocol). */
        if (!(st & BATON_WAIT_PARKED) &&
            !baton_cas(&n->state, &st, st | BATON_WAIT_PARKED, memory_order_relaxed, memory_order_relaxed))
            continue;
        baton_park_for(&n->state, RUN_WAIT | BATON_WAIT_PARKED, QUEUE_SLEEP_TENURES * tenure_of(l), d);
    }
}

enum { ARRIVE_QUEUE, ARRIVE_TOOK, ARRIVE_LATE };

/* An arriving thread's wait before it queues.  Returns ARRIVE_TOOK once it
 * holds the lock, ARRIVE_QUEUE to queue, ARRIVE_LATE once the deadline d
 * (NULL: none) has passed. */
static int arrive(baton_runner_t *l, uintptr_t self, const baton_deadline_t *d)
{
    const uint64_t start = baton_now_ns();
    look_t lk;
    look_init(l, &lk);
    uint32_t delay = 1;
    /* Spin briefly, for a short critical section to end.  An owner that
     * loops on the lock keeps it for its tenure: do not snatch it in the
     * instant between its release and its next acquire (which would cut
     * its tenure to nothing and break the queue's order); take the lock
     * when it stays free across two looks, and queue once the owner is
     * seen looping. */
    for (;;) {
        poll_pause(&delay);
        int seen = look_again(l, &lk);
        if (seen == SEEN_STABLE_FREE && take(l, self)) {
            return ARRIVE_TOOK;
        }
        if (seen == SEEN_LOOPING) {
            return ARRIVE_QUEUE;
        }
        if (d != NULL && baton_deadline_left(d) == 0)
            return ARRIVE_LATE;
        if (baton_now_ns() - start >= ARRIVAL_NS)
            break;
    }
    if (!baton_wait_may_park(&l->wait))
        return ARRIVE_QUEUE; /* queue and wait by the policy */
    /* A short section did not end: from here on the release count tells
     * us whether the owner loops.  (Not earlier: most collisions end
     * within the spin, and the flag is one more write to the owner's
     * line.) */
    watch(l);
    /* Still held, by threads that take turns, or by an owner that is off
     * its CPU: keep polling, but give the CPU away between polls, for a
     * while (a yield is long enough for "free" to mean free). */
    const uint64_t budget = yield_budget();
    for (;;) {
        sched_yield();
        int seen = look_again(l, &lk);
        if ((seen == SEEN_FREE || seen == SEEN_STABLE_FREE) && take(l, self)) {
            return ARRIVE_TOOK;
        }
        if (seen == SEEN_LOOPING) {
            return ARRIVE_QUEUE;
        }
        if (d != NULL && baton_deadline_left(d) == 0)
            return ARRIVE_LATE;
        if (baton_now_ns() - start >= budget) {
            return ARRIVE_QUEUE;
        }
    }
}

/* The slow path of lock (d NULL) and of timedlock: 0 once the lock is
 * held, ETIMEDOUT once d has passed (nothing of the waiter stays in the
 * queue that anyone waits for: see the top). */
static int lock_slow(baton_runner_t *l, uintptr_t self, const baton_deadline_t *d)
{
    if (l->wait.kind != BATON_WAIT_PARK) {
        int a = arrive(l, self, d);
        if (a == ARRIVE_TOOK)
            return 0;
        if (a == ARRIVE_LATE)
            return ETIMEDOUT;
    } else if (d != NULL && baton_deadline_left(d) == 0) {
        return take(l, self) ? 0 : ETIMEDOUT;
    }
    baton_qnode_t *n = baton_qnode_get();
    atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&n->state, RUN_WAIT, memory_order_relaxed);
    atomic_store_explicit(&n->stamp, 0, memory_order_relaxed);
    /* Release publishes our node's initialisation to the predecessor that
     * will link and promote it; seq_cst for watch() below. */
    baton_qnode_t *pred = baton_xchg(&l->tail, n, memory_order_seq_cst);
    watch(l); /* queued: the flag must be up (see watch()) */
    uint64_t since = 0;
    if (pred) {
        baton_store(&pred->next, n, memory_order_release);
        /* Behind the head: sleep at once under a policy that may park (at
         * most the owner and the heir run).  Acquire inside, pairing with
         * the promotion in promote(). */
        if (!queue_wait(l, n, d))
            return ETIMEDOUT; /* the node is given up: the queue passes over it */
        /* Our tenure clock starts when we were promoted, not when we ran:
         * the wake-up latency is spent inside the owner's tenure. */
        since = take_stamp(n, baton_now_ns());
    } else {
        baton_store(&n->state, RUN_HEAD, memory_order_relaxed); /* head at once */
    }
    int h = heir_wait(l, n, self, since, d);
    if (h == HEIR_LEFT)
        return ETIMEDOUT;
    dequeue(l, n, h == HEIR_TOOK_DEMANDED);
    return 0;
}

void baton_runner_lock_slow(baton_runner_t *l, uintptr_t self) { (void)lock_slow(l, self, NULL); }

int baton_runner_timedlock(baton_runner_t *l, const baton_deadline_t *d)
{
    uintptr_t self = baton_thread_token();
    uintptr_t expected = 0;
    /* Acquire pairs with the release store in baton_runner_release(). */
    if (baton_cas(&l->word, &expected, self, memory_order_acquire, memory_order_relaxed))
        return 0;
    return lock_slow(l, self, d);
}

int baton_runner_release_slow(baton_runner_t *l)
{
    /* Acquire pairs with the heir's release when it raised a flag: its node
     * and `heir` were published before. */
    uint32_t f = baton_load(&l->flags, memory_order_acquire);
    if (f & BATON_RUNNER_ZOMBIE) {
        /* Before we read `heir`: see the top of the file.  Relaxed: a push
         * after the exchange inside raises the flag again. */
        baton_fetch_and(&l->flags, ~BATON_RUNNER_ZOMBIE, memory_order_relaxed);
        zombies_recycle(l);
    }
    baton_qnode_t *h = baton_load(&l->heir, memory_order_acquire);
    baton_store(&l->count, baton_load(&l->count, memory_order_relaxed) + 1u, memory_order_relaxed);
    bool wake = false;
    if (h != NULL) {
        /* While we hold the lock the heir stays the heir (it leaves only by
         * acquiring), so its node is safe to use until we release. */
        uint32_t st = baton_load(&h->state, memory_order_relaxed);
        if ((f & BATON_RUNNER_DEMAND) && st == RUN_HEAD) {
            /* It spins for the lock: hand it over.  The word first, so the
             * heir finds it set when it sees RUN_GRANTED; release on the
             * CAS publishes both, and our critical section, to the heir's
             * acquire load of its state. */
            baton_store(&l->word, atomic_load_explicit(&h->owner, memory_order_relaxed),
                        memory_order_relaxed);
            if (baton_cas(&h->state, &st, RUN_GRANTED, memory_order_release, memory_order_relaxed))
                return 0;
            /* It began to sleep just now: wake it instead, below. */
        }
        /* A heir that sleeps with a flag up sleeps announced (it sleeps
         * unannounced only before it demands): wake it. */
        if ((st & BATON_WAIT_PARKED) && (f & HEIR_FLAGS) != 0) {
            /* Relaxed: the flag is a request, and we answer it. */
            baton_fetch_and(&l->flags, ~BATON_RUNNER_HEIR_PARKED, memory_order_relaxed);
            /* Relaxed: the futex wake below is what the heir waits for; the
             * lock itself it takes with an acquire CAS. */
            wake = baton_cas(&h->state, &st, st & ~BATON_WAIT_PARKED, memory_order_relaxed,
                             memory_order_relaxed);
            if (wake) {
                stamp(h);
            }
        }
    }
    /* Release pairs with the acquiring CAS of the next owner. */
    baton_store(&l->word, 0, memory_order_release);
    /* After the release: woken first, the heir could run on our CPU and
     * find the lock still held.  Its node stays mapped even if it has taken
     * the lock and left already (a stray wake is harmless). */
    if (wake) {
        baton_wake_all(&h->state);
        /* A heir that demanded the lock (its tenure is due) and slept on
         * our CPU can run only if we give the CPU away: do, so that it
         * takes the lock we just let go. */
        if ((f & BATON_RUNNER_DEMAND) &&
            atomic_load_explicit(&h->cpu, memory_order_relaxed) == (uint32_t)sched_getcpu())
            sched_yield();
    }
    return 0;
}

int baton_runner_release_check(baton_runner_t *l)
{
    /* Acquire pairs with the heir's release store of its node. */
    baton_qnode_t *h = baton_load(&l->heir, memory_order_acquire);
    bool wake = false, step_aside = false;
    /* Where we run, for a heir deciding whether to spin (heir_wait()).
     * Relaxed: a hint. */
    uint32_t cpu = (uint32_t)sched_getcpu();
    if (baton_load(&l->owner_cpu, memory_order_relaxed) != cpu)
        baton_store(&l->owner_cpu, cpu, memory_order_relaxed);
    if (h == NULL) {
        if (baton_load(&l->tail, memory_order_relaxed) == NULL) {
            /* Nobody queued: stop counting, until a waiter raises the flag
             * again.  seq_cst, with the tail's load after it: pairs with
             * the queue's exchange and the look in watch(); a waiter that
             * queued meanwhile either sees the flag gone and raises it, or
             * we see its node here and raise it back. */
            baton_fetch_and(&l->flags, ~BATON_RUNNER_WATCH, memory_order_seq_cst);
            if (baton_load(&l->tail, memory_order_seq_cst) != NULL)
                baton_fetch_or(&l->flags, BATON_RUNNER_WATCH, memory_order_relaxed);
        }
    } else {
        const uint64_t now = baton_now_ns(), wake_lat = wake_ns();
        const uint64_t deadline = baton_load(&l->deadline, memory_order_relaxed);
        if (now > deadline + STEP_ASIDE_WAKES * wake_lat && l->stepped != deadline) {
            /* Our heir is overdue and has not demanded the lock (a demand
             * sends the release to the slow path, not here): it has not
             * run, most likely because it waits for our CPU.  Give the CPU
             * away once after this release (the lock is then free for it
             * to take); once per deadline, so that a heir that is merely
             * slow costs us one yield. */
            step_aside = true;
            l->stepped = deadline; /* ours alone: only the owner writes it */
        }
        if (now + wake_lat >= deadline) {
            /* The heir's tenure deadline is a wake-up latency away.  If it
             * sleeps (unannounced: it saw us loop), wake it, so that it
             * spins for the hand-over when the deadline comes.  Our CAS
             * clears its BATON_WAIT_PARKED bit: it is the heir while we
             * hold the lock, so the node is its own. */
            uint32_t st = RUN_HEAD | BATON_WAIT_PARKED;
            wake = baton_cas(&h->state, &st, RUN_HEAD, memory_order_relaxed, memory_order_relaxed);
            if (wake)
                stamp(h);
        }
    }
    /* Release pairs with the acquiring CAS of the next owner. */
    baton_store(&l->word, 0, memory_order_release);
    if (wake)
        baton_wake_all(&h->state);
    if (step_aside)
        sched_yield();
    return 0;
}

/* --- registry entry ------------------------------------------------------- */
#include "../base/kind.h"

static const baton_option_desc_t runner_options[] = {
    {"tenure_us", 0, 1000000, 0,
     "how long the heir lets the owner keep the lock before demanding it (us; 0: adaptive, 8 wake-up latencies)"},
};

/* Written out: the option is in microseconds, the typed init takes
 * nanoseconds. */
static int k_init(void *s, const baton_opts_t *o)
{
    return baton_runner_init(s, &o->wait, (uint32_t)(o->value[0] * 1000u));
}

BATON_KIND_ADAPT_MUTEX(runner)

static int k_release(void *s)
{
    /* A free lock is left alone (glibc returns 0 for a NORMAL mutex too). */
    return baton_runner_is_locked(s) ? baton_runner_release(s) : 0;
}

const baton_kind_t baton_kind_runner = {
    .name = "runner",
    .summary = "default: barging, at most one spinning heir, hand-over only to a running heir after a tenure",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_OWNER | BATON_CAP_NOCOLLAPSE | BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_AUTO,
    .size = sizeof(baton_runner_t),
    .align = _Alignof(baton_runner_t),
    .options = runner_options,
    .noptions = sizeof runner_options / sizeof runner_options[0],
    BATON_KIND_MUTEX_OPS,
    .release = k_release,
};
