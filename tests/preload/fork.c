/* fork.c - fork while other threads hold locks and create and destroy
 * locks of every kind.  The child (whose only thread is the forking one) must
 * be able to use every object nobody held at the fork: mutexes of every
 * type, including a statically initialized one first used in the child,
 * condition variables, rwlocks and spinlocks, old and new ones, also from
 * threads it creates; the parent goes on.  Forks come from the main thread
 * and from a second thread.
 */
#include "ptest.h"

#include <sys/wait.h>

#define FORKS 12

/* Held by the holder thread across every fork. */
static pthread_mutex_t m_held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m_rec_held = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_rwlock_t rw_wheld = PTHREAD_RWLOCK_INITIALIZER, rw_rheld = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t s_held;

/* Free at every fork. */
static pthread_mutex_t m_normal, m_errorcheck, m_recursive;
static pthread_mutex_t m_static = PTHREAD_MUTEX_INITIALIZER; /* used by the parent */
static pthread_mutex_t m_static_fresh[FORKS];                /* first used in a child */
static pthread_mutex_t m_rec_static = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_rwlock_t rw_free = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t s_free;
static pthread_cond_t c_used = PTHREAD_COND_INITIALIZER;
static pthread_cond_t c_fresh[FORKS];

static ptest_flag_t holder_ready, release_holder, stop_churn, churn_on;
static _Atomic int churn_errors;
static _Atomic unsigned churn_rounds;

static void *holder(void *arg)
{
    (void)arg;
    int bad = pthread_mutex_lock(&m_held) != 0;
    bad += pthread_mutex_lock(&m_rec_held) != 0;
    bad += pthread_mutex_lock(&m_rec_held) != 0;
    bad += pthread_rwlock_wrlock(&rw_wheld) != 0;
    bad += pthread_rwlock_rdlock(&rw_rheld) != 0;
    bad += pthread_spin_lock(&s_held) != 0;
    ptest_raise(&holder_ready, 1);
    ptest_await(&release_holder, 1);
    bad += pthread_spin_unlock(&s_held) != 0;
    bad += pthread_rwlock_unlock(&rw_rheld) != 0;
    bad += pthread_rwlock_unlock(&rw_wheld) != 0;
    bad += pthread_mutex_unlock(&m_rec_held) != 0;
    bad += pthread_mutex_unlock(&m_rec_held) != 0;
    bad += pthread_mutex_unlock(&m_held) != 0;
    return (void *)(intptr_t)bad;
}

/* Creates, uses and destroys objects of every kind until told to stop, so
 * that forks catch the interposer's tables in use.  It churns only around
 * the forks (churn_on): while a child runs, the parent's churn would take
 * the CPUs the child's threads need.  With a lock server kind on 2 CPUs
 * that cost the child about a millisecond per lock operation (the parent's
 * busy server and the child's share one pinned CPU), 20 s and more for
 * the child's contention phase. */
static void *churn(void *arg)
{
    (void)arg;
    pthread_mutex_t own;
    pthread_mutex_init(&own, NULL);
    /* Acquire: pairs with the release in ptest_raise(). */
    while (!baton_load(&stop_churn.v, memory_order_acquire)) {
        /* Acquire: pairs with the release in ptest_raise(). */
        if (!baton_load(&churn_on.v, memory_order_acquire)) {
            ptest_sleep_ms(1);
            continue;
        }
        int bad = 0;
        pthread_mutex_t m;
        pthread_rwlock_t rw;
        pthread_spinlock_t s;
        pthread_cond_t c;
        bad += pthread_mutex_init(&m, NULL) != 0;
        bad += pthread_mutex_lock(&m) != 0;
        bad += pthread_mutex_lock(&own) != 0;
        bad += pthread_mutex_unlock(&own) != 0;
        bad += pthread_mutex_unlock(&m) != 0;
        bad += pthread_mutex_destroy(&m) != 0;
        bad += pthread_rwlock_init(&rw, NULL) != 0;
        bad += pthread_rwlock_rdlock(&rw) != 0;
        bad += pthread_rwlock_unlock(&rw) != 0;
        bad += pthread_rwlock_wrlock(&rw) != 0;
        bad += pthread_rwlock_unlock(&rw) != 0;
        bad += pthread_rwlock_destroy(&rw) != 0;
        bad += pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE) != 0;
        bad += pthread_spin_lock(&s) != 0;
        bad += pthread_spin_unlock(&s) != 0;
        bad += pthread_spin_destroy(&s) != 0;
        bad += pthread_cond_init(&c, NULL) != 0;
        bad += pthread_mutex_lock(&own) != 0;
        bad += pthread_cond_signal(&c) != 0;
        bad += pthread_mutex_unlock(&own) != 0;
        bad += pthread_cond_destroy(&c) != 0;
        if (bad)
            baton_fetch_add(&churn_errors, bad, memory_order_relaxed); /* a count only */
        baton_fetch_add(&churn_rounds, 1u, memory_order_relaxed);      /* a count only */
    }
    pthread_mutex_destroy(&own);
    return NULL;
}

