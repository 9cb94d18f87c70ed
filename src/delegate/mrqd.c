/* mrqd.c - multi-reader queue delegation lock.
 *
 * A QD lock (queue.h) plus a reader indicator (src/base/indicator.h) and
 * a write barrier, after the writer-preference readers-writer pattern:
 *  - writers (delegate, execute, lock) work exactly as in qd, except that a
 *    helper, having opened its queue, waits for readers to leave before it
 *    runs anything; meanwhile more operations may be accepted, none runs;
 *  - readers arrive at the indicator and look at the mutex: if it is held
 *    they depart and wait for it to be free, then try again;
 *  - a reader that has waited `read_patience` pauses raises the write
 *    barrier, which holds new delegators back (before they try the lock)
 *    until it is lowered, so writers cannot starve readers either.
 * A writer does not wait for readers: delegate returns once accepted, and
 * while readers read, writes pile up for one helper to run in a batch.
 */
#include "queue.h"
#include "../base/indicator.h"

#include <errno.h>

typedef struct mrqd_lock {
    qd_core_t qd;
    _Alignas(BATON_CACHELINE) _Atomic uint32_t write_barrier;
    uint32_t read_patience;
    ri_t readers;
    qd_hooks_t hooks;
} mrqd_lock_t;

/* After opening the queue: wait until no reader is inside. */
static void wait_readers(void *arg)
{
    mrqd_lock_t *l = arg;
    ri_writer_mark(&l->qd.mutex.word);
    ri_wait_empty(&l->readers, &l->qd.wait);
}

static int mrqd_execute(void *s, baton_fn fn, void *ctx)
{
    mrqd_lock_t *l = s;
    ri_hold_back(&l->write_barrier);
    return qd_submit_wait(&l->qd, l, &l->hooks, fn, ctx);
}

static int mrqd_delegate(void *s, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    mrqd_lock_t *l = s;
    ri_hold_back(&l->write_barrier);
    qd_submit(&l->qd, l, &l->hooks, fn, args, size, 0, f);
    return 0;
}

static void mrqd_rlock(void *s)
{
    mrqd_lock_t *l = s;
    ri_rlock(&l->readers, &l->qd.mutex.word, &l->write_barrier, l->read_patience, &l->qd.wait);
}

static void mrqd_runlock(void *s) { ri_depart(&((mrqd_lock_t *)s)->readers); }

/* A reader's entry that never waits: arrive, and if a writer holds the
 * mutex (a helper running operations, or exclusive use) or is taking it
 * (waiting for readers to leave), depart again.  Refusing while a writer
 * waits keeps writer preference. */
static int mrqd_tryrlock(void *s)
{
    mrqd_lock_t *l = s;
    ri_arrive(&l->readers);
    /* seq_cst: the reader's half of the Dekker pattern (indicator.h); also
     * an acquire, pairing with the releasing store of the mutex's unlock. */
    if (baton_load(&l->qd.mutex.word, memory_order_seq_cst) == 0)
        return 0;
    ri_depart(&l->readers);
    return EBUSY;
}

/* Plain exclusive use: the mutex, then wait for readers to leave. */
static void k_lock(void *s)
{
    mrqd_lock_t *l = s;
    qd_mutex_lock(&l->qd.mutex);
    wait_readers(l);
}

static int k_trylock(void *s)
{
    mrqd_lock_t *l = s;
    if (qd_mutex_trylock(&l->qd.mutex) != 0)
        return EBUSY;
    ri_writer_mark(&l->qd.mutex.word);
    if (ri_query(&l->readers)) {
        qd_mutex_unlock(&l->qd.mutex);
        return EBUSY;
    }
    return 0;
}

/* Timed exclusive use: the mutex until d, then readers leaving until d;
 * a writer that times out while readers stay lets the mutex go again. */
