/* barrier.c - pthread_barrier_*: EINVAL for a count of 0; a count of 1;
 * N threads (fewer and more than the CPUs) x many episodes, where no thread
 * leaves an episode before all have arrived and exactly one gets
 * PTHREAD_BARRIER_SERIAL_THREAD; destroy and re-init from the serial thread
 * while the others are still leaving; new threads replacing exited ones;
 * init/destroy cycles in the same memory; a process-shared barrier between
 * a parent and a forked child (the interposer must hand it to glibc).
 *
 * Under the interposer with BATON_BARRIER unset, the program also runs
 * itself once per barrier spec (BATON_BARRIER=central, twolevel,
 * dissemination, tournament, pthread), so every barrier kind passes the same
 * checks behind the pthread calls.
 */
#include "ptest.h"

#include <sys/mman.h>
#include <sys/wait.h>

#define EPISODES 300

typedef struct run {
    pthread_barrier_t b;
    unsigned n;
    _Atomic unsigned arrived[EPISODES];
    _Atomic unsigned serials[EPISODES];
    _Atomic int early, bad_rc;
} run_t;

static void *episodes(void *arg)
{
    run_t *r = arg;
    for (unsigned e = 0; e < EPISODES; e++) {
        /* Relaxed: a count; the barrier must order it before the reads below. */
        baton_fetch_add(&r->arrived[e], 1u, memory_order_relaxed);
        int rc = pthread_barrier_wait(&r->b);
        if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
            baton_fetch_add(&r->serials[e], 1u, memory_order_relaxed); /* a count */
        else if (rc != 0)
            baton_fetch_add(&r->bad_rc, 1, memory_order_relaxed); /* a count */
        if (baton_load(&r->arrived[e], memory_order_relaxed) != r->n)
            baton_fetch_add(&r->early, 1, memory_order_relaxed); /* a count */
    }
    return NULL;
}

static void test_episodes(unsigned n)
{
    run_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        ptest_fatal(__LINE__, "out of memory");
    r->n = n;
    REQUIRE(pthread_barrier_init(&r->b, NULL, n), 0);
    pthread_t t[16];
    for (unsigned i = 0; i < n; i++)
        t[i] = ptest_spawn(episodes, r);
    for (unsigned i = 0; i < n; i++)
        ptest_join(t[i]);
    unsigned bad_serial = 0;
    for (unsigned e = 0; e < EPISODES; e++)
        bad_serial += baton_load(&r->serials[e], memory_order_relaxed) != 1u; /* joined */
    CHECK(bad_serial == 0, "%u threads: %u of %d episodes without exactly one serial thread", n, bad_serial,
          EPISODES);
    CHECK(baton_load(&r->early, memory_order_relaxed) == 0,
          "%u threads: %d waits returned before all arrived", n, baton_load(&r->early, memory_order_relaxed));
    CHECK(baton_load(&r->bad_rc, memory_order_relaxed) == 0, "%u threads: %d waits returned an error", n,
          baton_load(&r->bad_rc, memory_order_relaxed));
    EXPECT(pthread_barrier_destroy(&r->b), 0);
    free(r);
}

/* --- destroy and re-init from the serial thread -------------------------------------- */

#define REINIT_THREADS 4
#define REINIT_ROUNDS 200

typedef struct reinit {
    pthread_barrier_t a, b;
    _Atomic int errors;
} reinit_t;

static void *reinit_worker(void *arg)
{
    reinit_t *r = arg;
    for (int i = 0; i < REINIT_ROUNDS; i++) {
        int rc = pthread_barrier_wait(&r->a);
        if (rc == PTHREAD_BARRIER_SERIAL_THREAD) {
            /* The others may still be leaving: destroy must cope. */
            if (pthread_barrier_destroy(&r->a) != 0 || pthread_barrier_init(&r->a, NULL, REINIT_THREADS) != 0)
                baton_fetch_add(&r->errors, 1, memory_order_relaxed); /* a count */
        } else if (rc != 0) {
            baton_fetch_add(&r->errors, 1, memory_order_relaxed); /* a count */
        }
        rc = pthread_barrier_wait(&r->b); /* nobody touches a before it is ready again */
        if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
            baton_fetch_add(&r->errors, 1, memory_order_relaxed); /* a count */
    }
    return NULL;
}

static void test_reinit(void)
{
    ptest_phase = "destroy and re-init from the serial thread";
    reinit_t r;
    memset(&r, 0, sizeof r);
    REQUIRE(pthread_barrier_init(&r.a, NULL, REINIT_THREADS), 0);
    REQUIRE(pthread_barrier_init(&r.b, NULL, REINIT_THREADS), 0);
    pthread_t t[REINIT_THREADS];
    for (int i = 0; i < REINIT_THREADS; i++)
        t[i] = ptest_spawn(reinit_worker, &r);
    for (int i = 0; i < REINIT_THREADS; i++)
        ptest_join(t[i]);
    CHECK(baton_load(&r.errors, memory_order_relaxed) == 0, "%d calls failed",
          baton_load(&r.errors, memory_order_relaxed));
    EXPECT(pthread_barrier_destroy(&r.a), 0);
    EXPECT(pthread_barrier_destroy(&r.b), 0);
}

