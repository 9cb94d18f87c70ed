/* baton/onespinner.h - the 1spinner lock (typed API).
 *
 * Akkan, Lang and Ionkov, "HPC Runtime Support for Fast and Power Efficient
 * Locking and Synchronization" (CLUSTER 2013), Algorithm 2.  The lock is two
 * words: `head` (who holds it) and `tail` (the last arrival and the
 * generation of that arrival's monitor).  Each thread owns a monitor word
 * whose generation it bumps every time it acquires any 1spinner lock.  An
 * arrival swaps itself into `tail`, waits until its predecessor's monitor
 * moves past the recorded generation (the predecessor now holds the lock),
 * then waits until `head` no longer names the predecessor (it released).
 * Only one thread, the holder's successor, ever polls `head`: hence the
 * name.  Release is a single store.  Where the paper indexes a per-CPU array,
 * baton uses per-thread monitors allocated on demand and names them by a
 * 32-bit index, so any number of threads may use the lock.
 *
 * Owner: tracked (`head` names the holder; EPERM).  Fairness: FIFO.
 */
#ifndef BATON_ONESPINNER_H
#define BATON_ONESPINNER_H

#include <baton/wait.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct baton_onespinner {
    _Alignas(BATON_CACHELINE) _Atomic uint64_t tail; /* generation << 32 | (monitor index + 1); 0 = none */
    _Atomic uint32_t head;                           /* holder's monitor index + 1; 0 = free */
    baton_wait_t wait;
} baton_onespinner_t;

BATON_API int baton_onespinner_init(baton_onespinner_t *l, const baton_wait_t *wait); /* wait NULL: auto */
BATON_API int baton_onespinner_destroy(baton_onespinner_t *l);
BATON_API void baton_onespinner_lock(baton_onespinner_t *l);
BATON_API int baton_onespinner_trylock(baton_onespinner_t *l);
/* Wait for the lock until d without queueing: 0, or ETIMEDOUT (see
 * onespinner.c: a timed waiter gets the lock when no one queues). */
BATON_API int baton_onespinner_timedlock(baton_onespinner_t *l, const baton_deadline_t *d);
BATON_API int baton_onespinner_unlock(baton_onespinner_t *l); /* EPERM unless the caller holds it */
/* Unlock a held lock whatever thread calls (what a NORMAL pthread mutex
 * allows); 0, and nothing done, on a free lock. */
BATON_API int baton_onespinner_release(baton_onespinner_t *l);
BATON_API int baton_onespinner_is_locked(baton_onespinner_t *l);

#ifdef __cplusplus
}
#endif
#endif
