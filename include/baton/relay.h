/* baton/relay.h - the relay lock (typed API): baton's default kind.
 *
 * Design goal: the throughput of an unfair lock, the fairness of a fair one
 * over any window longer than a slice (default 50 us), and no collapse when
 * threads outnumber cores.
 *
 * State.  `word` is 0 when free, else the owner's token (its thread
 * pointer, always even) with bit 0 (RELAY_HANDOFF) set when the queue head has asked
 * for the lock to be handed to it.  `tail` is an MCS-style queue of waiters.
 *
 *   word            meaning
 *   0               free: anyone may take it with one compare-and-swap
 *   owner           held; arrivals join the queue
 *   owner|HANDOFF   held; the head waited a whole slice, so the owner's
 *                   unlock passes ownership straight to the head
 *
 * Acquire: one CAS 0 -> self (barging is allowed, which is what keeps the
 * lock on one core while its owner loops: no cache line moves).  Otherwise
 * join the queue.  Only the queue head polls `word`, with exponential backoff
 * so that it rarely steals the line from a busy owner; every other waiter
 * waits on its own node by the lock's wait policy (default: spin for the
 * calibrated budget, then park), so at most two threads (owner and head) are
 * runnable per lock however many wait.  When the head has waited a slice it
 * sets HANDOFF and waits on its node; from then on no one can barge, and the
 * owner's unlock hands over directly.  On acquiring, the head leaves the
 * queue and promotes its successor to head (waking it if parked).
 *
 * Release: one CAS self -> 0; it fails only if HANDOFF is set (handoff) or
 * the caller is not the owner (EPERM).
 *
 * Owner: tracked (EPERM).  Fairness: a waiter at queue position k acquires
 * within about k slices.
 */
#ifndef BATON_RELAY_H
#define BATON_RELAY_H

#include <baton/wait.h>
#include <errno.h>
#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

struct baton_qnode;

#define BATON_RELAY_HANDOFF ((uintptr_t)1)
#define BATON_RELAY_SLICE_NS_DEFAULT 50000u

typedef struct baton_relay {
    _Alignas(BATON_CACHELINE) _Atomic uintptr_t word;
    _Atomic(struct baton_qnode *) tail;
    _Atomic(struct baton_qnode *) head; /* the queue head's node, set by the head */
    baton_wait_t wait;
    uint32_t slice_ns; /* how long the head waits before demanding a handoff */
} baton_relay_t;

BATON_API int baton_relay_init(baton_relay_t *l, const baton_wait_t *wait, uint32_t slice_ns); /* NULL, 0: defaults */
BATON_API int baton_relay_destroy(baton_relay_t *l);
BATON_API void baton_relay_lock_slow(baton_relay_t *l, uintptr_t self);
BATON_API int baton_relay_unlock_slow(baton_relay_t *l, uintptr_t self);

/* The owner token: the thread pointer, which on glibc is pthread_self()
 * but costs one register read instead of a call. */
static inline uintptr_t baton_relay_self(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return (uintptr_t)__builtin_thread_pointer();
#else
    return (uintptr_t)pthread_self();
#endif
}

static inline int baton_relay_trylock(baton_relay_t *l)
{
    uintptr_t expected = 0;
    /* Acquire pairs with the release CAS in baton_relay_unlock(). */
    return baton_cas(&l->word, &expected, baton_relay_self(), memory_order_acquire,
                     memory_order_relaxed) ? 0 : EBUSY;
}

static inline void baton_relay_lock(baton_relay_t *l)
{
    uintptr_t self = baton_relay_self();
    uintptr_t expected = 0;
    if (BATON_LIKELY(baton_cas(&l->word, &expected, self, memory_order_acquire, memory_order_relaxed)))
        return;
    baton_relay_lock_slow(l, self);
}

static inline int baton_relay_unlock(baton_relay_t *l)
{
    uintptr_t self = baton_relay_self();
    uintptr_t expected = self;
    /* Release pairs with the acquiring CAS of the next owner.  On failure
     * acquire, so that the handoff path sees the head's node published
     * before the head set HANDOFF. */
    if (BATON_LIKELY(baton_cas(&l->word, &expected, 0, memory_order_release, memory_order_acquire)))
        return 0;
    return baton_relay_unlock_slow(l, self);
}

static inline int baton_relay_is_locked(baton_relay_t *l)
{
    return baton_load(&l->word, memory_order_relaxed) != 0;
}

#ifdef __cplusplus
}
#endif
#endif
