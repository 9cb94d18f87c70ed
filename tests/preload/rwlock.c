/* rwlock.c - pthread_rwlock_* keeps readers-writer semantics and glibc's
 * error codes.
 *
 *   exclusion    readers and writers under stress (every acquisition call):
 *                a writer sees no one else inside, a reader sees no writer
 *                and a consistent pair of fields
 *   sharing      readers really share: another thread's tryrdlock succeeds
 *                while a read lock is held (not an exclusive lock in disguise)
 *   errors       tryrdlock/trywrlock EBUSY; wrlock or rdlock by the write
 *                owner EDEADLK
 *   several      read locks of several rwlocks, released in any order, and
 *                one held twice: what other threads see stays right
 *   recursion    a reader takes a second read lock while a writer waits:
 *                no deadlock (glibc's default rwlock prefers readers)
 *   timed        timed/clock variants: past and near deadlines ETIMEDOUT, bad
 *                tv_nsec or clock EINVAL (glibc checks them even when the
 *                lock is free), far deadlines succeed on release
 */
#include "ptest.h"

/* --- exclusion under stress ------------------------------------------------------------- */

#define RW_READERS 4
#define RW_WRITERS 2
#define RW_ITERS 4000

typedef struct rw {
    pthread_rwlock_t l;
    _Atomic int readers, writers;
    _Atomic int bad_reader, bad_writer, errors;
    _Atomic long a, b; /* written by writers only, both to the same value */
    long writes;       /* guarded by l (write) */
} rw_t;

static void count(_Atomic int *c) { baton_fetch_add(c, 1, memory_order_relaxed); /* a count only */ }

static int take(rw_t *s, int write, int how)
{
    struct timespec far;
    switch (how % 4) {
    case 0: return write ? pthread_rwlock_wrlock(&s->l) : pthread_rwlock_rdlock(&s->l);
    case 1: {
        int rc = write ? pthread_rwlock_trywrlock(&s->l) : pthread_rwlock_tryrdlock(&s->l);
        if (rc != EBUSY)
            return rc;
        return write ? pthread_rwlock_wrlock(&s->l) : pthread_rwlock_rdlock(&s->l);
    }
    case 2:
        far = ptest_in(CLOCK_REALTIME, 30 * 1000000000LL);
        return write ? pthread_rwlock_timedwrlock(&s->l, &far) : pthread_rwlock_timedrdlock(&s->l, &far);
    default:
        far = ptest_in(CLOCK_MONOTONIC, 30 * 1000000000LL);
        return write ? pthread_rwlock_clockwrlock(&s->l, CLOCK_MONOTONIC, &far)
                     : pthread_rwlock_clockrdlock(&s->l, CLOCK_MONOTONIC, &far);
    }
}

static void *reader(void *arg)
{
    rw_t *s = arg;
    for (int i = 0; i < RW_ITERS; i++) {
        if (take(s, 0, i) != 0) {
            count(&s->errors);
            continue;
        }
        /* Relaxed throughout: the lock orders the sections; these only
         * detect overlaps. */
        baton_fetch_add(&s->readers, 1, memory_order_relaxed);
        if (baton_load(&s->writers, memory_order_relaxed) != 0)
            count(&s->bad_reader);
        long a = baton_load(&s->a, memory_order_relaxed);
        long b = baton_load(&s->b, memory_order_relaxed);
        if (a != b)
            count(&s->bad_reader);
        baton_fetch_sub(&s->readers, 1, memory_order_relaxed);
        if (pthread_rwlock_unlock(&s->l) != 0)
            count(&s->errors);
    }
    return NULL;
}

static void *writer(void *arg)
{
    rw_t *s = arg;
    for (int i = 0; i < RW_ITERS; i++) {
        if (take(s, 1, i) != 0) {
            count(&s->errors);
            continue;
        }
        /* Relaxed: as in reader(). */
        if (baton_fetch_add(&s->writers, 1, memory_order_relaxed) != 0 ||
            baton_load(&s->readers, memory_order_relaxed) != 0)
            count(&s->bad_writer);
        long v = ++s->writes;
        baton_store(&s->a, v, memory_order_relaxed); /* as above */
        sched_yield();                               /* widen the window a reader could see */
        baton_store(&s->b, v, memory_order_relaxed); /* as above */
        baton_fetch_sub(&s->writers, 1, memory_order_relaxed);
        if (pthread_rwlock_unlock(&s->l) != 0)
            count(&s->errors);
    }
    return NULL;
}

