/* baton/ticket.h - ticket lock (typed API).
 *
 * FIFO: an arriving thread takes a ticket with fetch-and-add on `next` and
 * waits until `serving` reaches it; unlock advances `serving`.  All waiters
 * read the same word, so each release invalidates every waiter's copy (the
 * scalability problem the MONITOR/MWAIT paper describes for the Linux ticket
 * lock).  Under a parking policy every release wakes all sleepers, and those
 * whose turn it is not go back to sleep.
 *
 * Counters are 31 bits wide: bit 31 of `serving` is the wait layer's parked
 * bit.  Owner: not tracked.  Fairness: FIFO.
 */
#ifndef BATON_TICKET_H
#define BATON_TICKET_H

#include <baton/wait.h>
#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BATON_TICKET_MASK 0x7fffffffu

typedef struct baton_ticket {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t next; /* next ticket to hand out */
    _Atomic uint32_t serving;                        /* ticket now holding the lock */
    baton_wait_t wait;
} baton_ticket_t;

BATON_API int baton_ticket_init(baton_ticket_t *l, const baton_wait_t *wait); /* wait NULL: spin */
BATON_API int baton_ticket_destroy(baton_ticket_t *l);
BATON_API void baton_ticket_wait_turn(baton_ticket_t *l, uint32_t ticket);

static inline void baton_ticket_lock(baton_ticket_t *l)
{
    uint32_t t = baton_fetch_add(&l->next, 1u, memory_order_relaxed) & BATON_TICKET_MASK;
    /* Acquire pairs with the release that advanced `serving` to t. */
    if (BATON_LIKELY((baton_load(&l->serving, memory_order_acquire) & BATON_TICKET_MASK) == t))
        return;
    baton_ticket_wait_turn(l, t);
}

BATON_API int baton_ticket_trylock(baton_ticket_t *l);
/* Wait for the lock until d without taking a ticket: 0, or ETIMEDOUT (see
 * ticket.c: a timed waiter gets the lock only when no ticket is out). */
BATON_API int baton_ticket_timedlock(baton_ticket_t *l, const baton_deadline_t *d);

static inline int baton_ticket_unlock(baton_ticket_t *l)
{
    /* Only the holder writes `serving` (waiters may set the parked bit). */
    uint32_t s = baton_load(&l->serving, memory_order_relaxed) & BATON_TICKET_MASK;
    baton_wait_store(&l->wait, &l->serving, (s + 1u) & BATON_TICKET_MASK);
    return 0;
}

static inline int baton_ticket_is_locked(baton_ticket_t *l)
{
    uint32_t n = baton_load(&l->next, memory_order_relaxed) & BATON_TICKET_MASK;
    uint32_t s = baton_load(&l->serving, memory_order_relaxed) & BATON_TICKET_MASK;
    return n != s;
}

#ifdef __cplusplus
}
#endif
#endif
