/* machine.c - what baton info prints and every JSON result carries: the
 * hardware, its features, and what the primitives cost on it.
 *
 * The costs the wait layer already measures at start-up (spin hint, exchange,
 * sched_yield, futex wake, futex wake-up latency, and the spin budget derived
 * from it) are taken from baton_calibration(), not measured twice.  This file
 * adds the uncontended compare-and-swap, the TSC frequency, the cache-line
 * round trip between two cores, and a transactional-memory commit test.
 */
#include "machine.h"

#include <baton/atomic.h>
#include <baton/wait.h>

#include "../src/wait/wait_internal.h" /* baton_now_ns, baton_tsc_calibrate */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define CAS_ITERS 200000
#define RTT_BATCHES 5
#define RTT_PER_BATCH 40000 /* 5 x 40000 = 200000 timed round trips */
#define RTT_WARMUP 10000

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return v[n / 2];
}


/* --- measurements ------------------------------------------------------------- */

/* Uncontended compare-and-swap that always succeeds: the cost of taking a
 * free lock word.  Median of three runs. */
static double time_cas(void)
{
    double runs[3];
    for (int r = 0; r < 3; r++) {
        _Atomic uint32_t x = 0;
        uint64_t t0 = baton_now_ns();
        for (uint32_t i = 0; i < CAS_ITERS; i++) {
            uint32_t expected = i;
            /* acq_rel/acquire, the orders a lock acquire uses, so the cost
             * matches; single thread, so nothing pairs with them. */
            (void)atomic_compare_exchange_strong_explicit(&x, &expected, i + 1, memory_order_acq_rel,
                                                          memory_order_acquire);
        }
        runs[r] = (double)(baton_now_ns() - t0) / CAS_ITERS;
    }
    return median(runs, 3);
}

/* TSC ticks per nanosecond against CLOCK_MONOTONIC over a 10 ms sleep. */
double machine_tsc_ghz(void) { return baton_tsc_calibrate(10000000u, true, NULL); }

/* Cache-line round trip.  One atomic word on its own 128-byte block (the
 * adjacent-line prefetcher pulls 64-byte lines in pairs); the initiator
 * writes odd values, the responder answers each with the next even one. */
#define RTT_STOP UINT32_MAX

struct rtt_shared {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t word;
    char pad[BATON_CACHELINE - sizeof(uint32_t)];
    /* Set-up and results, on lines of their own, untouched while timing. */
    _Alignas(BATON_CACHELINE) _Atomic int responder_state; /* 0 starting, 1 pinned, 2 failed */
    int cpu_a, cpu_b;
    int ok;
    double batch_ns[RTT_BATCHES];
};

static void *rtt_responder(void *arg)
{
    struct rtt_shared *s = arg;
    int pinned = topo_pin_self(s->cpu_b) == 0;
    /* Release pairs with the initiator's acquire load of responder_state. */
    atomic_store_explicit(&s->responder_state, pinned ? 1 : 2, memory_order_release);
    if (!pinned)
        return NULL;
    const uint32_t total = RTT_WARMUP + RTT_BATCHES * RTT_PER_BATCH;
    for (uint32_t k = 0; k < total; k++) {
        uint32_t want = 2 * k + 1, v;
        /* Acquire pairs with the initiator's release store of `want`.  No
         * spin hint: it would add its own latency to what is measured, and
         * the two threads are on different CPUs. */
        while ((v = atomic_load_explicit(&s->word, memory_order_acquire)) != want)
            if (v == RTT_STOP)
                return NULL;
        /* Release pairs with the initiator's acquire load of the reply. */
        atomic_store_explicit(&s->word, want + 1, memory_order_release);
    }
    return NULL;
}

