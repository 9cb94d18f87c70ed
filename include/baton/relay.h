/* baton/relay.h - the relay lock (typed API): baton's default kind.
 *
 * Design goal: the throughput of an unfair lock, the fairness of a fair one
 * over any window longer than a slice (default 50 us), and no collapse when
 * threads outnumber cores.
 *
 * State (one cache line):
 *   word     0 when free, else the owner's token (its thread pointer)
 *   handoff  1 while the queue head demands the lock: nobody may barge
 *   tail     MCS-style queue of waiters; `head` names the queue head's node
 *
 * Acquire: if no handoff is pending, one CAS 0 -> self.  Barging is what
 * keeps the lock on one core while its owner loops, so neither the lock
 * word nor the protected data moves between caches.  Otherwise look twice,
 * a microsecond apart, for an owner that let go, then join the queue.
 * Only the queue head polls `word`, with exponential backoff, so it rarely
 * steals the line from a busy owner; under a parking policy every other
 * waiter parks at once on its own node, so at most two threads per lock
 * (owner and head) are runnable however many wait.  An owner's tenure
 * lasts one slice while a head waits: every 64th release the owner reads
 * the clock and, once the slice is over, hands the lock to the head
 * directly.  Should the owner not release (a long critical section, a
 * preempted owner), the head, after four slices of its own waiting, sets
 * `handoff`, which stops barging and makes the next release a hand-over.  On acquiring, the head leaves the queue
 * and promotes its successor (waking it if parked).
 *
 * Release: a plain store of 0, after checking (plain loads of a line the
 * owner holds) that the caller is the owner (else EPERM) and that no
 * handoff is pending (else hand over).  So an uncontended lock+unlock costs
 * one atomic read-modify-write, as a test-and-set lock does.  The owner's
 * check of `handoff` and the head's setting of it can cross; the head
 * therefore keeps polling `word` after it demands the lock and, if it
 * parks, parks with a timeout, so the crossing costs at most that timeout
 * once, never a lost wake-up.
 *
 * Owner: tracked (EPERM).  Fairness: a waiter at queue position k acquires
 * within about k slices.  trylock returns EBUSY while a handoff is pending,
 * even at the instant the word is free: the lock is spoken for.
 */
#ifndef BATON_RELAY_H
#define BATON_RELAY_H

#include <baton/token.h>
#include <baton/wait.h>
#include <errno.h>
#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

struct baton_qnode;

#define BATON_RELAY_SLICE_NS_DEFAULT 50000u

typedef struct baton_relay {
    _Alignas(BATON_CACHELINE) _Atomic uintptr_t word;
    _Atomic uint32_t handoff;
    uint32_t slice_ns; /* an owner's tenure while others wait */
    _Atomic(struct baton_qnode *) tail;
    _Atomic(struct baton_qnode *) head;    /* the queue head's node, set by the head */
    _Atomic(struct baton_qnode *) zombies; /* nodes of timed waiters that gave up (relay.c) */
    /* Tenure accounting, written only by the owner (ordered by the lock). */
    _Atomic uint32_t count; /* releases; the tenure is checked every 64th;
                                the head reads it to tell a busy owner from
                                an idle lock */
    uintptr_t tenure_owner; /* whose tenure tenure_start dates */
    uint64_t tenure_start;  /* ns */
    baton_wait_t wait;
} baton_relay_t;

/* The owner checks its tenure every BATON_RELAY_CHECK_EVERY releases: a
 * clock read (~20 ns) amortised to well under a nanosecond. */
#define BATON_RELAY_CHECK_EVERY 64u

BATON_API int baton_relay_init(baton_relay_t *l, const baton_wait_t *wait,
                               uint32_t slice_ns); /* NULL, 0: defaults */
BATON_API int baton_relay_destroy(baton_relay_t *l);
BATON_API void baton_relay_lock_slow(baton_relay_t *l, uintptr_t self);
/* Wait for the lock until d: 0, or ETIMEDOUT.  A timed waiter queues and
 * waits as lock()'s do; one that gives up leaves the queue at once as the
 * head, and behind the head is passed over by the next promotion (see
 * relay.c). */
