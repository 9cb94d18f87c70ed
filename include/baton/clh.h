/* baton/clh.h - CLH queue lock (typed API).
 *
 * Craig, Landin and Hagersten: each arriving thread swaps its own node into
 * the tail and waits on its predecessor's node; on release it clears its
 * node and adopts the predecessor's node for its next acquisition.  FIFO.
 * The tail word packs a node index with the node's enqueue generation, so
 * trylock's compare-and-swap cannot be fooled by a recycled node (ABA).
 *
 * Owner: tracked (EPERM).  Fairness: FIFO.
 */
#ifndef BATON_CLH_H
#define BATON_CLH_H

#include <baton/wait.h>

#ifdef __cplusplus
extern "C" {
#endif

struct baton_qnode;

typedef struct baton_clh {
    _Alignas(BATON_CACHELINE) _Atomic uint64_t tail; /* generation << 32 | node index */
    _Atomic(struct baton_qnode *) holder;            /* holder's node (holder, or its releaser) */
    struct baton_qnode *pred;                        /* holder's predecessor node (likewise) */
    baton_wait_t wait;
} baton_clh_t;

BATON_API int baton_clh_init(baton_clh_t *l, const baton_wait_t *wait); /* wait NULL: spin */
BATON_API int baton_clh_destroy(baton_clh_t *l);
BATON_API void baton_clh_lock(baton_clh_t *l);
BATON_API int baton_clh_trylock(baton_clh_t *l);
/* Queue and wait for the lock until d: 0, or ETIMEDOUT, after which the
 * waiter's node tells its successor whom to wait on instead (see clh.c). */
BATON_API int baton_clh_timedlock(baton_clh_t *l, const baton_deadline_t *d);
BATON_API int baton_clh_unlock(baton_clh_t *l); /* EPERM unless the caller holds it */
/* Unlock a held lock whatever thread calls (what a NORMAL pthread mutex
 * allows); 0, and nothing done, on a free lock. */
BATON_API int baton_clh_release(baton_clh_t *l);
BATON_API int baton_clh_is_locked(baton_clh_t *l);

#ifdef __cplusplus
}
#endif
#endif
