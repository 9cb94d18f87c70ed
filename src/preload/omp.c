/* omp.c - GNU OpenMP's lock calls for libbaton-preload.so: omp_*_lock,
 * omp_*_nest_lock, GOMP_critical_start/end, GOMP_critical_name_start/end and
 * GOMP_atomic_start/end, for programs compiled with gcc -fopenmp.
 *
 * ABI.  The layouts are those of GCC's <omp.h> since GCC 4.4 (libgomp's
 * OMP_3.0 symbol versions) on Linux with 8-byte pointers: omp_lock_t is 4
 * bytes (aligned 4), omp_nest_lock_t 16 bytes (8 + sizeof(void *), aligned
 * 8).  The interposer's definitions are unversioned, so they also bind
 * references to the OMP_1.0 versions, which only binaries built with GCC
 * older than 4.4 (2009) use; their omp_nest_lock_t was 8 bytes, so such
 * binaries must not be run with a baton BATON_OMP_LOCK (their simple locks
 * would work; nest locks would overrun).  Programs compiled by clang against
 * LLVM's <omp.h> (libomp) have an 8-byte omp_nest_lock_t and are not
 * supported either (their critical sections are __kmpc_* calls, which this
 * file does not replace).  GCC's Fortran entry points (omp_set_lock_ ...)
 * call libgomp's C functions internally and are not replaced.
 *
 * Layout.  The lock state of the BATON_OMP_LOCK kind (pl_omp_class; BATON_LOCK when unset) lives in a
 * slab slot (preload.h); the OpenMP object names it:
 *
 *   omp_lock_t       0  handle   the slot's 32-bit handle, 0 = none yet
 *   omp_nest_lock_t  0  handle   as above
 *                    4  count    nesting depth (owner only), 0 when free
 *                    8  owner    the owner's token (baton_thread_token())
 *
 * The handle word holds 0 (none yet), a handle whose slot's back-pointer is
 * this lock, an in-place lock (PL_INPLACE, free, or PL_INPLACE_HELD: a lock
 * that could get no state, out of memory, for the rest of its life), or
 * anything else: garbage (never initialised, copied from a lock in use,
 * planted), possibly the handle of another lock's state, which must not be
 * touched.  Garbage reads as libgomp reads the same word, where anything
 * but 0 is held: omp_set_lock waits until the word changes (libgomp: until
 * an unset writes 0) and looks again; omp_test_lock fails; omp_unset_lock
 * makes it 0, free; omp_destroy_lock leaves it (libgomp does nothing).
 *
 * omp_init_*lock stores handle 0 and costs nothing; the state is created on
 * first use, published with one CAS (racers free theirs), like the static
 * initializers of mutex.c.  So a zero-filled lock that was never initialised
 * (non-conforming, but libgomp accepts it) works too.  Critical sections
 * keep a state pointer: one process-wide lock for all unnamed criticals, one
 * for GOMP_atomic_start/end (what gcc emits for atomics it cannot do with
 * one instruction), and one per named critical in the pointer-sized,
 * zero-initialised slot the compiler emits for each name
 * (.gomp_critical_user_<name>).  Those states live as long as the process.
 *
 * Ownership.  OpenMP says tasks own locks; baton's owner is the thread.
 * libgomp runs every task tied to the thread that started it, so a lock is
 * released on the thread that took it, which is all the kinds need.  The
 * difference shows only for a nest lock held across a task scheduling point:
 * another task run by the same thread that sets it nests here (count + 1),
 * where libgomp would block that task.
 *
 * Misuse (undefined in OpenMP), made harmless:
 *   - unset of a lock that is not locked (or never was): ignored, as libgomp
 *     ignores it.  Simple locks cannot tell who holds them (4 bytes leave no
 *     room for an owner): a thread that unsets a lock another thread holds
 *     releases it, as libgomp does (the kind's release op).
 *   - unset of a nest lock by a thread that does not own it: ignored.
 *   - destroy of a held lock: ignored (the lock stays usable and its slot is
 *     not recycled), with a message under BATON_VERBOSE=1; libgomp's destroy
 *     does nothing either.
 *   - nesting deeper than INT_MAX: omp_test_nest_lock answers 0,
 *     omp_set_nest_lock stops the program with a message.
 *   - no memory for a lock state (2^28 live locks, RLIMIT_AS, a failing
 *     mmap): the lock becomes an in-place lock in its handle word (libgomp's
 *     own cannot share the word with a handle), a critical section one in a
 *     small static pool (64 of them; past that the program stops with a
 *     message: these calls have no way to report an error).
 *
 * Stock mode (BATON_OMP_LOCK, or BATON_LOCK, =pthread) forwards every call to the next
 * definition, libgomp's, looked up by name on first use (libgomp is loaded
 * after the preload).  libgomp does not implement omp_init_lock_with_hint
 * (GCC 12's <omp.h> declares it, libgomp.so.1 has no such symbol); hints are
 * advisory, so stock mode falls back to omp_init_lock, and baton mode
 * ignores them (every lock is of the configured kind).
 *
 * Profiling (BATON_PROFILE): omp locks are PL_PROF_OMP records named by the
 * lock's address, critical sections and atomics PL_PROF_CRITICAL records
 * named by their slot; a nest lock counts its outermost acquisition and
 * release only.
 */
