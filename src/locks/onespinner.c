/* onespinner.c - the 1spinner lock.  See baton/onespinner.h.
 *
 * H. Akkan, M. Lang, L. Ionkov, "HPC Runtime Support for Fast and Power
 * Efficient Locking and Synchronization", IEEE CLUSTER 2013, Algorithm 2:
 *
 *   ACQUIRE: gen <- monitors[id]
 *            {prev, prev_gen} <- xchg(&lock.tail, {id, gen})
 *            if prev != none and prev != id:
 *                while monitors[prev] = prev_gen: wait   -- prev not yet holder
 *                while lock.head = prev: wait            -- prev still holder
 *            lock.head <- id; monitors[id] <- monitors[id] + 1
 *   RELEASE: lock.head <- none
 *
 * Here id is the index of the calling thread's monitor record (+1, so 0
 * means none), monitors[] is the record arena, and the monitor value is a
 * 31-bit generation (bit 31 is the wait layer's parked bit).  Both waits go
 * through the wait layer: the first on the predecessor's monitor (in the
 * paper's power-efficient version, MONITOR/MWAIT on that line), the second
 * on the lock's head word, which only one thread polls at any time.
 */
#include <baton/onespinner.h>
#include "../base/thread.h"

#include <errno.h>
#include <stddef.h>

#define GEN_MASK BATON_MONITOR_GEN_MASK

static inline uint64_t pack(uint32_t id, uint32_t gen) { return ((uint64_t)gen << 32) | id; }

int baton_onespinner_init(baton_onespinner_t *l, const baton_wait_t *wait)
{
    atomic_init(&l->tail, 0);
    atomic_init(&l->head, 0u);
    if (wait)
        l->wait = *wait;
    else
        return baton_wait_init(&l->wait, BATON_WAIT_AUTO);
    return 0;
}

int baton_onespinner_is_locked(baton_onespinner_t *l)
{
    if ((baton_load(&l->head, memory_order_acquire) & ~BATON_WAIT_PARKED) != 0)
        return 1;
    uint64_t t = baton_load(&l->tail, memory_order_acquire);
    uint32_t prev = (uint32_t)t;
    if (prev == 0)
        return 0;
    /* The last arrival has not acquired yet: someone is on the way in. */
    baton_qnode_t *pm = baton_qnode_at(prev - 1u);
    if ((baton_load(&pm->state, memory_order_acquire) & GEN_MASK) == (uint32_t)(t >> 32))
        return 1;
    return (baton_load(&l->head, memory_order_acquire) & ~BATON_WAIT_PARKED) != 0;
}

int baton_onespinner_destroy(baton_onespinner_t *l) { return baton_onespinner_is_locked(l) ? EBUSY : 0; }

/* lock.head <- id; monitors[id]++.  The head store may be relaxed: the
 * release on the monitor orders it before any successor sees the new
 * generation (successors load the monitor with acquire, then head). */
static void take(baton_onespinner_t *l, baton_qnode_t *me, uint32_t id, uint32_t gen)
{
    baton_store(&l->head, id, memory_order_relaxed);
    baton_wait_store(&l->wait, &me->state, (gen + 1u) & GEN_MASK);
}

void baton_onespinner_lock(baton_onespinner_t *l)
{
    baton_qnode_t *me = baton_thread_monitor();
    uint32_t id = me->index + 1u;
    /* Only this thread writes its monitor (waiters may add the parked bit). */
    uint32_t gen = baton_load(&me->state, memory_order_relaxed) & GEN_MASK;
    /* acq_rel: release publishes nothing the successor needs beyond our id,
     * but acquire is needed to read the predecessor's record safely. */
    uint64_t prevt = baton_xchg(&l->tail, pack(id, gen), memory_order_acq_rel);
    uint32_t prev = (uint32_t)prevt;
    uint32_t prev_gen = (uint32_t)(prevt >> 32);
    /* Our own last acquisition (the paper's prev = id) only if our monitor
     * moved once since: a record that comes from a thread that exited
     * holding the lock has moved twice (thread.c), and its tail entry is
     * another thread's hold, released by whoever releases it. */
    if (prev != 0 && (prev != id || ((prev_gen + 1u) & GEN_MASK) != gen)) {
        baton_qnode_t *pm = baton_qnode_at(prev - 1u);
        /* Wait until the predecessor holds the lock (its generation moves).
         * Acquire pairs with the release in take(). */
        uint32_t g = baton_load(&pm->state, memory_order_acquire) & GEN_MASK;
        while (g == prev_gen)
            g = baton_wait_while_eq(&l->wait, &pm->state, prev_gen) & GEN_MASK;
        /* Wait until it released: head no longer names it.  Acquire pairs
         * with the release in unlock. */
        uint32_t h = baton_load(&l->head, memory_order_acquire) & ~BATON_WAIT_PARKED;
        while (h == prev)
            h = baton_wait_while_eq(&l->wait, &l->head, prev);
    }
    take(l, me, id, gen);
}

