/* indicator.h - the reader indicator shared by mrqd and rw(<kind>).
 *
 * Readers do not share one counter (a hot spot): the indicator is split
 * into counters on separate cache lines and each thread arrives at and
 * departs from the one its index selects.  Asking whether any reader is
 * inside reads them all, which only writers do.  With at least as many
 * counters as threads the counters are flags and readers never contend.
 *
 * Ordering (the Dekker pattern every writer-preference RW lock has): a
 * reader arrives, then looks at the writer's word; a writer marks its word,
 * then looks at the indicator.  Every step is a sequentially consistent
 * atomic (the writer's mark is a seq_cst read-modify-write, ri_writer_mark),
 * so at least one side sees the other.  Fences would do the same, but
 * ThreadSanitizer does not model them.
 */
#ifndef BATON_BASE_INDICATOR_H
#define BATON_BASE_INDICATOR_H

#include <baton/atomic.h>
#include <baton/wait.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
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
/* What ri_init(r, slots) allocates, allocator overhead included. */
size_t ri_footprint(uint32_t slots);
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

/* Any reader inside?  The writer calls this after ri_writer_mark().  It
 * reads every counter (the common answer, no, needs them all), four at a
 * time where there are four or more, with no branch between them. */
static inline bool ri_query(const ri_t *r)
{
    const ri_slot_t *p = r->slot, *const end = p + r->mask + 1u;
    uint32_t any = 0;
    /* seq_cst loads: the writer's half of the Dekker pattern (after its
     * mark); each is also an acquire, pairing with ri_depart(). */
    if (BATON_LIKELY(end - p >= 4)) {
        for (; p < end; p += 4)
            any |= baton_load(&p[0].n, memory_order_seq_cst) | baton_load(&p[1].n, memory_order_seq_cst) |
                   baton_load(&p[2].n, memory_order_seq_cst) | baton_load(&p[3].n, memory_order_seq_cst);
    } else {
        for (; p < end; p++)
            any |= baton_load(&p->n, memory_order_seq_cst);
    }
    return any != 0;
}

/* The writer's half of the Dekker pattern: a seq_cst read-modify-write of
 * the word readers look at (adding 0 leaves its value alone), ordered
 * before the writer's reads of the indicator. */
static inline void ri_writer_mark(_Atomic uint32_t *word)
{
    (void)baton_fetch_add(word, 0u, memory_order_seq_cst);
}

/* The writer's wait, after its mark (ri_writer_mark or its own seq_cst
 * RMW): until no reader is inside.  Readers leave on their own and wake no
 * one, so once the policy would park the writer yields instead. */
static inline void ri_wait_empty(const ri_t *r, const baton_wait_t *wait)
{
    baton_waiter_t w;
    baton_waiter_init(&w, wait);
    while (ri_query(r))
        if (!baton_waiter_pause(&w, NULL, 0))
            sched_yield();
}

/* One pause of a writer held back by the write barrier, the tries-th:
 * spin a little, longer each time, then yield. */
static inline void ri_hold_back_pause(unsigned tries)
{
    if (tries < 4u) {
        for (unsigned i = 0; i < (8u << tries); i++)
            baton_cpu_relax();
    } else {
        sched_yield();
    }
}

/* A writer's wait at the write barrier a patient reader raised (advisory:
 * relaxed loads; starvation avoidance, not mutual exclusion): spin a
 * little, then yield.  The wait is out of line (indicator.c). */
void ri_hold_back_wait(_Atomic uint32_t *write_barrier);

static inline void ri_hold_back(_Atomic uint32_t *write_barrier)
{
    if (BATON_UNLIKELY(baton_load(write_barrier, memory_order_relaxed) != 0))
        ri_hold_back_wait(write_barrier);
}

