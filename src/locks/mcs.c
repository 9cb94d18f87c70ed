/* mcs.c - MCS queue lock.  See baton/mcs.h.
 *
 * J. M. Mellor-Crummey and M. L. Scott, "Algorithms for Scalable
 * Synchronization on Shared-Memory Multiprocessors", ACM TOCS 9(1), 1991.
 *
 * Node states (the waited-on word): MCS_WAITING until the predecessor hands
 * over, then MCS_GRANTED; MCS_ABANDONED when a timed waiter gave up first.
 *
 * Time-outs.  A timed waiter queues like any other.  If its deadline passes
 * first it claims its node with a CAS WAITING -> ABANDONED and returns; from
 * then on the node belongs to the lock, not to the thread.  The hand-over
 * exchanges GRANTED into the successor's node (an exchange under every
 * policy: its old value says "asleep, wake it" or "abandoned"), and an
 * abandoned node is passed at once: the releaser releases on its behalf
 * (clearing the tail, or handing over to the node behind it) and recycles
 * it.  So an abandoned node never holds the lock nor delays anyone, and is
 * gone from the queue by the time the lock is free.  If the hand-over wins
 * the race, the waiter's CAS fails and it holds the lock (0, though the
 * deadline passed).
 */
#include <baton/mcs.h>
#include "../base/thread.h"

#include <errno.h>
#include <stddef.h>

enum { MCS_GRANTED = 0, MCS_WAITING = 1, MCS_ABANDONED = 2 };

int baton_mcs_init(baton_mcs_t *l, const baton_wait_t *wait)
{
    atomic_init(&l->tail, NULL);
    atomic_init(&l->holder, NULL);
    if (wait)
        l->wait = *wait;
    else
        return baton_wait_init(&l->wait, BATON_WAIT_SPIN);
    return 0;
}

int baton_mcs_is_locked(baton_mcs_t *l) { return baton_load(&l->tail, memory_order_relaxed) != NULL; }

int baton_mcs_destroy(baton_mcs_t *l) { return baton_mcs_is_locked(l) ? EBUSY : 0; }

/* Link behind the predecessor and wait for the handover.  Out of line, so
 * that the uncontended path needs no stack frame. */
__attribute__((noinline, cold)) static void lock_wait(baton_mcs_t *l, baton_qnode_t *n, baton_qnode_t *pred)
{
    /* Only a predecessor writes our state, and it learns of us from the
     * link below, so initialising it here (not before the exchange) keeps
     * the store off the uncontended path.  Release: the predecessor reads
     * our node after loading `next`. */
    atomic_store_explicit(&n->state, MCS_WAITING, memory_order_relaxed);
    baton_store(&pred->next, n, memory_order_release);
    (void)baton_wait_while_eq(&l->wait, &n->state, MCS_WAITING); /* acquire inside */
}

void baton_mcs_lock(baton_mcs_t *l)
{
    baton_qnode_t *n = baton_qnode_get();
    atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
    /* acq_rel: release publishes `next` before a successor can find our
     * node through the tail; acquire pairs with the unlocking CAS. */
    baton_qnode_t *pred = baton_xchg(&l->tail, n, memory_order_acq_rel);
    if (BATON_UNLIKELY(pred != NULL))
        lock_wait(l, n, pred);
    baton_store(&l->holder, n, memory_order_relaxed); /* only the holder writes it */
}

int baton_mcs_trylock(baton_mcs_t *l)
{
    baton_qnode_t *n = baton_qnode_get();
    atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
    baton_qnode_t *expected = NULL;
    /* acq_rel: as in lock(); acquire pairs with the unlocking CAS. */
    if (!baton_cas(&l->tail, &expected, n, memory_order_acq_rel, memory_order_relaxed)) {
        baton_qnode_put(n);
        return EBUSY;
    }
    baton_store(&l->holder, n, memory_order_relaxed);
    return 0;
}

