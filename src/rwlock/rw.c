/* rw.c - rw(<kind>): a readers-writer lock over any mutex kind, writer-
 * preferring by default, reader-preferring with `prefer_readers`.
 *
 * Writers take the inner lock, then wait for readers to leave; readers
 * arrive at a reader indicator (indicator.h), look at the writer's word,
 * and if a writer is there depart and wait until it is gone.  A reader that
 * waited `read_patience` pauses raises a write barrier that holds new
 * writers back until it is lowered.  This is the generic construction mrqd
 * is built on, with the inner kind's lock instead of delegation.
 *
 * Writer preference: a writer marks its word before it waits for the
 * readers inside to leave, so readers that arrive meanwhile wait behind it.
 * Reader preference (glibc's default rwlock, PTHREAD_RWLOCK_PREFER_READER_NP):
 * a writer that finds readers inside takes its mark back and waits for the
 * indicator to empty before it marks again, so a reader is admitted
 * whenever no writer holds the lock, even while writers wait (and writers
 * can starve, as under glibc).
 */
#include "../base/indicator.h"
#include "../base/error.h"
#include "../api/registry.h"
#include "../base/thread.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

typedef struct rw_lock {
    baton_lock_t *inner;
    /* 1 while a writer holds (or is taking) the inner lock: what readers
     * look at, so the Dekker pattern does not depend on how the inner kind
     * represents "held". */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t writer;
    _Atomic uintptr_t owner; /* the writer's token (relaxed: compared with one's own) */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t write_barrier;
    uint32_t read_patience;
    bool prefer_readers;
    ri_t readers;
    baton_wait_t pause; /* how readers and writers pause while waiting */
} rw_lock_t;

/* A writer that found readers inside after its mark (k_lock()): writers
 * first, it waits for them to leave; readers first, it takes its mark back
 * and waits for the indicator to empty before it marks again. */
__attribute__((noinline)) static void wait_readers(rw_lock_t *l)
{
    while (l->prefer_readers) {
        /* Readers inside: let them, and any that come, in.  Release pairs
         * with the readers' seq_cst look (an acquire) at the word. */
        baton_store(&l->writer, 0u, memory_order_release);
        ri_wait_empty(&l->readers, &l->pause);
        /* seq_cst RMW: the writer's half of the Dekker pattern (indicator.h). */
        baton_xchg(&l->writer, 1u, memory_order_seq_cst);
        if (!ri_query(&l->readers))
            return;
    }
    ri_wait_empty(&l->readers, &l->pause);
}

static void k_lock(void *s)
{
    rw_lock_t *l = s;
    ri_hold_back(&l->write_barrier);
    (void)baton_lock(l->inner);
    /* seq_cst RMW: the writer's half of the Dekker pattern (indicator.h). */
    baton_xchg(&l->writer, 1u, memory_order_seq_cst);
    if (BATON_UNLIKELY(ri_query(&l->readers)))
        wait_readers(l); /* none inside is the common case: one scan */
    baton_store(&l->owner, baton_thread_token(), memory_order_relaxed); /* see k_unlock() */
}

static int k_trylock(void *s)
{
    rw_lock_t *l = s;
    int rc = baton_trylock(l->inner);
    if (rc != 0)
        return rc;
    baton_xchg(&l->writer, 1u, memory_order_seq_cst); /* as in wait_readers() */
    if (ri_query(&l->readers)) {
        baton_store(&l->writer, 0u, memory_order_release); /* as in k_unlock() */
        (void)baton_unlock(l->inner);
        return EBUSY;
    }
    baton_store(&l->owner, baton_thread_token(), memory_order_relaxed); /* see k_unlock() */
    return 0;
}

/* Timed writer: the write barrier, the inner lock (its own timed wait,
 * through the dynamic API: ENOTSUP where the inner kind has none), then the
 * readers, each until d.  A writer that times out while readers stay takes
 * its mark back and lets the inner lock go. */
