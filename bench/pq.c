/* pq.c - `baton bench pq`: the QD locking paper's data-structure benchmark
 * (section 6.1).
 *
 * One shared priority queue of 64-bit keys, a pairing heap, prefilled with
 * random keys.  Each thread loops
 *     L units of thread-local work (bench_local_work),
 *     with probability 1/2 insert a random key, else extract the minimum.
 * How an operation reaches the heap depends on what the lock offers
 * (capability bits, never kind names):
 *   - kinds that delegate detached (BATON_CAP_DETACH): insert through
 *     baton_delegate() (the caller goes on at once: nothing comes back),
 *     extract_min through baton_delegate_future() and baton_future_wait()
 *     (the key comes back through a pointer in the arguments);
 *   - kinds that delegate but wait (BATON_CAP_DELEGATE without DETACH, such
 *     as combining): insert through baton_delegate(), extract_min through
 *     baton_execute();
 *   - mutex kinds (bench_lock_t.delegates false: for them delegate is lock,
 *     call, unlock anyway): both through baton_execute(); peers: lock, op,
 *     unlock;
 *   - delegation peers (the QD authors' library): insert through the
 *     peer's own delegate (detached for their QD and MR-QD), extract_min
 *     through its own execute (their delegate-and-wait), since a peer has
 *     no futures.
 * --nd makes inserts wait on every kind (baton_execute): the paper's ND
 * variant.  Its PAD and CAS variants are lock specs (qd,pad=1 and qd,cas=1).
 *
 * Verification.  Each thread counts its inserts and successful extracts and
 * sums their keys.  At the end, through the lock (so that every operation
 * accepted before has run, and its writes are visible), the heap is walked:
 * its size must be prefill + inserts - extracts, every child's key must be
 * at least its parent's, and the extracted keys plus the remaining ones
 * must sum to the prefilled plus the inserted ones (modulo 2^64).
 * --inject-fault runs thread 0's operations without the lock, and the run
 * must fail.
 *
 * Every heap field is a relaxed atomic, so even that run has no data race:
 * the heap gets corrupted (lost nodes, a node in two places, cycles) but
 * never undefined.  Nodes come from chunks that live until the end of the
 * run, so every pointer the heap holds points at a node or is NULL, and
 * every loop over the heap is bounded by the number of nodes ever carved:
 * a corrupted heap ends a walk with a mark, never an endless loop.
 */
#include "bench.h"
#include "progress.h"
#include "report.h"
#include "topo.h"
#include "workloads.h"

