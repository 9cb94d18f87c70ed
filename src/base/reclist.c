/* reclist.c - a lock's list of per-thread records (see reclist.h). */
#include "reclist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void baton_reclist_init(baton_reclist_t *l) { atomic_init(&l->head, NULL); }

baton_rec_t *baton_reclist_adopt(baton_reclist_t *l)
{
    for (baton_rec_t *r = baton_reclist_first(l); r != NULL; r = baton_reclist_next(r)) {
        uint32_t expected = 0;
        /* A relaxed look first (owned records are skipped without a write),
         * then the CAS.  Its acquire pairs with the release store of 0 in
         * baton_reclist_release(): what the exited thread wrote into the
         * record happens before our own writes to it. */
        if (baton_load(&r->owner, memory_order_relaxed) == 0 &&
            baton_cas(&r->owner, &expected, 1u, memory_order_acquire, memory_order_relaxed))
            return r;
    }
    return NULL;
}

void *baton_reclist_new(size_t size, const char *what)
{
    /* aligned_alloc wants a multiple of the alignment. */
    size_t rounded = (size + BATON_CACHELINE - 1) / BATON_CACHELINE * BATON_CACHELINE;
    baton_rec_t *r = aligned_alloc(BATON_CACHELINE, rounded);
    if (r == NULL) {
        fprintf(stderr, "baton: out of memory for %s\n", what);
        abort();
    }
    memset(r, 0, rounded);
    atomic_init(&r->owner, 1u);
    r->next = NULL;
    return r;
}

void baton_reclist_push(baton_reclist_t *l, baton_rec_t *r)
{
    /* Relaxed read of the head: the CAS below checks it. */
    baton_rec_t *h = baton_load(&l->head, memory_order_relaxed);
    do
        r->next = h;
    /* Release: pairs with the acquire load of baton_reclist_first(), so an
     * adopter, a combiner or destroy that reaches r sees it initialised,
     * its link included. */
    while (!baton_cas(&l->head, &h, r, memory_order_release, memory_order_relaxed));
}

void baton_reclist_release(baton_slot_owner_t *o, void *record)
{
    (void)o;
    baton_rec_t *r = record;
    /* Release: pairs with the acquire CAS in baton_reclist_adopt(). */
    baton_store(&r->owner, 0u, memory_order_release);
}

void baton_reclist_free(baton_reclist_t *l)
{
    baton_rec_t *r = baton_reclist_first(l);
    while (r != NULL) {
        baton_rec_t *next = baton_reclist_next(r);
        free(r);
        r = next;
    }
}
