/* pthread.c - the baseline: a glibc pthread_mutex_t behind the same table.
 *
 * PTHREAD_MUTEX_NORMAL (what PTHREAD_MUTEX_INITIALIZER gives) by default, so
 * that benchmarks compare against what programs use; with check=1 an
 * ERRORCHECK mutex, which reports unlock by a non-owner as EPERM itself.
 */
#include "../base/kind.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

typedef struct pthread_state {
    _Alignas(BATON_CACHELINE) pthread_mutex_t m;
} pthread_state_t;

static int k_init(void *s, const baton_opts_t *o)
{
    pthread_state_t *p = s;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, o->check ? PTHREAD_MUTEX_ERRORCHECK : PTHREAD_MUTEX_NORMAL);
    int rc = pthread_mutex_init(&p->m, &a);
    pthread_mutexattr_destroy(&a);
    return rc;
}

BATON_KIND_ADAPT_AT(lock, pthread_state_t, pthread_mutex_lock, &l->m)
BATON_KIND_ADAPT_AT(trylock, pthread_state_t, pthread_mutex_trylock, &l->m)
BATON_KIND_ADAPT_AT(unlock, pthread_state_t, pthread_mutex_unlock, &l->m)

static int k_is_locked(void *s)
{
    pthread_state_t *p = s;
#if defined(__GLIBC__)
    /* glibc's lock word (0: free), read without writing it, so that
     * elide(pthread) can watch it inside a transaction.  Relaxed: a racy
     * look, like every kind's is_locked. */
    return __atomic_load_n(&p->m.__data.__lock, __ATOMIC_RELAXED) != 0;
#else
    if (pthread_mutex_trylock(&p->m) != 0)
        return 1;
    pthread_mutex_unlock(&p->m);
    return 0;
#endif
}

static int k_destroy(void *s)
{
    if (k_is_locked(s))
        return EBUSY;
    return pthread_mutex_destroy(&((pthread_state_t *)s)->m);
}

#if defined(__SANITIZE_THREAD__)
#define PTHREAD_NO_CLOCKLOCK 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PTHREAD_NO_CLOCKLOCK 1
#endif
#endif

/* glibc's own timed wait (a futex sleep until the deadline, on its clock).
 * ThreadSanitizer (gcc 12's) does not intercept pthread_mutex_clocklock and
 * then takes the next unlock for a stray one: under it a CLOCK_MONOTONIC
 * deadline becomes the same distance on CLOCK_REALTIME, for timedlock. */
static int k_timedlock(void *s, const baton_deadline_t *d)
{
    pthread_mutex_t *m = &((pthread_state_t *)s)->m;
#ifdef PTHREAD_NO_CLOCKLOCK
    if (d->clock != CLOCK_REALTIME) {
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        uint64_t left = baton_deadline_left(d);
        rt.tv_sec += (time_t)(left / 1000000000u);
        rt.tv_nsec += (long)(left % 1000000000u);
        if (rt.tv_nsec >= 1000000000L) {
            rt.tv_nsec -= 1000000000L;
            rt.tv_sec++;
        }
        return pthread_mutex_timedlock(m, &rt);
    }
    return pthread_mutex_timedlock(m, &d->at);
#else
    return pthread_mutex_clocklock(m, d->clock, &d->at);
#endif
}

/* A NORMAL mutex's unlock needs no owner (check=1: ERRORCHECK refuses with
 * EPERM); a free one is left alone: glibc's unlock would wrap its user
 * count, and its destroy would then answer EBUSY for good. */
static int k_release(void *s) { return k_is_locked(s) ? k_unlock(s) : 0; }

const baton_kind_t baton_kind_pthread = {
    .name = "pthread",
    .summary = "baseline: the C library's pthread_mutex_t (NORMAL; ERRORCHECK with check=1)",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE |
            BATON_CAP_NOCOLLAPSE | BATON_CAP_TIMED,
    .waits = BATON_WAITS_NONE,
    .default_wait = BATON_NO_WAIT,
    .size = sizeof(pthread_state_t),
    .align = _Alignof(pthread_state_t),
    BATON_KIND_MUTEX_OPS,
    .release = k_release,
};
