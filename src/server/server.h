/* server.h - lock servers (the `server` kind), in the spirit of pLock:
 * locks granted by messages instead of a shared lock word.
 *
 * Transport.  A message is one write into a cache line that another thread
 * reads, and costs one cache-line transfer:
 *   request  the client bumps the request word of its mailbox at the
 *            lock's home server (server_rt.h: the lock channel, with the
 *            operation and the lock in the same line);
 *   grant    the home stores GRANTED (or CHAINED, or REFUSED for a trylock)
 *            into the waiter's grant word, in that same line; the client
 *            waits on it through the wait layer (baton_wait_while_eq), and
 *            the home publishes with baton_wait_store, which wakes it;
 *   release  the holder bumps the lock's release word (lk_inst_t.release),
 *            which the home polls while the lock is granted.  Releases go
 *            into the lock, not the mailbox, because a thread may release
 *            several locks of one server in a row without waiting for
 *            anything: a mailbox slot would need an acknowledgement (one
 *            more message) before it could be reused, while a lock's
 *            release word is written once per grant by construction;
 *   pass     (chaining) the holder stores CHAINED into the next waiter's
 *            grant word.
 * So a lock/unlock costs exactly request + grant + release when alone, and
 * nothing else moves: the home keeps each lock's state and waiting list in
 * its own memory (lk_inst_t), touched by no other thread, so it needs no
 * synchronisation; the waiting list links live in the mailboxes' line 0
 * (srt_link_t), not in the lines the waiters watch.
 *
 * Who runs what.  The home of a lock is a server of the runtime shared with
 * rcl (server_rt.h), numbered server=K: one server thread answers lock
 * requests and runs shipped operations alike.  A hierarchical lock has one
 * instance per core group, homed at that group's local server, and one at
 * the global server; a local server asks the global one for the lock on its
 * group's behalf through a mailbox of its own, and is answered in the
 * group's waiter record (lk_local_t.grp).
 *
 * Counting.  Every message is counted once as sent (by its sender's role)
 * and once as received (by its receiver's role), in counters of the lock
 * instance that handles it, written only by that instance's home thread:
 * requests and releases when the home consumes them, grants and refusals
 * when it sends them, a client chain's passes when its last holder
 * releases (the home knows how long the list it handed out was), a local
 * server's pass of the global lock to the next group when it sends it.
 * Control messages (free) are not counted.
 */
#ifndef BATON_SERVER_SERVER_H
#define BATON_SERVER_SERVER_H

#include "../runtime/server_rt.h"
#include "../base/kind.h"

#include <stdbool.h>
#include <stdint.h>

/* The lease word (lk_inst_t.lease): a state in bits 0-1, the take-back
 * flag in bit 2, a use count in bits 3-23 (bumped by each unlock that
 * keeps the lock, wrapping), the lease's generation above (keep.c). */
#define LS_NONE 0u
#define LS_HELD 1u
#define LS_CACHED 2u
#define LS_STATE 3ull
#define LS_REVOKE 4ull
#define LS_USE_ONE (1ull << 3)
#define LS_USE_MASK (((1ull << 21) - 1) << 3)
#define LS_GEN_SHIFT 24

/* Request operations (srt_waiter_t.req_op). */
enum { LK_LOCK = 1, LK_TRY = 2, LK_FREE = 3 };

/* lk_inst_t.hint bits. */
enum { LK_HINT_HELD = 1u, LK_HINT_WAITERS = 2u };

/* One lock at one server (its home).  Everything but `release`, the hint
 * and the counters is the home thread's alone. */
