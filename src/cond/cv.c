/* cv.c - the condition variable (cv.h): baton_cond_t's, and the
 * interposer's pthread_cond_t.
 *
 * The state is 40 bytes (baton_cv_t), which fit inside the 48 of
 * pthread_cond_t; all-zero bytes, which is what PTHREAD_COND_INITIALIZER
 * and memset give, are a valid private condvar on CLOCK_REALTIME, so a
 * condvar needs no init call and no side table.  It works with every mutex
 * because it releases and re-acquires the mutex only through the two
 * functions the caller hands it (baton_cv_mutex_t): baton_unlock/baton_lock
 * for baton_cond_t, pthread_mutex_unlock/_lock in the interposer, which
 * are baton's own there (the configured kind, or glibc for robust and
 * process-shared mutexes; a robust relock's EOWNERDEAD is returned to the
 * caller).
 *
 * Private condvars: a FIFO queue of waiter records.  Each waiting thread puts
 * a record on its own stack (links plus a 32-bit state word it sleeps on),
 * appends it under the condvar's small internal lock (a futex word, see
 * core/syslock.h), releases the mutex and sleeps on its own word.  Signal
 * takes the oldest record still waiting, unlinks it and marks it woken;
 * broadcast does that to every record.  So a signal always goes to a thread
 * that was blocked when it was made, and a thread that starts waiting later
 * cannot steal it (no lost or stolen wake-ups; the queue also makes waking
 * FIFO-fair).  Each record has its own futex word, so a wake-up wakes exactly
 * the thread it chose, with no thundering herd on the mutex.
 *
 * Lifetime rules, so that a program may destroy and free a condvar right
 * after broadcasting (or signalling its last waiter):
 *   - a woken waiter never touches the condvar again: it sees "woken" in its
 *     own record and goes straight to re-locking the mutex;
 *   - a waker reads a record's links before the store that marks it woken,
 *     and afterwards does nothing to it but the futex wake of its word, a
 *     syscall on an address that may be dead by then: harmless (at worst a
 *     spurious wake-up of whatever sleeps there later, and every futex
 *     sleeper re-checks its word);
 *   - a waiter that gives up (deadline passed, cancellation) first claims
 *     its record with a compare-and-swap to "leaving".  If a waker got there
 *     first, the wake-up is the waiter's: a timed-out waiter then returns 0
 *     (woken, not timed out), a cancelled one passes a signal on (below),
 *     neither touches the condvar otherwise.  If the claim succeeds the
 *     record is still queued: wakers skip leaving records, and the waiter
 *     unlinks itself under the internal lock.  destroy waits for such
 *     leavers to finish (they are past their deadline and about to take the
 *     lock: microseconds), so that the leaver never touches freed memory.
 *
 * Cancellation.  pthread_cond_wait/timedwait/clockwait are cancellation
 * points, and with deferred cancellation the mutex must be held again
 * before the thread's cleanup handlers run.  The wait pushes a cleanup
 * handler (pthread_cleanup_push) and enables asynchronous cancellation only
 * around the futex syscall itself, restoring the caller's type right after
 * (so a cancellation request pending on entry to the sleep, or arriving
 * during it, acts there and nowhere else).  The handler claims the record as
 * a leaver and unlinks it; if a signal had already been given to it and
 * other waiters were queued behind it, it passes the signal on to the oldest
 * of them (POSIX: a cancelled waiter must not consume a signal while other
 * threads are blocked); then it re-locks the mutex.  The single window left
 * open: a waiter cancelled after receiving such a signal touches the
 * condvar to pass it on; if every other waiter left by timeout and the
 * program destroyed the condvar in those few instructions, that touch would
 * hit freed memory (a waker cannot know in advance that the record will be
 * cancelled).
 *
 * Process-shared condvars (condattr pshared): records on one process's stack
 * cannot be queued by another, so these use a sequence word in place,
 * waited on with shared futexes (no FUTEX_PRIVATE_FLAG).  A waiter sets bit 0
 * of the word ("someone may sleep") while it still holds the mutex, releases
 * the mutex and sleeps while the word is unchanged.  signal and broadcast are
 * the same operation: if bit 0 is set, replace the word by (word & ~1) + 2 in
 * one CAS and wake every sleeper.  Every thread blocked at the time sees the
 * word change; all but one of them are spurious wake-ups, which POSIX allows,
 * and no thread that starts waiting later can take the wake-up away.  A waiter
 * reads nothing of the condvar after it wakes.  The word would have to wrap
 * around 2^31 signals between a waiter's registration and its sleep for a
 * wake-up to be missed.  destroy of a shared condvar returns 0 at once.
 *
 * Deadlines are absolute, on the condvar's clock (condattr clock, by
 * default CLOCK_REALTIME) or clockwait's clock, and go to the kernel as they
 * are: FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, and one
 * on CLOCK_REALTIME with FUTEX_CLOCK_REALTIME, so a change of the wall clock
 * moves a realtime deadline as POSIX wants.  That is why the sleeps here
 * are absolute futex waits rather than the wait layer's relative
 * baton_park_timeout(): through the wait layer's baton_futex_wait_abs(),
 * which can also sleep on a shared futex.  Deadlines are checked by the
 * callers (EINVAL for a bad tv_nsec or clock, before the mutex is touched,
 * as glibc); ETIMEDOUT comes with the mutex held again.
 *
 * destroy returns 0 as glibc does, once no leaver is still unlinking itself;
 * it returns EBUSY (where glibc 2.36 would block for ever) only when a
 * private condvar still queues a waiter that was never signalled.
 *
 * Garbage.  A condvar that was never initialised (nor zeroed) holds
 * whatever its memory held, and its queue pointers must not be followed.  A
 * check word vouches for them: every change of head and tail (all under the
 * internal lock) stores cv_check_of(head, tail), which is 0 for an empty
 * queue, so zeroed memory is a valid condvar.  Under the lock, before the
 * queue is read, a queue the check word does not vouch for is emptied: no
 * thread can be waiting on it, since queueing a waiter writes the check.
 * So signal, broadcast and destroy of such a condvar return 0 (glibc's,
 * when its waiter count reads 0), and a wait waits on an empty queue.  A
 * garbage internal lock word reads as held and blocks, as a garbage
 * internal lock of glibc's condvar does.
 */