static int k_timedlock(void *s, const baton_deadline_t *d)
{
    rw_lock_t *l = s;
    if (!ri_hold_back_until(&l->write_barrier, d))
        return ETIMEDOUT;
    int rc = baton_clocklock(l->inner, d->clock, &d->at);
    if (rc != 0)
        return rc;
    for (;;) {
        /* seq_cst RMW: the writer's half of the Dekker pattern, as in
         * wait_readers(). */
        baton_xchg(&l->writer, 1u, memory_order_seq_cst);
        if (!l->prefer_readers || !ri_query(&l->readers))
            break;
        /* Reader preference: as in wait_readers().  Release pairs with the
         * readers' seq_cst look. */
        baton_store(&l->writer, 0u, memory_order_release);
        if (!ri_wait_empty_until(&l->readers, &l->pause, d))
            goto timed_out;
    }
    if (!ri_wait_empty_until(&l->readers, &l->pause, d)) {
        /* Release: as in k_unlock(). */
        baton_store(&l->writer, 0u, memory_order_release);
        goto timed_out;
    }
    baton_store(&l->owner, baton_thread_token(), memory_order_relaxed); /* see k_unlock() */
    return 0;
timed_out:
    (void)baton_unlock(l->inner);
    return ETIMEDOUT;
}

/* The writer's release, then the inner lock's by `inner_unlock`. */
static int release_writer(rw_lock_t *l, int (*inner_unlock)(baton_lock_t *))
{
    baton_store(&l->owner, (uintptr_t)0, memory_order_relaxed);
    /* Release: the writer's critical section happens before readers that
     * see 0 (their seq_cst load is an acquire). */
    baton_store(&l->writer, 0u, memory_order_release);
    return inner_unlock(l->inner);
}

static int k_unlock(void *s)
{
    rw_lock_t *l = s;
    /* A non-owner's unlock must change nothing.  Relaxed: only the owner
     * stores its own token; others compare against theirs. */
    if (baton_load(&l->owner, memory_order_relaxed) != baton_thread_token())
        return EPERM;
    return release_writer(l, baton_unlock);
}

/* A writer's hold released by whatever thread calls (a NORMAL pthread
 * mutex over rw(<kind>)); readers are not touched.  Relaxed: the caller
 * synchronised with the writer, which orders its token before this load;
 * 0: no writer holds the lock, and nothing is done. */
static int k_release(void *s)
{
    rw_lock_t *l = s;
    return baton_load(&l->owner, memory_order_relaxed) == 0 ? 0 : release_writer(l, baton_lock_release);
}

BATON_KIND_ADAPT_AT(is_locked, rw_lock_t, baton_is_locked, l->inner)
BATON_KIND_ADAPT_AT(has_readers, rw_lock_t, ri_query, &l->readers)

static void k_rlock(void *s)
{
    rw_lock_t *l = s;
    ri_rlock(&l->readers, &l->writer, &l->write_barrier, l->read_patience, &l->pause);
}

BATON_KIND_ADAPT_AT(runlock, rw_lock_t, ri_depart, &l->readers)
BATON_KIND_ADAPT_AT(timed, rw_lock_t, baton_lock_timed, l->inner)

static int k_timedrlock(void *s, const baton_deadline_t *d)
{
    rw_lock_t *l = s;
    return ri_timedrlock(&l->readers, &l->writer, &l->write_barrier, l->read_patience, &l->pause, d);
}

/* A reader's entry that never waits: arrive, and if a writer holds the lock
 * or is taking it (waiting for readers to leave), depart again.  Refusing
 * while a writer waits keeps writer preference.  Under reader preference a
 * waiting writer holds its mark only for the instant it takes to see the
 * readers inside, so this refuses only a writer that holds the lock, or
 * one caught in that instant. */
