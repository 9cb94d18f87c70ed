/* test_rcl.c - the rcl kind (remote core locking): exact totals and
 * per-thread program order under execute and delegate, shared servers and
 * inline nesting, futures, freeing a lock with operations still posted by
 * threads that have exited, idle servers parking, pinning errors, fork(),
 * and the round-trip cost of an awake and of a parked server. */
#include <baton/baton.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static baton_lock_t *new_lock(const char *spec)
{
    baton_lock_t *l = baton_lock_new(spec);
    if (!l) {
        printf("FAIL: baton_lock_new(\"%s\"): %s\n", spec, baton_last_error());
        exit(1);
    }
    return l;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void spin_ns(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end) {
    }
}

/* The CPUs this process may run on, ascending. */
static int process_cpus(int *cpus, int max)
{
    cpu_set_t m;
    if (sched_getaffinity(0, sizeof m, &m) != 0)
        return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &m))
            cpus[n++] = c;
    return n;
}

/* --- totals and program order ------------------------------------------------ */

#define MAXT 16

/* Touched only by operations (on the server) and, after the lock is freed,
 * by the main thread: plain fields, so ThreadSanitizer checks the kind's
 * ordering. */
struct order_state {
    long total;
    long out_of_order;
    uint64_t last[MAXT];
};

struct order_args {
    struct order_state *st;
    int thread;
    uint64_t seq;
};

static void order_op(void *p)
{
    struct order_args *a = p;
    if (a->seq != a->st->last[a->thread] + 1)
        a->st->out_of_order++;
    a->st->last[a->thread] = a->seq;
    a->st->total++;
}

struct order_thread {
    baton_lock_t *l;
    struct order_state *st;
    int thread, ops, errors;
};

static void *order_main(void *p)
{
    struct order_thread *t = p;
    for (int i = 1; i <= t->ops; i++) {
        struct order_args a = {t->st, t->thread, (uint64_t)i};
        int rc =
            (i % 3 == 0) ? baton_execute(t->l, order_op, &a) : baton_delegate(t->l, order_op, &a, sizeof a);
        if (rc != 0)
            t->errors++;
    }
    return NULL;
}

static void test_order(const char *spec, int nthreads, int ops)
{
    baton_lock_t *l = new_lock(spec);
    struct order_state st;
    memset(&st, 0, sizeof st);
    struct order_thread t[MAXT];
    pthread_t tid[MAXT];
    uint64_t t0 = now_ns();
    for (int i = 0; i < nthreads; i++) {
        t[i] = (struct order_thread){l, &st, i, ops, 0};
        pthread_create(&tid[i], NULL, order_main, &t[i]);
    }
    int errors = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(tid[i], NULL);
        errors += t[i].errors;
    }
    baton_stats_t s;
    CHECK(baton_lock_stats(l, &s) == 0, "%s: stats", spec);
    /* Freeing runs whatever post=1 left posted; then the state is ours. */
    CHECK(baton_lock_free(l) == 0, "%s: free: %s", spec, baton_last_error());
    double ms = (double)(now_ns() - t0) / 1e6;
    CHECK(errors == 0, "%s, %d threads: %d calls failed", spec, nthreads, errors);
    CHECK(st.total == (long)nthreads * ops, "%s, %d threads: total %ld, expected %ld", spec, nthreads,
          st.total, (long)nthreads * ops);
    CHECK(st.out_of_order == 0, "%s, %d threads: %ld operations out of their thread's order", spec, nthreads,
          st.out_of_order);
    for (int i = 0; i < nthreads; i++)
        CHECK(st.last[i] == (uint64_t)ops, "%s: thread %d last ran %llu of %d", spec, i,
              (unsigned long long)st.last[i], ops);
    CHECK(s.helped_ops > 0 && s.help_sessions > 0 && s.helped_ops >= s.help_sessions,
          "%s: stats sessions %llu ops %llu", spec, (unsigned long long)s.help_sessions,
          (unsigned long long)s.helped_ops);
    printf("ok   order %-22s %2d threads x %d ops: %.1f ms, %.2f ops/session\n", spec, nthreads, ops, ms,
           s.help_sessions ? (double)s.helped_ops / (double)s.help_sessions : 0.0);
}

