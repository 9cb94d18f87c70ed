/* garbage.c - pthread objects whose memory holds garbage: never initialised,
 * copied from a lock in use, or planted with values that name another lock.
 *
 * POSIX leaves all of this undefined; the expectation is what glibc does
 * with the same bytes (x86-64), which the control run checks:
 *   - a spinlock word is 1 when free: trylock takes exactly 1 and refuses
 *     every other value (EBUSY); lock counts a positive word down to 0 and
 *     takes it (so it returns), and spins while the word is 0 or negative;
 *     unlock writes 1 (free) whatever was there; destroy changes nothing;
 *   - a mutex or rwlock copied from one that is free is a second, free,
 *     independent lock; a NORMAL mutex whose __lock, __owner and __nusers
 *     are 0 is free whatever its other bytes hold, and one whose __lock is
 *     not 0 is held;
 *   - a condvar whose __wrefs is 0 has no waiters: signal, broadcast and
 *     destroy return 0 at once;
 *   - a barrier copied from one that is initialised is a second barrier of
 *     the same count.
 * Under the interposer the same values can name another object's lock
 * state (a handle or pointer into its slabs) or point nowhere: it must
 * neither crash nor touch the other lock, and must give glibc's answers.
 * The interposer's one deliberate difference here, that a zeroed spinlock
 * is free (glibc's x86-64 reads 0 as held), is not exercised.
 */
#include "ptest.h"

static void *trylock_spin(void *arg)
{
    int rc = pthread_spin_trylock(arg);
    if (rc == 0)
        pthread_spin_unlock(arg);
    return (void *)(intptr_t)rc;
}

static void *trylock_mutex(void *arg)
{
    int rc = pthread_mutex_trylock(arg);
    if (rc == 0)
        pthread_mutex_unlock(arg);
    return (void *)(intptr_t)rc;
}

static void *trywrlock(void *arg)
{
    int rc = pthread_rwlock_trywrlock(arg);
    if (rc == 0)
        pthread_rwlock_unlock(arg);
    return (void *)(intptr_t)rc;
}

static uint32_t spin_word(pthread_spinlock_t *s)
{
    uint32_t v;
    memcpy(&v, (const void *)s, sizeof v);
    return v;
}

static void spin_plant(pthread_spinlock_t *s, uint32_t v) { memcpy((void *)s, &v, sizeof v); }

/* glibc's trylock on a planted word: only 1 reads as free. */
static int glibc_spin_trylock(uint32_t v) { return v == 1 ? 0 : EBUSY; }

/* --- spinlocks -------------------------------------------------------------------- */

typedef struct spinner {
    pthread_spinlock_t *s;
    ptest_flag_t started, done, release;
    int rc;
} spinner_t;

static void *spin_locker(void *arg)
{
    spinner_t *sp = arg;
    ptest_raise(&sp->started, 1);
    sp->rc = pthread_spin_lock(sp->s);
    ptest_raise(&sp->done, 1);
    ptest_await(&sp->release, 1);
    if (sp->rc == 0)
        sp->rc = pthread_spin_unlock(sp->s);
    return NULL;
}

