/* waits.c - acquisition waits, sampled with the TSC into log-bucketed
 * histograms (bench.h). */
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

/* --- acquisition waits ---------------------------------------------------------- */

_Thread_local uint32_t bench_wait_tick;
_Thread_local bench_wait_hist_t *bench_wait_log;

/* Bucket of `c` cycles: exact below BENCH_WAIT_SUB, then BENCH_WAIT_SUB
 * buckets per power of two (bucket 4e-4+s holds [(4+s) << (e-2), (5+s) << (e-2))
 * for the power 2^e). */
_Static_assert(BENCH_WAIT_SUB == 4, "wait_bucket splits powers of two in 4");

static unsigned wait_bucket(uint64_t c)
{
    if (c < BENCH_WAIT_SUB)
        return (unsigned)c;
    unsigned e = 63u - (unsigned)__builtin_clzll(c); /* >= 2 */
    return (e - 1u) * BENCH_WAIT_SUB + (unsigned)((c >> (e - 2u)) & (BENCH_WAIT_SUB - 1));
}

/* The largest value bucket b holds. */
static uint64_t wait_bucket_top(unsigned b)
{
    if (b < BENCH_WAIT_SUB)
        return b;
    unsigned e = b / BENCH_WAIT_SUB + 1u, sub = b % BENCH_WAIT_SUB;
    return ((uint64_t)(BENCH_WAIT_SUB + sub + 1u) << (e - 2u)) - 1u;
}

void bench_wait_add(bench_wait_hist_t *h, uint64_t cycles)
{
    h->samples++;
    h->bucket[wait_bucket(cycles)]++;
    if (cycles > h->max_cycles)
        h->max_cycles = cycles;
}

void bench_wait_merge(bench_wait_hist_t *into, const bench_wait_hist_t *from)
{
    into->samples += from->samples;
    if (from->max_cycles > into->max_cycles)
        into->max_cycles = from->max_cycles;
    for (int b = 0; b < BENCH_WAIT_BUCKETS; b++)
        into->bucket[b] += from->bucket[b];
}

void bench_wait_figures(const bench_wait_hist_t *h, double *max_ns, double *p999_ns)
{
    *max_ns = *p999_ns = -1;
    const double tpn = baton_tsc_per_ns();
    if (h->samples == 0 || !(tpn > 0))
        return;
    /* The sample of rank ceil(0.999 n), counted from the smallest. */
    const uint64_t rank = h->samples - h->samples / 1000;
    uint64_t seen = 0, top = h->max_cycles;
    for (unsigned b = 0; b < BENCH_WAIT_BUCKETS; b++) {
        seen += h->bucket[b];
        if (seen >= rank) {
            top = wait_bucket_top(b);
            break;
        }
    }
    if (top > h->max_cycles)
        top = h->max_cycles;
    *max_ns = (double)h->max_cycles / tpn;
    *p999_ns = (double)top / tpn;
}

int bench_wait_sampled(int how, bench_lock_t *l, baton_fn fn, void *ctx)
{
    const uint64_t t0 = baton_rdtsc();
    int rc = 0;
    switch (how) {
    case BENCH_WAIT_LOCK: bench_lock_acquire_untimed(l); break;
    case BENCH_WAIT_RLOCK: bench_lock_read_acquire_untimed(l); break;
    default: rc = bench_execute_untimed(l, fn, ctx); break;
    }
    const uint64_t t1 = baton_rdtsc();
    bench_wait_hist_t *h = bench_wait_log;
    if (h && t1 >= t0)
        bench_wait_add(h, t1 - t0);
    return rc;
}
