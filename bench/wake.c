/* wake.c - `baton bench wake`: what each wait policy costs a waiter.
 *
 * One thread waits (baton_wait_while_eq on a word, with the policy under
 * test) for an event that another thread signals (baton_wait_store) a delay
 * d after the wait began.  Per sample:
 *   - the wake-up latency: from the signal (CLOCK_MONOTONIC read just before
 *     the store) to the waiter running (the same clock, read just after the
 *     wait returns);
 *   - the CPU time the waiter burnt while waiting (its CLOCK_THREAD_CPUTIME_ID
 *     around the wait).
 * A policy's cost at d is its median CPU us per wait plus its median
 * latency in us (medians, so that a sample disturbed by the rest of the
 * machine does not stand for the policy); the bound at d is the lower of
 * the costs of spin (all CPU, no latency) and park (no CPU, all latency),
 * the two pure strategies, and the table gives each policy's cost over that
 * bound.  Targets: spinpark within 2x of the bound at every d, monitor
 * within 1.2x where the CPU has it.
 *
 * The waiter and the signaller are pinned to two CPUs (distinct cores where
 * there are).  Oversubscribed: the same with `cores` more threads that only
 * burn CPU, pinned to every CPU but the signaller's (in turn), so the
 * waiter's core is contended while the signal still leaves on time.  With a
 * single CPU all of them share it.
 *
 * Each (policy, d, oversubscription) cell runs in a child process of its own
 * (the runner, bench.h), with a deadline: a lost wake-up is reported, not
 * waited for.  Its time box is sized from the samples asked for; the table
 * says when the box ended a cell first.  One warm-up sample is dropped.
 *
 * Verification: every wait returned the value stored by its signal (the
 * waiter saw the new value), and never before the signal was sent.
 */
#include "bench.h"
#include "progress.h"
#include "report.h"
#include "topo.h"
#include "../src/wait/wait_internal.h" /* baton_now_ns, baton_clock_ns */

#include <baton/atomic.h>
#include <baton/wait.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define MAX_DELAYS 16
#define MAX_SAMPLES 1000000
#define WAKE_DONE 0x7fffffffu /* `armed` value: the waiter has finished */

/* --- the workload -------------------------------------------------------------- */

struct wake_params {
    baton_wait_kind policy;
    uint64_t delay_ns;
    int samples;          /* counted ones; one more is run first, and dropped */
    int busy;             /* busy-loop threads (oversubscribed), else 0 */
    uint64_t box_ns;      /* no sample starts after this long */
    bool signaller_alone; /* the signaller has a CPU to itself */
};

struct wake_shared {
    /* The word the waiter waits on: sample s waits while it is s. */
    _Alignas(BENCH_LINE) _Atomic uint32_t word;
    /* The waiter's sample number + 1 once it has read its start time (the
     * signaller's delay counts from it), or WAKE_DONE. */
    _Alignas(BENCH_LINE) _Atomic uint32_t armed;
    /* The busy threads stop. */
    _Alignas(BENCH_LINE) _Atomic int done;
};

struct wake_state {
    const struct wake_params *p;
    baton_wait_t policy;    /* the waiter's, under test */
    baton_wait_t handshake; /* the signaller's wait for `armed` */
    struct wake_shared *sh;
    /* Per sample (index 0 is the warm-up): the waiter's start, the signal,
     * the waiter running again (CLOCK_MONOTONIC ns), the waiter's CPU ns
     * while waiting, and the value its wait returned.  start[] is published
     * to the signaller by the release on `armed`; the rest is read after the
     * threads are joined. */
    uint64_t *start, *sig, *woke, *cpu;
    uint32_t *seen;
    int ran; /* samples the waiter ran, warm-up included */
};

static void wake_teardown(void *state)
{
    struct wake_state *s = state;
    free(s->sh);
    free(s->start);
    free(s->sig);
    free(s->woke);
    free(s->cpu);
    free(s->seen);
    free(s);
}

