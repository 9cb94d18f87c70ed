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
 *
 * Time-outs (after Scott's CLH-try).  A timed waiter that gives up stores
 * CLH_LEFT + the index of the node it waited on into its own node, and
 * leaves.  Whoever moves past a left node (its successor's lock or timed
 * lock, a trylock that finds it at the tail, destroy) then waits on the
 * node it names instead, and recycles it: exactly one thread can move past
 * a node, since only one waits on it.  A left node never holds the lock
 * nor delays anyone; at the tail (nobody behind it) it is a marker that
 * lock, trylock, is_locked and destroy read through.  Left nodes form
 * chains when neighbours give up together; a chain ends at a node that is
 * held or released.  The arena holds far fewer than 2^31 - 2 nodes (256
 * GiB of them), so CLH_LEFT + index stays clear of the parked bit.
 */
#include <baton/clh.h>
#include "../base/thread.h"

#include <errno.h>
#include <stddef.h>

enum { CLH_RELEASED = 0, CLH_HELD = 1, CLH_LEFT = 2 };

/* The node a left node names (state CLH_LEFT + index). */
static inline baton_qnode_t *left_to(uint32_t st) { return baton_qnode_at(st - CLH_LEFT); }

/* A node's state without the parked bit.  Acquire pairs with the release
 * of the store that set it (an unlock, a waiter leaving). */
static inline uint32_t state_of(baton_qnode_t *n)
{
    return baton_load(&n->state, memory_order_acquire) & ~BATON_WAIT_PARKED;
}

/* Wait (untimed) until pred is released, moving past left nodes; returns
 * the released node. */
static baton_qnode_t *wait_released(baton_clh_t *l, baton_qnode_t *pred)
{
    uint32_t st = baton_wait_while_eq(&l->wait, &pred->state, CLH_HELD); /* acquire inside */
    while (st != CLH_RELEASED) {
        baton_qnode_t *next = left_to(st);
        baton_qnode_put(pred); /* we moved past it: ours to recycle */
        pred = next;
        st = baton_wait_while_eq(&l->wait, &pred->state, CLH_HELD);
    }
    return pred;
}

static inline uint64_t pack(baton_qnode_t *n) { return ((uint64_t)n->gen << 32) | n->index; }

static inline baton_qnode_t *unpack(uint64_t t) { return baton_qnode_at((uint32_t)t); }

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

/* The first node at or before the tail node t that nobody left: a left
 * node at the tail is a marker (see the top).  A racy look, like every
 * is_locked: the chain is bounded in case nodes are recycled under it. */
static baton_qnode_t *through_left(baton_qnode_t *t, uint32_t *st)
{
    uint32_t s = state_of(t);
    for (unsigned i = 0; s >= CLH_LEFT && i < (1u << 20); i++) {
        t = left_to(s);
        s = state_of(t);
    }
    *st = s;
    return t;
}

int baton_clh_is_locked(baton_clh_t *l)
{
    uint32_t st;
    (void)through_left(unpack(baton_load(&l->tail, memory_order_acquire)), &st);
    return st != CLH_RELEASED;
}

int baton_clh_destroy(baton_clh_t *l)
{
    if (baton_clh_is_locked(l))
        return EBUSY;
    /* The released node belongs to the lock, and left nodes at the tail to
     * whoever moves past them: recycle them all. */
    baton_qnode_t *t = unpack(baton_load(&l->tail, memory_order_acquire));
    for (uint32_t st = state_of(t); st >= CLH_LEFT; st = state_of(t)) {
        baton_qnode_t *next = left_to(st);
        baton_qnode_put(t);
        t = next;
    }
    baton_qnode_put(t);
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
    acquired(l, n, wait_released(l, pred));
}

int baton_clh_trylock(baton_clh_t *l)
{
    uint64_t t = baton_load(&l->tail, memory_order_acquire);
    /* Acquire inside pairs with the releasing store of the predecessor's
     * owner (or of a waiter that left). */
    uint32_t st;
    baton_qnode_t *pred = through_left(unpack(t), &st);
    if (st != CLH_RELEASED)
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
    /* We moved past the left nodes between the tail and pred (nobody else
     * can now): recycle them. */
    for (baton_qnode_t *x = unpack(t); x != pred;) {
        baton_qnode_t *next = left_to(state_of(x));
        baton_qnode_put(x);
        x = next;
    }
    acquired(l, n, pred);
    return 0;
}

int baton_clh_timedlock(baton_clh_t *l, const baton_deadline_t *d)
{
    baton_qnode_t *n = baton_qnode_get();
    atomic_store_explicit(&n->state, CLH_HELD, memory_order_relaxed);
    n->gen++;
    /* acq_rel: as in baton_clh_lock(). */
    baton_qnode_t *pred = unpack(baton_xchg(&l->tail, pack(n), memory_order_acq_rel));
    for (;;) {
        uint32_t st;
        /* Acquire inside, as in wait_released(). */
        if (baton_wait_while_eq_until(&l->wait, &pred->state, CLH_HELD, d, &st) == ETIMEDOUT)
            break;
        if (st == CLH_RELEASED) {
            acquired(l, n, pred);
            return 0;
        }
        baton_qnode_t *next = left_to(st);
        baton_qnode_put(pred); /* we moved past it */
        pred = next;
    }
    /* Leave: whoever waits on our node (now, or when it arrives) moves on
     * to pred.  Release pairs with its acquire look at our state; the
     * exchange inside wakes it if it sleeps.  Our node is no longer ours:
     * the thread that moves past it recycles it. */
    baton_wait_store(&l->wait, &n->state, CLH_LEFT + pred->index);
    return ETIMEDOUT;
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

BATON_KIND_ADAPT_INIT_WAIT(baton_clh_init)
BATON_KIND_ADAPT_MUTEX(clh)
BATON_KIND_ADAPT(release, baton_clh_release)

/* The lock owns one queue node from the arena (the dummy init takes). */
static size_t k_footprint(const baton_opts_t *o)
{
    (void)o;
    return sizeof(baton_qnode_t);
}

const baton_kind_t baton_kind_clh = {
    .name = "clh",
    .summary = "CLH queue lock: FIFO, each waiter waits on its predecessor's node",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_OWNER | BATON_CAP_FIFO | BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPIN,
    .size = sizeof(baton_clh_t),
    .align = _Alignof(baton_clh_t),
    BATON_KIND_MUTEX_OPS,
    .release = k_release,
    .footprint = k_footprint,
};
