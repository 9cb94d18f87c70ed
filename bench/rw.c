/* rw.c - `baton bench rw`: RWBench, the readers-writer benchmark of the QD
 * locking paper (section 6.2).
 *
 * A shared array of 64 integers.  Each thread loops
 *     L units of thread-local work (bench_local_work: the write loop below
 *       on a private array),
 *     with the chosen probability a read critical section (4 iterations,
 *       each loading two random slots), else a write critical section (4
 *       iterations, each picking two random slots and a random integer I,
 *       adding I to the first and subtracting it from the second).
 * How a critical section reaches the lock depends on what it offers
 * (capability bits, never kind names):
 *   - reads: baton_rlock/baton_runlock for RW kinds (BATON_CAP_RW) and the
 *     RW peers' reader mode; lock/unlock for the mutexes; baton_execute for
 *     kinds without lock;
 *   - writes: baton_delegate (detached) for BATON_CAP_DETACH kinds, else
 *     lock/unlock, else baton_execute.
 *
 * Verification.  The writes keep the array's sum at zero, and the array
 * must sum to zero at the end.  Each write also bumps `begun` on entry and
 * `ended` on exit, so inside a read critical section the two must be equal
 * and stay so: a reader that sees them differ overlapped a write (a torn
 * read), and every 64th read of a thread also sums the whole array, which
 * must be zero.  Torn reads are counted and fail the run, as does
 * begun != ended != the number of writes at the end.  --inject-fault makes
 * thread 0 write without the lock, and the run must fail.
 *
 * The array and the counters are relaxed atomics (load and store, never a
 * read-modify-write instruction: what plain code under a lock costs), so
 * even the fault run has no data race.  Values are unsigned, so sums wrap
 * instead of overflowing; zero is zero modulo 2^32.
 */
#include "bench.h"
#include "progress.h"
#include "report.h"
#include "topo.h"
#include "workloads.h"

#include <baton/atomic.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every shared field is read and written only through these.  Relaxed: the
 * lock under test orders the critical sections (its acquire and release);
 * the atomics only keep the --inject-fault run free of data races. */
#define GET(field) baton_load(&(field), memory_order_relaxed)
#define SET(field, v) baton_store(&(field), (v), memory_order_relaxed)

#define RW_SLOTS 64
#define RW_ITERS 4
#define RW_SUM_EVERY 64 /* a thread's every 64th read also sums the array */

struct rw_shared {
    _Alignas(BENCH_LINE) _Atomic uint64_t begun, ended; /* write critical sections */
    _Atomic uint32_t a[RW_SLOTS];
};

/* --- the critical sections ------------------------------------------------------- */

struct rw_write_args {
    struct rw_shared *sh;
    uint32_t seed; /* the slots and amounts: drawn by the caller, expanded here */
};

static void rw_write_op(void *p)
{
    const struct rw_write_args *w = p;
    struct rw_shared *sh = w->sh;
    SET(sh->begun, GET(sh->begun) + 1);
    uint32_t x = w->seed;
    for (int i = 0; i < RW_ITERS; i++) {
        uint32_t r = bench_rand(&x);
        uint32_t amount = r >> 16;
        uint32_t s1 = r & (RW_SLOTS - 1), s2 = (r >> 6) & (RW_SLOTS - 1);
        SET(sh->a[s1], GET(sh->a[s1]) + amount);
        SET(sh->a[s2], GET(sh->a[s2]) - amount);
    }
    SET(sh->ended, GET(sh->ended) + 1);
}

struct rw_read_args {
    struct rw_shared *sh;
    uint32_t *rng; /* the reader's */
    bool sum_all;  /* also sum the whole array */
    bool torn;     /* out: saw a write in progress */
    uint32_t sink; /* out: what was read */
};

