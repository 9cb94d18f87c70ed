/* hqd.c - hierarchical queue delegation lock.
 *
 * One QD lock (mutex + queue, queue.h) per group of cores and one global
 * CLH lock (FIFO, so groups take turns fairly).  A delegator uses its own
 * group's QD lock; the helper that takes a group's mutex takes the global
 * lock BEFORE it opens the group's queue (nothing is accepted into a queue
 * whose group may not run yet, which keeps the accepted order), runs the
 * group's operations, closes, and releases the global lock.  Operations of
 * one group thus run in batches on one core, and the protected data crosses
 * between groups once per batch instead of once per operation.
 *
 * Groups: NUMA nodes (sysfs) where there are several; on a single node,
 * groups of cores sharing a cache below the last level (e.g. an L2 shared
 * by a core's hyperthreads or a module) where such a cache exists; or
 * `groups=N` contiguous ranges of CPU numbers.  A thread's group is the one
 * of the CPU it runs on (sched_getcpu), read again every 64 operations.
 */
#include "queue.h"
#include "../base/error.h"
#include "../base/thread.h"
#include "../base/topology.h"

#include <baton/clh.h>
#include <errno.h>
#include <stdlib.h>

typedef struct hqd_lock {
    baton_clh_t global;
    uint32_t ngroups;
    uint32_t ncpus;
    uint16_t *cpu_group; /* CPU number -> group */
    qd_core_t *groups;   /* ngroups of them, each on its own lines */
    qd_hooks_t hooks;
    uint32_t held_group; /* the group whose mutex a lock() holder took */
} hqd_lock_t;

static _Thread_local uint32_t my_cpu, my_cpu_age;

static qd_core_t *my_group(hqd_lock_t *l, uint32_t *index)
{
    if (my_cpu_age-- == 0) {
        int cpu = sched_getcpu();
        my_cpu = cpu < 0 ? 0u : (uint32_t)cpu;
        my_cpu_age = 63;
    }
    uint32_t g = my_cpu < l->ncpus ? l->cpu_group[my_cpu] : 0u;
    if (index)
        *index = g;
    return &l->groups[g];
}

static void take_global(void *arg) { baton_clh_lock(&((hqd_lock_t *)arg)->global); }
static void give_global(void *arg) { baton_clh_unlock(&((hqd_lock_t *)arg)->global); }

static int hqd_execute(void *s, baton_fn fn, void *ctx)
{
    hqd_lock_t *l = s;
    return qd_submit_wait(my_group(l, NULL), l, &l->hooks, fn, ctx);
}

static int hqd_delegate(void *s, baton_fn fn, const void *args, size_t size, baton_future_t *f)
{
    hqd_lock_t *l = s;
    qd_submit(my_group(l, NULL), l, &l->hooks, fn, args, size, 0, f);
    return 0;
}

/* Plain exclusive use: the group's mutex (so the group's delegators wait),
 * then the global lock. */
static void k_lock(void *s)
{
    hqd_lock_t *l = s;
    uint32_t g;
    qd_core_t *c = my_group(l, &g);
    qd_mutex_lock(&c->mutex);
    baton_clh_lock(&l->global);
    l->held_group = g; /* written by the holder, read by it or its releaser */
}

static int k_trylock(void *s)
{
    hqd_lock_t *l = s;
    uint32_t g;
    qd_core_t *c = my_group(l, &g);
    if (qd_mutex_trylock(&c->mutex) != 0)
        return EBUSY;
    if (baton_clh_trylock(&l->global) != 0) {
        qd_mutex_unlock(&c->mutex);
        return EBUSY;
    }
    l->held_group = g;
    return 0;
}

/* Timed exclusive use: the group's mutex, then the global lock, each until
 * d; a time-out on the global lock lets the group's mutex go again (and
 * leaves the CLH queue as its timed lock does, baton/clh.h). */
static int k_timedlock(void *s, const baton_deadline_t *d)
{
    hqd_lock_t *l = s;
    uint32_t g;
    qd_core_t *c = my_group(l, &g);
    int rc = qd_mutex_timedlock(&c->mutex, d);
    if (rc != 0)
        return rc;
    rc = baton_clh_timedlock(&l->global, d);
    if (rc != 0) {
        qd_mutex_unlock(&c->mutex);
        return rc;
    }
    l->held_group = g;
    return 0;
}

/* The global lock by `release_global`, then the holder's group mutex. */
static int unlock_by(hqd_lock_t *l, int (*release_global)(baton_clh_t *))
{
    qd_core_t *c = &l->groups[l->held_group];
    int rc = release_global(&l->global);
    if (rc != 0)
        return rc; /* not the holder: EPERM, nothing released */
    return qd_mutex_unlock(&c->mutex);
}

static int k_unlock(void *s) { return unlock_by(s, baton_clh_unlock); }

/* Whatever thread calls (a NORMAL pthread mutex): the global lock's holder
 * node names the hold, and held_group where it was taken; the caller
 * synchronised with the holder, which orders both before these reads.
 * Relaxed: no holder node means not held, and nothing is done. */
