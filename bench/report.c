/* report.c - ranked tables and JSON for `baton bench` results. */
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *report_status_name(int status, bool collapsed)
{
    switch (status) {
    case BENCH_OK: return collapsed ? "COLLAPSED" : "ok";
    case BENCH_VERIFY_FAILED: return "VERIFY-FAILED";
    case BENCH_TIMEOUT: return "COLLAPSED(timeout)";
    case BENCH_CRASHED: return "CRASHED";
    default: return "ERROR";
    }
}

const char *report_status(const bench_record_t *r)
{
    return report_status_name(r->median.status, r->collapsed);
}

static int by_rate_desc(const void *a, const void *b)
{
    double x = record_rate(*(bench_record_t *const *)a), y = record_rate(*(bench_record_t *const *)b);
    return (x < y) - (x > y);
}

bench_record_t **report_rank(bench_record_t *recs, int n)
{
    bench_record_t **order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order)
        return NULL;
    for (int i = 0; i < n; i++)
        order[i] = &recs[i];
    qsort(order, (size_t)n, sizeof *order, by_rate_desc);
    return order;
}

static void fmt_rate(char *buf, size_t n, double mops)
{
    if (mops >= 100)
        snprintf(buf, n, "%.0f", mops);
    else if (mops >= 1)
        snprintf(buf, n, "%.2f", mops);
    else if (mops > 0)
        snprintf(buf, n, "%.2e", mops);
    else
        snprintf(buf, n, "0");
}

void report_wait_us(char *buf, size_t n, double ns)
{
    const double us = ns / 1e3;
    if (ns < 0)
        snprintf(buf, n, "-");
    else if (us < 10)
        snprintf(buf, n, "%.2f", us);
    else if (us < 1000)
        snprintf(buf, n, "%.1f", us);
    else
        snprintf(buf, n, "%.0f", us);
}

void report_cell(FILE *f, bench_record_t *recs, int n, const char *title)
{
    bench_record_t **order = report_rank(recs, n);
    if (!order)
        return;
    bool energy = false;
    for (int i = 0; i < n; i++)
        energy |= order[i]->median.energy_j >= 0;
    /* An extra column appears when some lock of the cell has a value. */
    bool extra[BENCH_EXTRAS] = {false};
    char head[BENCH_EXTRAS * 16 + 1] = "";
    for (int e = 0; e < BENCH_EXTRAS; e++) {
        for (int i = 0; i < n; i++)
            extra[e] |=
                recs[i].extra_keys[e] && recs[i].median.status == BENCH_OK && recs[i].median.extra[e] >= 0;
        if (extra[e]) {
            const char *label = recs[0].extra_labels[e] ? recs[0].extra_labels[e] : recs[0].extra_keys[e];
            size_t used = strlen(head);
            snprintf(head + used, sizeof head - used, " %9.9s", label);
        }
    }
    fprintf(f, "\n%s\n", title);
    fprintf(f, "%4s  %-26s %9s %9s %8s %10s%s %7s %9s %10s%s  %s\n", "rank", "lock", "Mops/s", "x pthread",
            "fairness", "CPU-s/Mop", energy ? "     J/Mop" : "", "%limit", "max wait", "p99.9 wait", head,
            "status");
    for (int i = 0; i < n; i++) {
        const bench_record_t *r = order[i];
        double rate = record_rate(r);
        double mops = rate / 1e6;
        char rb[32], xp[32] = "-", cpu[32] = "-", jb[32] = "", lim[32] = "-", wmax[32], w999[32];
        fmt_rate(rb, sizeof rb, mops);
        report_wait_us(wmax, sizeof wmax, r->median.wait_max_ns);
        report_wait_us(w999, sizeof w999, r->median.wait_p999_ns);
        if (r->pthread_ops_per_s > 0 && rate > 0)
            snprintf(xp, sizeof xp, "%.2f", rate / r->pthread_ops_per_s);
        if (r->median.ops > 0)
            snprintf(cpu, sizeof cpu, "%.3g", r->median.cpu_s / ((double)r->median.ops / 1e6));
        if (energy)
            snprintf(jb, sizeof jb, " %9.3g",
                     r->median.energy_j >= 0 && r->median.ops
                         ? r->median.energy_j / ((double)r->median.ops / 1e6)
                         : 0.0);
        if (r->limit_ops_per_s > 0 && rate > 0)
            snprintf(lim, sizeof lim, "%.0f%%", 100.0 * rate / r->limit_ops_per_s);
        char ex[BENCH_EXTRAS * 16 + 1] = "";
        for (int e = 0; e < BENCH_EXTRAS; e++) {
            if (!extra[e])
                continue;
            size_t used = strlen(ex);
            double v = r->median.extra[e];
            if (r->median.status == BENCH_OK && v >= 0)
                snprintf(ex + used, sizeof ex - used, " %9.1f", v);
            else
                snprintf(ex + used, sizeof ex - used, " %9s", "-");
        }
        fprintf(f, "%4d  %-26s %9s %9s %8.2f %10s%s %7s %9s %10s%s  %s%s%s\n", i + 1, r->lock, rb, xp,
                record_fairness(r), cpu, jb, lim, wmax, w999, ex, report_status(r),
                r->median.message[0] ? ": " : "", r->median.message);
    }
    free(order);
}