static void test_stress(const pthread_rwlockattr_t *attr, const char *phase)
{
    ptest_phase = phase;
    rw_t s = {0};
    REQUIRE(pthread_rwlock_init(&s.l, attr), 0);
    pthread_t t[RW_READERS + RW_WRITERS];
    for (int i = 0; i < RW_READERS + RW_WRITERS; i++)
        t[i] = ptest_spawn(i < RW_WRITERS ? writer : reader, &s);
    for (int i = 0; i < RW_READERS + RW_WRITERS; i++)
        ptest_join(t[i]);
    /* Relaxed: after the joins. */
    int br = baton_load(&s.bad_reader, memory_order_relaxed),
        bw = baton_load(&s.bad_writer, memory_order_relaxed);
    int e = baton_load(&s.errors, memory_order_relaxed);
    CHECK(br == 0 && bw == 0 && e == 0 && s.writes == (long)RW_WRITERS * RW_ITERS,
          "%d readers x %d writers: %d reader(s) saw a writer or a torn pair, %d writer(s) saw company, "
          "%d failed call(s), %ld writes (expected %ld)",
          RW_READERS, RW_WRITERS, br, bw, e, s.writes, (long)RW_WRITERS * RW_ITERS);
    EXPECT(pthread_rwlock_destroy(&s.l), 0);
}

/* --- operations on another thread ---------------------------------------------------- */

enum { TRYRD, TRYWR, RD, TIMEDRD, TIMEDWR, CLOCKRD, CLOCKWR, HANDOVER_WR, HANDOVER_RD };

typedef struct op {
    pthread_rwlock_t *l;
    int kind;
    clockid_t clock;
    struct timespec ts;
    ptest_flag_t started;
} op_t;

static void *run_op(void *arg)
{
    op_t *o = arg;
    int rc;
    struct timespec far;
    switch (o->kind) {
    case TRYRD: rc = pthread_rwlock_tryrdlock(o->l); break;
    case TRYWR: rc = pthread_rwlock_trywrlock(o->l); break;
    case RD: rc = pthread_rwlock_rdlock(o->l); break;
    case TIMEDRD: rc = pthread_rwlock_timedrdlock(o->l, &o->ts); break;
    case TIMEDWR: rc = pthread_rwlock_timedwrlock(o->l, &o->ts); break;
    case CLOCKRD: rc = pthread_rwlock_clockrdlock(o->l, o->clock, &o->ts); break;
    case CLOCKWR: rc = pthread_rwlock_clockwrlock(o->l, o->clock, &o->ts); break;
    case HANDOVER_WR:
        far = ptest_in(CLOCK_REALTIME, 20 * 1000000000LL);
        ptest_raise(&o->started, 1);
        rc = pthread_rwlock_timedwrlock(o->l, &far);
        break;
    default:
        far = ptest_in(CLOCK_MONOTONIC, 20 * 1000000000LL);
        ptest_raise(&o->started, 1);
        rc = pthread_rwlock_clockrdlock(o->l, CLOCK_MONOTONIC, &far);
        break;
    }
    if (rc == 0 && pthread_rwlock_unlock(o->l) != 0)
        return (void *)(intptr_t)1000;
    return (void *)(intptr_t)rc;
}

static int other(pthread_rwlock_t *l, int kind)
{
    op_t o = {.l = l, .kind = kind};
    return ptest_on_other_thread(run_op, &o);
}

static int other_timed(pthread_rwlock_t *l, int kind, clockid_t clock, struct timespec ts)
{
    op_t o = {.l = l, .kind = kind, .clock = clock, .ts = ts};
    return ptest_on_other_thread(run_op, &o);
}