/* --- shared servers, inline nesting, EDEADLK ---------------------------------- */

struct nest {
    baton_lock_t *a, *b, *c;
    pthread_t a_thread, b_thread, c_thread;
    int b_ran, b_args_ran, c_ran, rc_b, rc_b_deleg, rc_c, rc_self, cpu_a;
};

static void nest_b(void *p)
{
    struct nest *n = p;
    n->b_thread = pthread_self();
    n->b_ran++;
}

static void nest_b_args(void *p)
{
    struct nest **np = p; /* the copied argument block holds a pointer */
    (*np)->b_args_ran++;
}

static void nest_c(void *p)
{
    struct nest *n = p;
    n->c_thread = pthread_self();
    n->c_ran++;
}

static void nest_self(void *p) { (void)p; }

static void nest_a(void *p)
{
    struct nest *n = p;
    n->a_thread = pthread_self();
    n->cpu_a = sched_getcpu();
    n->rc_b = baton_execute(n->b, nest_b, n);                        /* same server: inline */
    n->rc_b_deleg = baton_delegate(n->b, nest_b_args, &n, sizeof n); /* inline too */
    n->rc_c = baton_execute(n->c, nest_c, n);                        /* server 1: posted */
    n->rc_self = baton_execute(n->a, nest_self, NULL);               /* itself: EDEADLK */
}

static void test_nesting(void)
{
    int cpus[CPU_SETSIZE];
    int ncpu = process_cpus(cpus, CPU_SETSIZE);
    struct nest n;
    memset(&n, 0, sizeof n);
    n.a = new_lock("rcl,server=0");
    n.b = new_lock("rcl,server=0");
    n.c = new_lock("rcl,server=1");
    int rc = baton_execute(n.a, nest_a, &n);
    CHECK(rc == 0, "execute on A: %d", rc);
    CHECK(n.rc_b == 0 && n.b_ran == 1, "execute on B inside A: rc %d, ran %d", n.rc_b, n.b_ran);
    CHECK(n.rc_b_deleg == 0 && n.b_args_ran == 1, "delegate to B inside A: rc %d, ran %d", n.rc_b_deleg,
          n.b_args_ran);
    CHECK(pthread_equal(n.a_thread, n.b_thread), "B's operation did not run inline on server 0");
    CHECK(!pthread_equal(n.a_thread, pthread_self()), "A's operation ran on the caller, not a server");
    CHECK(n.rc_c == 0 && n.c_ran == 1, "execute on C (server 1) inside A: rc %d, ran %d", n.rc_c, n.c_ran);
    CHECK(!pthread_equal(n.c_thread, n.a_thread), "server 1 ran on server 0's thread");
    CHECK(n.rc_self == EDEADLK, "execute on A inside A: %d, expected EDEADLK", n.rc_self);
    if (ncpu > 0)
        CHECK(n.cpu_a == cpus[ncpu - 1], "server 0 runs on CPU %d, expected the last of the mask, %d",
              n.cpu_a, cpus[ncpu - 1]);
    baton_stats_t s;
    baton_lock_stats(n.b, &s);
    CHECK(s.direct_ops >= 2, "inline operations counted: %llu", (unsigned long long)s.direct_ops);
    CHECK(baton_lock(n.a) == ENOTSUP, "baton_lock on rcl should be ENOTSUP");
    CHECK(baton_lock_free(n.a) == 0 && baton_lock_free(n.b) == 0 && baton_lock_free(n.c) == 0, "free: %s",
          baton_last_error());
    printf("ok   nesting: inline on the shared server, posted across servers, EDEADLK on itself\n");
}

/* --- futures ------------------------------------------------------------------ */

struct fut_args {
    int *out;
    int value;
};

static void fut_op(void *p)
{
    struct fut_args *a = p;
    spin_ns(2000000); /* 2 ms: the caller reaches baton_future_wait() first */
    *a->out = a->value;
}

