/* cv.h - the condition variable, over any mutex: one implementation for
 * baton_cond_t (src/core/cond.c, over baton locks) and for the interposer's
 * pthread_cond_t (src/preload/cond.c, over whatever pthread_mutex_t is).
 *
 * The state fits in the 48 bytes of a pthread_cond_t, and all-zero bytes
 * (PTHREAD_COND_INITIALIZER, memset) are a valid private condition variable
 * on CLOCK_REALTIME: no init call, no side table.  A wait releases and
 * re-takes its mutex only through the two functions it is given, so it
 * works with every lock kind, and with glibc's own mutexes.  How it works
 * (the FIFO of waiter records on the waiters' stacks, the lifetime rules
 * that let a program free it right after a broadcast, cancellation, the
 * process-shared mode, garbage) is at the top of cv.c.
 */
#ifndef BATON_COND_CV_H
#define BATON_COND_CV_H

#include "../base/syslock.h"

#include <baton/atomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

enum {
    BATON_CV_MONOTONIC = 1u, /* timed waits without a clock of their own use CLOCK_MONOTONIC */
    BATON_CV_SHARED = 2u     /* process-shared: a sequence word, shared futexes */
};

struct baton_cv_waiter;

/* Layout (offsets in bytes): the interposer's garbage handling and its
 * pthread_cond_t depend on it. */
typedef struct baton_cv {
    baton_syslock_t lock;                   /*  0: guards the queue (private) */
    uint32_t flags;                         /*  4: BATON_CV_*, written at init only */
    _Atomic(struct baton_cv_waiter *) head; /*  8: oldest record; under lock, peeked without */
    struct baton_cv_waiter *tail;           /* 16: newest record, under lock */
    _Atomic uint32_t seq;                   /* 24: shared: the futex word */
    _Atomic uint32_t dgen;                  /* 28: destroy sleeps on it while leavers finish */
    uint32_t dwait;                         /* 32: destroy is waiting (under lock) */
    uint32_t check;                         /* 36: the check word of head and tail (under lock) */
} baton_cv_t;

/* How a wait releases and re-takes its mutex: unlock(m) before it sleeps
 * (an error, EPERM say, ends the wait with it, before any sleep), lock(m)
 * after it (its error, EOWNERDEAD say, is the wait's result).  Also what
 * the cancellation handler re-takes. */
typedef struct baton_cv_mutex {
    int (*unlock)(void *m);
    int (*lock)(void *m);
    void *m;
} baton_cv_mutex_t;

/* A fresh condition variable (flags: BATON_CV_*). */
void baton_cv_init(baton_cv_t *cv, uint32_t flags);
/* 0 once no waiter that gave up is still unlinking itself; EBUSY while a
 * waiter that was never signalled is queued (nothing changes then).  A
 * shared one: 0. */
int baton_cv_destroy(baton_cv_t *cv);
/* Release m, wait until signalled or until abstime (NULL: none; checked by
 * the caller) on `clock` passes, re-take m.  0, ETIMEDOUT (m held again),
 * or the error of m's unlock (no wait) or lock.  A cancellation point:
 * cancellation acts only during the sleep, and re-takes m first. */
int baton_cv_wait(baton_cv_t *cv, const baton_cv_mutex_t *m, clockid_t clock, const struct timespec *abstime);
void baton_cv_signal(baton_cv_t *cv);
void baton_cv_broadcast(baton_cv_t *cv);
/* The clock of a timed wait that names none (BATON_CV_MONOTONIC). */
clockid_t baton_cv_clock(const baton_cv_t *cv);

#endif
