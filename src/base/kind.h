/* kind.h - what a lock kind is: the thin table of operations every algorithm
 * fills in at the bottom of its own file, and the registry (src/api/
 * registry.c) lists.  Optional operations are capability bits, not NULLs
 * scattered through callers.
 */
#ifndef BATON_BASE_KIND_H
#define BATON_BASE_KIND_H

#include <baton/baton.h>
#include <baton/wait.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BATON_KIND_MAX_OPTIONS 8
#define BATON_NO_WAIT 0xfe /* default_wait of kinds that take no policy */

typedef struct baton_option_desc {
    const char *name;
    uint64_t min, max, def;
    const char *help;
} baton_option_desc_t;

/* The parsed spec, as a kind's init sees it. */
typedef struct baton_opts {
    baton_wait_t wait;                      /* resolved policy (kinds with BATON_CAP_WAIT) */
    uint64_t value[BATON_KIND_MAX_OPTIONS]; /* kind options, in table order */
    int check;                              /* owner checking requested */
    const char *inner;                      /* wrapper kinds: the inner lock's spec */
    size_t inner_len;
} baton_opts_t;

typedef struct baton_kind {
    const char *name;
    const char *summary;
    unsigned caps;        /* BATON_CAP_* */
    unsigned waits;       /* accepted policies (BATON_WAIT_BIT) */
    uint8_t default_wait; /* baton_wait_kind, BATON_WAIT_AUTO or BATON_NO_WAIT */
    size_t size, align;   /* of the lock state */
    const baton_option_desc_t *options;
    size_t noptions;
    int (*init)(void *state, const baton_opts_t *o);
    int (*destroy)(void *state); /* 0, or EBUSY if held */
    void (*lock)(void *state);
    int (*trylock)(void *state); /* 0 or EBUSY */
    int (*unlock)(void *state);  /* 0 or EPERM */
    /* Unlock a held lock whatever thread calls (what a NORMAL pthread
     * mutex allows: a thread may unlock a mutex another locked); a no-op
     * returning 0 on a free lock.  The caller must have synchronised with
     * the holder (a join, a lock of its own): that orders whatever the
     * holder recorded (its queue node, its token) before the release reads
     * it.  Every kind with lock/unlock has one (the unlock itself where it
     * needs no owner and leaves a free lock free).  NULL: the kind's
     * unlock needs its owner, and a foreign unlock gets EPERM. */
    int (*release)(void *state);
    int (*is_locked)(void *state);
    /* Timed acquisition: wait for the lock until d (checked: a supported
     * clock, tv_nsec in range).  0 once held, or ETIMEDOUT, after which the
     * waiter has left no trace: nothing of it stays queued that a later
     * acquisition would wait for, and the lock is exactly as if it had
     * never come.  Called once a trylock has failed (api.c, the
     * interposer), so it may skip its own first attempt.  Each kind's file
     * says how it waits (docs/architecture.md, "Timed waits").  NULL: the
     * kind cannot (ENOTSUP). */
    int (*timedlock)(void *state, const baton_deadline_t *d);
    /* Wrapper kinds: whether this lock's writers can time their waits (its
     * inner lock's can).  NULL: timedlock says. */
    bool (*timed)(void *state);

    /* Delegation kinds (src/delegate/) fill these in; NULL means api.c runs
     * the operation as lock, call, unlock.  `f`, when not NULL, must be made
     * ready (baton_future_complete()) once fn has run.  delegate copies
     * args[0..size) (size <= BATON_ARGS_MAX) before it returns. */
    int (*execute)(void *state, baton_fn fn, void *ctx);
    int (*delegate)(void *state, baton_fn fn, const void *args, size_t size, baton_future_t *f);
    /* Readers (BATON_CAP_RW); NULL means lock/unlock. */
    void (*rlock)(void *state);
    void (*runlock)(void *state);
    int (*tryrlock)(void *state); /* 0, or EBUSY while a writer holds or waits (NULL: trylock) */
    /* A reader's timed entry, as timedlock (NULL with rlock: ENOTSUP;
     * NULL without: timedlock). */
    int (*timedrlock)(void *state, const baton_deadline_t *d);
    int (*has_readers)(void *state); /* 1 while a reader holds the lock (a racy look, for elide) */
    /* Counters (NULL: the kind keeps none). */
    void (*stats)(void *state, baton_stats_t *out);
    /* Wrapper kinds ("rw(<kind>)"): the spec names an inner lock. */
    bool wrapper;
    /* Bytes one lock allocates beyond `size` (queue buffers, reader
     * indicators, arena queue nodes, an inner lock), computed from the
     * options exactly as init allocates, allocator overhead included (see
     * baton_alloc_cost).  NULL: none.  Memory a lock takes later, per thread
     * that uses it, is not counted. */
    size_t (*footprint)(const baton_opts_t *o);
} baton_kind_t;

