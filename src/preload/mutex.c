/* mutex.c - pthread_mutex_* for libbaton-preload.so.
 *
 * Layout.  baton's mutex lives in the 40 bytes of the program's
 * pthread_mutex_t:
 *
 *   0   (glibc)  glibc's __lock and __count: 0 in every baton mutex, so that
 *                one made glibc's (below) starts free
 *   8   owner    the owner's token (ERRORCHECK and RECURSIVE, and every type
 *                in a debug build), 0 when free
 *   16  type     glibc's __kind position: PTHREAD_MUTEX_INITIALIZER and the
 *                _NP initializers put the type here; baton ORs in PL_MARK
 *                once it has adopted the mutex
 *   20  count    recursion depth beyond the first lock (owner only)
 *   24  handle   the slab handle of the lock state of the BATON_LOCK kind
 *                (preload.h), created on first use; glibc's __list, which
 *                glibc touches in robust mutexes only
 *   32  prof     the profiler's record (BATON_PROFILE only)
 *
 * The handle word:
 *   0                 no state yet (zeroed memory, an initializer, init,
 *                     destroy): the next lock adopts the mutex
 *   a handle          of a state whose slot's back-pointer is this mutex
 *   PL_HANDLE_FWD     glibc's own for the rest of its life (no memory was
 *                     left for a state; or garbage, below): forwarded
 *   PL_HANDLE_PENDING being made glibc's by another thread: wait
 *   anything else     not this mutex's: a copy of a mutex in use, memory
 *                     reused without destroy, or garbage.  It is what glibc
 *                     would read at offset 0 that decides: 0 (every copy of
 *                     a baton mutex) reads free, and the mutex is adopted
 *                     afresh (glibc: a copy of a free mutex is another free
 *                     mutex); anything else reads held, and the mutex is
 *                     forwarded to glibc for good, which does with those
 *                     bytes what it always does.
 *
 * Why the state is not in the 40 bytes themselves: the kinds' states are
 * cache-line aligned (128 bytes: relay, ttas, mcs ...), and a queue lock
 * needs room the pthread object does not have.  The side state costs the
 * kind's size (`baton_preload_info().bytes_per_lock`, printed at exit with
 * BATON_VERBOSE=1) per mutex that was ever locked; a mutex that is
 * initialised but never locked costs nothing, and destroy recycles the slot.
 *
 * Static initializers are adopted on first use: whoever gets there first
 * creates a state and publishes its handle with one CAS; racing threads free
 * theirs and use the winner's.  When no state can be had (out of memory) the
 * mutex becomes glibc's own, in place, for its whole life: its handle word
 * is claimed (PENDING), the fields glibc reads are made those of a fresh
 * glibc mutex of the same type, and the word is set to FWD.  Robust, process-shared and priority mutexes
 * (attributes no baton kind can honour) are created by glibc's own
 * pthread_mutex_init and forwarded, recognised by glibc's flag bits in the
 * type word and the absence of PL_MARK.
 *
 * Unlock never touches the pthread_mutex_t after the kind's release, so a
 * thread may destroy and free it the moment it can lock it.  The kinds'
 * slots are never unmapped, so whatever a kind's unlock does after its
 * releasing store (a futex wake) lands in memory that stays mapped.
 *
 * Error codes are glibc's: ERRORCHECK relock EDEADLK, unlock by a non-owner
 * or of an unlocked mutex EPERM, trylock of a held one EBUSY (also by its
 * ERRORCHECK owner), RECURSIVE counts up to UINT32_MAX (then EAGAIN),
 * timedlock EINVAL for a bad tv_nsec only when it would block, destroy of a
 * locked mutex EBUSY.  A NORMAL mutex is not checked (glibc does not
 * either): any thread may unlock it, as a program may hand a locked mutex
 * to another thread (tests/preload/handoff.c), through the kind's release
 * op, which every kind with lock/unlock has (a queue kind releases with
 * the holder's node and adopts it; a server kind posts the release from
 * the calling thread); an unlock of a free NORMAL mutex returns 0 and
 * changes nothing, as under glibc.  Except in a debug build (BATON_DEBUG),
 * where every mutex is checked like an ERRORCHECK one.
 */
#include "preload.h"
#include "../base/thread.h"

