/* test_combining.c - the combining kinds, fc and ccsynch.
 *
 * For each kind and the wait policies spin, spinpark and park, at 2, 4 and
 * 16 threads: execute, delegate and delegate with a future on a plain
 * (non-atomic) counter and a two-field invariant, with exact totals, a
 * holder count that must read 1 inside, the delegate payload intact and
 * copied, and the kind's counters (help_sessions > 0, helped_ops equal to
 * the number of operations).  Small help limits force the combiner role to
 * change hands after every operation, which exercises CC-Synch's node
 * hand-over (a node reused too early shows up as torn or lost updates, and
 * as a data race under ThreadSanitizer).
 *
 * Thread churn: 64 short-lived threads in sequence while two others keep
 * going.  Records are not visible through the API, so the test measures them
 * through the heap: glibc's mallinfo2() in-use bytes must not grow over a
 * second round of 64 threads by anything near one record per thread.  The
 * test first checks that mallinfo2() sees an allocation of that size at
 * all; where it does not (a sanitizer's allocator), it says so and skips
 * only that check.
 */
#include <baton/baton.h>

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* --- the shared state and the operations ------------------------------------------ */

typedef struct shared {
    baton_lock_t *lock;
    baton_lock_t *other; /* for nested operations (NULL: none) */
    uint64_t counter;    /* plain: only the operations touch it */
    uint64_t a, b;       /* a == b outside operations */
    uint64_t torn;       /* a != b seen inside (plain, under the lock) */
    uint64_t bad_payload;
    uint64_t aliased; /* delegate ran on the caller's buffer, not a copy */
    uint64_t nested;  /* operations run on `other` from inside */
    uint64_t foreign; /* operations run by a thread other than their caller */
    _Atomic int holders;
    _Atomic uint64_t overlaps; /* holder count != 1 inside */
} shared_t;

static void body(shared_t *s, pthread_t caller)
{
    if (!pthread_equal(pthread_self(), caller))
        s->foreign++;
    if (atomic_fetch_add_explicit(&s->holders, 1, memory_order_relaxed) != 0)
        atomic_fetch_add_explicit(&s->overlaps, 1, memory_order_relaxed);
    if (s->a != s->b)
        s->torn++;
    s->a++;
    for (volatile int i = 0; i < 8; i++) {
    }
    s->b++;
    s->counter++;
    atomic_fetch_sub_explicit(&s->holders, 1, memory_order_relaxed);
}

static void nested_fn(void *p)
{
    uint64_t *n = p;
    (*n)++;
}

typedef struct exec_arg {
    shared_t *s;
    pthread_t caller;
} exec_arg_t;

static void exec_fn(void *p)
{
    exec_arg_t *a = p;
    body(a->s, a->caller);
}

typedef struct payload {
    shared_t *s;
    const void *caller; /* the caller's buffer: the function must see a copy */
    pthread_t thread;   /* the calling thread */
    uint64_t tid, seq;
    uint64_t check; /* tid and seq, scrambled */
    unsigned char fill[BATON_ARGS_MAX - 5 * sizeof(uint64_t) - sizeof(pthread_t)];
} payload_t;

_Static_assert(sizeof(payload_t) == BATON_ARGS_MAX, "the largest payload delegate copies");

static uint64_t scramble(uint64_t tid, uint64_t seq)
{
    return (tid * 0x9e3779b97f4a7c15ull) ^ (seq * 0xc2b2ae3d27d4eb4full);
}

static void deleg_fn(void *p)
{
    payload_t *a = p;
    shared_t *s = a->s;
    body(s, a->thread);
    if (a->check != scramble(a->tid, a->seq) || a->fill[0] != (unsigned char)a->seq ||
        a->fill[sizeof a->fill - 1] != (unsigned char)a->tid)
        s->bad_payload++;
    if ((const void *)a == a->caller)
        s->aliased++;
    if (s->other && (a->seq & 15) == 0 && baton_execute(s->other, nested_fn, &s->nested) != 0)
        s->bad_payload++;
}

/* --- the multi-threaded run ------------------------------------------------------- */

typedef struct worker {
    pthread_t tid;
    shared_t *s;
    int id;
    int ops; /* operations to do (0: until stop) */
    _Atomic int *stop;
    _Atomic int *go; /* start gate (NULL: none) */
    uint64_t done;   /* operations done */
    uint64_t errors;
} worker_t;

