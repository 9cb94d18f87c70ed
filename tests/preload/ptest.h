/* ptest.h - what the interposer's conformance tests share.
 *
 * Every test is a separate program that must pass under plain glibc (the
 * control) and under libbaton-preload.so with every interposable kind: the
 * expectations are glibc's own behaviour.  A failed check prints the test,
 * the phase, the configured kind and what happened on stderr, and the
 * program exits 1 at the end (or at once, for checks after which going on
 * makes no sense).  A watchdog (alarm) turns a hang into a failure that
 * names the phase.  On success one line goes to stdout, unless PTEST_QUIET
 * is set (the driver uses that to check that the interposer prints nothing
 * on the program's stdout).
 */
#ifndef BATON_PTEST_H
#define BATON_PTEST_H

#include <baton/atomic.h>
#include <baton/preload.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *ptest_name = "?";
/* What the test is doing, for failure and watchdog messages. */
static const char *volatile ptest_phase = "start";
/* How far the phase has got (items done, rounds...), for the watchdog's
 * message, so that a slow run (a high count) can be told from a hang (a
 * low one).  Lock-free, so the handler may read it; relaxed everywhere: a
 * report. */
static _Atomic long ptest_progress;
static _Atomic int ptest_failures; /* failed checks, from any thread */

static inline const char *ptest_errname(int e)
{
    switch (e) {
    case 0: return "0";
    case EBUSY: return "EBUSY";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case ENOTSUP: return "ENOTSUP";
    default: return "?";
    }
}

/* The spec under test, for messages. */
static inline const char *ptest_kind(void)
{
    const char *k = getenv("BATON_LOCK");
    if (dlsym(RTLD_DEFAULT, "baton_preload_info") == NULL)
        return "control (no interposer)";
    return k && k[0] ? k : "default";
}

static inline void ptest_vfail(int line, const char *fmt, va_list ap)
{
    char buf[768];
    vsnprintf(buf, sizeof buf, fmt, ap);
    fprintf(stderr, "FAIL %s [%s] line %d, %s: %s\n", ptest_name, ptest_kind(), line, ptest_phase, buf);
    fflush(stderr);
    baton_fetch_add(&ptest_failures, 1, memory_order_relaxed); /* a count; read after the joins */
}

