/* reclist.h - a lock's list of per-thread records, reused across threads.
 *
 * Flat combining's publication records and CC-Synch's per-thread records
 * are kept the same way: a lock-free list that records are only ever pushed
 * onto (at the head, with a release CAS; a record's `next` is set before
 * the push and never changed), an `owner` flag per record (1 while a live
 * thread owns it), and slots.h to find a thread's record.  A thread's first
 * operation on the lock adopts a record whose thread has exited
 * (baton_reclist_adopt), or allocates one (baton_reclist_new) and pushes it
 * (baton_reclist_push).  A thread that exits hands its record back
 * (baton_reclist_release, the owner's slots.h release callback), and the
 * lock's destroy frees every record (baton_reclist_free).  So the list is
 * as long as the largest number of threads that used the lock at once.
 *
 * A record embeds a baton_rec_t as its first member (each user checks so
 * with a _Static_assert): the list, the iteration and the free work on that
 * header, and a pointer to it is a pointer to the record (C11 6.7.2.1p15).
 * The record keeps its own type, size and alignment; baton_reclist_new
 * allocates it cache-line aligned, so a record sized to a line is one line.
 */
#ifndef BATON_BASE_RECLIST_H
#define BATON_BASE_RECLIST_H

#include "slots.h"

#include <baton/atomic.h>
#include <stddef.h>
#include <stdint.h>

/* The header every record starts with. */
typedef struct baton_rec {
    _Atomic uint32_t owner; /* 1 while a live thread owns the record, 0 free */
    struct baton_rec *next; /* list link: set before the record is pushed, never changed */
} baton_rec_t;

typedef struct baton_reclist {
    _Atomic(baton_rec_t *) head;
} baton_reclist_t;

/* An empty list (the lock's init; no thread sees the lock yet). */
void baton_reclist_init(baton_reclist_t *l);

/* Take over a record whose thread has exited: the record, now owned by the
 * caller, or NULL when every record is owned.  What the exited thread wrote
 * into it happens before the caller's own writes. */
baton_rec_t *baton_reclist_adopt(baton_reclist_t *l);

/* A new record of `size` bytes (at least a baton_rec_t), cache-line
 * aligned, zero-filled, its owner flag already 1, not yet on the list.  Out
 * of memory aborts, with "baton: out of memory for <what>".  The caller
 * initialises its own fields, then pushes it. */
void *baton_reclist_new(size_t size, const char *what);

/* Push r (from baton_reclist_new, initialised) at the head.  Whoever then
 * walks the list from baton_reclist_first() sees r's fields as they were at
 * the push. */
void baton_reclist_push(baton_reclist_t *l, baton_rec_t *r);

/* slots.h's release callback for a record of a reclist: the record's thread
 * has exited; the next adopt may take it.  The caller (the lock) must have
 * nothing of the thread's still in flight in the record: fc and ccsynch
 * both wait for every operation of a thread before it can exit. */
void baton_reclist_release(baton_slot_owner_t *o, void *record);

/* Free every record (the lock's destroy, once baton_slot_owner_unregister()
 * has returned, so that no exiting thread releases a record any more). */
void baton_reclist_free(baton_reclist_t *l);

/* Walking the list: for (r = baton_reclist_first(l); r; r = baton_reclist_next(r)). */
static inline baton_rec_t *baton_reclist_first(baton_reclist_t *l)
{
    /* Acquire: pairs with the release CAS of baton_reclist_push(), so each
     * record reached (and its `next`) is seen as initialised. */
    return baton_load(&l->head, memory_order_acquire);
}

static inline baton_rec_t *baton_reclist_next(const baton_rec_t *r)
{
    /* Plain: written before r was pushed, never changed. */
    return r->next;
}

#endif
