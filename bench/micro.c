/* micro.c - `baton bench micro`: the lock micro-benchmark.
 *
 * The workload of the RCL paper's micro-benchmark (section 3.1) and of the
 * MONITOR/MWAIT paper's lock benchmark: each thread loops
 *     L units of thread-local work (bench_local_work),
 *     read its P private cache lines (so they stay in its own cache, as the
 *       RCL paper's clients do before each critical section),
 *     lock; read-modify-write S shared and P private cache lines; unlock.
 * At the end every shared line must hold the total number of operations and
 * every private line its thread's count; any difference means the lock let
 * two threads in, and the run fails loudly (exit status 1).
 *
 * The increments are relaxed atomic load/store pairs: as cheap as a plain
 * increment (no lock prefix), and free of data races even in the
 * --inject-fault run, where thread 0 skips the lock to prove the check
 * can fail.
 *
 * How the critical section runs (--via): "lock" brackets it with lock and
 * unlock; "execute" hands it to baton_execute() as a function, which a
 * delegation kind may run on another thread (the RCL paper's setting: its
 * Figure 4 is --private-lines 0 with S from 1 to 20, and S=1 with P from 0
 * to 20); "auto" uses lock where the kind offers it (BATON_CAP_LOCK) and
 * execute otherwise.  Peers have no execute: theirs is lock, call, unlock.
 * For kinds that keep statistics, the table adds the average number of
 * operations run per help session.
 */
#include "bench.h"
#include "machine.h"
#include "report.h"
#include "topo.h"

#include <baton/wait.h>

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { VIA_AUTO, VIA_LOCK, VIA_EXECUTE };

struct micro_params {
    int shared_lines;
    int private_lines;
    int local_work;
    bool inject_fault;
    int via; /* VIA_* */
};

struct micro_line {
    _Alignas(BENCH_LINE) _Atomic uint64_t v;
};

/* One thread's critical section as a function, for baton_execute. */
struct micro_cs {
    struct micro_line *shared, *priv;
    int S, P;
};

struct micro_thread {
    _Alignas(BENCH_LINE) struct micro_line *priv;
    bench_local_t local;
    struct micro_cs cs;
    int error; /* what baton_execute returned, if it failed */
};

struct micro_state {
    const struct micro_params *p;
    bench_lock_t *lock;
    struct micro_line *shared;
    struct micro_thread *t;
    int threads;
    bool execute; /* run critical sections through bench_execute() */
};

