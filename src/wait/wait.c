/* wait.c - the wait policies: parsing, initialisation and the wait loops.
 *
 * See include/baton/wait.h for what each policy does and for the park
 * protocol (the reserved BATON_WAIT_PARKED bit of a waited-on word).
 */
#include "wait_internal.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

static const char *const names[BATON_WAIT_KINDS] = {
    [BATON_WAIT_SPIN] = "spin", [BATON_WAIT_BACKOFF] = "backoff",   [BATON_WAIT_YIELD] = "yield",
    [BATON_WAIT_PARK] = "park", [BATON_WAIT_SPINPARK] = "spinpark", [BATON_WAIT_MONITOR] = "monitor",
};

/* How long one monitor wait may sleep before we re-check the budget.  Short
 * enough that the budget is honoured to within a few percent, long enough
 * that re-arming costs nothing measurable. */
#define MONITOR_CHUNK_NS 2000.0

const char *baton_wait_name(baton_wait_kind kind)
{
    if (kind == BATON_WAIT_AUTO)
        return "auto";
    return (unsigned)kind < BATON_WAIT_KINDS ? names[kind] : "?";
}

int baton_wait_parse(const char *name, size_t len)
{
    if (len == 4 && memcmp(name, "auto", 4) == 0)
        return BATON_WAIT_AUTO;
    for (int k = 0; k < BATON_WAIT_KINDS; k++)
        if (strlen(names[k]) == len && memcmp(names[k], name, len) == 0)
            return k;
    return -1;
}

static uint8_t monitor_hw(void)
{
    const baton_cpu_features_t *f = baton_cpu_features();
    if (f->waitpkg)
        return BATON_MONITOR_WAITPKG;
    if (f->monitorx)
        return BATON_MONITOR_MWAITX;
    return BATON_MONITOR_NONE;
}

int baton_wait_init(baton_wait_t *w, baton_wait_kind kind)
{
    memset(w, 0, sizeof *w);
    if (kind == BATON_WAIT_AUTO)
        kind = monitor_hw() != BATON_MONITOR_NONE ? BATON_WAIT_MONITOR : BATON_WAIT_SPINPARK;
    if ((unsigned)kind >= BATON_WAIT_KINDS)
        return EINVAL;
    w->kind = (uint8_t)kind;
    /* The budgets of backoff, spinpark and monitor come from the machine's
     * calibration, which costs milliseconds: left at 0 here, they are
     * resolved at the first wait that needs one (lazy_budget()), so that
     * creating locks, and a program that never contends, costs nothing. */
    if (kind == BATON_WAIT_MONITOR) {
        w->hw = monitor_hw();
        if (w->hw == BATON_MONITOR_NONE)
            return ENOTSUP;
    }
    return 0;
}

/* Budgets used while another thread calibrates: spinpark and monitor spin
 * about 50 us (2048 hints at the ~24 ns measured on the project's VMs;
 * less where a hint is cheaper), backoff's largest delay is 64 hints. */
#define DEFAULT_SPIN_ITERS 2048u
#define DEFAULT_BACKOFF_MAX 64u
#define DEFAULT_PAUSE_NS 24.0

/* A policy's budget: its own, or the calibrated one.  The first thread to
 * need the calibration starts it on a background thread (calibrate.c);
 * until it is published every wait uses the defaults above rather than
 * wait for it. */
static uint32_t lazy_budget(const baton_wait_t *w)
{
    if (BATON_LIKELY(w->budget != 0))
        return w->budget;
    const baton_calibration_t *c = baton_calibration_ready();
    if (c == NULL)
        c = baton_calibration_start();
    if (c == NULL)
        return w->kind == BATON_WAIT_BACKOFF ? DEFAULT_BACKOFF_MAX : DEFAULT_SPIN_ITERS;
    return w->kind == BATON_WAIT_BACKOFF ? c->backoff_max : c->spin_budget_iters;
}