static void rw_read_op(void *p)
{
    struct rw_read_args *a = p;
    struct rw_shared *sh = a->sh;
    uint64_t b0 = GET(sh->begun), e0 = GET(sh->ended);
    uint32_t x = *a->rng, sink = 0;
    for (int i = 0; i < RW_ITERS; i++) {
        uint32_t r = bench_rand(&x);
        sink += GET(sh->a[r & (RW_SLOTS - 1)]) + GET(sh->a[(r >> 6) & (RW_SLOTS - 1)]);
    }
    bool torn = false;
    if (a->sum_all) {
        uint32_t sum = 0;
        for (int i = 0; i < RW_SLOTS; i++)
            sum += GET(sh->a[i]);
        torn = sum != 0;
    }
    *a->rng = x;
    a->sink = sink;
    a->torn = torn || b0 != e0 || GET(sh->begun) != b0;
}

/* --- the workload ------------------------------------------------------------------ */

enum { PATH_DIRECT, PATH_LOCK, PATH_RLOCK, PATH_EXECUTE, PATH_DELEGATE };

static void rw_paths(unsigned caps, bool is_peer, int *rd, int *wr)
{
    bool lock = is_peer || (caps & BATON_CAP_LOCK);
    *rd = (caps & BATON_CAP_RW) ? PATH_RLOCK : lock ? PATH_LOCK : PATH_EXECUTE;
    *wr = (!is_peer && (caps & BATON_CAP_DETACH)) ? PATH_DELEGATE : lock ? PATH_LOCK : PATH_EXECUTE;
}

struct rw_thread {
    _Alignas(BENCH_LINE) uint64_t reads, writes, torn;
    uint32_t sink;
    int error; /* what the API returned, if it failed */
    bench_local_t local;
};

struct rw_state {
    const struct rw_params *p;
    bench_lock_t *lock;
    struct rw_shared *sh;
    struct rw_thread *t;
    int rd_path, wr_path;
    /* The final check's findings (read under the lock). */
    uint32_t end_sum;
    uint64_t end_begun, end_ended;
};

static void rw_teardown(void *state)
{
    struct rw_state *s = state;
    free(s->sh);
    free(s->t);
    free(s);
}

static void *rw_setup(const void *params, bench_lock_t *lock, int threads, char *err, size_t errlen)
{
    const struct rw_params *p = params;
    struct rw_state *s = calloc(1, sizeof *s);
    struct rw_shared *sh = aligned_alloc(BENCH_LINE, sizeof *sh);
    struct rw_thread *t = aligned_alloc(BENCH_LINE, (size_t)threads * sizeof *t);
    if (!s || !sh || !t) {
        snprintf(err, errlen, "out of memory");
        free(s);
        free(sh);
        free(t);
        return NULL;
    }
    memset(sh, 0, sizeof *sh);
    memset(t, 0, (size_t)threads * sizeof *t);
    s->p = p;
    s->lock = lock;
    s->sh = sh;
    s->t = t;
    rw_paths(lock->caps, lock->peer != NULL, &s->rd_path, &s->wr_path);
    return s;
}

