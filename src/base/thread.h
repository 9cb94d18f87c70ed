/* thread.h - per-thread state: queue nodes and 1spinner monitors.
 *
 * Queue nodes (MCS, CLH, relay) and 1spinner monitors live in one arena of
 * cache-line-sized records, each with a stable 32-bit index, so that lock
 * words can name a node in 32 bits next to a 32-bit generation.  Records are
 * never returned to the system: a waiter may still read a predecessor's
 * record after that thread has exited, and futex wakes may target a record
 * that was just recycled (harmless: the wait loops re-check).  Each thread
 * keeps a free list of nodes; at thread exit its nodes go back to a global
 * free list.  Monitors are recycled only as monitors, and their generation
 * is never reset, which is what 1spinner's predecessor check relies on.
 */
#ifndef BATON_BASE_THREAD_H
#define BATON_BASE_THREAD_H

#include <baton/atomic.h>
#include <stdint.h>

typedef struct baton_qnode {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t state; /* waited-on word */
    uint32_t gen;                                     /* bumped by each enqueuer (CLH) */
    _Atomic(struct baton_qnode *) next;               /* successor (MCS, relay) */
    _Atomic uintptr_t owner;                          /* token of the thread using it */
    struct baton_qnode *pool_next;                    /* free-list link */
    uint32_t index;                                   /* position in the arena */
    _Atomic uint64_t stamp;                           /* when a waker woke it (ns; runner) */
    _Atomic uint32_t cpu;                             /* where its thread went to sleep (runner) */
} baton_qnode_t;

_Static_assert(sizeof(baton_qnode_t) == BATON_CACHELINE, "one queue node per cache line");

#include <baton/token.h>
#include <sched.h>

/* The calling thread's state.  Initial-exec TLS: one %fs-relative load in
 * the library (which programs load at start-up, or with LD_PRELOAD). */
typedef struct baton_thread_state {
    baton_qnode_t *pool;    /* free queue nodes */
    baton_qnode_t *monitor; /* 1spinner monitor, allocated on first use */
} baton_thread_state_t;

extern _Thread_local baton_thread_state_t *baton_tls __attribute__((tls_model("initial-exec")));

/* Slow halves: create the thread's state, refill the pool. */
baton_qnode_t *baton_qnode_get_slow(void);
/* A node for a lock's init, which can report ENOMEM: NULL when the arena
 * needs memory and none is left (baton_qnode_get() stops the program). */
baton_qnode_t *baton_qnode_try_get(void);
/* Make sure the calling thread's pool holds at least n nodes, so that its
 * next n nested acquisitions of queue locks need no memory: 0, or ENOMEM. */
int baton_qnode_reserve(unsigned n);
baton_thread_state_t *baton_thread_state_slow(void);
baton_qnode_t *baton_thread_monitor_slow(void);

/* A node from the calling thread's pool (allocated on demand). */
static inline baton_qnode_t *baton_qnode_get(void)
{
    baton_thread_state_t *ts = baton_tls;
    baton_qnode_t *n;
    if (BATON_UNLIKELY(ts == NULL || (n = ts->pool) == NULL))
        return baton_qnode_get_slow();
    ts->pool = n->pool_next;
    /* n->owner is already ours: every node in a pool names that pool's
     * thread (set when the node entered it, see baton_qnode_put()). */
    return n;
}

/* Give a node back to the calling thread's pool. */
static inline void baton_qnode_put(baton_qnode_t *n)
{
    baton_thread_state_t *ts = baton_tls;
    if (BATON_UNLIKELY(ts == NULL))
        ts = baton_thread_state_slow();
    /* A node may come from another thread (CLH adopts its predecessor's):
     * it is ours from now on.  Relaxed: read by this thread's unlock, and
     * racily by others comparing against their own token. */
    if (atomic_load_explicit(&n->owner, memory_order_relaxed) != baton_thread_token())
        atomic_store_explicit(&n->owner, baton_thread_token(), memory_order_relaxed);
    n->pool_next = ts->pool;
    ts->pool = n;
}