static void test_spin(void)
{
    /* Three spinlocks in use first, so that A's handle (interposed) is not 1. */
    pthread_spinlock_t pad[3], A, G, C;
    for (int i = 0; i < 3; i++) {
        REQUIRE(pthread_spin_init(&pad[i], PTHREAD_PROCESS_PRIVATE), 0);
        REQUIRE(pthread_spin_lock(&pad[i]), 0);
        REQUIRE(pthread_spin_unlock(&pad[i]), 0);
    }
    REQUIRE(pthread_spin_init(&A, PTHREAD_PROCESS_PRIVATE), 0);
    REQUIRE(pthread_spin_lock(&A), 0);
    REQUIRE(pthread_spin_unlock(&A), 0);
    const uint32_t vA = spin_word(&A); /* glibc: 1; interposed: A's handle */

    ptest_phase = "spin: trylock of a word that names a live spinlock";
    spin_plant(&G, vA);
    int want = glibc_spin_trylock(vA);
    EXPECT(pthread_spin_trylock(&G), want);
    EXPECT(ptest_on_other_thread(trylock_spin, (void *)&A), 0); /* A was not taken */
    if (want == 0)
        EXPECT(pthread_spin_unlock(&G), 0);

    ptest_phase = "spin: lock of a word that names a live spinlock";
    spin_plant(&G, vA);
    EXPECT(pthread_spin_lock(&G), 0);
    EXPECT(ptest_on_other_thread(trylock_spin, (void *)&A), 0); /* A was not taken */
    EXPECT(ptest_on_other_thread(trylock_spin, (void *)&G), EBUSY);
    EXPECT(pthread_spin_unlock(&G), 0);
    EXPECT(ptest_on_other_thread(trylock_spin, (void *)&G), 0);
    EXPECT(pthread_spin_destroy(&G), 0);

    ptest_phase = "spin: unlock of a word that names a held spinlock";
    REQUIRE(pthread_spin_lock(&A), 0);
    spin_plant(&G, vA);
    EXPECT(pthread_spin_unlock(&G), 0);
    EXPECT(ptest_on_other_thread(trylock_spin, (void *)&A), EBUSY); /* A is still held */
    EXPECT(ptest_on_other_thread(trylock_spin, (void *)&G), 0);     /* G reads free now (glibc wrote 1) */
    EXPECT(pthread_spin_unlock(&A), 0);

    ptest_phase = "spin: destroy of a word that names a live spinlock";
    spin_plant(&G, vA);
    EXPECT(pthread_spin_destroy(&G), 0);
    /* A keeps its own lock: a spinlock made now must not share it. */
    REQUIRE(pthread_spin_init(&C, PTHREAD_PROCESS_PRIVATE), 0);
    REQUIRE(pthread_spin_lock(&C), 0);
    REQUIRE(pthread_spin_unlock(&C), 0);
    REQUIRE(pthread_spin_lock(&A), 0);
    EXPECT(ptest_on_other_thread(trylock_spin, (void *)&C), 0);
    EXPECT(pthread_spin_unlock(&A), 0);
    EXPECT(pthread_spin_destroy(&C), 0);

    /* Positive words beyond any live handle: past the first slab chunk, at
     * and past the largest handle, the largest positive value. */
    static const uint32_t positive[] = {0x5000u,     0x12345u,    0x0fffffffu,
                                        0x10000000u, 0x40000000u, 0x7fffffffu};
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++) {
        ptest_phase = "spin: trylock of a positive garbage word";
        spin_plant(&G, positive[i]);
        EXPECT(pthread_spin_trylock(&G), EBUSY);
        ptest_phase = "spin: unlock of a positive garbage word";
        EXPECT(pthread_spin_unlock(&G), 0);
        EXPECT(pthread_spin_trylock(&G), 0);
        EXPECT(pthread_spin_unlock(&G), 0);
        EXPECT(pthread_spin_destroy(&G), 0);
        if (positive[i] <= 0x12345u) {
            /* glibc counts these down in well under a second. */
            ptest_phase = "spin: lock of a positive garbage word";
            spin_plant(&G, positive[i]);
            EXPECT(pthread_spin_lock(&G), 0);
            EXPECT(ptest_on_other_thread(trylock_spin, (void *)&G), EBUSY);
            EXPECT(pthread_spin_unlock(&G), 0);
            EXPECT(pthread_spin_destroy(&G), 0);
        }
    }

    /* Negative words read as held. */
    static const uint32_t negative[] = {0x90000000u, 0xa5a5a5a5u, 0xfffffff0u};
    for (size_t i = 0; i < sizeof negative / sizeof negative[0]; i++) {
        ptest_phase = "spin: trylock and unlock of a negative garbage word";
        spin_plant(&G, negative[i]);
        EXPECT(pthread_spin_trylock(&G), EBUSY);
        EXPECT(pthread_spin_unlock(&G), 0);
        EXPECT(pthread_spin_trylock(&G), 0);
        EXPECT(pthread_spin_unlock(&G), 0);
        EXPECT(pthread_spin_destroy(&G), 0);
    }
    ptest_phase = "spin: lock of a negative garbage word waits for an unlock";
    spin_plant(&G, 0x90000000u);
    spinner_t sp = {.s = &G};
    pthread_t t = ptest_spawn(spin_locker, &sp);
    ptest_await(&sp.started, 1);
    CHECK(!ptest_await_ms(&sp.done, 1, 50), "pthread_spin_lock of a word that reads as held returned %d",
          sp.rc);
    EXPECT(pthread_spin_unlock(&G), 0); /* glibc: writes 1, and the spinner takes it */
    if (!ptest_await_ms(&sp.done, 1, 5000))
        ptest_fatal(__LINE__, "pthread_spin_lock still waits 5 s after the garbage word was unlocked");
    EXPECT(sp.rc, 0);
    EXPECT(ptest_on_other_thread(trylock_spin, (void *)&G), EBUSY); /* the waiter holds it */
    ptest_raise(&sp.release, 1);
    ptest_join(t);
    EXPECT(sp.rc, 0); /* its unlock */
    EXPECT(pthread_spin_destroy(&G), 0);

    EXPECT(pthread_spin_destroy(&A), 0);
    for (int i = 0; i < 3; i++)
        EXPECT(pthread_spin_destroy(&pad[i]), 0);
}

