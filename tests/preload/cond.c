/* cond.c - pthread_cond_* with the interposer's mutexes, as glibc behaves.
 *
 *   signal/broadcast  bounded-buffer producers and consumers (NORMAL,
 *                     ERRORCHECK and RECURSIVE mutexes; signal and broadcast);
 *                     a broadcast wakes every waiter, round after round
 *   timed             timedwait/clockwait: past and near deadlines ETIMEDOUT
 *                     with the mutex held again, bad tv_nsec or clock EINVAL,
 *                     a far deadline returns 0 when signalled, the
 *                     condattr's clock (MONOTONIC) is honoured
 *   destroy at once   the last of the waiters broadcasts, destroys the
 *                     condition variable and revokes its memory (PROT_NONE)
 *                     while the woken waiters are still returning
 *   cancellation      a thread cancelled in cond_wait/timedwait runs its
 *                     cleanup handler with the mutex held (an ERRORCHECK
 *                     mutex's unlock returns 0 there, not EPERM)
 */
#include "ptest.h"

#include <sys/mman.h>

static _Atomic int errors;

static void count_error(int line, const char *what, int rc)
{
    ptest_fail(line, "%s returned %d (%s)", what, rc, ptest_errname(rc));
    baton_fetch_add(&errors, 1, memory_order_relaxed); /* a count only */
}

