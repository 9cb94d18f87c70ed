/* baton/runner.h - the runner lock (typed API): baton's default kind.
 *
 * Design goal: a lock that never waits for a thread that is not running.
 * It is never handed to a thread that sleeps or was preempted; a
 * thread that does not run can never hold up the others.  Within that:
 * the throughput of an unfair lock, bounded waits, and a CPU cost that
 * does not grow with the number of waiters.
 *
 * State (one cache line):
 *   word   0 when free, else the owner's token (baton/token.h)
 *   flags  what the heir asks of the owner's unlock (below); 0 nearly always
 *   count  releases while anyone waits (flag WATCH), written only by the
 *          owner (waiters read it to tell an owner that loops on the lock
 *          from one inside a long section)
 *   tail   MCS-style queue of waiters
 *   heir   the queue head's node while it waits: the one waiter that may
 *          spin; everyone behind it sleeps
 *   deadline, owner_cpu: the heir's tenure deadline; where the owner ran
 *   zombies  queue nodes of timed waiters that gave up, for the owner's
 *          next slow release to recycle (flag ZOMBIE)
 *
 * Acquire: one CAS 0 -> self.  Whoever runs when the lock is free takes it
 * (barging), so a thread that loops on the lock keeps it, and its data, on
 * its core.  Otherwise an arriving thread spins briefly (a short critical
 * section ends soon), yields its CPU for a while unless it saw the owner
 * loop on the lock, then joins the queue.  Behind the head it sleeps at
 * once, so however many threads wait, at most two run: the owner and the
 * heir (concurrency restriction).
 *
 * The heir spins for about what a sleep would cost, then sleeps, in one of
 * two ways.  If it saw the owner loop, it sleeps unannounced: the owner
 * will not need it before its tenure deadline, and the owner's periodic
 * check (every BATON_RUNNER_CHECK_EVERY releases) wakes it shortly before.
 * Otherwise (an owner inside a long section, or preempted) it announces
 * that it sleeps (flags |= HEIR_PARKED) and the next unlock wakes it.  The
 * tenure: once the heir has waited one tenure (adaptive: a multiple of the
 * measured wake-up latency, so that hand-overs cost a few percent), it
 * demands the lock (flags |= DEMAND) and spins; the next unlock then hands
 * the lock to it directly, but only while the heir's node says it spins.
 * A sleeping heir is woken instead, the lock is released, and the heir
 * competes when it runs.  The heir is named (`heir`, with its deadline)
 * when it is promoted, before it runs, so that an owner whose heir waits
 * for the owner's own CPU knows it: once the heir is two wake-up
 * latencies overdue without having demanded, the owner yields its CPU
 * after one release.
 *
 * So after every unlock the lock is free, or owned by the heir that was
 * spinning for it when the owner handed it over.  trylock succeeds whenever
 * the lock is free.
 *
 * Release: if no flag is up, a plain store of 0, after checking that the
 * caller owns the lock (else EPERM; baton_runner_release skips the check,
 * for mutexes that any thread may unlock).  So an uncontended lock+unlock
 * costs one atomic read-modify-write, a load and a store.  While a thread
 * waits (flag WATCH: raised by a waiter past its short spin, dropped by
 * the owner's periodic check once nobody is queued) the release also
 * counts, and every BATON_RUNNER_CHECK_EVERY releases it checks the heir's
 * deadline.  The owner's look at `flags` and the heir's announcement can
 * cross; an announced sleep is therefore bounded by a timeout (one
 * tenure), which is what a crossing can cost, once: never a lost wake-up.
 *
 * Owner: tracked (EPERM).  Order: barging, with FIFO among the queued; a
 * waiter at queue position k acquires within about k tenures.
 */
#ifndef BATON_RUNNER_H
#define BATON_RUNNER_H

#include <baton/token.h>
#include <baton/wait.h>
#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

struct baton_qnode;

/* flags: set by the heir, read by the owner's unlock. */
#define BATON_RUNNER_DEMAND 1u      /* hand the lock to the heir if it spins */
#define BATON_RUNNER_HEIR_PARKED 2u /* the heir sleeps: wake it */
/* Set by a timed waiter that gave up: nodes wait in `zombies` for the next
 * slow release to recycle them (runner.c). */
#define BATON_RUNNER_ZOMBIE 4u
/* Raised by a waiter that did not get the lock within its short spin, and
 * by every queued one: count releases (the waiters' hint that the owner
 * loops) and check the heir's deadline now and then.  Dropped by that
 * check once no thread is queued. */
#define BATON_RUNNER_WATCH 8u

