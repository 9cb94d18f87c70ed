/* cells.c - what the bench commands share around the runner: their setup
 * (lock or barrier list, machine, pinning, header) and finish (JSON,
 * failure count), the single-thread reference rates behind a cell's
 * physical limit, and running and summing up one cell. */
#include "progress.h"
#include "report.h"
#include "topo.h"
#include "../src/base/join.h"

#include <baton/wait.h>

#include <stdlib.h>
#include <string.h>

/* Open spec as a lock, canonicalise it, and let cmd->check (cmd may be
 * NULL) see it: 0; 1 when it does not open; -1 when check refuses it. */
static int open_lock(const bench_cmd_t *cmd, char spec[BENCH_SPEC_MAX], char *err, size_t errlen)
{
    bench_lock_t l;
    if (bench_lock_open(spec, &l, err, errlen) != 0)
        return 1;
    snprintf(spec, BENCH_SPEC_MAX, "%s", l.spec);
    int refused = cmd && cmd->check ? cmd->check(&l, cmd->ctx, err, errlen) : 0;
    bench_lock_close(&l);
    return refused ? -1 : 0;
}

int bench_check_specs(const bench_cmd_t *cmd, char specs[][BENCH_SPEC_MAX], int n, bool optional,
                      char *skipped, size_t skipped_len, char *err, size_t errlen)
{
    int kept = 0;
    if (skipped_len)
        skipped[0] = '\0';
    for (int i = 0; i < n; i++) {
        char spec[BENCH_SPEC_MAX];
        memcpy(spec, specs[i], sizeof spec);
        int bad = cmd && cmd->check_spec ? cmd->check_spec(spec, cmd->ctx, err, errlen) != 0
                                         : open_lock(cmd, spec, err, errlen);
        if (bad < 0 || (bad && !optional))
            return -1;
        if (bad)
            baton_join(skipped, skipped_len, ", ", "%s", specs[i]);
        else
            memcpy(specs[kept++], spec, sizeof spec);
    }
    return kept;
}

int bench_setup_machine(bench_setup_t *out, const char *name, const char *pin_arg, double duration_s,
                        bool line_rtt)
{
    memset(out, 0, sizeof *out);
    out->name = name;
    (void)baton_calibration(); /* once, here: every child inherits it */
    machine_t *m = &out->m;
    machine_describe(m, line_rtt);
    out->cores = m->topo.ncpus > 0 ? m->topo.ncpus : 1;
    out->order = calloc((size_t)out->cores, sizeof *out->order);
    if (!out->order) {
        fprintf(stderr, "baton bench %s: out of memory\n", name);
        machine_free(m);
        return 2;
    }
    int pin = topo_pin_parse(pin_arg);
    topo_pin_order(&m->topo, pin, out->order, m->topo.ncpus);
    out->unit_ns = bench_local_unit_ns();
    out->base = (bench_cfg_t){.duration_s = duration_s,
                              .pin_policy = pin,
                              .pin_order = pin ? out->order : NULL,
                              .npin = m->topo.ncpus,
                              .deadline_s = duration_s * 2 + 2};
    return 0;
}

int bench_cmd_setup(const bench_cmd_t *cmd, bench_setup_t *out)
{
    memset(out, 0, sizeof *out);
    const bench_spec_list_t *list = cmd->list ? cmd->list : &bench_lock_list;
    const char *noun = list->noun;
    for (int i = 0; i < cmd->nthreads; i++)
        if (cmd->threads[i] < 1) {
            fprintf(stderr, "baton bench %s: thread counts must be at least 1\n", cmd->name);
            return 2;
        }

    char err[1024], skipped[1024];
    char(*specs)[BENCH_SPEC_MAX] = calloc(BENCH_MAX_LOCKS, sizeof *specs);
    if (!specs) {
        fprintf(stderr, "baton bench %s: out of memory\n", cmd->name);
        return 2;
    }
    int nspecs = bench_split_specs(cmd->locks ? cmd->locks : cmd->default_locks, list, specs, BENCH_MAX_LOCKS,
                                   err, sizeof err);
    if (nspecs < 0) {
        fprintf(stderr, "baton bench %s: %s\n", cmd->name, err);
        free(specs);
        return 2;
    }
    (void)baton_calibration(); /* before the specs open: every child inherits it */
    nspecs =
        bench_check_specs(cmd, specs, nspecs, cmd->locks == NULL, skipped, sizeof skipped, err, sizeof err);
    if (nspecs <= 0) {
        if (nspecs < 0)
            fprintf(stderr, "baton bench %s: %s\n", cmd->name, err);
        else
            fprintf(stderr, "baton bench %s: none of the default %ss opens\n", cmd->name, noun);
        free(specs);
        return 2;
    }
    if (bench_setup_machine(out, cmd->name, cmd->pin, cmd->duration_s, cmd->line_rtt) != 0) {
        free(specs);
        return 2;
    }
    out->specs = specs;
    out->nspecs = nspecs;

    const machine_t *m = &out->m;
    printf("baton bench %s: %d %s(s), threads", cmd->name, nspecs, noun);
    for (int i = 0; i < cmd->nthreads; i++)
        printf("%s%d", i ? "," : " ", cmd->threads[i]);
    printf("%s; ", cmd->header_params ? cmd->header_params : "");
    if (cmd->header_runs)
        printf("%s", cmd->header_runs);
    else
        printf("%.2f s x %d runs (median)", cmd->duration_s, cmd->repeat);
    printf("; pin %s; %d CPUs; 1 unit of local work = %.2f ns", cmd->pin, out->cores, out->unit_ns);
    if (cmd->line_rtt)
        printf("; line round trip %.0f ns (CPUs %d-%d)", m->line_rtt_ns, m->rtt_cpu_a, m->rtt_cpu_b);
    printf("%s\n", cmd->header_tail ? cmd->header_tail : "");
    if (skipped[0])
        printf("skipped (not in this build): %s\n", skipped);
    for (int k = 0; cmd->describe && k < nspecs; k++) {
        bench_lock_t l;
        if (bench_lock_open(specs[k], &l, err, sizeof err) != 0)
            continue;
        cmd->describe(&l, cmd->ctx);
        bench_lock_close(&l);
    }
    return 0;
}

