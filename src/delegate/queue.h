/* queue.h - the queue-delegation core shared by qd, mrqd and hqd.
 *
 * A QD lock is a mutual-exclusion lock (qd_mutex_t, below: plain lock()
 * waits through the lock's policy) plus a delegation queue, a
 * tantrum queue: enqueue may answer CLOSED.  Whoever takes the mutex opens
 * the queue, runs its own operation, then runs what others enqueued
 * meanwhile (flush) until the queue is closed, and unlocks.  Whoever finds
 * the mutex taken enqueues its operation and, unless it wants a result,
 * goes on at once.
 *
 * The queue is a byte buffer and a 64-bit counter: the byte offset of the
 * next free byte.  enqueue reserves an entry with one fetch_add (`cas=1`
 * emulates it with a CAS loop), copies its arguments in, and publishes the
 * entry by storing its function pointer last.  Entries are as long as their
 * arguments need (rounded to 16 bytes), so several small operations share a
 * cache line; `pad=1` gives every entry a line of its own.  The queue is
 * closed when the counter is at or past the buffer's size: the helper closes
 * it by swapping the size in, or it fills up by itself.  An enqueue whose
 * reservation starts inside the buffer but does not fit (the straddler)
 * writes an END marker where it would have started, so the helper knows
 * nothing follows.  Between help sessions every byte of the buffer is zero:
 * the helper zeroes each entry after running it, which is what lets it wait
 * for "function pointer non-zero" at whatever offset an entry lands.
 *
 * Entry layout (offsets from the entry's start, always 16-byte aligned):
 *    0  fn      0 = not yet written, QD_END = the straddler's marker
 *    8  used    bytes of this entry actually written (u16), flags (u16)
 *   16  future  (only with QD_F_FUTURE; 8 bytes + 8 of padding)
 *   16|32       the arguments, or with QD_F_CTX the caller's ctx pointer
 *
 * Help sessions.  A helper runs at most `help_limit` operations per session.
 * When it finds nothing new it closes the queue and ends the session; when
 * the queue filled up by itself and the limit is not reached, it empties it
 * and opens it again for another round.  Operations run in the order of
 * their reservations, which is the order they were accepted: the
 * linearization point of a delegated operation is its successful
 * fetch_add, and that of the helper's own operation the point before it
 * opens the queue.
 *
 * Starvation.  A delegator retries try_lock and enqueue at most `retries`
 * times (pausing between), then takes the mutex unconditionally: the
 * bounded variant of the algorithm.
 */
#ifndef BATON_DELEGATE_QUEUE_H
#define BATON_DELEGATE_QUEUE_H

#include "../base/cs.h"
#include "../base/kind.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <sched.h>

#define QD_END ((uintptr_t)1)
#define QD_F_FUTURE 1u
#define QD_F_CTX 2u
#define QD_F_OWN 4u /* the future is the caller's own (execute): skip it when we run the op */

enum { QD_OK = 0, QD_CLOSED = 1 };

typedef struct qd_hdr {
    _Atomic uintptr_t fn;
    uint16_t used;
    uint16_t flags;
    uint32_t pad;
} qd_hdr_t;

_Static_assert(sizeof(qd_hdr_t) == 16, "entries are 16-byte granular");

/* Counters, written only by the mutex holder (relaxed load+store, no RMW),
 * read racily by baton_lock_stats(). */
typedef struct qd_counters {
    _Atomic uint64_t sessions, helped, forced;
} qd_counters_t;

typedef struct qd_queue {
    /* Hammered by every delegator: a line of its own. */
    _Alignas(BATON_CACHELINE) _Atomic uint64_t counter;
    /* Read by every delegator, written twice per session. */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t closed; /* a hint: see enqueue */
    _Atomic uint32_t helping;                          /* a session is running (for destroy's EBUSY test) */
    uint32_t size;                                     /* bytes, a multiple of 128 */
    uint8_t pad;                                       /* every entry takes a whole line */
    uint8_t cas;                                       /* fetch_add emulated with a CAS loop */
    unsigned char *buf; /* BATON_CACHELINE aligned, size bytes, zero between sessions */
    /* On the line the helper has just written when it counts (it closed the
     * queue): on a line of their own the counts cost every session whose
     * helper's CPU differs from the last one's a line transfer, and the
     * unlock store, queued behind them, became visible only after it. */
    qd_counters_t cnt;
} qd_queue_t;

_Static_assert(offsetof(qd_queue_t, cnt) + sizeof(qd_counters_t) <=
                   offsetof(qd_queue_t, closed) + BATON_CACHELINE,
               "the counters share the closed hint's line");

