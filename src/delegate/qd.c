/* qd.c - queue delegation lock: a mutex plus a delegation queue.
 *
 * The algorithm and the queue are in queue.h (shared with mrqd and hqd);
 * this file is the `qd` kind: delegate / execute / futures through the
 * queue, and plain lock / trylock / unlock through the mutex (a holder
 * through lock() never opens the queue, so delegators wait for it like any
 * other lock taker), plus the lifecycle every QD-family kind shares.
 *
 * Options (QD_OPTIONS in queue.h):
 *   queue=<bytes>    size of the delegation buffer (default 4096)
 *   help_limit=<n>   operations one helper runs per session (default 4096)
 *   retries=<n>      try_lock/enqueue rounds before taking the mutex
 *                    unconditionally (the starvation bound; default 64)
 *   pad=1            one cache line per entry (for comparison only)
 *   cas=1            fetch_add emulated with CAS (for comparison only)
 * The wait policy (default spinpark) is how lock() and futures wait.
 */
#include "queue.h"
#include "../wait/wait_internal.h"
#include "../base/error.h"
#include "../base/thread.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* --- the queue and the core, shared by the QD family ---------------------- */

int qd_queue_init(qd_queue_t *q, uint32_t size, bool pad, bool cas)
{
    q->size = size;
    q->pad = pad;
    q->cas = cas;
    q->buf = aligned_alloc(BATON_CACHELINE, size);
    if (!q->buf)
        return ENOMEM;
    memset(q->buf, 0, size);
    /* Closed until a helper opens it. */
    atomic_init(&q->counter, (uint64_t)size);
    atomic_init(&q->closed, 1u);
    atomic_init(&q->helping, 0u);
    return 0;
}

void qd_queue_destroy(qd_queue_t *q)
{
    free(q->buf);
    q->buf = NULL;
}

/* The mutex's slow path (queue.h says why it parks as it does). */
void qd_mutex_lock_slow(qd_mutex_t *m)
{
    /* First as a helper wait: the holder runs operations and may need our
     * CPU (under spinpark: yield where spinpark would spin). */
    baton_helper_waiter_t h;
    baton_helper_waiter_init(&h, &m->wait);
    for (;;) {
        if (qd_mutex_trylock(m) == 0)
            return;
        if (!baton_helper_pause(&h, &m->word, 1u))
            break;
    }
    /* seq_cst: the count precedes our look at the word, for every unlock
     * that looks at the count after it. */
    baton_fetch_add(&m->sleepers, 1u, memory_order_seq_cst);
    uint64_t timeout = QD_PARK_FIRST_NS;
    for (;;) {
        uint32_t expected = 0;
        /* seq_cst look and CAS (the CAS also an acquire: pairs with the
         * unlock's release): our half of the pattern with the unlock. */
        if (baton_load(&m->word, memory_order_seq_cst) == 0 &&
            baton_cas(&m->word, &expected, 1u, memory_order_seq_cst, memory_order_relaxed))
            break;
        baton_park_timeout(&m->word, 1u, timeout);
        timeout = timeout * 2 > QD_PARK_MAX_NS ? QD_PARK_MAX_NS : timeout * 2;
    }
    /* Relaxed: an unlock that still counts us only wakes someone in vain. */
    baton_fetch_sub(&m->sleepers, 1u, memory_order_relaxed);
}

