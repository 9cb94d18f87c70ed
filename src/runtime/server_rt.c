/* server_rt.c - the server runtime shared by rcl and the lock servers (see
 * server_rt.h for the two kinds of traffic).
 *
 * Servers.  Up to 64 top-level servers, numbered by the locks' server=K
 * option, process-wide: several locks (of rcl and of the lock-server kinds
 * alike) may share one, and a server starts with the first lock that names
 * it and stops (its thread joined) when the last reference goes.  It is
 * pinned to cpu=N, or by default to the K-th CPU counted from the end of the
 * process's affinity mask.  Local servers (hierarchical locks) are keyed by
 * (top-level server, grouping, group), pinned to the highest CPU of their
 * group that is not their top-level server's, and hold a reference to
 * their top-level server.
 *
 * Mailboxes.  One per (client thread, server), two cache lines, made on the
 * thread's first use (slots.h: no thread limit), handed back when the
 * thread exits and reused once the server has finished with them.
 *
 * The scan.  The server passes over every mailbox: an operation POSTED in
 * line 0 is run (serve()); a lock request in line 1 that the server has
 * not consumed yet (req != seen) goes to the lock engine's hook.  Then the
 * engine polls its active lock instances (releases are written into the
 * lock, not into a mailbox: see src/server/server.h).  Operations run
 * without msg_mutex; lock messages are handled with it (fork, below).
 *
 * Sleeping.  A server that finds nothing for idle_us (default 100 us) parks
 * on its sleep word; whoever posts next wakes it (srt_wake()).  Both sides
 * use sequentially consistent accesses (store, then load of the other
 * side's word), so either the poster sees the server asleep and wakes it,
 * or the server's last look sees the post.
 *
 * fork(): the server threads do not exist in the child.  The next user of
 * such a server in the child starts a new thread for it; mailboxes and their
 * contents are kept, so operations and lock messages posted before the fork
 * are served in the child too.  An operation the server was running at the
 * moment of the fork cannot finish in the child: its mailbox is emptied and
 * its future, if any, completed with ECANCELED.  Lock messages are handled
 * under the server's msg_mutex, which the fork handlers take, so the lock
 * state is never copied half-updated; the engine's revive hook then forgets
 * the waiters whose threads are gone (only the forking thread survives).
 */
#include "server_rt.h"
#include "../base/cs.h"
#include "../base/error.h"
#include "../base/join.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SRT_IDLE_CHECK 64 /* empty scans between two clock reads */

/* The server table, the local servers, chunk appends and thread (re)starts:
 * one mutex, which the fork handlers also take so a child never inherits
 * it half-updated. */
static baton_syslock_t table_mutex = BATON_SYSLOCK_INIT;
static srt_server_t *servers[SRT_SERVERS];
static srt_server_t *locals; /* linked through next_local */
/* Stopped servers.  Their structures are kept for reuse, never freed: a
 * thread that has just released a lock (or posted) may still be looking at
 * the server's sleep word (srt_wake()) when another thread frees the last
 * lock and stops the server. */
static srt_server_t *retired;
_Atomic uint32_t srt_fork_gen_; /* bumped in every forked child */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_rc;
static _Atomic(const srt_lock_hooks_t *) lock_hooks;

/* The server the calling thread runs (NULL for clients). */
static _Thread_local srt_server_t *self_server __attribute__((tls_model("initial-exec")));

/* How the server publishes TAKEN and EMPTY: always with an exchange that
 * wakes a parked waiter.  The waiters on one mailbox need not share the
 * running operation's policy: the client's next operation may be on
 * another lock of this server with a parking policy, and wait on the same
 * word for this one to finish; a plain store would lose its wake-up.  The
 * exchange costs the server a few cycles, and no system call unless
 * someone sleeps. */
const baton_wait_t srt_publish_wait = {.kind = BATON_WAIT_PARK};

srt_server_t *srt_self(void) { return self_server; }

void srt_set_lock_hooks(const srt_lock_hooks_t *h)
{
    /* Release: pairs with the acquire loads below (a server that sees a
     * lock request sees the hooks: the lock's init, which set them, comes
     * before any request for it). */
    baton_store(&lock_hooks, h, memory_order_release);
}

static inline const srt_lock_hooks_t *hooks(void)
{
    return baton_load(&lock_hooks, memory_order_acquire); /* pairs with the store above */
}

static inline uint32_t mb_state(srt_mailbox_t *mb, memory_order mo)
{
    return baton_load(&mb->state, mo) & ~BATON_WAIT_PARKED;
}

/* A lock request the server has not consumed?  `mo` for the request word;
 * seen is written by the server thread only, and read by it here. */
