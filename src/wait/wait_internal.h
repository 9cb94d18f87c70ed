/* wait_internal.h - what the wait layer shares between its files. */
#ifndef BATON_WAIT_INTERNAL_H
#define BATON_WAIT_INTERNAL_H

#include <baton/wait.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Monitor-wait until *word != val or `cycles` TSC cycles pass. */
void baton_monitor_wait(uint8_t hw, const _Atomic uint32_t *word, uint32_t val, uint64_t cycles);
/* A timed low-power pause (TPAUSE) of about `cycles`, or a spin hint. */
void baton_monitor_pause(uint8_t hw, uint64_t cycles);
uint64_t baton_rdtsc(void);

/* TSC cycles per nanosecond, measured by calibration (0 if unknown); waits
 * for the calibration, as baton_calibration() does. */
double baton_tsc_per_ns(void);
/* The same if the calibration has completed, else 0 (never blocks). */
double baton_tsc_per_ns_ready(void);

/* The calibration if it has completed, else NULL (never blocks). */
const baton_calibration_t *baton_calibration_ready(void);
/* The calibration if it has completed; else NULL, after starting it on a
 * background thread if nobody has (calibrate.c).  Never waits for it: the
 * waits that need a budget use wait.c's defaults meanwhile.  Where no
 * thread can be started it runs in the calling thread (tens of ms). */
const baton_calibration_t *baton_calibration_start(void);

/* Sleep while *word == val until woken or the absolute time abstime
 * (NULL: none) on `clock` (CLOCK_REALTIME or CLOCK_MONOTONIC) passes;
 * `shared`: a futex other processes may wake (process-shared condition
 * variables).  ETIMEDOUT once passed, else 0; errno is left as it was. */
int baton_futex_wait_abs(_Atomic uint32_t *word, uint32_t val, clockid_t clock,
                         const struct timespec *abstime, bool shared);
/* Wake up to n sleepers of word; errno is left as it was. */
void baton_futex_wake_n(_Atomic uint32_t *word, int n, bool shared);

/* Waiting for a helper: for a value that another thread, one that is
 * running operations (a QD helper, a CC-Synch combiner), will store.  Under
 * spinpark it yields where spinpark would spin, for about as long, then
 * parks (wait.c says why); every other policy waits as it always does.
 *
 * baton_wait_helper_phase() runs everything before the park: it returns
 * true with the new value in *seen (the parked bit masked off) once
 * (*word & ~BATON_WAIT_PARKED) != old, or false when the policy says park
 * now (never for spin, backoff and yield).  A kind with a park protocol of
 * its own (ccsynch.c) parks after it; baton_wait_for_helper() parks through
 * the wait layer's protocol (the BATON_WAIT_PARKED bit), so its wakers use
 * baton_wait_store(). */
bool baton_wait_helper_phase(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t old, uint32_t *seen);

/* The same as a pause object, for waits that poll more than one word
 * (fc.c): baton_helper_pause() is baton_waiter_pause() for a helper wait,
 * and returns false when it is time to park. */
typedef struct baton_helper_waiter {
    baton_waiter_t s; /* every policy but spinpark */
    uint32_t yields;  /* spinpark: yields so far */
    uint32_t budget;  /* spinpark: yields before parking */
} baton_helper_waiter_t;
static inline void baton_helper_waiter_init(baton_helper_waiter_t *h, const baton_wait_t *w)
{
    baton_waiter_init(&h->s, w);
    h->yields = 0;
    h->budget = 0; /* looked up at the first pause */
}
bool baton_helper_pause(baton_helper_waiter_t *h, const _Atomic uint32_t *addr, uint32_t val);
uint32_t baton_wait_for_helper(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t old);

