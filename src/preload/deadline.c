/* deadline.c - the interposer's timed calls that poll (the lock servers'
 * timed waits, which cannot leave a queue) (see preload.h). */
#include "preload.h"

#include <errno.h>
#include <time.h>

/* --- deadlines -------------------------------------------------------------------- */

uint64_t pl_ns_until(clockid_t clock, const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(clock, &now);
    if (now.tv_sec > abstime->tv_sec || (now.tv_sec == abstime->tv_sec && now.tv_nsec >= abstime->tv_nsec))
        return 0;
    return (uint64_t)(abstime->tv_sec - now.tv_sec) * 1000000000u + (uint64_t)abstime->tv_nsec -
           (uint64_t)now.tv_nsec;
}

bool pl_deadline_passed(clockid_t clock, const struct timespec *abstime)
{
    return pl_ns_until(clock, abstime) == 0;
}

int pl_timed_acquire(int (*try)(void *), void *arg, clockid_t clock, const struct timespec *abstime)
{
    uint64_t pause = 1000; /* ns */
    for (;;) {
        if (try(arg) == 0)
            return 0;
        uint64_t left = pl_ns_until(clock, abstime);
        if (left == 0)
            return ETIMEDOUT;
        uint64_t ns = pause < left ? pause : left;
        struct timespec d = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
        nanosleep(&d, NULL);
        if (pause < 1000000)
            pause *= 2;
    }
}
