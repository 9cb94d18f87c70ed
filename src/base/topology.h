/* topology.h - the little the core library knows of the machine's layout
 * (sysfs only; the bench tool has the full picture in bench/topo.c). */
#ifndef BATON_BASE_TOPOLOGY_H
#define BATON_BASE_TOPOLOGY_H

#include <stdint.h>

/* The largest CPU number a cpulist may name. */
#define BATON_CPULIST_MAX (1 << 22)

/* Parse the kernel's cpulist format ("0-3,8-11,16"; commas and white space
 * separate; a range may have a ":stride", and a "/group" after it, which is
 * ignored) and call each(cpu) for every CPU it names, in order; each
 * returns nonzero to stop.  Returns 0, or -1 on a malformed list, a CPU
 * above BATON_CPULIST_MAX or when each stopped it.  The one cpulist parser
 * (the bench's topology uses it too). */
int baton_cpulist_parse(const char *s, int (*each)(int cpu, void *ctx), void *ctx);

/* Highest configured CPU number + 1 (at least 1), and the CPUs online (at
 * least 1): sysconf's, read once per process. */
int baton_topo_ncpus(void);
int baton_topo_online(void);

/* Fill cpu_group[0..ncpus) with a group number per CPU and return the
 * number of groups.  want > 0: that many groups of contiguous CPU numbers.
 * want == 0: NUMA nodes if there are several; else groups of CPUs sharing a
 * cache shared by at least two CPUs but not by every online CPU (the
 * largest such level); else one group. */
int baton_topo_groups(uint16_t *cpu_group, int ncpus, int want);

#endif
