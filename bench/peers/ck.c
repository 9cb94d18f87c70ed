/* ck.c - Concurrency Kit spinlocks as peers: fas, ticket, mcs, clh, and
 * the readers-writer spinlock ck_rwlock.
 *
 * MCS and CLH take a queue node per acquisition.  A bench thread holds at
 * most one peer lock at a time, so each thread keeps one node of each kind.
 *
 * The MCS node stays with its thread and is in use from lock to unlock.
 *
 * CLH nodes travel: ck_spinlock_clh_unlock() hands the thread its
 * predecessor's node in place of its own, which stays in the queue for the
 * successor.  So every CLH node is heap memory.  Each lock brings one node
 * (its first tail) and each thread one; when no one holds or waits for a
 * lock, its tail is a node no thread holds, and destroy frees that one.  A
 * thread frees the node it holds when it exits. */
#include <ck_rwlock.h>
#include <ck_spinlock.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "peers_impl.h"

/* --- ck_spinlock_fas: exchange on one word, spins reading it ----------- */

void *bench_peer_ck_fas_create(void)
{
    ck_spinlock_fas_t *lock = bench_peer_alloc(sizeof *lock);
    if (lock != NULL)
        ck_spinlock_fas_init(lock);
    return lock;
}

void bench_peer_ck_fas_destroy(void *lock) { free(lock); }
void bench_peer_ck_fas_lock(void *lock) { ck_spinlock_fas_lock(lock); }
void bench_peer_ck_fas_unlock(void *lock) { ck_spinlock_fas_unlock(lock); }

/* --- ck_spinlock_ticket: fetch-and-add a ticket, spins until served ----- */

void *bench_peer_ck_ticket_create(void)
{
    ck_spinlock_ticket_t *lock = bench_peer_alloc(sizeof *lock);
    if (lock != NULL)
        ck_spinlock_ticket_init(lock);
    return lock;
}

void bench_peer_ck_ticket_destroy(void *lock) { free(lock); }
void bench_peer_ck_ticket_lock(void *lock) { ck_spinlock_ticket_lock(lock); }
void bench_peer_ck_ticket_unlock(void *lock) { ck_spinlock_ticket_unlock(lock); }

/* --- ck_spinlock_mcs: queue of nodes, each waiter spins on its own ------ */

/* This thread's node, on a line of its own: the predecessor writes to it. */
static _Thread_local struct {
    _Alignas(BENCH_PEER_ALIGN) ck_spinlock_mcs_context_t node;
} mcs_self;

void *bench_peer_ck_mcs_create(void)
{
    ck_spinlock_mcs_t *queue = bench_peer_alloc(sizeof *queue);
    if (queue != NULL)
        ck_spinlock_mcs_init(queue);
    return queue;
}

void bench_peer_ck_mcs_destroy(void *lock) { free(lock); }
void bench_peer_ck_mcs_lock(void *lock) { ck_spinlock_mcs_lock(lock, &mcs_self.node); }
void bench_peer_ck_mcs_unlock(void *lock) { ck_spinlock_mcs_unlock(lock, &mcs_self.node); }

/* --- ck_spinlock_clh: queue of nodes, each waiter spins on the one before */

typedef struct {
    ck_spinlock_clh_t *tail; /* on a line of its own (bench_peer_alloc) */
} clh_lock_t;

/* The node this thread will enqueue next; NULL until its first lock. */
static _Thread_local ck_spinlock_clh_t *clh_self;

/* Frees clh_self at thread exit.  Without the key (pthread_key_create
 * failed) an exiting thread leaks one node; locking still works. */
static pthread_key_t clh_key;
static bool clh_key_ok;
static pthread_once_t clh_key_once = PTHREAD_ONCE_INIT;

static void clh_thread_exit(void *unused)
{
    (void)unused;
    free(clh_self);
    clh_self = NULL;
}

static void clh_key_create(void) { clh_key_ok = pthread_key_create(&clh_key, clh_thread_exit) == 0; }

static ck_spinlock_clh_t *clh_thread_node(void)
{
    if (clh_self == NULL) {
        clh_self = bench_peer_alloc(sizeof *clh_self);
        if (clh_self == NULL)
            abort(); /* lock() has no way to report it */
        pthread_once(&clh_key_once, clh_key_create);
        if (clh_key_ok)
            pthread_setspecific(clh_key, &clh_self); /* any non-NULL value */
    }
    return clh_self;
}

void *bench_peer_ck_clh_create(void)
{
    clh_lock_t *lock = bench_peer_alloc(sizeof *lock);
    ck_spinlock_clh_t *unowned = bench_peer_alloc(sizeof *unowned);
    if (lock == NULL || unowned == NULL) {
        free(lock);
        free(unowned);
        return NULL;
    }
    ck_spinlock_clh_init(&lock->tail, unowned);
    return lock;
}

void bench_peer_ck_clh_destroy(void *lock)
{
    clh_lock_t *l = lock;
    if (l != NULL)
        free(l->tail);
    free(l);
}

void bench_peer_ck_clh_lock(void *lock)
{
    clh_lock_t *l = lock;
    ck_spinlock_clh_lock(&l->tail, clh_thread_node());
}

void bench_peer_ck_clh_unlock(void *lock)
{
    (void)lock; /* CLH unlock needs only the node this thread enqueued */
    ck_spinlock_clh_unlock(&clh_self);
}

/* --- ck_rwlock: reader count and writer flag, both spin ------------------
 *
 * A writer raises its flag and then waits for the readers to drain; a
 * reader arriving while the flag is up backs out and waits, so writers are
 * preferred. */

void *bench_peer_ck_rwlock_create(void)
{
    ck_rwlock_t *lock = bench_peer_alloc(sizeof *lock);
    if (lock != NULL)
        ck_rwlock_init(lock);
    return lock;
}

void bench_peer_ck_rwlock_destroy(void *lock) { free(lock); }
void bench_peer_ck_rwlock_lock(void *lock) { ck_rwlock_write_lock(lock); }
void bench_peer_ck_rwlock_unlock(void *lock) { ck_rwlock_write_unlock(lock); }
void bench_peer_ck_rwlock_rlock(void *lock) { ck_rwlock_read_lock(lock); }
void bench_peer_ck_rwlock_runlock(void *lock) { ck_rwlock_read_unlock(lock); }
