/* calibrate.c - measure, once, what waiting costs on the running machine.
 *
 * The spin budget of spinpark (and of monitor before it parks) comes from
 * here, not from a constant copied from elsewhere: a waiter that spins for
 * as long as a park/wake round trip costs never loses more than a factor of
 * two against an oracle that knew how long the wait would be (the classic
 * competitive argument for spin-then-block).  So the budget is the measured
 * cost of one park: the waiter's CPU for the futex wait and its wake-up,
 * plus the time from the futex wake until the woken thread runs, for a wait
 * that ends soon (a few microseconds on bare metal; more under a hypervisor).
 * The wake-up latency after a long idle (the CPU halted) is measured too,
 * for reports: a hypervisor's idle path makes it tens of microseconds.
 *
 * The measurement takes 6-7 ms of wall time on the project's 2-CPU VM,
 * 17-20 ms beside one CPU-bound process, 127-199 ms beside two, and took
 * 2.9 s beside three before its loops were bounded in time (2000
 * sched_yield()s that each gave the CPU away for a slice; now 40-50 ms).
 * No program thread waits for it: the first wait that needs a budget
 * starts it on a short-lived background thread (baton_calibration_start())
 * and goes on with the defaults of wait.c, as every wait does until the
 * result is published.  Only baton_calibration() itself (baton info, the
 * benches) waits for it, or runs it in the calling thread if nobody has
 * started it.
 * BATON_SPIN_BUDGET_NS=<ns> skips the wake-up measurement.
 */
#include "wait_internal.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Bounds on the spin budget.  Below 1 us a waiter parks before even a
 * short critical section ends; above 200 us spinning costs more CPU than
 * any futex round trip we have seen, even under nested virtualisation. */
#define BUDGET_MIN_NS 1000.0
#define BUDGET_MAX_NS 200000.0
/* Wake-up latency samples; the median of those taken is used.  The rounds
 * stop at WAKE_SPAN_NS of wall time, and the timed loops below at
 * LOOP_SPAN_NS, so that a loaded machine (where every round waits for a
 * CPU) ends the measurement early rather than late. */
#define WAKE_SAMPLES 7
#define WAKE_SPAN_NS 25000000u
#define LOOP_SPAN_NS 1000000u
/* The park cost assumed when no wake-up was measured in WAKE_SPAN_NS: the
 * middle of the 10-30 us measured on the project's VMs. */
#define PARK_COST_FALLBACK_NS 20000.0
/* The largest backoff delay is a sixteenth of the spin budget, so that a
 * backoff waiter re-reads the word many times within what one park/wake
 * would cost, bounded to [0.5 us, 8 us]. */
#define BACKOFF_DIVISOR 16.0
#define BACKOFF_MIN_NS 500.0
#define BACKOFF_MAX_NS 8000.0

static baton_calibration_t cal;
static double tsc_per_ns;

double baton_tsc_per_ns(void)
{
    (void)baton_calibration();
    return tsc_per_ns;
}

double baton_tsc_per_ns_ready(void) { return baton_calibration_ready() != NULL ? tsc_per_ns : 0.0; }

/* The calibration's threads (the background one, the prober, the sleeper)
 * need little stack: 256 KiB each rather than the default 8 MiB of address
 * space, which a program near its RLIMIT_AS would miss. */
#define CAL_STACK_BYTES (256u * 1024u)

