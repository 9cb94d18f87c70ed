/* indicator.c - reader indicator: allocation and thread indices. */
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
