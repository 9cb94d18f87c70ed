/* topology.c - CPU groups from sysfs (see topology.h). */
#include "topology.h"
#include <baton/atomic.h>

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's sysconf() reads sysfs for these on every call (an open, a read
 * and a close: 10-30 us on the project's VMs), and lock inits ask (a
 * program under the interposer that made 740 rwlocks opened
 * /sys/devices/system/cpu/online 740 times): once per process.  Relaxed:
 * every thread computes the same value; racing stores agree. */
static int sysconf_once(_Atomic int *cache, int name)
{
    int n = baton_load(cache, memory_order_relaxed);
    if (n == 0) {
        long v = sysconf(name);
        n = v > 0 && v < INT32_MAX ? (int)v : 1;
        baton_store(cache, n, memory_order_relaxed);
    }
    return n;
}

static _Atomic int cpus_conf, cpus_online;

int baton_topo_ncpus(void) { return sysconf_once(&cpus_conf, _SC_NPROCESSORS_CONF); }

int baton_topo_online(void) { return sysconf_once(&cpus_online, _SC_NPROCESSORS_ONLN); }

int baton_cpulist_parse(const char *s, int (*each)(int cpu, void *ctx), void *ctx)
{
    while (*s) {
        while (*s == ',' || isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        char *end;
        long lo = strtol(s, &end, 10);
        if (end == s || lo < 0)
            return -1;
        long hi = lo;
        s = end;
        if (*s == '-') {
            hi = strtol(s + 1, &end, 10);
            if (end == s + 1 || hi < lo)
                return -1;
            s = end;
        }
        /* An optional ":stride" suffix never appears in sysfs lists, but the
         * format allows it ("0-15:2"); accept it rather than misparse. */
        long stride = 1;
        if (*s == ':') {
            stride = strtol(s + 1, &end, 10);
            if (end == s + 1 || stride <= 0)
                return -1;
            s = end;
            if (*s == '/') { /* "0-15:2/4" group form: ignore the group */
                (void)strtol(s + 1, &end, 10);
                s = end;
            }
        }
        for (long c = lo; c <= hi; c += stride)
            if (c > BATON_CPULIST_MAX || each((int)c, ctx) != 0)
                return -1;
    }
    return 0;
}

struct members {
    unsigned char *member;
    int ncpus, count;
};

static int add_member(int cpu, void *ctx)
{
    struct members *m = ctx;
    if (cpu < m->ncpus) {
        m->member[cpu] = 1;
        m->count++;
    }
    return 0;
}

/* Parse a cpulist ("0-3,8,10-11") into a membership array: how many CPUs
 * below ncpus it names, or -1. */
static int parse_cpulist(const char *s, unsigned char *member, int ncpus)
{
    struct members m = {member, ncpus, 0};
    return baton_cpulist_parse(s, add_member, &m) == 0 ? m.count : -1;
}

static int read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *r = fgets(buf, (int)size, f);
    fclose(f);
    return r ? 0 : -1;
}

/* Assign groups by a per-CPU sysfs cpulist file (e.g. a cache's
 * shared_cpu_list); returns the number of groups, or 0 if unreadable. */
static int groups_from_lists(uint16_t *cpu_group, int ncpus, const char *fmt, int index)
{
    unsigned char member[4096];
    if (ncpus > (int)sizeof member)
        return 0;
    for (int c = 0; c < ncpus; c++)
        cpu_group[c] = UINT16_MAX;
    int groups = 0;
    char path[256], line[1024];
    for (int c = 0; c < ncpus; c++) {
        if (cpu_group[c] != UINT16_MAX)
            continue;
        snprintf(path, sizeof path, fmt, c, index);
        if (read_line(path, line, sizeof line) != 0) {
            cpu_group[c] = 0; /* offline or unknown: group 0 */
            continue;
        }
        memset(member, 0, (size_t)ncpus);
        if (parse_cpulist(line, member, ncpus) <= 0)
            return 0;
        for (int d = 0; d < ncpus; d++)
            if (member[d] && cpu_group[d] == UINT16_MAX)
                cpu_group[d] = (uint16_t)groups;
        if (cpu_group[c] == UINT16_MAX)
            cpu_group[c] = (uint16_t)groups;
        groups++;
    }
    return groups;
}

static int detect_groups(uint16_t *cpu_group, int ncpus)
{
    unsigned char member[4096];
    char line[1024], path[256];
    /* NUMA nodes. */
    int nodes = 0;
    for (int c = 0; c < ncpus; c++)
        cpu_group[c] = 0;
    for (int n = 0; n < 1024 && ncpus <= (int)sizeof member; n++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
        if (read_line(path, line, sizeof line) != 0)
            break;
        memset(member, 0, (size_t)ncpus);
        if (parse_cpulist(line, member, ncpus) <= 0)
            continue;
        for (int c = 0; c < ncpus; c++)
            if (member[c])
                cpu_group[c] = (uint16_t)nodes;
        nodes++;
    }
    if (nodes > 1)
        return nodes;
    /* One node: the largest cache level not shared by every online CPU. */
    long online = baton_topo_online();
    for (int index = 8; index >= 0; index--) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", index);
        if (read_line(path, line, sizeof line) != 0 || ncpus > (int)sizeof member)
            continue;
        memset(member, 0, (size_t)ncpus);
        int shared = parse_cpulist(line, member, ncpus);
        /* A group is worth having when its CPUs share something: at least
         * two of them, but not every online CPU (that is one group). */
        if (shared < 2 || shared >= online)
            continue;
        int g = groups_from_lists(cpu_group, ncpus,
                                  "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", index);
        if (g > 1)
            return g;
    }
    for (int c = 0; c < ncpus; c++)
        cpu_group[c] = 0;
    return 1;
}

/* The machine's groups are read from sysfs once per process: a program
 * under the interposer may create a million hqd locks.  Published without a
 * lock (a lock here could be held by another thread when the program forks,
 * and the child would hang creating its first hqd lock): racing first
 * callers each read sysfs, one CAS publishes, the others free theirs. */
typedef struct topo_cache {
    int ncpus, groups;
    uint16_t map[];
} topo_cache_t;

static _Atomic(topo_cache_t *) cache;

int baton_topo_groups(uint16_t *cpu_group, int ncpus, int want)
{
    if (want > 0) {
        if (want > ncpus)
            want = ncpus;
        for (int c = 0; c < ncpus; c++)
            cpu_group[c] = (uint16_t)((long)c * want / ncpus);
        return want;
    }
    /* Acquire: pairs with the release CAS below (the map is complete). */
    topo_cache_t *t = baton_load(&cache, memory_order_acquire);
    if (t != NULL && t->ncpus == ncpus) {
        memcpy(cpu_group, t->map, (size_t)ncpus * sizeof *cpu_group);
        return t->groups;
    }
    int g = detect_groups(cpu_group, ncpus);
    topo_cache_t *mine = malloc(sizeof *mine + (size_t)ncpus * sizeof mine->map[0]);
    if (mine != NULL) {
        mine->ncpus = ncpus;
        mine->groups = g;
        memcpy(mine->map, cpu_group, (size_t)ncpus * sizeof *cpu_group);
        topo_cache_t *expected = NULL;
        /* Release: publishes the filled map; pairs with the acquire above.
         * A cache for another CPU count stays; this one is not kept. */
        if (!baton_cas(&cache, &expected, mine, memory_order_release, memory_order_relaxed))
            free(mine);
    }
    return g;
}
