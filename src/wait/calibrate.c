/* calibrate.c - measure, once, what waiting costs on the running machine.
 *
 * The spin budget of spinpark (and of monitor before it parks) comes from
 * here, not from a constant copied from elsewhere: a waiter that spins for
 * as long as a park/wake round trip costs never loses more than a factor of
 * two against an oracle that knew how long the wait would be (the classic
 * competitive argument for spin-then-block).  So the budget is the measured
 * futex wake-up latency: the time from a futex wake until the woken thread
 * runs.  On a bare-metal machine that is a few microseconds; under a
 * hypervisor whose idle path halts the virtual CPU it is tens.
 *
 * The measurement runs at the first use of a policy that needs it, costs a
 * few milliseconds, and can be skipped with BATON_SPIN_BUDGET_NS=<ns>.
 */
#include "wait_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Bounds on the spin budget.  Below 1 us a waiter parks before even a
 * short critical section ends; above 200 us spinning costs more CPU than
 * any futex round trip we have seen, even under nested virtualisation. */
#define BUDGET_MIN_NS 1000.0
#define BUDGET_MAX_NS 200000.0
/* Wake-up latency samples; the median is used. */
#define WAKE_SAMPLES 7
/* The largest backoff delay is a sixteenth of the spin budget, so that a
 * backoff waiter re-reads the word many times within what one park/wake
 * would cost, bounded to [0.5 us, 8 us]. */
#define BACKOFF_DIVISOR 16.0
#define BACKOFF_MIN_NS 500.0
#define BACKOFF_MAX_NS 8000.0

static baton_calibration_t cal;
static double tsc_per_ns;
static pthread_once_t cal_once = PTHREAD_ONCE_INIT;

uint64_t baton_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double baton_tsc_per_ns(void)
{
    (void)baton_calibration();
    return tsc_per_ns;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --- wake-up latency: one sleeper, woken WAKE_SAMPLES times --------------- */

struct wake_probe {
    _Atomic uint32_t word;     /* 0: keep sleeping; 1: wake */
    _Atomic uint32_t ready;    /* sleeper is about to park for round r */
    _Atomic uint64_t woke_ns;  /* when the sleeper ran again */
    int rounds;
};

static void *sleeper(void *arg)
{
    struct wake_probe *p = arg;
    for (int r = 1; r <= p->rounds; r++) {
        /* Release pairs with the prober's acquire of `ready`. */
        atomic_store_explicit(&p->ready, (uint32_t)r, memory_order_release);
        while (atomic_load_explicit(&p->word, memory_order_acquire) == 0)
            baton_park(&p->word, 0);
        atomic_store_explicit(&p->woke_ns, baton_now_ns(), memory_order_release);
        while (atomic_load_explicit(&p->word, memory_order_acquire) != 0)
            sched_yield(); /* wait for the prober to re-arm */
    }
    return NULL;
}

static double measure_wakeup_latency(void)
{
    struct wake_probe p;
    memset(&p, 0, sizeof p);
    p.rounds = WAKE_SAMPLES;
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, &p) != 0)
        return 0.0;
    double samples[WAKE_SAMPLES];
    for (int r = 1; r <= WAKE_SAMPLES; r++) {
        while (atomic_load_explicit(&p.ready, memory_order_acquire) != (uint32_t)r)
            sched_yield();
        /* Give the sleeper time to enter the kernel and the CPU time to go
         * idle, as a parked lock waiter would. */
        struct timespec d = {0, 300000};
        nanosleep(&d, NULL);
        atomic_store_explicit(&p.woke_ns, 0, memory_order_relaxed);
        uint64_t t0 = baton_now_ns();
        atomic_store_explicit(&p.word, 1, memory_order_release);
        baton_wake_all(&p.word);
        uint64_t t1;
        while ((t1 = atomic_load_explicit(&p.woke_ns, memory_order_acquire)) == 0)
            sched_yield();
        samples[r - 1] = (double)(t1 - t0);
        atomic_store_explicit(&p.word, 0, memory_order_release);
    }
    pthread_join(t, NULL);
    qsort(samples, WAKE_SAMPLES, sizeof samples[0], cmp_double);
    return samples[WAKE_SAMPLES / 2];
}

/* --- single-thread costs -------------------------------------------------- */

static double time_pause(void)
{
    const int n = 20000;
    uint64_t t0 = baton_now_ns();
    for (int i = 0; i < n; i++)
        baton_cpu_relax();
    return (double)(baton_now_ns() - t0) / n;
}

static double time_xchg(void)
{
    const int n = 200000;
    _Atomic uint32_t x = 0;
    uint64_t t0 = baton_now_ns();
    for (int i = 0; i < n; i++)
        (void)atomic_exchange_explicit(&x, (uint32_t)i, memory_order_acq_rel);
    return (double)(baton_now_ns() - t0) / n;
}

static double time_yield(void)
{
    const int n = 2000;
    uint64_t t0 = baton_now_ns();
    for (int i = 0; i < n; i++)
        sched_yield();
    return (double)(baton_now_ns() - t0) / n;
}

static double time_futex_wake(void)
{
    const int n = 2000;
    _Atomic uint32_t w = 0;
    uint64_t t0 = baton_now_ns();
    for (int i = 0; i < n; i++)
        baton_wake_one(&w);
    return (double)(baton_now_ns() - t0) / n;
}

static void measure_tsc(void)
{
    uint64_t c0 = baton_rdtsc(), t0 = baton_now_ns();
    struct timespec d = {0, 2000000};
    nanosleep(&d, NULL);
    uint64_t c1 = baton_rdtsc(), t1 = baton_now_ns();
    tsc_per_ns = (t1 > t0 && c1 > c0) ? (double)(c1 - c0) / (double)(t1 - t0) : 0.0;
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void calibrate(void)
{
    measure_tsc();
    cal.pause_ns = time_pause();
    if (cal.pause_ns < 0.1)
        cal.pause_ns = 0.1;
    cal.xchg_ns = time_xchg();
    cal.yield_ns = time_yield();
    cal.futex_wake_ns = time_futex_wake();

    const char *env = getenv("BATON_SPIN_BUDGET_NS");
    if (env && *env) {
        cal.spin_budget_ns = clamp(strtod(env, NULL), 0.0, 1e9);
        cal.from_env = 1;
    } else {
        cal.wakeup_latency_ns = measure_wakeup_latency();
        cal.spin_budget_ns = clamp(cal.wakeup_latency_ns, BUDGET_MIN_NS, BUDGET_MAX_NS);
    }
    /* One spin iteration is a load plus a spin hint; the hint dominates. */
    double iters = cal.spin_budget_ns / cal.pause_ns;
    cal.spin_budget_iters = iters < 1.0 ? 1u : iters > 4e9 ? 4000000000u : (uint32_t)iters;
    double backoff_ns = clamp(cal.spin_budget_ns / BACKOFF_DIVISOR, BACKOFF_MIN_NS, BACKOFF_MAX_NS);
    double bmax = backoff_ns / cal.pause_ns;
    cal.backoff_max = bmax < 1.0 ? 1u : (uint32_t)bmax;
}

const baton_calibration_t *baton_calibration(void)
{
    pthread_once(&cal_once, calibrate);
    return &cal;
}
