/* elide.c - `baton bench elide`: a memcached-like cache under one global
 * lock, for lock elision (elide(<kind>)) against the plain kinds.
 *
 * The cache models memcached's critical sections:
 *   - a chained hash table (--buckets heads, each a singly linked chain);
 *   - an LRU list (doubly linked, most recently used at the head);
 *   - a slab-like allocator: a fixed pool of --items items (one cache line
 *     each) and a free list; when the free list is empty, the LRU tail is
 *     evicted (unlinked from its chain and the LRU list) and reused;
 * all under ONE lock.  Each thread loops over random keys of a --keys key
 * space (a thread-seeded xorshift), doing with the chosen probability a get,
 * else a set:
 *   get  (a short section): look the key up; on a hit read its value and
 *        move it to the LRU head (memcached rate-limits that bump to once a
 *        minute per item; here every hit bumps, unless it is already the head);
 *   set  (a long one): if the key is present, unlink its item (chain, LRU)
 *        and free it; allocate an item (evicting the LRU tail when the pool
 *        is empty); write the key and a 32-byte value; link it at the head of
 *        its chain and of the LRU list.
 * The table starts with half the pool filled.  --stats adds a statistics
 * counter bumped inside every critical section: "shared" is one plain
 * global counter (every pair of elided sections then conflicts on its
 * line), "percpu" a baton_counter_t (a cell per thread: the remedy).
 *
 * How a section reaches the lock: lock and unlock where the lock offers them
 * (every peer, kinds with BATON_CAP_LOCK), else baton_execute.
 *
 * Verification, at the end of every run, through the lock: the items
 * reachable from the chains, the items on the LRU list, the pool less the
 * free list, the table's own item count, and what the operations imply
 * (prefilled + inserted - evicted) must all agree; every LRU prev link must
 * mirror its next link and the tail must be the last item; every item must
 * sit in the chain its key hashes to, once; no free item may be linked.
 * Each get also checks that the value's words agree (a torn value means a
 * set overlapped it), and with --stats the counter must equal the number
 * of operations.  --inject-fault runs thread 0's operations without the
 * lock, and the run must fail.
 *
 * Every shared field is a relaxed atomic, so even that run has no data race:
 * the table gets corrupted but never undefined.  Links are item indices
 * (or NIL), so every link points into the pool, and every walk is bounded
 * by the pool size: a corrupted table ends a walk with a finding, never an
 * endless loop.
 *
 * Elision statistics.  After the run the child reads baton_lock_stats()
 * (commits, aborts by cause, fallbacks, skipped acquisitions) and puts them
 * in a shared page the parent mapped; the result's extra[] carries the
 * slot's index.  The table reports them per operation, with throughput,
 * CPU-seconds per million operations and the energy-delay product (CPU
 * seconds per operation times wall seconds per operation) relative to a
 * reference lock of the same cell: for elide(X), X; for the glibc elision
 * peer, pthread; for every other lock, the first plain (non-elided) lock of
 * the list.
 *
 * glibc's own elision (peer:glibc-elision) is the pthread kind run in a
 * subprocess (this same command, /proc/self/exe) with
 * GLIBC_TUNABLES=glibc.elision.enable=1, since glibc reads its tunables at
 * start-up only; its JSON is read back into the cell.
 */
#include "bench.h"
#include "progress.h"
#include "report.h"
#include "topo.h"
#include "workloads.h"
#include "elide.h"
#include "../src/api/registry.h" /* the lock spec as a value */
#include "../src/base/join.h"

#include <baton/atomic.h>
#include <baton/counter.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Every shared field of the cache is read and written only through these.
 * Relaxed: the lock under test orders the critical sections (its acquire
 * and release, or a delegation kind's hand-over); the atomics only keep the
 * --inject-fault run free of data races.  On x86-64 they are plain moves,
 * which is what an elided section should contain. */
#define GET(field) baton_load(&(field), memory_order_relaxed)
#define SET(field, v) baton_store(&(field), (v), memory_order_relaxed)

#define NIL UINT32_MAX
#define VAL_WORDS 4
#define VAL_STEP 0x9e3779b97f4a7c15ull /* value word w holds v + w * VAL_STEP */
#define ITEMS_MAX (1u << 24)
#define KEYS_MAX (1u << 30)

const char *const elide_stats_names[STATS_MODES] = {"off", "shared", "percpu"};

/* --- the cache ------------------------------------------------------------------ */

/* One item: a cache line, as memcached's small items are about. */
struct elide_item {
    _Alignas(64) _Atomic uint64_t key;
    _Atomic uint64_t val[VAL_WORDS];
    _Atomic uint32_t hnext;      /* next in its hash chain */
    _Atomic uint32_t prev, next; /* LRU list; `next` also links the free list */
};

struct elide_globals {
    _Alignas(BENCH_LINE) _Atomic uint32_t lru_head, lru_tail, free_head;
    _Atomic uint32_t nitems; /* items linked (memcached's curr_items) */
    /* --stats shared: the one global counter, on its own line. */
    _Alignas(BENCH_LINE) _Atomic uint64_t stats;
};

/* Elision counters of one run, as the child found them. */
struct elide_tx {
    uint64_t attempts, commits, aborts[BATON_ABORT_CAUSES], fallbacks, skipped;
};

/* Shared (MAP_SHARED) between the parent and the measuring children: each
 * child that has elision counters takes the next slot. */
struct elide_slab {
    _Atomic uint32_t next;
    uint32_t cap;
    struct elide_tx tx[];
};

enum { PATH_DIRECT, PATH_LOCK, PATH_EXECUTE };


struct elide_thread {
    _Alignas(BENCH_LINE) uint64_t gets, hits, sets, inserts, replaces, evictions;
    uint64_t torn, broken, sink;
    int error; /* what the API returned, if it failed */
};

struct elide_state {
    const struct elide_params *p;
    bench_lock_t *lock;
    struct elide_item *it;
    _Atomic uint32_t *bucket;
    struct elide_globals *g;
    baton_counter_t *counter; /* --stats percpu */
    struct elide_thread *t;
    uint8_t *mark; /* the final walk's marks, one per item */
    uint32_t pool, nbuckets;
    uint64_t prefilled;
    int path;
    /* The final walk's findings (made under the lock). */
    uint64_t in_chains, on_lru, on_free, counted, unlinked;
    uint64_t wrong_chain, twice, lru_bad_prev, overlap;
    bool lru_bad_tail;
    uint64_t counter_end;
};

/* One operation, and what it found. */
struct elide_op {
    struct elide_state *s;
    uint64_t key, val;
    bool get;
    bool count; /* bump the statistics counter (not while prefilling) */
    bool hit, replaced, evicted, torn, broken;
    uint64_t sink;
};

static inline uint32_t bucket_of(const struct elide_state *s, uint64_t key)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) % s->nbuckets;
}

