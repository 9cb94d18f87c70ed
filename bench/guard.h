/* guard.h - guarded data: the checks that the stress harness
 * (tests/harness.c) and `baton torture` (src/cli/torture.c) make inside
 * every critical section, and the deliberately broken lock both must catch.
 *
 * A guard is what one lock protects.  Every critical section checks, inside,
 * that
 *   - exactly one thread is inside (an atomic holder count must read 1);
 *   - a non-atomic multi-step invariant holds: a == b, where a is written,
 *     the thread dawdles, then b is written;
 *   - the thread's previous operation under this lock was the one before
 *     (each thread numbers its operations on each lock from 1): operations
 *     run in each thread's program order, detached ones included, and none
 *     runs twice or is skipped;
 * and a reader checks that no writer is inside and the update is whole.
 * After a run, the count of sections must be what the threads issued, and
 * each thread's last number its count.  Violations are counted, not
 * asserted (in a tally several guards may share), so that a broken lock
 * can be caught.  `a` and `b` are atomics accessed one step at a time with
 * relaxed order, so that two threads inside at once tear the invariant
 * without the check itself having a data race.  `total` is a plain
 * variable, touched only for locks expected to be correct (`plain`): under
 * ThreadSanitizer it checks that the lock orders its critical sections.
 */
#ifndef BATON_BENCH_GUARD_H
#define BATON_BENCH_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct guard_tally {
    _Atomic uint64_t overlaps;     /* holder count != 1 inside a critical section */
    _Atomic uint64_t torn;         /* a != b seen inside */
    _Atomic uint64_t out_of_order; /* an operation ran out of its thread's order (or twice) */
    _Atomic uint64_t bad_reads;    /* a reader saw a writer inside, or its update half done */
    _Atomic uint64_t reads;        /* read sections run (informational) */
} guard_tally_t;

typedef struct guard {
    _Alignas(128) _Atomic int holders;
    _Atomic long a;
    _Atomic long b;
    long total; /* one increment per critical section, when `plain` */
    bool plain;
    int threads;
    /* Per thread, the number of its last operation that ran here. */
    _Atomic uint64_t *last;
    guard_tally_t *tally;
} guard_t;

/* A guard for operations numbered by `threads` threads, counting into
 * `tally`: 0, or ENOMEM. */
int guard_init(guard_t *g, int threads, bool plain, guard_tally_t *tally);
void guard_fini(guard_t *g);

/* The body of a critical section: `thread`'s operation number `seq`. */
void guard_section(guard_t *g, int thread, uint64_t seq);
/* The body of a read section (readers-writer locks). */
void guard_read(guard_t *g);

/* After the run (every operation ran): the sections run, or -1 when the
 * data is torn or the plain count disagrees. */
int64_t guard_sections(const guard_t *g);
/* The number of `thread`'s last operation that ran. */
uint64_t guard_last(const guard_t *g, int thread);
/* Every violation the tally counted. */
uint64_t guard_violations(const guard_tally_t *t);

/* --- the broken lock: test, dawdle, then set (not atomic) -------------------
 * Two threads that both see it free both get in; a correct checker must
 * notice.  Its trylock and unlock are plain loads and stores. */
typedef struct guard_broken {
    _Atomic int word;
} guard_broken_t;

void guard_broken_lock(guard_broken_t *l);
int guard_broken_trylock(guard_broken_t *l); /* 0 or EBUSY */
void guard_broken_unlock(guard_broken_t *l);

#endif
