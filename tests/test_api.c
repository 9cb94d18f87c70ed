/* test_api.c - unit tests of the dynamic API and its errors, for every kind. */
#include <baton/baton.h>
#include <baton/wait.h>

#include <errno.h>

#ifndef BATON_DEBUG
#define BATON_DEBUG 0
#endif
/* Debug builds check the owner of every lock by default (check=1), and the
 * canonical spec then says so. */
#define DEBUG_SUFFIX (BATON_DEBUG ? ",check=1" : "")
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "../src/api/registry.h"       /* test_tryrlock(): the kind table */
#include "../src/wait/wait_internal.h" /* test_owed_wakes(): the owed-wake list */

/* A second thread that runs lock operations on request, so that tests can
 * act as "another thread" that keeps its identity between operations. */
typedef int (*lock_op)(baton_lock_t *);
static struct agent {
    pthread_t tid;
    pthread_mutex_t m;
    pthread_cond_t cv;
    lock_op op; /* request; NULL when idle */
    baton_lock_t *lock;
    int rc;
    int done; /* result ready */
    int quit;
} agent = {.m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *agent_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&agent.m);
    for (;;) {
        while (!agent.op && !agent.quit)
            pthread_cond_wait(&agent.cv, &agent.m);
        if (agent.quit)
            break;
        lock_op op = agent.op;
        baton_lock_t *l = agent.lock;
        pthread_mutex_unlock(&agent.m);
        int rc = op(l);
        pthread_mutex_lock(&agent.m);
        agent.op = NULL;
        agent.rc = rc;
        agent.done = 1;
        pthread_cond_broadcast(&agent.cv);
    }
    pthread_mutex_unlock(&agent.m);
    return NULL;
}

static int on_other_thread(lock_op op, baton_lock_t *l)
{
    pthread_mutex_lock(&agent.m);
    agent.op = op;
    agent.lock = l;
    agent.done = 0;
    pthread_cond_broadcast(&agent.cv);
    while (!agent.done)
        pthread_cond_wait(&agent.cv, &agent.m);
    int rc = agent.rc;
    pthread_mutex_unlock(&agent.m);
    return rc;
}

struct exec_ctx {
    baton_lock_t *lock;
    int runs;
    int busy_inside;
    unsigned char seen[BATON_ARGS_MAX];
};

static void exec_fn(void *p)
{
    struct exec_ctx *c = p;
    c->runs++;
    c->busy_inside = baton_trylock(c->lock) == EBUSY;
}

struct deleg_args {
    struct exec_ctx *ctx;
    unsigned char bytes[BATON_ARGS_MAX - sizeof(struct exec_ctx *)];
};

static void deleg_fn(void *p)
{
    struct deleg_args *a = p;
    a->ctx->runs++;
    a->ctx->busy_inside = baton_trylock(a->ctx->lock) == EBUSY;
    memcpy(a->ctx->seen, a->bytes, sizeof a->bytes);
    memset(a->bytes, 0, sizeof a->bytes); /* must not reach the caller */
}

/* The spec that names kind k (wrappers wrap mcs). */
static void kind_spec(char *spec, size_t size, const baton_kind_info_t *k, const char *suffix)
{
    if (k->caps & BATON_CAP_WRAPPER)
        snprintf(spec, size, "%s(mcs)%s", k->name, suffix);
    else
        snprintf(spec, size, "%s%s", k->name, suffix);
}

