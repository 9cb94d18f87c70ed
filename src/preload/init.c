/* init.c - libbaton-preload.so's start: diagnostics, configuration, the
 * constructor, fork, and the query interface (see preload.h).  The slabs
 * are slab.c's, the real functions real.c's, the deadlines deadline.c's. */
#include "preload.h"
#include "standin.h"
#include "../api/registry.h"
#include <baton/preload.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What each environment variable means when it is unset. */
#define PL_DEFAULT_LOCK "default"
/* The default kind under a readers-writer lock that, like glibc's default
 * rwlock (PTHREAD_RWLOCK_PREFER_READER_NP), admits readers while writers
 * wait: programs written against glibc may rely on it (a reader that needs
 * another reader to finish while a writer waits). */
#define PL_DEFAULT_RWLOCK "rw(default),prefer_readers"
#define PL_DEFAULT_SPIN "ttas"
/* OpenMP locks get the same default kind as mutexes: its tenure adapts to
 * the machine, so no class needs a slice of its own. */
#define PL_DEFAULT_OMP "default"

pl_class_t pl_mutex_class = {.what = "mutex", .env = "BATON_LOCK"};
pl_class_t pl_rwlock_class = {.what = "rwlock", .env = "BATON_RWLOCK", .opts_for = pl_rwlock_opts};
pl_class_t pl_spin_class = {.what = "spinlock", .env = "BATON_SPIN"};
pl_class_t pl_omp_class = {.what = "omp", .env = "BATON_OMP_LOCK"};
/* Configured by barrier.c (its slot size) on first use. */
pl_class_t pl_barrier_class = {.what = "barrier", .env = "BATON_BARRIER"};

_Atomic int pl_ready;
int pl_verbose;
int pl_profiling;

/* --- diagnostics ---------------------------------------------------------------- */

static void vlog(const char *fmt, va_list ap)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "baton-preload[%d]: ", (int)getpid());
    if (n < 0)
        return;
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    if (m < 0)
        return;
    size_t len =
        (size_t)n + ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
    buf[len++] = '\n';
    /* write(2), not stdio: no FILE lock, no allocation, usable anywhere. */
    ssize_t w = write(2, buf, len);
    (void)w;
}