int qd_mutex_timedlock(qd_mutex_t *m, const baton_deadline_t *d)
{
    /* As qd_mutex_lock_slow(), with the deadline checked before every
     * pause and every park bounded by it. */
    baton_helper_waiter_t h;
    baton_helper_waiter_init(&h, &m->wait);
    for (;;) {
        if (qd_mutex_trylock(m) == 0)
            return 0;
        if (baton_deadline_left(d) == 0)
            return ETIMEDOUT;
        if (!baton_helper_pause(&h, &m->word, 1u))
            break;
    }
    /* seq_cst: as in qd_mutex_lock_slow(). */
    baton_fetch_add(&m->sleepers, 1u, memory_order_seq_cst);
    uint64_t timeout = QD_PARK_FIRST_NS;
    int rc = 0;
    for (;;) {
        uint32_t expected = 0;
        /* seq_cst look and CAS: as in qd_mutex_lock_slow(). */
        if (baton_load(&m->word, memory_order_seq_cst) == 0 &&
            baton_cas(&m->word, &expected, 1u, memory_order_seq_cst, memory_order_relaxed))
            break;
        if (baton_deadline_left(d) == 0) {
            rc = ETIMEDOUT;
            break;
        }
        baton_park_for(&m->word, 1u, timeout, d);
        timeout = timeout * 2 > QD_PARK_MAX_NS ? QD_PARK_MAX_NS : timeout * 2;
    }
    /* Relaxed: as in qd_mutex_lock_slow(). */
    baton_fetch_sub(&m->sleepers, 1u, memory_order_relaxed);
    return rc;
}

int qd_core_init(qd_core_t *c, const baton_opts_t *o)
{
    if (o->value[QD_OPT_QUEUE] % BATON_CACHELINE)
        return baton_fail(EINVAL, "queue=%llu is not a multiple of %d bytes",
                          (unsigned long long)o->value[QD_OPT_QUEUE], BATON_CACHELINE);
    qd_mutex_init(&c->mutex, &o->wait);
    c->wait = o->wait;

    c->help_limit = (uint32_t)o->value[QD_OPT_HELP];
    c->retries = (uint32_t)o->value[QD_OPT_RETRIES];
    return qd_queue_init(&c->queue, (uint32_t)o->value[QD_OPT_QUEUE], o->value[QD_OPT_PAD] != 0,
                         o->value[QD_OPT_CAS] != 0);
}

size_t qd_core_footprint(const baton_opts_t *o)
{
    /* qd_queue_init's aligned_alloc of the buffer. */
    return baton_alloc_cost(BATON_CACHELINE, (size_t)o->value[QD_OPT_QUEUE]);
}

int qd_core_destroy(qd_core_t *c)
{
    /* A helper still running delegated operations holds the mutex; wait for
     * it (everything accepted runs before it unlocks).  A holder through
     * lock() is misuse: EBUSY. */
    baton_waiter_t w;
    baton_waiter_init(&w, &c->wait);
    while (qd_mutex_trylock(&c->mutex) != 0) {
        /* Relaxed: a racy look to choose between waiting and EBUSY. */
        if (!baton_load(&c->queue.helping, memory_order_relaxed))
            return EBUSY;
        if (!baton_waiter_pause(&w, NULL, 0))
            sched_yield();
    }
    qd_mutex_unlock(&c->mutex);
    qd_queue_destroy(&c->queue);
    return 0;
}

void qd_core_stats(qd_core_t *c, baton_stats_t *out)
{
    /* Relaxed: a racy snapshot. */
    out->help_sessions += atomic_load_explicit(&c->queue.cnt.sessions, memory_order_relaxed);
    out->helped_ops += atomic_load_explicit(&c->queue.cnt.helped, memory_order_relaxed);
    out->forced_locks += atomic_load_explicit(&c->queue.cnt.forced, memory_order_relaxed);
}

/* --- the qd kind ------------------------------------------------------------ */

