/* test_cond.c - baton_cond_t (baton/cond.h) over a range of kinds.
 *
 *   - lost wake-ups: a counting semaphore built from a lock and a condition
 *     variable, producers signalling one post at a time, consumers waiting
 *     with a 10 s watchdog deadline: every post must be consumed and no wait
 *     may reach its watchdog (a lost wake-up leaves a consumer asleep with
 *     posts left); two threads handing a turn back and forth with signal
 *     (every signal matters: one lost stops both); a ring of threads passing
 *     a turn with broadcast;
 *   - broadcast then free: waiters woken by a broadcast, the condition
 *     variable freed at once (before they run), 200 rounds;
 *   - time-outs: ETIMEDOUT never before the deadline, with the lock held
 *     again; both clocks; EINVAL for a bad tv_nsec or clock, with the lock
 *     left held;
 *   - errors: EPERM waiting on a lock not held (owner-tracking kinds);
 *     ENOTSUP for kinds without a lock and inside an execute operation;
 *     EBUSY freeing a condition variable a thread waits on;
 *   - cancellation: the cleanup handler runs with the lock held.
 *
 *   test_cond            every check, exit 1 on failure
 *   test_cond --broken   the ping-pong over a condition "variable" whose
 *                        signal is lost when it comes between the unlock and
 *                        the waiter's look at its word: the check must catch it
 */
#include <baton/baton.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "deadline.h"

/* --- a condition variable as a table, so that a broken one can stand in ---- */

typedef struct cv_ops {
    void *(*create)(void);
    int (*destroy)(void *c);
    int (*clockwait)(void *c, baton_lock_t *l, clockid_t clock, const struct timespec *t);
    int (*signal)(void *c);
} cv_ops_t;

static void *b_create(void) { return baton_cond_new(); }
static int b_destroy(void *c) { return baton_cond_free(c); }
static int b_clockwait(void *c, baton_lock_t *l, clockid_t k, const struct timespec *t)
{
    return baton_cond_clockwait(c, l, k, t);
}
static int b_signal(void *c) { return baton_cond_signal(c); }
static const cv_ops_t baton_cv = {b_create, b_destroy, b_clockwait, b_signal};

/* The broken one: a sequence word the waiter reads after it released the
 * lock, so a signal made in between is lost (the classic lost wake-up). */
typedef struct broken_cv {
    _Atomic unsigned seq;
} broken_cv_t;

static void *k_create(void) { return calloc(1, sizeof(broken_cv_t)); }
static int k_destroy(void *c)
{
    free(c);
    return 0;
}
static int k_clockwait(void *c, baton_lock_t *l, clockid_t k, const struct timespec *t)
{
    broken_cv_t *b = c;
    baton_unlock(l);
    struct timespec pause = {0, 200000}; /* widen the window */
    nanosleep(&pause, NULL);
    unsigned s = atomic_load(&b->seq); /* the bug: read after the unlock */
    int rc = 0;
    while (atomic_load(&b->seq) == s) {
        if (since_ns(k, t) >= 0) {
            rc = ETIMEDOUT;
            break;
        }
        struct timespec d = {0, 100000};
        nanosleep(&d, NULL);
    }
    baton_lock(l);
    return rc;
}
static int k_signal(void *c)
{
    atomic_fetch_add(&((broken_cv_t *)c)->seq, 1u);
    return 0;
}
static const cv_ops_t broken_cv = {k_create, k_destroy, k_clockwait, k_signal};

/* --- lost wake-ups: a semaphore ------------------------------------------------ */

#define PRODUCERS 2
#define CONSUMERS 3
#define POSTS 2000 /* per producer */
#define WATCHDOG_NS 10000000000LL

struct sem {
    const cv_ops_t *ops;
    baton_lock_t *lock;
    void *cond;
    long count;    /* under lock */
    long consumed; /* under lock */
    long to_consume;
    _Atomic long watchdogs; /* waits that reached the watchdog */
    _Atomic long errors;
};

