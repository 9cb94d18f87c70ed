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
 *   init.c     start-up: configuration (BATON_LOCK, BATON_RWLOCK,
 *              BATON_SPIN, BATON_VERBOSE, BATON_PROFILE; config.c parses),
 *              fork, baton_preload_info()
 *   standin.h  which kinds can stand in for each class (also the CLI's)
 *   slab.c     the state slabs, the in-place locks
 *   real.c     the real functions (dlsym RTLD_NEXT, on first need)
 *   deadline.c the polled timed waits (lock servers only)
 *   mutex.c    pthread_mutex_*        cond.c    pthread_cond_*
 *   rwlock.c   pthread_rwlock_*       spin.c    pthread_spin_*
 *   omp.c      omp_*_lock, omp_*_nest_lock, GOMP_critical_*
 *   profile.c  the contention profiler behind `baton profile`
 *
 * Lock state.  A lock of the configured kind lives in a slot of a "class"
 * (one per configured spec): slots are carved from mmap()ed chunks (never
 * malloc, which may itself take a pthread mutex), recycled on destroy, and
 * named by a 32-bit handle kept in the program's object.  Handle 0 is
 * "none".  The slot size is the kind's state size rounded to its alignment.
 *
 * Every slot has a back-pointer to the object it serves (the pthread
 * object's or omp lock's address), and every lookup by handle checks it
 * (pl_state_lookup): the program's memory may hold anything (an object
 * never initialised, a copy of one in use, a word planted by a bug), and a
 * value that names a live slot of another object must not lock that
 * object.  A value that does not name a state serving this object is
 * treated as glibc would treat the same bytes (each file says how).
 *
 * When no state can be made (out of memory: RLIMIT_AS, a failing mmap; or
 * the kind's init fails) the object falls back to a lock that needs no
 * memory, for its whole life: glibc's own (mutexes, rwlocks, barriers: the
 * object is marked forwarded), or an in-place lock in the object's word
 * (spinlocks, omp locks, critical sections, whose words cannot hold glibc's
 * lock and a mark).  BATON_VERBOSE=1 says so once per class.
 */
#ifndef BATON_PRELOAD_H
#define BATON_PRELOAD_H

