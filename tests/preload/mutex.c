/* mutex.c - pthread_mutex_* keeps glibc's semantics, for every way of
 * making a mutex: the attribute types NORMAL, DEFAULT, ERRORCHECK, RECURSIVE
 * (and a NULL attribute) and every static initializer.
 *
 *   error codes   trylock EBUSY; ERRORCHECK relock EDEADLK, unlock by a
 *                 non-owner or twice EPERM; RECURSIVE counts, EPERM for a
 *                 non-owner; destroy of a held mutex EBUSY (glibc's answer)
 *   timed         timedlock/clocklock: past deadline ETIMEDOUT, bad tv_nsec
 *                 EINVAL only when the call would block, bad clock EINVAL,
 *                 a waiter with a far deadline gets the lock when released
 *   free at once  the last of two holders destroys the mutex and revokes
 *                 its memory (PROT_NONE) right after the other's unlock
 *   exclusion     8 threads count under the lock (lock, trylock, timedlock)
 */
#include "ptest.h"

#include <sys/mman.h>

enum behaviour { B_NORMAL, B_ERRORCHECK, B_RECURSIVE };

typedef struct config {
    const char *name;
    int how; /* 0: attribute of type `type`; 1: NULL attribute; 2: static image */
    int type;
    pthread_mutex_t image; /* the static initializer, when how == 2 */
    enum behaviour b;
} config_t;

static const config_t configs[] = {
    {"attr NORMAL", 0, PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_INITIALIZER, B_NORMAL},
    {"attr DEFAULT", 0, PTHREAD_MUTEX_DEFAULT, PTHREAD_MUTEX_INITIALIZER, B_NORMAL},
    {"attr ERRORCHECK", 0, PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_INITIALIZER, B_ERRORCHECK},
    {"attr RECURSIVE", 0, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_INITIALIZER, B_RECURSIVE},
    {"NULL attr", 1, 0, PTHREAD_MUTEX_INITIALIZER, B_NORMAL},
    {"PTHREAD_MUTEX_INITIALIZER", 2, 0, PTHREAD_MUTEX_INITIALIZER, B_NORMAL},
    {"PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP", 2, 0, PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP, B_RECURSIVE},
    {"PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP", 2, 0, PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP, B_ERRORCHECK},
    {"PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP", 2, 0, PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP, B_NORMAL},
};
#define NCONFIGS (sizeof configs / sizeof configs[0])

static const config_t *cur; /* the configuration under test, for messages */

#define FAILC(...) ptest_fail(__LINE__, __VA_ARGS__)
#define EXPECTC(call, want)                                                                                  \
    do {                                                                                                     \
        int rc_ = (call);                                                                                    \
        int want_ = (want);                                                                                  \
        if (rc_ != want_)                                                                                    \
            ptest_fail(__LINE__, "[%s] %s returned %d (%s), expected %s", cur->name, #call, rc_,             \
                       ptest_errname(rc_), ptest_errname(want_));                                            \
    } while (0)

/* Make a mutex as configuration c says (a static initializer is the same
 * bytes whether the object is in static storage or copied there). */
static void make(const config_t *c, pthread_mutex_t *m)
{
    if (c->how == 2) {
        memcpy(m, &c->image, sizeof *m);
        return;
    }
    if (c->how == 1) {
        REQUIRE(pthread_mutex_init(m, NULL), 0);
        return;
    }
    pthread_mutexattr_t a;
    REQUIRE(pthread_mutexattr_init(&a), 0);
    REQUIRE(pthread_mutexattr_settype(&a, c->type), 0);
    REQUIRE(pthread_mutex_init(m, &a), 0);
    REQUIRE(pthread_mutexattr_destroy(&a), 0);
}

/* --- operations run by another thread ------------------------------------------ */

enum op_kind {
    OP_TRYLOCK,
    OP_LOCK_UNLOCK,
    OP_UNLOCK,
    OP_TIMEDLOCK,
    OP_CLOCKLOCK,
    OP_HANDOVER_TIMED,
    OP_HANDOVER_CLOCK
};

typedef struct op {
    pthread_mutex_t *m;
    enum op_kind kind;
    clockid_t clock;
    struct timespec ts;
    ptest_flag_t *started;
} op_t;

