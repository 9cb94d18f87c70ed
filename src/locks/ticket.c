/* ticket.c - ticket lock: waiting, trylock and lifecycle.  See baton/ticket.h. */
#include <baton/ticket.h>

#include <errno.h>
#include <stddef.h>

int baton_ticket_init(baton_ticket_t *l, const baton_wait_t *wait)
{
    atomic_init(&l->next, 0u);
    atomic_init(&l->serving, 0u);
    if (wait)
        l->wait = *wait;
    else
        return baton_wait_init(&l->wait, BATON_WAIT_SPIN);
    return 0;
}

int baton_ticket_destroy(baton_ticket_t *l) { return baton_ticket_is_locked(l) ? EBUSY : 0; }

void baton_ticket_wait_turn(baton_ticket_t *l, uint32_t ticket)
{
    uint32_t s = baton_load(&l->serving, memory_order_acquire) & BATON_TICKET_MASK;
    while (s != ticket)
        s = baton_wait_while_eq(&l->wait, &l->serving, s); /* acquire inside */
}

int baton_ticket_trylock(baton_ticket_t *l)
{
    uint32_t s = baton_load(&l->serving, memory_order_acquire) & BATON_TICKET_MASK;
    uint32_t n = baton_load(&l->next, memory_order_relaxed);
    if ((n & BATON_TICKET_MASK) != s)
        return EBUSY;
    /* Take ticket n only if nobody else took it meanwhile; serving == n
     * then, so we hold the lock.  Acquire pairs with the release that
     * advanced `serving`, which the load above already synchronised with. */
    return baton_cas(&l->next, &n, n + 1u, memory_order_acquire, memory_order_relaxed) ? 0 : EBUSY;
}

/* The timed lock takes no ticket: a ticket drawn must be served, and a
 * waiter that gave up could not hand its turn back (the holder before it
 * would advance `serving` to a ticket nobody waits for, and every later
 * ticket would wait for it for good).  It waits on `serving`, which moves at
 * every release (and wakes sleepers, under the parking policies), and takes
 * the lock as trylock does, when no ticket is outstanding.  So a timed
 * waiter leaves nothing behind, and under a queue that never drains it
 * waits until its deadline: FIFO order is the ticket holders'. */
int baton_ticket_timedlock(baton_ticket_t *l, const baton_deadline_t *d)
{
    for (;;) {
        /* Read `serving` first: a release after this read moves it, and the
         * wait below returns at once. */
        uint32_t s = baton_load(&l->serving, memory_order_acquire) & BATON_TICKET_MASK;
        uint32_t n = baton_load(&l->next, memory_order_relaxed);
        /* Acquire: as in baton_ticket_trylock(). */
        if ((n & BATON_TICKET_MASK) == s &&
            baton_cas(&l->next, &n, n + 1u, memory_order_acquire, memory_order_relaxed))
            return 0;
        uint32_t seen;
        if (baton_wait_while_eq_until(&l->wait, &l->serving, s, d, &seen) == ETIMEDOUT)
            return baton_ticket_trylock(l) == 0 ? 0 : ETIMEDOUT;
    }
}

/* --- registry entry ------------------------------------------------------- */
#include "../base/kind.h"

BATON_KIND_ADAPT_INIT_WAIT(baton_ticket_init)
BATON_KIND_ADAPT_MUTEX(ticket)

/* The unlock needs no owner, but on a free lock it would serve a ticket
 * nobody drew, and the next one drawn would wait for a wrap of the counter:
 * leave a free lock alone (glibc's unlock of a free NORMAL mutex returns 0
 * and the mutex works on). */
static int k_release(void *s) { return baton_ticket_is_locked(s) ? baton_ticket_unlock(s) : 0; }

const baton_kind_t baton_kind_ticket = {
    .name = "ticket",
    .summary = "ticket lock: FIFO by fetch-and-add; all waiters read one word",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT |
            BATON_CAP_FIFO | BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPIN,
    .size = sizeof(baton_ticket_t),
    .align = _Alignof(baton_ticket_t),
    BATON_KIND_MUTEX_OPS,
    .release = k_release,
};