static void test_futures(const char *spec)
{
    baton_lock_t *l = new_lock(spec);
    int out[4] = {0, 0, 0, 0};
    baton_future_t f[4];
    for (int i = 0; i < 4; i++) {
        struct fut_args a = {&out[i], 40 + i};
        int rc = baton_delegate_future(l, fut_op, &a, sizeof a, &f[i]);
        CHECK(rc == 0, "%s: delegate_future %d: %d", spec, i, rc);
    }
    for (int i = 3; i >= 0; i--) {
        int rc = baton_future_wait(&f[i]);
        CHECK(rc == 0, "%s: future %d status %d", spec, i, rc);
        CHECK(out[i] == 40 + i, "%s: future %d ready but the operation's result is %d", spec, i, out[i]);
    }
    CHECK(baton_lock_free(l) == 0, "%s: free", spec);
    printf("ok   futures %s\n", spec);
}

/* --- freeing after detached operations of exited threads ---------------------- */

struct late {
    long count;            /* plain: operations only, then main after free */
    _Atomic long progress; /* racy view of the same, to report what was left */
};

static void late_op(void *p)
{
    struct late *lt = *(struct late **)p;
    spin_ns(20000); /* slow, so operations are still posted when the lock is freed */
    lt->count++;
    atomic_fetch_add_explicit(&lt->progress, 1, memory_order_relaxed);
}

struct late_thread {
    baton_lock_t *l;
    struct late *lt;
    int ops;
};

static void *late_main(void *p)
{
    struct late_thread *t = p;
    for (int i = 0; i < t->ops; i++)
        baton_delegate(t->l, late_op, &t->lt, sizeof t->lt);
    return NULL; /* exits with its last operation still posted */
}

static void late_round(baton_lock_t *l, const char *what, int nthreads, int ops)
{
    struct late lt = {0, 0};
    struct late_thread t = {l, &lt, ops};
    pthread_t tid[MAXT];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&tid[i], NULL, late_main, &t);
    for (int i = 0; i < nthreads; i++)
        pthread_join(tid[i], NULL);
    long before = atomic_load_explicit(&lt.progress, memory_order_relaxed);
    CHECK(baton_lock_free(l) == 0, "%s: free: %s", what, baton_last_error());
    CHECK(lt.count == (long)nthreads * ops, "%s: %ld of %ld operations ran", what, lt.count,
          (long)nthreads * ops);
    printf("ok   free %s: %ld still posted at free, all %ld ran\n", what, (long)nthreads * ops - before,
           lt.count);
}

static void test_free_runs_posted(void)
{
    /* Another lock keeps server 2 alive: the per-lock drain. */
    baton_lock_t *keep = new_lock("rcl,server=2");
    late_round(new_lock("rcl,server=2,post=1"), "while the server lives on", 8, 50);
    /* New threads: the exited threads' mailboxes are reused. */
    late_round(new_lock("rcl:park,server=2,post=1"), "reused mailboxes", 8, 50);
    CHECK(baton_lock_free(keep) == 0, "free keep");
    /* The server's last lock: the stop path. */
    late_round(new_lock("rcl,server=5,post=1"), "the server's last lock", 8, 50);
}

/* --- idle servers park -------------------------------------------------------- */

struct whoami {
    clockid_t cpu_clock;
    long tid;
    int ran;
};

static void whoami_op(void *p)
{
    struct whoami *w = p;
    pthread_getcpuclockid(pthread_self(), &w->cpu_clock);
    w->tid = (long)syscall(SYS_gettid);
    w->ran++;
}

static uint64_t thread_cpu_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_idle_parks(void)
{
    baton_lock_t *l = new_lock("rcl,server=3");
    struct whoami w = {0, 0, 0};
    CHECK(baton_execute(l, whoami_op, &w) == 0 && w.ran == 1, "first execute");
    sleep_ns(50000000);
    uint64_t c1 = thread_cpu_ns(w.cpu_clock);
    sleep_ns(100000000);
    uint64_t c2 = thread_cpu_ns(w.cpu_clock);
    CHECK(c2 - c1 < 20000000, "idle server used %.1f ms of CPU in 100 ms", (double)(c2 - c1) / 1e6);
    CHECK(baton_execute(l, whoami_op, &w) == 0 && w.ran == 2, "execute after parking: ran %d", w.ran);
    CHECK(baton_lock_free(l) == 0, "free");
    printf("ok   idle server parks: %.3f ms of CPU in 100 ms idle\n", (double)(c2 - c1) / 1e6);
}

