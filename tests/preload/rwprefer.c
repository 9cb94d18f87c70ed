/* rwprefer.c - an rwlock prefers readers or writers as its attribute says,
 * as under glibc.
 *
 *   readers   (a) a default rwlock (PTHREAD_RWLOCK_INITIALIZER, init with
 *             no attribute, with PREFER_READER_NP, and with PREFER_WRITER_NP,
 *             which glibc treats as reader-preferring): thread A holds a
 *             read lock, writer W blocks in wrlock, and then thread B's
 *             timed rdlock (2 s deadline) must succeed; W gets the lock
 *             once both readers left
 *   writers   (b) PREFER_WRITER_NONRECURSIVE_NP: B's timed rdlock must time
 *             out (ETIMEDOUT) while W waits; (c) the same with the static
 *             PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
 *   priority  (d) as (a) with W and B under SCHED_FIFO, B at the higher
 *             priority: the higher-priority reader gets the read lock while
 *             the lower-priority writer is blocked (POSIX's rule under the
 *             priority scheduling option); with equal priorities, and said
 *             so, where SCHED_FIFO is not permitted
 *   init      pthread_rwlock_init records the attribute's kind in __flags,
 *             as glibc's does
 *
 * PTEST_RWPREFER_SKIP (set by run.sh for kinds that cannot honour a
 * preference): "readers" skips (a) and (d), "writers" skips (b) and (c).
 */
#include "ptest.h"

#define PREFER_READERS 0
#define PREFER_WRITERS 1

typedef struct scene {
    pthread_rwlock_t *l;
    ptest_flag_t a_holds, a_go, w_trying;
    _Atomic int w_got;   /* W holds the write lock */
    _Atomic int readers; /* read locks held now (A, B) */
    _Atomic int w_saw_readers;
} scene_t;

static void *reader_a(void *arg)
{
    scene_t *s = arg;
    int rc = pthread_rwlock_rdlock(s->l);
    if (rc != 0)
        return (void *)(intptr_t)(100 + rc);
    baton_fetch_add(&s->readers, 1, memory_order_relaxed); /* a count, read by W inside */
    ptest_raise(&s->a_holds, 1);
    ptest_await(&s->a_go, 1);
    baton_fetch_sub(&s->readers, 1, memory_order_relaxed);
    return (void *)(intptr_t)pthread_rwlock_unlock(s->l);
}

static void *writer_w(void *arg)
{
    scene_t *s = arg;
    ptest_raise(&s->w_trying, 1);
    int rc = pthread_rwlock_wrlock(s->l);
    if (rc != 0)
        return (void *)(intptr_t)(100 + rc);
    if (baton_load(&s->readers, memory_order_relaxed) != 0) /* relaxed: see reader_a() */
        baton_store(&s->w_saw_readers, 1, memory_order_relaxed);
    baton_store(&s->w_got, 1, memory_order_relaxed); /* a flag; main reads it after the joins, or polls it */
    return (void *)(intptr_t)pthread_rwlock_unlock(s->l);
}

/* B: a timed read lock, `ms` ahead; returns its result (holding the lock
 * on 0, counted in s->readers). */
static int reader_b(scene_t *s, unsigned ms)
{
    struct timespec dl = ptest_in(CLOCK_REALTIME, (int64_t)ms * 1000000);
    int rc = pthread_rwlock_timedrdlock(s->l, &dl);
    if (rc == 0)
        baton_fetch_add(&s->readers, 1, memory_order_relaxed);
    return rc;
}

typedef struct b_arg {
    scene_t *s;
    unsigned ms;
} b_arg_t;

static void *reader_b_thread(void *arg)
{
    b_arg_t *b = arg;
    int rc = reader_b(b->s, b->ms);
    if (rc == 0) {
        baton_fetch_sub(&b->s->readers, 1, memory_order_relaxed);
        rc = pthread_rwlock_unlock(b->s->l);
        if (rc != 0)
            rc += 1000;
    }
    return (void *)(intptr_t)rc;
}

/* Threads A and W, W started once A holds its read lock; `w_attr` makes
 * W (NULL: default attributes). */
