/* bench.h - what every `baton bench` workload shares: the locks under test
 * (baton kinds through the dynamic API, peers through their table), the
 * fork-isolated runner, statistics, and the result record.
 *
 * Every measurement runs in a child process: a kind that collapses or hangs
 * is killed at a deadline and reported, never waited for; a crash is
 * reported, not fatal.  Threads are pinned by the chosen policy (topo.h) and
 * released together; the child measures wall time from release until every
 * thread has finished its last operation, CPU time with getrusage (all
 * threads), and RAPL energy where the machine exposes it.
 */
#ifndef BATON_BENCH_BENCH_H
#define BATON_BENCH_BENCH_H

#include <baton/atomic.h>
#include <baton/baton.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bench_cli.h"
#include "peers/peers.h"

#define BENCH_SPEC_MAX 96
#define BENCH_LINE 128 /* same as BATON_CACHELINE */

/* The default readers-writer lock, as `baton bench matrix` measures it
 * against the readers-writer peers ("default" names the default mutex). */
#define BENCH_DEFAULT_RW_SPEC "rw(default),prefer_readers"

/* --- the locks under test -------------------------------------------------- */

typedef struct bench_lock {
    char spec[BENCH_SPEC_MAX];
    void *obj;
    void (*lock)(void *obj);    /* peers only: baton kinds are called */
    void (*unlock)(void *obj);  /* through baton_lock()/baton_unlock() */
    void (*rlock)(void *obj);   /* RW peers only (NULL otherwise): */
    void (*runlock)(void *obj); /* their reader mode */
    /* Delegation peers only (NULL otherwise): the peer's own execute and
     * delegate (bench_peer_t). */
    void (*execute)(void *obj, baton_fn fn, void *ctx);
    void (*delegate)(void *obj, baton_fn fn, const void *args, size_t size);
    baton_lock_t *baton;      /* baton kinds */
    const bench_peer_t *peer; /* peers */
    /* What the workloads key on: the kind's BATON_CAP_* bits; a peer has
     * BATON_CAP_LOCK, plus BATON_CAP_RW when it has a reader mode, and a
     * delegation peer BATON_CAP_EXECUTE | BATON_CAP_DELEGATE, plus
     * BATON_CAP_DETACH when its delegate returns before fn has run.  A
     * peer has no futures: workloads that use them (baton_delegate_future)
     * check `baton` first. */
    unsigned caps;
    /* A delegation kind: its execute and delegate run operations for other
     * threads (detached, on a server, or combining), rather than being lock,
     * call, unlock.  Set for BATON_CAP_DETACH or BATON_CAP_SERVER, or when
     * the kind keeps statistics (baton_lock_stats()), since no capability
     * bit tells a combining kind from a mutex.  Set for delegation peers. */
    bool delegates;
} bench_lock_t;

/* --- acquisition waits, sampled ----------------------------------------------
 *
 * Every BENCH_WAIT_EVERY-th acquisition a thread makes through the hot
 * helpers below (bench_lock_acquire, bench_lock_read_acquire, bench_execute)
 * is timed with the TSC, into a histogram of that thread's: 1 in 8, so that
 * the other seven cost one thread-local counter increment and a branch.
 * The runner's threads point bench_wait_log at their histogram before the
 * workload's loop and merge the histograms after the join; a thread with no
 * histogram (the workload's verify, a delegation kind's server) is not
 * timed.  For bench_execute the sample covers the whole call: the wait and
 * the critical section (or, for a delegation kind, until it has run). */
#define BENCH_WAIT_EVERY 8 /* a power of two */
#define BENCH_WAIT_SUB 4   /* histogram buckets per power of two of cycles */
#define BENCH_WAIT_BUCKETS (BENCH_WAIT_SUB * 64)

typedef struct bench_wait_hist {
    _Alignas(BENCH_LINE) uint64_t samples;
    uint64_t max_cycles;
    uint64_t bucket[BENCH_WAIT_BUCKETS]; /* log-bucketed TSC cycles */
} bench_wait_hist_t;

/* The calling thread's sample counter and histogram (NULL: not timed).
 * Initial-exec: one instruction to reach them, no __tls_get_addr call. */
extern _Thread_local uint32_t bench_wait_tick __attribute__((tls_model("initial-exec")));
extern _Thread_local bench_wait_hist_t *bench_wait_log __attribute__((tls_model("initial-exec")));

