/* pthread_rw.c - glibc's pthread_rwlock_t as readers-writer peers.
 *
 * glibc's default prefers readers: a steady stream of readers can starve a
 * writer forever.  peer:pthread_rwlock asks for
 * PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP instead (a waiting writer
 * holds back new readers, and a thread must not take the read lock twice),
 * so it plays by the same rules as the writer-preferring locks it is
 * compared with.  peer:pthread_rwlock_rp is the default (attributes left
 * alone: PTHREAD_RWLOCK_PREFER_READER_NP), what most programs use.  Waiters
 * sleep in a futex. */
#include <pthread.h>
#include <stdlib.h>

#include "peers_impl.h"

/* A pthread_rwlock_t of the given kind (PTHREAD_RWLOCK_PREFER_*_NP). */
static void *rw_create(int kind)
{
    pthread_rwlock_t *lock = bench_peer_alloc(sizeof *lock);
    if (lock == NULL)
        return NULL;
    pthread_rwlockattr_t attr;
    int rc = pthread_rwlockattr_init(&attr);
    if (rc == 0) {
        rc = pthread_rwlockattr_setkind_np(&attr, kind);
        if (rc == 0)
            rc = pthread_rwlock_init(lock, &attr);
        pthread_rwlockattr_destroy(&attr);
    }
    if (rc != 0) {
        free(lock);
        return NULL;
    }
    return lock;
}

void *bench_peer_pthread_rw_create(void) { return rw_create(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP); }

/* The default attributes' kind, said explicitly. */
void *bench_peer_pthread_rw_rp_create(void) { return rw_create(PTHREAD_RWLOCK_PREFER_READER_NP); }

void bench_peer_pthread_rw_destroy(void *lock)
{
    if (lock != NULL)
        pthread_rwlock_destroy(lock);
    free(lock);
}

/* The bench holds these correctly, so the only failures POSIX lists
 * (EDEADLK, EAGAIN on too many readers) cannot happen. */
void bench_peer_pthread_rw_lock(void *lock) { (void)pthread_rwlock_wrlock(lock); }
void bench_peer_pthread_rw_unlock(void *lock) { (void)pthread_rwlock_unlock(lock); }
void bench_peer_pthread_rw_rlock(void *lock) { (void)pthread_rwlock_rdlock(lock); }
void bench_peer_pthread_rw_runlock(void *lock) { (void)pthread_rwlock_unlock(lock); }
