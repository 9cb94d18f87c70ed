/* baton/barrier.h - barriers named by a spec string, like the locks.
 *
 *   baton_barrier_t *b = baton_barrier_new("twolevel:spinpark", nthreads);
 *   ...each of the nthreads threads, every episode:
 *   if (baton_barrier_wait(b) == BATON_BARRIER_SERIAL_THREAD) { ...one thread... }
 *   baton_barrier_free(b);
 *
 * Spec grammar: kind[:wait][,key=value]...  (the locks' grammar)
 *   kind   central | twolevel | dissemination | tournament
 *          (baton_barrier_kinds() lists them with their options)
 *   wait   spin | backoff | yield | park | spinpark | monitor | auto
 *   options  every kind: yield_us=<0..1000000>: before waiting by its
 *            policy, a waiter polls with sched_yield() for up to this many
 *            microseconds (default: decided at creation, see auto);
 *            twolevel: groups=<0..1024>: core groups (0, the default: NUMA
 *            nodes, else groups of cores sharing a cache, from sysfs).
 * NULL, "" or "default" names the default kind, twolevel.
 *
 * auto (every kind's default policy) is resolved at creation.  With at most
 * one thread per CPU the process may run on: the wait layer's auto (monitor
 * where the CPU has it, else spinpark), no yield phase.  With more threads
 * than CPUs: park, after a yield phase (yield_us) of about 50 us, so that a
 * waiter hands its CPU to the threads it waits for instead of spinning, and
 * sleeps when the wait is long.  baton_barrier_spec() says what was chosen.
 *
 * Semantics are POSIX's (pthread_barrier_wait): an episode ends when n
 * threads have called baton_barrier_wait; exactly one of them gets
 * BATON_BARRIER_SERIAL_THREAD, the others 0; the barrier is then ready for
 * the next episode.  Everything a thread wrote before its wait happens
 * before everything any thread does after the episode ends.  The threads may
 * differ from episode to episode, but at most n distinct threads may use
 * one barrier at a time: a thread takes a place (a rank) at its first wait
 * and keeps it until it exits.
 *
 * Errors: baton_barrier_new returns NULL with errno EINVAL (n == 0, a bad
 * spec: baton_last_error() lists what is valid), ENOTSUP (monitor on a CPU
 * without it) or ENOMEM.  baton_barrier_wait returns EINVAL when an (n+1)-th
 * distinct live thread waits (its place may come later, once a holder has
 * exited).  baton_barrier_free returns EBUSY while threads wait in it
 * (nothing freed); a thread released by the last episode counts until it
 * has returned from baton_barrier_wait.
 */
#ifndef BATON_BARRIER_H
#define BATON_BARRIER_H

#include <stddef.h>

#include <baton/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BATON_BARRIER_SERIAL_THREAD (-1) /* the value of PTHREAD_BARRIER_SERIAL_THREAD */

typedef struct baton_barrier baton_barrier_t;

BATON_API baton_barrier_t *baton_barrier_new(const char *spec, unsigned n);
BATON_API int baton_barrier_wait(baton_barrier_t *b);
BATON_API int baton_barrier_free(baton_barrier_t *b);
/* The canonical spec (wait policy resolved, options spelled out). */
BATON_API const char *baton_barrier_spec(const baton_barrier_t *b);

typedef struct baton_barrier_kind_info {
    const char *name;
    const char *summary;
    unsigned waits;           /* accepted policies (BATON_WAIT_BIT) */
    const char *default_wait; /* as written in a spec */
    const char *options;      /* "name=<min..max, default d> ..." */
} baton_barrier_kind_info_t;

/* Every barrier kind, in registry order; returns the count. */
BATON_API size_t baton_barrier_kinds(const baton_barrier_kind_info_t **list);

#ifdef __cplusplus
}
#endif
#endif
