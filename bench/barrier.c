/* barrier.c - `baton bench barrier`: barrier episodes, EPCC style.
 *
 * N threads each do W of calibrated busy work (bench_local_work, so W = 1 us
 * is 1 us of CPU) and enter the barrier, for R episodes.  Reported per
 * episode: the wall time, the CPU time of all threads (getrusage), and the
 * episode's physical limit: the work, spread over the cores, plus one cache
 * line round trip (what `baton info` measures), W x N / min(N, cores) + rtt.
 *
 * Every measurement runs in a child process of its own (the runner,
 * bench.h), with the runner's deadline and kill.  A cell is time-boxed: when
 * the box (--time-box, default 0.3 s) ends before R episodes, thread 0 names
 * the episode in progress as the last, every thread stops after it, and the
 * table says "shortened to K episodes".  So spinning barriers with more
 * threads than CPUs, whose episodes take milliseconds, are cut short, never
 * waited for; a barrier that never completes an episode is killed at the
 * deadline and reported as such.
 *
 * Verification.  Every thread counts its arrival (a relaxed fetch-and-add
 * on one shared counter) before it waits.  After episode e (0-based) the
 * counter must have reached N x (e + 1) for every thread that leaves the
 * barrier: a correct barrier orders every arrival before every departure.
 * A thread that finds fewer passed the episode early, and fails the run.
 * The count costs every barrier alike one shared fetch-and-add per thread
 * per episode.  For baton kinds, exactly one thread per episode must also be
 * told it is the serial thread.  --inject-fault makes thread 0 skip the
 * barrier every 64th episode (and make the waits up at the end, so that
 * nobody is left waiting); the run must then fail.
 *
 * Peers (barrier_peers.h): pthread_barrier, GNU OpenMP's barrier (which
 * runs on a team of OpenMP threads of its own, unpinned) and Concurrency
 * Kit's centralized, dissemination, tournament and MCS barriers, where this
 * build has them.
 */
#include "bench.h"
#include "progress.h"
#include "report.h"
#include "peers/barrier_peers.h"
#include "topo.h"
#include "../src/base/join.h"

#include <baton/atomic.h>
#include <baton/barrier.h>
#include <baton/wait.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SUMMARY_LINE 512
#define FAULT_EVERY 64 /* --inject-fault: thread 0 skips episodes 5, 69, 133... */

/* --- the workload -------------------------------------------------------------- */

struct bar_params {
    char spec[BENCH_SPEC_MAX];
    const bench_barrier_peer_t *peer; /* NULL: a baton kind */
    uint32_t work_units;              /* W in units of bench_local_work */
    uint64_t episodes;                /* R, the most to run */
    bool inject_fault;
};

struct bar_shared {
    /* Arrivals so far, over all episodes. */
    _Alignas(BENCH_LINE) _Atomic uint64_t arrived;
    /* The number of the last episode to run: R - 1 until thread 0 shortens
     * it at the end of the time box.  Read by every thread after every
     * episode, written at most once. */
    _Alignas(BENCH_LINE) _Atomic uint64_t last;
};

struct bar_thread {
    _Alignas(BENCH_LINE) uint64_t episodes;
    uint64_t early;       /* episodes this thread passed before all arrived */
    uint64_t first_early; /* the first of them */
    uint64_t seen_early;  /* the arrivals it saw then */
    uint64_t serial;      /* times a baton kind named it the serial thread */
    uint64_t skipped;     /* --inject-fault */
    int error;            /* what baton_barrier_wait returned, if it failed */
    bench_local_t local;
};

struct bar_state {
    const struct bar_params *p;
    unsigned n;
    baton_barrier_t *baton;
    void *peer_obj;
    struct bar_shared *sh;
    struct bar_thread *t;
    double t_begin, t_end; /* thread 0's episode loop */
    int run_error;         /* the peer's run() failed */
};

static void bar_teardown(void *state)
{
    struct bar_state *s = state;
    if (s->baton)
        (void)baton_barrier_free(s->baton);
    if (s->peer_obj)
        s->p->peer->destroy(s->peer_obj);
    free(s->sh);
    free(s->t);
    free(s);
}

