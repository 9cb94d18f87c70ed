/* rcl.c - Remote Core Locking (RCL): every operation of a lock runs on a
 * dedicated server thread, pinned to one CPU.
 *
 * Clients never take a lock.  Each client thread owns one mailbox (one
 * cache line) per server; to run an operation it writes the function and
 * its argument into the mailbox and raises the mailbox's state.  The server
 * scans all mailboxes in turn and runs what it finds.  Operations of one
 * server are serialised by construction (one thread runs them), and the
 * data they touch stays in the server's caches instead of moving to
 * whichever core last took a lock.  Only the mailbox line moves, between
 * one client and the server, so many waiting clients do not fight over a
 * shared lock word.
 *
 * Servers.  Up to 64, numbered by the option server=K (default 0),
 * process-wide: several locks may share one server, and a server starts
 * with the first lock that names it and stops (its thread joined) when the
 * last such lock is freed.  It is pinned to cpu=N, or by default to the
 * K-th CPU counted from the end of the process's affinity mask.
 *
 * Mailbox states (the waited-on word; bit 31 is the wait layer's):
 *   EMPTY  -> POSTED   the client publishes an operation
 *   POSTED -> TAKEN    the server accepted a detached one (delegate)
 *   POSTED/TAKEN -> EMPTY  the server has run it
 * A client waits for EMPTY before it posts again, so one thread's
 * operations run in its program order.
 *
 * What a call promises:
 *   execute            returns after the operation has run (state EMPTY);
 *   delegate (post=0)  returns once the server has taken the operation, so
 *                      operations of different threads run in the order
 *                      their baton_delegate() calls returned;
 *   delegate (post=1)  returns as soon as the operation is posted: only each
 *                      thread's own program order is kept, and a later
 *                      call of another thread may run first.
 * Futures are completed by the server right after the operation.
 *
 * An operation running on server S that executes on (or delegates to)
 * another lock served by S runs it inline: S is already the only thread
 * running that lock's operations, and posting would wait for itself.
 * Operations that nest across two servers in both directions deadlock,
 * like two locks taken in opposite orders.
 *
 * Sleeping.  A server that finds nothing for idle_us (default 100 us)
 * parks on its sleep word; the client that posts next wakes it.  Both
 * sides use sequentially consistent accesses (store, then load of the
 * other side's word), so either the client sees the server asleep and
 * wakes it, or the server's last look sees the posted operation.
 *
 * Counters (baton_lock_stats) are the server's, shared by its locks:
 * help_sessions counts scans that ran at least one operation, helped_ops
 * the operations they ran, direct_ops the operations the server ran inline
 * for nested calls.
 *
 * fork(): the server threads do not exist in the child.  The next operation
 * on such a server in the child starts a new thread for it; mailboxes and
 * their contents are kept, so operations posted before the fork run in the
 * child too.  An operation the server was running at the moment of the
 * fork cannot finish in the child: its mailbox is emptied and its future,
 * if any, completed with ECANCELED, so that nothing in the child waits for
 * it forever.
 */
#include "delegate.h"
#include "slots.h"
#include "../core/syslock.h"
#include "../core/error.h"
#include "../locks/kind.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RCL_SERVERS 64
#define RCL_CHUNK 32       /* mailboxes per chunk */
#define RCL_CPU_AUTO 1023  /* cpu option: count from the end of the affinity mask */
#define RCL_IDLE_CHECK 64  /* empty scans between two clock reads */

enum { MB_EMPTY = 0, MB_POSTED = 1, MB_TAKEN = 2 };
enum { MB_DETACHED = 1u << 0, MB_ARGS = 1u << 1 };
enum { OPT_SERVER, OPT_CPU, OPT_POST, OPT_IDLE };

typedef struct rcl_server rcl_server_t;

/* A lock is a server and how its callers wait. */
typedef struct rcl_lock {
    rcl_server_t *server;
    baton_wait_t wait;
    uint32_t post;
} rcl_lock_t;