void report_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* v, or null when negative (not available). */
static void json_or_null(FILE *f, double v)
{
    if (v >= 0)
        fprintf(f, "%.1f", v);
    else
        fprintf(f, "null");
}

/* "wait_max_ns" and "wait_p999_ns" of m. */
static void json_waits(FILE *f, const bench_result_t *m)
{
    fprintf(f, "\"wait_max_ns\": ");
    json_or_null(f, m->wait_max_ns);
    fprintf(f, ", \"wait_p999_ns\": ");
    json_or_null(f, m->wait_p999_ns);
}

void report_json_figures(FILE *f, const bench_record_t *r)
{
    const bench_result_t *m = &r->median;
    fprintf(f, "\"ops_per_s\": %.1f, \"fairness\": %.4f, \"cpu_s_per_mop\": %.6f, ", record_rate(r),
            record_fairness(r), m->ops ? m->cpu_s / ((double)m->ops / 1e6) : 0.0);
    fprintf(f, "\"vcsw\": %llu, \"ivcsw\": %llu, ", (unsigned long long)m->vcsw,
            (unsigned long long)m->ivcsw);
    json_waits(f, m);
}

int report_json_write(const char *path, const machine_t *m, const char *extra_json, int n,
                      report_record_fn record, const void *ctx)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"machine\": ");
    machine_json(f, m);
    if (extra_json && *extra_json)
        fprintf(f, ",\n  %s", extra_json);
    fprintf(f, ",\n  \"results\": [");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\n    {", i ? "," : "");
        record(f, i, ctx);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

int report_json_save(const char *name, const char *path, const machine_t *m, const char *extra_json, int n,
                     report_record_fn record, const void *ctx)
{
    if (report_json_write(path, m, extra_json, n, record, ctx) != 0) {
        fprintf(stderr, "baton bench %s: cannot write %s: %s\n", name, path, strerror(errno));
        return 1;
    }
    printf("\nwrote %s\n", path);
    return 0;
}

void report_json_outcome(FILE *f, const bench_result_t *r, const char *status)
{
    fprintf(f, "\"verified\": %s, \"status\": ", r->status == BENCH_OK ? "true" : "false");
    report_json_string(f, status);
    if (r->message[0]) {
        fprintf(f, ", \"message\": ");
        report_json_string(f, r->message);
    }
}

void report_json_record(FILE *f, int i, const void *recs)
{
    const bench_record_t *r = (const bench_record_t *)recs + i;
    double rate = record_rate(r);
    fprintf(f, "\"bench\": ");
    report_json_string(f, r->bench);
    fprintf(f, ", \"lock\": ");
    report_json_string(f, r->lock);
    fprintf(f, ", \"threads\": %d", r->threads);
    for (int p = 0; p < r->nparams; p++)
        fprintf(f, ", \"%s\": %ld", r->param_names[p], r->params[p]);
    fprintf(f, ", \"duration_s\": %.6f, \"ops\": %llu, ", r->median.seconds,
            (unsigned long long)r->median.ops);
    report_json_figures(f, r);
    fprintf(f, ", \"min_thread_ops\": %llu, \"max_thread_ops\": %llu",
            (unsigned long long)(r->median.max_thread_ops ? r->median.min_thread_ops : 0),
            (unsigned long long)r->median.max_thread_ops);
    fprintf(f, ", \"cpu_s\": %.6f", r->median.cpu_s);
    if (r->median.energy_j >= 0)
        fprintf(f, ", \"energy_j\": %.6f", r->median.energy_j);
    fprintf(f, ", \"verified\": %s, \"status\": ", r->median.status == BENCH_OK ? "true" : "false");
    report_json_string(f, report_status(r));
    fprintf(f, ", \"collapsed\": %s", r->collapsed || r->median.status == BENCH_TIMEOUT ? "true" : "false");
    if (r->limit_ops_per_s > 0)
        fprintf(f, ", \"limit_ops_per_s\": %.1f", r->limit_ops_per_s);
    if (r->pthread_ops_per_s > 0)
        fprintf(f, ", \"ratio_pthread\": %.4f", rate / r->pthread_ops_per_s);
    for (int e = 0; e < BENCH_EXTRAS; e++)
        if (r->extra_keys[e] && r->median.status == BENCH_OK && r->median.extra[e] >= 0)
            fprintf(f, ", \"%s\": %.4f", r->extra_keys[e], r->median.extra[e]);
    fprintf(f, ", \"target_duration_s\": %.3f, \"runs_ops_per_s\": [", r->duration_s);
    for (int k = 0; k < r->nruns; k++)
        fprintf(f, "%s%.1f", k ? ", " : "", r->runs_ops_per_s[k]);
    fprintf(f, "]");
    if (r->median.message[0]) {
        fprintf(f, ", \"message\": ");
        report_json_string(f, r->median.message);
    }
    if (r->json_more && r->json_more[0])
        fprintf(f, ", %s", r->json_more);
}