/* Nodes left behind: a timed waiter that gives up while its node may still
 * be read by others (a predecessor's promotion, a walk of the queue) cannot
 * recycle it itself.  It pushes the nodes first..last (linked by pool_next)
 * on the lock's `list`, and whoever next owns the lock recycles them before
 * it reads the queue (relay, runner).  Release: publishes the links, and
 * the pusher's last use of the nodes, to baton_qnode_recycle()'s acquire. */
static inline void baton_qnode_defer(_Atomic(baton_qnode_t *) *list, baton_qnode_t *first,
                                     baton_qnode_t *last)
{
    baton_qnode_t *head = baton_load(list, memory_order_relaxed);
    do
        last->pool_next = head;
    while (!baton_cas(list, &head, first, memory_order_release, memory_order_relaxed));
}

/* Append n to the private list first..last (linked by pool_next) that a
 * promotion builds of the nodes it passes over, for baton_qnode_defer(). */
static inline void baton_qnode_append(baton_qnode_t **first, baton_qnode_t **last, baton_qnode_t *n)
{
    n->pool_next = NULL;
    if (*last != NULL)
        (*last)->pool_next = n;
    else
        *first = n;
    *last = n;
}

/* Take every node of `list` into the calling thread's pool.  Acquire pairs
 * with the release of baton_qnode_defer(). */
static inline void baton_qnode_recycle(_Atomic(baton_qnode_t *) *list)
{
    baton_qnode_t *z = baton_xchg(list, NULL, memory_order_acquire);
    while (z != NULL) {
        baton_qnode_t *next = z->pool_next;
        baton_qnode_put(z);
        z = next;
    }
}

/* The node a queue lock records for its holder (`holder`), if the calling
 * thread holds the lock, else NULL.  Relaxed loads: only the holder
 * stores its node there, and a node names the thread using it; another
 * thread only compares the owner with its own token. */
static inline baton_qnode_t *baton_qnode_mine(_Atomic(baton_qnode_t *) *holder)
{
    baton_qnode_t *n = atomic_load_explicit(holder, memory_order_relaxed);
    return n != NULL && atomic_load_explicit(&n->owner, memory_order_relaxed) == baton_thread_token() ? n
                                                                                                      : NULL;
}

/* The node a queue lock records for its holder, whatever thread holds it,
 * for a release by another thread (NULL: not held).  Relaxed: that thread
 * synchronised with the holder (kind.h's release), which orders the
 * holder's store before this load. */
static inline baton_qnode_t *baton_qnode_holder(_Atomic(baton_qnode_t *) *holder)
{
    return atomic_load_explicit(holder, memory_order_relaxed);
}

/* Wait until a successor that has swapped itself into a queue's tail links
 * itself behind n, and return it.  The window between the swap and the
 * link is two instructions unless the successor is preempted there, so
 * spin briefly, then yield.  Acquire pairs with the successor's release
 * store of n->next. */
static inline baton_qnode_t *baton_qnode_wait_next(baton_qnode_t *n)
{
    baton_qnode_t *next;
    unsigned spins = 0;
    while ((next = baton_load(&n->next, memory_order_acquire)) == NULL) {
        if (++spins < 1024u)
            baton_cpu_relax();
        else
            sched_yield();
    }
    return next;
}

/* The node with a given index (which must have been handed out). */
baton_qnode_t *baton_qnode_at(uint32_t index);

/* A monitor's state: a generation in the low 31 bits, the wait layer's
 * parked bit above.  The generation moves when the thread takes a 1spinner
 * lock, and once more when the thread exits. */
#define BATON_MONITOR_GEN_MASK 0x7fffffffu
#define BATON_MONITOR_GEN_FLAGS (~BATON_MONITOR_GEN_MASK)

/* The calling thread's 1spinner monitor (state = generation). */
static inline baton_qnode_t *baton_thread_monitor(void)
{
    baton_thread_state_t *ts = baton_tls;
    if (BATON_LIKELY(ts != NULL && ts->monitor != NULL))
        return ts->monitor;
    return baton_thread_monitor_slow();
}

#endif
