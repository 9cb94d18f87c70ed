/* micro.c - `baton bench micro`: the lock micro-benchmark.
 *
 * The workload of the RCL paper's micro-benchmark (section 3.1) and of the
 * MONITOR/MWAIT paper's lock benchmark: each thread loops
 *     L units of thread-local work (bench_local_work),
 *     read its P private cache lines (so they stay in its own cache, as the
 *       RCL paper's clients do before each critical section),
 *     lock; read-modify-write S shared and P private cache lines; unlock.
 * With --lock-count N, each operation takes one of N locks (the same spec)
 * at random (a thread-local xorshift), and each lock guards S shared lines
 * of its own.  Each thread counts, privately, the operations it did under
 * each lock.  At the end every shared line of lock k must hold the number
 * of operations done under lock k and every private line its thread's
 * count; any difference means the lock let two threads in, and the run
 * fails loudly (exit status 1).
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
#include "progress.h"
#include "report.h"
#include "topo.h"
#include "workloads.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
    uint64_t *under; /* operations done under each lock: thread-private */
    bench_local_t local;
    struct micro_cs cs;
    int error; /* what baton_execute returned, if it failed */
};

struct micro_state {
    const struct micro_params *p;
    bench_lock_t *locks;
    int nlocks;
    struct micro_line *shared; /* lock k guards lines [k*S, (k+1)*S) */
    struct micro_thread *t;
    int threads;
    bool execute; /* run critical sections through bench_execute() */
};

static inline void bump(struct micro_line *l)
{
    /* A read-modify-write that is not atomic (two relaxed steps): what a
     * critical section's plain increment costs, without a data race. */
    atomic_store_explicit(&l->v, atomic_load_explicit(&l->v, memory_order_relaxed) + 1, memory_order_relaxed);
}

static void micro_cs_run(void *ctx)
{
    const struct micro_cs *cs = ctx;
    for (int i = 0; i < cs->S; i++)
        bump(&cs->shared[i]);
    for (int i = 0; i < cs->P; i++)
        bump(&cs->priv[i]);
}

static int micro_locks(const void *params)
{
    const struct micro_params *p = params;
    return p->lock_count > 1 ? p->lock_count : 1;
}

