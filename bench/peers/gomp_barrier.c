/* gomp_barrier.c - GNU OpenMP's barrier (#pragma omp barrier) as a barrier
 * peer.  An OpenMP barrier synchronises the threads of one team, so the
 * bench cannot call it from threads of its own: run() opens a parallel
 * region of n threads (the caller is thread 0) and every one of them runs
 * the bench's episode loop, which calls wait() - an orphaned barrier, bound
 * to that region.  libgomp's barrier is a counter: waiters spin
 * (GOMP_SPINCOUNT, cut short when threads outnumber CPUs), then sleep in a
 * futex.  Compiled with -fopenmp (CMakeLists.txt). */
#include <errno.h>
#include <omp.h>
#include <stdlib.h>

#include "barrier_peers.h"

/* Nothing to create: the barrier is the team's.  A non-NULL token says so. */
void *bench_bpeer_gomp_create(unsigned n)
{
    (void)n;
    static int token;
    return &token;
}

void bench_bpeer_gomp_destroy(void *b) { (void)b; }

void bench_bpeer_gomp_wait(void *b, unsigned index)
{
    (void)b;
    (void)index;
#pragma omp barrier
}

int bench_bpeer_gomp_run(unsigned n, void (*body)(void *ctx, unsigned index), void *ctx)
{
    int got = 0;
    /* No dynamic adjustment: the region must have exactly n threads, or
     * the barrier would wait for threads that do not exist. */
    omp_set_dynamic(0);
#pragma omp parallel num_threads((int)n)
    {
#pragma omp single
        got = omp_get_num_threads();
        /* The single's implied barrier publishes `got` to the team. */
        if ((unsigned)got == n)
            body(ctx, (unsigned)omp_get_thread_num());
    }
    return (unsigned)got == n ? 0 : EAGAIN;
}
