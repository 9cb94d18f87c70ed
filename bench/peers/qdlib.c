/* qdlib.c - the QD locking paper's own library as peers: qd_lock_lib
 * (Klaftenegger, Sagonas and Winblad, github.com/kjellwinblad/qd_lock_lib):
 * its QD lock, MR-QD lock, CC-Synch and MCS lock.
 *
 * The library is not vendored: it is built by hand outside the tree and
 * named at configure time with -DBATON_QDLIB_DIR (docs/results.md, "Against
 * the QD authors' library", says how).  This unit calls its plain typed API
 * (plain_qd_create, qd_delegate, qd_delegate_wait, ...), as its README and
 * examples show a program doing.
 *
 * The delegation peers run the bench's critical sections the library's own
 * way (bench_peer_t's execute and delegate):
 *   execute   fn(ctx) until it has run: qd_delegate_wait / mrqd_delegate_wait
 *             (helps or enqueues, then waits for its flag), ccsynch_delegate
 *             (CC-Synch always waits).  The message is {fn, ctx}.
 *   delegate  QD and MR-QD: qd_delegate, detached (returns once enqueued);
 *             the message is {fn, copy of the arguments}.  CC-Synch: the
 *             same wait as execute, on the caller's arguments.
 * The library's operations take (size, message); one trampoline per
 * message layout unpacks it.  Its locks live on its own 64-byte-aligned
 * allocations (plain_*_create); destroy frees them (CC-Synch's dummy node
 * and each thread's node are the library's, and stay).
 *
 * The library's headers bring their own atomics (misc/bsd_stdatomic.h), so
 * this unit includes nothing of baton's and nothing that includes
 * <stdatomic.h>. */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "locks/ccsynch_lock.h"
#include "locks/mcs_lock.h"
#include "locks/mrqd_lock.h"
#include "locks/qd_lock.h"

#include "peers_impl.h"

/* A message: the bench's function, then its ctx pointer (execute) or a
 * copy of its arguments (delegate). */
struct qdlib_msg {
    void (*fn)(void *ctx);
    void *ctx;
};

/* The arguments in a delegate message start right after fn: their queue
 * aligns every message to 8 bytes, and fn is 8 bytes, so the copy is
 * 8-aligned, enough for the bench's argument blocks (pointers and 64-bit
 * integers).  Larger alignments would need a copy out. */
#define QDLIB_ARGS_OFF sizeof(void (*)(void *))
_Static_assert(QDLIB_ARGS_OFF == 8, "the arguments follow fn at 8 bytes");

/* {fn, ctx}: run fn(ctx). */
static void qdlib_run_ctx(unsigned int size, void *m)
{
    (void)size;
    struct qdlib_msg msg;
    memcpy(&msg, m, sizeof msg);
    msg.fn(msg.ctx);
}

/* {fn, args...}: run fn on the arguments where they lie in the queue. */
static void qdlib_run_args(unsigned int size, void *m)
{
    (void)size;
    void (*fn)(void *);
    memcpy(&fn, m, sizeof fn);
    fn((char *)m + QDLIB_ARGS_OFF);
}

/* The largest argument block the bench delegates (BATON_ARGS_MAX). */
#define QDLIB_ARGS_MAX 64

/* Pack {fn, args} into buf; returns its length. */
static unsigned int qdlib_pack_args(unsigned char *buf, void (*fn)(void *), const void *args, size_t size)
{
    memcpy(buf, &fn, sizeof fn);
    if (size > QDLIB_ARGS_MAX)
        abort(); /* the bench never delegates more (baton's own limit) */
    memcpy(buf + QDLIB_ARGS_OFF, args, size);
    return (unsigned int)(QDLIB_ARGS_OFF + size);
}

/* --- QD ------------------------------------------------------------------ */

void *bench_peer_qdlib_qd_create(void) { return plain_qd_create(); }
void bench_peer_qdlib_qd_destroy(void *lock) { free(lock); }
void bench_peer_qdlib_qd_lock(void *lock) { qd_lock(lock); }
void bench_peer_qdlib_qd_unlock(void *lock) { qd_unlock(lock); }

void bench_peer_qdlib_qd_execute(void *lock, void (*fn)(void *), void *ctx)
{
    struct qdlib_msg msg = {fn, ctx};
    qd_delegate_wait(lock, qdlib_run_ctx, sizeof msg, &msg);
}

void bench_peer_qdlib_qd_delegate(void *lock, void (*fn)(void *), const void *args, size_t size)
{
    alignas(16) unsigned char buf[QDLIB_ARGS_OFF + QDLIB_ARGS_MAX];
    qd_delegate(lock, qdlib_run_args, qdlib_pack_args(buf, fn, args, size), buf);
}

/* --- MR-QD ------------------------------------------------------------------- */

void *bench_peer_qdlib_mrqd_create(void) { return plain_mrqd_create(); }
void bench_peer_qdlib_mrqd_destroy(void *lock) { free(lock); }
void bench_peer_qdlib_mrqd_lock(void *lock) { mrqd_lock(lock); }
void bench_peer_qdlib_mrqd_unlock(void *lock) { mrqd_unlock(lock); }
void bench_peer_qdlib_mrqd_rlock(void *lock) { mrqd_rlock(lock); }
void bench_peer_qdlib_mrqd_runlock(void *lock) { mrqd_runlock(lock); }

void bench_peer_qdlib_mrqd_execute(void *lock, void (*fn)(void *), void *ctx)
{
    struct qdlib_msg msg = {fn, ctx};
    mrqd_delegate_wait(lock, qdlib_run_ctx, sizeof msg, &msg);
}

void bench_peer_qdlib_mrqd_delegate(void *lock, void (*fn)(void *), const void *args, size_t size)
{
    alignas(16) unsigned char buf[QDLIB_ARGS_OFF + QDLIB_ARGS_MAX];
    mrqd_delegate(lock, qdlib_run_args, qdlib_pack_args(buf, fn, args, size), buf);
}

/* --- CC-Synch ------------------------------------------------------------------ */

void *bench_peer_qdlib_ccsynch_create(void) { return plain_ccsynch_create(); }
void bench_peer_qdlib_ccsynch_destroy(void *lock) { free(lock); }
void bench_peer_qdlib_ccsynch_lock(void *lock) { ccsynch_lock(lock); }
void bench_peer_qdlib_ccsynch_unlock(void *lock) { ccsynch_unlock(lock); }

/* ccsynch_delegate keeps a pointer to the message (no copy) and returns once
 * it has run: the message may live on our stack. */
void bench_peer_qdlib_ccsynch_execute(void *lock, void (*fn)(void *), void *ctx)
{
    struct qdlib_msg msg = {fn, ctx};
    ccsynch_delegate(lock, qdlib_run_ctx, sizeof msg, &msg);
}

void bench_peer_qdlib_ccsynch_delegate(void *lock, void (*fn)(void *), const void *args, size_t size)
{
    (void)size; /* it waits: fn may read the caller's arguments in place */
    bench_peer_qdlib_ccsynch_execute(lock, fn, (void *)(uintptr_t)args);
}

/* --- MCS ------------------------------------------------------------------------ */

void *bench_peer_qdlib_mcs_create(void) { return plain_mcs_create(); }
void bench_peer_qdlib_mcs_destroy(void *lock) { free(lock); }
void bench_peer_qdlib_mcs_lock(void *lock) { mcs_lock(lock); }
void bench_peer_qdlib_mcs_unlock(void *lock) { mcs_unlock(lock); }
