/* harness.c - the shared mutual-exclusion stress harness (see harness.h). */
#include "harness.h"
#include "guard.h"

#include <baton/baton.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What each lock protects is a guard (bench/guard.h: the checks inside
 * every critical section); both count into one tally. */
struct shared {
    const harness_ops_t *ops;
    void *outer, *inner;
    guard_t po, pi;
    guard_tally_t tally;
    _Atomic int stop;
    _Atomic uint64_t bad_payload, bad_errors, busy, timeouts, timed_ok;
    _Atomic int timed_unsupported;
    bool has_lock; /* the kind offers lock/trylock/unlock (else execute/delegate only) */
    bool has_read; /* rlock admits readers together: check they exclude writers */
};

struct worker {
    struct shared *s;
    pthread_t tid;
    int index;
    uint64_t outer_ops, inner_ops;
};

struct payload {
    uint64_t magic;
    uint64_t seq; /* this thread's sequence number on this lock */
    guard_t *p;
    struct shared *s;
    uint64_t check;
    int thread;
};

#define MAGIC 0x6261746f6e21ull /* "baton!" */

static uint32_t rnd(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static void cs_fn(void *ctx)
{
    struct payload *pl = ctx;
    guard_section(pl->p, pl->thread, pl->seq);
}

static void delegated_fn(void *args)
{
    struct payload *pl = args;
    if (pl->magic != MAGIC || pl->check != (pl->seq ^ MAGIC))
        atomic_fetch_add_explicit(&pl->s->bad_payload, 1, memory_order_relaxed);
    guard_section(pl->p, pl->thread, pl->seq);
}

/* A nested operation for kinds without lock/unlock: execute on the outer
 * lock, and inside it execute on the inner one. */
struct nested {
    struct shared *s;
    int thread;
    uint64_t oseq, iseq;
};

static void inner_fn(void *ctx)
{
    struct nested *n = ctx;
    guard_section(&n->s->pi, n->thread, n->iseq);
}

static void outer_fn(void *ctx)
{
    struct nested *n = ctx;
    guard_section(&n->s->po, n->thread, n->oseq);
    if (n->s->ops->execute(n->s->inner, inner_fn, n) != 0)
        atomic_fetch_add_explicit(&n->s->bad_errors, 1, memory_order_relaxed);
}

static void expect_ok(struct shared *s, int rc)
{
    if (rc != 0)
        atomic_fetch_add_explicit(&s->bad_errors, 1, memory_order_relaxed);
}

/* A deadline short enough that a contended lock often times out: already
 * past (a trylock), a few microseconds, or up to a millisecond away; on
 * either clock. */
static struct timespec short_deadline(uint32_t r, clockid_t *clock)
{
    *clock = (r & 1u) ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    struct timespec t;
    clock_gettime(*clock, &t);
    long ns;
    switch ((r >> 1) & 3u) {
    case 0: ns = -1000; break;                            /* passed */
    case 1: ns = (long)((r >> 3) & 63u) * 1000L; break;   /* 0-63 us */
    case 2: ns = (long)((r >> 3) & 1023u) * 1000L; break; /* 0-1 ms */
    default: ns = 5000; break;
    }
    t.tv_nsec += ns;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_nsec -= 1000000000L;
        t.tv_sec++;
    } else if (t.tv_nsec < 0) {
        t.tv_nsec += 1000000000L;
        t.tv_sec--;
    }
    return t;
}

/* Take `lock` (for reading: read) with timed locks until one succeeds;
 * ENOTSUP falls back to the plain lock.  Returns what the last call did. */
