/* workloads.h - the workloads of bench micro, pq, rw, elide and server and
 * their parameters, for the commands that run several of them (matrix).
 * Each is defined, and described, in its bench's file. */
#ifndef BATON_BENCH_WORKLOADS_H
#define BATON_BENCH_WORKLOADS_H

#include "bench.h"

/* --- micro.c: S shared and P private lines under one of N locks --------- */

enum { VIA_AUTO, VIA_LOCK, VIA_EXECUTE };

struct micro_params {
    int shared_lines;
    int private_lines;
    int local_work;
    bool inject_fault;
    int via;        /* VIA_* */
    int lock_count; /* N: each operation takes one of N locks at random */
};

#define MICRO_LOCKS_MAX 65536

extern const bench_workload_t micro_workload;

/* --- pq.c: a pairing-heap priority queue --------------------------------- */

struct pq_params {
    int local_work;
    int prefill;
    bool nd;
    bool inject_fault;
};

#define PQ_PREFILL 10000 /* bench pq's default */

extern const bench_workload_t pq_workload;

/* --- rw.c: RWBench ------------------------------------------------------- */

struct rw_params {
    int reads_pct;
    int local_work;
    bool inject_fault;
};

extern const bench_workload_t rw_workload;

/* --- elide.c: a memcached-like cache under one lock ---------------------- */

enum { STATS_OFF, STATS_SHARED, STATS_PERCPU, STATS_MODES };

struct elide_slab; /* elide.c's elision counters, shared with the parent */

struct elide_params {
    int mix_get; /* percent of operations that are gets */
    int stats;   /* STATS_* */
    uint32_t buckets, keys, items;
    bool inject_fault;
    struct elide_slab *slab; /* NULL: do not report elision counters */
};

/* bench elide's defaults */
#define ELIDE_BUCKETS 4096
#define ELIDE_KEYS 16384
#define ELIDE_ITEMS 8192

extern const bench_workload_t elide_workload;

/* --- server.c: short critical sections between intervals of local work --- */

enum { WL_COUNTER, WL_STACK, WL_IMBALANCED, WL_COUNT };

struct srv_params {
    int workload;            /* WL_* */
    uint32_t interval_units; /* thread-local work between sections, client 1 */
    bool inject_fault;
};

#define SRV_INTERVAL_CYCLES_MIN 100 /* bench server's shortest default interval */

extern const bench_workload_t srv_workload;

#endif
