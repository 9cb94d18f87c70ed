/* qd.c - queue delegation lock: a mutex plus a delegation queue.
 *
 * The algorithm and the queue are in queue.h (shared with mrqd and hqd);
 * this file is the `qd` kind: delegate / execute / futures through the
 * queue, and plain lock / trylock / unlock through the mutex (a holder
 * through lock() never opens the queue, so delegators wait for it like any
 * other lock taker).
 *
 * Options:
 *   queue=<bytes>    size of the delegation buffer (default 4096)
 *   help_limit=<n>   operations one helper runs per session (default 4096)
 *   retries=<n>      try_lock/enqueue rounds before taking the mutex
 *                    unconditionally (the starvation bound; default 64)
 *   pad=1            one cache line per entry (for comparison only)
 *   cas=1            fetch_add emulated with CAS (for comparison only)
 * The wait policy (default spinpark) is how lock() and futures wait.
 */
#include "queue.h"
#include "../core/error.h"
#include "../locks/kind.h"

#include <errno.h>
#include <stdlib.h>

typedef struct qd_lock {
    baton_ttas_t mutex;
    qd_queue_t queue;
    _Alignas(BATON_CACHELINE) qd_counters_t cnt;
    uint32_t help_limit;
    uint32_t retries;
    baton_wait_t wait;
} qd_lock_t;

int qd_queue_init(qd_queue_t *q, uint32_t size, bool pad, bool cas)
{
    q->size = size;
    q->pad = pad;
    q->cas = cas;
    q->buf = aligned_alloc(BATON_CACHELINE, size);
    if (!q->buf)
        return ENOMEM;
    memset(q->buf, 0, size);
    /* Closed until a helper opens it. */
    atomic_init(&q->counter, (uint64_t)size);
    atomic_init(&q->closed, 1u);
    return 0;
}

void qd_queue_destroy(qd_queue_t *q)
{
    free(q->buf);
    q->buf = NULL;
}

/* One delegated operation: help if the mutex is free, else enqueue; after
 * `retries` refusals, take the mutex unconditionally. */
static int qd_submit(qd_lock_t *l, baton_fn fn, const void *payload, size_t psize, uint32_t flags,
                     baton_future_t *f)
{
    for (unsigned tries = 0;; tries++) {
        if (baton_ttas_trylock(&l->mutex) == 0)
            break;
        if (qd_enqueue(&l->queue, fn, payload, psize, flags, f) == QD_OK)
            return 0;
        if (tries >= l->retries) {
            baton_ttas_lock(&l->mutex);
            qd_count(&l->cnt.forced, 1);
            break;
        }
        qd_retry_pause(tries);
    }
    /* We hold the mutex: our operation runs first, on our own copy. */
    void *ctx;
    _Alignas(16) unsigned char copy[BATON_ARGS_MAX];
    if (flags & QD_F_CTX) {
        memcpy(&ctx, payload, sizeof ctx);
    } else {
        if (psize)
            memcpy(copy, payload, psize);
        ctx = copy;
    }
    qd_session(&l->queue, &l->cnt, l->help_limit, l, fn, ctx, f);
    baton_ttas_unlock(&l->mutex);
    return 0;
}

static int qd_execute(void *s, baton_fn fn, void *ctx)
{
    qd_lock_t *l = s;
    baton_future_t f;
    baton_future_prepare(&f, &l->wait);
    qd_submit(l, fn, &ctx, sizeof ctx, QD_F_CTX, &f);
    return baton_future_wait(&f);
}

static int qd_delegate(void *s, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    return qd_submit(s, fn, args, size, 0, f);
}

/* --- registry entry ------------------------------------------------------- */

enum { OPT_QUEUE, OPT_HELP, OPT_RETRIES, OPT_PAD, OPT_CAS };

static const baton_option_desc_t qd_options[] = {
    [OPT_QUEUE] = {"queue", 256, 65536, 4096, "delegation buffer bytes (multiple of 128)"},
    [OPT_HELP] = {"help_limit", 1, 1u << 30, 4096, "operations per help session"},
    [OPT_RETRIES] = {"retries", 0, 1u << 30, 64, "attempts before taking the lock unconditionally"},
    [OPT_PAD] = {"pad", 0, 1, 0, "one cache line per queue entry"},
    [OPT_CAS] = {"cas", 0, 1, 0, "emulate fetch_add with a CAS loop"},
};

static int k_init(void *s, const baton_opts_t *o)
{
    qd_lock_t *l = s;
    if (o->value[OPT_QUEUE] % BATON_CACHELINE)
        return baton_fail(EINVAL, "qd: queue=%llu is not a multiple of %d bytes",
                          (unsigned long long)o->value[OPT_QUEUE], BATON_CACHELINE);
    int rc = baton_ttas_init(&l->mutex, &o->wait);
    if (rc)
        return rc;
    l->wait = o->wait;
    l->help_limit = (uint32_t)o->value[OPT_HELP];
    l->retries = (uint32_t)o->value[OPT_RETRIES];
    return qd_queue_init(&l->queue, (uint32_t)o->value[OPT_QUEUE], o->value[OPT_PAD] != 0,
                         o->value[OPT_CAS] != 0);
}

static int k_destroy(void *s)
{
    qd_lock_t *l = s;
    /* A helper still running delegated operations holds the mutex; wait for
     * it (everything accepted runs before it unlocks).  A holder through
     * lock() is misuse: EBUSY. */
    baton_waiter_t w;
    baton_waiter_init(&w, &l->wait);
    while (baton_ttas_trylock(&l->mutex) != 0) {
        /* Relaxed: a racy look to choose between waiting and EBUSY. */
        if (!baton_load(&l->queue.helping, memory_order_relaxed))
            return EBUSY;
        if (!baton_waiter_pause(&w, NULL, 0))
            sched_yield();
    }
    baton_ttas_unlock(&l->mutex);
    qd_queue_destroy(&l->queue);
    return baton_ttas_destroy(&l->mutex);
}

static void k_lock(void *s) { baton_ttas_lock(&((qd_lock_t *)s)->mutex); }
static int k_trylock(void *s) { return baton_ttas_trylock(&((qd_lock_t *)s)->mutex); }
static int k_unlock(void *s) { return baton_ttas_unlock(&((qd_lock_t *)s)->mutex); }
static int k_is_locked(void *s) { return baton_ttas_is_locked(&((qd_lock_t *)s)->mutex); }

static void k_stats(void *s, baton_stats_t *out)
{
    qd_lock_t *l = s;
    /* Relaxed: a racy snapshot. */
    out->help_sessions = atomic_load_explicit(&l->cnt.sessions, memory_order_relaxed);
    out->helped_ops = atomic_load_explicit(&l->cnt.helped, memory_order_relaxed);
    out->forced_locks = atomic_load_explicit(&l->cnt.forced, memory_order_relaxed);
}

const baton_kind_t baton_kind_qd = {
    .name = "qd",
    .summary = "queue delegation: a lock holder runs operations others enqueue; delegate detaches",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE |
            BATON_CAP_DETACH | BATON_CAP_WAIT | BATON_CAP_NOCOLLAPSE,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(qd_lock_t), .align = _Alignof(qd_lock_t),
    .options = qd_options, .noptions = sizeof qd_options / sizeof qd_options[0],
    .init = k_init, .destroy = k_destroy, .lock = k_lock, .trylock = k_trylock,
    .unlock = k_unlock, .is_locked = k_is_locked,
    .execute = qd_execute, .delegate = qd_delegate, .stats = k_stats,
};