typedef struct lk_inst {
    /* Bumped (seq_cst) by each release to the home. */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t release;
    uint32_t seen_release;      /* the last release handled */
    uint8_t held;               /* granted, not released back */
    uint8_t chain;              /* grants hand out the waiting list */
    uint8_t local;              /* a group's instance: this is an lk_local_t */
    uint8_t on_active;          /* on the home's list of instances to poll */
    uint8_t req_role, own_role; /* BATON_ROLE_* of its requesters and of the home */
    uint32_t nwait;             /* waiting list length */
    uint32_t chain_len;         /* passes the chain handed out will make */
    srt_waiter_t *head, *tail;  /* the waiting list, linked through srt_link_t */
    struct lk_inst *act_next, *act_prev;
    /* keep.c: leases (keep_us). */
    uint8_t leased;                  /* granted under a lease the home has not taken back */
    uint64_t lease_gen;              /* the last lease's generation (never wraps) */
    uint64_t keep_ns;                /* how long a lease outlives the first waiter; 0: none */
    uint64_t deadline;               /* when to take the lease back (0: nobody waits) */
    uint64_t sample_word, sample_at; /* the lease word last looked at, and when */
    /* Set at init, read by clients (on the line their release writes). */
    srt_server_t *home;
    baton_wait_t wait;
    /* Written by the home (relaxed), read by anyone: a racy look. */
    _Atomic uint32_t hint; /* LK_HINT_* */
    _Atomic uint64_t sent[BATON_ROLES], recv[BATON_ROLES];
    /* The lease word (keep.c), on a line of its own: the holder writes it
     * at every unlock and relock under a lease, and the home reads it only
     * to take the lease back. */
    _Alignas(BATON_CACHELINE) _Atomic uint64_t lease;
} lk_inst_t;

/* A hierarchical lock's instance for one core group. */
typedef struct lk_local {
    lk_inst_t in; /* homed at the group's local server */
    /* The group as a waiter at the global instance: the global server (or
     * a group passing the lock on) answers here, and wakes the local
     * server, which polls it. */
    srt_waiter_t grp;
    _Alignas(BATON_CACHELINE) srt_link_t grp_link; /* written by the global server */
    /* The local server's. */
    _Alignas(BATON_CACHELINE) lk_inst_t *parent;
    srt_waiter_t *tryer;       /* a client whose trylock was forwarded upstream */
    struct lk_local *out_next; /* the local server's queue of requests to post */
    uint32_t have;             /* the group holds the global lock */
    uint32_t asked;            /* a request upstream is queued or unanswered */
    uint32_t queued;           /* ...and still in the queue, not posted */
    uint32_t ask_op;           /* LK_LOCK or LK_TRY */
    uint32_t chained;          /* the global grant carried other groups */
    uint32_t run;              /* local grants since the group got the lock */
    uint32_t bound;            /* local_bound */
} lk_local_t;

/* The kind's state. */
typedef struct srv_lock {
    /* Read by every call; written at init. */
    _Alignas(BATON_CACHELINE) srt_server_t *server; /* global (home of inst) */
    baton_wait_t wait;
    uint32_t hier, ngroups, ncpus, groups_want;
    uint32_t keep;       /* grants may be leases (keep_us > 0) */
    uint16_t *cpu_group; /* CPU -> group (hier) */
    lk_local_t *groups;  /* ngroups of them (hier) */
    lk_inst_t inst;      /* the lock at the global server */
    /* The hold the lock is in, for a release by a thread that does not
     * hold it (what a NORMAL pthread mutex allows; server.c): `hold` is
     * odd while a thread holds the lock (each hold numbers itself), even
     * when it is free; `hold_inst` and `hold_rest` are where the holder
     * would release it.  Written by the holder at each acquire and unlock
     * (one line more per hold), and by a thread that releases for it. */
    _Alignas(BATON_CACHELINE) _Atomic uint64_t hold;
    _Atomic(lk_inst_t *) hold_inst;
    _Atomic(srt_waiter_t *) hold_rest;
} srv_lock_t;

/* --- basic.c: the engine, and the client's side of request/grant/release -- */

void lk_engine_init(void);
void lk_inst_init(lk_inst_t *in, srt_server_t *home, const baton_wait_t *w, bool chain, bool local,
                  int req_role, int own_role);
/* Count n messages from one role to another. */
void lk_count(lk_inst_t *in, int from, int to, uint64_t n);
/* Home side: answer w (counted: the home's role to the requesters'). */
void lk_grant(srt_server_t *s, lk_inst_t *in, srt_waiter_t *w, uint32_t v);
void lk_refuse(lk_inst_t *in, srt_waiter_t *w);
void lk_append(lk_inst_t *in, srt_waiter_t *w);
/* Grant the first waiter (with the rest of the list, when chaining). */
void lk_grant_next(srt_server_t *s, lk_inst_t *in);
void lk_activate(srt_server_t *s, lk_inst_t *in);
void lk_deactivate(srt_server_t *s, lk_inst_t *in);
void lk_set_hint(lk_inst_t *in);
/* Store an answer into a waiter's grant word (and wake what waits). */
void lk_answer(const baton_wait_t *wait, srt_waiter_t *w, uint32_t v);
/* Was w's thread lost in a fork (only in a forked child)? */
bool lk_dead(const srt_waiter_t *w);