/* The resident helper (option tenure_us, 0 = off: the algorithm exactly as
 * published).
 *
 * With short critical sections a help session lasts one operation: the
 * helper runs its own operation, finds nothing new, closes the queue and
 * unlocks, and the lock (and the queue's lines) cross to the other core at
 * almost every operation.  A resident helper keeps the mutex and the open
 * queue across its own calls for up to tenure_us: between calls it is
 * "away" (its thread runs the caller's code), and on its next call it runs
 * what others enqueued meanwhile, then its own operation, without taking
 * anything.  Others keep delegating into the open queue.
 *
 * The state word `resident`: 0 (no resident), the resident's token (busy:
 * inside a call), or token | AWAY.  The token is the thread pointer, which
 * is even.  Whoever holds the mutex owns the session; ownership moves only
 * through a CAS on `resident` from an AWAY value.
 *
 *  - Leaving (end of a call, tenure left): store token|AWAY (seq_cst), then
 *    look at the counter (seq_cst); if something arrived meanwhile, CAS back
 *    to busy and help (if the CAS fails, someone stole the session).
 *  - An enqueuer, after its (seq_cst) fetch_add and its entry's store, looks
 *    at `resident` (seq_cst).  Either the resident's look saw the entry, or
 *    the enqueuer sees AWAY: it then waits a little for the resident to come
 *    back (the state changes) and otherwise steals the session (CAS from the
 *    AWAY value it saw), runs everything and ends it.  So an accepted
 *    operation never waits for a thread that is away for long: nothing
 *    depends on the resident coming back.
 *  - Re-entering: CAS token|AWAY -> token (acquire: pairs with the release
 *    of the store that went away, or fails if stolen); run what was
 *    accepted while away first (it was accepted earlier), then the own
 *    operation.  Its linearization point is the re-entry's first look at the
 *    counter: the first pass of qdt_help runs everything reserved before
 *    that look (the help limit is only checked between passes, and a
 *    resident never goes away with the limit reached), and entries accepted
 *    later may run after the own operation.
 *  - lock()/trylock(), the forced path and destroy take an AWAY session
 *    over the same way (ending it, keeping the mutex), and never park while
 *    a resident holds the mutex: a resident that is away wakes no one.
 * The session ends (queue closed, mutex released) when the tenure is over,
 * help_limit operations have run, or a thread took it over.
 */
#define QD_AWAY ((uintptr_t)1)
#define QD_STEAL_PAUSES 64u /* how long an enqueuer waits for an away resident */
#define QD_CLOCK_EVERY 16u  /* calls between two clock reads */

typedef struct qd_lock {
    qd_core_t core;
    _Alignas(BATON_CACHELINE) _Atomic uintptr_t resident;
    uint64_t tenure_ns; /* 0: no resident helper */
    /* Session state, owned by whoever holds the mutex (handed over with the
     * CAS on `resident`). */
    _Alignas(BATON_CACHELINE) uint64_t done, helped, tenure_end;
    uint32_t calls;
} qd_lock_t;

/* Help while the queue stays open and something new arrives. */
static void qdt_help(qd_lock_t *l, baton_owed_t *o)
{
    qd_queue_t *q = &l->core.queue;
    for (;;) {
        /* seq_cst: the resident's half of the handshake with enqueuers (see
         * above); also orders the entries' acquire loads after it. */
        uint64_t todo = baton_load(&q->counter, memory_order_seq_cst);
        if (todo == l->done || l->helped >= l->core.help_limit)
            return;
        if (todo >= q->size) {
            baton_store(&q->closed, 1u, memory_order_relaxed); /* relaxed: a hint */
            qd_drain_to(q, todo, &l->done, &l->helped, o);
            /* Reopen (release: the zeroed buffer, as when opening). */
            baton_store(&q->counter, (uint64_t)0, memory_order_release);
            baton_store(&q->closed, 0u, memory_order_relaxed);
            l->done = 0;
            continue;
        }
        qd_drain_to(q, todo, &l->done, &l->helped, o);
    }
}

/* Close the queue, run what is left, and end the session; keep the mutex
 * if `keep` (a lock() caller took the session over). */
static void qdt_end(qd_lock_t *l, bool keep, baton_owed_t *o)
{
    qd_queue_t *q = &l->core.queue;
    /* Relaxed: we hold the session; nobody steals a busy one. */
    baton_store(&l->resident, (uintptr_t)0, memory_order_relaxed);
    /* Relaxed: as in qd_session's close (entries are acquired one by one). */
    uint64_t todo = baton_xchg(&q->counter, (uint64_t)q->size, memory_order_relaxed);
    baton_store(&q->closed, 1u, memory_order_relaxed); /* relaxed: a hint */
    qd_drain_to(q, todo, &l->done, &l->helped, o);
    baton_store(&q->helping, 0u, memory_order_relaxed); /* relaxed: read racily by destroy */
    qd_count(&l->core.queue.cnt.sessions, 1);
    qd_count(&l->core.queue.cnt.helped, l->helped);
    if (!keep)
        qd_mutex_unlock(&l->core.mutex);
}

