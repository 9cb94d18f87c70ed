/* torture.c - `baton torture`: a locktorture-style test of every kind.
 *
 * The run is a sequence of episodes.  Each picks a kind (round-robin over a
 * shuffled list, so that a run of N seconds visits every kind when N allows;
 * wrappers get a random inner kind), a wait policy and a protocol variant,
 * a number of threads and of locks, and a barrier; the threads then do
 * random operations until the episode's time is up:
 *
 *   lock       lock, critical section, unlock
 *   trylock    trylock until it succeeds (EBUSY counted), section, unlock
 *   execute    baton_execute
 *   delegate   baton_delegate (detached on kinds with BATON_CAP_DETACH)
 *   future     baton_delegate_future, waited for later; its result checked
 *   rlock      a read section (readers-writer kinds; lock on the others)
 *   cond       a condition-variable wait (timed) or a signal, on a pthread
 *              condition variable paired with the baton lock through
 *              lock/unlock (the interposer's condvar is not a library call)
 *   nested     two locks, in index order, released in either order
 *   barrier    every thread, between phases: two waits of a baton barrier
 *              of a random kind, checked (everyone arrived; one serial)
 *
 * Every critical section runs bench/guard.h's checks (the stress harness's:
 * one holder, the torn pair, each thread's order on each lock), and at the
 * end of the episode each lock must hold exactly the sections its threads
 * issued, and each thread's last section on it must be its last issued: no
 * operation lost, none run twice, delegated ones included.
 *
 * Faults, each switchable (--faults):
 *   preempt   SIGUSR1 to random threads of the process (workers, threads
 *             that come and go, the kinds' server threads), whose handler
 *             sleeps 0.1-5 ms: a preemption, lock holders included.  It is
 *             blocked nowhere: no library path relies on not being paused
 *             (every wait re-checks after an interrupted futex wait, and a
 *             paused thread is what the locks are built to survive);
 *   hogs      CPU-bound child processes (bench's hogs: PR_SET_PDEATHSIG,
 *             killed by PID at the end);
 *   affinity  random threads moved to random CPU subsets;
 *   exit      threads that delegate (detached and with futures) and exit at
 *             once: their operations must still run, exactly once (checked
 *             by the counts; the futures are waited for by the episode);
 *   fork      a thread forks; the child locks a fresh lock of the same spec
 *             and exits (a child that fails or hangs, 5 s, is a violation).
 *
 * A watchdog ends the run (exit 1) when no operation completes for 10 s,
 * naming the kind, what each thread was doing and the seed.  The seed is
 * printed always; --seed S repeats a run's choices (not its timing).
 * --busted runs the stress harness's broken lock instead of the kinds, and
 * must be caught.  Exit status: 0 clean, 1 a violation or a hang, 2 usage.
 */
#include "bench_cli.h"
#include "commands.h"
#include "../api/registry.h"
#include "../base/join.h"

#include <baton/barrier.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- limits and knobs -------------------------------------------------------------- */

#define MAX_THREADS 16 /* steady workers of an episode */
#define MAX_LOCKS 4
#define EPH_MAX 48 /* threads that delegate and exit, per episode */
#define EPH_OPS 12 /* operations each issues at most */
#define POOL_FUTURES (EPH_MAX * EPH_OPS)
#define PENDING_FUTURES 4 /* a worker's futures in flight */
#define WATCHDOG_S 10.0
#define FORK_CHILD_S 5            /* a forked child's own alarm */
#define MAGIC 0x746f7274757265ull /* "torture" */

enum { F_PREEMPT = 1, F_HOGS = 2, F_AFFINITY = 4, F_EXIT = 8, F_FORK = 16, F_ALL = 31 };
static const char *const fault_names[] = {"preempt", "hogs", "affinity", "exit", "fork"};

enum op {
    OP_LOCK,
    OP_TRYLOCK,
    OP_EXECUTE,
    OP_DELEGATE,
    OP_FUTURE,
    OP_RLOCK,
    OP_COND_WAIT,
    OP_COND_SIGNAL,
    OP_NESTED,
    OP_BARRIER,
    OP_EXITING,
    OP_FORK,
    OP_COUNT
};
static const char *const op_names[OP_COUNT] = {"lock",   "trylock", "execute",          "delegate",
                                               "future", "rlock",   "cond-wait",        "cond-signal",
                                               "nested", "barrier", "exiting-delegate", "fork"};

/* --- random numbers ------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t below(uint64_t *x, uint32_t n) { return n ? (uint32_t)(splitmix(x) % n) : 0; }

/* --- the locks under torture ------------------------------------------------------------ */

typedef struct tlock {
    baton_lock_t *b; /* NULL: the broken lock (--busted) */
    guard_broken_t busted;
    guard_t g;
    /* The condition variable paired with this lock; `tokens` is guarded by
     * the lock (atomic only so that a broken lock tears it without a data
     * race). */
    pthread_mutex_t aux;
    pthread_cond_t cv;
    _Atomic long tokens;
    _Atomic uint64_t produced, consumed;
} tlock_t;

static int t_lock(tlock_t *l)
{
    if (l->b)
        return baton_lock(l->b);
    guard_broken_lock(&l->busted);
    return 0;
}

static int t_trylock(tlock_t *l) { return l->b ? baton_trylock(l->b) : guard_broken_trylock(&l->busted); }

static int t_unlock(tlock_t *l)
{
    if (l->b)
        return baton_unlock(l->b);
    guard_broken_unlock(&l->busted);
    return 0;
}

static int t_execute(tlock_t *l, baton_fn fn, void *ctx)
{
    if (l->b)
        return baton_execute(l->b, fn, ctx);
    guard_broken_lock(&l->busted);
    fn(ctx);
    guard_broken_unlock(&l->busted);
    return 0;
}

/* --- an episode ------------------------------------------------------------------------ */

typedef struct tally_ops {
    _Atomic uint64_t n[OP_COUNT];   /* operations done */
    _Atomic uint64_t bad[OP_COUNT]; /* violations seen by each */
} tally_ops_t;

typedef struct fut_slot {
    baton_future_t f;
    _Atomic uint64_t result; /* the operation writes seq ^ MAGIC */
    uint64_t expect;
    _Atomic int used; /* published by its issuer (release) */
} fut_slot_t;

typedef struct episode episode_t;

/* What a delegated or executed operation carries (copied by delegate). */
typedef struct payload {
    uint64_t magic;
    uint64_t seq;
    uint64_t check; /* seq ^ MAGIC */
    episode_t *e;
    tlock_t *l;
    _Atomic uint64_t *result; /* futures: where the result goes */
    int32_t thread;
    int32_t op;
} payload_t;

_Static_assert(sizeof(payload_t) <= BATON_ARGS_MAX, "a payload fits a delegation");