int baton_onespinner_trylock(baton_onespinner_t *l)
{
    baton_qnode_t *me = baton_thread_monitor();
    uint32_t id = me->index + 1u;
    uint64_t t = baton_load(&l->tail, memory_order_acquire);
    uint32_t prev = (uint32_t)t;
    if (prev != 0 && prev != id) {
        /* The last arrival must have acquired (monitor moved) ... */
        baton_qnode_t *pm = baton_qnode_at(prev - 1u);
        if ((baton_load(&pm->state, memory_order_acquire) & GEN_MASK) == (uint32_t)(t >> 32))
            return EBUSY;
    }
    /* ... and released (read after the monitor: see take()). */
    if ((baton_load(&l->head, memory_order_acquire) & ~BATON_WAIT_PARKED) != 0)
        return EBUSY;
    uint32_t gen = baton_load(&me->state, memory_order_relaxed) & GEN_MASK;
    /* Succeeds only if nobody arrived since we looked; the generation in
     * the tail rules out ABA through a recycled record. */
    if (!baton_cas(&l->tail, &t, pack(id, gen), memory_order_acq_rel, memory_order_relaxed))
        return EBUSY;
    take(l, me, id, gen);
    return 0;
}

/* The timed lock takes no place in the queue.  An arrival's place is its
 * monitor's generation in `tail`, and its successor reads a moved monitor
 * as "my predecessor holds the lock": a waiter that left would have to move
 * its monitor, and its successor would then wait only for `head` to stop
 * naming it, which it never does; the successor would take the lock from
 * under the real holder.  So a timed waiter waits on what the queue's own
 * waiters watch, the last arrival's monitor (until that arrival holds the
 * lock) and then `head` (until the holder releases), and takes the lock as
 * trylock does, when no one queues.  Both words are published with
 * baton_wait_store(), which wakes it.  It leaves nothing behind; under a
 * queue that never drains it waits until its deadline. */
int baton_onespinner_timedlock(baton_onespinner_t *l, const baton_deadline_t *d)
{
    const uint32_t id = baton_thread_monitor()->index + 1u;
    for (;;) {
        if (baton_onespinner_trylock(l) == 0)
            return 0;
        uint32_t seen;
        /* Acquire pairs with the release of take() (monitor) and of the
         * unlock (head); the waits below return at once if either moved
         * since these looks. */
        uint64_t t = baton_load(&l->tail, memory_order_acquire);
        uint32_t prev = (uint32_t)t;
        if (prev != 0 && prev != id) {
            baton_qnode_t *pm = baton_qnode_at(prev - 1u);
            uint32_t g = (uint32_t)(t >> 32);
            if ((baton_load(&pm->state, memory_order_acquire) & GEN_MASK) == g) {
                /* The last arrival has not taken the lock yet. */
                if (baton_wait_while_eq_until(&l->wait, &pm->state, g, d, &seen) == ETIMEDOUT)
                    break;
                continue;
            }
        }
        uint32_t h = baton_load(&l->head, memory_order_acquire) & ~BATON_WAIT_PARKED;
        if (h != 0) {
            if (baton_wait_while_eq_until(&l->wait, &l->head, h, d, &seen) == ETIMEDOUT)
                break;
            continue;
        }
        /* Free at both looks, yet the trylock failed: someone arrived
         * meanwhile.  Look again (the deadline is checked by the waits). */
        if (baton_deadline_left(d) == 0)
            break;
    }
    return baton_onespinner_trylock(l) == 0 ? 0 : ETIMEDOUT;
}

int baton_onespinner_unlock(baton_onespinner_t *l)
{
    baton_qnode_t *me = baton_thread_monitor();
    uint32_t id = me->index + 1u;
    if (BATON_UNLIKELY((baton_load(&l->head, memory_order_relaxed) & ~BATON_WAIT_PARKED) != id))
        return EPERM;
    /* lock.head <- none.  Release pairs with the successor's acquire. */
    baton_wait_store(&l->wait, &l->head, 0u);
    return 0;
}

int baton_onespinner_release(baton_onespinner_t *l)
{
    /* The holder is whoever head names: the release is the holder's own
     * store, and any thread can make it.  Relaxed: the caller knows the
     * lock is held (it synchronised with the holder); 0: not held. */
    if ((baton_load(&l->head, memory_order_relaxed) & ~BATON_WAIT_PARKED) == 0)
        return 0;
    baton_wait_store(&l->wait, &l->head, 0u); /* as in the unlock */
    return 0;
}

/* --- registry entry ------------------------------------------------------- */
#include "../base/kind.h"

BATON_KIND_ADAPT_INIT_WAIT(baton_onespinner_init)
BATON_KIND_ADAPT_MUTEX(onespinner)
BATON_KIND_ADAPT(release, baton_onespinner_release)

const baton_kind_t baton_kind_onespinner = {
    .name = "onespinner",
    .summary =
        "1spinner (Akkan et al. 2013): FIFO; waits on the predecessor's monitor, one thread polls the lock",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_OWNER | BATON_CAP_FIFO | BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_AUTO,
    .size = sizeof(baton_onespinner_t),
    .align = _Alignof(baton_onespinner_t),
    BATON_KIND_MUTEX_OPS,
    .release = k_release,
};
