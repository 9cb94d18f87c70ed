/* init.c - configuration, lock-state slabs, the real functions and fork for
 * libbaton-preload.so (see preload.h). */
#include "preload.h"
#include "../api/registry.h"
#include <baton/preload.h>

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
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

/* --- configuration (the parsing is config.c's) ---------------------------------------- */

/* Each variable is read and parsed once, here; a class that another
 * variable configures when its own is unset (OpenMP locks: BATON_LOCK) or
 * whose default derives from another's (rwlocks: elide in BATON_LOCK) gets
 * that variable's parsed value, not its text again. */
typedef struct {
    baton_spec_t spec;
    const char *text; /* as written (or the default), for messages */
} pl_setting_t;

static bool is_set(const char *value)
{
    return value != NULL && value[0] != '\0';
}

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
    const unsigned lock = BATON_CAP_LOCK | BATON_CAP_TRYLOCK;
    const char *lock_value = getenv("BATON_LOCK");
    pl_setting_t mutex, set;
    parse(&pl_mutex_class, lock_value, PL_DEFAULT_LOCK, &mutex);
    configure(&pl_mutex_class, &mutex, lock);

    /* BATON_RWLOCK's default is PL_DEFAULT_RWLOCK; but when BATON_LOCK
     * elides, readers and writers elide too (pl_config_rwlock_derive()). */
    const char *rw = getenv("BATON_RWLOCK");
    char derived[sizeof pl_rwlock_class.spec]; /* its text, for messages */
    if (!is_set(rw) && pl_config_rwlock_derive(&mutex.spec, &set.spec) &&
        baton_lockspec_print(&set.spec, derived, sizeof derived) < sizeof derived)
        set.text = derived;
    else
        parse(&pl_rwlock_class, rw, PL_DEFAULT_RWLOCK, &set);
    configure(&pl_rwlock_class, &set, lock | BATON_CAP_RW);

    parse(&pl_spin_class, getenv("BATON_SPIN"), PL_DEFAULT_SPIN, &set);
    configure(&pl_spin_class, &set, lock);

    /* OpenMP locks: BATON_OMP_LOCK, else what BATON_LOCK said (or the
     * default when it said nothing: PL_DEFAULT_OMP is PL_DEFAULT_LOCK). */
    const char *omp = getenv("BATON_OMP_LOCK");
    if (is_set(omp))
        parse(&pl_omp_class, omp, PL_DEFAULT_OMP, &set);
    else if (is_set(lock_value))
        set = mutex;
    else
        parse(&pl_omp_class, NULL, PL_DEFAULT_OMP, &set);
    configure(&pl_omp_class, &set, lock);
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
__attribute__((constructor)) static void pl_constructor(void)
{
    pl_init();
}

/* --- slabs -------------------------------------------------------------------- */

uint32_t pl_slot_new(pl_class_t *c, const void *owner, int *err)
{
    uint32_t h;
    baton_syslock_lock(&c->mu);
    if (c->free_head != 0) {
        h = c->free_head;
        /* A free slot's first word holds the next free handle. */
        char *chunk = baton_load(&c->chunk[(h - 1u) >> PL_CHUNK_SHIFT], memory_order_relaxed); /* under mu */
        memcpy(&c->free_head, chunk + PL_CHUNK_OWNERS_BYTES + (size_t)((h - 1u) & (PL_CHUNK_SLOTS - 1u)) * c->slot,
               sizeof(uint32_t));
    } else {
        uint32_t i = c->next;
        if ((i >> PL_CHUNK_SHIFT) >= c->nchunks) {
            void *m = c->nchunks == PL_MAX_CHUNKS
                          ? MAP_FAILED
                          : mmap(NULL, PL_CHUNK_OWNERS_BYTES + (size_t)PL_CHUNK_SLOTS * c->slot,
                                 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) {
                baton_syslock_unlock(&c->mu);
                *err = ENOMEM;
                return 0;
            }
            /* Release: pairs with the acquire in pl_state_lookup(). */
            baton_store(&c->chunk[c->nchunks], (char *)m, memory_order_release);
            c->nchunks++;
        }
        c->next = i + 1;
        h = i + 1;
    }
    uint32_t i = h - 1u;
    char *chunk = baton_load(&c->chunk[i >> PL_CHUNK_SHIFT], memory_order_relaxed); /* under mu */
    memset(chunk + PL_CHUNK_OWNERS_BYTES + (size_t)(i & (PL_CHUNK_SLOTS - 1u)) * c->slot, 0, c->slot);
    /* Relaxed: published with the handle by the caller's release. */
    baton_store(pl_owner_of(chunk, i & (PL_CHUNK_SLOTS - 1u)), owner, memory_order_relaxed);
    baton_syslock_unlock(&c->mu);
    return h;
}