static inline bool mb_request(srt_mailbox_t *mb, memory_order mo)
{
    return baton_load(&mb->w.req, mo) != baton_load(&mb->seen, memory_order_relaxed);
}

/* --- the server ----------------------------------------------------------- */

/* Run the operation in a POSTED mailbox. */
static void serve(srt_mailbox_t *mb)
{
    /* Relaxed: the acquire load of POSTED that brought us here made the
     * client's store visible. */
    const void *l = baton_load(&mb->lock, memory_order_relaxed);
    const uint32_t flags = mb->flags;
    /* A detached operation runs on the mailbox's own copy of its arguments:
     * the client writes the mailbox again only after it reads EMPTY. */
    void *arg = (flags & MB_ARGS) ? (void *)mb->u.args : mb->u.ctx;
    if (flags & MB_DETACHED) {
        /* Release: pairs with the acquire of the client's wait in
         * rcl_submit() (the call returns: accepted). */
        baton_wait_store(&srt_publish_wait, &mb->state, MB_TAKEN);
    }
    baton_run_op(l, mb->fn, arg, mb->future);
    /* Release: pairs with the client's acquire of EMPTY (what the operation
     * wrote, and our reads of the fields, come before its next post). */
    baton_wait_store(&srt_publish_wait, &mb->state, MB_EMPTY);
}

/* Hand a lock request to the engine, under msg_mutex (fork). */
static void lock_request(srt_server_t *s, srt_mailbox_t *mb)
{
    baton_syslock_lock(&s->msg_mutex);
    hooks()->request(s, mb);
    baton_syslock_unlock(&s->msg_mutex);
}

/* A walk over the mailboxes of a server's first n chunks, n read by the
 * caller with the order its use needs.  It never follows the link out of
 * the n-th chunk: a chunk being appended is linked before it is counted. */
typedef struct srt_walk {
    srt_chunk_t *c;   /* the current chunk (NULL: done) */
    uint32_t left, j; /* chunks after c still counted; next box in c */
} srt_walk_t;

static inline srt_walk_t walk_start(srt_server_t *s, uint32_t n)
{
    return (srt_walk_t){.c = n ? s->head : NULL, .left = n ? n - 1 : 0, .j = 0};
}

static inline srt_mailbox_t *walk_next(srt_walk_t *w)
{
    if (w->c && w->j == SRT_CHUNK) {
        w->c = w->left ? w->c->next : NULL;
        w->left -= w->left != 0;
        w->j = 0;
    }
    return w->c ? &w->c->box[w->j++] : NULL;
}

/* One pass over every mailbox; returns the operations run, and adds the
 * lock requests handled to *msgs. */
static uint32_t scan(srt_server_t *s, uint32_t *msgs)
{
    uint32_t ran = 0;
    /* Acquire: pairs with the store in mb_make() that published the chunk
     * (its mailboxes' initial state and the `next` links). */
    srt_walk_t wk = walk_start(s, baton_load(&s->nchunks, memory_order_acquire));
    for (srt_mailbox_t *mb; (mb = walk_next(&wk)) != NULL;) {
        /* Acquire: pairs with the client's POSTED store (seq_cst, so also
         * a release): the fields are visible. */
        if (mb_state(mb, memory_order_acquire) == MB_POSTED) {
            serve(mb);
            ran++;
        }
        /* Acquire: pairs with the client's seq_cst bump of req (the
         * request's fields are visible). */
        if (mb_request(mb, memory_order_acquire)) {
            lock_request(s, mb);
            (*msgs)++;
        }
    }
    return ran;
}

/* The engine's polling of its lock instances, under msg_mutex (fork). */
static uint32_t lock_poll(srt_server_t *s)
{
    /* Plain reads: written by this thread (or by the reviver before it
     * started). */
    if (s->active == NULL && s->out_head == NULL)
        return 0;
    baton_syslock_lock(&s->msg_mutex);
    uint32_t n = hooks()->poll(s);
    baton_syslock_unlock(&s->msg_mutex);
    return n;
}

void srt_pump(srt_server_t *s)
{
    /* Acquire: pairs with the chunk's publication in mb_make(). */
    srt_walk_t wk = walk_start(s, baton_load(&s->nchunks, memory_order_acquire));
    for (srt_mailbox_t *mb; (mb = walk_next(&wk)) != NULL;)
        if (mb_request(mb, memory_order_acquire)) /* as in scan() */
            lock_request(s, mb);
    (void)lock_poll(s);
}

/* The look before sleeping: is anything posted?  seq_cst loads, after the
 * seq_cst store of sleep = 1 (see server_sleep()). */