static void *rtt_initiator(void *arg)
{
    struct rtt_shared *s = arg;
    int pinned = topo_pin_self(s->cpu_a) == 0;
    int st;
    /* Acquire pairs with the responder's release store of its state. */
    while ((st = atomic_load_explicit(&s->responder_state, memory_order_acquire)) == 0)
        sched_yield();
    if (!pinned || st != 1) {
        /* Release pairs with the responder's acquire loads of the word: it
         * sees STOP and exits instead of waiting forever. */
        atomic_store_explicit(&s->word, RTT_STOP, memory_order_release);
        return NULL;
    }
    uint32_t k = 0;
    for (int b = -1; b < RTT_BATCHES; b++) {
        uint32_t n = b < 0 ? RTT_WARMUP : RTT_PER_BATCH;
        uint64_t t0 = baton_now_ns();
        for (uint32_t i = 0; i < n; i++, k++) {
            /* Release pairs with the responder's acquire load. */
            atomic_store_explicit(&s->word, 2 * k + 1, memory_order_release);
            /* Acquire pairs with the responder's release store of the reply. */
            while (atomic_load_explicit(&s->word, memory_order_acquire) != 2 * k + 2)
                ;
        }
        if (b >= 0)
            s->batch_ns[b] = (double)(baton_now_ns() - t0) / n;
    }
    s->ok = 1;
    return NULL;
}

/* Is `cpu` in the calling thread's allowed set (a cpuset or taskset may
 * exclude some online CPUs)?  If the mask cannot be read, assume yes. */
static int cpu_allowed(int cpu)
{
    int ncpu = cpu + 1 > 1024 ? cpu + 1 : 1024;
    cpu_set_t *set = CPU_ALLOC(ncpu);
    if (!set)
        return 1;
    size_t size = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(size, set);
    int ok = 1;
    if (pthread_getaffinity_np(pthread_self(), size, set) == 0)
        ok = CPU_ISSET_S(cpu, size, set) != 0;
    CPU_FREE(set);
    return ok;
}

/* Pick cpu[0] (the first allowed CPU) and the first allowed CPU on another
 * core, else its first SMT sibling; measure the round trip between them. */
static void measure_line_rtt(machine_t *m)
{
    const topo_t *t = &m->topo;
    m->line_rtt_ns = 0.0;
    m->rtt_cpu_a = m->rtt_cpu_b = -1;
    int a = -1, b = -1, sibling = -1;
    for (int i = 0; i < t->ncpus; i++) {
        if (!cpu_allowed(t->cpu[i].cpu))
            continue;
        if (a < 0) {
            a = i;
        } else if (t->cpu[i].package_id != t->cpu[a].package_id || t->cpu[i].core_id != t->cpu[a].core_id) {
            b = i;
            break;
        } else if (sibling < 0) {
            sibling = i;
        }
    }
    if (b < 0)
        b = sibling;
    if (a < 0 || b < 0)
        return; /* a single CPU: no round trip to measure */

    struct rtt_shared *s = aligned_alloc(BATON_CACHELINE, sizeof *s);
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    atomic_init(&s->word, 0);
    atomic_init(&s->responder_state, 0);
    s->cpu_a = t->cpu[a].cpu;
    s->cpu_b = t->cpu[b].cpu;
    pthread_t ta, tb;
    if (pthread_create(&tb, NULL, rtt_responder, s) != 0) {
        free(s);
        return;
    }
    if (pthread_create(&ta, NULL, rtt_initiator, s) != 0) {
        /* Nobody will ever send a value: tell the responder to stop (or
         * let it fail its own pinning).  Release pairs with its acquire. */
        atomic_store_explicit(&s->word, RTT_STOP, memory_order_release);
        pthread_join(tb, NULL);
        free(s);
        return;
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    if (s->ok) {
        m->line_rtt_ns = median(s->batch_ns, RTT_BATCHES);
        m->rtt_cpu_a = s->cpu_a;
        m->rtt_cpu_b = s->cpu_b;
    }
    free(s);
}

/* --- RAPL ----------------------------------------------------------------------- */

#define POWERCAP "/sys/class/powercap"


/* Sum energy_uj over the package domains intel-rapl:N (named "package-N"; a
 * "psys" platform domain would count the packages twice, and the
 * intel-rapl:N:M subdomains are parts of their package).  AMD processors
 * expose the same interface.  The counters wrap at max_energy_range_uj;
 * callers take differences over short intervals. */
double machine_energy_joules(void)
{
    DIR *d = opendir(POWERCAP);
    if (!d)
        return -1.0;
    double total_uj = 0.0;
    int found = 0, failed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *p = e->d_name;
        if (strncmp(p, "intel-rapl:", 11) != 0 || !isdigit((unsigned char)p[11]))
            continue;
        const char *q = p + 11;
        while (isdigit((unsigned char)*q))
            q++;
        if (*q != '\0')
            continue; /* a subdomain, intel-rapl:N:M */
        char path[512], buf[64];
        snprintf(path, sizeof path, POWERCAP "/%s/name", p);
        if (topo_read_file(path, buf, sizeof buf) > 0 && strncmp(buf, "package", 7) != 0)
            continue;
        snprintf(path, sizeof path, POWERCAP "/%s/energy_uj", p);
        if (topo_read_file(path, buf, sizeof buf) <= 0) {
            failed = 1; /* usually EACCES: root-only since CVE-2020-8694 */
            continue;
        }
        char *end;
        errno = 0;
        unsigned long long uj = strtoull(buf, &end, 10);
        if (end == buf || errno != 0) {
            failed = 1;
            continue;
        }
        total_uj += (double)uj;
        found++;
    }
    closedir(d);
    if (!found || failed)
        return -1.0;
    return total_uj * 1e-6;
}

