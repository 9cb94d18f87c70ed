/* futex.c - the one park/wake module: Linux futex wait and wake.
 *
 * Private futexes (FUTEX_PRIVATE_FLAG): baton locks live in one process.
 */
#include <baton/wait.h>

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