/* Returns the call's error number; a successful acquisition is released. */
static void *run_op(void *arg)
{
    op_t *o = arg;
    int rc = 0;
    switch (o->kind) {
    case OP_TRYLOCK: rc = pthread_mutex_trylock(o->m); break;
    case OP_LOCK_UNLOCK: rc = pthread_mutex_lock(o->m); break;
    case OP_UNLOCK: return (void *)(intptr_t)pthread_mutex_unlock(o->m);
    case OP_TIMEDLOCK: rc = pthread_mutex_timedlock(o->m, &o->ts); break;
    case OP_CLOCKLOCK: rc = pthread_mutex_clocklock(o->m, o->clock, &o->ts); break;
    case OP_HANDOVER_TIMED:
    case OP_HANDOVER_CLOCK: {
        clockid_t clk = o->kind == OP_HANDOVER_TIMED ? CLOCK_REALTIME : o->clock;
        struct timespec far = ptest_in(clk, 20 * 1000000000LL);
        ptest_raise(o->started, 1);
        rc = o->kind == OP_HANDOVER_TIMED ? pthread_mutex_timedlock(o->m, &far)
                                          : pthread_mutex_clocklock(o->m, clk, &far);
        break;
    }
    }
    if (rc == 0) {
        int u = pthread_mutex_unlock(o->m);
        if (u != 0)
            return (void *)(intptr_t)(1000 + u);
    }
    return (void *)(intptr_t)rc;
}

static int other(pthread_mutex_t *m, enum op_kind k)
{
    op_t o = {.m = m, .kind = k};
    return ptest_on_other_thread(run_op, &o);
}

static int other_timed(pthread_mutex_t *m, enum op_kind k, clockid_t clock, struct timespec ts)
{
    op_t o = {.m = m, .kind = k, .clock = clock, .ts = ts};
    return ptest_on_other_thread(run_op, &o);
}

static struct timespec bad_nsec(clockid_t clock, long nsec)
{
    struct timespec t = ptest_in(clock, 1000000000LL);
    t.tv_nsec = nsec;
    return t;
}

/* --- the checks ---------------------------------------------------------------------- */

static void test_basic(const config_t *c)
{
    ptest_phase = "basic";
    pthread_mutex_t m;
    make(c, &m);
    EXPECTC(pthread_mutex_lock(&m), 0);
    EXPECTC(other(&m, OP_TRYLOCK), EBUSY);
    if (c->b == B_RECURSIVE) {
        EXPECTC(pthread_mutex_trylock(&m), 0);
        EXPECTC(pthread_mutex_unlock(&m), 0);
    } else {
        EXPECTC(pthread_mutex_trylock(&m), EBUSY);
    }
    EXPECTC(pthread_mutex_unlock(&m), 0);
    EXPECTC(pthread_mutex_trylock(&m), 0);
    EXPECTC(other(&m, OP_TRYLOCK), EBUSY);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    EXPECTC(other(&m, OP_LOCK_UNLOCK), 0);
    EXPECTC(other(&m, OP_TRYLOCK), 0);
    EXPECTC(pthread_mutex_lock(&m), 0);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    EXPECTC(pthread_mutex_destroy(&m), 0);
}

static void test_errorcheck(const config_t *c)
{
    ptest_phase = "errorcheck";
    pthread_mutex_t m;
    make(c, &m);
    EXPECTC(pthread_mutex_unlock(&m), EPERM); /* never locked */
    EXPECTC(pthread_mutex_lock(&m), 0);
    EXPECTC(pthread_mutex_lock(&m), EDEADLK);
    EXPECTC(pthread_mutex_trylock(&m), EBUSY);
    struct timespec far = ptest_in(CLOCK_REALTIME, 10 * 1000000000LL);
    EXPECTC(pthread_mutex_timedlock(&m, &far), EDEADLK);
    struct timespec mfar = ptest_in(CLOCK_MONOTONIC, 10 * 1000000000LL);
    EXPECTC(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &mfar), EDEADLK);
    EXPECTC(other(&m, OP_UNLOCK), EPERM);
    EXPECTC(other(&m, OP_TRYLOCK), EBUSY);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    EXPECTC(pthread_mutex_unlock(&m), EPERM); /* twice */
    EXPECTC(other(&m, OP_LOCK_UNLOCK), 0);
    EXPECTC(pthread_mutex_unlock(&m), EPERM); /* after another thread's use */
    EXPECTC(pthread_mutex_destroy(&m), 0);
}