#include "../base/kind.h"
#include "../base/spec.h" /* baton_spec_t */
#include "../base/syslock.h"

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
#define PL_ALIAS(name, target)                                                                               \
    _Pragma("GCC diagnostic push")                                                                           \
        _Pragma("GCC diagnostic ignored \"-Wmissing-attributes\"") extern __typeof(target) name              \
        __attribute__((alias(#target), visibility("default")));                                              \
    _Pragma("GCC diagnostic pop")
#else
#define PL_ALIAS(name, target)                                                                               \
    extern __typeof(target) name __attribute__((alias(#target), visibility("default")));
#endif

/* --- classes: one configured kind and its slots ---------------------------- */

#define PL_CHUNK_SHIFT 12u /* slots per chunk: 4096 */
#define PL_CHUNK_SLOTS (1u << PL_CHUNK_SHIFT)
#define PL_MAX_CHUNKS 65536u /* 2^28 live locks per class */
#define PL_MAX_HANDLES (PL_MAX_CHUNKS * PL_CHUNK_SLOTS)
/* A chunk starts with the back-pointers of its slots, then the slots (the
 * back-pointers' 32 KiB keep the slots' alignment, up to a page). */
#define PL_CHUNK_OWNERS_BYTES ((size_t)PL_CHUNK_SLOTS * sizeof(void *))

/* Values an object's handle word may hold besides 0 and a handle (all above
 * PL_MAX_HANDLES): the object is glibc's for the rest of its life
 * (forwarded), or is being made so by another thread (pending). */
#define PL_HANDLE_FWD 0xffffffffu
#define PL_HANDLE_PENDING 0xfffffffeu

typedef struct pl_class {
    const char *what;         /* "mutex", "rwlock", "spin" (diagnostics) */
    const char *env;          /* "BATON_LOCK", ... */
    bool stock;               /* spec "pthread": forward to the real calls */
    const baton_kind_t *kind; /* NULL: slots of plain memory (barriers) */
    /* How NORMAL locks of this class are unlocked: the kind's release,
     * which any thread may call, where it has one, else its unlock. */
    int (*release)(void *state);
    baton_opts_t opts;
    /* The options a new lock state serving `owner` is made with: NULL, the
     * class's `opts` for every object; else the class's options with what
     * the object asks for (an rwlock's preference, rwlock.c), in *buf or
     * `opts` itself. */
    const baton_opts_t *(*opts_for)(const struct pl_class *c, const void *owner, baton_opts_t *buf);
    char spec[160]; /* canonical spec */
    size_t slot;    /* bytes per slot */
    size_t extra;   /* bytes each lock allocates beyond its slot (the kind's footprint) */
    /* Slots: chunk[i] holds PL_CHUNK_SLOTS slots.  Handles are 1-based. */
    _Atomic(char *) chunk[PL_MAX_CHUNKS];
    baton_syslock_t mu; /* guards everything below */
    uint32_t nchunks;
    uint32_t next;      /* next never-used handle */
    uint32_t free_head; /* free list of handles (0: empty) */
    /* Accounting, for BATON_VERBOSE and `baton profile`. */
    _Atomic uint64_t live, peak, created;
    _Atomic int no_state; /* said that a state could not be made (BATON_VERBOSE) */
} pl_class_t;

extern pl_class_t pl_mutex_class, pl_rwlock_class, pl_spin_class, pl_omp_class, pl_barrier_class;

/* pl_rwlock_class's opts_for (rwlock.c): the preference of the rwlock's
 * attribute, where the kind has a prefer_readers option. */
const baton_opts_t *pl_rwlock_opts(const pl_class_t *c, const void *owner, baton_opts_t *buf);

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

/* A fresh slot of class c serving `owner`, zero-filled: its handle, or 0
 * with *err = ENOMEM.  The caller publishes the handle (a release store or
 * CAS in the object), which publishes the back-pointer with it. */
uint32_t pl_slot_new(pl_class_t *c, const void *owner, int *err);
/* Recycle a slot (its back-pointer is cleared first). */
void pl_slot_free(pl_class_t *c, uint32_t handle);
/* A fresh, initialised lock state of class c serving `owner`, or NULL
 * (errno-style code in *err: ENOMEM, or the kind's init error).  *handle
 * receives its handle. */
void *pl_state_new(pl_class_t *c, const void *owner, uint32_t *handle, int *err);
/* Destroy (kind->destroy) and recycle; returns the kind's destroy code
 * (EBUSY if held, and then nothing is freed). */
int pl_state_free(pl_class_t *c, void *state, uint32_t handle);
/* Say once per class, with BATON_VERBOSE=1, that a state could not be made
 * (err: ENOMEM, or the kind's init error) and to what the objects that get
 * none fall back. */
void pl_no_state(pl_class_t *c, int err, const char *fallback);

/* Put a fresh state serving `owner` in the handle word *hw in place of
 * `from`, with one CAS.  Returns the word's value afterwards (the new
 * handle if this call won, else what a racer put there), or 0 with *err
 * set: ENOMEM (no state could be had), or the kind's init error. */
uint32_t pl_adopt(pl_class_t *c, _Atomic uint32_t *hw, const void *owner, uint32_t from, int *err);

/* pl_adopt(), for the objects whose fall-back is an in-place lock in the
 * word itself (spinlocks, omp locks): when no state can be made, the word
 * becomes a free in-place lock in place of `from`.  Returns the word's value
 * afterwards (never 0 unless a racer wrote 0). */
uint32_t pl_adopt_or_inplace(pl_class_t *c, _Atomic uint32_t *w, const void *owner, uint32_t from);

/* What pl_handle_state() may return besides 0. */
#define PL_FORWARD (-1)  /* glibc's: forward the call */
#define PL_NO_STATE (-2) /* none yet, and not asked to make one */

/* For the objects that fall back to glibc's (mutexes, rwlocks): the state
 * their handle word *hw names.  The word holds 0 (none yet), a handle whose
 * slot serves `owner`, PL_HANDLE_FWD, PL_HANDLE_PENDING (waited out), or
 * anything else: not this object's (a copy of one in use, reused memory,
 * garbage).  Such a word is read as glibc would read the object, by its
 * first 8 bytes, *glibc_word (the mutex's __lock and __count, the rwlock's
 * __readers and __writers; baton keeps them 0 while the object is free):
 * 0 reads as free, and the object is adopted afresh (glibc: a copy of a
 * free lock is another free lock); anything else may read as held, and the
 * object is glibc's for good (PL_HANDLE_FWD), so that glibc does with its
 * bytes what it always does.  With `create`, a state is adopted where there
 * is none; when none can be made (out of memory, or the kind's init
 * failed), fall_back(owner, word) makes the object glibc's.  *prof (the object's profiler record) is cleared
 * before a state is adopted: a copied or garbage one is not this object's.
 * Returns 0 (*sp set), PL_FORWARD, or PL_NO_STATE. */
typedef struct pl_prof pl_prof_t; /* one profiled lock (opaque; profile.c) */
int pl_handle_state(pl_class_t *c, _Atomic uint32_t *hw, const void *owner, _Atomic uint64_t *glibc_word,
                    _Atomic(pl_prof_t *) *prof, bool create,
                    void (*fall_back)(const void *owner, uint32_t from), void **sp);

static inline _Atomic(const void *) *pl_owner_of(char *chunk, uint32_t slot)
{
    return (_Atomic(const void *) *)(void *)chunk + slot;
}

/* The slot named by `handle` if it serves `owner`, else NULL.  Any 32-bit
 * value may be passed (0, garbage, a copy of another object's handle): it
 * reads nothing outside the class's chunk table and its mapped chunks, and
 * costs one compare on the slot's back-pointer. */
static inline void *pl_state_lookup(pl_class_t *c, uint32_t handle, const void *owner)
{
    uint32_t i = handle - 1u;
    if (BATON_UNLIKELY(i >= PL_MAX_HANDLES))
        return NULL;
    /* Acquire: pairs with the release publishing the chunk in pl_slot_new(). */
    char *chunk = baton_load(&c->chunk[i >> PL_CHUNK_SHIFT], memory_order_acquire);
    if (BATON_UNLIKELY(chunk == NULL))
        return NULL;
    uint32_t j = i & (PL_CHUNK_SLOTS - 1u);
    /* Relaxed: a real handle was loaded with acquire from the object, which
     * pairs with the release that published it after its back-pointer was
     * stored; any other value only has to be compared. */
    if (BATON_UNLIKELY(baton_load(pl_owner_of(chunk, j), memory_order_relaxed) != owner))
        return NULL;
    return chunk + PL_CHUNK_OWNERS_BYTES + (size_t)j * c->slot;
}

/* --- entry points: whose is the object? ---------------------------------------
 * Every interposed call on an object that may be another implementation's
 * (glibc's; libgomp's in stock mode) begins the same way: it asks whose the
 * object is and hands the call on when it is not baton's.  `whose` is an
 * int expression that answers: 0, baton's (and the state is set, where the
 * lookup finds one); PL_FORWARD, the real implementation's; anything else,
 * an error code for the call to return as it is.  PL_ENTER returns, when
 * the object is not baton's, `forward` (the same call on the real function)
 * or the error; PL_ENTER_VOID, for calls that return nothing, runs
 * `forward` and returns.  Macros, since they return from the entry point:
 * the only statement in them that does. */
#define PL_ENTER(whose, forward)                                                                             \
    do {                                                                                                     \
        int pl_whose_ = (whose);                                                                             \
        if (BATON_UNLIKELY(pl_whose_ != 0))                                                                  \
            return pl_whose_ == PL_FORWARD ? (forward) : pl_whose_;                                          \
    } while (0)
#define PL_ENTER_VOID(whose, forward)                                                                        \
    do {                                                                                                     \
        if (BATON_UNLIKELY((whose) != 0)) {                                                                  \
            forward;                                                                                         \
            return;                                                                                          \
        }                                                                                                    \
    } while (0)

/* `whose` for every object of class c: PL_FORWARD when the class is stock
 * (its spec is "pthread"), else 0.  Configures the interposer first. */
static inline int pl_stock(const pl_class_t *c)
{
    pl_init();
    return c->stock ? PL_FORWARD : 0;
}

/* --- in-place locks -----------------------------------------------------------
 * A 32-bit word that is its own test-and-test-and-set lock, waiting through
 * the wait layer (spin for the calibrated budget, then yield; never a futex,
 * so that it also works across processes).  Process-shared spinlocks use
 * it, and spinlocks and omp locks that could get no state.  The values lie
 * above every handle. */
#define PL_INPLACE 0x80000000u
#define PL_INPLACE_HELD 0x80000001u
_Static_assert(PL_MAX_HANDLES < PL_INPLACE, "handles leave the top bit free");

int pl_inplace_trylock(_Atomic uint32_t *w); /* 0 or EBUSY */
void pl_inplace_lock(_Atomic uint32_t *w);
void pl_inplace_unlock(_Atomic uint32_t *w);
/* Wait (spin, then yield) while *w == v. */
void pl_wait_change(_Atomic uint32_t *w, uint32_t v);

/* --- configuration (config.c) -------------------------------------------------
 * What the environment variables mean.  Each takes a variable's value (NULL:
 * unset) and reads nothing else; none prints or exits (errors come back in
 * err, "VARIABLE='value': why"), so that a fuzz target can call them. */

/* BATON_VERBOSE, BATON_PROFILE: on unless unset, empty or "0". */
bool pl_config_flag(const char *value);
/* BATON_LOCK, BATON_RWLOCK, BATON_SPIN, BATON_OMP_LOCK: configure class c
 * (its spec, kind, options, slot size) from `value`, `deflt` when unset or
 * empty; the kind must offer the caps `need` (or be "pthread": stock).
 * 0, or -1 with the message in err. */
int pl_config_class(pl_class_t *c, const char *value, const char *deflt, unsigned need, char *err,
                    size_t errlen);
/* pl_config_class in two steps, so that a variable is parsed once and its
 * value serves several classes (BATON_LOCK: mutexes, OpenMP locks, the
 * rwlocks' default).  pl_config_parse: `value` (`deflt` when unset or
 * empty) into *s, 0 or -1.  pl_config_class_spec: configure c from *s;
 * `text` is what the user wrote, for messages. */
int pl_config_parse(const pl_class_t *c, const char *value, const char *deflt, baton_spec_t *s, char *err,
                    size_t errlen);
int pl_config_class_spec(pl_class_t *c, const baton_spec_t *s, const char *text, unsigned need, char *err,
                         size_t errlen);
/* BATON_RWLOCK's default, given BATON_LOCK's parsed spec: true, with
 * elide(rw(<inner>),prefer_readers) in *rw (elide(<inner>) when the inner
 * kind is a readers-writer kind already), when BATON_LOCK elides; false
 * otherwise (the default stands). */
bool pl_config_rwlock_derive(const baton_spec_t *lock, baton_spec_t *rw);
/* The same from BATON_LOCK's text: `deflt`, or the derived spec printed
 * into buf. */
const char *pl_config_rwlock_default(const char *lock_value, const char *deflt, char *buf, size_t size);
/* BATON_BARRIER: *stock for "pthread", else the spec (checked by making a
 * barrier of one) into spec; a line for BATON_VERBOSE into desc.  0 or -1. */
int pl_config_barrier(const char *value, bool *stock, char *spec, size_t size, char *desc, size_t desclen,
                      char *err, size_t errlen);
/* BATON_PROFILE_HOLD_EVERY: 1 to 65536, else 8. */
uint32_t pl_config_hold_every(const char *value);
/* BATON_PROFILE_CLOCK: "monotonic" forces the monotonic clock. */
bool pl_config_clock_monotonic(const char *value);
/* BATON_PROFILE_OUT: copied into out when it fits (false otherwise). */
bool pl_config_out_pattern(const char *value, char *out, size_t size);
/* The profile's path from BATON_PROFILE_OUT's pattern: %p is the pid, %%
 * a percent sign; cut short to what fits in size.  Returns its length. */
size_t pl_config_out_path(const char *pattern, int pid, char *path, size_t size);

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
/* Held by pl_real()'s first lookup, and across fork (init.c). */
extern baton_syslock_t pl_real_mu;
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
/* Wait for a lock whose kind offers no timed acquisition (the lock
 * servers; every other kind waits through its own timedlock): trylock,
 * backing off from 1 us up to 1 ms, until it succeeds (0) or the deadline
 * passes (ETIMEDOUT).  `try` returns 0 or EBUSY. */
int pl_timed_acquire(int (*try)(void *), void *arg, clockid_t clock, const struct timespec *abstime);

/* --- the profiler (profile.c) ------------------------------------------------- */

/* What a profiled lock is. */
typedef enum pl_prof_type {
    PL_PROF_MUTEX,
    PL_PROF_RWLOCK,
    PL_PROF_SPIN,
    PL_PROF_OMP,
    PL_PROF_CRITICAL
} pl_prof_type;


/* Non-zero when BATON_PROFILE is set (read once by pl_init_slow()). */
extern int pl_profiling;

/* The record of the lock at `addr`, created on first sight with `caller`
 * (a return address in the program) as its call site. */
pl_prof_t *pl_prof_get(const void *addr, pl_prof_type type, const void *caller);
uint64_t pl_prof_now(void); /* a cheap monotonic clock, nanoseconds */
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
/* In a forked child, after init.c reset pl_prof_mu: zero every count. */
void pl_prof_fork_child(void);

#endif
