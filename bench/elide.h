/* elide.h - what the parts of `baton bench elide` share: elide.c (the
 * cache, its workload, the report and the command) and elide_glibc.c
 * (glibc's own elision, run as this command in a subprocess). */
#ifndef BATON_BENCH_ELIDE_H
#define BATON_BENCH_ELIDE_H

#include "bench.h"
#include "report.h"
#include "workloads.h"

#define GLIBC_PEER "peer:glibc-elision"
#define GLIBC_TUNABLE "glibc.elision.enable=1"

/* The result's extras: operations per help session (delegation kinds), the
 * slot of the elision counters, the hit rate, evictions per operation. */
enum { EXTRA_SESSION = BENCH_EXTRA_OPS_PER_SESSION, EXTRA_TX_SLOT, EXTRA_HIT_RATE, EXTRA_EVICT };

/* --stats' words, by STATS_* (workloads.h). */
extern const char *const elide_stats_names[STATS_MODES];

/* The command line the subprocess is given again. */
struct elide_cli {
    double duration;
    int repeat;
    const char *pin;
    uint32_t buckets, keys, items;
    bool fault;
};

/* Run the pthread kind under GLIBC_TUNABLE in a subprocess (this same
 * command, /proc/self/exe) for one cell, and read its JSON back into rec;
 * a crash, a time-out or unreadable output is rec's status and message. */
void elide_run_glibc_peer(const struct elide_cli *cli, int threads, int mix, int stats, bench_record_t *rec);

#endif
