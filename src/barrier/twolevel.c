/* twolevel.c - the two-level barrier of the MONITOR/MWAIT paper.
 *
 * One arrival counter per core group (a NUMA node, else a group of cores
 * sharing a cache, else `groups=N` groups of contiguous CPU numbers), one
 * global counter, and ONE global episode word that every waiter waits on.
 * A thread arrives at its group's counter; the last arriver of a group goes
 * on to the global counter; the last of those publishes the episode.  Most
 * atomic increments thus stay on a line shared within one group, and the
 * release is a single store that every waiter sees (the paper waits on that
 * word with MONITOR/MWAIT; here the wait layer's policy decides, `monitor`
 * where the CPU has it).
 *
 * Group sizes.  An episode ends when n threads have arrived, whoever they
 * are, so the last arriver of a group must be known without knowing which
 * threads will come.  The n places (barrier.h: seats) are split between the
 * groups once, in proportion to the groups' CPUs; a thread takes a place in
 * the group of the CPU it first waits on while that group has one free
 * (else any free place), and keeps it.  Every episode has one arrival per
 * place, so group g has exactly size[g] arrivals per episode, and each group
 * counter is a ticket counter like central.c's: ticket t of group g belongs
 * to episode t / size[g] and is the group's last when t % size[g] ==
 * size[g] - 1.  The global counter takes one ticket per group per episode.
 *
 * With one group (one NUMA node and no cache shared by only some CPUs, as
 * on a small machine), the global level is skipped: this is the central
 * barrier, with the episode word beside the counter for small n.
 *
 * The episode word moves as in central.c: a waiter of episode e finds it at
 * e - 1 or e and waits until it reads e + 1.
 */
#include "barrier.h"
#include "../base/error.h"
#include "../base/topology.h"

#include <errno.h>
#include <stdlib.h>

typedef struct tl_group {
    _Alignas(BATON_CACHELINE) _Atomic uint64_t tickets;
    uint32_t size;         /* places in the group */
    _Atomic uint32_t near; /* the episode word, with one group and few threads */
} tl_group_t;

typedef struct twolevel {
    _Alignas(BATON_CACHELINE) _Atomic uint64_t tickets; /* groups' last arrivers */
    _Atomic uint32_t near;                              /* the episode word beside them, for few threads */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t far;     /* the episode word on its own line */
    /* Read-only after init. */
    _Alignas(BATON_CACHELINE) _Atomic uint32_t *episode;
    tl_group_t *groups;
    uint32_t ngroups;
} twolevel_t;

enum { OPT_GROUPS = 0 };

static const baton_option_desc_t tl_options[] = {
    {"groups", 0, 1024, 0, "core groups (0: NUMA nodes, else groups of cores sharing a cache, from sysfs)"},
};

/* Split n places between the groups in proportion to their CPU counts
 * (largest remainders get the leftovers).  share[g] may be 0: with fewer
 * threads than groups, some groups get no place. */
static void split(unsigned n, const unsigned *cpus, unsigned groups, unsigned total, uint32_t *share,
                  uint64_t *rem)
{
    unsigned given = 0;
    for (unsigned g = 0; g < groups; g++) {
        share[g] = (uint32_t)((uint64_t)n * cpus[g] / total);
        rem[g] = (uint64_t)n * cpus[g] % total;
        given += share[g];
    }
    while (given < n) {
        unsigned best = 0;
        for (unsigned g = 1; g < groups; g++)
            if (rem[g] > rem[best])
                best = g;
        share[best]++;
        rem[best] = 0;
        given++;
    }
}

/* Lay the groups out: t->groups (those with places), the seats' groups and
 * rank ranges, and the CPU -> group map take_seat() prefers by. */