/* Is this acquisition the one in BENCH_WAIT_EVERY to time? */
static inline bool bench_wait_due(void)
{
    return BATON_UNLIKELY((++bench_wait_tick & (BENCH_WAIT_EVERY - 1)) == 0);
}

enum { BENCH_WAIT_LOCK, BENCH_WAIT_RLOCK, BENCH_WAIT_EXECUTE };

/* The sampled path, out of line (waits.c): run the acquisition `how`
 * names (fn and ctx for BENCH_WAIT_EXECUTE) between two TSC reads and add
 * the cycles to bench_wait_log.  Returns what bench_execute returns, or 0. */
int bench_wait_sampled(int how, bench_lock_t *l, baton_fn fn, void *ctx);

/* Add `cycles` to h. */
void bench_wait_add(bench_wait_hist_t *h, uint64_t cycles);
/* Merge `from` into `into`. */
void bench_wait_merge(bench_wait_hist_t *into, const bench_wait_hist_t *from);
/* The largest sample and the 99.9th percentile (a bucket's upper bound, at
 * most the largest), in ns; both -1 without samples or without a TSC rate. */
void bench_wait_figures(const bench_wait_hist_t *h, double *max_ns, double *p999_ns);

/* The hot calls: baton kinds straight through the dynamic API (one call,
 * as a program would make it), peers through their table.  The _untimed
 * forms are the calls themselves; the others sample their waits. */
static inline void bench_lock_acquire_untimed(bench_lock_t *l)
{
    if (l->baton)
        (void)baton_lock(l->baton);
    else
        l->lock(l->obj);
}

static inline void bench_lock_acquire(bench_lock_t *l)
{
    if (bench_wait_due())
        (void)bench_wait_sampled(BENCH_WAIT_LOCK, l, NULL, NULL);
    else
        bench_lock_acquire_untimed(l);
}

static inline void bench_lock_release(bench_lock_t *l)
{
    if (l->baton)
        (void)baton_unlock(l->baton);
    else
        l->unlock(l->obj);
}

/* Reader mode: baton_rlock (which is lock for kinds without BATON_CAP_RW),
 * a peer's reader mode, or a mutex peer's lock. */
static inline void bench_lock_read_acquire_untimed(bench_lock_t *l)
{
    if (l->baton)
        (void)baton_rlock(l->baton);
    else if (l->rlock)
        l->rlock(l->obj);
    else
        l->lock(l->obj);
}

static inline void bench_lock_read_acquire(bench_lock_t *l)
{
    if (bench_wait_due())
        (void)bench_wait_sampled(BENCH_WAIT_RLOCK, l, NULL, NULL);
    else
        bench_lock_read_acquire_untimed(l);
}

static inline void bench_lock_read_release(bench_lock_t *l)
{
    if (l->baton)
        (void)baton_runlock(l->baton);
    else if (l->runlock)
        l->runlock(l->obj);
    else
        l->unlock(l->obj);
}

/* fn(ctx) under the lock: baton_execute for baton kinds (the kind's own
 * path: a delegation kind may run fn on another thread), a delegation
 * peer's own execute, lock, call, unlock for the other peers.  Returns 0 or
 * the API's error. */
static inline int bench_execute_untimed(bench_lock_t *l, baton_fn fn, void *ctx)
{
    if (l->baton)
        return baton_execute(l->baton, fn, ctx);
    if (l->execute) {
        l->execute(l->obj, fn, ctx);
        return 0;
    }
    l->lock(l->obj);
    fn(ctx);
    l->unlock(l->obj);
    return 0;
}

static inline int bench_execute(bench_lock_t *l, baton_fn fn, void *ctx)
{
    if (bench_wait_due())
        return bench_wait_sampled(BENCH_WAIT_EXECUTE, l, fn, ctx);
    return bench_execute_untimed(l, fn, ctx);
}

/* fn on a copy of args[0..size) (at most BATON_ARGS_MAX bytes):
 * baton_delegate for baton kinds, a delegation peer's own delegate (which
 * may return before fn has run: BATON_CAP_DETACH), else fn(args) through
 * bench_execute.  Not timed (a detached delegate has no wait to sample).
 * Returns 0 or the API's error. */
static inline int bench_delegate(bench_lock_t *l, baton_fn fn, const void *args, size_t size)
{
    if (l->baton)
        return baton_delegate(l->baton, fn, args, size);
    if (l->delegate) {
        l->delegate(l->obj, fn, args, size);
        return 0;
    }
    return bench_execute(l, fn, (void *)(uintptr_t)args);
}