/* --- what the child does ------------------------------------------------------------ */

typedef struct pingpong {
    pthread_mutex_t *m;
    pthread_cond_t *c;
    int turn; /* guarded by m */
    int rounds;
} pingpong_t;

static void *pong(void *arg)
{
    pingpong_t *p = arg;
    int bad = 0;
    for (int i = 0; i < p->rounds; i++) {
        bad += pthread_mutex_lock(p->m) != 0;
        while (p->turn != 1)
            bad += pthread_cond_wait(p->c, p->m) != 0;
        p->turn = 0;
        bad += pthread_cond_signal(p->c) != 0;
        bad += pthread_mutex_unlock(p->m) != 0;
    }
    return (void *)(intptr_t)bad;
}

static void ping(pingpong_t *p, const char *what)
{
    p->rounds = 50;
    p->turn = 0;
    pthread_t t = ptest_spawn(pong, p);
    for (int i = 0; i < p->rounds; i++) {
        EXPECT(pthread_mutex_lock(p->m), 0);
        p->turn = 1;
        EXPECT(pthread_cond_signal(p->c), 0);
        while (p->turn != 0)
            EXPECT(pthread_cond_wait(p->c, p->m), 0);
        EXPECT(pthread_mutex_unlock(p->m), 0);
    }
    int bad = (int)(intptr_t)ptest_join(t);
    CHECK(bad == 0, "child: %d failed call(s) in the %s ping-pong thread", bad, what);
}

typedef struct contend {
    pthread_mutex_t *m;
    pthread_rwlock_t *rw;
    pthread_spinlock_t *s;
    long nm, nrw, ns; /* guarded by m, rw (write) and s */
} contend_t;

static void *contender(void *arg)
{
    contend_t *c = arg;
    int bad = 0;
    for (int i = 0; i < 3000; i++) {
        bad += pthread_mutex_lock(c->m) != 0;
        c->nm++;
        bad += pthread_mutex_unlock(c->m) != 0;
        bad += pthread_rwlock_wrlock(c->rw) != 0;
        c->nrw++;
        bad += pthread_rwlock_unlock(c->rw) != 0;
        bad += pthread_spin_lock(c->s) != 0;
        c->ns++;
        bad += pthread_spin_unlock(c->s) != 0;
    }
    return (void *)(intptr_t)bad;
}

static void contend(pthread_mutex_t *m, pthread_rwlock_t *rw, pthread_spinlock_t *s, const char *what)
{
    contend_t c = {m, rw, s, 0, 0, 0};
    pthread_t a = ptest_spawn(contender, &c), b = ptest_spawn(contender, &c);
    int bad = (int)(intptr_t)ptest_join(a) + (int)(intptr_t)ptest_join(b);
    CHECK(bad == 0, "child: %s objects under contention: %d failed call(s)", what, bad);
    CHECK(c.nm == 2 * 3000, "child: %s mutex under contention: counter %ld of %d (exclusion broken)", what,
          c.nm, 2 * 3000);
    CHECK(c.nrw == 2 * 3000,
          "child: %s rwlock (write) under contention: counter %ld of %d (exclusion broken)", what, c.nrw,
          2 * 3000);
    CHECK(c.ns == 2 * 3000, "child: %s spinlock under contention: counter %ld of %d (exclusion broken)", what,
          c.ns, 2 * 3000);
}