/* The runner opens a lock for every workload ("tas", unused here); the
 * barrier under test is named in the parameters. */
static void *bar_setup(const void *params, bench_lock_t *lock, int threads, char *err, size_t errlen)
{
    (void)lock;
    const struct bar_params *p = params;
    struct bar_state *s = calloc(1, sizeof *s);
    struct bar_shared *sh = aligned_alloc(BENCH_LINE, sizeof *sh);
    struct bar_thread *t = aligned_alloc(BENCH_LINE, (size_t)threads * sizeof *t);
    if (!s || !sh || !t) {
        snprintf(err, errlen, "out of memory");
        free(s);
        free(sh);
        free(t);
        return NULL;
    }
    memset(t, 0, (size_t)threads * sizeof *t);
    atomic_init(&sh->arrived, 0);
    atomic_init(&sh->last, p->episodes - 1);
    s->p = p;
    s->n = (unsigned)threads;
    s->sh = sh;
    s->t = t;
    if (p->peer) {
        s->peer_obj = p->peer->create(s->n);
        if (!s->peer_obj) {
            snprintf(err, errlen, "%s: cannot create a barrier for %d threads", p->spec, threads);
            bar_teardown(s);
            return NULL;
        }
    } else {
        s->baton = baton_barrier_new(p->spec, s->n);
        if (!s->baton) {
            snprintf(err, errlen, "%s: %s", p->spec, baton_last_error());
            bar_teardown(s);
            return NULL;
        }
    }
    return s;
}

static inline int bar_wait(struct bar_state *s, unsigned index)
{
    if (s->baton)
        return baton_barrier_wait(s->baton);
    s->p->peer->wait(s->peer_obj, index);
    return 0;
}

/* One thread's episodes.  `stop` is the runner's end of the time box. */
static void bar_episodes(struct bar_state *s, unsigned index, const _Atomic int *stop)
{
    struct bar_thread *me = &s->t[index];
    struct bar_shared *sh = s->sh;
    const uint32_t W = s->p->work_units;
    const uint64_t due_per_episode = s->n;
    const bool fault = s->p->inject_fault && index == 0;
    bench_local_init(&me->local, 0x9e3779b9u * (index + 1));
    if (index == 0)
        s->t_begin = bench_now();
    uint64_t e = 0;
    for (;;) {
        if (W)
            bench_local_work(&me->local, W);
        /* Relaxed: the barrier under test is what must order this arrival
         * before every thread's departure (and the check below tests it). */
        baton_fetch_add(&sh->arrived, 1, memory_order_relaxed);
        /* Thread 0 ends the time box: the episode in progress is the last.
         * It writes before it arrives, so every thread reads it after this
         * episode's barrier; a thread still leaving the previous episode
         * reads e, larger than its own episode, and goes on.  Relaxed
         * (`last`, both ways): the barrier under test orders this store
         * before those loads.  Relaxed (`stop`): the runner's flag carries
         * no data.  With --inject-fault the barrier orders nothing, so the
         * run keeps its R episodes. */
        if (index == 0 && !s->p->inject_fault && atomic_load_explicit(stop, memory_order_relaxed) &&
            baton_load(&sh->last, memory_order_relaxed) > e)
            baton_store(&sh->last, e, memory_order_relaxed);
        if (fault && e % FAULT_EVERY == 5) {
            me->skipped++;
        } else {
            int rc = bar_wait(s, index);
            if (rc == BATON_BARRIER_SERIAL_THREAD) {
                me->serial++;
            } else if (rc != 0) {
                me->error = rc;
                break; /* the others wait for us in vain: the deadline ends it */
            }
        }
        /* Relaxed: ordered after every arrival of episode e by the barrier,
         * if it is correct; that is what is checked. */
        uint64_t seen = baton_load(&sh->arrived, memory_order_relaxed);
        if (seen < due_per_episode * (e + 1)) {
            if (me->early++ == 0) {
                me->first_early = e;
                me->seen_early = seen;
            }
        }
        e++;
        /* Relaxed: see the store above. */
        if (baton_load(&sh->last, memory_order_relaxed) < e)
            break;
    }
    if (index == 0)
        s->t_end = bench_now();
    /* The waits thread 0 skipped, made up so that the others get out. */
    for (uint64_t k = 0; k < me->skipped; k++)
        (void)bar_wait(s, index);
    me->episodes = e;
}