static void test_recursive(const config_t *c)
{
    ptest_phase = "recursive";
    pthread_mutex_t m;
    make(c, &m);
    EXPECTC(pthread_mutex_unlock(&m), EPERM); /* never locked */
    for (int i = 0; i < 3; i++)
        EXPECTC(pthread_mutex_lock(&m), 0);
    EXPECTC(pthread_mutex_trylock(&m), 0); /* 4 */
    struct timespec far = ptest_in(CLOCK_REALTIME, 10 * 1000000000LL);
    EXPECTC(pthread_mutex_timedlock(&m, &far), 0); /* 5 */
    struct timespec mfar = ptest_in(CLOCK_MONOTONIC, 10 * 1000000000LL);
    EXPECTC(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &mfar), 0); /* 6 */
    EXPECTC(other(&m, OP_TRYLOCK), EBUSY);
    EXPECTC(other(&m, OP_UNLOCK), EPERM);
    for (int i = 0; i < 5; i++) {
        EXPECTC(pthread_mutex_unlock(&m), 0);
        EXPECTC(other(&m, OP_TRYLOCK), EBUSY); /* still held: 5 - i levels */
    }
    EXPECTC(pthread_mutex_unlock(&m), 0); /* the sixth: released */
    EXPECTC(other(&m, OP_LOCK_UNLOCK), 0);
    EXPECTC(pthread_mutex_unlock(&m), EPERM); /* not held any more */
    EXPECTC(pthread_mutex_lock(&m), 0);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    EXPECTC(pthread_mutex_destroy(&m), 0);
}

static void test_timed(const config_t *c)
{
    ptest_phase = "timed";
    pthread_mutex_t m;
    make(c, &m);
    EXPECTC(pthread_mutex_lock(&m), 0);
    /* Held by this thread; another thread tries. */
    EXPECTC(other_timed(&m, OP_TIMEDLOCK, 0, ptest_in(CLOCK_REALTIME, -1000000000LL)), ETIMEDOUT);
    EXPECTC(other_timed(&m, OP_TIMEDLOCK, 0, (struct timespec){0, 0}), ETIMEDOUT);
    EXPECTC(other_timed(&m, OP_TIMEDLOCK, 0, ptest_in(CLOCK_REALTIME, 20000000)), ETIMEDOUT);
    EXPECTC(other_timed(&m, OP_TIMEDLOCK, 0, bad_nsec(CLOCK_REALTIME, 1000000000L)), EINVAL);
    EXPECTC(other_timed(&m, OP_TIMEDLOCK, 0, bad_nsec(CLOCK_REALTIME, -1)), EINVAL);
    EXPECTC(other_timed(&m, OP_CLOCKLOCK, CLOCK_MONOTONIC, ptest_in(CLOCK_MONOTONIC, -1000000000LL)),
            ETIMEDOUT);
    EXPECTC(other_timed(&m, OP_CLOCKLOCK, CLOCK_MONOTONIC, ptest_in(CLOCK_MONOTONIC, 20000000)), ETIMEDOUT);
    EXPECTC(other_timed(&m, OP_CLOCKLOCK, CLOCK_MONOTONIC, bad_nsec(CLOCK_MONOTONIC, 1000000000L)), EINVAL);
    EXPECTC(other_timed(&m, OP_CLOCKLOCK, CLOCK_REALTIME, ptest_in(CLOCK_REALTIME, -1000000000LL)),
            ETIMEDOUT);
    EXPECTC(other_timed(&m, OP_CLOCKLOCK, CLOCK_PROCESS_CPUTIME_ID, ptest_in(CLOCK_REALTIME, 1000000000LL)),
            EINVAL);
    EXPECTC(pthread_mutex_unlock(&m), 0);

    /* Free: a call that does not block does not look at tv_nsec. */
    struct timespec bad = bad_nsec(CLOCK_REALTIME, 1000000000L);
    EXPECTC(pthread_mutex_timedlock(&m, &bad), 0);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    bad = bad_nsec(CLOCK_MONOTONIC, -5);
    EXPECTC(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad), 0);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    struct timespec past = ptest_in(CLOCK_REALTIME, -1000000000LL);
    EXPECTC(pthread_mutex_timedlock(&m, &past), 0);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    past = ptest_in(CLOCK_MONOTONIC, -1000000000LL);
    EXPECTC(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &past), 0);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    /* glibc checks the clock first, even on a free mutex. */
    past = ptest_in(CLOCK_REALTIME, 1000000000LL);
    EXPECTC(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
    EXPECTC(other(&m, OP_TRYLOCK), 0); /* ... and took nothing */

    /* A waiter with a far deadline gets the lock once it is released. */
    for (int k = 0; k < 2; k++) {
        ptest_flag_t started = {0};
        op_t o = {.m = &m,
                  .kind = k ? OP_HANDOVER_CLOCK : OP_HANDOVER_TIMED,
                  .clock = CLOCK_MONOTONIC,
                  .started = &started};
        EXPECTC(pthread_mutex_lock(&m), 0);
        pthread_t t = ptest_spawn(run_op, &o);
        ptest_await(&started, 1);
        ptest_sleep_ms(5); /* let it block (not required for correctness) */
        EXPECTC(pthread_mutex_unlock(&m), 0);
        int rc = (int)(intptr_t)ptest_join(t);
        if (rc != 0)
            FAILC("[%s] %s with a far deadline returned %d (%s) after the holder released", c->name,
                  k ? "clocklock" : "timedlock", rc, ptest_errname(rc));
    }
    EXPECTC(pthread_mutex_destroy(&m), 0);
}

