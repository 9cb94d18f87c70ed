/* peers.h - the locks people use today, measured in the same run as
 * baton's kinds.  They live in the bench tool only, never in the library.
 * Which peers exist depends on what was installed when baton was built
 * (libck-dev, libabsl-dev, libtbb-dev, a C++ compiler, GNU OpenMP).
 *
 * Readers-writer peers (rlock set) are also mutexes through their write
 * lock, so every bench can run them; the keywords of --locks keep them
 * apart ("peers": the mutex-only peers, "rwpeers": the RW ones).
 *
 * Delegation peers (execute set: the QD authors' qd_lock_lib, found with
 * -DBATON_QDLIB_DIR) have lock and unlock too, and run the benches'
 * execute and delegate paths through their own delegation API. */
#ifndef BATON_BENCH_PEERS_H
#define BATON_BENCH_PEERS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_peer {
    const char *name;    /* "peer:ck_fas" */
    const char *summary; /* one line: library, type, how it waits */
    void *(*create)(void);
    void (*destroy)(void *lock);
    void (*lock)(void *lock); /* exclusive (for RW peers: the write lock) */
    void (*unlock)(void *lock);
    /* Readers-writer peers only: the shared (reader) mode; NULL for the
     * mutex-only peers. */
    void (*rlock)(void *lock);
    void (*runlock)(void *lock);
    /* Delegation peers only (NULL for the others, which run a critical
     * section as lock, call, unlock): run fn(ctx) the library's own way
     * (perhaps on another thread), returning once it has run. */
    void (*execute)(void *lock, void (*fn)(void *ctx), void *ctx);
    /* Delegation peers only: run fn on a copy of args[0..size) (size at most
     * BATON_ARGS_MAX, 64 bytes).  Returns once fn has run, or, when
     * `detached`, as soon as the library has accepted it. */
    void (*delegate)(void *lock, void (*fn)(void *args), const void *args, size_t size);
    bool detached;
} bench_peer_t;

/* Every peer compiled into this build, in a fixed order. */
size_t bench_peers(const bench_peer_t **list);

#ifdef __cplusplus
}
#endif
#endif
