/* counter.c - per-thread statistics cells, summed on read (baton/counter.h).
 *
 * Each thread that adds gets a cell through the per-(thread, object) slot
 * table (src/base/slots.h): found by one compare when the counter is the
 * thread's most recently used object.  Cells are pushed onto the counter's
 * list, never removed before the counter is freed; a thread that exits
 * hands its cell back and the next new thread reuses it, value and all, so
 * the sum never loses what an exited thread added and thread churn does
 * not grow the counter.
 */
#include <baton/atomic.h>
#include <baton/counter.h>
#include "../base/syslock.h"
#include "../base/slots.h"

#include <errno.h>
#include <stdlib.h>

typedef struct cell {
    _Alignas(BATON_CACHELINE) _Atomic uint64_t value;
    struct cell *next;      /* the counter's list of every cell (immutable once pushed) */
    struct cell *free_next; /* the counter's free list (under free_lock) */
} cell_t;

struct baton_counter {
    baton_slot_owner_t owner; /* first: make/release get it back as the counter */
    _Atomic(cell_t *) cells;
    baton_syslock_t free_lock;
    cell_t *free_cells;
};

static void *make_cell(baton_slot_owner_t *o)
{
    baton_counter_t *c = (baton_counter_t *)o;
    baton_syslock_lock(&c->free_lock);
    cell_t *cell = c->free_cells;
    if (cell)
        c->free_cells = cell->free_next;
    baton_syslock_unlock(&c->free_lock);
    if (cell)
        return cell; /* keeps its value: an exited thread's additions */
    cell = aligned_alloc(BATON_CACHELINE, sizeof *cell);
    if (!cell)
        abort(); /* no way to report it from an add; the slot table does the same */
    atomic_init(&cell->value, 0);
    cell->free_next = NULL;
    cell->next = baton_load(&c->cells, memory_order_relaxed);
    /* Release: a reader that sees the cell (acquire in baton_counter_read)
     * sees its initialised value and link. */
    while (!baton_cas(&c->cells, &cell->next, cell, memory_order_release, memory_order_relaxed))
        ;
    return cell;
}

static void release_cell(baton_slot_owner_t *o, void *record)
{
    baton_counter_t *c = (baton_counter_t *)o;
    cell_t *cell = record;
    baton_syslock_lock(&c->free_lock);
    cell->free_next = c->free_cells;
    c->free_cells = cell;
    baton_syslock_unlock(&c->free_lock);
}

baton_counter_t *baton_counter_new(void)
{
    baton_counter_t *c = calloc(1, sizeof *c);
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    atomic_init(&c->cells, NULL);
    atomic_init(&c->free_lock.word, 0u);
    c->owner.make = make_cell;
    c->owner.release = release_cell;
    if (baton_slot_owner_register(&c->owner) != 0) {
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    return c;
}

void baton_counter_free(baton_counter_t *c)
{
    if (!c)
        return;
    /* After this no exiting thread hands a cell back to c. */
    baton_slot_owner_unregister(&c->owner);
    cell_t *cell = baton_load(&c->cells, memory_order_acquire); /* pairs with make_cell's release */
    while (cell) {
        cell_t *next = cell->next;
        free(cell);
        cell = next;
    }
    free(c);
}

void baton_counter_add(baton_counter_t *c, uint64_t v)
{
    cell_t *cell = baton_slot_get(&c->owner);
    /* Only this thread writes its cell while it lives, so a load and a store
     * (no locked instruction) suffice.  Relaxed: readers want a sum, not an
     * order; the owner's next write, or thread exit, is what they wait for. */
    baton_store(&cell->value, baton_load(&cell->value, memory_order_relaxed) + v, memory_order_relaxed);
}

uint64_t baton_counter_read(const baton_counter_t *c)
{
    uint64_t sum = 0;
    /* Acquire pairs with make_cell's release: every cell seen is initialised. */
    for (cell_t *cell = baton_load((_Atomic(cell_t *) *)&c->cells, memory_order_acquire); cell;
         cell = cell->next)
        sum += baton_load(&cell->value, memory_order_relaxed);
    return sum;
}
