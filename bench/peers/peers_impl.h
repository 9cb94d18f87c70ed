/* peers_impl.h - what the peer units share: the entry points each one
 * defines for peers.c's table, and the aligned allocation every lock uses.
 * Internal to bench/peers; the bench sees only peers.h. */
#ifndef BATON_BENCH_PEERS_IMPL_H
#define BATON_BENCH_PEERS_IMPL_H

#include <stddef.h>
#include <stdlib.h>

/* Locks are allocated on lines of their own.  Equal to BATON_CACHELINE
 * (checked in peers.c); spelled out because baton/atomic.h is C only. */
#define BENCH_PEER_ALIGN 128

#ifdef __cplusplus
extern "C" {
#endif

/* ck.c */
void *bench_peer_ck_fas_create(void);
void bench_peer_ck_fas_destroy(void *lock);
void bench_peer_ck_fas_lock(void *lock);
void bench_peer_ck_fas_unlock(void *lock);

void *bench_peer_ck_ticket_create(void);
void bench_peer_ck_ticket_destroy(void *lock);
void bench_peer_ck_ticket_lock(void *lock);
void bench_peer_ck_ticket_unlock(void *lock);

void *bench_peer_ck_mcs_create(void);
void bench_peer_ck_mcs_destroy(void *lock);
void bench_peer_ck_mcs_lock(void *lock);
void bench_peer_ck_mcs_unlock(void *lock);

void *bench_peer_ck_clh_create(void);
void bench_peer_ck_clh_destroy(void *lock);
void bench_peer_ck_clh_lock(void *lock);
void bench_peer_ck_clh_unlock(void *lock);

void *bench_peer_ck_rwlock_create(void);
void bench_peer_ck_rwlock_destroy(void *lock);
void bench_peer_ck_rwlock_lock(void *lock);
void bench_peer_ck_rwlock_unlock(void *lock);
void bench_peer_ck_rwlock_rlock(void *lock);
void bench_peer_ck_rwlock_runlock(void *lock);

/* absl.cc */
void *bench_peer_absl_create(void);
void bench_peer_absl_destroy(void *lock);
void bench_peer_absl_lock(void *lock);
void bench_peer_absl_unlock(void *lock);
void bench_peer_absl_rlock(void *lock); /* the same absl::Mutex, reader mode */
void bench_peer_absl_runlock(void *lock);

/* tbb.cc */
void *bench_peer_tbb_spin_create(void);
void bench_peer_tbb_spin_destroy(void *lock);
void bench_peer_tbb_spin_lock(void *lock);
void bench_peer_tbb_spin_unlock(void *lock);

void *bench_peer_tbb_queuing_create(void);
void bench_peer_tbb_queuing_destroy(void *lock);
void bench_peer_tbb_queuing_lock(void *lock);
void bench_peer_tbb_queuing_unlock(void *lock);

void *bench_peer_tbb_mutex_create(void);
void bench_peer_tbb_mutex_destroy(void *lock);
void bench_peer_tbb_mutex_lock(void *lock);
void bench_peer_tbb_mutex_unlock(void *lock);

void *bench_peer_tbb_spin_rw_create(void);
void bench_peer_tbb_spin_rw_destroy(void *lock);
void bench_peer_tbb_spin_rw_lock(void *lock);
void bench_peer_tbb_spin_rw_unlock(void *lock);
void bench_peer_tbb_spin_rw_rlock(void *lock);
void bench_peer_tbb_spin_rw_runlock(void *lock);

/* std_mutex.cc */
void *bench_peer_std_mutex_create(void);
void bench_peer_std_mutex_destroy(void *lock);
void bench_peer_std_mutex_lock(void *lock);
void bench_peer_std_mutex_unlock(void *lock);

/* pthread_rw.c */
void *bench_peer_pthread_rw_create(void);
void *bench_peer_pthread_rw_rp_create(void); /* glibc's default: prefers readers */
void bench_peer_pthread_rw_destroy(void *lock);
void bench_peer_pthread_rw_lock(void *lock);
void bench_peer_pthread_rw_unlock(void *lock);
void bench_peer_pthread_rw_rlock(void *lock);
void bench_peer_pthread_rw_runlock(void *lock);

/* qdlib.c: the QD paper authors' qd_lock_lib (-DBATON_QDLIB_DIR) */
void *bench_peer_qdlib_qd_create(void);
void bench_peer_qdlib_qd_destroy(void *lock);
void bench_peer_qdlib_qd_lock(void *lock);
void bench_peer_qdlib_qd_unlock(void *lock);
void bench_peer_qdlib_qd_execute(void *lock, void (*fn)(void *), void *ctx);
void bench_peer_qdlib_qd_delegate(void *lock, void (*fn)(void *), const void *args, size_t size);

void *bench_peer_qdlib_mrqd_create(void);
void bench_peer_qdlib_mrqd_destroy(void *lock);
void bench_peer_qdlib_mrqd_lock(void *lock);
void bench_peer_qdlib_mrqd_unlock(void *lock);
void bench_peer_qdlib_mrqd_rlock(void *lock);
void bench_peer_qdlib_mrqd_runlock(void *lock);
void bench_peer_qdlib_mrqd_execute(void *lock, void (*fn)(void *), void *ctx);
void bench_peer_qdlib_mrqd_delegate(void *lock, void (*fn)(void *), const void *args, size_t size);

void *bench_peer_qdlib_ccsynch_create(void);
void bench_peer_qdlib_ccsynch_destroy(void *lock);
void bench_peer_qdlib_ccsynch_lock(void *lock);
void bench_peer_qdlib_ccsynch_unlock(void *lock);
void bench_peer_qdlib_ccsynch_execute(void *lock, void (*fn)(void *), void *ctx);
void bench_peer_qdlib_ccsynch_delegate(void *lock, void (*fn)(void *), const void *args, size_t size);

void *bench_peer_qdlib_mcs_create(void);
void bench_peer_qdlib_mcs_destroy(void *lock);
void bench_peer_qdlib_mcs_lock(void *lock);
void bench_peer_qdlib_mcs_unlock(void *lock);

/* gomp.c */
void *bench_peer_gomp_create(void);
void bench_peer_gomp_destroy(void *lock);
void bench_peer_gomp_lock(void *lock);
void bench_peer_gomp_unlock(void *lock);

#ifdef __cplusplus
}

/* A C++ lock on lines of its own: allocate with new (std::nothrow). */
template <class Lock> struct alignas(BENCH_PEER_ALIGN) bench_peer_padded {
    Lock lock;
};
#else

/* size bytes starting a line and padded to whole lines, so nothing else
 * shares them; NULL when out of memory.  Release with free(). */
static inline void *bench_peer_alloc(size_t size)
{
    size_t lines = (size + BENCH_PEER_ALIGN - 1) / BENCH_PEER_ALIGN;
    return aligned_alloc(BENCH_PEER_ALIGN, lines * BENCH_PEER_ALIGN);
}
#endif

#endif