static void test_kind(const baton_kind_info_t *k, int check)
{
    char spec[64];
    kind_spec(spec, sizeof spec, k, check ? ",check=1" : "");
    baton_lock_t *l = baton_lock_new(spec);
    CHECK(l != NULL, "%s: %s", spec, baton_last_error());
    if (!l)
        return;
    CHECK(strncmp(baton_lock_spec(l), k->name, strlen(k->name)) == 0, "%s: canonical spec %s", spec,
          baton_lock_spec(l));
    CHECK(baton_lock_kind(l) != NULL && strcmp(baton_lock_kind(l)->name, k->name) == 0, "%s", spec);
    int owner_checked = check || BATON_DEBUG || (k->caps & BATON_CAP_OWNER);
    if (!(k->caps & BATON_CAP_LOCK)) {
        /* Execute/delegate-only kinds refuse the lock verbs, clearly. */
        CHECK(baton_lock(l) == ENOTSUP, "%s: lock on an execute-only kind", spec);
        CHECK(strstr(baton_last_error(), "execute") != NULL, "%s: '%s'", spec, baton_last_error());
        CHECK(baton_trylock(l) == ENOTSUP && baton_unlock(l) == ENOTSUP, "%s", spec);
        struct exec_ctx c = {.lock = l};
        CHECK(baton_execute(l, exec_fn, &c) == 0 && c.runs == 1, "%s: execute", spec);
        struct deleg_args a = {.ctx = &c};
        for (size_t i = 0; i < sizeof a.bytes; i++)
            a.bytes[i] = (unsigned char)(i * 7 + 1);
        c.runs = 0;
        CHECK(baton_delegate(l, deleg_fn, &a, sizeof a) == 0, "%s", spec);
        CHECK(baton_execute(l, exec_fn, &c) == 0, "%s", spec); /* runs after the delegation */
        CHECK(c.runs == 2, "%s: delegate + execute ran %d", spec, c.runs);
        CHECK(memcmp(c.seen, a.bytes, sizeof a.bytes) == 0, "%s: delegate payload", spec);
        unsigned char big[BATON_ARGS_MAX + 1] = {0};
        CHECK(baton_delegate(l, deleg_fn, big, sizeof big) == EINVAL, "%s: oversized args", spec);
        CHECK(baton_lock_free(l) == 0, "%s: free", spec);
        return;
    }

    /* lock, trylock on a held lock (same and other thread), free while held */
    CHECK(baton_lock(l) == 0, "%s", spec);
    CHECK(baton_trylock(l) == EBUSY, "%s: trylock by the holder", spec);
    CHECK(on_other_thread(baton_trylock, l) == EBUSY, "%s: trylock by another thread", spec);
    CHECK(baton_lock_free(l) == EBUSY, "%s: free while held", spec);
    CHECK(strstr(baton_last_error(), "held") != NULL, "%s: message '%s'", spec, baton_last_error());
    if (owner_checked)
        CHECK(on_other_thread(baton_unlock, l) == EPERM, "%s: unlock by non-owner", spec);
    CHECK(baton_unlock(l) == 0, "%s: unlock", spec);
    if (owner_checked)
        CHECK(baton_unlock(l) == EPERM, "%s: double unlock", spec);

    /* trylock on a free lock, then the other thread's trylock fails */
    CHECK(baton_trylock(l) == 0, "%s: trylock free", spec);
    CHECK(on_other_thread(baton_trylock, l) == EBUSY, "%s", spec);
    CHECK(baton_unlock(l) == 0, "%s", spec);
    CHECK(on_other_thread(baton_trylock, l) == 0, "%s: trylock by another thread, free", spec);
    /* ...which now holds it; the owner-tracking kinds refuse our unlock */
    if (owner_checked)
        CHECK(baton_unlock(l) == EPERM, "%s: unlock of another thread's lock", spec);
    CHECK(baton_trylock(l) == EBUSY, "%s: held by the other thread", spec);
    CHECK(on_other_thread(baton_unlock, l) == 0, "%s: owner unlocks", spec);

    if (check) {
        CHECK(baton_lock(l) == 0, "%s", spec);
        CHECK(baton_lock(l) == EDEADLK, "%s: relock by owner", spec);
        CHECK(baton_execute(l, exec_fn, NULL) == EDEADLK, "%s: execute while holding", spec);
        CHECK(baton_unlock(l) == 0, "%s", spec);
    }

    /* execute: runs once, under the lock */
    struct exec_ctx c = {.lock = l};
    CHECK(baton_execute(l, exec_fn, &c) == 0, "%s", spec);
    CHECK(c.runs == 1 && c.busy_inside, "%s: execute ran %d times, busy inside %d", spec, c.runs,
          c.busy_inside);
    CHECK(baton_trylock(l) == 0 && baton_unlock(l) == 0, "%s: free after execute", spec);

    /* delegate: copies its arguments; the function's writes stay in the copy */
    struct deleg_args a = {.ctx = &c};
    for (size_t i = 0; i < sizeof a.bytes; i++)
        a.bytes[i] = (unsigned char)(i * 7 + 1);
    c.runs = 0;
    CHECK(baton_delegate(l, deleg_fn, &a, sizeof a) == 0, "%s", spec);
    CHECK(c.runs == 1 && c.busy_inside, "%s: delegate ran %d", spec, c.runs);
    CHECK(memcmp(c.seen, a.bytes, sizeof a.bytes) == 0, "%s: delegate payload", spec);
    CHECK(a.bytes[5] == 36, "%s: delegate wrote through to the caller's arguments", spec);
    unsigned char big[BATON_ARGS_MAX + 1] = {0};
    CHECK(baton_delegate(l, deleg_fn, big, sizeof big) == EINVAL, "%s: oversized args", spec);
    CHECK(strstr(baton_last_error(), "BATON_ARGS_MAX") != NULL, "%s: '%s'", spec, baton_last_error());
    CHECK(c.runs == 1, "%s: oversized delegate must not run", spec);

    CHECK(baton_lock_free(l) == 0, "%s: free", spec);
}