static uint32_t chain_find(const struct elide_state *s, uint64_t key)
{
    uint32_t i = GET(s->bucket[bucket_of(s, key)]);
    for (uint32_t steps = 0; i != NIL && steps < s->pool; steps++) {
        if (GET(s->it[i].key) == key)
            return i;
        i = GET(s->it[i].hnext);
    }
    return NIL;
}

/* Unlink item i from its chain; false if it is not there (a broken table). */
static bool chain_unlink(struct elide_state *s, uint32_t i)
{
    _Atomic uint32_t *head = &s->bucket[bucket_of(s, GET(s->it[i].key))];
    uint32_t prev = NIL, j = GET(*head);
    for (uint32_t steps = 0; j != NIL && steps < s->pool; steps++) {
        if (j == i) {
            uint32_t n = GET(s->it[i].hnext);
            if (prev == NIL)
                SET(*head, n);
            else
                SET(s->it[prev].hnext, n);
            return true;
        }
        prev = j;
        j = GET(s->it[j].hnext);
    }
    return false;
}

static void lru_unlink(struct elide_state *s, uint32_t i)
{
    uint32_t p = GET(s->it[i].prev), n = GET(s->it[i].next);
    if (p != NIL)
        SET(s->it[p].next, n);
    else
        SET(s->g->lru_head, n);
    if (n != NIL)
        SET(s->it[n].prev, p);
    else
        SET(s->g->lru_tail, p);
}

static void lru_push_head(struct elide_state *s, uint32_t i)
{
    uint32_t h = GET(s->g->lru_head);
    SET(s->it[i].prev, NIL);
    SET(s->it[i].next, h);
    if (h != NIL)
        SET(s->it[h].prev, i);
    else
        SET(s->g->lru_tail, i);
    SET(s->g->lru_head, i);
}

static void cache_get(struct elide_state *s, struct elide_op *o)
{
    uint32_t i = chain_find(s, o->key);
    if (i == NIL)
        return;
    uint64_t v0 = GET(s->it[i].val[0]);
    for (uint64_t w = 1; w < VAL_WORDS; w++)
        if (GET(s->it[i].val[w]) != v0 + w * VAL_STEP)
            o->torn = true;
    o->sink = v0;
    if (GET(s->g->lru_head) != i) {
        lru_unlink(s, i);
        lru_push_head(s, i);
    }
    o->hit = true;
}

static void cache_set(struct elide_state *s, struct elide_op *o)
{
    struct elide_globals *g = s->g;
    uint32_t old = chain_find(s, o->key);
    if (old != NIL) {
        /* Replace: the old item goes back to the free list first, so the
         * new one reuses it rather than evicting another key. */
        if (!chain_unlink(s, old))
            o->broken = true;
        lru_unlink(s, old);
        SET(s->it[old].prev, NIL);
        SET(s->it[old].next, GET(g->free_head));
        SET(g->free_head, old);
        SET(g->nitems, GET(g->nitems) - 1);
        o->replaced = true;
    }
    uint32_t i = GET(g->free_head);
    if (i != NIL) {
        SET(g->free_head, GET(s->it[i].next));
    } else {
        i = GET(g->lru_tail);
        if (i == NIL) {
            o->broken = true; /* nothing free and nothing to evict */
            return;
        }
        if (!chain_unlink(s, i))
            o->broken = true;
        lru_unlink(s, i);
        SET(g->nitems, GET(g->nitems) - 1);
        o->evicted = true;
    }
    SET(s->it[i].key, o->key);
    for (uint64_t w = 0; w < VAL_WORDS; w++)
        SET(s->it[i].val[w], o->val + w * VAL_STEP);
    _Atomic uint32_t *head = &s->bucket[bucket_of(s, o->key)];
    SET(s->it[i].hnext, GET(*head));
    SET(*head, i);
    lru_push_head(s, i);
    SET(g->nitems, GET(g->nitems) + 1);
}

/* The critical section (also run by baton_execute). */
static void elide_op_run(void *p)
{
    struct elide_op *o = p;
    struct elide_state *s = o->s;
    o->hit = o->replaced = o->evicted = o->torn = o->broken = false;
    if (o->get)
        cache_get(s, o);
    else
        cache_set(s, o);
    if (!o->count)
        return;
    if (s->p->stats == STATS_SHARED)
        SET(s->g->stats, GET(s->g->stats) + 1); /* a plain increment, as a program writes it */
    else if (s->p->stats == STATS_PERCPU)
        baton_counter_add(s->counter, 1);
}

/* --- the workload ------------------------------------------------------------------ */

static void elide_teardown(void *state)
{
    struct elide_state *s = state;
    if (s->counter)
        baton_counter_free(s->counter);
    free(s->it);
    free(s->bucket);
    free(s->g);
    free(s->t);
    free(s->mark);
    free(s);
}

