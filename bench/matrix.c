/* matrix.c - `baton bench matrix`: does the default lock ever lose?
 *
 * The default mutex ("default", what baton_lock_new("default") opens) runs
 * against the reference set, the locks a program would use instead: every
 * mutex peer of this build and glibc's mutex (pthread).  In the rw cells
 * the default readers-writer lock (BENCH_DEFAULT_RW_SPEC) runs against the
 * readers-writer peers, glibc's default (reader-preferring) rwlock among
 * them.  --also names baton kinds that run beside them, for information
 * only: they are never the reference.
 *
 * The cells are those of the other benches, through their own workloads
 * (workloads.h): micro over threads, shared lines, local work, lock count
 * and CPU hogs; pq; the elide bench's cache at 90% gets; bench server's
 * counter and imbalanced counter at its shortest interval; rw.  In each
 * cell every candidate runs once per round, in an order rotated each round
 * (bench_cell_run), and its median run counts.  A candidate that collapses
 * is cut off at the runner's deadline: a loss for it (it is no reference),
 * never for the default.
 *
 * Per cell one line: the default's throughput, the fastest reference lock
 * and its throughput, their ratio, the default's fairness and largest
 * acquisition wait (sampled 1 in 8), CPU-seconds per million operations of
 * both, and the best --also kind.
 *
 * A duel judges each cell.  On a machine whose speed moves in phases (a
 * VM's), the medians of a few rounds taken minutes apart compare phases
 * as much as locks: on the project's 2-CPU VMs one cell's ratio moved
 * 0.33 -> 1.26 between two runs of the matrix.  So after the first pass
 * has named the fastest references, the default and the two fastest run
 * again alone, alternated, for --confirm rounds; each round's ratio
 * compares runs a moment apart, in one phase, and the lower of the two
 * medians of those ratios judges the cell.  Every cell has its duel (a threshold,
 * --confirm-below, restricts them to the cells that look lost, which is
 * faster but lets a lucky first pass stand).  A summary counts the cells
 * won (ratio >= 1), within 5% and lost, and names the worst.  The exit status
 * is 1 when a run fails verification or crashes, never for a lost cell.
 */
#include "bench.h"
#include "progress.h"
#include "report.h"
#include "topo.h"
#include "workloads.h"
#include "../src/base/join.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MX_DIM 8               /* values of one dimension */
#define MX_RUN_OVERHEAD_S 0.05 /* fork, setup and thread start of one run: the estimate's guess */
#define MX_CONFIRM_MIN 3       /* the time box shortens duels to this many rounds, no fewer */
#define MX_DUEL_REFS 2         /* a duel's references: the fastest of the first pass */

/* Which cells a matrix has. */
struct mx_plan {
    const char *name;
    /* micro: threads, shared lines, local work, lock count, hogs */
    int T[MX_DIM], nT, S[MX_DIM], nS, L[MX_DIM], nL, C[MX_DIM], nC, H[MX_DIM], nH;
    int pqT[MX_DIM], npqT;                    /* pq, L=0 */
    int elT[MX_DIM], nelT;                    /* elide's cache, 90% gets, no stats counter */
    int srvT[MX_DIM], nsrvT;                  /* server counter and imbalanced, shortest interval */
    int rwT[MX_DIM], nrwT, rwR[MX_DIM], nrwR; /* rw, L=0 */
    int repeat;
    double duration_s;
    double time_box_min; /* 0: none */
    int confirm;         /* rounds of a duel (0: none) */
};

static const struct mx_plan plan_full = {
    "full", {1, 2, 4, 8, 16}, 5, {1, 10}, 2, {0, 100, 1000}, 3, {1, 64, 4096}, 3, {0, 1}, 2,   {8, 16},
    2,      {8, 16},          2, {2, 4},  2, {2, 8},         2, {50, 80},      2, 3,      0.3, 60,
    7};

static const struct mx_plan plan_quick = {
    "quick", {2, 16}, 2,      {10}, 1,      {0, 100}, 2,        {1, 64}, 2, {0, 1}, 2, {8, 16}, 2,
    {8, 16}, 2,       {2, 4}, 2,    {2, 8}, 2,        {50, 80}, 2,       1, 0.3,    5, 5};

static const struct mx_plan plan_smoke = {"smoke", {2},  1,   {1}, 1,    {0}, 1,   {1, 64}, 2,
                                          {0, 1},  2,    {2}, 1,   {2},  1,   {2}, 1,       {2},
                                          1,       {50}, 1,   1,   0.05, 0,   0};

#define MX_PARAMS 5

/* One cell: a workload, its parameters, and what it is called. */
struct mx_cell {
    const char *bench;
    const bench_workload_t *wl;
    const void *params; /* one of the members below */
    bool rw;            /* the readers-writer candidates */
    int threads, hogs;
    char label[80];
    const char *json_workload; /* server: the workload's name; else NULL */
    int nparams;
    const char *pname[MX_PARAMS];
    long pval[MX_PARAMS];
    union {
        struct micro_params micro;
        struct pq_params pq;
        struct rw_params rw;
        struct elide_params elide;
        struct srv_params srv;
    } p;
};