/* The runner opens a lock for every workload ("tas", unused here). */
static void *wake_setup(const void *params, bench_lock_t *lock, int threads, char *err, size_t errlen)
{
    (void)lock;
    (void)threads;
    const struct wake_params *p = params;
    struct wake_state *s = calloc(1, sizeof *s);
    size_t n = (size_t)p->samples + 1;
    if (s) {
        s->sh = aligned_alloc(BENCH_LINE, sizeof *s->sh);
        s->start = calloc(n, sizeof *s->start);
        s->sig = calloc(n, sizeof *s->sig);
        s->woke = calloc(n, sizeof *s->woke);
        s->cpu = calloc(n, sizeof *s->cpu);
        s->seen = calloc(n, sizeof *s->seen);
    }
    if (!s || !s->sh || !s->start || !s->sig || !s->woke || !s->cpu || !s->seen) {
        snprintf(err, errlen, "out of memory");
        if (s)
            wake_teardown(s);
        return NULL;
    }
    s->p = p;
    atomic_init(&s->sh->word, 0);
    atomic_init(&s->sh->armed, 0);
    atomic_init(&s->sh->done, 0);
    int rc = baton_wait_init(&s->policy, p->policy);
    /* The signaller waits for the waiter's next sample by spinning when it
     * has a CPU of its own (so it sees it at once, and the delay is exact),
     * else with spinpark, so as not to take the waiter's CPU. */
    if (rc == 0)
        rc = baton_wait_init(&s->handshake, p->signaller_alone ? BATON_WAIT_SPIN : BATON_WAIT_SPINPARK);
    if (rc != 0) {
        snprintf(err, errlen, "wait policy %s: %s", baton_wait_name(p->policy), strerror(rc));
        wake_teardown(s);
        return NULL;
    }
    return s;
}

static uint64_t waiter_main(struct wake_state *s)
{
    struct wake_shared *sh = s->sh;
    int n = 0;
    const uint64_t end = baton_now_ns() + s->p->box_ns;
    for (int k = 0; k <= s->p->samples; k++) {
        s->start[k] = baton_now_ns();
        if (s->start[k] > end)
            break;
        /* Release (in baton_wait_store): publishes start[k]; pairs with the
         * acquire in the signaller's baton_wait_while_eq. */
        baton_wait_store(&s->handshake, &sh->armed, (uint32_t)k + 1);
        uint64_t c0 = baton_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        s->seen[k] = baton_wait_while_eq(&s->policy, &sh->word, (uint32_t)k);
        s->woke[k] = baton_now_ns();
        s->cpu[k] = baton_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
        n++;
    }
    s->ran = n;
    /* Release (in baton_wait_store): the signaller may leave. */
    baton_wait_store(&s->handshake, &sh->armed, WAKE_DONE);
    /* Relaxed: the flag only ends the busy threads' loops. */
    baton_store(&sh->done, 1, memory_order_relaxed);
    return n > 0 ? (uint64_t)(n - 1) : 0;
}

/* Until CLOCK_MONOTONIC reads `target`: sleep while more than 200 us are
 * left (timer slack is 1 ns, set by the caller), then watch the clock.
 * Nothing is waited for here but time, so the wait layer has no part. */
