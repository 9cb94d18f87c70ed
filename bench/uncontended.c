/* uncontended.c - `baton bench uncontended`: the cost of one lock+unlock
 * pair with no contention, for every kind through its typed API (inline
 * fast paths) and through the dynamic API, and for every peer through its
 * table.  It answers: how fast is the fastest kind, and what does choosing
 * the algorithm at run time cost?
 *
 * One thread, pinned; N pairs timed; the median of R repetitions.  The
 * critical section increments a counter, which is checked at the end.
 */
#include "bench.h"
#include "report.h"
#include "topo.h"

#include <baton/locks.h>
#include <stdlib.h>
#include <string.h>

static long counter; /* incremented inside every critical section */

/* One loop per typed API: the compiler inlines each kind's fast path. */
static void loop_tas(void *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        baton_tas_lock(l);
        counter++;
        baton_tas_unlock(l);
    }
}
static void loop_ttas(void *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        baton_ttas_lock(l);
        counter++;
        baton_ttas_unlock(l);
    }
}
static void loop_ticket(void *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        baton_ticket_lock(l);
        counter++;
        baton_ticket_unlock(l);
    }
}
static void loop_mcs(void *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        baton_mcs_lock(l);
        counter++;
        baton_mcs_unlock(l);
    }
}
static void loop_clh(void *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        baton_clh_lock(l);
        counter++;
        baton_clh_unlock(l);
    }
}
static void loop_one(void *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        baton_onespinner_lock(l);
        counter++;
        baton_onespinner_unlock(l);
    }
}
static void loop_relay(void *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        baton_relay_lock(l);
        counter++;
        baton_relay_unlock(l);
    }
}
static void loop_runner(void *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        baton_runner_lock(l);
        counter++;
        baton_runner_unlock(l);
    }
}

static int init_tas(void *l) { return baton_tas_init(l, NULL); }
static int init_ttas(void *l) { return baton_ttas_init(l, NULL); }
static int init_ticket(void *l) { return baton_ticket_init(l, NULL); }
static int init_mcs(void *l) { return baton_mcs_init(l, NULL); }
static int init_clh(void *l) { return baton_clh_init(l, NULL); }
static int init_one(void *l) { return baton_onespinner_init(l, NULL); }
static int init_relay(void *l) { return baton_relay_init(l, NULL, 0); }
static int init_runner(void *l) { return baton_runner_init(l, NULL, 0); }

static const struct typed_kind {
    const char *name;
    int (*init)(void *);
    void (*loop)(void *, uint64_t);
} typed[] = {
    {"tas", init_tas, loop_tas},          {"ttas", init_ttas, loop_ttas},
    {"ticket", init_ticket, loop_ticket}, {"mcs", init_mcs, loop_mcs},
    {"clh", init_clh, loop_clh},          {"onespinner", init_one, loop_one},
    {"relay", init_relay, loop_relay},    {"runner", init_runner, loop_runner},
};

static void loop_dynamic(void *l, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        baton_lock(l);
        counter++;
        baton_unlock(l);
    }
}

struct peer_arg {
    const bench_peer_t *peer;
    void *obj;
};