static int timed_acquire(struct shared *s, void *lock, uint32_t r, bool read)
{
    const harness_ops_t *o = s->ops;
    int (*timed)(void *, clockid_t, const struct timespec *) = read ? o->rclocklock : o->clocklock;
    for (uint32_t x = r | 1u;;) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        clockid_t clock;
        struct timespec d = short_deadline(x, &clock);
        int rc = timed(lock, clock, &d);
        if (rc == 0) {
            atomic_fetch_add_explicit(&s->timed_ok, 1, memory_order_relaxed);
            return 0;
        }
        if (rc == ENOTSUP) {
            atomic_store_explicit(&s->timed_unsupported, 1, memory_order_relaxed);
            return read ? o->rlock(lock) : o->lock(lock);
        }
        if (rc != ETIMEDOUT)
            return rc;
        atomic_fetch_add_explicit(&s->timeouts, 1, memory_order_relaxed);
    }
}

/* A timed lock of a lock the calling thread holds already (as writer, or
 * as reader: then the timed lock is a writer's): it must time out, never
 * succeed, whatever the kind (no lock is recursive, and a writer waits for
 * every reader).  This makes time-outs happen in every run, and has the
 * waiter give up inside the queue of the caller's own hold.  check=1 (a
 * debug build) answers EDEADLK instead, and kinds without a timed lock
 * ENOTSUP. */
static void timed_self_probe(struct shared *s, void *lock, uint32_t r)
{
    clockid_t clock;
    struct timespec d = short_deadline(r & ~4u, &clock); /* passed, or under 64 us */
    d = (r & 8u) ? d : short_deadline(r & ~6u, &clock);  /* mostly passed: cheap */
    int rc = s->ops->clocklock(lock, clock, &d);
    if (rc == ETIMEDOUT) {
        atomic_fetch_add_explicit(&s->timeouts, 1, memory_order_relaxed);
    } else if (rc == ENOTSUP) {
        atomic_store_explicit(&s->timed_unsupported, 1, memory_order_relaxed);
    } else if (rc != EDEADLK) {
        /* 0 would be a second hold of a held lock. */
        atomic_fetch_add_explicit(&s->bad_errors, 1, memory_order_relaxed);
        if (rc == 0)
            (void)s->ops->unlock(lock);
    }
}

/* One operation on `lock`, protecting `p`, by one of six paths (kinds
 * without lock/unlock take execute or delegate). */
static void one_op(struct shared *s, void *lock, guard_t *p, uint32_t r, int thread, uint64_t seq)
{
    const harness_ops_t *o = s->ops;
    struct payload pl = {MAGIC, seq, p, s, seq ^ MAGIC, thread};
    unsigned path = r % 6u;
    if (!s->has_lock)
        path = 3u + (r & 1u);
    else if (path == 5u && !o->clocklock)
        path = 0u;
    switch (path) {
    case 5:
        expect_ok(s, timed_acquire(s, lock, r >> 3, false));
        guard_section(p, thread, seq);
        expect_ok(s, o->unlock(lock));
        break;
    case 0:
    case 1:
        expect_ok(s, o->lock(lock));
        guard_section(p, thread, seq);
        expect_ok(s, o->unlock(lock));
        break;
    case 2: {
        int rc;
        while ((rc = o->trylock(lock)) != 0) {
            if (rc != EBUSY) {
                atomic_fetch_add_explicit(&s->bad_errors, 1, memory_order_relaxed);
                return;
            }
            atomic_fetch_add_explicit(&s->busy, 1, memory_order_relaxed);
            sched_yield();
        }
        guard_section(p, thread, seq);
        expect_ok(s, o->unlock(lock));
        break;
    }
    case 3:
        if (o->execute)
            expect_ok(s, o->execute(lock, cs_fn, &pl));
        else {
            expect_ok(s, o->lock(lock));
            cs_fn(&pl);
            expect_ok(s, o->unlock(lock));
        }
        break;
    default:
        if (o->delegate) {
            expect_ok(s, o->delegate(lock, delegated_fn, &pl, sizeof pl));
            /* Scribble on our copy: the delegated function must have its own. */
            memset(&pl, 0xa5, sizeof pl);
        } else {
            expect_ok(s, o->lock(lock));
            delegated_fn(&pl);
            expect_ok(s, o->unlock(lock));
        }
        break;
    }
}