static struct timespec bad_nsec(clockid_t clock, long nsec)
{
    struct timespec t = ptest_in(clock, 1000000000LL);
    t.tv_nsec = nsec;
    return t;
}

static void test_errors(void)
{
    ptest_phase = "sharing and error codes";
    pthread_rwlock_t l;
    REQUIRE(pthread_rwlock_init(&l, NULL), 0);
    /* Read-held: other readers share, writers are refused. */
    EXPECT(pthread_rwlock_rdlock(&l), 0);
    EXPECT(other(&l, TRYRD), 0);
    EXPECT(other(&l, RD), 0);
    EXPECT(other(&l, TRYWR), EBUSY);
    EXPECT(pthread_rwlock_tryrdlock(&l), 0); /* a second read lock of this thread */
    EXPECT(pthread_rwlock_unlock(&l), 0);
    EXPECT(other(&l, TRYWR), EBUSY);
    EXPECT(pthread_rwlock_unlock(&l), 0);
    EXPECT(other(&l, TRYWR), 0);
    /* Write-held. */
    EXPECT(pthread_rwlock_wrlock(&l), 0);
    EXPECT(other(&l, TRYRD), EBUSY);
    EXPECT(other(&l, TRYWR), EBUSY);
    EXPECT(pthread_rwlock_wrlock(&l), EDEADLK);
    EXPECT(pthread_rwlock_rdlock(&l), EDEADLK);
    struct timespec far = ptest_in(CLOCK_REALTIME, 10 * 1000000000LL);
    EXPECT(pthread_rwlock_timedwrlock(&l, &far), EDEADLK);
    EXPECT(pthread_rwlock_timedrdlock(&l, &far), EDEADLK);
    far = ptest_in(CLOCK_MONOTONIC, 10 * 1000000000LL);
    EXPECT(pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &far), EDEADLK);
    EXPECT(pthread_rwlock_trywrlock(&l), EBUSY);
    EXPECT(pthread_rwlock_tryrdlock(&l), EBUSY);
    EXPECT(pthread_rwlock_unlock(&l), 0);
    EXPECT(other(&l, TRYWR), 0);
    EXPECT(other(&l, TRYRD), 0);
    /* Made by the static initializer. */
    pthread_rwlock_t s = PTHREAD_RWLOCK_INITIALIZER;
    EXPECT(pthread_rwlock_wrlock(&s), 0);
    EXPECT(other(&s, TRYRD), EBUSY);
    EXPECT(pthread_rwlock_wrlock(&s), EDEADLK);
    EXPECT(pthread_rwlock_unlock(&s), 0);
    EXPECT(pthread_rwlock_rdlock(&s), 0);
    EXPECT(other(&s, TRYRD), 0);
    EXPECT(pthread_rwlock_unlock(&s), 0);
    EXPECT(pthread_rwlock_destroy(&s), 0);
    EXPECT(pthread_rwlock_destroy(&l), 0);
}

/* --- read locks of several rwlocks ------------------------------------------------------ */

/* The interposer's common read lock (a thread that holds none) and its
 * unlock (the one it holds, once) take a short path; every other case the
 * general one.  Mix them: the thread's set of held read locks must stay
 * right whatever the order, and so must what other threads see. */