static void one_op(worker_t *w, uint64_t seq)
{
    shared_t *s = w->s;
    int rc;
    switch (seq % 3) {
    case 0: {
        exec_arg_t a = {s, pthread_self()};
        rc = baton_execute(s->lock, exec_fn, &a);
        break;
    }
    case 1: {
        payload_t a = {.s = s, .tid = (uint64_t)w->id, .seq = seq};
        a.caller = &a;
        a.thread = pthread_self();
        a.check = scramble(a.tid, a.seq);
        memset(a.fill, 0, sizeof a.fill);
        a.fill[0] = (unsigned char)seq;
        a.fill[sizeof a.fill - 1] = (unsigned char)w->id;
        rc = baton_delegate(s->lock, deleg_fn, &a, sizeof a);
        break;
    }
    default: {
        payload_t a = {.s = s, .tid = (uint64_t)w->id, .seq = seq};
        a.caller = &a;
        a.thread = pthread_self();
        a.check = scramble(a.tid, a.seq);
        memset(a.fill, 0, sizeof a.fill);
        a.fill[0] = (unsigned char)seq;
        a.fill[sizeof a.fill - 1] = (unsigned char)w->id;
        baton_future_t f;
        rc = baton_delegate_future(s->lock, deleg_fn, &a, sizeof a, &f);
        if (rc == 0)
            rc = baton_future_wait(&f);
        break;
    }
    }
    if (rc != 0)
        w->errors++;
    else
        w->done++;
}

static void *worker_main(void *p)
{
    worker_t *w = p;
    if (w->go)
        while (!atomic_load_explicit(w->go, memory_order_acquire))
            sched_yield();
    if (w->ops > 0) {
        for (int i = 0; i < w->ops; i++)
            one_op(w, (uint64_t)i);
    } else {
        /* At least one operation each, however late the thread starts. */
        uint64_t i = 0;
        do
            one_op(w, i++);
        while (!atomic_load_explicit(w->stop, memory_order_relaxed));
    }
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Totals and counters after a run in which `ops` operations succeeded. */
static void check_totals(const char *spec, int threads, shared_t *s, uint64_t ops, uint64_t errors)
{
    CHECK(errors == 0, "%s/%d: %llu operations failed", spec, threads, (unsigned long long)errors);
    CHECK(s->counter == ops, "%s/%d: counter %llu, expected %llu", spec, threads,
          (unsigned long long)s->counter, (unsigned long long)ops);
    CHECK(s->a == ops && s->b == ops, "%s/%d: a=%llu b=%llu, expected %llu", spec, threads,
          (unsigned long long)s->a, (unsigned long long)s->b, (unsigned long long)ops);
    CHECK(s->torn == 0, "%s/%d: invariant torn %llu times", spec, threads, (unsigned long long)s->torn);
    uint64_t overlaps = atomic_load_explicit(&s->overlaps, memory_order_relaxed);
    CHECK(overlaps == 0, "%s/%d: %llu overlapping operations", spec, threads, (unsigned long long)overlaps);
    CHECK(s->bad_payload == 0, "%s/%d: %llu bad payloads", spec, threads, (unsigned long long)s->bad_payload);
    CHECK(s->aliased == 0, "%s/%d: delegate ran %llu times on the caller's buffer", spec, threads,
          (unsigned long long)s->aliased);
    baton_stats_t st;
    CHECK(baton_lock_stats(s->lock, &st) == 0, "%s: stats", spec);
    CHECK(st.help_sessions > 0, "%s/%d: no help sessions", spec, threads);
    CHECK(st.help_sessions <= ops, "%s/%d: %llu sessions for %llu operations", spec, threads,
          (unsigned long long)st.help_sessions, (unsigned long long)ops);
    CHECK(st.helped_ops == ops, "%s/%d: helped_ops %llu, expected %llu", spec, threads,
          (unsigned long long)st.helped_ops, (unsigned long long)ops);
}

/* Run `threads` threads on spec for millis ms and check the totals; returns
 * how many operations ran on a thread other than their caller's, and the
 * lock's statistics in *stats (NULL: not wanted). */
static uint64_t run_threads_stats(const char *spec, int threads, int millis, bool nested,
                                  baton_stats_t *stats)
{
    shared_t s;
    memset(&s, 0, sizeof s);
    s.lock = baton_lock_new(spec);
    CHECK(s.lock != NULL, "%s: %s", spec, baton_last_error());
    if (!s.lock)
        return 0;
    if (nested) {
        s.other = baton_lock_new(spec);
        CHECK(s.other != NULL, "%s: %s", spec, baton_last_error());
    }
    worker_t *w = calloc((size_t)threads, sizeof *w);
    _Atomic int go = 0, stop = 0;
    for (int i = 0; i < threads; i++) {
        w[i] = (worker_t){.s = &s, .id = i, .ops = 0, .go = &go, .stop = &stop};
        if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
            printf("FAIL: pthread_create\n");
            exit(1);
        }
    }
    double t0 = now_s();
    atomic_store_explicit(&go, 1, memory_order_release);
    usleep((useconds_t)millis * 1000u);
    atomic_store_explicit(&stop, 1, memory_order_relaxed);
    uint64_t ops = 0, errors = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(w[i].tid, NULL);
        ops += w[i].done;
        errors += w[i].errors;
    }
    double dt = now_s() - t0;
    check_totals(spec, threads, &s, ops, errors);
    baton_stats_t st;
    baton_lock_stats(s.lock, &st);
    if (stats)
        *stats = st;
    if (nested) {
        /* deleg_fn nests on every 16th seq of its two thirds of the calls. */
        uint64_t expect = 0;
        for (int t = 0; t < threads; t++)
            for (uint64_t i = 0; i < w[t].done; i++)
                expect += (i % 3 != 0 && (i & 15) == 0);
        CHECK(s.nested == expect, "%s/%d: %llu nested operations, expected %llu", spec, threads,
              (unsigned long long)s.nested, (unsigned long long)expect);
        CHECK(baton_lock_free(s.other) == 0, "%s: free", spec);
    }
    printf("  %-34s %2d threads: %7llu ops in %.3f s, %7llu sessions, %6llu run by another "
           "thread\n",
           spec, threads, (unsigned long long)ops, dt, (unsigned long long)st.help_sessions,
           (unsigned long long)s.foreign);
    CHECK(baton_lock_free(s.lock) == 0, "%s: free", spec);
    free(w);
    return s.foreign;
}