#define CALL(call)                                                                                           \
    do {                                                                                                     \
        int rc_ = (call);                                                                                    \
        if (rc_ != 0)                                                                                        \
            count_error(__LINE__, #call, rc_);                                                               \
    } while (0)

static void make_mutex(pthread_mutex_t *m, int type)
{
    pthread_mutexattr_t a;
    REQUIRE(pthread_mutexattr_init(&a), 0);
    REQUIRE(pthread_mutexattr_settype(&a, type), 0);
    REQUIRE(pthread_mutex_init(m, &a), 0);
    REQUIRE(pthread_mutexattr_destroy(&a), 0);
}

/* --- producers and consumers --------------------------------------------------------- */

#define PC_CAP 4
#define PC_PRODUCERS 3
#define PC_CONSUMERS 3
#define PC_ITEMS 6000 /* per producer */

typedef struct pc {
    pthread_mutex_t m;
    pthread_cond_t not_empty, not_full;
    int broadcast;
    long buf[PC_CAP];
    int head, count; /* guarded by m */
    int producers_left;
    long consumed, sum; /* guarded by m */
} pc_t;

static void pc_wake(pc_t *p, pthread_cond_t *c)
{
    CALL(p->broadcast ? pthread_cond_broadcast(c) : pthread_cond_signal(c));
}

static void *producer(void *arg)
{
    pc_t *p = arg;
    for (long i = 1; i <= PC_ITEMS; i++) {
        CALL(pthread_mutex_lock(&p->m));
        while (p->count == PC_CAP)
            CALL(pthread_cond_wait(&p->not_full, &p->m));
        p->buf[(p->head + p->count++) % PC_CAP] = i;
        pc_wake(p, &p->not_empty);
        CALL(pthread_mutex_unlock(&p->m));
    }
    CALL(pthread_mutex_lock(&p->m));
    if (--p->producers_left == 0)
        CALL(pthread_cond_broadcast(&p->not_empty)); /* consumers may stop */
    CALL(pthread_mutex_unlock(&p->m));
    return NULL;
}

static void *consumer(void *arg)
{
    pc_t *p = arg;
    for (;;) {
        CALL(pthread_mutex_lock(&p->m));
        while (p->count == 0 && p->producers_left > 0)
            CALL(pthread_cond_wait(&p->not_empty, &p->m));
        if (p->count == 0) {
            CALL(pthread_mutex_unlock(&p->m));
            return NULL;
        }
        long v = p->buf[p->head];
        p->head = (p->head + 1) % PC_CAP;
        p->count--;
        p->consumed++;
        p->sum += v;
        atomic_fetch_add_explicit(&ptest_progress, 1, memory_order_relaxed); /* a report (ptest.h) */
        pc_wake(p, &p->not_full);
        CALL(pthread_mutex_unlock(&p->m));
    }
}

static void test_producer_consumer(int type, int broadcast, const char *phase)
{
    ptest_phase = phase;
    atomic_store_explicit(&ptest_progress, 0, memory_order_relaxed); /* of PC_PRODUCERS * PC_ITEMS */
    pc_t p = {.broadcast = broadcast, .producers_left = PC_PRODUCERS};
    make_mutex(&p.m, type);
    REQUIRE(pthread_cond_init(&p.not_empty, NULL), 0);
    REQUIRE(pthread_cond_init(&p.not_full, NULL), 0);
    pthread_t t[PC_PRODUCERS + PC_CONSUMERS];
    for (int i = 0; i < PC_CONSUMERS; i++)
        t[i] = ptest_spawn(consumer, &p);
    for (int i = 0; i < PC_PRODUCERS; i++)
        t[PC_CONSUMERS + i] = ptest_spawn(producer, &p);
    for (int i = 0; i < PC_PRODUCERS + PC_CONSUMERS; i++)
        ptest_join(t[i]);
    long items = (long)PC_PRODUCERS * PC_ITEMS;
    long sum = (long)PC_PRODUCERS * PC_ITEMS * (PC_ITEMS + 1) / 2;
    CHECK(p.consumed == items && p.sum == sum,
          "consumed %ld items summing to %ld, expected %ld summing to %ld", p.consumed, p.sum, items, sum);
    EXPECT(pthread_cond_destroy(&p.not_empty), 0);
    EXPECT(pthread_cond_destroy(&p.not_full), 0);
    EXPECT(pthread_mutex_destroy(&p.m), 0);
}

/* --- a broadcast wakes everyone ------------------------------------------------------ */

#define BC_WAITERS 6
#define BC_ROUNDS 150

typedef struct bc {
    pthread_mutex_t m;
    pthread_cond_t go, ack;
    int gen;   /* guarded by m */
    int acked; /* guarded by m */
    int ready; /* waiters waiting for the current generation, guarded by m */
} bc_t;

static void *bc_waiter(void *arg)
{
    bc_t *b = arg;
    CALL(pthread_mutex_lock(&b->m));
    for (int g = 0; g < BC_ROUNDS; g++) {
        b->ready++;
        CALL(pthread_cond_signal(&b->ack));
        while (b->gen == g)
            CALL(pthread_cond_wait(&b->go, &b->m));
        b->acked++;
        CALL(pthread_cond_signal(&b->ack));
    }
    CALL(pthread_mutex_unlock(&b->m));
    return NULL;
}

static void test_broadcast_all(void)
{
    ptest_phase = "broadcast wakes every waiter";
    bc_t b = {0};
    REQUIRE(pthread_mutex_init(&b.m, NULL), 0);
    REQUIRE(pthread_cond_init(&b.go, NULL), 0);
    REQUIRE(pthread_cond_init(&b.ack, NULL), 0);
    pthread_t t[BC_WAITERS];
    for (int i = 0; i < BC_WAITERS; i++)
        t[i] = ptest_spawn(bc_waiter, &b);
    CALL(pthread_mutex_lock(&b.m));
    for (int g = 0; g < BC_ROUNDS; g++) {
        while (b.ready < BC_WAITERS * (g + 1))
            CALL(pthread_cond_wait(&b.ack, &b.m));
        b.gen = g + 1;
        CALL(pthread_cond_broadcast(&b.go));
        /* Every waiter must come back, from this one broadcast alone. */
        while (b.acked < BC_WAITERS * (g + 1))
            CALL(pthread_cond_wait(&b.ack, &b.m));
    }
    CALL(pthread_mutex_unlock(&b.m));
    for (int i = 0; i < BC_WAITERS; i++)
        ptest_join(t[i]);
    EXPECT(pthread_cond_destroy(&b.go), 0);
    EXPECT(pthread_cond_destroy(&b.ack), 0);
    EXPECT(pthread_mutex_destroy(&b.m), 0);
}

/* --- timed waits --------------------------------------------------------------------- */

typedef struct waiter {
    pthread_mutex_t *m;
    pthread_cond_t *c;
    int mode;  /* 0 timedwait, 1 clockwait MONOTONIC, 2 timedwait on a MONOTONIC cond */
    int *flag; /* guarded by m */
    ptest_flag_t waiting;
} waiter_t;

/* Wait with a far deadline until *flag is set; returns the last wait's rc. */
static void *far_waiter(void *arg)
{
    waiter_t *w = arg;
    clockid_t clk = w->mode == 0 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    struct timespec far = ptest_in(clk, 20 * 1000000000LL);
    int rc = 0;
    CALL(pthread_mutex_lock(w->m));
    ptest_raise(&w->waiting, 1);
    while (!*w->flag && rc == 0)
        rc = w->mode == 1 ? pthread_cond_clockwait(w->c, w->m, CLOCK_MONOTONIC, &far)
                          : pthread_cond_timedwait(w->c, w->m, &far);
    CALL(pthread_mutex_unlock(w->m));
    return (void *)(intptr_t)rc;
}

static void *trylock_rc(void *arg)
{
    int rc = pthread_mutex_trylock(arg);
    if (rc == 0)
        pthread_mutex_unlock(arg);
    return (void *)(intptr_t)rc;
}

/* After a timed wait returned: this thread holds m again. */
static void held_again(pthread_mutex_t *m, const char *after, int line)
{
    int rc = pthread_mutex_lock(m);
    if (rc != EDEADLK)
        ptest_fail(line,
                   "after %s, relocking the ERRORCHECK mutex returned %s, not EDEADLK (mutex not held again)",
                   after, ptest_errname(rc));
    rc = ptest_on_other_thread(trylock_rc, m);
    if (rc != EBUSY)
        ptest_fail(line, "after %s, another thread's trylock returned %s, not EBUSY (mutex not held again)",
                   after, ptest_errname(rc));
}

static struct timespec bad_nsec(clockid_t clock, long nsec)
{
    struct timespec t = ptest_in(clock, 1000000000LL);
    t.tv_nsec = nsec;
    return t;
}

#define TIMED(call, want, what)                                                                              \
    do {                                                                                                     \
        EXPECT(call, want);                                                                                  \
        held_again(&m, what, __LINE__);                                                                      \
    } while (0)

static void test_timed(void)
{
    ptest_phase = "timed waits";
    pthread_mutex_t m;
    pthread_cond_t c, cm;
    make_mutex(&m, PTHREAD_MUTEX_ERRORCHECK);
    REQUIRE(pthread_cond_init(&c, NULL), 0);
    pthread_condattr_t ca;
    REQUIRE(pthread_condattr_init(&ca), 0);
    REQUIRE(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
    REQUIRE(pthread_cond_init(&cm, &ca), 0);
    REQUIRE(pthread_condattr_destroy(&ca), 0);

    EXPECT(pthread_mutex_lock(&m), 0);
    struct timespec ts = ptest_in(CLOCK_REALTIME, -1000000000LL);
    TIMED(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT, "timedwait past deadline");
    ts = (struct timespec){0, 0};
    TIMED(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT, "timedwait at time 0");
    ts = ptest_in(CLOCK_REALTIME, 20000000);
    TIMED(pthread_cond_timedwait(&c, &m, &ts), ETIMEDOUT, "timedwait near deadline");
    ts = bad_nsec(CLOCK_REALTIME, 1000000000L);
    TIMED(pthread_cond_timedwait(&c, &m, &ts), EINVAL, "timedwait tv_nsec 1e9");
    ts = bad_nsec(CLOCK_REALTIME, -1);
    TIMED(pthread_cond_timedwait(&c, &m, &ts), EINVAL, "timedwait tv_nsec -1");
    ts = ptest_in(CLOCK_MONOTONIC, -1000000000LL);
    TIMED(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts), ETIMEDOUT,
          "clockwait MONOTONIC past deadline");
    ts = ptest_in(CLOCK_MONOTONIC, 20000000);
    TIMED(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts), ETIMEDOUT,
          "clockwait MONOTONIC near deadline");
    ts = ptest_in(CLOCK_REALTIME, 20000000);
    TIMED(pthread_cond_clockwait(&c, &m, CLOCK_REALTIME, &ts), ETIMEDOUT, "clockwait REALTIME near deadline");
    ts = bad_nsec(CLOCK_MONOTONIC, 1000000000L);
    TIMED(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts), EINVAL, "clockwait tv_nsec 1e9");
    ts = ptest_in(CLOCK_MONOTONIC, 1000000000LL);
    TIMED(pthread_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL,
          "clockwait with a bad clock");
    /* The condattr's clock: MONOTONIC deadlines for timedwait. */
    ts = ptest_in(CLOCK_MONOTONIC, -1000000000LL);
    TIMED(pthread_cond_timedwait(&cm, &m, &ts), ETIMEDOUT, "timedwait on a MONOTONIC cond, past deadline");
    ts = ptest_in(CLOCK_MONOTONIC, 20000000);
    TIMED(pthread_cond_timedwait(&cm, &m, &ts), ETIMEDOUT, "timedwait on a MONOTONIC cond, near deadline");
    EXPECT(pthread_mutex_unlock(&m), 0);

    /* Far deadlines: the wait ends by a signal, returning 0. */
    for (int mode = 0; mode < 3; mode++) {
        int flag = 0;
        waiter_t w = {.m = &m, .c = mode == 2 ? &cm : &c, .mode = mode, .flag = &flag};
        pthread_t t = ptest_spawn(far_waiter, &w);
        ptest_await(&w.waiting, 1);
        EXPECT(pthread_mutex_lock(&m), 0); /* the waiter is inside the wait now */
        flag = 1;
        EXPECT(pthread_cond_signal(w.c), 0);
        EXPECT(pthread_mutex_unlock(&m), 0);
        int rc = (int)(intptr_t)ptest_join(t);
        CHECK(rc == 0, "%s with a far deadline, signalled, returned %s",
              mode == 0   ? "timedwait"
              : mode == 1 ? "clockwait"
                          : "timedwait on a MONOTONIC cond",
              ptest_errname(rc));
    }
    EXPECT(pthread_cond_destroy(&c), 0);
    EXPECT(pthread_cond_destroy(&cm), 0);
    EXPECT(pthread_mutex_destroy(&m), 0);
}

