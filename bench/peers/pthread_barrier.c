/* pthread_barrier.c - glibc's pthread_barrier_t as a barrier peer: a
 * counter under an internal lock; waiters sleep in a futex at once. */
#include <pthread.h>
#include <stdlib.h>

#include "barrier_peers.h"
#include "peers_impl.h"

void *bench_bpeer_pthread_create(unsigned n)
{
    pthread_barrier_t *b = bench_peer_alloc(sizeof *b);
    if (b != NULL && pthread_barrier_init(b, NULL, n) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

void bench_bpeer_pthread_destroy(void *b)
{
    if (b != NULL)
        pthread_barrier_destroy(b);
    free(b);
}

void bench_bpeer_pthread_wait(void *b, unsigned index)
{
    (void)index;
    (void)pthread_barrier_wait(b);
}
