/* barrier.c - pthread_barrier_* for libbaton-preload.so.
 *
 * BATON_BARRIER names the barrier (baton/barrier.h's spec grammar; unset or
 * empty: the default barrier spec; "pthread": glibc's own, every call
 * forwarded).  pthread_barrier_init creates a baton barrier of `count`
 * places and keeps a pointer to it in the pthread_barrier_t (32 bytes):
 *
 *   offset 0    the baton_barrier_t pointer
 *   offset 24   a check word: BARRIER_MAGIC ^ the pointer's low 32 bits
 *
 * glibc's own barrier uses the first 20 bytes (in, current_round, count,
 * shared, out), so the check word tells a baton barrier from a glibc one:
 * process-shared barriers (whose memory other processes map, where our
 * pointer would mean nothing) are initialised by glibc, with the check word
 * cleared, and every later call on them is forwarded.
 *
 * POSIX semantics: EINVAL for a count of 0 (and, as glibc, for counts of
 * UINT_MAX / 2 and more); exactly one PTHREAD_BARRIER_SERIAL_THREAD per
 * episode (baton_barrier_wait's BATON_BARRIER_SERIAL_THREAD is the same
 * value).  pthread_barrier_destroy, as in glibc, waits for threads released
 * by the last episode that have not yet left pthread_barrier_wait, so the
 * serial thread may destroy (and re-initialise) the barrier at once; if a
 * thread is still blocked in an unfinished episode (undefined behaviour in
 * POSIX; glibc waits forever) it gives EBUSY after about two seconds.
 *
 * One difference from glibc: a barrier has `count` places, and a thread
 * keeps its place from its first wait until it exits (baton/barrier.h), so
 * a program that lets more than `count` distinct live threads take turns at
 * one barrier gets EINVAL from the (count+1)-th.  BATON_BARRIER=pthread
 * serves such programs.
 */
#include "preload.h"
#include "../wait/wait_internal.h"
#include <baton/barrier.h>
#include <baton/baton.h>

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BARRIER_MAGIC 0x42544e42u /* "BNTB" */
/* Destroy waits at most this long for threads to leave a finished episode. */
#define DESTROY_PATIENCE_NS 2000000000ull

typedef struct pl_barrier {
    baton_barrier_t *b;
    uint32_t glibc_fields[4]; /* untouched; glibc's own end at offset 20 */
    uint32_t check;
    uint32_t unused;
} pl_barrier_t;

_Static_assert(sizeof(pl_barrier_t) <= sizeof(pthread_barrier_t), "the layout fits a pthread_barrier_t");
_Static_assert(offsetof(pl_barrier_t, check) >= 20, "the check word lies beyond glibc's fields");

typedef struct barrier_real {
    int (*init)(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned);
    int (*wait)(pthread_barrier_t *);
    int (*destroy)(pthread_barrier_t *);
} barrier_real_t;

static barrier_real_t real;
static bool stock;
static char spec[160];
static _Atomic int configured; /* 0 no, 1 in progress, 2 done */

static void *need(const char *name)
{
    void *f = pl_next_symbol(name);
    if (f == NULL)
        pl_die("cannot find the real %s", name);
    return f;
}

__attribute__((noinline, cold)) static void configure(void)
{
    int expected = 0;
    /* Acquire/release: the winner's writes (real, stock, spec) are
     * published by the release store of 2, which callers read with acquire. */
    if (!baton_cas(&configured, &expected, 1, memory_order_acquire, memory_order_relaxed)) {
        while (baton_load(&configured, memory_order_acquire) != 2)
            sched_yield();
        return;
    }
    *(void **)&real.init = need("pthread_barrier_init");
    *(void **)&real.wait = need("pthread_barrier_wait");
    *(void **)&real.destroy = need("pthread_barrier_destroy");
    const char *s = getenv("BATON_BARRIER");
    if (s == NULL || s[0] == '\0')
        s = "default";
    if (strcmp(s, "pthread") == 0) {
        stock = true;
        pl_log("barrier: pthread (stock: glibc's own)");
    } else {
        /* Validate now, for one clear message at the first barrier. */
        baton_barrier_t *probe = baton_barrier_new(s, 1);
        if (probe == NULL)
            pl_die("BATON_BARRIER='%s': %s", s, baton_last_error());
        pl_log("barrier: %s (for one thread: %s)", s, baton_barrier_spec(probe));
        (void)baton_barrier_free(probe);
        if (strlen(s) >= sizeof spec)
            pl_die("BATON_BARRIER='%s': longer than %zu bytes", s, sizeof spec - 1);
        strcpy(spec, s);
    }
    baton_store(&configured, 2, memory_order_release);
}