static inline void qd_count(_Atomic uint64_t *c, uint64_t n)
{
    /* Relaxed: statistics only; the single writer holds the mutex. */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

int qd_queue_init(qd_queue_t *q, uint32_t size, bool pad, bool cas);
void qd_queue_destroy(qd_queue_t *q);

static inline uint32_t qd_round16(size_t n) { return (uint32_t)((n + 15u) & ~(size_t)15u); }

/* Try to enqueue fn with a payload (args copied, or a ctx pointer when
 * flags has QD_F_CTX).  QD_OK once accepted, QD_CLOSED otherwise. */
static inline int qd_enqueue(qd_queue_t *q, baton_fn fn, const void *payload, size_t psize, uint32_t flags,
                             baton_future_t *f)
{
    /* Relaxed: only a hint that keeps delegators off the counter's line
     * while the queue is closed; the fetch_add below decides. */
    if (baton_load(&q->closed, memory_order_relaxed))
        return QD_CLOSED;
    const uint32_t used = 16u + (f ? 16u : 0u) + qd_round16(psize);
    const uint32_t len = q->pad ? (used + BATON_CACHELINE - 1u) & ~(uint32_t)(BATON_CACHELINE - 1u) : used;
    uint64_t off;
    if (BATON_LIKELY(!q->cas)) {
        /* Acquire: pairs with the helper's release store that opened the
         * queue, so the zeroed buffer it left is what we write over.
         * seq_cst: qd's resident helper (qd.c) pairs its seq_cst look at
         * the counter with the enqueuer's later seq_cst look at its state
         * (a locked RMW costs the same on x86). */
        off = baton_fetch_add(&q->counter, len, memory_order_seq_cst);
    } else {
        off = baton_load(&q->counter, memory_order_relaxed);
        while (!baton_cas(&q->counter, &off, off + len, memory_order_seq_cst, memory_order_relaxed))
            ; /* seq_cst: as the fetch_add above */
    }
    if (BATON_LIKELY(off + len <= q->size)) {
        unsigned char *e = q->buf + off;
        qd_hdr_t *h = (qd_hdr_t *)e;
        h->used = (uint16_t)used;
        h->flags = (uint16_t)(flags | (f ? QD_F_FUTURE : 0u));
        unsigned char *arg = e + 16;
        if (f) {
            memcpy(arg, &f, sizeof f);
            arg += 16;
        }
        baton_copy_args(arg, payload, psize);
        /* Release: the entry is complete; pairs with the helper's acquire
         * load of fn. */
        baton_store(&h->fn, (uintptr_t)fn, memory_order_release);
        return QD_OK;
    }
    if (off < q->size) {
        /* The straddler: nothing will follow this offset in this round.
         * Release pairs with the helper's acquire load of fn, like an entry. */
        baton_store(&((qd_hdr_t *)(q->buf + off))->fn, QD_END, memory_order_release);
    }
    return QD_CLOSED;
}

/* Wait until the entry at h is written.  The writer is between its
 * fetch_add and its store, a window of a few instructions unless it was
 * preempted there: spin briefly, then yield.  Acquire pairs with the
 * release store of fn in qd_enqueue(). */
static inline uintptr_t qd_wait_entry(qd_hdr_t *h)
{
    uintptr_t fn;
    unsigned spins = 0;
    while ((fn = baton_load(&h->fn, memory_order_acquire)) == 0) {
        if (++spins < 512u)
            baton_cpu_relax();
        else
            sched_yield();
    }
    return fn;
}

/* Run the entry at e (fn already read) and zero it; a parked waiter's wake
 * is owed to o. */
static inline void qd_run_entry(unsigned char *e, uintptr_t fn, baton_owed_t *o)
{
    qd_hdr_t *h = (qd_hdr_t *)e;
    const uint32_t used = h->used, flags = h->flags;
    unsigned char *arg = e + 16;
    baton_future_t *f = NULL;
    if (flags & QD_F_FUTURE) {
        memcpy(&f, arg, sizeof f);
        arg += 16;
    }
    void *ctx = arg;
    if (flags & QD_F_CTX)
        memcpy(&ctx, arg, sizeof ctx);
    ((baton_fn)fn)(ctx);
    /* Zero what the entry wrote, so the buffer is all zero again by the end
     * of the session (the next session's entries may start at any 16-byte
     * offset, including inside this one).  The plain stores are ordered
     * before the next session's writers by the mutex and the opening
     * release store. */
    memset(e + 8, 0, used - 8u);
    /* Relaxed: the same ordering argument as above. */
    baton_store(&h->fn, (uintptr_t)0, memory_order_relaxed);
    if (f)
        baton_future_complete_owed(f, 0, o);
}

/* Run the entries reserved in [*done, todo) (todo clamped to the size; an
 * END marker ends the pass at the end of the buffer), zeroing each, and
 * advance *done and *helped.  Wakes of parked waiters are owed to o: the
 * caller pays them once it has left the session (wait_internal.h). */
static inline void qd_drain_to(qd_queue_t *q, uint64_t todo, uint64_t *done, uint64_t *helped,
                               baton_owed_t *o)
{
    const uint64_t size = q->size;
    if (todo > size)
        todo = size;
    uint64_t p = *done;
    while (p < todo) {
        unsigned char *e = q->buf + p;
        uintptr_t efn = qd_wait_entry((qd_hdr_t *)e);
        if (efn == QD_END) {
            /* Relaxed: zeroing, ordered like qd_run_entry's. */
            baton_store(&((qd_hdr_t *)e)->fn, (uintptr_t)0, memory_order_relaxed);
            p = size;
            break;
        }
        const uint32_t used = ((qd_hdr_t *)e)->used;
        const uint32_t len =
            q->pad ? (used + BATON_CACHELINE - 1u) & ~(uint32_t)(BATON_CACHELINE - 1u) : used;
        qd_run_entry(e, efn, o);
        (*helped)++;
        p += len;
    }
    *done = p;
}

/* The argument the caller's own operation runs on: its ctx pointer
 * (QD_F_CTX), or a private copy of its arguments in `copy` (as a delegated
 * operation would get, so the caller's buffer is never the one used). */
static inline void *qd_own_ctx(const void *payload, size_t psize, uint32_t flags,
                               unsigned char copy[BATON_ARGS_MAX])
{
    void *ctx;
    if (flags & QD_F_CTX) {
        memcpy(&ctx, payload, sizeof ctx);
        return ctx;
    }
    baton_copy_args(copy, payload, psize);
    return copy;
}

/* What mrqd and hqd add around a session (any may be NULL):
 *   before_open  hqd: take the global lock, so that nothing is accepted
 *                into this group's queue before the group may run it;
 *   after_open   mrqd: wait for readers to leave (operations may be
 *                accepted meanwhile, none runs);
 *   after_close  hqd: release the global lock. */
typedef struct qd_hooks {
    void (*before_open)(void *arg);
    void (*after_open)(void *arg);
    void (*after_close)(void *arg);
    void *arg;
} qd_hooks_t;

/* Open the queue, run the caller's operation (fn, ctx, f), then help until
 * the queue is closed or help_limit operations have run.  The caller holds
 * the mutex, and pays the wakes owed to o after it has released it. */
static inline void qd_session(qd_queue_t *q, uint32_t help_limit, const void *lock_id,
                              const qd_hooks_t *hooks, baton_fn fn, void *ctx, baton_future_t *f,
                              baton_owed_t *o)
{
    if (hooks && hooks->before_open)
        hooks->before_open(hooks->arg);
    baton_cs_frame_t frame;
    baton_cs_enter(&frame, lock_id);
    /* Relaxed: read racily by destroy, which only chooses wait or EBUSY. */
    baton_store(&q->helping, 1u, memory_order_relaxed);
    /* Release: pairs with the acquire fetch_add of delegators, which then
     * see the zeroed buffer.  The hint after it is relaxed: a delegator
     * that reads it early only retries. */
    baton_store(&q->counter, (uint64_t)0, memory_order_release);
    baton_store(&q->closed, 0u, memory_order_relaxed);
    if (hooks && hooks->after_open)
        hooks->after_open(hooks->arg);
    fn(ctx);
    if (f)
        baton_future_complete_own(f, 0); /* our own operation: nobody waits yet */
    uint64_t helped = 1, done = 0;
    const uint64_t size = q->size;
    for (;;) {
        /* Relaxed: the count only says which reservations exist; each
         * entry's contents are acquired through its own fn. */
        uint64_t todo = baton_load(&q->counter, memory_order_relaxed);
        bool final = false, full = false;
        if (todo == done || helped >= help_limit) {
            /* Nothing new (or helped enough): close.  After the swap every
             * reservation lands at or past the end and writes nothing. */
            todo = baton_xchg(&q->counter, size, memory_order_relaxed);
            baton_store(&q->closed, 1u, memory_order_relaxed);
            final = true;
            full = todo >= size;
        } else if (todo >= size) {
            baton_store(&q->closed, 1u, memory_order_relaxed);
            final = full = true;
        }
        if (todo > done)
            qd_drain_to(q, todo, &done, &helped, o);
        if (!final)
            continue;
        if (full && helped < help_limit) {
            /* It filled up by itself and we may help more: empty, reopen
             * (release, as at the start of the session). */
            baton_store(&q->counter, (uint64_t)0, memory_order_release);
            baton_store(&q->closed, 0u, memory_order_relaxed);
            done = 0;
            continue;
        }
        break;
    }
    if (hooks && hooks->after_close)
        hooks->after_close(hooks->arg);
    baton_cs_leave(&frame);
    baton_store(&q->helping, 0u, memory_order_relaxed); /* relaxed: as above */
    qd_count(&q->cnt.sessions, 1);
    qd_count(&q->cnt.helped, helped);
}

/* --- the mutex ------------------------------------------------------------------
 *
 * `word` 0 free, 1 held; `sleepers` the threads parked, or about to park, on
 * it (lock() callers and delegators past their starvation bound; a helper
 * never sleeps here).  Every help session ends with an unlock, so the unlock
 * is the hot path: it looks at `sleepers` and, when nobody sleeps, releases
 * with a plain store.  (baton_ttas_t's futex protocol releases with an
 * exchange, to see a sleeper's mark in the word itself: a locked
 * instruction, which on the project's VM cost qd a quarter of its
 * uncontended rate, and which the QD authors' lock, which never parks, does
 * not pay.)  A sleeper counts itself (seq_cst) before it looks at the word
 * (seq_cst) and parks; an unlock that finds sleepers stores, then wakes one.
 * The unlock's look precedes its store, so one interleaving escapes it: a
 * sleeper that counts itself after the look and parks before the store
 * lands.  So every park has a timeout, QD_PARK_FIRST_NS doubling up to
 * QD_PARK_MAX_NS: it bounds that stall, and every later unlock sees the
 * count.  models/qd_mutex.pml checks this protocol. */
typedef struct qd_mutex {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t word;
    _Atomic uint32_t sleepers; /* on the line the unlock writes: its look costs nothing */
    baton_wait_t wait;
} qd_mutex_t;

/* The first timeout of a park: the most the escaping interleaving costs (the
 * bound fc's FC_PARK_TIMEOUT_NS gives its own lost wake-up); later ones
 * double up to the largest, so that a long sleep wakes a few times, not
 * thousands. */
#define QD_PARK_FIRST_NS 100000u
#define QD_PARK_MAX_NS 100000000u

static inline void qd_mutex_init(qd_mutex_t *m, const baton_wait_t *w)
{
    atomic_init(&m->word, 0u);
    atomic_init(&m->sleepers, 0u);
    m->wait = *w;
}

static inline int qd_mutex_trylock(qd_mutex_t *m)
{
    /* Test first so a failing trylock does not take the line exclusive.
     * Acquire (CAS): pairs with the release store of qd_mutex_unlock(). */
    if (baton_load(&m->word, memory_order_relaxed) != 0)
        return EBUSY;
    uint32_t expected = 0;
    return baton_cas(&m->word, &expected, 1u, memory_order_acquire, memory_order_relaxed) ? 0 : EBUSY;
}

/* Wait by the policy, then park (qd.c). */
void qd_mutex_lock_slow(qd_mutex_t *m);
/* The same until d: 0, or ETIMEDOUT with the mutex not taken (qd.c). */
int qd_mutex_timedlock(qd_mutex_t *m, const baton_deadline_t *d);

static inline void qd_mutex_lock(qd_mutex_t *m)
{
    uint32_t expected = 0;
    /* Acquire: as in qd_mutex_trylock(). */
    if (BATON_LIKELY(baton_cas(&m->word, &expected, 1u, memory_order_acquire, memory_order_relaxed)))
        return;
    qd_mutex_lock_slow(m);
}

static inline int qd_mutex_unlock(qd_mutex_t *m)
{
    /* Relaxed look: see above for the interleaving it cannot see, and the
     * timeout that bounds it. */
    const bool sleepers = baton_load(&m->sleepers, memory_order_relaxed) != 0;
    /* Release: pairs with the acquire CAS of the next holder. */
    baton_store(&m->word, 0u, memory_order_release);
    if (BATON_UNLIKELY(sleepers))
        baton_wake_one(&m->word);
    return 0;
}

static inline int qd_mutex_is_locked(qd_mutex_t *m)
{
    return baton_load(&m->word, memory_order_relaxed) != 0; /* relaxed: a snapshot */
}

/* A mutex, a queue and their settings: one QD lock, or one group of hqd. */
typedef struct qd_core {
    qd_mutex_t mutex;
    qd_queue_t queue;
    _Alignas(BATON_CACHELINE) uint32_t help_limit; /* read-mostly, from here on */
    uint32_t retries;
    baton_wait_t wait;
} qd_core_t;

/* Options every QD-family kind takes, in this order at the start of its
 * option table (see QD_OPTIONS). */
enum { QD_OPT_QUEUE, QD_OPT_HELP, QD_OPT_RETRIES, QD_OPT_PAD, QD_OPT_CAS, QD_NOPTS };

#define QD_OPTIONS                                                                                           \
    [QD_OPT_QUEUE] = {"queue", 256, 65536, 4096, "delegation buffer bytes (multiple of 128)"},               \
    [QD_OPT_HELP] = {"help_limit", 1, 1u << 30, 4096, "operations per help session"},                        \
    [QD_OPT_RETRIES] = {"retries", 0, 1u << 30, 64, "attempts before taking the lock unconditionally"},      \
    [QD_OPT_PAD] = {"pad", 0, 1, 0, "one cache line per queue entry"},                                       \
    [QD_OPT_CAS] = {"cas", 0, 1, 0, "emulate fetch_add with a CAS loop"}

int qd_core_init(qd_core_t *c, const baton_opts_t *o);
/* What qd_core_init allocates (the queue buffer), allocator overhead included. */
size_t qd_core_footprint(const baton_opts_t *o);
/* Wait for a running session to finish; EBUSY if held through lock(). */
int qd_core_destroy(qd_core_t *c);
void qd_core_stats(qd_core_t *c, baton_stats_t *out);

/* Pause between a failed try_lock and enqueue and the next attempt: give
 * the CPU away (sched_yield).  What we wait for, the queue reopening or the
 * mutex coming free, is another thread's doing, and where threads
 * outnumber CPUs that thread may be waiting for ours; where they do not, a
 * yield with nothing else to run returns within about a microsecond, and
 * meanwhile we leave the mutex's and the queue's lines alone (a spinning
 * retry pulls them over at every look, so the holder pays a line transfer
 * per session).  The starvation bound (`retries`) counts these pauses. */
static inline void qd_retry_pause(void) { sched_yield(); }

/* One delegated operation: help if the mutex is free, else enqueue; after
 * `retries` refusals, take the mutex unconditionally.  `lock_id` names the
 * kind's state (for EDEADLK detection).  Returns QD_RAN when the caller ran
 * the operation itself (its future, if any, is complete), QD_ENQUEUED when
 * another thread will. */
enum { QD_RAN = 0, QD_ENQUEUED = 1 };

static inline int qd_submit(qd_core_t *c, const void *lock_id, const qd_hooks_t *hooks, baton_fn fn,
                            const void *payload, size_t psize, uint32_t flags, baton_future_t *f)
{
    for (unsigned tries = 0;; tries++) {
        if (qd_mutex_trylock(&c->mutex) == 0)
            break;
        if (qd_enqueue(&c->queue, fn, payload, psize, flags, f) == QD_OK)
            return QD_ENQUEUED;
        if (tries >= c->retries) {
            qd_mutex_lock(&c->mutex);
            qd_count(&c->queue.cnt.forced, 1);
            break;
        }
        qd_retry_pause();
    }
    /* We hold the mutex: our operation runs first, on our own copy. */
    _Alignas(16) unsigned char copy[BATON_ARGS_MAX];
    void *ctx = qd_own_ctx(payload, psize, flags, copy);
    /* An execute's own future has no other reader: nothing to complete. */
    baton_owed_t owed;
    baton_owed_init(&owed);
    qd_session(&c->queue, c->help_limit, lock_id, hooks, fn, ctx, (flags & QD_F_OWN) ? NULL : f, &owed);
    qd_mutex_unlock(&c->mutex);
    baton_wake_owed(&owed); /* off the serial path: the next session may run meanwhile */
    return QD_RAN;
}

/* execute through qd_submit: the ctx pointer travels in the entry, and the
 * caller waits on a future on its stack only if another thread runs it. */
static inline int qd_submit_wait(qd_core_t *c, const void *lock_id, const qd_hooks_t *hooks, baton_fn fn,
                                 void *ctx)
{
    baton_future_t f;
    baton_future_prepare(&f, &c->wait);
    if (qd_submit(c, lock_id, hooks, fn, &ctx, sizeof ctx, QD_F_CTX | QD_F_OWN, &f) == QD_RAN)
        return 0;
    return baton_future_wait(&f);
}

#endif
