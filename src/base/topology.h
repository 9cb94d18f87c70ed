/* topology.h - the little the core library knows of the machine's layout
 * (sysfs only; the bench tool has the full picture in bench/topo.c). */
#ifndef BATON_BASE_TOPOLOGY_H
#define BATON_BASE_TOPOLOGY_H

#include <stdint.h>

/* Highest configured CPU number + 1 (at least 1). */
int baton_topo_ncpus(void);

/* Fill cpu_group[0..ncpus) with a group number per CPU and return the
 * number of groups.  want > 0: that many groups of contiguous CPU numbers.
 * want == 0: NUMA nodes if there are several; else groups of CPUs sharing a
 * cache shared by at least two CPUs but not by every online CPU (the
 * largest such level); else one group. */
int baton_topo_groups(uint16_t *cpu_group, int ncpus, int want);

#endif
