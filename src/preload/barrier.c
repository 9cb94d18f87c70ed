/* barrier.c - pthread_barrier_* for libbaton-preload.so.
 *
 * BATON_BARRIER names the barrier (baton/barrier.h's spec grammar; unset or
 * empty: the default barrier spec; "pthread": glibc's own, every call
 * forwarded).  pthread_barrier_init creates a baton barrier of `count`
 * places, keeps it in a slot of a slab (preload.h) and the slot's handle in
 * the pthread_barrier_t (32 bytes):
 *
 *   offset 0    glibc's own fields (in, current_round, count, shared, out,
 *               20 bytes), written by glibc's pthread_barrier_init, which
 *               ours calls first: the object is always also a valid glibc
 *               barrier of the same count
 *   offset 24   handle: the slot of the baton barrier, when its back-pointer
 *               is this object; anything else (0, garbage, a copy of another
 *               barrier's handle) means glibc's barrier
 *   offset 28   entering: threads inside pthread_barrier_wait on this object,
 *               counted before anything else is read
 *
 * So every object that is not one of ours goes to glibc, which finds a
 * barrier where glibc would: process-shared barriers (whose memory other
 * processes map, where a slot of ours would mean nothing), barriers that
 * could get no memory (out of memory: glibc's own, for their whole life), a
 * copy of an initialised barrier (glibc: another barrier of the same count),
 * and a wait that comes after destroy (glibc: the barrier still works).
 * Garbage that was never initialised is glibc's too, and glibc does with it
 * what it always does.
 *
 * POSIX semantics: EINVAL for a count of 0 (and, as glibc, for counts of
 * UINT_MAX / 2 and more); exactly one PTHREAD_BARRIER_SERIAL_THREAD per
 * episode (baton_barrier_wait's BATON_BARRIER_SERIAL_THREAD is the same
 * value).
 *
 * Destroy.  As in glibc, pthread_barrier_destroy waits for the threads that
 * have entered pthread_barrier_wait to leave, so the serial thread may
 * destroy (and re-initialise) the barrier at once, and a thread that is
 * still entering the wait when another destroys (undefined in POSIX) does
 * not find it freed under it: destroy marks the slot dying, then waits
 * until `entering` is 0, then frees.  A waiter counts itself in `entering`
 * first and then looks at the slot; one that finds it dying counts itself
 * out and waits until destroy decides (seq_cst on both sides: either
 * destroy sees the waiter, or the waiter sees the mark).  If a thread is
 * still blocked in an unfinished episode (undefined behaviour in POSIX;
 * glibc waits forever) destroy gives EBUSY after about two seconds and the
 * barrier stays as it was.
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

/* Destroy waits at most this long for threads to leave a finished episode. */
#define DESTROY_PATIENCE_NS 2000000000ull

typedef struct pl_barrier {
    uint32_t glibc_fields[5]; /* glibc's own; written by its pthread_barrier_init only */
    uint32_t unused;
    _Atomic uint32_t handle;   /* 24 */
    _Atomic uint32_t entering; /* 28 */
} pl_barrier_t;

_Static_assert(sizeof(pl_barrier_t) <= sizeof(pthread_barrier_t), "the layout fits a pthread_barrier_t");

/* A slot of pl_barrier_class. */
typedef struct barrier_slot {
    baton_barrier_t *b;
    _Atomic uint32_t dying; /* destroy is waiting for the waiters to leave */
} barrier_slot_t;

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
    pl_barrier_class.slot = sizeof(barrier_slot_t);
    char desc[sizeof spec + 200], err[sizeof spec + 600];
    if (pl_config_barrier(getenv("BATON_BARRIER"), &stock, spec, sizeof spec, desc, sizeof desc, err,
                          sizeof err) != 0)
        pl_die("%s", err);
    pl_log("barrier: %s", desc);
    baton_store(&configured, 2, memory_order_release);
}

static inline void barrier_init_once(void)
{
    pl_init();
    /* Acquire: pairs with the release store at the end of configure(). */
    if (BATON_UNLIKELY(baton_load(&configured, memory_order_acquire) != 2))
        configure();
}

/* `whose` (PL_ENTER) for every barrier: PL_FORWARD when BATON_BARRIER is
 * pthread (glibc's own), else 0.  Configures first. */
static inline int barrier_whose(void)
{
    barrier_init_once();
    return stock ? PL_FORWARD : 0;
}

static inline pl_barrier_t *as_pl(pthread_barrier_t *b) { return (pl_barrier_t *)(void *)b; }

/* The slot the handle `h` names, if it serves this barrier. */
static inline barrier_slot_t *slot_of(pl_barrier_t *p, uint32_t h)
{
    return pl_state_lookup(&pl_barrier_class, h, p);
}

