/* runner.c - the locks under test and the fork-isolated runner (bench.h). */
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

/* --- locks -------------------------------------------------------------------- */

static void peer_names(char *buf, size_t size)
{
    const bench_peer_t *peers;
    size_t n = bench_peers(&peers);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        baton_join(buf, size, ", ", "%s", peers[i].name);
    if (n == 0)
        snprintf(buf, size, "(none built: install libck-dev, libabsl-dev, libtbb-dev and rebuild)");
}

int bench_lock_open(const char *spec, bench_lock_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    snprintf(out->spec, sizeof out->spec, "%s", spec);
    if (strncmp(spec, "peer:", 5) == 0) {
        const bench_peer_t *peers;
        size_t n = bench_peers(&peers);
        for (size_t i = 0; i < n; i++) {
            if (strcmp(peers[i].name, spec) != 0)
                continue;
            out->peer = &peers[i];
            out->obj = peers[i].create();
            if (!out->obj) {
                snprintf(err, errlen, "%s: out of memory", spec);
                return ENOMEM;
            }
            out->lock = peers[i].lock;
            out->unlock = peers[i].unlock;
            out->rlock = peers[i].rlock;
            out->runlock = peers[i].runlock;
            out->execute = peers[i].execute;
            out->delegate = peers[i].delegate;
            out->caps = BATON_CAP_LOCK | (peers[i].rlock ? BATON_CAP_RW : 0u);
            if (peers[i].execute) {
                out->caps |= BATON_CAP_EXECUTE | (peers[i].delegate ? BATON_CAP_DELEGATE : 0u) |
                             (peers[i].delegate && peers[i].detached ? BATON_CAP_DETACH : 0u);
                out->delegates = true;
            }
            return 0;
        }
        char names[512];
        peer_names(names, sizeof names);
        snprintf(err, errlen, "unknown peer '%s'; peers in this build: %s", spec, names);
        return EINVAL;
    }
    out->baton = baton_lock_new(spec);
    if (!out->baton) {
        int e = errno;
        char names[512];
        peer_names(names, sizeof names);
        snprintf(err, errlen, "%s (peers: %s)", baton_last_error(), names);
        return e ? e : EINVAL;
    }
    snprintf(out->spec, sizeof out->spec, "%s", baton_lock_spec(out->baton));
    out->obj = out->baton;
    out->caps = baton_lock_kind(out->baton)->caps;
    /* No capability bit tells a combining kind (fc) from a mutex: both
     * offer lock, execute and delegate.  What they differ in is that a
     * delegation kind runs other threads' operations, and counts its help
     * sessions; a mutex keeps no statistics. */
    baton_stats_t st;
    out->delegates =
        (out->caps & (BATON_CAP_DETACH | BATON_CAP_SERVER)) || baton_lock_stats(out->baton, &st) == 0;
    return 0;
}

double bench_lock_ops_per_session(const bench_lock_t *l)
{
    baton_stats_t st;
    if (!l->baton || baton_lock_stats(l->baton, &st) != 0 || st.help_sessions == 0)
        return -1.0;
    return (double)st.helped_ops / (double)st.help_sessions;
}

void bench_lock_close(bench_lock_t *l)
{
    if (l->baton)
        baton_lock_free(l->baton);
    else if (l->peer && l->obj)
        l->peer->destroy(l->obj);
    memset(l, 0, sizeof *l);
}

static int add_spec(char specs[][BENCH_SPEC_MAX], int n, int max, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(specs[i], s) == 0)
            return n; /* no duplicates */
    if (n < max)
        snprintf(specs[n++], BENCH_SPEC_MAX, "%s", s);
    return n;
}

static bool monitor_available(void)
{
    const baton_cpu_features_t *f = baton_cpu_features();
    return f->waitpkg || f->monitorx;
}

/* A wrapper kind (rw(<kind>)) needs its inner kind named, so keywords
 * leave it out. */