static void test_many_read(void)
{
    ptest_phase = "read locks of several rwlocks, released in any order";
    enum { N = 12 }; /* more than the interposer keeps inline */
    pthread_rwlock_t l[N];
    for (int i = 0; i < N; i++)
        REQUIRE(pthread_rwlock_init(&l[i], NULL), 0);
    for (int order = 0; order < 2; order++) {
        for (int i = 0; i < N; i++)
            EXPECT(pthread_rwlock_rdlock(&l[i]), 0);
        EXPECT(pthread_rwlock_rdlock(&l[3]), 0); /* held twice */
        for (int i = 0; i < N; i++)
            EXPECT(other(&l[i], TRYWR), EBUSY);
        /* First forwards, then backwards; l[3] once more at the end. */
        for (int j = 0; j < N; j++) {
            int i = order == 0 ? j : N - 1 - j;
            EXPECT(pthread_rwlock_unlock(&l[i]), 0);
            EXPECT(other(&l[i], TRYWR), i == 3 ? EBUSY : 0);
        }
        EXPECT(pthread_rwlock_unlock(&l[3]), 0);
        EXPECT(other(&l[3], TRYWR), 0);
    }
    /* A few (the interposer's short nested paths), one held twice, released
     * in the order taken. */
    for (int i = 0; i < 3; i++)
        EXPECT(pthread_rwlock_rdlock(&l[i]), 0);
    EXPECT(pthread_rwlock_rdlock(&l[0]), 0); /* held twice */
    EXPECT(pthread_rwlock_unlock(&l[0]), 0);
    EXPECT(other(&l[0], TRYWR), EBUSY);
    for (int i = 0; i < 3; i++) {
        EXPECT(pthread_rwlock_unlock(&l[i]), 0);
        for (int j = 0; j < 3; j++)
            EXPECT(other(&l[j], TRYWR), j <= i ? 0 : EBUSY);
    }
    /* One held for writing beside one held for reading. */
    EXPECT(pthread_rwlock_wrlock(&l[0]), 0);
    EXPECT(pthread_rwlock_rdlock(&l[1]), 0);
    EXPECT(pthread_rwlock_rdlock(&l[0]), EDEADLK);
    EXPECT(pthread_rwlock_unlock(&l[0]), 0);
    EXPECT(other(&l[0], TRYWR), 0);
    EXPECT(other(&l[1], TRYWR), EBUSY);
    EXPECT(pthread_rwlock_unlock(&l[1]), 0);
    EXPECT(other(&l[1], TRYWR), 0);
    for (int i = 0; i < N; i++)
        EXPECT(pthread_rwlock_destroy(&l[i]), 0);
}

/* --- a second read lock while a writer waits ----------------------------------------- */

static void *waiting_writer(void *arg)
{
    op_t *o = arg;
    ptest_raise(&o->started, 1);
    int rc = pthread_rwlock_wrlock(o->l);
    if (rc == 0)
        rc = pthread_rwlock_unlock(o->l);
    return (void *)(intptr_t)rc;
}

static void test_recursive_read(void)
{
    ptest_phase = "recursive rdlock while a writer waits (deadlock if the watchdog fires)";
    pthread_rwlock_t l;
    REQUIRE(pthread_rwlock_init(&l, NULL), 0);
    for (int i = 0; i < 20; i++) {
        alarm(10);
        op_t o = {.l = &l};
        EXPECT(pthread_rwlock_rdlock(&l), 0);
        pthread_t t = ptest_spawn(waiting_writer, &o);
        ptest_await(&o.started, 1);
        ptest_sleep_ms(2); /* let the writer block (the test holds either way) */
        struct timespec far = ptest_in(CLOCK_MONOTONIC, 20 * 1000000000LL);
        EXPECT(i & 1 ? pthread_rwlock_rdlock(&l) : pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &far), 0);
        EXPECT(pthread_rwlock_unlock(&l), 0);
        EXPECT(pthread_rwlock_unlock(&l), 0);
        int rc = (int)(intptr_t)ptest_join(t);
        CHECK(rc == 0, "the waiting writer's wrlock/unlock returned %s", ptest_errname(rc));
    }
    alarm(120);
    EXPECT(pthread_rwlock_destroy(&l), 0);
}

/* --- timed variants ------------------------------------------------------------------ */