static int k_timedlock(void *s, const baton_deadline_t *d)
{
    mrqd_lock_t *l = s;
    int rc = qd_mutex_timedlock(&l->qd.mutex, d);
    if (rc != 0)
        return rc;
    ri_writer_mark(&l->qd.mutex.word);
    if (!ri_wait_empty_until(&l->readers, &l->qd.wait, d)) {
        qd_mutex_unlock(&l->qd.mutex);
        return ETIMEDOUT;
    }
    return 0;
}

/* A reader's timed entry (indicator.h): departed again if it times out. */
static int k_timedrlock(void *s, const baton_deadline_t *d)
{
    mrqd_lock_t *l = s;
    return ri_timedrlock(&l->readers, &l->qd.mutex.word, &l->write_barrier, l->read_patience, &l->qd.wait, d);
}

BATON_KIND_ADAPT_AT(unlock, mrqd_lock_t, qd_mutex_unlock, &l->qd.mutex)
BATON_KIND_ADAPT_AT(is_locked, mrqd_lock_t, qd_mutex_is_locked, &l->qd.mutex)
BATON_KIND_ADAPT_AT(has_readers, mrqd_lock_t, ri_query, &l->readers)

/* --- registry entry ------------------------------------------------------- */

enum { OPT_READERS = QD_NOPTS, OPT_PATIENCE };

static const baton_option_desc_t mrqd_options[] = {
    QD_OPTIONS,
    [OPT_READERS] = {"readers", 0, 4096, 0, "reader-indicator lines (0: one per CPU, at least 4)"},
    [OPT_PATIENCE] = {"read_patience", 1, 1u << 30, 1000,
                      "pauses a reader waits before it holds new writers back"},
};

static int k_init(void *s, const baton_opts_t *o)
{
    mrqd_lock_t *l = s;
    int rc = qd_core_init(&l->qd, o);
    if (rc)
        return rc;
    atomic_init(&l->write_barrier, 0u);
    l->read_patience = (uint32_t)o->value[OPT_PATIENCE];
    l->hooks = (qd_hooks_t){.after_open = wait_readers, .arg = l};
    rc = ri_init(&l->readers, (uint32_t)o->value[OPT_READERS]);
    if (rc)
        qd_core_destroy(&l->qd);
    return rc;
}

static int k_destroy(void *s)
{
    mrqd_lock_t *l = s;
    if (ri_query(&l->readers))
        return EBUSY;
    int rc = qd_core_destroy(&l->qd);
    if (rc == 0)
        ri_destroy(&l->readers);
    return rc;
}

BATON_KIND_ADAPT_AT(stats, mrqd_lock_t, qd_core_stats, &l->qd)

static size_t k_footprint(const baton_opts_t *o)
{
    return qd_core_footprint(o) + ri_footprint((uint32_t)o->value[OPT_READERS]);
}

const baton_kind_t baton_kind_mrqd = {
    .name = "mrqd",
    .summary = "multi-reader queue delegation: readers share, writes are delegated and detach",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_DETACH |
            BATON_CAP_WAIT | BATON_CAP_RW | BATON_CAP_NOCOLLAPSE | BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(mrqd_lock_t),
    .align = _Alignof(mrqd_lock_t),
    .options = mrqd_options,
    .noptions = sizeof mrqd_options / sizeof mrqd_options[0],
    .init = k_init,
    .destroy = k_destroy,
    .lock = k_lock,
    .trylock = k_trylock,
    .timedlock = k_timedlock,
    .timedrlock = k_timedrlock,
    /* The unlock needs no owner (the mutex's), and leaves a free lock free. */
    .unlock = k_unlock,
    .release = k_unlock,
    .is_locked = k_is_locked,
    .execute = mrqd_execute,
    .delegate = mrqd_delegate,
    .rlock = mrqd_rlock,
    .runlock = mrqd_runlock,
    .tryrlock = mrqd_tryrlock,
    .has_readers = k_has_readers,
    .stats = k_stats,
    .footprint = k_footprint,
};
