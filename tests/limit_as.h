/* limit_as.h - lowering RLIMIT_AS to (about) what a test maps already, for
 * the tests of running out of memory (tests/test_exhaust.c,
 * tests/preload/exhaust.c). */
#ifndef BATON_TESTS_LIMIT_AS_H
#define BATON_TESTS_LIMIT_AS_H

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* Touch the stack now: growing it later would count against the limit. */
static __attribute__((noinline)) void limit_as_pre_fault_stack(void)
{
    volatile char pad[256 * 1024];
    for (size_t i = 0; i < sizeof pad; i += 4096)
        pad[i] = 1;
}

/* Lower RLIMIT_AS to the address space mapped now plus `slack` bytes (the
 * stack touched first); *old receives the limit before.  0, or -1. */
static inline int limit_as_lower(size_t slack, struct rlimit *old)
{
    limit_as_pre_fault_stack();
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = -1;
    if (f != NULL) {
        if (fscanf(f, "%ld", &pages) != 1)
            pages = -1;
        fclose(f);
    }
    if (pages <= 0 || getrlimit(RLIMIT_AS, old) != 0)
        return -1;
    struct rlimit lim = *old;
    lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + slack;
    if (old->rlim_cur != RLIM_INFINITY && old->rlim_cur < lim.rlim_cur)
        lim.rlim_cur = old->rlim_cur;
    return setrlimit(RLIMIT_AS, &lim);
}

#endif