static void start(scene_t *s, pthread_t *a, pthread_t *w, const pthread_attr_t *w_attr)
{
    *a = ptest_spawn(reader_a, s);
    ptest_await(&s->a_holds, 1);
    int rc = pthread_create(w, w_attr, writer_w, s);
    if (rc != 0)
        ptest_fatal(__LINE__, "pthread_create (writer): %s", strerror(rc));
    ptest_await(&s->w_trying, 1);
}

/* Let A go and join A and W: W must get the lock after the readers. */
static void finish(scene_t *s, pthread_t a, pthread_t w, const char *what)
{
    ptest_raise(&s->a_go, 1);
    int rc = (int)(intptr_t)ptest_join(a);
    CHECK(rc == 0, "[%s] reader A: %d", what, rc);
    rc = (int)(intptr_t)ptest_join(w);
    CHECK(rc == 0, "[%s] writer W: %d", what, rc);
    /* Relaxed: after the joins. */
    CHECK(baton_load(&s->w_got, memory_order_relaxed) == 1, "[%s] the writer never got the lock", what);
    CHECK(baton_load(&s->w_saw_readers, memory_order_relaxed) == 0,
          "[%s] the writer got in with readers inside", what);
}

/* (a) and (b)/(c): one scene on l, which prefers `pref`. */
static void scene(pthread_rwlock_t *l, int pref, const char *what)
{
    ptest_phase = what;
    scene_t s = {.l = l};
    pthread_t a, w;
    start(&s, &a, &w, NULL);
    if (pref == PREFER_READERS) {
        /* W is in wrlock, or about to be: give it time to wait.  Whether it
         * waits yet or not, B must get in. */
        ptest_sleep_ms(50);
        CHECK(baton_load(&s.w_got, memory_order_relaxed) == 0, "[%s] the writer got in over reader A", what);
        int rc = reader_b(&s, 2000);
        CHECK(rc == 0,
              "[%s] reader B's timed rdlock returned %d (%s) while A reads and W waits; expected 0 "
              "(readers first)",
              what, rc, ptest_errname(rc));
        if (rc == 0) {
            baton_fetch_sub(&s.readers, 1, memory_order_relaxed);
            EXPECT(pthread_rwlock_unlock(l), 0);
        }
    } else {
        /* B must wait for W, once W waits.  W may not wait yet when B
         * tries (a loaded machine): a B that gets in then proves nothing,
         * and tries again later, up to 5 times (about 3 s in all); a lock
         * that admits B over a waiting writer always does. */
        int rc = 0;
        for (unsigned tries = 0, ms = 50; tries < 5 && rc == 0; tries++, ms *= 2) {
            ptest_sleep_ms(ms);
            rc = reader_b(&s, 200);
            if (rc == 0) {
                baton_fetch_sub(&s.readers, 1, memory_order_relaxed);
                EXPECT(pthread_rwlock_unlock(l), 0);
            }
        }
        CHECK(rc == ETIMEDOUT,
              "[%s] reader B's timed rdlock returned %d (%s) while A reads and W waits; expected "
              "ETIMEDOUT (writers first)",
              what, rc, ptest_errname(rc));
    }
    finish(&s, a, w, what);
}

static void make(pthread_rwlock_t *l, int kind)
{
    ptest_phase = "init with a kind";
    pthread_rwlockattr_t at;
    REQUIRE(pthread_rwlockattr_init(&at), 0);
    REQUIRE(pthread_rwlockattr_setkind_np(&at, kind), 0);
    REQUIRE(pthread_rwlock_init(l, &at), 0);
    REQUIRE(pthread_rwlockattr_destroy(&at), 0);
    /* glibc keeps the kind in __flags; the interposer's init must too. */
    CHECK(l->__data.__flags == (unsigned)kind, "pthread_rwlock_init with kind %d left __flags %u", kind,
          l->__data.__flags);
}