static void loop_peer(void *arg, uint64_t n)
{
    const struct peer_arg *a = arg;
    for (uint64_t i = 0; i < n; i++) {
        a->peer->lock(a->obj);
        counter++;
        a->peer->unlock(a->obj);
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Run loop(arg, n) `repeat` times; the median, in ns per lock+unlock pair.
 * *expected counts the critical sections, to check the counter at the end. */
static double time_loop(void (*loop)(void *, uint64_t), void *arg, uint64_t n, int repeat, long *expected)
{
    double t[32];
    for (int r = 0; r < repeat; r++) {
        double t0 = bench_now();
        loop(arg, n);
        t[r] = (bench_now() - t0) / (double)n * 1e9;
        *expected += (long)n;
    }
    qsort(t, (size_t)repeat, sizeof t[0], cmp_d);
    return t[repeat / 2];
}

/* One row: ns per pair through each way in; < 0 where there is none. */
struct unc_row {
    char lock[BENCH_SPEC_MAX];
    double typed_ns, dynamic_ns, table_ns;
};

/* The row's three figures, where it has them (the typed API and a
 * function table are not both there for any lock). */
static void unc_print(const struct unc_row *x)
{
    if (x->typed_ns >= 0)
        printf("%-24s %10.2f %10.2f %12.2f\n", x->lock, x->typed_ns, x->dynamic_ns,
               x->dynamic_ns - x->typed_ns);
    else
        printf("%-24s %10s %10.2f\n", x->lock, "-", x->table_ns >= 0 ? x->table_ns : x->dynamic_ns);
}

/* One record of the JSON (a report_record_fn over the unc_row array). */
static void unc_json_record(FILE *f, int i, const void *ctx)
{
    const struct unc_row *x = (const struct unc_row *)ctx + i;
    fprintf(f, "\"bench\": \"uncontended\", \"lock\": ");
    report_json_string(f, x->lock);
    if (x->typed_ns >= 0)
        fprintf(f, ", \"typed_ns\": %.3f", x->typed_ns);
    if (x->dynamic_ns >= 0)
        fprintf(f, ", \"dynamic_ns\": %.3f", x->dynamic_ns);
    if (x->table_ns >= 0)
        fprintf(f, ", \"table_ns\": %.3f", x->table_ns);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: baton bench uncontended [--iters N] [--repeat R] [--json FILE]\n");
}

struct unc_opts {
    long *iters;
    int *repeat;
};

static int unc_option(int c, const char *arg, void *ctx)
{
    struct unc_opts *uo = ctx;
    if (c == 'n')
        *uo->iters = atol(arg);
    else
        *uo->repeat = atoi(arg);
    return 0;
}

int cmd_bench_uncontended(int argc, char **argv)
{
    long iters = 10000000;
    int repeat = 3;
    const char *json = NULL;
    const cli_opt_t opts[] = {
        {"iters", CLI_VALUE, 0, 'n'}, {"repeat", CLI_VALUE, 0, 'r'}, {"json", CLI_VALUE, 0, 'j', &json}, {0}};
    struct unc_opts uo = {&iters, &repeat};
    const int prc = cli_getopt("baton bench uncontended", argc, argv, opts, CLI_NO_OPERANDS, unc_option, &uo,
                               usage, NULL);
    if (prc >= 0)
        return prc;
    if (iters < 1000 || repeat < 1 || repeat > 31) {
        fprintf(stderr, "baton bench uncontended: --iters >= 1000 and 1 <= --repeat <= 31\n");
        return 2;
    }
    bench_setup_t b;
    if (bench_setup_machine(&b, "uncontended", "none", 0, false) != 0)
        return 2;
    (void)topo_pin_self(0);
    const uint64_t n = (uint64_t)iters;
    long expected = 0;
    const bench_peer_t *peers;
    const size_t np = bench_peers(&peers);
    const size_t ntyped = sizeof typed / sizeof typed[0];
    struct unc_row *rows = calloc(ntyped + 1 + np, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "baton bench uncontended: out of memory\n");
        bench_cmd_finish(&b, NULL, NULL, NULL, 0, 0);
        return 2;
    }
    int nrows = 0;
    printf("uncontended lock+unlock, %ld pairs x %d (median), ns per pair\n\n", iters, repeat);
    printf("%-24s %10s %10s %12s\n", "lock", "typed", "dynamic", "dynamic-typed");
    for (size_t k = 0; k < ntyped; k++) {
        _Alignas(BATON_CACHELINE) unsigned char mem[512];
        if (typed[k].init(mem) != 0)
            continue;
        double ty = time_loop(typed[k].loop, mem, n, repeat, &expected);
        baton_lock_t *l = baton_lock_new(typed[k].name);
        if (!l)
            continue;
        struct unc_row *x = &rows[nrows++];
        snprintf(x->lock, sizeof x->lock, "%s", baton_lock_spec(l));
        x->typed_ns = ty;
        x->dynamic_ns = time_loop(loop_dynamic, l, n, repeat, &expected);
        x->table_ns = -1;
        baton_lock_free(l);
        unc_print(x);
    }
    /* pthread and the peers: through a function table, like the dynamic API */
    struct unc_row *x = &rows[nrows++];
    snprintf(x->lock, sizeof x->lock, "pthread");
    baton_lock_t *pl = baton_lock_new("pthread");
    x->typed_ns = x->table_ns = -1;
    x->dynamic_ns = time_loop(loop_dynamic, pl, n, repeat, &expected);
    baton_lock_free(pl);
    unc_print(x);
    for (size_t k = 0; k < np; k++) {
        struct peer_arg a = {&peers[k], peers[k].create()};
        if (!a.obj)
            continue;
        x = &rows[nrows++];
        snprintf(x->lock, sizeof x->lock, "%s", peers[k].name);
        x->typed_ns = x->dynamic_ns = -1;
        x->table_ns = time_loop(loop_peer, &a, n, repeat, &expected);
        peers[k].destroy(a.obj);
        unc_print(x);
    }
    printf("\n'typed' calls the kind's own inline fast path; 'dynamic' goes through baton_lock()/\n"
           "baton_unlock(); pthread and peers are called through a function table, as the\n"
           "dynamic API is.\n");
    int failed = 0;
    if (counter != expected) {
        printf("VERIFY FAILED: counter %ld, expected %ld\n", counter, expected);
        failed = 1;
    }
    char extra[64];
    snprintf(extra, sizeof extra, "\"iters\": %ld, \"repeat\": %d", iters, repeat);
    int rc = bench_cmd_finish_json(&b, json, extra, nrows, unc_json_record, rows, failed);
    free(rows);
    return rc;
}