#include "cv.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

/* --- layout ------------------------------------------------------------------ */

/* States of a waiter record's word.  Only W_PARKED has sleepers. */
enum {
    W_WAITING = 0,    /* queued, awake */
    W_PARKED = 1,     /* queued, asleep or about to sleep: a waker must futex-wake */
    W_LEAVING = 2,    /* queued, gave up (deadline, cancellation): unlinks itself */
    W_WOKEN = 3,      /* dequeued by broadcast, or by a signal with nobody behind it */
    W_WOKEN_PASS = 4, /* dequeued by a signal with waiters behind it: a cancelled
                         waiter passes it on */
};

typedef struct baton_cv_waiter {
    struct baton_cv_waiter *next, *prev; /* guarded by the condvar's lock */
    _Atomic uint32_t state;              /* W_*; the waiter sleeps on it */
} cv_waiter_t;

typedef baton_cv_t cv_t;

_Static_assert(sizeof(cv_t) == 40, "the layout of cv.h");
_Static_assert(sizeof(cv_t) <= sizeof(pthread_cond_t), "cv_t must fit inside pthread_cond_t");
_Static_assert(_Alignof(cv_t) <= _Alignof(pthread_cond_t), "cv_t must not need more alignment");

#define CV_MAGIC 0x43564b31u /* "CVK1" */

/* The check word of a queue: 0 when it is empty. */
static inline uint32_t cv_check_of(const cv_waiter_t *head, const cv_waiter_t *tail)
{
    if (head == NULL && tail == NULL)
        return 0;
    uint64_t x = (uint64_t)(uintptr_t)head ^ ((uint64_t)(uintptr_t)tail * 0x9e3779b97f4a7c15u);
    uint32_t c = CV_MAGIC ^ (uint32_t)x ^ (uint32_t)(x >> 32);
    return c != 0 ? c : CV_MAGIC;
}

