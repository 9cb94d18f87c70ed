/* slots.c - per-(thread, object) records (see slots.h). */
#include "slots.h"
#include "../core/syslock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

_Thread_local baton_slot_table_t baton_slots __attribute__((tls_model("initial-exec")));

static baton_syslock_t live_mutex = BATON_SYSLOCK_INIT;
static baton_slot_owner_t *live;     /* under live_mutex */
static uint64_t next_serial = 1;     /* under live_mutex */
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static bool is_live(const baton_slot_owner_t *o, uint64_t serial)
{
    for (const baton_slot_owner_t *p = live; p; p = p->next_live)
        if (p == o && p->serial == serial)
            return true;
    return false;
}

/* Thread exit: hand every record back to its owner, if the owner lives. */
static void slots_exit(void *arg)
{
    (void)arg;
    baton_slot_table_t *t = &baton_slots;
    baton_syslock_lock(&live_mutex);
    for (uint32_t i = 0; i < t->n; i++)
        if (is_live(t->e[i].owner, t->e[i].serial))
            t->e[i].owner->release(t->e[i].owner, t->e[i].record);
    baton_syslock_unlock(&live_mutex);
    free(t->e);
    t->e = NULL;
    t->n = t->cap = 0;
}

/* fork: the child must not inherit live_mutex held by a thread that does
 * not exist there. */
static void fork_prepare(void) { baton_syslock_lock(&live_mutex); }
static void fork_release(void) { baton_syslock_unlock(&live_mutex); }

static void make_key(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_release);
    if (pthread_key_create(&exit_key, slots_exit) != 0) {
        fprintf(stderr, "baton: pthread_key_create failed\n");
        abort();
    }
}

int baton_slot_owner_register(baton_slot_owner_t *o)
{
    pthread_once(&key_once, make_key);
    baton_syslock_lock(&live_mutex);
    o->serial = next_serial++;
    o->next_live = live;
    live = o;
    baton_syslock_unlock(&live_mutex);
    return 0;
}

void baton_slot_owner_unregister(baton_slot_owner_t *o)
{
    baton_syslock_lock(&live_mutex);
    for (baton_slot_owner_t **pp = &live; *pp; pp = &(*pp)->next_live)
        if (*pp == o) {
            *pp = o->next_live;
            break;
        }
    baton_syslock_unlock(&live_mutex);
}

/* Drop entries whose owner is gone (they can never match again). */
static void prune(baton_slot_table_t *t)
{
    uint32_t k = 0;
    baton_syslock_lock(&live_mutex);
    for (uint32_t i = 0; i < t->n; i++)
        if (is_live(t->e[i].owner, t->e[i].serial))
            t->e[k++] = t->e[i];
    baton_syslock_unlock(&live_mutex);
    t->n = k;
}

void *baton_slot_get_slow(baton_slot_owner_t *o)
{
    baton_slot_table_t *t = &baton_slots;
    for (uint32_t i = 1; i < t->n; i++)
        if (t->e[i].serial == o->serial) {
            /* Move to the front: the next lookup is one compare. */
            baton_slot_entry_t hit = t->e[i];
            for (uint32_t j = i; j > 0; j--)
                t->e[j] = t->e[j - 1];
            t->e[0] = hit;
            return hit.record;
        }
    if (t->n == t->cap) {
        if (t->n > 0)
            prune(t);
        if (t->n == t->cap) {
            uint32_t cap = t->cap ? t->cap * 2 : 8;
            baton_slot_entry_t *e = realloc(t->e, cap * sizeof *e);
            if (!e) {
                fprintf(stderr, "baton: out of memory for per-thread delegation records\n");
                abort();
            }
            t->e = e;
            t->cap = cap;
        }
    }
    if (t->n == 0) {
        /* First record of this thread: arrange the exit hand-back. */
        pthread_once(&key_once, make_key);
        pthread_setspecific(exit_key, t);
    }
    void *rec = o->make(o);
    for (uint32_t j = t->n; j > 0; j--)
        t->e[j] = t->e[j - 1];
    t->e[0] = (baton_slot_entry_t){o->serial, o, rec};
    t->n++;
    return rec;
}
