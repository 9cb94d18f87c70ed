/* barrier_race.c - pthread_barrier_destroy racing a thread that is entering
 * pthread_barrier_wait on a barrier of one.
 *
 * POSIX leaves this undefined; glibc never frees anything: its destroy
 * waits for the threads that have entered to leave, and a wait that comes
 * after the destroy still finds a barrier of one and passes, as the serial
 * thread.  So under glibc every wait returns PTHREAD_BARRIER_SERIAL_THREAD
 * and every destroy 0, in every interleaving.  The interposer must do the
 * same: it must not free the barrier under a thread that has entered the
 * wait (a use-after-free: SIGSEGV, or SIGFPE from a zero count), nor hand a
 * late waiter a barrier it cannot use.
 *
 * Each round zeroes the memory, initialises it, lets a helper thread wait
 * on it and destroys it from the main thread after a delay that sweeps
 * across the helper's entry (0 to ~20 us, and a few yields).
 */
#include "ptest.h"

#define ROUNDS 4000
#define BUDGET_NS 4000000000LL /* stop early on a slow machine */

static pthread_barrier_t *volatile shared_b;
static ptest_flag_t go, finished;
static _Atomic int helper_rc;

static void *helper(void *arg)
{
    (void)arg;
    for (int round = 1;; round++) {
        ptest_await(&go, round);
        pthread_barrier_t *b = shared_b;
        if (b == NULL)
            return NULL;
        /* Relaxed: read by main after the release in ptest_raise(). */
        baton_store(&helper_rc, pthread_barrier_wait(b), memory_order_relaxed);
        ptest_raise(&finished, round);
    }
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(void)
{
    ptest_begin("barrier_race", 60);
    ptest_phase = "destroy racing a thread entering wait";
    pthread_barrier_t *b = malloc(sizeof *b);
    if (b == NULL)
        ptest_fatal(__LINE__, "out of memory");
    pthread_t t = ptest_spawn(helper, NULL);
    int64_t start = now_ns();
    int rounds = 0, bad_wait = 0, bad_destroy = 0;
    for (int round = 1; round <= ROUNDS && now_ns() - start < BUDGET_NS; round++) {
        memset((void *)b, 0, sizeof *b);
        REQUIRE(pthread_barrier_init(b, NULL, 1), 0);
        shared_b = b;
        ptest_raise(&go, round);
        /* Sweep the destroy across the helper's entry into the wait. */
        unsigned delay = (unsigned)round % 64u;
        if (delay < 48) {
            for (volatile unsigned i = 0; i < delay * 40u; i++) {
            }
        } else {
            for (unsigned i = 0; i < delay - 47u; i++)
                sched_yield();
        }
        int rc = pthread_barrier_destroy(b);
        bad_destroy += rc != 0;
        if (rc != 0 && bad_destroy == 1)
            ptest_fail(__LINE__, "round %d: pthread_barrier_destroy returned %d (%s)", round, rc,
                       ptest_errname(rc));
        ptest_await(&finished, round);
        /* Relaxed: ordered by the acquire in ptest_await(). */
        int wrc = baton_load(&helper_rc, memory_order_relaxed);
        bad_wait += wrc != PTHREAD_BARRIER_SERIAL_THREAD;
        if (wrc != PTHREAD_BARRIER_SERIAL_THREAD && bad_wait == 1)
            ptest_fail(__LINE__,
                       "round %d: pthread_barrier_wait returned %d, expected the serial thread's %d", round,
                       wrc, PTHREAD_BARRIER_SERIAL_THREAD);
        rounds = round;
    }
    shared_b = NULL;
    ptest_raise(&go, rounds + 1);
    ptest_join(t);
    free(b);
    CHECK(bad_wait == 0 && bad_destroy == 0, "%d of %d waits and %d destroys went wrong", bad_wait, rounds,
          bad_destroy);
    return ptest_end("%d rounds of destroy racing a wait on a barrier of 1", rounds);
}