#include <errno.h>
#include <string.h>

#define PL_MARK 0x40000000u
/* glibc's __kind flags of mutexes only glibc can implement. */
#define GLIBC_FOREIGN (16u /* robust */ | 32u /* PI */ | 64u /* PP */ | 128u /* pshared */)
#define TYPE_MASK 3u

typedef struct pl_mutex {
    _Atomic uint64_t glibc_lock; /* glibc's __lock and __count */
    _Atomic uintptr_t owner;
    _Atomic uint32_t type;
    uint32_t count;
    _Atomic uint32_t handle;
    uint32_t spare;
    _Atomic(pl_prof_t *) prof;
} pl_mutex_t;

_Static_assert(sizeof(pl_mutex_t) <= sizeof(pthread_mutex_t), "baton's mutex fits in pthread_mutex_t");
_Static_assert(offsetof(pl_mutex_t, type) == offsetof(pthread_mutex_t, __data.__kind),
               "the type word sits where glibc's initializers put __kind");
_Static_assert(offsetof(pl_mutex_t, glibc_lock) == offsetof(pthread_mutex_t, __data.__lock),
               "glibc's __lock");
_Static_assert(offsetof(pl_mutex_t, handle) == offsetof(pthread_mutex_t, __data.__list),
               "the handle sits in glibc's robust list links");
_Static_assert(_Alignof(pthread_mutex_t) >= _Alignof(pl_mutex_t), "alignment");

#ifdef BATON_DEBUG
#define CHECK_ALL 1
#else
#define CHECK_ALL 0
#endif

