/* baton/cond.h - condition variables over any baton lock.
 *
 *   baton_cond_t *c = baton_cond_new();
 *   baton_lock(l);
 *   while (!ready)
 *       baton_cond_wait(c, l);          // releases l, sleeps, re-takes l
 *   ...
 *   baton_unlock(l);
 *   // elsewhere, with or without l held:
 *   ready = 1; baton_cond_signal(c);    // or baton_cond_broadcast(c)
 *   ...
 *   baton_cond_free(c);
 *
 * Semantics are POSIX's (pthread_cond_*).  A signal wakes one thread that
 * was waiting when it was sent, and no thread that starts waiting later can
 * take it (waiters are woken in the order they began to wait); a broadcast
 * wakes every waiter.  Spurious wake-ups are allowed by POSIX, so wait in a
 * loop on the predicate.  The same implementation serves the interposer's
 * pthread_cond_t (src/cond/cv.c).
 *
 * Life.  baton_cond_new() allocates (NULL and errno ENOMEM if it cannot);
 * baton_cond_free() frees.  A condition variable may be freed as soon as
 * no thread waits on it, in particular right after a broadcast (or after a
 * signal to its last waiter): a woken waiter never touches the condition
 * variable again.  Freeing one on which a waiter that was never signalled
 * still waits returns EBUSY and frees nothing.  It is not tied to one lock,
 * but all waits at one time must use the same lock (as POSIX requires).
 *
 * Waiting.  The caller must hold `lock` through baton_lock() (or trylock,
 * timedlock): the wait releases it with baton_unlock() and re-takes it
 * with baton_lock(), so it works over every kind with lock/unlock, the
 * delegation kinds (qd, mrqd, hqd, fc: their lock() holder) and the lock
 * servers included.  Errors, with a message from baton_last_error():
 *   EINVAL   timedwait/clockwait: tv_nsec outside [0, 1e9) or a NULL
 *            abstime; clockwait: a clock other than CLOCK_REALTIME or
 *            CLOCK_MONOTONIC (the lock is not touched)
 *   ENOTSUP  the kind offers no lock (rcl, ccsynch), or the caller is
 *            inside an operation baton_execute()/baton_delegate() runs on
 *            this lock: such an operation may run on another thread (a
 *            helper, a combiner, a server), which must not let the lock
 *            go in the middle of it
 *   EPERM    (or the kind's unlock error) the caller does not hold the
 *            lock, where the kind or check=1 says so; nothing waited
 *   ETIMEDOUT  the deadline passed; the lock is held again
 * A wait is a cancellation point (as pthread_cond_wait): cancellation acts
 * only while the thread sleeps, and the lock is held again before the
 * thread's cleanup handlers run.
 */
#ifndef BATON_COND_H
#define BATON_COND_H

#include <baton/visibility.h>
#include <sys/types.h> /* clockid_t, also under strict ISO C */
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct baton_lock baton_lock_t;
typedef struct baton_cond baton_cond_t;

BATON_API baton_cond_t *baton_cond_new(void);
BATON_API int baton_cond_free(baton_cond_t *cond);

BATON_API int baton_cond_wait(baton_cond_t *cond, baton_lock_t *lock);
/* Wait until abstime on CLOCK_REALTIME (timedwait) or on `clock`
 * (clockwait: CLOCK_REALTIME or CLOCK_MONOTONIC). */
BATON_API int baton_cond_timedwait(baton_cond_t *cond, baton_lock_t *lock, const struct timespec *abstime);
BATON_API int baton_cond_clockwait(baton_cond_t *cond, baton_lock_t *lock, clockid_t clock,
                                   const struct timespec *abstime);
/* Always 0. */
BATON_API int baton_cond_signal(baton_cond_t *cond);
BATON_API int baton_cond_broadcast(baton_cond_t *cond);

#ifdef __cplusplus
}
#endif
#endif /* BATON_COND_H */