struct episode {
    int number;
    char spec[160];
    const char *kind; /* its registry name, or "busted" */
    unsigned caps;
    bool busted;
    int nthreads, nlocks, slots; /* slots: workers, then the exiting threads */
    tlock_t locks[MAX_LOCKS];
    baton_barrier_t *barrier;
    char barrier_spec[96];
    unsigned faults;
    uint64_t seed;
    double ends; /* bench_now() when the workers stop */
    /* issued[slot * MAX_LOCKS + lock]: operations each thread issued on each
     * lock; written by that thread only, read after it was joined. */
    uint64_t issued[(MAX_THREADS + EPH_MAX) * MAX_LOCKS];
    /* The workers' phases. */
    _Atomic int stop;
    int decided; /* written by worker 0 between the two barrier waits */
    _Atomic uint64_t arrived, serial;
    uint64_t phases; /* worker 0's, read after the joins */
    /* Threads that delegate and exit. */
    pthread_t eph[EPH_MAX];
    _Atomic int neph;
    fut_slot_t pool[POOL_FUTURES];
    _Atomic uint32_t npool;
    _Atomic int faults_stop;
    /* Results. */
    tally_ops_t ops;
    guard_tally_t tally;
    _Atomic uint64_t bad_payload, bad_errors, bad_futures, bad_barrier, bad_cond, bad_fork, busy;
    /* What each worker does now (op + 1, lock << 8), for the watchdog. */
    _Atomic uint32_t doing[MAX_THREADS];
};

static _Atomic uint64_t progress;    /* operations completed, for the watchdog */
static _Atomic(episode_t *) current; /* the running episode, for the watchdog */
static uint64_t run_seed;
static pid_t hog_pids[BENCH_HOGS_MAX];
static int nhogs;

static void bump(_Atomic uint64_t *c)
{
    baton_fetch_add(c, 1, memory_order_relaxed); /* a count, read after the joins */
}

static void done_op(episode_t *e, int op)
{
    bump(&e->ops.n[op]);
    bump(&progress); /* relaxed: the watchdog only looks for change */
}

static void violation(episode_t *e, int op, _Atomic uint64_t *what)
{
    bump(what);
    bump(&e->ops.bad[op]);
}

static void expect_ok(episode_t *e, int op, int rc)
{
    if (rc != 0)
        violation(e, op, &e->bad_errors);
}

/* A section under lock l, by thread t, numbered seq; violations are laid
 * at op's door. */
static void section(episode_t *e, tlock_t *l, int t, uint64_t seq, int op)
{
    uint64_t before = guard_violations(&e->tally);
    guard_section(&l->g, t, seq);
    /* Relaxed: another thread's violation may land in between and be laid
     * at this op's door too; the counts themselves are exact. */
    if (guard_violations(&e->tally) != before)
        bump(&e->ops.bad[op]);
}

static void run_payload(void *arg)
{
    payload_t *p = arg;
    if (p->magic != MAGIC || p->check != (p->seq ^ MAGIC)) {
        violation(p->e, p->op, &p->e->bad_payload);
        return;
    }
    section(p->e, p->l, p->thread, p->seq, p->op);
    if (p->result)
        /* Relaxed: the future's completion (a release) publishes it. */
        baton_store(p->result, p->seq ^ MAGIC, memory_order_relaxed);
}

static payload_t make_payload(episode_t *e, tlock_t *l, int t, uint64_t *issued, int op)
{
    uint64_t seq = ++*issued;
    return (payload_t){
        .magic = MAGIC, .seq = seq, .check = seq ^ MAGIC, .e = e, .l = l, .thread = t, .op = op};
}

/* A future: delegate with one; the slot's result is checked when waited. */
static void issue_future(episode_t *e, tlock_t *l, int t, uint64_t *issued, fut_slot_t *slot)
{
    payload_t p = make_payload(e, l, t, issued, OP_FUTURE);
    p.result = &slot->result;
    slot->expect = p.seq ^ MAGIC;
    baton_store(&slot->result, (uint64_t)0, memory_order_relaxed); /* before the operation can run */
    expect_ok(e, OP_FUTURE, baton_delegate_future(l->b, run_payload, &p, sizeof p, &slot->f));
}

static void wait_future(episode_t *e, fut_slot_t *slot)
{
    int rc = baton_future_wait(&slot->f);
    /* Relaxed: the wait's acquire pairs with the completion's release. */
    if (rc != 0 || baton_load(&slot->result, memory_order_relaxed) != slot->expect)
        violation(e, OP_FUTURE, &e->bad_futures);
    else
        bump(&progress);
}

/* --- the workers -------------------------------------------------------------------- */

typedef struct worker {
    episode_t *e;
    int t;
    pthread_t tid;
    uint64_t rng;
    uint64_t issued[MAX_LOCKS];
    fut_slot_t fut[PENDING_FUTURES];
    int nfut;
} worker_t;

static void settle_futures(worker_t *w)
{
    for (int i = 0; i < w->nfut; i++)
        wait_future(w->e, &w->fut[i]);
    w->nfut = 0;
}

/* A nested execute: the outer lock's section, then the inner's. */
typedef struct nested {
    episode_t *e;
    tlock_t *outer, *inner;
    int t;
    uint64_t oseq, iseq;
} nested_t;

static void nested_inner(void *arg)
{
    nested_t *n = arg;
    section(n->e, n->inner, n->t, n->iseq, OP_NESTED);
}

static void nested_outer(void *arg)
{
    nested_t *n = arg;
    section(n->e, n->outer, n->t, n->oseq, OP_NESTED);
    expect_ok(n->e, OP_NESTED, t_execute(n->inner, nested_inner, n));
}

/* The condition variable: wait (timed, a few rounds) for a token under the
 * lock, or make one and signal.  The waiter holds `aux` before it lets the
 * lock go, and the signaller takes `aux` after it made the token: no
 * wake-up is lost between the two. */
static void cond_op(worker_t *w, tlock_t *l, bool wait)
{
    episode_t *e = w->e;
    int op = wait ? OP_COND_WAIT : OP_COND_SIGNAL;
    uint64_t seq = ++w->issued[l - e->locks];
    expect_ok(e, op, t_lock(l));
    /* Relaxed: guarded by the lock under test (see tlock_t). */
    if (wait) {
        for (int round = 0; round < 3 && baton_load(&l->tokens, memory_order_relaxed) == 0; round++) {
            pthread_mutex_lock(&l->aux);
            expect_ok(e, op, t_unlock(l));
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += 1000000L * (long)(1 + below(&w->rng, 3));
            if (dl.tv_nsec >= 1000000000L) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000L;
            }
            int rc = pthread_cond_timedwait(&l->cv, &l->aux, &dl);
            if (rc != 0 && rc != ETIMEDOUT)
                violation(e, op, &e->bad_errors);
            pthread_mutex_unlock(&l->aux);
            expect_ok(e, op, t_lock(l));
        }
        long tk = baton_load(&l->tokens, memory_order_relaxed);
        if (tk < 0)
            violation(e, op, &e->bad_cond);
        if (tk > 0) {
            baton_store(&l->tokens, tk - 1, memory_order_relaxed);
            bump(&l->consumed);
        }
    } else {
        baton_store(&l->tokens, baton_load(&l->tokens, memory_order_relaxed) + 1, memory_order_relaxed);
        bump(&l->produced);
    }
    section(e, l, w->t, seq, op);
    expect_ok(e, op, t_unlock(l));
    if (!wait) {
        pthread_mutex_lock(&l->aux);
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->aux);
    }
}