static void sleep_until(uint64_t target)
{
    for (;;) {
        uint64_t now = baton_now_ns();
        if (now >= target)
            return;
        if (target - now > 200000) {
            uint64_t wake = target - 100000;
            struct timespec t = {(time_t)(wake / 1000000000u), (long)(wake % 1000000000u)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        } else {
            baton_cpu_relax();
        }
    }
}

static void signaller_main(struct wake_state *s)
{
    struct wake_shared *sh = s->sh;
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    uint32_t armed = 0;
    for (;;) {
        /* Acquire (in baton_wait_while_eq): pairs with the waiter's release
         * of `armed`, so start[k] is visible. */
        armed = baton_wait_while_eq(&s->handshake, &sh->armed, armed);
        if (armed == WAKE_DONE)
            return;
        uint32_t k = armed - 1;
        sleep_until(s->start[k] + s->p->delay_ns);
        s->sig[k] = baton_now_ns();
        /* Release (in baton_wait_store): pairs with the acquire in the
         * waiter's baton_wait_while_eq; wakes it if it parked. */
        baton_wait_store(&s->policy, &sh->word, k + 1);
    }
}

/* The runner's `stop` (its duration) is not used: the waiter runs its
 * samples, or its own time box, and everyone stops when it is done; the
 * runner's deadline is the safety net. */
static uint64_t wake_thread_main(void *state, int index, const _Atomic int *stop)
{
    (void)stop;
    struct wake_state *s = state;
    if (index == 0)
        return waiter_main(s);
    if (index == 1) {
        signaller_main(s);
        return 0;
    }
    /* A busy thread: burn CPU until the waiter is done.  Relaxed: the flag
     * only ends the loop. */
    bench_local_t w;
    bench_local_init(&w, 0x9e3779b9u * (uint32_t)index);
    while (!baton_load(&s->sh->done, memory_order_relaxed))
        bench_local_work(&w, 256);
    return w.a[0] == 0x7fffffff; /* keeps the work observable */
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0..1) of v[0..n), sorted in place; nearest rank. */
static double quantile(uint64_t *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    int i = (int)(q * n + 0.999999) - 1;
    if (i < 0)
        i = 0;
    if (i >= n)
        i = n - 1;
    return (double)v[i];
}

enum { EXTRA_LAT_MED = 0, EXTRA_LAT_P99 = 1, EXTRA_CPU = 2, EXTRA_DELAY_MED = 3 };

static void wake_extras(void *state, bench_lock_t *lock, bench_result_t *r)
{
    (void)lock;
    struct wake_state *s = state;
    int n = s->ran - 1; /* without the warm-up */
    if (n < 1)
        return;
    uint64_t *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return;
    for (int k = 1; k <= n; k++)
        v[k - 1] = s->woke[k] >= s->sig[k] ? s->woke[k] - s->sig[k] : 0;
    r->extra[EXTRA_LAT_MED] = quantile(v, n, 0.5);
    r->extra[EXTRA_LAT_P99] = quantile(v, n, 0.99);
    for (int k = 1; k <= n; k++)
        v[k - 1] = s->cpu[k];
    r->extra[EXTRA_CPU] = quantile(v, n, 0.5);
    for (int k = 1; k <= n; k++)
        v[k - 1] = s->sig[k] - s->start[k];
    r->extra[EXTRA_DELAY_MED] = quantile(v, n, 0.5);
    free(v);
}

static int wake_verify(void *state, const uint64_t *ops, int threads, bench_result_t *r)
{
    (void)ops;
    (void)threads;
    struct wake_state *s = state;
    for (int k = 0; k < s->ran; k++) {
        if (s->seen[k] != (uint32_t)k + 1) {
            snprintf(r->message, sizeof r->message,
                     "sample %d: the wait returned %" PRIu32 ", not the stored %d", k, s->seen[k], k + 1);
            return 1;
        }
        if (s->woke[k] < s->sig[k]) {
            snprintf(r->message, sizeof r->message,
                     "sample %d: the waiter ran %" PRIu64 " ns before the signal", k, s->sig[k] - s->woke[k]);
            return 1;
        }
    }
    if (s->ran < 2) {
        snprintf(r->message, sizeof r->message, "no sample beyond the warm-up ran in the time box");
        return 1;
    }
    return 0;
}

static const bench_workload_t wake_workload = {
    .name = "wake",
    .setup = wake_setup,
    .thread_main = wake_thread_main,
    .extras = wake_extras,
    .verify = wake_verify,
    .teardown = wake_teardown,
};

/* --- the command --------------------------------------------------------------------- */

typedef struct wake_rec {
    baton_wait_kind policy;
    uint64_t delay_ns;
    bool over;
    int busy;
    int asked;
    bench_result_t r;
    double cost_us, bound_us; /* bound < 0: spin or park did not run */
} wake_rec_t;

static bool wrec_ok(const wake_rec_t *x) { return x->r.status == BENCH_OK && x->r.ops > 0; }

static const char *wrec_status(const wake_rec_t *x)
{
    return x->r.status == BENCH_TIMEOUT ? "TIMEOUT" : report_status_name(x->r.status, false);
}

static bool monitor_available(void)
{
    const baton_cpu_features_t *f = baton_cpu_features();
    return f->waitpkg || f->monitorx;
}

/* "1us", "10ms", "500" (ns), "2s" -> ns; false if malformed. */
static bool parse_duration(const char *s, size_t len, uint64_t *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || end == buf || !(v >= 0))
        return false;
    double scale = 1;
    if (!strcmp(end, "") || !strcmp(end, "ns"))
        scale = 1;
    else if (!strcmp(end, "us"))
        scale = 1e3;
    else if (!strcmp(end, "ms"))
        scale = 1e6;
    else if (!strcmp(end, "s"))
        scale = 1e9;
    else
        return false;
    v *= scale;
    if (v < 1 || v > 10e9)
        return false;
    *out = (uint64_t)(v + 0.5);
    return true;
}