/* A read: no writer may be inside, and the writers' two-step update must
 * never be seen half done. */
static void one_read(struct shared *s, void *lock, guard_t *p, uint32_t r)
{
    if (s->ops->rclocklock && (r & 3u) == 0)
        expect_ok(s, timed_acquire(s, lock, r >> 2, true));
    else
        expect_ok(s, s->ops->rlock(lock));
    guard_read(p);
    if (s->ops->clocklock && ((r >> 12) & 63u) == 0)
        timed_self_probe(s, lock, r >> 18);
    expect_ok(s, s->ops->runlock(lock));
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct shared *s = w->s;
    const harness_ops_t *o = s->ops;
    uint32_t x = 0x9e3779b9u * (uint32_t)(w->index + 1);
    do {
        uint32_t r = rnd(&x);
        if (s->has_read && (r & 3u) == 0) {
            one_read(s, (r >> 2) & 1u ? s->inner : s->outer, (r >> 2) & 1u ? &s->pi : &s->po, r >> 3);
            continue;
        }
        if ((r >> 8) % 4u == 0) {
            uint64_t oseq = ++w->outer_ops, iseq = ++w->inner_ops;
            if (!s->has_lock) {
                struct nested n = {s, w->index, oseq, iseq};
                expect_ok(s, o->execute(s->outer, outer_fn, &n));
                continue;
            }
            /* Nested: outer then inner (a global order, so no deadlock),
             * released outer-first or inner-first. */
            expect_ok(s, o->lock(s->outer));
            guard_section(&s->po, w->index, oseq);
            if (o->clocklock && ((r >> 24) & 63u) == 0)
                timed_self_probe(s, s->outer, r >> 30 | r << 2);
            /* The inner one sometimes timed: a timed wait while holding
             * another lock. */
            if (((r >> 13) & 1u) && o->clocklock)
                expect_ok(s, timed_acquire(s, s->inner, r >> 14, false));
            else
                expect_ok(s, o->lock(s->inner));
            guard_section(&s->pi, w->index, iseq);
            if ((r >> 12) & 1u) {
                expect_ok(s, o->unlock(s->outer));
                expect_ok(s, o->unlock(s->inner));
            } else {
                expect_ok(s, o->unlock(s->inner));
                expect_ok(s, o->unlock(s->outer));
            }
        } else if ((r >> 16) & 1u) {
            one_op(s, s->inner, &s->pi, r >> 20, w->index, ++w->inner_ops);
        } else {
            one_op(s, s->outer, &s->po, r >> 20, w->index, ++w->outer_ops);
        }
    } while (!atomic_load_explicit(&s->stop, memory_order_relaxed));
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int harness_run(const harness_ops_t *ops, const char *spec, int threads, int millis, harness_result_t *out)
{
    return harness_run_ex(ops, spec, threads, millis, true, out);
}

int harness_run_ex(const harness_ops_t *ops, const char *spec, int threads, int millis, bool expect_correct,
                   harness_result_t *out)
{
    memset(out, 0, sizeof *out);
    struct shared *s = aligned_alloc(128, (sizeof *s + 127) / 128 * 128);
    if (!s)
        return ENOMEM;
    memset(s, 0, sizeof *s);
    s->ops = ops;
    s->outer = ops->create(spec);
    s->inner = ops->create(spec);
    if (!s->outer || !s->inner) {
        fprintf(stderr, "harness: cannot create '%s': %s\n", spec, baton_last_error());
        free(s);
        return EINVAL;
    }
    s->has_lock = ops->has_lock ? ops->has_lock(s->outer) : true;
    s->has_read = ops->has_read && ops->rlock && ops->has_read(s->outer);
    struct worker *w = calloc((size_t)threads, sizeof *w);
    if (!w || guard_init(&s->po, threads, expect_correct, &s->tally) != 0 ||
        guard_init(&s->pi, threads, expect_correct, &s->tally) != 0) {
        fprintf(stderr, "harness: out of memory\n");
        abort();
    }
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        w[i].s = s;
        w[i].index = i;
        if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
            fprintf(stderr, "harness: pthread_create failed\n");
            abort();
        }
    }
    struct timespec d = {millis / 1000, (long)(millis % 1000) * 1000000L};
    nanosleep(&d, NULL);
    atomic_store_explicit(&s->stop, 1, memory_order_relaxed);
    uint64_t outer_ops = 0, inner_ops = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].tid, NULL);
        outer_ops += w[i].outer_ops;
        inner_ops += w[i].inner_ops;
    }
    out->seconds = now_s() - t0;
    out->ops = outer_ops + inner_ops;
    /* Free the locks first: that runs every operation still accepted but
     * not yet run (a server kind may hold some after their threads ended). */
    if (ops->destroy(s->outer) != 0 || ops->destroy(s->inner) != 0)
        out->bad_errors++;
    if (guard_sections(&s->po) != (int64_t)outer_ops || guard_sections(&s->pi) != (int64_t)inner_ops)
        out->count_mismatch = 1;
    for (int i = 0; i < threads; i++)
        if (guard_last(&s->po, i) != w[i].outer_ops || guard_last(&s->pi, i) != w[i].inner_ops)
            out->count_mismatch = 1;
    out->overlaps = atomic_load_explicit(&s->tally.overlaps, memory_order_relaxed); /* after the joins */
    out->torn = atomic_load_explicit(&s->tally.torn, memory_order_relaxed);         /* after the joins */
    out->bad_payload = s->bad_payload;
    out->bad_errors += s->bad_errors;
    out->out_of_order =
        atomic_load_explicit(&s->tally.out_of_order, memory_order_relaxed);           /* after the joins */
    out->bad_reads = atomic_load_explicit(&s->tally.bad_reads, memory_order_relaxed); /* after the joins */
    out->reads = atomic_load_explicit(&s->tally.reads, memory_order_relaxed);         /* after the joins */
    out->trylock_busy = s->busy;
    out->timeouts = s->timeouts;
    out->timed_ok = s->timed_ok;
    out->timed_unsupported = s->timed_unsupported != 0;
    guard_fini(&s->po);
    guard_fini(&s->pi);
    free(w);
    free(s);
    return 0;
}

