/* server.c - `baton bench server`: lock servers (pLock's basic, chaining,
 * hierarchical and combined designs) against baton's mutexes.
 *
 * Every thread loops: take the lock, run a short critical section, release
 * it, then wait out an interval of thread-local work.  The critical section
 * is one of the pLock paper's Table 1 / Figure 17 programs:
 *   counter     increment one shared counter;
 *   stack       push one of the thread's own nodes onto a shared linked
 *               stack, or pop one (alternately);
 *   imbalanced  the counter, but client k (1-based) waits k intervals
 *               between its critical sections (k times client 1's work).
 * The interval (--interval-ns) reproduces Figures 12-13 (throughput and the
 * latency of one critical section, lock to unlock, against the interval);
 * the thread counts Figures 14-15 (scaling with the clients).  The paper's
 * intervals are cycles (100 to 100 000): --interval-cycles converts them
 * with this machine's TSC rate.
 *
 * Messages.  The server kinds count what they send and receive by role
 * (global server, local servers, clients: baton_stats_t.msg_*); the table
 * shows messages per critical section, and a summary compares the server
 * kinds of the most contended cell the way the paper's Equation 15 does
 * (basic scaled to 6.00), with the paper's best- and worst-case counts
 * (Equations 1-7) for the run's clients N, sections S and groups T beside.
 *
 * Verification, every run: the counter equals the critical sections run;
 * the stack holds exactly the nodes no thread holds, each once; a thread's
 * latency samples are counted.  --inject-fault makes thread 0 skip the
 * lock for some sections, and the run must fail.
 */
#include "bench.h"
#include "progress.h"
#include "report.h"
#include "topo.h"
#include "workloads.h"

#include <baton/atomic.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relaxed: the lock under test orders the critical sections; the atomics
 * keep the --inject-fault run free of data races. */
#define GET(field) baton_load(&(field), memory_order_relaxed)
#define SET(field, v) baton_store(&(field), (v), memory_order_relaxed)

#define NIL UINT32_MAX
#define NODES_PER_THREAD 64
#define LATENCY_EVERY 8 /* time one critical section in 8 */

static const char *const wl_names[WL_COUNT] = {"counter", "stack", "imbalanced"};

/* extra[]: the ops-per-session slot stays the runner's; then ours. */
enum {
    EX_LATENCY = BENCH_EXTRA_OPS_PER_SESSION + 1, /* ns, lock to unlock */
    EX_MSGS,                                      /* messages per critical section */
    EX_SENT,                                      /* sent by role: 3 slots */
    EX_RECV = EX_SENT + BATON_ROLES,              /* received by role: 3 slots */
    EX_END = EX_RECV + BATON_ROLES
};
_Static_assert(EX_END <= BENCH_EXTRAS, "the runner carries every figure");

struct srv_shared {
    _Alignas(BENCH_LINE) _Atomic uint64_t counter;
    _Alignas(BENCH_LINE) _Atomic uint32_t top; /* the stack: a node index, or NIL */
};

struct srv_thread {
    _Alignas(BENCH_LINE) uint64_t sections, pushes, pops, lat_ns, lat_n;
    uint32_t held[NODES_PER_THREAD]; /* nodes this thread holds (popped or never pushed) */
    uint32_t nheld;
    int error;
};

struct srv_state {
    const struct srv_params *p;
    bench_lock_t *lock;
    struct srv_shared *sh;
    _Atomic uint32_t *next; /* the stack's links, one per node */
    struct srv_thread *t;
    int threads;
    uint32_t nodes;
    uint64_t end_counter;
};

struct srv_op {
    struct srv_state *s;
    struct srv_thread *me;
    bool push;
};

/* The critical section. */
static void srv_section(void *p)
{
    struct srv_op *o = p;
    struct srv_state *s = o->s;
    if (s->p->workload != WL_STACK) {
        SET(s->sh->counter, GET(s->sh->counter) + 1);
        return;
    }
    struct srv_thread *me = o->me;
    if (o->push) {
        uint32_t n = me->held[--me->nheld];
        SET(s->next[n], GET(s->sh->top));
        SET(s->sh->top, n);
        me->pushes++;
    } else {
        uint32_t n = GET(s->sh->top);
        if (n != NIL && n < s->nodes) {
            SET(s->sh->top, GET(s->next[n]));
            me->held[me->nheld++] = n;
            me->pops++;
        }
    }
}