/* A reader's entry, the same in every writer-preference lock built on the
 * indicator: arrive, look at the writer's word (nonzero: a writer holds or
 * is taking the lock); if a writer is there, depart and wait until the word
 * is zero, then try again (ri_rlock_wait()).  After `patience` pauses the
 * reader raises the write barrier (a counter writers look at before they
 * start), so that writers cannot starve readers; it lowers it once in.
 * Waiting goes through the wait layer's pause; once the policy would park,
 * the reader yields instead (writers leave on their own and wake no one).
 * The wait is out of line, so that an uncontended reader's entry is the
 * arrival and one look, with no frame to build. */
void ri_rlock_wait(const ri_t *r, _Atomic uint32_t *writer_word, _Atomic uint32_t *write_barrier,
                   uint32_t patience_limit, const baton_wait_t *wait);

/* ri_rlock() by a thread that has no index yet: it takes one, then reads. */
void ri_rlock_first(const ri_t *r, _Atomic uint32_t *writer_word, _Atomic uint32_t *write_barrier,
                    uint32_t patience_limit, const baton_wait_t *wait);

static inline void ri_rlock(const ri_t *r, _Atomic uint32_t *writer_word, _Atomic uint32_t *write_barrier,
                            uint32_t patience_limit, const baton_wait_t *wait)
{
    /* A thread's first read goes out of line whole, so that no call here
     * returns to us: the entry needs no frame. */
    if (BATON_UNLIKELY(baton_ri_self == 0)) {
        ri_rlock_first(r, writer_word, write_barrier, patience_limit, wait);
        return;
    }
    ri_arrive(r);
    /* seq_cst: the reader's half of the Dekker pattern (above). */
    if (BATON_LIKELY(baton_load(writer_word, memory_order_seq_cst) == 0))
        return;
    ri_rlock_wait(r, writer_word, write_barrier, patience_limit, wait);
}

/* --- timed waits ---------------------------------------------------------------
 * The same waits with a deadline.  Each leaves the indicator, and the write
 * barrier, as it found them when it gives up. */

/* ri_wait_empty() until d: false once d has passed with a reader inside. */
static inline bool ri_wait_empty_until(const ri_t *r, const baton_wait_t *wait, const baton_deadline_t *d)
{
    baton_waiter_t w;
    baton_waiter_init(&w, wait);
    while (ri_query(r))
        if (!baton_waiter_pause_until(&w, d))
            return !ri_query(r);
    return true;
}

/* ri_hold_back() until d: false once d has passed with the barrier up. */
static inline bool ri_hold_back_until(_Atomic uint32_t *write_barrier, const baton_deadline_t *d)
{
    /* Relaxed: advisory, as in ri_hold_back(). */
    for (unsigned tries = 0; baton_load(write_barrier, memory_order_relaxed) != 0; tries++) {
        if (baton_deadline_left(d) == 0)
            return false;
        ri_hold_back_pause(tries);
    }
    return true;
}

/* ri_rlock() until d: 0 once in, or ETIMEDOUT, departed (it arrives only
 * for its look at the writer's word) and with the barrier it raised
 * lowered again. */
static inline int ri_timedrlock(const ri_t *r, _Atomic uint32_t *writer_word, _Atomic uint32_t *write_barrier,
                                uint32_t patience_limit, const baton_wait_t *wait, const baton_deadline_t *d)
{
    bool raised = false;
    uint32_t patience = 0;
    int rc = 0;
    for (;;) {
        ri_arrive(r);
        /* seq_cst: the reader's half of the Dekker pattern (above). */
        if (baton_load(writer_word, memory_order_seq_cst) == 0)
            break;
        ri_depart(r);
        baton_waiter_t w;
        baton_waiter_init(&w, wait);
        /* Relaxed: a hint, as in ri_rlock(). */
        while (baton_load(writer_word, memory_order_relaxed) != 0) {
            if (!baton_waiter_pause_until(&w, d)) {
                rc = ETIMEDOUT;
                goto out;
            }
            if (++patience == patience_limit && !raised) {
                baton_fetch_add(write_barrier, 1u, memory_order_relaxed); /* relaxed: advisory */
                raised = true;
            }
        }
    }
out:
    if (raised)
        baton_fetch_sub(write_barrier, 1u, memory_order_relaxed); /* relaxed: advisory */
    return rc;
}

#endif