void pl_log(const char *fmt, ...)
{
    if (!pl_verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

void pl_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
    _exit(2);
}

/* --- configuration (the parsing is config.c's) ---------------------------------------- */

/* Each variable is read and parsed once, here; a class that another
 * variable configures when its own is unset (OpenMP locks: BATON_LOCK) or
 * whose default derives from another's (rwlocks: elide in BATON_LOCK) gets
 * that variable's parsed value, not its text again. */
typedef struct {
    baton_spec_t spec;
    const char *text; /* as written (or the default), for messages */
} pl_setting_t;

static bool is_set(const char *value) { return value != NULL && value[0] != '\0'; }

static void parse(const pl_class_t *c, const char *value, const char *deflt, pl_setting_t *out)
{
    char err[1024];
    if (pl_config_parse(c, value, deflt, &out->spec, err, sizeof err) != 0)
        pl_die("%s", err);
    out->text = is_set(value) ? value : deflt;
}

static void configure(pl_class_t *c, const pl_setting_t *set, unsigned need)
{
    char err[1024];
    if (pl_config_class_spec(c, &set->spec, set->text, need, err, sizeof err) != 0)
        pl_die("%s", err);
    pl_log("%s: %s%s (%zu bytes per lock)", c->what, c->spec, c->stock ? " (stock: glibc's own)" : "",
           c->stock ? (size_t)0 : c->slot + sizeof(void *) + c->extra);
}

static void configure_classes(void)
{
    const char *lock_value = getenv("BATON_LOCK");
    pl_setting_t mutex, set;
    parse(&pl_mutex_class, lock_value, PL_DEFAULT_LOCK, &mutex);
    configure(&pl_mutex_class, &mutex, PL_NEED_LOCK);

    /* BATON_RWLOCK's default is PL_DEFAULT_RWLOCK; but when BATON_LOCK
     * elides, readers and writers elide too (pl_config_rwlock_derive()). */
    const char *rw = getenv("BATON_RWLOCK");
    char derived[sizeof pl_rwlock_class.spec]; /* its text, for messages */
    if (!is_set(rw) && pl_config_rwlock_derive(&mutex.spec, &set.spec) &&
        baton_lockspec_print(&set.spec, derived, sizeof derived) < sizeof derived)
        set.text = derived;
    else
        parse(&pl_rwlock_class, rw, PL_DEFAULT_RWLOCK, &set);
    configure(&pl_rwlock_class, &set, PL_NEED_RWLOCK);

    parse(&pl_spin_class, getenv("BATON_SPIN"), PL_DEFAULT_SPIN, &set);
    configure(&pl_spin_class, &set, PL_NEED_LOCK);

    /* OpenMP locks: BATON_OMP_LOCK, else what BATON_LOCK said (or the
     * default when it said nothing: PL_DEFAULT_OMP is PL_DEFAULT_LOCK). */
    const char *omp = getenv("BATON_OMP_LOCK");
    if (is_set(omp))
        parse(&pl_omp_class, omp, PL_DEFAULT_OMP, &set);
    else if (is_set(lock_value))
        set = mutex;
    else
        parse(&pl_omp_class, NULL, PL_DEFAULT_OMP, &set);
    configure(&pl_omp_class, &set, PL_NEED_LOCK);
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

void pl_init_slow(void)
{
    /* 0: not begun; 1: one thread configures; 2 (pl_ready): done.  A
     * second thread waits for the first (configuration takes microseconds
     * and creates no lock, so the first never waits on the second). */
    static _Atomic int state;
    int expected = 0;
    /* Acquire/release: the winner's writes to the classes are published by
     * the release store of pl_ready, which pl_init() reads with acquire. */
    if (!baton_cas(&state, &expected, 1, memory_order_acquire, memory_order_relaxed)) {
        while (!baton_load(&pl_ready, memory_order_acquire))
            sched_yield();
        return;
    }
    pl_verbose = pl_config_flag(getenv("BATON_VERBOSE"));
    pl_profiling = pl_config_flag(getenv("BATON_PROFILE"));
    configure_classes();
    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
        pl_die("pthread_atfork failed");
    if (pl_profiling)
        pl_prof_start();
    baton_store(&pl_ready, 1, memory_order_release); /* pairs with the acquire in pl_init() */
}

/* Configure while the program is still single-threaded (most programs);
 * entry points that run before this constructor configure on demand. */
__attribute__((constructor)) static void pl_constructor(void) { pl_init(); }

/* --- fork: the child must not inherit a slab lock held by a thread that does
 * not exist there. --------------------------------------------------------------- */

/* In the order of baton/preload.h's BATON_PRELOAD_* (baton_preload_info). */
static pl_class_t *const classes[] = {&pl_mutex_class, &pl_rwlock_class, &pl_spin_class, &pl_omp_class};
/* Every slab, for fork. */
static pl_class_t *const slabs[] = {&pl_mutex_class, &pl_rwlock_class, &pl_spin_class, &pl_omp_class,
                                    &pl_barrier_class};

static void fork_prepare(void)
{
    baton_syslock_lock(&pl_real_mu);
    baton_syslock_lock(&pl_prof_mu);
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++)
        baton_syslock_lock(&slabs[i]->mu);
}

static void fork_parent(void)
{
    for (size_t i = sizeof slabs / sizeof slabs[0]; i-- > 0;)
        baton_syslock_unlock(&slabs[i]->mu);
    baton_syslock_unlock(&pl_prof_mu);
    baton_syslock_unlock(&pl_real_mu);
}

static void fork_child(void)
{
    for (size_t i = sizeof slabs / sizeof slabs[0]; i-- > 0;)
        baton_syslock_reset(&slabs[i]->mu);
    baton_syslock_reset(&pl_prof_mu);
    baton_syslock_reset(&pl_real_mu);
    if (pl_profiling)
        pl_prof_fork_child(); /* the child profiles itself from zero */
}

/* --- the query interface (baton/preload.h) ----------------------------------------- */

PRELOAD_API int baton_preload_info(int which, baton_preload_info_t *out)
{
    pl_init();
    if (which < 0 || (size_t)which >= sizeof classes / sizeof classes[0] || out == NULL)
        return EINVAL;
    pl_class_t *c = classes[which];
    memset(out, 0, sizeof *out);
    out->what = c->what;
    out->spec = c->spec;
    out->stock = c->stock;
    out->bytes_per_lock = c->stock ? 0 : c->slot + sizeof(void *) + c->extra; /* with its back-pointer */
    /* Relaxed: statistics. */
    out->live = baton_load(&c->live, memory_order_relaxed);
    out->peak = baton_load(&c->peak, memory_order_relaxed);
    out->created = baton_load(&c->created, memory_order_relaxed);
    baton_syslock_lock(&c->mu);
    out->reserved_bytes = (uint64_t)c->nchunks * (PL_CHUNK_OWNERS_BYTES + PL_CHUNK_SLOTS * c->slot);
    baton_syslock_unlock(&c->mu);
    return 0;
}

/* At exit, with BATON_VERBOSE=1: what the locks cost. */
__attribute__((destructor)) static void pl_report(void)
{
    if (!pl_verbose || !baton_load(&pl_ready, memory_order_acquire))
        return;
    for (int i = 0; i < (int)(sizeof classes / sizeof classes[0]); i++) {
        baton_preload_info_t in;
        if (baton_preload_info(i, &in) != 0 || in.stock)
            continue;
        pl_log("%s locks (%s): %llu created, peak %llu live, %zu bytes each, %llu bytes reserved", in.what,
               in.spec, (unsigned long long)in.created, (unsigned long long)in.peak, in.bytes_per_lock,
               (unsigned long long)in.reserved_bytes);
    }
    /* The process's elision totals, once, when any class elides. */
    bool elides = false;
    for (int i = 0; i < (int)(sizeof classes / sizeof classes[0]); i++)
        elides |= !classes[i]->stock && classes[i]->kind == &baton_kind_elide;
    if (elides) {
        baton_stats_t t;
        baton_htm_info_t h;
        baton_elision_totals(&t);
        baton_htm_info(&h);
        char causes[256] = "";
        size_t used = 0;
        for (unsigned c = 0; c < BATON_ABORT_CAUSES && used < sizeof causes; c++)
            if (t.tx_aborts[c]) {
                int n = snprintf(causes + used, sizeof causes - used, " %s %llu", baton_abort_cause_name(c),
                                 (unsigned long long)t.tx_aborts[c]);
                used += n > 0 ? (size_t)n : 0;
            }
        pl_log("elision (RTM: %s): %llu attempts, %llu commits, aborts:%s, %llu fallbacks, %llu skipped",
               h.state, (unsigned long long)t.tx_attempts, (unsigned long long)t.tx_commits,
               used ? causes : " none", (unsigned long long)t.tx_fallbacks, (unsigned long long)t.tx_skipped);
    }
}