#include "preload.h"
#include "../base/thread.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/* GCC's omp_lock_t and omp_nest_lock_t as this file sees them (the program's
 * <omp.h> declares them as opaque byte arrays of the same size and
 * alignment; <omp.h> itself comes with gcc only, so it is not included). */
typedef struct pl_omp_lock {
    _Atomic uint32_t handle;
} pl_omp_lock_t;

typedef struct pl_omp_nest_lock {
    _Atomic uint32_t handle;
    uint32_t count;          /* written by the owner only */
    _Atomic uintptr_t owner; /* 0 when free */
} pl_omp_nest_lock_t;

_Static_assert(sizeof(pl_omp_lock_t) == 4 && _Alignof(pl_omp_lock_t) == 4, "GCC's omp_lock_t");
_Static_assert(sizeof(pl_omp_nest_lock_t) == 8 + sizeof(void *) && _Alignof(pl_omp_nest_lock_t) == 8,
               "GCC's omp_nest_lock_t on LP64 Linux");

/* Prototypes of what this file exports (the program's <omp.h> declares the
 * omp_* ones with omp_lock_t * and omp_nest_lock_t *: the same ABI). */
PRELOAD_API void omp_init_lock(pl_omp_lock_t *lock);
PRELOAD_API void omp_init_lock_with_hint(pl_omp_lock_t *lock, int hint);
PRELOAD_API void omp_destroy_lock(pl_omp_lock_t *lock);
PRELOAD_API void omp_set_lock(pl_omp_lock_t *lock);
PRELOAD_API void omp_unset_lock(pl_omp_lock_t *lock);
PRELOAD_API int omp_test_lock(pl_omp_lock_t *lock);
PRELOAD_API void omp_init_nest_lock(pl_omp_nest_lock_t *lock);
PRELOAD_API void omp_init_nest_lock_with_hint(pl_omp_nest_lock_t *lock, int hint);
PRELOAD_API void omp_destroy_nest_lock(pl_omp_nest_lock_t *lock);
PRELOAD_API void omp_set_nest_lock(pl_omp_nest_lock_t *lock);
PRELOAD_API void omp_unset_nest_lock(pl_omp_nest_lock_t *lock);
PRELOAD_API int omp_test_nest_lock(pl_omp_nest_lock_t *lock);
PRELOAD_API void GOMP_critical_start(void);
PRELOAD_API void GOMP_critical_end(void);
PRELOAD_API void GOMP_critical_name_start(void **pptr);
PRELOAD_API void GOMP_critical_name_end(void **pptr);
PRELOAD_API void GOMP_atomic_start(void);
PRELOAD_API void GOMP_atomic_end(void);

/* --- stock mode: libgomp's own functions ------------------------------------------ */

enum {
    S_INIT,
    S_INIT_HINT,
    S_DESTROY,
    S_SET,
    S_UNSET,
    S_TEST,
    S_NINIT,
    S_NINIT_HINT,
    S_NDESTROY,
    S_NSET,
    S_NUNSET,
    S_NTEST,
    S_CSTART,
    S_CEND,
    S_CNSTART,
    S_CNEND,
    S_ASTART,
    S_AEND,
    S_COUNT
};

