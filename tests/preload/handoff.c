/* handoff.c - a NORMAL mutex locked by one thread is unlocked by another, as
 * glibc allows (POSIX leaves it undefined; programs do it: a thread that
 * times out in pthread_cond_timedwait gets the mutex back and may exit
 * holding it, and the thread that joins it unlocks it).
 *
 *   dead owner    a thread locks the mutex and exits; main's unlock returns
 *                 0 and main's trylock then succeeds (PTHREAD_MUTEX_
 *                 INITIALIZER, pthread_mutex_init with a NORMAL attribute
 *                 and with none), 1000 rounds each
 *   live owner    the locking thread is still alive when main unlocks, and
 *                 locks and unlocks the mutex again afterwards (whatever
 *                 the kind remembered of its hold must not make it think it
 *                 still holds it)
 *   waiter        a third thread blocks in lock while main releases the
 *                 dead thread's hold: it gets the mutex then, not before
 *   cond timeout  a thread's pthread_cond_timedwait times out and the
 *                 thread exits holding the mutex; main unlocks it
 *   stray unlock  an unlock of a free NORMAL mutex returns 0 (glibc's
 *                 answer) and the mutex works on: another thread locks it,
 *                 and it still excludes
 *   spinlock      a spinlock locked by a thread that exits is unlocked by
 *                 main, and then free (glibc's spinlocks have no owner)
 *   checked       ERRORCHECK and RECURSIVE mutexes keep refusing: main's
 *                 unlock of a dead thread's hold returns EPERM and the
 *                 mutex stays held (trylock EBUSY)
 * Every NORMAL mutex is destroyed at the end (0: nothing left held).
 */
#include "ptest.h"

#define ROUNDS 1000

enum how { STATIC_INIT, ATTR_NORMAL, NULL_ATTR };
static const char *const how_name[] = {"PTHREAD_MUTEX_INITIALIZER", "attr NORMAL", "NULL attr"};

static void make(pthread_mutex_t *m, enum how how, int type)
{
    if (how == STATIC_INIT) {
        pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER;
        memcpy(m, &init, sizeof *m);
        return;
    }
    if (how == NULL_ATTR) {
        REQUIRE(pthread_mutex_init(m, NULL), 0);
        return;
    }
    pthread_mutexattr_t a;
    REQUIRE(pthread_mutexattr_init(&a), 0);
    REQUIRE(pthread_mutexattr_settype(&a, type), 0);
    REQUIRE(pthread_mutex_init(m, &a), 0);
    REQUIRE(pthread_mutexattr_destroy(&a), 0);
}

static void *lock_and_exit(void *arg) { return (void *)(intptr_t)pthread_mutex_lock(arg); }

/* --- dead owner ------------------------------------------------------------------- */

static void dead_owner(enum how how)
{
    ptest_phase = "dead owner";
    static pthread_mutex_t m; /* static: as most such mutexes are */
    make(&m, how, PTHREAD_MUTEX_NORMAL);
    for (int i = 0; i < ROUNDS; i++) {
        REQUIRE(ptest_on_other_thread(lock_and_exit, &m), 0);
        int rc = pthread_mutex_unlock(&m);
        if (rc != 0)
            ptest_fatal(__LINE__,
                        "[%s] round %d: unlock of a dead thread's hold returned %d (%s), expected 0",
                        how_name[how], i, rc, ptest_errname(rc));
        rc = pthread_mutex_trylock(&m);
        if (rc != 0)
            ptest_fatal(__LINE__, "[%s] round %d: trylock after the unlock returned %d (%s), expected 0",
                        how_name[how], i, rc, ptest_errname(rc));
        EXPECT(pthread_mutex_unlock(&m), 0);
    }
    EXPECT(pthread_mutex_destroy(&m), 0);
}

/* --- live owner ------------------------------------------------------------------- */

typedef struct live {
    pthread_mutex_t *m;
    ptest_flag_t locked, released;
} live_t;

static void *live_owner(void *arg)
{
    live_t *l = arg;
    int rc = pthread_mutex_lock(l->m);
    if (rc != 0)
        return (void *)(intptr_t)(100 + rc);
    ptest_raise(&l->locked, 1);
    ptest_await(&l->released, 1); /* main unlocks our hold */
    rc = pthread_mutex_lock(l->m);
    if (rc != 0)
        return (void *)(intptr_t)(200 + rc);
    rc = pthread_mutex_unlock(l->m);
    return (void *)(intptr_t)(rc != 0 ? 300 + rc : 0);
}