#include <baton/atomic.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every heap field is read and written only through these.  Relaxed: the
 * lock under test orders the operations (its acquire and release, or a
 * delegation kind's hand-over); the atomics only keep the --inject-fault
 * run free of data races.  On x86-64 they are plain moves. */
#define GET(field) baton_load(&(field), memory_order_relaxed)
#define SET(field, v) baton_store(&(field), (v), memory_order_relaxed)

/* --- the pairing heap --------------------------------------------------------- */

typedef struct pq_node {
    _Atomic uint64_t key;
    _Atomic(struct pq_node *) child;   /* first child */
    _Atomic(struct pq_node *) sibling; /* next sibling; the free list's link */
} pq_node_t;

#define PQ_CHUNK 4096

typedef struct pq_chunk {
    struct pq_chunk *next; /* set before the chunk is published */
    pq_node_t nodes[PQ_CHUNK];
} pq_chunk_t;

typedef struct pq_heap {
    _Alignas(BENCH_LINE) _Atomic(pq_node_t *) root;
    _Atomic uint64_t size;
    _Atomic(pq_node_t *) free_list; /* extracted nodes, for the next inserts */
    _Atomic(pq_chunk_t *) chunks;   /* newest first; nodes are carved from the head */
    _Atomic uint32_t chunk_used;    /* nodes carved from the head chunk */
    _Atomic uint64_t capacity;      /* nodes ever carved: the bound of every walk */
    _Atomic uint32_t corrupt;       /* a walk hit its bound: a cycle */
    _Atomic uint32_t oom;           /* an insert found no memory and was dropped */
} pq_heap_t;

static pq_node_t *node_alloc(pq_heap_t *h)
{
    pq_node_t *n = GET(h->free_list);
    if (n) {
        SET(h->free_list, GET(n->sibling));
        return n;
    }
    /* Acquire: pairs with the release CAS below, so a chunk published by
     * another thread (a delegation helper, or the fault run) is seen
     * zeroed. */
    pq_chunk_t *c = baton_load(&h->chunks, memory_order_acquire);
    uint32_t used = GET(h->chunk_used);
    if (c && used < PQ_CHUNK) {
        SET(h->chunk_used, used + 1);
        return &c->nodes[used];
    }
    pq_chunk_t *fresh = calloc(1, sizeof *fresh);
    if (!fresh)
        return NULL;
    fresh->next = c;
    /* Release: pairs with the acquire above and with the one in
     * pq_teardown.  Under the lock the first try succeeds; the loop is for
     * the fault run, where two threads may add a chunk at once and neither
     * may be lost (it would leak). */
    while (!baton_cas(&h->chunks, &fresh->next, fresh, memory_order_release, memory_order_acquire))
        ;
    SET(h->chunk_used, 1u);
    SET(h->capacity, GET(h->capacity) + PQ_CHUNK);
    return &fresh->nodes[0];
}

static void node_free(pq_heap_t *h, pq_node_t *n)
{
    SET(n->sibling, GET(h->free_list));
    SET(h->free_list, n);
}

/* Link two roots (sibling NULL): the larger becomes the first child of the
 * smaller. */
static pq_node_t *meld(pq_node_t *a, pq_node_t *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (GET(b->key) < GET(a->key)) {
        pq_node_t *t = a;
        a = b;
        b = t;
    }
    SET(b->sibling, GET(a->child));
    SET(a->child, b);
    return a;
}

/* The two-pass merge of a child list: meld pairs left to right, then meld
 * the pairs right to left into one root. */
static pq_node_t *merge_pairs(pq_heap_t *h, pq_node_t *first)
{
    const uint64_t bound = GET(h->capacity);
    uint64_t steps = 0;
    pq_node_t *pairs = NULL; /* melded pairs, the last first, linked by sibling */
    while (first) {
        if (++steps > bound) {
            SET(h->corrupt, 1u);
            break;
        }
        pq_node_t *a = first, *b = GET(a->sibling);
        if (!b) {
            SET(a->sibling, pairs);
            pairs = a;
            break;
        }
        first = GET(b->sibling);
        SET(a->sibling, NULL);
        SET(b->sibling, NULL);
        pq_node_t *m = meld(a, b);
        SET(m->sibling, pairs);
        pairs = m;
    }
    pq_node_t *root = NULL;
    steps = 0;
    while (pairs) {
        if (++steps > bound) {
            SET(h->corrupt, 1u);
            break;
        }
        pq_node_t *next = GET(pairs->sibling);
        SET(pairs->sibling, NULL);
        root = meld(root, pairs);
        pairs = next;
    }
    return root;
}

static void heap_insert(pq_heap_t *h, uint64_t key)
{
    pq_node_t *n = node_alloc(h);
    if (!n) {
        SET(h->oom, 1u);
        return;
    }
    SET(n->key, key);
    SET(n->child, NULL);
    SET(n->sibling, NULL);
    SET(h->root, meld(GET(h->root), n));
    SET(h->size, GET(h->size) + 1);
}

static bool heap_extract(pq_heap_t *h, uint64_t *key)
{
    pq_node_t *r = GET(h->root);
    if (!r)
        return false;
    *key = GET(r->key);
    SET(h->root, merge_pairs(h, GET(r->child)));
    SET(h->size, GET(h->size) - 1);
    node_free(h, r);
    return true;
}

/* --- the operations, as functions of their argument blocks --------------------- */

struct pq_insert_args {
    pq_heap_t *h;
    uint64_t key;
};

struct pq_out {
    uint64_t key;
    int got; /* 0: the heap was empty */
};

struct pq_extract_args {
    pq_heap_t *h;
    struct pq_out *out; /* the caller's: written by whichever thread runs it */
};

static void pq_insert_op(void *p)
{
    const struct pq_insert_args *a = p;
    heap_insert(a->h, a->key);
}

static void pq_extract_op(void *p)
{
    const struct pq_extract_args *a = p;
    a->out->got = heap_extract(a->h, &a->out->key);
}

/* --- the workload ------------------------------------------------------------------ */

/* How one kind of operation reaches the heap. */
enum { PATH_DIRECT, PATH_EXECUTE, PATH_DELEGATE, PATH_FUTURE };

static void pq_paths(const bench_lock_t *l, bool nd, int *ins, int *ext)
{
    *ins = *ext = PATH_EXECUTE;
    if (l->delegates && (l->caps & BATON_CAP_DELEGATE)) {
        *ins = PATH_DELEGATE;
        if ((l->caps & BATON_CAP_DETACH) && l->baton) /* peers have no futures */
            *ext = PATH_FUTURE;
    }
    if (nd)
        *ins = PATH_EXECUTE;
}

struct pq_thread {
    _Alignas(BENCH_LINE) uint64_t inserts, extracts, empty;
    uint64_t sum_in, sum_out; /* keys inserted, keys extracted (mod 2^64) */
    int error;                /* what the API returned, if it failed */
    bench_local_t local;
};

struct pq_state {
    const struct pq_params *p;
    bench_lock_t *lock;
    pq_heap_t *heap;
    struct pq_thread *t;
    int threads;
    int ins_path, ext_path;
    uint64_t prefill_sum;
    /* The verification walk's findings (written under the lock). */
    uint64_t walk_nodes, walk_sum, walk_misordered;
    bool walk_broken;
};

static uint64_t rand64(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void pq_teardown(void *state)
{
    struct pq_state *s = state;
    /* Acquire: pairs with the release CAS that published the head chunk. */
    pq_chunk_t *c = baton_load(&s->heap->chunks, memory_order_acquire);
    while (c) {
        pq_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    free(s->heap);
    free(s->t);
    free(s);
}

static void *pq_setup(const void *params, bench_lock_t *lock, int threads, char *err, size_t errlen)
{
    const struct pq_params *p = params;
    struct pq_state *s = calloc(1, sizeof *s);
    pq_heap_t *h = aligned_alloc(BENCH_LINE, sizeof *h);
    struct pq_thread *t = aligned_alloc(BENCH_LINE, (size_t)threads * sizeof *t);
    if (!s || !h || !t) {
        snprintf(err, errlen, "out of memory");
        free(s);
        free(h);
        free(t);
        return NULL;
    }
    memset(h, 0, sizeof *h);
    memset(t, 0, (size_t)threads * sizeof *t);
    s->p = p;
    s->lock = lock;
    s->heap = h;
    s->t = t;
    s->threads = threads;
    pq_paths(lock, p->nd, &s->ins_path, &s->ext_path);
    /* Prefill before any thread starts (thread creation orders it). */
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < p->prefill; i++) {
        uint64_t key = rand64(&x);
        heap_insert(h, key);
        s->prefill_sum += key;
    }
    if (GET(h->oom)) {
        snprintf(err, errlen, "out of memory prefilling %d keys", p->prefill);
        pq_teardown(s);
        return NULL;
    }
    return s;
}

static uint64_t pq_thread_main(void *state, int index, const _Atomic int *stop)
{
    struct pq_state *s = state;
    struct pq_thread *me = &s->t[index];
    const uint32_t L = (uint32_t)s->p->local_work;
    bench_local_init(&me->local, 0x9e3779b9u * (uint32_t)(index + 1));
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(index + 1) + 1;
    bench_lock_t *lock = s->lock;
    const bool fault = s->p->inject_fault && index == 0;
    const int ins_path = fault ? PATH_DIRECT : s->ins_path;
    const int ext_path = fault ? PATH_DIRECT : s->ext_path;
    struct pq_out out;
    struct pq_insert_args ia = {s->heap, 0};
    struct pq_extract_args ea = {s->heap, &out};
    uint64_t ops = 0;
    do {
        if (L)
            bench_local_work(&me->local, L);
        int rc = 0;
        if (rand64(&x) >> 63) {
            ia.key = rand64(&x);
            switch (ins_path) {
            case PATH_DIRECT: pq_insert_op(&ia); break;
            case PATH_EXECUTE: rc = bench_execute(lock, pq_insert_op, &ia); break;
            default: rc = bench_delegate(lock, pq_insert_op, &ia, sizeof ia); break;
            }
            if (rc == 0) {
                me->inserts++;
                me->sum_in += ia.key;
            }
        } else {
            out.got = 0;
            switch (ext_path) {
            case PATH_DIRECT: pq_extract_op(&ea); break;
            case PATH_EXECUTE: rc = bench_execute(lock, pq_extract_op, &ea); break;
            default: {
                baton_future_t f;
                rc = baton_delegate_future(lock->baton, pq_extract_op, &ea, sizeof ea, &f);
                /* Waiting is safe even when refused: the future is then ready. */
                int st = baton_future_wait(&f);
                if (rc == 0)
                    rc = st;
                break;
            }
            }
            if (rc == 0 && out.got) {
                me->extracts++;
                me->sum_out += out.key;
            } else if (rc == 0) {
                me->empty++;
            }
        }
        if (rc != 0) {
            me->error = rc;
            break;
        }
        ops++;
        /* Relaxed: the flag only ends the loop; the join orders the rest. */
    } while (!atomic_load_explicit(stop, memory_order_relaxed));
    return ops;
}

/* Walk the whole heap (run under the lock): count and sum the keys, count
 * children smaller than their parent.  Bounded by the nodes ever carved. */
static void pq_walk_op(void *p)
{
    struct pq_state *s = p;
    pq_heap_t *h = s->heap;
    const uint64_t bound = GET(h->capacity);
    s->walk_nodes = s->walk_sum = s->walk_misordered = 0;
    s->walk_broken = GET(h->corrupt) != 0;
    pq_node_t **stack = malloc((size_t)(bound + 1) * sizeof *stack);
    if (!stack) {
        s->walk_broken = true;
        return;
    }
    size_t top = 0;
    pq_node_t *root = GET(h->root);
    if (root)
        stack[top++] = root;
    uint64_t pushed = top;
    while (top > 0) {
        pq_node_t *n = stack[--top];
        uint64_t key = GET(n->key);
        s->walk_nodes++;
        s->walk_sum += key;
        for (pq_node_t *c = GET(n->child); c; c = GET(c->sibling)) {
            if (++pushed > bound) { /* more nodes than exist: a cycle */
                s->walk_broken = true;
                free(stack);
                return;
            }
            if (GET(c->key) < key)
                s->walk_misordered++;
            stack[top++] = c;
        }
    }
    free(stack);
}

static int pq_verify(void *state, const uint64_t *ops, int threads, bench_result_t *r)
{
    struct pq_state *s = state;
    uint64_t ins = 0, ext = 0, sum_in = 0, sum_out = 0;
    for (int i = 0; i < threads; i++) {
        const struct pq_thread *t = &s->t[i];
        if (t->error) {
            snprintf(r->message, sizeof r->message, "thread %d: an operation failed: %s", i,
                     strerror(t->error));
            return 1;
        }
        if (t->inserts + t->extracts + t->empty != ops[i]) {
            snprintf(r->message, sizeof r->message, "thread %d counted its operations wrong", i);
            return 1;
        }
        ins += t->inserts;
        ext += t->extracts;
        sum_in += t->sum_in;
        sum_out += t->sum_out;
    }
    /* Through the lock: every operation accepted before has run. */
    int rc = bench_execute(s->lock, pq_walk_op, s);
    if (rc != 0) {
        snprintf(r->message, sizeof r->message, "the final walk could not run: %s", strerror(rc));
        return 1;
    }
    pq_heap_t *h = s->heap;
    const uint64_t expect = (uint64_t)s->p->prefill + ins - ext;
    if (GET(h->oom)) {
        snprintf(r->message, sizeof r->message, "heap: out of memory, inserts were dropped");
        return 1;
    }
    if (s->walk_broken) {
        snprintf(r->message, sizeof r->message,
                 "heap structure corrupted (a cycle or a shared node): mutual exclusion broken");
        return 1;
    }
    if (s->walk_nodes != expect || GET(h->size) != expect) {
        snprintf(r->message, sizeof r->message,
                 "heap holds %llu keys (size field %llu), expected %d + %llu - %llu = %llu: mutual "
                 "exclusion broken",
                 (unsigned long long)s->walk_nodes, (unsigned long long)GET(h->size), s->p->prefill,
                 (unsigned long long)ins, (unsigned long long)ext, (unsigned long long)expect);
        return 1;
    }
    if (s->walk_misordered) {
        snprintf(r->message, sizeof r->message, "heap order broken at %llu nodes",
                 (unsigned long long)s->walk_misordered);
        return 1;
    }
    if (s->prefill_sum + sum_in != sum_out + s->walk_sum) {
        snprintf(r->message, sizeof r->message,
                 "heap keys do not add up: prefilled + inserted != extracted + remaining");
        return 1;
    }
    return 0;
}

const bench_workload_t pq_workload = {
    .name = "pq",
    .setup = pq_setup,
    .thread_main = pq_thread_main,
    .extras = bench_extras_ops_per_session,
    .verify = pq_verify,
    .teardown = pq_teardown,
};

/* --- the command ------------------------------------------------------------ */


static const char pq_default_locks[] = "qd,qd,pad=1,qd,cas=1,hqd,fc,ccsynch,rcl,mcs,relay,tas,pthread,"
                                       "peer:ck_mcs,peer:absl,peer:tbb_queuing,peer:std_mutex";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton bench pq [options]\n"
            "  A pairing-heap priority queue (QD locking paper, section 6.1): each thread does L\n"
            "  units of local work, then inserts a random key or extracts the minimum (1/2 each).\n"
            "  Detached delegation kinds insert with baton_delegate and extract with a future;\n"
            "  kinds that delegate but wait insert with baton_delegate and extract with\n"
            "  baton_execute; every other kind uses baton_execute (peers: lock, op, unlock;\n"
            "  delegation peers: their own delegate for insert, delegate-and-wait for extract).\n"
            "  --locks LIST         lock specs and peers, comma-separated, or all|kinds|peers|rwpeers\n"
            "                       (default: %s;\n"
            "                       those not in this build are skipped with a note)\n"
            "  --threads LIST       thread counts (default 1,2,8)\n"
            "  --local-work LIST    L: units of thread-local work between operations (default 0,32,128)\n"
            "  --prefill N          keys in the heap at the start (default 10000)\n"
            "  --nd                 inserts wait on every kind (baton_execute): the paper's ND variant;\n"
            "                       its PAD and CAS variants are specs: qd,pad=1 and qd,cas=1\n"
            "  --duration SEC       length of one run (default 1)\n"
            "  --repeat R           runs per cell; the median is reported (default 3)\n"
            "  --pin POLICY         compact|spread|none (default compact)\n"
            "  --json FILE          write every result as JSON\n"
            "  --inject-fault       thread 0 runs its operations without the lock (tests that\n"
            "                       verification fails)\n" BENCH_WAIT_USAGE,
            pq_default_locks);
}

