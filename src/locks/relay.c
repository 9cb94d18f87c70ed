/* relay.c - the relay lock: queueing, the head's poll, handoff.  The state
 * machine and the design argument are in baton/relay.h.
 *
 * Node states (the waited-on word of each queued thread):
 *   RELAY_QUEUED   behind the head; waits by the lock's policy (may park)
 *   RELAY_HEAD     at the head: polls the lock word
 *   RELAY_GRANTED  the owner handed the lock over (after HANDOFF)
 *
 * Lock word transitions:
 *   0 -> self                 acquire (fast path, or the head's poll)
 *   self -> 0                 release (fast path)
 *   owner -> owner|HANDOFF    the head, after waiting a slice
 *   owner|HANDOFF -> head     the owner's unlock: direct handoff
 */
#include <baton/relay.h>
#include "../core/thread.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <sched.h>

enum { RELAY_QUEUED = 0, RELAY_HEAD = 1, RELAY_GRANTED = 2 };

/* The head's poll of the lock word backs off exponentially up to this many
 * spin hints (about 1.5 us at the ~24 ns per hint measured on the reference
 * machine): often enough to find a free lock within a few hundred
 * nanoseconds when owners do work outside the lock, rarely enough that a
 * busy owner loses the line to the poll only once per ~100 acquisitions. */
#define RELAY_POLL_MAX 64u

int baton_relay_init(baton_relay_t *l, const baton_wait_t *wait, uint32_t slice_ns)
{
    atomic_init(&l->word, 0);
    atomic_init(&l->tail, NULL);
    atomic_init(&l->head, NULL);
    l->slice_ns = slice_ns ? slice_ns : BATON_RELAY_SLICE_NS_DEFAULT;
    if (wait)
        l->wait = *wait;
    else
        return baton_wait_init(&l->wait, BATON_WAIT_AUTO);
    return 0;
}

int baton_relay_destroy(baton_relay_t *l)
{
    if (baton_relay_is_locked(l) || baton_load(&l->tail, memory_order_relaxed) != NULL)
        return EBUSY;
    return 0;
}

/* Leave the queue after acquiring: clear the tail if we are last, else
 * promote our successor to head. */
static void dequeue(baton_relay_t *l, baton_qnode_t *n)
{
    baton_qnode_t *expected = n;
    if (baton_load(&l->tail, memory_order_relaxed) == n &&
        baton_cas(&l->tail, &expected, NULL, memory_order_acq_rel, memory_order_relaxed)) {
        baton_qnode_put(n);
        return;
    }
    baton_qnode_t *next;
    unsigned spins = 0;
    /* An enqueuer swapped the tail but has not linked yet: a two-instruction
     * window unless it was preempted there.  Acquire pairs with its release
     * store of `next`. */
    while ((next = baton_load(&n->next, memory_order_acquire)) == NULL) {
        if (++spins < 1024u)
            baton_cpu_relax();
        else
            sched_yield();
    }
    /* Release: the successor reads the lock state after seeing RELAY_HEAD. */
    baton_wait_store(&l->wait, &next->state, RELAY_HEAD);
    baton_qnode_put(n);
}

