/* thread.c - the node arena and per-thread pools (see thread.h). */
#include "thread.h"
#include "error.h"
#include "syslock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The arena: a directory of chunks.  CHUNK_NODES nodes per chunk (128 KiB);
 * DIR_CHUNKS chunks give 2^26 records, far more than any process has threads
 * times locks in flight.  The directory is static and zero: untouched pages
 * cost no memory.  So is the first chunk: a process out of address space
 * (RLIMIT_AS) still has its first 1024 records, since static memory is
 * mapped at start-up; only past them does a lock that needs a record and
 * finds no memory stop the program (a lock has no way to report it). */
#define CHUNK_SHIFT 10
#define CHUNK_NODES (1u << CHUNK_SHIFT)
#define DIR_CHUNKS (1u << 16)

static _Atomic(baton_qnode_t *) dir[DIR_CHUNKS];
static uint32_t next_index;          /* under arena_mutex */
static baton_qnode_t *free_nodes;    /* under arena_mutex */
static baton_qnode_t *free_monitors; /* under arena_mutex */
static baton_syslock_t arena_mutex = BATON_SYSLOCK_INIT;
static baton_qnode_t first_chunk[CHUNK_NODES];
/* Taken, as the next chunk, when memory for one fails; only acquires use it
 * (inits report ENOMEM instead), so that threads can still lock the locks
 * that exist.  Static and zero: no memory until touched. */
static baton_qnode_t emergency_chunk[CHUNK_NODES];
static uint32_t emergency_start = UINT32_MAX; /* its first index, once taken */

_Thread_local baton_thread_state_t *baton_tls __attribute__((tls_model("initial-exec")));
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

baton_qnode_t *baton_qnode_at(uint32_t index)
{
    /* Acquire pairs with the release that published the chunk. */
    baton_qnode_t *chunk = atomic_load_explicit(&dir[index >> CHUNK_SHIFT], memory_order_acquire);
    return &chunk[index & (CHUNK_NODES - 1u)];
}

/* Take a record from `*list`, or carve a new one.  Caller holds arena_mutex.
 * Out of memory: NULL if `may_fail`, else the program stops (a lock's
 * acquire has no way to report it). */
static baton_qnode_t *arena_take(baton_qnode_t **list, bool may_fail)
{
    baton_qnode_t *n = *list;
    if (n) {
        *list = n->pool_next;
        n->pool_next = NULL;
        return n;
    }
    uint32_t idx = next_index;
    uint32_t c = idx >> CHUNK_SHIFT;
    if (c >= DIR_CHUNKS) {
        fprintf(stderr, "baton: queue-node arena exhausted (%u records)\n", idx);
        abort();
    }
    if (may_fail && idx >= emergency_start)
        return NULL; /* the emergency chunk is for acquires */
    baton_qnode_t *chunk = atomic_load_explicit(&dir[c], memory_order_relaxed);
    if (!chunk) {
        chunk = c == 0 ? first_chunk : aligned_alloc(BATON_CACHELINE, sizeof(baton_qnode_t) * CHUNK_NODES);
        if (!chunk && !may_fail && emergency_start == UINT32_MAX) {
            chunk = emergency_chunk;
            emergency_start = idx;
        }
        if (!chunk) {
            if (may_fail)
                return NULL;
            fprintf(stderr, "baton: out of memory for queue nodes\n");
            abort();
        }
        memset(chunk, 0, sizeof(baton_qnode_t) * CHUNK_NODES);
        for (uint32_t i = 0; i < CHUNK_NODES; i++)
            chunk[i].index = (c << CHUNK_SHIFT) | i;
        /* Release pairs with the acquire in baton_qnode_at(). */
        atomic_store_explicit(&dir[c], chunk, memory_order_release);
    }
    next_index++;
    return &chunk[idx & (CHUNK_NODES - 1u)];
}