static const char *const stock_names[S_COUNT] = {
    "omp_init_lock",
    "omp_init_lock_with_hint",
    "omp_destroy_lock",
    "omp_set_lock",
    "omp_unset_lock",
    "omp_test_lock",
    "omp_init_nest_lock",
    "omp_init_nest_lock_with_hint",
    "omp_destroy_nest_lock",
    "omp_set_nest_lock",
    "omp_unset_nest_lock",
    "omp_test_nest_lock",
    "GOMP_critical_start",
    "GOMP_critical_end",
    "GOMP_critical_name_start",
    "GOMP_critical_name_end",
    "GOMP_atomic_start",
    "GOMP_atomic_end",
};

typedef void (*pl_fn)(void); /* any function; cast to its type to call it */
static _Atomic(pl_fn) stock_fns[S_COUNT];

/* libgomp's definition of function `i`, looked up once. */
__attribute__((noinline)) static pl_fn stock_lookup(int i)
{
    void *p = pl_next_symbol(stock_names[i]);
    if (p == NULL && (i == S_INIT_HINT || i == S_NINIT_HINT))
        return stock_lookup(i == S_INIT_HINT ? S_INIT : S_NINIT); /* hints are advisory */
    if (p == NULL)
        pl_die("BATON_LOCK=pthread: cannot find GNU OpenMP's %s (is the program linked with libgomp?)",
               stock_names[i]);
    pl_fn f;
    memcpy(&f, &p, sizeof f); /* dlsym's object pointer to a function pointer */
    /* Release: pairs with the acquire in stock(); every thread that looks
     * the name up stores the same value. */
    baton_store(&stock_fns[i], f, memory_order_release);
    return f;
}

static inline pl_fn stock(int i)
{
    /* Acquire: pairs with the release in stock_lookup(). */
    pl_fn f = baton_load(&stock_fns[i], memory_order_acquire);
    return BATON_LIKELY(f != NULL) ? f : stock_lookup(i);
}

/* libgomp's function i, as the type of ours, `fn`, that it stands for. */
#define STOCK(i, fn) ((__typeof__(&fn))stock(i))

/* `whose` (PL_ENTER) for every omp lock and critical section: PL_FORWARD
 * when BATON_LOCK=pthread (libgomp's own), else 0.  Also configures the
 * interposer on first use. */
static inline int stock_mode(void) { return pl_stock(&pl_omp_class); }

/* --- lock states ------------------------------------------------------------------- */

__attribute__((noreturn, cold)) static void no_state(const char *what, int err)
{
    pl_die("%s: cannot create a %s lock (error %d%s)", what, pl_omp_class.spec, err,
           err == ENOMEM ? ": out of memory" : "");
}

static inline bool in_place(uint32_t v) { return v == PL_INPLACE || v == PL_INPLACE_HELD; }

/* What the handle word `hw` of the lock at `owner` names for a set or a
 * test: the state serving it, adopted where there is none (the word is 0;
 * an in-place lock when none can be made);
 * else NULL, with the word's value in *vp: an in-place lock, or garbage
 * that reads as held. */
__attribute__((noinline)) static void *word_state_slow(_Atomic uint32_t *hw, const void *owner, uint32_t *vp)
{
    for (;;) {
        /* Acquire: pairs with the release CAS in pl_adopt(). */
        uint32_t v = baton_load(hw, memory_order_acquire);
        void *s = pl_state_lookup(&pl_omp_class, v, owner);
        if (s != NULL)
            return s;
        if (v != 0) {
            *vp = v;
            return NULL;
        }
        (void)pl_adopt_or_inplace(&pl_omp_class, hw, owner, 0u);
    }
}

static inline void *word_state(_Atomic uint32_t *hw, const void *owner, uint32_t *vp)
{
    /* Acquire: pairs with the release CAS in pl_adopt(). */
    void *s = pl_state_lookup(&pl_omp_class, baton_load(hw, memory_order_acquire), owner);
    return BATON_LIKELY(s != NULL) ? s : word_state_slow(hw, owner, vp);
}

/* For a set: as word_state(), but garbage is waited on until the word
 * changes (libgomp waits for an unset); NULL means the in-place lock. */
static inline void *set_state(_Atomic uint32_t *hw, const void *owner)
{
    for (;;) {
        uint32_t v = 0;
        void *s = word_state(hw, owner, &v);
        if (BATON_LIKELY(s != NULL) || in_place(v))
            return s;
        pl_wait_change(hw, v);
    }
}