struct bar_team {
    struct bar_state *s;
    const _Atomic int *stop;
};

static void bar_team_body(void *ctx, unsigned index)
{
    const struct bar_team *team = ctx;
    bar_episodes(team->s, index, team->stop);
}

static uint64_t bar_thread_main(void *state, int index, const _Atomic int *stop)
{
    struct bar_state *s = state;
    if (s->p->peer && s->p->peer->run) {
        /* The peer's barrier works between threads of its own (an OpenMP
         * team): thread 0 opens the team, the runner's other threads have
         * nothing to do. */
        if (index != 0)
            return 0;
        struct bar_team team = {s, stop};
        s->run_error = s->p->peer->run(s->n, bar_team_body, &team);
        return s->t[0].episodes;
    }
    bar_episodes(s, (unsigned)index, stop);
    return s->t[index].episodes;
}

/* extra[]: the episodes run, and thread 0's time for them.  A baton
 * barrier's resolved spec goes back in r->message, which stays empty on
 * success otherwise (verify overwrites it on failure): `auto` and the
 * options left to the kind are decided by the thread count, so the spec
 * differs from cell to cell. */
enum { EXTRA_EPISODES = 0, EXTRA_LOOP_S = 1 };

static void bar_extras(void *state, bench_lock_t *lock, bench_result_t *r)
{
    (void)lock;
    struct bar_state *s = state;
    r->extra[EXTRA_EPISODES] = (double)s->t[0].episodes;
    r->extra[EXTRA_LOOP_S] = s->t_end - s->t_begin;
    if (s->baton)
        snprintf(r->message, sizeof r->message, "%s", baton_barrier_spec(s->baton));
}

static int bar_verify(void *state, const uint64_t *ops, int threads, bench_result_t *r)
{
    (void)ops;
    struct bar_state *s = state;
    if (s->run_error) {
        snprintf(r->message, sizeof r->message, "the peer could not run %d threads: %s", threads,
                 strerror(s->run_error));
        return 1;
    }
    uint64_t early = 0, serial = 0;
    int first = -1;
    for (int i = 0; i < threads; i++) {
        const struct bar_thread *t = &s->t[i];
        if (t->error) {
            snprintf(r->message, sizeof r->message, "thread %d: baton_barrier_wait failed: %s", i,
                     strerror(t->error));
            return 1;
        }
        if (t->early && (first < 0 || t->first_early < s->t[first].first_early))
            first = i;
        early += t->early;
        serial += t->serial;
    }
    if (early) {
        const struct bar_thread *t = &s->t[first];
        snprintf(r->message, sizeof r->message,
                 "thread %d passed episode %" PRIu64 " with %" PRIu64 " of %" PRIu64 " arrivals; %" PRIu64
                 " early passes in all: barrier broken",
                 first, t->first_early, t->seen_early, (t->first_early + 1) * s->n, early);
        return 1;
    }
    const uint64_t episodes = s->t[0].episodes;
    for (int i = 1; i < threads; i++)
        if (s->t[i].episodes != episodes) {
            snprintf(r->message, sizeof r->message, "thread %d ran %" PRIu64 " episodes, thread 0 %" PRIu64,
                     i, s->t[i].episodes, episodes);
            return 1;
        }
    if (s->baton && serial != episodes) {
        snprintf(r->message, sizeof r->message,
                 "%" PRIu64 " serial threads named in %" PRIu64 " episodes (must be one each)", serial,
                 episodes);
        return 1;
    }
    return 0;
}

static const bench_workload_t bar_workload = {
    .name = "barrier",
    .setup = bar_setup,
    .thread_main = bar_thread_main,
    .extras = bar_extras,
    .verify = bar_verify,
    .teardown = bar_teardown,
};

/* --- the barrier list ------------------------------------------------------------ */