/* Under the lock, after head or tail changed. */
static inline void cv_seal(cv_t *cv)
{
    /* Relaxed: under the lock. */
    cv->check = cv_check_of(baton_load(&cv->head, memory_order_relaxed), cv->tail);
}

/* Under the lock, before the queue is read: a queue the check word does not
 * vouch for is garbage (see the top of this file), and is emptied. */
static inline void cv_validate(cv_t *cv)
{
    /* Relaxed: under the lock. */
    if (BATON_UNLIKELY(cv->check != cv_check_of(baton_load(&cv->head, memory_order_relaxed), cv->tail))) {
        baton_store(&cv->head, NULL, memory_order_relaxed);
        cv->tail = NULL;
        cv->check = 0;
    }
}

/* What the cancellation handler needs. */
typedef struct cv_ctx {
    cv_t *cv;
    const baton_cv_mutex_t *m;
    cv_waiter_t *w; /* NULL for a shared condvar */
    uint32_t seq;   /* shared condvar: the word's value to sleep on */
} cv_ctx_t;

/* --- sleeping ---------------------------------------------------------------- */

/* The one place a waiter can be cancelled: asynchronous cancellation is on
 * for the syscall only.  Switching it on acts at once on a request already
 * pending; one that arrives during the sleep interrupts it.  Either way the
 * cleanup handler pushed by cv_block_cancellable() runs. */
static int cv_sleep(_Atomic uint32_t *word, uint32_t val, bool shared, clockid_t clock,
                    const struct timespec *abstime)
{
    int oldtype;
    (void)pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &oldtype);
    int rc = baton_futex_wait_abs(word, val, clock, abstime, shared);
    (void)pthread_setcanceltype(oldtype, NULL);
    return rc;
}

/* --- the queue of a private condvar (all under cv->lock) ------------------- */

static void cv_enqueue(cv_t *cv, cv_waiter_t *w)
{
    baton_syslock_lock(&cv->lock);
    cv_validate(cv);
    w->next = NULL;
    w->prev = cv->tail;
    if (cv->tail != NULL)
        cv->tail->next = w;
    else
        /* Relaxed: the lock orders it for wakers; the lock-free peek in
         * pthread_cond_signal/broadcast is ordered by the user's mutex. */
        baton_store(&cv->head, w, memory_order_relaxed);
    cv->tail = w;
    cv_seal(cv);
    baton_syslock_unlock(&cv->lock);
}

/* Unlink a record given its links, read earlier: the record itself is not
 * touched (it may already be gone), only its neighbours, which are queued
 * and therefore alive. */
static void cv_unlink(cv_t *cv, cv_waiter_t *prev, cv_waiter_t *next)
{
    if (prev != NULL)
        prev->next = next;
    else
        baton_store(&cv->head, next, memory_order_relaxed); /* Relaxed: under the lock, see cv_enqueue() */
    if (next != NULL)
        next->prev = prev;
    else
        cv->tail = prev;
    cv_seal(cv);
}

/* Signal: mark the oldest record that is not leaving, and unlink it.
 * Returns its word if its owner sleeps (to futex-wake once the lock is
 * released), else NULL. */
