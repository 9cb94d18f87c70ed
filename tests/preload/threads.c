/* threads.c - 100 000 short-lived threads, created and joined in batches of
 * 100: each locks a shared mutex (statically initialized) and an ERRORCHECK
 * mutex of its own (init, lock, relock EDEADLK, unlock, destroy), and waits
 * once on a condition variable with a past deadline.  There is no maximum
 * thread count; under the interposer no lock state may leak (the live count
 * returns to where it started).
 */
#include "ptest.h"

#define TOTAL 100000
#define BATCH 100

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long counter; /* guarded by shared */
static _Atomic int errors;

static void *worker(void *arg)
{
    (void)arg;
    int bad = pthread_mutex_lock(&shared) != 0;
    counter++;
    struct timespec past = {0, 0};
    bad += pthread_cond_timedwait(&cond, &shared, &past) != ETIMEDOUT;
    bad += pthread_mutex_unlock(&shared) != 0;
    pthread_mutex_t own;
    pthread_mutexattr_t a;
    bad += pthread_mutexattr_init(&a) != 0;
    bad += pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK) != 0;
    bad += pthread_mutex_init(&own, &a) != 0;
    bad += pthread_mutexattr_destroy(&a) != 0;
    bad += pthread_mutex_lock(&own) != 0;
    bad += pthread_mutex_lock(&own) != EDEADLK;
    bad += pthread_mutex_unlock(&own) != 0;
    bad += pthread_mutex_destroy(&own) != 0;
    if (bad)
        baton_fetch_add(&errors, bad, memory_order_relaxed); /* a count only */
    return NULL;
}

int main(void)
{
    ptest_begin("threads", 120);
    ptest_info_fn info = ptest_interposer();
    baton_preload_info_t before = {0}, after = {0};
    /* The shared mutex's state exists before the baseline. */
    REQUIRE(pthread_mutex_lock(&shared), 0);
    REQUIRE(pthread_mutex_unlock(&shared), 0);
    if (info)
        REQUIRE(info(BATON_PRELOAD_MUTEX, &before), 0);
    pthread_attr_t attr;
    REQUIRE(pthread_attr_init(&attr), 0);
    REQUIRE(pthread_attr_setstacksize(&attr, 64 * 1024), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ptest_phase = "creating and joining threads";
    for (int done = 0; done < TOTAL; done += BATCH) {
        pthread_t t[BATCH];
        for (int i = 0; i < BATCH; i++) {
            int rc = pthread_create(&t[i], &attr, worker, NULL);
            if (rc != 0)
                ptest_fatal(__LINE__, "pthread_create failed after %d threads: %s", done + i, strerror(rc));
        }
        for (int i = 0; i < BATCH; i++)
            ptest_join(t[i]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    REQUIRE(pthread_attr_destroy(&attr), 0);
    CHECK(counter == TOTAL, "shared counter %ld, expected %d", counter, TOTAL);
    /* Relaxed: after the joins. */
    CHECK(baton_load(&errors, memory_order_relaxed) == 0, "%d failed call(s) in the threads",
          baton_load(&errors, memory_order_relaxed));
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (info) {
        REQUIRE(info(BATON_PRELOAD_MUTEX, &after), 0);
        if (!after.stock) {
            CHECK(after.live == before.live, "mutex states live: %llu before, %llu after (leak)",
                  (unsigned long long)before.live, (unsigned long long)after.live);
            CHECK(after.created >= before.created + TOTAL, "only %llu mutex states created for %d threads",
                  (unsigned long long)(after.created - before.created), TOTAL);
        }
        return ptest_end("%d threads in %.2f s; mutex states live %llu, peak %llu, created %llu", TOTAL, secs,
                         (unsigned long long)after.live, (unsigned long long)after.peak,
                         (unsigned long long)after.created);
    }
    return ptest_end("%d threads in %.2f s", TOTAL, secs);
}
