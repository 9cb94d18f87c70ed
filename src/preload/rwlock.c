/* rwlock.c - pthread_rwlock_* for libbaton-preload.so.
 *
 * Real readers-writer semantics over the BATON_RWLOCK kind (default
 * rw(default),prefer_readers; any kind with BATON_CAP_RW, e.g. rw(mcs)): readers share the
 * kind's rlock/tryrlock/runlock, writers its lock/trylock/unlock.
 *
 * Preference follows the rwlock's attribute, as under glibc: a rwlock
 * made with PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP (or its static
 * initializer) prefers writers, every other one readers (a reader is
 * admitted while the lock is read-held, even when a writer waits; so a
 * reader of higher priority than a blocked writer gets in, as POSIX asks
 * under SCHED_FIFO).  Each state is made with the class's options and the
 * rwlock's preference, for kinds that have a prefer_readers option (rw);
 * the others keep their own policy (pl_rwlock_opts()).
 *
 * Layout inside the 56 bytes of pthread_rwlock_t (glibc's fields in
 * brackets, x86_64):
 *
 *   0   owner    the writer's token, 0 when no writer holds it   [__readers, __writers]
 *   16  prof     the profiler's record (BATON_PROFILE only)       [__pad3, __pad4]
 *   28  shared   0 in every baton rwlock; 1 in a process-shared   [__shared]
 *                rwlock, made by glibc's own pthread_rwlock_init
 *   40  handle   the slab handle of the kind's lock state         [__pad2]
 *                (preload.h), created on first use
 *   48  (glibc's __flags: the kind, PTHREAD_RWLOCK_PREFER_*, as the
 *       initializer or init wrote it; read when the state is made)
 *   (every other byte 0, as glibc's initial values)
 *
 * Why these positions.  PTHREAD_RWLOCK_INITIALIZER and
 * PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP are all zeros but
 * __flags, so a static rwlock reads as "baton's, no state yet" and is
 * adopted on first use: whoever gets there first creates a state and
 * publishes its handle with one CAS; racing threads free theirs and use the
 * winner's.  glibc's pthread_rwlock_init zeroes the whole object and sets
 * __shared to 1 for PTHREAD_PROCESS_SHARED; it never writes __pad2 again.
 * So a handle (offset 40) whose slot serves this rwlock can only be baton's,
 * and anything else is looked at closer: `shared` set means a
 * process-shared rwlock that glibc runs (baton's states live in this
 * process's slabs, useless to another process), forwarded for good; the
 * handle word's other values are pl_handle_state()'s (preload.h): 0 none
 * yet, PL_HANDLE_FWD glibc's for good (out of memory: an rwlock that is
 * free is a fresh glibc one already, so nothing else changes), and a
 * handle that is not this rwlock's (a copy, garbage) adopted afresh when
 * glibc would read the rwlock as free (__readers and __writers 0) and made
 * glibc's otherwise.
 *
 * Error codes are glibc's: rdlock, wrlock and the timed variants by the
 * thread that holds the write lock EDEADLK; wrlock by a thread that holds
 * a read lock EDEADLK (glibc would hang; POSIX allows EDEADLK); trylocks
 * EBUSY; the timed variants EINVAL for a bad tv_nsec or clock before
 * anything else, even when the lock is free (glibc's rwlocks check first,
 * unlike its mutexes; POSIX allows both), ETIMEDOUT once the absolute
 * deadline has passed; unlock of a lock the caller does not hold EPERM.  Chosen where glibc differs: destroy of
 * a held rwlock returns EBUSY (glibc returns 0 and leaves it broken; POSIX
 * allows EBUSY) and changes nothing.
 *
 * Recursive read locks.  POSIX lets a thread take a read lock it already
 * holds.  Under writer preference (a PREFER_WRITER_NONRECURSIVE_NP rwlock,
 * or a kind without a preference such as mrqd) a reader waits while a
 * writer waits for readers to leave, so a thread that holds a read lock
 * and asks for another while a writer waits would wait for a writer that
 * waits for it (glibc's NONRECURSIVE rwlocks do hang there; baton's do not:
 * a deliberate difference, POSIX allows the recursion).  Under reader
 * preference the kind would admit the second read lock anyway, but taking
 * the table's path costs less than the kind's and keeps one way for both.
 * So each thread keeps the read locks it holds, with a count each (a
 * small thread-local array, grown into mmap()ed memory when a thread holds
 * more than RD_INLINE at once, so that no overflow ever has to be guessed
 * at), and a repeated read lock only counts: the kind is entered once per
 * thread and lock, and left when the count drops to zero.  No kind entry
 * point is needed for this: while the thread is counted in the kind's
 * reader indicator no writer can get in, so there is nothing to wait for.
 * The same table answers "does this thread hold a read lock?" for unlock
 * (read or write is decided by comparing the owner token with ours) and for
 * wrlock's EDEADLK.  A consequence: a read lock must be released by the
 * thread that took it (POSIX requires it; the kinds' reader indicators
 * count per thread too), otherwise unlock returns EPERM.
 *
 * Unlock never touches the pthread_rwlock_t after the kind's release, so a
 * thread may destroy and free it at once.
 */