static int k_release(void *s)
{
    hqd_lock_t *l = s;
    return baton_load(&l->global.holder, memory_order_relaxed) == NULL ? 0 : unlock_by(l, baton_clh_release);
}

BATON_KIND_ADAPT_AT(is_locked, hqd_lock_t, baton_clh_is_locked, &l->global)

/* --- registry entry ------------------------------------------------------- */

enum { OPT_GROUPS = QD_NOPTS };

static const baton_option_desc_t hqd_options[] = {
    QD_OPTIONS,
    [OPT_GROUPS] = {"groups", 0, 1024, 0, "core groups (0: NUMA nodes, else shared caches)"},
};

static void free_parts(hqd_lock_t *l)
{
    free(l->cpu_group);
    free(l->groups);
}

static int k_init(void *s, const baton_opts_t *o)
{
    hqd_lock_t *l = s;
    int ncpus = baton_topo_ncpus();
    l->ncpus = (uint32_t)ncpus;
    l->cpu_group = calloc((size_t)ncpus, sizeof *l->cpu_group);
    if (!l->cpu_group)
        return ENOMEM;
    int n = baton_topo_groups(l->cpu_group, ncpus, (int)o->value[OPT_GROUPS]);
    l->ngroups = (uint32_t)(n > 0 ? n : 1);
    l->groups = aligned_alloc(BATON_CACHELINE, l->ngroups * sizeof *l->groups);
    if (!l->groups) {
        free_parts(l);
        return ENOMEM;
    }
    memset(l->groups, 0, l->ngroups * sizeof *l->groups);
    for (uint32_t g = 0; g < l->ngroups; g++) {
        int rc = qd_core_init(&l->groups[g], o);
        if (rc) {
            while (g-- > 0)
                qd_core_destroy(&l->groups[g]);
            free_parts(l);
            return rc;
        }
    }
    l->hooks = (qd_hooks_t){.before_open = take_global, .after_close = give_global, .arg = l};
    return baton_clh_init(&l->global, &o->wait);
}

static int k_destroy(void *s)
{
    hqd_lock_t *l = s;
    if (baton_clh_is_locked(&l->global)) {
        /* A helper may be finishing its batch: wait for every group. */
        for (uint32_t g = 0; g < l->ngroups; g++) {
            qd_core_t *c = &l->groups[g];
            while (qd_mutex_trylock(&c->mutex) != 0) {
                /* Relaxed: a racy look to choose between waiting and EBUSY. */
                if (!baton_load(&c->queue.helping, memory_order_relaxed))
                    return EBUSY;
                sched_yield();
            }
            qd_mutex_unlock(&c->mutex);
        }
        if (baton_clh_is_locked(&l->global))
            return EBUSY;
    }
    for (uint32_t g = 0; g < l->ngroups; g++)
        qd_core_destroy(&l->groups[g]);
    free_parts(l);
    return baton_clh_destroy(&l->global);
}

/* What k_init allocates: the CPU -> group map, the groups and their
 * queues, and the global CLH lock's queue node. */
static size_t k_footprint(const baton_opts_t *o)
{
    int ncpus = baton_topo_ncpus();
    uint16_t *map = calloc((size_t)ncpus, sizeof *map);
    if (!map)
        return 0;
    int n = baton_topo_groups(map, ncpus, (int)o->value[OPT_GROUPS]);
    free(map);
    size_t ngroups = (size_t)(n > 0 ? n : 1);
    return baton_alloc_cost(1, (size_t)ncpus * sizeof(uint16_t)) +
           baton_alloc_cost(BATON_CACHELINE, ngroups * sizeof(qd_core_t)) + ngroups * qd_core_footprint(o) +
           sizeof(baton_qnode_t); /* baton_clh_init takes one from the arena */
}

static void k_stats(void *s, baton_stats_t *out)
{
    hqd_lock_t *l = s;
    for (uint32_t g = 0; g < l->ngroups; g++)
        qd_core_stats(&l->groups[g], out);
}

const baton_kind_t baton_kind_hqd = {
    .name = "hqd",
    .summary = "hierarchical queue delegation: one QD lock per core group under a global CLH lock",
    .caps = BATON_CAP_LOCK | BATON_CAP_TRYLOCK | BATON_CAP_EXECUTE | BATON_CAP_DELEGATE | BATON_CAP_DETACH |
            BATON_CAP_WAIT | BATON_CAP_NOCOLLAPSE | BATON_CAP_TIMED,
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_SPINPARK,
    .size = sizeof(hqd_lock_t),
    .align = _Alignof(hqd_lock_t),
    .options = hqd_options,
    .noptions = sizeof hqd_options / sizeof hqd_options[0],
    .init = k_init,
    .destroy = k_destroy,
    .lock = k_lock,
    .trylock = k_trylock,
    .timedlock = k_timedlock,
    .unlock = k_unlock,
    .release = k_release,
    .is_locked = k_is_locked,
    .execute = hqd_execute,
    .delegate = hqd_delegate,
    .stats = k_stats,
    .footprint = k_footprint,
};
