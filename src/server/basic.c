/* basic.c - the lock server's basic protocol: a client sends `request` to
 * the lock's home server, which answers `grant` at once if the lock is free
 * and otherwise appends the client to the lock's waiting list; the holder
 * sends `release`, and the home grants the lock to the first waiter or marks
 * it free.  One server holds many locks (each lock is an lk_inst_t the home
 * keeps in its list of active instances while it is granted), and locks map
 * to servers by their server=K option.  A trylock is a request the home
 * answers at once, with a grant or a refusal (REFUSED).
 *
 * This file also holds the engine the server runtime calls (the hooks:
 * request, poll, pending, revive) and the client's half: post a request,
 * wait for the answer, release, and the thread's set of held locks.
 * Chaining (chain.c) and the hierarchy (hier.c) hook into it where they
 * change the protocol.  The transport and the message accounting are
 * described in server.h.
 */
#include "server.h"
#include "../base/error.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- counters ----------------------------------------------------------------- */

/* Relaxed, and load-then-store: the home thread is the only writer;
 * baton_lock_stats() takes a racy snapshot. */
static inline void bump(_Atomic uint64_t *c, uint64_t n)
{
    baton_store(c, baton_load(c, memory_order_relaxed) + n, memory_order_relaxed);
}

void lk_count(lk_inst_t *in, int from, int to, uint64_t n)
{
    bump(&in->sent[from], n);
    bump(&in->recv[to], n);
}

void lk_inst_init(lk_inst_t *in, srt_server_t *home, const baton_wait_t *w, bool chain, bool local,
                  int req_role, int own_role)
{
    atomic_init(&in->release, 0u);
    in->seen_release = 0;
    in->held = 0;
    in->chain = chain;
    in->local = local;
    in->on_active = 0;
    in->req_role = (uint8_t)req_role;
    in->own_role = (uint8_t)own_role;
    in->nwait = 0;
    in->chain_len = 0;
    in->head = in->tail = NULL;
    in->act_next = in->act_prev = NULL;
    in->leased = 0;
    in->lease_gen = 0;
    in->keep_ns = 0;
    in->deadline = 0;
    in->sample_word = in->sample_at = 0;
    atomic_init(&in->lease, (uint64_t)LS_NONE);
    in->home = home;
    in->wait = *w;
    atomic_init(&in->hint, 0u);
    for (int r = 0; r < BATON_ROLES; r++) {
        atomic_init(&in->sent[r], 0u);
        atomic_init(&in->recv[r], 0u);
    }
}

/* --- the home's side ------------------------------------------------------------ */

void lk_set_hint(lk_inst_t *in)
{
    const uint32_t h = (in->held ? LK_HINT_HELD : 0u) | (in->head ? LK_HINT_WAITERS : 0u);
    /* Relaxed: a hint (is_locked, and local servers' look at whether other
     * groups wait); written only when it changes, so readers do not pull
     * the line for nothing. */
    if (baton_load(&in->hint, memory_order_relaxed) != h)
        baton_store(&in->hint, h, memory_order_relaxed);
}

void lk_activate(srt_server_t *s, lk_inst_t *in)
{
    if (in->on_active)
        return;
    in->on_active = 1;
    in->act_prev = NULL;
    in->act_next = s->active;
    if (in->act_next)
        in->act_next->act_prev = in;
    s->active = in;
}

void lk_deactivate(srt_server_t *s, lk_inst_t *in)
{
    if (!in->on_active)
        return;
    in->on_active = 0;
    if (in->act_prev)
        in->act_prev->act_next = in->act_next;
    else
        s->active = in->act_next;
    if (in->act_next)
        in->act_next->act_prev = in->act_prev;
    in->act_next = in->act_prev = NULL;
}

bool lk_dead(const srt_waiter_t *w)
{
    const uint32_t g = srt_fork_gen();
    /* In the process that was never forked from, no waiter's thread was
     * lost (the generation only grows in children). */
    if (BATON_LIKELY(g == 0))
        return false;
    /* Relaxed: set before the thread's first request, or in the fork
     * handler of this (single-threaded at the time) process. */
    const uint32_t wg = baton_load(&w->lnk->gen, memory_order_relaxed);
    return wg != SRT_IMMORTAL && wg != g;
}

void lk_answer(const baton_wait_t *wait, srt_waiter_t *w, uint32_t v)
{
    if (w->wake) {
        /* A server polls this word.  seq_cst: a release for what the
         * answer publishes (pairs with the acquire in hier_poll()), and
         * Dekker's pattern with that server's look before parking (its
         * seq_cst store of sleep, then a seq_cst load of this word). */
        (void)baton_xchg(&w->grant, v, memory_order_seq_cst);
        srt_wake(w->wake);
    } else {
        /* Release (and a wake if the waiter parked): pairs with the
         * acquire in lk_wait(). */
        baton_wait_store(wait, &w->grant, v);
    }
}