#include "preload.h"
#include "../base/thread.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

typedef struct pl_rwlock {
    _Atomic uint64_t owner;    /* 0: a thread token (uintptr_t) */
    uint64_t spare0;           /* 8 */
    _Atomic(pl_prof_t *) prof; /* 16 */
    uint32_t spare1;           /* 24 */
    int shared;                /* 28: glibc's __shared */
    uint64_t spare2;           /* 32 */
    _Atomic uint32_t handle;   /* 40: glibc's __pad2 */
    uint32_t spare3;
} pl_rwlock_t;

_Static_assert(sizeof(pl_rwlock_t) <= offsetof(pthread_rwlock_t, __data.__flags),
               "baton's rwlock leaves glibc's __flags alone");
_Static_assert(offsetof(pl_rwlock_t, shared) == offsetof(pthread_rwlock_t, __data.__shared),
               "the marker is glibc's __shared");
_Static_assert(offsetof(pl_rwlock_t, handle) == offsetof(pthread_rwlock_t, __data.__pad2),
               "the handle sits where glibc never writes after init");
_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "a thread token fits the owner word");
_Static_assert(_Alignof(pthread_rwlock_t) >= _Alignof(pl_rwlock_t), "alignment");

/* --- the read locks this thread holds ------------------------------------------ */

typedef struct rd_entry {
    const pl_rwlock_t *lock;
    uint32_t count; /* read locks of `lock` held by this thread (>= 1) */
} rd_entry_t;

#define RD_INLINE 8u

/* Entries [0, n): the first RD_INLINE in `inl`, the rest in `more`
 * (mmap()ed on demand, freed at thread exit).  Only its thread touches it. */
typedef struct rd_set {
    uint32_t n;
    uint32_t more_cap;
    rd_entry_t *more;
    rd_entry_t inl[RD_INLINE];
} rd_set_t;

static _Thread_local rd_set_t rd __attribute__((tls_model("initial-exec")));

static inline rd_entry_t *rd_at(uint32_t i)
{
    return BATON_LIKELY(i < RD_INLINE) ? &rd.inl[i] : &rd.more[i - RD_INLINE];
}

static inline rd_entry_t *rd_find(const pl_rwlock_t *r)
{
    for (uint32_t i = 0; i < rd.n; i++) {
        rd_entry_t *e = rd_at(i);
        if (e->lock == r)
            return e;
    }
    return NULL;
}

static pthread_key_t rd_key;
static pthread_once_t rd_key_once = PTHREAD_ONCE_INIT;

/* At thread exit: give back the overflow array. */
static void rd_exit(void *arg)
{
    rd_set_t *set = arg;
    if (set->more != NULL)
        munmap(set->more, set->more_cap * sizeof(rd_entry_t));
    set->more = NULL;
    set->more_cap = 0;
    if (set->n > RD_INLINE)
        set->n = RD_INLINE;
}

