/* runner.c - the fork-isolated runner: a cell in a child process, its runs and
 * their median, and the CPU hogs beside it (bench.h).  The locks under test
 * are locks.c's, local work work.c's, the shared options options.c's, the
 * sampled acquisition waits waits.c's. */
#include "bench.h"
#include "machine.h"
#include "report.h"
#include "topo.h"
#include "../src/wait/wait_internal.h" /* baton_rdtsc, baton_tsc_per_ns, baton_now_ns */
#include "../src/base/join.h"

#include <baton/wait.h>

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double bench_now(void) { return (double)baton_now_ns() * 1e-9; }

static int cmp_rate(const void *a, const void *b)
{
    const bench_result_t *x = a, *y = b;
    double rx = x->seconds > 0 ? (double)x->ops / x->seconds : 0;
    double ry = y->seconds > 0 ? (double)y->ops / y->seconds : 0;
    return (rx > ry) - (rx < ry);
}

int bench_median(bench_result_t *runs, int n)
{
    qsort(runs, (size_t)n, sizeof runs[0], cmp_rate);
    /* A failed run sorts by its (often zero) rate; report a failure if any
     * run failed, since a median could hide it. */
    for (int i = 0; i < n; i++)
        if (runs[i].status != BENCH_OK)
            return i;
    return n / 2;
}

/* --- the child ---------------------------------------------------------------- */

struct child {
    const bench_workload_t *wl;
    void *state;
    const bench_cfg_t *cfg;
    _Atomic int go;
    _Atomic int ready;
    _Atomic int stop;
    uint64_t *ops;
    double *finished;
    bench_wait_hist_t *waits; /* one per thread */
};

struct thread_arg {
    struct child *c;
    int index;
};

static void *child_thread(void *p)
{
    struct thread_arg *a = p;
    struct child *c = a->c;
    if (c->cfg->pin_order && c->cfg->npin > 0) {
        int cpu = c->cfg->pin_order[a->index % c->cfg->npin];
        if (cpu >= 0)
            (void)topo_pin_self(cpu);
    }
    /* Release pairs with the acquire loop in the parent thread. */
    atomic_fetch_add_explicit(&c->ready, 1, memory_order_release);
    /* Acquire pairs with the release store of `go`: the state is set up. */
    while (!atomic_load_explicit(&c->go, memory_order_acquire))
        baton_cpu_relax();
    bench_wait_log = &c->waits[a->index];
    c->ops[a->index] = c->wl->thread_main(c->state, a->index, &c->stop);
    c->finished[a->index] = bench_now();
    bench_wait_log = NULL; /* the join publishes the histogram */
    return NULL;
}

/* The process's CPU time, and its context switches in *vcsw and *ivcsw
 * (RUSAGE_SELF counts threads that have exited too). */
static double cpu_seconds(uint64_t *vcsw, uint64_t *ivcsw)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *vcsw = (uint64_t)ru.ru_nvcsw;
    *ivcsw = (uint64_t)ru.ru_nivcsw;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

static void locks_close(bench_lock_t *locks, int n)
{
    for (int i = 0; i < n; i++)
        bench_lock_close(&locks[i]);
    free(locks);
}

/* The workload's locks, all opened with `spec`: one, or what wl->locks
 * asks for.  NULL with a message in err. */
static bench_lock_t *locks_open(const bench_workload_t *wl, const void *params, const char *spec, int *n,
                                char *err, size_t errlen)
{
    *n = wl->locks ? wl->locks(params) : 1;
    bench_lock_t *locks = *n > 0 ? calloc((size_t)*n, sizeof *locks) : NULL;
    if (!locks) {
        snprintf(err, errlen, "cannot allocate %d locks", *n);
        return NULL;
    }
    for (int i = 0; i < *n; i++)
        if (bench_lock_open(spec, &locks[i], err, errlen) != 0) {
            locks_close(locks, i);
            return NULL;
        }
    return locks;
}

