/* slots.h - one record per (client thread, delegation object).
 *
 * Flat combining keeps a publication record per thread, CC-Synch a queue
 * node per thread, RCL a mailbox per thread and server.  Such a record must
 * be found fast (every operation), created on a thread's first use (no
 * maximum thread count), stay the same for the thread's life (RCL keeps a
 * thread's operations in order by using one mailbox), and be handed back
 * when the thread exits, so that thread churn does not grow the object.
 *
 * An owner (the lock or server) embeds a baton_slot_owner_t with two
 * callbacks: `make` returns a new record for the calling thread, `release`
 * says the thread that used a record has exited (the owner may reuse it once
 * any operation still in it has run).  Owners are registered while alive; a
 * thread that exits releases its records only to owners still registered, so
 * an owner may be destroyed while threads that used it live on.
 *
 * Each thread keeps its (owner, record) pairs in a small array, the most
 * recently used first.
 */
#ifndef BATON_BASE_SLOTS_H
#define BATON_BASE_SLOTS_H

#include <baton/atomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct baton_slot_owner {
    uint64_t serial; /* unique for the process's life; set by register */
    void *(*make)(struct baton_slot_owner *o);
    void (*release)(struct baton_slot_owner *o, void *record);
} baton_slot_owner_t;

typedef struct baton_slot_entry {
    uint64_t serial;
    baton_slot_owner_t *owner;
    void *record;
} baton_slot_entry_t;

typedef struct baton_slot_table {
    uint32_t n, cap;
    baton_slot_entry_t *e;
} baton_slot_table_t;

extern _Thread_local baton_slot_table_t baton_slots __attribute__((tls_model("initial-exec")));

/* Register o (make and release must be set).  Returns 0 or ENOMEM. */
int baton_slot_owner_register(baton_slot_owner_t *o);
/* Unregister o: no release callback runs for it after this returns. */
void baton_slot_owner_unregister(baton_slot_owner_t *o);
/* What registering one owner costs, at most, in the table of live owners. */
size_t baton_slot_owner_footprint(void);

void *baton_slot_get_slow(baton_slot_owner_t *o);

/* The calling thread's record for o, made on first use. */
static inline void *baton_slot_get(baton_slot_owner_t *o)
{
    baton_slot_table_t *t = &baton_slots;
    if (BATON_LIKELY(t->n > 0 && t->e[0].serial == o->serial))
        return t->e[0].record;
    return baton_slot_get_slow(o);
}

#endif