static void rd_key_create(void)
{
    if (pthread_key_create(&rd_key, rd_exit) != 0)
        pl_die("pthread_key_create failed");
}

/* Make room for one more entry: false when memory is exhausted. */
__attribute__((noinline, cold)) static bool rd_grow(void)
{
    uint32_t cap = rd.more_cap ? rd.more_cap * 2u : 4096u / (uint32_t)sizeof(rd_entry_t);
    rd_entry_t *m =
        mmap(NULL, cap * sizeof(rd_entry_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return false;
    if (rd.more != NULL) {
        memcpy(m, rd.more, rd.more_cap * sizeof(rd_entry_t));
        munmap(rd.more, rd.more_cap * sizeof(rd_entry_t));
    } else {
        (void)pthread_once(&rd_key_once, rd_key_create);
        (void)pthread_setspecific(rd_key, &rd);
    }
    rd.more = m;
    rd.more_cap = cap;
    return true;
}

static inline bool rd_room(void) { return BATON_LIKELY(rd.n < RD_INLINE + rd.more_cap) || rd_grow(); }

/* After rd_room(). */
static inline void rd_add(const pl_rwlock_t *r)
{
    rd_entry_t *e = rd_at(rd.n++);
    e->lock = r;
    e->count = 1;
}

/* One more read lock of e's rwlock, held already: false when the count
 * would overflow (the lock call's EAGAIN). */
static inline bool rd_count(rd_entry_t *e)
{
    if (e->count == UINT32_MAX)
        return false;
    e->count++;
    return true;
}

/* The last entry moves into e's place; when e is the last, nothing moves
 * (a copy onto itself would load 16 bytes just written by two narrower
 * stores, which the CPU cannot forward from its store buffer). */
static inline void rd_remove(rd_entry_t *e)
{
    rd_entry_t *last = rd_at(--rd.n);
    if (e != last)
        *e = *last;
}

/* --- preference ------------------------------------------------------------------- */

/* glibc keeps an rwlock's kind (pthread_rwlockattr_setkind_np) in __flags,
 * where pthread_rwlock_init and PTHREAD_RWLOCK_WRITER_NONRECURSIVE_
 * INITIALIZER_NP put it and baton leaves it.  Only PTHREAD_RWLOCK_PREFER_
 * WRITER_NONRECURSIVE_NP makes glibc's readers wait for a waiting writer:
 * PREFER_WRITER_NP, which names writer preference too, glibc treats as
 * reader-preferring, as the default (PREFER_READER_NP); so does baton. */
static bool prefers_writers(const pthread_rwlock_t *prw)
{
    /* Written by init or an initializer, which the program orders before
     * the use that makes a state. */
    return prw->__data.__flags == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

const baton_opts_t *pl_rwlock_opts(const pl_class_t *c, const void *owner, baton_opts_t *buf)
{
    const baton_kind_t *k = c->kind;
    for (size_t i = 0; i < k->noptions; i++)
        if (strcmp(k->options[i].name, "prefer_readers") == 0) {
            *buf = c->opts;
            buf->value[i] = prefers_writers(owner) ? 0 : 1;
            return buf;
        }
    /* A kind without the option keeps its own policy for every rwlock:
     * mrqd prefers writers; elide(<kind>) has whatever its inner
     * readers-writer kind was configured with (the class's spec; over a
     * mutex kind, rw(<kind>),prefer_readers: config.c). */
    return &c->opts;
}

/* --- state --------------------------------------------------------------------- */

/* No state can be made: glibc's own for the rest of its life.  Its fields are a
 * fresh glibc rwlock's already (all 0 but __flags). */
__attribute__((noinline, cold)) static void fall_back(const void *owner, uint32_t from)
{
    pl_rwlock_t *r = (pl_rwlock_t *)(uintptr_t)owner;
    /* Relaxed: nothing is published (glibc's fields are as init left them). */
    (void)baton_cas(&r->handle, &from, PL_HANDLE_FWD, memory_order_relaxed, memory_order_relaxed);
}

/* The state of a baton rwlock: 0 with *sp set, PL_FORWARD (glibc's: the
 * stock class, process-shared, made glibc's), or PL_NO_STATE (none yet,
 * and not `create`). */
__attribute__((noinline)) static int state_slow(pl_rwlock_t *r, void **sp, bool create)
{
    pl_init();
    /* `shared` is written only by init, which the program orders before use. */
    if (pl_rwlock_class.stock || r->shared != 0)
        return PL_FORWARD;
    if (pl_rwlock_class.kind->tryrlock == NULL)
        pl_die("%s='%s': the kind has no tryrlock", pl_rwlock_class.env, pl_rwlock_class.spec);
    return pl_handle_state(&pl_rwlock_class, &r->handle, r, &r->owner, &r->prof, create, fall_back, sp);
}

/* The state the handle names, if it serves r; else NULL. */
static inline void *fast_state(pl_rwlock_t *r)
{
    /* Acquire: pairs with the release CAS in pl_adopt(). */
    return pl_state_lookup(&pl_rwlock_class, baton_load(&r->handle, memory_order_acquire), r);
}

/* `whose` (PL_ENTER) for a call on prw: 0 with its state in *sp;
 * PL_FORWARD, glibc's.  With `create` (the lock calls) a state is adopted
 * where there is none; without (unlock), a rwlock with none was never
 * locked: EPERM. */
static inline int state_of(pthread_rwlock_t *prw, void **sp, bool create)
{
    pl_rwlock_t *r = (pl_rwlock_t *)prw;
    void *s = fast_state(r);
    if (BATON_LIKELY(s != NULL)) {
        *sp = s;
        return 0;
    }
    int rc = state_slow(r, sp, create);
    return !create && rc == PL_NO_STATE ? EPERM : rc;
}

static pl_prof_t *prof_of(pl_rwlock_t *r, const void *caller)
{
    /* Relaxed: the record is found again by address if two threads race
     * here; both store the same pointer. */
    pl_prof_t *p = baton_load(&r->prof, memory_order_relaxed);
    if (p == NULL) {
        p = pl_prof_get(r, PL_PROF_RWLOCK, caller);
        baton_store(&r->prof, p, memory_order_relaxed);
        void *s = fast_state(r);
        if (s != NULL && !pl_rwlock_class.stock)
            pl_prof_bind(p, pl_rwlock_class.kind, s);
    }
    return p;
}

/* Relaxed: only the writer stores its own token, so a thread finds its
 * token here only if it wrote it itself. */
static inline bool write_held_by_me(pl_rwlock_t *r)
{
    return baton_load(&r->owner, memory_order_relaxed) == baton_thread_token();
}

/* --- acquisition ------------------------------------------------------------------ */

/* The timed variants' first check, as glibc's rwlocks make it: before
 * anything else, whether or not the call would block. */
static inline bool deadline_valid(clockid_t clock, const struct timespec *abstime)
{
    return (clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC) && pl_timespec_valid(abstime);
}

enum how { BLOCK, TRY, TIMED };

/* A reader's or writer's timed wait: the kind's (readers on the reader
 * indicator, writers the inner lock's), or, where it has none, trylock
 * polled with back-off. */
static int timed_rd(void *s, clockid_t clock, const struct timespec *abstime)
{
    const baton_kind_t *k = pl_rwlock_class.kind;
    if (k->timedrlock != NULL) {
        baton_deadline_t d = {.at = *abstime, .clock = clock};
        return k->timedrlock(s, &d);
    }
    return pl_timed_acquire(k->tryrlock, s, clock, abstime);
}

static int timed_wr(void *s, clockid_t clock, const struct timespec *abstime)
{
    const baton_kind_t *k = pl_rwlock_class.kind;
    if (k->timedlock != NULL && (k->timed == NULL || k->timed(s))) {
        baton_deadline_t d = {.at = *abstime, .clock = clock};
        return k->timedlock(s, &d);
    }
    return pl_timed_acquire(k->trylock, s, clock, abstime);
}

/* A read lock of an adopted rwlock with state s.  A timed one checks its
 * deadline first (deadline_valid()). */
__attribute__((always_inline)) static inline int rd_lock(pthread_rwlock_t *prw, void *s, enum how how,
                                                         clockid_t clock, const struct timespec *abstime,
                                                         const void *caller)
{
    if (how == TIMED && !deadline_valid(clock, abstime))
        return EINVAL;
    pl_rwlock_t *r = (pl_rwlock_t *)prw;
    const baton_kind_t *k = pl_rwlock_class.kind;
    if (BATON_UNLIKELY(rd.n != 0)) {
        rd_entry_t *e = rd_find(r);
        if (e != NULL) { /* held already: count (see the top of this file) */
            if (!rd_count(e))
                return EAGAIN;
            if (BATON_UNLIKELY(pl_profiling))
                pl_prof_acquired(prof_of(r, caller), 0, false, true);
            return 0;
        }
    }
    if (BATON_UNLIKELY(write_held_by_me(r)))
        return how == TRY ? EBUSY : EDEADLK;
    if (BATON_UNLIKELY(!rd_room()))
        return EAGAIN;
    pl_prof_t *p = BATON_UNLIKELY(pl_profiling) ? prof_of(r, caller) : NULL;
    if (BATON_LIKELY(how == BLOCK && p == NULL)) {
        k->rlock(s);
    } else if (k->tryrlock(s) == 0) {
        if (p)
            pl_prof_acquired(p, 0, false, true);
    } else if (how == TRY) {
        if (p)
            pl_prof_trylock_failed(p);
        return EBUSY;
    } else {
        uint64_t t0 = p ? pl_prof_now() : 0;
        if (how == TIMED) {
            int rc = timed_rd(s, clock, abstime);
            if (rc != 0)
                return rc;
        } else {
            k->rlock(s);
        }
        if (p)
            pl_prof_acquired(p, pl_prof_now() - t0, true, true);
    }
    rd_add(r);
    return 0;
}

/* The write lock of an adopted rwlock with state s; a timed one checks its
 * deadline first. */
__attribute__((always_inline)) static inline int wr_lock(pthread_rwlock_t *prw, void *s, enum how how,
                                                         clockid_t clock, const struct timespec *abstime,
                                                         const void *caller)
{
    if (how == TIMED && !deadline_valid(clock, abstime))
        return EINVAL;
    pl_rwlock_t *r = (pl_rwlock_t *)prw;
    const baton_kind_t *k = pl_rwlock_class.kind;
    uintptr_t self = baton_thread_token();
    /* Relaxed: see write_held_by_me(). */
    if (BATON_UNLIKELY(baton_load(&r->owner, memory_order_relaxed) == self ||
                       (rd.n != 0 && rd_find(r) != NULL)))
        return how == TRY ? EBUSY : EDEADLK;
    pl_prof_t *p = BATON_UNLIKELY(pl_profiling) ? prof_of(r, caller) : NULL;
    if (BATON_LIKELY(how == BLOCK && p == NULL)) {
        k->lock(s);
    } else if (k->trylock(s) == 0) {
        if (p)
            pl_prof_acquired(p, 0, false, false);
    } else if (how == TRY) {
        if (p)
            pl_prof_trylock_failed(p);
        return EBUSY;
    } else {
        uint64_t t0 = p ? pl_prof_now() : 0;
        if (how == TIMED) {
            int rc = timed_wr(s, clock, abstime);
            if (rc != 0)
                return rc;
        } else {
            k->lock(s);
        }
        if (p)
            pl_prof_acquired(p, pl_prof_now() - t0, true, false);
    }
    baton_store(&r->owner, self, memory_order_relaxed); /* see write_held_by_me() */
    return 0;
}

/* --- init / destroy ---------------------------------------------------------------- */

PRELOAD_API int pthread_rwlock_init(pthread_rwlock_t *prw, const pthread_rwlockattr_t *attr)
{
    PL_ENTER(pl_stock(&pl_rwlock_class), pl_real()->rwlock_init(prw, attr));
    int kind = PTHREAD_RWLOCK_DEFAULT_NP;
    if (attr != NULL) {
        int pshared = PTHREAD_PROCESS_PRIVATE;
        if (pthread_rwlockattr_getpshared(attr, &pshared) != 0 ||
            pthread_rwlockattr_getkind_np(attr, &kind) != 0)
            return EINVAL;
        if (pshared != PTHREAD_PROCESS_PRIVATE) {
            pl_log("rwlock %p: process-shared: glibc's own implementation", (void *)prw);
            return pl_real()->rwlock_init(prw, attr);
        }
    }
    /* All zeros: no state, no owner, `shared` 0 (baton's); and the
     * attribute's kind in __flags, as glibc's init leaves it (the state,
     * made at first use, prefers writers or readers by it).  Initialisation
     * precedes any use, which the program orders. */
    memset(prw, 0, sizeof *prw);
    prw->__data.__flags = (unsigned)kind;
    return 0;
}

PRELOAD_API int pthread_rwlock_destroy(pthread_rwlock_t *prw)
{
    pl_rwlock_t *r = (pl_rwlock_t *)prw;
    void *s = NULL;
    int rc = state_slow(r, &s, false);
    if (rc == PL_FORWARD)
        return pl_real()->rwlock_destroy(prw);
    /* Relaxed loads: the program orders destroy after every use. */
    if (baton_load(&r->owner, memory_order_relaxed) != 0)
        return EBUSY;
    if (rc == 0) {
        rc = pl_state_free(&pl_rwlock_class, s, baton_load(&r->handle, memory_order_relaxed));
        if (rc != 0)
            return rc; /* EBUSY: readers inside */
    }
    /* No state (none yet, or another object's handle): forgotten. */
    baton_store(&r->handle, 0u, memory_order_relaxed);
    if (BATON_UNLIKELY(pl_profiling)) {
        pl_prof_destroyed(r);
        baton_store(&r->prof, NULL, memory_order_relaxed);
    }
    return 0;
}

/* --- readers ------------------------------------------------------------------------- */

/* Every case of pthread_rwlock_rdlock() but its most common one. */
__attribute__((noinline)) static int rdlock_slow(pthread_rwlock_t *prw, const void *caller)
{
    void *s;
    PL_ENTER(state_of(prw, &s, true), pl_real()->rwlock_rdlock(prw));
    return rd_lock(prw, s, BLOCK, CLOCK_REALTIME, NULL, caller);
}

/* A read lock while this thread holds others (fewer than RD_INLINE, all
 * inline), unprofiled: rd_lock()'s work without the state's second lookup.
 * Nested read locks of different rwlocks are common: OpenSSL takes one in
 * four of its read locks inside another (200 000 at a Node.js start-up). */
__attribute__((noinline)) static int rdlock_nested(pl_rwlock_t *r, void *s)
{
    rd_entry_t *e = rd_find(r);
    if (e != NULL) /* held already: count (see the top of this file) */
        return rd_count(e) ? 0 : EAGAIN;
    if (BATON_UNLIKELY(write_held_by_me(r)))
        return EDEADLK;
    rd_add(r); /* room: fewer than RD_INLINE are held */
    pl_rwlock_class.kind->rlock(s);
    return 0;
}

/* The most common read lock (the rwlock has its state, this thread holds
 * no read lock, and nobody profiles) does rd_lock()'s work in fewer steps,
 * and notes the read lock before the kind's call (which cannot fail), so
 * that nothing is left to do after it: an uncontended read lock costs
 * mostly this wrapper.  Only this thread reads its set, and it stays in
 * this call until the lock is held. */
PRELOAD_API int pthread_rwlock_rdlock(pthread_rwlock_t *prw)
{
    pl_rwlock_t *r = (pl_rwlock_t *)prw;
    void *s = fast_state(r);
    if (BATON_LIKELY(s != NULL && rd.n == 0 && !pl_profiling && !write_held_by_me(r))) {
        rd.inl[0] = (rd_entry_t){.lock = r, .count = 1};
        rd.n = 1;
        pl_rwlock_class.kind->rlock(s);
        return 0;
    }
    if (s != NULL && rd.n - 1u < RD_INLINE - 1u && !pl_profiling)
        return rdlock_nested(r, s); /* 1 to RD_INLINE - 1 held */
    return rdlock_slow(prw, __builtin_return_address(0));
}

PRELOAD_API int pthread_rwlock_tryrdlock(pthread_rwlock_t *prw)
{
    void *s;
    PL_ENTER(state_of(prw, &s, true), pl_real()->rwlock_tryrdlock(prw));
    return rd_lock(prw, s, TRY, CLOCK_REALTIME, NULL, __builtin_return_address(0));
}

PRELOAD_API int pthread_rwlock_timedrdlock(pthread_rwlock_t *prw, const struct timespec *abstime)
{
    void *s;
    PL_ENTER(state_of(prw, &s, true), pl_real()->rwlock_timedrdlock(prw, abstime));
    return rd_lock(prw, s, TIMED, CLOCK_REALTIME, abstime, __builtin_return_address(0));
}

PRELOAD_API int pthread_rwlock_clockrdlock(pthread_rwlock_t *prw, clockid_t clock,
                                           const struct timespec *abstime)
{
    void *s;
    PL_ENTER(state_of(prw, &s, true), pl_real()->rwlock_clockrdlock(prw, clock, abstime));
    return rd_lock(prw, s, TIMED, clock, abstime, __builtin_return_address(0));
}

/* --- writers ------------------------------------------------------------------------- */

/* Every case of pthread_rwlock_wrlock() but its most common one. */
__attribute__((noinline)) static int wrlock_slow(pthread_rwlock_t *prw, const void *caller)
{
    void *s;
    PL_ENTER(state_of(prw, &s, true), pl_real()->rwlock_wrlock(prw));
    return wr_lock(prw, s, BLOCK, CLOCK_REALTIME, NULL, caller);
}

/* The most common write lock (the rwlock has its state, this thread holds
 * no read lock and not this write lock, and nobody profiles): wr_lock()'s
 * work in fewer steps, as pthread_rwlock_rdlock() does. */
PRELOAD_API int pthread_rwlock_wrlock(pthread_rwlock_t *prw)
{
    pl_rwlock_t *r = (pl_rwlock_t *)prw;
    void *s = fast_state(r);
    if (BATON_LIKELY(s != NULL && rd.n == 0 && !pl_profiling && !write_held_by_me(r))) {
        pl_rwlock_class.kind->lock(s);
        baton_store(&r->owner, baton_thread_token(), memory_order_relaxed); /* see write_held_by_me() */
        return 0;
    }
    return wrlock_slow(prw, __builtin_return_address(0));
}

PRELOAD_API int pthread_rwlock_trywrlock(pthread_rwlock_t *prw)
{
    void *s;
    PL_ENTER(state_of(prw, &s, true), pl_real()->rwlock_trywrlock(prw));
    return wr_lock(prw, s, TRY, CLOCK_REALTIME, NULL, __builtin_return_address(0));
}

PRELOAD_API int pthread_rwlock_timedwrlock(pthread_rwlock_t *prw, const struct timespec *abstime)
{
    void *s;
    PL_ENTER(state_of(prw, &s, true), pl_real()->rwlock_timedwrlock(prw, abstime));
    return wr_lock(prw, s, TIMED, CLOCK_REALTIME, abstime, __builtin_return_address(0));
}

PRELOAD_API int pthread_rwlock_clockwrlock(pthread_rwlock_t *prw, clockid_t clock,
                                           const struct timespec *abstime)
{
    void *s;
    PL_ENTER(state_of(prw, &s, true), pl_real()->rwlock_clockwrlock(prw, clock, abstime));
    return wr_lock(prw, s, TIMED, clock, abstime, __builtin_return_address(0));
}

/* --- unlock ---------------------------------------------------------------------------- */

/* Every case of pthread_rwlock_unlock() but its most common one. */
__attribute__((noinline)) static int unlock_slow(pthread_rwlock_t *prw)
{
    void *s;
    PL_ENTER(state_of(prw, &s, false), pl_real()->rwlock_unlock(prw));
    pl_rwlock_t *r = (pl_rwlock_t *)prw;
    const baton_kind_t *k = pl_rwlock_class.kind;
    if (write_held_by_me(r)) {
        /* Clear the owner and report the release first: after the kind's
         * release the rwlock is not ours to touch. */
        baton_store(&r->owner, (uintptr_t)0, memory_order_relaxed); /* see write_held_by_me() */
        if (BATON_UNLIKELY(pl_profiling))
            pl_prof_released(prof_of(r, NULL));
        return k->unlock(s);
    }
    rd_entry_t *e = rd.n != 0 ? rd_find(r) : NULL;
    if (BATON_UNLIKELY(e == NULL))
        return EPERM;
    if (--e->count != 0)
        return 0;
    rd_remove(e);
    k->runlock(s);
    return 0;
}

/* An unlock by a thread that holds 2 to RD_INLINE read locks: of one of
 * them (nested read locks are mostly released in reverse order: the set is
 * searched from its end), else unlock_slow()'s work. */
__attribute__((noinline)) static int unlock_nested(pthread_rwlock_t *prw, void *s)
{
    const pl_rwlock_t *r = (const pl_rwlock_t *)prw;
    for (uint32_t i = rd.n; i-- > 0;)
        if (rd.inl[i].lock == r) {
            if (--rd.inl[i].count == 0) {
                rd_remove(&rd.inl[i]);
                pl_rwlock_class.kind->runlock(s);
            }
            return 0;
        }
    return unlock_slow(prw);
}

/* The most common unlocks: the one read lock this thread holds (a thread
 * that holds r for reading does not hold it for writing: each lock call
 * refuses the other); a read lock among a few (unlock_nested()); and the
 * write lock, unprofiled. */
PRELOAD_API int pthread_rwlock_unlock(pthread_rwlock_t *prw)
{
    pl_rwlock_t *r = (pl_rwlock_t *)prw;
    void *s = fast_state(r);
    if (BATON_LIKELY(s != NULL)) {
        if (rd.n == 1 && rd.inl[0].lock == r) {
            if (BATON_LIKELY(rd.inl[0].count == 1)) {
                rd.n = 0;
                pl_rwlock_class.kind->runlock(s);
            } else {
                rd.inl[0].count--;
            }
            return 0;
        }
        if (write_held_by_me(r)) {
            if (BATON_UNLIKELY(pl_profiling))
                return unlock_slow(prw);
            /* As unlock_slow(): the owner first. */
            baton_store(&r->owner, (uintptr_t)0, memory_order_relaxed); /* see write_held_by_me() */
            return pl_rwlock_class.kind->unlock(s);
        }
        if (rd.n - 2u < RD_INLINE - 1u)
            return unlock_nested(prw, s);
    }
    return unlock_slow(prw);
}

/* glibc's internal names of the same calls (GLIBC_2.2.5). */
PL_ALIAS(__pthread_rwlock_init, pthread_rwlock_init)
PL_ALIAS(__pthread_rwlock_destroy, pthread_rwlock_destroy)
PL_ALIAS(__pthread_rwlock_rdlock, pthread_rwlock_rdlock)
PL_ALIAS(__pthread_rwlock_tryrdlock, pthread_rwlock_tryrdlock)
PL_ALIAS(__pthread_rwlock_wrlock, pthread_rwlock_wrlock)
PL_ALIAS(__pthread_rwlock_trywrlock, pthread_rwlock_trywrlock)
PL_ALIAS(__pthread_rwlock_unlock, pthread_rwlock_unlock)
