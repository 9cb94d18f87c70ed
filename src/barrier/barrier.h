/* barrier.h - what the barrier kinds (src/barrier/) share.
 *
 * A barrier is this header, its kind's state (kind->size bytes on their own
 * cache lines) and n seats.  A seat is a place, numbered 0..n-1 (the rank the
 * dissemination and tournament algorithms need): a thread takes one on its
 * first wait and keeps it until it exits (src/base/slots.h calls us back
 * then), so every episode has exactly one arrival per seat.  The kinds rely
 * on that: a seat's per-rank state (its episode count, its flags) passes
 * from an exiting thread to the next one that takes the seat, in step with
 * the other seats.
 *
 * Episodes.  Every waited-on word holds an episode number modulo 2^31 (bit
 * 31 is the wait layer's parked bit): how many episodes the word's writer has
 * completed.  A waiter knows which episode it is in (a ticket from a counter,
 * or its seat's count) and waits for the word to move past it.  Counting
 * episodes rather than flipping a sense bit lets a thread join at any
 * episode without per-thread state, and lets a word run ahead of a slow
 * reader without the reader mistaking the new value for an old one.
 *
 * Waiting.  Every wait goes through bar_wait_while() (an optional yield
 * phase, then the wait layer's baton_wait_while_eq() with the barrier's
 * policy) and every release through bar_publish() (baton_wait_store()).  The
 * yield phase is what `auto` uses when the barrier has more threads than the
 * process has CPUs (see barrier.c: choose_policy()).
 */
#ifndef BATON_BARRIER_INTERNAL_H
#define BATON_BARRIER_INTERNAL_H

#include <baton/atomic.h>
#include <baton/barrier.h>
#include <baton/wait.h>

#include "../base/syslock.h"
#include "../base/slots.h"
#include "../base/kind.h" /* baton_option_desc_t, baton_opts_t: the spec grammar's types */

#include <stddef.h>
#include <stdint.h>

#define BAR_EPISODE_MASK 0x7fffffffu
_Static_assert((BAR_EPISODE_MASK & BATON_WAIT_PARKED) == 0, "episode numbers leave the parked bit free");

/* The most rounds dissemination and tournament take: ceil(log2(n)) for any
 * unsigned n, and one seat flag each (they fill exactly one cache line). */
#define BAR_MAX_ROUNDS 32
_Static_assert(BAR_MAX_ROUNDS * sizeof(uint32_t) <= BATON_CACHELINE, "a seat's flags fit one line");

/* A place.  Two cache lines: the first is written only by the seat's holder
 * (and under the barrier's lock when the seat changes hands), the second
 * holds the words other ranks write to signal this one, so a signal never
 * steals the line the holder is about to write. */
typedef struct bar_seat {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t inside; /* 1 while the holder waits (free's EBUSY) */
    uint32_t rank;
    uint32_t group;   /* twolevel: the rank's group */
    uint32_t episode; /* episodes this rank has completed, mod 2^31 (dissemination, tournament) */
    uint32_t taken;   /* a live thread holds it (under the barrier's lock) */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t flag[BAR_MAX_ROUNDS]; /* signals from other ranks */
} bar_seat_t;

_Static_assert(sizeof(bar_seat_t) == 2 * BATON_CACHELINE, "a seat is two cache lines");

/* A thread's record for one barrier (its slot, see slots.h). */
typedef struct bar_member {
    struct bar_member *next, *prev; /* the barrier's list (under its lock) */
    bar_seat_t *seat;               /* NULL until a seat was free */
} bar_member_t;

typedef struct bar_kind bar_kind_t;

struct baton_barrier {
    /* Read by every wait: the first line. */
    _Alignas(BATON_CACHELINE) const bar_kind_t *kind;
    void *state;       /* the kind's, kind->size bytes, cache-line aligned */
    bar_seat_t *seats; /* n of them */
    unsigned n;
    baton_wait_t wait;        /* the resolved policy */
    uint64_t yield_ns;        /* the yield phase before the policy; 0: none */
    baton_slot_owner_t owner; /* finds a thread's bar_member_t */

    /* Seats changing hands (first waits, thread exits): under mu. */
    _Alignas(BATON_CACHELINE) baton_syslock_t mu;
    bar_member_t *members;
    unsigned taken;
    /* Seat groups (twolevel; one group otherwise): group g owns the ranks
     * [group_first[g], group_first[g + 1]); a thread takes a seat in the
     * group of the CPU it first waits on when one is free. */
    unsigned ngroups;
    uint32_t *group_first; /* ngroups + 1 entries */
    uint16_t *cpu_group;   /* ncpus entries; NULL with one group */
    int ncpus;

    uint64_t value[BATON_KIND_MAX_OPTIONS]; /* resolved option values, in table order */
    char spec[160];                         /* canonical */
};