/* Does a type word (adopted) need owner checks? */
static inline bool checked(uint32_t t)
{
    return CHECK_ALL || (t & TYPE_MASK) == PTHREAD_MUTEX_ERRORCHECK ||
           (t & TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE;
}

/* PTHREAD_MUTEX_ADAPTIVE_NP is a spinning hint: a NORMAL mutex here. */
static inline uint32_t adopt_type(uint32_t glibc_kind)
{
    uint32_t t = glibc_kind & TYPE_MASK;
    return PL_MARK | (t == PTHREAD_MUTEX_ADAPTIVE_NP ? (uint32_t)PTHREAD_MUTEX_NORMAL : t);
}

static inline bool foreign(uint32_t t) { return !(t & PL_MARK) && (t & GLIBC_FOREIGN) != 0; }

/* No state can be made: make the mutex glibc's own for the rest of its life.  The
 * handle word goes from `from` to PENDING while the fields glibc reads are
 * made those of a fresh glibc mutex of the same type (its __lock is 0
 * already), then to FWD. */
__attribute__((noinline, cold)) static void fall_back(const void *owner, uint32_t from)
{
    pl_mutex_t *m = (pl_mutex_t *)(uintptr_t)owner;
    /* Relaxed: the handle's publication below orders the fields. */
    if (!baton_cas(&m->handle, &from, PL_HANDLE_PENDING, memory_order_relaxed, memory_order_relaxed))
        return; /* another thread adopted it or made it glibc's */
    baton_store(&m->type, baton_load(&m->type, memory_order_relaxed) & ~PL_MARK, memory_order_relaxed);
    baton_store(&m->owner, (uintptr_t)0, memory_order_relaxed);
    m->count = 0;
    /* Release: pairs with the acquire loads of the handle in pl_handle_state(). */
    baton_store(&m->handle, PL_HANDLE_FWD, memory_order_release);
}

/* `whose` (PL_ENTER) for a mutex.  Configure, then: PL_FORWARD for
 * glibc's mutexes (stock class; robust,
 * process-shared and priority ones; those made glibc's), else the state its
 * handle word names (pl_handle_state(): 0 with *sp set, or PL_NO_STATE
 * when not `create`).  A state found here marks the type adopted
 * (every thread stores the same value; no fall-back can follow a handle). */
static int resolve(pl_mutex_t *m, void **sp, bool create)
{
    pl_init();
    uint32_t t = baton_load(&m->type, memory_order_relaxed);
    if (pl_mutex_class.stock || foreign(t))
        return PL_FORWARD;
    int rc = pl_handle_state(&pl_mutex_class, &m->handle, m, &m->glibc_lock, &m->prof, create, fall_back, sp);
    if (rc == 0 && !(t & PL_MARK))
        /* Relaxed: the fast paths test the mark and then the handle, which
         * they load with acquire. */
        baton_store(&m->type, adopt_type(t), memory_order_relaxed);
    return rc;
}

/* The fast paths' test: an adopted NORMAL mutex whose handle names a state
 * serving it; else NULL. */
static inline void *fast_state(pl_mutex_t *m)
{
    /* Relaxed type: the mark is stored after the handle is published, and a
     * thread that sees it before the handle finds no state and takes the
     * slow path.  Acquire: pairs with the release CAS in adopt(). */
    if (CHECK_ALL || baton_load(&m->type, memory_order_relaxed) != PL_MARK)
        return NULL;
    return pl_state_lookup(&pl_mutex_class, baton_load(&m->handle, memory_order_acquire), m);
}

static pl_prof_t *prof_of(pl_mutex_t *m, const void *caller)
{
    /* Relaxed: the record is found again by address if two threads race
     * here; both store the same pointer. */
    pl_prof_t *p = baton_load(&m->prof, memory_order_relaxed);
    if (p == NULL) {
        p = pl_prof_get(m, PL_PROF_MUTEX, caller);
        baton_store(&m->prof, p, memory_order_relaxed);
        /* Acquire: pairs with the release CAS in adopt(). */
        void *s = pl_state_lookup(&pl_mutex_class, baton_load(&m->handle, memory_order_acquire), m);
        if (s != NULL && !pl_mutex_class.stock)
            pl_prof_bind(p, pl_mutex_class.kind, s);
    }
    return p;
}

/* acquire() while profiling: out of line, so that the entry points'
 * common path builds no frame. */
__attribute__((noinline)) static void acquire_profiled(pl_mutex_t *m, void *s, const void *caller)
{
    const baton_kind_t *k = pl_mutex_class.kind;
    pl_prof_t *p = prof_of(m, caller);
    if (k->trylock(s) == 0) {
        pl_prof_acquired(p, 0, false, false);
        return;
    }
    uint64_t t0 = pl_prof_now();
    k->lock(s);
    pl_prof_acquired(p, pl_prof_now() - t0, true, false);
}

/* Acquire an adopted mutex's state `s`, profiled when asked. */
static inline void acquire(pl_mutex_t *m, void *s, const void *caller)
{
    if (BATON_LIKELY(!pl_profiling)) {
        pl_mutex_class.kind->lock(s);
        return;
    }
    acquire_profiled(m, s, caller);
}

static inline int try_acquire(pl_mutex_t *m, void *s, const void *caller)
{
    int rc = pl_mutex_class.kind->trylock(s);
    if (BATON_UNLIKELY(pl_profiling)) {
        pl_prof_t *p = prof_of(m, caller);
        if (rc == 0)
            pl_prof_acquired(p, 0, false, false);
        else
            pl_prof_trylock_failed(p);
    }
    return rc;
}

/* Unlock: for a NORMAL mutex whatever thread calls, as glibc allows, where
 * the kind can (its release op); checked types reach here from the owner. */
/* release() while profiling: out of line, release included, so that the
 * common path keeps nothing across a call. */
__attribute__((noinline)) static int release_profiled(pl_mutex_t *m, void *s)
{
    pl_prof_released(prof_of(m, NULL));
    return pl_mutex_class.release(s);
}

static inline int release(pl_mutex_t *m, void *s)
{
    if (BATON_UNLIKELY(pl_profiling))
        return release_profiled(m, s);
    return pl_mutex_class.release(s);
}

/* --- glibc's own mutexes (stock mode, robust, pshared, priority) -------------
 * Forwarded, and profiled the same way when BATON_PROFILE is set (by address:
 * glibc's layout has no room for the record), so that `baton profile` also
 * profiles a program's stock locks (BATON_LOCK=pthread). */

static int fwd_lock(pthread_mutex_t *pm, const void *caller)
{
    const pl_real_t *r = pl_real();
    if (BATON_LIKELY(!pl_profiling))
        return r->mutex_lock(pm);
    pl_prof_t *p = pl_prof_get(pm, PL_PROF_MUTEX, caller);
    int rc = r->mutex_trylock(pm);
    if (rc != EBUSY) {
        if (rc == 0 || rc == EOWNERDEAD)
            pl_prof_acquired(p, 0, false, false);
        return rc;
    }
    uint64_t t0 = pl_prof_now();
    rc = r->mutex_lock(pm);
    if (rc == 0 || rc == EOWNERDEAD)
        pl_prof_acquired(p, pl_prof_now() - t0, true, false);
    return rc;
}

static int fwd_trylock(pthread_mutex_t *pm, const void *caller)
{
    int rc = pl_real()->mutex_trylock(pm);
    if (BATON_UNLIKELY(pl_profiling)) {
        pl_prof_t *p = pl_prof_get(pm, PL_PROF_MUTEX, caller);
        if (rc == 0 || rc == EOWNERDEAD)
            pl_prof_acquired(p, 0, false, false);
        else if (rc == EBUSY)
            pl_prof_trylock_failed(p);
    }
    return rc;
}

static int fwd_unlock(pthread_mutex_t *pm)
{
    if (BATON_UNLIKELY(pl_profiling))
        pl_prof_released(pl_prof_get(pm, PL_PROF_MUTEX, NULL));
    return pl_real()->mutex_unlock(pm);
}

/* --- init / destroy ------------------------------------------------------------ */

PRELOAD_API int pthread_mutex_init(pthread_mutex_t *pm, const pthread_mutexattr_t *attr)
{
    PL_ENTER(pl_stock(&pl_mutex_class), pl_real()->mutex_init(pm, attr));
    int type = PTHREAD_MUTEX_DEFAULT;
    if (attr != NULL) {
        int pshared = PTHREAD_PROCESS_PRIVATE, robust = PTHREAD_MUTEX_STALLED, proto = PTHREAD_PRIO_NONE;
        if (pthread_mutexattr_gettype(attr, &type) != 0 ||
            pthread_mutexattr_getpshared(attr, &pshared) != 0 ||
            pthread_mutexattr_getrobust(attr, &robust) != 0 ||
            pthread_mutexattr_getprotocol(attr, &proto) != 0)
            return EINVAL;
        if (pshared != PTHREAD_PROCESS_PRIVATE || robust != PTHREAD_MUTEX_STALLED ||
            proto != PTHREAD_PRIO_NONE) {
            pl_log("mutex %p: %s%s%s: glibc's own implementation", (void *)pm,
                   pshared != PTHREAD_PROCESS_PRIVATE ? "process-shared " : "",
                   robust != PTHREAD_MUTEX_STALLED ? "robust " : "",
                   proto != PTHREAD_PRIO_NONE ? "priority-protocol " : "");
            return pl_real()->mutex_init(pm, attr);
        }
    }
    pl_mutex_t *m = (pl_mutex_t *)pm;
    memset(pm, 0, sizeof *pm);
    /* Relaxed: initialisation precedes any use, which the program orders
     * (publishing a mutex to other threads needs synchronisation anyway). */
    baton_store(&m->type, adopt_type((uint32_t)type), memory_order_relaxed);
    return 0;
}

PRELOAD_API int pthread_mutex_destroy(pthread_mutex_t *pm)
{
    pl_mutex_t *m = (pl_mutex_t *)pm;
    void *s = NULL;
    int rc = resolve(m, &s, false);
    if (BATON_UNLIKELY(pl_profiling)) {
        pl_prof_destroyed(m);
        if (rc != PL_FORWARD)
            baton_store(&m->prof, NULL, memory_order_relaxed);
    }
    if (rc == PL_FORWARD)
        return pl_real()->mutex_destroy(pm);
    uint32_t t = baton_load(&m->type, memory_order_relaxed); /* the program orders destroy after use */
    if (checked(adopt_type(t)) && baton_load(&m->owner, memory_order_relaxed) != 0)
        return EBUSY;
    if (rc == 0) {
        rc = pl_state_free(&pl_mutex_class, s, baton_load(&m->handle, memory_order_relaxed));
        if (rc != 0)
            return rc; /* EBUSY: held */
    }
    /* No state (none yet, or another object's handle): forgotten. */
    baton_store(&m->handle, 0u, memory_order_relaxed); /* the program orders destroy after use */
    /* Keep the adopted type: a (non-conforming) use after destroy gets a
     * fresh state instead of a dangling one. */
    baton_store(&m->type, adopt_type(t), memory_order_relaxed);
    return 0;
}

/* --- lock -------------------------------------------------------------------------- */

/* The owner locks again: a RECURSIVE mutex counts (EAGAIN when the count
 * would overflow); any other type gets `refusal` (EDEADLK, or EBUSY for
 * trylock). */
static int relock_by_owner(pl_mutex_t *m, uint32_t t, int refusal)
{
    if ((t & TYPE_MASK) != PTHREAD_MUTEX_RECURSIVE)
        return refusal;
    if (m->count == UINT32_MAX)
        return EAGAIN;
    m->count++;
    return 0;
}

/* Everything but an adopted, unchecked mutex with a state. */
/* Out of line: the entry point's common path then builds no frame. */
__attribute__((noinline)) static int lock_slow(pl_mutex_t *m, const void *caller)
{
    void *s = NULL;
    PL_ENTER(resolve(m, &s, true), fwd_lock((pthread_mutex_t *)m, caller));
    uint32_t t = baton_load(&m->type, memory_order_relaxed); /* adopted, or about to be marked so */
    if (checked(t)) {
        uintptr_t self = baton_thread_token();
        /* Relaxed: only the owner stores its own token, so a thread finds
         * its token here only if it wrote it itself. */
        if (baton_load(&m->owner, memory_order_relaxed) == self)
            return relock_by_owner(m, t, EDEADLK);
        acquire(m, s, caller);
        baton_store(&m->owner, self, memory_order_relaxed); /* see above */
        m->count = 0;
        return 0;
    }
    acquire(m, s, caller);
    return 0;
}

PRELOAD_API int pthread_mutex_lock(pthread_mutex_t *pm)
{
    pl_mutex_t *m = (pl_mutex_t *)pm;
    void *s = fast_state(m);
    if (BATON_LIKELY(s != NULL)) {
        acquire(m, s, __builtin_return_address(0));
        return 0;
    }
    return lock_slow(m, __builtin_return_address(0));
}

/* Out of line: the entry point's common path then builds no frame. */
__attribute__((noinline)) static int trylock_slow(pl_mutex_t *m, const void *caller)
{
    void *s = NULL;
    PL_ENTER(resolve(m, &s, true), fwd_trylock((pthread_mutex_t *)m, caller));
    uint32_t t = baton_load(&m->type, memory_order_relaxed);
    if (!checked(t))
        return try_acquire(m, s, caller);
    uintptr_t self = baton_thread_token();
    if (baton_load(&m->owner, memory_order_relaxed) == self) /* see lock_slow() */
        return relock_by_owner(m, t, EBUSY);
    int rc = try_acquire(m, s, caller);
    if (rc == 0) {
        baton_store(&m->owner, self, memory_order_relaxed);
        m->count = 0;
    }
    return rc;
}

PRELOAD_API int pthread_mutex_trylock(pthread_mutex_t *pm)
{
    pl_mutex_t *m = (pl_mutex_t *)pm;
    void *s = fast_state(m);
    if (BATON_LIKELY(s != NULL))
        return try_acquire(m, s, __builtin_return_address(0));
    return trylock_slow(m, __builtin_return_address(0));
}

static int try_state(void *s) { return pl_mutex_class.kind->trylock(s); }

/* The kind's timed wait (its own slow path with a deadline: the wait
 * layer's, or glibc's for the pthread kind), or, for a kind without one
 * (the lock servers), trylock polled with back-off. */
static int timed_acquire(void *s, clockid_t clock, const struct timespec *abstime)
{
    const baton_kind_t *k = pl_mutex_class.kind;
    if (k->timedlock != NULL && (k->timed == NULL || k->timed(s))) {
        baton_deadline_t d = {.at = *abstime, .clock = clock};
        return k->timedlock(s, &d);
    }
    return pl_timed_acquire(try_state, s, clock, abstime);
}

static int timed_lock(pl_mutex_t *m, clockid_t clock, const struct timespec *abstime, const void *caller)
{
    void *s = NULL;
    PL_ENTER(resolve(m, &s, true), pl_real()->mutex_clocklock((pthread_mutex_t *)m, clock, abstime));
    uint32_t t = baton_load(&m->type, memory_order_relaxed);
    uintptr_t self = baton_thread_token();
    if (checked(t) && baton_load(&m->owner, memory_order_relaxed) == self) /* see lock_slow() */
        return relock_by_owner(m, t, EDEADLK);
    const baton_kind_t *k = pl_mutex_class.kind;
    pl_prof_t *p = BATON_UNLIKELY(pl_profiling) ? prof_of(m, caller) : NULL;
    int rc = k->trylock(s);
    if (rc != 0) {
        /* It would block: only now is the deadline looked at (glibc). */
        if (!pl_timespec_valid(abstime))
            return EINVAL;
        uint64_t t0 = p ? pl_prof_now() : 0;
        rc = timed_acquire(s, clock, abstime);
        if (rc != 0)
            return rc;
        if (p)
            pl_prof_acquired(p, pl_prof_now() - t0, true, false);
    } else if (p) {
        pl_prof_acquired(p, 0, false, false);
    }
    if (checked(t)) {
        baton_store(&m->owner, self, memory_order_relaxed);
        m->count = 0;
    }
    return 0;
}

PRELOAD_API int pthread_mutex_timedlock(pthread_mutex_t *pm, const struct timespec *abstime)
{
    return timed_lock((pl_mutex_t *)pm, CLOCK_REALTIME, abstime, __builtin_return_address(0));
}

PRELOAD_API int pthread_mutex_clocklock(pthread_mutex_t *pm, clockid_t clock, const struct timespec *abstime)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    return timed_lock((pl_mutex_t *)pm, clock, abstime, __builtin_return_address(0));
}

