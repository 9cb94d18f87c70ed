/* clh.c - CLH queue lock.  See baton/clh.h.
 *
 * T. Craig, "Building FIFO and priority-queuing spin locks from atomic
 * swap", 1993; A. Magnusson, A. Landin, E. Hagersten, "Queue locks on cache
 * coherent multiprocessors", IPPS 1994.
 *
 * A node's state is CLH_HELD while its owner holds or waits for the lock and
 * CLH_RELEASED after the owner's unlock.  The lock owns one node (initially
 * a released dummy); each acquisition swaps a node in and adopts the
 * predecessor's node on release, so node ownership moves between threads.
 */
#include <baton/clh.h>
#include "../base/thread.h"

#include <errno.h>
#include <stddef.h>

enum { CLH_RELEASED = 0, CLH_HELD = 1 };

static inline uint64_t pack(baton_qnode_t *n)
{
    return ((uint64_t)n->gen << 32) | n->index;
}

static inline baton_qnode_t *unpack(uint64_t t)
{
    return baton_qnode_at((uint32_t)t);
}

/* Nodes an init leaves in the thread's pool (see baton_clh_init()). */
#define CLH_RESERVE 4u

int baton_clh_init(baton_clh_t *l, const baton_wait_t *wait)
{
    /* The lock keeps a node for good, and every acquire needs one from the
     * thread's pool until it adopts its predecessor's: take the dummy, and
     * leave the pool CLH_RESERVE nodes for locks held at once, or report
     * ENOMEM now, where it can be reported (an acquire cannot). */
    baton_qnode_t *dummy = baton_qnode_try_get();
    if (dummy == NULL)
        return ENOMEM;
    if (baton_qnode_reserve(CLH_RESERVE) != 0) {
        baton_qnode_put(dummy);
        return ENOMEM;
    }
    atomic_store_explicit(&dummy->state, CLH_RELEASED, memory_order_relaxed);
    dummy->gen++;
    /* Plain init: the lock is not shared before init returns. */
    atomic_init(&l->tail, pack(dummy));
    atomic_init(&l->holder, NULL);
    l->pred = NULL;
    if (wait)
        l->wait = *wait;
    else
        return baton_wait_init(&l->wait, BATON_WAIT_SPIN);
    return 0;
}

int baton_clh_is_locked(baton_clh_t *l)
{
    baton_qnode_t *t = unpack(baton_load(&l->tail, memory_order_acquire));
    return (baton_load(&t->state, memory_order_relaxed) & ~BATON_WAIT_PARKED) != CLH_RELEASED;
}

int baton_clh_destroy(baton_clh_t *l)
{
    if (baton_clh_is_locked(l))
        return EBUSY;
    /* The released tail node belongs to the lock: recycle it. */
    baton_qnode_put(unpack(baton_load(&l->tail, memory_order_acquire)));
    return 0;
}

static void acquired(baton_clh_t *l, baton_qnode_t *n, baton_qnode_t *pred)
{
    l->pred = pred;
    baton_store(&l->holder, n, memory_order_relaxed); /* only the holder writes it */
}

void baton_clh_lock(baton_clh_t *l)
{
    baton_qnode_t *n = baton_qnode_get();
    atomic_store_explicit(&n->state, CLH_HELD, memory_order_relaxed);
    n->gen++;
    /* acq_rel: release publishes the node's state before a successor reads
     * it; acquire makes the predecessor node's contents visible. */
    baton_qnode_t *pred = unpack(baton_xchg(&l->tail, pack(n), memory_order_acq_rel));
    (void)baton_wait_while_eq(&l->wait, &pred->state, CLH_HELD); /* acquire inside */
    acquired(l, n, pred);
}

int baton_clh_trylock(baton_clh_t *l)
{
    uint64_t t = baton_load(&l->tail, memory_order_acquire);
    baton_qnode_t *pred = unpack(t);
    /* Acquire pairs with the releasing store of the predecessor's owner. */
    if ((baton_load(&pred->state, memory_order_acquire) & ~BATON_WAIT_PARKED) != CLH_RELEASED)
        return EBUSY;
    baton_qnode_t *n = baton_qnode_get();
    atomic_store_explicit(&n->state, CLH_HELD, memory_order_relaxed);
    n->gen++;
    /* The generation in `t` makes this fail if the node was re-enqueued
     * since we read it, even at the same index. */
    if (!baton_cas(&l->tail, &t, pack(n), memory_order_acq_rel, memory_order_relaxed)) {
        n->gen--;
        baton_qnode_put(n);
        return EBUSY;
    }
    acquired(l, n, pred);
    return 0;
}

/* Release the hold of node n (the holder's, recorded at acquire), from
 * whichever thread calls: the caller adopts the predecessor's node into its
 * pool (baton_qnode_put() takes nodes from other threads). */
static inline int release_node(baton_clh_t *l, baton_qnode_t *n)
{
    baton_qnode_t *pred = l->pred;
    baton_store(&l->holder, NULL, memory_order_relaxed);
    /* Adopt the predecessor's node: nobody references it any more (its
     * owner released it, and we were its only successor). */
    baton_qnode_put(pred);
    /* Release pairs with the successor's acquire wait on our node. */
    baton_wait_store(&l->wait, &n->state, CLH_RELEASED);
    return 0;
}

int baton_clh_unlock(baton_clh_t *l)
{
    baton_qnode_t *n = baton_qnode_mine(&l->holder);
    return BATON_LIKELY(n != NULL) ? release_node(l, n) : EPERM;
}

int baton_clh_release(baton_clh_t *l)
{
    baton_qnode_t *n = baton_qnode_holder(&l->holder);
    return n != NULL ? release_node(l, n) : 0;
}

/* --- registry entry ------------------------------------------------------- */
#include "../base/kind.h"

static int k_init(void *s, const baton_opts_t *o) { return baton_clh_init(s, &o->wait); }
static int k_destroy(void *s) { return baton_clh_destroy(s); }
static void k_lock(void *s) { baton_clh_lock(s); }
static int k_trylock(void *s) { return baton_clh_trylock(s); }
static int k_unlock(void *s) { return baton_clh_unlock(s); }
static int k_release(void *s) { return baton_clh_release(s); }
static int k_is_locked(void *s) { return baton_clh_is_locked(s); }
/* The lock owns one queue node from the arena (the dummy init takes). */
static size_t k_footprint(const baton_opts_t *o) { (void)o; return sizeof(baton_qnode_t); }

const baton_kind_t baton_kind_clh = {
    .name = "clh",
    .summary = "CLH queue lock: FIFO, each waiter waits on its predecessor's node",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE |
            BATON_CAP_WAIT | BATON_CAP_OWNER | BATON_CAP_FIFO,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPIN,
    .size = sizeof(baton_clh_t), .align = _Alignof(baton_clh_t),
    .handle_slot = offsetof(baton_clh_t, api_handle),
    .init = k_init, .destroy = k_destroy, .lock = k_lock, .trylock = k_trylock,
    .unlock = k_unlock, .release = k_release, .is_locked = k_is_locked, .footprint = k_footprint,
};
