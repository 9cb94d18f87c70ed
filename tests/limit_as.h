/* limit_as.h - lowering RLIMIT_AS to (about) what a test maps already, for
 * the tests of running out of memory (tests/test_exhaust.c,
 * tests/preload/exhaust.c). */
#ifndef BATON_TESTS_LIMIT_AS_H
#define BATON_TESTS_LIMIT_AS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Is a thread named baton-calib (the wait layer's calibration, which the
 * first wait that needs a spin budget starts in the background) running? */
static inline int limit_as_calibrating(void)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        char path[300], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] == '.' ? NULL : fopen(path, "r");
        if (f == NULL)
            continue;
        found = fgets(name, sizeof name, f) != NULL && strncmp(name, "baton-calib", 11) == 0;
        fclose(f);
    }
    closedir(d);
    return found;
}

/* Touch the stack now: growing it later would count against the limit. */
static __attribute__((noinline)) void limit_as_pre_fault_stack(void)
{
    volatile char pad[256 * 1024];
    for (size_t i = 0; i < sizeof pad; i += 4096)
        pad[i] = 1;
}

/* Lower RLIMIT_AS to the address space mapped now plus `slack` bytes (the
 * stack touched first, and the calibration finished: its threads map their
 * stacks while it runs, which would take the slack); *old receives the
 * limit before.  0, or -1. */
static inline int limit_as_lower(size_t slack, struct rlimit *old)
{
    for (int i = 0; i < 400 && limit_as_calibrating(); i++) {
        struct timespec ms5 = {0, 5000000};
        nanosleep(&ms5, NULL);
    }
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
