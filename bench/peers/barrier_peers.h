/* barrier_peers.h - the barriers people use today, measured by `baton bench
 * barrier` beside baton's kinds: pthread_barrier_t, GNU OpenMP's barrier and
 * Concurrency Kit's.  Like the lock peers (peers.h) they live in the bench
 * tool only, and which exist depends on what was installed when baton was
 * built (libck-dev, GNU OpenMP). */
#ifndef BATON_BENCH_BARRIER_PEERS_H
#define BATON_BENCH_BARRIER_PEERS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_barrier_peer {
    const char *name;    /* "peer:ck_barrier_mcs" */
    const char *summary; /* one line: library, algorithm, how it waits */
    /* A barrier for n threads; NULL when out of memory. */
    void *(*create)(unsigned n);
    void (*destroy)(void *b);
    /* Thread `index` (0 .. n-1, each index used by one thread at a time)
     * waits for the episode to end.  Peers that keep per-thread state
     * (Concurrency Kit's) keep it per index. */
    void (*wait)(void *b, unsigned index);
    /* Only for a peer whose barrier works between its own threads (OpenMP's
     * team): run body(ctx, i) for i = 0 .. n-1 on n threads of the peer's,
     * the caller being thread 0, and return 0, or an errno value when n
     * threads could not be had.  NULL for the others: any threads call wait. */
    int (*run)(unsigned n, void (*body)(void *ctx, unsigned index), void *ctx);
} bench_barrier_peer_t;

/* Every barrier peer compiled into this build, in a fixed order. */
size_t bench_barrier_peers(const bench_barrier_peer_t **list);

/* --- the units' entry points (internal to bench/peers) --------------------- */

/* pthread_barrier.c */
void *bench_bpeer_pthread_create(unsigned n);
void bench_bpeer_pthread_destroy(void *b);
void bench_bpeer_pthread_wait(void *b, unsigned index);

/* gomp_barrier.c */
void *bench_bpeer_gomp_create(unsigned n);
void bench_bpeer_gomp_destroy(void *b);
void bench_bpeer_gomp_wait(void *b, unsigned index);
int bench_bpeer_gomp_run(unsigned n, void (*body)(void *ctx, unsigned index), void *ctx);

/* ck_barrier.c */
void *bench_bpeer_ck_centralized_create(unsigned n);
void bench_bpeer_ck_centralized_destroy(void *b);
void bench_bpeer_ck_centralized_wait(void *b, unsigned index);

void *bench_bpeer_ck_dissemination_create(unsigned n);
void bench_bpeer_ck_dissemination_destroy(void *b);
void bench_bpeer_ck_dissemination_wait(void *b, unsigned index);

void *bench_bpeer_ck_tournament_create(unsigned n);
void bench_bpeer_ck_tournament_destroy(void *b);
void bench_bpeer_ck_tournament_wait(void *b, unsigned index);

void *bench_bpeer_ck_mcs_create(unsigned n);
void bench_bpeer_ck_mcs_destroy(void *b);
void bench_bpeer_ck_mcs_wait(void *b, unsigned index);

#ifdef __cplusplus
}
#endif
#endif