static int k_tryrlock(void *s)
{
    rw_lock_t *l = s;
    ri_arrive(&l->readers);
    /* seq_cst: the reader's half of the Dekker pattern (indicator.h); also
     * an acquire, pairing with the release in k_unlock(). */
    if (baton_load(&l->writer, memory_order_seq_cst) == 0)
        return 0;
    ri_depart(&l->readers);
    return EBUSY;
}

/* --- registry entry ------------------------------------------------------- */

enum { OPT_READERS, OPT_PATIENCE, OPT_PREFER_READERS };

static const baton_option_desc_t rw_options[] = {
    [OPT_READERS] = {"readers", 0, 4096, 0, "reader-indicator lines (0: one per CPU, at least 4)"},
    [OPT_PATIENCE] = {"read_patience", 1, 1u << 30, 1000,
                      "pauses a reader waits before it holds new writers back"},
    [OPT_PREFER_READERS] = {"prefer_readers", 0, 1, 0,
                            "admit readers while writers wait (glibc's default rwlock); 0: writers first"},
};

static int k_init(void *s, const baton_opts_t *o)
{
    rw_lock_t *l = s;
    char inner[160];
    int rc = baton_opts_inner(o, inner, sizeof inner);
    if (rc != 0)
        return rc;
    l->inner = baton_lock_new(inner);
    if (!l->inner)
        return errno ? errno : EINVAL; /* the message names what was wrong */
    if (!(baton_lock_kind(l->inner)->caps & BATON_CAP_LOCK)) {
        baton_lock_free(l->inner);
        return baton_fail(EINVAL, "rw(%s): the inner kind must offer lock/unlock", inner);
    }
    atomic_init(&l->write_barrier, 0u);
    atomic_init(&l->writer, 0u);
    l->read_patience = (uint32_t)o->value[OPT_PATIENCE];
    l->prefer_readers = o->value[OPT_PREFER_READERS] != 0;
    (void)baton_wait_init(&l->pause, BATON_WAIT_SPINPARK);
    rc = ri_init(&l->readers, (uint32_t)o->value[OPT_READERS]);
    if (rc)
        baton_lock_free(l->inner);
    return rc;
}

/* What k_init allocates: the inner lock (baton_lock_new) and the reader
 * indicator. */
static size_t k_footprint(const baton_opts_t *o)
{
    char inner[160];
    if (baton_opts_inner(o, inner, sizeof inner) != 0)
        return 0; /* init refuses it */
    return baton_spec_footprint(inner) + ri_footprint((uint32_t)o->value[OPT_READERS]);
}

static int k_destroy(void *s)
{
    rw_lock_t *l = s;
    if (ri_query(&l->readers))
        return EBUSY;
    int rc = baton_lock_free(l->inner);
    if (rc == 0)
        ri_destroy(&l->readers);
    return rc;
}

const baton_kind_t baton_kind_rw = {
    .name = "rw",
    .summary =
        "rw(<kind>): readers-writer lock over any kind with lock/unlock (writers first; ,prefer_readers: readers first)",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_RW |
            BATON_CAP_OWNER | BATON_CAP_WRAPPER | BATON_CAP_TIMED,
    .waits = BATON_WAITS_NONE,
    .default_wait = BATON_NO_WAIT,
    .size = sizeof(rw_lock_t),
    .align = _Alignof(rw_lock_t),
    .options = rw_options,
    .noptions = sizeof rw_options / sizeof rw_options[0],
    .init = k_init,
    .destroy = k_destroy,
    .lock = k_lock,
    .trylock = k_trylock,
    .unlock = k_unlock,
    .release = k_release,
    .is_locked = k_is_locked,
    .rlock = k_rlock,
    .runlock = k_runlock,
    .tryrlock = k_tryrlock,
    .has_readers = k_has_readers,
    .timedlock = k_timedlock,
    .timedrlock = k_timedrlock,
    .timed = k_timed,
    .wrapper = true,
    .footprint = k_footprint,
};