static uint64_t run_threads(const char *spec, int threads, int millis, bool nested)
{
    return run_threads_stats(spec, threads, millis, nested, NULL);
}

/* --- thread churn ------------------------------------------------------------------ */

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void *churn_one(void *p)
{
    worker_t *w = p;
    worker_main(w);
    return NULL;
}

/* 64 short-lived threads, one after the other; returns the operations done. */
static uint64_t churn_round(shared_t *s, int base, uint64_t *errors)
{
    uint64_t ops = 0;
    for (int i = 0; i < 64; i++) {
        worker_t w = {.s = s, .id = base + i, .ops = 30};
        if (pthread_create(&w.tid, NULL, churn_one, &w) != 0) {
            printf("FAIL: pthread_create\n");
            exit(1);
        }
        pthread_join(w.tid, NULL);
        ops += w.done;
        *errors += w.errors;
    }
    return ops;
}

/* Does mallinfo2() see what the library allocates?  (Not under sanitizers.) */
static bool heap_measurable(void)
{
    enum { N = 64 };
    void *p[N];
    size_t before = heap_in_use();
    for (int i = 0; i < N; i++)
        p[i] = aligned_alloc(128, 128);
    size_t after = heap_in_use();
    for (int i = 0; i < N; i++)
        free(p[i]);
    return after >= before + N * 128;
}

static void test_churn(const char *spec, bool measure)
{
    shared_t s;
    memset(&s, 0, sizeof s);
    s.lock = baton_lock_new(spec);
    CHECK(s.lock != NULL, "%s: %s", spec, baton_last_error());
    if (!s.lock)
        return;
    _Atomic int stop = 0;
    worker_t keep[2];
    for (int i = 0; i < 2; i++) {
        keep[i] = (worker_t){.s = &s, .id = 1000 + i, .ops = 0, .stop = &stop};
        if (pthread_create(&keep[i].tid, NULL, worker_main, &keep[i]) != 0) {
            printf("FAIL: pthread_create\n");
            exit(1);
        }
    }
    uint64_t errors = 0;
    /* The first round warms up glibc's per-thread arenas and stack cache;
     * the second must not grow the heap by anything like a record per
     * thread (at most 3 threads use the lock at once here: the two that
     * keep going and one short-lived one). */
    uint64_t ops = churn_round(&s, 0, &errors);
    size_t before = heap_in_use();
    ops += churn_round(&s, 64, &errors);
    size_t after = heap_in_use();
    atomic_store_explicit(&stop, 1, memory_order_relaxed);
    for (int i = 0; i < 2; i++) {
        pthread_join(keep[i].tid, NULL);
        ops += keep[i].done;
        errors += keep[i].errors;
    }
    check_totals(spec, 66, &s, ops, errors);
    long grew = (long)after - (long)before;
    if (measure) {
        /* One record per short-lived thread would be 64 * 128 bytes at
         * least (fc: a record; ccsynch: a record and a node). */
        CHECK(grew < 64 * 128 / 2, "%s: heap grew by %ld bytes over 64 short-lived threads", spec, grew);
        printf("  %-34s churn: heap grew %ld bytes over 64 threads (%llu ops)\n", spec, grew,
               (unsigned long long)ops);
    }
    CHECK(baton_lock_free(s.lock) == 0, "%s: free", spec);
}