static void fmt_ns(char *buf, size_t n, double ns)
{
    if (ns >= 1e6)
        snprintf(buf, n, "%.3g ms", ns / 1e6);
    else if (ns >= 1e3)
        snprintf(buf, n, "%.3g us", ns / 1e3);
    else
        snprintf(buf, n, "%.0f ns", ns);
}

static const wake_rec_t *find_rec(const wake_rec_t *recs, int n, baton_wait_kind p, uint64_t d, bool over)
{
    for (int i = 0; i < n; i++)
        if (recs[i].policy == p && recs[i].delay_ns == d && recs[i].over == over)
            return &recs[i];
    return NULL;
}

/* The target check of one policy: cost within `factor` of the bound at
 * every delay. */
static void print_target(const wake_rec_t *recs, int n, bool over, baton_wait_kind p, double factor,
                         const uint64_t *delays, int ndelays)
{
    double worst = 0;
    uint64_t worst_d = 0;
    bool all = true;
    for (int i = 0; i < ndelays; i++) {
        const wake_rec_t *x = find_rec(recs, n, p, delays[i], over);
        if (!x || !wrec_ok(x) || x->bound_us <= 0) {
            all = false;
            continue;
        }
        double ratio = x->cost_us / x->bound_us;
        if (ratio > worst) {
            worst = ratio;
            worst_d = delays[i];
        }
    }
    char d[32];
    fmt_ns(d, sizeof d, (double)worst_d);
    printf("  target: %s within %.1fx of the bound at every d: %s (worst %.2fx at d = %s)%s\n",
           baton_wait_name(p), factor, worst <= factor && all ? "MET" : "MISSED", worst, d,
           all ? "" : "; some delays have no result");
}

/* One record of the JSON (a report_record_fn over the wake_rec_t array). */
static void wake_json_record(FILE *f, int i, const void *ctx)
{
    const wake_rec_t *x = (const wake_rec_t *)ctx + i;
    fprintf(f,
            "\"bench\": \"wake\", \"policy\": \"%s\", \"delay_ns\": %" PRIu64
            ", \"oversubscribed\": %s, \"busy_threads\": %d, \"samples\": %" PRIu64,
            baton_wait_name(x->policy), x->delay_ns, x->over ? "true" : "false", x->busy, x->r.ops);
    if (wrec_ok(x)) {
        fprintf(f,
                ", \"delay_ns_median\": %.0f, \"latency_ns_median\": %.0f, \"latency_ns_p99\": %.0f"
                ", \"cpu_ns_per_wait\": %.0f, \"cost_us\": %.4g",
                x->r.extra[EXTRA_DELAY_MED], x->r.extra[EXTRA_LAT_MED], x->r.extra[EXTRA_LAT_P99],
                x->r.extra[EXTRA_CPU], x->cost_us);
        if (x->bound_us > 0)
            fprintf(f, ", \"bound_us\": %.4g", x->bound_us);
        else
            fprintf(f, ", \"bound_us\": null");
    }
    fprintf(f, ", ");
    report_json_outcome(f, &x->r, wrec_status(x));
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton bench wake [options]\n"
            "  One thread waits (baton_wait_while_eq) with each wait policy for an event another\n"
            "  thread signals (baton_wait_store) a delay d later: wake-up latency (signal -> waiter\n"
            "  running, median and 99th percentile) and the waiter's CPU time while waiting.\n"
            "  cost = CPU us per wait + median latency us; bound = min(cost of spin, cost of park).\n"
            "  --policies LIST      spin,backoff,yield,park,spinpark,monitor (default: all the CPU\n"
            "                       has; spin and park are always measured, for the bound)\n"
            "  --delays LIST        d, in ns or with a unit (us, ms, s) (default 1us,10us,100us,1ms,10ms)\n"
            "  --samples N          samples per cell (default 100; one more warm-up is dropped)\n"
            "  --oversubscribed on|off|both\n"
            "                       also (or only) with `cores` busy-loop threads on every CPU but\n"
            "                       the signaller's (default both)\n"
            "  --json FILE          write every result as JSON\n");
}