/* --- errors ------------------------------------------------------------------- */

static void test_errors(void)
{
    errno = 0;
    baton_lock_t *l = baton_lock_new("rcl,cpu=1000");
    CHECK(l == NULL, "rcl,cpu=1000 was created");
    CHECK(errno == EINVAL, "errno %d, expected EINVAL", errno);
    CHECK(strstr(baton_last_error(), "CPU 1000") != NULL && strstr(baton_last_error(), "server 0"),
          "message does not name the server and CPU: '%s'", baton_last_error());
    printf("ok   error: %s\n", baton_last_error());
    if (l)
        baton_lock_free(l);

    int cpus[CPU_SETSIZE];
    int n = process_cpus(cpus, CPU_SETSIZE);
    if (n >= 2) {
        char spec[64];
        snprintf(spec, sizeof spec, "rcl,server=6,cpu=%d", cpus[0]);
        baton_lock_t *a = new_lock(spec);
        snprintf(spec, sizeof spec, "rcl,server=6,cpu=%d", cpus[1]);
        baton_lock_t *b = baton_lock_new(spec);
        CHECK(b == NULL && errno == EINVAL, "%s on a server running on CPU %d: %p errno %d", spec, cpus[0],
              (void *)b, errno);
        CHECK(strstr(baton_last_error(), "already runs on CPU") != NULL, "message '%s'", baton_last_error());
        printf("ok   error: %s\n", baton_last_error());
        if (b)
            baton_lock_free(b);
        baton_lock_t *c = new_lock("rcl,server=6"); /* cpu unset: joins it */
        CHECK(baton_lock_free(c) == 0 && baton_lock_free(a) == 0, "free");
    }
}

/* --- fork --------------------------------------------------------------------- */

static void incr(void *p) { (*(long *)p)++; }

static void incr_via(void *p) { (**(long **)p)++; /* the argument block holds a pointer */ }

static void test_fork(void)
{
    baton_lock_t *l = new_lock("rcl,server=7");
    baton_lock_t *lp = new_lock("rcl,server=7,post=1");
    long x = 0;
    CHECK(baton_execute(l, incr, &x) == 0 && x == 1, "parent before fork: x=%ld", x);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10); /* a hang fails the test instead of stalling it */
        int bad = 0;
        long *px = &x;
        if (baton_execute(l, incr, &x) != 0 || x != 2)
            bad |= 1;
        if (baton_delegate(lp, incr_via, &px, sizeof px) != 0)
            bad |= 2;
        /* Program order: the delegation ran before this execute. */
        if (baton_execute(l, incr, &x) != 0 || x != 4)
            bad |= 4;
        if (baton_lock_free(lp) != 0 || baton_lock_free(l) != 0)
            bad |= 8;
        _exit(bad);
    }
    CHECK(pid > 0, "fork failed");
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s %d",
          WIFEXITED(status) ? "exit status" : "killed by signal",
          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    CHECK(baton_execute(l, incr, &x) == 0 && x == 2, "parent after fork: x=%ld", x);
    CHECK(baton_lock_free(lp) == 0 && baton_lock_free(l) == 0, "free");
    printf("ok   fork: the child ran operations on a lock made before the fork\n");
}

/* --- one mailbox, two policies ------------------------------------------------ */

static void slow_op(void *p)
{
    (void)p;
    spin_ns(5000000);
}

/* A thread's detached operation on a spinning lock is still running when
 * its next call, on a parking lock of the same server, waits for the same
 * mailbox: the server must wake it although the running operation's
 * policy never parks.  A lost wake-up hangs here, and the alarm fails it. */