/* The lock came back to its home (a release, or a lease taken back). */
void lk_back_home(srt_server_t *s, lk_inst_t *in);

/* Client side. */
srt_mailbox_t *lk_post(srt_server_t *home, lk_inst_t *in, uint32_t op);
uint32_t lk_wait(srt_mailbox_t *mb, const baton_wait_t *w);
void lk_release_home(lk_inst_t *in);
/* The calling thread's held locks, and the leases it keeps (cached: the
 * lock is not held, but the thread may take it again without asking).
 * `lease` is the lease word the holder expects (0: no lease). */
typedef struct lk_held {
    const srv_lock_t *lock;
    lk_inst_t *inst;
    srt_waiter_t *rest;
    uint64_t lease;
    uint64_t hold; /* the lock's `hold` number of this hold (not cached) */
    uint32_t cached;
} lk_held_t;
bool lk_held_push(const lk_held_t *e);
bool lk_held_take(const srv_lock_t *k, bool cached, lk_held_t *out);
/* How many leases the calling thread keeps. */
uint32_t lk_held_cached(void);
/* Forget the oldest lease the thread keeps (without touching its lock,
 * which another thread may have freed: the home takes it back). */
void lk_held_forget_oldest(void);

/* --- keep.c: leases ------------------------------------------------------------ */

/* Home side.  The grant value for w: SRT_LEASED (the lease set up) when
 * this instance leases and the grant would be a plain one to a client. */
uint32_t keep_grant(lk_inst_t *in, srt_waiter_t *w, uint32_t v);
/* A request found the lock leased out: start the lease's clock. */
void keep_asked(lk_inst_t *in);
/* Take a cached lease back now (trylock, free): true if the lock is home. */
bool keep_take_back(srt_server_t *s, lk_inst_t *in);
/* Take the lease back once its time is up; returns the events handled. */
uint32_t keep_poll(srt_server_t *s, lk_inst_t *in);
/* When the home must look at the lease next (its clock: the deadline, or
 * the next look for an idle lease), or 0. */
uint64_t keep_next(const lk_inst_t *in);
/* Has that time come? */
bool keep_pending(const lk_inst_t *in);
/* Client side.  After a SRT_LEASED grant: the lease word to expect. */
uint64_t keep_word(lk_inst_t *in);
/* Unlock under a lease: true if the lock is kept (cached; *held becomes
 * the word to expect at the next relock), false if the home asked for it
 * back and it must be released. */
bool keep_unlock(lk_inst_t *in, uint64_t *held);
/* Take a kept lock again: true if it was still ours. */
bool keep_relock(lk_inst_t *in, uint64_t held);

/* --- chain.c --------------------------------------------------------------- */

/* The home hands the waiting list out with the grant to its first waiter;
 * returns the grant value (CHAINED when others follow). */
uint32_t chain_hand_out(lk_inst_t *in, srt_waiter_t *first);
/* The home learns that a client chain has ended: count its passes. */
void chain_ended(lk_inst_t *in);
/* The successors a CHAINED grant handed to w. */
srt_waiter_t *chain_rest(srt_waiter_t *w);
/* A holder passes the lock to the first live waiter of rest; false when
 * there is none (the holder then releases to the home). */
bool chain_pass(srt_waiter_t *rest, const baton_wait_t *wait);

/* --- hier.c ---------------------------------------------------------------- */

void hier_request(srt_server_t *s, lk_local_t *L, srt_waiter_t *w, bool try_);
void hier_released(srt_server_t *s, lk_local_t *L);
uint32_t hier_poll(srt_server_t *s, lk_local_t *L);
uint32_t hier_post(srt_server_t *s);
bool hier_pending(const lk_local_t *L);
bool hier_busy(const lk_local_t *L);
void hier_revive(lk_local_t *L);
int hier_init(srv_lock_t *k, const baton_opts_t *o, bool chain, uint32_t bound, uint64_t idle_us,
              int groups_want);
void hier_fini(srv_lock_t *k);
lk_local_t *hier_mine(srv_lock_t *k);
size_t hier_footprint(const baton_opts_t *o, int groups_want);

#endif