/* What the C library's allocator takes from the heap for one block of
 * `size` bytes (glibc's layout: an 8-byte header per block, 16-byte steps,
 * 32 bytes at least).  align > 16 (aligned_alloc): glibc carves a block of
 * size + align + 32 bytes and hands back the unused ends, which requests of
 * other sizes may reuse but the next lock's mostly cannot (measured for 1M
 * locks: within 64 bytes of this), so the whole block counts. */
static inline size_t baton_alloc_cost(size_t align, size_t size)
{
    const size_t hdr = sizeof(size_t), step = 2 * sizeof(size_t), min = 4 * sizeof(size_t);
    size_t block = (size + hdr + step - 1) / step * step;
    if (block < min)
        block = min;
    if (align > step)
        block = (block + align + min + hdr + step - 1) / step * step;
    return block;
}

/* Every kind, defined at the bottom of its algorithm's file.  Declared here,
 * in the bottom layer, so that the registry (src/api/) names every kind
 * without including a layer above it: the wrappers (rw, elide) sit above
 * the API, since they create their inner lock through it.  The linker
 * resolves the names; nothing here depends on the kinds' code. */
extern const baton_kind_t baton_kind_tas, baton_kind_ttas, baton_kind_ticket, baton_kind_mcs, baton_kind_clh,
    baton_kind_onespinner, baton_kind_relay, baton_kind_runner, baton_kind_pthread;
extern const baton_kind_t baton_kind_qd, baton_kind_mrqd, baton_kind_hqd, baton_kind_rcl, baton_kind_fc,
    baton_kind_ccsynch, baton_kind_rw, baton_kind_elide;
extern const baton_kind_t baton_kind_server; /* src/server/: server, ,chain, ,hier, ,hier,chain */

/* --- adapters: the table's trampolines, written once ----------------------
 * The table passes the lock state as void *; a kind's typed API takes its
 * own struct.  Where an entry only converts the pointer and calls the typed
 * function, the kind does not write the function out but names it here:
 *
 *   BATON_KIND_ADAPT(lock, baton_tas_lock)
 *       static void k_lock(void *s) { baton_tas_lock(s); }
 *   BATON_KIND_ADAPT_AT(unlock, qd_lock_t, qd_mutex_unlock, &l->core.mutex)
 *       static int k_unlock(void *s) { qd_lock_t *l = s; return qd_mutex_unlock(&l->core.mutex); }
 *
 * The generated function is k_<op>, with the signature of the table's
 * member <op> (the rows below), and the table names it as before
 * (`.lock = k_lock`), which checks that the types agree.  Its body is
 * the one call it always was, so it compiles to what the hand-written
 * trampoline did: the typed function inlined, or a jump to it.  A debugger
 * or a compiler error points at the line that names the adapter, and there
 * is nothing in it to step through.
 *
 * An entry that does more than convert and call (an init that turns an
 * option into the typed API's units, a release that leaves a free lock
 * alone, anything that takes two locks) stays a function written out in the
 * kind's file, with a comment that says what more it does.
 *
 * Each row: the return type, the parameters after the state and the
 * arguments passed on (each a parenthesised list, with a leading comma),
 * and `return`, or nothing where the member returns void. */