static bool any_posted(srt_server_t *s)
{
    /* seq_cst: a chunk published (seq_cst) before a client's POSTED store
     * is seen here if that POSTED store is. */
    srt_walk_t wk = walk_start(s, baton_load(&s->nchunks, memory_order_seq_cst));
    for (srt_mailbox_t *mb; (mb = walk_next(&wk)) != NULL;)
        if (mb_state(mb, memory_order_seq_cst) == MB_POSTED || mb_request(mb, memory_order_seq_cst))
            return true;
    const srt_lock_hooks_t *h = hooks();
    return h != NULL && (s->active != NULL || s->out_head != NULL) && h->pending(s);
}

/* Park until a client posts (or the last reference goes), without losing a
 * wake-up.  Dekker's pattern with the poster (srt_wake()): we store
 * sleep = 1 then read every mailbox and lock word we serve; the poster
 * stores its message then reads sleep.  All are seq_cst, so they cannot
 * both miss the other's store: either our look finds the message, or the
 * poster reads 1, exchanges it to 0 and wakes us. */
static void server_sleep(srt_server_t *s)
{
    /* The engine's own clock (a lease to take back): park until then at
     * most.  Read before the look: the state it depends on is this
     * thread's. */
    const srt_lock_hooks_t *h = hooks();
    const uint64_t until = h != NULL && (s->active != NULL || s->out_head != NULL) ? h->wake_at(s) : 0;
    baton_store(&s->sleep, 1u, memory_order_seq_cst); /* seq_cst: see above */
    /* seq_cst load of stop: the same pattern with the destroyer's seq_cst
     * store of stop then exchange of sleep (server_stop()). */
    if (any_posted(s) || baton_load(&s->stop, memory_order_seq_cst)) {
        /* Relaxed: only spares posters a needless exchange; nothing is
         * published through it. */
        baton_store(&s->sleep, 0u, memory_order_relaxed);
        return;
    }
    do {
        if (until) {
            const uint64_t now = baton_now_ns();
            if (now >= until) {
                /* Time is up: look again.  A poster that read sleep == 1
                 * meanwhile exchanges it and wakes nobody, harmlessly.
                 * Relaxed: as below. */
                baton_store(&s->sleep, 0u, memory_order_relaxed);
                return;
            }
            baton_park_timeout(&s->sleep, 1u, until - now);
        } else {
            baton_park(&s->sleep, 1u); /* the kernel re-checks sleep == 1 */
        }
        /* Relaxed: the waker's exchange publishes nothing we need; the
         * next scan reads every mailbox with acquire. */
    } while (baton_load(&s->sleep, memory_order_relaxed) == 1u);
}

static void *server_main(void *arg)
{
    srt_server_t *s = arg;
    self_server = s;
    /* A local server asks its upstream server for locks through a mailbox
     * of its own there: made now, before any lock message (mb_make() takes
     * the table mutex, which must never be waited for under msg_mutex). */
    if (s->upstream)
        s->out_mb = srt_mailbox(s->upstream);

    uint32_t empty_scans = 0;
    uint64_t idle_since = 0;
    for (;;) {
        /* Acquire: pairs with the seq_cst store in server_stop().  Read
         * before the scan, so an empty scan after it proves that nothing
         * posted before the stop is left. */
        const uint32_t stopping = baton_load(&s->stop, memory_order_acquire);
        uint32_t msgs = 0;
        const uint32_t ran = scan(s, &msgs);
        msgs += lock_poll(s);
        if (ran) {
            /* Relaxed, and load-then-store: this thread is the only
             * writer; readers take a racy snapshot. */
            baton_store(&s->sessions, baton_load(&s->sessions, memory_order_relaxed) + 1,
                        memory_order_relaxed);
            baton_store(&s->helped, baton_load(&s->helped, memory_order_relaxed) + ran, memory_order_relaxed);
        }
        if (ran || msgs) {
            empty_scans = 0;
            continue;
        }
        if (stopping)
            break;
        /* Idle.  The server watches many words, so it cannot wait through
         * baton_wait_while_eq(); this loop is its spin-then-park policy:
         * spin for idle_us, then park.  The clock is read once every
         * SRT_IDLE_CHECK empty scans, and at those points the server also
         * yields, so that a client sharing its CPU gets to post. */
        if (empty_scans++ == 0) {
            idle_since = baton_now_ns();
        } else if (empty_scans % SRT_IDLE_CHECK == 0) {
            if (baton_now_ns() - idle_since >= s->idle_ns) {
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
static int start_thread(srt_server_t *s)
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
        rc = baton_thread_start_masked(&s->thread, &attr, server_main, s);
    }
    if (rc == 0) {
        /* Named here rather than by the thread, so that the name is there
         * when the lock that started it is. */
        char name[32]; /* the kernel keeps 15 characters */
        if (s->group < 0)
            snprintf(name, sizeof name, "baton-srv%d", s->index);
        else
            snprintf(name, sizeof name, "baton-srv%dg%d", s->index, s->group);
        name[15] = '\0';
        (void)pthread_setname_np(s->thread, name);
    }
    pthread_attr_destroy(&attr);
    return rc;
}

/* "0-3,6" into buf. */
static void format_mask(const cpu_set_t *m, char *buf, size_t size)
{
    bool fits = true;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && fits; c++) {
        if (!CPU_ISSET(c, m) || (c > 0 && CPU_ISSET(c - 1, m)))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, m))
            e++;
        fits = e > c ? baton_join(buf, size, ",", "%d-%d", c, e) : baton_join(buf, size, ",", "%d", c);
    }
}