/* --- describe ------------------------------------------------------------------- */

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
}

/* Copy a into dst, then " " and b, truncating to size. */
static void join2(char *dst, size_t size, const char *a, const char *b)
{
    size_t n = 0;
    for (const char *p = a; *p && n + 1 < size; p++)
        dst[n++] = *p;
    if (*b && n + 1 < size)
        dst[n++] = ' ';
    for (const char *p = b; *p && n + 1 < size; p++)
        dst[n++] = *p;
    dst[n] = '\0';
}

void machine_describe(machine_t *m, bool measure)
{
    memset(m, 0, sizeof *m);
    (void)topo_load(&m->topo); /* -1 still leaves a usable description */

    struct utsname u;
    if (uname(&u) == 0)
        join2(m->kernel, sizeof m->kernel, u.sysname, u.release);
    else
        snprintf(m->kernel, sizeof m->kernel, "unknown");
    if (gethostname(m->hostname, sizeof m->hostname) != 0)
        snprintf(m->hostname, sizeof m->hostname, "unknown");
    m->hostname[sizeof m->hostname - 1] = '\0';

    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) == NULL || strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(m->date, sizeof m->date, "unknown");

#if defined(__clang__)
    join2(m->compiler, sizeof m->compiler, "clang", __clang_version__);
#elif defined(__GNUC__)
    join2(m->compiler, sizeof m->compiler, "gcc", __VERSION__);
#else
    snprintf(m->compiler, sizeof m->compiler, "unknown");
#endif
    trim(m->compiler);

    const baton_cpu_features_t *f = baton_cpu_features();
    memcpy(m->vendor, f->vendor, sizeof m->vendor);
    m->vendor[sizeof m->vendor - 1] = '\0';
    m->waitpkg = f->waitpkg;
    m->monitorx = f->monitorx;
    m->rtm = f->rtm;
    /* The library's own start-up probe: what elide(<kind>) decided. */
    baton_htm_info(&m->htm);
    m->rtm_commits = m->htm.probe_tries ? (int)m->htm.probe_commits : -1;
    m->rtm_tries = (int)m->htm.probe_tries;
    m->rapl = machine_energy_joules() >= 0.0;

    m->rtt_cpu_a = m->rtt_cpu_b = -1;
    if (!measure)
        return;
    const baton_calibration_t *c = baton_calibration();
    m->pause_ns = c->pause_ns;
    m->xchg_ns = c->xchg_ns;
    m->yield_ns = c->yield_ns;
    m->futex_wake_ns = c->futex_wake_ns;
    m->wakeup_latency_ns = baton_wakeup_latency_idle();
    m->park_cost_ns = c->park_cost_ns; /* 0 if BATON_SPIN_BUDGET_NS was set */
    m->spin_budget_ns = c->spin_budget_ns;
    m->cas_ns = time_cas();
    m->tsc_ghz = machine_tsc_ghz();
    measure_line_rtt(m);
}

void machine_free(machine_t *m) { topo_free(&m->topo); }

/* --- print ------------------------------------------------------------------------ */

static const char *monitor_hw_name(const machine_t *m)
{
    /* The wait layer's preference (src/wait/wait.c): waitpkg, then MONITORX. */
    return m->waitpkg ? "waitpkg" : m->monitorx ? "mwaitx" : "none";
}

/* pause_ns is clamped to at least 0.1 by calibration, so 0 means "skipped". */
static bool measured(const machine_t *m) { return m->pause_ns > 0.0; }