void pl_slot_free(pl_class_t *c, uint32_t h)
{
    uint32_t i = h - 1u;
    baton_syslock_lock(&c->mu);
    char *chunk = baton_load(&c->chunk[i >> PL_CHUNK_SHIFT], memory_order_relaxed); /* under mu */
    /* Relaxed: a lookup that still finds the old owner is a use after
     * destroy, which the program orders out. */
    baton_store(pl_owner_of(chunk, i & (PL_CHUNK_SLOTS - 1u)), NULL, memory_order_relaxed);
    memcpy(chunk + PL_CHUNK_OWNERS_BYTES + (size_t)(i & (PL_CHUNK_SLOTS - 1u)) * c->slot, &c->free_head,
           sizeof(uint32_t));
    c->free_head = h;
    baton_syslock_unlock(&c->mu);
}

void *pl_state_new(pl_class_t *c, const void *owner, uint32_t *handle, int *err)
{
    uint32_t h = pl_slot_new(c, owner, err);
    if (h == 0)
        return NULL;
    void *s = pl_state_lookup(c, h, owner);
    baton_opts_t buf;
    int rc = c->kind->init(s, c->opts_for ? c->opts_for(c, owner, &buf) : &c->opts);
    if (rc != 0) {
        pl_slot_free(c, h);
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
    pl_slot_free(c, handle);
    baton_fetch_sub(&c->live, 1, memory_order_relaxed); /* statistics only */
    return 0;
}

uint32_t pl_adopt(pl_class_t *c, _Atomic uint32_t *hw, const void *owner, uint32_t from, int *err)
{
    uint32_t h;
    void *s = pl_state_new(c, owner, &h, err);
    if (s == NULL)
        return 0;
    uint32_t expected = from;
    /* Release: publishes the initialised state and its back-pointer; pairs
     * with the acquire loads of handle words in every entry point.  Acquire
     * on failure: a racer's state is initialised before it is used. */
    if (baton_cas(hw, &expected, h, memory_order_acq_rel, memory_order_acquire))
        return h;
    (void)pl_state_free(c, s, h);
    return expected;
}

uint32_t pl_adopt_or_inplace(pl_class_t *c, _Atomic uint32_t *w, const void *owner, uint32_t from)
{
    int err = 0;
    uint32_t v = pl_adopt(c, w, owner, from, &err);
    if (v != 0 || err == 0)
        return v;
    pl_no_state(c, err, "is an in-place lock for the rest of its life");
    /* Relaxed: an in-place lock has nothing to publish; its acquiring CAS
     * orders what it guards. */
    if (baton_cas(w, &from, PL_INPLACE, memory_order_relaxed, memory_order_relaxed))
        return PL_INPLACE;
    return from; /* a racer's */
}

int pl_handle_state(pl_class_t *c, _Atomic uint32_t *hw, const void *owner, _Atomic uint64_t *glibc_word,
                    _Atomic(pl_prof_t *) *prof, bool create, void (*fall_back)(const void *owner, uint32_t from),
                    void **sp)
{
    for (;;) {
        /* Acquire: pairs with the release CAS in pl_adopt() and the release
         * stores of the fall-backs. */
        uint32_t h = baton_load(hw, memory_order_acquire);
        void *s = pl_state_lookup(c, h, owner);
        if (BATON_LIKELY(s != NULL)) {
            *sp = s;
            return 0;
        }
        if (h == PL_HANDLE_FWD)
            return PL_FORWARD;
        if (h == PL_HANDLE_PENDING) {
            pl_wait_change(hw, h);
            continue;
        }
        /* Relaxed: a look at what glibc would see (baton writes nothing
         * there); the CAS below decides. */
        if (h != 0 && baton_load(glibc_word, memory_order_relaxed) != 0) {
            /* Not this object's, and glibc reads it as held: glibc's, for
             * good.  Relaxed: nothing is published (glibc reads the bytes as
             * they are). */
            (void)baton_cas(hw, &h, PL_HANDLE_FWD, memory_order_relaxed, memory_order_relaxed);
            continue;
        }
        if (!create)
            return PL_NO_STATE;
        /* Relaxed: racers store the same NULL, and the profiler finds a
         * record again by the object's address. */
        baton_store(prof, NULL, memory_order_relaxed);
        int err = 0;
        if (pl_adopt(c, hw, owner, h, &err) == 0 && err != 0) {
            pl_no_state(c, err, "is glibc's own for the rest of its life");
            fall_back(owner, h);
        }
    }
}

void pl_no_state(pl_class_t *c, int err, const char *fallback)
{
    int expected = 0;
    /* Relaxed: only decides who says it; `live` is a statistic. */
    if (baton_cas(&c->no_state, &expected, 1, memory_order_relaxed, memory_order_relaxed))
        pl_log("%s: no lock state could be made (%s; %llu live): a %s that cannot get one %s", c->what,
               strerror(err), (unsigned long long)baton_load(&c->live, memory_order_relaxed), c->what, fallback);
}

/* --- in-place locks (preload.h) ---------------------------------------------------- */

int pl_inplace_trylock(_Atomic uint32_t *w)
{
    uint32_t expected = PL_INPLACE;
    /* Relaxed look first (test-and-test-and-set); acquire CAS: pairs with the
     * release store in pl_inplace_unlock(). */
    if (baton_load(w, memory_order_relaxed) != PL_INPLACE)
        return EBUSY;
    return baton_cas(w, &expected, PL_INPLACE_HELD, memory_order_acquire, memory_order_relaxed) ? 0 : EBUSY;
}

void pl_wait_change(_Atomic uint32_t *w, uint32_t v)
{
    baton_wait_t policy;
    (void)baton_wait_init(&policy, BATON_WAIT_SPINPARK);
    baton_waiter_t waiter;
    baton_waiter_init(&waiter, &policy);
    /* Relaxed: a hint of when to look again; the caller decides. */
    while (baton_load(w, memory_order_relaxed) == v)
        if (!baton_waiter_pause(&waiter, NULL, 0))
            sched_yield(); /* past the spin budget: nobody would wake a sleeper */
}

void pl_inplace_lock(_Atomic uint32_t *w)
{
    while (pl_inplace_trylock(w) != 0)
        pl_wait_change(w, PL_INPLACE_HELD);
}

void pl_inplace_unlock(_Atomic uint32_t *w)
{
    /* Release: pairs with the acquire CAS in pl_inplace_trylock(). */
    baton_store(w, PL_INPLACE, memory_order_release);
}

/* --- fork: the child must not inherit a slab lock held by a thread that does
 * not exist there. --------------------------------------------------------------- */

/* In the order of baton/preload.h's BATON_PRELOAD_* (baton_preload_info). */
static pl_class_t *const classes[] = {&pl_mutex_class, &pl_rwlock_class, &pl_spin_class, &pl_omp_class};
/* Every slab, for fork. */
static pl_class_t *const slabs[] = {&pl_mutex_class, &pl_rwlock_class, &pl_spin_class, &pl_omp_class,
                                    &pl_barrier_class};

static baton_syslock_t real_mu = BATON_SYSLOCK_INIT; /* pl_real()'s first lookup */

static void fork_prepare(void)
{
    baton_syslock_lock(&real_mu);
    baton_syslock_lock(&pl_prof_mu);
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++)
        baton_syslock_lock(&slabs[i]->mu);
}

static void fork_parent(void)
{
    for (size_t i = sizeof slabs / sizeof slabs[0]; i-- > 0;)
        baton_syslock_unlock(&slabs[i]->mu);
    baton_syslock_unlock(&pl_prof_mu);
    baton_syslock_unlock(&real_mu);
}

static void fork_child(void)
{
    for (size_t i = sizeof slabs / sizeof slabs[0]; i-- > 0;)
        baton_syslock_reset(&slabs[i]->mu);
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