void lk_grant(srt_server_t *s, lk_inst_t *in, srt_waiter_t *w, uint32_t v)
{
    in->held = 1;
    lk_activate(s, in); /* the home now watches the release word */
    lk_count(in, in->own_role, in->req_role, 1);
    lk_answer(&in->wait, w, keep_grant(in, w, v));
    lk_set_hint(in);
}

void lk_refuse(lk_inst_t *in, srt_waiter_t *w)
{
    lk_count(in, in->own_role, in->req_role, 1);
    lk_answer(&in->wait, w, SRT_REFUSED);
}

void lk_append(lk_inst_t *in, srt_waiter_t *w)
{
    w->lnk->next = NULL;
    if (in->tail)
        in->tail->lnk->next = w;
    else
        in->head = w;
    in->tail = w;
    in->nwait++;
    lk_set_hint(in);
}

void lk_grant_next(srt_server_t *s, lk_inst_t *in)
{
    srt_waiter_t *w = in->head;
    uint32_t v = SRT_GRANTED;
    if (in->chain) {
        v = chain_hand_out(in, w);
    } else {
        in->head = w->lnk->next;
        if (!in->head)
            in->tail = NULL;
        in->nwait--;
    }
    lk_grant(s, in, w, v);
}

void lk_back_home(srt_server_t *s, lk_inst_t *in)
{
    chain_ended(in);
    in->leased = 0; /* a lease ends with any release */
    in->deadline = 0;
    in->held = 0;
    if (in->local)
        hier_released(s, (lk_local_t *)in);
    else if (in->head)
        lk_grant_next(s, in);
    else
        lk_deactivate(s, in);
    lk_set_hint(in);
}

/* The holder, or the last of a chain, or a local server released it. */
static void on_release(srt_server_t *s, lk_inst_t *in)
{
    lk_count(in, in->req_role, in->own_role, 1);
    lk_back_home(s, in);
}

static uint32_t check_release(srt_server_t *s, lk_inst_t *in)
{
    /* Acquire: pairs with the releaser's seq_cst bump in lk_release_home():
     * its critical section happens before our next grant, whose release
     * passes it on to the next holder. */
    const uint32_t r = baton_load(&in->release, memory_order_acquire);
    if (r == in->seen_release)
        return 0;
    /* One release at most is outstanding: the next needs a grant first. */
    in->seen_release = r;
    on_release(s, in);
    return 1;
}

static void on_acquire(srt_server_t *s, lk_inst_t *in, srt_waiter_t *w, bool try_)
{
    lk_count(in, in->req_role, in->own_role, 1); /* the request */
    /* A release the requester made before this request is visible now (it
     * came first in the requester's order, and our acquire of the request
     * synchronised with it): handle it first, or a thread that unlocks and
     * then trylocks would be refused its own released lock.  A local
     * server queues a lock request first instead: it then keeps the lock
     * in the group rather than handing it back and asking again. */
    if (try_ || !in->local)
        (void)check_release(s, in);
    /* A trylock may find the lock leased out but not in use: take it back
     * for the waiters (and the trylock, if none). */
    if (try_ && in->held)
        (void)keep_take_back(s, in);
    if (in->local)
        hier_request(s, (lk_local_t *)in, w, try_);
    else if (!in->held)
        lk_grant(s, in, w, SRT_GRANTED);
    else if (try_)
        lk_refuse(in, w);
    else {
        lk_append(in, w);
        keep_asked(in);
    }
}

/* Freeing the lock: is it idle here?  (A control message, not counted.) */
static void on_free(srt_server_t *s, lk_inst_t *in, srt_waiter_t *w)
{
    (void)check_release(s, in);  /* the freeing thread's own last release, say */
    (void)keep_take_back(s, in); /* a lease kept by a thread that is done with it */
    const bool busy = in->held || in->head != NULL || (in->local && hier_busy((lk_local_t *)in));
    if (!busy)
        lk_deactivate(s, in);
    /* The reply tells the freeing thread it may free the state: after this
     * the home never touches it (not active, nothing queued). */
    lk_answer(&in->wait, w, busy ? SRT_REFUSED : SRT_GRANTED);
}

/* --- the engine's hooks ------------------------------------------------------- */