static _Atomic uint32_t *cv_signal_locked(cv_t *cv)
{
    /* Relaxed: we hold the lock that orders every write of head. */
    cv_waiter_t *w = baton_load(&cv->head, memory_order_relaxed);
    while (w != NULL) {
        cv_waiter_t *prev = w->prev, *next = w->next; /* read before the record may vanish */
        /* Relaxed: the CAS below decides. */
        uint32_t s = baton_load(&w->state, memory_order_relaxed);
        while (s != W_LEAVING) {
            /* Release: pairs with the acquire loads of the waiter in
             * cv_block()/cv_leave(); our reads of the links above happen
             * before the waiter may return and reuse its stack.  A CAS, not
             * a store: the waiter may concurrently claim W_PARKED or
             * W_LEAVING. */
            if (baton_cas(&w->state, &s, next != NULL ? W_WOKEN_PASS : W_WOKEN, memory_order_release,
                          memory_order_relaxed)) {
                cv_unlink(cv, prev, next);
                return s == W_PARKED ? &w->state : NULL;
            }
        }
        w = next; /* leaving: it unlinks itself */
    }
    return NULL;
}

/* Give the wake-up to the next waiter: the lock, signal, unlock, wake. */
static void cv_signal_private(cv_t *cv)
{
    baton_syslock_lock(&cv->lock);
    cv_validate(cv);
    _Atomic uint32_t *wake = cv_signal_locked(cv);
    baton_syslock_unlock(&cv->lock);
    if (wake != NULL)
        baton_futex_wake_n(wake, 1, false); /* the record may be gone: harmless (header) */
}

#define CV_WAKE_BATCH 16

static void cv_broadcast_private(cv_t *cv)
{
    _Atomic uint32_t *wake[CV_WAKE_BATCH];
    size_t n = 0;
    cv_waiter_t *keep_head = NULL, *keep_tail = NULL; /* the leavers stay queued */
    baton_syslock_lock(&cv->lock);
    cv_validate(cv);
    /* Relaxed: under the lock. */
    cv_waiter_t *w = baton_load(&cv->head, memory_order_relaxed);
    while (w != NULL) {
        cv_waiter_t *next = w->next; /* read before the record may vanish */
        /* Relaxed: the CAS below decides. */
        uint32_t s = baton_load(&w->state, memory_order_relaxed);
        for (;;) {
            if (s == W_LEAVING) {
                w->prev = keep_tail;
                w->next = NULL;
                if (keep_tail != NULL)
                    keep_tail->next = w;
                else
                    keep_head = w;
                keep_tail = w;
                break;
            }
            /* Release: pairs with the waiter's acquire, as in
             * cv_signal_locked(). */
            if (baton_cas(&w->state, &s, W_WOKEN, memory_order_release, memory_order_relaxed)) {
                if (s == W_PARKED) {
                    if (n == CV_WAKE_BATCH) {
                        /* Many sleepers: wake a batch while still holding
                         * the lock (only a little longer). */
                        for (size_t i = 0; i < n; i++)
                            baton_futex_wake_n(wake[i], 1, false);
                        n = 0;
                    }
                    wake[n++] = &w->state;
                }
                break;
            }
        }
        w = next;
    }
    baton_store(&cv->head, keep_head, memory_order_relaxed); /* Relaxed: under the lock */
    cv->tail = keep_tail;
    cv_seal(cv);
    baton_syslock_unlock(&cv->lock);
    for (size_t i = 0; i < n; i++)
        baton_futex_wake_n(wake[i], 1, false); /* records may be gone: harmless (header) */
}

/* A waiter gives up (deadline, cancellation, or its mutex would not unlock).
 * Returns W_LEAVING if it took itself off the queue, or the woken state a
 * waker set first (then the condvar was not touched). */
static uint32_t cv_leave(cv_t *cv, cv_waiter_t *w)
{
    /* Acquire: pairs with the waker's release CAS (we may return at once). */
    uint32_t s = baton_load(&w->state, memory_order_acquire);
    for (;;) {
        if (s == W_WOKEN || s == W_WOKEN_PASS)
            return s;
        /* Acquire on failure: as the load above (C11 wants success at
         * least as strong; the lock taken next is what orders the
         * unlinking). */
        if (baton_cas(&w->state, &s, W_LEAVING, memory_order_acquire, memory_order_acquire))
            break;
    }
    /* Still queued: wakers skip us, and destroy waits for us (see header). */
    baton_syslock_lock(&cv->lock);
    cv_unlink(cv, w->prev, w->next);
    bool notify = cv->dwait != 0;
    if (notify)
        /* Relaxed: destroy reads it under the lock; its futex wait compares
         * it in the kernel. */
        baton_fetch_add(&cv->dgen, 1u, memory_order_relaxed);
    baton_syslock_unlock(&cv->lock);
    if (notify)
        baton_futex_wake_n(&cv->dgen, INT_MAX, false); /* destroy may have returned: harmless */
    return W_LEAVING;
}

