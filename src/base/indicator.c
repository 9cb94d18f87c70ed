/* indicator.c - reader indicator: allocation, thread indices, and the
 * reader's wait behind a writer. */
#include "indicator.h"
#include "kind.h"
#include "topology.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Thread_local uint32_t baton_ri_self __attribute__((tls_model("initial-exec")));
static _Atomic uint32_t next_index = 1;

uint32_t baton_ri_self_slow(void)
{
    /* Relaxed: only uniqueness matters.  0 is reserved for "unassigned". */
    uint32_t i = baton_fetch_add(&next_index, 1u, memory_order_relaxed);
    if (i == 0)
        i = baton_fetch_add(&next_index, 1u, memory_order_relaxed);
    baton_ri_self = i;
    return i;
}

void ri_rlock_first(const ri_t *r, _Atomic uint32_t *writer_word, _Atomic uint32_t *write_barrier,
                    uint32_t patience_limit, const baton_wait_t *wait)
{
    (void)baton_ri_self_slow();
    ri_rlock(r, writer_word, write_barrier, patience_limit, wait);
}

void ri_hold_back_wait(_Atomic uint32_t *write_barrier)
{
    /* Relaxed: advisory (indicator.h). */
    for (unsigned tries = 0; baton_load(write_barrier, memory_order_relaxed) != 0; tries++)
        ri_hold_back_pause(tries);
}

/* The number of counters ri_init makes for `slots`. */
static uint32_t ri_lines(uint32_t slots)
{
    if (slots == 0) {
        int n = baton_topo_online();
        slots = n > 4 ? (uint32_t)n : 4u;
    }
    uint32_t p = 1;
    while (p < slots)
        p <<= 1;
    return p;
}

size_t ri_footprint(uint32_t slots)
{
    return baton_alloc_cost(BATON_CACHELINE, ri_lines(slots) * sizeof(ri_slot_t));
}

int ri_init(ri_t *r, uint32_t slots)
{
    uint32_t p = ri_lines(slots);
    r->slot = aligned_alloc(BATON_CACHELINE, p * sizeof *r->slot);
    if (!r->slot)
        return ENOMEM;
    memset(r->slot, 0, p * sizeof *r->slot);
    r->mask = p - 1;
    return 0;
}

void ri_destroy(ri_t *r)
{
    free(r->slot);
    r->slot = NULL;
}

/* ri_rlock() after its first look found a writer: we arrived, and leave
 * again before we wait. */
void ri_rlock_wait(const ri_t *r, _Atomic uint32_t *writer_word, _Atomic uint32_t *write_barrier,
                   uint32_t patience_limit, const baton_wait_t *wait)
{
    bool raised = false;
    uint32_t patience = 0;
    do {
        ri_depart(r);
        baton_waiter_t w;
        baton_waiter_init(&w, wait);
        /* Relaxed: a hint of when to try again; the look below decides. */
        while (baton_load(writer_word, memory_order_relaxed) != 0) {
            if (!baton_waiter_pause(&w, NULL, 0))
                sched_yield();
            if (++patience == patience_limit && !raised) {
                /* Relaxed: the barrier is advisory (starvation avoidance),
                 * not part of mutual exclusion. */
                baton_fetch_add(write_barrier, 1u, memory_order_relaxed);
                raised = true;
            }
        }
        ri_arrive(r);
        /* seq_cst: the reader's half of the Dekker pattern (indicator.h). */
    } while (baton_load(writer_word, memory_order_seq_cst) != 0);
    if (raised)
        baton_fetch_sub(write_barrier, 1u, memory_order_relaxed); /* relaxed: advisory */
}