/* --- destroy and free right after the broadcast ------------------------------------- */

#define DF_WAITERS 4
#define DF_ROUNDS 400

typedef struct df {
    pthread_mutex_t m;
    pthread_cond_t *c; /* this round's, on its own page */
    int left;          /* guarded by m */
    int done;          /* guarded by m */
    size_t page;
    pthread_barrier_t start, end;
} df_t;

static void *df_worker(void *arg)
{
    df_t *d = arg;
    for (int r = 0; r < DF_ROUNDS; r++) {
        pthread_barrier_wait(&d->start);
        pthread_cond_t *c = d->c;
        CALL(pthread_mutex_lock(&d->m));
        if (--d->left == 0) {
            d->done = 1;
            CALL(pthread_cond_broadcast(c));
            /* Odd rounds destroy after unlocking, even ones before: the woken
             * waiters are still inside pthread_cond_wait either way. */
            if (r & 1)
                CALL(pthread_mutex_unlock(&d->m));
            CALL(pthread_cond_destroy(c));
            memset(c, 0xa5, sizeof *c);
            if (mprotect(c, d->page, PROT_NONE) != 0)
                ptest_fatal(__LINE__, "mprotect failed");
            if (!(r & 1))
                CALL(pthread_mutex_unlock(&d->m));
        } else {
            while (!d->done)
                CALL(pthread_cond_wait(c, &d->m));
            CALL(pthread_mutex_unlock(&d->m));
        }
        pthread_barrier_wait(&d->end);
    }
    return NULL;
}