static void cal_stack(pthread_attr_t *attr) { (void)pthread_attr_setstacksize(attr, CAL_STACK_BYTES); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --- wake-up latency: one sleeper, woken WAKE_SAMPLES times --------------- */

struct wake_probe {
    _Atomic uint32_t word;    /* 0: keep sleeping; 1: wake */
    _Atomic uint32_t ready;   /* sleeper is about to park for round r */
    _Atomic uint32_t stop;    /* 1: the prober is done; the sleeper returns */
    _Atomic uint64_t woke_ns; /* when the sleeper ran again */
    _Atomic uint64_t cpu_ns;  /* the sleeper's CPU time for that park and wake */
    int rounds;
};

static uint64_t thread_cpu_ns(void) { return baton_clock_ns(CLOCK_THREAD_CPUTIME_ID); }

/* The prober ends the rounds early by storing stop, then word = 1 with a
 * wake: the sleeper reads stop after every change of word it sees.
 * Acquire on those loads of word pairs with the prober's release store,
 * so a word that changed for the stop shows the stop too. */
static bool sleeper_stopped(struct wake_probe *p)
{
    return atomic_load_explicit(&p->stop, memory_order_relaxed);
}

static void *sleeper(void *arg)
{
    struct wake_probe *p = arg;
    for (int r = 1; r <= p->rounds; r++) {
        /* Release pairs with the prober's acquire of `ready`. */
        uint64_t c0 = thread_cpu_ns();
        atomic_store_explicit(&p->ready, (uint32_t)r, memory_order_release);
        while (atomic_load_explicit(&p->word, memory_order_acquire) == 0)
            baton_park(&p->word, 0);
        if (sleeper_stopped(p))
            return NULL;
        uint64_t now = baton_now_ns();
        atomic_store_explicit(&p->cpu_ns, thread_cpu_ns() - c0, memory_order_relaxed);
        /* Release: publishes cpu_ns with it (the prober's acquire). */
        atomic_store_explicit(&p->woke_ns, now, memory_order_release);
        while (atomic_load_explicit(&p->word, memory_order_acquire) != 0) {
            if (sleeper_stopped(p))
                return NULL;
            sched_yield(); /* wait for the prober to re-arm */
        }
    }
    return NULL;
}

/* Wake a parked thread up to WAKE_SAMPLES times, each `gap_ns` after it said
 * it was about to park, for at most WAKE_SPAN_NS; the median latency (wake
 * call to the thread running) of the rounds that completed, and in *cpu_ns
 * the median CPU time the sleeper spent on one park and wake; -1 if no
 * round completed (or no thread could be started).  deep: the prober sleeps
 * through the gap, so both CPUs may go idle (as under a parked lock waiter
 * that waits long); else it spins through it (a wait that ends soon: what
 * the spin budget is about). */
static double measure_wakeup_on(uint64_t gap_ns, bool deep, double *cpu_ns, const cpu_set_t *sleeper_cpu)
{
    struct wake_probe p;
    memset(&p, 0, sizeof p);
    p.rounds = WAKE_SAMPLES;
    pthread_t t;
    *cpu_ns = 0.0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    cal_stack(&attr);
    if (sleeper_cpu)
        (void)pthread_attr_setaffinity_np(&attr, sizeof *sleeper_cpu, sleeper_cpu);
    int rc = pthread_create(&t, &attr, sleeper, &p);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return -1.0;
    const uint64_t end = baton_now_ns() + WAKE_SPAN_NS;
    double samples[WAKE_SAMPLES], cpu[WAKE_SAMPLES];
    int n = 0;
    for (int r = 1; r <= WAKE_SAMPLES; r++) {
        bool late = false;
        while (atomic_load_explicit(&p.ready, memory_order_acquire) != (uint32_t)r && !late) {
            sched_yield();
            late = baton_now_ns() > end;
        }
        if (late)
            break;
        /* Give the sleeper time to enter the kernel. */
        if (deep) {
            struct timespec d = {0, (long)gap_ns};
            nanosleep(&d, NULL);
        } else {
            uint64_t until = baton_now_ns() + gap_ns;
            while (baton_now_ns() < until)
                baton_cpu_relax();
        }
        atomic_store_explicit(&p.woke_ns, 0, memory_order_relaxed);
        uint64_t t0 = baton_now_ns();
        atomic_store_explicit(&p.word, 1, memory_order_release);
        baton_wake_all(&p.word);
        uint64_t t1;
        /* Acquire pairs with the sleeper's release of woke_ns (and cpu_ns). */
        while ((t1 = atomic_load_explicit(&p.woke_ns, memory_order_acquire)) == 0 && !late) {
            sched_yield();
            late = baton_now_ns() > end;
        }
        if (late)
            break;
        samples[n] = (double)(t1 - t0);
        cpu[n++] = (double)atomic_load_explicit(&p.cpu_ns, memory_order_relaxed);
        atomic_store_explicit(&p.word, 0, memory_order_release);
    }
    /* Relaxed: the release store of word below publishes it (the sleeper
     * reads stop after an acquire load of word). */
    atomic_store_explicit(&p.stop, 1u, memory_order_relaxed);
    atomic_store_explicit(&p.word, 1, memory_order_release);
    baton_wake_all(&p.word);
    pthread_join(t, NULL);
    if (n == 0)
        return -1.0;
    qsort(samples, (size_t)n, sizeof samples[0], cmp_double);
    qsort(cpu, (size_t)n, sizeof cpu[0], cmp_double);
    *cpu_ns = cpu[n / 2];
    return samples[n / 2];
}

/* The measurement runs on a prober thread and a sleeper thread pinned to two
 * different CPUs of the process's set: left to the scheduler they sometimes
 * share one, and a wake-up then costs one context switch (about 1 us here)
 * rather than what a waiter on another CPU pays, and the budget came out 6x
 * too short one run in three. */
struct wake_job {
    uint64_t gap_ns;
    bool deep;
    double latency, cpu;
    cpu_set_t sleeper_cpu;
    bool pinned;
};

static void *prober(void *arg)
{
    struct wake_job *j = arg;
    j->latency = measure_wakeup_on(j->gap_ns, j->deep, &j->cpu, j->pinned ? &j->sleeper_cpu : NULL);
    return NULL;
}

static double measure_wakeup(uint64_t gap_ns, bool deep, double *cpu_ns)
{
    struct wake_job j = {.gap_ns = gap_ns, .deep = deep};
    cpu_set_t allowed, prober_cpu;
    CPU_ZERO(&prober_cpu);
    CPU_ZERO(&j.sleeper_cpu);
    int found = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
            if (CPU_ISSET(c, &allowed))
                CPU_SET(c, found++ == 0 ? &prober_cpu : &j.sleeper_cpu);
    j.pinned = found == 2;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    cal_stack(&attr);
    if (j.pinned)
        (void)pthread_attr_setaffinity_np(&attr, sizeof prober_cpu, &prober_cpu);
    pthread_t t;
    int rc = pthread_create(&t, &attr, prober, &j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        j.latency = measure_wakeup_on(gap_ns, deep, &j.cpu, NULL);
    } else {
        pthread_join(t, NULL);
    }
    *cpu_ns = j.cpu;
    return j.latency;
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

/* The mean cost of one call, over up to 2000 calls and at most LOOP_SPAN_NS:
 * beside CPU-bound processes one sched_yield() gives the CPU away for a
 * scheduler slice (1.4 ms was measured beside three), and 2000 of them took
 * 2.8 s. */
static double time_calls(void (*call)(void *), void *arg)
{
    const int n = 2000;
    const uint64_t t0 = baton_now_ns();
    uint64_t t = t0;
    int i = 0;
    while (i < n && t - t0 < LOOP_SPAN_NS) {
        call(arg);
        i++;
        t = baton_now_ns();
    }
    return (double)(t - t0) / i;
}

static void yield_call(void *arg)
{
    (void)arg;
    sched_yield();
}

/* A wake with nobody asleep on the word: the system call alone. */
static void wake_call(void *word) { baton_wake_one(word); }

static double time_yield(void) { return time_calls(yield_call, NULL); }

static double time_futex_wake(void)
{
    _Atomic uint32_t w = 0;
    return time_calls(wake_call, &w);
}

/* The TSC against the clock over a 2 ms sleep. */
#define TSC_SPAN_NS 2000000u

static void measure_tsc(void) { tsc_per_ns = baton_tsc_calibrate(TSC_SPAN_NS, true, NULL); }

static double clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

bool baton_spin_fixed_env(const char *value) { return value != NULL && strcmp(value, "1") == 0; }

bool baton_spin_budget_env(const char *value, double *ns)
{
    if (value == NULL || value[0] == '\0')
        return false;
    double v = strtod(value, NULL);
    *ns = v == v ? clamp(v, 0.0, 1e9) : 0.0; /* NaN: no spinning */
    return true;
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

    cal.spin_fixed = baton_spin_fixed_env(getenv("BATON_SPIN_FIXED"));
    if (baton_spin_budget_env(getenv("BATON_SPIN_BUDGET_NS"), &cal.spin_budget_ns)) {
        cal.from_env = 1;
    } else {
        double cpu_soon;
        /* The budget is what parking costs a wait that ends soon after the
         * waiter gave up spinning: the sleeper's CPU for the park and the
         * wake, plus the wake-up latency when the CPU has not gone deeply
         * idle.  Spinning that long and then parking costs at most twice
         * what the better of the two would have (measured by `baton bench
         * wake`); the deep-idle latency (baton_wakeup_latency_idle(), what
         * a long sleeper pays) overshot it: 9.5 us against a park cost of
         * 6 us on this project's 2-CPU VM, 2.6x the bound at a 100 us wait.
         * That one is measured only when asked for (baton info): it costs
         * 2-3 ms, too much for every process's start-up. */
        double lat_soon = measure_wakeup(20000, false, &cpu_soon);
        cal.park_cost_ns = lat_soon >= 0.0 ? lat_soon + cpu_soon : PARK_COST_FALLBACK_NS;
        cal.spin_budget_ns = clamp(cal.park_cost_ns, BUDGET_MIN_NS, BUDGET_MAX_NS);
    }
    /* One spin iteration is a load plus a spin hint; the hint dominates. */
    double iters = cal.spin_budget_ns / cal.pause_ns;
    cal.spin_budget_iters = iters < 1.0 ? 1u : iters > 4e9 ? 4000000000u : (uint32_t)iters;
    double backoff_ns = clamp(cal.spin_budget_ns / BACKOFF_DIVISOR, BACKOFF_MIN_NS, BACKOFF_MAX_NS);
    double bmax = backoff_ns / cal.pause_ns;
    cal.backoff_max = bmax < 1.0 ? 1u : (uint32_t)bmax;
}

static double idle_latency_ns;
static pthread_once_t idle_once = PTHREAD_ONCE_INIT;

static void measure_idle(void)
{
    double cpu;
    double ns = measure_wakeup(300000, true, &cpu);
    idle_latency_ns = ns > 0.0 ? ns : 0.0; /* 0: not measured */
}

double baton_wakeup_latency_idle(void)
{
    pthread_once(&idle_once, measure_idle);
    return idle_latency_ns;
}

/* --- who runs it, and when ---------------------------------------------------
 *
 * cal_state: CAL_NONE -> CAL_RUNNING (one thread, elected by CAS) ->
 * CAL_DONE (release: publishes `cal` and tsc_per_ns).  Threads that must
 * have the result (baton_calibration()) sleep on the word while it reads
 * CAL_RUNNING; the publisher wakes them.
 *
 * A fork while it runs leaves the child with CAL_RUNNING and no thread to
 * finish it: the child handler (registered when the library is loaded,
 * before any thread can start a calibration) sets the word back to
 * CAL_NONE, and the child's next need starts it again. */
enum { CAL_NONE = 0, CAL_RUNNING = 1, CAL_DONE = 2 };
static _Atomic uint32_t cal_state;

static void cal_child(void)
{
    /* Relaxed: the child has one thread. */
    if (atomic_load_explicit(&cal_state, memory_order_relaxed) == CAL_RUNNING)
        atomic_store_explicit(&cal_state, CAL_NONE, memory_order_relaxed);
}

__attribute__((constructor)) static void cal_register_fork(void)
{
    (void)pthread_atfork(NULL, NULL, cal_child);
}

static bool cal_claim(void)
{
    uint32_t expected = CAL_NONE;
    /* Relaxed: only elects the thread that calibrates; the result is
     * published by cal_publish()'s release. */
    return atomic_compare_exchange_strong_explicit(&cal_state, &expected, CAL_RUNNING, memory_order_relaxed,
                                                   memory_order_relaxed);
}

static void cal_run(void)
{
    calibrate();
    /* Release: publishes `cal` and tsc_per_ns to baton_calibration_ready()'s
     * acquire. */
    atomic_store_explicit(&cal_state, CAL_DONE, memory_order_release);
    baton_wake_all(&cal_state);
}

static void *cal_thread(void *arg)
{
    (void)arg;
    (void)pthread_setname_np(pthread_self(), "baton-calib"); /* for ps and top */
    cal_run();
    return NULL;
}

const baton_calibration_t *baton_calibration(void)
{
    for (;;) {
        /* Acquire pairs with the release in cal_run(). */
        uint32_t st = atomic_load_explicit(&cal_state, memory_order_acquire);
        if (st == CAL_DONE)
            return &cal;
        if (st == CAL_NONE) {
            if (cal_claim())
                cal_run();
            continue;
        }
        baton_park(&cal_state, CAL_RUNNING);
    }
}

int baton_thread_start_masked(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

const baton_calibration_t *baton_calibration_ready(void)
{
    /* Acquire pairs with the release store in cal_run(). */
    return atomic_load_explicit(&cal_state, memory_order_acquire) == CAL_DONE ? &cal : NULL;
}

const baton_calibration_t *baton_calibration_start(void)
{
    const baton_calibration_t *c = baton_calibration_ready();
    if (c != NULL || !cal_claim())
        return c;
    /* A detached thread with every signal blocked. */
    pthread_attr_t attr;
    pthread_t t;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        cal_stack(&attr);
        rc = baton_thread_start_masked(&t, &attr, cal_thread, NULL);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0)
        cal_run(); /* no thread to be had: here, bounded as it is */
    return baton_calibration_ready();
}
