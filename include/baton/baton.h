/* baton/baton.h - the dynamic API: locks named by a spec string.
 *
 *   baton_lock_t *l = baton_lock_new("mcs:spinpark");
 *   baton_lock(l);  ...critical section...  baton_unlock(l);
 *   baton_execute(l, fn, ctx);               // run fn(ctx) under mutual exclusion
 *   baton_delegate(l, fn, &args, sizeof args); // detached: args are copied
 *   baton_lock_free(l);
 *
 * Spec grammar:   kind[:wait][,key=value]...   or, for wrapper kinds,
 *                 kind(<inner spec>)[,key=value]...   e.g. "rw(mcs:spinpark)"
 *   kind   one of the registered kinds (baton_kinds() lists them)
 *   wait   spin | backoff | yield | park | spinpark | monitor | auto
 *          (only for kinds that take a wait policy; default per kind)
 *   key    a kind option (one that takes 0 or 1 may be written bare:
 *          "elide(ttas),sleep" means sleep=1), or one every kind takes:
 *            check=0|1   track the owner and report misuse (EPERM, EBUSY)
 *                        even for kinds that do not track it themselves;
 *                        on by default in debug builds (BATON_DEBUG).
 * A NULL or empty spec, or "default", names the default kind ("relay").
 * Whitespace is not allowed.  Example: "relay:spinpark,slice_us=100".
 *
 * Errors.  baton_lock_new() returns NULL and sets errno (EINVAL for a bad
 * spec, ENOTSUP for a wait policy the CPU lacks, ENOMEM); baton_last_error()
 * then returns a message that lists what is valid.  Lock operations return
 * 0 or a POSIX error number:
 *   baton_trylock  EBUSY   the lock is held (by anyone, the caller included)
 *   baton_unlock   EPERM   the caller does not hold the lock: reported by the
 *                          kinds that track their owner (caps has
 *                          BATON_CAP_OWNER: mcs, clh, onespinner, relay) and by
 *                          every kind when check=1.  For the others, unlocking
 *                          a lock you do not hold is undefined, as with a
 *                          PTHREAD_MUTEX_NORMAL mutex.
 *   baton_lock_free EBUSY  the lock is held; nothing is freed.  Freeing a
 *                          delegation lock first runs every operation it
 *                          accepted (also from threads that have exited).
 *   baton_delegate EINVAL  args larger than BATON_ARGS_MAX (never copied
 *                          out of line: pass a pointer instead).
 *   baton_execute, baton_delegate  EDEADLK  called from inside one of the
 *                          same lock's critical sections (it would wait for
 *                          itself); reported by every kind, in every build.
 *   baton_lock/trylock/unlock  ENOTSUP  on kinds that offer execute and
 *                          delegate only (rcl, ccsynch: caps lack
 *                          BATON_CAP_LOCK).
 *
 * Thread safety.  All calls may be made from any thread.  A thread may hold
 * many locks at once and release them in any order.  Locks are not
 * recursive: locking a lock you hold deadlocks (reported as EDEADLK by
 * baton_lock/baton_execute when check=1).
 *
 * Order.  Operations on one lock run in the order they were accepted, and
 * each thread's operations in its program order.  On kinds with
 * BATON_CAP_DETACH baton_delegate returns once the operation is accepted
 * (queued, or taken by a server) and runs it later on another thread; on
 * the others it has run when the call returns.
 *
 * Fairness is per kind: FIFO kinds (caps has BATON_CAP_FIFO) grant the lock
 * in arrival order; relay is fair over windows longer than its slice; tas,
 * ttas and pthread make no promise.
 */
#ifndef BATON_BATON_H
#define BATON_BATON_H

#include <stddef.h>
#include <stdint.h>

#include <baton/visibility.h>

/* C sees the waited-on word of a future as an atomic; C++ (before C++23 has
 * no <stdatomic.h>) sees a plain word of the same size and layout and must
 * only touch it through the functions below. */
#ifdef __cplusplus
#define BATON_ATOMIC_U32 uint32_t
#else
#include <stdatomic.h>
#define BATON_ATOMIC_U32 _Atomic uint32_t
#endif

