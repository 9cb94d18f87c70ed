/* baton/counter.h - a statistics counter that many threads bump and few read.
 *
 * A counter that every critical section increments is the worst thing a
 * speculatively executed (elided) critical section can write: every pair of
 * transactions then conflicts on its cache line, and elision gives up.  A
 * baton_counter_t keeps one cell per thread, on its own cache line, and
 * sums the cells when read, so bumping it writes only the calling thread's
 * line.  Reads are a racy snapshot while threads add; exact once they stop.
 * A cell outlives its thread (the next new thread reuses it), so nothing
 * added is ever lost.
 *
 *   baton_counter_t *hits = baton_counter_new();
 *   baton_counter_add(hits, 1);          // inside or outside a critical section
 *   uint64_t n = baton_counter_read(hits);
 *   baton_counter_free(hits);            // once no thread adds any more
 */
#ifndef BATON_COUNTER_H
#define BATON_COUNTER_H

#include <stdint.h>

#include <baton/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct baton_counter baton_counter_t;

/* A new counter at 0, or NULL with errno ENOMEM. */
BATON_API baton_counter_t *baton_counter_new(void);
BATON_API void baton_counter_free(baton_counter_t *c);
/* Add v to the calling thread's cell. */
BATON_API void baton_counter_add(baton_counter_t *c, uint64_t v);
/* The sum of every cell. */
BATON_API uint64_t baton_counter_read(const baton_counter_t *c);

#ifdef __cplusplus
}
#endif
#endif