static bool keyword_lists(const baton_kind_info_t *k) { return !(k->caps & BATON_CAP_WRAPPER); }

static int add_keyword(const char *kw, char specs[][BENCH_SPEC_MAX], int n, int max)
{
    const baton_kind_info_t *kinds;
    size_t nk = baton_kinds(&kinds);
    bool all = strcmp(kw, "all") == 0;
    if (all || strcmp(kw, "kinds") == 0) {
        for (size_t i = 0; i < nk; i++)
            if (keyword_lists(&kinds[i]))
                n = add_spec(specs, n, max, kinds[i].name);
        if (all) {
            /* The spinpark variant of every kind whose default spins, so
             * one table shows what parking buys under oversubscription. */
            for (size_t i = 0; i < nk; i++) {
                const char *d = kinds[i].default_wait;
                if ((kinds[i].caps & BATON_CAP_WAIT) && keyword_lists(&kinds[i]) &&
                    (!strcmp(d, "spin") || !strcmp(d, "backoff") || !strcmp(d, "yield"))) {
                    char s[BENCH_SPEC_MAX];
                    snprintf(s, sizeof s, "%.80s:spinpark", kinds[i].name);
                    n = add_spec(specs, n, max, s);
                }
            }
        }
    } else if (strcmp(kw, "allwaits") == 0) {
        for (size_t i = 0; i < nk; i++) {
            if (!keyword_lists(&kinds[i]))
                continue;
            if (!(kinds[i].caps & BATON_CAP_WAIT)) {
                n = add_spec(specs, n, max, kinds[i].name);
                continue;
            }
            for (unsigned w = 0; w < BATON_WAIT_KINDS; w++) {
                if (!(kinds[i].waits & (1u << w)) || (w == BATON_WAIT_MONITOR && !monitor_available()))
                    continue;
                char s[BENCH_SPEC_MAX];
                snprintf(s, sizeof s, "%.60s:%.20s", kinds[i].name, baton_wait_name((baton_wait_kind)w));
                n = add_spec(specs, n, max, s);
            }
        }
    }
    /* The RW peers are mutexes too (their write lock), but they are built
     * for readers: "peers" and "all" leave them to "rwpeers". */
    bool rw = strcmp(kw, "rwpeers") == 0;
    if (all || rw || strcmp(kw, "peers") == 0) {
        const bench_peer_t *peers;
        size_t np = bench_peers(&peers);
        for (size_t i = 0; i < np; i++)
            if ((peers[i].rlock != NULL) == rw)
                n = add_spec(specs, n, max, peers[i].name);
    }
    return n;
}

/* Is `word` a switch (an option taking 0 or 1, written bare) of the kind
 * `spec` names?  Then "elide(ttas),sleep" is one spec, not two.  The kind
 * is the spec's leading name: the spec may be unfinished yet ("rw(mcs"
 * before "readers=2)" joins it), so it is not parsed whole; its options are
 * the registry's data (baton_kind_options). */
static bool is_switch_of(const char *spec, const char *word)
{
    const baton_kind_info_t *kinds;
    size_t nk = baton_kinds(&kinds), klen = strcspn(spec, ":,(");
    for (size_t i = 0; i < nk; i++) {
        if (strlen(kinds[i].name) != klen || strncmp(kinds[i].name, spec, klen) != 0)
            continue;
        const baton_option_info_t *opt;
        size_t no = baton_kind_options(&kinds[i], &opt);
        for (size_t j = 0; j < no; j++)
            if ((opt[j].flags & BATON_OPTION_SWITCH) && strcmp(opt[j].name, word) == 0)
                return true;
        return false;
    }
    return false;
}