/* --- mutexes ------------------------------------------------------------------------ */

/* A mutex full of garbage that glibc reads as NORMAL, with __lock `lock`
 * and no owner or users (glibc asserts the first and its destroy reads the
 * second). */
static void mutex_garbage(pthread_mutex_t *m, int lock)
{
    memset((void *)m, 0xa5, sizeof *m);
    m->__data.__lock = lock;
    m->__data.__kind = 0;
    m->__data.__nusers = 0;
    m->__data.__owner = 0;
}

static void test_mutex(void)
{
    pthread_mutex_t A, B, C, G;

    ptest_phase = "mutex: a copy of a free mutex that was used";
    REQUIRE(pthread_mutex_init(&A, NULL), 0);
    REQUIRE(pthread_mutex_lock(&A), 0);
    REQUIRE(pthread_mutex_unlock(&A), 0);
    memcpy((void *)&B, (const void *)&A, sizeof B);
    EXPECT(pthread_mutex_lock(&B), 0);
    EXPECT(ptest_on_other_thread(trylock_mutex, &A), 0); /* A is another mutex */
    EXPECT(ptest_on_other_thread(trylock_mutex, &B), EBUSY);
    EXPECT(pthread_mutex_unlock(&B), 0);
    EXPECT(ptest_on_other_thread(trylock_mutex, &B), 0);
    EXPECT(pthread_mutex_destroy(&B), 0);
    /* A keeps its own lock: a mutex made now must not share it. */
    REQUIRE(pthread_mutex_init(&C, NULL), 0);
    REQUIRE(pthread_mutex_lock(&C), 0);
    REQUIRE(pthread_mutex_unlock(&C), 0);
    REQUIRE(pthread_mutex_lock(&A), 0);
    EXPECT(ptest_on_other_thread(trylock_mutex, &C), 0);
    EXPECT(pthread_mutex_unlock(&A), 0);
    EXPECT(pthread_mutex_destroy(&C), 0);
    EXPECT(pthread_mutex_destroy(&A), 0);

    ptest_phase = "mutex: garbage that reads as free";
    mutex_garbage(&G, 0);
    EXPECT(pthread_mutex_lock(&G), 0);
    EXPECT(ptest_on_other_thread(trylock_mutex, &G), EBUSY);
    EXPECT(pthread_mutex_unlock(&G), 0);
    EXPECT(pthread_mutex_trylock(&G), 0);
    EXPECT(pthread_mutex_unlock(&G), 0);
    EXPECT(ptest_on_other_thread(trylock_mutex, &G), 0);
    EXPECT(pthread_mutex_destroy(&G), 0);

    ptest_phase = "mutex: garbage that reads as held";
    mutex_garbage(&G, 1);
    EXPECT(pthread_mutex_trylock(&G), EBUSY);
    struct timespec soon = ptest_in(CLOCK_REALTIME, 20 * 1000000);
    EXPECT(pthread_mutex_timedlock(&G, &soon), ETIMEDOUT);
    EXPECT(ptest_on_other_thread(trylock_mutex, &G), EBUSY);
    EXPECT(pthread_mutex_destroy(&G), 0);
}

