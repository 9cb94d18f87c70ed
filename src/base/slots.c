/* slots.c - per-(thread, object) records (see slots.h). */
#include "slots.h"
#include "syslock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

_Thread_local baton_slot_table_t baton_slots __attribute__((tls_model("initial-exec")));

static baton_syslock_t live_mutex = BATON_SYSLOCK_INIT;
static uint64_t next_serial = 1; /* under live_mutex */
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* The live owners, by serial: an open-addressing table with linear probing
 * (under live_mutex).  A hash rather than a list because an interposed
 * program may hold a million live locks, and every check and removal would
 * otherwise walk them all.  A record's owner pointer may dangle once its
 * owner is gone, so liveness is decided by serial (unique for the
 * process's life) without touching the owner. */
static struct {
    uint64_t *key; /* 0: empty */
    baton_slot_owner_t **owner;
    size_t cap, n; /* cap: a power of two, or 0 */
} live;

static size_t home(uint64_t serial)
{
    return (size_t)((serial * 0x9e3779b97f4a7c15ull) >> 17) & (live.cap - 1);
}

static baton_slot_owner_t *live_find(uint64_t serial)
{
    if (live.cap == 0)
        return NULL;
    for (size_t i = home(serial);; i = (i + 1) & (live.cap - 1)) {
        if (live.key[i] == serial)
            return live.owner[i];
        if (live.key[i] == 0)
            return NULL;
    }
}

static void live_put(uint64_t serial, baton_slot_owner_t *o)
{
    size_t i = home(serial);
    while (live.key[i] != 0)
        i = (i + 1) & (live.cap - 1);
    live.key[i] = serial;
    live.owner[i] = o;
    live.n++;
}

static int live_insert(baton_slot_owner_t *o)
{
    if ((live.n + 1) * 2 > live.cap) {
        size_t cap = live.cap ? live.cap * 2 : 64;
        uint64_t *key = calloc(cap, sizeof *key);
        baton_slot_owner_t **owner = calloc(cap, sizeof *owner);
        if (!key || !owner) {
            free(key);
            free(owner);
            return ENOMEM;
        }
        uint64_t *old_key = live.key;
        baton_slot_owner_t **old_owner = live.owner;
        size_t old_cap = live.cap;
        live.key = key;
        live.owner = owner;
        live.cap = cap;
        live.n = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old_key[i] != 0)
                live_put(old_key[i], old_owner[i]);
        free(old_key);
        free(old_owner);
    }
    live_put(o->serial, o);
    return 0;
}

size_t baton_slot_owner_footprint(void)
{
    /* live_insert keeps the table at most half full and doubles it, so past
     * its first 64 entries it holds at most 4 (a key and an owner pointer
     * each) per live owner. */
    return 4 * (sizeof *live.key + sizeof *live.owner);
}

/* Remove by backward shift, so probing never needs tombstones. */
static void live_remove(uint64_t serial)
{
    if (live.cap == 0)
        return;
    size_t i = home(serial);
    while (live.key[i] != serial) {
        if (live.key[i] == 0)
            return;
        i = (i + 1) & (live.cap - 1);
    }
    for (size_t j = (i + 1) & (live.cap - 1); live.key[j] != 0; j = (j + 1) & (live.cap - 1)) {
        size_t h = home(live.key[j]);
        /* Move j into the hole at i unless its home lies cyclically in (i, j]. */
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            live.key[i] = live.key[j];
            live.owner[i] = live.owner[j];
            i = j;
        }
    }
    live.key[i] = 0;
    live.owner[i] = NULL;
    live.n--;
}

static bool is_live(const baton_slot_owner_t *o, uint64_t serial) { return live_find(serial) == o; }

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
    int rc = live_insert(o);
    baton_syslock_unlock(&live_mutex);
    return rc;
}

void baton_slot_owner_unregister(baton_slot_owner_t *o)
{
    baton_syslock_lock(&live_mutex);
    live_remove(o->serial);
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