/* --- delegation: futures, self-deadlock, nothing accepted lost ------------- */

struct counter_ctx {
    baton_lock_t *lock;
    long n;
    int nested_rc;
};

struct add_args {
    struct counter_ctx *c;
    long v;
};

static void add_fn(void *p)
{
    struct add_args *a = p;
    a->c->n += a->v;
}

static void nested_exec_fn(void *p)
{
    struct counter_ctx *c = p;
    struct add_args a = {c, 1};
    c->nested_rc = baton_execute(c->lock, add_fn, &a);
}

static void nested_deleg_fn(void *p)
{
    struct counter_ctx *c = p;
    struct add_args a = {c, 1};
    c->nested_rc = baton_delegate(c->lock, add_fn, &a, sizeof a);
}

enum { EXIT_THREADS = 8, EXIT_OPS = 2000 };

static void *delegate_and_exit(void *p)
{
    struct counter_ctx *c = p;
    for (int i = 0; i < EXIT_OPS; i++) {
        struct add_args a = {c, 1};
        if (baton_delegate(c->lock, add_fn, &a, sizeof a) != 0)
            return (void *)1;
    }
    return NULL; /* exits with operations possibly still accepted but not run */
}

static void test_delegation(const baton_kind_info_t *k)
{
    /* Eight threads on this machine's few CPUs: a kind that spins by
     * default is asked to park after its budget instead (spinning FIFO
     * kinds collapse when threads outnumber CPUs; that is measured by the
     * benchmarks, not waited out here). */
    char spec[64];
    if (k->caps & BATON_CAP_WRAPPER)
        snprintf(spec, sizeof spec, "%s(mcs:spinpark)", k->name);
    else if ((k->caps & BATON_CAP_WAIT) && (k->waits & (1u << BATON_WAIT_SPINPARK)))
        snprintf(spec, sizeof spec, "%s:spinpark", k->name);
    else
        kind_spec(spec, sizeof spec, k, "");
    baton_lock_t *l = baton_lock_new(spec);
    CHECK(l != NULL, "%s: %s", spec, baton_last_error());
    if (!l)
        return;
    struct counter_ctx c = {.lock = l};

    /* Futures: ready once the operation ran; refused ones are ready too. */
    baton_future_t f[16];
    for (int i = 0; i < 16; i++) {
        struct add_args a = {&c, i + 1};
        CHECK(baton_delegate_future(l, add_fn, &a, sizeof a, &f[i]) == 0, "%s: future %d", spec, i);
    }
    for (int i = 0; i < 16; i++)
        CHECK(baton_future_wait(&f[i]) == 0 && baton_future_ready(&f[i]), "%s: future %d", spec, i);
    struct add_args one = {&c, 0};
    CHECK(baton_execute(l, add_fn, &one) == 0 && c.n == 136, "%s: futures summed %ld, want 136", spec, c.n);
    unsigned char big[BATON_ARGS_MAX + 8] = {0};
    baton_future_t bad;
    CHECK(baton_delegate_future(l, add_fn, big, sizeof big, &bad) == EINVAL, "%s", spec);
    CHECK(baton_future_ready(&bad) && baton_future_wait(&bad) == EINVAL, "%s: refused future not ready",
          spec);

    /* An operation on its own lock from inside its critical section. */
    c.nested_rc = 0;
    CHECK(baton_execute(l, nested_exec_fn, &c) == 0, "%s", spec);
    CHECK(c.nested_rc == EDEADLK, "%s: execute inside execute returned %d", spec, c.nested_rc);
    c.nested_rc = 0;
    CHECK(baton_execute(l, nested_deleg_fn, &c) == 0, "%s", spec);
    CHECK(c.nested_rc == EDEADLK, "%s: delegate inside execute returned %d", spec, c.nested_rc);

    /* Threads delegate and exit; freeing the lock runs whatever is left. */
    c.n = 0;
    pthread_t t[EXIT_THREADS];
    for (int i = 0; i < EXIT_THREADS; i++)
        pthread_create(&t[i], NULL, delegate_and_exit, &c);
    for (int i = 0; i < EXIT_THREADS; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        CHECK(rc == NULL, "%s: delegate failed in thread %d", spec, i);
    }
    CHECK(baton_lock_free(l) == 0, "%s: free", spec);
    CHECK(c.n == (long)EXIT_THREADS * EXIT_OPS, "%s: %ld operations ran after free, want %d", spec, c.n,
          EXIT_THREADS * EXIT_OPS);
}