static inline void barrier_init_once(void)
{
    pl_init();
    /* Acquire: pairs with the release store at the end of configure(). */
    if (BATON_UNLIKELY(baton_load(&configured, memory_order_acquire) != 2))
        configure();
}

static inline pl_barrier_t *as_pl(pthread_barrier_t *b)
{
    return (pl_barrier_t *)(void *)b;
}

/* Ours?  (Plain reads: init is ordered before every use by the program.) */
static inline baton_barrier_t *ours(pthread_barrier_t *b)
{
    pl_barrier_t *p = as_pl(b);
    if (p->b != NULL && p->check == (BARRIER_MAGIC ^ (uint32_t)(uintptr_t)p->b))
        return p->b;
    return NULL;
}

PRELOAD_API int pthread_barrier_init(pthread_barrier_t *barrier, const pthread_barrierattr_t *attr,
                                     unsigned count)
{
    barrier_init_once();
    if (stock)
        return real.init(barrier, attr, count);
    if (count == 0 || count >= UINT_MAX / 2)
        return EINVAL;
    pl_barrier_t *p = as_pl(barrier);
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr != NULL && pthread_barrierattr_getpshared(attr, &pshared) != 0)
        return EINVAL;
    if (pshared == PTHREAD_PROCESS_SHARED) {
        p->check = 0; /* glibc's from now on */
        return real.init(barrier, attr, count);
    }
    baton_barrier_t *b = baton_barrier_new(spec, count);
    if (b == NULL) {
        pl_log("pthread_barrier_init(%u): %s", count, baton_last_error());
        return errno == ENOMEM ? ENOMEM : EAGAIN;
    }
    p->b = b;
    p->check = BARRIER_MAGIC ^ (uint32_t)(uintptr_t)b;
    return 0;
}

PRELOAD_API int pthread_barrier_wait(pthread_barrier_t *barrier)
{
    barrier_init_once();
    baton_barrier_t *b = stock ? NULL : ours(barrier);
    if (BATON_UNLIKELY(b == NULL))
        return real.wait(barrier);
    int rc = baton_barrier_wait(b);
    if (BATON_UNLIKELY(rc != 0 && rc != BATON_BARRIER_SERIAL_THREAD))
        pl_log("pthread_barrier_wait: %s", baton_last_error());
    return rc; /* BATON_BARRIER_SERIAL_THREAD == PTHREAD_BARRIER_SERIAL_THREAD */
}

_Static_assert(BATON_BARRIER_SERIAL_THREAD == PTHREAD_BARRIER_SERIAL_THREAD, "the serial-thread marker is POSIX's");

PRELOAD_API int pthread_barrier_destroy(pthread_barrier_t *barrier)
{
    barrier_init_once();
    baton_barrier_t *b = stock ? NULL : ours(barrier);
    if (b == NULL)
        return real.destroy(barrier);
    /* Threads released by the last episode may still be on their way out:
     * wait for them, yielding first, then sleeping up to 1 ms at a time. */
    uint64_t start = 0;
    long sleep_ns = 10000;
    for (unsigned tries = 0; baton_barrier_free(b) == EBUSY; tries++) {
        if (tries < 64) {
            sched_yield();
            continue;
        }
        uint64_t now = baton_now_ns();
        if (start == 0)
            start = now;
        else if (now - start > DESTROY_PATIENCE_NS)
            return EBUSY; /* a thread is blocked in an unfinished episode */
        struct timespec d = {0, sleep_ns};
        nanosleep(&d, NULL);
        if (sleep_ns < 1000000)
            sleep_ns *= 2;
    }
    pl_barrier_t *p = as_pl(barrier);
    p->b = NULL;
    p->check = 0;
    return 0;
}