/* --- process-shared: a parent and a forked child ----------------------------------- */

static void test_pshared(void)
{
    ptest_phase = "process-shared barrier across fork";
    typedef struct shared {
        pthread_barrier_t b;
        _Atomic unsigned arrived[100];
        _Atomic int early;
    } shared_t;
    shared_t *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        ptest_fatal(__LINE__, "mmap failed");
    pthread_barrierattr_t attr;
    REQUIRE(pthread_barrierattr_init(&attr), 0);
    REQUIRE(pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED), 0);
    REQUIRE(pthread_barrier_init(&s->b, &attr, 2), 0);
    EXPECT(pthread_barrierattr_destroy(&attr), 0);
    pid_t pid = fork();
    if (pid < 0)
        ptest_fatal(__LINE__, "fork failed");
    int serials = 0;
    for (unsigned e = 0; e < 100; e++) {
        baton_fetch_add(&s->arrived[e], 1u, memory_order_relaxed); /* ordered by the barrier */
        int rc = pthread_barrier_wait(&s->b);
        serials += rc == PTHREAD_BARRIER_SERIAL_THREAD;
        if (baton_load(&s->arrived[e], memory_order_relaxed) != 2u)
            baton_fetch_add(&s->early, 1, memory_order_relaxed); /* a count */
    }
    if (pid == 0)
        _exit(serials);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && serials + WEXITSTATUS(status) == 100,
          "parent and child got %d + %d serial returns in 100 episodes", serials,
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK(baton_load(&s->early, memory_order_relaxed) == 0,
          "%d waits returned before the other process arrived", baton_load(&s->early, memory_order_relaxed));
    EXPECT(pthread_barrier_destroy(&s->b), 0);
    munmap(s, sizeof *s);
}

/* --- new threads take exited threads' places ----------------------------------------- */

static void test_generations(void)
{
    ptest_phase = "threads replaced every generation";
    run_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        ptest_fatal(__LINE__, "out of memory");
    r->n = 2;
    REQUIRE(pthread_barrier_init(&r->b, NULL, 2), 0);
    for (int g = 0; g < 5; g++) {
        memset((void *)r->arrived, 0, sizeof r->arrived);
        memset((void *)r->serials, 0, sizeof r->serials);
        pthread_t a = ptest_spawn(episodes, r), b = ptest_spawn(episodes, r);
        ptest_join(a);
        ptest_join(b);
        unsigned bad = 0;
        for (unsigned e = 0; e < EPISODES; e++)
            bad += baton_load(&r->serials[e], memory_order_relaxed) != 1u; /* joined */
        CHECK(bad == 0, "generation %d: %u episodes without exactly one serial thread", g, bad);
    }
    CHECK(baton_load(&r->early, memory_order_relaxed) == 0 &&
              baton_load(&r->bad_rc, memory_order_relaxed) == 0,
          "%d early returns, %d errors", baton_load(&r->early, memory_order_relaxed),
          baton_load(&r->bad_rc, memory_order_relaxed));
    EXPECT(pthread_barrier_destroy(&r->b), 0);
    free(r);
}

/* --- under the interposer: every barrier kind --------------------------------------- */

static int run_kinds(char **argv)
{
    static const char *const specs[] = {"central", "twolevel", "dissemination", "tournament", "pthread"};
    int failed = 0;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        pid_t pid = fork();
        if (pid < 0)
            ptest_fatal(__LINE__, "fork failed");
        if (pid == 0) {
            setenv("BATON_BARRIER", specs[i], 1);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            ptest_fail(__LINE__, "BATON_BARRIER=%s: the checks failed (status %d)", specs[i], status);
            failed++;
        }
    }
    return failed;
}

int main(int argc, char **argv)
{
    (void)argc;
    ptest_begin("barrier", 60);
    const char *which = getenv("BATON_BARRIER");

    ptest_phase = "count 0";
    pthread_barrier_t b;
    EXPECT(pthread_barrier_init(&b, NULL, 0), EINVAL);

    ptest_phase = "count 1";
    REQUIRE(pthread_barrier_init(&b, NULL, 1), 0);
    for (int i = 0; i < 10; i++)
        EXPECT(pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
    EXPECT(pthread_barrier_destroy(&b), 0);

    ptest_phase = "init/destroy cycles";
    for (int i = 0; i < 2000; i++) {
        REQUIRE(pthread_barrier_init(&b, NULL, 1 + (unsigned)i % 8), 0);
        REQUIRE(pthread_barrier_destroy(&b), 0);
    }

    ptest_phase = "episodes";
    static const unsigned ns[] = {2, 3, 4, 8, 16};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        test_episodes(ns[i]);
    test_reinit();
    test_generations();
    test_pshared();

    if (ptest_interposer() != NULL && (which == NULL || which[0] == '\0'))
        run_kinds(argv);
    return ptest_end("BATON_BARRIER=%s", which && which[0] ? which : "(default)");
}