static int layout(baton_barrier_t *b, twolevel_t *t, const uint16_t *map, int ncpus, unsigned groups,
                  const uint32_t *share)
{
    unsigned kept = 0;
    for (unsigned g = 0; g < groups; g++)
        kept += share[g] > 0;
    t->groups = aligned_alloc(BATON_CACHELINE, kept * sizeof *t->groups);
    uint32_t *first = malloc((kept + 1) * sizeof *first);
    uint16_t *cpu_group = kept > 1 ? malloc((size_t)ncpus * sizeof *cpu_group) : NULL;
    uint16_t *renum = malloc(groups * sizeof *renum);
    if (t->groups == NULL || first == NULL || (kept > 1 && cpu_group == NULL) || renum == NULL) {
        free(first);
        free(cpu_group);
        free(renum);
        return ENOMEM;
    }
    uint32_t rank = 0;
    unsigned k = 0;
    for (unsigned g = 0; g < groups; g++) {
        renum[g] = UINT16_MAX; /* a CPU of a group with no place prefers none */
        if (share[g] == 0)
            continue;
        renum[g] = (uint16_t)k;
        atomic_init(&t->groups[k].tickets, 0u);
        atomic_init(&t->groups[k].near, 0u);
        t->groups[k].size = share[g];
        first[k] = rank;
        for (uint32_t r = rank; r < rank + share[g]; r++)
            bar_seat(b, r)->group = k;
        rank += share[g];
        k++;
    }
    first[kept] = rank;
    if (cpu_group)
        for (int c = 0; c < ncpus; c++)
            cpu_group[c] = map[c] < groups ? renum[map[c]] : UINT16_MAX;
    free(renum);
    free(b->group_first);
    b->group_first = first;
    b->cpu_group = cpu_group;
    b->ncpus = ncpus;
    b->ngroups = kept;
    t->ngroups = kept;
    return 0;
}

static int tl_init(baton_barrier_t *b)
{
    twolevel_t *t = b->state;
    int ncpus = baton_topo_ncpus();
    uint16_t *map = malloc((size_t)ncpus * sizeof *map);
    unsigned want = (unsigned)b->value[OPT_GROUPS];
    unsigned groups = map ? (unsigned)baton_topo_groups(map, ncpus, (int)want) : 1;
    if (groups == 0)
        groups = 1;
    unsigned *cpus = calloc(groups, sizeof *cpus);
    uint32_t *share = malloc(groups * sizeof *share);
    uint64_t *rem = malloc(groups * sizeof *rem);
    int rc = ENOMEM;
    if (map && cpus && share && rem) {
        for (int c = 0; c < ncpus; c++)
            cpus[map[c] < groups ? map[c] : 0]++;
        split(b->n, cpus, groups, (unsigned)ncpus, share, rem);
        rc = layout(b, t, map, ncpus, groups, share);
    }
    free(map);
    free(cpus);
    free(share);
    free(rem);
    if (rc != 0)
        return baton_fail(rc, "no memory for barrier '%s'", b->spec);
    atomic_init(&t->tickets, 0u);
    atomic_init(&t->near, 0u);
    atomic_init(&t->far, 0u);
    /* The episode word: beside the last counter an episode's last arriver
     * increments, for few threads (barrier.h: BAR_SHARE_LINE_MAX). */
    if (b->n > BAR_SHARE_LINE_MAX)
        t->episode = &t->far;
    else
        t->episode = t->ngroups == 1 ? &t->groups[0].near : &t->near;
    return 0;
}

static void tl_destroy(baton_barrier_t *b)
{
    twolevel_t *t = b->state;
    free(t->groups);
}

static int tl_wait(baton_barrier_t *b, bar_seat_t *seat)
{
    twolevel_t *t = b->state;
    tl_group_t *g = &t->groups[seat->group];
    uint32_t done, ignored;
    /* The group's last arriver goes on to the global level, carrying the
     * group's writes (bar_arrive's acq_rel at both levels). */
    if (bar_arrive(&g->tickets, g->size, &done) &&
        (t->ngroups == 1 || bar_arrive(&t->tickets, t->ngroups, &ignored))) {
        bar_publish(b, t->episode, done);
        return BATON_BARRIER_SERIAL_THREAD;
    }
    bar_wait_for(b, t->episode, done);
    return 0;
}

/* --- registry entry ------------------------------------------------------- */

const bar_kind_t bar_kind_twolevel = {
    .name = "twolevel",
    .summary =
        "a counter per core group (NUMA node or cache-sharing cores), then a global one; every waiter waits on one global word",
    .waits = BATON_WAITS_ALL,
    .default_wait = BATON_WAIT_AUTO,
    .options = tl_options,
    .noptions = sizeof tl_options / sizeof tl_options[0],
    .size = sizeof(twolevel_t),
    .init = tl_init,
    .destroy = tl_destroy,
    .wait = tl_wait,
};
