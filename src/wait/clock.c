/* clock.c - the library's one clock and its one TSC calibration: the
 * monotonic clock in nanoseconds (baton_now_ns(), baton_clock_ns() for the
 * other clocks), and the TSC rate measured against it, which the wait
 * layer's calibration, the interposer's profiler and `baton info` share
 * (wait_internal.h). */
#include "wait_internal.h"

#include <time.h>

uint64_t baton_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t baton_now_ns(void) { return baton_clock_ns(CLOCK_MONOTONIC); }

/* Reads bracketing one clock read; the tightest pair is kept. */
#define PAIR_TRIES 5

/* A (CLOCK_MONOTONIC, TSC) pair read as close together as we can: the
 * monotonic read bracketed by two TSC reads, best of a few tries. */
static void clock_pair(uint64_t *ns, uint64_t *tsc)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < PAIR_TRIES; i++) {
        uint64_t a = baton_rdtsc();
        uint64_t n = baton_now_ns();
        uint64_t b = baton_rdtsc();
        if (b - a < best) {
            best = b - a;
            *ns = n;
            *tsc = a + (b - a) / 2;
        }
    }
}

double baton_tsc_calibrate(uint64_t span_ns, bool sleep, baton_tsc_span_t *span)
{
    uint64_t n0 = 0, t0 = 0, n1 = 0, t1 = 0; /* set by clock_pair(); gcc -O3 cannot tell */
    clock_pair(&n0, &t0);
    if (sleep) {
        struct timespec d = {(time_t)(span_ns / 1000000000u), (long)(span_ns % 1000000000u)};
        nanosleep(&d, NULL);
    }
    do
        clock_pair(&n1, &t1);
    while (n1 - n0 < span_ns);
    if (span)
        *span = (baton_tsc_span_t){n0, t0, n1, t1};
    return n1 > n0 && t1 > t0 ? (double)(t1 - t0) / (double)(n1 - n0) : 0.0;
}