static inline void bump(struct micro_line *l)
{
    /* A read-modify-write that is not atomic (two relaxed steps): what a
     * critical section's plain increment costs, without a data race. */
    atomic_store_explicit(&l->v, atomic_load_explicit(&l->v, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static void micro_cs_run(void *ctx)
{
    const struct micro_cs *cs = ctx;
    for (int i = 0; i < cs->S; i++)
        bump(&cs->shared[i]);
    for (int i = 0; i < cs->P; i++)
        bump(&cs->priv[i]);
}

static void *micro_setup(const void *params, bench_lock_t *lock, int threads, char *err,
                         size_t errlen)
{
    const struct micro_params *p = params;
    struct micro_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p;
    s->lock = lock;
    s->threads = threads;
    s->execute = p->via == VIA_EXECUTE || (p->via == VIA_AUTO && !(lock->caps & BATON_CAP_LOCK));
    size_t nshared = p->shared_lines > 0 ? (size_t)p->shared_lines : 1;
    s->shared = aligned_alloc(BENCH_LINE, nshared * sizeof *s->shared);
    s->t = aligned_alloc(BENCH_LINE, (size_t)threads * sizeof *s->t);
    if (!s->shared || !s->t) {
        snprintf(err, errlen, "out of memory");
        free(s->shared);
        free(s->t);
        free(s);
        return NULL;
    }
    memset(s->shared, 0, nshared * sizeof *s->shared);
    memset(s->t, 0, (size_t)threads * sizeof *s->t);
    return s;
}

static uint64_t micro_thread(void *state, int index, const _Atomic int *stop)
{
    struct micro_state *s = state;
    const int S = s->p->shared_lines, P = s->p->private_lines;
    const uint32_t L = (uint32_t)s->p->local_work;
    struct micro_thread *me = &s->t[index];
    /* Private lines are allocated by their thread (first touch: its node). */
    size_t np = P > 0 ? (size_t)P : 1;
    me->priv = aligned_alloc(BENCH_LINE, np * sizeof *me->priv);
    if (!me->priv)
        return 0;
    memset(me->priv, 0, np * sizeof *me->priv);
    bench_local_init(&me->local, 0x9e3779b9u * (uint32_t)(index + 1));
    struct micro_line *shared = s->shared, *priv = me->priv;
    bench_lock_t *lock = s->lock;
    const bool skip_lock = s->p->inject_fault && index == 0;
    const bool execute = s->execute && !skip_lock;
    me->cs = (struct micro_cs){shared, priv, S, P};
    uint64_t ops = 0;
    uint64_t sink = 0;
    do {
        if (L)
            bench_local_work(&me->local, L);
        for (int i = 0; i < P; i++)
            sink += atomic_load_explicit(&priv[i].v, memory_order_relaxed);
        if (execute) {
            int rc = bench_execute(lock, micro_cs_run, &me->cs);
            if (rc != 0) {
                me->error = rc;
                break;
            }
            ops++;
            continue; /* to the stop check */
        }
        if (!skip_lock)
            bench_lock_acquire(lock);
        for (int i = 0; i < S; i++)
            bump(&shared[i]);
        for (int i = 0; i < P; i++)
            bump(&priv[i]);
        if (!skip_lock)
            bench_lock_release(lock);
        ops++;
        /* Relaxed: the flag only ends the loop; the join orders the rest. */
    } while (!atomic_load_explicit(stop, memory_order_relaxed));
    if (sink == 1)
        me->local.a[0]++; /* keep the reads of private lines */
    return ops;
}

static int micro_verify(void *state, const uint64_t *ops, int threads, bench_result_t *r)
{
    struct micro_state *s = state;
    for (int i = 0; i < threads; i++)
        if (s->t[i].error) {
            snprintf(r->message, sizeof r->message, "thread %d: baton_execute failed: %s", i,
                     strerror(s->t[i].error));
            return 1;
        }
    uint64_t total = 0;
    for (int i = 0; i < threads; i++)
        total += ops[i];
    for (int i = 0; i < s->p->shared_lines; i++) {
        uint64_t v = atomic_load_explicit(&s->shared[i].v, memory_order_relaxed);
        if (v != total) {
            snprintf(r->message, sizeof r->message,
                     "shared line %d holds %llu after %llu operations: mutual exclusion broken", i,
                     (unsigned long long)v, (unsigned long long)total);
            return 1;
        }
    }
    for (int t = 0; t < threads; t++)
        for (int i = 0; i < s->p->private_lines; i++) {
            uint64_t v = atomic_load_explicit(&s->t[t].priv[i].v, memory_order_relaxed);
            if (v != ops[t]) {
                snprintf(r->message, sizeof r->message,
                         "thread %d private line %d holds %llu, expected %llu", t, i,
                         (unsigned long long)v, (unsigned long long)ops[t]);
                return 1;
            }
        }
    return 0;
}

static void micro_extras(void *state, bench_lock_t *lock, bench_result_t *r)
{
    (void)state;
    r->extra[BENCH_EXTRA_OPS_PER_SESSION] = bench_lock_ops_per_session(lock);
}

static void micro_teardown(void *state)
{
    struct micro_state *s = state;
    for (int i = 0; i < s->threads; i++)
        free(s->t[i].priv);
    free(s->t);
    free(s->shared);
    free(s);
}

static const bench_workload_t micro_workload = {
    .name = "micro",
    .setup = micro_setup,
    .thread_main = micro_thread,
    .extras = micro_extras,
    .verify = micro_verify,
    .teardown = micro_teardown,
};

/* --- the command ------------------------------------------------------------ */

#define MAX_LOCKS 128
#define MAX_LIST 32

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton bench micro [options]\n"
            "  --locks LIST         lock specs and peers, comma-separated, or all|kinds|peers|rwpeers|allwaits\n"
            "                       (default all; 'baton kinds' lists the kinds).  'all' and 'peers'\n"
            "                       hold the mutex peers; the readers-writer peers run here as mutexes\n"
            "                       (their write lock) when named, or with 'rwpeers'\n"
            "  --threads LIST       thread counts (default 1,2,8)\n"
            "  --shared-lines LIST  S: shared cache lines written per critical section (default 1)\n"
            "  --private-lines LIST P: private cache lines written per critical section (default 0)\n"
            "  --local-work LIST    L: units of thread-local work between critical sections (default 0)\n"
            "  --via MODE           auto|lock|execute: how critical sections run (default auto: lock\n"
            "                       and unlock where the kind offers them, else baton_execute; lock\n"
            "                       refuses kinds without lock; execute uses baton_execute for every\n"
            "                       kind, lock-call-unlock for peers).  Kinds that keep statistics\n"
            "                       add a column: operations per help session\n"
            "  --duration SEC       length of one run (default 1)\n"
            "  --repeat R           runs per cell; the median is reported (default 3)\n"
            "  --pin POLICY         compact|spread|none (default compact)\n"
            "  --json FILE          write every result as JSON\n"
            "  --inject-fault       thread 0 skips the lock (tests that verification fails)\n");
}

struct cell_ref {
    int S, P, L;
    double rate; /* best single-thread ops/s */
};

/* The best single-thread rate at (S, P, L): the reference kind measured
 * for the purpose, or any faster N=1 result of the run. */
static double reference_rate(struct cell_ref *refs, int *nrefs, int S, int P, int L,
                             const bench_cfg_t *base, int repeat, const struct micro_params *proto)
{
    for (int i = 0; i < *nrefs; i++)
        if (refs[i].S == S && refs[i].P == P && refs[i].L == L)
            return refs[i].rate;
    struct micro_params mp = *proto;
    mp.shared_lines = S;
    mp.private_lines = P;
    mp.local_work = L;
    mp.inject_fault = false;
    mp.via = VIA_LOCK; /* the limit is the work's, not the API path's */
    bench_cfg_t cfg = *base;
    cfg.threads = 1;
    bench_result_t runs[REPORT_MAX_RUNS];
    double best = 0;
    for (int r = 0; r < repeat; r++) {
        bench_run(&micro_workload, &mp, "tas", &cfg, &runs[r]);
        if (runs[r].status == BENCH_OK && runs[r].seconds > 0) {
            double rate = (double)runs[r].ops / runs[r].seconds;
            if (rate > best)
                best = rate;
        }
    }
    refs[*nrefs] = (struct cell_ref){S, P, L, best};
    (*nrefs)++;
    return best;
}

int cmd_bench_micro(int argc, char **argv);

int cmd_bench_micro(int argc, char **argv)
{
    const char *locks_arg = "all", *json_path = NULL, *pin_arg = "compact";
    int threads[MAX_LIST] = {1, 2, 8}, nthreads = 3;
    int S[MAX_LIST] = {1}, nS = 1, P[MAX_LIST] = {0}, nP = 1, L[MAX_LIST] = {0}, nL = 1;
    double duration = 1.0;
    int repeat = 3;
    bool fault = false;
    int via = VIA_AUTO;
    static const struct option opts[] = {
        {"locks", required_argument, 0, 'l'},         {"threads", required_argument, 0, 't'},
        {"shared-lines", required_argument, 0, 'S'},  {"private-lines", required_argument, 0, 'P'},
        {"local-work", required_argument, 0, 'L'},    {"duration", required_argument, 0, 'd'},
        {"repeat", required_argument, 0, 'r'},        {"pin", required_argument, 0, 'p'},
        {"json", required_argument, 0, 'j'},          {"inject-fault", no_argument, 0, 'F'},
        {"via", required_argument, 0, 'v'},           {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    optind = 1;
    int c, idx = 0;
    while ((c = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
        int bad = 0;
        switch (c) {
        case 'l': locks_arg = optarg; break;
        case 't': bad = (nthreads = bench_parse_ints(optarg, threads, MAX_LIST)) <= 0; break;
        case 'S': bad = (nS = bench_parse_ints(optarg, S, MAX_LIST)) <= 0; break;
        case 'P': bad = (nP = bench_parse_ints(optarg, P, MAX_LIST)) <= 0; break;
        case 'L': bad = (nL = bench_parse_ints(optarg, L, MAX_LIST)) <= 0; break;
        case 'd': duration = atof(optarg); bad = !(duration > 0 && duration <= 3600); break;
        case 'r': repeat = atoi(optarg); bad = repeat < 1 || repeat > REPORT_MAX_RUNS; break;
        case 'p': pin_arg = optarg; bad = topo_pin_parse(optarg) < 0; break;
        case 'j': json_path = optarg; break;
        case 'F': fault = true; break;
        case 'v':
            via = !strcmp(optarg, "auto") ? VIA_AUTO : !strcmp(optarg, "lock") ? VIA_LOCK
                  : !strcmp(optarg, "execute") ? VIA_EXECUTE : -1;
            bad = via < 0;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "baton bench micro: bad value for --%s: '%s'\n", opts[idx].name, optarg);
            usage(stderr);
            return 2;
        }
    }
    for (int i = 0; i < nthreads; i++)
        if (threads[i] < 1) {
            fprintf(stderr, "baton bench micro: thread counts must be at least 1\n");
            return 2;
        }

    static char specs[MAX_LOCKS][BENCH_SPEC_MAX];
    char err[1024];
    int nspecs = bench_expand_locks(locks_arg, specs, MAX_LOCKS, err, sizeof err);
    if (nspecs < 0) {
        fprintf(stderr, "baton bench micro: %s\n", err);
        return 2;
    }
    /* Validate every spec before measuring anything. */
    (void)baton_calibration(); /* once, here: every child inherits it */
    for (int i = 0; i < nspecs; i++) {
        bench_lock_t l;
        if (bench_lock_open(specs[i], &l, err, sizeof err) != 0) {
            fprintf(stderr, "baton bench micro: %s\n", err);
            return 2;
        }
        snprintf(specs[i], BENCH_SPEC_MAX, "%s", l.spec); /* canonical */
        unsigned caps = l.caps;
        bench_lock_close(&l);
        if (via == VIA_LOCK && !(caps & BATON_CAP_LOCK)) {
            fprintf(stderr,
                    "baton bench micro: --via lock: '%s' offers no lock/unlock (execute and "
                    "delegate only); use --via auto or execute\n",
                    specs[i]);
            return 2;
        }
    }

    machine_t m;
    machine_describe(&m, false);
    int pin = topo_pin_parse(pin_arg);
    int *order = calloc((size_t)(m.topo.ncpus > 0 ? m.topo.ncpus : 1), sizeof *order);
    topo_pin_order(&m.topo, pin, order, m.topo.ncpus);
    const int cores = m.topo.ncpus > 0 ? m.topo.ncpus : 1;
    const double unit = bench_local_unit_ns();
    printf("baton bench micro: %d lock(s), threads", nspecs);
    for (int i = 0; i < nthreads; i++)
        printf("%s%d", i ? "," : " ", threads[i]);
    printf("; %.2f s x %d runs (median); pin %s; %d CPUs; 1 unit of local work = %.2f ns; via %s\n",
           duration, repeat, pin_arg, cores, unit,
           via == VIA_LOCK ? "lock" : via == VIA_EXECUTE ? "execute" : "auto (lock, else execute)");

    bench_cfg_t base = {.duration_s = duration, .pin_policy = pin, .pin_order = pin ? order : NULL,
                        .npin = m.topo.ncpus, .deadline_s = duration * 2 + 2};
    int cells = nS * nP * nL * nthreads;
    bench_record_t *recs = calloc((size_t)cells * (size_t)nspecs, sizeof *recs);
    const bool progress = isatty(STDERR_FILENO);
    bench_result_t *runs = calloc((size_t)nspecs * (size_t)repeat, sizeof *runs);
    static struct cell_ref refs[2 * MAX_LIST * MAX_LIST * MAX_LIST];
    int nrefs = 0, nrecs = 0, failed = 0;

    for (int is = 0; is < nS; is++)
        for (int ip = 0; ip < nP; ip++)
            for (int il = 0; il < nL; il++) {
                struct micro_params mp = {S[is], P[ip], L[il], fault, via};
                double r1 = reference_rate(refs, &nrefs, S[is], P[ip], L[il], &base, repeat, &mp);
                double r0 = L[il] ? reference_rate(refs, &nrefs, S[is], P[ip], 0, &base, repeat, &mp) : r1;
                for (int it = 0; it < nthreads; it++) {
                    bench_record_t *cell = &recs[nrecs];
                    bench_cfg_t cfg = base;
                    cfg.threads = threads[it];
                    /* Runs of different locks interleave, so slow drift of a
                     * shared machine spreads over all of them. */
                    for (int r = 0; r < repeat; r++)
                        for (int k = 0; k < nspecs; k++) {
                            if (progress)
                                fprintf(stderr, "\r  S=%d P=%d L=%d N=%d run %d/%d %-28s", S[is], P[ip],
                                        L[il], threads[it], r + 1, repeat, specs[k]);
                            bench_run(&micro_workload, &mp, specs[k], &cfg, &runs[k * repeat + r]);
                        }
                    if (progress)
                        fprintf(stderr, "\r%80s\r", "");
                    double pthread_rate = 0;
                    for (int k = 0; k < nspecs; k++) {
                        bench_record_t *rec = &cell[k];
                        rec->bench = "micro";
                        memcpy(rec->lock, specs[k], sizeof rec->lock);
                        rec->threads = threads[it];
                        rec->nparams = 3;
                        rec->param_names[0] = "shared_lines";
                        rec->param_names[1] = "private_lines";
                        rec->param_names[2] = "local_work";
                        rec->params[0] = S[is];
                        rec->params[1] = P[ip];
                        rec->params[2] = L[il];
                        rec->extra_keys[BENCH_EXTRA_OPS_PER_SESSION] = "ops_per_session";
                        rec->extra_labels[BENCH_EXTRA_OPS_PER_SESSION] = "ops/sess";
                        rec->duration_s = duration;
                        rec->nruns = repeat;
                        bench_result_t *mine = &runs[k * repeat];
                        for (int r = 0; r < repeat; r++)
                            rec->runs_ops_per_s[r] =
                                mine[r].seconds > 0 ? (double)mine[r].ops / mine[r].seconds : 0;
                        rec->median = mine[bench_median(mine, repeat)];
                        if (threads[it] == 1 && rec->median.status == BENCH_OK) {
                            double rate = record_rate(rec);
                            for (int q = 0; q < nrefs; q++)
                                if (refs[q].S == S[is] && refs[q].P == P[ip] && refs[q].L == L[il] &&
                                    rate > refs[q].rate)
                                    refs[q].rate = rate;
                        }
                        if (!strcmp(specs[k], "pthread"))
                            pthread_rate = record_rate(rec);
                    }
                    /* Limits use the best N=1 rates known so far. */
                    for (int q = 0; q < nrefs; q++) {
                        if (refs[q].S == S[is] && refs[q].P == P[ip] && refs[q].L == L[il])
                            r1 = refs[q].rate;
                        if (refs[q].S == S[is] && refs[q].P == P[ip] && refs[q].L == 0)
                            r0 = refs[q].rate;
                    }
                    int eff = threads[it] < cores ? threads[it] : cores;
                    double limit = eff * r1 < r0 ? eff * r1 : r0;
                    double best = 0;
                    for (int k = 0; k < nspecs; k++)
                        if (record_rate(&cell[k]) > best)
                            best = record_rate(&cell[k]);
                    for (int k = 0; k < nspecs; k++) {
                        bench_record_t *rec = &cell[k];
                        rec->limit_ops_per_s = limit;
                        rec->pthread_ops_per_s = pthread_rate;
                        double ref = pthread_rate > 0 ? pthread_rate : best;
                        rec->collapsed = rec->median.status == BENCH_TIMEOUT ||
                                         (rec->median.status == BENCH_OK && record_rate(rec) < ref / 100);
                        if (rec->median.status == BENCH_VERIFY_FAILED || rec->median.status == BENCH_CRASHED ||
                            rec->median.status == BENCH_ERROR)
                            failed++;
                    }
                    char title[256];
                    snprintf(title, sizeof title,
                             "micro S=%d P=%d L=%d (%.0f ns), %d thread%s on %d CPUs; physical limit %.1f Mops/s",
                             S[is], P[ip], L[il], L[il] * unit, threads[it], threads[it] > 1 ? "s" : "",
                             cores, limit / 1e6);
                    report_cell(stdout, cell, nspecs, title);
                    fflush(stdout);
                    nrecs += nspecs;
                }
            }

    if (json_path) {
        char extra[128];
        snprintf(extra, sizeof extra,
                 "\"local_unit_ns\": %.4f, \"pin\": \"%s\", \"repeat\": %d, \"via\": \"%s\"", unit,
                 pin_arg, repeat, via == VIA_LOCK ? "lock" : via == VIA_EXECUTE ? "execute" : "auto");
        if (report_json(json_path, &m, extra, recs, nrecs) != 0) {
            fprintf(stderr, "baton bench micro: cannot write %s: %s\n", json_path, strerror(errno));
            failed++;
        } else {
            printf("\nwrote %s\n", json_path);
        }
    }
    if (failed)
        printf("\n%d result(s) FAILED verification or did not run: see the status column\n", failed);
    free(runs);
    free(recs);
    free(order);
    machine_free(&m);
    return failed ? 1 : 0;
}
