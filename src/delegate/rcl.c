/* rcl.c - Remote Core Locking (RCL): every operation of a lock runs on a
 * dedicated server thread, pinned to one CPU.
 *
 * Clients never take a lock.  Each client thread owns one mailbox per
 * server; to run an operation it writes the function and its argument into
 * the mailbox's operation channel (one cache line) and raises the channel's
 * state.  The server scans all mailboxes in turn and runs what it finds.
 * Operations of one server are serialised by construction (one thread runs
 * them), and the data they touch stays in the server's caches instead of
 * moving to whichever core last took a lock.  Only the mailbox line moves,
 * between one client and the server, so many waiting clients do not fight
 * over a shared lock word.
 *
 * Servers, mailboxes, the scan, parking and fork belong to the server
 * runtime (server_rt.h), which the lock servers (src/server/) share: a
 * server=K of rcl and a server=K of the `server` kind are the same thread,
 * which runs shipped operations and answers lock requests alike.
 *
 * Operation channel states (the waited-on word; bit 31 is the wait layer's):
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
 * Counters (baton_lock_stats) are the server's, shared by its locks:
 * help_sessions counts scans that ran at least one operation, helped_ops
 * the operations they ran, direct_ops the operations the server ran inline
 * for nested calls.
 *
 * fork(): see server_rt.c.  An operation posted before the fork runs in the
 * child; one the server was running at the fork is cancelled (ECANCELED on
 * its future).
 */
#include "../base/cs.h"
#include "../runtime/server_rt.h"
#include "../base/error.h"
#include "../base/kind.h"

#include <errno.h>
#include <string.h>

enum { OPT_SERVER, OPT_CPU, OPT_POST, OPT_IDLE };

/* A lock is a server and how its callers wait. */
typedef struct rcl_lock {
    srt_server_t *server;
    baton_wait_t wait;
    uint32_t post;
} rcl_lock_t;

/* The calling thread is l's server, running an operation: run this one
 * now; the server thread is the only one that runs l's operations. */
static int run_inline(rcl_lock_t *l, baton_fn fn, void *ctx, const void *args, size_t size, baton_future_t *f,
                      uint32_t flags)
{
    srt_server_t *s = l->server;
    _Alignas(16) unsigned char copy[BATON_ARGS_MAX];
    if (flags & MB_ARGS) {
        if (size)
            memcpy(copy, args, size);
        ctx = copy;
    }
    baton_run_op(l, fn, ctx, f);
    /* Relaxed: only this (the server) thread writes it. */
    baton_store(&s->inlined, baton_load(&s->inlined, memory_order_relaxed) + 1, memory_order_relaxed);
    return 0;
}

static inline uint32_t mb_state(srt_mailbox_t *mb, memory_order mo)
{
    return baton_load(&mb->state, mo) & ~BATON_WAIT_PARKED;
}

static int rcl_submit(rcl_lock_t *l, baton_fn fn, void *ctx, const void *args, size_t size, baton_future_t *f,
                      uint32_t flags)
{
    srt_server_t *s = l->server;
    if (BATON_UNLIKELY(srt_self() == s))
        return run_inline(l, fn, ctx, args, size, f, flags);
    int rc = srt_ready(s); /* a forked child starts the server's thread again */
    if (BATON_UNLIKELY(rc != 0))
        return rc;
    srt_mailbox_t *mb = srt_mailbox(s);

    /* 1. Our previous (detached) operation may still be POSTED or TAKEN:
     * wait until the server is done with the mailbox.  Acquire: pairs with
     * the server's release of EMPTY. */
    uint32_t v;
    while ((v = mb_state(mb, memory_order_acquire)) != MB_EMPTY)
        (void)baton_wait_while_eq(&l->wait, &mb->state, v);

    /* 2. Fill in, then publish.  seq_cst: a release for the fields (pairs
     * with the server's acquire in scan()), and ordered before the load of
     * sleep in srt_wake() (Dekker's pattern, see server_sleep()).  A plain
     * store is enough: nobody parks on an EMPTY mailbox. */
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

    /* 3. Wake the server if it sleeps (the seq_cst exchange inside makes
     * only one waker pay the system call). */
    srt_wake(s);

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
    l->wait = o->wait;
    l->post = (uint32_t)o->value[OPT_POST];
    l->server = NULL;
    return srt_get("rcl", (int)o->value[OPT_SERVER], (unsigned)o->value[OPT_CPU], o->value[OPT_IDLE],
                   &l->server);
}

static int k_destroy(void *st)
{
    rcl_lock_t *l = st;
    srt_server_t *s = l->server;
    if (BATON_UNLIKELY(srt_self() == s)) {
        /* Freed by an operation running on its own server: waiting would
         * wait for ourselves.  We are the thread that runs l's operations,
         * so run what is posted for it now; joining the server is
         * impossible from here, so the last lock of a server gives EBUSY. */
        srt_op_serve_now(s, l);
        return srt_put_nonlast(s);
    }
    /* In a forked child the server may have no thread yet: start one, so
     * that what was posted before the fork runs. */
    if (srt_ready(s) == 0)
        srt_op_drain(s, l, &l->wait);
    srt_put(s);
    return 0;
}

/* Written out, not adapted (kind.h): each passes rcl_submit() its own
 * mode, a context to run with, or arguments to copy and a future. */
static int k_execute(void *st, baton_fn fn, void *ctx) { return rcl_submit(st, fn, ctx, NULL, 0, NULL, 0); }

static int k_delegate(void *st, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    return rcl_submit(st, fn, NULL, args, size, f, MB_DETACHED | MB_ARGS);
}

static void k_stats(void *st, baton_stats_t *out)
{
    srt_server_t *s = ((rcl_lock_t *)st)->server;
    /* Relaxed: a racy snapshot. */
    out->help_sessions = baton_load(&s->sessions, memory_order_relaxed);
    out->helped_ops = baton_load(&s->helped, memory_order_relaxed);
    out->direct_ops = baton_load(&s->inlined, memory_order_relaxed);
}

static const baton_option_desc_t rcl_options[] = {
    [OPT_SERVER] = {"server", 0, SRT_SERVERS - 1, 0, "the server thread that runs the operations"},
    [OPT_CPU] = {"cpu", 0, SRT_CPU_AUTO, SRT_CPU_AUTO,
                 "CPU the server is pinned to; 1023: the server-th CPU from the end of the mask"},
    [OPT_POST] = {"post", 0, 1, 0, "1: delegate returns once posted (only each thread's own order is kept)"},
    [OPT_IDLE] = {"idle_us", 1, 1000000, 100, "how long an idle server scans before it parks"},
};

const baton_kind_t baton_kind_rcl = {
    .name = "rcl",
    .summary = "remote core locking: a pinned server thread runs every operation (post=1: "
               "per-thread order only)",
    .caps = BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_DETACH | BATON_CAP_WAIT | BATON_CAP_SERVER |
            BATON_CAP_NOCOLLAPSE,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(rcl_lock_t),
    .align = _Alignof(rcl_lock_t),
    .options = rcl_options,
    .noptions = sizeof rcl_options / sizeof rcl_options[0],
    .init = k_init,
    .destroy = k_destroy,
    .execute = k_execute,
    .delegate = k_delegate,
    .stats = k_stats,
};
