/* cond.c - pthread_cond_* for libbaton-preload.so.
 *
 * The condition variable is the library's (src/cond/cv.h, whose top says
 * how it works): its 40 bytes live inside the program's 48-byte
 * pthread_cond_t, so all-zero bytes (PTHREAD_COND_INITIALIZER, memset) are
 * a valid private condvar on CLOCK_REALTIME, and no init call or side table
 * is needed.  A wait releases and re-takes the mutex through
 * pthread_mutex_unlock/_lock, which inside this library are baton's own
 * (mutex.c: the configured kind, or glibc for robust and process-shared
 * mutexes; a robust relock's EOWNERDEAD is returned to the caller), so the
 * condvar works over every kind.
 *
 * This file adds what is pthread's: the attributes (pthread_condattr's
 * clock and process-shared flag become BATON_CV_MONOTONIC, BATON_CV_SHARED),
 * the checks glibc makes before the mutex is touched (EINVAL for a bad
 * tv_nsec, or a clock other than CLOCK_REALTIME/CLOCK_MONOTONIC in
 * clockwait), and the profiler's count of condition waits.  destroy
 * returns 0 as glibc does, once no waiter that gave up is still unlinking
 * itself; it returns EBUSY (where glibc 2.36 would block for ever) only
 * when a private condvar still queues a waiter that was never signalled.
 */
#include "preload.h"
#include "../cond/cv.h"

#include <errno.h>
#include <string.h>

_Static_assert(sizeof(baton_cv_t) <= sizeof(pthread_cond_t), "the condvar lives inside pthread_cond_t");
_Static_assert(_Alignof(baton_cv_t) <= _Alignof(pthread_cond_t), "and needs no more alignment");

static int cv_unlock(void *m) { return pthread_mutex_unlock(m); }
static int cv_lock(void *m) { return pthread_mutex_lock(m); }

/* Profiling: one condition wait on this mutex, attributed to the caller. */
__attribute__((noinline, cold)) static void cv_profile(pthread_mutex_t *m, const void *caller)
{
    pl_prof_cond_wait(pl_prof_get(m, PL_PROF_MUTEX, caller));
}

/* Every wait, once its arguments are checked: the profiler's count, then
 * baton's condvar. */
static int cv_wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime,
                   const void *caller)
{
    if (BATON_UNLIKELY(pl_profiling))
        cv_profile(m, caller);
    const baton_cv_mutex_t mx = {.unlock = cv_unlock, .lock = cv_lock, .m = m};
    return baton_cv_wait((baton_cv_t *)c, &mx, clock, abstime);
}

PRELOAD_API int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
    pl_init();
    uint32_t flags = 0;
    if (attr != NULL) {
        clockid_t clock;
        int pshared;
        if (pthread_condattr_getclock(attr, &clock) == 0 && clock == CLOCK_MONOTONIC)
            flags |= BATON_CV_MONOTONIC;
        if (pthread_condattr_getpshared(attr, &pshared) == 0 && pshared == PTHREAD_PROCESS_SHARED)
            flags |= BATON_CV_SHARED;
    }
    memset(c, 0, sizeof *c);
    baton_cv_init((baton_cv_t *)c, flags);
    return 0;
}

PRELOAD_API int pthread_cond_destroy(pthread_cond_t *c)
{
    pl_init();
    return baton_cv_destroy((baton_cv_t *)c);
}

PRELOAD_API int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    pl_init();
    return cv_wait(c, m, CLOCK_REALTIME, NULL, __builtin_return_address(0));
}

PRELOAD_API int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
    pl_init();
    if (!pl_timespec_valid(abstime))
        return EINVAL;
    return cv_wait(c, m, baton_cv_clock((const baton_cv_t *)c), abstime, __builtin_return_address(0));
}

PRELOAD_API int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
                                       const struct timespec *abstime)
{
    pl_init();
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    if (!pl_timespec_valid(abstime))
        return EINVAL;
    return cv_wait(c, m, clock, abstime, __builtin_return_address(0));
}

PRELOAD_API int pthread_cond_signal(pthread_cond_t *c)
{
    pl_init();
    baton_cv_signal((baton_cv_t *)c);
    return 0;
}

PRELOAD_API int pthread_cond_broadcast(pthread_cond_t *c)
{
    pl_init();
    baton_cv_broadcast((baton_cv_t *)c);
    return 0;
}
