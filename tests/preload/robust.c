/* robust.c - mutexes and other objects the interposer hands to glibc keep
 * working: robust mutexes (owner death), priority-inheritance mutexes, and
 * process-shared mutexes, condition variables, rwlocks and spinlocks in a
 * MAP_SHARED mapping used by a parent and its forked child.
 */
#include "ptest.h"

#include <sys/mman.h>
#include <sys/wait.h>

static void *lock_and_exit(void *arg)
{
    /* The thread ends holding the mutex. */
    return (void *)(intptr_t)pthread_mutex_lock(arg);
}

static void *trylock_rc(void *arg)
{
    int rc = pthread_mutex_trylock(arg);
    if (rc == 0)
        pthread_mutex_unlock(arg);
    return (void *)(intptr_t)rc;
}

static void make_robust(pthread_mutex_t *m, int type)
{
    pthread_mutexattr_t a;
    REQUIRE(pthread_mutexattr_init(&a), 0);
    REQUIRE(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
    REQUIRE(pthread_mutexattr_settype(&a, type), 0);
    REQUIRE(pthread_mutex_init(m, &a), 0);
    REQUIRE(pthread_mutexattr_destroy(&a), 0);
}

static void test_robust(int type, const char *tname)
{
    ptest_phase = tname;
    pthread_mutex_t m;
    make_robust(&m, type);
    /* Ordinary use first. */
    EXPECT(pthread_mutex_lock(&m), 0);
    EXPECT(ptest_on_other_thread(trylock_rc, &m), EBUSY);
    EXPECT(pthread_mutex_unlock(&m), 0);

    /* The owner dies: the next locker learns it and makes it consistent. */
    EXPECT(ptest_on_other_thread(lock_and_exit, &m), 0);
    EXPECT(pthread_mutex_lock(&m), EOWNERDEAD);
    EXPECT(pthread_mutex_consistent(&m), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);
    EXPECT(pthread_mutex_lock(&m), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);

    /* Again, with trylock as the first to notice. */
    EXPECT(ptest_on_other_thread(lock_and_exit, &m), 0);
    EXPECT(pthread_mutex_trylock(&m), EOWNERDEAD);
    EXPECT(pthread_mutex_consistent(&m), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);

    /* Not made consistent: unrecoverable from then on. */
    EXPECT(ptest_on_other_thread(lock_and_exit, &m), 0);
    struct timespec far = ptest_in(CLOCK_REALTIME, 10 * 1000000000LL);
    EXPECT(pthread_mutex_timedlock(&m, &far), EOWNERDEAD);
    EXPECT(pthread_mutex_unlock(&m), 0);
    EXPECT(pthread_mutex_lock(&m), ENOTRECOVERABLE);
    EXPECT(pthread_mutex_trylock(&m), ENOTRECOVERABLE);
    EXPECT(pthread_mutex_destroy(&m), 0);

    /* consistent on a mutex that is not inconsistent: EINVAL. */
    make_robust(&m, type);
    EXPECT(pthread_mutex_lock(&m), 0);
    EXPECT(pthread_mutex_consistent(&m), EINVAL);
    EXPECT(pthread_mutex_unlock(&m), 0);
    EXPECT(pthread_mutex_destroy(&m), 0);
}

static void test_pi(void)
{
    ptest_phase = "priority-inheritance mutex";
    pthread_mutexattr_t a;
    pthread_mutex_t m;
    REQUIRE(pthread_mutexattr_init(&a), 0);
    REQUIRE(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
    REQUIRE(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
    REQUIRE(pthread_mutex_init(&m, &a), 0);
    REQUIRE(pthread_mutexattr_destroy(&a), 0);
    EXPECT(pthread_mutex_lock(&m), 0);
    EXPECT(pthread_mutex_lock(&m), EDEADLK);
    EXPECT(ptest_on_other_thread(trylock_rc, &m), EBUSY);
    EXPECT(pthread_mutex_unlock(&m), 0);
    EXPECT(pthread_mutex_unlock(&m), EPERM);
    EXPECT(ptest_on_other_thread(trylock_rc, &m), 0);
    EXPECT(pthread_mutex_destroy(&m), 0);
}

/* --- process-shared objects across fork -------------------------------------------- */

#define PS_ITERS 100000
#define PS_PINGS 500

typedef struct shared_area {
    pthread_mutex_t m;
    pthread_mutex_t cm; /* for the condition variable */
    pthread_cond_t c;
    pthread_rwlock_t rw;
    pthread_spinlock_t s;
    long mcount, rwcount, scount; /* guarded by m, rw, s */
    int turn;                     /* guarded by cm: 0 parent's, 1 child's */
    int inside_rw;                /* writers inside (guarded by rw) */
    int rw_bad;                   /* guarded by rw */
    _Atomic int child_tried;      /* the child's trylock of m is done */
} shared_area_t;

/* What parent and child both do: count under each lock, then play
 * ping-pong with the condition variable.  Returns failed calls. */
static int ps_work(shared_area_t *a, int me)
{
    int bad = 0;
    for (int i = 0; i < PS_ITERS; i++) {
        bad += pthread_mutex_lock(&a->m) != 0;
        a->mcount++;
        bad += pthread_mutex_unlock(&a->m) != 0;
        if (i % 4 == 0) {
            bad += pthread_rwlock_wrlock(&a->rw) != 0;
            if (a->inside_rw++ != 0)
                a->rw_bad++;
            a->rwcount++;
            a->inside_rw--;
            bad += pthread_rwlock_unlock(&a->rw) != 0;
        } else if (i % 4 == 1) {
            bad += pthread_rwlock_rdlock(&a->rw) != 0;
            if (a->inside_rw != 0)
                a->rw_bad++; /* a read that saw a writer inside */
            bad += pthread_rwlock_unlock(&a->rw) != 0;
        }
        bad += pthread_spin_lock(&a->s) != 0;
        a->scount++;
        bad += pthread_spin_unlock(&a->s) != 0;
    }
    for (int i = 0; i < PS_PINGS; i++) {
        bad += pthread_mutex_lock(&a->cm) != 0;
        while (a->turn != me)
            bad += pthread_cond_wait(&a->c, &a->cm) != 0;
        a->turn = !me;
        bad += pthread_cond_broadcast(&a->c) != 0;
        bad += pthread_mutex_unlock(&a->cm) != 0;
    }
    return bad;
}

static void test_pshared(void)
{
    ptest_phase = "process-shared objects across fork";
    shared_area_t *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        ptest_fatal(__LINE__, "mmap failed");
    pthread_mutexattr_t ma;
    REQUIRE(pthread_mutexattr_init(&ma), 0);
    REQUIRE(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), 0);
    REQUIRE(pthread_mutex_init(&a->m, &ma), 0);
    REQUIRE(pthread_mutex_init(&a->cm, &ma), 0);
    REQUIRE(pthread_mutexattr_destroy(&ma), 0);
    pthread_condattr_t ca;
    REQUIRE(pthread_condattr_init(&ca), 0);
    REQUIRE(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
    REQUIRE(pthread_cond_init(&a->c, &ca), 0);
    REQUIRE(pthread_condattr_destroy(&ca), 0);
    pthread_rwlockattr_t ra;
    REQUIRE(pthread_rwlockattr_init(&ra), 0);
    REQUIRE(pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED), 0);
    REQUIRE(pthread_rwlock_init(&a->rw, &ra), 0);
    REQUIRE(pthread_rwlockattr_destroy(&ra), 0);
    REQUIRE(pthread_spin_init(&a->s, PTHREAD_PROCESS_SHARED), 0);

    /* Held by the parent at fork: the child's first attempts must wait. */
    EXPECT(pthread_mutex_lock(&a->m), 0);
    pid_t pid = fork();
    if (pid < 0)
        ptest_fatal(__LINE__, "fork failed");
    if (pid == 0) {
        ptest_watchdog(30);
        int rc = pthread_mutex_trylock(&a->m);
        int bad = rc != EBUSY;
        if (rc == 0)
            pthread_mutex_unlock(&a->m);
        /* Release: pairs with the parent's acquire load below. */
        baton_store(&a->child_tried, 1, memory_order_release);
        bad += ps_work(a, 1);
        _exit(bad ? 3 : 0);
    }
    /* Acquire: pairs with the child's release store. */
    while (!baton_load(&a->child_tried, memory_order_acquire))
        sched_yield();
    EXPECT(pthread_mutex_unlock(&a->m), 0);
    int bad = ps_work(a, 0);
    int st;
    if (waitpid(pid, &st, 0) != pid)
        ptest_fatal(__LINE__, "waitpid failed");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (status %#x: %s)", st,
          WIFEXITED(st) ? (WEXITSTATUS(st) == 3 ? "failed lock calls or trylock did not see the parent's lock"
                                                : "its own check failed")
                        : "killed by a signal");
    CHECK(bad == 0, "%d lock call(s) failed in the parent", bad);
    CHECK(a->mcount == 2L * PS_ITERS, "mutex counter %ld, expected %ld", a->mcount, 2L * PS_ITERS);
    CHECK(a->rwcount == 2L * PS_ITERS / 4, "rwlock counter %ld, expected %ld", a->rwcount, 2L * PS_ITERS / 4);
    CHECK(a->rw_bad == 0, "%d rwlock exclusion violation(s)", a->rw_bad);
    CHECK(a->scount == 2L * PS_ITERS, "spinlock counter %ld, expected %ld", a->scount, 2L * PS_ITERS);
    EXPECT(pthread_mutex_destroy(&a->m), 0);
    EXPECT(pthread_mutex_destroy(&a->cm), 0);
    EXPECT(pthread_cond_destroy(&a->c), 0);
    EXPECT(pthread_rwlock_destroy(&a->rw), 0);
    EXPECT(pthread_spin_destroy(&a->s), 0);
    munmap(a, sizeof *a);
}

int main(void)
{
    ptest_begin("robust", 60);
    test_robust(PTHREAD_MUTEX_NORMAL, "robust NORMAL mutex");
    test_robust(PTHREAD_MUTEX_ERRORCHECK, "robust ERRORCHECK mutex");
    test_robust(PTHREAD_MUTEX_RECURSIVE, "robust RECURSIVE mutex");
    test_pi();
    test_pshared();
    return ptest_end("robust, priority-inheritance and process-shared objects");
}