static void *elide_setup(const void *params, bench_lock_t *lock, int threads, char *err, size_t errlen)
{
    const struct elide_params *p = params;
    struct elide_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->p = p;
    s->lock = lock;
    s->pool = p->items;
    s->nbuckets = p->buckets;
    s->it = aligned_alloc(64, (size_t)p->items * sizeof *s->it);
    s->bucket = calloc(p->buckets, sizeof *s->bucket);
    s->g = aligned_alloc(BENCH_LINE, sizeof *s->g);
    s->t = aligned_alloc(BENCH_LINE, (size_t)threads * sizeof *s->t);
    s->mark = calloc(p->items, 1);
    s->counter = p->stats == STATS_PERCPU ? baton_counter_new() : NULL;
    if (!s->it || !s->bucket || !s->g || !s->t || !s->mark || (p->stats == STATS_PERCPU && !s->counter)) {
        snprintf(err, errlen, "out of memory");
        elide_teardown(s);
        return NULL;
    }
    memset(s->t, 0, (size_t)threads * sizeof *s->t);
    memset(s->g, 0, sizeof *s->g);
    /* Relaxed: nothing runs yet; thread creation publishes all of it. */
    for (uint32_t b = 0; b < p->buckets; b++)
        SET(s->bucket[b], NIL);
    for (uint32_t i = 0; i < p->items; i++) {
        SET(s->it[i].key, 0);
        for (int w = 0; w < VAL_WORDS; w++)
            SET(s->it[i].val[w], 0);
        SET(s->it[i].hnext, NIL);
        SET(s->it[i].prev, NIL);
        SET(s->it[i].next, i + 1 < p->items ? i + 1 : NIL);
    }
    SET(s->g->lru_head, NIL);
    SET(s->g->lru_tail, NIL);
    SET(s->g->free_head, 0);
    SET(s->g->nitems, 0);
    SET(s->g->stats, 0);
    /* Half the pool filled, so that the runs soon evict. */
    struct elide_op o = {.s = s, .get = false, .count = false};
    uint32_t x = 0x2545f491u;
    for (uint32_t n = 0; n < p->items / 2; n++) {
        o.key = bench_rand(&x) % p->keys;
        o.val = bench_rand(&x);
        elide_op_run(&o);
    }
    s->prefilled = GET(s->g->nitems);
    bool lockable = lock->peer != NULL || (lock->caps & BATON_CAP_LOCK);
    s->path = lockable ? PATH_LOCK : PATH_EXECUTE;
    return s;
}

static uint64_t elide_thread_main(void *state, int index, const _Atomic int *stop)
{
    struct elide_state *s = state;
    struct elide_thread *me = &s->t[index];
    const uint32_t mix = (uint32_t)s->p->mix_get, nkeys = s->p->keys;
    const int path = s->p->inject_fault && index == 0 ? PATH_DIRECT : s->path;
    bench_lock_t *lock = s->lock;
    uint32_t x = 0x85ebca6bu * (uint32_t)(index + 1) + 1; /* per-thread xorshift */
    struct elide_op o = {.s = s, .count = true};
    uint64_t ops = 0;
    do {
        uint32_t r = bench_rand(&x);
        o.get = r % 100 < mix;
        o.key = bench_rand(&x) % nkeys;
        o.val = (uint64_t)r << 32 | bench_rand(&x);
        int rc = 0;
        switch (path) {
        case PATH_DIRECT: elide_op_run(&o); break;
        case PATH_LOCK:
            bench_lock_acquire(lock);
            elide_op_run(&o);
            bench_lock_release(lock);
            break;
        default: rc = bench_execute(lock, elide_op_run, &o); break;
        }
        if (rc != 0) {
            me->error = rc;
            break;
        }
        if (o.get) {
            me->gets++;
            me->hits += o.hit;
        } else {
            me->sets++;
            me->replaces += o.replaced;
            me->inserts += !o.replaced;
            me->evictions += o.evicted;
        }
        me->torn += o.torn;
        me->broken += o.broken;
        me->sink += o.sink;
        ops++;
        /* Relaxed: the flag only ends the loop; the join orders the rest. */
    } while (!atomic_load_explicit(stop, memory_order_relaxed));
    return ops;
}

static void elide_extras(void *state, bench_lock_t *lock, bench_result_t *r)
{
    struct elide_state *s = state;
    bench_extras_ops_per_session(state, lock, r);
    uint64_t gets = 0, hits = 0, evictions = 0;
    for (int i = 0; i < r->threads; i++) {
        gets += s->t[i].gets;
        hits += s->t[i].hits;
        evictions += s->t[i].evictions;
    }
    if (gets)
        r->extra[EXTRA_HIT_RATE] = (double)hits / (double)gets;
    if (r->ops)
        r->extra[EXTRA_EVICT] = (double)evictions / (double)r->ops;
    /* Elision counters: from the elide kind (even all zero: that is what it
     * did), or from any lock whose counters show transactions. */
    baton_stats_t st;
    struct elide_slab *slab = s->p->slab;
    if (!slab || !lock->baton || baton_lock_stats(lock->baton, &st) != 0)
        return;
    if (strcmp(baton_lock_kind(lock->baton)->name, "elide") != 0 &&
        (st.tx_attempts | st.tx_skipped | st.tx_fallbacks) == 0)
        return;
    /* Relaxed: children run one at a time, and the parent reads the slot
     * only after this child's result came through the pipe and it exited. */
    uint32_t slot = atomic_fetch_add_explicit(&slab->next, 1, memory_order_relaxed);
    if (slot >= slab->cap)
        return;
    struct elide_tx *tx = &slab->tx[slot];
    memset(tx, 0, sizeof *tx);
    tx->attempts = st.tx_attempts;
    tx->commits = st.tx_commits;
    for (unsigned c = 0; c < BATON_ABORT_CAUSES && c < sizeof st.tx_aborts / sizeof st.tx_aborts[0]; c++)
        tx->aborts[c] = st.tx_aborts[c];
    tx->fallbacks = st.tx_fallbacks;
    tx->skipped = st.tx_skipped;
    r->extra[EXTRA_TX_SLOT] = slot;
}