static void *micro_setup(const void *params, bench_lock_t *locks, int threads, char *err, size_t errlen)
{
    const struct micro_params *p = params;
    struct micro_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p;
    s->locks = locks;
    s->nlocks = micro_locks(p);
    s->threads = threads;
    s->execute = p->via == VIA_EXECUTE || (p->via == VIA_AUTO && !(locks->caps & BATON_CAP_LOCK));
    size_t nshared = (size_t)s->nlocks * (size_t)(p->shared_lines > 0 ? p->shared_lines : 1);
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

/* Lock k of n, uniformly (multiply-shift of a 32-bit xorshift draw). */
static inline uint32_t pick_lock(uint32_t *x, uint32_t n)
{
    return (uint32_t)(((uint64_t)bench_rand(x) * n) >> 32);
}

static uint64_t micro_thread(void *state, int index, const _Atomic int *stop)
{
    struct micro_state *s = state;
    const int S = s->p->shared_lines, P = s->p->private_lines;
    const uint32_t L = (uint32_t)s->p->local_work, N = (uint32_t)s->nlocks;
    struct micro_thread *me = &s->t[index];
    /* Private lines and counts are allocated by their thread (first touch:
     * its node). */
    size_t np = P > 0 ? (size_t)P : 1;
    me->priv = aligned_alloc(BENCH_LINE, np * sizeof *me->priv);
    me->under = calloc(N, sizeof *me->under);
    if (!me->priv || !me->under) {
        me->error = ENOMEM;
        return 0;
    }
    memset(me->priv, 0, np * sizeof *me->priv);
    bench_local_init(&me->local, 0x9e3779b9u * (uint32_t)(index + 1));
    uint32_t x = 0x85ebca6bu * (uint32_t)(index + 1) + 1; /* the lock draws */
    struct micro_line *const shared0 = s->shared, *priv = me->priv;
    bench_lock_t *const locks = s->locks;
    uint64_t *under = me->under;
    const bool skip_lock = s->p->inject_fault && index == 0;
    const bool execute = s->execute && !skip_lock;
    me->cs = (struct micro_cs){s->shared, priv, S, P};
    uint64_t ops = 0;
    uint64_t sink = 0;
    /* With one lock the loop is the plain micro-benchmark's: no draw, and
     * its count is `ops`. */
    uint32_t k = 0;
    struct micro_line *shared = shared0;
    bench_lock_t *lock = locks;
    do {
        if (L)
            bench_local_work(&me->local, L);
        for (int i = 0; i < P; i++)
            sink += atomic_load_explicit(&priv[i].v, memory_order_relaxed);
        if (N > 1) {
            k = pick_lock(&x, N);
            shared = shared0 + (size_t)k * (size_t)S;
            lock = &locks[k];
        }
        if (execute) {
            me->cs.shared = shared;
            int rc = bench_execute(lock, micro_cs_run, &me->cs);
            if (rc != 0) {
                me->error = rc;
                break;
            }
        } else {
            if (!skip_lock)
                bench_lock_acquire(lock);
            for (int i = 0; i < S; i++)
                bump(&shared[i]);
            for (int i = 0; i < P; i++)
                bump(&priv[i]);
            if (!skip_lock)
                bench_lock_release(lock);
        }
        if (N > 1)
            under[k]++;
        ops++;
        /* Relaxed: the flag only ends the loop; the join orders the rest. */
    } while (!atomic_load_explicit(stop, memory_order_relaxed));
    if (N == 1)
        under[0] = ops;
    if (sink == 1)
        me->local.a[0]++; /* keep the reads of private lines */
    return ops;
}

static int micro_verify(void *state, const uint64_t *ops, int threads, bench_result_t *r)
{
    struct micro_state *s = state;
    for (int i = 0; i < threads; i++)
        if (s->t[i].error) {
            snprintf(r->message, sizeof r->message, "thread %d: %s failed: %s", i,
                     s->t[i].error == ENOMEM ? "allocation" : "baton_execute", strerror(s->t[i].error));
            return 1;
        }
    /* Every line of lock k holds the operations done under lock k.  The
     * loads here are relaxed: the runner joined every thread, and the join
     * orders their writes before them. */
    const int S = s->p->shared_lines;
    int broken = 0, first = -1, first_line = 0;
    uint64_t first_v = 0, first_want = 0;
    for (int k = 0; k < s->nlocks; k++) {
        uint64_t want = 0;
        for (int t = 0; t < threads; t++)
            want += s->t[t].under[k];
        for (int i = 0; i < S; i++) {
            uint64_t v =
                atomic_load_explicit(&s->shared[(size_t)k * (size_t)S + (size_t)i].v, memory_order_relaxed);
            if (v == want)
                continue;
            if (broken++ == 0) {
                first = k;
                first_line = i;
                first_v = v;
                first_want = want;
            }
            break; /* one line per lock is enough to count it */
        }
    }
    if (broken) {
        snprintf(r->message, sizeof r->message,
                 "shared line %d holds %llu after %llu operations under lock %d (%d of %d locks "
                 "broken): mutual exclusion broken",
                 first_line, (unsigned long long)first_v, (unsigned long long)first_want, first, broken,
                 s->nlocks);
        return 1;
    }
    for (int t = 0; t < threads; t++) {
        uint64_t sum = 0;
        for (int k = 0; k < s->nlocks; k++)
            sum += s->t[t].under[k];
        if (sum != ops[t]) {
            snprintf(r->message, sizeof r->message, "thread %d counted its operations wrong", t);
            return 1;
        }
        for (int i = 0; i < s->p->private_lines; i++) {
            uint64_t v = atomic_load_explicit(&s->t[t].priv[i].v, memory_order_relaxed);
            if (v != ops[t]) {
                snprintf(r->message, sizeof r->message, "thread %d private line %d holds %llu, expected %llu",
                         t, i, (unsigned long long)v, (unsigned long long)ops[t]);
                return 1;
            }
        }
    }
    return 0;
}

static void micro_teardown(void *state)
{
    struct micro_state *s = state;
    for (int i = 0; i < s->threads; i++) {
        free(s->t[i].priv);
        free(s->t[i].under);
    }
    free(s->t);
    free(s->shared);
    free(s);
}

const bench_workload_t micro_workload = {
    .name = "micro",
    .locks = micro_locks,
    .setup = micro_setup,
    .thread_main = micro_thread,
    .extras = bench_extras_ops_per_session,
    .verify = micro_verify,
    .teardown = micro_teardown,
};

/* --- the command ------------------------------------------------------------ */


static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: baton bench micro [options]\n"
        "  --locks LIST         lock specs and peers, comma-separated, or all|kinds|peers|rwpeers|allwaits\n"
        "                       (default all; 'baton kinds' lists the kinds).  'all' and 'peers'\n"
        "                       hold the mutex peers; the readers-writer peers run here as mutexes\n"
        "                       (their write lock) when named, or with 'rwpeers'\n"
        "  --threads LIST       thread counts (default 1,2,8)\n"
        "  --shared-lines LIST  S: shared cache lines written per critical section (default 1)\n"
        "  --private-lines LIST P: private cache lines written per critical section (default 0)\n"
        "  --local-work LIST    L: units of thread-local work between critical sections (default 0)\n"
        "  --lock-count LIST    N: locks (same spec); each operation takes one at random, and\n"
        "                       each lock guards S shared lines of its own (default 1)\n"
        "  --hog LIST           CPU-bound processes (a spin loop each, unpinned, normal priority)\n"
        "                       running beside every run (default 0)\n"
        "  --via MODE           auto|lock|execute: how critical sections run (default auto: lock\n"
        "                       and unlock where the kind offers them, else baton_execute; lock\n"
        "                       refuses kinds without lock; execute uses baton_execute for every\n"
        "                       kind, lock-call-unlock for peers).  Kinds that keep statistics\n"
        "                       add a column: operations per help session\n"
        "  --duration SEC       length of one run (default 1)\n"
        "  --repeat R           runs per cell; the median is reported (default 3)\n"
        "  --pin POLICY         compact|spread|none (default compact)\n"
        "  --json FILE          write every result as JSON\n"
        "  --inject-fault       thread 0 skips the lock (tests that verification fails)\n" BENCH_WAIT_USAGE);
}