/* The kinds' tryrlock (no public call: the interposer's tryrdlock uses it),
 * on a state made straight from the registry: it admits readers, and
 * refuses while a writer holds the lock or waits for readers to leave. */
struct kind_state {
    const baton_kind_t *kind;
    void *s;
};

static void *take_write(void *arg)
{
    struct kind_state *ks = arg;
    ks->kind->lock(ks->s);
    ks->kind->unlock(ks->s);
    return NULL;
}

static void test_tryrlock(const char *spec)
{
    const baton_kind_t *kind;
    baton_opts_t o;
    char canon[160];
    CHECK(baton_spec_parse(spec, &kind, &o, canon, sizeof canon) == 0, "%s: parse", spec);
    if (kind->tryrlock == NULL) {
        CHECK(0, "%s: an RW kind without tryrlock", spec);
        return;
    }
    void *s = aligned_alloc(kind->align, (kind->size + kind->align - 1) / kind->align * kind->align);
    memset(s, 0, kind->size);
    CHECK(kind->init(s, &o) == 0, "%s: init", spec);
    CHECK(kind->tryrlock(s) == 0 && kind->tryrlock(s) == 0, "%s: tryrlock when free", spec);
    kind->runlock(s);
    kind->runlock(s);
    CHECK(kind->trylock(s) == 0, "%s: trylock", spec);
    CHECK(kind->tryrlock(s) == EBUSY, "%s: tryrlock while a writer holds", spec);
    kind->unlock(s);
    /* A writer waiting for our read to end: tryrlock refuses once it is there. */
    CHECK(kind->tryrlock(s) == 0, "%s: tryrlock", spec);
    pthread_t t;
    struct kind_state ks = {kind, s};
    pthread_create(&t, NULL, take_write, &ks);
    int rc;
    time_t give_up = time(NULL) + 10; /* a broken kind fails rather than hangs */
    while ((rc = kind->tryrlock(s)) == 0 && time(NULL) < give_up) {
        kind->runlock(s);
        sched_yield();
    }
    CHECK(rc == EBUSY, "%s: tryrlock while a writer waits returned %d", spec, rc);
    if (rc == 0)
        kind->runlock(s);
    kind->runlock(s);
    pthread_join(t, NULL);
    CHECK(kind->destroy(s) == 0, "%s: destroy", spec);
    free(s);
}