/* Wakes owed, paid later.  A thread that runs other threads' operations
 * one after another (a combiner, a QD helper) is the serial path of its
 * lock: a futex wake there (a system call, and on a VM often an
 * inter-processor interrupt: microseconds) delays every operation behind
 * it, the next waiters' waits outgrow their spin budget, they park too, and
 * the lock settles at one wake per operation.  So such a thread publishes
 * with baton_wait_store_owed(), which notes the word in a list instead of
 * waking it, and wakes the list with baton_wake_owed() once it has left the
 * serial path (its session over, the lock or the combiner role handed on).
 * A sleeper's wait grows by the rest of the session; the lock's rate does
 * not fall.
 *
 * The words may belong to someone else by then (a future on a stack that
 * has returned, a node reused): a wake is by address (FUTEX_WAKE_PRIVATE,
 * which never touches the page), and every sleeper in the library re-checks
 * its condition after any wake-up, so a late wake costs a spurious wake-up
 * at worst.  Every list must be woken before its thread returns to its
 * caller: a sleeper parked without a timeout has no other waker.  A full
 * list wakes what it holds at once (the old cost, for the rare session with
 * more sleepers than the list holds). */
#define BATON_OWED_MAX 32u
typedef struct baton_owed {
    uint32_t n;
    _Atomic uint32_t *word[BATON_OWED_MAX];
} baton_owed_t;
static inline void baton_owed_init(baton_owed_t *o) { o->n = 0; }
/* Wake every word in o, and empty it. */
void baton_wake_owed_all(baton_owed_t *o);
static inline void baton_wake_owed(baton_owed_t *o)
{
    if (BATON_UNLIKELY(o->n != 0)) /* most sessions owe nothing */
        baton_wake_owed_all(o);
}
/* Owe word's wake to o; with o NULL, wake it at once (a caller that is not
 * on a serial path, or a wake that must not wait: a hand-over). */
static inline void baton_owe_wake(baton_owed_t *o, _Atomic uint32_t *word)
{
    if (o == NULL) {
        baton_wake_all(word);
        return;
    }
    if (o->n == BATON_OWED_MAX)
        baton_wake_owed_all(o);
    o->word[o->n++] = word;
}
/* baton_wait_store(), the wake owed to o (NULL: baton_wait_store()). */
static inline void baton_wait_store_owed(const baton_wait_t *w, _Atomic uint32_t *word, uint32_t v,
                                         baton_owed_t *o)
{
    if (baton_wait_may_park(w)) {
        /* acq_rel exchange: as in baton_wait_store() (we must see a parked
         * bit set before our value landed; release publishes the data). */
        if (BATON_UNLIKELY(baton_xchg(word, v, memory_order_acq_rel) & BATON_WAIT_PARKED))
            baton_owe_wake(o, word);
    } else {
        baton_store(word, v, memory_order_release); /* release: as in baton_wait_store() */
    }
}

/* pthread_create() for the library's own threads (the calibration's, the
 * lock servers'): the new thread starts with every signal blocked, since
 * the program's signals are for the program's threads, and a handler must
 * not run in the middle of a server's operations.  The caller's mask is
 * as it was on return.  Defined in calibrate.c, whose thread came first. */
int baton_thread_start_masked(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* The clock (clock.c): CLOCK_MONOTONIC in nanoseconds, and any other
 * clock (CLOCK_THREAD_CPUTIME_ID, ...) likewise. */
uint64_t baton_now_ns(void);
uint64_t baton_clock_ns(clockid_t clock);

/* Two (CLOCK_MONOTONIC ns, TSC) readings, each the clock read bracketed by
 * two TSC reads (the tightest of a few tries). */
typedef struct baton_tsc_span {
    uint64_t ns0, tsc0, ns1, tsc1;
} baton_tsc_span_t;

/* The TSC's ticks per nanosecond against CLOCK_MONOTONIC, over at least
 * span_ns: asleep (nanosleep) for it when `sleep`, else spinning on the
 * clock.  The readings go to *span (NULL: not wanted).  0 without a TSC
 * (baton_rdtsc() reads 0) or when it did not advance.  The TSC's rate is
 * only wall time where the CPU says it is invariant (the caller checks). */
double baton_tsc_calibrate(uint64_t span_ns, bool sleep, baton_tsc_span_t *span);

/* The environment's say in calibration (values, NULL: unset; they read
 * nothing else, so that a fuzz target can call them): BATON_SPIN_FIXED=1,
 * and BATON_SPIN_BUDGET_NS, a spin budget clamped to [0, 1e9] ns (false
 * when unset or empty). */
bool baton_spin_fixed_env(const char *value);
bool baton_spin_budget_env(const char *value, double *ns);

#endif