static const bench_barrier_peer_t *find_peer(const char *name)
{
    const bench_barrier_peer_t *peers;
    size_t n = bench_barrier_peers(&peers);
    for (size_t i = 0; i < n; i++)
        if (strcmp(peers[i].name, name) == 0)
            return &peers[i];
    return NULL;
}

/* The waits `all` adds to every kind, beside its default. */
static const baton_wait_kind all_waits[] = {BATON_WAIT_SPIN, BATON_WAIT_SPINPARK, BATON_WAIT_PARK,
                                            BATON_WAIT_YIELD};

static int add_keyword(const char *kw, char specs[][BENCH_SPEC_MAX], int n, int max)
{
    bool all = strcmp(kw, "all") == 0;
    if (all || strcmp(kw, "kinds") == 0) {
        const baton_barrier_kind_info_t *k;
        size_t nk = baton_barrier_kinds(&k);
        for (size_t i = 0; i < nk; i++)
            n = bench_add_spec(specs, n, max, k[i].name);
        for (size_t i = 0; all && i < nk; i++)
            for (size_t w = 0; w < sizeof all_waits / sizeof all_waits[0]; w++)
                if (k[i].waits & BATON_WAIT_BIT(all_waits[w])) {
                    char s[BENCH_SPEC_MAX];
                    snprintf(s, sizeof s, "%.60s:%.20s", k[i].name, baton_wait_name(all_waits[w]));
                    n = bench_add_spec(specs, n, max, s);
                }
    }
    if (all || strcmp(kw, "peers") == 0) {
        const bench_barrier_peer_t *peers;
        size_t np = bench_barrier_peers(&peers);
        for (size_t i = 0; i < np; i++)
            n = bench_add_spec(specs, n, max, peers[i].name);
    }
    return n;
}

/* The barrier list's keywords: their specs appended, or -1 for another word. */
static int barrier_keyword(const char *item, char specs[][BENCH_SPEC_MAX], int n, int max)
{
    if (!strcmp(item, "all") || !strcmp(item, "kinds") || !strcmp(item, "peers"))
        return add_keyword(item, specs, n, max);
    return -1;
}

/* --barriers: comma-separated specs, where an item containing '='
 * continues the previous spec ("twolevel:spin,fanout=4" is one), and the
 * keywords all, kinds, peers. */
static const bench_spec_list_t barrier_list = {"barrier", NULL, barrier_keyword};

static void peer_names(char *buf, size_t size)
{
    const bench_barrier_peer_t *peers;
    size_t n = bench_barrier_peers(&peers);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        baton_join(buf, size, ", ", "%s", peers[i].name);
    if (n == 0)
        snprintf(buf, size, "none in this build");
}

/* Check that spec names a peer of this build, or a baton barrier that
 * opens (for two threads: the spec is kept as written, since what it
 * resolves to depends on the thread count).  0, or an errno value with a
 * message (bench_cmd_t.check_spec). */
static int check_barrier(char spec[BENCH_SPEC_MAX], const void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    if (strncmp(spec, "peer:", 5) == 0) {
        if (find_peer(spec))
            return 0;
        char names[512];
        peer_names(names, sizeof names);
        snprintf(err, errlen, "unknown barrier peer '%s'; barrier peers in this build: %s", spec, names);
        return EINVAL;
    }
    baton_barrier_t *b = baton_barrier_new(spec, 2);
    if (!b) {
        int e = errno ? errno : EINVAL;
        snprintf(err, errlen, "%s", baton_last_error());
        return e;
    }
    (void)baton_barrier_free(b);
    return 0;
}

/* --- the results ---------------------------------------------------------------- */

typedef struct bar_rec {
    char spec[BENCH_SPEC_MAX];     /* as given */
    char resolved[BENCH_SPEC_MAX]; /* what a baton barrier resolved it to for this N */
    bool peer;
    int threads;
    long work_ns;
    uint64_t requested, episodes;
    double us_per_episode, cpu_us_per_episode, limit_us;
    bench_result_t r;
} bar_rec_t;

static bool rec_ok(const bar_rec_t *x) { return x->r.status == BENCH_OK && x->episodes > 0; }

static const char *rec_status(const bar_rec_t *x) { return report_status_name(x->r.status, false); }