/* Which operations the episode's kind offers, with their weights. */
static int pick_op(worker_t *w)
{
    const episode_t *e = w->e;
    const bool has_lock = (e->caps & BATON_CAP_LOCK) != 0, baton = !e->busted;
    const int weight[OP_COUNT] = {
        [OP_LOCK] = has_lock ? 3 : 0,
        [OP_TRYLOCK] = has_lock && (e->caps & BATON_CAP_TRYLOCK) ? 2 : 0,
        [OP_EXECUTE] = 2,
        [OP_DELEGATE] = baton ? 2 : 0,
        [OP_FUTURE] = baton ? 2 : 0,
        [OP_RLOCK] = e->caps & BATON_CAP_RW ? 3
                     : has_lock             ? 1
                                            : 0,
        [OP_COND_WAIT] = has_lock ? 1 : 0,
        [OP_COND_SIGNAL] = has_lock ? 1 : 0,
        [OP_NESTED] = e->nlocks > 1 ? 1 : 0,
    };
    int sum = 0;
    for (int i = 0; i < OP_COUNT; i++)
        sum += weight[i];
    int r = (int)below(&w->rng, (uint32_t)sum);
    for (int i = 0; i < OP_COUNT; i++) {
        if (r < weight[i])
            return i;
        r -= weight[i];
    }
    return OP_EXECUTE;
}

static void one_op(worker_t *w)
{
    episode_t *e = w->e;
    const int op = pick_op(w);
    const int li = (int)below(&w->rng, (uint32_t)e->nlocks);
    tlock_t *l = &e->locks[li];
    /* Relaxed: a hint for the watchdog. */
    baton_store(&e->doing[w->t], (uint32_t)(op + 1) | (uint32_t)li << 8, memory_order_relaxed);
    switch (op) {
    case OP_LOCK: {
        uint64_t seq = ++w->issued[li];
        expect_ok(e, op, t_lock(l));
        section(e, l, w->t, seq, op);
        expect_ok(e, op, t_unlock(l));
        break;
    }
    case OP_TRYLOCK: {
        uint64_t seq = ++w->issued[li];
        int rc, tries = 0;
        while ((rc = t_trylock(l)) != 0) {
            if (rc != EBUSY) {
                violation(e, op, &e->bad_errors);
                rc = t_lock(l); /* take it anyway, for the count */
                break;
            }
            bump(&e->busy);
            if (++tries >= 1000) { /* a holder that is off its CPU for long */
                rc = t_lock(l);
                break;
            }
            sched_yield();
        }
        expect_ok(e, op, rc);
        section(e, l, w->t, seq, op);
        expect_ok(e, op, t_unlock(l));
        break;
    }
    case OP_EXECUTE: {
        payload_t p = make_payload(e, l, w->t, &w->issued[li], op);
        expect_ok(e, op, t_execute(l, run_payload, &p));
        break;
    }
    case OP_DELEGATE: {
        payload_t p = make_payload(e, l, w->t, &w->issued[li], op);
        expect_ok(e, op, baton_delegate(l->b, run_payload, &p, sizeof p));
        memset(&p, 0xa5, sizeof p); /* the operation must have its own copy */
        break;
    }
    case OP_FUTURE:
        if (w->nfut == PENDING_FUTURES)
            settle_futures(w);
        issue_future(e, l, w->t, &w->issued[li], &w->fut[w->nfut++]);
        break;
    case OP_RLOCK:
        expect_ok(e, op, l->b ? baton_rlock(l->b) : t_lock(l));
        {
            uint64_t before = guard_violations(&e->tally);
            guard_read(&l->g);
            if (guard_violations(&e->tally) != before) /* as in section() */
                bump(&e->ops.bad[op]);
        }
        expect_ok(e, op, l->b ? baton_runlock(l->b) : t_unlock(l));
        break;
    case OP_COND_WAIT:
    case OP_COND_SIGNAL: cond_op(w, l, op == OP_COND_WAIT); break;
    case OP_NESTED: {
        int lj = (int)below(&w->rng, (uint32_t)e->nlocks - 1u);
        if (lj >= li)
            lj++; /* another lock */
        tlock_t *outer = &e->locks[li < lj ? li : lj], *inner = &e->locks[li < lj ? lj : li];
        const int lo = (int)(outer - e->locks), hi = (int)(inner - e->locks);
        nested_t n = {e, outer, inner, w->t, ++w->issued[lo], ++w->issued[hi]};
        if (!(e->caps & BATON_CAP_LOCK)) {
            expect_ok(e, op, t_execute(outer, nested_outer, &n));
            break;
        }
        expect_ok(e, op, t_lock(outer));
        section(e, outer, w->t, n.oseq, op);
        expect_ok(e, op, t_lock(inner));
        section(e, inner, w->t, n.iseq, op);
        bool outer_first = below(&w->rng, 2) != 0;
        expect_ok(e, op, t_unlock(outer_first ? outer : inner));
        expect_ok(e, op, t_unlock(outer_first ? inner : outer));
        break;
    }
    default: break;
    }
    done_op(e, op);
}

/* Two waits of the barrier: everyone arrived at the first (and one thread
 * was the serial one at each); between them worker 0 decides whether this
 * was the last phase, which everyone reads after the second. */
static bool meet(worker_t *w, uint64_t phase)
{
    episode_t *e = w->e;
    baton_store(&e->doing[w->t], (uint32_t)(OP_BARRIER + 1), memory_order_relaxed); /* a hint */
    /* Relaxed: the barrier orders the increments before the check. */
    baton_fetch_add(&e->arrived, 1, memory_order_relaxed);
    int rc = baton_barrier_wait(e->barrier);
    if (rc == BATON_BARRIER_SERIAL_THREAD)
        bump(&e->serial);
    else if (rc != 0)
        violation(e, OP_BARRIER, &e->bad_barrier);
    if (baton_load(&e->arrived, memory_order_relaxed) != (uint64_t)e->nthreads * (phase + 1))
        violation(e, OP_BARRIER, &e->bad_barrier); /* a thread passed before everyone arrived */
    if (w->t == 0) {
        /* Relaxed: a flag main raises; the barrier publishes `decided`. */
        e->decided = baton_load(&e->stop, memory_order_relaxed);
        e->phases = phase + 1;
    }
    rc = baton_barrier_wait(e->barrier);
    if (rc == BATON_BARRIER_SERIAL_THREAD)
        bump(&e->serial);
    else if (rc != 0)
        violation(e, OP_BARRIER, &e->bad_barrier);
    done_op(e, OP_BARRIER);
    return e->decided;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    for (uint64_t phase = 0;; phase++) {
        uint32_t n = 10 + below(&w->rng, 90);
        for (uint32_t i = 0; i < n; i++)
            one_op(w);
        settle_futures(w);
        if (meet(w, phase))
            break;
    }
    memcpy(&w->e->issued[w->t * MAX_LOCKS], w->issued, sizeof w->issued);
    return NULL;
}