/* bench wake's options (all its own but --json). */
struct wake_opts {
    bool want[BATON_WAIT_KINDS];
    bool policies_given;
    uint64_t delays[MAX_DELAYS];
    int ndelays, samples;
    bool run_off, run_on;
};

static int wake_option(int c, const char *arg, void *ctx)
{
    struct wake_opts *wo = ctx;
    int bad = 0;
    switch (c) {
    case 'P':
        wo->policies_given = true;
        for (const char *p = arg; !bad;) {
            size_t len = strcspn(p, ",");
            int k = baton_wait_parse(p, len);
            bad = k < 0 || k == BATON_WAIT_AUTO;
            if (!bad)
                wo->want[k] = true;
            p += len;
            if (*p != ',')
                break;
            p++;
        }
        return bad;
    case 'D':
        wo->ndelays = 0;
        for (const char *p = arg; !bad;) {
            size_t len = strcspn(p, ",");
            bad = wo->ndelays >= MAX_DELAYS || !parse_duration(p, len, &wo->delays[wo->ndelays]);
            wo->ndelays += !bad;
            p += len;
            if (*p != ',')
                break;
            p++;
        }
        return bad;
    case 's': wo->samples = atoi(arg); return wo->samples < 1 || wo->samples > MAX_SAMPLES;
    case 'o':
        wo->run_off = !strcmp(arg, "off") || !strcmp(arg, "both");
        wo->run_on = !strcmp(arg, "on") || !strcmp(arg, "both");
        return !wo->run_off && !wo->run_on;
    default: return 1;
    }
}