/* What a cell gave. */
struct mx_out {
    bool ran;
    bench_record_t def, ref, also; /* ref, also: the fastest that ran */
    bool has_ref, has_also;
    double ratio;      /* default / fastest reference; INFINITY: no reference ran to the
                        * end; 0: the default did not */
    double also_ratio; /* fastest --also kind / fastest reference */
    /* The duel (rounds 0: none): the median and quartiles of the per-round
     * ratios default / ref; when it ran, the median judges the cell. */
    int duel_rounds;
    double duel_ratio, duel_q1, duel_q3;
    char duel_ref[BENCH_SPEC_MAX]; /* the reference that judged it */
    int duel_nrefs;                /* how many references the duel had */
};

/* What judges a cell: the duel's ratio where one ran, else the medians'. */
static double mx_verdict(const struct mx_out *o) { return o->duel_rounds ? o->duel_ratio : o->ratio; }

/* A ratio's class, as the summary counts it. */
enum { MX_WON, MX_NEAR, MX_LOST };
static const char *const mx_class_name[] = {"won", "within 5%", "lost"};
static int mx_class(double ratio) { return ratio >= 1.0 ? MX_WON : ratio >= 0.95 ? MX_NEAR : MX_LOST; }

/* The candidates of one family of cells: specs[0] is the default,
 * [1, nbase) the reference set, [nbase, n) the --also kinds. */
struct mx_cands {
    char (*specs)[BENCH_SPEC_MAX];
    int n, nbase;
};

static void set_params(struct mx_cell *c, int n, const char *const *names, const long *values)
{
    c->nparams = n;
    for (int i = 0; i < n; i++) {
        c->pname[i] = names[i];
        c->pval[i] = values[i];
    }
}

/* The plan's cells, in order: micro, pq, elide, server, rw.  Returns the
 * count (cells has room for mx_count()). */
static int mx_cells(const struct mx_plan *pl, bool fault, uint32_t srv_units, struct mx_cell *cells)
{
    int n = 0;
    for (int is = 0; is < pl->nS; is++)
        for (int il = 0; il < pl->nL; il++)
            for (int ic = 0; ic < pl->nC; ic++)
                for (int ih = 0; ih < pl->nH; ih++)
                    for (int it = 0; it < pl->nT; it++) {
                        struct mx_cell *c = &cells[n++];
                        *c = (struct mx_cell){
                            .bench = "micro", .wl = &micro_workload, .threads = pl->T[it], .hogs = pl->H[ih]};
                        c->p.micro =
                            (struct micro_params){pl->S[is], 0, pl->L[il], fault, VIA_AUTO, pl->C[ic]};
                        c->params = &c->p.micro;
                        snprintf(c->label, sizeof c->label, "micro N=%d S=%d L=%d locks=%d hog=%d", pl->T[it],
                                 pl->S[is], pl->L[il], pl->C[ic], pl->H[ih]);
                        static const char *const names[] = {"shared_lines", "local_work", "lock_count",
                                                            "hogs"};
                        set_params(c, 4, names, (const long[]){pl->S[is], pl->L[il], pl->C[ic], pl->H[ih]});
                    }
    for (int it = 0; it < pl->npqT; it++) {
        struct mx_cell *c = &cells[n++];
        *c = (struct mx_cell){.bench = "pq", .wl = &pq_workload, .threads = pl->pqT[it]};
        c->p.pq = (struct pq_params){0, PQ_PREFILL, false, fault};
        c->params = &c->p.pq;
        snprintf(c->label, sizeof c->label, "pq N=%d L=0", pl->pqT[it]);
        static const char *const names[] = {"local_work", "prefill"};
        set_params(c, 2, names, (const long[]){0, PQ_PREFILL});
    }
    for (int it = 0; it < pl->nelT; it++) {
        struct mx_cell *c = &cells[n++];
        *c = (struct mx_cell){.bench = "elide", .wl = &elide_workload, .threads = pl->elT[it]};
        c->p.elide =
            (struct elide_params){90, STATS_OFF, ELIDE_BUCKETS, ELIDE_KEYS, ELIDE_ITEMS, fault, NULL};
        c->params = &c->p.elide;
        snprintf(c->label, sizeof c->label, "elide cache N=%d get=90%%", pl->elT[it]);
        static const char *const names[] = {"mix_get"};
        set_params(c, 1, names, (const long[]){90});
    }
    static const int srv_wl[] = {WL_COUNTER, WL_IMBALANCED};
    static const char *const srv_names[] = {"counter", "imbalanced"};
    for (int w = 0; w < 2; w++)
        for (int it = 0; it < pl->nsrvT; it++) {
            struct mx_cell *c = &cells[n++];
            *c = (struct mx_cell){.bench = "server",
                                  .wl = &srv_workload,
                                  .threads = pl->srvT[it],
                                  .json_workload = srv_names[w]};
            c->p.srv = (struct srv_params){srv_wl[w], srv_units, fault};
            c->params = &c->p.srv;
            snprintf(c->label, sizeof c->label, "server %s N=%d I=%dcyc", srv_names[w], pl->srvT[it],
                     SRV_INTERVAL_CYCLES_MIN);
            static const char *const names[] = {"interval_cycles"};
            set_params(c, 1, names, (const long[]){SRV_INTERVAL_CYCLES_MIN});
        }
    for (int ir = 0; ir < pl->nrwR; ir++)
        for (int it = 0; it < pl->nrwT; it++) {
            struct mx_cell *c = &cells[n++];
            *c = (struct mx_cell){.bench = "rw", .wl = &rw_workload, .threads = pl->rwT[it], .rw = true};
            c->p.rw = (struct rw_params){pl->rwR[ir], 0, fault};
            c->params = &c->p.rw;
            snprintf(c->label, sizeof c->label, "rw N=%d reads=%d%% L=0", pl->rwT[it], pl->rwR[ir]);
            static const char *const names[] = {"reads_pct", "local_work"};
            set_params(c, 2, names, (const long[]){pl->rwR[ir], 0});
        }
    return n;
}