/* Open a fresh session (we just took the mutex). */
static void qdt_open(qd_lock_t *l, uintptr_t token)
{
    qd_queue_t *q = &l->core.queue;
    baton_store(&q->helping, 1u, memory_order_relaxed); /* relaxed: see qdt_end */
    l->done = 0;
    l->helped = 0;
    l->calls = 0;
    l->tenure_end = l->tenure_ns ? baton_now_ns() + l->tenure_ns : 0;
    /* Relaxed: only AWAY values matter to others. */
    baton_store(&l->resident, token, memory_order_relaxed);
    /* Release: pairs with the delegators' fetch_add (the zeroed buffer). */
    baton_store(&q->counter, (uint64_t)0, memory_order_release);
    baton_store(&q->closed, 0u, memory_order_relaxed);
}

/* End of a call: stay resident (away) if the tenure allows, else end. */
static void qdt_leave(qd_lock_t *l, uintptr_t token, baton_owed_t *o)
{
    for (;;) {
        bool over = l->helped >= l->core.help_limit || l->tenure_ns == 0 ||
                    /* Relaxed: a hint that lock() callers wait. */
                    baton_load(&l->core.mutex.sleepers, memory_order_relaxed) != 0;
        if (!over && ++l->calls % QD_CLOCK_EVERY == 0)
            over = baton_now_ns() >= l->tenure_end;
        if (over) {
            qdt_end(l, false, o);
            return;
        }
        /* Once away, the session state belongs to whoever takes it: read
         * what we need first. */
        const uint64_t done = l->done;
        /* seq_cst (and so release: hands the session state over to a
         * stealer's acquire CAS); the handshake with enqueuers. */
        baton_store(&l->resident, token | QD_AWAY, memory_order_seq_cst);
        uint64_t todo = baton_load(&l->core.queue.counter, memory_order_seq_cst);
        if (todo == done)
            return;
        uintptr_t away = token | QD_AWAY;
        if (!baton_cas(&l->resident, &away, token, memory_order_acquire, memory_order_relaxed))
            return; /* stolen: the thief runs it */
        qdt_help(l, o);
    }
}

/* Take an AWAY session over (the caller is not inside it).  Returns true
 * with the session ours (resident = our token, busy). */
static bool qdt_steal(qd_lock_t *l, uintptr_t seen, uintptr_t token)
{
    /* Acquire: pairs with the seq_cst (release) store that went away, so
     * the session state (done, helped) is ours to continue. */
    return (seen & QD_AWAY) &&
           baton_cas(&l->resident, &seen, token, memory_order_acquire, memory_order_relaxed);
}

/* We took an away session over (qdt_steal): run what it accepted and end
 * it, keeping the mutex if `keep` (lock() and trylock take it). */
static void qdt_take_over(qd_lock_t *l, bool keep)
{
    baton_owed_t owed;
    baton_owed_init(&owed);
    baton_cs_frame_t frame;
    baton_cs_enter(&frame, l);
    qdt_help(l, &owed);
    qdt_end(l, keep, &owed);
    baton_cs_leave(&frame);
    baton_wake_owed(&owed); /* the session is over (with `keep` we hold the mutex: a rare path) */
}