typedef struct baton_runner {
    _Alignas(BATON_CACHELINE) _Atomic uintptr_t word;
    _Atomic uint32_t flags;
    _Atomic uint32_t count;
    _Atomic(struct baton_qnode *) tail;
    _Atomic(struct baton_qnode *) heir;
    _Atomic uint64_t deadline;             /* the heir's tenure deadline (ns) */
    _Atomic uint32_t owner_cpu;            /* where the owner ran at its last check */
    uint32_t tenure_ns;                    /* 0: adaptive */
    _Atomic(struct baton_qnode *) zombies; /* nodes of timed waiters that gave up */
    baton_wait_t wait;
    uint64_t stepped; /* the heir's deadline the owner last yielded for (owner only) */
} baton_runner_t;

/* tenure_ns 0: adaptive (see runner.c). */
BATON_API int baton_runner_init(baton_runner_t *l, const baton_wait_t *wait, uint32_t tenure_ns);
BATON_API int baton_runner_destroy(baton_runner_t *l);
BATON_API void baton_runner_lock_slow(baton_runner_t *l, uintptr_t self);
/* Wait for the lock until d: 0, or ETIMEDOUT.  A timed waiter queues and
 * waits as lock()'s do; one that gives up leaves the queue at once as the
 * heir, and behind the head is passed over by the next promotion (see
 * runner.c). */
BATON_API int baton_runner_timedlock(baton_runner_t *l, const baton_deadline_t *d);
/* Both return 0, so that the fast path can end in a tail call to them. */
BATON_API int baton_runner_release_slow(baton_runner_t *l);
BATON_API int baton_runner_release_check(baton_runner_t *l);

/* The owner looks at the heir's deadline every BATON_RUNNER_CHECK_EVERY
 * releases: a clock read (~20 ns) amortised to well under a nanosecond. */
#define BATON_RUNNER_CHECK_EVERY 256u

static inline int baton_runner_trylock(baton_runner_t *l)
{
    /* Relaxed look first: a held lock costs a read, not a write that takes
     * the line from its owner. */
    if (baton_load(&l->word, memory_order_relaxed) != 0)
        return EBUSY;
    uintptr_t expected = 0;
    /* Acquire pairs with the release store in baton_runner_release(). */
    return baton_cas(&l->word, &expected, baton_thread_token(), memory_order_acquire, memory_order_relaxed)
               ? 0
               : EBUSY;
}

static inline void baton_runner_lock(baton_runner_t *l)
{
    uintptr_t self = baton_thread_token();
    uintptr_t expected = 0;
    /* Acquire pairs with the release store in baton_runner_release(). */
    if (BATON_LIKELY(baton_cas(&l->word, &expected, self, memory_order_acquire, memory_order_relaxed)))
        return;
    baton_runner_lock_slow(l, self);
}

/* Release without the owner check: any thread may release a held lock
 * (what a NORMAL pthread mutex allows).  Releasing a free lock is a bug
 * the caller must prevent.  Returns 0. */
static inline int baton_runner_release(baton_runner_t *l)
{
    /* Relaxed: the heir's requests are hints to act on now; one that
     * crosses this look costs the heir at most its bounded sleep (above). */
    uint32_t f = baton_load(&l->flags, memory_order_relaxed);
    if (BATON_LIKELY(f == 0)) {
        /* Nobody waits.  Release pairs with the acquiring CAS of the next
         * owner. */
        baton_store(&l->word, 0, memory_order_release);
        return 0;
    }
    if (BATON_UNLIKELY(f != BATON_RUNNER_WATCH))
        return baton_runner_release_slow(l);
    /* Relaxed load and store, not an atomic increment: only the owner
     * writes the count; waiters read it racily, as a hint. */
    uint32_t c = baton_load(&l->count, memory_order_relaxed) + 1u;
    baton_store(&l->count, c, memory_order_relaxed);
    if (BATON_UNLIKELY(c % BATON_RUNNER_CHECK_EVERY == 0))
        return baton_runner_release_check(l);
    /* Release pairs with the acquiring CAS of the next owner. */
    baton_store(&l->word, 0, memory_order_release);
    return 0;
}

static inline int baton_runner_unlock(baton_runner_t *l)
{
    /* Relaxed: only the owner stores its own token; anyone else reads a
     * value that is not theirs. */
    if (BATON_UNLIKELY(baton_load(&l->word, memory_order_relaxed) != baton_thread_token()))
        return EPERM;
    return baton_runner_release(l);
}

static inline int baton_runner_is_locked(baton_runner_t *l)
{
    return baton_load(&l->word, memory_order_relaxed) != 0;
}

#ifdef __cplusplus
}
#endif
#endif