/* A critical section's slot holds a state, or, when none could be had, the
 * address of an in-place word from this pool with its low bit set. */
#define CRITICAL_POOL 64
static _Atomic uint32_t critical_words[CRITICAL_POOL];
static _Atomic unsigned critical_used;

static inline _Atomic uint32_t *in_place_word(void *s)
{
    return ((uintptr_t)s & 1u) ? (_Atomic uint32_t *)((uintptr_t)s - 1u) : NULL;
}

/* The state for a critical section's pointer slot, created (and published
 * with a CAS from NULL) on first use. */
__attribute__((noinline)) static void *create_in_slot(_Atomic(void *) *slot, const char *what)
{
    pl_class_t *c = &pl_omp_class;
    uint32_t h = 0;
    int err = 0;
    void *s = pl_state_new(c, (const void *)slot, &h, &err);
    if (s == NULL) {
        /* Relaxed: a ticket; the word is published by the CAS below. */
        unsigned i = baton_fetch_add(&critical_used, 1u, memory_order_relaxed);
        if (i >= CRITICAL_POOL)
            no_state(what, err);
        pl_no_state(c, err, "critical section is an in-place lock for the rest of the process");
        baton_store(&critical_words[i], PL_INPLACE, memory_order_relaxed); /* published below */
        s = (void *)((uintptr_t)&critical_words[i] | 1u);
    }
    void *expected = NULL;
    /* Release: publishes the initialised state (or in-place word); pairs
     * with the acquire in slot_state().  Acquire on failure: the winner's
     * state is ready. */
    if (baton_cas(slot, &expected, s, memory_order_acq_rel, memory_order_acquire))
        return s;
    if (h != 0)
        (void)pl_state_free(c, s, h);
    return expected;
}

static inline void *slot_state(_Atomic(void *) *slot, const char *what)
{
    /* Acquire: pairs with the release CAS in create_in_slot(). */
    void *s = baton_load(slot, memory_order_acquire);
    return BATON_LIKELY(s != NULL) ? s : create_in_slot(slot, what);
}

/* --- acquiring and releasing, profiled when asked ------------------------------------
 * `s` is the state, or NULL for the in-place lock `w`. */

static inline int lock_try(void *s, _Atomic uint32_t *w)
{
    return s != NULL ? pl_omp_class.kind->trylock(s) : pl_inplace_trylock(w);
}

static inline void lock_wait(void *s, _Atomic uint32_t *w)
{
    if (s != NULL)
        pl_omp_class.kind->lock(s);
    else
        pl_inplace_lock(w);
}

/* The profiler's record of the lock at `addr`; `cache`, where there is one,
 * keeps it (relaxed: racers store the same pointer, found again by address). */
static pl_prof_t *prof_of(const void *addr, pl_prof_type type, _Atomic(pl_prof_t *) *cache,
                          const void *caller)
{
    pl_prof_t *p = cache ? baton_load(cache, memory_order_relaxed) : NULL;
    if (p == NULL) {
        p = pl_prof_get(addr, type, caller);
        if (cache)
            baton_store(cache, p, memory_order_relaxed);
    }
    return p;
}

__attribute__((noinline)) static void acquire_profiled(void *s, _Atomic uint32_t *w, const void *addr,
                                                       pl_prof_type type, _Atomic(pl_prof_t *) *cache,
                                                       const void *caller)
{
    pl_prof_t *p = prof_of(addr, type, cache, caller);
    if (lock_try(s, w) == 0) {
        pl_prof_acquired(p, 0, false, false);
        return;
    }
    uint64_t t0 = pl_prof_now();
    lock_wait(s, w);
    pl_prof_acquired(p, pl_prof_now() - t0, true, false);
}

static inline void acquire(void *s, _Atomic uint32_t *w, const void *addr, pl_prof_type type,
                           _Atomic(pl_prof_t *) *cache, const void *caller)
{
    if (BATON_LIKELY(!pl_profiling))
        lock_wait(s, w);
    else
        acquire_profiled(s, w, addr, type, cache, caller);
}

static inline int try_acquire(void *s, _Atomic uint32_t *w, const void *addr, pl_prof_type type,
                              const void *caller)
{
    int rc = lock_try(s, w);
    if (BATON_UNLIKELY(pl_profiling)) {
        pl_prof_t *p = prof_of(addr, type, NULL, caller);
        if (rc == 0)
            pl_prof_acquired(p, 0, false, false);
        else
            pl_prof_trylock_failed(p);
    }
    return rc;
}