static void eng_request(srt_server_t *s, srt_mailbox_t *mb)
{
    srt_waiter_t *rq = &mb->w;
    /* Acquire: pairs with the requester's seq_cst bump (its fields). */
    const uint32_t seq = baton_load(&rq->req, memory_order_acquire);
    const uint32_t op = rq->req_op;
    lk_inst_t *in = rq->req_inst;
    srt_waiter_t *w = rq->req_for;
    /* Release: we have read the fields; pairs with the acquire of a local
     * server's flow control (hier_post()) and of mb_make()'s reuse check. */
    baton_store(&mb->seen, seq, memory_order_release);
    if (op == LK_FREE)
        on_free(s, in, w);
    else
        on_acquire(s, in, w, op == LK_TRY);
}

static uint32_t eng_poll(srt_server_t *s)
{
    uint32_t n = 0;
    for (lk_inst_t *in = s->active, *next; in; in = next) {
        next = in->act_next; /* handling in may take it off the list */
        n += check_release(s, in);
        n += keep_poll(s, in);
        if (in->local)
            n += hier_poll(s, (lk_local_t *)in);
    }
    if (s->out_head)
        n += hier_post(s);
    return n;
}

static bool eng_pending(srt_server_t *s)
{
    for (lk_inst_t *in = s->active; in; in = in->act_next) {
        /* seq_cst: Dekker's pattern with the releaser (see srt_wake()). */
        if (baton_load(&in->release, memory_order_seq_cst) != in->seen_release)
            return true;
        if (keep_pending(in))
            return true; /* its clock ran out meanwhile */
        if (in->local && hier_pending((lk_local_t *)in))
            return true;
    }
    /* A request to post upstream waits only for upstream to consume the
     * previous one, which it was woken for: keep looking, do not park. */
    return s->out_head != NULL;
}

static uint64_t eng_wake_at(srt_server_t *s)
{
    uint64_t t = 0;
    for (lk_inst_t *in = s->active; in; in = in->act_next) {
        const uint64_t k = keep_next(in);
        if (k && (t == 0 || k < t))
            t = k;
    }
    return t;
}

static void drop_dead_request(srt_server_t *s, srt_mailbox_t *mb)
{
    (void)s;
    /* Relaxed: the child is single-threaded here. */
    const uint32_t req = baton_load(&mb->w.req, memory_order_relaxed);
    if (req != baton_load(&mb->seen, memory_order_relaxed) && lk_dead(mb->w.req_for))
        baton_store(&mb->seen, req, memory_order_relaxed);
}

static void purge_dead(lk_inst_t *in)
{
    srt_waiter_t *h = NULL, *t = NULL;
    uint32_t n = 0;
    for (srt_waiter_t *w = in->head, *nx; w; w = nx) {
        nx = w->lnk->next;
        if (lk_dead(w))
            continue;
        w->lnk->next = NULL;
        if (t)
            t->lnk->next = w;
        else
            h = w;
        t = w;
        n++;
    }
    in->head = h;
    in->tail = t;
    in->nwait = n;
    lk_set_hint(in);
}

/* In a forked child, before the server's new thread starts: requests and
 * queued waiters of threads that did not survive the fork would be granted
 * a lock nobody would ever release.  (A lock held by such a thread stays
 * held, as a pthread mutex does.) */
static void eng_revive(srt_server_t *s)
{
    srt_each_mailbox(s, drop_dead_request);
    for (lk_inst_t *in = s->active; in; in = in->act_next) {
        purge_dead(in);
        if (in->local)
            hier_revive((lk_local_t *)in);
    }
}

static const srt_lock_hooks_t engine = {
    .request = eng_request,
    .poll = eng_poll,
    .pending = eng_pending,
    .wake_at = eng_wake_at,
    .revive = eng_revive,
};

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void engine_register(void) { srt_set_lock_hooks(&engine); }

void lk_engine_init(void) { pthread_once(&engine_once, engine_register); }

/* --- the client's side ---------------------------------------------------------- */

srt_mailbox_t *lk_post(srt_server_t *home, lk_inst_t *in, uint32_t op)
{
    srt_mailbox_t *mb = srt_mailbox(home);
    srt_waiter_t *w = &mb->w;
    /* Relaxed: no request of ours is outstanding, so nobody else writes the
     * word now; the seq_cst bump below orders it before the answer. */
    baton_store(&w->grant, SRT_WAITING, memory_order_relaxed);
    w->req_op = op;
    w->req_inst = in;
    w->req_for = w;
    /* seq_cst: a release for the fields (pairs with the home's acquire in
     * eng_request()), and ordered before the load of the home's sleep word
     * in srt_wake() (Dekker's pattern).  Relaxed load: we are its only
     * writer. */
    baton_store(&w->req, baton_load(&w->req, memory_order_relaxed) + 1u, memory_order_seq_cst);
    srt_wake(home);
    return mb;
}

