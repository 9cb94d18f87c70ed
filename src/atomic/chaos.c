/* chaos.c - the injection point of chaos builds (see baton/atomic.h).
 *
 * Called before every atomic step when the library is compiled with
 * BATON_CHAOS=1: with probability 1/64 it yields the CPU, with 1/16 it
 * spins a few hundred spin hints, so that the stress suite sees
 * interleavings a quiet run would take hours to hit.
 *
 * The seed: BATON_CHAOS_SEED if set, else taken from the clock; printed to
 * stderr once per process, so that a failing run names it.  Thread i (in
 * the order threads first reach a chaos point) draws from seed and i, so
 * the same seed gives each thread the same sequence of choices; which step
 * of which thread meets a choice still depends on the scheduler.
 */
#include <baton/atomic.h>

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void baton_chaos_point(void);

/* Plain <stdatomic.h> calls here, not baton/atomic.h's macros: in a chaos
 * build those call baton_chaos_point() itself. */
static _Atomic uint64_t chaos_seed; /* 0: not read yet */
static _Atomic uint32_t chaos_threads;

static uint64_t seed_once(void)
{
    /* Relaxed: the seed is a plain value; two first callers that race both
     * compute it from the same variable (or clock readings) and agree via
     * the CAS below, which one prints. */
    uint64_t s = atomic_load_explicit(&chaos_seed, memory_order_relaxed);
    if (s != 0)
        return s;
    const char *e = getenv("BATON_CHAOS_SEED");
    uint64_t want = 0;
    if (e && *e)
        want = strtoull(e, NULL, 0);
    if (want == 0) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        want = ((uint64_t)t.tv_sec * 1000000007u) ^ (uint64_t)t.tv_nsec;
    }
    want |= 1u; /* never 0: 0 means "not read" */
    uint64_t expected = 0;
    if (atomic_compare_exchange_strong_explicit(&chaos_seed, &expected, want, memory_order_relaxed,
                                                memory_order_relaxed)) {
        fprintf(stderr, "baton chaos: seed %" PRIu64 " (BATON_CHAOS_SEED=%" PRIu64 " repeats it)\n", want,
                want);
        return want;
    }
    return expected;
}

void baton_chaos_point(void)
{
    static _Thread_local uint32_t x;
    if (x == 0) {
        /* Relaxed: a thread number, nothing else published through it. */
        uint32_t i = atomic_fetch_add_explicit(&chaos_threads, 1u, memory_order_relaxed);
        uint64_t s = seed_once() + 0x9e3779b97f4a7c15u * (uint64_t)(i + 1u);
        x = (uint32_t)(s ^ (s >> 32)) | 1u;
    }
    /* xorshift32 */
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    if ((x & 63u) == 0) {
        sched_yield();
    } else if ((x & 15u) == 1) {
        for (uint32_t i = (x >> 8) & 255u; i > 0; i--)
            baton_cpu_relax();
    }
}
