/* harness.c - the shared mutual-exclusion stress harness (see harness.h). */
#include "harness.h"

#include <baton/baton.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What one lock protects.  `a` and `b` are atomics accessed one step at a
 * time with relaxed order, so that two threads inside at once tear the
 * invariant without the test itself having a data race.  `total` is a plain
 * variable, touched only for locks expected to be correct: under
 * ThreadSanitizer it checks that each lock orders its critical sections
 * (a missing acquire or release is reported as a race on it). */
struct protected {
    _Alignas(128) _Atomic int holders;
    _Atomic long a;
    _Atomic long b;
    long total; /* one increment per critical section */
    /* Per thread, the sequence number of its last operation that ran here:
     * each thread's operations on one lock must run in its program order,
     * detached ones included.  Relaxed atomics, for the broken-lock run. */
    _Atomic uint64_t *last;
};

struct shared {
    const harness_ops_t *ops;
    void *outer, *inner;
    struct protected po, pi;
    bool plain; /* update `total` (only for locks expected to be correct) */
    _Atomic int stop;
    _Atomic uint64_t overlaps, torn, bad_payload, bad_errors, busy, out_of_order;
    bool has_lock; /* the kind offers lock/trylock/unlock (else execute/delegate only) */
    bool has_read; /* rlock admits readers together: check they exclude writers */
    _Atomic uint64_t reads, bad_reads;
};

struct worker {
    struct shared *s;
    pthread_t tid;
    int index;
    uint64_t outer_ops, inner_ops;
};