static void *srv_setup(const void *params, bench_lock_t *lock, int threads, char *err, size_t errlen)
{
    struct srv_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->p = params;
    s->lock = lock;
    s->threads = threads;
    s->nodes = (uint32_t)threads * NODES_PER_THREAD;
    s->sh = aligned_alloc(BENCH_LINE, sizeof *s->sh);
    s->next = calloc(s->nodes, sizeof *s->next);
    s->t = aligned_alloc(BENCH_LINE, (size_t)threads * sizeof *s->t);
    if (!s->sh || !s->next || !s->t) {
        snprintf(err, errlen, "out of memory");
        free(s->sh);
        free(s->next);
        free(s->t);
        free(s);
        return NULL;
    }
    memset(s->t, 0, (size_t)threads * sizeof *s->t);
    atomic_init(&s->sh->counter, 0);
    atomic_init(&s->sh->top, NIL);
    for (uint32_t n = 0; n < s->nodes; n++) {
        atomic_init(&s->next[n], NIL);
        struct srv_thread *t = &s->t[n / NODES_PER_THREAD];
        t->held[t->nheld++] = n;
    }
    return s;
}

static uint64_t srv_thread_main(void *state, int index, const _Atomic int *stop)
{
    struct srv_state *s = state;
    struct srv_thread *me = &s->t[index];
    bench_lock_t *lock = s->lock;
    const bool fault = s->p->inject_fault && index == 0;
    const uint32_t units =
        s->p->interval_units * (s->p->workload == WL_IMBALANCED ? (uint32_t)index + 1 : 1u);
    bench_local_t local;
    bench_local_init(&local, 0x9e3779b9u * ((uint32_t)index + 1));
    struct srv_op op = {s, me, false};
    uint64_t n = 0;
    do {
        /* The stack: push while the thread holds nodes, else pop; a thread
         * that holds all or none alternates. */
        op.push = me->nheld > 0 && (me->nheld == NODES_PER_THREAD || (n & 1) == 0);
        bool timed = (n % LATENCY_EVERY) == 0;
        double t0 = timed ? bench_now() : 0.0;
        if (fault && (n & 7) == 3) {
            srv_section(&op);
        } else {
            int rc = 0;
            if (lock->caps & BATON_CAP_LOCK) {
                bench_lock_acquire(lock);
                srv_section(&op);
                bench_lock_release(lock);
            } else {
                rc = bench_execute(lock, srv_section, &op);
            }
            if (rc != 0) {
                me->error = rc;
                break;
            }
        }
        if (timed) {
            me->lat_ns += (uint64_t)((bench_now() - t0) * 1e9);
            me->lat_n++;
        }
        me->sections++;
        n++;
        if (units)
            bench_local_work(&local, units);
        /* Relaxed: the flag only ends the loop; the join orders the rest. */
    } while (!atomic_load_explicit(stop, memory_order_relaxed));
    return n;
}

static void srv_extras(void *state, bench_lock_t *lock, bench_result_t *r)
{
    struct srv_state *s = state;
    bench_extras_ops_per_session(state, lock, r);
    uint64_t lat = 0, nlat = 0;
    for (int i = 0; i < s->threads; i++) {
        lat += s->t[i].lat_ns;
        nlat += s->t[i].lat_n;
    }
    r->extra[EX_LATENCY] = nlat ? (double)lat / (double)nlat : -1;
    baton_stats_t st;
    if (lock->baton && baton_lock_stats(lock->baton, &st) == 0 && r->ops > 0) {
        uint64_t total = 0;
        for (int k = 0; k < BATON_ROLES; k++)
            total += st.msg_sent[k];
        if (total == 0)
            return; /* a kind that sends no messages */
        r->extra[EX_MSGS] = (double)total / (double)r->ops;
        for (int k = 0; k < BATON_ROLES; k++) {
            r->extra[EX_SENT + k] = (double)st.msg_sent[k] / (double)r->ops;
            r->extra[EX_RECV + k] = (double)st.msg_received[k] / (double)r->ops;
        }
    }
}

/* The final state, read under the lock. */
static void srv_final(void *p)
{
    struct srv_state *s = p;
    s->end_counter = GET(s->sh->counter);
}