static const topo_cpu_t *find_cpu(const topo_t *t, int cpu)
{
    for (int i = 0; i < t->ncpus; i++)
        if (t->cpu[i].cpu == cpu)
            return &t->cpu[i];
    return NULL;
}

static void print_ns(FILE *f, const char *label, double ns)
{
    if (ns >= 10000.0)
        fprintf(f, "  %-26s %.1f us\n", label, ns / 1000.0);
    else
        fprintf(f, "  %-26s %.1f ns\n", label, ns);
}

void machine_print(FILE *f, const machine_t *m)
{
    const topo_t *t = &m->topo;
    const baton_cpu_features_t *feat = baton_cpu_features();

    fprintf(f, "CPU\n");
    fprintf(f, "  %-26s %s\n", "model", t->model);
    fprintf(f, "  %-26s %s\n", "vendor", m->vendor[0] ? m->vendor : "unknown");
    fprintf(f, "  %-26s %d cpus, %d cores, %d package%s, %d NUMA node%s, %d thread%s per core\n", "topology",
            t->ncpus, t->ncores, t->npackages, t->npackages == 1 ? "" : "s", t->nnodes,
            t->nnodes == 1 ? "" : "s", t->smt_per_core, t->smt_per_core == 1 ? "" : "s");
    fprintf(f, "  %-26s %d bytes (baton pads to %d)\n", "cache line", t->cacheline, BATON_CACHELINE);

    fprintf(f, "\nFeatures\n");
    if (!m->rtm)
        fprintf(f, "  %-26s absent\n", "RTM");
    else if (m->rtm_commits < 0)
        fprintf(f, "  %-26s present (not tried)\n", "RTM");
    else
        fprintf(f, "  %-26s present, %d/%d trivial transactions committed\n", "RTM", m->rtm_commits,
                m->rtm_tries);
    fprintf(f, "  %-26s %s: %s\n", "lock elision (elide)", m->htm.usable ? "speculates" : "off", m->htm.why);
    fprintf(f, "  %-26s %s\n", "HLE", feat->hle ? "present" : "absent");
    fprintf(f, "  %-26s %s\n", "waitpkg (UMONITOR/UMWAIT)", m->waitpkg ? "present" : "absent");
    fprintf(f, "  %-26s %s\n", "MONITORX/MWAITX", m->monitorx ? "present" : "absent");
    fprintf(f, "  %-26s %s\n", "RAPL energy counter",
            m->rapl ? "readable" : "unavailable (absent or not readable)");
    const char *hw = monitor_hw_name(m);
    if (strcmp(hw, "none") == 0)
        fprintf(f, "  %-26s none: `monitor` is unsupported, `auto` resolves to spinpark\n",
                "monitor policy uses");
    else
        fprintf(f, "  %-26s %s; `auto` resolves to monitor\n", "monitor policy uses", hw);

    fprintf(f, "\nMeasured\n");
    if (!measured(m)) {
        fprintf(f, "  (skipped: --no-measure)\n");
    } else {
        print_ns(f, "pause (spin hint)", m->pause_ns);
        print_ns(f, "atomic exchange", m->xchg_ns);
        print_ns(f, "compare-and-swap", m->cas_ns);
        if (m->rtt_cpu_a >= 0) {
            const topo_cpu_t *ca = find_cpu(t, m->rtt_cpu_a), *cb = find_cpu(t, m->rtt_cpu_b);
            bool smt = ca && cb && ca->package_id == cb->package_id && ca->core_id == cb->core_id;
            fprintf(f, "  %-26s %.1f ns (cpu %d <-> cpu %d%s)\n", "cache-line round trip", m->line_rtt_ns,
                    m->rtt_cpu_a, m->rtt_cpu_b, smt ? ", SMT siblings" : "");
        } else {
            fprintf(f, "  %-26s n/a (one CPU, or pinning failed)\n", "cache-line round trip");
        }
        print_ns(f, "futex wake (no sleeper)", m->futex_wake_ns);
        print_ns(f, "futex wake-up latency", m->wakeup_latency_ns);
        if (m->park_cost_ns > 0.0)
            print_ns(f, "park cost (short wait)", m->park_cost_ns);
        else
            fprintf(f, "  %-26s not measured (BATON_SPIN_BUDGET_NS set)\n", "park cost (short wait)");
        print_ns(f, "sched_yield", m->yield_ns);
        print_ns(f, "spin budget", m->spin_budget_ns);
        if (m->tsc_ghz > 0.0)
            fprintf(f, "  %-26s %.3f GHz\n", "TSC", m->tsc_ghz);
        else
            fprintf(f, "  %-26s n/a\n", "TSC");
    }

    fprintf(f, "\nSystem\n");
    fprintf(f, "  %-26s %s\n", "kernel", m->kernel);
    fprintf(f, "  %-26s %s\n", "hostname", m->hostname);
    fprintf(f, "  %-26s %s\n", "compiler", m->compiler);
    fprintf(f, "  %-26s %s\n", "date", m->date);
}

