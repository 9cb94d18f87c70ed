/* baton/wait.h - how a thread waits for a word to change, and how it is woken.
 *
 * Every lock, and every later layer, waits through this header.  A wait
 * policy is a small value (baton_wait_t) embedded in each lock:
 *
 *   spin      poll with the spin hint (PAUSE) between reads.  Lowest wake-up
 *             latency; burns its core; collapses when threads outnumber cores.
 *   backoff   poll with bounded exponential backoff between reads.
 *   yield     poll, calling sched_yield() between reads.
 *   park      no spinning: sleep in the kernel (futex) at once.
 *   spinpark  spin, then park.  The budget B is the cost of one park
 *             measured on the running machine (baton_calibration(): in
 *             the background, from the first wait that needs it; waits
 *             before it is done use a default); each wait spins for a random share of
 *             it (drawn so that a wait costs on average at most e/(e-1) =
 *             1.58 times what the better of spinning and parking would
 *             have: the randomised spin-then-block argument; a fixed B
 *             gives 2).
 *   monitor   wait in a low-power state until the watched cache line is
 *             written: UMONITOR/UMWAIT (Intel waitpkg) or MONITORX/MWAITX
 *             (AMD), detected with CPUID at run time; after the same budget as
 *             spinpark it parks, so it never holds a core that another thread
 *             could use.  Asking for it where the CPU lacks both instruction
 *             pairs is an error (ENOTSUP).
 *
 * "auto" is resolved when a lock is created: monitor where available, else
 * spinpark.
 *
 * The park protocol.  A waited-on word is a 32-bit value whose top bit,
 * BATON_WAIT_PARKED, is reserved: a waiter about to sleep sets it, and a waker
 * that publishes a new value with baton_wait_store() exchanges the whole word
 * and calls futex-wake only if the old value had the bit.  Waited-on words
 * must therefore never use bit 31 for data.
 */
#ifndef BATON_WAIT_H
#define BATON_WAIT_H

#include <baton/atomic.h>
#include <stddef.h>
#include <sys/types.h> /* clockid_t, also under strict ISO C */
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum baton_wait_kind {
    BATON_WAIT_SPIN = 0,
    BATON_WAIT_BACKOFF,
    BATON_WAIT_YIELD,
    BATON_WAIT_PARK,
    BATON_WAIT_SPINPARK,
    BATON_WAIT_MONITOR,
    BATON_WAIT_KINDS,      /* number of concrete policies */
    BATON_WAIT_AUTO = 0xff /* resolved by baton_wait_init() */
} baton_wait_kind;

/* Bit masks of policies, used by the registry to say which a kind accepts. */
#define BATON_WAITS_ALL ((1u << BATON_WAIT_KINDS) - 1u)
#define BATON_WAITS_NONE 0u
#define BATON_WAIT_BIT(k) (1u << (k))

/* The reserved bit of a waited-on word (see the park protocol above). */
#define BATON_WAIT_PARKED 0x80000000u

/* Which hardware instructions the monitor policy uses. */
enum { BATON_MONITOR_NONE = 0, BATON_MONITOR_WAITPKG = 1, BATON_MONITOR_MWAITX = 2 };

typedef struct baton_wait {
    uint8_t kind;    /* baton_wait_kind, never AUTO once initialised */
    uint8_t hw;      /* BATON_MONITOR_* for the monitor policy */
    uint16_t flags;  /* BATON_WAIT_FULL_SPIN, set by the kind after init */
    uint32_t budget; /* spin iterations before parking (spinpark, monitor),
                            or the largest backoff delay in spin hints (backoff);
                            0: the machine's calibrated budget, measured at the
                            first wait that needs it */
} baton_wait_t;

_Static_assert(sizeof(baton_wait_t) == 8, "baton_wait_t is embedded in every lock");

/* baton_wait_t.flags: spinpark spins its whole budget before it parks,
 * rather than a random share of it (wait.c: spin_limit()).  For waits whose
 * sleeper holds up other threads, not only itself: a barrier episode, and
 * a lock server's grant queue, go on only once the woken thread runs, so
 * one waiter that parks early costs every thread a wake-up.  The random
 * share's bound (e/(e-1) of the better of spinning and parking) holds for
 * a wait that costs its own thread alone. */