/* Readers share RW kinds; every other kind's rlock is its lock. */
static void test_readers(const baton_kind_info_t *k)
{
    if (!(k->caps & BATON_CAP_LOCK))
        return;
    char spec[64];
    kind_spec(spec, sizeof spec, k, "");
    baton_lock_t *l = baton_lock_new(spec);
    if (!l)
        return;
    CHECK(baton_rlock(l) == 0, "%s: rlock", spec);
    if (k->caps & BATON_CAP_RW) {
        CHECK(on_other_thread(baton_rlock, l) == 0, "%s: a second reader", spec);
        CHECK(on_other_thread(baton_runlock, l) == 0, "%s", spec);
        CHECK(on_other_thread(baton_trylock, l) == EBUSY, "%s: writer while a reader reads", spec);
    } else {
        CHECK(on_other_thread(baton_trylock, l) == EBUSY, "%s: rlock is exclusive", spec);
    }
    CHECK(baton_runlock(l) == 0, "%s: runlock", spec);
    CHECK(on_other_thread(baton_trylock, l) == 0 && on_other_thread(baton_unlock, l) == 0,
          "%s: free after the readers left", spec);
    CHECK(baton_lock_free(l) == 0, "%s", spec);
    if (k->caps & BATON_CAP_RW)
        test_tryrlock(spec);
}

/* After fork the child can use the locks (servers re-created). */
static void test_fork(void)
{
    const char *specs[] = {"qd", "qd,tenure_us=100", "mrqd",    "hqd,groups=2", "rcl",
                           "fc", "ccsynch",          "rw(mcs)", "mcs",          "relay"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        baton_lock_t *l = baton_lock_new(specs[i]);
        CHECK(l != NULL, "%s", specs[i]);
        if (!l)
            continue;
        struct counter_ctx c = {.lock = l};
        struct add_args a = {&c, 1};
        baton_execute(l, add_fn, &a);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            int ok = baton_execute(l, add_fn, &a) == 0 && baton_delegate(l, add_fn, &a, sizeof a) == 0;
            ok = ok && baton_execute(l, add_fn, &a) == 0 && c.n == 4 && baton_lock_free(l) == 0;
            _exit(ok ? 0 : 1);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child after fork failed", specs[i]);
        CHECK(baton_lock_free(l) == 0 && c.n == 1, "%s", specs[i]);
    }
}

/* Many locks of one kind held at once, released in a scrambled order. */
static void test_many_held(const char *name)
{
    enum { N = 12 };
    baton_lock_t *l[N];
    for (int i = 0; i < N; i++) {
        l[i] = baton_lock_new(name);
        CHECK(l[i] != NULL, "%s", name);
        if (!l[i])
            return;
    }
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            CHECK(baton_lock(l[i]) == 0, "%s", name);
        for (int i = 0; i < N; i++) {
            int j = (i * 5 + round * 3) % N; /* a permutation of 0..N-1 */
            CHECK(baton_unlock(l[j]) == 0, "%s: unlock %d of %d held", name, j, N);
        }
        for (int i = 0; i < N; i++) {
            CHECK(on_other_thread(baton_trylock, l[i]) == 0, "%s: lock %d free after scrambled release", name,
                  i);
            CHECK(on_other_thread(baton_unlock, l[i]) == 0, "%s", name);
        }
    }
    for (int i = 0; i < N; i++)
        CHECK(baton_lock_free(l[i]) == 0, "%s", name);
}

