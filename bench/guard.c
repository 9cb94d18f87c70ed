/* guard.c - guarded data and the broken lock (see guard.h). */
#include "guard.h"

#include <baton/atomic.h>

#include <errno.h>
#include <stdlib.h>

int guard_init(guard_t *g, int threads, bool plain, guard_tally_t *tally)
{
    atomic_init(&g->holders, 0);
    atomic_init(&g->a, 0);
    atomic_init(&g->b, 0);
    g->total = 0;
    g->plain = plain;
    g->threads = threads;
    g->tally = tally;
    g->last = calloc((size_t)threads, sizeof *g->last);
    return g->last ? 0 : ENOMEM;
}

void guard_fini(guard_t *g)
{
    free(g->last);
    g->last = NULL;
}

static void count(_Atomic uint64_t *c)
{
    baton_fetch_add(c, 1, memory_order_relaxed); /* a count, read after the run */
}

void guard_section(guard_t *g, int thread, uint64_t seq)
{
    /* Relaxed throughout: the lock under test orders the sections; these
     * are the witnesses of its failures, not synchronisation. */
    uint64_t last = baton_load(&g->last[thread], memory_order_relaxed);
    if (seq != last + 1)
        count(&g->tally->out_of_order);
    baton_store(&g->last[thread], seq, memory_order_relaxed);
    int h = baton_fetch_add(&g->holders, 1, memory_order_relaxed);
    if (h != 0)
        count(&g->tally->overlaps);
    long a = baton_load(&g->a, memory_order_relaxed);
    if (a != baton_load(&g->b, memory_order_relaxed))
        count(&g->tally->torn);
    baton_store(&g->a, a + 1, memory_order_relaxed);
    /* Dawdle between the two halves of the update, so a second thread
     * inside would see them torn. */
    for (volatile int i = 0; i < 20; i++)
        ;
    baton_store(&g->b, a + 1, memory_order_relaxed);
    if (g->plain)
        g->total++;
    baton_fetch_sub(&g->holders, 1, memory_order_relaxed);
}

void guard_read(guard_t *g)
{
    for (int i = 0; i < 3; i++) {
        /* Relaxed: as in guard_section(). */
        if (baton_load(&g->holders, memory_order_relaxed) != 0 ||
            baton_load(&g->a, memory_order_relaxed) != baton_load(&g->b, memory_order_relaxed))
            count(&g->tally->bad_reads);
        for (volatile int k = 0; k < 10; k++)
            ;
    }
    count(&g->tally->reads);
}

int64_t guard_sections(const guard_t *g)
{
    /* Relaxed: read after the run, once its threads were joined. */
    long a = baton_load(&g->a, memory_order_relaxed);
    if (a != baton_load(&g->b, memory_order_relaxed) || (g->plain && g->total != a))
        return -1;
    return a;
}

uint64_t guard_last(const guard_t *g, int thread)
{
    return baton_load(&g->last[thread], memory_order_relaxed); /* as above */
}

uint64_t guard_violations(const guard_tally_t *t)
{
    /* Relaxed: counts, read after the run. */
    return baton_load(&t->overlaps, memory_order_relaxed) + baton_load(&t->torn, memory_order_relaxed) +
           baton_load(&t->out_of_order, memory_order_relaxed) +
           baton_load(&t->bad_reads, memory_order_relaxed);
}

/* --- the broken lock ------------------------------------------------------ */

void guard_broken_lock(guard_broken_t *l)
{
    while (baton_load(&l->word, memory_order_acquire)) /* pairs with the unlock's release */
        ;
    for (volatile int i = 0; i < 50; i++)
        ; /* the window in which a second thread also sees it free */
    baton_store(&l->word, 1, memory_order_relaxed);
}

int guard_broken_trylock(guard_broken_t *l)
{
    if (baton_load(&l->word, memory_order_acquire)) /* as in the lock */
        return EBUSY;
    baton_store(&l->word, 1, memory_order_relaxed);
    return 0;
}

void guard_broken_unlock(guard_broken_t *l)
{
    baton_store(&l->word, 0, memory_order_release); /* pairs with the acquire loads */
}