/* After an enqueue: make sure an away resident does not sit on it. */
static void qdt_after_enqueue(qd_lock_t *l, uintptr_t token)
{
    /* seq_cst: the enqueuer's half of the handshake (after its fetch_add). */
    uintptr_t r = baton_load(&l->resident, memory_order_seq_cst);
    if (!(r & QD_AWAY))
        return; /* none, or busy: it runs what it finds before going away */
    for (unsigned i = 0; i < QD_STEAL_PAUSES; i++) {
        baton_cpu_relax();
        /* Relaxed: any change means the session moved on (came back busy,
         * was stolen or ended), and whoever has it runs our entry. */
        if (baton_load(&l->resident, memory_order_relaxed) != r)
            return;
    }
    if (qdt_steal(l, r, token))
        qdt_take_over(l, false);
}

/* Take the mutex for lock() or the forced path: like qd_mutex_lock(), but
 * taking an away resident's session over, and never parking while a
 * resident may be away (it would wake no one). */
static void qdt_lock(qd_lock_t *l)
{
    const uintptr_t token = baton_thread_token();
    baton_waiter_t w;
    baton_waiter_init(&w, &l->core.wait);
    for (;;) {
        if (qd_mutex_trylock(&l->core.mutex) == 0)
            return;
        /* seq_cst: as in qdt_after_enqueue. */
        uintptr_t r = baton_load(&l->resident, memory_order_seq_cst);
        if (qdt_steal(l, r, token)) {
            qdt_take_over(l, true);
            return;
        }
        if (!baton_waiter_pause(&w, NULL, 0))
            sched_yield();
    }
}

static int qdt_submit(qd_lock_t *l, baton_fn fn, const void *payload, size_t psize, uint32_t flags,
                      baton_future_t *f)
{
    const uintptr_t token = baton_thread_token();
    uintptr_t away = token | QD_AWAY;
    /* Relaxed look first: only our own thread stores our AWAY value. */
    bool reenter = baton_load(&l->resident, memory_order_relaxed) == away &&
                   baton_cas(&l->resident, &away, token, memory_order_acquire, memory_order_relaxed);
    if (!reenter) {
        for (unsigned tries = 0;; tries++) {
            if (qd_mutex_trylock(&l->core.mutex) == 0)
                break;
            if (qd_enqueue(&l->core.queue, fn, payload, psize, flags, f) == QD_OK) {
                qdt_after_enqueue(l, token);
                return QD_ENQUEUED;
            }
            if (tries >= l->core.retries) {
                qdt_lock(l);
                qd_count(&l->core.queue.cnt.forced, 1);
                break;
            }
            qd_retry_pause();
        }
        qdt_open(l, token);
    }
    baton_owed_t owed;
    baton_owed_init(&owed);
    baton_cs_frame_t frame;
    baton_cs_enter(&frame, l);
    if (reenter)
        qdt_help(l, &owed); /* accepted while we were away: they come first */
    _Alignas(16) unsigned char copy[BATON_ARGS_MAX];
    fn(qd_own_ctx(payload, psize, flags, copy));
    if (f && !(flags & QD_F_OWN))
        baton_future_complete_own(f, 0); /* our own operation: nobody waits yet */
    l->helped++;
    qdt_help(l, &owed);
    qdt_leave(l, token, &owed);
    baton_cs_leave(&frame);
    baton_wake_owed(&owed); /* ended, or away: either way off the drain */
    return QD_RAN;
}

static int qd_execute(void *s, baton_fn fn, void *ctx)
{
    qd_lock_t *l = s;
    if (!l->tenure_ns)
        return qd_submit_wait(&l->core, l, NULL, fn, ctx);
    baton_future_t f;
    baton_future_prepare(&f, &l->core.wait);
    if (qdt_submit(l, fn, &ctx, sizeof ctx, QD_F_CTX | QD_F_OWN, &f) == QD_RAN)
        return 0;
    return baton_future_wait(&f);
}

static int qd_delegate(void *s, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    qd_lock_t *l = s;
    if (!l->tenure_ns)
        qd_submit(&l->core, l, NULL, fn, args, size, 0, f);
    else
        qdt_submit(l, fn, args, size, 0, f);
    return 0;
}

enum { OPT_TENURE = QD_NOPTS };