/* The final walk, under the lock (after every operation has run). */
static void elide_final_op(void *p)
{
    struct elide_state *s = p;
    const uint32_t pool = s->pool;
    uint8_t *mark = s->mark; /* 1: in a chain, 2: on the LRU list, 4: free */
    memset(mark, 0, pool);
    s->in_chains = s->on_lru = s->on_free = s->unlinked = 0;
    s->wrong_chain = s->twice = s->lru_bad_prev = s->overlap = 0;
    for (uint32_t b = 0; b < s->nbuckets; b++) {
        uint32_t i = GET(s->bucket[b]);
        for (uint32_t steps = 0; i != NIL && steps < pool; steps++) {
            if (mark[i] & 1) {
                s->twice++; /* in two chains, or a cycle */
                break;
            }
            mark[i] |= 1;
            s->in_chains++;
            if (bucket_of(s, GET(s->it[i].key)) != b)
                s->wrong_chain++;
            i = GET(s->it[i].hnext);
        }
    }
    uint32_t prev = NIL, i = GET(s->g->lru_head);
    for (uint32_t steps = 0; i != NIL && steps < pool; steps++) {
        if (mark[i] & 2) {
            s->twice++; /* a cycle */
            break;
        }
        mark[i] |= 2;
        s->on_lru++;
        if (GET(s->it[i].prev) != prev)
            s->lru_bad_prev++;
        prev = i;
        i = GET(s->it[i].next);
    }
    s->lru_bad_tail = GET(s->g->lru_tail) != prev;
    i = GET(s->g->free_head);
    for (uint32_t steps = 0; i != NIL && steps < pool; steps++) {
        if (mark[i] & 4) {
            s->twice++;
            break;
        }
        mark[i] |= 4;
        s->on_free++;
        i = GET(s->it[i].next);
    }
    for (uint32_t k = 0; k < pool; k++) {
        if (mark[k] == 0)
            s->unlinked++; /* neither linked nor free: lost */
        else if ((mark[k] & 4) && (mark[k] & 3))
            s->overlap++; /* free and linked */
        else if ((mark[k] & 3) != 0 && (mark[k] & 3) != 3)
            s->overlap++; /* in a chain but not on the LRU list, or the reverse */
    }
    s->counted = GET(s->g->nitems);
    s->counter_end = s->p->stats == STATS_SHARED   ? GET(s->g->stats)
                     : s->p->stats == STATS_PERCPU ? baton_counter_read(s->counter)
                                                   : 0;
}

static int elide_verify(void *state, const uint64_t *ops, int threads, bench_result_t *r)
{
    struct elide_state *s = state;
    uint64_t total = 0, inserts = 0, evictions = 0, torn = 0, broken = 0;
    for (int i = 0; i < threads; i++) {
        const struct elide_thread *t = &s->t[i];
        if (t->error) {
            snprintf(r->message, sizeof r->message, "thread %d: a critical section failed: %s", i,
                     strerror(t->error));
            return 1;
        }
        if (t->gets + t->sets != ops[i]) {
            snprintf(r->message, sizeof r->message, "thread %d counted its operations wrong", i);
            return 1;
        }
        total += ops[i];
        inserts += t->inserts;
        evictions += t->evictions;
        torn += t->torn;
        broken += t->broken;
    }
    int rc = bench_execute(s->lock, elide_final_op, s);
    if (rc != 0) {
        snprintf(r->message, sizeof r->message, "the final check could not run: %s", strerror(rc));
        return 1;
    }
    const unsigned long long implied = s->prefilled + inserts - evictions;
    if (torn) {
        snprintf(r->message, sizeof r->message,
                 "table: %llu gets read a torn value (a set overlapped them): exclusion broken",
                 (unsigned long long)torn);
        return 1;
    }
    if (broken) {
        snprintf(r->message, sizeof r->message,
                 "table: %llu operations found it inconsistent (an item missing from its chain, "
                 "nothing to evict): exclusion broken",
                 (unsigned long long)broken);
        return 1;
    }
    if (s->twice || s->wrong_chain || s->lru_bad_prev || s->lru_bad_tail || s->overlap || s->unlinked) {
        snprintf(r->message, sizeof r->message,
                 "table: %llu items linked twice or in a cycle, %llu in the wrong chain, %llu bad "
                 "LRU prev links, LRU tail %s, %llu on one list only, %llu lost: exclusion broken",
                 (unsigned long long)s->twice, (unsigned long long)s->wrong_chain,
                 (unsigned long long)s->lru_bad_prev, s->lru_bad_tail ? "wrong" : "right",
                 (unsigned long long)s->overlap, (unsigned long long)s->unlinked);
        return 1;
    }
    if (s->in_chains != s->on_lru || s->in_chains != s->pool - s->on_free || s->in_chains != s->counted ||
        s->in_chains != implied) {
        snprintf(r->message, sizeof r->message,
                 "table: %llu items in chains, %llu on the LRU list, %llu allocated (pool less "
                 "free list), %llu counted, %llu implied by the operations: exclusion broken",
                 (unsigned long long)s->in_chains, (unsigned long long)s->on_lru,
                 (unsigned long long)(s->pool - s->on_free), (unsigned long long)s->counted, implied);
        return 1;
    }
    if (s->p->stats != STATS_OFF && s->counter_end != total) {
        snprintf(r->message, sizeof r->message,
                 "stats counter (%s) holds %llu after %llu operations: exclusion broken",
                 elide_stats_names[s->p->stats], (unsigned long long)s->counter_end,
                 (unsigned long long)total);
        return 1;
    }
    return 0;
}

const bench_workload_t elide_workload = {
    .name = "elide",
    .setup = elide_setup,
    .thread_main = elide_thread_main,
    .extras = elide_extras,
    .verify = elide_verify,
    .teardown = elide_teardown,
};

/* --- what the parent keeps per record ------------------------------------------ */

struct elide_info {
    int stats;
    bool have_tx; /* the lock reported elision counters */
    struct elide_tx tx;
    int ref;        /* index in the records of the EDP reference, or -1 */
    double edp;     /* CPU-s per operation x s per operation; < 0: none */
    double edp_rel; /* < 0: no reference */
};

static double per_op(uint64_t v, const bench_record_t *r)
{
    return r->median.ops ? (double)v / (double)r->median.ops : 0.0;
}

/* --- the report ------------------------------------------------------------------ */

static void fmt_num(char *buf, size_t n, double v)
{
    if (v >= 100)
        snprintf(buf, n, "%.0f", v);
    else if (v >= 0.01 || v == 0)
        snprintf(buf, n, "%.2f", v);
    else
        snprintf(buf, n, "%.1e", v);
}