/* Measure the single-thread rate at (S, P, L) with the reference kind,
 * unless known (bench_cell_limit() raises it to any faster N=1 result of
 * the run). */
static void reference_rate(bench_refs_t *refs, int S, int P, int L, const bench_cfg_t *base, int repeat,
                           const struct micro_params *proto)
{
    const int key[BENCH_REF_KEYS] = {S, P, L};
    if (bench_ref_get(refs, key) >= 0)
        return;
    struct micro_params mp = *proto;
    mp.shared_lines = S;
    mp.private_lines = P;
    mp.local_work = L;
    mp.inject_fault = false;
    mp.via = VIA_LOCK; /* the limit is the work's, not the API path's */
    mp.lock_count = 1;
    bench_ref_put(refs, key, bench_single_rate(&micro_workload, &mp, base, repeat));
}

/* --via lock needs lock and unlock: refuse the kinds without them. */
static int micro_check_via(const bench_lock_t *l, const void *ctx, char *err, size_t errlen)
{
    const int *via = ctx;
    if (*via == VIA_LOCK && !(l->caps & BATON_CAP_LOCK)) {
        snprintf(err, errlen,
                 "--via lock: '%s' offers no lock/unlock (execute and delegate only); use --via "
                 "auto or execute",
                 l->spec);
        return 1;
    }
    return 0;
}

/* bench micro's own options. */
struct micro_opts {
    int S[BENCH_LIST_MAX], nS, P[BENCH_LIST_MAX], nP, L[BENCH_LIST_MAX], nL;
    int C[BENCH_LIST_MAX], nC, H[BENCH_LIST_MAX], nH;
    int via;
};