/* spinpark's spin limit for one waiting episode: a random fraction of the
 * budget B (the measured cost of one park), drawn from the density
 * e^(x/B) / (B (e-1)) on [0, B].  A fixed limit of B costs at most twice
 * what the better of spinning and parking would have for that wait (and
 * costs exactly that much for waits just longer than B); this randomised
 * limit costs at most e/(e-1) = 1.58 times as much, on average, for every
 * wait length (the randomised ski-rental bound).  Table: 65536 * ln(1 +
 * (i + 0.5) / 64 * (e - 1)), the inverse of its distribution at 64 points;
 * the draw is a per-thread xorshift.  BATON_SPIN_FIXED=1 (read once, see
 * calibrate.c) keeps the fixed limit, and so does a policy flagged
 * BATON_WAIT_FULL_SPIN (wait.h: its sleepers hold up other threads). */
static const uint16_t spin_fraction[64] = {
    874,   2588,  4257,  5886,  7475,  9026,  10542, 12023, 13471, 14889, 16276, 17634, 18965,
    20269, 21548, 22803, 24033, 25242, 26428, 27593, 28738, 29863, 30969, 32057, 33127, 34180,
    35216, 36236, 37241, 38230, 39205, 40165, 41111, 42044, 42964, 43871, 44766, 45649, 46520,
    47379, 48228, 49065, 49892, 50709, 51516, 52312, 53100, 53878, 54646, 55406, 56157, 56900,
    57634, 58361, 59079, 59789, 60492, 61187, 61876, 62556, 63230, 63897, 64558, 65212};

static _Thread_local uint32_t spin_rng __attribute__((tls_model("initial-exec")));

static uint32_t spin_limit(const baton_wait_t *w, uint32_t budget)
{
    if (w->flags & BATON_WAIT_FULL_SPIN)
        return budget;
    const baton_calibration_t *c = baton_calibration_ready();
    if (c != NULL && c->spin_fixed)
        return budget;
    uint32_t x = spin_rng;
    if (BATON_UNLIKELY(x == 0))
        x = (uint32_t)(uintptr_t)&spin_rng | 1u; /* a per-thread seed: its TLS address */
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    spin_rng = x;
    return (uint32_t)(((uint64_t)budget * spin_fraction[x & 63u]) >> 16);
}

bool baton_waiter_pause(baton_waiter_t *s, const _Atomic uint32_t *addr, uint32_t val)
{
    const baton_wait_t *w = s->w;
    switch (w->kind) {
    case BATON_WAIT_SPIN: baton_cpu_relax(); return true;
    case BATON_WAIT_BACKOFF: {
        for (uint32_t i = 0; i < s->delay; i++)
            baton_cpu_relax();
        uint32_t budget = lazy_budget(w);
        if (s->delay < budget)
            s->delay = s->delay * 2 > budget ? budget : s->delay * 2;
        return true;
    }
    case BATON_WAIT_YIELD: sched_yield(); return true;
    case BATON_WAIT_PARK: return false;
    case BATON_WAIT_SPINPARK:
        if (s->spins == 0)
            s->delay = spin_limit(w, lazy_budget(w)); /* this episode's limit (delay is unused here) */
        if (s->spins >= s->delay)
            return false;
        s->spins++;
        baton_cpu_relax();
        return true;
    case BATON_WAIT_MONITOR: {
        if (s->spins >= lazy_budget(w))
            return false;
        /* Until the calibration is published (lazy_budget() started it):
         * the TSC unknown, so the cycle counts below, and the pause the
         * defaults assume. */
        const baton_calibration_t *c = baton_calibration_ready();
        const double pause_ns = c != NULL ? c->pause_ns : DEFAULT_PAUSE_NS;
        double tpn = baton_tsc_per_ns_ready();
        if (addr == NULL) {
            /* Nothing to watch: one spin hint's worth of timed pause. */
            s->spins++;
            baton_monitor_pause(w->hw, tpn > 0.0 ? (uint64_t)(pause_ns * tpn) : 100u);
            return true;
        }
        uint64_t cycles = tpn > 0.0 ? (uint64_t)(MONITOR_CHUNK_NS * tpn) : 4000u;
        uint64_t t0 = baton_now_ns();
        baton_monitor_wait(w->hw, addr, val, cycles);
        /* Charge the time actually slept against the budget, in spin units. */
        double slept = (double)(baton_now_ns() - t0) / pause_ns;
        s->spins += slept < 1.0 ? 1u : (uint32_t)(slept > 1e9 ? 1e9 : slept);
        return true;
    }
    default: baton_cpu_relax(); return true;
    }
}

