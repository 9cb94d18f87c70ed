/* baton/mcs.h - MCS queue lock (typed API).
 *
 * Mellor-Crummey and Scott: waiters form a linked queue; each spins (or
 * waits by its policy) on a flag in its own queue node, and the holder hands
 * the lock to its successor by writing that flag.  FIFO, one remote write
 * per handoff.  Queue nodes come from a per-thread pool (no per-lock arrays,
 * no maximum thread count); a thread may hold many MCS locks at once and
 * release them in any order.
 *
 * Owner: tracked (unlock by a non-owner returns EPERM).  Fairness: FIFO.
 */
#ifndef BATON_MCS_H
#define BATON_MCS_H

#include <baton/wait.h>

#ifdef __cplusplus
extern "C" {
#endif

struct baton_qnode;

typedef struct baton_mcs {
    _Alignas(BATON_CACHELINE) _Atomic(struct baton_qnode *) tail;
    _Atomic(struct baton_qnode *) holder; /* the holder's node; written by the holder (or its releaser) */
    baton_wait_t wait;
} baton_mcs_t;

BATON_API int baton_mcs_init(baton_mcs_t *l, const baton_wait_t *wait); /* wait NULL: spin */
BATON_API int baton_mcs_destroy(baton_mcs_t *l);
BATON_API void baton_mcs_lock(baton_mcs_t *l);
BATON_API int baton_mcs_trylock(baton_mcs_t *l);
/* Queue and wait for the lock until d: 0, or ETIMEDOUT, after which the
 * waiter's node is passed over by the next hand-over (see mcs.c). */
BATON_API int baton_mcs_timedlock(baton_mcs_t *l, const baton_deadline_t *d);
BATON_API int baton_mcs_unlock(baton_mcs_t *l); /* EPERM unless the caller holds it */
/* Unlock a held lock whatever thread calls (what a NORMAL pthread mutex
 * allows); 0, and nothing done, on a free lock. */
BATON_API int baton_mcs_release(baton_mcs_t *l);
BATON_API int baton_mcs_is_locked(baton_mcs_t *l);

#ifdef __cplusplus
}
#endif
#endif
