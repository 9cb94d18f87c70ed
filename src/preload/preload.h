/* preload.h - what the files of libbaton-preload.so share.
 *
 * The interposer replaces pthread_mutex_*, pthread_cond_*, pthread_rwlock_*,
 * pthread_spin_*, the OpenMP lock calls and GOMP_critical_* for any
 * dynamically linked program.  Its exported definitions carry no symbol
 * version, and an unversioned definition satisfies a reference to any
 * version (GLIBC_2.2.5, GLIBC_2.3.2, GLIBC_2.34): so every version binds here
 * (tests/preload/versions.c proves it).
 *
 * Pieces:
 *   init.c     configuration (BATON_LOCK, BATON_RWLOCK, BATON_SPIN,
 *              BATON_VERBOSE, BATON_PROFILE), the real functions (dlsym
 *              RTLD_NEXT, resolved on first need), the state slabs, fork.
 *   mutex.c    pthread_mutex_*        cond.c    pthread_cond_*
 *   rwlock.c   pthread_rwlock_*       spin.c    pthread_spin_*
 *   omp.c      omp_*_lock, omp_*_nest_lock, GOMP_critical_*
 *   profile.c  the contention profiler behind `baton profile`
 *
 * Lock state.  A lock of the configured kind lives in a slot of a "class"
 * (one per configured spec): slots are carved from mmap()ed chunks (never
 * malloc, which may itself take a pthread mutex), recycled on destroy, and
 * named either by pointer (pthread objects have room for one) or by a 32-bit
 * handle (omp_lock_t and pthread_spinlock_t have 4 bytes).  Handle 0 is
 * "none".  The slot size is the kind's state size rounded to its alignment.
 */
#ifndef BATON_PRELOAD_H
#define BATON_PRELOAD_H

#include "../locks/kind.h"
#include "../core/syslock.h"

#include <baton/atomic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define PRELOAD_API __attribute__((visibility("default")))
/* Export `name` as another name of the interposed function `target`.  (gcc
 * would have the alias repeat the nothrow/leaf attributes glibc's header
 * gives the target; they hold for ours too.) */