#define BATON_KIND_SIG_destroy int, (), (), return
#define BATON_KIND_SIG_lock void, (), (),
#define BATON_KIND_SIG_trylock int, (), (), return
#define BATON_KIND_SIG_unlock int, (), (), return
#define BATON_KIND_SIG_release int, (), (), return
#define BATON_KIND_SIG_is_locked int, (), (), return
#define BATON_KIND_SIG_timedlock int, (, const baton_deadline_t *d), (, d), return
#define BATON_KIND_SIG_timed bool, (), (), return
#define BATON_KIND_SIG_execute int, (, baton_fn fn, void *ctx), (, fn, ctx), return
#define BATON_KIND_SIG_delegate                                                                              \
    int, (, baton_fn fn, const void *args, size_t size, baton_future_t *f), (, fn, args, size, f), return
#define BATON_KIND_SIG_rlock void, (), (),
#define BATON_KIND_SIG_runlock void, (), (),
#define BATON_KIND_SIG_tryrlock int, (), (), return
#define BATON_KIND_SIG_timedrlock int, (, const baton_deadline_t *d), (, d), return
#define BATON_KIND_SIG_has_readers int, (), (), return
/* Left as written: clang-format 14 reads the parameter as a product. */
/* clang-format off */
#define BATON_KIND_SIG_stats void, (, baton_stats_t *out), (, out),
/* clang-format on */

/* Helpers: a row's parenthesised list without its parentheses, and the
 * generated function itself. */
#define BATON_KIND_LIST_(...) __VA_ARGS__
#define BATON_KIND_OPEN_(list) BATON_KIND_LIST_ list
#define BATON_KIND_FN_(ret, params, passed, ret_kw, op, call, first, decl)                                   \
    static ret k_##op(void *s BATON_KIND_OPEN_(params)) { decl ret_kw call(first BATON_KIND_OPEN_(passed)); }
#define BATON_KIND_EXPAND_(m, ...) m(__VA_ARGS__)

/* k_<op>: call(state, ...), the state passed as call's own pointer type. */
#define BATON_KIND_ADAPT(op, call) BATON_KIND_EXPAND_(BATON_KIND_FN_, BATON_KIND_SIG_##op, op, call, s, )

/* k_<op>: call(arg, ...), arg an expression of `l`, the state as a T *
 * (a member, or the address of one). */
#define BATON_KIND_ADAPT_AT(op, T, call, arg)                                                                \
    BATON_KIND_EXPAND_(BATON_KIND_FN_, BATON_KIND_SIG_##op, op, call, arg, T *l = s;)

/* k_init for a typed init that takes the waiting policy and nothing else. */
#define BATON_KIND_ADAPT_INIT_WAIT(call)                                                                     \
    static int k_init(void *s, const baton_opts_t *o) { return call(s, &o->wait); }

/* The mutex kinds of src/locks/: every entry from baton_<name>_destroy,
 * _lock, _trylock, _unlock, _is_locked and _timedlock; init and release
 * are the kind's (its own, or BATON_KIND_ADAPT_INIT_WAIT/ADAPT). */
#define BATON_KIND_ADAPT_MUTEX(name)                                                                         \
    BATON_KIND_ADAPT(destroy, baton_##name##_destroy)                                                        \
    BATON_KIND_ADAPT(lock, baton_##name##_lock)                                                              \
    BATON_KIND_ADAPT(trylock, baton_##name##_trylock)                                                        \
    BATON_KIND_ADAPT(unlock, baton_##name##_unlock)                                                          \
    BATON_KIND_ADAPT(is_locked, baton_##name##_is_locked)                                                    \
    BATON_KIND_ADAPT(timedlock, baton_##name##_timedlock)

/* The table's members a mutex kind fills in with its k_ functions (all
 * but release, which the kind names: k_release, or k_unlock where its
 * unlock needs no owner and leaves a free lock free). */
#define BATON_KIND_MUTEX_OPS                                                                                 \
    .init = k_init, .destroy = k_destroy, .lock = k_lock, .trylock = k_trylock, .unlock = k_unlock,          \
    .is_locked = k_is_locked, .timedlock = k_timedlock

#endif