#define BATON_WAIT_FULL_SPIN 1u

/* Initialise a policy.  Returns 0, EINVAL for an unknown kind, or ENOTSUP for
 * monitor where the CPU has neither waitpkg nor MONITORX. */
BATON_API int baton_wait_init(baton_wait_t *w, baton_wait_kind kind);

/* Parse a policy name ("spin", "backoff", "yield", "park", "spinpark",
 * "monitor", "auto").  Returns the kind, or -1. */
BATON_API int baton_wait_parse(const char *name, size_t len);
BATON_API const char *baton_wait_name(baton_wait_kind kind);

/* True if the policy may put a waiter to sleep in the kernel, in which case
 * wakers must use baton_wait_store() (an exchange) rather than a plain store. */
static inline bool baton_wait_may_park(const baton_wait_t *w)
{
    return w->kind == BATON_WAIT_PARK || w->kind == BATON_WAIT_SPINPARK || w->kind == BATON_WAIT_MONITOR;
}

/* Wait while (*word & ~BATON_WAIT_PARKED) == old; return the new value (bit
 * masked off).  The load that sees the change is an acquire: it pairs with
 * the release in baton_wait_store() (or whatever release published it). */
BATON_API uint32_t baton_wait_while_eq(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t old);

/* Wake every thread sleeping on word (futex wake), and the slow half of
 * baton_wait_store(). */
BATON_API void baton_wake_all(_Atomic uint32_t *word);
BATON_API void baton_wake_one(_Atomic uint32_t *word);

/* Publish a new value of a waited-on word and wake its sleepers.  The store
 * is a release: it pairs with the acquire in baton_wait_while_eq(). */
static inline void baton_wait_store(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t v)
{
    if (baton_wait_may_park(w)) {
        /* Exchange, not store: we must see whether a waiter set the parked
         * bit before our value landed.  acq_rel: release for the data we
         * publish, acquire so the wake cannot be ordered before it. */
        uint32_t old = baton_xchg(word, v, memory_order_acq_rel);
        if (BATON_UNLIKELY(old & BATON_WAIT_PARKED))
            baton_wake_all(word);
    } else {
        baton_store(word, v, memory_order_release);
    }
}

/* A waiting episode: what a lock's slow path uses when it polls something
 * other than a single flag word (a lock word it will try to take, say).
 * baton_waiter_pause() performs one polite pause according to the policy;
 * it returns false when the policy says "stop spinning and park now" (only
 * park, spinpark and monitor ever do).  addr/val let the monitor policy sleep
 * until *addr != val instead of pausing; pass NULL to just pause. */
typedef struct baton_waiter {
    const baton_wait_t *w;
    uint32_t spins;
    uint32_t delay;
} baton_waiter_t;

static inline void baton_waiter_init(baton_waiter_t *s, const baton_wait_t *w)
{
    s->w = w;
    s->spins = 0;
    s->delay = 1;
}

BATON_API bool baton_waiter_pause(baton_waiter_t *s, const _Atomic uint32_t *addr, uint32_t val);

/* Sleep in the kernel while *word == val (futex wait; may return spuriously).
 * Callers set BATON_WAIT_PARKED (or their own "sleeper" encoding) first. */
BATON_API void baton_park(_Atomic uint32_t *word, uint32_t val);
/* The same, for at most `ns` nanoseconds: the safety net of protocols whose
 * wake-up is best-effort (see relay.c). */
BATON_API void baton_park_timeout(_Atomic uint32_t *word, uint32_t val, uint64_t ns);

/* --- deadlines ---------------------------------------------------------------
 *
 * The timed calls (baton_timedlock() and the rest) take an absolute time on
 * a clock, as POSIX does.  The wait layer sleeps until it in the kernel:
 * FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time, and one on
 * CLOCK_REALTIME with FUTEX_CLOCK_REALTIME, so that a change of the wall
 * clock moves a realtime deadline, as POSIX wants.  A deadline is checked
 * (tv_nsec in range, a supported clock) before it reaches these functions. */