/* Sleep until marked woken, or the deadline passes (ETIMEDOUT). */
static int cv_block(cv_waiter_t *w, clockid_t clock, const struct timespec *abstime)
{
    for (;;) {
        /* Acquire: pairs with the waker's release CAS in
         * cv_signal_locked()/cv_broadcast_private(). */
        uint32_t s = baton_load(&w->state, memory_order_acquire);
        if (s == W_WOKEN || s == W_WOKEN_PASS)
            return 0;
        /* Announce the sleep, so that the waker knows to futex-wake.
         * Relaxed: only the value matters; a failure re-reads above with
         * acquire. */
        if (s == W_WAITING && !baton_cas(&w->state, &s, W_PARKED, memory_order_relaxed, memory_order_relaxed))
            continue;
        if (cv_sleep(&w->state, W_PARKED, false, clock, abstime) == ETIMEDOUT)
            return ETIMEDOUT;
    }
}

/* --- cancellation -------------------------------------------------------------- */

static void cv_cancelled(void *arg)
{
    cv_ctx_t *c = arg;
    if (c->w != NULL && cv_leave(c->cv, c->w) == W_WOKEN_PASS)
        cv_signal_private(c->cv); /* do not consume a signal others wait for */
    /* The mutex is held again before the program's own handlers run.  A
     * handler cannot return EOWNERDEAD: the program's handlers find the
     * mutex inconsistent through its next use. */
    (void)c->m->lock(c->m->m);
}

/* The sleep, bracketed by the cleanup handler.  Kept apart from the rest of
 * the wait so that nothing lives across the handler's setjmp. */
static int cv_block_cancellable(cv_ctx_t *ctx, clockid_t clock, const struct timespec *abstime)
{
    int rc;
    pthread_cleanup_push(cv_cancelled, ctx);
    if (ctx->w != NULL)
        rc = cv_block(ctx->w, clock, abstime);
    else
        rc = cv_sleep(&ctx->cv->seq, ctx->seq, true, clock, abstime);
    pthread_cleanup_pop(0);
    return rc;
}

/* --- waits ----------------------------------------------------------------------- */

static int cv_wait_private(cv_t *cv, const baton_cv_mutex_t *m, clockid_t clock,
                           const struct timespec *abstime)
{
    cv_waiter_t w;
    atomic_init(&w.state, W_WAITING);
    cv_enqueue(cv, &w); /* before the unlock: a signal after it finds us */
    int rc = m->unlock(m->m);
    if (BATON_UNLIKELY(rc != 0)) {
        /* Not the owner (EPERM): no wait took place. */
        if (cv_leave(cv, &w) == W_WOKEN_PASS)
            cv_signal_private(cv);
        return rc;
    }
    cv_ctx_t ctx = {.cv = cv, .m = m, .w = &w};
    rc = cv_block_cancellable(&ctx, clock, abstime);
    if (rc == ETIMEDOUT && cv_leave(cv, &w) != W_LEAVING)
        rc = 0; /* woken as the deadline passed: the wake-up is ours, keep it */
    int lrc = m->lock(m->m);
    return lrc != 0 ? lrc : rc;
}

