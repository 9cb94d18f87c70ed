/* slab.c - the interposer's lock-state slabs: one per class of pthread
 * object, handles into mmap'd chunks that are never unmapped; and the
 * in-place locks of objects that have no state yet (see preload.h). */
#include "preload.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

/* --- slabs -------------------------------------------------------------------- */

uint32_t pl_slot_new(pl_class_t *c, const void *owner, int *err)
{
    uint32_t h;
    baton_syslock_lock(&c->mu);
    if (c->free_head != 0) {
        h = c->free_head;
        /* A free slot's first word holds the next free handle. */
        char *chunk = baton_load(&c->chunk[(h - 1u) >> PL_CHUNK_SHIFT], memory_order_relaxed); /* under mu */
        memcpy(&c->free_head,
               chunk + PL_CHUNK_OWNERS_BYTES + (size_t)((h - 1u) & (PL_CHUNK_SLOTS - 1u)) * c->slot,
               sizeof(uint32_t));
    } else {
        uint32_t i = c->next;
        if ((i >> PL_CHUNK_SHIFT) >= c->nchunks) {
            void *m = c->nchunks == PL_MAX_CHUNKS
                          ? MAP_FAILED
                          : mmap(NULL, PL_CHUNK_OWNERS_BYTES + (size_t)PL_CHUNK_SLOTS * c->slot,
                                 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) {
                baton_syslock_unlock(&c->mu);
                *err = ENOMEM;
                return 0;
            }
            /* Release: pairs with the acquire in pl_state_lookup(). */
            baton_store(&c->chunk[c->nchunks], (char *)m, memory_order_release);
            c->nchunks++;
        }
        c->next = i + 1;
        h = i + 1;
    }
    uint32_t i = h - 1u;
    char *chunk = baton_load(&c->chunk[i >> PL_CHUNK_SHIFT], memory_order_relaxed); /* under mu */
    memset(chunk + PL_CHUNK_OWNERS_BYTES + (size_t)(i & (PL_CHUNK_SLOTS - 1u)) * c->slot, 0, c->slot);
    /* Relaxed: published with the handle by the caller's release. */
    baton_store(pl_owner_of(chunk, i & (PL_CHUNK_SLOTS - 1u)), owner, memory_order_relaxed);
    baton_syslock_unlock(&c->mu);
    return h;
}

void pl_slot_free(pl_class_t *c, uint32_t h)
{
    uint32_t i = h - 1u;
    baton_syslock_lock(&c->mu);
    char *chunk = baton_load(&c->chunk[i >> PL_CHUNK_SHIFT], memory_order_relaxed); /* under mu */
    /* Relaxed: a lookup that still finds the old owner is a use after
     * destroy, which the program orders out. */
    baton_store(pl_owner_of(chunk, i & (PL_CHUNK_SLOTS - 1u)), NULL, memory_order_relaxed);
    memcpy(chunk + PL_CHUNK_OWNERS_BYTES + (size_t)(i & (PL_CHUNK_SLOTS - 1u)) * c->slot, &c->free_head,
           sizeof(uint32_t));
    c->free_head = h;
    baton_syslock_unlock(&c->mu);
}

void *pl_state_new(pl_class_t *c, const void *owner, uint32_t *handle, int *err)
{
    uint32_t h = pl_slot_new(c, owner, err);
    if (h == 0)
        return NULL;
    void *s = pl_state_lookup(c, h, owner);
    baton_opts_t buf;
    int rc = c->kind->init(s, c->opts_for ? c->opts_for(c, owner, &buf) : &c->opts);
    if (rc != 0) {
        pl_slot_free(c, h);
        *err = rc;
        return NULL;
    }
    /* Relaxed: statistics only. */
    uint64_t live = baton_fetch_add(&c->live, 1, memory_order_relaxed) + 1;
    baton_fetch_add(&c->created, 1, memory_order_relaxed);
    uint64_t peak = baton_load(&c->peak, memory_order_relaxed);
    while (live > peak && !baton_cas(&c->peak, &peak, live, memory_order_relaxed, memory_order_relaxed)) {
    }
    *handle = h;
    return s;
}

int pl_state_free(pl_class_t *c, void *state, uint32_t handle)
{
    int rc = c->kind->destroy(state);
    if (rc != 0)
        return rc;
    pl_slot_free(c, handle);
    baton_fetch_sub(&c->live, 1, memory_order_relaxed); /* statistics only */
    return 0;
}