uint32_t baton_wait_while_eq(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t old)
{
    baton_waiter_t s;
    baton_waiter_init(&s, w);
    for (;;) {
        /* Acquire pairs with the release in baton_wait_store() (or in the
         * caller's own publishing store). */
        uint32_t v = baton_load(word, memory_order_acquire);
        if ((v & ~BATON_WAIT_PARKED) != old)
            return v & ~BATON_WAIT_PARKED;
        if (baton_waiter_pause(&s, word, v))
            continue;
        if (!(v & BATON_WAIT_PARKED)) {
            /* Announce that we sleep.  Relaxed: the bit publishes no data;
             * the waker's exchange reads it in modification order, and if it
             * came first this CAS fails and we re-read the new value. */
            if (!baton_cas(word, &v, v | BATON_WAIT_PARKED, memory_order_relaxed, memory_order_relaxed))
                continue;
            v |= BATON_WAIT_PARKED;
        }
        baton_park(word, v);
    }
}

int baton_wait_while_eq_until(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t old,
                              const baton_deadline_t *d, uint32_t *seen)
{
    baton_waiter_t s;
    baton_waiter_init(&s, w);
    for (;;) {
        /* Acquire pairs with the release in baton_wait_store() (or in the
         * caller's own publishing store). */
        uint32_t v = baton_load(word, memory_order_acquire);
        if ((v & ~BATON_WAIT_PARKED) != old) {
            *seen = v & ~BATON_WAIT_PARKED;
            return 0;
        }
        /* A clock read (~20 ns) per pause: this is the slow path of a
         * timed call, and a pause lasts at least as long. */
        if (baton_deadline_left(d) == 0) {
            *seen = old;
            return ETIMEDOUT;
        }
        if (baton_waiter_pause(&s, word, v))
            continue;
        if (!(v & BATON_WAIT_PARKED)) {
            /* Relaxed: as in baton_wait_while_eq(). */
            if (!baton_cas(word, &v, v | BATON_WAIT_PARKED, memory_order_relaxed, memory_order_relaxed))
                continue;
            v |= BATON_WAIT_PARKED;
        }
        /* Past the deadline the loop's next look decides: a change that
         * came with the time-out still counts. */
        (void)baton_park_until(word, v, d);
    }
}

bool baton_waiter_pause_until(baton_waiter_t *s, const baton_deadline_t *d)
{
    if (baton_deadline_left(d) == 0)
        return false;
    if (!baton_waiter_pause(s, NULL, 0))
        sched_yield();
    return true;
}