/* --- single-threaded semantics ------------------------------------------------- */

typedef struct held_ctx {
    baton_lock_t *lock;
    _Atomic int ran;
} held_ctx_t;

static void held_fn(void *p)
{
    held_ctx_t *c = p;
    atomic_store_explicit(&c->ran, 1, memory_order_relaxed);
}

static void *exec_held(void *p)
{
    held_ctx_t *c = p;
    if (baton_execute(c->lock, held_fn, c) != 0)
        atomic_store_explicit(&c->ran, -1, memory_order_relaxed);
    return NULL;
}

typedef struct self_ctx {
    baton_lock_t *lock;
    int rc;
} self_ctx_t;

/* An operation that executes on its own lock: must be refused (EDEADLK). */
static void self_fn(void *p)
{
    self_ctx_t *c = p;
    held_ctx_t h = {.lock = c->lock};
    c->rc = baton_execute(c->lock, held_fn, &h);
}

static void test_semantics(void)
{
    const baton_kind_info_t *list;
    size_t n = baton_kinds(&list);
    const baton_kind_info_t *fc = NULL, *cc = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(list[i].name, "fc") == 0)
            fc = &list[i];
        if (strcmp(list[i].name, "ccsynch") == 0)
            cc = &list[i];
    }
    CHECK(fc != NULL && cc != NULL, "fc and ccsynch are registered");
    if (!fc || !cc)
        return;
    CHECK((fc->caps & (BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE)) ==
              (BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE),
          "fc caps %#x", fc->caps);
    CHECK(!(fc->caps & BATON_CAP_DETACH), "fc has no detached mode");
    CHECK(!(cc->caps & (BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_DETACH)), "ccsynch caps %#x",
          cc->caps);
    CHECK((cc->caps & (BATON_CAP_FIFO | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE)) ==
              (BATON_CAP_FIFO | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE),
          "ccsynch caps %#x", cc->caps);
    CHECK(strstr(fc->options, "num_rep=<1..1048576, default 4096>") != NULL &&
              strstr(fc->options, "rep_threshold=<1..1048576, default 1>") != NULL &&
              strstr(fc->options, "help_limit=<1..16777216, default 4096>") != NULL,
          "fc options '%s'", fc->options);
    CHECK(strstr(cc->options, "help_limit=<1..16777216, default 4096>") != NULL, "ccsynch options '%s'",
          cc->options);

    /* fc: lock/trylock/unlock take the combiner lock; an execute waits. */
    baton_lock_t *l = baton_lock_new("fc:spinpark");
    CHECK(l != NULL, "%s", baton_last_error());
    if (l) {
        CHECK(baton_lock(l) == 0, "fc lock");
        CHECK(baton_trylock(l) == EBUSY, "fc trylock while held");
        CHECK(baton_lock_free(l) == EBUSY, "fc free while held");
        held_ctx_t c = {.lock = l};
        pthread_t t;
        pthread_create(&t, NULL, exec_held, &c);
        usleep(20000);
        CHECK(atomic_load_explicit(&c.ran, memory_order_relaxed) == 0,
              "fc: execute ran while lock() held the lock");
        CHECK(baton_unlock(l) == 0, "fc unlock");
        pthread_join(t, NULL);
        CHECK(atomic_load_explicit(&c.ran, memory_order_relaxed) == 1, "fc: execute after unlock");
        CHECK(baton_trylock(l) == 0 && baton_unlock(l) == 0, "fc trylock when free");
        /* execute on the lock from inside its own operation */
        self_ctx_t self = {l, -1};
        CHECK(baton_execute(l, self_fn, &self) == 0, "fc execute");
        CHECK(self.rc == EDEADLK, "fc: execute from inside gave %d", self.rc);
        CHECK(baton_lock_free(l) == 0, "fc free");
    }

    /* ccsynch: execute/delegate only. */
    l = baton_lock_new("ccsynch");
    CHECK(l != NULL, "%s", baton_last_error());
    if (l) {
        CHECK(baton_lock(l) == ENOTSUP, "ccsynch lock");
        CHECK(baton_trylock(l) == ENOTSUP, "ccsynch trylock");
        CHECK(baton_unlock(l) == ENOTSUP, "ccsynch unlock");
        self_ctx_t self = {l, -1};
        CHECK(baton_execute(l, self_fn, &self) == 0, "ccsynch execute");
        CHECK(self.rc == EDEADLK, "ccsynch: execute from inside gave %d", self.rc);
        unsigned char big[BATON_ARGS_MAX + 1] = {0};
        CHECK(baton_delegate(l, nested_fn, big, sizeof big) == EINVAL, "ccsynch oversized args");
        CHECK(strncmp(baton_lock_spec(l), "ccsynch:spinpark", 16) == 0, "ccsynch spec '%s'",
              baton_lock_spec(l));
        CHECK(baton_lock_free(l) == 0, "ccsynch free");
    }
    CHECK(baton_lock_new("fc,num_rep=0") == NULL, "fc num_rep=0 refused");
    CHECK(baton_lock_new("ccsynch,help_limit=0") == NULL, "ccsynch help_limit=0 refused");
}