static void test_destroy_after_broadcast(void)
{
    ptest_phase = "destroy and free right after broadcast";
    df_t d = {.page = (size_t)sysconf(_SC_PAGESIZE)};
    REQUIRE(pthread_mutex_init(&d.m, NULL), 0);
    REQUIRE(pthread_barrier_init(&d.start, NULL, DF_WAITERS + 1), 0);
    REQUIRE(pthread_barrier_init(&d.end, NULL, DF_WAITERS + 1), 0);
    size_t len = d.page * DF_ROUNDS;
    char *pages = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED)
        ptest_fatal(__LINE__, "mmap failed");
    pthread_t t[DF_WAITERS];
    for (int i = 0; i < DF_WAITERS; i++)
        t[i] = ptest_spawn(df_worker, &d);
    for (int r = 0; r < DF_ROUNDS; r++) {
        d.c = (pthread_cond_t *)(void *)(pages + (size_t)r * d.page);
        REQUIRE(pthread_cond_init(d.c, NULL), 0);
        d.left = DF_WAITERS;
        d.done = 0;
        pthread_barrier_wait(&d.start);
        pthread_barrier_wait(&d.end);
    }
    for (int i = 0; i < DF_WAITERS; i++)
        ptest_join(t[i]);
    munmap(pages, len);
    pthread_barrier_destroy(&d.start);
    pthread_barrier_destroy(&d.end);
    EXPECT(pthread_mutex_destroy(&d.m), 0);
}