/* --- waiting for a helper ------------------------------------------------------------
 *
 * A thread that waits for a delegated operation (its future, its CC-Synch
 * node, its flat-combining record) waits for another thread that is
 * running operations.  Where
 * threads outnumber CPUs that thread may be waiting for a CPU, perhaps
 * ours: spinning then delays the very store we wait for, and parking makes
 * the helper pay a futex wake (and the waiter a wake-up of tens of
 * microseconds on a VM; in CC-Synch the combiner role can be handed to a
 * parked thread, and every thread queued behind it waits that long too).
 * So under spinpark a helper wait is:
 *   yield  a look, then sched_yield() between looks, until the yields would
 *          have cost, with nothing else to run, the spin budget (one park's
 *          cost, spinpark's own budget: 29 us / 478 ns = 61 yields on the
 *          project's 2-CPU VM); meanwhile the CPU goes to whoever can use
 *          it, the helper among them, and a yield with nothing else to run
 *          returns within about a microsecond;
 *   park   as spinpark does after its spin.
 * No spin first: on that VM, spinning one yield's cost before the first
 * yield (20 PAUSEs) made pq slower than yielding at once, against the QD
 * authors' library in the same runs: ccsynch 0.45 against 0.71 of its
 * rate at 2 threads, 0.52 against 0.85 at 16, qd 0.82 against 1.05 at 2
 * (medians of 4 interleaved rounds, docs/results.md).
 * The other policies wait as their names say: `:spin` and `:yield` never
 * park, `:park` parks at once, monitor as in baton_waiter_pause(). */
#define HELPER_YIELDS_MIN 8u
#define HELPER_YIELDS_MAX 1024u
/* While another thread calibrates: the value above for the project's VM. */
#define HELPER_YIELDS_DEFAULT 64u

static uint32_t clamp_u32(double x, uint32_t lo, uint32_t hi)
{
    return x < lo ? lo : x > hi ? hi : (uint32_t)x;
}

/* spinpark's yields before parking: about one park's cost of them. */
static uint32_t helper_budget(const baton_wait_t *w)
{
    const baton_calibration_t *c = baton_calibration_ready();
    if (c == NULL)
        c = baton_calibration_start();
    if (c == NULL || c->pause_ns <= 0 || c->yield_ns <= 0)
        return HELPER_YIELDS_DEFAULT;
    const double budget_ns = w->budget ? w->budget * c->pause_ns : c->spin_budget_ns;
    return clamp_u32(budget_ns / c->yield_ns, HELPER_YIELDS_MIN, HELPER_YIELDS_MAX);
}

bool baton_helper_pause(baton_helper_waiter_t *h, const _Atomic uint32_t *addr, uint32_t val)
{
    if (h->s.w->kind != BATON_WAIT_SPINPARK)
        return baton_waiter_pause(&h->s, addr, val);
    if (h->yields == 0)
        h->budget = helper_budget(h->s.w); /* at the first pause: waits that end at once pay nothing */
    if (h->yields >= h->budget)
        return false;
    h->yields++;
    sched_yield();
    return true;
}

void baton_wake_owed_all(baton_owed_t *o)
{
    for (uint32_t i = 0; i < o->n; i++)
        baton_wake_all(o->word[i]);
    o->n = 0;
}

bool baton_wait_helper_phase(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t old, uint32_t *seen)
{
    /* Acquire pairs with the waker's release (baton_wait_store(), or the
     * kind's own publishing store). */
    uint32_t v = baton_load(word, memory_order_acquire);
    if ((v & ~BATON_WAIT_PARKED) != old) {
        *seen = v & ~BATON_WAIT_PARKED;
        return true;
    }
    baton_helper_waiter_t h;
    baton_helper_waiter_init(&h, w);
    while (baton_helper_pause(&h, word, v)) {
        v = baton_load(word, memory_order_acquire); /* acquire: as above */
        if ((v & ~BATON_WAIT_PARKED) != old) {
            *seen = v & ~BATON_WAIT_PARKED;
            return true;
        }
    }
    return false;
}

uint32_t baton_wait_for_helper(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t old)
{
    uint32_t v;
    if (baton_wait_helper_phase(w, word, old, &v))
        return v;
    /* Park through the wait layer's protocol: what baton_wait_while_eq()
     * does under `park`. */
    baton_wait_t park;
    (void)baton_wait_init(&park, BATON_WAIT_PARK);
    return baton_wait_while_eq(&park, word, old);
}