static void *producer(void *arg)
{
    struct sem *s = arg;
    for (int i = 0; i < POSTS; i++) {
        baton_lock(s->lock);
        s->count++;
        /* Half the signals with the lock held, half after. */
        if (i & 1)
            s->ops->signal(s->cond);
        baton_unlock(s->lock);
        if (!(i & 1))
            s->ops->signal(s->cond);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct sem *s = arg;
    baton_lock(s->lock);
    for (;;) {
        while (s->count == 0 && s->consumed < s->to_consume) {
            struct timespec d = after_ns(CLOCK_MONOTONIC, WATCHDOG_NS);
            int rc = s->ops->clockwait(s->cond, s->lock, CLOCK_MONOTONIC, &d);
            if (rc == ETIMEDOUT) {
                atomic_fetch_add(&s->watchdogs, 1);
                /* Stuck: give up, so the test ends and reports. */
                s->to_consume = s->consumed;
            } else if (rc != 0) {
                atomic_fetch_add(&s->errors, 1);
            }
        }
        if (s->consumed >= s->to_consume)
            break;
        s->count--;
        s->consumed++;
        if (s->consumed == s->to_consume) {
            /* The last post: wake the other consumers to leave. */
            for (int i = 0; i < CONSUMERS; i++)
                s->ops->signal(s->cond);
        }
    }
    baton_unlock(s->lock);
    return NULL;
}

/* Returns the number of failed checks. */
static int semaphore(const cv_ops_t *ops, const char *spec)
{
    int before = failures;
    struct sem s = {.ops = ops,
                    .lock = baton_lock_new(spec),
                    .cond = ops->create(),
                    .to_consume = (long)PRODUCERS * POSTS};
    CHECK(s.lock != NULL && s.cond != NULL, "%s: create: %s", spec, baton_last_error());
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, &s);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, &s);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    CHECK(s.watchdogs == 0, "%s: %ld waits slept %lld s with posts to consume (a lost wake-up)", spec,
          (long)s.watchdogs, WATCHDOG_NS / 1000000000);
    CHECK(s.errors == 0, "%s: %ld waits failed", spec, (long)s.errors);
    CHECK(s.consumed == (long)PRODUCERS * POSTS, "%s: consumed %ld of %ld", spec, s.consumed,
          (long)PRODUCERS * POSTS);
    CHECK(ops->destroy(s.cond) == 0, "%s: free the condition variable", spec);
    CHECK(baton_lock_free(s.lock) == 0, "%s: free the lock", spec);
    return failures - before;
}

/* --- a ring passing a turn with broadcast ---------------------------------------- */

#define RING 4
#define TURNS 500

struct ring {
    baton_lock_t *lock;
    baton_cond_t *cond;
    int turn; /* under lock */
    _Atomic int stuck;
};

struct ring_arg {
    struct ring *r;
    int me;
};

static void *ring_main(void *arg)
{
    struct ring_arg *a = arg;
    struct ring *r = a->r;
    baton_lock(r->lock);
    for (int i = 0; i < TURNS; i++) {
        while (r->turn % RING != a->me) {
            struct timespec d = after_ns(CLOCK_REALTIME, WATCHDOG_NS);
            if (baton_cond_timedwait(r->cond, r->lock, &d) == ETIMEDOUT) {
                atomic_store(&r->stuck, 1);
                baton_unlock(r->lock);
                return NULL;
            }
        }
        r->turn++;
        baton_cond_broadcast(r->cond);
    }
    baton_unlock(r->lock);
    return NULL;
}

static void ring(const char *spec)
{
    struct ring r = {.lock = baton_lock_new(spec), .cond = baton_cond_new()};
    pthread_t t[RING];
    struct ring_arg a[RING];
    for (int i = 0; i < RING; i++) {
        a[i] = (struct ring_arg){&r, i};
        pthread_create(&t[i], NULL, ring_main, &a[i]);
    }
    for (int i = 0; i < RING; i++)
        pthread_join(t[i], NULL);
    CHECK(!r.stuck && r.turn == RING * TURNS, "%s: ring: %d turns of %d%s", spec, r.turn, RING * TURNS,
          r.stuck ? " (a waiter reached its watchdog)" : "");
    CHECK(baton_cond_free(r.cond) == 0, "%s: ring: free", spec);
    CHECK(baton_lock_free(r.lock) == 0, "%s: ring: free the lock", spec);
}

/* --- ping-pong: two threads hand a turn back and forth with signal; every
 * signal matters, so one lost wake-up stops both (watchdog) ----------------- */

