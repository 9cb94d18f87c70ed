/* ccsynch.c - CC-Synch: the `ccsynch` kind.
 *
 * CC-Synch (Fatourou and Kallimanis, "Revisiting the combining
 * synchronization technique", PPoPP 2012): a CLH-like queue of request
 * nodes.  A thread swaps its spare node into the tail, writes its request
 * into the node it got back (the previous tail), links that node to its
 * spare, and waits on the node's `wait` word.  When the word leaves
 * CC_WAIT, either it says CC_DONE (a combiner ran the request) or CC_GO:
 * the thread is the combiner.  It runs requests along the queue, its own
 * first, until it meets a node whose request is not linked yet or has run
 * `help_limit` of them, and stores CC_GO into that node's word to hand the
 * combiner role on.  (The original keeps a separate `completed` flag that
 * the owner reads after the wait; one word says both here, so the owner
 * reads nothing of its node once the wait is over.)
 *
 * Node ownership (as in the original algorithm).  After announcing in
 * `cur`, the thread keeps `cur` as its spare for its next operation, and the
 * node it swapped in becomes the tail, which belongs to whoever swaps in
 * after it.  This is safe because once cur->wait leaves CC_WAIT nobody
 * touches cur again: the combiner reads cur->next and the request before it
 * stores the word (the release in that store orders them), and a combiner
 * that stops at cur (next not linked yet) only stores the word and leaves.
 * The thread writes cur again only after its acquire load saw the word
 * change.  So each node is at any time either one thread's spare, or the
 * tail, or announced and awaiting its combiner; threads and nodes stay one
 * to one, plus the initial dummy tail (CC_GO).
 *
 * Each thread keeps its spare in its slot record (slots.h), on the lock's
 * list of records (reclist.h).  When the thread exits, the record (with the
 * spare, which no one else touches) is marked free and the next new thread
 * takes it over, so thread churn does not grow the lock.  Every node is
 * also on a list of all nodes, for destroy.
 *
 * Waiting and waking.  A thread waits on its node as a helper wait (the
 * wait layer's baton_wait_helper_phase(): under spinpark it yields, since
 * the combiner it waits for may need its CPU) and parks only after that: it
 * counts itself in the lock's `sleepers` (seq_cst), marks its node's word
 * with the parked bit (seq_cst CAS from CC_WAIT) and sleeps on it.  Storing
 * a node's word (a completion, or the hand-over) is cc_publish(): a look at
 * `sleepers`, then, if nobody sleeps, a plain release store; else an
 * exchange, and a futex wake if the old value had the parked bit (owed
 * until the session is over: see cc_combine()).  (The original, and
 * baton_wait_store(), exchange every time, to see the bit: a locked
 * instruction per request, which also stalls the combiner on the waiter's
 * line, where a plain store retires into the store buffer.)  The
 * look precedes the store, so one interleaving escapes it: a sleeper that
 * counts itself after the look and parks before the store lands.  So a
 * park has a timeout, CC_PARK_FIRST_NS doubling up to CC_PARK_MAX_NS: it
 * bounds that stall, and any later store looks after the count.  The
 * combiner's own node needs no completion (nobody waits on it).  After the
 * hand-over the combiner touches neither the lock nor any node, so destroy
 * may free them as soon as the tail's word has left CC_WAIT.
 * models/ccsynch.pml checks this protocol.
 *
 * No lock/unlock: the combiner role is not a lock one can hold while doing
 * other things.  execute and delegate both wait until their operation has
 * run; requests run in the order their threads swapped the tail (FIFO).
 *
 * Options:
 *   help_limit=<n>   requests one combiner runs at most (default 4096)
 * The wait policy (default spinpark) is how a thread waits on its node.
 */
#include "../base/cs.h"
#include "../base/reclist.h"
#include "../base/slots.h"
#include "../base/kind.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A node's word (plus BATON_WAIT_PARKED while its owner sleeps on it). */
enum { CC_GO = 0, CC_WAIT = 1, CC_DONE = 2 };