static void child_run(const bench_workload_t *wl, const void *params, const char *spec,
                      const bench_cfg_t *cfg, bench_result_t *r)
{
    char err[512];
    int nlocks;
    bench_lock_t *locks = locks_open(wl, params, spec, &nlocks, err, sizeof err);
    if (!locks) {
        r->status = BENCH_ERROR;
        snprintf(r->message, sizeof r->message, "%.255s", err);
        return;
    }
    bench_lock_t *lock = &locks[0];
    struct child c;
    memset(&c, 0, sizeof c);
    c.wl = wl;
    /* A server kind's server 0 runs on the last CPU of our affinity mask
     * (rcl's default): keep the clients off it, so that the measurement is
     * of a dedicated server core, as the kind is meant to be used.  With a
     * single CPU there is nothing to keep. */
    bench_cfg_t server_cfg;
    int *server_order = NULL;
    if (lock->baton && (baton_lock_kind(lock->baton)->caps & BATON_CAP_SERVER) && cfg->pin_order &&
        cfg->npin > 1) {
        cpu_set_t set;
        int last = -1;
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, &set))
                    last = cpu;
        server_order = calloc((size_t)cfg->npin, sizeof *server_order);
        int k = 0;
        for (int i = 0; server_order && i < cfg->npin; i++)
            if (cfg->pin_order[i] != last)
                server_order[k++] = cfg->pin_order[i];
        if (k > 0) {
            server_cfg = *cfg;
            server_cfg.pin_order = server_order;
            server_cfg.npin = k;
            cfg = &server_cfg;
        }
    }
    c.cfg = cfg;
    c.state = wl->setup(params, locks, cfg->threads, err, sizeof err);
    if (!c.state) {
        r->status = BENCH_ERROR;
        snprintf(r->message, sizeof r->message, "%.255s", err);
        locks_close(locks, nlocks);
        return;
    }
    int n = cfg->threads;
    c.ops = calloc((size_t)n, sizeof *c.ops);
    c.finished = calloc((size_t)n, sizeof *c.finished);
    c.waits = aligned_alloc(BENCH_LINE, (size_t)n * sizeof *c.waits);
    pthread_t *tid = calloc((size_t)n, sizeof *tid);
    struct thread_arg *args = calloc((size_t)n, sizeof *args);
    if (!c.ops || !c.finished || !c.waits || !tid || !args) {
        r->status = BENCH_ERROR;
        snprintf(r->message, sizeof r->message, "out of memory for %d threads", n);
        _exit(0); /* the parent reads what we wrote so far */
    }
    memset(c.waits, 0, (size_t)n * sizeof *c.waits);
    for (int i = 0; i < n; i++) {
        args[i] = (struct thread_arg){&c, i};
        if (pthread_create(&tid[i], NULL, child_thread, &args[i]) != 0) {
            r->status = BENCH_ERROR;
            snprintf(r->message, sizeof r->message, "pthread_create failed for thread %d", i);
            _exit(0); /* the parent reads what we wrote so far */
        }
    }
    /* Acquire pairs with each thread's release increment of `ready`. */
    while (atomic_load_explicit(&c.ready, memory_order_acquire) < n)
        sched_yield();
    double e0 = machine_energy_joules();
    uint64_t vcsw0, ivcsw0, vcsw1, ivcsw1;
    double cpu0 = cpu_seconds(&vcsw0, &ivcsw0);
    double t0 = bench_now();
    atomic_store_explicit(&c.go, 1, memory_order_release);
    struct timespec d = {(time_t)cfg->duration_s,
                         (long)((cfg->duration_s - (double)(time_t)cfg->duration_s) * 1e9)};
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
    /* Relaxed: the flag carries no data; joins order everything after. */
    atomic_store_explicit(&c.stop, 1, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    double t1 = 0;
    for (int i = 0; i < n; i++)
        if (c.finished[i] > t1)
            t1 = c.finished[i];
    r->cpu_s = cpu_seconds(&vcsw1, &ivcsw1) - cpu0;
    r->vcsw = vcsw1 - vcsw0;
    r->ivcsw = ivcsw1 - ivcsw0;
    double e1 = machine_energy_joules();
    r->energy_j = (e0 >= 0 && e1 >= e0) ? e1 - e0 : -1.0;
    r->seconds = t1 - t0;
    r->threads = n;
    r->min_thread_ops = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        r->ops += c.ops[i];
        if (c.ops[i] < r->min_thread_ops)
            r->min_thread_ops = c.ops[i];
        if (c.ops[i] > r->max_thread_ops)
            r->max_thread_ops = c.ops[i];
    }
    for (int i = 1; i < n; i++)
        bench_wait_merge(&c.waits[0], &c.waits[i]);
    bench_wait_figures(&c.waits[0], &r->wait_max_ns, &r->wait_p999_ns);
    if (wl->extras)
        wl->extras(c.state, lock, r);
    r->status = wl->verify(c.state, c.ops, n, r) == 0 ? BENCH_OK : BENCH_VERIFY_FAILED;
    wl->teardown(c.state);
    locks_close(locks, nlocks);
    free(server_order);
    free(c.ops);
    free(c.finished);
    free(c.waits);
    free(tid);
    free(args);
}