/* --- faults ------------------------------------------------------------------------- */

static _Thread_local uint64_t sig_rng __attribute__((tls_model("initial-exec")));

/* A preemption: sleep 0.1-5 ms wherever the thread was. */
static void on_usr1(int sig)
{
    (void)sig;
    int saved = errno;
    if (sig_rng == 0)
        sig_rng = (uint64_t)(uintptr_t)&saved;
    uint64_t us = 100 + splitmix(&sig_rng) % 4900;
    struct timespec d = {0, (long)us * 1000};
    nanosleep(&d, NULL);
    errno = saved;
}

static void sleep_us(uint64_t us)
{
    struct timespec d = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&d, &d) != 0 && errno == EINTR) {
    }
}

/* The process's threads (from /proc/self/task), refreshed now and then. */
typedef struct tasks {
    pid_t tid[256];
    int n;
    double at;
} tasks_t;

static void tasks_refresh(tasks_t *t)
{
    double now = bench_now();
    if (t->n > 0 && now - t->at < 0.02)
        return;
    t->n = 0;
    t->at = now;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d)) != NULL && t->n < 256;)
        if (de->d_name[0] != '.')
            t->tid[t->n++] = (pid_t)atoi(de->d_name);
    closedir(d);
}

typedef struct fault_thread {
    episode_t *e;
    uint64_t rng;
    pthread_t tid;
} fault_thread_t;

static bool faults_go_on(episode_t *e)
{
    /* Relaxed: a flag; the join orders the rest. */
    return !baton_load(&e->faults_stop, memory_order_relaxed);
}

static void *preemptor(void *arg)
{
    fault_thread_t *f = arg;
    tasks_t tasks = {0};
    const pid_t self = (pid_t)gettid();
    while (faults_go_on(f->e)) {
        tasks_refresh(&tasks);
        if (tasks.n > 0) {
            pid_t tid = tasks.tid[below(&f->rng, (uint32_t)tasks.n)];
            if (tid != self)
                (void)tgkill(getpid(), tid, SIGUSR1); /* ESRCH: it has just exited */
        }
        sleep_us(200 + below(&f->rng, 1800));
    }
    return NULL;
}

static cpu_set_t all_cpus;
static int ncpus;

static void *shuffler(void *arg)
{
    fault_thread_t *f = arg;
    tasks_t tasks = {0};
    while (faults_go_on(f->e)) {
        tasks_refresh(&tasks);
        if (tasks.n > 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            int first = -1;
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &all_cpus)) {
                    if (first < 0)
                        first = c;
                    if (below(&f->rng, 2))
                        CPU_SET(c, &set);
                }
            if (CPU_COUNT(&set) == 0 && first >= 0)
                CPU_SET(first, &set);
            pid_t tid = tasks.tid[below(&f->rng, (uint32_t)tasks.n)];
            (void)sched_setaffinity(tid, sizeof set, &set); /* ESRCH: it has just exited */
        }
        sleep_us(2000 + below(&f->rng, 8000));
    }
    return NULL;
}

/* A thread that delegates and exits at once. */
typedef struct eph_arg {
    episode_t *e;
    int slot;
    uint64_t rng;
} eph_arg_t;

static void *exiting_main(void *arg)
{
    eph_arg_t a = *(eph_arg_t *)arg;
    free(arg);
    episode_t *e = a.e;
    uint64_t issued[MAX_LOCKS] = {0};
    uint32_t n = 1 + below(&a.rng, EPH_OPS);
    for (uint32_t i = 0; i < n; i++) {
        int li = (int)below(&a.rng, (uint32_t)e->nlocks);
        tlock_t *l = &e->locks[li];
        uint32_t k = baton_fetch_add(&e->npool, 1u, memory_order_relaxed); /* a slot of the pool */
        if (below(&a.rng, 2) && k < POOL_FUTURES) {
            fut_slot_t *slot = &e->pool[k];
            issue_future(e, l, a.slot, &issued[li], slot);
            baton_store(&slot->used, 1, memory_order_release); /* pairs with the acquire at the end */
        } else {
            payload_t p = make_payload(e, l, a.slot, &issued[li], OP_EXITING);
            expect_ok(e, OP_EXITING, baton_delegate(l->b, run_payload, &p, sizeof p));
        }
        done_op(e, OP_EXITING);
    }
    memcpy(&e->issued[a.slot * MAX_LOCKS], issued, sizeof issued);
    return NULL; /* with operations outstanding, on detaching kinds */
}

static void *spawner(void *arg)
{
    fault_thread_t *f = arg;
    episode_t *e = f->e;
    while (faults_go_on(e)) {
        int k = baton_load(&e->neph, memory_order_relaxed); /* only this thread writes it */
        if (k == EPH_MAX)
            break;
        eph_arg_t *a = malloc(sizeof *a);
        if (a) {
            *a = (eph_arg_t){e, e->nthreads + k, splitmix(&f->rng)};
            if (pthread_create(&e->eph[k], NULL, exiting_main, a) == 0)
                baton_store(&e->neph, k + 1, memory_order_relaxed); /* read by main after our join */
            else
                free(a);
        }
        sleep_us(5000 + below(&f->rng, 25000));
    }
    return NULL;
}

static void child_op(void *ctx) { ++*(int *)ctx; }

/* In a forked child: a fresh lock of the same spec must work. */
static _Noreturn void fork_child(const episode_t *e)
{
    alarm(FORK_CHILD_S);
    if (e->busted) {
        guard_broken_t b = {0};
        guard_broken_lock(&b);
        guard_broken_unlock(&b);
        _exit(0);
    }
    baton_lock_t *l = baton_lock_new(e->spec);
    if (!l)
        _exit(3);
    int rc = 0, ran = 0;
    if (e->caps & BATON_CAP_LOCK) {
        rc |= baton_lock(l) | baton_unlock(l);
        if (e->caps & BATON_CAP_TRYLOCK)
            rc |= baton_trylock(l) | baton_unlock(l);
    }
    rc |= baton_execute(l, child_op, &ran);
    rc |= baton_lock_free(l);
    _exit(rc != 0 || ran != 1 ? 4 : 0);
}

static void *forker(void *arg)
{
    fault_thread_t *f = arg;
    episode_t *e = f->e;
    /* One fork, at a random moment of the episode's first half. */
    double at = bench_now() + (e->ends - bench_now()) * (double)below(&f->rng, 500) / 1000.0;
    while (faults_go_on(e) && bench_now() < at)
        sleep_us(2000);
    if (!faults_go_on(e))
        return NULL;
    pid_t pid = fork();
    if (pid == 0)
        fork_child(e);
    if (pid < 0)
        return NULL; /* no process left: not the lock's fault */
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        violation(e, OP_FORK, &e->bad_fork);
    done_op(e, OP_FORK);
    return NULL;
}

/* --- choosing what to torture ------------------------------------------------------- */