int baton_mcs_timedlock(baton_mcs_t *l, const baton_deadline_t *d)
{
    baton_qnode_t *n = baton_qnode_get();
    atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&n->state, MCS_WAITING, memory_order_relaxed);
    /* acq_rel: as in baton_mcs_lock(). */
    baton_qnode_t *pred = baton_xchg(&l->tail, n, memory_order_acq_rel);
    if (pred != NULL) {
        /* Release: as in lock_wait(). */
        baton_store(&pred->next, n, memory_order_release);
        uint32_t st;
        /* Acquire inside, pairing with the hand-over's exchange. */
        if (baton_wait_while_eq_until(&l->wait, &n->state, MCS_WAITING, d, &st) == ETIMEDOUT) {
            /* Give the node up, unless the hand-over came first.  Acquire
             * (also on failure): a GRANTED read here is the hand-over, and
             * the previous holder's critical section must be visible. */
            uint32_t v = baton_load(&n->state, memory_order_acquire);
            while ((v & ~BATON_WAIT_PARKED) == MCS_WAITING)
                if (baton_cas(&n->state, &v, MCS_ABANDONED, memory_order_acquire, memory_order_acquire))
                    return ETIMEDOUT; /* the node is the lock's now (see the top) */
        }
    }
    baton_store(&l->holder, n, memory_order_relaxed); /* only the holder writes it */
    return 0;
}

/* Hand over to the successor, once it has linked itself behind us; pass
 * over the nodes of waiters that gave up (see the top of the file).  Out of
 * line: see lock_wait(). */
__attribute__((noinline, cold)) static void hand_over(baton_mcs_t *l, baton_qnode_t *n)
{
    baton_qnode_t *cur = n;
    for (;;) {
        baton_qnode_t *next = baton_qnode_wait_next(cur);
        if (cur != n)
            baton_qnode_put(cur); /* an abandoned node we passed: its successor is read */
        /* An exchange under every policy: the old value says whether the
         * successor sleeps or gave up.  acq_rel: the release pairs with the
         * successor's acquire wait; the acquire orders the wake after it. */
        uint32_t old = baton_xchg(&next->state, MCS_GRANTED, memory_order_acq_rel);
        if (old != MCS_ABANDONED) {
            if (old & BATON_WAIT_PARKED)
                baton_wake_all(&next->state);
            return;
        }
        /* It gave up: it holds the lock for an instant, and we release for
         * it.  Release on the CAS: as in release_node(). */
        cur = next;
        baton_qnode_t *expected = cur;
        if (baton_load(&cur->next, memory_order_relaxed) == NULL &&
            baton_cas(&l->tail, &expected, NULL, memory_order_release, memory_order_relaxed)) {
            baton_qnode_put(cur);
            return;
        }
    }
}

/* Release the hold of node n (the holder's, recorded at acquire), from
 * whichever thread calls: n goes to the caller's pool, which adopts nodes
 * from other threads (baton_qnode_put()). */
static inline int release_node(baton_mcs_t *l, baton_qnode_t *n)
{
    baton_store(&l->holder, NULL, memory_order_relaxed);
    baton_qnode_t *expected = n;
    /* No successor linked and none swapped in: release by clearing the tail
     * (release: the critical section happens-before the next acquirer's
     * exchange).  Otherwise hand over. */
    if (BATON_UNLIKELY(baton_load(&n->next, memory_order_relaxed) != NULL ||
                       !baton_cas(&l->tail, &expected, NULL, memory_order_release, memory_order_relaxed)))
        hand_over(l, n);
    baton_qnode_put(n);
    return 0;
}

int baton_mcs_unlock(baton_mcs_t *l)
{
    baton_qnode_t *n = baton_qnode_mine(&l->holder);
    return BATON_LIKELY(n != NULL) ? release_node(l, n) : EPERM;
}

int baton_mcs_release(baton_mcs_t *l)
{
    baton_qnode_t *n = baton_qnode_holder(&l->holder);
    return n != NULL ? release_node(l, n) : 0;
}

/* --- registry entry ------------------------------------------------------- */
#include "../base/kind.h"

BATON_KIND_ADAPT_INIT_WAIT(baton_mcs_init)
BATON_KIND_ADAPT_MUTEX(mcs)
BATON_KIND_ADAPT(release, baton_mcs_release)

const baton_kind_t baton_kind_mcs = {
    .name = "mcs",
    .summary = "MCS queue lock: FIFO, each waiter waits on its own node",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_OWNER | BATON_CAP_FIFO | BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPIN,
    .size = sizeof(baton_mcs_t),
    .align = _Alignof(baton_mcs_t),
    BATON_KIND_MUTEX_OPS,
    .release = k_release,
};
