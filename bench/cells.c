/* cells.c - what the bench commands (micro, pq, rw) share around the
 * runner: checking the lock list, the single-thread reference rate behind
 * a cell's physical limit, and running and summing up one cell. */
#include "report.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int bench_check_specs(char specs[][BENCH_SPEC_MAX], int n, bool optional, char *skipped,
                      size_t skipped_len, char *err, size_t errlen)
{
    int kept = 0;
    if (skipped_len)
        skipped[0] = '\0';
    for (int i = 0; i < n; i++) {
        bench_lock_t l;
        if (bench_lock_open(specs[i], &l, err, errlen) != 0) {
            if (!optional)
                return -1;
            size_t used = strlen(skipped);
            if (used < skipped_len)
                snprintf(skipped + used, skipped_len - used, "%s%s", used ? ", " : "", specs[i]);
            continue;
        }
        snprintf(specs[kept++], BENCH_SPEC_MAX, "%s", l.spec); /* canonical */
        bench_lock_close(&l);
    }
    return kept;
}

double bench_single_rate(const bench_workload_t *wl, const void *params, const bench_cfg_t *base,
                         int repeat)
{
    bench_cfg_t cfg = *base;
    cfg.threads = 1;
    double best = 0;
    for (int r = 0; r < repeat; r++) {
        bench_result_t run;
        bench_run(wl, params, "tas", &cfg, &run);
        if (run.status == BENCH_OK && run.seconds > 0) {
            double rate = (double)run.ops / run.seconds;
            if (rate > best)
                best = rate;
        }
    }
    return best;
}

void bench_cell_run(const bench_workload_t *wl, const void *params, const char *bench,
                    char specs[][BENCH_SPEC_MAX], int nspecs, const bench_cfg_t *cfg, int repeat,
                    bench_result_t *runs, bench_record_t *recs, const char *label)
{
    const bool progress = isatty(STDERR_FILENO);
    for (int r = 0; r < repeat; r++)
        for (int k = 0; k < nspecs; k++) {
            if (progress)
                fprintf(stderr, "\r  %s N=%d run %d/%d %-28s", label, cfg->threads, r + 1, repeat,
                        specs[k]);
            bench_run(wl, params, specs[k], cfg, &runs[k * repeat + r]);
        }
    if (progress)
        fprintf(stderr, "\r%100s\r", "");
    double pthread_rate = 0;
    for (int k = 0; k < nspecs; k++) {
        bench_record_t *rec = &recs[k];
        memset(rec, 0, sizeof *rec);
        rec->bench = bench;
        memcpy(rec->lock, specs[k], sizeof rec->lock);
        rec->threads = cfg->threads;
        rec->duration_s = cfg->duration_s;
        rec->nruns = repeat;
        bench_result_t *mine = &runs[k * repeat];
        for (int r = 0; r < repeat; r++)
            rec->runs_ops_per_s[r] = mine[r].seconds > 0 ? (double)mine[r].ops / mine[r].seconds : 0;
        rec->median = mine[bench_median(mine, repeat)];
        if (!strcmp(specs[k], "pthread"))
            pthread_rate = record_rate(rec);
    }
    for (int k = 0; k < nspecs; k++)
        recs[k].pthread_ops_per_s = pthread_rate;
}

int bench_cell_finish(bench_record_t *recs, int n, double limit)
{
    double best = 0;
    for (int k = 0; k < n; k++)
        if (record_rate(&recs[k]) > best)
            best = record_rate(&recs[k]);
    int failed = 0;
    for (int k = 0; k < n; k++) {
        bench_record_t *rec = &recs[k];
        rec->limit_ops_per_s = limit;
        double ref = rec->pthread_ops_per_s > 0 ? rec->pthread_ops_per_s : best;
        rec->collapsed = rec->median.status == BENCH_TIMEOUT ||
                         (rec->median.status == BENCH_OK && record_rate(rec) < ref / 100);
        if (rec->median.status == BENCH_VERIFY_FAILED || rec->median.status == BENCH_CRASHED ||
            rec->median.status == BENCH_ERROR)
            failed++;
    }
    return failed;
}
