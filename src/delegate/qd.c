/* qd.c - queue delegation lock: a mutex plus a delegation queue.
 *
 * The algorithm and the queue are in queue.h (shared with mrqd and hqd);
 * this file is the `qd` kind: delegate / execute / futures through the
 * queue, and plain lock / trylock / unlock through the mutex (a holder
 * through lock() never opens the queue, so delegators wait for it like any
 * other lock taker), plus the lifecycle every QD-family kind shares.
 *
 * Options (QD_OPTIONS in queue.h):
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

#include <errno.h>
#include <stdlib.h>

/* --- the queue and the core, shared by the QD family ---------------------- */

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
    atomic_init(&q->helping, 0u);
    return 0;
}

void qd_queue_destroy(qd_queue_t *q)
{
    free(q->buf);
    q->buf = NULL;
}

int qd_core_init(qd_core_t *c, const baton_opts_t *o)
{
    if (o->value[QD_OPT_QUEUE] % BATON_CACHELINE)
        return baton_fail(EINVAL, "queue=%llu is not a multiple of %d bytes",
                          (unsigned long long)o->value[QD_OPT_QUEUE], BATON_CACHELINE);
    int rc = baton_ttas_init(&c->mutex, &o->wait);
    if (rc)
        return rc;
    c->wait = o->wait;
    c->help_limit = (uint32_t)o->value[QD_OPT_HELP];
    c->retries = (uint32_t)o->value[QD_OPT_RETRIES];
    return qd_queue_init(&c->queue, (uint32_t)o->value[QD_OPT_QUEUE], o->value[QD_OPT_PAD] != 0,
                         o->value[QD_OPT_CAS] != 0);
}

int qd_core_destroy(qd_core_t *c)
{
    /* A helper still running delegated operations holds the mutex; wait for
     * it (everything accepted runs before it unlocks).  A holder through
     * lock() is misuse: EBUSY. */
    baton_waiter_t w;
    baton_waiter_init(&w, &c->wait);
    while (baton_ttas_trylock(&c->mutex) != 0) {
        /* Relaxed: a racy look to choose between waiting and EBUSY. */
        if (!baton_load(&c->queue.helping, memory_order_relaxed))
            return EBUSY;
        if (!baton_waiter_pause(&w, NULL, 0))
            sched_yield();
    }
    baton_ttas_unlock(&c->mutex);
    qd_queue_destroy(&c->queue);
    return baton_ttas_destroy(&c->mutex);
}

void qd_core_stats(qd_core_t *c, baton_stats_t *out)
{
    /* Relaxed: a racy snapshot. */
    out->help_sessions += atomic_load_explicit(&c->cnt.sessions, memory_order_relaxed);
    out->helped_ops += atomic_load_explicit(&c->cnt.helped, memory_order_relaxed);
    out->forced_locks += atomic_load_explicit(&c->cnt.forced, memory_order_relaxed);
}

/* --- the qd kind ------------------------------------------------------------ */

static int qd_execute(void *s, baton_fn fn, void *ctx)
{
    return qd_submit_wait(s, s, NULL, fn, ctx);
}

static int qd_delegate(void *s, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    qd_submit(s, s, NULL, fn, args, size, 0, f);
    return 0;
}

static const baton_option_desc_t qd_options[] = {QD_OPTIONS};

static int k_init(void *s, const baton_opts_t *o) { return qd_core_init(s, o); }
static int k_destroy(void *s) { return qd_core_destroy(s); }
static void k_lock(void *s) { baton_ttas_lock(&((qd_core_t *)s)->mutex); }
static int k_trylock(void *s) { return baton_ttas_trylock(&((qd_core_t *)s)->mutex); }
static int k_unlock(void *s) { return baton_ttas_unlock(&((qd_core_t *)s)->mutex); }
static int k_is_locked(void *s) { return baton_ttas_is_locked(&((qd_core_t *)s)->mutex); }
static void k_stats(void *s, baton_stats_t *out) { qd_core_stats(s, out); }

const baton_kind_t baton_kind_qd = {
    .name = "qd",
    .summary = "queue delegation: a lock holder runs operations others enqueue; delegate detaches",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE |
            BATON_CAP_DETACH | BATON_CAP_WAIT | BATON_CAP_NOCOLLAPSE,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(qd_core_t), .align = _Alignof(qd_core_t),
    .options = qd_options, .noptions = sizeof qd_options / sizeof qd_options[0],
    .init = k_init, .destroy = k_destroy, .lock = k_lock, .trylock = k_trylock,
    .unlock = k_unlock, .is_locked = k_is_locked,
    .execute = qd_execute, .delegate = qd_delegate, .stats = k_stats,
};