/* Protocol switches a kind's policies do not reach, tried half the time. */
static const struct {
    const char *kind;
    const char *opts[4];
} variants[] = {
    {"server", {",chain", ",hier,groups=2", ",hier,chain,groups=2", ",keep_us=20"}},
    {"qd", {",tenure_us=50", ",queue=256,help_limit=3", ",retries=0"}},
    {"hqd", {",groups=2"}},
    {"mrqd", {",readers=1,read_patience=1"}},
    {"rcl", {",post=1", ",server=1,idle_us=1"}},
    {"relay", {",slice_us=20"}},
    {"runner", {",tenure_us=50"}},
};

static const char *variant_of(uint64_t *r, const char *kind)
{
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        if (strcmp(variants[i].kind, kind) != 0)
            continue;
        uint32_t n = 0;
        while (n < 4 && variants[i].opts[n])
            n++;
        uint32_t k = below(r, 2 * n); /* half the time none */
        return k < n ? variants[i].opts[k] : "";
    }
    return "";
}

/* A policy the kind takes ("" half the time: its default). */
static void policy_of(uint64_t *r, unsigned waits, char *out, size_t size)
{
    out[0] = '\0';
    if (waits == 0 || below(r, 2) == 0)
        return;
    unsigned n = 0, pick;
    for (unsigned w = 0; w < BATON_WAIT_KINDS; w++)
        n += (waits >> w) & 1u;
    pick = below(r, n);
    for (unsigned w = 0; w < BATON_WAIT_KINDS; w++)
        if ((waits >> w) & 1u && pick-- == 0) {
            snprintf(out, size, ":%s", baton_wait_policy_name(w));
            return;
        }
}

/* A random inner kind for the wrapper `outer`: any kind with lock/unlock
 * that is not a wrapper; elide also takes rw(...) at the first level. */
static const baton_kind_info_t *inner_of(uint64_t *r, const baton_kind_info_t *outer, int depth)
{
    const baton_kind_info_t *k;
    size_t n = baton_kinds(&k);
    const baton_kind_info_t *pool[64];
    uint32_t m = 0;
    for (size_t i = 0; i < n && m < 64; i++) {
        if (!(k[i].caps & BATON_CAP_LOCK) || &k[i] == outer)
            continue;
        if ((k[i].caps & BATON_CAP_WRAPPER) &&
            !(depth == 0 && strcmp(outer->name, "elide") == 0 && strcmp(k[i].name, "rw") == 0))
            continue;
        pool[m++] = &k[i];
    }
    return pool[below(r, m)];
}

static void spec_of(uint64_t *r, const baton_kind_info_t *k, int depth, char *out, size_t size)
{
    if (k->caps & BATON_CAP_WRAPPER) {
        char inner[120];
        spec_of(r, inner_of(r, k, depth), depth + 1, inner, sizeof inner);
        static const char *const elide_opts[] = {"", ",base", ",sleep", ",nretries=3"};
        const char *opts = strcmp(k->name, "rw") == 0      ? (below(r, 2) ? ",prefer_readers" : "")
                           : strcmp(k->name, "elide") == 0 ? elide_opts[below(r, 4)]
                                                           : "";
        snprintf(out, size, "%s(%s)%s", k->name, inner, opts);
        return;
    }
    char policy[32];
    policy_of(r, k->waits, policy, sizeof policy);
    snprintf(out, size, "%s%s%s", k->name, policy, variant_of(r, k->name));
}

/* Does a lock of this canonical spec only spin (or back off) somewhere?
 * Then more threads than CPUs make a FIFO kind hand the lock to preempted
 * waiters, one time slice at a time: slow, not wrong, and the watchdog
 * would take it for a hang.  Such episodes get at most a thread per CPU. */
static bool spins(const char *canon)
{
    for (const char *p = canon; (p = strchr(p, ':')) != NULL; p++)
        if ((strncmp(p, ":spin", 5) == 0 && strncmp(p, ":spinpark", 9) != 0) ||
            strncmp(p, ":backoff", 8) == 0)
            return true;
    return false;
}

/* A barrier of a random kind and policy for n threads. */
static baton_barrier_t *barrier_of(uint64_t *r, unsigned n, char *spec, size_t size)
{
    const baton_barrier_kind_info_t *k;
    size_t nk = baton_barrier_kinds(&k);
    for (int tries = 0; tries < 8; tries++) {
        const baton_barrier_kind_info_t *b = &k[below(r, (uint32_t)nk)];
        char policy[32];
        policy_of(r, b->waits, policy, sizeof policy);
        snprintf(spec, size, "%s%s", b->name, policy);
        baton_barrier_t *bar = baton_barrier_new(spec, n);
        if (bar)
            return bar; /* else ENOTSUP (monitor here): another */
    }
    snprintf(spec, size, "central");
    return baton_barrier_new(spec, n);
}

/* --- one episode ---------------------------------------------------------------------- */

static pthread_mutex_t current_mu = PTHREAD_MUTEX_INITIALIZER; /* guards `current` for the watchdog */
static _Atomic int main_doing;                                 /* what main does, for the watchdog */
static const char *const main_names[] = {"running the workers", "joining the threads", "waiting for futures",
                                         "freeing the locks", "freeing the barrier"};

/* Make e the episode the watchdog reports on, and free the one before. */
static void publish(episode_t *e)
{
    pthread_mutex_lock(&current_mu);
    episode_t *prev = baton_load(&current, memory_order_relaxed); /* under current_mu */
    baton_store(&current, e, memory_order_relaxed);
    pthread_mutex_unlock(&current_mu);
    free(prev);
}

/* Make the episode's locks; false (nothing left made) if the spec makes none. */
static bool make_locks(episode_t *e)
{
    for (int i = 0; i < e->nlocks; i++) {
        tlock_t *l = &e->locks[i];
        l->b = NULL;
        if (!e->busted && (l->b = baton_lock_new(e->spec)) == NULL) {
            while (i-- > 0)
                (void)baton_lock_free(e->locks[i].b);
            return false;
        }
        if (guard_init(&l->g, e->slots, !e->busted, &e->tally) != 0) {
            fprintf(stderr, "baton torture: out of memory\n");
            exit(1);
        }
        atomic_init(&l->busted.word, 0);
        atomic_init(&l->tokens, 0);
        atomic_init(&l->produced, 0);
        atomic_init(&l->consumed, 0);
        pthread_mutex_init(&l->aux, NULL);
        pthread_cond_init(&l->cv, NULL);
    }
    return true;
}

static void start_fault(episode_t *e, fault_thread_t *f, void *(*fn)(void *))
{
    f->e = e;
    f->rng = splitmix(&e->seed);
    if (pthread_create(&f->tid, NULL, fn, f) != 0)
        f->e = NULL; /* not started: nothing to join */
}

static void join_fault(fault_thread_t *f)
{
    if (f->e)
        pthread_join(f->tid, NULL);
}

/* After the run: every lock holds exactly what its threads issued, each
 * thread's last section is its last issued, the condition variable's
 * tokens add up.  Returns the operations lost or run twice. */