/* One client thread's mailbox on one server: one cache line. */
typedef struct rcl_mailbox {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t state; /* MB_*, bit 31 for the wait layer */
    /* Written by the client while EMPTY, read by the server after it saw
     * POSTED: plain fields, ordered by the state word. */
    uint32_t flags;                    /* MB_DETACHED, MB_ARGS */
    baton_fn fn;
    /* Atomic only because a lock being freed reads it while the client may
     * already be writing its next operation (see drain()). */
    _Atomic(const rcl_lock_t *) lock;
    baton_future_t *future;
    union {
        void *ctx;                                     /* execute */
        _Alignas(16) unsigned char args[BATON_ARGS_MAX]; /* delegate: the copy */
    } u;
    _Atomic uint32_t owner; /* 1 while a live thread uses it; 0 reusable */
} rcl_mailbox_t;

_Static_assert(sizeof(rcl_mailbox_t) == BATON_CACHELINE, "a mailbox is one cache line");

typedef struct rcl_chunk {
    rcl_mailbox_t box[RCL_CHUNK];
    /* The next chunk, written (under table_mutex) before the chunk count
     * that publishes it. */
    struct rcl_chunk *next;
} rcl_chunk_t;

struct rcl_server {
    /* Read by clients on every operation and by the server on every scan;
     * written rarely. */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t sleep; /* 1: parked, or about to park */
    _Atomic uint32_t stop;                          /* 1: the last lock is gone */
    _Atomic uint32_t gen;     /* fork generation its thread belongs to */
    _Atomic uint32_t nchunks; /* published chunks */
    rcl_chunk_t *head;        /* first chunk; set before nchunks becomes 1 */
    uint64_t idle_ns;
    /* Written by the server thread only. */
    _Alignas(BATON_CACHELINE) _Atomic uint64_t sessions;
    _Atomic uint64_t helped;
    _Atomic uint64_t inlined;
    /* Under table_mutex. */
    _Alignas(BATON_CACHELINE) rcl_chunk_t *tail;
    unsigned refs;
    int index, cpu;
    bool has_thread;
    pthread_t thread;
    baton_slot_owner_t slots; /* hands out mailboxes */
};

/* The server table, chunk appends and thread (re)starts: one mutex, which
 * the fork handlers also take so a child never inherits it half-updated. */
static baton_syslock_t table_mutex = BATON_SYSLOCK_INIT;
static rcl_server_t *servers[RCL_SERVERS];
static _Atomic uint32_t fork_gen; /* bumped in every forked child */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_rc;

/* The server the calling thread runs (NULL for clients). */
static _Thread_local rcl_server_t *self_server __attribute__((tls_model("initial-exec")));

/* How the server publishes TAKEN and EMPTY: always with an exchange that
 * wakes a parked waiter.  The waiters on one mailbox need not share the
 * running operation's policy: the client's next operation may be on
 * another lock of this server with a parking policy, and wait on the same
 * word for this one to finish; a plain store would lose its wake-up.  The
 * exchange costs the server a few cycles, and no system call unless
 * someone sleeps. */
static const baton_wait_t publish_wait = {.kind = BATON_WAIT_PARK};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint32_t mb_state(rcl_mailbox_t *mb, memory_order mo)
{
    return baton_load(&mb->state, mo) & ~BATON_WAIT_PARKED;
}

/* --- the server ----------------------------------------------------------- */

/* Run the operation in a POSTED mailbox. */
static void serve(rcl_mailbox_t *mb)
{
    /* Relaxed: the acquire load of POSTED that brought us here made the
     * client's store visible. */
    const rcl_lock_t *l = baton_load(&mb->lock, memory_order_relaxed);
    const uint32_t flags = mb->flags;
    /* A detached operation runs on the mailbox's own copy of its arguments:
     * the client writes the mailbox again only after it reads EMPTY. */
    void *arg = (flags & MB_ARGS) ? (void *)mb->u.args : mb->u.ctx;
    if (flags & MB_DETACHED) {
        /* Release: pairs with the acquire of the client's wait in
         * rcl_submit() (the call returns: accepted). */
        baton_wait_store(&publish_wait, &mb->state, MB_TAKEN);
    }
    baton_run_op(l, mb->fn, arg, mb->future);
    /* Release: pairs with the client's acquire of EMPTY (what the operation
     * wrote, and our reads of the fields, come before its next post). */
    baton_wait_store(&publish_wait, &mb->state, MB_EMPTY);
}