static uint64_t rw_thread_main(void *state, int index, const _Atomic int *stop)
{
    struct rw_state *s = state;
    struct rw_thread *me = &s->t[index];
    const uint32_t L = (uint32_t)s->p->local_work;
    const uint32_t reads_pct = (uint32_t)s->p->reads_pct;
    bench_local_init(&me->local, 0x9e3779b9u * (uint32_t)(index + 1));
    uint32_t x = 0x85ebca6bu * (uint32_t)(index + 1) + 1;
    bench_lock_t *lock = s->lock;
    const int rd_path = s->rd_path;
    const int wr_path = s->p->inject_fault && index == 0 ? PATH_DIRECT : s->wr_path;
    struct rw_write_args wa = {s->sh, 0};
    struct rw_read_args ra = {s->sh, &x, false, false, 0};
    uint64_t ops = 0;
    do {
        if (L)
            bench_local_work(&me->local, L);
        int rc = 0;
        if (bench_rand(&x) % 100 < reads_pct) {
            ra.sum_all = me->reads % RW_SUM_EVERY == 0;
            switch (rd_path) {
            case PATH_RLOCK:
                bench_lock_read_acquire(lock);
                rw_read_op(&ra);
                bench_lock_read_release(lock);
                break;
            case PATH_LOCK:
                bench_lock_acquire(lock);
                rw_read_op(&ra);
                bench_lock_release(lock);
                break;
            default: rc = bench_execute(lock, rw_read_op, &ra); break;
            }
            me->reads++;
            me->torn += ra.torn;
            me->sink += ra.sink;
        } else {
            wa.seed = bench_rand(&x) | 1u; /* xorshift needs a nonzero state */
            switch (wr_path) {
            case PATH_DIRECT: rw_write_op(&wa); break;
            case PATH_LOCK:
                bench_lock_acquire(lock);
                rw_write_op(&wa);
                bench_lock_release(lock);
                break;
            case PATH_DELEGATE: rc = baton_delegate(lock->baton, rw_write_op, &wa, sizeof wa); break;
            default: rc = bench_execute(lock, rw_write_op, &wa); break;
            }
            me->writes++;
        }
        if (rc != 0) {
            me->error = rc;
            break;
        }
        ops++;
        /* Relaxed: the flag only ends the loop; the join orders the rest. */
    } while (!atomic_load_explicit(stop, memory_order_relaxed));
    return ops;
}

/* The final state, read under the lock (after every accepted write). */
static void rw_final_op(void *p)
{
    struct rw_state *s = p;
    uint32_t sum = 0;
    for (int i = 0; i < RW_SLOTS; i++)
        sum += GET(s->sh->a[i]);
    s->end_sum = sum;
    s->end_begun = GET(s->sh->begun);
    s->end_ended = GET(s->sh->ended);
}

static int rw_verify(void *state, const uint64_t *ops, int threads, bench_result_t *r)
{
    struct rw_state *s = state;
    uint64_t reads = 0, writes = 0, torn = 0;
    for (int i = 0; i < threads; i++) {
        const struct rw_thread *t = &s->t[i];
        if (t->error) {
            snprintf(r->message, sizeof r->message, "thread %d: a critical section failed: %s", i,
                     strerror(t->error));
            return 1;
        }
        if (t->reads + t->writes != ops[i]) {
            snprintf(r->message, sizeof r->message, "thread %d counted its operations wrong", i);
            return 1;
        }
        reads += t->reads;
        writes += t->writes;
        torn += t->torn;
    }
    int rc = bench_execute(s->lock, rw_final_op, s);
    if (rc != 0) {
        snprintf(r->message, sizeof r->message, "the final check could not run: %s", strerror(rc));
        return 1;
    }
    if (torn) {
        snprintf(r->message, sizeof r->message,
                 "%llu of %llu reads overlapped a write (torn): exclusion broken", (unsigned long long)torn,
                 (unsigned long long)reads);
        return 1;
    }
    if (s->end_sum != 0) {
        snprintf(r->message, sizeof r->message,
                 "the array sums to %ld, not 0, after %llu writes: exclusion broken",
                 (long)(int32_t)s->end_sum, (unsigned long long)writes);
        return 1;
    }
    if (s->end_begun != writes || s->end_ended != writes) {
        snprintf(
            r->message, sizeof r->message, "%llu writes begun and %llu ended, %llu made: exclusion broken",
            (unsigned long long)s->end_begun, (unsigned long long)s->end_ended, (unsigned long long)writes);
        return 1;
    }
    return 0;
}

const bench_workload_t rw_workload = {
    .name = "rw",
    .setup = rw_setup,
    .thread_main = rw_thread_main,
    .extras = bench_extras_ops_per_session,
    .verify = rw_verify,
    .teardown = rw_teardown,
};

/* --- the command ------------------------------------------------------------ */