int main(int argc, char **argv)
{
    /* A hang is a failure, not a stuck test run; and what was printed
     * before a crash or a hang must reach the log. */
    alarm(300);
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Milliseconds per run (each thread does at least one operation). */
    int millis = argc > 1 ? atoi(argv[1]) : 30;
    if (millis < 1)
        millis = 1;
    test_semantics();

    static const char *const kinds[] = {"fc", "ccsynch"};
    static const char *const waits[] = {"spin", "spinpark", "park"};
    static const int threads[] = {2, 4, 16};
    char spec[96];
    for (size_t k = 0; k < 2; k++) {
        uint64_t foreign = 0;
        for (size_t w = 0; w < 3; w++) {
            for (size_t t = 0; t < 3; t++) {
                snprintf(spec, sizeof spec, "%s:%s", kinds[k], waits[w]);
                foreign += run_threads(spec, threads[t], millis, t == 1);
            }
        }
        /* Tiny sessions: the combiner role changes hands after every
         * operation (ccsynch) or every pass (fc). */
        snprintf(spec, sizeof spec, "%s:spinpark,help_limit=1", kinds[k]);
        run_threads(spec, 4, millis, false);
        run_threads(spec, 16, millis, false);
        /* Combining must have happened somewhere: with 16 threads on few
         * CPUs, waiters are preempted after publishing and served. */
        CHECK(foreign > 0, "%s: no operation ever ran on a combiner other than its caller", kinds[k]);
    }
    /* At its help limit a CC-Synch combiner runs a parked owner's request
     * rather than hand that thread the role (it would need a wake-up before
     * anything ran): with every waiter parking and a limit of one request,
     * sessions run more than one.  fc's owed wakes get the same runs. */
    baton_stats_t cst;
    run_threads_stats("ccsynch:park,help_limit=1", 16, millis, false, &cst);
    CHECK(cst.helped_ops > cst.help_sessions,
          "ccsynch:park,help_limit=1: %llu requests in %llu sessions: no session ran past the limit for a "
          "parked owner",
          (unsigned long long)cst.helped_ops, (unsigned long long)cst.help_sessions);
    run_threads("ccsynch:park,help_limit=1", 4, millis, false);
    run_threads("fc:park,help_limit=1", 16, millis, false);
    run_threads("fc:spin,num_rep=1,rep_threshold=1", 4, millis, false);
    run_threads("fc:spinpark,rep_threshold=1048576", 4, millis, false);

    bool measure = heap_measurable();
    if (!measure)
        printf("  churn: mallinfo2() does not see this allocator (sanitizer build?); "
               "the heap growth check is skipped, the totals are still checked\n");
    for (size_t k = 0; k < 2; k++)
        for (size_t w = 0; w < 3; w++) {
            snprintf(spec, sizeof spec, "%s:%s", kinds[k], waits[w]);
            test_churn(spec, measure);
        }

    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("combining: all checks passed\n");
    return 0;
}