/* --- JSON -------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f); /* UTF-8 passes through */
        }
    }
    fputc('"', f);
}

/* JSON has no NaN or infinity. */
static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
    else
        fputs("null", f);
}

static void key(FILE *f, const char *k, bool *first)
{
    fputs(*first ? "{" : ", ", f);
    *first = false;
    json_str(f, k);
    fputs(": ", f);
}

void machine_json(FILE *f, const machine_t *m)
{
    const topo_t *t = &m->topo;
    bool first = true;
    key(f, "cpu_model", &first);
    json_str(f, t->model);
    key(f, "vendor", &first);
    json_str(f, m->vendor);
    key(f, "cpus", &first);
    fprintf(f, "%d", t->ncpus);
    key(f, "cores", &first);
    fprintf(f, "%d", t->ncores);
    key(f, "packages", &first);
    fprintf(f, "%d", t->npackages);
    key(f, "numa_nodes", &first);
    fprintf(f, "%d", t->nnodes);
    key(f, "smt_per_core", &first);
    fprintf(f, "%d", t->smt_per_core);
    key(f, "cacheline", &first);
    fprintf(f, "%d", t->cacheline);
    key(f, "kernel", &first);
    json_str(f, m->kernel);
    key(f, "hostname", &first);
    json_str(f, m->hostname);
    key(f, "date", &first);
    json_str(f, m->date);
    key(f, "compiler", &first);
    json_str(f, m->compiler);
    key(f, "rtm", &first);
    fputs(m->rtm ? "true" : "false", f);
    key(f, "rtm_commits", &first);
    fprintf(f, "%d", m->rtm_commits);
    key(f, "rtm_tries", &first);
    fprintf(f, "%d", m->rtm_tries);
    key(f, "elide", &first);
    fprintf(f, "\"%s\"", m->htm.state);
    key(f, "hle", &first);
    fputs(baton_cpu_features()->hle ? "true" : "false", f);
    key(f, "waitpkg", &first);
    fputs(m->waitpkg ? "true" : "false", f);
    key(f, "monitorx", &first);
    fputs(m->monitorx ? "true" : "false", f);
    key(f, "monitor_hw", &first);
    json_str(f, monitor_hw_name(m));
    key(f, "rapl", &first);
    fputs(m->rapl ? "true" : "false", f);
    key(f, "measured", &first);
    fputs(measured(m) ? "true" : "false", f);
    key(f, "pause_ns", &first);
    json_num(f, m->pause_ns);
    key(f, "xchg_ns", &first);
    json_num(f, m->xchg_ns);
    key(f, "cas_ns", &first);
    json_num(f, m->cas_ns);
    key(f, "line_rtt_ns", &first);
    json_num(f, m->line_rtt_ns);
    key(f, "rtt_cpu_a", &first);
    fprintf(f, "%d", m->rtt_cpu_a);
    key(f, "rtt_cpu_b", &first);
    fprintf(f, "%d", m->rtt_cpu_b);
    key(f, "futex_wake_ns", &first);
    json_num(f, m->futex_wake_ns);
    key(f, "wakeup_latency_ns", &first);
    json_num(f, m->wakeup_latency_ns);
    key(f, "park_cost_ns", &first);
    json_num(f, m->park_cost_ns);
    key(f, "yield_ns", &first);
    json_num(f, m->yield_ns);
    key(f, "spin_budget_ns", &first);
    json_num(f, m->spin_budget_ns);
    key(f, "tsc_ghz", &first);
    json_num(f, m->tsc_ghz);
    fputc('}', f);
}
