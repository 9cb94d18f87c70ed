/* machine.h - what baton info prints and what every JSON result file
 * carries as its "machine" object: hardware, features and measured costs. */
#ifndef BATON_BENCH_MACHINE_H
#define BATON_BENCH_MACHINE_H

#include <baton/baton.h>
#include <stdbool.h>
#include <stdio.h>

#include "topo.h"

typedef struct machine {
    topo_t topo;
    char kernel[128]; /* uname -sr */
    char hostname[64];
    char date[32];     /* ISO 8601, UTC */
    char compiler[64]; /* that built baton */
    char vendor[13];
    bool waitpkg, monitorx;
    bool rtm;        /* CPUID advertises RTM */
    int rtm_commits; /* of rtm_tries trivial transactions; -1 if not tried */
    int rtm_tries;
    baton_htm_info_t htm; /* what elide(<kind>) decided (the library's probe) */
    bool rapl;            /* /sys/class/powercap energy counter readable */
    /* measured */
    double pause_ns, xchg_ns, cas_ns;
    double line_rtt_ns; /* cache line round trip between cpu[0] and the
                               first CPU on another core; 0 if single-core */
    int rtt_cpu_a, rtt_cpu_b;
    double futex_wake_ns;     /* futex wake with no sleeper */
    double wakeup_latency_ns; /* futex wake of a parked thread until it runs (CPU idle) */
    double park_cost_ns;      /* one park of a wait that ends soon: CPU + wake-up (the spin budget) */
    double yield_ns;
    double spin_budget_ns; /* spinpark/monitor budget chosen by calibration */
    double tsc_ghz;
} machine_t;

/* Fill everything; `measure` false skips the timed measurements. */
void machine_describe(machine_t *m, bool measure);
void machine_free(machine_t *m);
/* Human-readable report (baton info). */
void machine_print(FILE *f, const machine_t *m);
/* The JSON object (without a key), e.g. {"cpu_model": ..., ...}. */
void machine_json(FILE *f, const machine_t *m);
/* TSC ticks per nanosecond (GHz), measured over 10 ms; 0 where there is none. */
double machine_tsc_ghz(void);

/* RAPL: cumulative package energy in joules, or a negative value where
 * /sys/class/powercap is missing or unreadable. */
double machine_energy_joules(void);

#endif