/* The first timeout of a park: the most the escaping interleaving costs
 * (the bound fc's FC_PARK_TIMEOUT_NS gives its own lost wake-up); later
 * ones double up to the largest, so that a long sleep wakes a few times,
 * not thousands. */
#define CC_PARK_FIRST_NS 100000u
#define CC_PARK_MAX_NS 100000000u

typedef struct cc_node {
    _Atomic uint32_t wait; /* CC_WAIT, CC_GO or CC_DONE (+ parked bit) */
    _Atomic(struct cc_node *) next;
    /* The request: written by the thread that announced in this node before
     * it links next, read by the combiner after it loads next. */
    baton_fn fn;
    void *arg; /* ctx, or args below */
    baton_future_t *f;
    struct cc_node *all; /* list of every node of the lock (for destroy) */
    _Alignas(16) unsigned char args[BATON_ARGS_MAX];
} __attribute__((aligned(BATON_CACHELINE))) cc_node_t;

_Static_assert(sizeof(cc_node_t) == BATON_CACHELINE, "a CC-Synch node is one line");

/* A thread's record for the lock. */
typedef struct cc_slot {
    baton_rec_t rec;  /* first: the owner flag and the list link (reclist.h) */
    cc_node_t *spare; /* the node for the owner's next operation */
    /* The owner's combining sessions and the requests they ran, written
     * only by the owner (relaxed load+store), summed racily by cc_stats().
     * Here, on the owner's own line: lock-wide counters moved to each new
     * combiner's CPU at every session, and the hand-over store, queued
     * behind theirs, became visible only after that transfer. */
    _Atomic uint64_t sessions, ops;
} __attribute__((aligned(BATON_CACHELINE))) cc_slot_t;

_Static_assert(offsetof(cc_slot_t, rec) == 0, "the reclist header comes first");

typedef struct cc_lock {
    _Alignas(BATON_CACHELINE) _Atomic(cc_node_t *) tail;
    /* Read-mostly. */
    _Alignas(BATON_CACHELINE) baton_wait_t wait;
    /* Threads parked, or about to park, on a node: written only by them,
     * looked at before every store of a node's word. */
    _Atomic uint32_t sleepers;
    uint32_t help_limit;
    baton_reclist_t slot_list;
    _Atomic(cc_node_t *) node_list;
    baton_slot_owner_t slots;
} cc_lock_t;

static cc_lock_t *lock_of(baton_slot_owner_t *o)
{
    return (cc_lock_t *)(void *)((char *)o - offsetof(cc_lock_t, slots));
}

static void *cc_alloc(size_t size)
{
    void *p = aligned_alloc(BATON_CACHELINE, size);
    if (p == NULL) {
        fprintf(stderr, "baton: out of memory for a CC-Synch node\n");
        abort();
    }
    memset(p, 0, size);
    return p;
}

/* A new node, already on the list of all nodes. */
static cc_node_t *cc_new_node(cc_lock_t *l, uint32_t wait)
{
    cc_node_t *n = cc_alloc(sizeof *n);
    atomic_init(&n->wait, wait);
    atomic_init(&n->next, NULL);
    /* Relaxed read: the CAS below checks it. */
    cc_node_t *h = baton_load(&l->node_list, memory_order_relaxed);
    do
        n->all = h;
    /* Release: pairs with the acquire load in cc_destroy(). */
    while (!baton_cas(&l->node_list, &h, n, memory_order_release, memory_order_relaxed));
    return n;
}

/* --- records ----------------------------------------------------------------- */

/* A thread's first operation on the lock: take over the record (and spare
 * node) of a thread that has exited, or make a new pair.  The adopt's
 * acquire makes the exited thread's last writes to the record and its spare
 * happen before ours.  (On a thread's exit, baton_reclist_release() frees
 * its record for the next thread: its spare is the node it last announced
 * in, whose word it saw leave CC_WAIT, so nobody touches that node any more
 * (see the ownership argument above), and record and spare go on
 * together.) */
