/* symver.c - calls made through specific old and new symbol versions behave
 * like one implementation, baton's under the interposer.
 *
 * References bound at link time with .symver, as in programs built against
 * older or newer glibc: pthread_mutex_lock/trylock/unlock@GLIBC_2.2.5 with
 * trylock@GLIBC_2.34, pthread_cond_*@GLIBC_2.2.5 (glibc's pre-2.3.2
 * condition variable ABI) and @GLIBC_2.3.2, pthread_rwlock_*@GLIBC_2.2.5 and
 * @GLIBC_2.34, pthread_spin_*, the GLIBC_2.30 clock calls, and (with GNU
 * OpenMP) omp_*_lock@OMP_1.0 and @OMP_3.0.
 *
 * Everywhere (also in the control): each version family works on its own,
 * and trylock through one version sees a lock taken through the other (in
 * glibc they are aliases); a counter under old lock + new trylock stays
 * exact.  Under the interposer only: a mutex or rwlock used through the old
 * versions creates a baton lock state (baton_preload_info's live count
 * grows; glibc's own code would not), and the condition variable and OpenMP
 * families may be mixed (glibc's old and new ABIs may not), which shows both
 * versions reach one implementation.
 */
#include "ptest.h"

#define SV(ret, alias, args, sym)                                                                            \
    extern ret alias args;                                                                                   \
    __asm__(".symver " #alias ", " sym)

SV(int, mutex_init_225, (pthread_mutex_t *, const pthread_mutexattr_t *), "pthread_mutex_init@GLIBC_2.2.5");
SV(int, mutex_destroy_225, (pthread_mutex_t *), "pthread_mutex_destroy@GLIBC_2.2.5");
SV(int, mutex_lock_225, (pthread_mutex_t *), "pthread_mutex_lock@GLIBC_2.2.5");
SV(int, mutex_trylock_225, (pthread_mutex_t *), "pthread_mutex_trylock@GLIBC_2.2.5");
SV(int, mutex_trylock_234, (pthread_mutex_t *), "pthread_mutex_trylock@GLIBC_2.34");
SV(int, mutex_unlock_225, (pthread_mutex_t *), "pthread_mutex_unlock@GLIBC_2.2.5");
SV(int, mutex_timedlock_225, (pthread_mutex_t *, const struct timespec *),
   "pthread_mutex_timedlock@GLIBC_2.2.5");
SV(int, mutex_timedlock_234, (pthread_mutex_t *, const struct timespec *),
   "pthread_mutex_timedlock@GLIBC_2.34");
SV(int, mutex_clocklock_230, (pthread_mutex_t *, clockid_t, const struct timespec *),
   "pthread_mutex_clocklock@GLIBC_2.30");
SV(int, mutex_consistent_212, (pthread_mutex_t *), "pthread_mutex_consistent@GLIBC_2.12");
SV(int, mutex_consistent_np_24, (pthread_mutex_t *), "pthread_mutex_consistent_np@GLIBC_2.4");

SV(int, cond_init_225, (pthread_cond_t *, const pthread_condattr_t *), "pthread_cond_init@GLIBC_2.2.5");
SV(int, cond_destroy_225, (pthread_cond_t *), "pthread_cond_destroy@GLIBC_2.2.5");
SV(int, cond_wait_225, (pthread_cond_t *, pthread_mutex_t *), "pthread_cond_wait@GLIBC_2.2.5");
SV(int, cond_timedwait_225, (pthread_cond_t *, pthread_mutex_t *, const struct timespec *),
   "pthread_cond_timedwait@GLIBC_2.2.5");
SV(int, cond_signal_225, (pthread_cond_t *), "pthread_cond_signal@GLIBC_2.2.5");
SV(int, cond_broadcast_225, (pthread_cond_t *), "pthread_cond_broadcast@GLIBC_2.2.5");
SV(int, cond_init_232, (pthread_cond_t *, const pthread_condattr_t *), "pthread_cond_init@GLIBC_2.3.2");
SV(int, cond_destroy_232, (pthread_cond_t *), "pthread_cond_destroy@GLIBC_2.3.2");
SV(int, cond_wait_232, (pthread_cond_t *, pthread_mutex_t *), "pthread_cond_wait@GLIBC_2.3.2");
SV(int, cond_timedwait_232, (pthread_cond_t *, pthread_mutex_t *, const struct timespec *),
   "pthread_cond_timedwait@GLIBC_2.3.2");
SV(int, cond_signal_232, (pthread_cond_t *), "pthread_cond_signal@GLIBC_2.3.2");
SV(int, cond_broadcast_232, (pthread_cond_t *), "pthread_cond_broadcast@GLIBC_2.3.2");
SV(int, cond_clockwait_230, (pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *),
   "pthread_cond_clockwait@GLIBC_2.30");

SV(int, rw_init_225, (pthread_rwlock_t *, const pthread_rwlockattr_t *), "pthread_rwlock_init@GLIBC_2.2.5");
SV(int, rw_destroy_225, (pthread_rwlock_t *), "pthread_rwlock_destroy@GLIBC_2.2.5");
SV(int, rw_rdlock_225, (pthread_rwlock_t *), "pthread_rwlock_rdlock@GLIBC_2.2.5");
SV(int, rw_wrlock_225, (pthread_rwlock_t *), "pthread_rwlock_wrlock@GLIBC_2.2.5");
SV(int, rw_tryrdlock_225, (pthread_rwlock_t *), "pthread_rwlock_tryrdlock@GLIBC_2.2.5");
SV(int, rw_trywrlock_225, (pthread_rwlock_t *), "pthread_rwlock_trywrlock@GLIBC_2.2.5");
SV(int, rw_unlock_225, (pthread_rwlock_t *), "pthread_rwlock_unlock@GLIBC_2.2.5");
SV(int, rw_tryrdlock_234, (pthread_rwlock_t *), "pthread_rwlock_tryrdlock@GLIBC_2.34");
SV(int, rw_trywrlock_234, (pthread_rwlock_t *), "pthread_rwlock_trywrlock@GLIBC_2.34");
SV(int, rw_wrlock_234, (pthread_rwlock_t *), "pthread_rwlock_wrlock@GLIBC_2.34");
SV(int, rw_unlock_234, (pthread_rwlock_t *), "pthread_rwlock_unlock@GLIBC_2.34");
SV(int, rw_clockwrlock_230, (pthread_rwlock_t *, clockid_t, const struct timespec *),
   "pthread_rwlock_clockwrlock@GLIBC_2.30");

SV(int, spin_init_225, (pthread_spinlock_t *, int), "pthread_spin_init@GLIBC_2.2.5");
SV(int, spin_lock_225, (pthread_spinlock_t *), "pthread_spin_lock@GLIBC_2.2.5");
SV(int, spin_trylock_225, (pthread_spinlock_t *), "pthread_spin_trylock@GLIBC_2.2.5");
SV(int, spin_unlock_225, (pthread_spinlock_t *), "pthread_spin_unlock@GLIBC_2.2.5");
SV(int, spin_trylock_234, (pthread_spinlock_t *), "pthread_spin_trylock@GLIBC_2.34");
SV(int, spin_destroy_234, (pthread_spinlock_t *), "pthread_spin_destroy@GLIBC_2.34");

#ifdef PTEST_HAVE_GOMP
/* OMP_1.0 is libgomp's old lock ABI (a pthread mutex sized lock): give it room. */
typedef union omp_any_lock {
    char bytes[64];
    void *align;
} omp_any_lock_t;
SV(void, omp_init_10, (omp_any_lock_t *), "omp_init_lock@OMP_1.0");
SV(void, omp_set_10, (omp_any_lock_t *), "omp_set_lock@OMP_1.0");
SV(int, omp_test_10, (omp_any_lock_t *), "omp_test_lock@OMP_1.0");
SV(void, omp_unset_10, (omp_any_lock_t *), "omp_unset_lock@OMP_1.0");
SV(void, omp_destroy_10, (omp_any_lock_t *), "omp_destroy_lock@OMP_1.0");
SV(void, omp_init_30, (omp_any_lock_t *), "omp_init_lock@OMP_3.0");
SV(void, omp_set_30, (omp_any_lock_t *), "omp_set_lock@OMP_3.0");
SV(int, omp_test_30, (omp_any_lock_t *), "omp_test_lock@OMP_3.0");
SV(void, omp_unset_30, (omp_any_lock_t *), "omp_unset_lock@OMP_3.0");
SV(void, omp_destroy_30, (omp_any_lock_t *), "omp_destroy_lock@OMP_3.0");
SV(void, omp_init_nest_10, (omp_any_lock_t *), "omp_init_nest_lock@OMP_1.0");
SV(void, omp_set_nest_10, (omp_any_lock_t *), "omp_set_nest_lock@OMP_1.0");
SV(int, omp_test_nest_10, (omp_any_lock_t *), "omp_test_nest_lock@OMP_1.0");
SV(void, omp_unset_nest_10, (omp_any_lock_t *), "omp_unset_nest_lock@OMP_1.0");
SV(void, omp_destroy_nest_10, (omp_any_lock_t *), "omp_destroy_nest_lock@OMP_1.0");
SV(int, omp_test_nest_30, (omp_any_lock_t *), "omp_test_nest_lock@OMP_3.0");
#endif

static ptest_info_fn info;
/* The interposer is present and the class is not in stock mode. */
static int baton_mutex, baton_rwlock, baton_spin;

static int class_is_baton(int which)
{
    baton_preload_info_t in;
    return info != NULL && info(which, &in) == 0 && !in.stock;
}

static uint64_t live(int which)
{
    baton_preload_info_t in;
    if (info == NULL || info(which, &in) != 0)
        return 0;
    return in.live;
}

/* --- other-thread helpers ------------------------------------------------------------- */

typedef struct call {
    int (*fn)(void *);
    void *arg;
} call_t;

static void *run_call(void *arg)
{
    call_t *c = arg;
    return (void *)(intptr_t)c->fn(c->arg);
}

static int on_other(int (*fn)(void *), void *arg)
{
    call_t c = {fn, arg};
    return ptest_on_other_thread(run_call, &c);
}

static int try234_release(void *m)
{
    int rc = mutex_trylock_234(m);
    if (rc == 0)
        mutex_unlock_225(m);
    return rc;
}

static int try225_release(void *m)
{
    int rc = mutex_trylock_225(m);
    if (rc == 0)
        mutex_unlock_225(m);
    return rc;
}

static int rw_tryrd234_release(void *l)
{
    int rc = rw_tryrdlock_234(l);
    if (rc == 0)
        rw_unlock_234(l);
    return rc;
}

static int rw_trywr234_release(void *l)
{
    int rc = rw_trywrlock_234(l);
    if (rc == 0)
        rw_unlock_234(l);
    return rc;
}

static int spin_try234_release(void *s)
{
    int rc = spin_trylock_234(s);
    if (rc == 0)
        spin_unlock_225(s);
    return rc;
}

/* --- mutex ------------------------------------------------------------------------------ */

#define CNT_THREADS 4
#define CNT_ITERS 20000

typedef struct counter {
    pthread_mutex_t m;
    long n; /* guarded by m */
    _Atomic int inside, overlaps;
} counter_t;

static void *count_worker(void *arg)
{
    counter_t *c = arg;
    for (int i = 0; i < CNT_ITERS; i++) {
        /* Old lock, new trylock, old trylock: one lock whichever the version. */
        int rc = i % 3 == 0   ? mutex_lock_225(&c->m)
                 : i % 3 == 1 ? mutex_trylock_234(&c->m)
                              : mutex_trylock_225(&c->m);
        if (rc == EBUSY)
            rc = mutex_lock_225(&c->m);
        if (rc != 0)
            ptest_fatal(__LINE__, "lock through an old or new version returned %s", ptest_errname(rc));
        /* Relaxed: detection only; the lock orders the sections. */
        if (baton_fetch_add(&c->inside, 1, memory_order_relaxed) != 0)
            baton_fetch_add(&c->overlaps, 1, memory_order_relaxed);
        c->n++;
        baton_fetch_sub(&c->inside, 1, memory_order_relaxed); /* as above */
        mutex_unlock_225(&c->m);
    }
    return NULL;
}

static void test_mutex(void)
{
    ptest_phase = "mutex through GLIBC_2.2.5 and GLIBC_2.34";
    uint64_t live0 = live(BATON_PRELOAD_MUTEX);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    EXPECT(mutex_lock_225(&m), 0);
    if (baton_mutex)
        CHECK(live(BATON_PRELOAD_MUTEX) > live0,
              "a mutex locked through pthread_mutex_lock@GLIBC_2.2.5 created no baton lock state (live %llu)",
              (unsigned long long)live(BATON_PRELOAD_MUTEX));
    EXPECT(on_other(try234_release, &m), EBUSY);
    EXPECT(on_other(try225_release, &m), EBUSY);
    EXPECT(mutex_trylock_234(&m), EBUSY);
    EXPECT(mutex_unlock_225(&m), 0);
    EXPECT(mutex_trylock_234(&m), 0);
    EXPECT(on_other(try225_release, &m), EBUSY);
    EXPECT(mutex_unlock_225(&m), 0);
    struct timespec past = ptest_in(CLOCK_REALTIME, -1000000000LL);
    EXPECT(mutex_timedlock_225(&m, &past), 0);
    EXPECT(on_other(try234_release, &m), EBUSY);
    EXPECT(mutex_unlock_225(&m), 0);
    struct timespec mpast = ptest_in(CLOCK_MONOTONIC, -1000000000LL);
    EXPECT(mutex_clocklock_230(&m, CLOCK_MONOTONIC, &mpast), 0);
    EXPECT(on_other(try234_release, &m), EBUSY);
    EXPECT(mutex_unlock_225(&m), 0);
    EXPECT(mutex_destroy_225(&m), 0);

    pthread_mutexattr_t a;
    REQUIRE(pthread_mutexattr_init(&a), 0);
    REQUIRE(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
    EXPECT(mutex_init_225(&m, &a), 0);
    REQUIRE(pthread_mutexattr_destroy(&a), 0);
    EXPECT(mutex_lock_225(&m), 0);
    EXPECT(mutex_lock_225(&m), EDEADLK);
    EXPECT(mutex_timedlock_234(&m, &past), EDEADLK);
    EXPECT(mutex_unlock_225(&m), 0);
    EXPECT(mutex_unlock_225(&m), EPERM);
    EXPECT(mutex_destroy_225(&m), 0);

    counter_t c = {0};
    EXPECT(mutex_init_225(&c.m, NULL), 0);
    pthread_t t[CNT_THREADS];
    for (int i = 0; i < CNT_THREADS; i++)
        t[i] = ptest_spawn(count_worker, &c);
    for (int i = 0; i < CNT_THREADS; i++)
        ptest_join(t[i]);
    /* Relaxed: after the joins. */
    int ov = baton_load(&c.overlaps, memory_order_relaxed);
    CHECK(
        ov == 0 && c.n == (long)CNT_THREADS * CNT_ITERS,
        "old lock + new trylock: counter %ld (expected %ld), %d overlap(s): mutual exclusion broken across versions",
        c.n, (long)CNT_THREADS * CNT_ITERS, ov);
    EXPECT(mutex_destroy_225(&c.m), 0);
}

static void *lock_and_exit(void *m) { return (void *)(intptr_t)mutex_lock_225(m); }

static void test_robust_versions(void)
{
    ptest_phase = "robust mutex through consistent@GLIBC_2.12 and consistent_np@GLIBC_2.4";
    pthread_mutexattr_t a;
    pthread_mutex_t m;
    REQUIRE(pthread_mutexattr_init(&a), 0);
    REQUIRE(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
    EXPECT(mutex_init_225(&m, &a), 0);
    REQUIRE(pthread_mutexattr_destroy(&a), 0);
    for (int k = 0; k < 2; k++) {
        EXPECT((int)(intptr_t)ptest_join(ptest_spawn(lock_and_exit, &m)), 0);
        EXPECT(mutex_lock_225(&m), EOWNERDEAD);
        EXPECT(k ? mutex_consistent_np_24(&m) : mutex_consistent_212(&m), 0);
        EXPECT(mutex_unlock_225(&m), 0);
        EXPECT(mutex_lock_225(&m), 0);
        EXPECT(mutex_unlock_225(&m), 0);
    }
    EXPECT(mutex_destroy_225(&m), 0);
}

/* --- condition variables ------------------------------------------------------------- */

typedef struct cv {
    pthread_mutex_t m;
    pthread_cond_t c;
    int family; /* 0: all GLIBC_2.2.5; 1: all GLIBC_2.3.2; 2: mixed (interposer only) */
    int turn;   /* guarded by m */
    int rounds;
} cv_t;

static int cv_wait(cv_t *v, int who)
{
    struct timespec far = ptest_in(CLOCK_REALTIME, 10 * 1000000000LL);
    switch (v->family) {
    case 0: return who ? cond_timedwait_225(&v->c, &v->m, &far) : cond_wait_225(&v->c, &v->m);
    case 1: return who ? cond_timedwait_232(&v->c, &v->m, &far) : cond_wait_232(&v->c, &v->m);
    default: return who ? cond_timedwait_225(&v->c, &v->m, &far) : cond_wait_232(&v->c, &v->m);
    }
}

static int cv_wake(cv_t *v, int who, int i)
{
    switch (v->family) {
    case 0: return i & 1 ? cond_broadcast_225(&v->c) : cond_signal_225(&v->c);
    case 1: return i & 1 ? cond_broadcast_232(&v->c) : cond_signal_232(&v->c);
    default:
        return who ? (i & 1 ? cond_broadcast_232(&v->c) : cond_signal_232(&v->c))
                   : (i & 1 ? cond_broadcast_225(&v->c) : cond_signal_225(&v->c));
    }
}

static int cv_play(cv_t *v, int who)
{
    int bad = 0;
    for (int i = 0; i < v->rounds; i++) {
        bad += mutex_lock_225(&v->m) != 0;
        while (v->turn != who) {
            int rc = cv_wait(v, who);
            if (rc == ETIMEDOUT)
                ptest_fatal(__LINE__, "condition family %d: a wait was never woken (10 s)", v->family);
            bad += rc != 0;
        }
        v->turn = !who;
        bad += cv_wake(v, who, i) != 0;
        bad += mutex_unlock_225(&v->m) != 0;
    }
    return bad;
}

static void *cv_other(void *arg) { return (void *)(intptr_t)cv_play(arg, 1); }

static void test_cond(int family)
{
    ptest_phase = family == 0   ? "condition variable through GLIBC_2.2.5"
                  : family == 1 ? "condition variable through GLIBC_2.3.2"
                                : "condition variable, GLIBC_2.2.5 and GLIBC_2.3.2 mixed";
    cv_t v = {.family = family, .rounds = 300};
    EXPECT(mutex_init_225(&v.m, NULL), 0);
    if (family == 0)
        EXPECT(cond_init_225(&v.c, NULL), 0);
    else if (family == 1)
        EXPECT(cond_init_232(&v.c, NULL), 0);
    else
        memcpy(&v.c, &(pthread_cond_t)PTHREAD_COND_INITIALIZER, sizeof v.c);
    pthread_t t = ptest_spawn(cv_other, &v);
    int bad = cv_play(&v, 0);
    bad += (int)(intptr_t)ptest_join(t);
    CHECK(bad == 0, "%d failed call(s)", bad);
    EXPECT(mutex_lock_225(&v.m), 0);
    struct timespec past = ptest_in(CLOCK_REALTIME, -1000000000LL);
    EXPECT(family == 0 ? cond_timedwait_225(&v.c, &v.m, &past) : cond_timedwait_232(&v.c, &v.m, &past),
           ETIMEDOUT);
    if (family != 0) {
        struct timespec mpast = ptest_in(CLOCK_MONOTONIC, -1000000000LL);
        EXPECT(cond_clockwait_230(&v.c, &v.m, CLOCK_MONOTONIC, &mpast), ETIMEDOUT);
    }
    EXPECT(mutex_unlock_225(&v.m), 0);
    EXPECT(family == 0 ? cond_destroy_225(&v.c) : cond_destroy_232(&v.c), 0);
    EXPECT(mutex_destroy_225(&v.m), 0);
}

/* --- rwlock and spinlock ---------------------------------------------------------------- */

static void test_rwlock(void)
{
    ptest_phase = "rwlock through GLIBC_2.2.5 and GLIBC_2.34";
    uint64_t live0 = live(BATON_PRELOAD_RWLOCK);
    pthread_rwlock_t l;
    EXPECT(rw_init_225(&l, NULL), 0);
    EXPECT(rw_wrlock_225(&l), 0);
    if (baton_rwlock)
        CHECK(live(BATON_PRELOAD_RWLOCK) > live0,
              "an rwlock used through pthread_rwlock_*@GLIBC_2.2.5 created no baton lock state");
    EXPECT(on_other(rw_tryrd234_release, &l), EBUSY);
    EXPECT(on_other(rw_trywr234_release, &l), EBUSY);
    EXPECT(rw_wrlock_234(&l), EDEADLK);
    EXPECT(rw_unlock_225(&l), 0);
    EXPECT(rw_rdlock_225(&l), 0);
    EXPECT(on_other(rw_tryrd234_release, &l), 0);
    EXPECT(on_other(rw_trywr234_release, &l), EBUSY);
    EXPECT(rw_tryrdlock_225(&l), 0);
    EXPECT(rw_unlock_234(&l), 0);
    EXPECT(rw_unlock_225(&l), 0);
    EXPECT(rw_trywrlock_225(&l), 0);
    EXPECT(on_other(rw_tryrd234_release, &l), EBUSY);
    EXPECT(rw_unlock_234(&l), 0);
    struct timespec mpast = ptest_in(CLOCK_MONOTONIC, -1000000000LL);
    EXPECT(rw_clockwrlock_230(&l, CLOCK_MONOTONIC, &mpast), 0);
    EXPECT(on_other(rw_tryrd234_release, &l), EBUSY);
    EXPECT(rw_unlock_225(&l), 0);
    EXPECT(rw_destroy_225(&l), 0);
}

static void test_spin(void)
{
    ptest_phase = "spinlock through GLIBC_2.2.5 and GLIBC_2.34";
    uint64_t live0 = live(BATON_PRELOAD_SPIN);
    pthread_spinlock_t s;
    EXPECT(spin_init_225(&s, PTHREAD_PROCESS_PRIVATE), 0);
    EXPECT(spin_lock_225(&s), 0);
    if (baton_spin)
        CHECK(live(BATON_PRELOAD_SPIN) > live0,
              "a spinlock used through pthread_spin_*@GLIBC_2.2.5 created no baton lock state");
    EXPECT(on_other(spin_try234_release, (void *)&s), EBUSY);
    EXPECT(spin_trylock_234(&s), EBUSY);
    EXPECT(spin_unlock_225(&s), 0);
    EXPECT(spin_trylock_225(&s), 0);
    EXPECT(on_other(spin_try234_release, (void *)&s), EBUSY);
    EXPECT(spin_unlock_225(&s), 0);
    EXPECT(on_other(spin_try234_release, (void *)&s), 0);
    EXPECT(spin_destroy_234(&s), 0);
}

/* --- OpenMP --------------------------------------------------------------------------- */

#ifdef PTEST_HAVE_GOMP
static int omp_test30_release(void *l)
{
    int got = omp_test_30(l);
    if (got)
        omp_unset_30(l);
    return got;
}

static int omp_test10_release(void *l)
{
    int got = omp_test_10(l);
    if (got)
        omp_unset_10(l);
    return got;
}

static int omp_test_nest10_other(void *l)
{
    int got = omp_test_nest_10(l);
    if (got)
        omp_unset_nest_10(l);
    return got;
}

static void test_omp(void)
{
    ptest_phase = "OpenMP locks through OMP_1.0 and OMP_3.0";
    omp_any_lock_t l;
    memset(&l, 0, sizeof l);
    omp_init_10(&l);
    omp_set_10(&l);
    CHECK(on_other(omp_test10_release, &l) == 0,
          "omp_test_lock@OMP_1.0 on a lock held through OMP_1.0 succeeded");
    omp_unset_10(&l);
    CHECK(on_other(omp_test10_release, &l) == 1, "omp_test_lock@OMP_1.0 on a free lock failed");
    omp_destroy_10(&l);

    omp_init_30(&l);
    omp_set_30(&l);
    CHECK(on_other(omp_test30_release, &l) == 0,
          "omp_test_lock@OMP_3.0 on a lock held through OMP_3.0 succeeded");
    omp_unset_30(&l);
    omp_destroy_30(&l);

    omp_init_nest_10(&l);
    omp_set_nest_10(&l);
    omp_set_nest_10(&l);
    CHECK(omp_test_nest_10(&l) == 3, "omp_test_nest_lock@OMP_1.0 by the owner did not return 3");
    CHECK(on_other(omp_test_nest10_other, &l) == 0, "omp_test_nest_lock@OMP_1.0 by another thread succeeded");
    for (int i = 0; i < 3; i++)
        omp_unset_nest_10(&l);
    CHECK(on_other(omp_test_nest10_other, &l) == 1, "omp_test_nest_lock@OMP_1.0 on a free nest lock failed");
    omp_destroy_nest_10(&l);

    if (info != NULL) {
        /* One implementation behind both versions: mixing them works. */
        omp_init_30(&l);
        omp_set_10(&l);
        CHECK(on_other(omp_test30_release, &l) == 0,
              "omp_test_lock@OMP_3.0 did not see a lock set through omp_set_lock@OMP_1.0");
        omp_unset_30(&l);
        CHECK(on_other(omp_test10_release, &l) == 1, "mixed OMP versions: the lock stayed held");
        omp_destroy_10(&l);
        omp_init_nest_10(&l);
        omp_set_nest_10(&l);
        CHECK(omp_test_nest_30(&l) == 2,
              "omp_test_nest_lock@OMP_3.0 after a set through OMP_1.0 did not return 2");
        omp_unset_nest_10(&l);
        omp_unset_nest_10(&l);
        omp_destroy_nest_10(&l);
    }
}
#endif

int main(void)
{
    ptest_begin("symver", 60);
    info = ptest_interposer();
    baton_mutex = class_is_baton(BATON_PRELOAD_MUTEX);
    baton_rwlock = class_is_baton(BATON_PRELOAD_RWLOCK);
    baton_spin = class_is_baton(BATON_PRELOAD_SPIN);
    test_mutex();
    test_robust_versions();
    test_cond(0);
    test_cond(1);
    if (info != NULL)
        test_cond(2);
    test_rwlock();
    test_spin();
#ifdef PTEST_HAVE_GOMP
    test_omp();
#endif
    return ptest_end("old and new symbol versions%s", baton_mutex ? " reach baton" : "");
}