static int mx_count(const struct mx_plan *pl)
{
    return pl->nS * pl->nL * pl->nC * pl->nH * pl->nT + pl->npqT + pl->nelT + 2 * pl->nsrvT +
           pl->nrwR * pl->nrwT;
}

/* Expand and open `list` into c (the first `nbase` expanded specs are the
 * default and its references).  0, or -1 after saying why. */
static int mx_candidates(const char *base, const char *also, struct mx_cands *c)
{
    char list[1024], err[1024];
    c->specs = calloc(BENCH_MAX_LOCKS, sizeof *c->specs);
    if (!c->specs) {
        fprintf(stderr, "baton bench matrix: out of memory\n");
        return -1;
    }
    c->nbase = bench_expand_locks(base, c->specs, BENCH_MAX_LOCKS, err, sizeof err);
    snprintf(list, sizeof list, "%s%s%s", base, also[0] ? "," : "", also);
    c->n = c->nbase < 0 ? -1 : bench_expand_locks(list, c->specs, BENCH_MAX_LOCKS, err, sizeof err);
    if (c->n >= 0 && bench_check_specs(NULL, c->specs, c->n, false, NULL, 0, err, sizeof err) < 0)
        c->n = -1;
    if (c->n < 0) {
        fprintf(stderr, "baton bench matrix: %s\n", err);
        free(c->specs);
        return -1;
    }
    return 0;
}

static void print_list(const char *what, const struct mx_cands *c, int from, int to)
{
    printf("  %s:", what);
    for (int k = from; k < to; k++)
        printf("%s %s", k > from ? "," : "", c->specs[k]);
    printf("%s\n", from >= to ? " none" : "");
}

/* The fastest record of recs[from, to) that ran to the end, or NULL. */
static const bench_record_t *fastest(const bench_record_t *recs, int from, int to)
{
    const bench_record_t *best = NULL;
    for (int k = from; k < to; k++)
        if (recs[k].median.status == BENCH_OK && (!best || record_rate(&recs[k]) > record_rate(best)))
            best = &recs[k];
    return best;
}

static double cpu_per_mop(const bench_record_t *r)
{
    return r->median.ops ? r->median.cpu_s / ((double)r->median.ops / 1e6) : 0.0;
}