/* --- cancellation ---------------------------------------------------------------------- */

typedef struct cx {
    pthread_mutex_t m; /* ERRORCHECK */
    pthread_cond_t c;
    int timed;
    int in_wait;    /* guarded by m */
    int handler_rc; /* set by the cleanup handler */
    int handler_ran;
} cx_t;

static void cx_cleanup(void *arg)
{
    cx_t *x = arg;
    x->handler_ran = 1;
    /* The mutex must be held by this (cancelled) thread again. */
    x->handler_rc = pthread_mutex_unlock(&x->m);
}

static void *cx_thread(void *arg)
{
    cx_t *x = arg;
    CALL(pthread_mutex_lock(&x->m));
    pthread_cleanup_push(cx_cleanup, x);
    x->in_wait = 1;
    struct timespec far = ptest_in(CLOCK_REALTIME, 60 * 1000000000LL);
    for (;;) {
        if (x->timed)
            pthread_cond_timedwait(&x->c, &x->m, &far);
        else
            pthread_cond_wait(&x->c, &x->m);
    }
    pthread_cleanup_pop(0);
    return NULL;
}

static void test_cancel(void)
{
    ptest_phase = "cancel in cond_wait";
    for (int i = 0; i < 40; i++) {
        cx_t x = {.timed = i & 1, .handler_rc = -1};
        int hold = (i >> 1) & 1; /* cancel while this thread holds the mutex */
        make_mutex(&x.m, PTHREAD_MUTEX_ERRORCHECK);
        REQUIRE(pthread_cond_init(&x.c, NULL), 0);
        pthread_t t = ptest_spawn(cx_thread, &x);
        for (;;) {
            EXPECT(pthread_mutex_lock(&x.m), 0);
            if (x.in_wait)
                break; /* and the thread is inside the wait: it released m */
            EXPECT(pthread_mutex_unlock(&x.m), 0);
            sched_yield();
        }
        if (!hold)
            EXPECT(pthread_mutex_unlock(&x.m), 0);
        EXPECT(pthread_cancel(t), 0);
        if (hold) {
            ptest_sleep_ms(1); /* the cancelled thread now waits for m */
            EXPECT(pthread_mutex_unlock(&x.m), 0);
        }
        void *r = ptest_join(t);
        const char *how = x.timed ? (hold ? "timedwait, cancelled while the mutex was held" : "timedwait")
                                  : (hold ? "cond_wait, cancelled while the mutex was held" : "cond_wait");
        CHECK(r == PTHREAD_CANCELED, "%s: the thread was not cancelled", how);
        CHECK(
            x.handler_ran && x.handler_rc == 0,
            "%s: in the cleanup handler, unlocking the ERRORCHECK mutex returned %s (expected 0: held again)",
            how, x.handler_ran ? ptest_errname(x.handler_rc) : "(handler did not run)");
        /* The mutex is free and the condition variable usable. */
        EXPECT(pthread_mutex_trylock(&x.m), 0);
        EXPECT(pthread_cond_signal(&x.c), 0);
        struct timespec past = ptest_in(CLOCK_REALTIME, -1000000);
        EXPECT(pthread_cond_timedwait(&x.c, &x.m, &past), ETIMEDOUT);
        EXPECT(pthread_mutex_unlock(&x.m), 0);
        EXPECT(pthread_cond_destroy(&x.c), 0);
        EXPECT(pthread_mutex_destroy(&x.m), 0);
    }
}

int main(void)
{
    ptest_begin("cond", 120);
    test_producer_consumer(PTHREAD_MUTEX_NORMAL, 0, "producers/consumers, NORMAL mutex, signal");
    test_producer_consumer(PTHREAD_MUTEX_ERRORCHECK, 1, "producers/consumers, ERRORCHECK mutex, broadcast");
    test_producer_consumer(PTHREAD_MUTEX_RECURSIVE, 0, "producers/consumers, RECURSIVE mutex, signal");
    test_broadcast_all();
    test_timed();
    test_destroy_after_broadcast();
    test_cancel();
    /* Relaxed: after the joins. */
    CHECK(baton_load(&errors, memory_order_relaxed) == 0, "%d failed call(s)",
          baton_load(&errors, memory_order_relaxed));
    return ptest_end("signal, broadcast, timed, destroy-after-broadcast, cancellation");
}