void baton_relay_lock_slow(baton_relay_t *l, uintptr_t self)
{
    baton_qnode_t *n = baton_qnode_get();
    atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&n->state, RELAY_QUEUED, memory_order_relaxed);
    /* acq_rel: release publishes our node's initialisation to the
     * predecessor that will link and promote it. */
    baton_qnode_t *pred = baton_xchg(&l->tail, n, memory_order_acq_rel);
    if (pred) {
        baton_store(&pred->next, n, memory_order_release);
        (void)baton_wait_while_eq(&l->wait, &n->state, RELAY_QUEUED); /* acquire inside */
    } else {
        /* Head at once: nobody will promote us, so say it ourselves (the
         * handoff wait below waits for the state to leave RELAY_HEAD). */
        baton_store(&n->state, RELAY_HEAD, memory_order_relaxed);
    }

    /* We are the head.  Publish our node for a possible handoff (the
     * release CAS that sets HANDOFF orders this store before it). */
    baton_store(&l->head, n, memory_order_relaxed);
    /* Poll the word until it is free or a slice has passed; then demand a
     * handoff and wait on our node by the lock's policy.  Under the pure
     * park policy there is no polling: demand at once and sleep. */
    const bool poll = l->wait.kind != BATON_WAIT_PARK;
    const uint64_t start = baton_now_ns();
    uint32_t delay = 1;
    unsigned polls = 0;
    for (;;) {
        uintptr_t w = baton_load(&l->word, memory_order_relaxed);
        if (w == 0) {
            /* Acquire pairs with the owner's releasing CAS. */
            if (baton_cas(&l->word, &w, self, memory_order_acquire, memory_order_relaxed))
                break;
            continue;
        }
        /* Reading the clock costs ~20 ns, so only every 8th poll. */
        if (poll && ((++polls & 7u) != 0 || baton_now_ns() - start < l->slice_ns)) {
            for (uint32_t i = 0; i < delay; i++)
                baton_cpu_relax();
            if (delay < RELAY_POLL_MAX)
                delay *= 2;
            continue;
        }
        /* Demand the lock.  Release: publishes l->head to the owner, whose
         * failing unlock CAS reads this with acquire. */
        if (!baton_cas(&l->word, &w, w | BATON_RELAY_HANDOFF, memory_order_release,
                       memory_order_relaxed))
            continue; /* changed under us: re-examine (maybe free now) */
        (void)baton_wait_while_eq(&l->wait, &n->state, RELAY_HEAD); /* acquire inside */
        break; /* RELAY_GRANTED: the owner stored our token in the word */
    }
    dequeue(l, n);
}

int baton_relay_unlock_slow(baton_relay_t *l, uintptr_t self)
{
    uintptr_t w = baton_load(&l->word, memory_order_acquire);
    if ((w & ~BATON_RELAY_HANDOFF) != self)
        return EPERM;
    /* HANDOFF is set and only we (the owner) can clear it.  Acquire above
     * pairs with the head's release CAS, so l->head is its node. */
    baton_qnode_t *h = baton_load(&l->head, memory_order_relaxed);
    uintptr_t token = atomic_load_explicit(&h->owner, memory_order_relaxed);
    /* Ownership passes in the word first; the release in baton_wait_store
     * below publishes it, and the critical section, to the head. */
    baton_store(&l->word, token, memory_order_relaxed);
    baton_wait_store(&l->wait, &h->state, RELAY_GRANTED);
    return 0;
}

/* --- registry entry ------------------------------------------------------- */
#include "kind.h"

static const baton_option_desc_t relay_options[] = {
    {"slice_us", 1, 1000000, BATON_RELAY_SLICE_NS_DEFAULT / 1000u,
     "how long the queue head waits before the owner must hand over (us)"},
};

static int k_init(void *s, const baton_opts_t *o)
{
    return baton_relay_init(s, &o->wait, (uint32_t)(o->value[0] * 1000u));
}
static int k_destroy(void *s) { return baton_relay_destroy(s); }
static void k_lock(void *s) { baton_relay_lock(s); }
static int k_trylock(void *s) { return baton_relay_trylock(s); }
static int k_unlock(void *s) { return baton_relay_unlock(s); }
static int k_is_locked(void *s) { return baton_relay_is_locked(s); }

const baton_kind_t baton_kind_relay = {
    .name = "relay",
    .summary = "default: barging owner keeps the lock on its core, FIFO queue, handoff after a slice",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE |
            BATON_CAP_WAIT | BATON_CAP_OWNER | BATON_CAP_NOCOLLAPSE,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_AUTO,
    .size = sizeof(baton_relay_t), .align = _Alignof(baton_relay_t),
    .options = relay_options, .noptions = sizeof relay_options / sizeof relay_options[0],
    .init = k_init, .destroy = k_destroy, .lock = k_lock, .trylock = k_trylock,
    .unlock = k_unlock, .is_locked = k_is_locked,
};