#ifdef __cplusplus
extern "C" {
#endif


#define BATON_VERSION_MAJOR 0
#define BATON_VERSION_MINOR 1
#define BATON_VERSION_PATCH 0

/* Largest argument block baton_delegate() copies. */
#define BATON_ARGS_MAX 64

typedef struct baton_lock baton_lock_t;
typedef void (*baton_fn)(void *ctx);

/* Capabilities of a kind. */
enum {
    BATON_CAP_LOCK     = 1u << 0, /* lock / unlock */
    BATON_CAP_TRYLOCK  = 1u << 1,
    BATON_CAP_EXECUTE  = 1u << 2, /* baton_execute */
    BATON_CAP_DELEGATE = 1u << 3, /* baton_delegate */
    BATON_CAP_WAIT     = 1u << 4, /* takes a wait policy */
    BATON_CAP_OWNER    = 1u << 5, /* tracks its owner: EPERM without check=1 */
    BATON_CAP_FIFO     = 1u << 6, /* grants in arrival order */
    BATON_CAP_NOCOLLAPSE = 1u << 7, /* designed not to collapse when threads outnumber cores */
    BATON_CAP_DETACH   = 1u << 8, /* baton_delegate returns before the operation has run */
    BATON_CAP_RW       = 1u << 9, /* baton_rlock admits many readers at once */
    BATON_CAP_SERVER   = 1u << 10, /* operations run on dedicated server threads */
    BATON_CAP_WRAPPER  = 1u << 11  /* wraps another kind: spec "name(<inner spec>)" */
};

typedef struct baton_kind_info {
    const char *name;
    const char *summary;     /* one line */
    unsigned caps;           /* BATON_CAP_* */
    unsigned waits;          /* accepted wait policies: bit k = baton_wait_kind k */
    const char *default_wait;/* policy used when the spec names none ("-" if none) */
    const char *options;     /* "key=<range> ..." the kind accepts, "" if none */
} baton_kind_info_t;

BATON_API baton_lock_t *baton_lock_new(const char *spec);
BATON_API int baton_lock_free(baton_lock_t *lock);

BATON_API int baton_lock(baton_lock_t *lock);
BATON_API int baton_trylock(baton_lock_t *lock);
BATON_API int baton_unlock(baton_lock_t *lock);

/* The first members of every lock: what the inline definitions below read,
 * so that lock, trylock and unlock cost one test and one call into the
 * kind, as a function table would.  Part of the ABI; the rest of the lock
 * is private. */
struct baton_lock_head {
    void (*lock)(void *state);
    int (*unlock)(void *state);
    int (*trylock)(void *state);
    void *state;
    int slow; /* owner checks (check=1), or a kind without lock/unlock */
};

/* The out-of-line halves: owner checks, and the ENOTSUP of kinds that
 * offer execute and delegate only. */
BATON_API int baton_lock_slow(baton_lock_t *lock);
BATON_API int baton_trylock_slow(baton_lock_t *lock);
BATON_API int baton_unlock_slow(baton_lock_t *lock);

/* GNU inline definitions: used for inlining only, under any C or C++
 * standard (a call that is not inlined goes to the library's definition). */
#if defined(__GNUC__) && !defined(BATON_NO_INLINE)
#define BATON_INLINE_API extern __inline __attribute__((__gnu_inline__, __always_inline__))
BATON_INLINE_API int baton_lock(baton_lock_t *lock)
{
    const struct baton_lock_head *h = (const struct baton_lock_head *)(const void *)lock;
    if (__builtin_expect(h->slow, 0))
        return baton_lock_slow(lock);
    h->lock(h->state);
    return 0;
}

BATON_INLINE_API int baton_trylock(baton_lock_t *lock)
{
    const struct baton_lock_head *h = (const struct baton_lock_head *)(const void *)lock;
    if (__builtin_expect(h->slow, 0))
        return baton_trylock_slow(lock);
    return h->trylock(h->state);
}

BATON_INLINE_API int baton_unlock(baton_lock_t *lock)
{
    const struct baton_lock_head *h = (const struct baton_lock_head *)(const void *)lock;
    if (__builtin_expect(h->slow, 0))
        return baton_unlock_slow(lock);
    return h->unlock(h->state);
}
#endif

/* Run fn(ctx) under mutual exclusion; returns after fn has run. */
BATON_API int baton_execute(baton_lock_t *lock, baton_fn fn, void *ctx);
/* Run fn on a copy of args[0..size) under mutual exclusion.  Returns once
 * the operation is accepted; operations delegated to one lock run in the
 * order they were accepted.  For mutex kinds it runs before returning. */
BATON_API int baton_delegate(baton_lock_t *lock, baton_fn fn, const void *args, size_t size);

/* Futures: a detached operation that promises to finish.  The operation
 * writes its results wherever its arguments point (a field of the caller's
 * context, say); the future says when it has run.  A future must stay alive
 * (not be reused or go out of scope) until baton_future_wait() returns, and
 * may be waited on (by any thread) only once baton_delegate_future() has
 * returned.
 *
 *   struct pop_args { heap_t *h; int *out; } a = { h, &v };
 *   baton_future_t f;
 *   baton_delegate_future(l, pop_min, &a, sizeof a, &f);
 *   ...other work...
 *   baton_future_wait(&f);            // v is now the popped value
 */
typedef struct baton_future {
    BATON_ATOMIC_U32 state;   /* 0 pending, 1 done: the waited-on word */
    int32_t status;           /* 0 once done */
    uint64_t wait;            /* how to wait (the lock's policy), opaque */
} baton_future_t;

/* As baton_delegate, and f becomes ready once fn has run.  On error (EINVAL,
 * EDEADLK) f is left ready with that status, so waiting never hangs. */
BATON_API int baton_delegate_future(baton_lock_t *lock, baton_fn fn, const void *args, size_t size,
                                    baton_future_t *f);
/* Wait (through the wait layer: the lock's policy) until f is ready;
 * returns its status. */
BATON_API int baton_future_wait(baton_future_t *f);
/* 1 if f is ready (acquire: what the operation wrote is visible), else 0. */
BATON_API int baton_future_ready(const baton_future_t *f);

/* Readers-writer use.  For kinds with BATON_CAP_RW (mrqd, rw(<kind>)) any
 * number of readers hold the lock together, excluding writers (lock,
 * execute, delegate); for every other kind rlock is lock. */
BATON_API int baton_rlock(baton_lock_t *lock);
BATON_API int baton_runlock(baton_lock_t *lock);

/* Counters a kind keeps about itself (zero where a kind keeps none). */
typedef struct baton_stats {
    uint64_t help_sessions; /* delegation: times a helper, combiner or server ran
                               queued operations before handing over */
    uint64_t helped_ops;    /* operations run in those sessions, own ones included */
    uint64_t direct_ops;    /* operations the caller ran itself, uncontended */
    uint64_t full_retries;  /* delegation: enqueue attempts refused (queue full or closed) */
    uint64_t forced_locks;  /* starvation bound reached: took the lock unconditionally */
    /* Hardware lock elision (elide(<kind>)); zero for other kinds.  Every
     * transaction started either commits or aborts, so
     * tx_attempts == tx_commits + the sum of tx_aborts[]. */
    uint64_t tx_attempts;   /* transactions started */
    uint64_t tx_commits;    /* critical sections that committed speculatively */
    uint64_t tx_aborts[8];  /* aborts, by cause: index with BATON_ABORT_* */
    uint64_t tx_fallbacks;  /* acquisitions that tried to elide, then took the inner lock */
    uint64_t tx_skipped;    /* acquisitions that took the inner lock without trying
                               (adaptive back-off, or RTM unusable) */
    /* Lock servers (server, server:chain, server:hier, server:hier+chain):
     * messages (writes into another thread's mailbox line) by role, index
     * with BATON_ROLE_*; zero for other kinds. */
    uint64_t msg_sent[3];
    uint64_t msg_received[3];
    uint64_t reserved[1];
} baton_stats_t;

/* The roles of a lock server's messages (baton_stats_t.msg_*). */
enum { BATON_ROLE_GLOBAL = 0, BATON_ROLE_LOCAL = 1, BATON_ROLE_CLIENT = 2, BATON_ROLES = 3 };

/* Why a hardware transaction aborted (index of baton_stats_t.tx_aborts). */
enum {
    BATON_ABORT_CONFLICT = 0, /* another core touched the transaction's lines */
    BATON_ABORT_CAPACITY,     /* the read or write set outgrew the cache */
    BATON_ABORT_BUSY,         /* the lock was held for real: aborted on purpose */
    BATON_ABORT_EXPLICIT,     /* any other explicit abort (program, nesting limit) */
    BATON_ABORT_RETRY,        /* the CPU says a retry may succeed, no other cause */
    BATON_ABORT_NESTED,       /* aborted inside a nested transaction */
    BATON_ABORT_DEBUG,        /* debug breakpoint */
    BATON_ABORT_OTHER,        /* no cause given: interrupt, system call, page
                                 fault, an instruction that cannot run speculatively */
    BATON_ABORT_CAUSES
};
/* "conflict", "capacity", "busy", "explicit", "retry", "nested", "debug",
 * "other"; NULL past the end. */
BATON_API const char *baton_abort_cause_name(unsigned cause);

/* Hardware transactional memory on the running machine, as elide(<kind>)
 * sees it (decided once, at first use). */
typedef struct baton_htm_info {
    int usable;           /* 1: elide(<kind>) speculates; 0: it is exactly <kind> */
    const char *state;    /* "rtm", "absent", "disabled", "always-aborting",
                             "not-built", or "inject:<cause>" (testing) */
    const char *why;      /* one line for people */
    unsigned probe_tries, probe_commits; /* the start-up probe's transactions */
} baton_htm_info_t;
BATON_API void baton_htm_info(baton_htm_info_t *out);
/* The elision counters (tx_* fields) of every elide(<kind>) lock of the
 * process, destroyed ones included, summed (a snapshot). */
BATON_API void baton_elision_totals(baton_stats_t *out);

/* Fill *out with the lock's counters (a racy snapshot while in use).
 * Returns 0, or ENOTSUP if the kind keeps none. */
BATON_API int baton_lock_stats(const baton_lock_t *lock, baton_stats_t *out);

/* The canonical spec of a lock (wait policy resolved, options spelled out). */
BATON_API const char *baton_lock_spec(const baton_lock_t *lock);
/* The kind's registry entry. */
BATON_API const baton_kind_info_t *baton_lock_kind(const baton_lock_t *lock);

/* Every registered kind, in registry order; returns the count. */
BATON_API size_t baton_kinds(const baton_kind_info_t **list);
/* The names of every wait policy, for listings ("spin", ..., "auto"). */
BATON_API const char *baton_wait_policy_name(unsigned kind);

/* The last error message of the calling thread ("" if none). */
BATON_API const char *baton_last_error(void);

/* Library version string, e.g. "0.1.0". */
BATON_API const char *baton_version(void);

#ifdef __cplusplus
}
#endif
#endif /* BATON_BATON_H */