static int by_time(const void *a, const void *b)
{
    const bar_rec_t *x = *(bar_rec_t *const *)a, *y = *(bar_rec_t *const *)b;
    bool ox = rec_ok(x), oy = rec_ok(y);
    if (ox != oy)
        return oy - ox; /* the failures last */
    return (x->us_per_episode > y->us_per_episode) - (x->us_per_episode < y->us_per_episode);
}

static void print_cell(bar_rec_t *cell, int n, double box_s)
{
    bar_rec_t **order = malloc((size_t)n * sizeof *order);
    if (!order)
        return;
    for (int i = 0; i < n; i++)
        order[i] = &cell[i];
    qsort(order, (size_t)n, sizeof *order, by_time);
    printf("%4s  %-38s %11s %11s %8s %9s  %s\n", "rank", "barrier (resolved)", "us/episode", "CPU-us/ep",
           "x limit", "episodes", "status");
    for (int i = 0; i < n; i++) {
        const bar_rec_t *x = order[i];
        if (!rec_ok(x)) {
            printf("%4d  %-38s %11s %11s %8s %9s  %s: %s\n", i + 1, x->spec, "-", "-", "-", "-",
                   rec_status(x), x->r.message);
            continue;
        }
        char note[96] = "";
        if (x->episodes < x->requested)
            snprintf(note, sizeof note, ", shortened to %" PRIu64 " episodes (time box %.2g s)", x->episodes,
                     box_s);
        printf("%4d  %-38s %11.3f %11.3f %8.2f %9" PRIu64 "  ok%s\n", i + 1,
               x->resolved[0] ? x->resolved : x->spec, x->us_per_episode, x->cpu_us_per_episode,
               x->limit_us > 0 ? x->us_per_episode / x->limit_us : 0.0, x->episodes, note);
    }
    free(order);
}

static const bar_rec_t *best_of(const bar_rec_t *cell, int n, bool peer)
{
    const bar_rec_t *best = NULL;
    for (int i = 0; i < n; i++)
        if (cell[i].peer == peer && rec_ok(&cell[i]) &&
            (!best || cell[i].us_per_episode < best->us_per_episode))
            best = &cell[i];
    return best;
}

/* The targets line of one cell, into buf: the best baton barrier against
 * the best peer, against the limit, and in CPU; with work, CPU per episode
 * over the work done in it (N x W). */
static void format_targets(char *buf, size_t size, const bar_rec_t *cell, int n, const char *prefix)
{
    const bar_rec_t *b = best_of(cell, n, false), *p = best_of(cell, n, true);
    size_t used = 0;
#define ADD(...)                                                                                             \
    do {                                                                                                     \
        if (used < size) {                                                                                   \
            int w_ = snprintf(buf + used, size - used, __VA_ARGS__);                                         \
            used += w_ > 0 ? (size_t)w_ : 0;                                                                 \
        }                                                                                                    \
    } while (0)
    buf[0] = '\0';
    ADD("%s", prefix);
    if (!b) {
        ADD("no baton barrier ran");
        return;
    }
    ADD("best baton %s %.3f us", b->resolved[0] ? b->resolved : b->spec, b->us_per_episode);
    if (p)
        ADD(" vs best peer %s %.3f us = %.2fx", p->spec, p->us_per_episode,
            b->us_per_episode / p->us_per_episode);
    else
        ADD(" (no peer ran)");
    if (b->limit_us > 0)
        ADD("; %.2fx the limit", b->us_per_episode / b->limit_us);
    if (p && p->cpu_us_per_episode > 0)
        ADD("; CPU/episode %.3f us vs that peer's %.3f us = %.2fx", b->cpu_us_per_episode,
            p->cpu_us_per_episode, b->cpu_us_per_episode / p->cpu_us_per_episode);
    if (b->work_ns > 0) {
        double work_us = (double)b->work_ns * b->threads / 1e3;
        ADD("; CPU per episode / work (N x W) = %.2f", b->cpu_us_per_episode / work_us);
        if (p)
            ADD(" (peer %.2f)", p->cpu_us_per_episode / work_us);
    }
#undef ADD
}

