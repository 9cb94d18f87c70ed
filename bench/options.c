/* options.c - the benches' shared options (--locks, --threads, ...) on top
 * of the CLI's one option parser (bench.h). */
#include "bench.h"
#include "machine.h"
#include "report.h"
#include "topo.h"
#include "../src/wait/wait_internal.h" /* baton_rdtsc, baton_tsc_per_ns, baton_now_ns */
#include "../src/base/join.h"

#include <baton/wait.h>

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int bench_parse_ints(const char *s, int *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 1000000 || n >= max)
            return -1;
        out[n++] = (int)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

bool bench_parse_only;

/* What bench_getopt() hands cli_getopt(): the shared options' target and
 * the bench's own callback. */
struct bench_getopt_ctx {
    bench_opts_t *o;
    bench_own_opt_fn own;
    void *ctx;
};

static int shared_option(int c, const char *arg, void *ctx)
{
    struct bench_getopt_ctx *g = ctx;
    bench_opts_t *o = g->o;
    switch (c) {
    case 'l': o->locks = arg; return 0;
    case 't': return (o->nthreads = bench_parse_ints(arg, o->threads, BENCH_LIST_MAX)) <= 0;
    case 'd': o->duration = atof(arg); return !(o->duration > 0 && o->duration <= 3600);
    case 'r': o->repeat = atoi(arg); return o->repeat < 1 || o->repeat > REPORT_MAX_RUNS;
    case 'p': o->pin = arg; return topo_pin_parse(arg) < 0;
    case 'j': o->json = arg; return 0;
    case 'F': o->fault = true; return 0;
    default: return g->own ? g->own(c, arg, g->ctx) : 1;
    }
}

int bench_getopt(const char *name, int argc, char **argv, const cli_opt_t *opts, bench_opts_t *o,
                 bench_own_opt_fn own, void *ctx, void (*usage)(FILE *))
{
    char prog[64];
    snprintf(prog, sizeof prog, "baton bench %s", name);
    struct bench_getopt_ctx g = {o, own, ctx};
    int rc = cli_getopt(prog, argc, argv, opts, CLI_NO_OPERANDS, shared_option, &g, usage, NULL);
    if (rc >= 0)
        return rc;
    if (bench_parse_only) {
        static char specs[64][BENCH_SPEC_MAX];
        char err[256];
        if (o->locks != NULL && bench_expand_locks(o->locks, specs, 64, err, sizeof err) < 0)
            return 2;
        return 0;
    }
    return -1;
}