static void live(enum how how)
{
    ptest_phase = "live owner";
    pthread_mutex_t m;
    make(&m, how, PTHREAD_MUTEX_NORMAL);
    for (int i = 0; i < ROUNDS / 10; i++) {
        live_t l = {.m = &m};
        pthread_t t = ptest_spawn(live_owner, &l);
        ptest_await(&l.locked, 1);
        EXPECT(pthread_mutex_unlock(&m), 0);
        ptest_raise(&l.released, 1);
        int rc = (int)(intptr_t)ptest_join(t);
        CHECK(rc == 0, "[%s] round %d: the first owner's relock/unlock failed: %d", how_name[how], i, rc);
        EXPECT(pthread_mutex_trylock(&m), 0);
        EXPECT(pthread_mutex_unlock(&m), 0);
    }
    EXPECT(pthread_mutex_destroy(&m), 0);
}

/* --- a waiter gets the mutex main releases --------------------------------------------- */

typedef struct waiter {
    pthread_mutex_t *m;
    ptest_flag_t started;
    _Atomic int got;
} waiter_t;

static void *wait_for_it(void *arg)
{
    waiter_t *w = arg;
    ptest_raise(&w->started, 1);
    int rc = pthread_mutex_lock(w->m);
    if (rc != 0)
        return (void *)(intptr_t)(100 + rc);
    baton_store(&w->got, 1, memory_order_relaxed); /* read after the join */
    return (void *)(intptr_t)pthread_mutex_unlock(w->m);
}

static void waiter(enum how how)
{
    ptest_phase = "waiter";
    pthread_mutex_t m;
    make(&m, how, PTHREAD_MUTEX_NORMAL);
    for (int i = 0; i < ROUNDS / 10; i++) {
        REQUIRE(ptest_on_other_thread(lock_and_exit, &m), 0);
        waiter_t w = {.m = &m};
        pthread_t t = ptest_spawn(wait_for_it, &w);
        ptest_await(&w.started, 1);
        if (i % 2)
            ptest_sleep_ms(1); /* often asleep in lock by now */
        /* Relaxed: a flag the waiter sets once it holds the mutex; it must
         * not before our unlock (a lock that forgot the dead thread's hold
         * would let it in). */
        CHECK(baton_load(&w.got, memory_order_relaxed) == 0,
              "[%s] round %d: the waiter got the mutex while the dead thread held it", how_name[how], i);
        EXPECT(pthread_mutex_unlock(&m), 0);
        EXPECT((int)(intptr_t)ptest_join(t), 0);
        CHECK(baton_load(&w.got, memory_order_relaxed) == 1, "[%s] round %d: the waiter never got the mutex",
              how_name[how], i);
    }
    EXPECT(pthread_mutex_trylock(&m), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);
    EXPECT(pthread_mutex_destroy(&m), 0);
}

/* --- a timed-out condition wait, and the thread exits holding the mutex -------------- */

typedef struct cw {
    pthread_mutex_t m;
    pthread_cond_t c;
} cw_t;

static void *time_out(void *arg)
{
    cw_t *cw = arg;
    int rc = pthread_mutex_lock(&cw->m);
    if (rc != 0)
        return (void *)(intptr_t)(100 + rc);
    struct timespec soon = ptest_in(CLOCK_REALTIME, 1000000); /* 1 ms */
    rc = pthread_cond_timedwait(&cw->c, &cw->m, &soon);
    return (void *)(intptr_t)(rc == ETIMEDOUT ? 0 : 200 + rc); /* and exit holding the mutex */
}

static void cond_timeout(enum how how)
{
    ptest_phase = "cond timeout";
    cw_t cw;
    make(&cw.m, how, PTHREAD_MUTEX_NORMAL);
    REQUIRE(pthread_cond_init(&cw.c, NULL), 0);
    for (int i = 0; i < 20; i++) {
        EXPECT(ptest_on_other_thread(time_out, &cw), 0);
        EXPECT(pthread_mutex_unlock(&cw.m), 0);
        EXPECT(pthread_mutex_trylock(&cw.m), 0);
        EXPECT(pthread_mutex_unlock(&cw.m), 0);
    }
    EXPECT(pthread_cond_destroy(&cw.c), 0);
    EXPECT(pthread_mutex_destroy(&cw.m), 0);
}