#if defined(__GNUC__) && !defined(__clang__)
#define PL_ALIAS(name, target)                                                                       \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmissing-attributes\"")     \
    extern __typeof(target) name __attribute__((alias(#target), visibility("default")));          \
    _Pragma("GCC diagnostic pop")
#else
#define PL_ALIAS(name, target) \
    extern __typeof(target) name __attribute__((alias(#target), visibility("default")));
#endif

/* --- classes: one configured kind and its slots ---------------------------- */

#define PL_CHUNK_SHIFT 12u                 /* slots per chunk: 4096 */
#define PL_CHUNK_SLOTS (1u << PL_CHUNK_SHIFT)
#define PL_MAX_CHUNKS 65536u               /* 2^28 live locks per class */

typedef struct pl_class {
    const char *what;            /* "mutex", "rwlock", "spin" (diagnostics) */
    const char *env;             /* "BATON_LOCK", ... */
    bool stock;                  /* spec "pthread": forward to the real calls */
    const baton_kind_t *kind;
    /* How NORMAL locks of this class are unlocked: the kind's release,
     * which any thread may call, where it has one, else its unlock. */
    int (*release)(void *state);
    baton_opts_t opts;
    char spec[160];              /* canonical spec */
    size_t slot;                 /* bytes per slot */
    size_t extra;                /* bytes each lock allocates beyond its slot (the kind's footprint) */
    /* Slots: chunk[i] holds PL_CHUNK_SLOTS slots.  Handles are 1-based. */
    _Atomic(char *) chunk[PL_MAX_CHUNKS];
    baton_syslock_t mu;          /* guards everything below */
    uint32_t nchunks;
    uint32_t next;               /* next never-used handle */
    uint32_t free_head;          /* free list of handles (0: empty) */
    /* Accounting, for BATON_VERBOSE and `baton profile`. */
    _Atomic uint64_t live, peak, created;
} pl_class_t;

extern pl_class_t pl_mutex_class, pl_rwlock_class, pl_spin_class, pl_omp_class;

/* Configure every class from the environment, once; safe to call from any
 * entry point, before or during constructors.  Fast when done. */
extern _Atomic int pl_ready;
void pl_init_slow(void);
static inline void pl_init(void)
{
    /* Acquire: pairs with the release store at the end of pl_init_slow(). */
    if (BATON_UNLIKELY(!baton_load(&pl_ready, memory_order_acquire)))
        pl_init_slow();
}

/* A fresh, initialised lock state of class c, or NULL (errno-style code in
 * *err: ENOMEM, or the kind's init error).  *handle receives its handle. */
void *pl_state_new(pl_class_t *c, uint32_t *handle, int *err);
/* Destroy (kind->destroy) and recycle; returns the kind's destroy code
 * (EBUSY if held, and then nothing is freed). */
int pl_state_free(pl_class_t *c, void *state, uint32_t handle);

/* The state named by a handle (non-zero, live). */
static inline void *pl_state_at(pl_class_t *c, uint32_t handle)
{
    uint32_t i = handle - 1u;
    /* Acquire: pairs with the release publishing the chunk in pl_state_new(). */
    char *chunk = baton_load(&c->chunk[i >> PL_CHUNK_SHIFT], memory_order_acquire);
    return chunk + (size_t)(i & (PL_CHUNK_SLOTS - 1u)) * c->slot;
}

/* --- the real functions ------------------------------------------------------ */

/* Forwarded calls (stock classes, robust/pshared/priority mutexes,
 * process-shared rwlocks and spinlocks), looked up with dlsym(RTLD_NEXT) on
 * first use.  Never NULL once pl_real() returned (missing: abort with a
 * message). */
typedef struct pl_real {
    int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
    int (*mutex_destroy)(pthread_mutex_t *);
    int (*mutex_lock)(pthread_mutex_t *);
    int (*mutex_trylock)(pthread_mutex_t *);
    int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*mutex_unlock)(pthread_mutex_t *);
    int (*mutex_consistent)(pthread_mutex_t *);
    int (*cond_init)(pthread_cond_t *, const pthread_condattr_t *);
    int (*cond_destroy)(pthread_cond_t *);
    int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
    int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*cond_signal)(pthread_cond_t *);
    int (*cond_broadcast)(pthread_cond_t *);
    int (*rwlock_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
    int (*rwlock_destroy)(pthread_rwlock_t *);
    int (*rwlock_rdlock)(pthread_rwlock_t *);
    int (*rwlock_tryrdlock)(pthread_rwlock_t *);
    int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
    int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*rwlock_wrlock)(pthread_rwlock_t *);
    int (*rwlock_trywrlock)(pthread_rwlock_t *);
    int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
    int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*rwlock_unlock)(pthread_rwlock_t *);
    int (*spin_init)(pthread_spinlock_t *, int);
    int (*spin_destroy)(pthread_spinlock_t *);
    int (*spin_lock)(pthread_spinlock_t *);
    int (*spin_trylock)(pthread_spinlock_t *);
    int (*spin_unlock)(pthread_spinlock_t *);
} pl_real_t;

const pl_real_t *pl_real(void);
/* An optional symbol of the next object (libgomp's omp_* in stock mode):
 * NULL when absent. */
void *pl_next_symbol(const char *name);

/* --- diagnostics -------------------------------------------------------------- */

extern int pl_verbose; /* BATON_VERBOSE=1: diagnostics on stderr; never stdout */
void pl_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A fatal misconfiguration (bad spec): message on stderr, exit(2). */
void pl_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* --- time and deadlines ------------------------------------------------------- */

/* EINVAL if tv_nsec is out of range. */
static inline int pl_timespec_valid(const struct timespec *ts)
{
    return ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000L;
}
/* Has the absolute deadline on `clock` passed? */
bool pl_deadline_passed(clockid_t clock, const struct timespec *abstime);
/* Nanoseconds until the deadline (0 when passed). */
uint64_t pl_ns_until(clockid_t clock, const struct timespec *abstime);
/* Wait for a lock whose kind offers no timed acquisition: trylock, backing
 * off from 1 us up to 1 ms, until it succeeds (0) or the deadline passes
 * (ETIMEDOUT).  `try` returns 0 or EBUSY. */
int pl_timed_acquire(int (*try)(void *), void *arg, clockid_t clock, const struct timespec *abstime);

/* --- the profiler (profile.c) ------------------------------------------------- */

/* What a profiled lock is. */
typedef enum pl_prof_type { PL_PROF_MUTEX, PL_PROF_RWLOCK, PL_PROF_SPIN, PL_PROF_OMP, PL_PROF_CRITICAL } pl_prof_type;

typedef struct pl_prof pl_prof_t; /* one profiled lock (opaque) */

/* Non-zero when BATON_PROFILE is set (read once by pl_init_slow()). */
extern int pl_profiling;

/* The record of the lock at `addr`, created on first sight with `caller`
 * (a return address in the program) as its call site. */
pl_prof_t *pl_prof_get(const void *addr, pl_prof_type type, const void *caller);
uint64_t pl_prof_now(void);   /* a cheap monotonic clock, nanoseconds */
/* An acquisition: `wait_ns` spent waiting (0 when the first try succeeded,
 * i.e. uncontended), exclusive or shared. */
void pl_prof_acquired(pl_prof_t *p, uint64_t wait_ns, bool contended, bool shared);
/* A release of an exclusive hold (the hold time is measured from the
 * matching pl_prof_acquired()). */
void pl_prof_released(pl_prof_t *p);
void pl_prof_trylock_failed(pl_prof_t *p);
void pl_prof_cond_wait(pl_prof_t *p); /* a condition wait on this mutex */
void pl_prof_destroyed(const void *addr);
/* The lock's current state and kind: the report adds the counters the kind
 * keeps (elision).  Only kinds with a stats op are remembered. */
void pl_prof_bind(pl_prof_t *p, const baton_kind_t *kind, void *state);
/* The profiler's table lock: init.c's fork handlers take it across fork. */
extern baton_syslock_t pl_prof_mu;
/* Called by init.c when profiling: register the report at exit. */
void pl_prof_start(void);

#endif
