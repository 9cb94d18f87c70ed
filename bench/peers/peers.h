/* peers.h - the locks people use today, measured in the same run as
 * baton's kinds.  They live in the bench tool only, never in the library.
 * Which peers exist depends on what was installed when baton was built
 * (libck-dev, libabsl-dev, libtbb-dev, a C++ compiler, GNU OpenMP).
 *
 * Readers-writer peers (rlock set) are also mutexes through their write
 * lock, so every bench can run them; the keywords of --locks keep them
 * apart ("peers": the mutex-only peers, "rwpeers": the RW ones). */
#ifndef BATON_BENCH_PEERS_H
#define BATON_BENCH_PEERS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_peer {
    const char *name;    /* "peer:ck_fas" */
    const char *summary; /* one line: library, type, how it waits */
    void *(*create)(void);
    void (*destroy)(void *lock);
    void (*lock)(void *lock);   /* exclusive (for RW peers: the write lock) */
    void (*unlock)(void *lock);
    /* Readers-writer peers only: the shared (reader) mode; NULL for the
     * mutex-only peers. */
    void (*rlock)(void *lock);
    void (*runlock)(void *lock);
} bench_peer_t;

/* Every peer compiled into this build, in a fixed order. */
size_t bench_peers(const bench_peer_t **list);

#ifdef __cplusplus
}
#endif
#endif