#define PINGS 500

struct pingpong {
    const cv_ops_t *ops;
    baton_lock_t *lock;
    void *cond;
    int turn; /* under lock */
    _Atomic int stuck;
};

struct pp_arg {
    struct pingpong *p;
    int me;
};

static void *pp_main(void *arg)
{
    struct pp_arg *a = arg;
    struct pingpong *p = a->p;
    baton_lock(p->lock);
    for (int i = 0; i < PINGS && !atomic_load(&p->stuck); i++) {
        while (p->turn % 2 != a->me && !atomic_load(&p->stuck)) {
            struct timespec d = after_ns(CLOCK_MONOTONIC, WATCHDOG_NS / 5);
            if (p->ops->clockwait(p->cond, p->lock, CLOCK_MONOTONIC, &d) == ETIMEDOUT)
                atomic_store(&p->stuck, 1);
        }
        p->turn++;
        p->ops->signal(p->cond);
    }
    baton_unlock(p->lock);
    return NULL;
}

/* Returns the number of failed checks. */
static int pingpong(const cv_ops_t *ops, const char *spec)
{
    int before = failures;
    struct pingpong p = {.ops = ops, .lock = baton_lock_new(spec), .cond = ops->create()};
    pthread_t t[2];
    struct pp_arg a[2] = {{&p, 0}, {&p, 1}};
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, pp_main, &a[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK(!p.stuck && p.turn == 2 * PINGS, "%s: ping-pong: %d turns of %d%s", spec, p.turn, 2 * PINGS,
          p.stuck ? " (a wait reached its watchdog: a lost wake-up)" : "");
    CHECK(ops->destroy(p.cond) == 0, "%s: ping-pong: free", spec);
    CHECK(baton_lock_free(p.lock) == 0, "%s: ping-pong: free the lock", spec);
    return failures - before;
}

/* --- broadcast, then free at once ---------------------------------------------- */

#define WAITERS 4
#define ROUNDS 50

struct bcast {
    baton_lock_t *lock;
    baton_cond_t *cond;
    int go;      /* under lock */
    int waiting; /* under lock */
};

static void *bcast_waiter(void *arg)
{
    struct bcast *b = arg;
    baton_lock(b->lock);
    b->waiting++;
    while (!b->go)
        baton_cond_wait(b->cond, b->lock);
    baton_unlock(b->lock);
    return NULL;
}

static void broadcast_then_free(const char *spec)
{
    struct bcast b = {.lock = baton_lock_new(spec)};
    int bad = 0;
    for (int round = 0; round < ROUNDS; round++) {
        b.cond = baton_cond_new();
        b.go = 0;
        b.waiting = 0;
        pthread_t t[WAITERS];
        for (int i = 0; i < WAITERS; i++)
            pthread_create(&t[i], NULL, bcast_waiter, &b);
        for (;;) {
            baton_lock(b.lock);
            int n = b.waiting;
            baton_unlock(b.lock);
            if (n == WAITERS)
                break;
            sched_yield();
        }
        baton_lock(b.lock);
        b.go = 1;
        baton_cond_broadcast(b.cond);
        /* Freed while the woken waiters may not have run yet, and while
         * this thread still holds the lock they need. */
        bad += baton_cond_free(b.cond) != 0;
        memset(&b.cond, 0, sizeof b.cond);
        baton_unlock(b.lock);
        for (int i = 0; i < WAITERS; i++)
            pthread_join(t[i], NULL);
    }
    CHECK(bad == 0, "%s: free right after broadcast failed %d of %d times", spec, bad, ROUNDS);
    CHECK(baton_lock_free(b.lock) == 0, "%s: free the lock", spec);
}

/* --- time-outs and errors -------------------------------------------------------- */

struct holder {
    baton_lock_t *lock;
    baton_cond_t *cond;
    int ready; /* under lock */
    int rc;
};

static void *try_from_other(void *arg)
{
    struct holder *h = arg;
    h->rc = baton_trylock(h->lock);
    if (h->rc == 0)
        baton_unlock(h->lock);
    return NULL;
}

/* Is the lock held (by anyone), seen from another thread? */
static bool held(baton_lock_t *l)
{
    struct holder h = {.lock = l};
    pthread_t t;
    pthread_create(&t, NULL, try_from_other, &h);
    pthread_join(t, NULL);
    return h.rc == EBUSY;
}

static void timeouts(const char *spec)
{
    baton_lock_t *l = baton_lock_new(spec);
    baton_cond_t *c = baton_cond_new();
    baton_lock(l);
    for (int i = 0; i < 4; i++) {
        clockid_t k = i & 1 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
        struct timespec d = after_ns(k, 5000000);
        int rc = i & 1 ? baton_cond_clockwait(c, l, k, &d) : baton_cond_timedwait(c, l, &d);
        int64_t late = since_ns(k, &d);
        CHECK(rc == ETIMEDOUT, "%s: a wait nobody signals: %d", spec, rc);
        CHECK(late >= 0, "%s: ETIMEDOUT %lld ns early", spec, (long long)-late);
        CHECK(held(l), "%s: the lock is held again after ETIMEDOUT", spec);
    }
    struct timespec bad = {0, 1000000000L}, neg = {0, -1};
    CHECK(baton_cond_timedwait(c, l, &bad) == EINVAL, "%s: tv_nsec = 1e9", spec);
    CHECK(baton_cond_clockwait(c, l, CLOCK_MONOTONIC, &neg) == EINVAL, "%s: tv_nsec < 0", spec);
    CHECK(baton_cond_clockwait(c, l, CLOCK_MONOTONIC, NULL) == EINVAL, "%s: NULL deadline", spec);
    struct timespec ok = after_ns(CLOCK_MONOTONIC, 1000000);
    CHECK(baton_cond_clockwait(c, l, CLOCK_PROCESS_CPUTIME_ID, &ok) == EINVAL, "%s: a bad clock", spec);
    CHECK(held(l), "%s: EINVAL leaves the lock held", spec);
    struct timespec past = after_ns(CLOCK_MONOTONIC, -1000000);
    int rc = baton_cond_clockwait(c, l, CLOCK_MONOTONIC, &past);
    CHECK(rc == ETIMEDOUT, "%s: a past deadline: %d", spec, rc);
    baton_unlock(l);
    CHECK(baton_cond_free(c) == 0, "%s: free", spec);
    CHECK(baton_lock_free(l) == 0, "%s: free the lock", spec);
}

static void *wait_unsignalled(void *arg)
{
    struct holder *h = arg;
    baton_lock(h->lock);
    h->ready = 1;
    h->rc = baton_cond_wait(h->cond, h->lock);
    baton_unlock(h->lock);
    return NULL;
}

struct exec_ctx {
    baton_lock_t *lock;
    baton_cond_t *cond;
    int rc;
};

static void wait_inside(void *arg)
{
    struct exec_ctx *x = arg;
    x->rc = baton_cond_wait(x->cond, x->lock);
}

static void errors(void)
{
    baton_cond_t *c = baton_cond_new();
    /* Not held: EPERM from an owner-tracking kind, and no wait. */
    baton_lock_t *m = baton_lock_new("mcs");
    CHECK(baton_cond_wait(c, m) == EPERM, "mcs: a wait on a lock the caller does not hold");
    baton_lock_free(m);
    /* No lock to release. */
    static const char *const nolock[] = {"rcl", "ccsynch"};
    for (size_t i = 0; i < 2; i++) {
        baton_lock_t *l = baton_lock_new(nolock[i]);
        CHECK(baton_cond_wait(c, l) == ENOTSUP, "%s: ENOTSUP", nolock[i]);
        CHECK(strstr(baton_last_error(), "execute") != NULL, "%s: a message: %s", nolock[i],
              baton_last_error());
        baton_lock_free(l);
    }
    /* Inside an operation execute runs (which may run on a helper). */
    static const char *const exec[] = {"qd", "mcs", "fc"};
    for (size_t i = 0; i < 3; i++) {
        struct exec_ctx x = {.lock = baton_lock_new(exec[i]), .cond = c, .rc = -1};
        CHECK(baton_execute(x.lock, wait_inside, &x) == 0, "%s: execute", exec[i]);
        CHECK(x.rc == ENOTSUP, "%s: a wait inside execute: %d", exec[i], x.rc);
        CHECK(baton_lock_free(x.lock) == 0, "%s: free", exec[i]);
    }
    /* Free while a thread waits: EBUSY, and nothing is freed. */
    struct holder h = {.lock = baton_lock_new("runner"), .cond = c, .rc = -1};
    pthread_t t;
    pthread_create(&t, NULL, wait_unsignalled, &h);
    for (;;) {
        baton_lock(h.lock);
        /* Set under the lock just before the wait, which queues the
         * waiter before it lets the lock go. */
        if (h.ready) {
            CHECK(baton_cond_free(c) == EBUSY, "free while a thread waits (never signalled)");
            baton_cond_signal(c);
            baton_unlock(h.lock);
            break;
        }
        baton_unlock(h.lock);
        sched_yield();
    }
    pthread_join(t, NULL);
    CHECK(h.rc == 0, "the waiter: %d", h.rc);
    CHECK(baton_cond_free(c) == 0, "free after");
    baton_lock_free(h.lock);
}

/* --- cancellation ----------------------------------------------------------------- */

struct cancel {
    baton_lock_t *lock;
    baton_cond_t *cond;
    _Atomic int waiting;
    int unlock_rc; /* the cleanup handler's unlock: 0 if the lock was held */
};

static void cancel_cleanup(void *arg)
{
    struct cancel *c = arg;
    c->unlock_rc = baton_unlock(c->lock);
}

static void *cancel_main(void *arg)
{
    struct cancel *c = arg;
    baton_lock(c->lock);
    pthread_cleanup_push(cancel_cleanup, c);
    atomic_store(&c->waiting, 1);
    for (;;)
        baton_cond_wait(c->cond, c->lock);
    pthread_cleanup_pop(0);
    return NULL;
}

/* gcc 12's AddressSanitizer fails inside its own runtime when a thread is
 * cancelled in a wait bracketed by pthread_cleanup_push (its sigaltstack
 * interceptor, called from __asan_handle_no_return, reports its own write,
 * then a CHECK of the runtime fails): the cancellation cases run in the
 * other builds (normal, TSan, UBSan), not under ASan. */
#if defined(__SANITIZE_ADDRESS__)
static const int asan_build = 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
static const int asan_build = 1;
#else
static const int asan_build = 0;
#endif
#else
static const int asan_build = 0;
#endif

static void cancellation(const char *spec)
{
    struct cancel c = {.lock = baton_lock_new(spec), .cond = baton_cond_new(), .unlock_rc = -1};
    pthread_t t;
    pthread_create(&t, NULL, cancel_main, &c);
    while (!atomic_load(&c.waiting))
        sched_yield();
    /* It is waiting once it let the lock go. */
    baton_lock(c.lock);
    baton_unlock(c.lock);
    pthread_cancel(t);
    pthread_join(t, NULL);
    CHECK(c.unlock_rc == 0, "%s: the cleanup handler ran without the lock (unlock: %d)", spec, c.unlock_rc);
    CHECK(baton_cond_free(c.cond) == 0, "%s: free after a cancelled wait", spec);
    CHECK(baton_lock_free(c.lock) == 0, "%s: free the lock", spec);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "--broken") == 0) {
        int caught = pingpong(&broken_cv, "runner") > 0;
        printf("%s: the lost-wake-up check %s the broken condition variable\n", caught ? "PASS" : "FAIL",
               caught ? "caught" : "missed");
        return caught ? 0 : 1;
    }
    static const char *const specs[] = {
        "runner",          "runner:park",
        "mcs:park",        "clh:spinpark",
        "ticket:park",     "tas:spinpark",
        "relay",           "onespinner:park",
        "pthread",         "qd",
        "qd,tenure_us=50", "mrqd",
        "hqd,groups=2",    "fc",
        "server",          "server,chain",
        "rw(runner)",      "elide(runner)",
        "runner,check=1",
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        semaphore(&baton_cv, specs[i]);
        pingpong(&baton_cv, specs[i]);
        ring(specs[i]);
        broadcast_then_free(specs[i]);
        timeouts(specs[i]);
        if (!asan_build)
            cancellation(specs[i]);
        printf("  %-20s %.2f s\n", specs[i], since_ns(CLOCK_MONOTONIC, &t0) / 1e9);
    }
    errors();
    if (asan_build)
        printf("cancellation: not run under AddressSanitizer (its runtime fails on a cancelled thread)\n");
    printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