struct payload {
    uint64_t magic;
    uint64_t seq;   /* this thread's sequence number on this lock */
    struct protected *p;
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

/* The body of every critical section: `thread`'s operation number `seq`
 * on the lock protecting p. */
static void critical(struct shared *s, struct protected *p, int thread, uint64_t seq)
{
    uint64_t last = atomic_load_explicit(&p->last[thread], memory_order_relaxed);
    if (seq != last + 1)
        atomic_fetch_add_explicit(&s->out_of_order, 1, memory_order_relaxed);
    atomic_store_explicit(&p->last[thread], seq, memory_order_relaxed);
    int h = atomic_fetch_add_explicit(&p->holders, 1, memory_order_relaxed);
    if (h != 0)
        atomic_fetch_add_explicit(&s->overlaps, 1, memory_order_relaxed);
    long a = atomic_load_explicit(&p->a, memory_order_relaxed);
    if (a != atomic_load_explicit(&p->b, memory_order_relaxed))
        atomic_fetch_add_explicit(&s->torn, 1, memory_order_relaxed);
    atomic_store_explicit(&p->a, a + 1, memory_order_relaxed);
    /* Dawdle between the two halves of the update, so a second thread
     * inside would see them torn. */
    for (volatile int i = 0; i < 20; i++)
        ;
    atomic_store_explicit(&p->b, a + 1, memory_order_relaxed);
    if (s->plain)
        p->total++;
    atomic_fetch_sub_explicit(&p->holders, 1, memory_order_relaxed);
}

static void cs_fn(void *ctx)
{
    struct payload *pl = ctx;
    critical(pl->s, pl->p, pl->thread, pl->seq);
}

static void delegated_fn(void *args)
{
    struct payload *pl = args;
    if (pl->magic != MAGIC || pl->check != (pl->seq ^ MAGIC))
        atomic_fetch_add_explicit(&pl->s->bad_payload, 1, memory_order_relaxed);
    critical(pl->s, pl->p, pl->thread, pl->seq);
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
    critical(n->s, &n->s->pi, n->thread, n->iseq);
}

static void outer_fn(void *ctx)
{
    struct nested *n = ctx;
    critical(n->s, &n->s->po, n->thread, n->oseq);
    if (n->s->ops->execute(n->s->inner, inner_fn, n) != 0)
        atomic_fetch_add_explicit(&n->s->bad_errors, 1, memory_order_relaxed);
}

static void expect_ok(struct shared *s, int rc)
{
    if (rc != 0)
        atomic_fetch_add_explicit(&s->bad_errors, 1, memory_order_relaxed);
}

/* One operation on `lock`, protecting `p`, by one of five paths (kinds
 * without lock/unlock take execute or delegate). */
static void one_op(struct shared *s, void *lock, struct protected *p, uint32_t r, int thread,
                   uint64_t seq)
{
    const harness_ops_t *o = s->ops;
    struct payload pl = {MAGIC, seq, p, s, seq ^ MAGIC, thread};
    unsigned path = r % 5u;
    if (!s->has_lock)
        path = 3u + (r & 1u);
    switch (path) {
    case 0:
    case 1:
        expect_ok(s, o->lock(lock));
        critical(s, p, thread, seq);
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
        critical(s, p, thread, seq);
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
static void one_read(struct shared *s, void *lock, struct protected *p)
{
    expect_ok(s, s->ops->rlock(lock));
    for (int i = 0; i < 3; i++) {
        if (atomic_load_explicit(&p->holders, memory_order_relaxed) != 0 ||
            atomic_load_explicit(&p->a, memory_order_relaxed) !=
                atomic_load_explicit(&p->b, memory_order_relaxed))
            atomic_fetch_add_explicit(&s->bad_reads, 1, memory_order_relaxed);
        for (volatile int k = 0; k < 10; k++)
            ;
    }
    atomic_fetch_add_explicit(&s->reads, 1, memory_order_relaxed);
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
            one_read(s, (r >> 2) & 1u ? s->inner : s->outer, (r >> 2) & 1u ? &s->pi : &s->po);
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
            critical(s, &s->po, w->index, oseq);
            expect_ok(s, o->lock(s->inner));
            critical(s, &s->pi, w->index, iseq);
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

int harness_run(const harness_ops_t *ops, const char *spec, int threads, int millis,
                harness_result_t *out)
{
    return harness_run_ex(ops, spec, threads, millis, true, out);
}

int harness_run_ex(const harness_ops_t *ops, const char *spec, int threads, int millis,
                   bool expect_correct, harness_result_t *out)
{
    memset(out, 0, sizeof *out);
    struct shared *s = aligned_alloc(128, (sizeof *s + 127) / 128 * 128);
    if (!s)
        return ENOMEM;
    memset(s, 0, sizeof *s);
    s->ops = ops;
    s->plain = expect_correct;
    s->outer = ops->create(spec);
    s->inner = ops->create(spec);
    if (!s->outer || !s->inner) {
        fprintf(stderr, "harness: cannot create '%s': %s\n", spec, baton_last_error());
        free(s);
        return EINVAL;
    }
    s->has_lock = ops->has_lock ? ops->has_lock(s->outer) : true;
    s->has_read = ops->has_read && ops->rlock && ops->has_read(s->outer);
    s->po.last = calloc((size_t)threads, sizeof *s->po.last);
    s->pi.last = calloc((size_t)threads, sizeof *s->pi.last);
    struct worker *w = calloc((size_t)threads, sizeof *w);
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
    long oa = atomic_load(&s->po.a), ob = atomic_load(&s->po.b);
    long ia = atomic_load(&s->pi.a), ib = atomic_load(&s->pi.b);
    if (oa != ob || ia != ib || (uint64_t)oa != outer_ops || (uint64_t)ia != inner_ops ||
        (expect_correct && ((uint64_t)s->po.total != outer_ops || (uint64_t)s->pi.total != inner_ops)))
        out->count_mismatch = 1;
    for (int i = 0; i < threads; i++)
        if (atomic_load(&s->po.last[i]) != w[i].outer_ops || atomic_load(&s->pi.last[i]) != w[i].inner_ops)
            out->count_mismatch = 1;
    out->overlaps = s->overlaps;
    out->torn = s->torn;
    out->bad_payload = s->bad_payload;
    out->bad_errors += s->bad_errors;
    out->out_of_order = s->out_of_order;
    out->bad_reads = s->bad_reads;
    out->reads = s->reads;
    out->trylock_busy = s->busy;
    free(s->po.last);
    free(s->pi.last);
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
};