/* One pass over every mailbox; returns the operations run. */
static uint32_t scan(rcl_server_t *s)
{
    uint32_t ran = 0;
    /* Acquire: pairs with the store in mb_make() that published the chunk
     * (its mailboxes' initial state and the `next` links). */
    const uint32_t n = baton_load(&s->nchunks, memory_order_acquire);
    rcl_chunk_t *c = n ? s->head : NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            c = c->next;
        for (uint32_t j = 0; j < RCL_CHUNK; j++) {
            rcl_mailbox_t *mb = &c->box[j];
            /* Acquire: pairs with the client's POSTED store (seq_cst, so
             * also a release): the fields are visible. */
            if (mb_state(mb, memory_order_acquire) == MB_POSTED) {
                serve(mb);
                ran++;
            }
        }
    }
    return ran;
}

/* The look before sleeping: is anything posted?  seq_cst loads, after the
 * seq_cst store of sleep = 1 (see server_sleep()). */
static bool any_posted(rcl_server_t *s)
{
    /* seq_cst: a chunk published (seq_cst) before a client's POSTED store
     * is seen here if that POSTED store is. */
    const uint32_t n = baton_load(&s->nchunks, memory_order_seq_cst);
    rcl_chunk_t *c = n ? s->head : NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            c = c->next;
        for (uint32_t j = 0; j < RCL_CHUNK; j++)
            if (mb_state(&c->box[j], memory_order_seq_cst) == MB_POSTED)
                return true;
    }
    return false;
}

/* Park until a client posts (or the last lock goes), without losing a
 * wake-up.  Dekker's pattern with the client's post (rcl_submit(), steps 2
 * and 3): we store sleep = 1 then read every mailbox; the client stores
 * POSTED then reads sleep.  All four are seq_cst, so they cannot both miss
 * the other's store: either our look finds the operation, or the client
 * reads 1, exchanges it to 0 and wakes us. */
static void server_sleep(rcl_server_t *s)
{
    baton_store(&s->sleep, 1u, memory_order_seq_cst); /* seq_cst: see above */
    /* seq_cst load of stop: the same pattern with the destroyer's seq_cst
     * store of stop then exchange of sleep (server_stop()). */
    if (any_posted(s) || baton_load(&s->stop, memory_order_seq_cst)) {
        /* Relaxed: only spares clients a needless exchange; nothing is
         * published through it. */
        baton_store(&s->sleep, 0u, memory_order_relaxed);
        return;
    }
    do {
        baton_park(&s->sleep, 1u); /* the kernel re-checks sleep == 1 */
        /* Relaxed: the waker's exchange publishes nothing we need; the
         * next scan reads every mailbox with acquire. */
    } while (baton_load(&s->sleep, memory_order_relaxed) == 1u);
}

static void *server_main(void *arg)
{
    rcl_server_t *s = arg;
    self_server = s;
    char name[16];
    snprintf(name, sizeof name, "baton-rcl%d", s->index);
    (void)pthread_setname_np(pthread_self(), name);

    uint32_t empty_scans = 0;
    uint64_t idle_since = 0;
    for (;;) {
        /* Acquire: pairs with the seq_cst store in server_stop().  Read
         * before the scan, so an empty scan after it proves that nothing
         * posted before the stop is left. */
        const uint32_t stopping = baton_load(&s->stop, memory_order_acquire);
        const uint32_t ran = scan(s);
        if (ran) {
            /* Relaxed, and load-then-store: this thread is the only
             * writer; readers take a racy snapshot. */
            baton_store(&s->sessions, baton_load(&s->sessions, memory_order_relaxed) + 1,
                        memory_order_relaxed);
            baton_store(&s->helped, baton_load(&s->helped, memory_order_relaxed) + ran,
                        memory_order_relaxed);
            empty_scans = 0;
            continue;
        }
        if (stopping)
            break;
        /* Idle.  The server watches many words, so it cannot wait through
         * baton_wait_while_eq(); this loop is its spin-then-park policy:
         * spin for idle_us, then park.  The clock is read once every
         * RCL_IDLE_CHECK empty scans, and at those points the server also
         * yields, so that a client sharing its CPU gets to post. */
        if (empty_scans++ == 0) {
            idle_since = now_ns();
        } else if (empty_scans % RCL_IDLE_CHECK == 0) {
            if (now_ns() - idle_since >= s->idle_ns) {
                server_sleep(s);
                empty_scans = 0;
                continue;
            }
            sched_yield();
        }
        baton_cpu_relax();
    }
    return NULL;
}

