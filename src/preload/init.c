/* init.c - configuration, lock-state slabs, the real functions and fork for
 * libbaton-preload.so (see preload.h). */
#include "preload.h"
#include "../core/registry.h"
#include <baton/preload.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
pl_class_t pl_rwlock_class = {.what = "rwlock", .env = "BATON_RWLOCK"};
pl_class_t pl_spin_class = {.what = "spinlock", .env = "BATON_SPIN"};
pl_class_t pl_omp_class = {.what = "omp", .env = "BATON_OMP_LOCK"};

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
    size_t len = (size_t)n + ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
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

/* --- configuration ------------------------------------------------------------------ */

static void interposable_names(char *buf, size_t size, unsigned need)
{
    const baton_kind_info_t *k;
    size_t n = baton_kinds(&k), used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < size; i++) {
        if ((k[i].caps & need) != need && strcmp(k[i].name, "pthread") != 0)
            continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", k[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Does the spec name a wait policy ("kind:policy[,...]")? */
static bool names_wait(const char *spec)
{
    for (const char *p = spec; *p != '\0' && *p != ',' && *p != '('; p++)
        if (*p == ':')
            return true;
    return false;
}

/* Write into out the spec with ":spinpark" after every kind name (the
 * outer one, or a wrapper's inner ones) that names no policy although its
 * kind takes spinpark and by default only spins.  Returns false if nothing
 * changed or it did not fit. */
static bool park_by_default(const char *spec, char *out, size_t size)
{
    const baton_kind_t *k;
    baton_opts_t o;
    char canon[160];
    if (baton_spec_parse(spec, &k, &o, canon, sizeof canon) != 0)
        return false;
    if (k->wrapper) {
        /* name(inner)rest: rewrite the inner spec. */
        size_t name = strcspn(spec, "(");
        char inner[160], rewritten[160];
        if (baton_opts_inner(&o, inner, sizeof inner) != 0 || !park_by_default(inner, rewritten, sizeof rewritten))
            return false;
        int n = snprintf(out, size, "%.*s(%s)%s", (int)name, spec, rewritten, o.inner + o.inner_len + 1);
        return n > 0 && (size_t)n < size;
    }
    if (names_wait(spec) || !(k->caps & BATON_CAP_WAIT) ||
        !(k->waits & BATON_WAIT_BIT(BATON_WAIT_SPINPARK)) || baton_wait_may_park(&o.wait))
        return false;
    size_t name = strcspn(spec, ",");
    int n = snprintf(out, size, "%.*s:spinpark%s", (int)name, spec, spec + name);
    return n > 0 && (size_t)n < size;
}

/* An elide(<kind>) spec made fit for rwlocks, into out: elide(rw(<kind>))
 * with elide's options, or the spec itself when <kind> is a readers-writer
 * kind already.  false: not an elide spec, or it does not fit. */
static bool elide_for_rwlock(const char *spec, char *out, size_t size)
{
    const baton_kind_t *k, *ik;
    baton_opts_t o, io;
    char canon[160], inner[160];
    if (baton_spec_parse(spec, &k, &o, canon, sizeof canon) != 0 || k != &baton_kind_elide ||
        baton_opts_inner(&o, inner, sizeof inner) != 0 ||
        baton_spec_parse(inner, &ik, &io, canon, sizeof canon) != 0)
        return false;
    const char *rest = o.inner + o.inner_len + 1; /* elide's own options */
    int n = (ik->caps & BATON_CAP_RW) ? snprintf(out, size, "elide(%s)%s", inner, rest)
                                       : snprintf(out, size, "elide(rw(%s))%s", inner, rest);
    return n > 0 && (size_t)n < size;
}

/* `fallback`: another variable that configures this class when c->env is
 * unset (BATON_LOCK for OpenMP locks), or NULL. */
static void configure(pl_class_t *c, const char *deflt, unsigned need, const char *fallback)
{
    const char *spec = getenv(c->env);
    if ((spec == NULL || spec[0] == '\0') && fallback != NULL)
        spec = getenv(fallback);
    if (spec == NULL || spec[0] == '\0')
        spec = deflt;
    const baton_kind_t *k;
    char canon[sizeof c->spec];
    int rc = baton_spec_parse(spec, &k, &c->opts, canon, sizeof canon);
    if (rc != 0)
        pl_die("%s='%s': %s", c->env, spec, baton_last_error());
    /* A spec that names no policy gets spinpark where the kind's own default
     * only spins: an unmodified program may run more threads than there
     * are cores, and a spinning FIFO lock then hands the lock to preempted
     * waiters (measured: seconds per thousand acquisitions).  Name a policy
     * ("mcs:spin") to get pure spinning.  Wrappers' inner kinds too. */
    char parked[sizeof c->spec];
    if (park_by_default(spec, parked, sizeof parked) &&
        baton_spec_parse(parked, &k, &c->opts, canon, sizeof canon) == 0)
        spec = parked;
    else if (baton_spec_parse(spec, &k, &c->opts, canon, sizeof canon) != 0)
        pl_die("%s='%s': %s", c->env, spec, baton_last_error());
    /* Readers elide too: elide(<kind>) stands in for an rwlock over a
     * readers-writer inner kind, and a mutex kind is wrapped in rw() first. */
    char rw_elided[sizeof c->spec];
    if ((need & BATON_CAP_RW) && k == &baton_kind_elide) {
        if (elide_for_rwlock(spec, rw_elided, sizeof rw_elided) &&
            baton_spec_parse(rw_elided, &k, &c->opts, canon, sizeof canon) == 0)
            spec = rw_elided;
        need &= ~(unsigned)BATON_CAP_RW; /* the inner kind is a readers-writer kind now */
    }
    /* A wrapper's inner kind is checked when a lock is made (elide(rcl) has
     * no lock word to watch): make one now, so a bad spec stops the program
     * at start like every other. */
    if (k->wrapper) {
        baton_lock_t *probe = baton_lock_new(spec);
        if (probe == NULL)
            pl_die("%s='%s': %s", c->env, spec, baton_last_error());
        baton_lock_free(probe);
    }
    if (strcmp(k->name, "pthread") == 0) {
        c->stock = true;
    } else if ((k->caps & need) != need) {
        char names[512];
        interposable_names(names, sizeof names, need);
        pl_die("%s='%s': kind '%s' cannot stand in for a pthread %s; use one of: %s", c->env, spec,
               k->name, c->what, names);
    }
    /* Parse again from our own copy, so that a wrapper's inner spec points
     * into memory that lives as long as the class. */
    memcpy(c->spec, canon, sizeof c->spec);
    rc = baton_spec_parse(c->spec, &k, &c->opts, canon, sizeof canon);
    if (rc != 0)
        pl_die("%s='%s': %s", c->env, c->spec, baton_last_error());
    c->kind = k;
    c->release = k->release ? k->release : k->unlock;
    size_t align = k->align ? k->align : sizeof(void *);
    c->slot = (k->size + align - 1) / align * align;
    if (c->slot < sizeof(uint32_t))
        c->slot = sizeof(uint32_t);
    c->extra = k->footprint ? k->footprint(&c->opts) : 0;
    pl_log("%s: %s%s (%zu bytes per lock)", c->what, c->spec, c->stock ? " (stock: glibc's own)" : "",
           c->stock ? (size_t)0 : c->slot + c->extra);
}

/* BATON_RWLOCK's default: PL_DEFAULT_RWLOCK; but when BATON_LOCK elides, readers
 * and writers elide too: elide(rw(<inner>)), or elide(<inner>) when the
 * inner kind is a readers-writer kind already. */
static const char *rwlock_default(void)
{
    static char buf[sizeof pl_rwlock_class.spec];
    const char *lock = getenv("BATON_LOCK");
    return lock && elide_for_rwlock(lock, buf, sizeof buf) ? buf : PL_DEFAULT_RWLOCK;
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
    const char *v = getenv("BATON_VERBOSE");
    pl_verbose = v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
    const char *p = getenv("BATON_PROFILE");
    pl_profiling = p != NULL && p[0] != '\0' && strcmp(p, "0") != 0;
    configure(&pl_mutex_class, PL_DEFAULT_LOCK, BATON_CAP_LOCK | BATON_CAP_TRYLOCK, NULL);
    configure(&pl_rwlock_class, rwlock_default(), BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_RW, NULL);
    configure(&pl_spin_class, PL_DEFAULT_SPIN, BATON_CAP_LOCK | BATON_CAP_TRYLOCK, NULL);
    configure(&pl_omp_class, PL_DEFAULT_OMP, BATON_CAP_LOCK | BATON_CAP_TRYLOCK, "BATON_LOCK");
    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
        pl_die("pthread_atfork failed");
    if (pl_profiling)
        pl_prof_start();
    baton_store(&pl_ready, 1, memory_order_release); /* pairs with the acquire in pl_init() */
}

/* Configure while the program is still single-threaded (most programs);
 * entry points that run before this constructor configure on demand. */
__attribute__((constructor)) static void pl_constructor(void)
{
    pl_init();
}

/* --- slabs -------------------------------------------------------------------- */

void *pl_state_new(pl_class_t *c, uint32_t *handle, int *err)
{
    uint32_t h;
    baton_syslock_lock(&c->mu);
    if (c->free_head != 0) {
        h = c->free_head;
        /* A free slot's first word holds the next free handle. */
        memcpy(&c->free_head, pl_state_at(c, h), sizeof(uint32_t));
    } else {
        uint32_t i = c->next;
        if ((i >> PL_CHUNK_SHIFT) >= c->nchunks) {
            if (c->nchunks == PL_MAX_CHUNKS) {
                baton_syslock_unlock(&c->mu);
                *err = ENOMEM;
                return NULL;
            }
            void *m = mmap(NULL, (size_t)PL_CHUNK_SLOTS * c->slot, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) {
                baton_syslock_unlock(&c->mu);
                *err = ENOMEM;
                return NULL;
            }
            /* Release: pairs with the acquire in pl_state_at(). */
            baton_store(&c->chunk[c->nchunks], (char *)m, memory_order_release);
            c->nchunks++;
        }
        c->next = i + 1;
        h = i + 1;
    }
    baton_syslock_unlock(&c->mu);
    void *s = pl_state_at(c, h);
    memset(s, 0, c->slot);
    int rc = c->kind->init(s, &c->opts);
    if (rc != 0) {
        baton_syslock_lock(&c->mu);
        memcpy(s, &c->free_head, sizeof(uint32_t));
        c->free_head = h;
        baton_syslock_unlock(&c->mu);
        *err = rc;
        return NULL;
    }
    /* Relaxed: statistics only. */
    uint64_t live = baton_fetch_add(&c->live, 1, memory_order_relaxed) + 1;
    baton_fetch_add(&c->created, 1, memory_order_relaxed);
    uint64_t peak = baton_load(&c->peak, memory_order_relaxed);
    while (live > peak && !baton_cas(&c->peak, &peak, live, memory_order_relaxed, memory_order_relaxed)) {
    }
    *handle = h;
    return s;
}

int pl_state_free(pl_class_t *c, void *state, uint32_t handle)
{
    int rc = c->kind->destroy(state);
    if (rc != 0)
        return rc;
    baton_syslock_lock(&c->mu);
    memcpy(state, &c->free_head, sizeof(uint32_t));
    c->free_head = handle;
    baton_syslock_unlock(&c->mu);
    baton_fetch_sub(&c->live, 1, memory_order_relaxed); /* statistics only */
    return 0;
}

/* --- fork: the child must not inherit a slab lock held by a thread that does
 * not exist there. --------------------------------------------------------------- */

static pl_class_t *const classes[] = {&pl_mutex_class, &pl_rwlock_class, &pl_spin_class, &pl_omp_class};

static baton_syslock_t real_mu = BATON_SYSLOCK_INIT; /* pl_real()'s first lookup */

static void fork_prepare(void)
{
    baton_syslock_lock(&real_mu);
    baton_syslock_lock(&pl_prof_mu);
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        baton_syslock_lock(&classes[i]->mu);
}

static void fork_parent(void)
{
    for (size_t i = sizeof classes / sizeof classes[0]; i-- > 0;)
        baton_syslock_unlock(&classes[i]->mu);
    baton_syslock_unlock(&pl_prof_mu);
    baton_syslock_unlock(&real_mu);
}

static void fork_child(void)
{
    for (size_t i = sizeof classes / sizeof classes[0]; i-- > 0;)
        baton_syslock_reset(&classes[i]->mu);
    baton_syslock_reset(&pl_prof_mu);
    baton_syslock_reset(&real_mu);
}

/* --- the real functions ---------------------------------------------------------- */

void *pl_next_symbol(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static void *need(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f == NULL)
        pl_die("cannot find the real %s: %s", name, dlerror());
    return f;
}

const pl_real_t *pl_real(void)
{
    static pl_real_t table;
    static _Atomic int done;
    /* Acquire: pairs with the release store below, publishing the table. */
    if (BATON_LIKELY(baton_load(&done, memory_order_acquire)))
        return &table;
    baton_syslock_lock(&real_mu);
    if (!baton_load(&done, memory_order_relaxed)) { /* under real_mu */
        pl_real_t t;
#define GET(field, name) *(void **)&t.field = need(name)
        GET(mutex_init, "pthread_mutex_init");
        GET(mutex_destroy, "pthread_mutex_destroy");
        GET(mutex_lock, "pthread_mutex_lock");
        GET(mutex_trylock, "pthread_mutex_trylock");
        GET(mutex_timedlock, "pthread_mutex_timedlock");
        GET(mutex_clocklock, "pthread_mutex_clocklock");
        GET(mutex_unlock, "pthread_mutex_unlock");
        GET(mutex_consistent, "pthread_mutex_consistent");
        GET(cond_init, "pthread_cond_init");
        GET(cond_destroy, "pthread_cond_destroy");
        GET(cond_wait, "pthread_cond_wait");
        GET(cond_timedwait, "pthread_cond_timedwait");
        GET(cond_clockwait, "pthread_cond_clockwait");
        GET(cond_signal, "pthread_cond_signal");
        GET(cond_broadcast, "pthread_cond_broadcast");
        GET(rwlock_init, "pthread_rwlock_init");
        GET(rwlock_destroy, "pthread_rwlock_destroy");
        GET(rwlock_rdlock, "pthread_rwlock_rdlock");
        GET(rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
        GET(rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
        GET(rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
        GET(rwlock_wrlock, "pthread_rwlock_wrlock");
        GET(rwlock_trywrlock, "pthread_rwlock_trywrlock");
        GET(rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
        GET(rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
        GET(rwlock_unlock, "pthread_rwlock_unlock");
        GET(spin_init, "pthread_spin_init");
        GET(spin_destroy, "pthread_spin_destroy");
        GET(spin_lock, "pthread_spin_lock");
        GET(spin_trylock, "pthread_spin_trylock");
        GET(spin_unlock, "pthread_spin_unlock");
#undef GET
        table = t;
        baton_store(&done, 1, memory_order_release); /* pairs with the acquire above */
    }
    baton_syslock_unlock(&real_mu);
    return &table;
}

/* --- deadlines -------------------------------------------------------------------- */

uint64_t pl_ns_until(clockid_t clock, const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(clock, &now);
    if (now.tv_sec > abstime->tv_sec || (now.tv_sec == abstime->tv_sec && now.tv_nsec >= abstime->tv_nsec))
        return 0;
    return (uint64_t)(abstime->tv_sec - now.tv_sec) * 1000000000u + (uint64_t)abstime->tv_nsec -
           (uint64_t)now.tv_nsec;
}

bool pl_deadline_passed(clockid_t clock, const struct timespec *abstime)
{
    return pl_ns_until(clock, abstime) == 0;
}

int pl_timed_acquire(int (*try)(void *), void *arg, clockid_t clock, const struct timespec *abstime)
{
    uint64_t pause = 1000; /* ns */
    for (;;) {
        if (try(arg) == 0)
            return 0;
        uint64_t left = pl_ns_until(clock, abstime);
        if (left == 0)
            return ETIMEDOUT;
        uint64_t ns = pause < left ? pause : left;
        struct timespec d = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
        nanosleep(&d, NULL);
        if (pause < 1000000)
            pause *= 2;
    }
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
    out->bytes_per_lock = c->stock ? 0 : c->slot + c->extra;
    /* Relaxed: statistics. */
    out->live = baton_load(&c->live, memory_order_relaxed);
    out->peak = baton_load(&c->peak, memory_order_relaxed);
    out->created = baton_load(&c->created, memory_order_relaxed);
    baton_syslock_lock(&c->mu);
    out->reserved_bytes = (uint64_t)c->nchunks * PL_CHUNK_SLOTS * c->slot;
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
        pl_log("%s locks (%s): %llu created, peak %llu live, %zu bytes each, %llu bytes reserved",
               in.what, in.spec, (unsigned long long)in.created, (unsigned long long)in.peak,
               in.bytes_per_lock, (unsigned long long)in.reserved_bytes);
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