/* Average operations per help session from baton_lock_stats(), or -1 when
 * the lock keeps no statistics (peers, mutex kinds) or had no session. */
double bench_lock_ops_per_session(const bench_lock_t *l);

/* Open a lock named by a baton spec or "peer:<name>"; on failure returns an
 * errno value and writes a message listing the valid names into err. */
int bench_lock_open(const char *spec, bench_lock_t *out, char *err, size_t errlen);
void bench_lock_close(bench_lock_t *l);

/* Expand a --locks argument into specs.  Items are separated by commas;
 * an item containing '=' continues the previous spec (so "relay,slice_us=20"
 * stays one spec).  Keywords: "all" (every kind with its default policy,
 * the spinpark variant of every kind whose default spins, every mutex
 * peer), "kinds", "peers" (the mutex-only peers), "rwpeers" (the
 * readers-writer peers), "allwaits" (every kind with every policy the CPU
 * has).  Keywords leave out wrapper kinds (BATON_CAP_WRAPPER): rw(<kind>)
 * must be named with its inner kind.
 * Returns the count, or -1 with a message. */
int bench_expand_locks(const char *arg, char specs[][BENCH_SPEC_MAX], int max, char *err, size_t errlen);

/* specs[0..n) plus s, unless already there (at most max): the new count. */
int bench_add_spec(char specs[][BENCH_SPEC_MAX], int n, int max, const char *s);

/* What a list of specs (--locks, --barriers) calls its items, and its
 * words: is_switch(pending, word) says whether `word` continues the spec
 * `pending` although it has no '=' (NULL: only items with '=' continue);
 * keyword(item, specs, n, max) appends a keyword's specs and returns the
 * new count, or -1 when `item` is not a keyword. */
typedef struct bench_spec_list {
    const char *noun; /* "lock": "lock spec too long", "no locks named" */
    bool (*is_switch)(const char *pending, const char *word);
    int (*keyword)(const char *item, char specs[][BENCH_SPEC_MAX], int n, int max);
} bench_spec_list_t;

/* The rules of --locks (bench_expand_locks()). */
extern const bench_spec_list_t bench_lock_list;

/* Split a comma-separated list as bench_expand_locks() describes, by how's
 * rules.  Returns the count, or -1 with a message. */
int bench_split_specs(const char *arg, const bench_spec_list_t *how, char specs[][BENCH_SPEC_MAX], int max,
                      char *err, size_t errlen);

/* --- the runner ------------------------------------------------------------ */

enum {
    BENCH_OK = 0,
    BENCH_VERIFY_FAILED, /* the workload's result check failed */
    BENCH_TIMEOUT,       /* killed at the deadline: collapsed beyond measure */
    BENCH_CRASHED,       /* the child died */
    BENCH_ERROR          /* could not set up */
};

#define BENCH_EXTRAS 12

typedef struct bench_result {
    int status;
    int threads;
    uint64_t ops;
    double seconds;
    uint64_t min_thread_ops, max_thread_ops;
    double cpu_s;
    /* Context switches of the whole process during the run (getrusage):
     * voluntary ones are sleeps (a park, a blocking call), involuntary ones
     * preemptions and yields that gave the CPU away. */
    uint64_t vcsw, ivcsw;
    double energy_j; /* < 0: not available */
    /* Acquisition waits, sampled 1 in BENCH_WAIT_EVERY (bench_wait_due()):
     * the largest and the 99.9th percentile, in ns; < 0: no samples (the
     * workload does not acquire through the hot helpers). */
    double wait_max_ns, wait_p999_ns;
    /* Workload-specific figures, filled by the workload's `extras` hook;
     * a negative value means "not available" (the report prints "-"). */
    double extra[BENCH_EXTRAS];
    char message[256];
} bench_result_t;

/* Where the workloads put the operations per help session of delegation
 * kinds (bench_lock_ops_per_session()). */
#define BENCH_EXTRA_OPS_PER_SESSION 0

typedef struct bench_workload {
    const char *name;
    /* Optional: how many locks the workload takes with these params (at
     * least 1); NULL: one.  The runner opens them all with the run's spec. */
    int (*locks)(const void *params);
    /* In the child: build the shared state for `threads` threads, on the
     * locks lock[0 .. locks(params)). */
    void *(*setup)(const void *params, bench_lock_t *lock, int threads, char *err, size_t errlen);
    /* One thread's loop: run operations until *stop, return how many. */
    uint64_t (*thread_main)(void *state, int index, const _Atomic int *stop);
    /* Optional: after all threads joined and before verify, fill
     * r->extra[] (the runner sets every entry to -1 first); `lock` is the
     * first of the workload's locks. */
    void (*extras)(void *state, bench_lock_t *lock, bench_result_t *r);
    /* After all threads joined: 0, or nonzero with a message. */
    int (*verify)(void *state, const uint64_t *thread_ops, int threads, bench_result_t *r);
    void (*teardown)(void *state);
} bench_workload_t;