static void expect_bad(const char *spec, int err, const char *must_contain)
{
    errno = 0;
    baton_lock_t *l = baton_lock_new(spec);
    CHECK(l == NULL, "'%s' accepted", spec);
    if (l) {
        baton_lock_free(l);
        return;
    }
    CHECK(errno == err, "'%s': errno %d, want %d", spec, errno, err);
    CHECK(strstr(baton_last_error(), must_contain) != NULL, "'%s': message '%s' lacks '%s'", spec,
          baton_last_error(), must_contain);
}

static void test_bad_specs(void)
{
    const baton_kind_info_t *list;
    size_t n = baton_kinds(&list);
    expect_bad("nosuchlock", EINVAL, "valid kinds:");
    for (size_t i = 0; i < n; i++)
        expect_bad("nosuchlock", EINVAL, list[i].name);
    expect_bad("mcs:sleepy", EINVAL, "spinpark");
    expect_bad("mcs:", EINVAL, "valid policies");
    expect_bad("pthread:spin", EINVAL, "takes no wait policy");
    expect_bad("relay,slice_us=0", EINVAL, "slice_us=<1..1000000>");
    expect_bad("relay,bogus=1", EINVAL, "unknown option");
    expect_bad("relay,slice_us=abc", EINVAL, "key=<unsigned>");
    expect_bad("tas,check=2", EINVAL, "check=<0|1>");
    expect_bad("tas extra", EINVAL, "valid kinds");
    expect_bad("rw", EINVAL, "rw(<kind>)");
    expect_bad("rw(nosuch)", EINVAL, "unknown lock kind 'nosuch'");
    expect_bad("rw(mcs", EINVAL, "unbalanced");
    expect_bad("mcs(tas)", EINVAL, "does not wrap");
    expect_bad("qd,queue=200", EINVAL, "queue=<256..65536>");
    expect_bad("qd,queue=300", EINVAL, "multiple of 128");
    const baton_cpu_features_t *f = baton_cpu_features();
    if (!f->waitpkg && !f->monitorx)
        expect_bad("mcs:monitor", ENOTSUP, "auto");
    else {
        baton_lock_t *l = baton_lock_new("mcs:monitor");
        CHECK(l != NULL, "mcs:monitor on a CPU with monitor support: %s", baton_last_error());
        baton_lock_free(l);
    }
}

/* The dynamic API's layout: the handle is the word just before the state,
 * which starts a cache line of its own, so the handle's line is one that
 * lock and unlock only read (a CAS on the line it was read from cost a
 * second coherence miss whenever the other CPU had the lock last). */
static void test_layout(void)
{
    const baton_kind_t *k;
    for (size_t i = 0; (k = baton_registry_at(i)) != NULL; i++) {
        if (!(k->caps & BATON_CAP_LOCK) || k->wrapper)
            continue;
        baton_lock_t *l = baton_lock_new(k->name);
        CHECK(l != NULL, "%s: baton_lock_new failed", k->name);
        if (!l)
            continue;
        char *state = baton_lock_state(l);
        CHECK((char *)l + sizeof(void *) == state, "%s: the handle is not just before the state", k->name);
        CHECK((uintptr_t)state % 64 == 0 && (uintptr_t)l / 64 != (uintptr_t)state / 64,
              "%s: the handle shares a line with the state", k->name);
        const void *ops = *(const void *const *)(const void *)l;
        /* The handle's line is read, never written, by the operations. */
        CHECK(baton_lock(l) == 0, "%s: lock", k->name);
        CHECK(baton_trylock(l) == EBUSY, "%s: trylock of a held lock", k->name);
        CHECK(baton_unlock(l) == 0, "%s: unlock", k->name);
        CHECK(baton_trylock(l) == 0, "%s: trylock of a free lock", k->name);
        CHECK(baton_unlock(l) == 0, "%s: unlock", k->name);
        CHECK(*(const void *const *)(const void *)l == ops, "%s: the handle changed", k->name);
        CHECK(baton_lock_free(l) == 0, "%s: free", k->name);
    }
}

/* spinpark's spin limit: a random share of the budget, below it (the
 * largest share is 99.5%), unless the policy is flagged
 * BATON_WAIT_FULL_SPIN (barriers, the lock server's clients): then the
 * whole budget, every time. */