static void *cc_make(baton_slot_owner_t *o)
{
    cc_lock_t *l = lock_of(o);
    baton_rec_t *old = baton_reclist_adopt(&l->slot_list);
    if (old != NULL)
        return old;
    cc_slot_t *s = baton_reclist_new(sizeof *s, "a CC-Synch node");
    atomic_init(&s->sessions, 0u);
    atomic_init(&s->ops, 0u);
    s->spare = cc_new_node(l, CC_GO); /* reset to CC_WAIT before each use */
    baton_reclist_push(&l->slot_list, &s->rec);
    return s;
}

/* --- the algorithm -------------------------------------------------------------- */

/* The park (see the top of the file); returns the word's new value. */
static uint32_t cc_park(cc_lock_t *l, cc_node_t *n)
{
    /* seq_cst: the count precedes our CAS in the single total order, for
     * every cc_publish() whose look comes after it. */
    baton_fetch_add(&l->sleepers, 1u, memory_order_seq_cst);
    uint64_t timeout = CC_PARK_FIRST_NS;
    uint32_t v = CC_WAIT;
    /* seq_cst CAS (its failure an acquire: pairs with cc_publish()'s
     * release, like the load below). */
    while (baton_cas(&n->wait, &v, CC_WAIT | BATON_WAIT_PARKED, memory_order_seq_cst, memory_order_seq_cst) ||
           v == (CC_WAIT | BATON_WAIT_PARKED)) {
        baton_park_timeout(&n->wait, CC_WAIT | BATON_WAIT_PARKED, timeout);
        timeout = timeout * 2 > CC_PARK_MAX_NS ? CC_PARK_MAX_NS : timeout * 2;
        /* Acquire: pairs with cc_publish()'s release (or exchange). */
        v = baton_load(&n->wait, memory_order_acquire);
        if ((v & ~BATON_WAIT_PARKED) != CC_WAIT)
            break;
    }
    /* Relaxed: a cc_publish() that still counts us only exchanges in vain. */
    baton_fetch_sub(&l->sleepers, 1u, memory_order_relaxed);
    return v & ~BATON_WAIT_PARKED;
}

/* Wait until n->wait leaves CC_WAIT; returns CC_GO or CC_DONE.  Acquire (in
 * every look): pairs with cc_publish()'s release, so the operation's
 * effects, or the previous combiner's, are visible. */
static inline uint32_t cc_wait(cc_lock_t *l, cc_node_t *n)
{
    /* A first look before the wait layer's call. */
    uint32_t v = baton_load(&n->wait, memory_order_acquire) & ~BATON_WAIT_PARKED;
    if (BATON_LIKELY(v != CC_WAIT) || baton_wait_helper_phase(&l->wait, &n->wait, CC_WAIT, &v))
        return v;
    return cc_park(l, n);
}

/* Store n's word (CC_DONE or CC_GO): the last touch of n, whose owner may
 * reuse it at once.  Release: pairs with the owner's acquire in cc_wait(),
 * which then sees the operation's effects (or, for CC_GO, everything this
 * combiner ran).  A parked owner's wake is owed to o (NULL: wake now). */
static inline void cc_publish(cc_lock_t *l, cc_node_t *n, uint32_t v, baton_owed_t *o)
{
    /* Relaxed look (see the top of the file for the interleaving it cannot
     * see, and the timeout that bounds it); no one parks under spin, yield
     * or backoff, and then nobody counts. */
    if (BATON_LIKELY(baton_load(&l->sleepers, memory_order_relaxed) == 0)) {
        baton_store(&n->wait, v, memory_order_release);
        return;
    }
    /* acq_rel: release as above; we must see whether the parked bit was set
     * before our value landed. */
    if (baton_xchg(&n->wait, v, memory_order_acq_rel) & BATON_WAIT_PARKED)
        baton_owe_wake(o, &n->wait); /* by address: n may be reused already */
}

/* Whether n's owner sleeps (or is about to), as far as a racy look can
 * tell.  Relaxed: a hint; a wrong answer costs one hand-over's wake-up. */
static inline bool cc_parked(cc_lock_t *l, cc_node_t *n)
{
    return baton_load(&l->sleepers, memory_order_relaxed) != 0 &&
           (baton_load(&n->wait, memory_order_relaxed) & BATON_WAIT_PARKED) != 0;
}