static uint64_t check_counts(episode_t *e)
{
    uint64_t lost = 0;
    for (int li = 0; li < e->nlocks; li++) {
        tlock_t *l = &e->locks[li];
        uint64_t issued = 0;
        for (int t = 0; t < e->slots; t++) {
            uint64_t n = e->issued[t * MAX_LOCKS + li];
            issued += n;
            if (guard_last(&l->g, t) != n)
                lost++;
        }
        int64_t ran = guard_sections(&l->g);
        if (ran < 0 || (uint64_t)ran != issued)
            lost++;
        /* Relaxed: after the joins. */
        long tokens = baton_load(&l->tokens, memory_order_relaxed);
        if (tokens < 0 || (uint64_t)tokens != baton_load(&l->produced, memory_order_relaxed) -
                                                  baton_load(&l->consumed, memory_order_relaxed))
            bump(&e->bad_cond);
    }
    return lost;
}

/* Run episode e (configured: spec, kind, caps, nthreads, nlocks, faults,
 * seed, ends).  Returns false when its spec makes no lock (skipped). */
static bool run_episode(episode_t *e, uint64_t *lost)
{
    e->slots = e->nthreads + EPH_MAX;
    if (!make_locks(e))
        return false;
    e->barrier = barrier_of(&e->seed, (unsigned)e->nthreads, e->barrier_spec, sizeof e->barrier_spec);
    if (!e->barrier) {
        fprintf(stderr, "baton torture: no barrier: %s\n", baton_last_error());
        exit(1);
    }
    publish(e); /* configured: the watchdog may read it */
    worker_t *w = calloc((size_t)e->nthreads, sizeof *w);
    if (!w) {
        fprintf(stderr, "baton torture: out of memory\n");
        exit(1);
    }
    baton_store(&main_doing, 0, memory_order_relaxed); /* a hint for the watchdog */
    for (int t = 0; t < e->nthreads; t++) {
        w[t] = (worker_t){.e = e, .t = t, .rng = splitmix(&e->seed)};
        if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) {
            fprintf(stderr, "baton torture: pthread_create failed\n");
            exit(1);
        }
    }
    fault_thread_t fp = {0}, fa = {0}, fx = {0}, ff = {0};
    if (e->faults & F_PREEMPT)
        start_fault(e, &fp, preemptor);
    if (e->faults & F_AFFINITY)
        start_fault(e, &fa, shuffler);
    if ((e->faults & F_EXIT) && !e->busted)
        start_fault(e, &fx, spawner);
    if (e->faults & F_FORK)
        start_fault(e, &ff, forker);
    for (double left; (left = e->ends - bench_now()) > 0;)
        sleep_us((uint64_t)(left * 1e6) + 1);
    /* Relaxed: worker 0 reads it between two barrier waits, which publish
     * its decision to the others. */
    baton_store(&e->stop, 1, memory_order_relaxed);
    baton_store(&main_doing, 1, memory_order_relaxed);
    for (int t = 0; t < e->nthreads; t++)
        pthread_join(w[t].tid, NULL);
    baton_store(&e->faults_stop, 1, memory_order_relaxed); /* see faults_go_on() */
    join_fault(&fp);
    join_fault(&fa);
    join_fault(&fx);
    join_fault(&ff);
    int neph = baton_load(&e->neph, memory_order_relaxed); /* the spawner was joined */
    for (int k = 0; k < neph; k++)
        pthread_join(e->eph[k], NULL);
    baton_store(&main_doing, 2, memory_order_relaxed);
    uint32_t npool = baton_load(&e->npool, memory_order_relaxed); /* its threads were joined */
    for (uint32_t k = 0; k < npool && k < POOL_FUTURES; k++)
        if (baton_load(&e->pool[k].used, memory_order_acquire)) /* pairs with the issuer's release */
            wait_future(e, &e->pool[k]);
    /* Freeing a lock runs every operation it accepted, from threads that
     * exited too: only then may the counts be checked. */
    baton_store(&main_doing, 3, memory_order_relaxed);
    for (int i = 0; i < e->nlocks; i++)
        if (e->locks[i].b && baton_lock_free(e->locks[i].b) != 0)
            violation(e, OP_EXITING, &e->bad_errors);
    *lost = check_counts(e);
    baton_store(&main_doing, 4, memory_order_relaxed);
    /* Relaxed: after the joins. */
    if (baton_load(&e->serial, memory_order_relaxed) != 2 * e->phases)
        violation(e, OP_BARRIER, &e->bad_barrier);
    if (baton_barrier_free(e->barrier) != 0)
        violation(e, OP_BARRIER, &e->bad_barrier);
    for (int i = 0; i < e->nlocks; i++) {
        guard_fini(&e->locks[i].g);
        pthread_mutex_destroy(&e->locks[i].aux);
        pthread_cond_destroy(&e->locks[i].cv);
    }
    free(w);
    (void)sched_setaffinity(0, sizeof all_cpus, &all_cpus); /* the shuffler may have moved us */
    return true;
}

/* --- the watchdog --------------------------------------------------------------------- */

static _Atomic int watchdog_stop;

static void *watchdog(void *arg)
{
    (void)arg;
    /* Relaxed: progress is a count; any change means someone finished an
     * operation. */
    uint64_t last = baton_load(&progress, memory_order_relaxed);
    double since = bench_now();
    while (!baton_load(&watchdog_stop, memory_order_relaxed)) {
        sleep_us(100000);
        uint64_t p = baton_load(&progress, memory_order_relaxed);
        double now = bench_now();
        if (p != last) {
            last = p;
            since = now;
            continue;
        }
        if (now - since < WATCHDOG_S)
            continue;
        pthread_mutex_lock(&current_mu);
        episode_t *e = baton_load(&current, memory_order_relaxed); /* under current_mu */
        char doing[1024] = "";
        for (int t = 0; e && t < e->nthreads; t++) {
            uint32_t d = baton_load(&e->doing[t], memory_order_relaxed); /* a hint */
            baton_join(doing, sizeof doing, ",", " t%d %s on lock %u", t,
                       d ? op_names[(d & 0xffu) - 1] : "nothing yet", d >> 8);
        }
        fprintf(stderr,
                "baton torture: FAIL: no operation finished for %.0f s: kind '%s' (episode %d, barrier %s); "
                "main: %s; threads:%s; seed %llu\n",
                WATCHDOG_S, e ? e->spec : "?", e ? e->number : -1, e ? e->barrier_spec : "?",
                main_names[baton_load(&main_doing, memory_order_relaxed)], doing,
                (unsigned long long)run_seed);
        fflush(stderr);
        bench_hogs_stop(hog_pids, nhogs);
        _exit(1);
    }
    return NULL;
}

/* --- the run ------------------------------------------------------------------------------ */

typedef struct kind_stat {
    const char *kind;
    uint64_t episodes, skipped, violations;
    uint64_t ops[OP_COUNT];
} kind_stat_t;