uint32_t lk_wait(srt_mailbox_t *mb, const baton_wait_t *w)
{
    srt_server_t *self = srt_self();
    if (BATON_LIKELY(self == NULL)) {
        /* Acquire inside: pairs with the release of lk_answer(). */
        return baton_wait_while_eq(w, &mb->w.grant, SRT_WAITING);
    }
    /* A server thread (an operation shipped to it takes a lock): it must
     * keep answering its own lock messages while it waits, or a lock it
     * serves, or a local server asking it, would wait for it forever.  It
     * cannot park (nobody would wake it for those), so it pauses as its
     * policy says and yields when the policy would park. */
    baton_waiter_t wt;
    baton_waiter_init(&wt, w);
    uint32_t v;
    /* Acquire: pairs with the release of lk_answer(). */
    while ((v = baton_load(&mb->w.grant, memory_order_acquire) & ~BATON_WAIT_PARKED) == SRT_WAITING) {
        srt_pump(self);
        if (!baton_waiter_pause(&wt, NULL, 0))
            sched_yield();
    }
    return v;
}

void lk_release_home(lk_inst_t *in)
{
    /* Read before the release: once it lands, another thread may take the
     * lock, free it, and the state is gone.  The server outlives it (the
     * runtime never frees a server's structure), so waking it is safe. */
    srt_server_t *home = in->home;
    /* seq_cst: a release for the critical section (pairs with the home's
     * acquire in check_release()), and ordered before the load of the
     * home's sleep word in srt_wake() (Dekker's pattern). */
    baton_fetch_add(&in->release, 1u, memory_order_seq_cst);
    srt_wake(home);
}

/* --- the calling thread's held locks ----------------------------------------------
 *
 * Which locks the thread holds, where to release each (a hierarchical lock's
 * group instance), and the rest of the waiting list a chained grant handed
 * it.  Thread-local, so owner checks (EPERM) and chaining cost no shared
 * line; the array is freed when the thread exits. */

typedef struct lk_held_set {
    uint32_t n, cap;
    uint32_t ncached; /* entries that are kept leases */
    lk_held_t e[];
} lk_held_set_t;

static _Thread_local lk_held_set_t *held_tls __attribute__((tls_model("initial-exec")));
static pthread_key_t held_key;
static pthread_once_t held_once = PTHREAD_ONCE_INIT;
static int held_key_rc;

static void held_exit(void *p)
{
    held_tls = NULL;
    free(p);
}

static void held_key_make(void) { held_key_rc = pthread_key_create(&held_key, held_exit); }

bool lk_held_push(const lk_held_t *e)
{
    lk_held_set_t *h = held_tls;
    if (BATON_UNLIKELY(h == NULL || h->n == h->cap)) {
        const uint32_t cap = h ? h->cap * 2 : 8;
        lk_held_set_t *nh = realloc(h, sizeof *nh + cap * sizeof nh->e[0]);
        if (!nh)
            return false;
        if (!h) {
            nh->n = 0;
            nh->ncached = 0;
            pthread_once(&held_once, held_key_make);
        }
        nh->cap = cap;
        if (held_key_rc == 0)
            (void)pthread_setspecific(held_key, nh);
        held_tls = h = nh;
    }
    h->e[h->n++] = *e;
    h->ncached += e->cached != 0;
    return true;
}

static int held_index(const lk_held_set_t *h, const srv_lock_t *k, bool cached)
{
    if (!h)
        return -1;
    /* Newest first: locks are mostly released in reverse order. */
    for (uint32_t i = h->n; i-- > 0;)
        if (h->e[i].lock == k && (h->e[i].cached != 0) == cached)
            return (int)i;
    return -1;
}

bool lk_held_take(const srv_lock_t *k, bool cached, lk_held_t *out)
{
    lk_held_set_t *h = held_tls;
    const int i = held_index(h, k, cached);
    if (i < 0)
        return false;
    *out = h->e[i];
    h->e[i] = h->e[--h->n];
    h->ncached -= cached;
    return true;
}

uint32_t lk_held_cached(void) { return held_tls ? held_tls->ncached : 0; }

void lk_held_forget_oldest(void)
{
    lk_held_set_t *h = held_tls;
    /* Oldest first: removal moves the newest entry into the hole, so
     * index order is only roughly age order; roughly is enough. */
    for (uint32_t i = 0; h && i < h->n; i++)
        if (h->e[i].cached) {
            h->e[i] = h->e[--h->n];
            h->ncached--;
            return;
        }
}