/* Run our own request (fn, ctx, f: linked in `cur`, whose next is `next`),
 * then the requests along the queue from `next`, then hand the combiner role
 * to the node we stop at.  One critical-section frame for the session.
 *
 * The combiner is the lock's serial path, so it pays no wake inside it: the
 * wakes of parked owners are owed (wait_internal.h) and paid after the
 * hand-over.  And it hands the role to a running thread: at help_limit, a
 * node whose owner is parked is run rather than handed the role (its owner
 * would need a wake-up, tens of microseconds, before anyone ran anything).
 * A parked owner cannot announce again before we wake it, so this runs
 * past the limit by at most one node per sleeping thread; twice the limit
 * bounds it anyway (a sleeper woken by its park's timeout may announce and
 * park again). */
static void cc_combine(cc_lock_t *l, cc_slot_t *s, cc_node_t *next, baton_fn fn, void *ctx, baton_future_t *f)
{
    baton_owed_t owed;
    baton_owed_init(&owed);
    baton_cs_frame_t frame;
    baton_cs_enter(&frame, l);
    fn(ctx);
    if (f)
        baton_future_complete(f, 0); /* our own future: nobody waits on it yet */
    cc_node_t *tmp = next, *nxt;
    uint64_t n = 1;
    const uint64_t limit = l->help_limit;
    /* Acquire pairs with the release store of next in cc_submit(): the
     * request in tmp is visible. */
    while ((nxt = baton_load(&tmp->next, memory_order_acquire)) != NULL &&
           (n < limit || (n < 2 * limit && cc_parked(l, tmp)))) {
        n++;
        tmp->fn(tmp->arg);
        if (tmp->f)
            baton_future_complete_owed(tmp->f, 0, &owed);
        cc_publish(l, tmp, CC_DONE, &owed);
        tmp = nxt;
    }
    baton_cs_leave(&frame);
    /* Relaxed: only the record's owner writes its counters; readers take a
     * racy snapshot. */
    baton_store(&s->sessions, baton_load(&s->sessions, memory_order_relaxed) + 1, memory_order_relaxed);
    baton_store(&s->ops, baton_load(&s->ops, memory_order_relaxed) + n, memory_order_relaxed);
    /* Hand over: tmp's owner (who may not have swapped it out of the tail
     * yet) becomes the combiner.  After this we touch nothing of the lock
     * (destroy may free it): the owed wakes are by address.  The new
     * combiner's own wake, if it sleeps, comes first. */
    cc_publish(l, tmp, CC_GO, NULL);
    baton_wake_owed(&owed);
}

/* One operation: fn(ctx), or with `copy` fn on an inline copy of
 * args[0..size). */
static void cc_submit(cc_lock_t *l, baton_fn fn, void *ctx, bool copy, const void *args, size_t size,
                      baton_future_t *f)
{
    cc_slot_t *s = baton_slot_get(&l->slots);
    cc_node_t *next = s->spare;
    /* Relaxed: the node is ours alone until the exchange below publishes it
     * (its release covers these stores). */
    baton_store(&next->next, NULL, memory_order_relaxed);
    baton_store(&next->wait, CC_WAIT, memory_order_relaxed);
    /* acq_rel: release publishes next's fields to the thread that swaps in
     * after us (and, through our link, to the combiner); acquire pairs with
     * the previous swapper's release, so its node `cur` is ready for us. */
    cc_node_t *cur = baton_xchg(&l->tail, next, memory_order_acq_rel);
    if (copy) {
        baton_copy_args(cur->args, args, size);
        ctx = cur->args;
    }
    cur->fn = fn;
    cur->arg = ctx;
    cur->f = f;
    /* Release: pairs with the combiner's acquire load of next in
     * cc_combine(): it sees the request. */
    baton_store(&cur->next, next, memory_order_release);
    /* cur is ours from now on (see the ownership argument above). */
    s->spare = cur;
    if (cc_wait(l, cur) == CC_GO)
        cc_combine(l, s, next, fn, ctx, f);
}