static const char *path_name(const bench_lock_t *l, int path)
{
    switch (path) {
    case PATH_DELEGATE:
        if (l->baton)
            return "baton_delegate";
        return (l->caps & BATON_CAP_DETACH) ? "the peer's delegate (detached)"
                                            : "the peer's delegate (waits)";
    case PATH_FUTURE: return "baton_delegate_future + wait";
    default: return l->baton ? "baton_execute" : "the peer's execute (delegate and wait)";
    }
}

/* How inserts and extracts reach the heap, for the locks that do not use
 * baton_execute (or a peer's lock, op, unlock) for both. */
static void pq_describe(const bench_lock_t *l, const void *ctx)
{
    const bool *nd = ctx;
    int ins, ext;
    pq_paths(l, *nd, &ins, &ext);
    if (ins != PATH_EXECUTE || ext != PATH_EXECUTE || l->execute)
        printf("  %-24s insert: %s; extract_min: %s\n", l->spec, path_name(l, ins), path_name(l, ext));
}

/* Measure the single-thread rate at local work L, unless known. */
static void pq_ref_rate(bench_refs_t *refs, int L, const struct pq_params *proto, const bench_cfg_t *base,
                        int repeat)
{
    const int key[BENCH_REF_KEYS] = {[BENCH_REF_L] = L};
    if (bench_ref_get(refs, key) >= 0)
        return;
    struct pq_params p = *proto;
    p.local_work = L;
    p.inject_fault = false;
    bench_ref_put(refs, key, bench_single_rate(&pq_workload, &p, base, repeat));
}