static void test_timed(void)
{
    ptest_phase = "timed variants";
    pthread_rwlock_t l;
    REQUIRE(pthread_rwlock_init(&l, NULL), 0);
    const clockid_t M = CLOCK_MONOTONIC, R = CLOCK_REALTIME;
    EXPECT(pthread_rwlock_wrlock(&l), 0);
    EXPECT(other_timed(&l, TIMEDRD, 0, ptest_in(R, -1000000000LL)), ETIMEDOUT);
    EXPECT(other_timed(&l, TIMEDWR, 0, ptest_in(R, -1000000000LL)), ETIMEDOUT);
    EXPECT(other_timed(&l, TIMEDRD, 0, ptest_in(R, 20000000)), ETIMEDOUT);
    EXPECT(other_timed(&l, TIMEDWR, 0, ptest_in(R, 20000000)), ETIMEDOUT);
    EXPECT(other_timed(&l, CLOCKRD, M, ptest_in(M, -1000000000LL)), ETIMEDOUT);
    EXPECT(other_timed(&l, CLOCKWR, M, ptest_in(M, 20000000)), ETIMEDOUT);
    EXPECT(other_timed(&l, CLOCKWR, R, ptest_in(R, -1000000000LL)), ETIMEDOUT);
    EXPECT(other_timed(&l, TIMEDRD, 0, bad_nsec(R, 1000000000L)), EINVAL);
    EXPECT(other_timed(&l, TIMEDWR, 0, bad_nsec(R, -1)), EINVAL);
    EXPECT(other_timed(&l, CLOCKRD, M, bad_nsec(M, 1000000000L)), EINVAL);
    EXPECT(other_timed(&l, CLOCKWR, CLOCK_PROCESS_CPUTIME_ID, ptest_in(M, 1000000000LL)), EINVAL);
    EXPECT(pthread_rwlock_unlock(&l), 0);

    EXPECT(pthread_rwlock_rdlock(&l), 0);
    EXPECT(other_timed(&l, TIMEDWR, 0, ptest_in(R, -1000000000LL)), ETIMEDOUT);
    EXPECT(other_timed(&l, CLOCKWR, M, ptest_in(M, 20000000)), ETIMEDOUT);
    EXPECT(other_timed(&l, TIMEDRD, 0, ptest_in(R, -1000000000LL)), 0); /* readers share */
    EXPECT(other_timed(&l, CLOCKRD, M, ptest_in(M, -1000000000LL)), 0);
    EXPECT(pthread_rwlock_unlock(&l), 0);

    /* Free: glibc validates the deadline and clock anyway. */
    EXPECT(other_timed(&l, TIMEDRD, 0, bad_nsec(R, 1000000000L)), EINVAL);
    EXPECT(other_timed(&l, TIMEDWR, 0, bad_nsec(R, -1)), EINVAL);
    EXPECT(other_timed(&l, CLOCKRD, CLOCK_PROCESS_CPUTIME_ID, ptest_in(M, 1000000000LL)), EINVAL);
    EXPECT(other_timed(&l, TIMEDWR, 0, ptest_in(R, -1000000000LL)), 0); /* free: no wait, no timeout */
    EXPECT(other_timed(&l, CLOCKRD, M, ptest_in(M, -1000000000LL)), 0);
    EXPECT(other(&l, TRYWR), 0); /* nothing was left held */

    /* Far deadlines succeed once the holder releases. */
    for (int k = 0; k < 2; k++) {
        op_t o = {.l = &l, .kind = k ? HANDOVER_RD : HANDOVER_WR};
        EXPECT(k ? pthread_rwlock_wrlock(&l) : pthread_rwlock_rdlock(&l), 0);
        pthread_t t = ptest_spawn(run_op, &o);
        ptest_await(&o.started, 1);
        ptest_sleep_ms(5);
        EXPECT(pthread_rwlock_unlock(&l), 0);
        int rc = (int)(intptr_t)ptest_join(t);
        CHECK(rc == 0, "%s with a far deadline returned %s after the holder released",
              k ? "clockrdlock" : "timedwrlock", ptest_errname(rc));
    }
    EXPECT(pthread_rwlock_destroy(&l), 0);
}

int main(void)
{
    ptest_begin("rwlock", 120);
    test_errors();
    test_timed();
    test_many_read();
    test_recursive_read();
    test_stress(NULL, "exclusion stress (default attributes)");
    pthread_rwlockattr_t a;
    REQUIRE(pthread_rwlockattr_init(&a), 0);
    REQUIRE(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), 0);
    test_stress(&a, "exclusion stress (PREFER_WRITER_NONRECURSIVE_NP)");
    REQUIRE(pthread_rwlockattr_destroy(&a), 0);
    return ptest_end("exclusion, sharing, errors, several read locks, recursive read, timed variants");
}
