/* futex.c - the one park/wake module: Linux futex wait and wake.
 *
 * Private futexes (FUTEX_PRIVATE_FLAG) for baton's locks, which live in one
 * process; the condition variable's process-shared mode (src/cond/) asks
 * for shared ones through baton_futex_wait_abs()/baton_futex_wake_n().
 *
 * Timed sleeps come in two forms.  A relative timeout (FUTEX_WAIT) bounds
 * the sleeps of protocols whose wake-ups are best effort (relay's and
 * runner's safety nets).  A deadline (FUTEX_WAIT_BITSET) is absolute, on
 * CLOCK_MONOTONIC or, with FUTEX_CLOCK_REALTIME, on CLOCK_REALTIME: the
 * kernel then follows changes of the wall clock, as POSIX asks of a
 * realtime deadline, and a deadline is never missed by the time spent
 * between reading a clock and entering the kernel.
 */
#include "wait_internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void baton_park(_Atomic uint32_t *word, uint32_t val)
{
    /* The kernel compares *word with val under its hash-bucket lock, so a
     * wake that changed the word first makes this return EAGAIN at once: no
     * wake-up is lost.  EINTR and spurious returns are fine: every caller
     * re-checks its condition in a loop. */
    (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

void baton_park_timeout(_Atomic uint32_t *word, uint32_t val, uint64_t ns)
{
    /* FUTEX_WAIT takes a relative timeout. */
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

void baton_wake_all(_Atomic uint32_t *word)
{
    (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void baton_wake_one(_Atomic uint32_t *word)
{
    (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* --- deadlines -------------------------------------------------------------- */

uint64_t baton_deadline_left(const baton_deadline_t *d)
{
    struct timespec now;
    clock_gettime(d->clock, &now);
    if (now.tv_sec > d->at.tv_sec || (now.tv_sec == d->at.tv_sec && now.tv_nsec >= d->at.tv_nsec))
        return 0;
    return (uint64_t)(d->at.tv_sec - now.tv_sec) * 1000000000u + (uint64_t)d->at.tv_nsec -
           (uint64_t)now.tv_nsec;
}

int baton_futex_wait_abs(_Atomic uint32_t *word, uint32_t val, clockid_t clock,
                         const struct timespec *abstime, bool shared)
{
    if (abstime != NULL && abstime->tv_sec < 0)
        return ETIMEDOUT; /* before the epoch: long past (the kernel would say EINVAL) */
    int op = FUTEX_WAIT_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);
    if (abstime != NULL && clock == CLOCK_REALTIME)
        op |= FUTEX_CLOCK_REALTIME;
    int saved = errno;
    long r = syscall(SYS_futex, (uint32_t *)word, op, val, abstime, NULL, FUTEX_BITSET_MATCH_ANY);
    int rc = (r == -1 && errno == ETIMEDOUT) ? ETIMEDOUT : 0;
    errno = saved;
    return rc;
}

void baton_futex_wake_n(_Atomic uint32_t *word, int n, bool shared)
{
    int saved = errno;
    (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG), n, NULL, NULL,
                  0);
    errno = saved;
}

int baton_park_until(_Atomic uint32_t *word, uint32_t val, const baton_deadline_t *d)
{
    return baton_futex_wait_abs(word, val, d->clock, &d->at, false);
}

void baton_park_for(_Atomic uint32_t *word, uint32_t val, uint64_t ns, const baton_deadline_t *d)
{
    /* The deadline comes first: sleep until it in the kernel, exactly. */
    if (d != NULL && baton_deadline_left(d) <= ns) {
        (void)baton_park_until(word, val, d);
        return;
    }
    int saved = errno;
    baton_park_timeout(word, val, ns);
    errno = saved;
}