static void elide_report_cell(bench_record_t *cell, const struct elide_info *info, int n, const char *title)
{
    bench_record_t **order = report_rank(cell, n);
    if (!order)
        return;
    int width = 26;
    for (int i = 0; i < n; i++)
        if ((int)strlen(cell[i].lock) > width)
            width = (int)strlen(cell[i].lock);
    printf("\n%s\n", title);
    printf("%4s  %-*s %8s %8s %9s %7s %6s %9s %10s %7s %8s %9s %8s  %s\n", "rank", width, "lock", "Mops/s",
           "fairness", "CPU-s/Mop", "EDP rel", "%limit", "max wait", "p99.9 wait", "commit", "abort/op",
           "fallbk/op", "skip/op", "status");
    for (int r = 0; r < n; r++) {
        const bench_record_t *rec = order[r];
        const struct elide_info *in = &info[rec - cell];
        bool ok = rec->median.status == BENCH_OK;
        double rate = record_rate(rec);
        char mops[32], cpu[32] = "-", edp[32] = "-", lim[32] = "-";
        char commit[32] = "-", ab[32] = "-", fb[32] = "-", sk[32] = "-", wmax[32], w999[32];
        fmt_num(mops, sizeof mops, rate / 1e6);
        report_wait_us(wmax, sizeof wmax, rec->median.wait_max_ns);
        report_wait_us(w999, sizeof w999, rec->median.wait_p999_ns);
        if (rec->median.ops)
            snprintf(cpu, sizeof cpu, "%.3g", rec->median.cpu_s / ((double)rec->median.ops / 1e6));
        if (ok && in->edp_rel >= 0)
            snprintf(edp, sizeof edp, "%.2f", in->edp_rel);
        if (rec->limit_ops_per_s > 0 && rate > 0)
            snprintf(lim, sizeof lim, "%.0f%%", 100.0 * rate / rec->limit_ops_per_s);
        char causes[256] = "";
        if (ok && in->have_tx) {
            uint64_t aborts = 0;
            for (unsigned c = 0; c < BATON_ABORT_CAUSES; c++) {
                aborts += in->tx.aborts[c];
                if (!in->tx.aborts[c])
                    continue;
                size_t used = strlen(causes);
                const char *name = baton_abort_cause_name(c);
                snprintf(causes + used, sizeof causes - used, "%s%s %.3g",
                         used ? ", " : "  aborts/op: ", name ? name : "?", per_op(in->tx.aborts[c], rec));
            }
            snprintf(commit, sizeof commit, "%.1f%%", 100.0 * per_op(in->tx.commits, rec));
            fmt_num(ab, sizeof ab, per_op(aborts, rec));
            fmt_num(fb, sizeof fb, per_op(in->tx.fallbacks, rec));
            fmt_num(sk, sizeof sk, per_op(in->tx.skipped, rec));
        }
        printf("%4d  %-*s %8s %8.2f %9s %7s %6s %9s %10s %7s %8s %9s %8s  %s%s%s%s\n", r + 1, width,
               rec->lock, mops, record_fairness(rec), cpu, edp, lim, wmax, w999, commit, ab, fb, sk,
               report_status(rec), rec->median.message[0] ? ": " : "", rec->median.message, causes);
    }
    free(order);
}

/* The records of the JSON and what elide adds to them. */
struct elide_json_ctx {
    const bench_record_t *recs;
    const struct elide_info *info;
};

/* One record of the JSON (a report_record_fn): every figure of the shared
 * record (report_json_record), then the statistics mode, EDP and the
 * elision counters.  One record a line: the parent of a glibc elision peer
 * reads them back line by line (elide_glibc.c). */
static void elide_json_record(FILE *f, int i, const void *ctx)
{
    const struct elide_json_ctx *c = ctx;
    const bench_record_t *r = &c->recs[i];
    const struct elide_info *in = &c->info[i];
    bool ok = r->median.status == BENCH_OK;
    report_json_record(f, i, c->recs);
    fprintf(f, ", \"stats\": \"%s\", \"mops\": %.6f", elide_stats_names[in->stats], record_rate(r) / 1e6);
    if (ok && in->edp >= 0)
        fprintf(f, ", \"edp\": %.6e", in->edp);
    else
        fprintf(f, ", \"edp\": null");
    if (ok && in->edp_rel >= 0 && in->ref >= 0) {
        fprintf(f, ", \"edp_rel\": %.4f, \"edp_ref\": ", in->edp_rel);
        report_json_string(f, c->recs[in->ref].lock);
    } else {
        fprintf(f, ", \"edp_rel\": null, \"edp_ref\": null");
    }
    /* Elision counters, per operation (commit_rate too), for the locks
     * that keep them; null for the others. */
    if (ok && in->have_tx) {
        fprintf(f, ", \"commit_rate\": %.6f, \"aborts\": {", per_op(in->tx.commits, r));
        for (unsigned a = 0; a < BATON_ABORT_CAUSES; a++) {
            const char *name = baton_abort_cause_name(a);
            fprintf(f, "%s\"%s\": %.6f", a ? ", " : "", name ? name : "?", per_op(in->tx.aborts[a], r));
        }
        fprintf(f, "}, \"fallbacks\": %.6f, \"skipped\": %.6f", per_op(in->tx.fallbacks, r),
                per_op(in->tx.skipped, r));
        fprintf(f, ", \"tx_attempts\": %llu, \"tx_commits\": %llu", (unsigned long long)in->tx.attempts,
                (unsigned long long)in->tx.commits);
    } else {
        fprintf(f, ", \"commit_rate\": null, \"aborts\": null, \"fallbacks\": null, "
                   "\"skipped\": null");
    }
}

/* --- the command ------------------------------------------------------------ */