/* Walk the stack (bounded by the node count): marks each node; returns the
 * nodes on it, or -1 when a node is linked twice or a link is out of range. */
static long srv_walk(struct srv_state *s, uint8_t *mark)
{
    long k = 0;
    for (uint32_t n = GET(s->sh->top); n != NIL; n = GET(s->next[n])) {
        if (n >= s->nodes || mark[n] || k > (long)s->nodes)
            return -1;
        mark[n] = 1;
        k++;
    }
    return k;
}

static int srv_verify(void *state, const uint64_t *ops, int threads, bench_result_t *r)
{
    struct srv_state *s = state;
    uint64_t sections = 0;
    for (int i = 0; i < threads; i++) {
        if (s->t[i].error) {
            snprintf(r->message, sizeof r->message, "thread %d: a critical section failed: %s", i,
                     strerror(s->t[i].error));
            return 1;
        }
        if (s->t[i].sections != ops[i]) {
            snprintf(r->message, sizeof r->message, "thread %d counted its sections wrong", i);
            return 1;
        }
        sections += s->t[i].sections;
    }
    if (s->p->workload != WL_STACK) {
        int rc = bench_execute(s->lock, srv_final, s);
        if (rc != 0) {
            snprintf(r->message, sizeof r->message, "the final check could not run: %s", strerror(rc));
            return 1;
        }
        if (s->end_counter != sections) {
            snprintf(r->message, sizeof r->message,
                     "the counter holds %llu after %llu critical sections: exclusion broken",
                     (unsigned long long)s->end_counter, (unsigned long long)sections);
            return 1;
        }
        return 0;
    }
    /* Every node is either on the stack or held by exactly one thread. */
    uint8_t *mark = calloc(s->nodes, 1);
    if (!mark) {
        snprintf(r->message, sizeof r->message, "out of memory for the stack check");
        return 1;
    }
    long on_stack = srv_walk(s, mark);
    long held = 0, twice = 0;
    for (int i = 0; i < threads; i++)
        for (uint32_t k = 0; k < s->t[i].nheld; k++) {
            uint32_t n = s->t[i].held[k];
            twice += n >= s->nodes || mark[n];
            if (n < s->nodes)
                mark[n] = 1;
            held++;
        }
    free(mark);
    if (on_stack < 0 || twice || on_stack + held != (long)s->nodes) {
        snprintf(r->message, sizeof r->message,
                 "stack broken: %ld nodes on it%s, %ld held, %ld held twice or also on it, %u in all",
                 on_stack < 0 ? 0 : on_stack, on_stack < 0 ? " (a cycle or a bad link)" : "", held, twice,
                 s->nodes);
        return 1;
    }
    return 0;
}

static void srv_teardown(void *state)
{
    struct srv_state *s = state;
    free(s->sh);
    free(s->next);
    free(s->t);
    free(s);
}

const bench_workload_t srv_workload = {
    .name = "server",
    .setup = srv_setup,
    .thread_main = srv_thread_main,
    .extras = srv_extras,
    .verify = srv_verify,
    .teardown = srv_teardown,
};

/* --- the paper's message counts --------------------------------------------------- */

enum {
    DESIGN_NONE = -1,
    DESIGN_BASIC,
    DESIGN_CHAIN,
    DESIGN_HIER,
    DESIGN_HIER_CHAIN,
    DESIGN_BASIC_KEEP,
    DESIGN_CHAIN_KEEP /* with leases: outside the paper's formulas */
};

/* Which of pLock's designs a spec names: "server" with the chain and hier
 * switches (or option values 1), and leases (keep_us > 0). */
static int design_of(const char *spec)
{
    if (strncmp(spec, "server", 6) != 0 || (spec[6] && spec[6] != ':' && spec[6] != ','))
        return DESIGN_NONE;
    bool chain = strstr(spec, ",chain") != NULL, hier = strstr(spec, ",hier") != NULL;
    const char *k = strstr(spec, ",keep_us=");
    if (k && atof(k + 9) > 0)
        return chain ? DESIGN_CHAIN_KEEP : DESIGN_BASIC_KEEP;
    return hier ? (chain ? DESIGN_HIER_CHAIN : DESIGN_HIER) : (chain ? DESIGN_CHAIN : DESIGN_BASIC);
}

