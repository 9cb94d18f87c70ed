/* gomp.c - GNU OpenMP's omp_lock_t as a peer.  libgomp's lock is a futex
 * word: a waiter spins (GOMP_SPINCOUNT) and then sleeps in the kernel. */
#include <omp.h>
#include <stdlib.h>

#include "peers_impl.h"

void *bench_peer_gomp_create(void)
{
    omp_lock_t *lock = bench_peer_alloc(sizeof *lock);
    if (lock != NULL)
        omp_init_lock(lock);
    return lock;
}

void bench_peer_gomp_destroy(void *lock)
{
    if (lock != NULL)
        omp_destroy_lock(lock);
    free(lock);
}

void bench_peer_gomp_lock(void *lock) { omp_set_lock(lock); }
void bench_peer_gomp_unlock(void *lock) { omp_unset_lock(lock); }