/* --- the dynamic API as harness operations -------------------------------- */

static void *b_create(const char *spec) { return baton_lock_new(spec); }
static int b_destroy(void *l) { return baton_lock_free(l); }
static int b_lock(void *l) { return baton_lock(l); }
static int b_trylock(void *l) { return baton_trylock(l); }
static int b_unlock(void *l) { return baton_unlock(l); }
static int b_execute(void *l, void (*fn)(void *), void *ctx) { return baton_execute(l, fn, ctx); }
static int b_delegate(void *l, void (*fn)(void *), const void *a, size_t n)
{
    return baton_delegate(l, fn, a, n);
}
static bool b_has_lock(void *l) { return (baton_lock_kind(l)->caps & BATON_CAP_LOCK) != 0; }
static bool b_has_read(void *l) { return (baton_lock_kind(l)->caps & BATON_CAP_RW) != 0; }
static int b_rlock(void *l) { return baton_rlock(l); }
static int b_runlock(void *l) { return baton_runlock(l); }
static int b_clocklock(void *l, clockid_t c, const struct timespec *t) { return baton_clocklock(l, c, t); }
static int b_rclocklock(void *l, clockid_t c, const struct timespec *t) { return baton_rclocklock(l, c, t); }

const harness_ops_t harness_baton_ops = {
    .name = "baton",
    .create = b_create,
    .destroy = b_destroy,
    .lock = b_lock,
    .trylock = b_trylock,
    .unlock = b_unlock,
    .execute = b_execute,
    .delegate = b_delegate,
    .has_lock = b_has_lock,
    .has_read = b_has_read,
    .rlock = b_rlock,
    .runlock = b_runlock,
    .clocklock = b_clocklock,
    .rclocklock = b_rclocklock,
};