static void test_mixed_policies(void)
{
    baton_lock_t *sp = new_lock("rcl:spin,post=1,server=8");
    baton_lock_t *pk = new_lock("rcl:park,server=8");
    long x = 0;
    alarm(10);
    CHECK(baton_delegate(sp, slow_op, NULL, 0) == 0, "delegate on the spinning lock");
    CHECK(baton_execute(pk, incr, &x) == 0 && x == 1, "execute on the parking lock: x=%ld", x);
    alarm(0);
    CHECK(baton_lock_free(sp) == 0 && baton_lock_free(pk) == 0, "free");
    printf("ok   one mailbox, a spinning then a parking lock: woken\n");
}

/* --- round-trip cost: awake vs parked server ---------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static long ctx_switches(long tid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
    FILE *f = fopen(path, "r");
    long v = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
            break;
    fclose(f);
    return v;
}

static void nop(void *p) { (void)p; }

#define AWAKE_N 5000
#define PARKED_N 2000

static void *measure_main(void *p)
{
    baton_lock_t *l = p;
    static uint64_t t[AWAKE_N];
    struct whoami w = {0, 0, 0};
    baton_execute(l, whoami_op, &w);
    for (int i = 0; i < 1000; i++)
        baton_execute(l, nop, NULL);
    for (int i = 0; i < AWAKE_N; i++) {
        uint64_t t0 = now_ns();
        baton_execute(l, nop, NULL);
        t[i] = now_ns() - t0;
    }
    qsort(t, AWAKE_N, sizeof t[0], cmp_u64);
    uint64_t awake = t[AWAKE_N / 2], awake90 = t[AWAKE_N * 9 / 10];
    long sw0 = ctx_switches(w.tid);
    for (int i = 0; i < PARKED_N; i++) {
        sleep_ns(100000); /* idle_us=20: the server parks meanwhile */
        uint64_t t0 = now_ns();
        baton_execute(l, nop, NULL);
        t[i] = now_ns() - t0;
    }
    long sw1 = ctx_switches(w.tid);
    qsort(t, PARKED_N, sizeof t[0], cmp_u64);
    printf("MEASURE execute round trip (client and server on different CPUs): awake server "
           "median %llu ns (p90 %llu), parked server median %llu ns (p90 %llu); server parked "
           "%.2f times per parked-case operation\n",
           (unsigned long long)awake, (unsigned long long)awake90, (unsigned long long)t[PARKED_N / 2],
           (unsigned long long)t[PARKED_N * 9 / 10], (double)(sw1 - sw0) / PARKED_N);
    return NULL;
}

static void measure(void)
{
    int cpus[CPU_SETSIZE];
    int n = process_cpus(cpus, CPU_SETSIZE);
    if (n < 2) {
        printf("skip measurement: one CPU\n");
        return;
    }
    char spec[64];
    snprintf(spec, sizeof spec, "rcl,server=4,cpu=%d,idle_us=20", cpus[n - 1]);
    baton_lock_t *l = new_lock(spec);
    pthread_attr_t a;
    pthread_attr_init(&a);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[0], &one);
    pthread_attr_setaffinity_np(&a, sizeof one, &one);
    pthread_t t;
    pthread_create(&t, &a, measure_main, l);
    pthread_join(t, NULL);
    pthread_attr_destroy(&a);
    CHECK(baton_lock_free(l) == 0, "free");
}

int main(int argc, char **argv)
{
    int do_measure = !(argc > 1 && strcmp(argv[1], "--no-measure") == 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_errors(); /* first: server 0 must not exist yet */
    test_nesting();
    /* Parking and yielding policies only: a spinning client that the
     * scheduler puts on its server's CPU spins away a whole time slice per
     * operation (the stress suite covers spin and backoff, time-bounded). */
    const char *specs4[] = {"rcl", "rcl,post=1", "rcl:park,post=1", "rcl:yield,server=1",
                            "rcl:spinpark,post=1,server=1"};
    for (size_t i = 0; i < sizeof specs4 / sizeof specs4[0]; i++)
        test_order(specs4[i], 4, 2000);
    test_order("rcl", 16, 500);
    test_order("rcl,post=1", 16, 500);
    test_futures("rcl");
    test_futures("rcl:park,post=1");
    test_free_runs_posted();
    test_idle_parks();
    test_fork();
    test_mixed_policies();
    if (do_measure)
        measure();
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("all rcl checks passed\n");
    return 0;
}