/* --- mailboxes (the slot owner's callbacks) --------------------------------- */

static void mb_init(srt_mailbox_t *b, uint32_t owner, uint32_t gen)
{
    memset(b, 0, sizeof *b); /* fresh memory no other thread can see yet */
    atomic_init(&b->state, MB_EMPTY);
    atomic_init(&b->lock, NULL);
    atomic_init(&b->owner, owner);
    atomic_init(&b->seen, 0u);
    atomic_init(&b->link.gen, gen);
    atomic_init(&b->w.grant, SRT_WAITING);
    atomic_init(&b->w.req, 0u);
    b->w.lnk = &b->link;
    b->w.req_for = &b->w;
}

static void *mb_make(baton_slot_owner_t *o)
{
    srt_server_t *s = (srt_server_t *)((char *)o - offsetof(srt_server_t, slots));
    srt_mailbox_t *mb = NULL;
    baton_syslock_lock(&table_mutex);
    /* Relaxed: written in the child's fork handler or under table_mutex,
     * which we hold. */
    const uint32_t gen = baton_load(&srt_fork_gen_, memory_order_relaxed);
    /* Relaxed: appends happen under table_mutex, which we hold. */
    const uint32_t n = baton_load(&s->nchunks, memory_order_relaxed);
    srt_walk_t wk = walk_start(s, n);
    for (srt_mailbox_t *b; mb == NULL && (b = walk_next(&wk)) != NULL;) {
        /* A mailbox whose thread has exited is reused only once the server
         * has run what it left (EMPTY) and consumed its last lock request.
         * Acquire: pairs with the server's release of EMPTY and of seen (it
         * has finished with the fields).  Nobody can post to it meanwhile:
         * it has no owner. */
        if (baton_load(&b->owner, memory_order_relaxed) != 0 ||
            mb_state(b, memory_order_acquire) != MB_EMPTY ||
            baton_load(&b->seen, memory_order_acquire) !=
                baton_load(&b->w.req, memory_order_relaxed)) /* relaxed: its writer exited */
            continue;
        uint32_t free_ = 0;
        /* Acquire: pairs with the release in mb_release(). */
        if (baton_cas(&b->owner, &free_, 1u, memory_order_acquire, memory_order_relaxed)) {
            /* Relaxed: read by servers and passers after this thread's
             * first request (which publishes it). */
            baton_store(&b->link.gen, gen, memory_order_relaxed);
            mb = b;
        }
    }
    if (!mb) {
        srt_chunk_t *c = aligned_alloc(BATON_CACHELINE, sizeof *c);
        if (!c) {
            fprintf(stderr, "baton: out of memory for server mailboxes\n");
            abort();
        }
        for (uint32_t j = 0; j < SRT_CHUNK; j++)
            mb_init(&c->box[j], j == 0, gen);
        c->next = NULL;
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
    srt_mailbox_t *mb = rec;
    /* Release: pairs with the acquiring CAS in mb_make(): our last writes
     * to the mailbox come before a new owner's. */
    baton_store(&mb->owner, 0u, memory_order_release);
}

void srt_each_mailbox(srt_server_t *s, void (*fn)(srt_server_t *, srt_mailbox_t *))
{
    /* Acquire: pairs with the chunk's publication in mb_make(). */
    srt_walk_t wk = walk_start(s, baton_load(&s->nchunks, memory_order_acquire));
    for (srt_mailbox_t *mb; (mb = walk_next(&wk)) != NULL;)
        fn(s, mb);
}

/* --- server lifecycle ------------------------------------------------------ */

static void atfork_prepare(void)
{
    baton_syslock_lock(&table_mutex);
    /* No server may be in the middle of a lock message when memory is
     * copied.  A server never waits for the table mutex (or anything else)
     * while it holds its msg_mutex, so this cannot deadlock. */
    for (int i = 0; i < SRT_SERVERS; i++)
        if (servers[i])
            baton_syslock_lock(&servers[i]->msg_mutex);
    for (srt_server_t *s = locals; s; s = s->next_local)
        baton_syslock_lock(&s->msg_mutex);
}

static void atfork_parent(void)
{
    for (srt_server_t *s = locals; s; s = s->next_local)
        baton_syslock_unlock(&s->msg_mutex);
    for (int i = 0; i < SRT_SERVERS; i++)
        if (servers[i])
            baton_syslock_unlock(&servers[i]->msg_mutex);
    baton_syslock_unlock(&table_mutex);
}

/* In the child: the forking thread's mailboxes live on; every other
 * thread's mailbox is dead (link.gen stays old).  Only the forking
 * thread's per-thread table says which are its own; an entry is trusted
 * only if its owner is a live server (entries of freed owners dangle). */
static void adopt_own_mailboxes(uint32_t g)
{
    baton_slot_table_t *t = &baton_slots;
    for (uint32_t i = 0; i < t->n; i++) {
        srt_server_t *owner = NULL;
        for (int k = 0; k < SRT_SERVERS && !owner; k++)
            if (servers[k] && &servers[k]->slots == t->e[i].owner &&
                servers[k]->slots.serial == t->e[i].serial)
                owner = servers[k];
        for (srt_server_t *s = locals; s && !owner; s = s->next_local)
            if (&s->slots == t->e[i].owner && s->slots.serial == t->e[i].serial)
                owner = s;
        if (owner) {
            srt_mailbox_t *mb = t->e[i].record;
            baton_store(&mb->link.gen, g, memory_order_relaxed); /* relaxed: one thread */
        }
    }
}

static void atfork_child(void)
{
    /* Only the forking thread exists here.  A new generation makes every
     * server stale: its next user starts a thread for it (srt_revive()).
     * If the forking thread is itself a server (an operation called fork),
     * that server keeps running in the child.  Relaxed: one thread. */
    uint32_t g = baton_load(&srt_fork_gen_, memory_order_relaxed) + 1;
    if (g == SRT_IMMORTAL)
        g = 1; /* 0 means "never forked" to the lock engine */
    baton_store(&srt_fork_gen_, g, memory_order_relaxed);
    adopt_own_mailboxes(g);
    if (self_server) {
        baton_store(&self_server->gen, g, memory_order_relaxed);
        /* It is never revived: forget its lost waiters now (it was running
         * an operation, not a lock message, so its lock state is whole). */
        const srt_lock_hooks_t *h = hooks();
        if (h)
            h->revive(self_server);
    }
    for (int i = 0; i < SRT_SERVERS; i++)
        if (servers[i])
            baton_syslock_reset(&servers[i]->msg_mutex);
    for (srt_server_t *s = locals; s; s = s->next_local)
        baton_syslock_reset(&s->msg_mutex);
    baton_syslock_unlock(&table_mutex);
}

static void atfork_register(void) { atfork_rc = pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

static int atfork_ready(const char *who)
{
    pthread_once(&atfork_once, atfork_register);
    if (atfork_rc != 0)
        return baton_fail(atfork_rc, "%s: cannot register the fork handlers: %s", who, strerror(atfork_rc));
    return 0;
}

/* The process's CPU mask (its main thread's; the caller's if that one has
 * exited). */
static int process_mask(const char *who, int index, cpu_set_t *mask, char *cpus, size_t size)
{
    if (sched_getaffinity(getpid(), sizeof *mask, mask) != 0 &&
        sched_getaffinity(0, sizeof *mask, mask) != 0) {
        int e = errno;
        return baton_fail(e, "%s server %d: cannot read the process's CPU affinity mask: %s", who, index,
                          strerror(e));
    }
    format_mask(mask, cpus, size);
    return 0;
}

/* Create a server pinned to `cpu` (table_mutex held). */
static int server_create(const char *who, int index, int group, int groups_want, int cpu, const char *cpus,
                         uint64_t idle_us, srt_server_t *up, srt_server_t **out)
{
    srt_server_t *s = retired;
    /* Relaxed: written in the child's fork handler, or under table_mutex. */
    const uint32_t gen = baton_load(&srt_fork_gen_, memory_order_relaxed);
    if (s) {
        /* Reused: a late srt_wake() may still exchange its sleep word, so
         * the atomics are stored, not initialised.  Relaxed: the new
         * thread starts after these (pthread_create orders them). */
        retired = s->next_local;
        baton_store(&s->sleep, 0u, memory_order_relaxed);
        baton_store(&s->stop, 0u, memory_order_relaxed);
        baton_store(&s->gen, gen, memory_order_relaxed);
        baton_store(&s->nchunks, 0u, memory_order_relaxed);
        baton_store(&s->sessions, 0u, memory_order_relaxed);
        baton_store(&s->helped, 0u, memory_order_relaxed);
        baton_store(&s->inlined, 0u, memory_order_relaxed);
        baton_store(&s->msg_mutex.word, 0u, memory_order_relaxed);
        s->head = s->tail = NULL;
        s->active = s->out_head = s->out_tail = NULL;
        s->out_mb = NULL;
        s->next_local = NULL;
        s->has_thread = false;
    } else {
        s = aligned_alloc(BATON_CACHELINE, sizeof *s);
        if (!s)
            return baton_fail(ENOMEM, "%s server %d: out of memory", who, index);
        memset(s, 0, sizeof *s);
        atomic_init(&s->sleep, 0u);
        atomic_init(&s->stop, 0u);
        atomic_init(&s->gen, gen);
        atomic_init(&s->nchunks, 0u);
        atomic_init(&s->sessions, 0u);
        atomic_init(&s->helped, 0u);
        atomic_init(&s->inlined, 0u);
        atomic_init(&s->msg_mutex.word, 0u);
    }
    s->idle_ns = idle_us * 1000u;
    s->index = index;
    s->group = group;
    s->groups_want = groups_want;
    s->cpu = cpu;
    s->refs = 1;
    s->upstream = up;
    s->slots.make = mb_make;
    s->slots.release = mb_release;
    /* A first chunk of free mailboxes now, where running out of memory is an
     * error the caller gets: a thread's first lock or request on the server
     * then takes one (mb_make()) and allocates nothing, for the first
     * SRT_CHUNK client threads.  (Without it a lock that baton_lock_new()
     * made could abort in its first baton_lock() under memory pressure:
     * test_exhaust's servers, stopped with their last lock and started
     * again, met that when other kinds' sizes changed where the limit
     * fell.)  The thread starts after these stores (pthread_create orders
     * them), and clients find the server under table_mutex. */
    srt_chunk_t *first = aligned_alloc(BATON_CACHELINE, sizeof *first);
    if (!first) {
        s->next_local = retired;
        retired = s;
        return baton_fail(ENOMEM, "%s server %d: out of memory for its mailboxes", who, index);
    }
    for (uint32_t j = 0; j < SRT_CHUNK; j++)
        mb_init(&first->box[j], 0u, gen);
    first->next = NULL;
    s->head = s->tail = first;
    baton_store(&s->nchunks, 1u, memory_order_relaxed); /* relaxed: see above */
    int rc = baton_slot_owner_register(&s->slots);
    if (rc == 0) {
        rc = start_thread(s);
        if (rc != 0) {
            baton_slot_owner_unregister(&s->slots);
            if (group < 0)
                baton_fail(rc, "%s server %d: cannot start its thread pinned to CPU %d (CPUs %s): %s", who,
                           index, cpu, cpus, strerror(rc));
            else
                baton_fail(rc,
                           "%s server %d, group %d: cannot start its local server pinned to "
                           "CPU %d (CPUs %s): %s",
                           who, index, group, cpu, cpus, strerror(rc));
        }
    } else {
        baton_fail(rc, "%s server %d: cannot register its mailboxes: %s", who, index, strerror(rc));
    }
    if (rc != 0) {
        free(first); /* no thread ever saw it */
        s->head = s->tail = NULL;
        baton_store(&s->nchunks, 0u, memory_order_relaxed); /* relaxed: as above */
        s->next_local = retired;
        retired = s;
        return rc;
    }
    s->has_thread = true;
    *out = s;
    return 0;
}

int srt_get(const char *who, int index, unsigned cpu_opt, uint64_t idle_us, srt_server_t **out)
{
    int rc = atfork_ready(who);
    if (rc != 0)
        return rc;
    baton_syslock_lock(&table_mutex);
    srt_server_t *s = servers[index];
    if (s) {
        /* A server's idle budget is the one its first lock asked for. */
        if (cpu_opt != SRT_CPU_AUTO && (int)cpu_opt != s->cpu)
            rc = baton_fail(EINVAL,
                            "%s server %d already runs on CPU %d, but this lock asks for "
                            "cpu=%u; leave cpu unset or name another server=",
                            who, index, s->cpu, cpu_opt);
        else
            s->refs++;
    } else {
        cpu_set_t mask;
        char cpus[256];
        rc = process_mask(who, index, &mask, cpus, sizeof cpus);
        int cpu = -1;
        if (rc == 0 && cpu_opt == SRT_CPU_AUTO) {
            /* The index-th CPU from the end of the mask, wrapping: servers
             * go where a scheduler that fills CPUs from 0 puts clients
             * last. */
            int n = CPU_COUNT(&mask);
            int k = n > 0 ? n - 1 - index % n : -1;
            for (int c = 0; c < CPU_SETSIZE && k >= 0; c++)
                if (CPU_ISSET(c, &mask) && k-- == 0)
                    cpu = c;
            if (cpu < 0)
                rc = baton_fail(EINVAL, "%s server %d: the process's CPU affinity mask is empty", who, index);
        } else if (rc == 0 && (cpu_opt >= CPU_SETSIZE || !CPU_ISSET(cpu_opt, &mask))) {
            rc = baton_fail(EINVAL,
                            "%s server %d: cannot pin its thread to CPU %u: not in this "
                            "process's CPU affinity mask (CPUs %s)",
                            who, index, cpu_opt, cpus);
        } else {
            cpu = (int)cpu_opt;
        }
        if (rc == 0)
            rc = server_create(who, index, -1, 0, cpu, cpus, idle_us, NULL, &s);
        if (rc == 0)
            servers[index] = s;
    }
    baton_syslock_unlock(&table_mutex);
    if (rc == 0)
        *out = s;
    return rc;
}

int srt_get_local(const char *who, srt_server_t *up, int groups_want, int group, const uint16_t *cpu_group,
                  int ncpus, uint64_t idle_us, srt_server_t **out)
{
    int rc = 0;
    baton_syslock_lock(&table_mutex);
    srt_server_t *s = locals;
    while (s && !(s->upstream == up && s->groups_want == groups_want && s->group == group))
        s = s->next_local;
    if (s) {
        s->refs++;
    } else {
        cpu_set_t mask;
        char cpus[256];
        rc = process_mask(who, up->index, &mask, cpus, sizeof cpus);
        /* The group's highest CPU (where clients that fill a group from its
         * first CPU come last), other than the top-level server's: the two
         * servers exchange a message for every grant, and two busy
         * pollers on one CPU pass each message only when one of them
         * yields or its time slice ends (one group, as on most single-
         * socket machines, made its highest CPU the top-level server's
         * own: 0.04-0.2 Mops/s at one client on 16 cores).  A group outside
         * the mask gets the mask's last CPU, again other than the
         * top-level server's; a group or mask with no other CPU shares it. */
        int cpu = -1, shared = -1, last = -1, last_shared = -1;
        for (int c = 0; rc == 0 && c < CPU_SETSIZE; c++) {
            if (!CPU_ISSET(c, &mask))
                continue;
            const bool upstream = c == up->cpu;
            if (upstream)
                last_shared = c;
            else
                last = c;
            if (c < ncpus && cpu_group[c] == group) {
                if (upstream)
                    shared = c;
                else
                    cpu = c;
            }
        }
        if (cpu < 0)
            cpu = shared;
        if (cpu < 0)
            cpu = last >= 0 ? last : last_shared;
        if (rc == 0 && cpu < 0)
            rc = baton_fail(EINVAL, "%s server %d: the process's CPU affinity mask is empty", who, up->index);
        if (rc == 0)
            rc = server_create(who, up->index, group, groups_want, cpu, cpus, idle_us, up, &s);
        if (rc == 0) {
            up->refs++; /* the local server asks up for locks while it exists */
            s->next_local = locals;
            locals = s;
        }
    }
    baton_syslock_unlock(&table_mutex);
    if (rc == 0)
        *out = s;
    return rc;
}

/* The mailbox's operation was running at the fork: it cannot finish. */
static void cancel_taken(srt_server_t *s, srt_mailbox_t *mb)
{
    (void)s;
    /* Acquire: pairs with the TAKEN release of the old server. */
    if (mb_state(mb, memory_order_acquire) != MB_TAKEN)
        return;
    if (mb->future && !baton_future_ready(mb->future))
        baton_future_complete(mb->future, ECANCELED);
    baton_wait_store(&srt_publish_wait, &mb->state, MB_EMPTY); /* release, as serve() */
}

/* srt_revive() with table_mutex held. */
static int revive_locked(srt_server_t *s)
{
    /* Relaxed: both written under table_mutex (or in the fork handler). */
    const uint32_t g = baton_load(&srt_fork_gen_, memory_order_relaxed);
    if (baton_load(&s->gen, memory_order_relaxed) == g)
        return 0;
    /* A local server asks its upstream server: that one must run too. */
    if (s->upstream) {
        int rc = revive_locked(s->upstream);
        if (rc != 0)
            return rc;
    }
    srt_each_mailbox(s, cancel_taken);
    const srt_lock_hooks_t *h = hooks();
    if (h)
        h->revive(s);
    s->out_mb = NULL; /* the new thread makes its own */
    /* Relaxed: no thread parks on it until the new server exists, and
     * pthread_create() orders this store before it. */
    baton_store(&s->sleep, 0u, memory_order_relaxed);
    int rc = start_thread(s);
    s->has_thread = rc == 0;
    if (rc == 0)
        baton_store(&s->gen, g, memory_order_relaxed); /* read relaxed by clients */
    else
        baton_fail(rc, "server %d: cannot restart its thread on CPU %d after fork: %s", s->index, s->cpu,
                   strerror(rc));
    return rc;
}

int srt_revive(srt_server_t *s)
{
    baton_syslock_lock(&table_mutex);
    int rc = revive_locked(s);
    baton_syslock_unlock(&table_mutex);
    return rc;
}

/* The last reference is gone: stop the thread, free everything. */
static void server_stop(srt_server_t *s, bool alive)
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
    srt_chunk_t *c = s->head;
    while (c) {
        srt_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    baton_syslock_lock(&table_mutex);
    s->next_local = retired;
    retired = s;
    baton_syslock_unlock(&table_mutex);
}

void srt_put(srt_server_t *s)
{
    baton_syslock_lock(&table_mutex);
    const bool last = --s->refs == 0;
    if (last) {
        if (s->group < 0) {
            servers[s->index] = NULL;
        } else {
            srt_server_t **p = &locals;
            while (*p != s)
                p = &(*p)->next_local;
            *p = s->next_local;
        }
    }
    /* A server whose thread was lost in a fork (and never revived) has
     * nothing to join.  Relaxed: under the mutex. */
    const bool alive = s->has_thread && baton_load(&s->gen, memory_order_relaxed) ==
                                            baton_load(&srt_fork_gen_, memory_order_relaxed);
    srt_server_t *up = s->upstream;
    baton_syslock_unlock(&table_mutex);
    if (last) {
        server_stop(s, alive);
        if (up)
            srt_put(up);
    }
}

int srt_put_nonlast(srt_server_t *s)
{
    int rc = 0;
    baton_syslock_lock(&table_mutex);
    if (s->refs == 1)
        rc = EBUSY;
    else
        s->refs--;
    baton_syslock_unlock(&table_mutex);
    return rc;
}

/* --- the operation channel: freeing a lock --------------------------------- */

void srt_op_drain(srt_server_t *s, const void *l, const baton_wait_t *w)
{
    for (;;) {
        srt_mailbox_t *hit = NULL;
        uint32_t v = MB_EMPTY;
        /* Acquire: pairs with the chunk's publication in mb_make(). */
        srt_walk_t wk = walk_start(s, baton_load(&s->nchunks, memory_order_acquire));
        for (srt_mailbox_t *mb; (mb = walk_next(&wk)) != NULL;) {
            /* Acquire: pairs with the server's release of EMPTY, so what
             * l's operations wrote is visible before l is freed; and with
             * the client's POSTED, so the lock field we read next is this
             * operation's or a later one's.  A later one means this one
             * has run. */
            v = mb_state(mb, memory_order_acquire);
            if (v != MB_EMPTY && baton_load(&mb->lock, memory_order_relaxed) == l) {
                hit = mb;
                break;
            }
        }
        if (!hit)
            return;
        /* The server publishes with an exchange that wakes parked waiters
         * (srt_publish_wait), so parking here is safe. */
        (void)baton_wait_while_eq(w, &hit->state, v);
    }
}

void srt_op_serve_now(srt_server_t *s, const void *l)
{
    /* Acquire: pairs with the chunk's publication in mb_make(). */
    srt_walk_t wk = walk_start(s, baton_load(&s->nchunks, memory_order_acquire));
    for (srt_mailbox_t *mb; (mb = walk_next(&wk)) != NULL;)
        /* Acquire: pairs with the client's POSTED store.  Relaxed lock
         * field: published by it. */
        if (mb_state(mb, memory_order_acquire) == MB_POSTED &&
            baton_load(&mb->lock, memory_order_relaxed) == l)
            serve(mb);
}