/* --- unlock ------------------------------------------------------------------------ */

/* Out of line: the entry point's common path then builds no frame. */
__attribute__((noinline)) static int unlock_slow(pl_mutex_t *m)
{
    void *s = NULL;
    int rc = resolve(m, &s, false);
    if (rc == PL_FORWARD)
        return fwd_unlock((pthread_mutex_t *)m);
    uint32_t t = baton_load(&m->type, memory_order_relaxed);
    if (!checked(adopt_type(t)))
        return rc == 0 ? release(m, s) : 0; /* never locked: glibc returns 0 too */
    /* Relaxed: only the owner stores its token (see lock_slow()). */
    if (rc != 0 || baton_load(&m->owner, memory_order_relaxed) != baton_thread_token())
        return EPERM;
    if (m->count > 0) {
        m->count--;
        return 0;
    }
    /* Clear the owner before the release: afterwards the mutex is not ours
     * to touch. */
    baton_store(&m->owner, (uintptr_t)0, memory_order_relaxed);
    return release(m, s);
}

PRELOAD_API int pthread_mutex_unlock(pthread_mutex_t *pm)
{
    pl_mutex_t *m = (pl_mutex_t *)pm;
    void *s = fast_state(m);
    if (BATON_LIKELY(s != NULL))
        return release(m, s);
    return unlock_slow(m);
}

/* --- robust mutexes are glibc's -------------------------------------------------------- */

PRELOAD_API int pthread_mutex_consistent(pthread_mutex_t *pm)
{
    void *s;
    if (resolve((pl_mutex_t *)pm, &s, false) == PL_FORWARD)
        return pl_real()->mutex_consistent(pm);
    return EINVAL; /* not a robust mutex */
}

/* pthread_mutex_consistent_np is glibc's old name; <pthread.h> redirects it
 * to pthread_mutex_consistent, and old binaries that call it by name reach
 * glibc's, which is right: only glibc's (forwarded) mutexes are robust. */

/* glibc also exports its mutex calls under internal names (GLIBC_2.2.5),
 * which older binaries and some libraries call: the same functions. */
PL_ALIAS(__pthread_mutex_init, pthread_mutex_init)
PL_ALIAS(__pthread_mutex_destroy, pthread_mutex_destroy)
PL_ALIAS(__pthread_mutex_lock, pthread_mutex_lock)
PL_ALIAS(__pthread_mutex_trylock, pthread_mutex_trylock)
PL_ALIAS(__pthread_mutex_unlock, pthread_mutex_unlock)