static unsigned spins_before_park(const baton_wait_t *w)
{
    baton_waiter_t s;
    baton_waiter_init(&s, w);
    unsigned n = 0;
    while (baton_waiter_pause(&s, NULL, 0))
        n++;
    return n;
}

static void test_full_spin(void)
{
    enum { BUDGET = 1000, EPISODES = 64 };
    baton_wait_t w;
    CHECK(baton_wait_init(&w, BATON_WAIT_SPINPARK) == 0, "spinpark init");
    w.budget = BUDGET;
    const char *fixed = getenv("BATON_SPIN_FIXED");
    if (fixed == NULL || strcmp(fixed, "1") != 0) {
        for (int i = 0; i < EPISODES; i++) {
            unsigned n = spins_before_park(&w);
            CHECK(n < BUDGET, "spinpark spun %u of a budget of %u: not a random share", n, BUDGET);
        }
    }
    w.flags |= BATON_WAIT_FULL_SPIN;
    for (int i = 0; i < EPISODES; i++) {
        unsigned n = spins_before_park(&w);
        CHECK(n == BUDGET, "spinpark with BATON_WAIT_FULL_SPIN spun %u, not its budget of %u", n, BUDGET);
    }
}

/* Wakes owed (wait_internal.h): a helper publishes to parked waiters with
 * baton_wait_store_owed() and pays with baton_wake_owed().  More sleepers
 * than the list holds: the store that finds it full wakes the first 32 at
 * once, and the payment wakes the rest.  Every sleeper parks without a
 * timeout (the park policy), so one the list forgot would sleep on. */
enum { OWED_SLEEPERS = BATON_OWED_MAX + 8 };
static _Atomic uint32_t owed_word[OWED_SLEEPERS];
static _Atomic int owed_back;

static void *owed_sleeper(void *arg)
{
    baton_wait_t w;
    (void)baton_wait_init(&w, BATON_WAIT_PARK);
    (void)baton_wait_while_eq(&w, &owed_word[(intptr_t)arg], 0u);
    atomic_fetch_add_explicit(&owed_back, 1, memory_order_relaxed);
    return NULL;
}

static void test_owed_wakes(void)
{
    pthread_t t[OWED_SLEEPERS];
    baton_wait_t w;
    CHECK(baton_wait_init(&w, BATON_WAIT_PARK) == 0, "park init");
    for (intptr_t i = 0; i < OWED_SLEEPERS; i++) {
        atomic_init(&owed_word[i], 0u);
        if (pthread_create(&t[i], NULL, owed_sleeper, (void *)i) != 0) {
            printf("FAIL: pthread_create\n");
            exit(1);
        }
    }
    /* Every sleeper has marked its word parked; then a moment for the last
     * ones to enter the kernel. */
    for (int i = 0; i < OWED_SLEEPERS; i++)
        while (!(atomic_load_explicit(&owed_word[i], memory_order_relaxed) & BATON_WAIT_PARKED))
            usleep(100);
    usleep(20000);
    baton_owed_t o;
    baton_owed_init(&o);
    for (int i = 0; i < OWED_SLEEPERS; i++)
        baton_wait_store_owed(&w, &owed_word[i], 1u, &o);
    CHECK(o.n == OWED_SLEEPERS - BATON_OWED_MAX, "owed list holds %u after %d stores, expected %u", o.n,
          OWED_SLEEPERS, (unsigned)(OWED_SLEEPERS - BATON_OWED_MAX));
    baton_wake_owed(&o);
    CHECK(o.n == 0, "owed list not empty after the payment: %u", o.n);
    /* All back within 5 s, or the list lost wakes. */
    for (int ms = 0; ms < 5000 && atomic_load_explicit(&owed_back, memory_order_relaxed) < OWED_SLEEPERS;
         ms++)
        usleep(1000);
    int back = atomic_load_explicit(&owed_back, memory_order_relaxed);
    CHECK(back == OWED_SLEEPERS, "%d of %d sleepers woke: the owed wakes lost some", back, OWED_SLEEPERS);
    for (int i = 0; i < OWED_SLEEPERS; i++)
        baton_wake_all(&owed_word[i]); /* so that a failed run still joins */
    for (int i = 0; i < OWED_SLEEPERS; i++)
        pthread_join(t[i], NULL);
}