/* Release a lock the caller holds (the profiler sees the release just
 * before it happens, so the hold time ends there). */
static inline void release(void *s, _Atomic uint32_t *w, const void *addr, pl_prof_type type,
                           _Atomic(pl_prof_t *) *cache)
{
    if (BATON_UNLIKELY(pl_profiling))
        pl_prof_released(prof_of(addr, type, cache, NULL));
    if (s == NULL)
        pl_inplace_unlock(w);
    else
        /* Whatever thread calls (see the top of this file): the kind's
         * release, a no-op on a free lock. */
        (void)pl_omp_class.release(s);
}

/* A critical section's slot (the profiler knows it by the slot's address):
 * acquire whatever it holds, made on first use by `what`; release it, if
 * anything was ever made. */
static inline void critical_acquire(_Atomic(void *) *slot, const char *what, _Atomic(pl_prof_t *) *cache,
                                    const void *caller)
{
    void *s = slot_state(slot, what);
    _Atomic uint32_t *w = in_place_word(s);
    acquire(w != NULL ? NULL : s, w, slot, PL_PROF_CRITICAL, cache, caller);
}

static inline void critical_release(_Atomic(void *) *slot, _Atomic(pl_prof_t *) *cache)
{
    /* Acquire: pairs with the release CAS in create_in_slot(). */
    void *s = baton_load(slot, memory_order_acquire);
    if (BATON_UNLIKELY(s == NULL))
        return;
    _Atomic uint32_t *w = in_place_word(s);
    release(w != NULL ? NULL : s, w, slot, PL_PROF_CRITICAL, cache);
}

/* Destroy what a handle word names, unless it is held.  Garbage is left as
 * it is (libgomp's destroy does nothing). */
static void destroy_by_handle(_Atomic uint32_t *hw, const void *addr, const char *what)
{
    if (BATON_UNLIKELY(pl_profiling))
        pl_prof_destroyed(addr);
    /* Acquire: pairs with the release CAS in pl_adopt(). */
    uint32_t h = baton_load(hw, memory_order_acquire);
    void *s = pl_state_lookup(&pl_omp_class, h, addr);
    if (s == NULL && h != PL_INPLACE) {
        if (h == PL_INPLACE_HELD)
            pl_log("%s(%p): the lock is held; left as it is", what, addr);
        return; /* never used, held in place, or garbage */
    }
    if (s != NULL && pl_state_free(&pl_omp_class, s, h) != 0) {
        pl_log("%s(%p): the lock is held; left as it is", what, addr);
        return;
    }
    /* Relaxed: the program orders destroy after every use and before any
     * re-initialisation. */
    baton_store(hw, 0u, memory_order_relaxed);
}

/* Unset what a handle word names: the state (if it is held), the in-place
 * lock, or garbage, which becomes 0 (libgomp's unset writes 0). */
static void unset_by_handle(_Atomic uint32_t *hw, const void *addr)
{
    /* Acquire: pairs with the release CAS in pl_adopt() (a thread that set
     * the lock already saw it; this only matters for misuse). */
    uint32_t h = baton_load(hw, memory_order_acquire);
    void *s = pl_state_lookup(&pl_omp_class, h, addr);
    if (BATON_UNLIKELY(s == NULL)) {
        if (h == PL_INPLACE_HELD)
            release(NULL, hw, addr, PL_PROF_OMP, NULL);
        else if (h != 0 && h != PL_INPLACE)
            /* Garbage: free from now on.  A CAS, so that a racer's adoption
             * is not undone; relaxed: nothing is published. */
            (void)baton_cas(hw, &h, 0u, memory_order_relaxed, memory_order_relaxed);
        return; /* 0: never locked (misuse, ignored) */
    }
    /* Unlocking a free lock is ignored, as libgomp does: the kind's release
     * leaves a free lock alone by itself; only the profiler, which must not
     * count a release that does not happen, looks first.  The caller holds
     * the lock in every correct program, so the look cannot race with a
     * legitimate release. */
    if (BATON_UNLIKELY(pl_profiling) && !pl_omp_class.kind->is_locked(s))
        return;
    release(s, NULL, addr, PL_PROF_OMP, NULL);
}