static void child(int f)
{
    /* Relaxed: this process has one thread now; count only its own failures. */
    baton_store(&ptest_failures, 0, memory_order_relaxed);
    ptest_watchdog(20);
    ptest_phase = "child: mutexes free at the fork";
    EXPECT(pthread_mutex_lock(&m_normal), 0);
    EXPECT(pthread_mutex_trylock(&m_normal), EBUSY);
    EXPECT(pthread_mutex_unlock(&m_normal), 0);
    EXPECT(pthread_mutex_lock(&m_errorcheck), 0);
    EXPECT(pthread_mutex_lock(&m_errorcheck), EDEADLK);
    EXPECT(pthread_mutex_unlock(&m_errorcheck), 0);
    EXPECT(pthread_mutex_unlock(&m_errorcheck), EPERM);
    EXPECT(pthread_mutex_lock(&m_recursive), 0);
    EXPECT(pthread_mutex_lock(&m_recursive), 0);
    EXPECT(pthread_mutex_unlock(&m_recursive), 0);
    EXPECT(pthread_mutex_unlock(&m_recursive), 0);
    EXPECT(pthread_mutex_unlock(&m_recursive), EPERM);
    EXPECT(pthread_mutex_lock(&m_static), 0);
    EXPECT(pthread_mutex_unlock(&m_static), 0);
    EXPECT(pthread_mutex_lock(&m_static_fresh[f]), 0); /* first use ever */
    EXPECT(pthread_mutex_unlock(&m_static_fresh[f]), 0);
    EXPECT(pthread_mutex_trylock(&m_rec_static), 0);
    EXPECT(pthread_mutex_trylock(&m_rec_static), 0);
    EXPECT(pthread_mutex_unlock(&m_rec_static), 0);
    EXPECT(pthread_mutex_unlock(&m_rec_static), 0);
    struct timespec past = ptest_in(CLOCK_REALTIME, -1000000000LL);
    EXPECT(pthread_mutex_timedlock(&m_normal, &past), 0);
    EXPECT(pthread_mutex_unlock(&m_normal), 0);

    ptest_phase = "child: rwlock and spinlock free at the fork";
    EXPECT(pthread_rwlock_rdlock(&rw_free), 0);
    EXPECT(pthread_rwlock_tryrdlock(&rw_free), 0);
    EXPECT(pthread_rwlock_unlock(&rw_free), 0);
    EXPECT(pthread_rwlock_unlock(&rw_free), 0);
    EXPECT(pthread_rwlock_wrlock(&rw_free), 0);
    EXPECT(pthread_rwlock_wrlock(&rw_free), EDEADLK);
    EXPECT(pthread_rwlock_unlock(&rw_free), 0);
    EXPECT(pthread_spin_lock(&s_free), 0);
    EXPECT(pthread_spin_trylock(&s_free), EBUSY);
    EXPECT(pthread_spin_unlock(&s_free), 0);

    ptest_phase = "child: condition variables";
    EXPECT(pthread_mutex_lock(&m_normal), 0);
    EXPECT(pthread_cond_timedwait(&c_used, &m_normal, &past), ETIMEDOUT);
    EXPECT(pthread_cond_timedwait(&c_fresh[f], &m_normal, &past), ETIMEDOUT);
    EXPECT(pthread_mutex_unlock(&m_normal), 0);
    pingpong_t p1 = {&m_normal, &c_used, 0, 0};
    ping(&p1, "old condition variable");
    pingpong_t p2 = {&m_static_fresh[f], &c_fresh[f], 0, 0};
    ping(&p2, "static condition variable first used in the child");

    ptest_phase = "child: new objects";
    pthread_mutex_t nm;
    pthread_mutexattr_t a;
    EXPECT(pthread_mutexattr_init(&a), 0);
    EXPECT(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
    EXPECT(pthread_mutex_init(&nm, &a), 0);
    EXPECT(pthread_mutexattr_destroy(&a), 0);
    EXPECT(pthread_mutex_lock(&nm), 0);
    EXPECT(pthread_mutex_lock(&nm), EDEADLK);
    EXPECT(pthread_mutex_unlock(&nm), 0);
    pthread_cond_t nc;
    EXPECT(pthread_cond_init(&nc, NULL), 0);
    pingpong_t p3 = {&nm, &nc, 0, 0};
    ping(&p3, "new condition variable");
    pthread_rwlock_t nrw;
    EXPECT(pthread_rwlock_init(&nrw, NULL), 0);
    pthread_spinlock_t ns;
    EXPECT(pthread_spin_init(&ns, PTHREAD_PROCESS_PRIVATE), 0);

    ptest_phase = "child: contention from new threads";
    contend(&m_normal, &rw_free, &s_free, "old");
    contend(&nm, &nrw, &ns, "new");
    EXPECT(pthread_cond_destroy(&nc), 0);
    EXPECT(pthread_rwlock_destroy(&nrw), 0);
    EXPECT(pthread_spin_destroy(&ns), 0);
    EXPECT(pthread_mutex_destroy(&nm), 0);
    /* Relaxed: every thread of this process has been joined. */
    _exit(baton_load(&ptest_failures, memory_order_relaxed) ? 1 : 0);
}

static void do_fork(int f)
{
    /* Fork while the churn threads are at work: wait for a few of their
     * rounds after switching them on.  Relaxed: a progress count only. */
    ptest_raise(&churn_on, 1);
    const unsigned r0 = baton_load(&churn_rounds, memory_order_relaxed);
    while (baton_load(&churn_rounds, memory_order_relaxed) - r0 < 4u)
        ptest_sleep_ms(1);
    pid_t pid = fork();
    if (pid < 0)
        ptest_fatal(__LINE__, "fork failed");
    if (pid == 0)
        child(f);
    /* The parent goes on using the same objects meanwhile. */
    EXPECT(pthread_mutex_lock(&m_normal), 0);
    EXPECT(pthread_mutex_unlock(&m_normal), 0);
    EXPECT(pthread_rwlock_wrlock(&rw_free), 0);
    EXPECT(pthread_rwlock_unlock(&rw_free), 0);
    ptest_raise(&churn_on, 0);
    int st = 0;
    pid_t w = 0;
    for (int i = 0; i < 3000 && (w = waitpid(pid, &st, WNOHANG)) == 0; i++)
        ptest_sleep_ms(10);
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        ptest_fail(__LINE__, "fork %d: the child hung (killed after 30 s)", f);
        return;
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork %d (from the %s thread): the child failed (%s %d)", f,
          f & 1 ? "second" : "main", WIFEXITED(st) ? "exit status" : "signal",
          WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

static void *forker(void *arg)
{
    do_fork((int)(intptr_t)arg);
    return NULL;
}

int main(void)
{
    ptest_begin("fork", 120);
    pthread_mutexattr_t a;
    REQUIRE(pthread_mutexattr_init(&a), 0);
    REQUIRE(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
    REQUIRE(pthread_mutex_init(&m_errorcheck, &a), 0);
    REQUIRE(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE), 0);
    REQUIRE(pthread_mutex_init(&m_recursive, &a), 0);
    REQUIRE(pthread_mutexattr_destroy(&a), 0);
    REQUIRE(pthread_mutex_init(&m_normal, NULL), 0);
    REQUIRE(pthread_spin_init(&s_held, PTHREAD_PROCESS_PRIVATE), 0);
    REQUIRE(pthread_spin_init(&s_free, PTHREAD_PROCESS_PRIVATE), 0);
    static const pthread_mutex_t mi = PTHREAD_MUTEX_INITIALIZER;
    static const pthread_cond_t ci = PTHREAD_COND_INITIALIZER;
    for (int f = 0; f < FORKS; f++) {
        memcpy(&m_static_fresh[f], &mi, sizeof mi);
        memcpy(&c_fresh[f], &ci, sizeof ci);
    }
    /* Use the shared objects once before forking. */
    ptest_phase = "parent: setup";
    EXPECT(pthread_mutex_lock(&m_static), 0);
    EXPECT(pthread_mutex_unlock(&m_static), 0);
    EXPECT(pthread_mutex_lock(&m_normal), 0);
    struct timespec past = ptest_in(CLOCK_REALTIME, -1000000000LL);
    EXPECT(pthread_cond_timedwait(&c_used, &m_normal, &past), ETIMEDOUT);
    EXPECT(pthread_mutex_unlock(&m_normal), 0);
    EXPECT(pthread_rwlock_rdlock(&rw_free), 0);
    EXPECT(pthread_rwlock_unlock(&rw_free), 0);

    pthread_t h = ptest_spawn(holder, NULL);
    pthread_t c1 = ptest_spawn(churn, NULL), c2 = ptest_spawn(churn, NULL);
    ptest_await(&holder_ready, 1);
    ptest_phase = "parent: forking";
    for (int f = 0; f < FORKS; f++) {
        if (f & 1)
            ptest_join(ptest_spawn(forker, (void *)(intptr_t)f));
        else
            do_fork(f);
    }
    ptest_phase = "parent: after the forks";
    EXPECT(pthread_mutex_trylock(&m_held), EBUSY); /* still the holder's */
    ptest_raise(&release_holder, 1);
    int bad = (int)(intptr_t)ptest_join(h);
    CHECK(bad == 0, "the holder thread had %d failed call(s)", bad);
    ptest_raise(&stop_churn, 1);
    ptest_join(c1);
    ptest_join(c2);
    /* Relaxed: after the joins. */
    CHECK(baton_load(&churn_errors, memory_order_relaxed) == 0, "%d failed call(s) in the churn threads",
          baton_load(&churn_errors, memory_order_relaxed));
    EXPECT(pthread_mutex_lock(&m_held), 0);
    EXPECT(pthread_mutex_unlock(&m_held), 0);
    EXPECT(pthread_rwlock_wrlock(&rw_wheld), 0);
    EXPECT(pthread_rwlock_unlock(&rw_wheld), 0);
    EXPECT(pthread_spin_lock(&s_held), 0);
    EXPECT(pthread_spin_unlock(&s_held), 0);
    return ptest_end("%d forks (from two threads) while locks were held and churned", FORKS);
}