static const baton_option_desc_t qd_options[] = {
    QD_OPTIONS,
    [OPT_TENURE] = {"tenure_us", 0, 1000000, 0,
                    "a helper stays resident across its own calls this long (0: off)"},
};

static int k_init(void *s, const baton_opts_t *o)
{
    qd_lock_t *l = s;
    atomic_init(&l->resident, (uintptr_t)0);
    l->tenure_ns = o->value[OPT_TENURE] * 1000u;
    return qd_core_init(&l->core, o);
}

static int k_destroy(void *s)
{
    qd_lock_t *l = s;
    /* An away resident holds the mutex: end its session first (runs what
     * it accepted).  seq_cst: as in qdt_after_enqueue. */
    uintptr_t r = baton_load(&l->resident, memory_order_seq_cst);
    if (qdt_steal(l, r, baton_thread_token()))
        qdt_take_over(l, false);
    return qd_core_destroy(&l->core);
}

static void k_lock(void *s)
{
    qd_lock_t *l = s;
    if (!l->tenure_ns)
        qd_mutex_lock(&l->core.mutex);
    else
        qdt_lock(l);
}

static int k_trylock(void *s)
{
    qd_lock_t *l = s;
    if (qd_mutex_trylock(&l->core.mutex) == 0)
        return 0;
    /* An away session is not "held" from any caller's point of view (its
     * resident is outside the lock, perhaps gone): take it over, run what
     * it accepted, end it and keep the mutex.  seq_cst: as in
     * qdt_after_enqueue. */
    const uintptr_t token = baton_thread_token();
    if (l->tenure_ns && qdt_steal(l, baton_load(&l->resident, memory_order_seq_cst), token)) {
        qdt_take_over(l, true);
        return 0;
    }
    return EBUSY;
}

/* The mutex's timed wait.  With a resident helper (tenure_us), the wait of
 * qdt_lock() with a deadline: it takes an away session over, and, like
 * qdt_lock(), never sleeps while a resident may be away (it would wake no
 * one): it pauses by the policy, then yields. */
static int k_timedlock(void *s, const baton_deadline_t *d)
{
    qd_lock_t *l = s;
    if (!l->tenure_ns)
        return qd_mutex_timedlock(&l->core.mutex, d);
    const uintptr_t token = baton_thread_token();
    baton_waiter_t w;
    baton_waiter_init(&w, &l->core.wait);
    for (;;) {
        if (qd_mutex_trylock(&l->core.mutex) == 0)
            return 0;
        /* seq_cst: as in qdt_after_enqueue. */
        if (qdt_steal(l, baton_load(&l->resident, memory_order_seq_cst), token)) {
            qdt_take_over(l, true);
            return 0;
        }
        if (!baton_waiter_pause_until(&w, d))
            return ETIMEDOUT;
    }
}

BATON_KIND_ADAPT_AT(unlock, qd_lock_t, qd_mutex_unlock, &l->core.mutex)
BATON_KIND_ADAPT_AT(is_locked, qd_lock_t, qd_mutex_is_locked, &l->core.mutex)
BATON_KIND_ADAPT_AT(stats, qd_lock_t, qd_core_stats, &l->core)

const baton_kind_t baton_kind_qd = {
    .name = "qd",
    .summary = "queue delegation: a lock holder runs operations others enqueue; delegate detaches",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_DETACH |
            BATON_CAP_WAIT | BATON_CAP_NOCOLLAPSE | BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(qd_lock_t),
    .align = _Alignof(qd_lock_t),
    .options = qd_options,
    .noptions = sizeof qd_options / sizeof qd_options[0],
    .init = k_init,
    .destroy = k_destroy,
    .lock = k_lock,
    .trylock = k_trylock,
    /* The unlock needs no owner (the mutex's), and leaves a free lock free. */
    .unlock = k_unlock,
    .release = k_unlock,
    .is_locked = k_is_locked,
    .timedlock = k_timedlock,
    .execute = qd_execute,
    .delegate = qd_delegate,
    .stats = k_stats,
    .footprint = qd_core_footprint,
};