static inline void ptest_fail(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void ptest_fail(int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ptest_vfail(line, fmt, ap);
    va_end(ap);
}

/* A failure after which going on is pointless (a lock in an unknown state). */
static inline void ptest_fatal(int line, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static inline void ptest_fatal(int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ptest_vfail(line, fmt, ap);
    va_end(ap);
    _exit(1);
}

/* CHECK(cond, printf-style message): count, report, go on. */
#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond))                                                                                         \
            ptest_fail(__LINE__, __VA_ARGS__);                                                               \
    } while (0)

/* EXPECT(call, want): an error-number returning call must return `want`. */
#define EXPECT(call, want)                                                                                   \
    do {                                                                                                     \
        int rc_ = (call);                                                                                    \
        int want_ = (want);                                                                                  \
        if (rc_ != want_)                                                                                    \
            ptest_fail(__LINE__, "%s returned %d (%s), expected %s", #call, rc_, ptest_errname(rc_),         \
                       ptest_errname(want_));                                                                \
    } while (0)

/* As EXPECT, but stop the program on a mismatch. */
#define REQUIRE(call, want)                                                                                  \
    do {                                                                                                     \
        int rc_ = (call);                                                                                    \
        int want_ = (want);                                                                                  \
        if (rc_ != want_)                                                                                    \
            ptest_fatal(__LINE__, "%s returned %d (%s), expected %s", #call, rc_, ptest_errname(rc_),        \
                        ptest_errname(want_));                                                               \
    } while (0)

static inline void ptest_on_alarm(int sig)
{
    (void)sig;
    /* Async-signal-safe: write(2) only. */
    char buf[512];
    int n =
        snprintf(buf, sizeof buf, "FAIL %s: watchdog: still in phase '%s', progress %ld (hang or deadlock)\n",
                 ptest_name, ptest_phase, atomic_load_explicit(&ptest_progress, memory_order_relaxed));
    if (n > 0) {
        ssize_t w = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
        (void)w;
    }
    _exit(1);
}

static inline void ptest_on_crash(int sig)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "FAIL %s: signal %d (%s) in phase '%s'\n", ptest_name, sig,
                     sig == SIGSEGV  ? "SIGSEGV"
                     : sig == SIGBUS ? "SIGBUS"
                                     : "SIGABRT",
                     ptest_phase);
    if (n > 0) {
        ssize_t w = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
        (void)w;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Arm (or re-arm, e.g. in a forked child) the watchdog. */
static inline void ptest_watchdog(unsigned seconds)
{
    signal(SIGALRM, ptest_on_alarm);
    alarm(seconds);
}

static inline void ptest_begin(const char *name, unsigned watchdog_seconds)
{
    ptest_name = name;
    setvbuf(stdout, NULL, _IOLBF, 0);
    ptest_watchdog(watchdog_seconds);
    signal(SIGSEGV, ptest_on_crash);
    signal(SIGBUS, ptest_on_crash);
    signal(SIGABRT, ptest_on_crash);
}

/* The exit status; the success line unless PTEST_QUIET. */
static inline int ptest_end(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int ptest_end(const char *fmt, ...)
{
    alarm(0);
    /* Relaxed: the threads that counted have been joined. */
    int failures = baton_load(&ptest_failures, memory_order_relaxed);
    if (failures) {
        fprintf(stderr, "FAIL %s [%s]: %d check(s) failed\n", ptest_name, ptest_kind(), failures);
        return 1;
    }
    const char *q = getenv("PTEST_QUIET");
    if (q == NULL || q[0] == '\0') {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        printf("ok %s [%s]: %s\n", ptest_name, ptest_kind(), buf);
    }
    return 0;
}

/* --- the interposer, when present --------------------------------------------- */

typedef int (*ptest_info_fn)(int, baton_preload_info_t *);

/* baton_preload_info, or NULL without the interposer. */
static inline ptest_info_fn ptest_interposer(void)
{
    void *f = dlsym(RTLD_DEFAULT, "baton_preload_info");
    ptest_info_fn fn;
    memcpy(&fn, &f, sizeof fn);
    return fn;
}

/* --- time ----------------------------------------------------------------------- */

static inline struct timespec ptest_in(clockid_t clock, int64_t ns)
{
    struct timespec t;
    clock_gettime(clock, &t);
    int64_t n = (int64_t)t.tv_nsec + ns;
    t.tv_sec += (time_t)(n / 1000000000);
    n %= 1000000000;
    if (n < 0) {
        n += 1000000000;
        t.tv_sec -= 1;
    }
    t.tv_nsec = (long)n;
    return t;
}

static inline void ptest_sleep_ms(unsigned ms)
{
    struct timespec d = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0 && errno == EINTR) {
    }
}

/* --- threads ---------------------------------------------------------------------- */

static inline pthread_t ptest_spawn(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    int rc = pthread_create(&t, NULL, fn, arg);
    if (rc != 0)
        ptest_fatal(__LINE__, "pthread_create: %s", strerror(rc));
    return t;
}

static inline void *ptest_join(pthread_t t)
{
    void *r = NULL;
    int rc = pthread_join(t, &r);
    if (rc != 0)
        ptest_fatal(__LINE__, "pthread_join: %s", strerror(rc));
    return r;
}

/* Run fn(arg) on another thread and return what it returned (an error
 * number carried as a pointer-sized integer). */
static inline int ptest_on_other_thread(void *(*fn)(void *), void *arg)
{
    return (int)(intptr_t)ptest_join(ptest_spawn(fn, arg));
}

/* A flag one thread raises and another waits for, without any pthread
 * object (so that it does not depend on what is being tested). */
typedef struct ptest_flag {
    _Atomic int v;
} ptest_flag_t;

static inline void ptest_raise(ptest_flag_t *f, int v)
{
    baton_store(&f->v, v, memory_order_release); /* pairs with the acquire in ptest_await() */
}

static inline void ptest_await(ptest_flag_t *f, int v)
{
    /* Acquire: pairs with the release in ptest_raise(). */
    while (baton_load(&f->v, memory_order_acquire) < v)
        sched_yield();
}

/* As ptest_await(), for at most ms milliseconds: true if the flag reached v. */
static inline bool ptest_await_ms(ptest_flag_t *f, int v, unsigned ms)
{
    for (unsigned i = 0; i < ms; i++) {
        /* Acquire: pairs with the release in ptest_raise(). */
        if (baton_load(&f->v, memory_order_acquire) >= v)
            return true;
        ptest_sleep_ms(1);
    }
    return baton_load(&f->v, memory_order_acquire) >= v; /* as above */
}

#endif