/* One record of the JSON (a report_record_fn over the bar_rec_t array). */
static void bar_json_record(FILE *f, int i, const void *ctx)
{
    const bar_rec_t *x = (const bar_rec_t *)ctx + i;
    bool ok = rec_ok(x);
    fprintf(f, "\"bench\": \"barrier\", \"barrier\": ");
    report_json_string(f, x->spec);
    if (x->resolved[0]) {
        fprintf(f, ", \"resolved\": ");
        report_json_string(f, x->resolved);
    }
    fprintf(f,
            ", \"threads\": %d, \"work_ns\": %ld, \"episodes_requested\": %" PRIu64 ", \"episodes\": %" PRIu64
            ", \"shortened\": %s",
            x->threads, x->work_ns, x->requested, x->episodes,
            ok && x->episodes < x->requested ? "true" : "false");
    if (ok)
        fprintf(f, ", \"us_per_episode\": %.6g, \"cpu_us_per_episode\": %.6g", x->us_per_episode,
                x->cpu_us_per_episode);
    else
        fprintf(f, ", \"us_per_episode\": null, \"cpu_us_per_episode\": null");
    fprintf(f, ", \"limit_us\": %.6g, ", x->limit_us);
    report_json_outcome(f, &x->r, rec_status(x));
}

/* --- the command ----------------------------------------------------------------- */

static const char bar_default_list[] = "kinds,peers";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton bench barrier [options]\n"
            "  EPCC-style barrier benchmark: N threads each do W ns of busy work and enter the\n"
            "  barrier, for R episodes; time and CPU per episode against the physical limit\n"
            "  W x N / min(N, cores) + one cache-line round trip.  Every episode is verified\n"
            "  (a shared arrival count: no thread may leave before all N arrived).\n"
            "  --barriers LIST      barrier specs (kind[:wait][,key=value]) and peers, comma-\n"
            "                       separated, or kinds|peers|all (all: every kind with its default\n"
            "                       wait and with spin, spinpark, park, yield, and every peer);\n"
            "                       default: %s (those not in this build skipped with a note)\n"
            "  --threads LIST       thread counts N (default 2,4,8,16)\n"
            "  --work-ns LIST       W, busy work per thread per episode in ns (default 0,1000,250000)\n"
            "  --episodes R         episodes per cell (default 100000), fewer when the time box ends\n"
            "  --time-box SEC       the longest a cell runs (default 0.3); the table says when it\n"
            "                       shortened a cell\n"
            "  --pin POLICY         compact|spread|none (default compact; the OpenMP peer's own\n"
            "                       threads are never pinned)\n"
            "  --json FILE          write every result as JSON\n"
            "  --inject-fault       thread 0 skips the barrier every %d episodes (tests that\n"
            "                       verification fails; the time box is then not applied)\n",
            bar_default_list, FAULT_EVERY);
}

/* bench barrier's own options. */
struct bar_opts {
    const char *list;
    int work[BENCH_LIST_MAX], nwork;
    uint64_t episodes;
    double box;
};

static int bar_option(int c, const char *arg, void *ctx)
{
    struct bar_opts *bo = ctx;
    char *end;
    switch (c) {
    case 'b': bo->list = arg; return 0;
    case 'w': return (bo->nwork = bench_parse_ints(arg, bo->work, BENCH_LIST_MAX)) <= 0;
    case 'e':
        errno = 0;
        bo->episodes = strtoull(arg, &end, 10);
        return errno || *end || end == arg || bo->episodes < 1 || bo->episodes > (1ull << 40);
    case 'T': bo->box = atof(arg); return !(bo->box > 0 && bo->box <= 3600);
    default: return 1;
    }
}