static void thread_exit(void *arg)
{
    baton_thread_state_t *ts = arg;
    baton_syslock_lock(&arena_mutex);
    while (ts->pool) {
        baton_qnode_t *n = ts->pool;
        ts->pool = n->pool_next;
        n->pool_next = free_nodes;
        free_nodes = n;
    }
    if (ts->monitor) {
        /* Move the generation on once more: a lock whose tail still names
         * this record with the generation the thread last took it with may
         * be held still (the thread exited holding it, for another thread
         * to release), and the next thread to get the record must not take
         * that tail entry for its own (onespinner.c).  Nobody waits for
         * this generation to move: a thread leaves only after its lock
         * calls returned.  Relaxed: the arena mutex publishes it with the
         * record; the parked bit is the wait layer's and is kept. */
        uint32_t st = atomic_load_explicit(&ts->monitor->state, memory_order_relaxed);
        atomic_store_explicit(&ts->monitor->state,
                              (st & BATON_MONITOR_GEN_FLAGS) | ((st + 1u) & BATON_MONITOR_GEN_MASK),
                              memory_order_relaxed);
        ts->monitor->pool_next = free_monitors;
        free_monitors = ts->monitor;
        ts->monitor = NULL;
    }
    baton_syslock_unlock(&arena_mutex);
    baton_tls = NULL;
}

/* fork: the child must not inherit arena_mutex held by a thread that does
 * not exist there (a program may fork while another thread takes a node). */
static void fork_prepare(void) { baton_syslock_lock(&arena_mutex); }
static void fork_parent(void) { baton_syslock_unlock(&arena_mutex); }
static void fork_child(void) { baton_syslock_reset(&arena_mutex); }

static void make_key(void)
{
    if (pthread_key_create(&exit_key, thread_exit) != 0 ||
        pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) {
        fprintf(stderr, "baton: pthread_key_create or pthread_atfork failed\n");
        abort();
    }
}

/* The thread's state itself: in static TLS, so that no thread ever waits for
 * memory to get one. */
static _Thread_local baton_thread_state_t own_state __attribute__((tls_model("initial-exec")));

baton_thread_state_t *baton_thread_state_slow(void)
{
    baton_thread_state_t *ts = baton_tls;
    if (BATON_LIKELY(ts != NULL))
        return ts;
    pthread_once(&key_once, make_key);
    ts = &own_state;
    baton_tls = ts;
    pthread_setspecific(exit_key, ts);
    return ts;
}

static baton_qnode_t *qnode_get(bool may_fail)
{
    baton_thread_state_t *ts = baton_thread_state_slow();
    baton_qnode_t *n = ts->pool;
    if (n != NULL) {
        ts->pool = n->pool_next;
    } else {
        baton_syslock_lock(&arena_mutex);
        n = arena_take(&free_nodes, may_fail);
        baton_syslock_unlock(&arena_mutex);
        if (n == NULL)
            return NULL;
    }
    n->pool_next = NULL;
    atomic_store_explicit(&n->owner, baton_thread_token(), memory_order_relaxed);
    return n;
}

baton_qnode_t *baton_qnode_get_slow(void) { return qnode_get(false); }

baton_qnode_t *baton_qnode_try_get(void) { return qnode_get(true); }

int baton_qnode_reserve(unsigned n)
{
    baton_thread_state_t *ts = baton_thread_state_slow();
    unsigned have = 0;
    for (baton_qnode_t *p = ts->pool; p != NULL && have < n; p = p->pool_next)
        have++;
    for (; have < n; have++) {
        baton_qnode_t *q = qnode_get(true);
        if (q == NULL)
            return ENOMEM;
        baton_qnode_put(q);
    }
    return 0;
}

baton_qnode_t *baton_thread_monitor_slow(void)
{
    baton_thread_state_t *ts = baton_thread_state_slow();
    if (ts->monitor != NULL)
        return ts->monitor;
    baton_syslock_lock(&arena_mutex);
    ts->monitor = arena_take(&free_monitors, false);
    baton_syslock_unlock(&arena_mutex);
    return ts->monitor;
}