static const char elide_default_locks[] =
    "ttas,elide(ttas),relay,elide(relay),mcs:spinpark,elide(mcs:spinpark),pthread,elide(pthread)," GLIBC_PEER;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton bench elide [options]\n"
            "  A memcached-like cache under one global lock: a chained hash table, an LRU list and\n"
            "  a fixed pool of items with a free list (the LRU tail is evicted when it is empty).\n"
            "  get: look up, bump to the LRU head on a hit (a short section); set: unlink the old\n"
            "  item if any, allocate (evicting), write, link (a long one).  Built to compare lock\n"
            "  elision, elide(<kind>), with the plain kinds; every run verifies the table.\n"
            "  --locks LIST         lock specs and peers, comma-separated, or all|kinds|peers|rwpeers\n"
            "                       (default: %s;\n"
            "                       those not in this build are skipped with a note).  %s is\n"
            "                       the pthread kind run in a subprocess with\n"
            "                       GLIBC_TUNABLES=%s (glibc's own elision)\n"
            "  --threads LIST       thread counts (default 1,2,8,16)\n"
            "  --mix LIST           percent of operations that are gets (default 90,60,30)\n"
            "  --stats LIST         off|shared|percpu: a statistics counter bumped in every critical\n"
            "                       section, one plain global word (shared) or a baton_counter_t\n"
            "                       (percpu); checked against the operations (default off,shared)\n"
            "  --buckets N          hash table heads (default 4096)\n"
            "  --keys N             key space (default 16384)\n"
            "  --items N            item pool; smaller than the key space, so sets evict\n"
            "                       (default 8192)\n"
            "  --duration SEC       length of one run (default 0.3)\n"
            "  --repeat R           runs per cell; the median is reported (default 3)\n"
            "  --pin POLICY         compact|spread|none (default compact)\n"
            "  --json FILE          write every result as JSON (commit_rate, aborts, fallbacks and\n"
            "                       skipped are per operation; null for locks that do not elide)\n"
            "  --inject-fault       thread 0 runs its operations without the lock (tests that\n"
            "                       verification fails)\n"
            "  --as-peer            internal: the run of %s (no reference rates)\n" BENCH_WAIT_USAGE
            "EDP (CPU-s per op x s per op) is relative to the reference lock of the same cell:\n"
            "elide(X) to X, %s to pthread, every other lock to the first plain\n"
            "(non-elided) lock of the list; where that is absent, to the first plain lock.\n",
            elide_default_locks, GLIBC_PEER, GLIBC_TUNABLE, GLIBC_PEER, GLIBC_PEER);
}

/* Baton's elide(<kind>), parsed: false for a peer's name or any other kind. */
static bool parse_elide(const char *spec, baton_spec_t *s)
{
    return baton_lockspec_parse(spec, s) == 0 && s->node[0].kind == &baton_kind_elide;
}

static bool is_elided(const char *spec)
{
    baton_spec_t s;
    return !strcmp(spec, GLIBC_PEER) || parse_elide(spec, &s);
}

/* The plain lock an elided one wraps: X of elide(X) (canonical), pthread
 * for the glibc elision peer; "" for the others. */
static void plain_of(const char *spec, char *out, size_t size)
{
    out[0] = '\0';
    baton_spec_t s, inner;
    if (!strcmp(spec, GLIBC_PEER)) {
        snprintf(out, size, "pthread");
    } else if (parse_elide(spec, &s)) {
        baton_lockspec_inner(&s, &inner);
        if (baton_lockspec_print(&inner, out, size) >= size)
            out[0] = '\0'; /* cut short: it names no lock of the list */
    }
}

/* Each lock's EDP reference: an index into specs, or -1. */
static void edp_refs(char specs[][BENCH_SPEC_MAX], int n, int *ref)
{
    int first_plain = -1;
    for (int k = 0; k < n && first_plain < 0; k++)
        if (!is_elided(specs[k]))
            first_plain = k;
    for (int k = 0; k < n; k++) {
        char plain[BENCH_SPEC_MAX];
        plain_of(specs[k], plain, sizeof plain);
        ref[k] = first_plain;
        for (int j = 0; plain[0] && j < n; j++)
            if (j != k && !strcmp(specs[j], plain))
                ref[k] = j;
    }
}

/* Measure the single-thread rate of (mix, stats), unless known. */
static void elide_ref_rate(bench_refs_t *refs, const struct elide_params *proto, const bench_cfg_t *base,
                           int repeat)
{
    const int key[BENCH_REF_KEYS] = {proto->mix_get, proto->stats, [BENCH_REF_L] = 0};
    if (bench_ref_get(refs, key) >= 0)
        return;
    struct elide_params p = *proto;
    p.inject_fault = false;
    p.slab = NULL;
    bench_ref_put(refs, key, bench_single_rate(&elide_workload, &p, base, repeat));
}

/* Expand a lock list and take the glibc elision peer out of it (this
 * process does not open it: a subprocess runs it), joining the rest back
 * into out.  Returns whether the peer was named, or -1 after a message. */
static int split_glibc_peer(const char *arg, char *out, size_t size, int *nrest)
{
    char(*specs)[BENCH_SPEC_MAX] = calloc(BENCH_MAX_LOCKS, sizeof *specs);
    char err[512];
    if (!specs) {
        fprintf(stderr, "baton bench elide: out of memory\n");
        return -1;
    }
    int n = bench_expand_locks(arg, specs, BENCH_MAX_LOCKS, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "baton bench elide: %s\n", err);
        free(specs);
        return -1;
    }
    int peer = 0;
    size_t used = 0;
    out[0] = '\0';
    *nrest = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(specs[i], GLIBC_PEER)) {
            peer = 1;
            continue;
        }
        int w = snprintf(out + used, size - used, "%s%s", used ? "," : "", specs[i]);
        if (w > 0 && (size_t)w < size - used)
            used += (size_t)w;
        (*nrest)++;
    }
    free(specs);
    return peer;
}

static const char *path_name(const bench_lock_t *l)
{
    return l->peer != NULL || (l->caps & BATON_CAP_LOCK) ? "lock/unlock" : "baton_execute";
}

/* Parse "off,shared" into STATS_* (returns the count, -1 on error). */
static int parse_stats(const char *s, int *out, int max)
{
    int n = 0;
    while (*s) {
        size_t len = strcspn(s, ",");
        int mode = -1;
        for (int m = 0; m < STATS_MODES; m++)
            if (strlen(elide_stats_names[m]) == len && !strncmp(s, elide_stats_names[m], len))
                mode = m;
        if (mode < 0 || n >= max)
            return -1;
        out[n++] = mode;
        s += len;
        if (*s == ',')
            s++;
    }
    return n;
}

static void join_ints(char *buf, size_t size, const int *v, int n)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        baton_join(buf, size, ",", "%d", v[i]);
}

/* bench elide's own options. */
struct elide_opts {
    int M[BENCH_LIST_MAX], nM, S[BENCH_LIST_MAX], nS;
    long buckets, keys, items;
    bool as_peer;
};

