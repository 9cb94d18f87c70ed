/* omp_locks.c - an EPCC-style OpenMP lock benchmark (the LOCK/UNLOCK and
 * CRITICAL tests of the EPCC syncbench), for comparing GNU OpenMP's own locks
 * with the interposer's:
 *
 *   omp_locks lock|critical [ITERS [WORK_NS]]
 *   LD_PRELOAD=.../libbaton-preload.so BATON_LOCK=mcs omp_locks lock 200000
 *
 * Every thread of one parallel region (OMP_NUM_THREADS) runs ITERS
 * iterations (default 200000) of: acquire, about WORK_NS nanoseconds of work
 * (default 100: EPCC's default delay, 0.1 us) and one increment of a shared
 * counter, release.  As in EPCC there is no work outside the lock, so the
 * test measures how fast the lock passes between threads.  Modes:
 *   lock      omp_set_lock / omp_unset_lock on one omp_lock_t
 *   critical  #pragma omp critical (GOMP_critical_start/end)
 *
 * Output: one line on stdout,
 *   mode=lock threads=8 iters=200000 work_ns=100 ops=1600000 seconds=0.41 ops_per_s=3.9e+06
 *   counter=1600000 delay_iters=414 passes=5120
 * (all on one line; delay_iters: the calibrated loop count for WORK_NS;
 * passes: how many critical sections ran on another thread than the one
 * before, i.e. how often the lock and the counter moved between threads), and
 * exit status 1 when the counter differs from threads * ITERS (the lock
 * failed to exclude), 2 on bad arguments.  Nothing else is printed on
 * stdout, so scripts (and `baton advise --metric stdout-regex:...`) can read
 * the line.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The work inside the lock: a loop the compiler cannot remove or fold.  The
 * empty asm makes `a` opaque at every step, so each iteration is one
 * dependent add, the same cost with gcc and clang at any optimisation. */
static long delay(long n)
{
    long a = 0;
    for (long i = 0; i < n; i++) {
        a += i;
        __asm__ __volatile__("" : "+r"(a));
    }
    return a;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Delay-loop iterations that take about `ns` nanoseconds on this machine:
 * time a long run of the loop (the best of five, to ignore preemption), as
 * EPCC does before its tests. */
static long sink; /* keeps the delay's result alive (written under the lock) */

static long calibrate(double ns)
{
    const long probe = 1000000;
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        sink += delay(probe);
        double t = now() - t0;
        if (t < best)
            best = t;
    }
    double per_iter_ns = best * 1e9 / (double)probe;
    long n = (long)(ns / per_iter_ns + 0.5);
    return n < 1 ? 1 : n;
}

static long counter;         /* the shared data: protected by the lock under test */
static int last_thread = -1; /* who ran the previous critical section (under the lock) */
static long passes;          /* critical sections run by another thread than the one before */

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4 || (strcmp(argv[1], "lock") != 0 && strcmp(argv[1], "critical") != 0)) {
        fprintf(stderr, "usage: %s lock|critical [ITERS [WORK_NS]]\n", argv[0]);
        return 2;
    }
    const int critical = strcmp(argv[1], "critical") == 0;
    char *end;
    long iters = 200000;
    if (argc >= 3) {
        iters = strtol(argv[2], &end, 10);
        if (*end != '\0' || iters <= 0) {
            fprintf(stderr, "%s: ITERS must be a positive integer\n", argv[0]);
            return 2;
        }
    }
    double work_ns = 100.0;
    if (argc >= 4) {
        work_ns = strtod(argv[3], &end);
        if (*end != '\0' || work_ns < 0.0) {
            fprintf(stderr, "%s: WORK_NS must be a non-negative number\n", argv[0]);
            return 2;
        }
    }
    const long work = work_ns > 0.0 ? calibrate(work_ns) : 0;

    omp_lock_t lock;
    omp_init_lock(&lock);
    int threads = 1;
    double t0 = 0.0, t1 = 0.0;

#pragma omp parallel
    {
#pragma omp single
        {
            threads = omp_get_num_threads();
            t0 = omp_get_wtime();
        } /* implied barrier: every thread starts after t0 */
        const int me = omp_get_thread_num();
        if (critical) {
            for (long i = 0; i < iters; i++) {
#pragma omp critical
                {
                    sink += delay(work);
                    counter++;
                    if (last_thread != me) {
                        last_thread = me;
                        passes++;
                    }
                }
            }
        } else {
            for (long i = 0; i < iters; i++) {
                omp_set_lock(&lock);
                sink += delay(work);
                counter++;
                if (last_thread != me) {
                    last_thread = me;
                    passes++;
                }
                omp_unset_lock(&lock);
            }
        }
#pragma omp barrier
#pragma omp single
        t1 = omp_get_wtime();
    }
    omp_destroy_lock(&lock);

    const long ops = (long)threads * iters;
    const double seconds = t1 - t0;
    printf("mode=%s threads=%d iters=%ld work_ns=%g ops=%ld seconds=%.6f ops_per_s=%.6g counter=%ld "
           "delay_iters=%ld passes=%ld\n",
           critical ? "critical" : "lock", threads, iters, work_ns, ops, seconds,
           seconds > 0.0 ? (double)ops / seconds : 0.0, counter, work, passes);
    if (counter != ops) {
        fprintf(stderr, "%s: counter is %ld, expected %ld: the lock did not exclude\n", argv[0], counter,
                ops);
        return 1;
    }
    return 0;
}