BATON_API int baton_relay_timedlock(baton_relay_t *l, const baton_deadline_t *d);
BATON_API void baton_relay_hand_over(baton_relay_t *l, struct baton_qnode *head);
BATON_API struct baton_qnode *baton_relay_tenure_over(baton_relay_t *l, uintptr_t self);

static inline int baton_relay_trylock(baton_relay_t *l)
{
    uintptr_t expected = 0;
    /* Relaxed: a stale 0 only lets us try the CAS, which decides. */
    if (baton_load(&l->handoff, memory_order_relaxed))
        return EBUSY;
    /* Acquire pairs with the release store in baton_relay_unlock(). */
    return baton_cas(&l->word, &expected, baton_thread_token(), memory_order_acquire, memory_order_relaxed)
               ? 0
               : EBUSY;
}

static inline void baton_relay_lock(baton_relay_t *l)
{
    uintptr_t self = baton_thread_token();
    uintptr_t expected = 0;
    if (BATON_LIKELY(!baton_load(&l->handoff, memory_order_relaxed) &&
                     baton_cas(&l->word, &expected, self, memory_order_acquire, memory_order_relaxed)))
        return;
    baton_relay_lock_slow(l, self);
}

/* Release the lock held by the thread whose token is `holder` (what the
 * word holds), whatever thread calls: the owner's unlock, or a release for
 * it (what a NORMAL pthread mutex allows).  The tenure bookkeeping goes on
 * in the holder's name. */
static inline int baton_relay_release_as(baton_relay_t *l, uintptr_t holder)
{
    /* Acquire pairs with the head's release store of `handoff`, so that the
     * hand-over path sees the head's node. */
    if (BATON_UNLIKELY(baton_load(&l->handoff, memory_order_acquire) != 0)) {
        /* Relaxed: see above.  NULL: the head that demanded gave up its
         * wait (a timed one) just now; release as below. */
        struct baton_qnode *h = baton_load(&l->head, memory_order_relaxed);
        if (h != NULL) {
            baton_relay_hand_over(l, h);
            return 0;
        }
    }
    /* Our tenure is over if others wait and a slice has passed. */
    /* Relaxed load and store, not an atomic increment: only the owner
     * writes the count; the head reads it racily (see relay.c). */
    uint32_t c = baton_load(&l->count, memory_order_relaxed) + 1;
    baton_store(&l->count, c, memory_order_relaxed);
    if (BATON_UNLIKELY(c % BATON_RELAY_CHECK_EVERY == 0)) {
        struct baton_qnode *h = baton_relay_tenure_over(l, holder);
        if (h) {
            baton_relay_hand_over(l, h);
            return 0;
        }
    }
    /* Release pairs with the acquiring CAS of the next owner. */
    baton_store(&l->word, 0, memory_order_release);
    return 0;
}

static inline int baton_relay_unlock(baton_relay_t *l)
{
    uintptr_t self = baton_thread_token();
    /* Relaxed: only the owner stores its own token; anyone else reads a
     * value that is not theirs. */
    if (BATON_UNLIKELY(baton_load(&l->word, memory_order_relaxed) != self))
        return EPERM;
    return baton_relay_release_as(l, self);
}

/* Unlock a held lock whatever thread calls; 0, and nothing done, on a free
 * lock. */
static inline int baton_relay_release(baton_relay_t *l)
{
    /* Relaxed: the caller knows the lock is held (it synchronised with the
     * holder), which orders the holder's token before this load. */
    uintptr_t holder = baton_load(&l->word, memory_order_relaxed);
    return holder == 0 ? 0 : baton_relay_release_as(l, holder);
}

static inline int baton_relay_is_locked(baton_relay_t *l)
{
    return baton_load(&l->word, memory_order_relaxed) != 0;
}

#ifdef __cplusplus
}
#endif
#endif
