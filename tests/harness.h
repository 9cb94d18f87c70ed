/* harness.h - the shared mutual-exclusion stress harness.
 *
 * Runs N threads against two locks for a while.  Every critical section
 * checks, inside, that
 *   - exactly one thread is inside (an atomic holder count must read 1), and
 *   - a non-atomic multi-step invariant holds: a == b, where a is written,
 *     the thread dawdles, then b is written;
 * and the run checks at the end that the shared counters equal the sum of
 * per-thread operation counts.  Threads mix plain lock/unlock, trylock
 * loops (whose EBUSY must be real), execute, delegate (with a payload the
 * function must see intact) and nested acquisitions of the second lock,
 * released in varying order.  Each thread numbers its operations on each
 * lock, and every critical section checks that the thread's previous
 * operation there was the one before (program order, which detached
 * delegations must keep too).  Kinds without lock/unlock are driven through
 * execute and delegate only (nesting by executing inside an execute).  Any violation is counted, not asserted, so
 * the harness itself can be tested against a broken lock.
 */
#ifndef BATON_TEST_HARNESS_H
#define BATON_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct harness_ops {
    const char *name;
    void *(*create)(const char *spec);
    int (*destroy)(void *lock);
    int (*lock)(void *lock);
    int (*trylock)(void *lock);
    int (*unlock)(void *lock);
    /* NULL if the lock has no execute/delegate: the harness then uses
     * lock/unlock for those operation kinds. */
    int (*execute)(void *lock, void (*fn)(void *), void *ctx);
    int (*delegate)(void *lock, void (*fn)(void *), const void *args, size_t size);
    /* NULL or true: lock/trylock/unlock work; false: only execute/delegate. */
    bool (*has_lock)(void *lock);
    /* Readers-writer kinds: has_read true, and rlock/runlock. */
    bool (*has_read)(void *lock);
    int (*rlock)(void *lock);
    int (*runlock)(void *lock);
    /* Timed acquisition (NULL: none; ENOTSUP from it: the kind has none).
     * The harness mixes in timed locks (and timed reads) with deadlines
     * short enough that many time out, and counts the time-outs. */
    int (*clocklock)(void *lock, clockid_t clock, const struct timespec *abstime);
    int (*rclocklock)(void *lock, clockid_t clock, const struct timespec *abstime);
} harness_ops_t;

typedef struct harness_result {
    uint64_t ops;            /* critical sections run */
    uint64_t overlaps;       /* holder count != 1 inside a critical section */
    uint64_t torn;           /* a != b seen inside */
    uint64_t count_mismatch; /* shared counters != sum of per-thread ops */
    uint64_t bad_payload;    /* delegate payload altered */
    uint64_t bad_errors;     /* an operation returned an unexpected error */
    uint64_t out_of_order;   /* a thread's operations on a lock ran out of its program order */
    uint64_t bad_reads;      /* a reader saw a writer inside, or its update half done */
    uint64_t reads;          /* read sections run (informational) */
    uint64_t trylock_busy;   /* EBUSY results (informational) */
    uint64_t timeouts;       /* ETIMEDOUT results of timed locks and reads */
    uint64_t timed_ok;       /* timed locks and reads that got the lock */
    bool timed_unsupported;  /* the lock answered ENOTSUP to a timed lock */
    double seconds;
} harness_result_t;

static inline uint64_t harness_failures(const harness_result_t *r)
{
    return r->overlaps + r->torn + r->count_mismatch + r->bad_payload + r->bad_errors + r->out_of_order +
           r->bad_reads;
}

/* Run `threads` threads for about `millis` ms (each thread does at least
 * one operation) on two locks created from `spec`. */
int harness_run(const harness_ops_t *ops, const char *spec, int threads, int millis, harness_result_t *out);

/* As harness_run; expect_correct=false skips the plain-variable check,
 * which would be a data race under a lock that does not exclude (used to
 * test the harness against a deliberately broken lock). */
int harness_run_ex(const harness_ops_t *ops, const char *spec, int threads, int millis, bool expect_correct,
                   harness_result_t *out);

/* The dynamic API as harness operations. */
extern const harness_ops_t harness_baton_ops;

#endif