/* bench pq's own options. */
struct pq_opts {
    int L[BENCH_LIST_MAX], nL, prefill;
    bool nd;
};

static int pq_option(int c, const char *arg, void *ctx)
{
    struct pq_opts *po = ctx;
    switch (c) {
    case 'L': return (po->nL = bench_parse_ints(arg, po->L, BENCH_LIST_MAX)) <= 0;
    case 'n': return bench_parse_ints(arg, &po->prefill, 1) != 1;
    case 'N': po->nd = true; return 0;
    default: return 1;
    }
}

int cmd_bench_pq(int argc, char **argv)
{
    bench_opts_t o = {.pin = "compact", .threads = {1, 2, 8}, .nthreads = 3, .duration = 1.0, .repeat = 3};
    struct pq_opts po = {.L = {0, 32, 128}, .nL = 3, .prefill = PQ_PREFILL};
    static const cli_opt_t opts[] = {BENCH_OPT_LOCKS,
                                     BENCH_OPT_THREADS,
                                     {"local-work", CLI_VALUE, 0, 'L'},
                                     {"prefill", CLI_VALUE, 0, 'n'},
                                     {"nd", CLI_FLAG, 0, 'N'},
                                     BENCH_OPT_DURATION,
                                     BENCH_OPT_REPEAT,
                                     BENCH_OPT_PIN,
                                     BENCH_OPT_JSON,
                                     BENCH_OPT_FAULT,
                                     BENCH_OPT_END};
    const int prc = bench_getopt("pq", argc, argv, opts, &o, pq_option, &po, usage);
    if (prc >= 0)
        return prc;
    const int *L = po.L, nL = po.nL, prefill = po.prefill;
    const bool nd = po.nd;
    char header[64];
    snprintf(header, sizeof header, "; prefill %d%s", prefill, nd ? "; ND (inserts wait)" : "");
    const bench_cmd_t cmd = {.name = "pq",
                             .locks = o.locks,
                             .default_locks = pq_default_locks,
                             .threads = o.threads,
                             .nthreads = o.nthreads,
                             .duration_s = o.duration,
                             .repeat = o.repeat,
                             .pin = o.pin,
                             .header_params = header,
                             .describe = pq_describe,
                             .ctx = &nd};
    bench_setup_t b;
    int rc = bench_cmd_setup(&cmd, &b);
    if (rc != 0)
        return rc;
    const int nspecs = b.nspecs, cores = b.cores;
    printf("  (every other lock: both through baton_execute; peers: lock, op, unlock)\n");

    bench_record_t *recs = calloc((size_t)nL * (size_t)o.nthreads * (size_t)nspecs, sizeof *recs);
    bench_result_t *runs = calloc((size_t)nspecs * (size_t)o.repeat, sizeof *runs);
    bench_refs_t refs = {0};
    int nrecs = 0, failed = 0;
    struct pq_params proto = {0, prefill, nd, o.fault};
    bench_progress_begin(nL * o.nthreads);

    for (int il = 0; il < nL; il++) {
        struct pq_params pp = proto;
        pp.local_work = L[il];
        const int key[BENCH_REF_KEYS] = {[BENCH_REF_L] = L[il]};
        pq_ref_rate(&refs, L[il], &proto, &b.base, o.repeat);
        pq_ref_rate(&refs, 0, &proto, &b.base, o.repeat);
        for (int it = 0; it < o.nthreads; it++) {
            bench_record_t *cell = &recs[nrecs];
            bench_cfg_t cfg = b.base;
            cfg.threads = o.threads[it];
            char label[64];
            snprintf(label, sizeof label, "pq L=%d", L[il]);
            bench_cell_run(&pq_workload, &pp, "pq", b.specs, nspecs, &cfg, o.repeat, runs, cell, label);
            for (int k = 0; k < nspecs; k++) {
                bench_record_t *rec = &cell[k];
                rec->nparams = 3;
                rec->param_names[0] = "local_work";
                rec->param_names[1] = "prefill";
                rec->param_names[2] = "nd";
                rec->params[0] = L[il];
                rec->params[1] = prefill;
                rec->params[2] = nd;
            }
            double limit = bench_cell_limit(&refs, key, cell, nspecs, o.threads[it], cores);
            failed += bench_cell_finish(cell, nspecs, limit);
            char title[256];
            snprintf(title, sizeof title,
                     "pq L=%d (%.0f ns), prefill %d%s, %d thread%s on %d CPUs; physical limit %.2f Mops/s",
                     L[il], L[il] * b.unit_ns, prefill, nd ? ", ND" : "", o.threads[it],
                     o.threads[it] > 1 ? "s" : "", cores, limit / 1e6);
            report_cell(stdout, cell, nspecs, title);
            fflush(stdout);
            nrecs += nspecs;
        }
    }

    char extra[160];
    snprintf(extra, sizeof extra,
             "\"local_unit_ns\": %.4f, \"pin\": \"%s\", \"repeat\": %d, \"prefill\": %d, \"nd\": %s",
             b.unit_ns, o.pin, o.repeat, prefill, nd ? "true" : "false");
    rc = bench_cmd_finish(&b, o.json, extra, recs, nrecs, failed);
    bench_refs_free(&refs);
    free(runs);
    free(recs);
    return rc;
}
