/* report.h - ranked tables and JSON for `baton bench` results. */
#ifndef BATON_BENCH_REPORT_H
#define BATON_BENCH_REPORT_H

#include "bench.h"
#include "machine.h"

/* Writes the JSON members of record i of ctx (no braces): the hook by
 * which each command gives its records' own fields to the shared writer. */
typedef void (*report_record_fn)(FILE *f, int i, const void *ctx);

#define REPORT_MAX_PARAMS 8
#define REPORT_MAX_RUNS 32

typedef struct bench_record {
    const char *bench; /* "micro" */
    char lock[BENCH_SPEC_MAX];
    int threads;
    int nparams;
    const char *param_names[REPORT_MAX_PARAMS]; /* JSON keys, e.g. "shared_lines" */
    long params[REPORT_MAX_PARAMS];
    double duration_s;
    bench_result_t median; /* the median run */
    int nruns;
    double runs_ops_per_s[REPORT_MAX_RUNS];
    double limit_ops_per_s;   /* physical limit of the cell; 0 if none */
    double pthread_ops_per_s; /* pthread in the same cell; 0 if absent */
    bool collapsed;
    /* The workload's extra figures (median.extra[i]): JSON key and table
     * header; NULL key: unused.  Negative values print as "-". */
    const char *extra_keys[BENCH_EXTRAS];
    const char *extra_labels[BENCH_EXTRAS];
    /* Optional: more JSON members for this record ("\"k\": v, ..."), written
     * after the others; owned by the caller. */
    const char *json_more;
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

/* The status word of a result: "ok" ("COLLAPSED" when collapsed),
 * "VERIFY-FAILED", "COLLAPSED(timeout)", "CRASHED" or "ERROR". */
const char *report_status_name(int status, bool collapsed);
const char *report_status(const bench_record_t *r);

/* recs[0..n) ranked by throughput, best first: an array of n pointers to
 * free(), or NULL when out of memory. */
bench_record_t **report_rank(bench_record_t *recs, int n);

/* Print one cell (same parameters and thread count), ranked by throughput. */
void report_cell(FILE *f, bench_record_t *recs, int n, const char *title);
/* --- what the bench commands share ----------------------------------------- */

#define BENCH_MAX_LOCKS 128

/* What a bench command's options hand to bench_cmd_setup(). */
typedef struct bench_cmd {
    const char *name;  /* "pq": messages begin "baton bench pq: " */
    const char *locks; /* --locks, or NULL for default_locks */
    /* The command's default list: those of its locks that this build lacks
     * are skipped with a note, where an explicit --locks must all open. */
    const char *default_locks;
    /* Optional, for a command that measures something other than locks
     * (barriers): its list's rules, which name what it calls one (NULL:
     * bench_lock_list), and how a spec of it is checked, in place of
     * opening it as a lock and cmd->check (0, or nonzero with a message in
     * err; it may canonicalise spec). */
    const bench_spec_list_t *list;
    int (*check_spec)(char spec[BENCH_SPEC_MAX], const void *ctx, char *err, size_t errlen);
    bool line_rtt;      /* measure the cache-line round trip (machine_t), and show it */
    const int *threads; /* --threads */
    int nthreads;
    double duration_s;
    int repeat;
    const char *pin; /* --pin, already accepted by topo_pin_parse */
    /* The header line's own text: `header_params` after the thread counts
     * (e.g. "; prefill 100"), `header_runs` in place of "<duration> s x
     * <repeat> runs (median)", `header_tail` after the cost of a unit of
     * local work (and the line round trip; e.g. "; via lock"); NULL for
     * none (the default, for header_runs). */
    const char *header_params;
    const char *header_runs;
    const char *header_tail;
    /* Optional: refuse a lock that opens but cannot run this command (0, or
     * nonzero with a message in err).  Called on each lock in list order,
     * so the first problem in the list is the one reported. */
    int (*check)(const bench_lock_t *l, const void *ctx, char *err, size_t errlen);
    /* Optional: after the header, called on each lock to say how the
     * command will drive it (one line, or nothing). */
    void (*describe)(const bench_lock_t *l, const void *ctx);
    const void *ctx; /* for check and describe */
} bench_cmd_t;

/* What bench_cmd_setup() prepares for the measurements. */
typedef struct bench_setup {
    const char *name;
    char (*specs)[BENCH_SPEC_MAX]; /* the canonical specs to measure */
    int nspecs;
    machine_t m;
    int *order;       /* CPU per thread index, for the pin policy */
    int cores;        /* CPUs (at least 1) */
    double unit_ns;   /* one unit of thread-local work */
    bench_cfg_t base; /* duration, pinning and deadline; threads unset */
} bench_setup_t;

/* Validate and canonicalise specs[0..n): open each one.  An explicit list
 * (optional == false) stops at the first that does not open: returns -1
 * with the message in err.  A default list (optional == true) drops those
 * instead and names them in `skipped` (", "-separated).  A lock that opens
 * but that cmd->check refuses (cmd may be NULL) stops either list.
 * Returns the count kept. */
int bench_check_specs(const bench_cmd_t *cmd, char specs[][BENCH_SPEC_MAX], int n, bool optional,
                      char *skipped, size_t skipped_len, char *err, size_t errlen);

/* After option parsing: check the thread counts, expand and open every
 * lock (canonicalising the specs), describe the machine, work out the pin
 * order and the cost of local work, and print the header line (then the
 * locks skipped, then what cmd->describe says of each lock).  Returns 0,
 * or the exit status (2) after printing why; out then holds nothing to
 * release. */
int bench_cmd_setup(const bench_cmd_t *cmd, bench_setup_t *out);

/* The machine part of bench_cmd_setup(), for a command that measures
 * something other than a lock list (out->specs stays NULL): calibrate the
 * wait layer, describe the machine (line_rtt: with the cache-line round
 * trip), work out the pin order of `pin` (as topo_pin_parse takes it) and
 * the cost of local work, and fill out->base (threads unset).  Returns 0,
 * or the exit status (2) after printing why; out then holds nothing to
 * release. */
int bench_setup_machine(bench_setup_t *out, const char *name, const char *pin, double duration_s,
                        bool line_rtt);

/* At the end: write the JSON file if json_path (report_json_save() of n
 * records, each written by record(f, i, ctx)), say how many results failed,
 * release what setup took, and return the exit status (1 if anything
 * failed or the file could not be written, else 0). */
int bench_cmd_finish_json(bench_setup_t *s, const char *json_path, const char *extra_json, int n,
                          report_record_fn record, const void *ctx, int failed);

/* bench_cmd_finish_json() of recs[0..nrecs) by report_json_record(). */
int bench_cmd_finish(bench_setup_t *s, const char *json_path, const char *extra_json,
                     const bench_record_t *recs, int nrecs, int failed);

/* The best single-thread rate of `wl` with `params` on "tas" (the plain
 * mutex every physical limit is measured with), over `repeat` runs. */
double bench_single_rate(const bench_workload_t *wl, const void *params, const bench_cfg_t *base, int repeat);

/* The `extras` hook of the workloads that report the operations per help
 * session of delegation kinds (micro, pq, rw): fills
 * r->extra[BENCH_EXTRA_OPS_PER_SESSION] from bench_lock_ops_per_session(). */
void bench_extras_ops_per_session(void *state, bench_lock_t *lock, bench_result_t *r);

/* The single-thread rates behind the cells' physical limits, one per set
 * of workload parameters: a key of BENCH_REF_KEYS ints with the local work
 * last (BENCH_REF_L), and 0 in the slots a workload does not use. */
#define BENCH_REF_KEYS 3
#define BENCH_REF_L (BENCH_REF_KEYS - 1)

typedef struct bench_ref {
    int key[BENCH_REF_KEYS];
    double rate;
} bench_ref_t;

typedef struct bench_refs {
    bench_ref_t *ref;
    int n, cap;
} bench_refs_t; /* zero-initialised: empty */

/* The rate known for key, or -1 when none is yet. */
double bench_ref_get(const bench_refs_t *refs, const int key[BENCH_REF_KEYS]);
/* Remember `rate` (measured with bench_single_rate()) for key, which has
 * none yet. */
void bench_ref_put(bench_refs_t *refs, const int key[BENCH_REF_KEYS], double rate);
void bench_refs_free(bench_refs_t *refs);

/* The physical limit of `cell` (n records of `threads` threads on `cores`
 * CPUs, run with the parameters of key).  A single-thread cell first raises
 * key's rate to its best result (a lock may beat the reference kind).
 * Critical sections run one at a time: no more than the rate without local
 * work, and no more than key's rate per thread with a CPU of its own.
 * Both rates must be known (bench_ref_put); a missing one counts as 0. */
double bench_cell_limit(bench_refs_t *refs, const int key[BENCH_REF_KEYS], const bench_record_t *cell, int n,
                        int threads, int cores);

/* Run one cell: `repeat` rounds, each running every spec once, in an order
 * rotated by one each round (so slow drift spreads over all of them; a spec
 * that timed out is not run again), then fill recs[k] (bench name, lock,
 * threads, duration, runs, median, pthread rate, and the names of the
 * ops-per-session extra when wl->extras is bench_extras_ops_per_session)
 * for each spec.  The caller sets params and the limit, then calls
 * bench_cell_finish().  `label` is shown in the progress line: the
 * command calls bench_progress_begin() with its count of cells first
 * (progress.h). */
void bench_cell_run(const bench_workload_t *wl, const void *params, const char *bench,
                    char specs[][BENCH_SPEC_MAX], int nspecs, const bench_cfg_t *cfg, int repeat,
                    bench_result_t *runs, bench_record_t *recs, const char *label);

/* Set the limit, mark collapses; returns how many records failed
 * (verification, crash, error). */
int bench_cell_finish(bench_record_t *recs, int n, double limit);

/* s as a JSON string literal (quotes, escapes). */
void report_json_string(FILE *f, const char *s);

/* The usage text's line on the wait columns. */
#define BENCH_WAIT_USAGE                                                                                     \
    "  max wait, p99.9 wait: acquisition waits in µs (lock, reader lock, or the whole\n"                    \
    "                       baton_execute call), sampled with the TSC, 1 in 8 per thread\n"

/* A wait in ns as µs for a table ("-" when negative: not available). */
void report_wait_us(char *buf, size_t n, double ns);

/* JSON members, no comma before or after: the record's "ops_per_s",
 * "fairness" and "cpu_s_per_mop", then "wait_max_ns" and "wait_p999_ns"
 * (null when not available). */
void report_json_figures(FILE *f, const bench_record_t *r);

/* {"machine": ..., <extra_json>, "results": [{<record 0>}, ...]}: record(f,
 * i, ctx) writes the members of record i, one record a line.  0, or -1
 * with errno. */
int report_json_write(const char *path, const machine_t *m, const char *extra_json, int n,
                      report_record_fn record, const void *ctx);

/* report_json_write(), then "wrote PATH" on stdout, or "baton bench NAME:
 * cannot write PATH: <why>" on stderr.  0, or 1 when it was not written. */
int report_json_save(const char *name, const char *path, const machine_t *m, const char *extra_json, int n,
                     report_record_fn record, const void *ctx);

/* A report_record_fn: the members of ((const bench_record_t *)recs)[i],
 * every figure it has (then its json_more).  A command whose records carry
 * more calls it from its own report_record_fn and adds them. */
void report_json_record(FILE *f, int i, const void *recs);

/* JSON members, no comma before or after: "verified" (status is BENCH_OK),
 * "status" (the word given), and "message" when r has one. */
void report_json_outcome(FILE *f, const bench_result_t *r, const char *status);

#endif
