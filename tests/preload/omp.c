/* omp.c - the OpenMP lock calls and GNU OpenMP's critical sections:
 * omp_set/unset/test_lock (test fails while another thread holds it; a
 * lock one thread set, another may unset, as libgomp allows),
 * nest locks (omp_test_nest_lock returns the new nesting count; 0 for
 * another thread), unnamed and named critical, and atomic on a type the
 * compiler implements with GOMP_atomic_start/end.  Counters check mutual
 * exclusion.  Built with -fopenmp.
 */
#include "ptest.h"

#include <omp.h>

#define THREADS 4
#define ITERS 24000 /* a multiple of 6 */

static omp_lock_t lock;
static omp_nest_lock_t nest;
static long c_lock, c_nest, c_critical, c_named, c_other_named;
static long double c_atomic;
static _Atomic int inside_lock, overlaps, errors;

static void bad(void) { baton_fetch_add(&errors, 1, memory_order_relaxed); /* a count only */ }

int main(void)
{
    ptest_begin("omp", 60);
    omp_set_dynamic(0);

    ptest_phase = "omp lock, test_lock";
    omp_init_lock(&lock);
    omp_set_lock(&lock);
    int other_test = -1;
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1)
            other_test = omp_test_lock(&lock);
    }
    CHECK(other_test == 0, "omp_test_lock by another thread while held returned %d, expected 0", other_test);
    omp_unset_lock(&lock);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1) {
            other_test = omp_test_lock(&lock);
            if (other_test)
                omp_unset_lock(&lock);
        }
    }
    CHECK(other_test == 1, "omp_test_lock on a free lock returned %d, expected 1", other_test);

    ptest_phase = "omp lock unset by another thread";
    /* Undefined in OpenMP; libgomp releases it (a simple lock has no
     * owner), and so must every kind. */
    omp_set_lock(&lock);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1)
            omp_unset_lock(&lock);
    }
    other_test = omp_test_lock(&lock);
    CHECK(other_test == 1, "omp_test_lock after another thread's unset returned %d, expected 1", other_test);
    if (other_test)
        omp_unset_lock(&lock);

    ptest_phase = "omp nest lock";
    omp_init_nest_lock(&nest);
    omp_set_nest_lock(&nest);
    omp_set_nest_lock(&nest);
    omp_set_nest_lock(&nest);
    int depth = omp_test_nest_lock(&nest);
    CHECK(depth == 4, "omp_test_nest_lock by the owner after 3 sets returned %d, expected 4", depth);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1)
            other_test = omp_test_nest_lock(&nest);
    }
    CHECK(other_test == 0, "omp_test_nest_lock by another thread while held returned %d, expected 0",
          other_test);
    for (int i = 0; i < 3; i++)
        omp_unset_nest_lock(&nest);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1)
            other_test = omp_test_nest_lock(&nest);
    }
    CHECK(other_test == 0, "omp_test_nest_lock by another thread while held once returned %d, expected 0",
          other_test);
    omp_unset_nest_lock(&nest);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1) {
            other_test = omp_test_nest_lock(&nest);
            if (other_test > 0)
                omp_unset_nest_lock(&nest);
        }
    }
    CHECK(other_test == 1, "omp_test_nest_lock on a free nest lock returned %d, expected 1", other_test);

    ptest_phase = "counters under omp locks, critical and atomic";
#pragma omp parallel num_threads(THREADS)
    {
        for (int i = 0; i < ITERS; i++) {
            switch (i % 6) {
            case 0:
                omp_set_lock(&lock);
                /* Relaxed: detection only; the lock orders the sections. */
                if (baton_fetch_add(&inside_lock, 1, memory_order_relaxed) != 0)
                    baton_fetch_add(&overlaps, 1, memory_order_relaxed);
                c_lock++;
                baton_fetch_sub(&inside_lock, 1, memory_order_relaxed); /* as above */
                omp_unset_lock(&lock);
                break;
            case 1:
                while (!omp_test_lock(&lock)) {
                }
                c_lock++;
                omp_unset_lock(&lock);
                break;
            case 2:
                omp_set_nest_lock(&nest);
                if (omp_test_nest_lock(&nest) != 2)
                    bad();
                c_nest++;
                omp_unset_nest_lock(&nest);
                omp_unset_nest_lock(&nest);
                break;
            case 3:
#pragma omp critical
                c_critical++;
                break;
            case 4:
#pragma omp critical(baton_named)
                c_named++;
#pragma omp critical(baton_other)
                c_other_named++;
                break;
            default:
#pragma omp atomic
                c_atomic += 1.0L;
                break;
            }
        }
    }
    long per = (long)THREADS * (ITERS / 6);
    CHECK(c_lock == 2 * per, "omp lock counter %ld, expected %ld", c_lock, 2 * per);
    CHECK(c_nest == per, "nest lock counter %ld, expected %ld", c_nest, per);
    CHECK(c_critical == per, "critical counter %ld, expected %ld", c_critical, per);
    CHECK(c_named == per && c_other_named == per, "named critical counters %ld and %ld, expected %ld",
          c_named, c_other_named, per);
    CHECK(c_atomic == (long double)per, "atomic long double %Lf, expected %ld", c_atomic, per);
    CHECK(baton_load(&overlaps, memory_order_relaxed) == 0, "%d overlap(s) under omp_set_lock",
          baton_load(&overlaps, memory_order_relaxed)); /* relaxed: after the region */
    CHECK(baton_load(&errors, memory_order_relaxed) == 0, "%d wrong nest count(s)",
          baton_load(&errors, memory_order_relaxed)); /* as above */
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);
    return ptest_end("locks, nest locks, critical, named critical, atomic; %d threads", THREADS);
}
