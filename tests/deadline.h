/* deadline.h - absolute deadlines for the timed-wait tests: a time `ns` from
 * now on clock c (ns may be negative: a deadline already past), and how far
 * past a deadline the clock is now; and the time between two readings. */
#ifndef BATON_TESTS_DEADLINE_H
#define BATON_TESTS_DEADLINE_H

#include <stdint.h>
#include <time.h>

static inline struct timespec after_ns(clockid_t c, int64_t ns)
{
    struct timespec t;
    clock_gettime(c, &t);
    int64_t total = (int64_t)t.tv_nsec + ns;
    t.tv_sec += (time_t)(total / 1000000000);
    t.tv_nsec = (long)(total % 1000000000);
    /* C's % keeps the dividend's sign: a past deadline whose nanoseconds
     * went below zero borrows a second, or it is not a valid timespec (and a
     * wait would answer EINVAL, not ETIMEDOUT). */
    if (t.tv_nsec < 0) {
        t.tv_nsec += 1000000000;
        t.tv_sec--;
    }
    return t;
}

/* b - a, in nanoseconds. */
static inline int64_t diff_ns(const struct timespec *a, const struct timespec *b)
{
    return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000 + (b->tv_nsec - a->tv_nsec);
}

static inline int64_t since_ns(clockid_t c, const struct timespec *t)
{
    struct timespec now;
    clock_gettime(c, &now);
    return diff_ns(t, &now);
}

#endif