typedef struct baton_deadline {
    struct timespec at; /* absolute, on `clock`; tv_nsec in [0, 1e9) */
    clockid_t clock;    /* CLOCK_REALTIME or CLOCK_MONOTONIC */
} baton_deadline_t;

/* Nanoseconds until d, read on d's clock; 0 once it has passed. */
BATON_API uint64_t baton_deadline_left(const baton_deadline_t *d);

/* Sleep in the kernel while *word == val, until woken or until d passes.
 * Returns ETIMEDOUT once d has passed (the kernel said so, or d lies
 * before the epoch), else 0: woken, the word changed, or interrupted, and
 * the caller re-checks.  errno is left as it was. */
BATON_API int baton_park_until(_Atomic uint32_t *word, uint32_t val, const baton_deadline_t *d);

/* Sleep while *word == val for at most ns, and not past d (NULL: no
 * deadline): the bounded sleep of a protocol whose wake-ups are best
 * effort, for a waiter that also has a deadline.  Callers re-check. */
BATON_API void baton_park_for(_Atomic uint32_t *word, uint32_t val, uint64_t ns, const baton_deadline_t *d);

/* baton_wait_while_eq() with a deadline: 0 with the new value (bit
 * masked off) in *seen once the word changed, or ETIMEDOUT once d has
 * passed with the word still holding old (then *seen is old; the parked
 * bit may be left set in the word, which costs a later waker one futex
 * wake, never a lost one).  The load that sees the change is an acquire,
 * as in baton_wait_while_eq(). */
BATON_API int baton_wait_while_eq_until(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t old,
                                        const baton_deadline_t *d, uint32_t *seen);

/* One pause of a timed wait that nobody wakes (readers leaving, a lock
 * some protocol never parks on): the policy's pause while it spins, a
 * sched_yield() once it would park.  Returns false, without pausing, once
 * d has passed. */
BATON_API bool baton_waiter_pause_until(baton_waiter_t *s, const baton_deadline_t *d);

/* Costs measured on the running machine, once per process.  The waits
 * start the measurement on a short-lived background thread and never wait
 * for it; baton_calibration() returns it, waiting for a measurement under
 * way or running it in the calling thread (tens of ms). */
typedef struct baton_calibration {
    double pause_ns;       /* one spin hint */
    double xchg_ns;        /* uncontended atomic exchange */
    double yield_ns;       /* sched_yield() with nothing else to run */
    double futex_wake_ns;  /* futex wake with no sleeper (the syscall) */
    double park_cost_ns;   /* a wait that ends soon: the waiter's CPU for one park and
                                 wake plus its wake-up latency; the spin budget */
    double spin_budget_ns; /* what spinpark and monitor spin before parking */
    uint32_t spin_budget_iters;
    uint32_t backoff_max; /* largest backoff delay, in spin hints */
    int from_env;         /* 1 if BATON_SPIN_BUDGET_NS overrode the budget */
    int spin_fixed;       /* 1 if BATON_SPIN_FIXED=1: spinpark spins the whole budget
                                 every time instead of a random share of it (wait.c) */
} baton_calibration_t;

BATON_API const baton_calibration_t *baton_calibration(void);

/* The futex wake-up latency of a thread parked long enough for its CPU to go
 * idle (wake call until it runs; median of 7, after 300 us of idle each).
 * Measured at the first call (a few milliseconds), for reports: the spin
 * budget uses park_cost_ns instead. */
BATON_API double baton_wakeup_latency_idle(void);

/* CPU features the wait layer (and baton info) use; detected with CPUID. */
typedef struct baton_cpu_features {
    bool waitpkg;  /* UMONITOR/UMWAIT/TPAUSE */
    bool monitorx; /* MONITORX/MWAITX (AMD) */
    bool rtm;      /* RTM advertised by CPUID */
    bool hle;
    char vendor[13];
} baton_cpu_features_t;

BATON_API const baton_cpu_features_t *baton_cpu_features(void);

#ifdef __cplusplus
}
#endif
#endif /* BATON_WAIT_H */