/* --- simple locks ------------------------------------------------------------------- */

PRELOAD_API void omp_init_lock(pl_omp_lock_t *lock)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_INIT, omp_init_lock)(lock));
    /* Relaxed: initialisation precedes every use, which the program orders
     * (sharing a lock with other threads needs synchronisation anyway). */
    baton_store(&lock->handle, 0u, memory_order_relaxed);
}

PRELOAD_API void omp_init_lock_with_hint(pl_omp_lock_t *lock, int hint)
{
    if (stock_mode()) {
        pl_fn f = stock(S_INIT_HINT);
        if (f == stock(S_INIT))
            ((void (*)(pl_omp_lock_t *))f)(lock);
        else
            ((void (*)(pl_omp_lock_t *, int))f)(lock, hint);
        return;
    }
    (void)hint;                                           /* advisory: every lock is of the configured kind */
    baton_store(&lock->handle, 0u, memory_order_relaxed); /* as in omp_init_lock() */
}

PRELOAD_API void omp_destroy_lock(pl_omp_lock_t *lock)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_DESTROY, omp_destroy_lock)(lock));
    destroy_by_handle(&lock->handle, lock, "omp_destroy_lock");
}

PRELOAD_API void omp_set_lock(pl_omp_lock_t *lock)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_SET, omp_set_lock)(lock));
    void *s = set_state(&lock->handle, lock);
    acquire(s, &lock->handle, lock, PL_PROF_OMP, NULL, __builtin_return_address(0));
}

PRELOAD_API void omp_unset_lock(pl_omp_lock_t *lock)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_UNSET, omp_unset_lock)(lock));
    unset_by_handle(&lock->handle, lock);
}

PRELOAD_API int omp_test_lock(pl_omp_lock_t *lock)
{
    PL_ENTER(stock_mode(), STOCK(S_TEST, omp_test_lock)(lock));
    uint32_t v = 0;
    void *s = word_state(&lock->handle, lock, &v);
    if (BATON_UNLIKELY(s == NULL && !in_place(v)))
        return 0; /* garbage: held */
    return try_acquire(s, &lock->handle, lock, PL_PROF_OMP, __builtin_return_address(0)) == 0;
}

/* --- nest locks --------------------------------------------------------------------- */

static void nest_init(pl_omp_nest_lock_t *lock)
{
    /* Relaxed: as in omp_init_lock(). */
    baton_store(&lock->handle, 0u, memory_order_relaxed);
    lock->count = 0;
    baton_store(&lock->owner, (uintptr_t)0, memory_order_relaxed);
}

PRELOAD_API void omp_init_nest_lock(pl_omp_nest_lock_t *lock)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_NINIT, omp_init_nest_lock)(lock));
    nest_init(lock);
}

PRELOAD_API void omp_init_nest_lock_with_hint(pl_omp_nest_lock_t *lock, int hint)
{
    if (stock_mode()) {
        pl_fn f = stock(S_NINIT_HINT);
        if (f == stock(S_NINIT))
            ((void (*)(pl_omp_nest_lock_t *))f)(lock);
        else
            ((void (*)(pl_omp_nest_lock_t *, int))f)(lock, hint);
        return;
    }
    (void)hint; /* advisory */
    nest_init(lock);
}

PRELOAD_API void omp_destroy_nest_lock(pl_omp_nest_lock_t *lock)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_NDESTROY, omp_destroy_nest_lock)(lock));
    /* Relaxed: the program orders destroy after every use. */
    if (baton_load(&lock->owner, memory_order_relaxed) != 0) {
        pl_log("omp_destroy_nest_lock(%p): the lock is held; left as it is", (void *)lock);
        return;
    }
    destroy_by_handle(&lock->handle, lock, "omp_destroy_nest_lock");
}

/* The nesting of a lock the caller owns goes one deeper; false if it cannot
 * (INT_MAX). */
static inline bool nest_deeper(pl_omp_nest_lock_t *lock)
{
    if (BATON_UNLIKELY(lock->count >= (uint32_t)INT_MAX))
        return false;
    lock->count++;
    return true;
}