/* --- rwlocks ------------------------------------------------------------------------- */

static void test_rwlock(void)
{
    pthread_rwlock_t A, B, C, G;

    ptest_phase = "rwlock: a copy of a free rwlock that was used";
    REQUIRE(pthread_rwlock_init(&A, NULL), 0);
    REQUIRE(pthread_rwlock_wrlock(&A), 0);
    REQUIRE(pthread_rwlock_unlock(&A), 0);
    memcpy((void *)&B, (const void *)&A, sizeof B);
    EXPECT(pthread_rwlock_wrlock(&B), 0);
    EXPECT(ptest_on_other_thread(trywrlock, &A), 0); /* A is another rwlock */
    EXPECT(ptest_on_other_thread(trywrlock, &B), EBUSY);
    EXPECT(pthread_rwlock_unlock(&B), 0);
    EXPECT(pthread_rwlock_rdlock(&B), 0);
    EXPECT(pthread_rwlock_unlock(&B), 0);
    EXPECT(pthread_rwlock_destroy(&B), 0);
    REQUIRE(pthread_rwlock_init(&C, NULL), 0);
    REQUIRE(pthread_rwlock_wrlock(&C), 0);
    REQUIRE(pthread_rwlock_unlock(&C), 0);
    REQUIRE(pthread_rwlock_wrlock(&A), 0);
    EXPECT(ptest_on_other_thread(trywrlock, &C), 0);
    EXPECT(pthread_rwlock_unlock(&A), 0);
    EXPECT(pthread_rwlock_destroy(&C), 0);
    EXPECT(pthread_rwlock_destroy(&A), 0);

    ptest_phase = "rwlock: garbage that reads as free";
    memset((void *)&G, 0xa5, sizeof G);
    G.__data.__readers = 0;
    G.__data.__writers = 0;
    G.__data.__wrphase_futex = 0;
    G.__data.__writers_futex = 0;
    G.__data.__cur_writer = 0;
    G.__data.__shared = 0;
    G.__data.__rwelision = 0;
    G.__data.__flags = 0;
    EXPECT(pthread_rwlock_rdlock(&G), 0);
    EXPECT(ptest_on_other_thread(trywrlock, &G), EBUSY);
    EXPECT(pthread_rwlock_unlock(&G), 0);
    EXPECT(pthread_rwlock_wrlock(&G), 0);
    EXPECT(ptest_on_other_thread(trywrlock, &G), EBUSY);
    EXPECT(pthread_rwlock_unlock(&G), 0);
    EXPECT(pthread_rwlock_destroy(&G), 0);
}

/* --- condition variables ------------------------------------------------------------------ */