int cmd_bench_barrier(int argc, char **argv)
{
    bench_opts_t o = {.pin = "compact", .threads = {2, 4, 8, 16}, .nthreads = 4};
    struct bar_opts bo = {.work = {0, 1000, 250000}, .nwork = 3, .episodes = 100000, .box = 0.3};
    static const cli_opt_t opts[] = {{"barriers", CLI_VALUE, 0, 'b'},
                                     BENCH_OPT_THREADS,
                                     {"work-ns", CLI_VALUE, 0, 'w'},
                                     {"episodes", CLI_VALUE, 0, 'e'},
                                     {"time-box", CLI_VALUE, 0, 'T'},
                                     BENCH_OPT_PIN,
                                     BENCH_OPT_JSON,
                                     BENCH_OPT_FAULT,
                                     BENCH_OPT_END};
    const int prc = bench_getopt("barrier", argc, argv, opts, &o, bar_option, &bo, usage);
    if (prc >= 0)
        return prc;
    for (int i = 0; i < o.nthreads; i++)
        if (o.threads[i] < 1 || o.threads[i] > 1024) {
            fprintf(stderr, "baton bench barrier: bad value for --threads: %d (1 to 1024)\n", o.threads[i]);
            usage(stderr);
            return 2;
        }
    const int *threads = o.threads, nthreads = o.nthreads, *work = bo.work, nwork = bo.nwork;
    const uint64_t episodes = bo.episodes;
    const double box = bo.box;
    const bool fault = o.fault;

    char wlist[256] = "", runs[128];
    for (int i = 0; i < nwork; i++)
        baton_join(wlist, sizeof wlist, ",", "%d", work[i]);
    char params_line[sizeof wlist + 16];
    snprintf(params_line, sizeof params_line, "; W %s ns", wlist);
    snprintf(runs, sizeof runs, "up to %" PRIu64 " episodes or %.2g s per cell", episodes, box);
    const bench_cmd_t cmd = {.name = "barrier",
                             .locks = bo.list,
                             .default_locks = bar_default_list,
                             .list = &barrier_list,
                             .check_spec = check_barrier,
                             .line_rtt = true, /* the limit's line round trip */
                             .threads = threads,
                             .nthreads = nthreads,
                             .duration_s = box,
                             .repeat = 1,
                             .pin = o.pin,
                             .header_params = params_line,
                             .header_runs = runs,
                             .header_tail = fault ? "; INJECTED FAULT: thread 0 skips the barrier" : NULL};
    bench_setup_t b;
    int rc = bench_cmd_setup(&cmd, &b);
    if (rc != 0)
        return rc;
    char(*specs)[BENCH_SPEC_MAX] = b.specs;
    const int nspecs = b.nspecs, cores = b.cores;
    const double unit_ns = b.unit_ns, rtt_us = b.m.line_rtt_ns / 1e3;
    /* The peers this build lacks, and why (they are found at configure
     * time: bench/peers/CMakeLists.txt). */
    static const struct {
        const char *name, *why;
    } expected[] = {
        {"peer:pthread_barrier", "BATON_PEERS off"},
        {"peer:gomp_barrier", "GNU OpenMP: a gcc build with libgomp"},
        {"peer:ck_barrier_centralized", "Concurrency Kit: libck-dev"},
        {"peer:ck_barrier_dissemination", "Concurrency Kit: libck-dev"},
        {"peer:ck_barrier_tournament", "Concurrency Kit: libck-dev"},
        {"peer:ck_barrier_mcs", "Concurrency Kit: libck-dev"},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (!find_peer(expected[i].name))
            printf("note: %s is not in this build (%s)\n", expected[i].name, expected[i].why);
    for (int k = 0; k < nspecs; k++) {
        const bench_barrier_peer_t *p = find_peer(specs[k]);
        if (p)
            printf("  %-30s %s\n", p->name, p->summary);
    }

    bar_rec_t *recs = calloc((size_t)nwork * (size_t)nthreads * (size_t)nspecs, sizeof *recs);
    struct bar_params *params = calloc((size_t)nspecs, sizeof *params);
    /* One targets line per cell, printed under it and again at the end. */
    char(*summary)[SUMMARY_LINE] = calloc((size_t)nwork * (size_t)nthreads, sizeof *summary);
    if (!recs || !params || !summary) {
        fprintf(stderr, "baton bench barrier: out of memory\n");
        free(summary);
        free(recs);
        free(params);
        bench_cmd_finish(&b, NULL, NULL, NULL, 0, 0);
        return 2;
    }
    int nrecs = 0, failed = 0;
    bench_progress_begin(nwork * nthreads);
    for (int iw = 0; iw < nwork; iw++) {
        const double units_f = unit_ns > 0 ? work[iw] / unit_ns : 0;
        const uint32_t units = work[iw] > 0 ? (uint32_t)(units_f < 1 ? 1 : units_f + 0.5) : 0;
        for (int it = 0; it < nthreads; it++) {
            const int N = threads[it];
            const int eff = N < cores ? N : cores;
            const double limit_us = (double)work[iw] * N / eff / 1e3 + rtt_us;
            bar_rec_t *cell = &recs[nrecs];
            char label[64];
            snprintf(label, sizeof label, "barrier W=%d ns N=%d", work[iw], N);
            bench_progress_cell(label);
            for (int k = 0; k < nspecs; k++) {
                struct bar_params *bp = &params[k];
                snprintf(bp->spec, sizeof bp->spec, "%s", specs[k]);
                bp->peer = find_peer(specs[k]);
                bp->work_units = units;
                bp->episodes = episodes;
                bp->inject_fault = fault;
                bench_cfg_t cfg = b.base;
                cfg.threads = N;
                if (bp->peer && bp->peer->run) {
                    /* Its team's threads inherit thread 0's CPU mask: pinning
                     * thread 0 would put the whole team on one CPU. */
                    cfg.pin_policy = TOPO_PIN_NONE;
                    cfg.pin_order = NULL;
                }
                if (fault)
                    cfg.deadline_s += (double)episodes * (work[iw] / 1e9 + 2e-6) * N;
                bench_progress_step(k, nspecs, specs[k]);
                bar_rec_t *x = &cell[k];
                bench_run(&bar_workload, bp, "tas", &cfg, &x->r);
                snprintf(x->spec, sizeof x->spec, "%s", specs[k]);
                x->peer = bp->peer != NULL;
                x->threads = N;
                x->work_ns = work[iw];
                x->requested = episodes;
                x->limit_us = limit_us;
                if (x->r.status == BENCH_OK) {
                    if (!x->peer) {
                        snprintf(x->resolved, sizeof x->resolved, "%s", x->r.message);
                        x->r.message[0] = '\0';
                    }
                    x->episodes = (uint64_t)x->r.extra[EXTRA_EPISODES];
                    double loop_s = x->r.extra[EXTRA_LOOP_S] > 0 ? x->r.extra[EXTRA_LOOP_S] : x->r.seconds;
                    if (x->episodes > 0) {
                        x->us_per_episode = loop_s / (double)x->episodes * 1e6;
                        x->cpu_us_per_episode = x->r.cpu_s / (double)x->episodes * 1e6;
                    }
                } else if (x->r.status != BENCH_TIMEOUT) {
                    failed++; /* a collapse killed at the deadline is a result, not a failure */
                }
            }
            bench_progress_cell_done();
            printf("\nbarrier W=%d ns (%u units), %d thread%s on %d CPUs; limit %.3f us/episode "
                   "(W x N / min(N, cores) + line round trip)\n",
                   work[iw], units, N, N > 1 ? "s" : "", cores, limit_us);
            print_cell(cell, nspecs, box);
            char prefix[64];
            snprintf(prefix, sizeof prefix, "  targets N=%d W=%d ns: ", N, work[iw]);
            char *line = summary[(size_t)iw * (size_t)nthreads + (size_t)it];
            format_targets(line, SUMMARY_LINE, cell, nspecs, prefix);
            printf("%s\n", line);
            fflush(stdout);
            nrecs += nspecs;
        }
    }
    printf("\nsummary (per N and W: best baton barrier vs best peer, x limit, CPU):\n");
    for (int i = 0; i < nwork * nthreads; i++)
        printf("%s\n", summary[i]);

    char extra[128];
    snprintf(extra, sizeof extra, "\"local_unit_ns\": %.4f, \"time_box_s\": %g, \"pin\": \"%s\"", unit_ns,
             box, o.pin);
    rc = bench_cmd_finish_json(&b, o.json, extra, nrecs, bar_json_record, recs, failed);
    free(summary);
    free(params);
    free(recs);
    return rc;
}