/* Fill o from the cell's records (recs[k] ran cands->specs[k]). */
static void mx_judge(const bench_record_t *recs, const struct mx_cands *cands, struct mx_out *o)
{
    o->ran = true;
    o->def = recs[0];
    const bench_record_t *ref = fastest(recs, 1, cands->nbase);
    const bench_record_t *also = fastest(recs, cands->nbase, cands->n);
    const double def = o->def.median.status == BENCH_OK ? record_rate(&o->def) : 0.0;
    o->has_ref = ref != NULL;
    o->has_also = also != NULL;
    if (ref)
        o->ref = *ref;
    if (also)
        o->also = *also;
    /* A default that did not run to the end loses, whatever the others did. */
    o->ratio = o->def.median.status != BENCH_OK ? 0.0
               : ref && record_rate(ref) > 0    ? def / record_rate(ref)
                                                : INFINITY;
    o->also_ratio = also && ref && record_rate(ref) > 0 ? record_rate(also) / record_rate(ref) : -1;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median, q1 and q3 of r[0..n) (sorted in place). */
static void quartiles(double *r, int n, double *med, double *q1, double *q3)
{
    qsort(r, (size_t)n, sizeof r[0], cmp_double);
    *med = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    *q1 = r[n / 4];
    *q3 = r[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1];
}

/* The duel of cell c (see the top): the default against the first pass's
 * MX_DUEL_REFS fastest references (recs, cands), all alternated, `rounds`
 * rounds; the reference against which the default's median per-round
 * ratio is lowest judges the cell (the first pass's order among close
 * references is itself a draw).  Returns how many runs failed
 * verification or crashed; fills o's duel where every run of the default
 * and of at least one reference went to the end. */
static int mx_duel(const struct mx_cell *c, const bench_cfg_t *cfg, int rounds, const bench_record_t *recs,
                   const struct mx_cands *cands, struct mx_out *o)
{
    char specs[1 + MX_DUEL_REFS][BENCH_SPEC_MAX];
    bool used[BENCH_MAX_LOCKS] = {false};
    int n = 1;
    snprintf(specs[0], sizeof specs[0], "%s", o->def.lock);
    while (n < 1 + MX_DUEL_REFS) {
        int best = -1;
        for (int k = 1; k < cands->nbase && k < BENCH_MAX_LOCKS; k++)
            if (!used[k] && recs[k].median.status == BENCH_OK &&
                (best < 0 || record_rate(&recs[k]) > record_rate(&recs[best])))
                best = k;
        if (best < 0)
            break;
        used[best] = true;
        snprintf(specs[n++], sizeof specs[0], "%s", recs[best].lock);
    }
    if (n < 2)
        return 0;
    bench_result_t runs[(1 + MX_DUEL_REFS) * REPORT_MAX_RUNS];
    bench_record_t drecs[1 + MX_DUEL_REFS];
    bench_cell_run(c->wl, c->params, c->bench, specs, n, cfg, rounds, runs, drecs, c->label);
    const int failed = bench_cell_finish(drecs, n, 0);
    for (int i = 0; i < rounds; i++)
        if (runs[i].status != BENCH_OK || runs[i].seconds <= 0)
            return failed; /* no duel: the medians judge */
    for (int k = 1; k < n; k++) {
        double r[REPORT_MAX_RUNS], med, q1, q3;
        int m = 0;
        for (int i = 0; i < rounds; i++) {
            const bench_result_t *d = &runs[i], *f = &runs[k * rounds + i];
            if (f->status != BENCH_OK || f->seconds <= 0 || f->ops == 0)
                break;
            r[m++] = ((double)d->ops / d->seconds) / ((double)f->ops / f->seconds);
        }
        if (m < rounds)
            continue; /* this reference did not go to the end: it judges nothing */
        quartiles(r, m, &med, &q1, &q3);
        if (o->duel_rounds == 0 || med < o->duel_ratio) {
            o->duel_rounds = m;
            o->duel_ratio = med;
            o->duel_q1 = q1;
            o->duel_q3 = q3;
            snprintf(o->duel_ref, sizeof o->duel_ref, "%s", specs[k]);
        }
    }
    o->duel_nrefs = n - 1;
    return failed;
}

static void mx_header(void)
{
    printf("\n%-38s %8s  %-22s %8s %6s %5s %9s %19s  %s\n", "cell", "default", "fastest reference", "Mops/s",
           "ratio", "fair", "max wait", "CPU-s/Mop", "best --also, ratio");
    /* "µs" is two bytes for one column. */
    printf("%-38s %8s  %-22s %8s %6s %5s %10s %19s\n", "", "Mops/s", "", "", "", "", "µs", "default / ref");
}

static void mx_line(const struct mx_cell *c, const struct mx_out *o, const bench_record_t *recs,
                    const struct mx_cands *cands)
{
    char ref[64] = "-", refrate[32] = "-", ratio[32] = "inf", wait[32], cpu[48], also[96] = "-";
    report_wait_us(wait, sizeof wait, o->def.median.wait_max_ns);
    if (isfinite(o->ratio))
        snprintf(ratio, sizeof ratio, "%.2f", o->ratio);
    if (o->has_ref) {
        snprintf(ref, sizeof ref, "%s", o->ref.lock);
        snprintf(refrate, sizeof refrate, "%.2f", record_rate(&o->ref) / 1e6);
        snprintf(cpu, sizeof cpu, "%.3g / %.3g", cpu_per_mop(&o->def), cpu_per_mop(&o->ref));
    } else {
        snprintf(cpu, sizeof cpu, "%.3g / -", cpu_per_mop(&o->def));
    }
    if (o->has_also)
        snprintf(also, sizeof also, "%s %.2f", o->also.lock, o->also_ratio);
    printf("%-38s %8.2f  %-22s %8s %6s %5.2f %9s %19s  %s\n", c->label, record_rate(&o->def) / 1e6, ref,
           refrate, ratio, record_fairness(&o->def), wait, cpu, also);
    /* What did not run to the end, and why. */
    char cut[512] = "";
    for (int k = 0; k < cands->n; k++) {
        const bench_result_t *m = &recs[k].median;
        if (m->status == BENCH_TIMEOUT) {
            baton_join(cut, sizeof cut, ", ", "%s", recs[k].lock);
        } else if (m->status != BENCH_OK) {
            printf("    %s %s: %s\n", recs[k].lock, report_status(&recs[k]), m->message);
        }
    }
    if (cut[0])
        printf("    cut off at the deadline (a loss for %s): %s\n",
               recs[0].median.status == BENCH_TIMEOUT ? "each, the default too" : "each", cut);
    if (o->duel_rounds)
        printf("    duel, %d alternated rounds, %d reference%s: default / %s per round %.2f (q1-q3 "
               "%.2f-%.2f): %s\n",
               o->duel_rounds, o->duel_nrefs, o->duel_nrefs == 1 ? "" : "s", o->duel_ref, o->duel_ratio,
               o->duel_q1, o->duel_q3, mx_class_name[mx_class(o->duel_ratio)]);
}

/* --- JSON ---------------------------------------------------------------------- */

struct mx_json {
    const struct mx_cell *cells;
    const struct mx_out *outs;
    const int *done; /* indices of the cells that ran */
};

static void json_lock(FILE *f, const char *key, const bench_record_t *r, bool have)
{
    fprintf(f, ", \"%s\": ", key);
    if (!have) {
        fprintf(f, "null");
        return;
    }
    fprintf(f, "{\"lock\": ");
    report_json_string(f, r->lock);
    fprintf(f, ", \"status\": ");
    report_json_string(f, report_status(r));
    fprintf(f, ", ");
    report_json_figures(f, r);
    fprintf(f, "}");
}

static void json_cell(FILE *f, int i, const void *ctx)
{
    const struct mx_json *j = ctx;
    const struct mx_cell *c = &j->cells[j->done[i]];
    const struct mx_out *o = &j->outs[j->done[i]];
    fprintf(f, "\"bench\": \"%s\", \"cell\": ", c->bench);
    report_json_string(f, c->label);
    if (c->json_workload)
        fprintf(f, ", \"workload\": \"%s\"", c->json_workload);
    fprintf(f, ", \"threads\": %d", c->threads);
    for (int p = 0; p < c->nparams; p++)
        fprintf(f, ", \"%s\": %ld", c->pname[p], c->pval[p]);
    json_lock(f, "default", &o->def, true);
    json_lock(f, "fastest_reference", &o->ref, o->has_ref);
    if (isfinite(o->ratio))
        fprintf(f, ", \"ratio\": %.4f", o->ratio);
    else
        fprintf(f, ", \"ratio\": null");
    if (o->duel_rounds) {
        fprintf(f, ", \"duel\": {\"rounds\": %d, \"references\": %d, \"reference\": ", o->duel_rounds,
                o->duel_nrefs);
        report_json_string(f, o->duel_ref);
        fprintf(f, ", \"ratio\": %.4f, \"q1\": %.4f, \"q3\": %.4f}", o->duel_ratio, o->duel_q1, o->duel_q3);
    } else
        fprintf(f, ", \"duel\": null");
    json_lock(f, "best_also", &o->also, o->has_also);
    if (o->also_ratio >= 0)
        fprintf(f, ", \"also_ratio\": %.4f", o->also_ratio);
}

/* --- the command ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton bench matrix [options]\n"
            "  Does the default lock ever lose?  The default mutex (spec \"default\") runs against\n"
            "  the reference set: every mutex peer of this build and glibc's mutex (pthread); in the\n"
            "  rw cells the default readers-writer lock (%s) runs against the readers-writer\n"
            "  peers, glibc's default rwlock (peer:pthread_rwlock_rp) among them.  Cells:\n"
            "    micro   threads 1,2,4,8,16 x shared lines 1,10 x local work 0,100,1000\n"
            "            x lock count 1,64,4096 x CPU hogs 0,1\n"
            "    pq      8 and 16 threads, L=0\n"
            "    elide   the cache, 90%% gets, no stats counter, 8 and 16 threads\n"
            "    server  counter and imbalanced counter, %d-cycle interval, 2 and 4 threads\n"
            "    rw      50%% and 80%% reads, 2 and 8 threads, L=0\n"
            "  In each cell every candidate runs once per round, in rotating order; the median of\n"
            "  the rounds counts.  A lock that collapses is cut off at the deadline: a loss for it.\n"
            "  One line per cell: the default's Mops/s, the fastest reference lock and its Mops/s,\n"
            "  the ratio default/fastest, the default's fairness (min/max operations per thread)\n"
            "  and largest acquisition wait (sampled 1 in 8 per thread), CPU-s per Mop of both,\n"
            "  and the best --also kind with its ratio to the fastest reference.  The summary\n"
            "  counts the cells won (ratio >= 1), within 5%% (>= 0.95) and lost, each by its duel\n"
            "  (below).  Exit status 1 when a run fails verification or crashes; a lost cell is not\n"
            "  a failure.\n"
            "  --quick              threads 2,16, S=10, L 0,100, lock count 1,64, hogs 0,1, and\n"
            "                       the pq, elide, server and rw cells; one round (at most 5 min)\n"
            "  --smoke              a tiny matrix (2 threads, S=1, L=0, lock count 1,64, hogs 0,1,\n"
            "                       one cell of each other bench; 0.05 s runs): for tests\n"
            "  --also LIST          baton kinds run beside them, for information (default\n"
            "                       ttas,mcs:spinpark; '' for none)\n"
            "  --duration SEC       length of one run (default 0.3; --smoke 0.05)\n"
            "  --repeat R           rounds per cell; the median counts (default 3; --quick and\n"
            "                       --smoke 1)\n"
            "  --time-box MIN       stop in time: fewer rounds, shorter duels, then fewer cells,\n"
            "                       said where it happens (default 60; --quick 5; --smoke none;\n"
            "                       0: none)\n"
            "  --confirm R          each cell's duel: the default against the cell's two fastest\n"
            "                       references only, alternated, R rounds (at most %d); the lower\n"
            "                       median of the per-round ratios judges the cell (default 7;\n"
            "                       --quick 5; --smoke 0: no duels)\n"
            "  --confirm-below X    duels only for the cells whose ratio is below X at first\n"
            "                       (default all: a lucky first pass would otherwise stand)\n"
            "  --pin POLICY         compact|spread|none (default compact)\n"
            "  --json FILE          one record per cell: its parameters, the default's and the\n"
            "                       fastest reference's figures, the ratio\n"
            "  --inject-fault       thread 0 skips the lock (verification must fail)\n",
            BENCH_DEFAULT_RW_SPEC, SRV_INTERVAL_CYCLES_MIN, REPORT_MAX_RUNS);
}

struct mx_opts {
    const char *also;
    const struct mx_plan *plan;
    double time_box_min; /* < 0: the plan's */
    int confirm;         /* < 0: the plan's */
    double confirm_below;
};

