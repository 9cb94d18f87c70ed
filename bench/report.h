/* report.h - ranked tables and JSON for `baton bench` results. */
#ifndef BATON_BENCH_REPORT_H
#define BATON_BENCH_REPORT_H

#include "bench.h"
#include "machine.h"

#define REPORT_MAX_PARAMS 4
#define REPORT_MAX_RUNS 32

typedef struct bench_record {
    const char *bench;                        /* "micro" */
    char lock[BENCH_SPEC_MAX];
    int threads;
    int nparams;
    const char *param_names[REPORT_MAX_PARAMS]; /* JSON keys, e.g. "shared_lines" */
    long params[REPORT_MAX_PARAMS];
    double duration_s;
    bench_result_t median;                    /* the median run */
    int nruns;
    double runs_ops_per_s[REPORT_MAX_RUNS];
    double limit_ops_per_s;                   /* physical limit of the cell; 0 if none */
    double pthread_ops_per_s;                 /* pthread in the same cell; 0 if absent */
    bool collapsed;
    /* The workload's extra figures (median.extra[i]): JSON key and table
     * header; NULL key: unused.  Negative values print as "-". */
    const char *extra_keys[BENCH_EXTRAS];
    const char *extra_labels[BENCH_EXTRAS];
} bench_record_t;

static inline double record_rate(const bench_record_t *r)
{
    return r->median.seconds > 0 ? (double)r->median.ops / r->median.seconds : 0.0;
}

static inline double record_fairness(const bench_record_t *r)
{
    return r->median.max_thread_ops ? (double)r->median.min_thread_ops / (double)r->median.max_thread_ops
                                     : 0.0;
}

const char *report_status(const bench_record_t *r);

/* Print one cell (same parameters and thread count), ranked by throughput. */
void report_cell(FILE *f, bench_record_t *recs, int n, const char *title);
/* --- what the bench commands share ----------------------------------------- */

/* Validate and canonicalise specs[0..n): open each one.  An explicit list
 * (optional == false) stops at the first that does not open: returns -1
 * with the message in err.  A default list (optional == true) drops those
 * instead and names them in `skipped` (", "-separated).  Returns the count
 * kept. */
int bench_check_specs(char specs[][BENCH_SPEC_MAX], int n, bool optional, char *skipped,
                      size_t skipped_len, char *err, size_t errlen);

/* The best single-thread rate of `wl` with `params` on "tas" (the plain
 * mutex every physical limit is measured with), over `repeat` runs. */
double bench_single_rate(const bench_workload_t *wl, const void *params, const bench_cfg_t *base,
                         int repeat);

/* Run one cell: `repeat` rounds, each running every spec once (so slow
 * drift spreads over all of them), then fill recs[k] (bench name, lock,
 * threads, duration, runs, median, pthread rate) for each spec.  The caller
 * sets params, extras and the limit, then calls bench_cell_finish().
 * `label` is shown in the progress line. */
void bench_cell_run(const bench_workload_t *wl, const void *params, const char *bench,
                    char specs[][BENCH_SPEC_MAX], int nspecs, const bench_cfg_t *cfg, int repeat,
                    bench_result_t *runs, bench_record_t *recs, const char *label);

/* Set the limit, mark collapses; returns how many records failed
 * (verification, crash, error). */
int bench_cell_finish(bench_record_t *recs, int n, double limit);

/* {"machine": ..., <extra>, "results": [...]} */
int report_json(const char *path, const machine_t *m, const char *extra_json,
                const bench_record_t *recs, int n);

#endif