/* An empty result: nothing measured, every optional figure "not available". */
static void result_init(bench_result_t *r, int threads)
{
    memset(r, 0, sizeof *r);
    r->threads = threads;
    r->energy_j = -1;
    r->wait_max_ns = r->wait_p999_ns = -1;
    for (int i = 0; i < BENCH_EXTRAS; i++)
        r->extra[i] = -1;
}

/* --- hogs: CPU-bound processes beside the measurement --------------------------- */

/* In a child forked by `parent`: be killed when the parent dies, so that
 * nothing outlives the bench. */
static void die_with_parent(pid_t parent)
{
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the parent died before prctl: no signal comes */
        _exit(0);
}

/* A hog: a plain spin loop at normal priority, on any CPU.  It dies with
 * the process that forked it, which also kills it by PID after every run. */
static _Noreturn void hog_main(pid_t parent)
{
    die_with_parent(parent);
    volatile uint64_t spin = 0;
    for (;;)
        spin = spin + 1;
}

void bench_hogs_stop(const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        kill(pids[i], SIGKILL);
        while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
            ;
    }
}

int bench_hogs_start(int n, pid_t *pids)
{
    const pid_t self = getpid();
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0)
            hog_main(self);
        if (pid < 0) {
            int e = errno;
            bench_hogs_stop(pids, i);
            errno = e;
            return -1;
        }
        pids[i] = pid;
    }
    return n;
}

/* Read the child's result from fd until the deadline; returns the bytes read. */
static size_t read_result(int fd, bench_result_t *out, double deadline)
{
    size_t got = 0;
    char *buf = (char *)out;
    while (got < sizeof *out) {
        double left = deadline - bench_now();
        if (left <= 0)
            break;
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)(left * 1000) + 1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            break;
        ssize_t k = read(fd, buf + got, sizeof *out - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

/* The measured child: fork, run, and collect it (killed at the deadline). */
static void run_child(const bench_workload_t *wl, const void *params, const char *spec,
                      const bench_cfg_t *cfg, bench_result_t *out)
{
    int fd[2];
    if (pipe(fd) != 0) {
        out->status = BENCH_ERROR;
        snprintf(out->message, sizeof out->message, "pipe: %s", strerror(errno));
        return;
    }
    const pid_t self = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        out->status = BENCH_ERROR;
        snprintf(out->message, sizeof out->message, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return;
    }
    if (pid == 0) {
        die_with_parent(self);
        close(fd[0]);
        bench_result_t r;
        result_init(&r, cfg->threads);
        child_run(wl, params, spec, cfg, &r);
        ssize_t w = write(fd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    const double deadline = bench_now() + cfg->deadline_s;
    size_t got = read_result(fd[0], out, deadline);
    close(fd[0]);
    int wstatus = 0;
    if (got < sizeof *out) {
        kill(pid, SIGKILL);
        waitpid(pid, &wstatus, 0);
        bool timed_out = bench_now() >= deadline;
        result_init(out, cfg->threads);
        out->status = timed_out ? BENCH_TIMEOUT : BENCH_CRASHED;
        if (timed_out)
            snprintf(out->message, sizeof out->message, "no result within %.1f s: collapsed (killed)",
                     cfg->deadline_s);
        else
            snprintf(out->message, sizeof out->message, "child died (%s)",
                     WIFSIGNALED(wstatus) ? strsignal(WTERMSIG(wstatus)) : "exit");
        return;
    }
    waitpid(pid, &wstatus, 0);
}

void bench_run(const bench_workload_t *wl, const void *params, const char *spec, const bench_cfg_t *cfg,
               bench_result_t *out)
{
    result_init(out, cfg->threads);
    fflush(stdout);
    fflush(stderr);
    /* The hogs first: forked before the pipe, they hold none of its ends,
     * so a child that dies is seen at once. */
    pid_t hogs[BENCH_HOGS_MAX];
    const int nhogs = bench_hogs_start(cfg->hogs < BENCH_HOGS_MAX ? cfg->hogs : BENCH_HOGS_MAX, hogs);
    if (nhogs < 0) {
        out->status = BENCH_ERROR;
        snprintf(out->message, sizeof out->message, "fork (hog): %s", strerror(errno));
        return;
    }
    run_child(wl, params, spec, cfg, out);
    bench_hogs_stop(hogs, nhogs);
}