typedef struct bench_cfg {
    int threads;
    double duration_s;
    int pin_policy;       /* TOPO_PIN_* */
    const int *pin_order; /* CPU per thread index (wrapping), or NULL */
    int npin;
    double deadline_s; /* kill the child after this long */
    /* CPU-bound processes (a spin loop each, unpinned, normal priority)
     * that run beside every run, from before the child starts until it is
     * collected; at most BENCH_HOGS_MAX (bench_cli.h). */
    int hogs;
} bench_cfg_t;

/* Run one measurement of `wl` on the lock named `spec` in a child process. */
void bench_run(const bench_workload_t *wl, const void *params, const char *spec, const bench_cfg_t *cfg,
               bench_result_t *out);

/* --- helpers ---------------------------------------------------------------- */

/* RWBench-style thread-local work (QD locking paper, section 6.2): one unit
 * picks two random slots of a 64-entry thread-local array and moves a
 * random amount from one to the other.  Returns the updated RNG state. */
typedef struct bench_local {
    uint32_t rng;
    int32_t a[64];
} bench_local_t;
void bench_local_init(bench_local_t *w, uint32_t seed);
void bench_local_work(bench_local_t *w, uint32_t units);
/* Nanoseconds per unit on this machine (measured once). */
double bench_local_unit_ns(void);

static inline uint32_t bench_rand(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* Parse "1,2,8" into ints (returns count, -1 on error). */
int bench_parse_ints(const char *s, int *out, int max);

/* --- command-line options the benches share ------------------------------ */

#define BENCH_LIST_MAX 32 /* entries of a list option (--threads 1,2,8) */

/* --locks, --threads, --duration, --repeat, --pin, --json, --inject-fault:
 * what bench_getopt() fills in.  A bench sets its defaults first. */
typedef struct bench_opts {
    const char *locks, *json, *pin;
    int threads[BENCH_LIST_MAX];
    int nthreads;
    double duration;
    int repeat;
    bool fault;
} bench_opts_t;

/* cli_opt_t entries for them; a bench lists those it takes, then its own,
 * then BENCH_OPT_END. */
/* Left as written: clang-format 14 spreads a braced initialiser in a
 * macro over four lines. */
/* clang-format off */
#define BENCH_OPT_LOCKS {"locks", CLI_VALUE, 0, 'l'}
#define BENCH_OPT_THREADS {"threads", CLI_VALUE, 0, 't'}
#define BENCH_OPT_DURATION {"duration", CLI_VALUE, 0, 'd'}
#define BENCH_OPT_REPEAT {"repeat", CLI_VALUE, 0, 'r'}
#define BENCH_OPT_PIN {"pin", CLI_VALUE, 0, 'p'}
#define BENCH_OPT_JSON {"json", CLI_VALUE, 0, 'j'}
#define BENCH_OPT_FAULT {"inject-fault", CLI_FLAG, 0, 'F'}
#define BENCH_OPT_END {0}
/* clang-format on */

/* A bench's own option (its table code, its value or NULL): the same as a
 * cli_opt_fn (0 taken, 1 a bad value, 2 refused after saying why). */
typedef cli_opt_fn bench_own_opt_fn;

/* Parse argv for the bench `name` with cli_getopt() (as "baton bench
 * <name>", no operands): the shared options into *o, every other one
 * through own (NULL: none).  Returns -1 to go on, or the exit status: 0
 * after --help, 2 after a bad option, value or operand. */
/* bench_parse_only (tests/fuzz/fuzz_bench.c): bench_getopt() also expands
 * --locks, and then returns 0 instead of -1, so that no bench runs. */
extern bool bench_parse_only;
int bench_getopt(const char *name, int argc, char **argv, const cli_opt_t *opts, bench_opts_t *o,
                 bench_own_opt_fn own, void *ctx, void (*usage)(FILE *));

/* Median of results by ops/s (sorts `runs`; returns the median's index). */
int bench_median(bench_result_t *runs, int n);

#endif
