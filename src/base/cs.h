/* cs.h - what every thread that runs operations for a lock shares: the
 * delegation kinds (src/delegate/), the server runtime, the API, elide.
 *
 *  - Critical-section frames: while a thread runs operations of a lock (as
 *    the lock holder, a QD helper, a combiner or an RCL server) it pushes a
 *    frame naming the lock's state.  An operation that executes on, or
 *    delegates to, a lock whose frame is on the calling thread's chain would
 *    wait for itself; baton_cs_inside() lets the API report EDEADLK instead.
 *    The chain lives on the stack; the thread keeps only its top.
 *  - Futures: how an operation that promised a result says it has run.
 */
#ifndef BATON_BASE_CS_H
#define BATON_BASE_CS_H

#include <baton/baton.h>
#include <baton/wait.h>

#include "../wait/wait_internal.h"

#include <stdbool.h>
#include <string.h>

typedef struct baton_cs_frame {
    const void *lock;
    struct baton_cs_frame *up;
} baton_cs_frame_t;

extern _Thread_local baton_cs_frame_t *baton_cs_top __attribute__((tls_model("initial-exec")));

static inline void baton_cs_enter(baton_cs_frame_t *f, const void *lock)
{
    f->lock = lock;
    f->up = baton_cs_top;
    baton_cs_top = f;
}

static inline void baton_cs_leave(baton_cs_frame_t *f) { baton_cs_top = f->up; }

/* Is the calling thread running a critical section of `lock`? */
static inline bool baton_cs_inside(const void *lock)
{
    for (const baton_cs_frame_t *f = baton_cs_top; f != NULL; f = f->up)
        if (f->lock == lock)
            return true;
    return false;
}

/* Copy an operation's arguments (at most BATON_ARGS_MAX bytes) into its
 * slot: 8 bytes at a time, which the compiler inlines as moves, and a
 * memcpy only for a tail that is not a multiple of 8 (argument blocks of
 * pointers and 64-bit integers have none).  A call to memcpy for a 16-byte
 * block cost about as much as the rest of an uncontended CC-Synch
 * operation's bookkeeping. */
static inline void baton_copy_args(void *dst, const void *src, size_t size)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t i = 0;
    for (; i + 8 <= size; i += 8)
        memcpy(d + i, s + i, 8);
    if (i < size)
        memcpy(d + i, s + i, size - i);
}

/* --- futures ----------------------------------------------------------------- */

static inline void baton_future_prepare(baton_future_t *f, const baton_wait_t *w)
{
    atomic_init(&f->state, 0u);
    f->status = 0;
    _Static_assert(sizeof f->wait == sizeof *w, "a future carries its wait policy");
    memcpy(&f->wait, w, sizeof *w);
}

/* Mark f ready.  Release (inside baton_wait_store_owed()): pairs with the
 * acquire of baton_future_wait()/baton_future_ready(), so whatever the
 * operation wrote is visible to the waiter.  After this store the waiter may
 * free f: nothing touches it afterwards except the wake, which goes by
 * address.  A parked waiter's wake is owed to o (a helper on its serial
 * path: wait_internal.h says when to pay it), or with o NULL done at once. */
static inline void baton_future_complete_owed(baton_future_t *f, int status, baton_owed_t *o)
{
    baton_wait_t w;
    memcpy(&w, &f->wait, sizeof w);
    f->status = status;
    baton_wait_store_owed(&w, &f->state, 1u, o);
}

/* Mark f ready, a parked waiter woken at once. */
static inline void baton_future_complete(baton_future_t *f, int status)
{
    baton_future_complete_owed(f, status, NULL);
}

/* Mark f ready when no thread can be waiting on it yet: the operation ran
 * inside the call that prepared f (the caller ran it itself), so no waiter
 * can have parked.  Release: pairs with the acquire of the later wait. */
static inline void baton_future_complete_own(baton_future_t *f, int status)
{
    f->status = status;
    baton_store(&f->state, 1u, memory_order_release);
}

/* Run fn(ctx) as the operation of `lock` (frame pushed), then complete f if
 * there is one, its waiter's wake owed to o (NULL: woken at once). */
static inline void baton_run_op_owed(const void *lock, baton_fn fn, void *ctx, baton_future_t *f,
                                     baton_owed_t *o)
{
    baton_cs_frame_t frame;
    baton_cs_enter(&frame, lock);
    fn(ctx);
    baton_cs_leave(&frame);
    if (f)
        baton_future_complete_owed(f, 0, o);
}

static inline void baton_run_op(const void *lock, baton_fn fn, void *ctx, baton_future_t *f)
{
    baton_run_op_owed(lock, fn, ctx, f, NULL);
}

#endif