/* A barrier kind: one per file, listed in registry.c. */
struct bar_kind {
    const char *name;
    const char *summary;
    unsigned waits;                     /* accepted policies (BATON_WAIT_BIT) */
    uint8_t default_wait;               /* baton_wait_kind or BATON_WAIT_AUTO */
    const baton_option_desc_t *options; /* the kind's own; registry.c adds the common ones */
    size_t noptions;
    size_t size; /* of the state */
    /* State and seats are zeroed, b->n, b->wait, b->value and the seats'
     * ranks set; one seat group.  Returns 0 or an errno value (with
     * baton_fail()). */
    int (*init)(baton_barrier_t *b);
    void (*destroy)(baton_barrier_t *b); /* NULL: nothing beyond the state */
    /* One arrival by the holder of `seat`; returns BATON_BARRIER_SERIAL_THREAD
     * for exactly one arrival per episode, 0 for the others. */
    int (*wait)(baton_barrier_t *b, bar_seat_t *seat);
};

extern const bar_kind_t bar_kind_central, bar_kind_twolevel, bar_kind_dissemination, bar_kind_tournament;

/* registry.c: the kind named by name[0..len) (len 0 or "default": the
 * default kind), or NULL. */
const bar_kind_t *bar_registry_find(const char *name, size_t len);
/* "central, twolevel, ...". */
const char *bar_registry_names(void);
/* Option index of the common `yield_us` option in every kind's table, and
 * the full table (the kind's options, then the common ones). */
size_t bar_options(const bar_kind_t *k, const baton_option_desc_t **table);
/* The value of yield_us that means "decided at creation" (its default). */
#define BAR_YIELD_AUTO UINT64_MAX

/* barrier.c: the slow half of bar_wait_while(). */
uint32_t bar_wait_slow(const baton_barrier_t *b, _Atomic uint32_t *word, uint32_t old);

/* Wait while *word (parked bit masked off) == old; return the new value.
 * The load that sees the change is an acquire: it pairs with the release in
 * bar_publish() (inside baton_wait_store()). */
static inline uint32_t bar_wait_while(const baton_barrier_t *b, _Atomic uint32_t *word, uint32_t old)
{
    /* Acquire: pairs with the release in bar_publish(). */
    uint32_t v = baton_load(word, memory_order_acquire) & BAR_EPISODE_MASK;
    if (BATON_LIKELY(v != old))
        return v;
    return bar_wait_slow(b, word, old);
}

/* Wait until *word == want, for a word that only moves forward and cannot
 * pass `want` while we wait (an episode word: it cannot move past our
 * episode until we have arrived). */
static inline void bar_wait_for(const baton_barrier_t *b, _Atomic uint32_t *word, uint32_t want)
{
    /* Acquire: pairs with the release in bar_publish(). */
    uint32_t v = baton_load(word, memory_order_acquire) & BAR_EPISODE_MASK;
    while (v != want)
        v = bar_wait_slow(b, word, v);
}

/* Publish a new episode number and wake whoever sleeps on the word.  A
 * release (baton_wait_store): pairs with the acquires in bar_wait_while(),
 * bar_wait_for() and the wait layer. */
static inline void bar_publish(const baton_barrier_t *b, _Atomic uint32_t *word, uint32_t v)
{
    baton_wait_store(&b->wait, word, v & BAR_EPISODE_MASK);
}

/* One arrival at a ticket counter that takes `size` arrivals per episode
 * (central.c, twolevel.c): ticket t belongs to episode t / size and is its
 * last when t % size == size - 1.  *done receives the value the episode word
 * holds once this episode is over; returns true for the last arrival.
 * acq_rel: the release hands what we wrote before the barrier to the last
 * arriver (the counter's RMWs form one release sequence); the acquire gives
 * the last arriver every earlier arrival's writes, which its publication of
 * the episode then passes on. */
static inline bool bar_arrive(_Atomic uint64_t *tickets, uint32_t size, uint32_t *done)
{
    uint64_t t = baton_fetch_add(tickets, 1u, memory_order_acq_rel);
    *done = (uint32_t)(t / size + 1u) & BAR_EPISODE_MASK;
    return t % size == size - 1u;
}

/* Seat with rank r. */
static inline bar_seat_t *bar_seat(const baton_barrier_t *b, unsigned r) { return &b->seats[r]; }

/* ceil(log2(n)): the rounds of dissemination and tournament. */
static inline unsigned bar_rounds(unsigned n)
{
    unsigned r = 0;
    while (r < BAR_MAX_ROUNDS && (1ull << r) < n)
        r++;
    return r;
}

/* How many ranks may wait on an episode word that shares its cache line
 * with the counter the last arriver increments.  Sharing saves the last
 * arriver one cache-line transfer on the release path (measured with two
 * threads: 1.20 against 1.55 us per episode with 1 us of work); but every
 * arrival then makes every spinning waiter re-read the line, which grows
 * as n^2, so past a few waiters the word gets a line of its own. */
#define BAR_SHARE_LINE_MAX 4u

#endif
