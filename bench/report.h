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
/* {"machine": ..., <extra>, "results": [...]} */
int report_json(const char *path, const machine_t *m, const char *extra_json,
                const bench_record_t *recs, int n);

#endif
