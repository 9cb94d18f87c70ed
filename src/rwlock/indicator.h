/* indicator.h - the reader indicator shared by mrqd and rw(<kind>).
 *
 * Readers do not share one counter (a hot spot): the indicator is split
 * into counters on separate cache lines and each thread arrives at and
 * departs from the one its index selects.  Asking whether any reader is
 * inside reads them all, which only writers do.  With at least as many
 * counters as threads the counters are flags and readers never contend.
 *
 * Ordering (the Dekker pattern every writer-preference RW lock has): a
 * reader arrives, then looks at the writer's mutex; a writer takes the
 * mutex, then looks at the indicator.  Both sides use sequentially
 * consistent operations (the writer a seq_cst fence after its acquiring
 * CAS), so at least one of them sees the other.
 */
#ifndef BATON_RWLOCK_INDICATOR_H
#define BATON_RWLOCK_INDICATOR_H

#include <baton/atomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct ri_slot {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t n;
} ri_slot_t;

typedef struct ri {
    ri_slot_t *slot;
    uint32_t mask; /* slots - 1 (a power of two) */
} ri_t;

extern _Thread_local uint32_t baton_ri_self __attribute__((tls_model("initial-exec")));
uint32_t baton_ri_self_slow(void);

/* slots = 0: one per online CPU (at least 4), rounded up to a power of two. */
int ri_init(ri_t *r, uint32_t slots);
void ri_destroy(ri_t *r);

static inline _Atomic uint32_t *ri_mine(const ri_t *r)
{
    uint32_t i = baton_ri_self;
    if (BATON_UNLIKELY(i == 0))
        i = baton_ri_self_slow();
    return &r->slot[i & r->mask].n;
}

static inline void ri_arrive(const ri_t *r)
{
    /* seq_cst: ordered before the reader's seq_cst look at the writer's
     * mutex (the Dekker pattern above). */
    baton_fetch_add(ri_mine(r), 1u, memory_order_seq_cst);
}

static inline void ri_depart(const ri_t *r)
{
    /* Release: the reader's critical section happens before a writer that
     * sees the count drop (its acquire in ri_query). */
    baton_fetch_sub(ri_mine(r), 1u, memory_order_release);
}

/* Any reader inside?  The writer calls this after taking its mutex and a
 * seq_cst fence (ri_writer_fence). */
static inline bool ri_query(const ri_t *r)
{
    for (uint32_t i = 0; i <= r->mask; i++)
        /* Acquire: pairs with the release of ri_depart(). */
        if (baton_load(&r->slot[i].n, memory_order_acquire) != 0)
            return true;
    return false;
}

static inline void ri_writer_fence(void)
{
    /* The writer's half of the Dekker pattern: its mutex acquisition is
     * ordered before its reads of the indicator. */
    atomic_thread_fence(memory_order_seq_cst);
}

#endif