int bench_cmd_finish_json(bench_setup_t *s, const char *json_path, const char *extra_json, int n,
                          report_record_fn record, const void *ctx, int failed)
{
    int unwritten = json_path ? report_json_save(s->name, json_path, &s->m, extra_json, n, record, ctx) : 0;
    if (failed)
        printf("\n%d result(s) FAILED verification or did not run: see above\n", failed);
    free(s->order);
    machine_free(&s->m);
    free(s->specs);
    return failed || unwritten ? 1 : 0;
}

int bench_cmd_finish(bench_setup_t *s, const char *json_path, const char *extra_json,
                     const bench_record_t *recs, int nrecs, int failed)
{
    return bench_cmd_finish_json(s, json_path, extra_json, nrecs, report_json_record, recs, failed);
}

void bench_extras_ops_per_session(void *state, bench_lock_t *lock, bench_result_t *r)
{
    (void)state;
    r->extra[BENCH_EXTRA_OPS_PER_SESSION] = bench_lock_ops_per_session(lock);
}

static bench_ref_t *ref_find(const bench_refs_t *refs, const int key[BENCH_REF_KEYS])
{
    for (int i = 0; i < refs->n; i++)
        if (!memcmp(refs->ref[i].key, key, sizeof refs->ref[i].key))
            return &refs->ref[i];
    return NULL;
}

double bench_ref_get(const bench_refs_t *refs, const int key[BENCH_REF_KEYS])
{
    const bench_ref_t *r = ref_find(refs, key);
    return r ? r->rate : -1;
}

void bench_ref_put(bench_refs_t *refs, const int key[BENCH_REF_KEYS], double rate)
{
    if (refs->n == refs->cap) {
        int cap = refs->cap ? 2 * refs->cap : 16;
        bench_ref_t *grown = realloc(refs->ref, (size_t)cap * sizeof *grown);
        if (!grown)
            return; /* not remembered: the limit will say 0 (none) */
        refs->ref = grown;
        refs->cap = cap;
    }
    bench_ref_t *r = &refs->ref[refs->n++];
    memcpy(r->key, key, sizeof r->key);
    r->rate = rate;
}

void bench_refs_free(bench_refs_t *refs)
{
    free(refs->ref);
    *refs = (bench_refs_t){0};
}

double bench_cell_limit(bench_refs_t *refs, const int key[BENCH_REF_KEYS], const bench_record_t *cell, int n,
                        int threads, int cores)
{
    bench_ref_t *r1 = ref_find(refs, key);
    if (r1 && threads == 1)
        for (int k = 0; k < n; k++)
            if (cell[k].median.status == BENCH_OK && record_rate(&cell[k]) > r1->rate)
                r1->rate = record_rate(&cell[k]);
    int key0[BENCH_REF_KEYS];
    memcpy(key0, key, sizeof key0);
    key0[BENCH_REF_L] = 0;
    const bench_ref_t *r0 = ref_find(refs, key0);
    double rate1 = r1 ? r1->rate : 0, rate0 = r0 ? r0->rate : 0;
    int eff = threads < cores ? threads : cores;
    return eff * rate1 < rate0 ? eff * rate1 : rate0;
}

double bench_single_rate(const bench_workload_t *wl, const void *params, const bench_cfg_t *base, int repeat)
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
    char cell_label[160];
    snprintf(cell_label, sizeof cell_label, "%s N=%d", label, cfg->threads);
    bench_progress_cell(cell_label);
    for (int r = 0; r < repeat; r++)
        for (int j = 0; j < nspecs; j++) {
            /* Rotating order: each spec runs early in one round and late in
             * another, so neither slot favours it. */
            const int k = (r + j) % nspecs;
            bench_result_t *run = &runs[k * repeat + r];
            /* A spec that timed out will again: its median is a failure
             * whatever the other runs say, so they are not spent on it. */
            if (r > 0 && run[-1].status == BENCH_TIMEOUT) {
                *run = run[-1];
                continue;
            }
            bench_progress_step(r * nspecs + j, repeat * nspecs, specs[k]);
            bench_run(wl, params, specs[k], cfg, run);
        }
    bench_progress_cell_done();
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
        if (wl->extras == bench_extras_ops_per_session) {
            rec->extra_keys[BENCH_EXTRA_OPS_PER_SESSION] = "ops_per_session";
            rec->extra_labels[BENCH_EXTRA_OPS_PER_SESSION] = "ops/sess";
        }
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