uint32_t pl_adopt(pl_class_t *c, _Atomic uint32_t *hw, const void *owner, uint32_t from, int *err)
{
    uint32_t h;
    void *s = pl_state_new(c, owner, &h, err);
    if (s == NULL)
        return 0;
    uint32_t expected = from;
    /* Release: publishes the initialised state and its back-pointer; pairs
     * with the acquire loads of handle words in every entry point.  Acquire
     * on failure: a racer's state is initialised before it is used. */
    if (baton_cas(hw, &expected, h, memory_order_acq_rel, memory_order_acquire))
        return h;
    (void)pl_state_free(c, s, h);
    return expected;
}

uint32_t pl_adopt_or_inplace(pl_class_t *c, _Atomic uint32_t *w, const void *owner, uint32_t from)
{
    int err = 0;
    uint32_t v = pl_adopt(c, w, owner, from, &err);
    if (v != 0 || err == 0)
        return v;
    pl_no_state(c, err, "is an in-place lock for the rest of its life");
    /* Relaxed: an in-place lock has nothing to publish; its acquiring CAS
     * orders what it guards. */
    if (baton_cas(w, &from, PL_INPLACE, memory_order_relaxed, memory_order_relaxed))
        return PL_INPLACE;
    return from; /* a racer's */
}

int pl_handle_state(pl_class_t *c, _Atomic uint32_t *hw, const void *owner, _Atomic uint64_t *glibc_word,
                    _Atomic(pl_prof_t *) *prof, bool create,
                    void (*fall_back)(const void *owner, uint32_t from), void **sp)
{
    for (;;) {
        /* Acquire: pairs with the release CAS in pl_adopt() and the release
         * stores of the fall-backs. */
        uint32_t h = baton_load(hw, memory_order_acquire);
        void *s = pl_state_lookup(c, h, owner);
        if (BATON_LIKELY(s != NULL)) {
            *sp = s;
            return 0;
        }
        if (h == PL_HANDLE_FWD)
            return PL_FORWARD;
        if (h == PL_HANDLE_PENDING) {
            pl_wait_change(hw, h);
            continue;
        }
        /* Relaxed: a look at what glibc would see (baton writes nothing
         * there); the CAS below decides. */
        if (h != 0 && baton_load(glibc_word, memory_order_relaxed) != 0) {
            /* Not this object's, and glibc reads it as held: glibc's, for
             * good.  Relaxed: nothing is published (glibc reads the bytes as
             * they are). */
            (void)baton_cas(hw, &h, PL_HANDLE_FWD, memory_order_relaxed, memory_order_relaxed);
            continue;
        }
        if (!create)
            return PL_NO_STATE;
        /* Relaxed: racers store the same NULL, and the profiler finds a
         * record again by the object's address. */
        baton_store(prof, NULL, memory_order_relaxed);
        int err = 0;
        if (pl_adopt(c, hw, owner, h, &err) == 0 && err != 0) {
            pl_no_state(c, err, "is glibc's own for the rest of its life");
            fall_back(owner, h);
        }
    }
}

void pl_no_state(pl_class_t *c, int err, const char *fallback)
{
    int expected = 0;
    /* Relaxed: only decides who says it; `live` is a statistic. */
    if (baton_cas(&c->no_state, &expected, 1, memory_order_relaxed, memory_order_relaxed))
        pl_log("%s: no lock state could be made (%s; %llu live): a %s that cannot get one %s", c->what,
               strerror(err), (unsigned long long)baton_load(&c->live, memory_order_relaxed), c->what,
               fallback);
}

/* --- in-place locks (preload.h) ---------------------------------------------------- */

int pl_inplace_trylock(_Atomic uint32_t *w)
{
    uint32_t expected = PL_INPLACE;
    /* Relaxed look first (test-and-test-and-set); acquire CAS: pairs with the
     * release store in pl_inplace_unlock(). */
    if (baton_load(w, memory_order_relaxed) != PL_INPLACE)
        return EBUSY;
    return baton_cas(w, &expected, PL_INPLACE_HELD, memory_order_acquire, memory_order_relaxed) ? 0 : EBUSY;
}

void pl_wait_change(_Atomic uint32_t *w, uint32_t v)
{
    baton_wait_t policy;
    (void)baton_wait_init(&policy, BATON_WAIT_SPINPARK);
    baton_waiter_t waiter;
    baton_waiter_init(&waiter, &policy);
    /* Relaxed: a hint of when to look again; the caller decides. */
    while (baton_load(w, memory_order_relaxed) == v)
        if (!baton_waiter_pause(&waiter, NULL, 0))
            sched_yield(); /* past the spin budget: nobody would wake a sleeper */
}

void pl_inplace_lock(_Atomic uint32_t *w)
{
    while (pl_inplace_trylock(w) != 0)
        pl_wait_change(w, PL_INPLACE_HELD);
}

void pl_inplace_unlock(_Atomic uint32_t *w)
{
    /* Release: pairs with the acquire CAS in pl_inplace_trylock(). */
    baton_store(w, PL_INPLACE, memory_order_release);
}
