/* mcs.c - MCS queue lock.  See baton/mcs.h.
 *
 * J. M. Mellor-Crummey and M. L. Scott, "Algorithms for Scalable
 * Synchronization on Shared-Memory Multiprocessors", ACM TOCS 9(1), 1991.
 *
 * Node states (the waited-on word): MCS_WAITING until the predecessor hands
 * over, then MCS_GRANTED.
 */
#include <baton/mcs.h>
#include "../base/thread.h"

#include <errno.h>
#include <stddef.h>

enum { MCS_GRANTED = 0, MCS_WAITING = 1 };

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

int baton_mcs_is_locked(baton_mcs_t *l)
{
    return baton_load(&l->tail, memory_order_relaxed) != NULL;
}

int baton_mcs_destroy(baton_mcs_t *l)
{
    return baton_mcs_is_locked(l) ? EBUSY : 0;
}

/* Link behind the predecessor and wait for the handover.  Out of line, so
 * that the uncontended path needs no stack frame. */
__attribute__((noinline, cold)) static void lock_wait(baton_mcs_t *l, baton_qnode_t *n,
                                                      baton_qnode_t *pred)
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

/* Hand over to the successor, once it has linked itself behind us.  Out of
 * line: see lock_wait(). */
__attribute__((noinline, cold)) static void hand_over(baton_mcs_t *l, baton_qnode_t *n)
{
    baton_qnode_t *next = baton_qnode_wait_next(n);
    /* Release; pairs with the successor's acquire wait. */
    baton_wait_store(&l->wait, &next->state, MCS_GRANTED);
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

static int k_init(void *s, const baton_opts_t *o) { return baton_mcs_init(s, &o->wait); }
static int k_destroy(void *s) { return baton_mcs_destroy(s); }
static void k_lock(void *s) { baton_mcs_lock(s); }
static int k_trylock(void *s) { return baton_mcs_trylock(s); }
static int k_unlock(void *s) { return baton_mcs_unlock(s); }
static int k_release(void *s) { return baton_mcs_release(s); }
static int k_is_locked(void *s) { return baton_mcs_is_locked(s); }

const baton_kind_t baton_kind_mcs = {
    .name = "mcs",
    .summary = "MCS queue lock: FIFO, each waiter waits on its own node",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE |
            BATON_CAP_WAIT | BATON_CAP_OWNER | BATON_CAP_FIFO,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPIN,
    .size = sizeof(baton_mcs_t), .align = _Alignof(baton_mcs_t),
    .handle_slot = offsetof(baton_mcs_t, api_handle),
    .init = k_init, .destroy = k_destroy, .lock = k_lock, .trylock = k_trylock,
    .unlock = k_unlock, .release = k_release, .is_locked = k_is_locked,
};