int cmd_bench_wake(int argc, char **argv)
{
    bench_opts_t o = {0};
    struct wake_opts wo = {.delays = {1000, 10000, 100000, 1000000, 10000000},
                           .ndelays = 5,
                           .samples = 100,
                           .run_off = true,
                           .run_on = true};
    static const cli_opt_t opts[] = {{"policies", CLI_VALUE, 0, 'P'},
                                     {"delays", CLI_VALUE, 0, 'D'},
                                     {"samples", CLI_VALUE, 0, 's'},
                                     {"oversubscribed", CLI_VALUE, 0, 'o'},
                                     BENCH_OPT_JSON,
                                     BENCH_OPT_END};
    const int prc = bench_getopt("wake", argc, argv, opts, &o, wake_option, &wo, usage);
    if (prc >= 0)
        return prc;
    const char *json_path = o.json;
    bool *want = wo.want;
    const bool policies_given = wo.policies_given, run_off = wo.run_off, run_on = wo.run_on;
    const uint64_t *delays = wo.delays;
    const int ndelays = wo.ndelays, samples = wo.samples;
    const bool monitor = monitor_available();
    if (!policies_given)
        for (int k = 0; k < BATON_WAIT_KINDS; k++)
            want[k] = k != BATON_WAIT_MONITOR || monitor;
    if (want[BATON_WAIT_MONITOR] && !monitor) {
        fprintf(stderr, "baton bench wake: the monitor policy needs waitpkg or MONITORX, which "
                        "this CPU lacks\n");
        return 2;
    }
    bool added = policies_given && (!want[BATON_WAIT_SPIN] || !want[BATON_WAIT_PARK]);
    want[BATON_WAIT_SPIN] = want[BATON_WAIT_PARK] = true; /* the bound */

    bench_setup_t b;
    if (bench_setup_machine(&b, "wake", "compact", 0, false) != 0)
        return 2;
    const int cores = b.cores, *order = b.order;
    /* CPU per thread: waiter, signaller, then the busy threads dealt to
     * every CPU but the signaller's. */
    int *pins = calloc((size_t)cores + 2, sizeof *pins);
    if (!pins) {
        fprintf(stderr, "baton bench wake: out of memory\n");
        bench_cmd_finish(&b, NULL, NULL, NULL, 0, 0);
        return 2;
    }
    const bool alone = cores > 1;
    pins[0] = order[0];
    pins[1] = order[alone ? 1 : 0];
    for (int i = 0; i < cores; i++) {
        int j = alone ? i % (cores - 1) : 0; /* order[] without order[1] */
        pins[2 + i] = order[alone && j >= 1 ? j + 1 : j];
    }

    int npol = 0;
    for (int k = 0; k < BATON_WAIT_KINDS; k++)
        npol += want[k];
    printf("baton bench wake: %d policies, %d delays, %d samples per cell (+1 warm-up); %d CPUs; "
           "waiter on CPU %d, signaller on CPU %d; oversubscribed: %d busy-loop threads, on CPU",
           npol, ndelays, samples, cores, pins[0], pins[1], cores);
    for (int i = 0; i < cores; i++)
        printf("%s%d", i ? "," : " ", pins[2 + i]);
    printf("; spinpark budget %.0f ns%s\n", baton_calibration()->spin_budget_ns,
           monitor ? "" : "; monitor: not on this CPU");
    if (added)
        printf("(spin and park added: the bound is made of them)\n");

    const int modes = run_off + run_on;
    wake_rec_t *recs = calloc((size_t)modes * (size_t)ndelays * BATON_WAIT_KINDS, sizeof *recs);
    if (!recs) {
        fprintf(stderr, "baton bench wake: out of memory\n");
        free(pins);
        bench_cmd_finish(&b, NULL, NULL, NULL, 0, 0);
        return 2;
    }
    int nrecs = 0, failed = 0, nwant = 0;
    for (int k = 0; k < BATON_WAIT_KINDS; k++)
        nwant += want[k];
    bench_progress_begin(((int)run_off + (int)run_on) * ndelays);
    for (int mode = 0; mode < 2; mode++) {
        bool over = mode == 1;
        if ((over && !run_on) || (!over && !run_off))
            continue;
        int first = nrecs;
        for (int id = 0; id < ndelays; id++) {
            char label[64], dl[32];
            fmt_ns(dl, sizeof dl, (double)delays[id]);
            snprintf(label, sizeof label, "wake d=%s%s", dl, over ? " oversubscribed" : "");
            bench_progress_cell(label);
            int step = 0;
            for (int k = 0; k < BATON_WAIT_KINDS; k++) {
                if (!want[k])
                    continue;
                wake_rec_t *x = &recs[nrecs++];
                /* The time box: the samples at d plus generous overheads
                 * (a loaded machine, or yield behind a busy thread, can
                 * take a scheduler slice per sample). */
                double box = 3.0 * (samples + 1) * ((double)delays[id] / 1e9 + 300e-6) + 0.5;
                struct wake_params wp = {(baton_wait_kind)k,    delays[id], samples, over ? cores : 0,
                                         (uint64_t)(box * 1e9), alone};
                /* The runner's duration is only how long it sleeps before
                 * joining: the waiter ends the cell itself. */
                bench_cfg_t cfg = {.threads = 2 + wp.busy,
                                   .duration_s = 0.001,
                                   .pin_policy = TOPO_PIN_COMPACT,
                                   .pin_order = pins,
                                   .npin = 2 + wp.busy,
                                   .deadline_s = box * 2 + 2};
                bench_progress_step(step++, nwant, baton_wait_name(wp.policy));
                bench_run(&wake_workload, &wp, "tas", &cfg, &x->r);
                x->policy = wp.policy;
                x->delay_ns = delays[id];
                x->over = over;
                x->busy = wp.busy;
                x->asked = samples;
                if (wrec_ok(x))
                    x->cost_us = (x->r.extra[EXTRA_CPU] + x->r.extra[EXTRA_LAT_MED]) / 1e3;
                else
                    failed++;
            }
            bench_progress_cell_done();
        }
        /* The bounds, then the table. */
        for (int i = first; i < nrecs; i++) {
            const wake_rec_t *mode_recs = recs + first;
            const int nmode = nrecs - first;
            const wake_rec_t *sp = find_rec(mode_recs, nmode, BATON_WAIT_SPIN, recs[i].delay_ns, over);
            const wake_rec_t *pk = find_rec(mode_recs, nmode, BATON_WAIT_PARK, recs[i].delay_ns, over);
            recs[i].bound_us = sp && pk && wrec_ok(sp) && wrec_ok(pk)
                                   ? (sp->cost_us < pk->cost_us ? sp->cost_us : pk->cost_us)
                                   : -1;
        }
        printf("\nwake, %s\n", over ? "oversubscribed (busy-loop threads on every CPU but the signaller's)"
                                    : "not oversubscribed");
        printf("%-9s %-9s %8s %10s %11s %11s %11s %9s %8s  %s\n", "d", "policy", "samples", "delay med",
               "latency med", "latency p99", "CPU us med", "cost us", "x bound", "status");
        for (int i = first; i < nrecs; i++) {
            const wake_rec_t *x = &recs[i];
            char d[32], dm[32] = "-", lm[32] = "-", lp[32] = "-";
            fmt_ns(d, sizeof d, (double)x->delay_ns);
            if (!wrec_ok(x)) {
                printf("%-9s %-9s %8s %10s %11s %11s %11s %9s %8s  %s: %s\n", d, baton_wait_name(x->policy),
                       "-", "-", "-", "-", "-", "-", "-", wrec_status(x), x->r.message);
                continue;
            }
            fmt_ns(dm, sizeof dm, x->r.extra[EXTRA_DELAY_MED]);
            fmt_ns(lm, sizeof lm, x->r.extra[EXTRA_LAT_MED]);
            fmt_ns(lp, sizeof lp, x->r.extra[EXTRA_LAT_P99]);
            char ratio[16] = "-", note[64] = "";
            if (x->bound_us > 0)
                snprintf(ratio, sizeof ratio, "%.3g", x->cost_us / x->bound_us);
            if ((int)x->r.ops < x->asked)
                snprintf(note, sizeof note, ", %d of %d samples (time box)", (int)x->r.ops, x->asked);
            printf("%-9s %-9s %8" PRIu64 " %10s %11s %11s %11.2f %9.2f %8s  ok%s\n", d,
                   baton_wait_name(x->policy), x->r.ops, dm, lm, lp, x->r.extra[EXTRA_CPU] / 1e3, x->cost_us,
                   ratio, note);
        }
        if (want[BATON_WAIT_SPINPARK])
            print_target(recs + first, nrecs - first, over, BATON_WAIT_SPINPARK, 2.0, delays, ndelays);
        if (want[BATON_WAIT_MONITOR])
            print_target(recs + first, nrecs - first, over, BATON_WAIT_MONITOR, 1.2, delays, ndelays);
        else
            printf("  target: monitor within 1.2x of the bound: not measured (%s)\n",
                   monitor ? "not asked for" : "the CPU has neither waitpkg nor MONITORX");
        fflush(stdout);
    }

    char extra[64];
    snprintf(extra, sizeof extra, "\"samples\": %d", samples);
    int rc = bench_cmd_finish_json(&b, json_path, extra, nrecs, wake_json_record, recs, failed);
    free(recs);
    free(pins);
    return rc;
}
