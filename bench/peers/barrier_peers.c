/* barrier_peers.c - the list of barrier peers built into this bench.
 * CMakeLists.txt compiles a unit only when its library was found and then
 * defines BATON_PEER_<UNIT>=1; this table names what those units provide. */
#include "barrier_peers.h"

static const bench_barrier_peer_t table[] = {
#if BATON_PEER_PTHREAD_BARRIER
    {"peer:pthread_barrier", "glibc pthread_barrier_t: counter under a lock, sleeps (futex)",
     bench_bpeer_pthread_create, bench_bpeer_pthread_destroy, bench_bpeer_pthread_wait, NULL},
#endif
#if BATON_PEER_GOMP
    {"peer:gomp_barrier",
     "GNU OpenMP #pragma omp barrier (its own team): counter, spins (GOMP_SPINCOUNT), then sleeps (futex)",
     bench_bpeer_gomp_create, bench_bpeer_gomp_destroy, bench_bpeer_gomp_wait, bench_bpeer_gomp_run},
#endif
#if BATON_PEER_CK_BARRIER
    {"peer:ck_barrier_centralized", "Concurrency Kit ck_barrier_centralized: sense-reversing counter, spins",
     bench_bpeer_ck_centralized_create, bench_bpeer_ck_centralized_destroy, bench_bpeer_ck_centralized_wait,
     NULL},
    {"peer:ck_barrier_dissemination",
     "Concurrency Kit ck_barrier_dissemination: log2(n) rounds of flags, spins",
     bench_bpeer_ck_dissemination_create, bench_bpeer_ck_dissemination_destroy,
     bench_bpeer_ck_dissemination_wait, NULL},
    {"peer:ck_barrier_tournament", "Concurrency Kit ck_barrier_tournament: static tournament tree, spins",
     bench_bpeer_ck_tournament_create, bench_bpeer_ck_tournament_destroy, bench_bpeer_ck_tournament_wait,
     NULL},
    {"peer:ck_barrier_mcs", "Concurrency Kit ck_barrier_mcs: 4-ary arrival tree, binary wake-up tree, spins",
     bench_bpeer_ck_mcs_create, bench_bpeer_ck_mcs_destroy, bench_bpeer_ck_mcs_wait, NULL},
#endif
    {.name = NULL}, /* end mark; keeps the array non-empty when no peer is built */
};

size_t bench_barrier_peers(const bench_barrier_peer_t **list)
{
    *list = table;
    return sizeof table / sizeof table[0] - 1;
}
