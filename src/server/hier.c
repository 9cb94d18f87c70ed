/* hier.c - the hierarchical lock (`server,hier`): one local server per core
 * group caches the lock for the group's clients and talks to the global
 * server for them.
 *
 * A client asks the local server of the group it runs in (its CPU's group,
 * sched_getcpu(), read again every 64 calls) and releases to it.  The local
 * server keeps the lock's group instance (lk_local_t): while the group does
 * not hold the lock it queues its clients and asks the global server once,
 * on the group's behalf (its request names the group's waiter record, where
 * the answer lands); once granted it grants the lock to its clients in turn
 * without asking again, and hands the lock back to the global server when
 * no client of the group waits.
 *
 * The local bound.  A group whose clients keep asking would otherwise keep
 * the lock for ever.  After local_bound consecutive local grants (default
 * 64), if another group is waiting (the global instance's hint, or a list
 * of groups handed out with the grant), the local server hands the lock
 * back and asks again for its remaining waiters.  64 because a hand-back
 * costs three messages between the local and the global server (release,
 * request, grant) plus a wait in the global queue: over 64 critical
 * sections that is under 5% of the messages at full contention, while a
 * waiting group waits at most 64 of this group's critical sections.  With
 * nobody else waiting the bound does not apply: handing back would only
 * cost messages.
 *
 * Trylock.  A local server that holds the lock answers at once.  One that
 * does not, and is not already asking, forwards the trylock to the global
 * server, which answers at once; the local server passes the answer on.
 * While it is already asking for the lock, a trylock is refused at once
 * (another client of the group is about to get the lock).
 *
 * With chain (`server,hier,chain`), both levels hand out their waiting
 * lists: a local server's grant carries its clients' list (chain.c), and
 * the global server's grant carries the list of waiting groups; a local
 * server done with the lock passes it to the next group's local server
 * directly, and only the last group releases to the global server.
 *
 * Requests upstream.  A local server posts them through its own mailbox at
 * the global server, one at a time: it posts the next once the global
 * server has consumed the previous one (its `seen`, read here).  The others
 * wait in the local server's queue (out_head), and the local server does
 * not park while that queue is non-empty.
 */
#include "server.h"
#include "../base/error.h"
#include "../base/topology.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local uint32_t my_cpu, my_cpu_age;

lk_local_t *hier_mine(srv_lock_t *k)
{
    if (my_cpu_age-- == 0) {
        int cpu = sched_getcpu();
        my_cpu = cpu < 0 ? 0u : (uint32_t)cpu;
        my_cpu_age = 63;
    }
    const uint32_t g = my_cpu < k->ncpus ? k->cpu_group[my_cpu] : 0u;
    return &k->groups[g < k->ngroups ? g : 0];
}

/* --- the local server's side ------------------------------------------------------ */

/* Ask the global server for the lock (op LK_LOCK or LK_TRY). */
static void ask(srt_server_t *s, lk_local_t *L, uint32_t op)
{
    L->asked = 1;
    L->queued = 1;
    L->ask_op = op;
    /* Relaxed: no answer is outstanding, so no other thread writes the word
     * now; the seq_cst post in hier_post() orders it before the answer. */
    baton_store(&L->grp.grant, SRT_WAITING, memory_order_relaxed);
    L->out_next = NULL;
    if (s->out_tail)
        ((lk_local_t *)s->out_tail)->out_next = L;
    else
        s->out_head = L;
    s->out_tail = L;
    lk_activate(s, &L->in); /* the local server now watches the group's grant word */
    (void)hier_post(s);
}

