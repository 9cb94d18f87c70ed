/* topo.c - machine topology from sysfs, and the thread pinning policies.
 *
 * Everything is read once by topo_load() into a topo_t sized for the online
 * CPUs, so a machine with hundreds of CPUs, several NUMA nodes and SMT works
 * the same as a laptop.  Whatever sysfs lacks falls back to the simplest
 * truthful answer: every CPU its own core, one package, one node, 64-byte
 * lines, and topo_load() returns -1 to say so.
 */
#include "topo.h"
#include "../src/base/topology.h" /* baton_cpulist_parse */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Overridable so a test can point topo_load() at a fake sysfs tree. */
#ifndef SYS_CPU
#define SYS_CPU "/sys/devices/system/cpu"
#endif
#ifndef SYS_NODE
#define SYS_NODE "/sys/devices/system/node"
#endif

/* --- small readers --------------------------------------------------------- */

int topo_read_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, size - 1, f);
    int err = ferror(f);
    fclose(f);
    if (err)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

/* Read one integer from a file; returns 0 or -1. */
static int read_int(const char *path, int *out)
{
    char buf[64];
    if (topo_read_file(path, buf, sizeof buf) <= 0)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (end == buf || errno != 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* A growable list of ints. */
typedef struct intvec {
    int *v;
    int n, cap;
} intvec_t;

static int intvec_push(intvec_t *a, int x)
{
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        int *v = realloc(a->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

static int push_cpu(int cpu, void *ctx) { return intvec_push(ctx, cpu); }

/* Parse the kernel's cpulist format ("0-3,8-11,16") into a list of numbers.
 * Returns 0, or -1 on a malformed list or out of memory. */
static int parse_cpulist(const char *s, intvec_t *out) { return baton_cpulist_parse(s, push_cpu, out); }

static int read_cpulist(const char *path, intvec_t *out)
{
    /* A cpulist of a few thousand CPUs in ranges is short; a pathological
     * one (every CPU listed singly) is at most ~6 bytes per CPU. */
    size_t size = 1 << 16;
    char *buf = malloc(size);
    if (!buf)
        return -1;
    int rc = topo_read_file(path, buf, size) < 0 ? -1 : parse_cpulist(buf, out);
    free(buf);
    return rc;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* --- topo_load --------------------------------------------------------------- */

/* The L1 data cache line of `cpu`: the first level-1 Data (or Unified) cache
 * in sysfs, else sysconf, else 64. */
static int read_cacheline(int cpu)
{
    char path[256], type[32];
    for (int idx = 0; idx < 16; idx++) {
        int level, line;
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/level", cpu, idx);
        if (read_int(path, &level) != 0)
            break;
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/type", cpu, idx);
        if (level != 1 || topo_read_file(path, type, sizeof type) <= 0)
            continue;
        if (strncmp(type, "Data", 4) != 0 && strncmp(type, "Unified", 7) != 0)
            continue;
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/coherency_line_size", cpu, idx);
        if (read_int(path, &line) == 0 && line > 0)
            return line;
    }
#ifdef _SC_LEVEL1_DCACHE_LINESIZE
    long l = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
    if (l > 0 && l <= 4096)
        return (int)l;
#endif
    return 64;
}

/* The CPU's name from /proc/cpuinfo: "model name" on x86, else the first of
 * a few keys other architectures use. */
static void read_model(char *model, size_t size)
{
    static const char *const keys[] = {"model name", "cpu model", "Processor", "cpu", "uarch"};
    enum { NKEYS = sizeof keys / sizeof keys[0] };
    char found[NKEYS][128];
    memset(found, 0, sizeof found);
    snprintf(model, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *kend = colon;
        while (kend > line && isspace((unsigned char)kend[-1]))
            kend--;
        size_t klen = (size_t)(kend - line);
        char *val = colon + 1;
        while (isspace((unsigned char)*val))
            val++;
        size_t vlen = strlen(val);
        while (vlen > 0 && isspace((unsigned char)val[vlen - 1]))
            val[--vlen] = '\0';
        if (vlen == 0)
            continue;
        for (int k = 0; k < NKEYS; k++)
            if (!found[k][0] && strlen(keys[k]) == klen && memcmp(line, keys[k], klen) == 0)
                snprintf(found[k], sizeof found[k], "%s", val);
        if (found[0][0])
            break; /* the preferred key: done */
    }
    fclose(f);
    for (int k = 0; k < NKEYS; k++)
        if (found[k][0]) {
            snprintf(model, size, "%s", found[k]);
            return;
        }
}

/* Assign cpu[].node from /sys/devices/system/node/nodeN/cpulist.  Returns 0
 * if NUMA information was found (or the directory is simply absent: a
 * kernel without NUMA is one node, not an error), -1 on a read failure. */
static int read_nodes(topo_t *t)
{
    DIR *d = opendir(SYS_NODE);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *p = e->d_name;
        if (strncmp(p, "node", 4) != 0 || !isdigit((unsigned char)p[4]))
            continue;
        char *end;
        long node = strtol(p + 4, &end, 10);
        if (*end != '\0' || node < 0 || node > 1 << 20)
            continue;
        char path[320];
        snprintf(path, sizeof path, SYS_NODE "/%s/cpulist", p);
        intvec_t cpus = {0};
        if (read_cpulist(path, &cpus) != 0) {
            rc = -1;
        } else {
            for (int i = 0; i < cpus.n; i++)
                for (int j = 0; j < t->ncpus; j++)
                    if (t->cpu[j].cpu == cpus.v[i]) {
                        t->cpu[j].node = (int)node;
                        break;
                    }
        }
        free(cpus.v);
    }
    closedir(d);
    return rc;
}

/* Order of CPUs by (package, core, cpu): SMT siblings end up adjacent. */
static int cmp_core(const void *a, const void *b)
{
    const topo_cpu_t *x = a, *y = b;
    if (x->package_id != y->package_id)
        return x->package_id < y->package_id ? -1 : 1;
    if (x->core_id != y->core_id)
        return x->core_id < y->core_id ? -1 : 1;
    return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

static int cmp_cpu(const void *a, const void *b)
{
    const topo_cpu_t *x = a, *y = b;
    return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

/* Derive smt_index, ncores, npackages, nnodes and smt_per_core from the
 * per-CPU fields.  Leaves cpu[] sorted by CPU number. */
static void derive(topo_t *t)
{
    qsort(t->cpu, (size_t)t->ncpus, sizeof t->cpu[0], cmp_core);
    t->ncores = 0;
    t->smt_per_core = t->ncpus > 0 ? 1 : 0;
    for (int i = 0; i < t->ncpus;) {
        int j = i;
        while (j < t->ncpus && t->cpu[j].package_id == t->cpu[i].package_id &&
               t->cpu[j].core_id == t->cpu[i].core_id) {
            t->cpu[j].smt_index = j - i;
            j++;
        }
        t->ncores++;
        if (j - i > t->smt_per_core)
            t->smt_per_core = j - i;
        i = j;
    }
    /* Distinct packages and nodes: sort a scratch copy of the ids. */
    int *ids = malloc((size_t)(t->ncpus > 0 ? t->ncpus : 1) * sizeof *ids);
    t->npackages = t->nnodes = t->ncpus > 0 ? 1 : 0;
    if (ids) {
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < t->ncpus; i++)
                ids[i] = pass == 0 ? t->cpu[i].package_id : t->cpu[i].node;
            qsort(ids, (size_t)t->ncpus, sizeof ids[0], cmp_int);
            int distinct = t->ncpus > 0 ? 1 : 0;
            for (int i = 1; i < t->ncpus; i++)
                distinct += ids[i] != ids[i - 1];
            if (pass == 0)
                t->npackages = distinct;
            else
                t->nnodes = distinct;
        }
        free(ids);
    }
    qsort(t->cpu, (size_t)t->ncpus, sizeof t->cpu[0], cmp_cpu);
}

int topo_load(topo_t *t)
{
    memset(t, 0, sizeof *t);
    int rc = 0;

    intvec_t online = {0};
    if (read_cpulist(SYS_CPU "/online", &online) != 0 || online.n == 0) {
        /* No sysfs: number the CPUs sysconf reports. */
        rc = -1;
        online.n = 0;
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n < 1)
            n = 1;
        for (long i = 0; i < n; i++)
            if (intvec_push(&online, (int)i) != 0)
                break;
    }
    if (online.n > 1) { /* sorted, without duplicates */
        qsort(online.v, (size_t)online.n, sizeof online.v[0], cmp_int);
        int k = 1;
        for (int i = 1; i < online.n; i++)
            if (online.v[i] != online.v[k - 1])
                online.v[k++] = online.v[i];
        online.n = k;
    }

    int n = online.n > 0 ? online.n : 1;
    t->cpu = calloc((size_t)n, sizeof t->cpu[0]);
    if (!t->cpu && n > 1) {
        /* Out of memory: still describe one CPU, as promised. */
        rc = -1;
        n = 1;
        t->cpu = calloc(1, sizeof t->cpu[0]);
    }
    if (!t->cpu) {
        free(online.v);
        t->ncores = t->npackages = t->nnodes = t->smt_per_core = 1;
        t->cacheline = 64;
        snprintf(t->model, sizeof t->model, "unknown");
        return -1;
    }
    t->ncpus = n;
    for (int i = 0; i < n; i++) {
        topo_cpu_t *c = &t->cpu[i];
        c->cpu = online.n > 0 ? online.v[i] : 0;
        char path[256];
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/topology/core_id", c->cpu);
        if (read_int(path, &c->core_id) != 0) {
            c->core_id = c->cpu; /* unknown: its own core */
            rc = -1;
        }
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/topology/physical_package_id", c->cpu);
        if (read_int(path, &c->package_id) != 0) {
            c->package_id = 0;
            rc = -1;
        }
        c->node = 0;
    }
    free(online.v);

    if (read_nodes(t) != 0)
        rc = -1;
    derive(t);
    t->cacheline = read_cacheline(t->cpu[0].cpu);
    read_model(t->model, sizeof t->model);
    return rc;
}

void topo_free(topo_t *t)
{
    free(t->cpu);
    t->cpu = NULL;
    t->ncpus = 0;
}

/* --- pinning ------------------------------------------------------------------ */

int topo_pin_parse(const char *name)
{
    if (!name)
        return -1;
    if (strcmp(name, "none") == 0)
        return TOPO_PIN_NONE;
    if (strcmp(name, "compact") == 0)
        return TOPO_PIN_COMPACT;
    if (strcmp(name, "spread") == 0)
        return TOPO_PIN_SPREAD;
    return -1;
}

const char *topo_pin_name(int policy)
{
    switch (policy) {
    case TOPO_PIN_NONE: return "none";
    case TOPO_PIN_COMPACT: return "compact";
    case TOPO_PIN_SPREAD: return "spread";
    default: return "?";
    }
}

/* Within a node: smt_index first (cores before their siblings), then core
 * order (package, core_id), then CPU number.  Nodes sort first. */
static int cmp_pin(const void *a, const void *b)
{
    const topo_cpu_t *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->smt_index != y->smt_index)
        return x->smt_index < y->smt_index ? -1 : 1;
    return cmp_core(a, b);
}

void topo_pin_order(const topo_t *t, int policy, int *order, int n)
{
    if (n <= 0)
        return;
    int ncpus = t->cpu ? t->ncpus : 0;
    if ((policy != TOPO_PIN_COMPACT && policy != TOPO_PIN_SPREAD) || ncpus <= 0) {
        for (int i = 0; i < n; i++)
            order[i] = -1;
        return;
    }
    topo_cpu_t *s = malloc((size_t)ncpus * sizeof *s);
    int *base = malloc((size_t)ncpus * sizeof *base);
    if (!s || !base) {
        /* Out of memory: CPU number order is a usable compact order. */
        free(s);
        free(base);
        for (int i = 0; i < n; i++)
            order[i] = t->cpu[i % ncpus].cpu;
        return;
    }
    memcpy(s, t->cpu, (size_t)ncpus * sizeof *s);
    qsort(s, (size_t)ncpus, sizeof *s, cmp_pin);

    if (policy == TOPO_PIN_COMPACT) {
        /* Node by node, each node already in cores-then-siblings order. */
        for (int i = 0; i < ncpus; i++)
            base[i] = s[i].cpu;
    } else {
        /* Round-robin over the nodes: the k-th CPU of every node (in the
         * same per-node order) before the (k+1)-th of any; nodes with
         * fewer CPUs simply drop out of later rounds.  s[] is grouped by
         * node, so node g occupies s[start[g] .. start[g+1]). */
        int *start = malloc((size_t)(ncpus + 1) * sizeof *start);
        if (!start) {
            for (int i = 0; i < ncpus; i++)
                base[i] = s[i].cpu;
        } else {
            int groups = 0;
            for (int i = 0; i < ncpus; i++)
                if (i == 0 || s[i].node != s[i - 1].node)
                    start[groups++] = i;
            start[groups] = ncpus;
            int k = 0;
            for (int round = 0; k < ncpus; round++)
                for (int g = 0; g < groups; g++)
                    if (start[g] + round < start[g + 1])
                        base[k++] = s[start[g] + round].cpu;
            free(start);
        }
    }
    for (int i = 0; i < n; i++)
        order[i] = base[i % ncpus];
    free(base);
    free(s);
}

int topo_pin_self(int cpu)
{
    if (cpu < 0)
        return EINVAL;
    cpu_set_t *set = CPU_ALLOC(cpu + 1);
    if (!set)
        return ENOMEM;
    size_t size = CPU_ALLOC_SIZE(cpu + 1);
    CPU_ZERO_S(size, set);
    CPU_SET_S(cpu, size, set);
    int rc = pthread_setaffinity_np(pthread_self(), size, set);
    CPU_FREE(set);
    return rc;
}