/* Start the server's thread, pinned to s->cpu, with every signal blocked (a
 * signal handler must not run in the middle of the operations). */
static int start_thread(rcl_server_t *s)
{
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc != 0)
        return rc;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(s->cpu, &one);
    rc = pthread_attr_setaffinity_np(&attr, sizeof one, &one);
    if (rc == 0) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        rc = pthread_create(&s->thread, &attr, server_main, s);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_attr_destroy(&attr);
    return rc;
}

/* "0-3,6" into buf. */
static void format_mask(const cpu_set_t *m, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && used < size; c++) {
        if (!CPU_ISSET(c, m) || (c > 0 && CPU_ISSET(c - 1, m)))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, m))
            e++;
        int n = e > c ? snprintf(buf + used, size - used, "%s%d-%d", used ? "," : "", c, e)
                      : snprintf(buf + used, size - used, "%s%d", used ? "," : "", c);
        used += n > 0 ? (size_t)n : 0;
    }
}

/* --- mailboxes (the slot owner's callbacks) --------------------------------- */

static void *mb_make(baton_slot_owner_t *o)
{
    rcl_server_t *s = (rcl_server_t *)((char *)o - offsetof(rcl_server_t, slots));
    rcl_mailbox_t *mb = NULL;
    baton_syslock_lock(&table_mutex);
    /* Relaxed: appends happen under table_mutex, which we hold. */
    const uint32_t n = baton_load(&s->nchunks, memory_order_relaxed);
    rcl_chunk_t *c = s->head;
    for (uint32_t i = 0; i < n && !mb; i++, c = c->next) {
        for (uint32_t j = 0; j < RCL_CHUNK; j++) {
            rcl_mailbox_t *b = &c->box[j];
            /* A mailbox whose thread has exited is reused only once the
             * server has run what it left: EMPTY.  Acquire: pairs with the
             * server's release of EMPTY (it has finished with the fields).
             * Nobody can post to it meanwhile: it has no owner. */
            if (baton_load(&b->owner, memory_order_relaxed) != 0 ||
                mb_state(b, memory_order_acquire) != MB_EMPTY)
                continue;
            uint32_t free_ = 0;
            /* Acquire: pairs with the release in mb_release(). */
            if (baton_cas(&b->owner, &free_, 1u, memory_order_acquire, memory_order_relaxed)) {
                mb = b;
                break;
            }
        }
    }
    if (!mb) {
        c = aligned_alloc(BATON_CACHELINE, sizeof *c);
        if (!c) {
            fprintf(stderr, "baton: out of memory for rcl mailboxes\n");
            abort();
        }
        for (uint32_t j = 0; j < RCL_CHUNK; j++) {
            atomic_init(&c->box[j].state, MB_EMPTY);
            atomic_init(&c->box[j].lock, NULL);
            atomic_init(&c->box[j].owner, 0u);
        }
        c->next = NULL;
        atomic_init(&c->box[0].owner, 1u);
        mb = &c->box[0];
        if (s->tail)
            s->tail->next = c;
        else
            s->head = c;
        s->tail = c;
        /* seq_cst (a release too): publishes the chunk to the server's scan
         * (acquire) and to its look before sleeping (seq_cst, any_posted()),
         * before our first POSTED store in it. */
        baton_store(&s->nchunks, n + 1, memory_order_seq_cst);
    }
    baton_syslock_unlock(&table_mutex);
    return mb;
}

/* The thread that used rec has exited. */
static void mb_release(baton_slot_owner_t *o, void *rec)
{
    (void)o;
    rcl_mailbox_t *mb = rec;
    /* Release: pairs with the acquiring CAS in mb_make(): our last writes
     * to the mailbox come before a new owner's. */
    baton_store(&mb->owner, 0u, memory_order_release);
}

/* --- server lifecycle ------------------------------------------------------ */

static void atfork_prepare(void)
{
    baton_syslock_lock(&table_mutex);
}

static void atfork_parent(void)
{
    baton_syslock_unlock(&table_mutex);
}