int bench_expand_locks(const char *arg, char specs[][BENCH_SPEC_MAX], int max, char *err, size_t errlen)
{
    int n = 0;
    char item[BENCH_SPEC_MAX];
    char pending[BENCH_SPEC_MAX] = "";
    const char *p = arg;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len >= sizeof item) {
            snprintf(err, errlen, "lock spec too long: '%.*s'", (int)len, p);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (pending[0] && (strchr(item, '=') || is_switch_of(pending, item))) {
            size_t used = strlen(pending);
            if (used + 1 + len >= sizeof pending) {
                snprintf(err, errlen, "lock spec too long: '%s,%s'", pending, item);
                return -1;
            }
            pending[used] = ',';
            memcpy(pending + used + 1, item, len + 1);
        } else {
            if (pending[0])
                n = add_spec(specs, n, max, pending);
            pending[0] = '\0';
            if (!strcmp(item, "all") || !strcmp(item, "kinds") || !strcmp(item, "peers") ||
                !strcmp(item, "rwpeers") || !strcmp(item, "allwaits"))
                n = add_keyword(item, specs, n, max);
            else if (item[0])
                snprintf(pending, sizeof pending, "%s", item);
        }
        p += len;
        if (*p != ',')
            break;
        p++;
    }
    if (pending[0])
        n = add_spec(specs, n, max, pending);
    if (n == 0) {
        snprintf(err, errlen, "no locks named in '%s'", arg);
        return -1;
    }
    return n;
}

/* --- local work ------------------------------------------------------------------ */

void bench_local_init(bench_local_t *w, uint32_t seed)
{
    w->rng = seed ? seed : 0x12345678u;
    memset(w->a, 0, sizeof w->a);
}

void bench_local_work(bench_local_t *w, uint32_t units)
{
    uint32_t x = w->rng;
    for (uint32_t u = 0; u < units; u++) {
        uint32_t r = bench_rand(&x);
        int32_t amount = (int32_t)(r >> 16);
        w->a[r & 63u] += amount;
        w->a[(r >> 6) & 63u] -= amount;
    }
    w->rng = x;
}

double bench_local_unit_ns(void)
{
    static double unit;
    if (unit > 0)
        return unit;
    bench_local_t w;
    bench_local_init(&w, 1);
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        const uint32_t n = 2000000;
        double t0 = bench_now();
        bench_local_work(&w, n);
        double t = (bench_now() - t0) / n * 1e9;
        if (t < best)
            best = t;
    }
    /* Keep the work observable so it is not optimised away. */
    if (w.a[0] == 0x7fffffff)
        best += 1e-12;
    unit = best;
    return unit;
}

int bench_parse_ints(const char *s, int *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 1000000 || n >= max)
            return -1;
        out[n++] = (int)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

bool bench_parse_only;

/* What bench_getopt() hands cli_getopt(): the shared options' target and
 * the bench's own callback. */
struct bench_getopt_ctx {
    bench_opts_t *o;
    bench_own_opt_fn own;
    void *ctx;
};

static int shared_option(int c, const char *arg, void *ctx)
{
    struct bench_getopt_ctx *g = ctx;
    bench_opts_t *o = g->o;
    switch (c) {
    case 'l': o->locks = arg; return 0;
    case 't': return (o->nthreads = bench_parse_ints(arg, o->threads, BENCH_LIST_MAX)) <= 0;
    case 'd': o->duration = atof(arg); return !(o->duration > 0 && o->duration <= 3600);
    case 'r': o->repeat = atoi(arg); return o->repeat < 1 || o->repeat > REPORT_MAX_RUNS;
    case 'p': o->pin = arg; return topo_pin_parse(arg) < 0;
    case 'j': o->json = arg; return 0;
    case 'F': o->fault = true; return 0;
    default: return g->own ? g->own(c, arg, g->ctx) : 1;
    }
}

int bench_getopt(const char *name, int argc, char **argv, const cli_opt_t *opts, bench_opts_t *o,
                 bench_own_opt_fn own, void *ctx, void (*usage)(FILE *))
{
    char prog[64];
    snprintf(prog, sizeof prog, "baton bench %s", name);
    struct bench_getopt_ctx g = {o, own, ctx};
    int rc = cli_getopt(prog, argc, argv, opts, CLI_NO_OPERANDS, shared_option, &g, usage, NULL);
    if (rc >= 0)
        return rc;
    if (bench_parse_only) {
        static char specs[64][BENCH_SPEC_MAX];
        char err[256];
        if (o->locks != NULL && bench_expand_locks(o->locks, specs, 64, err, sizeof err) < 0)
            return 2;
        return 0;
    }
    return -1;
}

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