static const char *const design_names[] = {"basic",      "chain",      "hier",
                                           "hier+chain", "basic+keep", "chain+keep"};

/* Messages per critical section in the paper's best and worst cases
 * (Equations 1-7), for N clients, S sections per client, T local servers. */
static void design_bounds(int d, double N, double S, double T, double *best, double *worst)
{
    switch (d) {
    case DESIGN_CHAIN:
        *best = (2 * N + 1) * S / (N * S);
        *worst = 3;
        break;
    case DESIGN_HIER:
        *best = (3 * N * S + 3 * T) / (N * S);
        *worst = 6;
        break;
    case DESIGN_HIER_CHAIN:
        *best = ((2 * N + 1) * S + 2 * T + 1) / (N * S);
        *worst = 6;
        break;
    default: *best = *worst = 3; break;
    }
}

/* (c): the server kinds of one cell side by side, as Equation 15. */
static void message_summary(const bench_record_t *cell, int n, int threads, int nodes, const char *title)
{
    double basic = -1;
    for (int k = 0; k < n; k++)
        if (design_of(cell[k].lock) == DESIGN_BASIC && cell[k].median.status == BENCH_OK)
            basic = cell[k].median.extra[EX_MSGS];
    bool any = false;
    for (int k = 0; k < n; k++) {
        int d = design_of(cell[k].lock);
        const bench_result_t *m = &cell[k].median;
        if (d == DESIGN_NONE || m->status != BENCH_OK || m->extra[EX_MSGS] < 0)
            continue;
        if (!any) {
            printf(
                "  messages per critical section, %s (basic = 6.00 as in the paper's Eq. 15; the paper's\n"
                "  best and worst cases, Eq. 1-7, for N=%d clients, S=sections per client, T=local servers):\n",
                title, threads);
            printf("  %-26s %-10s %8s %8s %17s %21s\n", "lock", "design", "msg/CS", "Eq.15",
                   "best..worst /CS", "sent G/L/C per CS");
            any = true;
        }
        double N = threads, S = (double)m->ops / threads, T = 0;
        /* T: the local servers, one per group: groups=N from the spec, else
         * the machine's NUMA nodes (a lower bound where groups are cache
         * groups; the best case grows with T only by 3T/(NS), nothing at
         * these S). */
        if (d == DESIGN_HIER || d == DESIGN_HIER_CHAIN) {
            const char *g = strstr(cell[k].lock, "groups=");
            T = g ? atof(g + 7) : (nodes > 0 ? nodes : 1);
        }
        double best, worst;
        char bounds[32] = "(no formula)"; /* leases: the paper has none */
        if (d <= DESIGN_HIER_CHAIN) {
            design_bounds(d, N, S, T, &best, &worst);
            snprintf(bounds, sizeof bounds, "%8.3f..%-8.3f", best, worst);
        }
        printf("  %-26s %-10s %8.3f %8.2f %17s %6.2f/%.2f/%.2f\n", cell[k].lock, design_names[d],
               m->extra[EX_MSGS], basic > 0 ? 6.0 * m->extra[EX_MSGS] / basic : -1.0, bounds,
               m->extra[EX_SENT + BATON_ROLE_GLOBAL], m->extra[EX_SENT + BATON_ROLE_LOCAL],
               m->extra[EX_SENT + BATON_ROLE_CLIENT]);
    }
}

/* --- the command -------------------------------------------------------------------- */

static const char srv_default_locks[] =
    "server,server,chain,server,hier,server,hier,chain,server,keep_us=100,relay,mcs:spinpark,pthread";

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: baton bench server [options]\n"
        "  Lock servers (pLock's basic, chaining, hierarchical and combined designs) against\n"
        "  baton's mutexes: every thread takes the lock, runs a short critical section, releases\n"
        "  it, then does an interval of thread-local work.  Reports throughput, the latency of\n"
        "  one critical section (lock to unlock), and the server kinds' messages per section.\n"
        "  --locks LIST         lock specs and peers (default: %s;\n"
        "                       those not in this build are skipped with a note)\n"
        "  --threads LIST       client threads (default 2,4,8,16)\n"
        "  --workloads LIST     counter, stack, imbalanced (default all three; stack and\n"
        "                       imbalanced run at the first interval only)\n"
        "  --interval-ns LIST   thread-local work between critical sections, in ns\n"
        "  --interval-cycles LIST  the same in TSC cycles, as the paper gives them\n"
        "                       (default 100,1000,10000,100000 cycles)\n"
        "  --duration SEC       length of one run (default 0.3)\n"
        "  --repeat R           runs per cell; the median is reported (default 3)\n"
        "  --pin POLICY         compact|spread|none (default compact)\n"
        "  --json FILE          write every result as JSON\n"
        "  --inject-fault       thread 0 skips the lock for some sections (verification must fail)\n" BENCH_WAIT_USAGE,
        srv_default_locks);
}