static void test_registry(void)
{
    const baton_kind_info_t *list;
    size_t n = baton_kinds(&list);
    CHECK(n >= 8, "only %zu kinds", n);
    const char *required[] = {"tas", "ttas", "ticket", "mcs", "clh", "onespinner", "pthread", "relay"};
    for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
        size_t i = 0;
        while (i < n && strcmp(list[i].name, required[r]) != 0)
            i++;
        CHECK(i < n, "kind %s missing", required[r]);
        if (i < n) {
            CHECK(list[i].summary && *list[i].summary, "%s", required[r]);
            CHECK((list[i].caps &
                   (BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE)) ==
                      (BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE),
                  "%s caps", required[r]);
        }
    }
    baton_lock_t *l = baton_lock_new(NULL);
    CHECK(l && strncmp(baton_lock_spec(l), "runner", 6) == 0, "default kind: %s",
          l ? baton_lock_spec(l) : baton_last_error());
    baton_lock_free(l);
    l = baton_lock_new("relay:spin,slice_us=20");
    char want[64];
    snprintf(want, sizeof want, "relay:spin,slice_us=20%s", DEBUG_SUFFIX);
    CHECK(l && strcmp(baton_lock_spec(l), want) == 0, "canonical: %s",
          l ? baton_lock_spec(l) : baton_last_error());
    baton_lock_free(l);
    for (unsigned w = 0; w < BATON_WAIT_KINDS; w++) {
        char spec[32];
        snprintf(spec, sizeof spec, "ttas:%s", baton_wait_policy_name(w));
        l = baton_lock_new(spec);
        if (!l && errno == ENOTSUP)
            continue;
        snprintf(want, sizeof want, "%s%s", spec, DEBUG_SUFFIX);
        CHECK(l && strcmp(baton_lock_spec(l), want) == 0, "%s -> %s", spec,
              l ? baton_lock_spec(l) : baton_last_error());
        baton_lock_free(l);
    }
    CHECK(baton_lock_free(NULL) == 0, "free(NULL)");
    /* The library's string, the header's macros and project()'s version
     * (passed by tests/CMakeLists.txt) are one version. */
    char ver[32];
    snprintf(ver, sizeof ver, "%d.%d.%d", BATON_VERSION_MAJOR, BATON_VERSION_MINOR, BATON_VERSION_PATCH);
    CHECK(strcmp(baton_version(), BATON_VERSION_STRING) == 0 && strcmp(ver, BATON_VERSION_STRING) == 0 &&
              strcmp(ver, BATON_PROJECT_VERSION) == 0,
          "version %s, header %s (%s), project %s", baton_version(), BATON_VERSION_STRING, ver,
          BATON_PROJECT_VERSION);
}

int main(void)
{
    pthread_create(&agent.tid, NULL, agent_main, NULL);
    const baton_kind_info_t *list;
    size_t n = baton_kinds(&list);
    for (size_t i = 0; i < n; i++) {
        char spec[64];
        kind_spec(spec, sizeof spec, &list[i], "");
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        test_kind(&list[i], 0);
        test_kind(&list[i], 1);
        if (list[i].caps & BATON_CAP_LOCK)
            test_many_held(spec);
        test_delegation(&list[i]);
        test_readers(&list[i]);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("%-12s %6.0f ms\n", spec,
               (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    }
    test_fork();
    test_bad_specs();
    test_registry();
    test_layout();
    test_full_spin();
    test_owed_wakes();
    pthread_mutex_lock(&agent.m);
    agent.quit = 1;
    pthread_cond_broadcast(&agent.cv);
    pthread_mutex_unlock(&agent.m);
    pthread_join(agent.tid, NULL);
    printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
