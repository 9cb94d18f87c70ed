/* server_rt.h - the server runtime: dedicated server threads and the
 * per-(client thread, server) mailboxes they scan.  One runtime carries two
 * kinds of traffic, so one server thread can serve both:
 *
 *  - shipped operations (rcl, src/delegate/rcl.c): the client writes a
 *    function and its argument into the mailbox's operation channel, the
 *    server runs it (state EMPTY -> POSTED -> (TAKEN) -> EMPTY);
 *  - lock messages (the lock servers, src/server/): requests in the
 *    mailbox's lock channel, answered by a store into a waiter's grant word.
 *    The runtime only notices them (request word != the server's `seen`)
 *    and hands them to the lock engine's hooks, which keep all lock state
 *    private to the server thread that owns it.
 *
 * What the runtime owns: the server table (64 top-level servers numbered by
 * the locks' server=K option, plus local servers that hang off a top-level
 * one), lazily started pinned threads, mailboxes (found through slots.h, no
 * thread limit), the scan loop, parking when idle, clean stop with the last
 * reference, and fork (a child's first user of a server starts a new thread
 * for it).  See server_rt.c.
 */
#ifndef BATON_RUNTIME_SERVER_RT_H
#define BATON_RUNTIME_SERVER_RT_H

#include "../base/slots.h"
#include "../base/syslock.h"

#include <baton/baton.h>
#include <baton/wait.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SRT_SERVERS 64           /* top-level servers: server=0..63 */
#define SRT_CHUNK 32             /* mailboxes per chunk */
#define SRT_CPU_AUTO 1023        /* cpu option: count from the end of the affinity mask */
#define SRT_IMMORTAL 0xffffffffu /* link generation of waiters no fork kills */

/* Operation channel states (the waited-on word; bit 31 is the wait layer's). */
enum { MB_EMPTY = 0, MB_POSTED = 1, MB_TAKEN = 2 };
enum { MB_DETACHED = 1u << 0, MB_ARGS = 1u << 1 };

/* What a grant word holds: the answer to the waiter's one outstanding
 * request.  The waiter stores WAITING itself before it asks.  CHAINED is a
 * grant that carries a waiting list (chaining): the waiters queued behind
 * this one, which its link (below) leads to.  LEASED is a grant the
 * holder may keep across its own unlock and next lock until the home takes
 * it back (src/server/keep.c). */
enum { SRT_WAITING = 0, SRT_GRANTED = 1, SRT_REFUSED = 2, SRT_CHAINED = 3, SRT_LEASED = 4 };

typedef struct srt_server srt_server_t;
typedef struct srt_waiter srt_waiter_t;

/* A waiter's place in a waiting list, kept apart from its grant word: the
 * server links waiters while they watch their grant words, and a link
 * written on the watched line would move it once more per waiter. */
typedef struct srt_link {
    /* The waiter queued behind this one: written by the server that queues
     * them; once a grant says CHAINED, read by the grantee (the rest of
     * the list it was handed). */
    srt_waiter_t *next;
    /* The fork generation of the thread the waiter belongs to
     * (SRT_IMMORTAL for waiters that are no thread's).  Set when the
     * mailbox is handed out and, for the forking thread, in the child. */
    _Atomic uint32_t gen;
} srt_link_t;

/* A waiter: who asks for locks and receives the answers, one cache line.
 * Every mailbox has one (the client thread); a hierarchical lock has one
 * per core group (its local server, at the global server). */
struct srt_waiter {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t grant; /* SRT_*, bit 31 for the wait layer */
    /* Mailboxes only: the request channel.  req is bumped (seq_cst) after
     * the fields below are written; the server consumes a request when
     * req != the mailbox's `seen`. */
    _Atomic uint32_t req;
    uint32_t req_op; /* the lock engine's operation code */
    uint32_t pad_;
    void *req_inst;        /* the lock (instance at this server) it is about */
    srt_waiter_t *req_for; /* who gets the answer: this waiter, or a group's */
    /* A server polls this grant word instead of a thread waiting on it: wake
     * that server after answering (NULL: a thread waits through the wait
     * layer).  Set once. */
    srt_server_t *wake;
    srt_link_t *lnk; /* set once */
};

