/* work.c - the local work between critical sections, and its unit's cost
 * on this machine (bench.h). */
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

/* --- local work ------------------------------------------------------------------ */

void bench_local_init(bench_local_t *w, uint32_t seed)
{
    w->rng = seed ? seed : 0x12345678u;
    memset(w->a, 0, sizeof w->a);
}

void bench_local_work(bench_local_t *w, uint32_t units)
{
    uint32_t x = w->rng;
    for (uint32_t u = 0; u < units; u++) {
        uint32_t r = bench_rand(&x);
        int32_t amount = (int32_t)(r >> 16);
        w->a[r & 63u] += amount;
        w->a[(r >> 6) & 63u] -= amount;
    }
    w->rng = x;
}

double bench_local_unit_ns(void)
{
    static double unit;
    if (unit > 0)
        return unit;
    bench_local_t w;
    bench_local_init(&w, 1);
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        const uint32_t n = 2000000;
        double t0 = bench_now();
        bench_local_work(&w, n);
        double t = (bench_now() - t0) / n * 1e9;
        if (t < best)
            best = t;
    }
    /* Keep the work observable so it is not optimised away. */
    if (w.a[0] == 0x7fffffff)
        best += 1e-12;
    unit = best;
    return unit;
}