static void test_destroy(const config_t *c)
{
    ptest_phase = "destroy";
    pthread_mutex_t m;
    make(c, &m);
    /* glibc answers EBUSY for a held mutex and leaves it usable. */
    EXPECTC(pthread_mutex_lock(&m), 0);
    EXPECTC(pthread_mutex_destroy(&m), EBUSY);
    EXPECTC(other(&m, OP_TRYLOCK), EBUSY);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    if (c->b == B_RECURSIVE) {
        EXPECTC(pthread_mutex_lock(&m), 0);
        EXPECTC(pthread_mutex_lock(&m), 0);
        EXPECTC(pthread_mutex_destroy(&m), EBUSY);
        EXPECTC(pthread_mutex_unlock(&m), 0);
        EXPECTC(pthread_mutex_destroy(&m), EBUSY);
        EXPECTC(pthread_mutex_unlock(&m), 0);
    }
    EXPECTC(pthread_mutex_destroy(&m), 0);
    /* Made again in the same memory, it works as new. */
    make(c, &m);
    EXPECTC(pthread_mutex_lock(&m), 0);
    EXPECTC(other(&m, OP_TRYLOCK), EBUSY);
    EXPECTC(pthread_mutex_unlock(&m), 0);
    EXPECTC(pthread_mutex_destroy(&m), 0);
    /* Destroying a never-used mutex. */
    make(c, &m);
    EXPECTC(pthread_mutex_destroy(&m), 0);
}

/* --- unlock, then destroy and free at once by the other holder -------------------- */

#define FREE_OBJS 1500

typedef struct shared_obj {
    pthread_mutex_t m;
    int refs; /* guarded by m */
} shared_obj_t;

typedef struct free_ctx {
    char *pages;
    size_t page;
    _Atomic int bad;
} free_ctx_t;

static void *free_worker(void *arg)
{
    free_ctx_t *fc = arg;
    for (int i = 0; i < FREE_OBJS; i++) {
        shared_obj_t *o = (shared_obj_t *)(void *)(fc->pages + (size_t)i * fc->page);
        if (pthread_mutex_lock(&o->m) != 0) {
            baton_fetch_add(&fc->bad, 1, memory_order_relaxed); /* a count only */
            continue;
        }
        int last = --o->refs == 0;
        if (pthread_mutex_unlock(&o->m) != 0)
            baton_fetch_add(&fc->bad, 1, memory_order_relaxed); /* a count only */
        if (!last)
            continue;
        /* The other holder may still be returning from its unlock: from now
         * on the mutex memory is gone. */
        int rc = pthread_mutex_destroy(&o->m);
        if (rc != 0) {
            ptest_fail(__LINE__, "[%s] destroy right after the other holder's unlock returned %d (%s)",
                       cur->name, rc, ptest_errname(rc));
            baton_fetch_add(&fc->bad, 1, memory_order_relaxed); /* a count only */
        }
        memset(o, 0xa5, sizeof *o);
        if (mprotect(o, fc->page, PROT_NONE) != 0)
            ptest_fatal(__LINE__, "mprotect failed");
    }
    return NULL;
}

