/* topo.h - machine topology from sysfs, and the thread pinning policies.
 *
 * Pinning (QD locking paper, section 6): "compact" fills one NUMA node
 * before the next; within a node it first puts one thread on every core,
 * then fills the remaining hardware threads.  "spread" deals threads to the
 * NUMA nodes in turn, still cores before SMT siblings.  "none" leaves
 * placement to the scheduler.  With more threads than CPUs the order wraps
 * around (oversubscription is a scenario, not an error). */
#ifndef BATON_BENCH_TOPO_H
#define BATON_BENCH_TOPO_H

#include <stddef.h>

typedef struct topo_cpu {
    int cpu;        /* logical CPU number */
    int core_id;    /* topology/core_id */
    int package_id; /* topology/physical_package_id */
    int node;       /* NUMA node (0 without NUMA information) */
    int smt_index;  /* 0 for the first hardware thread of its core, 1 ... */
} topo_cpu_t;

typedef struct topo {
    int ncpus; /* online CPUs, entries in cpu[] */
    topo_cpu_t *cpu;
    int ncores; /* distinct (package, core) pairs */
    int npackages;
    int nnodes;
    int smt_per_core; /* largest number of hardware threads on one core */
    int cacheline;    /* L1d coherency line size in bytes */
    char model[128];  /* "model name" from /proc/cpuinfo */
} topo_t;

enum { TOPO_PIN_NONE = 0, TOPO_PIN_COMPACT = 1, TOPO_PIN_SPREAD = 2 };

/* Read sysfs; returns 0, or -1 (t still describes a usable single node). */
int topo_load(topo_t *t);
void topo_free(topo_t *t);
/* "compact" | "spread" | "none" -> TOPO_PIN_*, or -1. */
int topo_pin_parse(const char *name);
const char *topo_pin_name(int policy);
/* order[i] = the CPU for thread i, i < n (wrapping when n > ncpus). */
void topo_pin_order(const topo_t *t, int policy, int *order, int n);
/* Read a whole (small) sysfs or proc file into buf, NUL-terminated;
 * returns its length or -1. */
int topo_read_file(const char *path, char *buf, size_t size);
/* Pin the calling thread to one CPU; returns 0 or an errno value. */
int topo_pin_self(int cpu);

#endif