uint32_t hier_post(srt_server_t *s)
{
    srt_mailbox_t *mb = s->out_mb;
    uint32_t n = 0;
    while (s->out_head && mb) {
        /* Acquire: pairs with the global server's release of seen (it has
         * read our previous request).  Relaxed req: we are its writer. */
        if (baton_load(&mb->seen, memory_order_acquire) != baton_load(&mb->w.req, memory_order_relaxed))
            break;
        lk_local_t *L = s->out_head;
        s->out_head = L->out_next;
        if (!s->out_head)
            s->out_tail = NULL;
        L->queued = 0;
        mb->w.req_op = L->ask_op;
        mb->w.req_inst = L->parent;
        mb->w.req_for = &L->grp;
        /* seq_cst: a release for the fields (pairs with the global server's
         * acquire in eng_request()) and ordered before the load of its
         * sleep word (Dekker's pattern, srt_wake()). */
        baton_store(&mb->w.req, baton_load(&mb->w.req, memory_order_relaxed) + 1u, memory_order_seq_cst);
        srt_wake(s->upstream);
        n++;
    }
    return n;
}

/* Give the global lock up: pass it to the next group of the list the
 * global server handed out, or release it to the global server. */
static void hand_back(lk_local_t *L)
{
    L->have = 0;
    /* Our successor in the list of groups: written by the global server
     * before its grant, which reached us directly or through the passes. */
    srt_waiter_t *next = L->chained ? L->grp_link.next : NULL;
    L->chained = 0;
    if (next) {
        lk_count(&L->in, BATON_ROLE_LOCAL, BATON_ROLE_LOCAL, 1); /* the pass */
        lk_answer(&L->in.wait, next, SRT_CHAINED);
    } else {
        lk_release_home(L->parent); /* counted by the global server */
    }
}

static bool others_wait(const lk_local_t *L)
{
    /* Relaxed: a hint; a stale answer costs one hand-back too many or too
     * few, never exclusion. */
    return (L->chained && L->grp_link.next != NULL) ||
           (baton_load(&L->parent->hint, memory_order_relaxed) & LK_HINT_WAITERS) != 0;
}

static void local_grant_next(srt_server_t *s, lk_local_t *L)
{
    L->run++;
    lk_grant_next(s, &L->in);
}

void hier_request(srt_server_t *s, lk_local_t *L, srt_waiter_t *w, bool try_)
{
    lk_inst_t *in = &L->in;
    if (!in->held && L->have) {
        L->run++;
        lk_grant(s, in, w, SRT_GRANTED);
    } else if (try_) {
        if (!in->held && !L->asked) {
            L->tryer = w;
            ask(s, L, LK_TRY);
        } else {
            lk_refuse(in, w);
        }
    } else {
        lk_append(in, w);
        if (!L->have && !L->asked)
            ask(s, L, LK_LOCK);
    }
}

void hier_released(srt_server_t *s, lk_local_t *L)
{
    lk_inst_t *in = &L->in;
    if (in->head && !(L->run >= L->bound && others_wait(L))) {
        local_grant_next(s, L);
        return;
    }
    hand_back(L);
    if (in->head)
        ask(s, L, LK_LOCK); /* bounded: the rest of the group asks again */
    else if (!L->asked)
        lk_deactivate(s, in);
}

uint32_t hier_poll(srt_server_t *s, lk_local_t *L)
{
    if (!L->asked || L->queued)
        return 0;
    /* Acquire: pairs with the seq_cst exchange of lk_answer() (the global
     * server's grant, or the previous group's pass, and the critical
     * sections before it). */
    const uint32_t v = baton_load(&L->grp.grant, memory_order_acquire) & ~BATON_WAIT_PARKED;
    if (v == SRT_WAITING)
        return 0;
    lk_inst_t *in = &L->in;
    srt_waiter_t *t = L->tryer;
    L->asked = 0;
    L->tryer = NULL;
    if (v == SRT_REFUSED) {
        if (t)
            lk_refuse(in, t);
        if (in->head)
            ask(s, L, LK_LOCK);
        else
            lk_deactivate(s, in);
        return 1;
    }
    L->have = 1;
    L->run = 0;
    L->chained = v == SRT_CHAINED;
    if (t) {
        L->run++;
        lk_grant(s, in, t, SRT_GRANTED); /* queued clients follow it */
    } else if (in->head) {
        local_grant_next(s, L);
    } else {
        hand_back(L); /* its asker is gone (a thread lost in a fork) */
        lk_deactivate(s, in);
    }
    return 1;
}