static const char rw_default_locks[] =
    "mrqd,rw(mcs),rw(relay),pthread,"
    "peer:pthread_rwlock,peer:absl_mutex_rw,peer:tbb_spin_rw,peer:ck_rwlock";

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: baton bench rw [options]\n"
        "  RWBench (QD locking paper, section 6.2): each thread does L units of local work,\n"
        "  then a read (4 x load two random slots of a 64-entry array) or a write (4 x move a\n"
        "  random amount between two random slots).  RW kinds and RW peers read in reader mode;\n"
        "  detached delegation kinds write with baton_delegate; mutexes lock for both.\n"
        "  --locks LIST         lock specs and peers, comma-separated, or all|kinds|peers|rwpeers\n"
        "                       ('peers' are the mutex peers, 'rwpeers' the readers-writer ones;\n"
        "                       default: %s;\n"
        "                       those not in this build are skipped with a note)\n"
        "  --threads LIST       thread counts (default 1,2,8)\n"
        "  --reads LIST         percent of critical sections that read (default 50,80,95,99)\n"
        "  --local-work LIST    L: units of thread-local work between critical sections\n"
        "                       (default 0,32,128)\n"
        "  --duration SEC       length of one run (default 1)\n"
        "  --repeat R           runs per cell; the median is reported (default 3)\n"
        "  --pin POLICY         compact|spread|none (default compact)\n"
        "  --json FILE          write every result as JSON\n"
        "  --inject-fault       thread 0 writes without the lock (tests that verification fails)\n" BENCH_WAIT_USAGE,
        rw_default_locks);
}

static const char *path_name(int path)
{
    switch (path) {
    case PATH_RLOCK: return "rlock/runlock";
    case PATH_LOCK: return "lock/unlock";
    case PATH_DELEGATE: return "baton_delegate (detached)";
    default: return "baton_execute";
    }
}

/* How reads and writes reach the lock. */
static void rw_describe(const bench_lock_t *l, const void *ctx)
{
    (void)ctx;
    int rd, wr;
    rw_paths(l->caps, l->peer != NULL, &rd, &wr);
    printf("  %-24s reads: %s; writes: %s\n", l->spec, path_name(rd), path_name(wr));
}

/* Measure the single-thread rate at (reads, L), unless known. */
static void rw_ref_rate(bench_refs_t *refs, int reads, int L, const bench_cfg_t *base, int repeat)
{
    const int key[BENCH_REF_KEYS] = {reads, [BENCH_REF_L] = L};
    if (bench_ref_get(refs, key) >= 0)
        return;
    struct rw_params p = {reads, L, false};
    bench_ref_put(refs, key, bench_single_rate(&rw_workload, &p, base, repeat));
}

/* bench rw's own options. */
struct rw_opts {
    int R[BENCH_LIST_MAX], nR, L[BENCH_LIST_MAX], nL;
};

static int rw_option(int c, const char *arg, void *ctx)
{
    struct rw_opts *ro = ctx;
    switch (c) {
    case 'R':
        if ((ro->nR = bench_parse_ints(arg, ro->R, BENCH_LIST_MAX)) <= 0)
            return 1;
        for (int i = 0; i < ro->nR; i++)
            if (ro->R[i] > 100)
                return 1;
        return 0;
    case 'L': return (ro->nL = bench_parse_ints(arg, ro->L, BENCH_LIST_MAX)) <= 0;
    default: return 1;
    }
}