static int cc_execute(void *state, baton_fn fn, void *ctx)
{
    cc_submit(state, fn, ctx, false, NULL, 0, NULL);
    return 0;
}

static int cc_delegate(void *state, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    cc_submit(state, fn, NULL, true, args, size, f);
    return 0;
}

/* --- lifecycle ------------------------------------------------------------------- */

static int cc_init(void *state, const baton_opts_t *o)
{
    cc_lock_t *l = state;
    atomic_init(&l->sleepers, 0u);
    baton_reclist_init(&l->slot_list);
    atomic_init(&l->node_list, NULL);
    l->wait = o->wait;
    l->help_limit = (uint32_t)o->value[0];
    /* The dummy tail: CC_GO, so the first thread to arrive combines. */
    atomic_init(&l->tail, cc_new_node(l, CC_GO));
    l->slots.make = cc_make;
    l->slots.release = baton_reclist_release;
    return baton_slot_owner_register(&l->slots);
}

static int cc_destroy(void *state)
{
    cc_lock_t *l = state;
    /* Let operations in flight finish: the queue is idle when the tail's
     * word has left CC_WAIT (the last combiner handed over to it and nobody
     * swapped in since, or the tail is the dummy).  A tail still waiting belongs to an
     * operation that will finish. */
    for (;;) {
        /* Acquire pairs with the release of the last exchange of the tail. */
        cc_node_t *t = baton_load(&l->tail, memory_order_acquire);
        /* Acquire inside: pairs with the last combiner's hand-over.  The
         * dummy tail, and a tail handed over, say CC_GO. */
        (void)cc_wait(l, t);
        /* Relaxed: only re-checks that nobody swapped in meanwhile. */
        if (baton_load(&l->tail, memory_order_relaxed) == t)
            break;
    }
    /* After this no exiting thread releases one of our records. */
    baton_slot_owner_unregister(&l->slots);
    baton_reclist_free(&l->slot_list);
    /* Acquire pairs with the release CAS of cc_new_node(). */
    cc_node_t *n = baton_load(&l->node_list, memory_order_acquire);
    while (n != NULL) {
        cc_node_t *next = n->all;
        free(n);
        n = next;
    }
    return 0;
}

/* What cc_init allocates: the dummy node and the live-owner entry. */
static size_t cc_footprint(const baton_opts_t *o)
{
    (void)o;
    return baton_alloc_cost(BATON_CACHELINE, sizeof(cc_node_t)) + baton_slot_owner_footprint();
}

static void cc_stats(void *state, baton_stats_t *out)
{
    cc_lock_t *l = state;
    uint64_t sessions = 0, ops = 0;
    /* baton_reclist_first(): an acquire load, pairing with the push of each
     * record.  The records are cc_slot_t's, whose header comes first. */
    for (baton_rec_t *r = baton_reclist_first(&l->slot_list); r != NULL; r = baton_reclist_next(r)) {
        const cc_slot_t *s = (const cc_slot_t *)(void *)r;
        /* Relaxed: a racy snapshot, as baton_lock_stats() documents. */
        sessions += baton_load(&s->sessions, memory_order_relaxed);
        ops += baton_load(&s->ops, memory_order_relaxed);
    }
    out->help_sessions = sessions;
    out->helped_ops = ops;
}

/* --- registry entry ------------------------------------------------------------- */

static const baton_option_desc_t cc_options[] = {
    {"help_limit", 1, 1u << 24, 4096, "requests one combiner runs at most before handing over"},
};

const baton_kind_t baton_kind_ccsynch = {
    .name = "ccsynch",
    .summary = "CC-Synch: requests queue CLH-style; the thread at the head combines them in order",
    .caps = BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_WAIT | BATON_CAP_FIFO,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(cc_lock_t),
    .align = _Alignof(cc_lock_t),
    .options = cc_options,
    .noptions = sizeof cc_options / sizeof cc_options[0],
    .init = cc_init,
    .destroy = cc_destroy,
    .execute = cc_execute,
    .delegate = cc_delegate,
    .stats = cc_stats,
    .footprint = cc_footprint,
};