static int micro_option(int c, const char *arg, void *ctx)
{
    struct micro_opts *mo = ctx;
    switch (c) {
    case 'S': return (mo->nS = bench_parse_ints(arg, mo->S, BENCH_LIST_MAX)) <= 0;
    case 'P': return (mo->nP = bench_parse_ints(arg, mo->P, BENCH_LIST_MAX)) <= 0;
    case 'L': return (mo->nL = bench_parse_ints(arg, mo->L, BENCH_LIST_MAX)) <= 0;
    case 'c':
        if ((mo->nC = bench_parse_ints(arg, mo->C, BENCH_LIST_MAX)) <= 0)
            return 1;
        for (int i = 0; i < mo->nC; i++)
            if (mo->C[i] < 1 || mo->C[i] > MICRO_LOCKS_MAX)
                return 1;
        return 0;
    case 'H':
        if ((mo->nH = bench_parse_ints(arg, mo->H, BENCH_LIST_MAX)) <= 0)
            return 1;
        for (int i = 0; i < mo->nH; i++)
            if (mo->H[i] > BENCH_HOGS_MAX)
                return 1;
        return 0;
    case 'v':
        mo->via = !strcmp(arg, "auto")      ? VIA_AUTO
                  : !strcmp(arg, "lock")    ? VIA_LOCK
                  : !strcmp(arg, "execute") ? VIA_EXECUTE
                                            : -1;
        return mo->via < 0;
    default: return 1;
    }
}