int cmd_bench_rw(int argc, char **argv)
{
    bench_opts_t o = {.pin = "compact", .threads = {1, 2, 8}, .nthreads = 3, .duration = 1.0, .repeat = 3};
    struct rw_opts ro = {.R = {50, 80, 95, 99}, .nR = 4, .L = {0, 32, 128}, .nL = 3};
    static const cli_opt_t opts[] = {BENCH_OPT_LOCKS,
                                     BENCH_OPT_THREADS,
                                     {"reads", CLI_VALUE, 0, 'R'},
                                     {"local-work", CLI_VALUE, 0, 'L'},
                                     BENCH_OPT_DURATION,
                                     BENCH_OPT_REPEAT,
                                     BENCH_OPT_PIN,
                                     BENCH_OPT_JSON,
                                     BENCH_OPT_FAULT,
                                     BENCH_OPT_END};
    const int prc = bench_getopt("rw", argc, argv, opts, &o, rw_option, &ro, usage);
    if (prc >= 0)
        return prc;
    const int *R = ro.R, nR = ro.nR, *L = ro.L, nL = ro.nL;
    const bench_cmd_t cmd = {.name = "rw",
                             .locks = o.locks,
                             .default_locks = rw_default_locks,
                             .threads = o.threads,
                             .nthreads = o.nthreads,
                             .duration_s = o.duration,
                             .repeat = o.repeat,
                             .pin = o.pin,
                             .describe = rw_describe};
    bench_setup_t b;
    int rc = bench_cmd_setup(&cmd, &b);
    if (rc != 0)
        return rc;
    const int nspecs = b.nspecs, cores = b.cores;

    bench_record_t *recs =
        calloc((size_t)nR * (size_t)nL * (size_t)o.nthreads * (size_t)nspecs, sizeof *recs);
    bench_result_t *runs = calloc((size_t)nspecs * (size_t)o.repeat, sizeof *runs);
    bench_refs_t refs = {0};
    int nrecs = 0, failed = 0;

    bench_progress_begin(nR * nL * o.nthreads);
    for (int ir = 0; ir < nR; ir++)
        for (int il = 0; il < nL; il++) {
            struct rw_params rp = {R[ir], L[il], o.fault};
            const int key[BENCH_REF_KEYS] = {R[ir], [BENCH_REF_L] = L[il]};
            rw_ref_rate(&refs, R[ir], L[il], &b.base, o.repeat);
            rw_ref_rate(&refs, R[ir], 0, &b.base, o.repeat);
            for (int it = 0; it < o.nthreads; it++) {
                bench_record_t *cell = &recs[nrecs];
                bench_cfg_t cfg = b.base;
                cfg.threads = o.threads[it];
                char label[64];
                snprintf(label, sizeof label, "rw reads=%d%% L=%d", R[ir], L[il]);
                bench_cell_run(&rw_workload, &rp, "rw", b.specs, nspecs, &cfg, o.repeat, runs, cell, label);
                for (int k = 0; k < nspecs; k++) {
                    bench_record_t *rec = &cell[k];
                    rec->nparams = 2;
                    rec->param_names[0] = "reads_pct";
                    rec->param_names[1] = "local_work";
                    rec->params[0] = R[ir];
                    rec->params[1] = L[il];
                }
                /* As for pq: critical sections taken one at a time.  Readers
                 * may overlap, so a readers-writer lock can pass 100%. */
                double limit = bench_cell_limit(&refs, key, cell, nspecs, o.threads[it], cores);
                failed += bench_cell_finish(cell, nspecs, limit);
                char title[256];
                snprintf(title, sizeof title,
                         "rw reads=%d%% L=%d (%.0f ns), %d thread%s on %d CPUs; physical limit %.2f "
                         "Mops/s (serialised sections; readers in parallel may pass it)",
                         R[ir], L[il], L[il] * b.unit_ns, o.threads[it], o.threads[it] > 1 ? "s" : "", cores,
                         limit / 1e6);
                report_cell(stdout, cell, nspecs, title);
                fflush(stdout);
                nrecs += nspecs;
            }
        }

    char extra[128];
    snprintf(extra, sizeof extra, "\"local_unit_ns\": %.4f, \"pin\": \"%s\", \"repeat\": %d", b.unit_ns,
             o.pin, o.repeat);
    rc = bench_cmd_finish(&b, o.json, extra, recs, nrecs, failed);
    bench_refs_free(&refs);
    free(runs);
    free(recs);
    return rc;
}