/* --- acquisition waits ---------------------------------------------------------- */

_Thread_local uint32_t bench_wait_tick;
_Thread_local bench_wait_hist_t *bench_wait_log;

/* Bucket of `c` cycles: exact below BENCH_WAIT_SUB, then BENCH_WAIT_SUB
 * buckets per power of two (bucket 4e-4+s holds [(4+s) << (e-2), (5+s) << (e-2))
 * for the power 2^e). */
_Static_assert(BENCH_WAIT_SUB == 4, "wait_bucket splits powers of two in 4");

static unsigned wait_bucket(uint64_t c)
{
    if (c < BENCH_WAIT_SUB)
        return (unsigned)c;
    unsigned e = 63u - (unsigned)__builtin_clzll(c); /* >= 2 */
    return (e - 1u) * BENCH_WAIT_SUB + (unsigned)((c >> (e - 2u)) & (BENCH_WAIT_SUB - 1));
}

/* The largest value bucket b holds. */
static uint64_t wait_bucket_top(unsigned b)
{
    if (b < BENCH_WAIT_SUB)
        return b;
    unsigned e = b / BENCH_WAIT_SUB + 1u, sub = b % BENCH_WAIT_SUB;
    return ((uint64_t)(BENCH_WAIT_SUB + sub + 1u) << (e - 2u)) - 1u;
}

void bench_wait_add(bench_wait_hist_t *h, uint64_t cycles)
{
    h->samples++;
    h->bucket[wait_bucket(cycles)]++;
    if (cycles > h->max_cycles)
        h->max_cycles = cycles;
}

void bench_wait_merge(bench_wait_hist_t *into, const bench_wait_hist_t *from)
{
    into->samples += from->samples;
    if (from->max_cycles > into->max_cycles)
        into->max_cycles = from->max_cycles;
    for (int b = 0; b < BENCH_WAIT_BUCKETS; b++)
        into->bucket[b] += from->bucket[b];
}

void bench_wait_figures(const bench_wait_hist_t *h, double *max_ns, double *p999_ns)
{
    *max_ns = *p999_ns = -1;
    const double tpn = baton_tsc_per_ns();
    if (h->samples == 0 || !(tpn > 0))
        return;
    /* The sample of rank ceil(0.999 n), counted from the smallest. */
    const uint64_t rank = h->samples - h->samples / 1000;
    uint64_t seen = 0, top = h->max_cycles;
    for (unsigned b = 0; b < BENCH_WAIT_BUCKETS; b++) {
        seen += h->bucket[b];
        if (seen >= rank) {
            top = wait_bucket_top(b);
            break;
        }
    }
    if (top > h->max_cycles)
        top = h->max_cycles;
    *max_ns = (double)h->max_cycles / tpn;
    *p999_ns = (double)top / tpn;
}

int bench_wait_sampled(int how, bench_lock_t *l, baton_fn fn, void *ctx)
{
    const uint64_t t0 = baton_rdtsc();
    int rc = 0;
    switch (how) {
    case BENCH_WAIT_LOCK: bench_lock_acquire_untimed(l); break;
    case BENCH_WAIT_RLOCK: bench_lock_read_acquire_untimed(l); break;
    default: rc = bench_execute_untimed(l, fn, ctx); break;
    }
    const uint64_t t1 = baton_rdtsc();
    bench_wait_hist_t *h = bench_wait_log;
    if (h && t1 >= t0)
        bench_wait_add(h, t1 - t0);
    return rc;
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

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
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
    double cpu0 = cpu_seconds();
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
    r->cpu_s = cpu_seconds() - cpu0;
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