static unsigned parse_faults(const char *s)
{
    if (strcmp(s, "all") == 0)
        return F_ALL;
    if (strcmp(s, "none") == 0)
        return 0;
    unsigned f = 0;
    for (const char *p = s; *p;) {
        size_t len = strcspn(p, ",");
        unsigned bit = 0;
        for (unsigned i = 0; i < sizeof fault_names / sizeof fault_names[0]; i++)
            if (strlen(fault_names[i]) == len && strncmp(p, fault_names[i], len) == 0)
                bit = 1u << i;
        if (!bit)
            return ~0u;
        f |= bit;
        p += len + (p[len] == ',');
    }
    return f;
}

static bool in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == len && strncmp(p, name, len) == 0)
            return true;
        p += l + (p[l] == ',');
    }
    return false;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton torture [--seconds N] [--seed S] [--kinds LIST] [--threads N]\n"
            "                     [--faults LIST] [--busted] [--quiet]\n"
            "\n"
            "Torture every lock kind (locktorture-style): episodes of random kinds (wrappers\n"
            "over random inner kinds, random wait policies and protocol switches), threads\n"
            "doing random lock, trylock, execute, delegate, future, rlock, condition-variable\n"
            "and nested operations and meeting at barriers, under faults; every critical\n"
            "section and every count is checked.  Prints a summary per kind; exits 1 on any\n"
            "violation, or when no operation finishes for 10 s (naming the kind, what each\n"
            "thread was doing and the seed).\n"
            "\n"
            "  --seconds N     how long in all (default 20); the episodes share it among\n"
            "                  the kinds (0.25 to 2 s each), so that the run visits every\n"
            "                  kind when N allows\n"
            "  --seed S        the seed of every choice (default: from the clock); printed\n"
            "                  always; the same seed, --kinds and --threads repeat the\n"
            "                  choices, episode by episode (not the timing)\n"
            "  --kinds LIST    only these kinds (registry names, comma-separated)\n"
            "  --threads N     at most N workers per episode (2 to %d, default 8)\n"
            "  --faults LIST   preempt,hogs,affinity,exit,fork, all (default) or none:\n"
            "                    preempt   SIGUSR1 to random threads, which sleep 0.1-5 ms\n"
            "                    hogs      CPU-bound processes beside the run\n"
            "                    affinity  random threads moved to random CPU subsets\n"
            "                    exit      threads that delegate and exit at once\n"
            "                    fork      a fork per episode; the child locks a fresh lock\n"
            "  --busted        torture the stress harness's broken lock instead: must fail\n"
            "  --quiet         only the summary\n"
            "  -h, --help      show this help\n",
            MAX_THREADS);
}

/* What torture's options set (besides run_seed). */
struct torture_opts {
    double seconds;
    bool seeded;
    int max_threads;
    unsigned faults;
};

static int torture_option(int c, const char *v, void *ctx)
{
    struct torture_opts *to = ctx;
    char *end;
    switch (c) {
    case 's':
        to->seconds = strtod(v, &end);
        if (*end || !(to->seconds > 0)) {
            fprintf(stderr, "baton torture: --seconds needs a positive number, not '%s'\n", v);
            return 2;
        }
        return 0;
    case 'S':
        run_seed = strtoull(v, &end, 0);
        if (*end || !*v) {
            fprintf(stderr, "baton torture: --seed needs a number, not '%s'\n", v);
            return 2;
        }
        to->seeded = true;
        return 0;
    case 't':
        to->max_threads = atoi(v);
        if (to->max_threads < 2 || to->max_threads > MAX_THREADS) {
            fprintf(stderr, "baton torture: --threads takes 2 to %d, not '%s'\n", MAX_THREADS, v);
            return 2;
        }
        return 0;
    default: /* 'f' */
        to->faults = parse_faults(v);
        if (to->faults == ~0u) {
            fprintf(stderr,
                    "baton torture: --faults takes preempt,hogs,affinity,exit,fork, all or none, not '%s'\n",
                    v);
            return 2;
        }
        return 0;
    }
}