/* --- an unlock of a free NORMAL mutex ----------------------------------------------------
 * Undefined by POSIX; glibc returns 0 and the mutex works on, and so must
 * every kind (a lock must not count a release nobody took). */

static void *lock_briefly(void *arg)
{
    int rc = pthread_mutex_lock(arg);
    if (rc != 0)
        return (void *)(intptr_t)(100 + rc);
    return (void *)(intptr_t)pthread_mutex_unlock(arg);
}

static void *try_briefly(void *arg)
{
    int rc = pthread_mutex_trylock(arg);
    if (rc == 0 && pthread_mutex_unlock(arg) != 0)
        return (void *)(intptr_t)-1;
    return (void *)(intptr_t)rc;
}

static void stray(enum how how)
{
    ptest_phase = "stray unlock";
    /* Not destroyed: glibc's destroy answers EBUSY after a stray unlock
     * (its user count wrapped). */
    static pthread_mutex_t ms[3];
    pthread_mutex_t *m = &ms[how];
    make(m, how, PTHREAD_MUTEX_NORMAL);
    for (int i = 0; i < 10; i++) {
        EXPECT(pthread_mutex_lock(m), 0);
        EXPECT(pthread_mutex_unlock(m), 0);
        EXPECT(pthread_mutex_unlock(m), 0); /* free already */
        EXPECT(ptest_on_other_thread(lock_briefly, m), 0);
        EXPECT(pthread_mutex_trylock(m), 0);
        EXPECT(ptest_on_other_thread(try_briefly, m), EBUSY); /* it still excludes */
        EXPECT(pthread_mutex_unlock(m), 0);
    }
}

/* --- a spinlock: no owner, any thread unlocks it (glibc) ---------------------------------- */

typedef struct spin_box {
    pthread_spinlock_t l; /* volatile int: boxed, to travel as a void * */
} spin_box_t;

static void *spin_and_exit(void *arg) { return (void *)(intptr_t)pthread_spin_lock(&((spin_box_t *)arg)->l); }

static void spinlock(void)
{
    ptest_phase = "spinlock";
    static spin_box_t sb;
    REQUIRE(pthread_spin_init(&sb.l, PTHREAD_PROCESS_PRIVATE), 0);
    for (int i = 0; i < ROUNDS / 10; i++) {
        REQUIRE(ptest_on_other_thread(spin_and_exit, &sb), 0);
        EXPECT(pthread_spin_unlock(&sb.l), 0);
        int rc = pthread_spin_trylock(&sb.l);
        if (rc != 0)
            ptest_fatal(__LINE__,
                        "round %d: spin_trylock after another thread's unlock returned %d (%s), "
                        "expected 0",
                        i, rc, ptest_errname(rc));
        EXPECT(pthread_spin_unlock(&sb.l), 0);
    }
    EXPECT(pthread_spin_destroy(&sb.l), 0);
}

/* --- ERRORCHECK and RECURSIVE refuse ----------------------------------------------------- */

static void checked(int type, const char *name)
{
    ptest_phase = name;
    /* Held by a dead thread for good: never destroyed. */
    static pthread_mutex_t ms[2];
    pthread_mutex_t *m = &ms[type == PTHREAD_MUTEX_RECURSIVE];
    make(m, ATTR_NORMAL, type);
    REQUIRE(ptest_on_other_thread(lock_and_exit, m), 0);
    for (int i = 0; i < 3; i++) {
        EXPECT(pthread_mutex_unlock(m), EPERM);
        EXPECT(pthread_mutex_trylock(m), EBUSY);
    }
}

int main(void)
{
    ptest_begin("handoff", 120);
    for (enum how h = STATIC_INIT; h <= NULL_ATTR; h++) {
        dead_owner(h);
        live(h);
        waiter(h);
        cond_timeout(h);
        stray(h);
    }
    spinlock();
    checked(PTHREAD_MUTEX_ERRORCHECK, "errorcheck");
    checked(PTHREAD_MUTEX_RECURSIVE, "recursive");
    return ptest_end("%d rounds of a NORMAL mutex unlocked by another thread, 3 ways of making it; a "
                     "spinlock likewise; ERRORCHECK and RECURSIVE refuse",
                     ROUNDS);
}