int cmd_bench_micro(int argc, char **argv)
{
    bench_opts_t o = {
        .locks = "all", .pin = "compact", .threads = {1, 2, 8}, .nthreads = 3, .duration = 1.0, .repeat = 3};
    struct micro_opts mo = {.S = {1},
                            .nS = 1,
                            .P = {0},
                            .nP = 1,
                            .L = {0},
                            .nL = 1,
                            .C = {1},
                            .nC = 1,
                            .H = {0},
                            .nH = 1,
                            .via = VIA_AUTO};
    static const cli_opt_t opts[] = {BENCH_OPT_LOCKS,
                                     BENCH_OPT_THREADS,
                                     {"shared-lines", CLI_VALUE, 0, 'S'},
                                     {"private-lines", CLI_VALUE, 0, 'P'},
                                     {"local-work", CLI_VALUE, 0, 'L'},
                                     BENCH_OPT_DURATION,
                                     BENCH_OPT_REPEAT,
                                     BENCH_OPT_PIN,
                                     BENCH_OPT_JSON,
                                     BENCH_OPT_FAULT,
                                     {"via", CLI_VALUE, 0, 'v'},
                                     {"lock-count", CLI_VALUE, 0, 'c'},
                                     {"hog", CLI_VALUE, 0, 'H'},
                                     BENCH_OPT_END};
    const int prc = bench_getopt("micro", argc, argv, opts, &o, micro_option, &mo, usage);
    if (prc >= 0)
        return prc;
    const int *S = mo.S, nS = mo.nS, *P = mo.P, nP = mo.nP, *L = mo.L, nL = mo.nL, via = mo.via;
    const char *via_name = via == VIA_LOCK      ? "lock"
                           : via == VIA_EXECUTE ? "execute"
                                                : "auto (lock, else execute)";
    char tail[64];
    snprintf(tail, sizeof tail, "; via %s", via_name);
    const bench_cmd_t cmd = {.name = "micro",
                             .locks = o.locks,
                             .threads = o.threads,
                             .nthreads = o.nthreads,
                             .duration_s = o.duration,
                             .repeat = o.repeat,
                             .pin = o.pin,
                             .header_tail = tail,
                             .check = micro_check_via,
                             .ctx = &via};
    bench_setup_t b;
    int rc = bench_cmd_setup(&cmd, &b);
    if (rc != 0)
        return rc;
    const int nspecs = b.nspecs, cores = b.cores;

    const int *C = mo.C, nC = mo.nC, *H = mo.H, nH = mo.nH;
    int cells = nS * nP * nL * nC * nH * o.nthreads;
    bench_record_t *recs = calloc((size_t)cells * (size_t)nspecs, sizeof *recs);
    bench_result_t *runs = calloc((size_t)nspecs * (size_t)o.repeat, sizeof *runs);
    bench_refs_t refs = {0};
    int nrecs = 0, failed = 0;

    bench_progress_begin(cells);
    for (int is = 0; is < nS; is++)
        for (int ip = 0; ip < nP; ip++)
            for (int il = 0; il < nL; il++)
                for (int ic = 0; ic < nC; ic++)
                    for (int ih = 0; ih < nH; ih++) {
                        struct micro_params mp = {S[is], P[ip], L[il], o.fault, via, C[ic]};
                        const int key[BENCH_REF_KEYS] = {S[is], P[ip], L[il]};
                        reference_rate(&refs, S[is], P[ip], L[il], &b.base, o.repeat, &mp);
                        reference_rate(&refs, S[is], P[ip], 0, &b.base, o.repeat, &mp);
                        for (int it = 0; it < o.nthreads; it++) {
                            bench_record_t *cell = &recs[nrecs];
                            bench_cfg_t cfg = b.base;
                            cfg.threads = o.threads[it];
                            cfg.hogs = H[ih];
                            char label[96];
                            snprintf(label, sizeof label, "micro S=%d P=%d L=%d locks=%d hogs=%d", S[is],
                                     P[ip], L[il], C[ic], H[ih]);
                            bench_cell_run(&micro_workload, &mp, "micro", b.specs, nspecs, &cfg, o.repeat,
                                           runs, cell, label);
                            for (int k = 0; k < nspecs; k++) {
                                bench_record_t *rec = &cell[k];
                                static const char *const names[] = {"shared_lines", "private_lines",
                                                                    "local_work", "lock_count", "hogs"};
                                const long values[] = {S[is], P[ip], L[il], C[ic], H[ih]};
                                rec->nparams = 5;
                                for (int q = 0; q < 5; q++) {
                                    rec->param_names[q] = names[q];
                                    rec->params[q] = values[q];
                                }
                            }
                            /* Limits use the best N=1 rates known so far.  With
                             * several locks, sections need not run one at a time,
                             * and the single-lock limit says nothing. */
                            double limit =
                                C[ic] > 1 ? 0
                                          : bench_cell_limit(&refs, key, cell, nspecs, o.threads[it], cores);
                            failed += bench_cell_finish(cell, nspecs, limit);
                            char title[256],
                                lim[64] = "no physical limit (sections on different locks overlap)";
                            if (limit > 0)
                                snprintf(lim, sizeof lim, "physical limit %.1f Mops/s", limit / 1e6);
                            snprintf(
                                title, sizeof title,
                                "micro S=%d P=%d L=%d (%.0f ns), %d lock%s, %d hog%s, %d thread%s on %d CPUs; %s",
                                S[is], P[ip], L[il], L[il] * b.unit_ns, C[ic], C[ic] > 1 ? "s" : "", H[ih],
                                H[ih] == 1 ? "" : "s", o.threads[it], o.threads[it] > 1 ? "s" : "", cores,
                                lim);
                            report_cell(stdout, cell, nspecs, title);
                            fflush(stdout);
                            nrecs += nspecs;
                        }
                    }

    char extra[128];
    snprintf(extra, sizeof extra, "\"local_unit_ns\": %.4f, \"pin\": \"%s\", \"repeat\": %d, \"via\": \"%s\"",
             b.unit_ns, o.pin, o.repeat,
             via == VIA_LOCK      ? "lock"
             : via == VIA_EXECUTE ? "execute"
                                  : "auto");
    rc = bench_cmd_finish(&b, o.json, extra, recs, nrecs, failed);
    bench_refs_free(&refs);
    free(runs);
    free(recs);
    return rc;
}