static int mx_option(int c, const char *arg, void *ctx)
{
    struct mx_opts *mo = ctx;
    switch (c) {
    case 'a': mo->also = arg; return 0;
    case 'q': mo->plan = &plan_quick; return 0;
    case 's': mo->plan = &plan_smoke; return 0;
    case 'T': mo->time_box_min = atof(arg); return !(mo->time_box_min >= 0 && mo->time_box_min <= 10000);
    case 'c': mo->confirm = atoi(arg); return !(mo->confirm >= 0 && mo->confirm <= REPORT_MAX_RUNS);
    case 'b': mo->confirm_below = strcmp(arg, "all") ? atof(arg) : INFINITY; return !(mo->confirm_below > 0);
    default: return 1;
    }
}

/* Where the time box stands before the cell `next` of n. */
struct mx_clock {
    double t0, box_s; /* box_s 0: none */
    long runs;        /* runs made, and */
    double run_s;     /* the seconds they took */
    double guess_s;   /* one run's seconds before any was made */
};

static double mx_run_s(const struct mx_clock *k) { return k->runs ? k->run_s / (double)k->runs : k->guess_s; }

/* The seconds the box would hold at the end: elapsed, and `runs` more at
 * the rate so far. */
static double mx_projected(const struct mx_clock *k, double elapsed, long runs)
{
    return elapsed + (double)runs * mx_run_s(k);
}