_Static_assert(sizeof(srt_waiter_t) == BATON_CACHELINE, "a waiter is one cache line");

/* One client thread's mailbox at one server: the operation channel (line 0,
 * with the server's private bookkeeping of the lock channel after it) and
 * the lock channel (line 1). */
typedef struct srt_mailbox {
    _Alignas(BATON_CACHELINE) _Atomic uint32_t state; /* MB_*, bit 31 for the wait layer */
    /* Written by the client while EMPTY, read by the server after it saw
     * POSTED: plain fields, ordered by the state word. */
    uint32_t flags; /* MB_DETACHED, MB_ARGS */
    baton_fn fn;
    /* Atomic only because a lock being freed reads it while the client may
     * already be writing its next operation (see srt_op_drain()). */
    _Atomic(const void *) lock;
    baton_future_t *future;
    union {
        void *ctx;                                       /* execute */
        _Alignas(16) unsigned char args[BATON_ARGS_MAX]; /* delegate: the copy */
    } u;
    _Atomic uint32_t owner; /* 1 while a live thread uses it; 0 reusable */
    /* The lock channel's request the server consumed last (written by the
     * server with release once it has read the request's fields). */
    _Atomic uint32_t seen;
    srt_link_t link; /* the waiter's list link (server-private) */
    srt_waiter_t w;  /* line 1: the lock channel */
} srt_mailbox_t;

_Static_assert(sizeof(srt_mailbox_t) == 2 * BATON_CACHELINE, "a mailbox is two cache lines");

typedef struct srt_chunk {
    srt_mailbox_t box[SRT_CHUNK];
    /* The next chunk, written (under the table mutex) before the chunk
     * count that publishes it. */
    struct srt_chunk *next;
} srt_chunk_t;

struct srt_server {
    /* Read by clients on every operation and by the server on every scan;
     * written rarely. */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t sleep; /* 1: parked, or about to park */
    _Atomic uint32_t stop;                            /* 1: the last reference is gone */
    _Atomic uint32_t gen;                             /* fork generation its thread belongs to */
    _Atomic uint32_t nchunks;                         /* published chunks */
    srt_chunk_t *head;                                /* first chunk; set before nchunks becomes 1 */
    uint64_t idle_ns;
    srt_server_t *upstream; /* local servers: the server they ask for locks */
    /* Written by the server thread only (relaxed; racy readers). */
    _Alignas(BATON_CACHELINE) _Atomic uint64_t sessions;
    _Atomic uint64_t helped;
    _Atomic uint64_t inlined;
    /* The lock engine's, private to the server thread (and to the thread
     * that revives the server in a forked child).  msg_mutex is held while
     * lock messages are handled (never while a shipped operation runs), so
     * that fork() never snapshots this state half-updated. */
    _Alignas(BATON_CACHELINE) baton_syslock_t msg_mutex;
    void *active;              /* lock instances to poll */
    void *out_head, *out_tail; /* requests waiting to be posted upstream */
    srt_mailbox_t *out_mb;     /* this thread's mailbox at upstream */
    /* Under the table mutex. */
    _Alignas(BATON_CACHELINE) srt_chunk_t *tail;
    unsigned refs;
    int index, group, groups_want, cpu;
    bool has_thread;
    pthread_t thread;
    srt_server_t *next_local; /* the list of local servers */
    baton_slot_owner_t slots; /* hands out mailboxes */
};

/* The lock engine's entry points, called by server threads (under
 * msg_mutex, except `pending`) and by the reviver in a forked child. */