static void part_readers(void)
{
    static pthread_rwlock_t st = PTHREAD_RWLOCK_INITIALIZER;
    scene(&st, PREFER_READERS, "(a) PTHREAD_RWLOCK_INITIALIZER");
    pthread_rwlock_t l;
    REQUIRE(pthread_rwlock_init(&l, NULL), 0);
    scene(&l, PREFER_READERS, "(a) init, no attribute");
    EXPECT(pthread_rwlock_destroy(&l), 0);
    make(&l, PTHREAD_RWLOCK_PREFER_READER_NP);
    scene(&l, PREFER_READERS, "(a) PREFER_READER_NP");
    EXPECT(pthread_rwlock_destroy(&l), 0);
    make(&l, PTHREAD_RWLOCK_PREFER_WRITER_NP);
    scene(&l, PREFER_READERS, "(a) PREFER_WRITER_NP (reader-preferring in glibc)");
    EXPECT(pthread_rwlock_destroy(&l), 0);
}

static void part_writers(void)
{
    pthread_rwlock_t l;
    make(&l, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    scene(&l, PREFER_WRITERS, "(b) PREFER_WRITER_NONRECURSIVE_NP");
    EXPECT(pthread_rwlock_destroy(&l), 0);
    static pthread_rwlock_t st = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
    scene(&st, PREFER_WRITERS, "(c) PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP");
}

static void *nothing(void *arg) { return arg; }

/* (d): W at FIFO priority 10, B at 20.  Returns whether SCHED_FIFO was
 * used. */
static bool part_priority(void)
{
    const char *what = "(d) SCHED_FIFO: a higher-priority reader over a blocked writer";
    ptest_phase = what;
    static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
    pthread_attr_t wa, ba;
    REQUIRE(pthread_attr_init(&wa), 0);
    REQUIRE(pthread_attr_init(&ba), 0);
    struct sched_param wp = {.sched_priority = 10}, bp = {.sched_priority = 20};
    REQUIRE(pthread_attr_setinheritsched(&wa, PTHREAD_EXPLICIT_SCHED), 0);
    REQUIRE(pthread_attr_setschedpolicy(&wa, SCHED_FIFO), 0);
    REQUIRE(pthread_attr_setschedparam(&wa, &wp), 0);
    REQUIRE(pthread_attr_setinheritsched(&ba, PTHREAD_EXPLICIT_SCHED), 0);
    REQUIRE(pthread_attr_setschedpolicy(&ba, SCHED_FIFO), 0);
    REQUIRE(pthread_attr_setschedparam(&ba, &bp), 0);
    /* Can this process make SCHED_FIFO threads at all? */
    pthread_t probe;
    int rc = pthread_create(&probe, &wa, nothing, NULL);
    bool fifo = rc == 0;
    if (fifo)
        ptest_join(probe);

    scene_t s = {.l = &l};
    pthread_t a, w, b;
    start(&s, &a, &w, fifo ? &wa : NULL);
    ptest_sleep_ms(50);
    b_arg_t barg = {&s, 2000};
    rc = pthread_create(&b, fifo ? &ba : NULL, reader_b_thread, &barg);
    if (rc != 0)
        ptest_fatal(__LINE__, "pthread_create (reader B): %s", strerror(rc));
    rc = (int)(intptr_t)ptest_join(b);
    CHECK(rc == 0, "[%s] reader B: %d (%s); expected 0", what, rc, ptest_errname(rc % 1000));
    finish(&s, a, w, what);
    pthread_attr_destroy(&wa);
    pthread_attr_destroy(&ba);
    return fifo;
}

int main(void)
{
    ptest_begin("rwprefer", 60);
    const char *skip = getenv("PTEST_RWPREFER_SKIP");
    bool readers = skip == NULL || strcmp(skip, "readers") != 0;
    bool writers = skip == NULL || strcmp(skip, "writers") != 0;
    bool fifo = false;
    if (readers) {
        part_readers();
        fifo = part_priority();
    }
    if (writers)
        part_writers();
    return ptest_end("%s; %s",
                     readers ? (fifo ? "readers first (a), and a FIFO reader over a lower FIFO writer (d)"
                                     : "readers first (a), (d) with equal priorities (no SCHED_FIFO here)")
                             : "(a) and (d) skipped",
                     writers ? "writers first (b, c)" : "(b) and (c) skipped");
}