bool hier_pending(const lk_local_t *L)
{
    /* seq_cst: Dekker's pattern with the answer's exchange (lk_answer()). */
    return L->asked && !L->queued &&
           (baton_load(&((lk_local_t *)L)->grp.grant, memory_order_seq_cst) & ~BATON_WAIT_PARKED) !=
               SRT_WAITING;
}

bool hier_busy(const lk_local_t *L) { return L->have || L->asked || L->tryer != NULL; }

void hier_revive(lk_local_t *L)
{
    if (L->tryer && lk_dead(L->tryer))
        L->tryer = NULL; /* the answer, when it comes, goes to the queue or back */
}

/* --- setting up ------------------------------------------------------------------------ */

static int group_map(const baton_opts_t *o, uint16_t **map, int *ncpus, int want)
{
    (void)o;
    *ncpus = baton_topo_ncpus();
    *map = calloc((size_t)*ncpus, sizeof **map);
    if (!*map)
        return -1;
    int n = baton_topo_groups(*map, *ncpus, want);
    return n > 0 ? n : 1;
}

int hier_init(srv_lock_t *k, const baton_opts_t *o, bool chain, uint32_t bound, uint64_t idle_us,
              int groups_want)
{
    int ncpus;
    const int n = group_map(o, &k->cpu_group, &ncpus, groups_want);
    if (n < 0)
        return baton_fail(ENOMEM, "server: out of memory for the CPU groups");
    k->ncpus = (uint32_t)ncpus;
    k->ngroups = (uint32_t)n;
    k->groups_want = (uint32_t)groups_want;
    k->groups = aligned_alloc(BATON_CACHELINE, (size_t)n * sizeof *k->groups);
    if (!k->groups) {
        free(k->cpu_group);
        return baton_fail(ENOMEM, "server: out of memory for %d local servers' lock state", n);
    }
    memset(k->groups, 0, (size_t)n * sizeof *k->groups);
    for (int g = 0; g < n; g++) {
        lk_local_t *L = &k->groups[g];
        srt_server_t *local;
        int rc = srt_get_local("server", k->server, groups_want, g, k->cpu_group, ncpus, idle_us, &local);
        if (rc != 0) {
            while (g-- > 0)
                srt_put(k->groups[g].in.home);
            free(k->groups);
            free(k->cpu_group);
            return rc;
        }
        lk_inst_init(&L->in, local, &k->wait, chain, true, BATON_ROLE_CLIENT, BATON_ROLE_LOCAL);
        atomic_init(&L->grp.grant, SRT_WAITING);
        atomic_init(&L->grp.req, 0u);
        L->grp.wake = local;
        L->grp.lnk = &L->grp_link;
        L->grp_link.next = NULL;
        atomic_init(&L->grp_link.gen, SRT_IMMORTAL); /* a group outlives any fork */
        L->parent = &k->inst;
        L->bound = bound;
    }
    return 0;
}

void hier_fini(srv_lock_t *k)
{
    for (uint32_t g = 0; g < k->ngroups; g++)
        srt_put(k->groups[g].in.home);
    free(k->groups);
    free(k->cpu_group);
    k->groups = NULL;
    k->cpu_group = NULL;
}

size_t hier_footprint(const baton_opts_t *o, int groups_want)
{
    uint16_t *map;
    int ncpus;
    const int n = group_map(o, &map, &ncpus, groups_want);
    if (n < 0)
        return 0;
    free(map);
    return baton_alloc_cost(1, (size_t)ncpus * sizeof(uint16_t)) +
           baton_alloc_cost(BATON_CACHELINE, (size_t)n * sizeof(lk_local_t));
}