typedef struct srt_lock_hooks {
    /* mb's lock channel holds a request the server has not consumed. */
    void (*request)(srt_server_t *s, srt_mailbox_t *mb);
    /* Look at the active lock instances (releases, answers from upstream,
     * requests to post upstream); returns how many events it handled. */
    uint32_t (*poll)(srt_server_t *s);
    /* The look before parking (seq_cst loads): is anything to do? */
    bool (*pending)(srt_server_t *s);
    /* When the engine must look again although nobody posts (a clock of
     * its own: CLOCK_MONOTONIC ns), or 0: the server parks no longer. */
    uint64_t (*wake_at)(srt_server_t *s);
    /* In a forked child, before the server's new thread starts: forget the
     * waiters whose threads did not survive the fork. */
    void (*revive)(srt_server_t *s);
} srt_lock_hooks_t;

void srt_set_lock_hooks(const srt_lock_hooks_t *h);

/* Take a reference to top-level server `index`, creating it (pinned to
 * cpu_opt, or SRT_CPU_AUTO) if it does not exist.  `who` names the kind in
 * error messages.  Returns 0 or an errno value with the message set. */
int srt_get(const char *who, int index, unsigned cpu_opt, uint64_t idle_us, srt_server_t **out);
/* The same for the local server of group `group` (of groups_want, with the
 * CPU -> group map cpu_group[0..ncpus)) under top-level server `up`; it
 * holds a reference to up while it exists. */
int srt_get_local(const char *who, srt_server_t *up, int groups_want, int group, const uint16_t *cpu_group,
                  int ncpus, uint64_t idle_us, srt_server_t **out);
/* Drop a reference; the last one stops the thread and frees the server.
 * Not from the server's own thread. */
void srt_put(srt_server_t *s);
/* Drop a reference that is not the last: EBUSY (nothing dropped) if it is.
 * For a server's own thread. */
int srt_put_nonlast(srt_server_t *s);

/* In a forked child the server has no thread until its next user calls
 * this: 0, or an errno value with the message set. */
int srt_revive(srt_server_t *s);
/* Bumped in every forked child (read relaxed: a generation, not data). */
extern _Atomic uint32_t srt_fork_gen_;
static inline uint32_t srt_fork_gen(void)
{
    return baton_load(&srt_fork_gen_, memory_order_relaxed); /* relaxed: see above */
}
static inline int srt_ready(srt_server_t *s)
{
    /* Relaxed: a cheap look; srt_revive() re-checks under the mutex. */
    if (BATON_UNLIKELY(baton_load(&s->gen, memory_order_relaxed) !=
                       baton_load(&srt_fork_gen_, memory_order_relaxed)))
        return srt_revive(s);
    return 0;
}

/* The calling thread's mailbox at s (made on first use). */
static inline srt_mailbox_t *srt_mailbox(srt_server_t *s) { return baton_slot_get(&s->slots); }

/* The server the calling thread runs (NULL for other threads). */
srt_server_t *srt_self(void);

/* After a seq_cst store that s must see (a post, a release): wake s if it
 * parked.  The seq_cst load pairs with the server's seq_cst store of its
 * sleep word (Dekker's pattern, see server_sleep()). */
static inline void srt_wake(srt_server_t *s)
{
    if (baton_load(&s->sleep, memory_order_seq_cst) != 0 &&
        baton_xchg(&s->sleep, 0u, memory_order_seq_cst) != 0)
        baton_wake_all(&s->sleep);
}

/* For a server thread that waits (as a client) for an answer: handle the
 * lock messages of its own server once, since no other thread will. */
void srt_pump(srt_server_t *s);

/* Call fn on every mailbox of s (for the engine's revive hook). */
void srt_each_mailbox(srt_server_t *s, void (*fn)(srt_server_t *, srt_mailbox_t *));

/* --- the operation channel (rcl) ------------------------------------------ */

/* How the server publishes TAKEN and EMPTY (see server_rt.c). */
extern const baton_wait_t srt_publish_wait;

/* Wait until no mailbox of s holds an accepted operation of `lock`. */
void srt_op_drain(srt_server_t *s, const void *lock, const baton_wait_t *w);
/* srt_op_drain() for the server thread itself: run them here. */
void srt_op_serve_now(srt_server_t *s, const void *lock);

#endif