static int elide_option(int c, const char *arg, void *ctx)
{
    struct elide_opts *eo = ctx;
    switch (c) {
    case 'm':
        if ((eo->nM = bench_parse_ints(arg, eo->M, BENCH_LIST_MAX)) <= 0)
            return 1;
        for (int i = 0; i < eo->nM; i++)
            if (eo->M[i] > 100)
                return 1;
        return 0;
    case 's': return (eo->nS = parse_stats(arg, eo->S, BENCH_LIST_MAX)) <= 0;
    case 'B': eo->buckets = atol(arg); return eo->buckets < 1 || eo->buckets > (long)ITEMS_MAX;
    case 'K': eo->keys = atol(arg); return eo->keys < 1 || eo->keys > (long)KEYS_MAX;
    case 'I': eo->items = atol(arg); return eo->items < 2 || eo->items > (long)ITEMS_MAX;
    case 'P': eo->as_peer = true; return 0;
    default: return 1;
    }
}

int cmd_bench_elide(int argc, char **argv)
{
    bench_opts_t o = {
        .pin = "compact", .threads = {1, 2, 8, 16}, .nthreads = 4, .duration = 0.3, .repeat = 3};
    struct elide_opts eo = {.M = {90, 60, 30},
                            .nM = 3,
                            .S = {STATS_OFF, STATS_SHARED},
                            .nS = 2,
                            .buckets = ELIDE_BUCKETS,
                            .keys = ELIDE_KEYS,
                            .items = ELIDE_ITEMS};
    static const cli_opt_t opts[] = {BENCH_OPT_LOCKS,
                                     BENCH_OPT_THREADS,
                                     {"mix", CLI_VALUE, 0, 'm'},
                                     {"stats", CLI_VALUE, 0, 's'},
                                     {"buckets", CLI_VALUE, 0, 'B'},
                                     {"keys", CLI_VALUE, 0, 'K'},
                                     {"items", CLI_VALUE, 0, 'I'},
                                     BENCH_OPT_DURATION,
                                     BENCH_OPT_REPEAT,
                                     BENCH_OPT_PIN,
                                     BENCH_OPT_JSON,
                                     BENCH_OPT_FAULT,
                                     {"as-peer", CLI_FLAG, 0, 'P'},
                                     BENCH_OPT_END};
    const int prc = bench_getopt("elide", argc, argv, opts, &o, elide_option, &eo, usage);
    if (prc >= 0)
        return prc;
    const int *M = eo.M, nM = eo.nM, *S = eo.S, nS = eo.nS;
    const long buckets = eo.buckets, keys = eo.keys, items = eo.items;
    const bool as_peer = eo.as_peer;

    /* The glibc elision peer runs in a subprocess: out of the list this
     * process opens, and measured after the others in each cell. */
    static char plain_locks[BENCH_MAX_LOCKS * (BENCH_SPEC_MAX + 1)];
    int nplain = 0;
    int peer =
        split_glibc_peer(o.locks ? o.locks : elide_default_locks, plain_locks, sizeof plain_locks, &nplain);
    if (peer < 0)
        return 2;
    if (nplain == 0) {
        fprintf(stderr,
                "baton bench elide: %s runs beside other locks: name at least one "
                "(e.g. pthread)\n",
                GLIBC_PEER);
        return 2;
    }
    if (as_peer)
        peer = 0;

    baton_htm_info_t htm;
    baton_htm_info(&htm);
    char mixes[160], stats_list[64] = "", params[512], tail[512];
    join_ints(mixes, sizeof mixes, M, nM);
    for (int i = 0; i < nS; i++)
        baton_join(stats_list, sizeof stats_list, ",", "%s", elide_stats_names[S[i]]);
    snprintf(params, sizeof params, "; get%% %s; stats %s; %ld buckets, %ld keys, %ld items", mixes,
             stats_list, buckets, keys, items);
    snprintf(tail, sizeof tail, "\nRTM: %s (%s)", htm.state ? htm.state : "?", htm.why ? htm.why : "");
    const bench_cmd_t cmd = {.name = "elide",
                             .locks = o.locks ? plain_locks : NULL,
                             .default_locks = plain_locks,
                             .threads = o.threads,
                             .nthreads = o.nthreads,
                             .duration_s = o.duration,
                             .repeat = o.repeat,
                             .pin = o.pin,
                             .header_params = params,
                             .header_tail = tail};
    bench_setup_t b;
    int rc = bench_cmd_setup(&cmd, &b);
    if (rc != 0)
        return rc;
    const int nrun = b.nspecs, nall = nrun + peer, cores = b.cores;

    /* Every lock's name in a cell (the peer last), its EDP reference, and
     * how its sections reach it. */
    char(*names)[BENCH_SPEC_MAX] = calloc((size_t)nall, sizeof *names);
    int *ref = calloc((size_t)nall, sizeof *ref);
    bench_record_t *recs = calloc((size_t)nM * (size_t)nS * (size_t)o.nthreads * (size_t)nall, sizeof *recs);
    struct elide_info *info =
        calloc((size_t)nM * (size_t)nS * (size_t)o.nthreads * (size_t)nall, sizeof *info);
    bench_result_t *runs = calloc((size_t)nrun * (size_t)o.repeat, sizeof *runs);
    if (!names || !ref || !recs || !info || !runs) {
        fprintf(stderr, "baton bench elide: out of memory\n");
        free(names);
        free(ref);
        free(recs);
        free(info);
        free(runs);
        bench_cmd_finish(&b, NULL, NULL, NULL, 0, 0);
        return 2;
    }
    for (int k = 0; k < nrun; k++)
        memcpy(names[k], b.specs[k], BENCH_SPEC_MAX);
    if (peer)
        snprintf(names[nrun], BENCH_SPEC_MAX, "%s", GLIBC_PEER);
    edp_refs(names, nall, ref);
    for (int k = 0; k < nall; k++) {
        bench_lock_t l;
        char err[512];
        const char *how = "pthread in a subprocess, GLIBC_TUNABLES=" GLIBC_TUNABLE;
        if (k < nrun) {
            if (bench_lock_open(names[k], &l, err, sizeof err) != 0)
                continue;
            how = path_name(&l);
        }
        printf("  %-24s %s; EDP relative to %s\n", names[k], how, ref[k] >= 0 ? names[ref[k]] : "-");
        if (k < nrun)
            bench_lock_close(&l);
    }

    /* The elision counters come back from the children through this. */
    size_t slab_cap = (size_t)nrun * (size_t)o.repeat + 4;
    size_t slab_size = sizeof(struct elide_slab) + slab_cap * sizeof(struct elide_tx);
    struct elide_slab *slab =
        mmap(NULL, slab_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (slab == MAP_FAILED) {
        printf("note: no shared page for the elision counters (%s): not reported\n", strerror(errno));
        slab = NULL;
    } else {
        slab->cap = (uint32_t)slab_cap;
    }

    const struct elide_cli cli = {o.duration,     o.repeat,        o.pin,  (uint32_t)buckets,
                                  (uint32_t)keys, (uint32_t)items, o.fault};
    bench_refs_t refs = {0};
    int nrecs = 0, failed = 0;
    bench_progress_begin(nM * nS * o.nthreads);
    for (int im = 0; im < nM; im++)
        for (int is = 0; is < nS; is++) {
            struct elide_params ep = {M[im],   S[is], (uint32_t)buckets, (uint32_t)keys, (uint32_t)items,
                                      o.fault, slab};
            const int key[BENCH_REF_KEYS] = {M[im], S[is], [BENCH_REF_L] = 0};
            if (!as_peer)
                elide_ref_rate(&refs, &ep, &b.base, o.repeat);
            for (int it = 0; it < o.nthreads; it++) {
                bench_record_t *cell = &recs[nrecs];
                struct elide_info *ci = &info[nrecs];
                bench_cfg_t cfg = b.base;
                cfg.threads = o.threads[it];
                char label[64];
                snprintf(label, sizeof label, "elide get=%d%% stats=%s", M[im], elide_stats_names[S[is]]);
                if (slab) /* Relaxed: no child runs now; fork orders it before the next. */
                    atomic_store_explicit(&slab->next, 0, memory_order_relaxed);
                bench_cell_run(&elide_workload, &ep, "elide", b.specs, nrun, &cfg, o.repeat, runs, cell,
                               label);
                if (peer) {
                    bench_progress_step(0, 1, GLIBC_PEER " (subprocess)");
                    elide_run_glibc_peer(&cli, o.threads[it], M[im], S[is], &cell[nrun]);
                    cell[nrun].pthread_ops_per_s = cell[0].pthread_ops_per_s;
                    bench_progress_clear();
                }
                for (int k = 0; k < nall; k++) {
                    bench_record_t *rec = &cell[k];
                    struct elide_info *in = &ci[k];
                    rec->nparams = 1;
                    rec->param_names[0] = "mix_get";
                    rec->params[0] = M[im];
                    rec->extra_keys[EXTRA_SESSION] = "ops_per_session";
                    rec->extra_keys[EXTRA_HIT_RATE] = "hit_rate";
                    rec->extra_keys[EXTRA_EVICT] = "evictions_per_op";
                    in->stats = S[is];
                    double slot = rec->median.extra[EXTRA_TX_SLOT];
                    if (k < nrun && slab && rec->median.status == BENCH_OK && slot >= 0 && slot < slab->cap) {
                        in->have_tx = true;
                        in->tx = slab->tx[(uint32_t)slot];
                    }
                    const bench_result_t *md = &rec->median;
                    in->edp = md->status == BENCH_OK && md->ops
                                  ? md->cpu_s / (double)md->ops * (md->seconds / (double)md->ops)
                                  : -1;
                }
                for (int k = 0; k < nall; k++) {
                    int j = ref[k];
                    ci[k].ref = j >= 0 ? nrecs + j : -1;
                    ci[k].edp_rel = j >= 0 && ci[k].edp >= 0 && ci[j].edp > 0 ? ci[k].edp / ci[j].edp : -1;
                }
                /* Sections run one at a time under a plain lock: none passes
                 * the single-thread rate.  Elision that commits sections in
                 * parallel may. */
                double limit = as_peer ? 0 : bench_cell_limit(&refs, key, cell, nall, o.threads[it], cores);
                failed += bench_cell_finish(cell, nall, limit);
                char title[256];
                snprintf(title, sizeof title,
                         "elide get=%d%% stats=%s, %d thread%s on %d CPUs; single-thread limit %.2f "
                         "Mops/s (elided sections in parallel may pass it)",
                         M[im], elide_stats_names[S[is]], o.threads[it], o.threads[it] > 1 ? "s" : "", cores,
                         limit / 1e6);
                elide_report_cell(cell, ci, nall, title);
                fflush(stdout);
                nrecs += nall;
            }
        }

    /* The header's members: the options, and what the library's RTM probe
     * decided. */
    char *extra = NULL;
    size_t extra_len = 0;
    FILE *xf = o.json ? open_memstream(&extra, &extra_len) : NULL;
    if (xf) {
        fprintf(xf,
                "\"pin\": \"%s\", \"repeat\": %d, \"buckets\": %ld, \"keys\": %ld, \"items\": %ld, "
                "\"glibc_elision\": \"GLIBC_TUNABLES=%s\", \"rtm\": {\"usable\": %s, \"state\": ",
                o.pin, o.repeat, buckets, keys, items, GLIBC_TUNABLE, htm.usable ? "true" : "false");
        report_json_string(xf, htm.state ? htm.state : "");
        fprintf(xf, ", \"why\": ");
        report_json_string(xf, htm.why ? htm.why : "");
        fprintf(xf, "}");
        if (fclose(xf) != 0) {
            free(extra);
            extra = NULL;
        }
    }
    const struct elide_json_ctx jctx = {recs, info};
    if (o.json && !extra) {
        fprintf(stderr, "baton bench elide: cannot write %s: out of memory\n", o.json);
        failed++;
    }
    rc = bench_cmd_finish_json(&b, extra ? o.json : NULL, extra, nrecs, elide_json_record, &jctx, failed);
    free(extra);
    if (slab)
        munmap(slab, slab_size);
    bench_refs_free(&refs);
    free(names);
    free(ref);
    free(runs);
    free(info);
    free(recs);
    return rc;
}