static int cell_runs(const struct mx_cell *c, const struct mx_cands *mu, const struct mx_cands *rw)
{
    return c->rw ? rw->n : mu->n;
}

int cmd_bench_matrix(int argc, char **argv)
{
    bench_opts_t o = {.pin = "compact"}; /* duration, repeat 0: the plan's */
    struct mx_opts mo = {.also = "ttas,mcs:spinpark",
                         .plan = &plan_full,
                         .time_box_min = -1,
                         .confirm = -1,
                         .confirm_below = INFINITY};
    static const cli_opt_t opts[] = {{"also", CLI_VALUE, 0, 'a'},
                                     {"quick", CLI_FLAG, 0, 'q'},
                                     {"smoke", CLI_FLAG, 0, 's'},
                                     {"time-box", CLI_VALUE, 0, 'T'},
                                     {"confirm", CLI_VALUE, 0, 'c'},
                                     {"confirm-below", CLI_VALUE, 0, 'b'},
                                     BENCH_OPT_DURATION,
                                     BENCH_OPT_REPEAT,
                                     BENCH_OPT_PIN,
                                     BENCH_OPT_JSON,
                                     BENCH_OPT_FAULT,
                                     BENCH_OPT_END};
    const int prc = bench_getopt("matrix", argc, argv, opts, &o, mx_option, &mo, usage);
    if (prc >= 0)
        return prc;
    const struct mx_plan *pl = mo.plan;
    const double duration = o.duration > 0 ? o.duration : pl->duration_s;
    int repeat = o.repeat > 0 ? o.repeat : pl->repeat;
    const double box_min = mo.time_box_min >= 0 ? mo.time_box_min : pl->time_box_min;
    int confirm = mo.confirm >= 0 ? mo.confirm : pl->confirm;

    struct mx_cands mu, rw;
    if (mx_candidates("default,peers,pthread", mo.also, &mu) != 0)
        return 2;
    if (mx_candidates(BENCH_DEFAULT_RW_SPEC ",rwpeers", mo.also, &rw) != 0) {
        free(mu.specs);
        return 2;
    }
    /* bench_cmd_setup opens the mutex candidates again (already canonical)
     * and describes the machine. */
    char mu_list[BENCH_MAX_LOCKS * BENCH_SPEC_MAX / 4];
    mu_list[0] = '\0';
    for (int k = 0; k < mu.n; k++)
        baton_join(mu_list, sizeof mu_list, ",", "%s", mu.specs[k]);
    char header[96];
    snprintf(header, sizeof header, " (micro; others in their lines); plan %s", pl->name);
    const bench_cmd_t cmd = {.name = "matrix",
                             .locks = mu_list,
                             .threads = pl->T,
                             .nthreads = pl->nT,
                             .duration_s = duration,
                             .repeat = repeat,
                             .pin = o.pin,
                             .header_params = header};
    bench_setup_t b;
    int rc = bench_cmd_setup(&cmd, &b);
    if (rc != 0) {
        free(mu.specs);
        free(rw.specs);
        return rc;
    }
    print_list("default", &mu, 0, 1);
    print_list("reference set", &mu, 1, mu.nbase);
    print_list("rw cells' default", &rw, 0, 1);
    print_list("rw cells' reference set", &rw, 1, rw.nbase);
    print_list("--also (for information)", &mu, mu.nbase, mu.n);

    /* bench server's intervals are TSC cycles (1 GHz without a TSC). */
    const double ghz = b.m.tsc_ghz > 0 ? b.m.tsc_ghz : 1.0;
    const uint32_t srv_units = (uint32_t)lround(SRV_INTERVAL_CYCLES_MIN / ghz / b.unit_ns);
    const int ncells = mx_count(pl);
    struct mx_cell *cells = calloc((size_t)ncells, sizeof *cells);
    struct mx_out *outs = calloc((size_t)ncells, sizeof *outs);
    int *done = calloc((size_t)ncells, sizeof *done);
    const int maxc = mu.n > rw.n ? mu.n : rw.n;
    bench_record_t *recs = calloc((size_t)maxc, sizeof *recs);
    bench_result_t *runs = calloc((size_t)maxc * (size_t)repeat, sizeof *runs);
    if (!cells || !outs || !done || !recs || !runs) {
        fprintf(stderr, "baton bench matrix: out of memory\n");
        free(cells), free(outs), free(done), free(recs), free(runs), free(mu.specs), free(rw.specs);
        bench_cmd_finish(&b, NULL, NULL, NULL, 0, 0);
        return 2;
    }
    mx_cells(pl, o.fault, srv_units, cells);

    long planned = 0;
    for (int i = 0; i < ncells; i++)
        planned += (long)cell_runs(&cells[i], &mu, &rw) * repeat + (1L + MX_DUEL_REFS) * confirm; /* a duel */
    struct mx_clock clk = {.t0 = bench_now(), .box_s = box_min * 60, .guess_s = duration + MX_RUN_OVERHEAD_S};
    printf("  %d cells, %ld runs of %.2f s; estimate about %.1f min (more where a lock collapses:\n"
           "  it is cut off at %.1f s, once per cell)%s",
           ncells, planned, duration, (double)planned * clk.guess_s / 60, b.base.deadline_s,
           box_min > 0 ? "" : "\n");
    if (box_min > 0)
        printf("; time box %g min\n", box_min);
    mx_header();

    int failed = 0, ndone = 0;
    bool shortened = false;
    bench_progress_begin(ncells);
    for (int i = 0; i < ncells; i++) {
        const struct mx_cell *c = &cells[i];
        const struct mx_cands *cands = c->rw ? &rw : &mu;
        /* The time box: what is left, at the rate runs have gone so far. */
        if (clk.box_s > 0) {
            long left = 0;
            for (int j = i; j < ncells; j++)
                left += cell_runs(&cells[j], &mu, &rw);
            const long duel_runs = (1L + MX_DUEL_REFS) * (ncells - i); /* times the rounds of a duel */
            const double elapsed = bench_now() - clk.t0;
            if (repeat > 1 && mx_projected(&clk, elapsed, left * repeat + duel_runs * confirm) > clk.box_s) {
                printf("  time box: from here on 1 round per cell instead of %d (%.1f min projected)\n",
                       repeat, mx_projected(&clk, elapsed, left * repeat + duel_runs * confirm) / 60);
                repeat = 1;
                shortened = true;
            }
            if (confirm > MX_CONFIRM_MIN &&
                mx_projected(&clk, elapsed, left * repeat + duel_runs * confirm) > clk.box_s) {
                printf("  time box: from here on duels of %d rounds instead of %d\n", MX_CONFIRM_MIN,
                       confirm);
                confirm = MX_CONFIRM_MIN;
                shortened = true;
            }
            if (mx_projected(&clk, elapsed, (long)cands->n * repeat + (1L + MX_DUEL_REFS) * confirm) >
                clk.box_s) {
                printf("  time box: %d of %d cells not run, from '%s' on\n", ncells - i, ncells, c->label);
                shortened = true;
                break;
            }
        }
        bench_cfg_t cfg = b.base;
        cfg.threads = c->threads;
        cfg.hogs = c->hogs;
        const double t = bench_now();
        bench_cell_run(c->wl, c->params, c->bench, cands->specs, cands->n, &cfg, repeat, runs, recs,
                       c->label);
        clk.run_s += bench_now() - t;
        clk.runs += (long)cands->n * repeat;
        failed += bench_cell_finish(recs, cands->n, 0);
        mx_judge(recs, cands, &outs[i]);
        if (confirm > 0 && outs[i].has_ref && isfinite(outs[i].ratio) && outs[i].ratio > 0 &&
            outs[i].ratio < mo.confirm_below) {
            const double td = bench_now();
            failed += mx_duel(c, &cfg, confirm, recs, cands, &outs[i]);
            clk.run_s += bench_now() - td;
            clk.runs += (1L + MX_DUEL_REFS) * confirm;
        }
        mx_line(c, &outs[i], recs, cands);
        fflush(stdout);
        done[ndone++] = i;
    }

    /* The summary. */
    int won = 0, near = 0, lost = 0, duels = 0, dmin = 0, dmax = 0;
    int worst = -1;
    for (int d = 0; d < ndone; d++) {
        const struct mx_out *out = &outs[done[d]];
        const double v = mx_verdict(out);
        const int cls = mx_class(v);
        won += cls == MX_WON;
        near += cls == MX_NEAR;
        lost += cls == MX_LOST;
        if (out->duel_rounds) {
            dmin = duels == 0 || out->duel_rounds < dmin ? out->duel_rounds : dmin;
            dmax = out->duel_rounds > dmax ? out->duel_rounds : dmax;
            duels++;
        }
        if (worst < 0 || v < mx_verdict(&outs[worst]))
            worst = done[d];
    }
    const double wall = bench_now() - clk.t0;
    printf("\nsummary: %d cell%s%s in %.1f min: %d won (ratio >= 1), %d within 5%% (0.95 to 1), "
           "%d lost (< 0.95)\n",
           ndone, ndone == 1 ? "" : "s", ndone < ncells ? " (time box: not all)" : "", wall / 60, won, near,
           lost);
    if (duels) {
        char rounds[32], which[64] = "every cell";
        snprintf(rounds, sizeof rounds, dmin == dmax ? "%d" : "%d-%d", dmin, dmax);
        if (isfinite(mo.confirm_below))
            snprintf(which, sizeof which, "the cells below %.2f at first", mo.confirm_below);
        printf("  %d cell%s judged by a duel of %s alternated rounds (%s)\n", duels, duels == 1 ? "" : "s",
               rounds, which);
    }
    if (worst >= 0) {
        const struct mx_out *w = &outs[worst];
        if (w->def.median.status != BENCH_OK)
            printf("worst: %s: the default did not run to the end (%s)\n", cells[worst].label,
                   report_status(&w->def));
        else if (w->has_ref && w->duel_rounds)
            printf(
                "worst: %s, ratio %.2f in a duel of %d rounds against %s (first pass: default %.2f Mops/s, "
                "%s %.2f Mops/s)\n",
                cells[worst].label, w->duel_ratio, w->duel_rounds, w->duel_ref, record_rate(&w->def) / 1e6,
                w->ref.lock, record_rate(&w->ref) / 1e6);
        else if (w->has_ref)
            printf("worst: %s, ratio %.2f: default %.2f Mops/s, %s %.2f Mops/s\n", cells[worst].label,
                   w->ratio, record_rate(&w->def) / 1e6, w->ref.lock, record_rate(&w->ref) / 1e6);
        else
            printf("worst: %s: no reference lock ran to the end\n", cells[worst].label);
    }

    char below[32] = "null"; /* null: every cell */
    if (isfinite(mo.confirm_below))
        snprintf(below, sizeof below, "%.4f", mo.confirm_below);
    char extra[768];
    snprintf(extra, sizeof extra,
             "\"plan\": \"%s\", \"duration_s\": %.3f, \"repeat\": %d, \"pin\": \"%s\", "
             "\"local_unit_ns\": %.4f, \"wait_sampling\": %d, \"cells\": %d, \"cells_run\": %d, "
             "\"time_boxed\": %s, \"wall_s\": %.1f, \"won\": %d, \"within_5pct\": %d, \"lost\": %d, "
             "\"confirm\": %d, \"confirm_below\": %s, \"duels\": %d",
             pl->name, duration, repeat, o.pin, b.unit_ns, BENCH_WAIT_EVERY, ncells, ndone,
             shortened ? "true" : "false", wall, won, near, lost, confirm, below, duels);
    const struct mx_json j = {cells, outs, done};
    rc = bench_cmd_finish_json(&b, o.json, extra, ndone, json_cell, &j, failed);
    free(cells);
    free(outs);
    free(done);
    free(recs);
    free(runs);
    free(mu.specs);
    free(rw.specs);
    return rc;
}