int cmd_torture(int argc, char **argv)
{
    struct torture_opts to = {.seconds = 20, .max_threads = 8, .faults = F_ALL};
    bool busted = false, quiet = false;
    const char *kinds = NULL;
    const cli_opt_t opts[] = {{"seconds", CLI_VALUE, 0, 's'},       {"seed", CLI_VALUE, 0, 'S'},
                              {"kinds", CLI_VALUE, 0, 'k', &kinds}, {"threads", CLI_VALUE, 0, 't'},
                              {"faults", CLI_VALUE, 0, 'f'},        {"busted", CLI_FLAG, &busted},
                              {"quiet", CLI_FLAG, &quiet},          {0}};
    const int prc =
        cli_getopt("baton torture", argc, argv, opts, CLI_NO_OPERANDS, torture_option, &to, usage, NULL);
    if (prc >= 0)
        return prc;
    const double seconds = to.seconds;
    const bool seeded = to.seeded;
    const int max_threads = to.max_threads;
    const unsigned faults = to.faults;

    /* The kinds, in registry order, then shuffled per cycle. */
    const baton_kind_info_t *reg;
    size_t nreg = baton_kinds(&reg);
    const baton_kind_info_t *list[64];
    size_t nlist = 0;
    if (kinds && !busted)
        for (const char *p = kinds; *p;) {
            size_t l = strcspn(p, ",");
            bool known = false;
            for (size_t k = 0; k < nreg; k++)
                known |= strlen(reg[k].name) == l && strncmp(p, reg[k].name, l) == 0;
            if (!known) {
                fprintf(stderr, "baton torture: unknown kind '%.*s' in --kinds\n", (int)l, p);
                return 2;
            }
            p += l + (p[l] == ',');
        }
    for (size_t k = 0; k < nreg && nlist < 64; k++)
        if (!kinds || in_list(kinds, reg[k].name))
            list[nlist++] = &reg[k];
    const size_t nkinds = busted ? 1 : nlist;

    if (!seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        run_seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
    }
    printf("baton torture: seed %llu, %.0f s, %zu kind%s, faults:", (unsigned long long)run_seed, seconds,
           nkinds, nkinds == 1 ? "" : "s");
    for (unsigned i = 0; i < sizeof fault_names / sizeof fault_names[0]; i++)
        if (faults & (1u << i))
            printf(" %s", fault_names[i]);
    printf("%s%s\n", faults ? "" : " none", busted ? " (the broken lock: this run must fail)" : "");
    fflush(stdout);

    ncpus = sched_getaffinity(0, sizeof all_cpus, &all_cpus) == 0 ? CPU_COUNT(&all_cpus) : 1;
    (void)baton_calibration(); /* now, not inside the first timed wait */
    if (faults & F_PREEMPT) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, NULL);
    }
    if (faults & F_HOGS) {
        nhogs = bench_hogs_start(ncpus > 1 ? ncpus / 2 : 1, hog_pids);
        if (nhogs < 0)
            nhogs = 0;
    }
    pthread_t wd;
    if (pthread_create(&wd, NULL, watchdog, NULL) != 0) {
        fprintf(stderr, "baton torture: pthread_create failed\n");
        return 1;
    }

    kind_stat_t stats[65];
    memset(stats, 0, sizeof stats);
    uint64_t rng = run_seed, failed = 0;
    const double start = bench_now(), end = start + seconds;
    size_t cursor = nlist;
    for (int number = 1; bench_now() < end; number++) {
        /* The next kind of a shuffled cycle. */
        if (cursor >= nlist) {
            for (size_t i = nlist; i > 1; i--) {
                size_t j = below(&rng, (uint32_t)i);
                const baton_kind_info_t *tmp = list[i - 1];
                list[i - 1] = list[j];
                list[j] = tmp;
            }
            cursor = 0;
        }
        const baton_kind_info_t *k = busted ? NULL : list[cursor++];
        kind_stat_t *ks = &stats[busted ? 64 : (size_t)(k - reg)];
        ks->kind = busted ? "busted" : k->name;

        episode_t *e = calloc(1, sizeof *e);
        if (!e) {
            fprintf(stderr, "baton torture: out of memory\n");
            return 1;
        }
        e->number = number;
        e->seed = splitmix(&rng);
        e->busted = busted;
        e->kind = ks->kind;
        e->faults = faults;
        e->nthreads = 2 + (int)below(&e->seed, (uint32_t)max_threads - 1u);
        e->nlocks = 1 + (int)below(&e->seed, MAX_LOCKS);
        if (busted) {
            snprintf(e->spec, sizeof e->spec, "busted");
            e->caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE;
        } else {
            /* A spec that makes a lock here (a policy the CPU lacks, say
             * monitor, makes none: another). */
            baton_lock_t *probe = NULL;
            for (int tries = 0; tries < 16 && !probe; tries++) {
                spec_of(&e->seed, k, 0, e->spec, sizeof e->spec);
                probe = baton_lock_new(e->spec);
            }
            if (!probe) {
                printf("[%6.1fs] %-44s skipped: %s\n", bench_now() - start, e->spec, baton_last_error());
                ks->skipped++;
                free(e);
                continue;
            }
            e->caps = baton_lock_kind(probe)->caps;
            if (spins(baton_lock_spec(probe)) && e->nthreads > ncpus)
                e->nthreads = ncpus > 2 ? ncpus : 2;
            (void)baton_lock_free(probe);
        }
        /* What is left, over the kinds left in this cycle (a fifth kept
         * for what an episode costs beyond its own time: threads, forks,
         * the operations still queued), 0.25 to 2 s, give or take a
         * quarter. */
        double per = (end - bench_now()) * 0.8 / (double)(busted ? 1 : nlist - cursor + 1);
        per = per < 0.25 ? 0.25 : per > 2.0 ? 2.0 : per;
        double len = per * (0.75 + 0.5 * (double)below(&e->seed, 1000) / 1000.0);
        e->ends = bench_now() + (len < end - bench_now() ? len : end - bench_now());

        uint64_t lost = 0;
        const double began = bench_now();
        if (!run_episode(e, &lost)) {
            printf("[%6.1fs] %-44s skipped: %s\n", bench_now() - start, e->spec, baton_last_error());
            ks->skipped++;
            free(e);
            continue;
        }
        ks->episodes++;
        uint64_t total = 0;
        for (int op = 0; op < OP_COUNT; op++) {
            uint64_t n = baton_load(&e->ops.n[op], memory_order_relaxed); /* after the joins */
            ks->ops[op] += n;
            total += n;
        }
        /* Relaxed: after the joins. */
        const uint64_t tv[] = {
            baton_load(&e->tally.overlaps, memory_order_relaxed),
            baton_load(&e->tally.torn, memory_order_relaxed),
            baton_load(&e->tally.out_of_order, memory_order_relaxed),
            baton_load(&e->tally.bad_reads, memory_order_relaxed),
            lost,
            baton_load(&e->bad_payload, memory_order_relaxed),
            baton_load(&e->bad_errors, memory_order_relaxed),
            baton_load(&e->bad_futures, memory_order_relaxed),
            baton_load(&e->bad_barrier, memory_order_relaxed),
            baton_load(&e->bad_cond, memory_order_relaxed),
            baton_load(&e->bad_fork, memory_order_relaxed),
        };
        static const char *const tn[] = {
            "overlaps",     "torn",       "out-of-order", "bad reads", "lost or doubled",
            "bad payloads", "bad errors", "bad futures",  "barrier",   "condition variable",
            "fork child"};
        uint64_t bad = 0;
        for (size_t i = 0; i < sizeof tv / sizeof tv[0]; i++)
            bad += tv[i];
        if (!quiet || bad)
            printf("[%6.1fs] %-44s T=%d L=%d barrier %-20s %9llu ops in %.2f s%s\n", bench_now() - start,
                   e->spec, e->nthreads, e->nlocks, e->barrier_spec, (unsigned long long)total,
                   bench_now() - began, bad ? "  FAIL" : "");
        if (bad) {
            ks->violations += bad;
            failed++;
            char what[512] = "", ops[256] = "";
            for (size_t i = 0; i < sizeof tv / sizeof tv[0]; i++)
                if (tv[i])
                    baton_join(what, sizeof what, ", ", "%llu %s", (unsigned long long)tv[i], tn[i]);
            for (int op = 0; op < OP_COUNT; op++)
                if (baton_load(&e->ops.bad[op], memory_order_relaxed)) /* after the joins */
                    baton_join(ops, sizeof ops, ",", "%s", op_names[op]);
            printf("baton torture: FAIL: kind '%s', episode %d (%d threads, %d lock%s, barrier %s): %s; "
                   "operation%s: %s; seed %llu\n",
                   e->spec, e->number, e->nthreads, e->nlocks, e->nlocks == 1 ? "" : "s", e->barrier_spec,
                   what, strchr(ops, ',') ? "s" : "", ops[0] ? ops : "(counts at the end)",
                   (unsigned long long)run_seed);
        }
        fflush(stdout);
    }

    baton_store(&watchdog_stop, 1, memory_order_relaxed); /* a flag; joined below */
    pthread_join(wd, NULL);
    bench_hogs_stop(hog_pids, nhogs);

    printf("\n%-10s %8s %8s %10s", "kind", "episodes", "skipped", "ops");
    for (int op = 0; op < OP_COUNT; op++)
        printf(" %s", op_names[op]);
    printf("  violations\n");
    for (size_t i = 0; i < 65; i++) {
        kind_stat_t *ks = &stats[i];
        if (!ks->kind)
            continue;
        uint64_t total = 0;
        for (int op = 0; op < OP_COUNT; op++)
            total += ks->ops[op];
        printf("%-10s %8llu %8llu %10llu", ks->kind, (unsigned long long)ks->episodes,
               (unsigned long long)ks->skipped, (unsigned long long)total);
        for (int op = 0; op < OP_COUNT; op++)
            printf(" %*llu", (int)strlen(op_names[op]), (unsigned long long)ks->ops[op]);
        printf("  %llu%s\n", (unsigned long long)ks->violations, ks->violations ? "  FAIL" : "");
    }
    publish(NULL); /* frees the last */
    printf("%s: %llu episode%s failed; seed %llu\n", failed ? "FAIL" : "PASS", (unsigned long long)failed,
           failed == 1 ? "" : "s", (unsigned long long)run_seed);
    return failed ? 1 : 0;
}