static void test_cond(void)
{
    pthread_cond_t G;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

    ptest_phase = "cond: garbage without waiters";
    memset((void *)&G, 0xa5, sizeof G);
    G.__data.__wseq.__value64 = 0;
    G.__data.__wrefs = 0;
    EXPECT(pthread_cond_signal(&G), 0);
    EXPECT(pthread_cond_broadcast(&G), 0);
    if (ptest_interposer() != NULL) {
        /* (glibc's own wait reads its garbage sequence numbers: not asked.) */
        ptest_phase = "cond: a timed wait on garbage";
        REQUIRE(pthread_mutex_lock(&m), 0);
        struct timespec soon = ptest_in(CLOCK_REALTIME, 20 * 1000000);
        int rc = pthread_cond_timedwait(&G, &m, &soon);
        CHECK(rc == 0 || rc == ETIMEDOUT, "pthread_cond_timedwait returned %d (%s)", rc, ptest_errname(rc));
        EXPECT(ptest_on_other_thread(trylock_mutex, &m), EBUSY); /* held again */
        EXPECT(pthread_mutex_unlock(&m), 0);
        EXPECT(pthread_cond_signal(&G), 0);
    }
    ptest_phase = "cond: destroy of garbage";
    EXPECT(pthread_cond_destroy(&G), 0);
    EXPECT(pthread_mutex_destroy(&m), 0);
}

/* --- barriers --------------------------------------------------------------------------------- */

typedef struct waiter {
    pthread_barrier_t *b;
    ptest_flag_t started, done;
    int rc;
} waiter_t;

static void *barrier_waiter(void *arg)
{
    waiter_t *w = arg;
    ptest_raise(&w->started, 1);
    w->rc = pthread_barrier_wait(w->b);
    ptest_raise(&w->done, 1);
    return NULL;
}

static void test_barrier(void)
{
    pthread_barrier_t A, B;

    ptest_phase = "barrier: a copy of an initialised barrier is another barrier";
    REQUIRE(pthread_barrier_init(&A, NULL, 2), 0);
    memcpy((void *)&B, (const void *)&A, sizeof B);
    waiter_t wa = {.b = &A}, wb = {.b = &B};
    pthread_t ta = ptest_spawn(barrier_waiter, &wa), tb = ptest_spawn(barrier_waiter, &wb);
    ptest_await(&wa.started, 1);
    ptest_await(&wb.started, 1);
    /* One thread at each of two barriers of 2: neither may pass. */
    CHECK(!ptest_await_ms(&wa.done, 1, 100) && !ptest_await_ms(&wb.done, 1, 1),
          "one waiter at a barrier of 2 and one at its copy passed together");
    int ra = pthread_barrier_wait(&A), rb = pthread_barrier_wait(&B);
    ptest_join(ta);
    ptest_join(tb);
    CHECK((ra == PTHREAD_BARRIER_SERIAL_THREAD) + (wa.rc == PTHREAD_BARRIER_SERIAL_THREAD) == 1 &&
              (ra == 0 || ra == PTHREAD_BARRIER_SERIAL_THREAD) &&
              (wa.rc == 0 || wa.rc == PTHREAD_BARRIER_SERIAL_THREAD),
          "barrier A: waits returned %d and %d", ra, wa.rc);
    CHECK((rb == PTHREAD_BARRIER_SERIAL_THREAD) + (wb.rc == PTHREAD_BARRIER_SERIAL_THREAD) == 1 &&
              (rb == 0 || rb == PTHREAD_BARRIER_SERIAL_THREAD) &&
              (wb.rc == 0 || wb.rc == PTHREAD_BARRIER_SERIAL_THREAD),
          "the copy: waits returned %d and %d", rb, wb.rc);
    EXPECT(pthread_barrier_destroy(&B), 0);
    /* A is still a barrier of 2. */
    waiter_t wa2 = {.b = &A};
    ta = ptest_spawn(barrier_waiter, &wa2);
    ra = pthread_barrier_wait(&A);
    ptest_join(ta);
    CHECK((ra == PTHREAD_BARRIER_SERIAL_THREAD) + (wa2.rc == PTHREAD_BARRIER_SERIAL_THREAD) == 1,
          "barrier A after its copy was destroyed: waits returned %d and %d", ra, wa2.rc);
    EXPECT(pthread_barrier_destroy(&A), 0);
}

int main(void)
{
    ptest_begin("garbage", 60);
    test_spin();
    test_mutex();
    test_rwlock();
    test_cond();
    test_barrier();
    return ptest_end("spinlocks, mutexes, rwlocks, condvars and barriers holding garbage");
}