PRELOAD_API void omp_set_nest_lock(pl_omp_nest_lock_t *lock)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_NSET, omp_set_nest_lock)(lock));
    uintptr_t self = baton_thread_token();
    /* Relaxed: only the owner stores its own token there, so a thread finds
     * its token only if it wrote it itself (and count is then its own). */
    if (baton_load(&lock->owner, memory_order_relaxed) == self) {
        if (!nest_deeper(lock))
            pl_die("omp_set_nest_lock(%p): nested more than %d times", (void *)lock, INT_MAX);
        return;
    }
    void *s = set_state(&lock->handle, lock);
    acquire(s, &lock->handle, lock, PL_PROF_OMP, NULL, __builtin_return_address(0));
    baton_store(&lock->owner, self, memory_order_relaxed); /* see above; the lock orders the rest */
    lock->count = 1;
}

PRELOAD_API void omp_unset_nest_lock(pl_omp_nest_lock_t *lock)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_NUNSET, omp_unset_nest_lock)(lock));
    /* Relaxed: see omp_set_nest_lock(). */
    if (BATON_UNLIKELY(baton_load(&lock->owner, memory_order_relaxed) != baton_thread_token()))
        return; /* not ours: misuse, ignored */
    if (--lock->count > 0)
        return;
    /* Relaxed: we set the lock, so we already saw the handle's publication
     * (the acquire in word_state()). */
    void *s = pl_state_lookup(&pl_omp_class, baton_load(&lock->handle, memory_order_relaxed), lock);
    /* Clear the owner before the release: afterwards the lock is not ours
     * to touch (another thread may destroy and free it at once). */
    baton_store(&lock->owner, (uintptr_t)0, memory_order_relaxed);
    release(s, &lock->handle, lock, PL_PROF_OMP, NULL);
}

PRELOAD_API int omp_test_nest_lock(pl_omp_nest_lock_t *lock)
{
    PL_ENTER(stock_mode(), STOCK(S_NTEST, omp_test_nest_lock)(lock));
    uintptr_t self = baton_thread_token();
    /* Relaxed: see omp_set_nest_lock(). */
    if (baton_load(&lock->owner, memory_order_relaxed) == self)
        return nest_deeper(lock) ? (int)lock->count : 0;
    uint32_t v = 0;
    void *s = word_state(&lock->handle, lock, &v);
    if (BATON_UNLIKELY(s == NULL && !in_place(v)))
        return 0; /* garbage: held */
    if (try_acquire(s, &lock->handle, lock, PL_PROF_OMP, __builtin_return_address(0)) != 0)
        return 0;
    baton_store(&lock->owner, self, memory_order_relaxed); /* see omp_set_nest_lock() */
    lock->count = 1;
    return 1;
}

/* --- critical sections ---------------------------------------------------------------- */

/* The unnamed critical section's lock and GOMP_atomic_start's, created on
 * first use; their profiler records (one lookup each, then cached). */
static _Atomic(void *) critical_lock, atomic_lock;
static _Atomic(pl_prof_t *) critical_prof, atomic_prof;

PRELOAD_API void GOMP_critical_start(void)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_CSTART, GOMP_critical_start)());
    critical_acquire(&critical_lock, "GOMP_critical_start", &critical_prof, __builtin_return_address(0));
}

PRELOAD_API void GOMP_critical_end(void)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_CEND, GOMP_critical_end)());
    critical_release(&critical_lock, &critical_prof);
}

/* The compiler's slot for a named critical section is a pointer-sized,
 * zero-initialised common symbol shared by every object of the program: we
 * keep the state's pointer there. */
PRELOAD_API void GOMP_critical_name_start(void **pptr)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_CNSTART, GOMP_critical_name_start)(pptr));
    critical_acquire((_Atomic(void *) *)pptr, "GOMP_critical_name_start", NULL, __builtin_return_address(0));
}

PRELOAD_API void GOMP_critical_name_end(void **pptr)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_CNEND, GOMP_critical_name_end)(pptr));
    critical_release((_Atomic(void *) *)pptr, NULL);
}

PRELOAD_API void GOMP_atomic_start(void)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_ASTART, GOMP_atomic_start)());
    critical_acquire(&atomic_lock, "GOMP_atomic_start", &atomic_prof, __builtin_return_address(0));
}

PRELOAD_API void GOMP_atomic_end(void)
{
    PL_ENTER_VOID(stock_mode(), STOCK(S_AEND, GOMP_atomic_end)());
    critical_release(&atomic_lock, &atomic_prof);
}