static void test_free_at_once(const config_t *c)
{
    ptest_phase = "unlock then destroy+free by the other holder";
    free_ctx_t fc = {.page = (size_t)sysconf(_SC_PAGESIZE)};
    size_t len = fc.page * FREE_OBJS;
    fc.pages = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fc.pages == MAP_FAILED)
        ptest_fatal(__LINE__, "mmap failed");
    for (int i = 0; i < FREE_OBJS; i++) {
        shared_obj_t *o = (shared_obj_t *)(void *)(fc.pages + (size_t)i * fc.page);
        make(c, &o->m);
        o->refs = 2;
    }
    pthread_t a = ptest_spawn(free_worker, &fc), b = ptest_spawn(free_worker, &fc);
    ptest_join(a);
    ptest_join(b);
    /* Relaxed: the joins ordered the workers' updates before this read. */
    int bad = baton_load(&fc.bad, memory_order_relaxed);
    if (bad)
        FAILC("[%s] %d lock/unlock/destroy call(s) failed in the free-at-once pattern", c->name, bad);
    munmap(fc.pages, len);
}

/* --- mutual exclusion under stress ------------------------------------------------- */

#define STRESS_THREADS 8
#define STRESS_ITERS 3000

typedef struct stress {
    pthread_mutex_t m;
    long counter;       /* guarded by m */
    _Atomic int inside; /* threads inside the critical section */
    _Atomic int overlaps;
    _Atomic int errors;
    enum behaviour b;
} stress_t;

static void stress_enter(stress_t *s)
{
    /* Relaxed: the lock orders the critical sections; this only detects
     * two threads inside at once. */
    if (baton_fetch_add(&s->inside, 1, memory_order_relaxed) != 0)
        baton_fetch_add(&s->overlaps, 1, memory_order_relaxed);
    s->counter++;
    baton_fetch_sub(&s->inside, 1, memory_order_relaxed); /* as above */
}

static void *stress_worker(void *arg)
{
    stress_t *s = arg;
    for (int i = 0; i < STRESS_ITERS; i++) {
        int rc;
        switch (i % 8) {
        case 0:
            rc = pthread_mutex_trylock(&s->m);
            if (rc == EBUSY)
                rc = pthread_mutex_lock(&s->m);
            break;
        case 1: {
            struct timespec far = ptest_in(CLOCK_REALTIME, 30 * 1000000000LL);
            rc = pthread_mutex_timedlock(&s->m, &far);
            break;
        }
        case 2: {
            struct timespec far = ptest_in(CLOCK_MONOTONIC, 30 * 1000000000LL);
            rc = pthread_mutex_clocklock(&s->m, CLOCK_MONOTONIC, &far);
            break;
        }
        default: rc = pthread_mutex_lock(&s->m);
        }
        if (rc != 0) {
            baton_fetch_add(&s->errors, 1, memory_order_relaxed); /* a count only */
            continue;
        }
        if (s->b == B_RECURSIVE && pthread_mutex_trylock(&s->m) != 0)
            baton_fetch_add(&s->errors, 1, memory_order_relaxed); /* a count only */
        stress_enter(s);
        if (s->b == B_RECURSIVE && pthread_mutex_unlock(&s->m) != 0)
            baton_fetch_add(&s->errors, 1, memory_order_relaxed); /* a count only */
        if (pthread_mutex_unlock(&s->m) != 0)
            baton_fetch_add(&s->errors, 1, memory_order_relaxed); /* a count only */
    }
    return NULL;
}

static void test_stress(const config_t *c)
{
    ptest_phase = "exclusion stress";
    stress_t s = {.b = c->b};
    make(c, &s.m);
    pthread_t t[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++)
        t[i] = ptest_spawn(stress_worker, &s);
    for (int i = 0; i < STRESS_THREADS; i++)
        ptest_join(t[i]);
    /* Relaxed: after the joins. */
    int overlaps = baton_load(&s.overlaps, memory_order_relaxed);
    int errors = baton_load(&s.errors, memory_order_relaxed);
    if (overlaps || errors || s.counter != (long)STRESS_THREADS * STRESS_ITERS)
        FAILC("[%s] %d threads x %d: counter %ld (expected %ld), %d overlap(s), %d failed call(s)", c->name,
              STRESS_THREADS, STRESS_ITERS, s.counter, (long)STRESS_THREADS * STRESS_ITERS, overlaps, errors);
    EXPECTC(pthread_mutex_destroy(&s.m), 0);
}

int main(void)
{
    ptest_begin("mutex", 120);
    for (size_t i = 0; i < NCONFIGS; i++) {
        cur = &configs[i];
        test_basic(cur);
        if (cur->b == B_ERRORCHECK)
            test_errorcheck(cur);
        if (cur->b == B_RECURSIVE)
            test_recursive(cur);
        test_timed(cur);
        test_destroy(cur);
        test_free_at_once(cur);
        test_stress(cur);
    }
    return ptest_end("%zu mutex configurations", NCONFIGS);
}