static int parse_workloads(const char *s, int *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        size_t len = strcspn(s, ",");
        int w = -1;
        for (int k = 0; k < WL_COUNT; k++)
            if (strlen(wl_names[k]) == len && !strncmp(s, wl_names[k], len))
                w = k;
        if (w < 0)
            return -1;
        out[n++] = w;
        s += len;
        if (*s == ',')
            s++;
    }
    return n;
}

/* bench server's own options. */
struct srv_opts {
    int W[WL_COUNT], nW;
    int I[BENCH_LIST_MAX], nI;
    bool cycles;
};

static int srv_option(int c, const char *arg, void *ctx)
{
    struct srv_opts *so = ctx;
    switch (c) {
    case 'w': return (so->nW = parse_workloads(arg, so->W, WL_COUNT)) <= 0;
    case 'n': so->cycles = false; return (so->nI = bench_parse_ints(arg, so->I, BENCH_LIST_MAX)) <= 0;
    case 'c': so->cycles = true; return (so->nI = bench_parse_ints(arg, so->I, BENCH_LIST_MAX)) <= 0;
    default: return 1;
    }
}

int cmd_bench_server(int argc, char **argv)
{
    bench_opts_t o = {
        .pin = "compact", .threads = {2, 4, 8, 16}, .nthreads = 4, .duration = 0.3, .repeat = 3};
    struct srv_opts so = {.W = {WL_COUNTER, WL_STACK, WL_IMBALANCED},
                          .nW = WL_COUNT,
                          .I = {SRV_INTERVAL_CYCLES_MIN, 1000, 10000, 100000},
                          .nI = 4,
                          .cycles = true};
    static const cli_opt_t opts[] = {BENCH_OPT_LOCKS,
                                     BENCH_OPT_THREADS,
                                     {"workloads", CLI_VALUE, 0, 'w'},
                                     {"interval-ns", CLI_VALUE, 0, 'n'},
                                     {"interval-cycles", CLI_VALUE, 0, 'c'},
                                     BENCH_OPT_DURATION,
                                     BENCH_OPT_REPEAT,
                                     BENCH_OPT_PIN,
                                     BENCH_OPT_JSON,
                                     BENCH_OPT_FAULT,
                                     BENCH_OPT_END};
    const int prc = bench_getopt("server", argc, argv, opts, &o, srv_option, &so, usage);
    if (prc >= 0)
        return prc;
    const int *threads = o.threads, nthreads = o.nthreads, repeat = o.repeat;
    const int *W = so.W, nW = so.nW, *I = so.I, nI = so.nI;
    const bool cycles = so.cycles, fault = o.fault;
    const bench_cmd_t cmd = {.name = "server",
                             .locks = o.locks,
                             .default_locks = srv_default_locks,
                             .threads = threads,
                             .nthreads = nthreads,
                             .duration_s = o.duration,
                             .repeat = repeat,
                             .pin = o.pin};
    bench_setup_t b;
    int rc = bench_cmd_setup(&cmd, &b);
    if (rc != 0)
        return rc;
    const int nspecs = b.nspecs;
    /* Cycles to ns with the TSC rate (1 GHz if unknown, and said so). */
    const double tsc = machine_tsc_ghz();
    const double ghz = tsc > 0 ? tsc : 1.0;
    if (cycles)
        printf("intervals in TSC cycles at %.3f GHz%s\n", ghz, tsc > 0 ? "" : " (no TSC: 1 cycle = 1 ns)");

    const size_t maxrecs = (size_t)nW * (size_t)nI * (size_t)nthreads * (size_t)nspecs;
    bench_record_t *recs = calloc(maxrecs, sizeof *recs);
    char(*more)[320] = calloc(maxrecs, sizeof *more);
    bench_result_t *runs = calloc((size_t)nspecs * (size_t)repeat, sizeof *runs);
    int nrecs = 0, failed = 0;

    int ncells = 0;
    for (int iw = 0; iw < nW; iw++)
        ncells += (W[iw] == WL_COUNTER ? nI : 1) * nthreads;
    bench_progress_begin(ncells);
    for (int iw = 0; iw < nW; iw++)
        for (int ii = 0; ii < (W[iw] == WL_COUNTER ? nI : 1); ii++) {
            const double interval_ns = cycles ? I[ii] / ghz : I[ii];
            struct srv_params sp = {W[iw], (uint32_t)lround(interval_ns / b.unit_ns), fault};
            for (int it = 0; it < nthreads; it++) {
                bench_record_t *cell = &recs[nrecs];
                bench_cfg_t cfg = b.base;
                cfg.threads = threads[it];
                char label[64];
                snprintf(label, sizeof label, "server %s I=%.0f ns", wl_names[W[iw]], interval_ns);
                bench_cell_run(&srv_workload, &sp, "server", b.specs, nspecs, &cfg, repeat, runs, cell,
                               label);
                for (int k = 0; k < nspecs; k++) {
                    bench_record_t *rec = &cell[k];
                    const bench_result_t *m = &rec->median;
                    rec->nparams = 2;
                    rec->param_names[0] = "interval_ns";
                    rec->param_names[1] = "interval_cycles";
                    rec->params[0] = lround(interval_ns);
                    rec->params[1] = cycles ? I[ii] : lround(interval_ns * ghz);
                    rec->extra_keys[EX_LATENCY] = "latency_ns";
                    rec->extra_labels[EX_LATENCY] = "lat ns";
                    rec->extra_keys[EX_MSGS] = "messages_per_op";
                    rec->extra_labels[EX_MSGS] = "msg/CS";
                    char *j = more[rec - recs];
                    int w = snprintf(j, sizeof more[0], "\"workload\": \"%s\"", wl_names[W[iw]]);
                    if (m->status == BENCH_OK && m->extra[EX_MSGS] >= 0 && w > 0) {
                        static const char *const roles[BATON_ROLES] = {"global", "local", "client"};
                        w += snprintf(j + w, sizeof more[0] - (size_t)w,
                                      ", \"messages\": {\"total\": %.0f, \"per_op\": %.4f, \"by_role\": {",
                                      m->extra[EX_MSGS] * (double)m->ops, m->extra[EX_MSGS]);
                        for (int r = 0; r < BATON_ROLES && w > 0 && (size_t)w < sizeof more[0]; r++)
                            w += snprintf(j + w, sizeof more[0] - (size_t)w,
                                          "%s\"%s\": {\"sent_per_op\": %.4f, \"received_per_op\": %.4f}",
                                          r ? ", " : "", roles[r], m->extra[EX_SENT + r],
                                          m->extra[EX_RECV + r]);
                        if (w > 0 && (size_t)w < sizeof more[0])
                            snprintf(j + w, sizeof more[0] - (size_t)w, "}}");
                    }
                    rec->json_more = j;
                }
                failed += bench_cell_finish(cell, nspecs, 0);
                char title[200];
                snprintf(title, sizeof title, "server %s, interval %.0f ns%s, %d thread%s on %d CPUs",
                         wl_names[W[iw]], interval_ns, W[iw] == WL_IMBALANCED ? " x client number" : "",
                         threads[it], threads[it] > 1 ? "s" : "", b.cores);
                report_cell(stdout, cell, nspecs, title);
                message_summary(cell, nspecs, threads[it], b.m.topo.nnodes, title);
                fflush(stdout);
                nrecs += nspecs;
            }
        }

    char extra[160];
    snprintf(extra, sizeof extra,
             "\"local_unit_ns\": %.4f, \"tsc_ghz\": %.4f, \"pin\": \"%s\", \"repeat\": %d", b.unit_ns, ghz,
             o.pin, repeat);
    rc = bench_cmd_finish(&b, o.json, extra, recs, nrecs, failed);
    free(runs);
    free(more);
    free(recs);
    return rc;
}