static int cv_wait_shared(cv_t *cv, const baton_cv_mutex_t *m, clockid_t clock,
                          const struct timespec *abstime)
{
    /* Register while holding the mutex: a signal made after the program
     * changed its predicate (under the mutex) finds bit 0 and changes the
     * word.  Seq_cst: with the signaller's seq_cst load/CAS, for signals made
     * without the mutex. */
    uint32_t seq = baton_fetch_or(&cv->seq, 1u, memory_order_seq_cst) | 1u;
    int rc = m->unlock(m->m);
    if (BATON_UNLIKELY(rc != 0))
        return rc; /* a spurious wake-up for nobody */
    cv_ctx_t ctx = {.cv = cv, .m = m, .w = NULL, .seq = seq};
    rc = cv_block_cancellable(&ctx, clock, abstime);
    int lrc = m->lock(m->m);
    return lrc != 0 ? lrc : rc;
}

int baton_cv_wait(cv_t *cv, const baton_cv_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
    if (BATON_UNLIKELY(cv->flags & BATON_CV_SHARED))
        return cv_wait_shared(cv, m, clock, abstime);
    return cv_wait_private(cv, m, clock, abstime);
}

static void cv_wake_shared(cv_t *cv)
{
    /* Seq_cst: pairs with the waiter's seq_cst fetch_or in cv_wait_shared():
     * either we see its bit, or it registered after this signal. */
    uint32_t s = baton_load(&cv->seq, memory_order_seq_cst);
    do {
        if (!(s & 1u))
            return; /* nobody registered since the last wake-up */
    } while (!baton_cas(&cv->seq, &s, (s & ~1u) + 2u, memory_order_seq_cst, memory_order_seq_cst));
    baton_futex_wake_n(&cv->seq, INT_MAX, true);
}

int baton_cv_destroy(cv_t *cv)
{
    if (cv->flags & BATON_CV_SHARED)
        return 0;
    baton_syslock_lock(&cv->lock);
    cv_validate(cv);
    for (;;) {
        /* Relaxed: under the lock. */
        cv_waiter_t *w = baton_load(&cv->head, memory_order_relaxed);
        if (w == NULL)
            break;
        for (; w != NULL; w = w->next) {
            /* Relaxed: any value other than leaving means "never signalled"
             * (woken records are off the queue). */
            if (baton_load(&w->state, memory_order_relaxed) != W_LEAVING) {
                baton_syslock_unlock(&cv->lock);
                return EBUSY;
            }
        }
        /* Only leavers remain: they are about to take the lock and unlink
         * themselves.  Sleep until one has (cv_leave() bumps dgen). */
        cv->dwait = 1;
        uint32_t gen = baton_load(&cv->dgen, memory_order_relaxed); /* Relaxed: under the lock */
        baton_syslock_unlock(&cv->lock);
        (void)baton_futex_wait_abs(&cv->dgen, gen, CLOCK_MONOTONIC, NULL, false);
        baton_syslock_lock(&cv->lock);
    }
    cv->dwait = 0;
    baton_syslock_unlock(&cv->lock);
    return 0;
}

/* --- the rest of cv.h ----------------------------------------------------------- */

void baton_cv_init(cv_t *cv, uint32_t flags)
{
    memset(cv, 0, sizeof *cv);
    cv->flags = flags;
}

clockid_t baton_cv_clock(const cv_t *cv)
{
    return (cv->flags & BATON_CV_MONOTONIC) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

void baton_cv_signal(cv_t *cv)
{
    if (BATON_UNLIKELY(cv->flags & BATON_CV_SHARED)) {
        cv_wake_shared(cv);
        return;
    }
    /* Relaxed peek: nobody queued, nothing to do.  A waiter enqueued before
     * releasing the mutex the caller holds (or held) is seen: the mutex
     * orders its store of head before this load. */
    if (baton_load(&cv->head, memory_order_relaxed) == NULL)
        return;
    cv_signal_private(cv);
}

void baton_cv_broadcast(cv_t *cv)
{
    if (BATON_UNLIKELY(cv->flags & BATON_CV_SHARED)) {
        cv_wake_shared(cv);
        return;
    }
    /* Relaxed peek: as in baton_cv_signal(). */
    if (baton_load(&cv->head, memory_order_relaxed) == NULL)
        return;
    cv_broadcast_private(cv);
}