static void atfork_child(void)
{
    /* Only the forking thread exists here.  A new generation makes every
     * server stale: its next user starts a thread for it (server_revive()).
     * If the forking thread is itself a server (an operation called fork),
     * that server keeps running in the child.  Relaxed: one thread. */
    uint32_t g = baton_load(&fork_gen, memory_order_relaxed) + 1;
    baton_store(&fork_gen, g, memory_order_relaxed);
    if (self_server)
        baton_store(&self_server->gen, g, memory_order_relaxed);
    baton_syslock_unlock(&table_mutex);
}

static void atfork_register(void)
{
    atfork_rc = pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Create server `index` (table_mutex held). */
static int server_create(int index, unsigned cpu_opt, uint64_t idle_us, rcl_server_t **out)
{
    cpu_set_t mask;
    char cpus[256];
    /* The process's mask is its main thread's; the caller's if that one
     * has exited. */
    if (sched_getaffinity(getpid(), sizeof mask, &mask) != 0 &&
        sched_getaffinity(0, sizeof mask, &mask) != 0) {
        int e = errno;
        return baton_fail(e, "rcl server %d: cannot read the process's CPU affinity mask: %s",
                          index, strerror(e));
    }
    format_mask(&mask, cpus, sizeof cpus);
    int cpu = -1;
    if (cpu_opt == RCL_CPU_AUTO) {
        /* The index-th CPU from the end of the mask, wrapping: servers go
         * where a scheduler that fills CPUs from 0 puts clients last. */
        int n = CPU_COUNT(&mask);
        int k = n > 0 ? n - 1 - index % n : -1;
        for (int c = 0; c < CPU_SETSIZE && k >= 0; c++)
            if (CPU_ISSET(c, &mask) && k-- == 0)
                cpu = c;
        if (cpu < 0)
            return baton_fail(EINVAL, "rcl server %d: the process's CPU affinity mask is empty",
                              index);
    } else if (cpu_opt >= CPU_SETSIZE || !CPU_ISSET(cpu_opt, &mask)) {
        return baton_fail(EINVAL, "rcl server %d: cannot pin its thread to CPU %u: not in this "
                                  "process's CPU affinity mask (CPUs %s)", index, cpu_opt, cpus);
    } else {
        cpu = (int)cpu_opt;
    }

    rcl_server_t *s = aligned_alloc(BATON_CACHELINE, sizeof *s);
    if (!s)
        return baton_fail(ENOMEM, "rcl server %d: out of memory", index);
    memset(s, 0, sizeof *s);
    atomic_init(&s->sleep, 0u);
    atomic_init(&s->stop, 0u);
    /* Relaxed: written in the child's fork handler, or under table_mutex. */
    atomic_init(&s->gen, baton_load(&fork_gen, memory_order_relaxed));
    atomic_init(&s->nchunks, 0u);
    atomic_init(&s->sessions, 0u);
    atomic_init(&s->helped, 0u);
    atomic_init(&s->inlined, 0u);
    s->idle_ns = idle_us * 1000u;
    s->index = index;
    s->cpu = cpu;
    s->refs = 1;
    s->slots.make = mb_make;
    s->slots.release = mb_release;
    int rc = baton_slot_owner_register(&s->slots);
    if (rc == 0) {
        rc = start_thread(s);
        if (rc != 0) {
            baton_slot_owner_unregister(&s->slots);
            baton_fail(rc, "rcl server %d: cannot start its thread pinned to CPU %d (CPUs %s): %s",
                       index, cpu, cpus, strerror(rc));
        }
    } else {
        baton_fail(rc, "rcl server %d: cannot register its mailboxes: %s", index, strerror(rc));
    }
    if (rc != 0) {
        free(s);
        return rc;
    }
    s->has_thread = true;
    *out = s;
    return 0;
}

/* After fork(), in the child: give the server a thread again.  What its
 * old thread was running at the fork cannot finish here: empty it, and
 * cancel its future. */
static int server_revive(rcl_server_t *s)
{
    int rc = 0;
    baton_syslock_lock(&table_mutex);
    /* Relaxed: both written under table_mutex (or in the fork handler). */
    const uint32_t g = baton_load(&fork_gen, memory_order_relaxed);
    if (baton_load(&s->gen, memory_order_relaxed) != g) {
        const uint32_t n = baton_load(&s->nchunks, memory_order_relaxed); /* under the mutex */
        rcl_chunk_t *c = s->head;
        for (uint32_t i = 0; i < n; i++, c = c->next)
            for (uint32_t j = 0; j < RCL_CHUNK; j++) {
                rcl_mailbox_t *mb = &c->box[j];
                /* Acquire: pairs with the TAKEN release of the old server. */
                if (mb_state(mb, memory_order_acquire) != MB_TAKEN)
                    continue;
                if (mb->future && !baton_future_ready(mb->future))
                    baton_future_complete(mb->future, ECANCELED);
                baton_wait_store(&publish_wait, &mb->state, MB_EMPTY); /* release, as serve() */
            }
        /* Relaxed: no thread parks on it until the new server exists, and
         * pthread_create() orders this store before it. */
        baton_store(&s->sleep, 0u, memory_order_relaxed);
        rc = start_thread(s);
        s->has_thread = rc == 0;
        if (rc == 0)
            baton_store(&s->gen, g, memory_order_relaxed); /* read relaxed by clients */
        else
            baton_fail(rc, "rcl server %d: cannot restart its thread on CPU %d after fork: %s",
                       s->index, s->cpu, strerror(rc));
    }
    baton_syslock_unlock(&table_mutex);
    return rc;
}

/* The last lock is gone: stop the thread, free everything. */
static void server_stop(rcl_server_t *s, bool alive)
{
    /* seq_cst, then the seq_cst exchange: the server stores sleep = 1 then
     * reads stop (server_sleep()), so either it sees stop or we see it
     * asleep and wake it. */
    baton_store(&s->stop, 1u, memory_order_seq_cst);
    if (baton_xchg(&s->sleep, 0u, memory_order_seq_cst) != 0)
        baton_wake_all(&s->sleep);
    if (alive)
        pthread_join(s->thread, NULL);
    /* No thread hands a mailbox back after this. */
    baton_slot_owner_unregister(&s->slots);
    rcl_chunk_t *c = s->head;
    while (c) {
        rcl_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    free(s);
}

/* Wait until no mailbox of s holds an accepted operation of l, whether its
 * thread is still there or not. */
static void drain(rcl_server_t *s, const rcl_lock_t *l)
{
    for (;;) {
        rcl_mailbox_t *hit = NULL;
        uint32_t v = MB_EMPTY;
        /* Acquire: pairs with the chunk's publication in mb_make(). */
        const uint32_t n = baton_load(&s->nchunks, memory_order_acquire);
        rcl_chunk_t *c = n ? s->head : NULL;
        for (uint32_t i = 0; i < n && !hit; i++) {
            if (i)
                c = c->next;
            for (uint32_t j = 0; j < RCL_CHUNK; j++) {
                rcl_mailbox_t *mb = &c->box[j];
                /* Acquire: pairs with the server's release of EMPTY, so
                 * what l's operations wrote is visible before l is freed;
                 * and with the client's POSTED, so the lock field we read
                 * next is this operation's or a later one's.  A later one
                 * means this one has run. */
                v = mb_state(mb, memory_order_acquire);
                if (v != MB_EMPTY && baton_load(&mb->lock, memory_order_relaxed) == l) {
                    hit = mb;
                    break;
                }
            }
        }
        if (!hit)
            return;
        /* The server publishes with an exchange that wakes parked waiters
         * (publish_wait), so parking here is safe. */
        (void)baton_wait_while_eq(&l->wait, &hit->state, v);
    }
}

/* drain() for the server thread itself (a lock freed by an operation on its
 * own server): run l's posted operations here.  Each thread has at most one
 * operation in its mailbox, so this keeps every thread's program order. */
static void serve_now(rcl_server_t *s, const rcl_lock_t *l)
{
    /* Acquire: pairs with the chunk's publication in mb_make(). */
    const uint32_t n = baton_load(&s->nchunks, memory_order_acquire);
    rcl_chunk_t *c = n ? s->head : NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            c = c->next;
        for (uint32_t j = 0; j < RCL_CHUNK; j++) {
            rcl_mailbox_t *mb = &c->box[j];
            /* Acquire: pairs with the client's POSTED store.  Relaxed lock
             * field: published by it. */
            if (mb_state(mb, memory_order_acquire) == MB_POSTED &&
                baton_load(&mb->lock, memory_order_relaxed) == l)
                serve(mb);
        }
    }
}

/* --- client ---------------------------------------------------------------- */

/* The calling thread is l's server, running an operation: run this one
 * now; the server thread is the only one that runs l's operations. */
static int run_inline(rcl_lock_t *l, baton_fn fn, void *ctx, const void *args, size_t size,
                      baton_future_t *f, uint32_t flags)
{
    rcl_server_t *s = l->server;
    _Alignas(16) unsigned char copy[BATON_ARGS_MAX];
    if (flags & MB_ARGS) {
        if (size)
            memcpy(copy, args, size);
        ctx = copy;
    }
    baton_run_op(l, fn, ctx, f);
    /* Relaxed: only this (the server) thread writes it. */
    baton_store(&s->inlined, baton_load(&s->inlined, memory_order_relaxed) + 1,
                memory_order_relaxed);
    return 0;
}

static int rcl_submit(rcl_lock_t *l, baton_fn fn, void *ctx, const void *args, size_t size,
                      baton_future_t *f, uint32_t flags)
{
    rcl_server_t *s = l->server;
    if (BATON_UNLIKELY(self_server == s))
        return run_inline(l, fn, ctx, args, size, f, flags);
    /* Relaxed: a cheap look; server_revive() re-checks under the mutex. */
    if (BATON_UNLIKELY(baton_load(&s->gen, memory_order_relaxed) !=
                       baton_load(&fork_gen, memory_order_relaxed))) {
        int rc = server_revive(s);
        if (rc != 0)
            return rc;
    }
    rcl_mailbox_t *mb = baton_slot_get(&s->slots);

    /* 1. Our previous (detached) operation may still be POSTED or TAKEN:
     * wait until the server is done with the mailbox.  Acquire: pairs with
     * the server's release of EMPTY. */
    uint32_t v;
    while ((v = mb_state(mb, memory_order_acquire)) != MB_EMPTY)
        (void)baton_wait_while_eq(&l->wait, &mb->state, v);

    /* 2. Fill in, then publish.  seq_cst: a release for the fields (pairs
     * with the server's acquire in scan()), and ordered before the load of
     * sleep below (Dekker's pattern, see server_sleep()).  A plain store is
     * enough: nobody parks on an EMPTY mailbox. */
    mb->flags = flags;
    mb->fn = fn;
    baton_store(&mb->lock, l, memory_order_relaxed); /* published by the store below */
    mb->future = f;
    if (flags & MB_ARGS) {
        if (size)
            memcpy(mb->u.args, args, size);
    } else {
        mb->u.ctx = ctx;
    }
    baton_store(&mb->state, MB_POSTED, memory_order_seq_cst);

    /* 3. Wake the server if it sleeps.  seq_cst load: the other half of
     * Dekker's pattern; the seq_cst exchange makes only one waker pay the
     * system call. */
    if (baton_load(&s->sleep, memory_order_seq_cst) != 0 &&
        baton_xchg(&s->sleep, 0u, memory_order_seq_cst) != 0)
        baton_wake_all(&s->sleep);

    /* 4. Wait as the call promises.  Acquire inside baton_wait_while_eq():
     * pairs with the server's release of TAKEN or EMPTY. */
    if (!(flags & MB_DETACHED)) {
        while ((v = mb_state(mb, memory_order_acquire)) != MB_EMPTY)
            (void)baton_wait_while_eq(&l->wait, &mb->state, v);
    } else if (!l->post) {
        (void)baton_wait_while_eq(&l->wait, &mb->state, MB_POSTED);
    }
    return 0;
}

/* --- registry entry --------------------------------------------------------- */

static int k_init(void *st, const baton_opts_t *o)
{
    rcl_lock_t *l = st;
    const int index = (int)o->value[OPT_SERVER];
    const unsigned cpu = (unsigned)o->value[OPT_CPU];
    l->wait = o->wait;
    l->post = (uint32_t)o->value[OPT_POST];
    l->server = NULL;
    pthread_once(&atfork_once, atfork_register);
    if (atfork_rc != 0)
        return baton_fail(atfork_rc, "rcl: cannot register the fork handlers: %s",
                          strerror(atfork_rc));
    int rc = 0;
    baton_syslock_lock(&table_mutex);
    rcl_server_t *s = servers[index];
    if (s) {
        /* A server's idle budget is the one its first lock asked for. */
        if (cpu != RCL_CPU_AUTO && (int)cpu != s->cpu)
            rc = baton_fail(EINVAL, "rcl server %d already runs on CPU %d, but this lock asks for "
                                    "cpu=%u; leave cpu unset or name another server=",
                            index, s->cpu, cpu);
        else
            s->refs++;
    } else {
        rc = server_create(index, cpu, o->value[OPT_IDLE], &s);
        if (rc == 0)
            servers[index] = s;
    }
    baton_syslock_unlock(&table_mutex);
    if (rc == 0)
        l->server = s;
    return rc;
}

static int k_destroy(void *st)
{
    rcl_lock_t *l = st;
    rcl_server_t *s = l->server;
    if (BATON_UNLIKELY(self_server == s)) {
        /* Freed by an operation running on its own server: waiting would
         * wait for ourselves.  We are the thread that runs l's operations,
         * so run what is posted for it now; joining the server is
         * impossible from here, so the last lock of a server gives EBUSY. */
        serve_now(s, l);
        int rc = 0;
        baton_syslock_lock(&table_mutex);
        if (s->refs == 1)
            rc = EBUSY;
        else
            s->refs--;
        baton_syslock_unlock(&table_mutex);
        return rc;
    }
    /* In a forked child the server may have no thread yet: start one, so
     * that what was posted before the fork runs. */
    bool alive = true;
    if (baton_load(&s->gen, memory_order_relaxed) != baton_load(&fork_gen, memory_order_relaxed))
        alive = server_revive(s) == 0; /* relaxed: a look, re-checked under the mutex */
    if (alive)
        drain(s, l);
    baton_syslock_lock(&table_mutex);
    const bool last = --s->refs == 0;
    if (last)
        servers[s->index] = NULL;
    alive = s->has_thread;
    baton_syslock_unlock(&table_mutex);
    if (last)
        server_stop(s, alive);
    return 0;
}

static int k_execute(void *st, baton_fn fn, void *ctx)
{
    return rcl_submit(st, fn, ctx, NULL, 0, NULL, 0);
}

static int k_delegate(void *st, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    return rcl_submit(st, fn, NULL, args, size, f, MB_DETACHED | MB_ARGS);
}

static void k_stats(void *st, baton_stats_t *out)
{
    rcl_server_t *s = ((rcl_lock_t *)st)->server;
    /* Relaxed: a racy snapshot. */
    out->help_sessions = baton_load(&s->sessions, memory_order_relaxed);
    out->helped_ops = baton_load(&s->helped, memory_order_relaxed);
    out->direct_ops = baton_load(&s->inlined, memory_order_relaxed);
}

static const baton_option_desc_t rcl_options[] = {
    [OPT_SERVER] = {"server", 0, RCL_SERVERS - 1, 0, "the server thread that runs the operations"},
    [OPT_CPU] = {"cpu", 0, RCL_CPU_AUTO, RCL_CPU_AUTO,
                 "CPU the server is pinned to; 1023: the server-th CPU from the end of the mask"},
    [OPT_POST] = {"post", 0, 1, 0,
                  "1: delegate returns once posted (only each thread's own order is kept)"},
    [OPT_IDLE] = {"idle_us", 1, 1000000, 100, "how long an idle server scans before it parks"},
};

const baton_kind_t baton_kind_rcl = {
    .name = "rcl",
    .summary = "remote core locking: a pinned server thread runs every operation (post=1: "
               "per-thread order only)",
    .caps = BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_DETACH | BATON_CAP_WAIT |
            BATON_CAP_SERVER | BATON_CAP_NOCOLLAPSE,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(rcl_lock_t), .align = _Alignof(rcl_lock_t),
    .options = rcl_options, .noptions = sizeof rcl_options / sizeof rcl_options[0],
    .init = k_init, .destroy = k_destroy,
    .execute = k_execute, .delegate = k_delegate, .stats = k_stats,
};