PRELOAD_API int pthread_barrier_init(pthread_barrier_t *barrier, const pthread_barrierattr_t *attr,
                                     unsigned count)
{
    barrier_init_once();
    /* glibc's barrier first, in every case: it checks count and attr. */
    int rc = real.init(barrier, attr, count);
    if (stock || rc != 0)
        return rc;
    pl_barrier_t *p = as_pl(barrier);
    /* Relaxed: initialisation precedes any use, which the program orders. */
    baton_store(&p->entering, 0u, memory_order_relaxed);
    baton_store(&p->handle, 0u, memory_order_relaxed);
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr != NULL && pthread_barrierattr_getpshared(attr, &pshared) != 0)
        return EINVAL;
    if (pshared == PTHREAD_PROCESS_SHARED)
        return 0; /* glibc's */
    int err = 0;
    uint32_t h = pl_slot_new(&pl_barrier_class, p, &err);
    baton_barrier_t *b = h != 0 ? baton_barrier_new(spec, count) : NULL;
    if (b == NULL) {
        /* No memory (or the spec cannot serve this count): glibc's own, for
         * the rest of its life. */
        pl_no_state(&pl_barrier_class, h != 0 ? errno : err, "is glibc's own for the rest of its life");
        if (h != 0)
            pl_slot_free(&pl_barrier_class, h);
        return 0;
    }
    slot_of(p, h)->b = b;
    /* Release: publishes the slot; pairs with the loads of the handle in
     * wait and destroy. */
    baton_store(&p->handle, h, memory_order_release);
    return 0;
}

PRELOAD_API int pthread_barrier_wait(pthread_barrier_t *barrier)
{
    PL_ENTER(barrier_whose(), real.wait(barrier));
    pl_barrier_t *p = as_pl(barrier);
    for (;;) {
        /* Seq_cst, with the load of the handle and of `dying` below, against
         * destroy's seq_cst store of `dying` and load of `entering`: either
         * destroy sees this thread counted, or this thread sees the mark. */
        baton_fetch_add(&p->entering, 1u, memory_order_seq_cst);
        uint32_t h = baton_load(&p->handle, memory_order_seq_cst);
        barrier_slot_t *sl = slot_of(p, h);
        if (sl == NULL) {
            /* Release: our reads of the object are done (pairs with destroy's
             * loads of `entering`). */
            baton_fetch_sub(&p->entering, 1u, memory_order_release);
            return real.wait(barrier);
        }
        if (BATON_UNLIKELY(baton_load(&sl->dying, memory_order_seq_cst) != 0)) {
            baton_fetch_sub(&p->entering, 1u, memory_order_release); /* as above */
            /* Destroy decides: it frees (the handle changes) or gives up (the
             * mark goes).  Slots are never unmapped: reading a freed one is
             * safe.  Acquire: pairs with destroy's release stores. */
            while (baton_load(&p->handle, memory_order_acquire) == h &&
                   baton_load(&sl->dying, memory_order_acquire))
                sched_yield();
            continue;
        }
        int rc = baton_barrier_wait(sl->b);
        /* Release: our use of the barrier happens before destroy frees it
         * (pairs with destroy's seq_cst loads of `entering`). */
        baton_fetch_sub(&p->entering, 1u, memory_order_release);
        if (BATON_UNLIKELY(rc != 0 && rc != BATON_BARRIER_SERIAL_THREAD))
            pl_log("pthread_barrier_wait: %s", baton_last_error());
        return rc; /* BATON_BARRIER_SERIAL_THREAD == PTHREAD_BARRIER_SERIAL_THREAD */
    }
}

_Static_assert(BATON_BARRIER_SERIAL_THREAD == PTHREAD_BARRIER_SERIAL_THREAD,
               "the serial-thread marker is POSIX's");

/* Wait until no thread is inside pthread_barrier_wait on p: yielding first,
 * then sleeping up to 1 ms at a time; false after DESTROY_PATIENCE_NS. */
static bool await_leavers(pl_barrier_t *p)
{
    uint64_t start = 0;
    long sleep_ns = 10000;
    /* Seq_cst: see pthread_barrier_wait(). */
    for (unsigned tries = 0; baton_load(&p->entering, memory_order_seq_cst) != 0; tries++) {
        if (tries < 64) {
            sched_yield();
            continue;
        }
        uint64_t now = baton_now_ns();
        if (start == 0)
            start = now;
        else if (now - start > DESTROY_PATIENCE_NS)
            return false;
        struct timespec d = {0, sleep_ns};
        nanosleep(&d, NULL);
        if (sleep_ns < 1000000)
            sleep_ns *= 2;
    }
    return true;
}

PRELOAD_API int pthread_barrier_destroy(pthread_barrier_t *barrier)
{
    PL_ENTER(barrier_whose(), real.destroy(barrier));
    pl_barrier_t *p = as_pl(barrier);
    /* Acquire: pairs with the release store of the handle in init. */
    uint32_t h = baton_load(&p->handle, memory_order_acquire);
    barrier_slot_t *sl = slot_of(p, h);
    if (sl == NULL)
        return real.destroy(barrier);
    baton_store(&sl->dying, 1u, memory_order_seq_cst); /* see pthread_barrier_wait() */
    if (!await_leavers(p) || baton_barrier_free(sl->b) != 0) {
        /* A thread is blocked in an unfinished episode.  Release: pairs with
         * the acquire loads of the waiters that saw the mark. */
        baton_store(&sl->dying, 0u, memory_order_release);
        return EBUSY;
    }
    /* From now on the object is glibc's barrier, as init left it.  Release:
     * pairs with the acquire loads of the waiters that saw the mark. */
    baton_store(&p->handle, 0u, memory_order_release);
    pl_slot_free(&pl_barrier_class, h);
    return 0;
}
