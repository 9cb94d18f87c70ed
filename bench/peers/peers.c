/* peers.c - the list of peers built into this bench.  CMakeLists.txt
 * compiles a unit only when its library was found and then defines
 * BATON_PEER_<UNIT>=1; this table names what those units provide. */
#include <baton/atomic.h>

#include "peers.h"
#include "peers_impl.h"

_Static_assert(BENCH_PEER_ALIGN == BATON_CACHELINE, "peer locks align to baton's cache line");

static const bench_peer_t table[] = {
#if BATON_PEER_CK
    {"peer:ck_fas", "Concurrency Kit ck_spinlock_fas: exchange, spins", bench_peer_ck_fas_create,
     bench_peer_ck_fas_destroy, bench_peer_ck_fas_lock, bench_peer_ck_fas_unlock},
    {"peer:ck_ticket", "Concurrency Kit ck_spinlock_ticket: fetch-and-add ticket, spins (FIFO)",
     bench_peer_ck_ticket_create, bench_peer_ck_ticket_destroy, bench_peer_ck_ticket_lock,
     bench_peer_ck_ticket_unlock},
    {"peer:ck_mcs", "Concurrency Kit ck_spinlock_mcs: queue, spins on its own node (FIFO)",
     bench_peer_ck_mcs_create, bench_peer_ck_mcs_destroy, bench_peer_ck_mcs_lock, bench_peer_ck_mcs_unlock},
    {"peer:ck_clh", "Concurrency Kit ck_spinlock_clh: queue, spins on its predecessor's node (FIFO)",
     bench_peer_ck_clh_create, bench_peer_ck_clh_destroy, bench_peer_ck_clh_lock, bench_peer_ck_clh_unlock},
    {"peer:ck_rwlock", "Concurrency Kit ck_rwlock: RW, reader count + writer flag, spins (writer-preferring)",
     bench_peer_ck_rwlock_create, bench_peer_ck_rwlock_destroy, bench_peer_ck_rwlock_lock,
     bench_peer_ck_rwlock_unlock, bench_peer_ck_rwlock_rlock, bench_peer_ck_rwlock_runlock},
#endif
#if BATON_PEER_ABSL
    {"peer:absl", "Abseil absl::Mutex: spins briefly, then sleeps (futex)", bench_peer_absl_create,
     bench_peer_absl_destroy, bench_peer_absl_lock, bench_peer_absl_unlock},
    {"peer:absl_mutex_rw", "Abseil absl::Mutex as RW: ReaderLock/ReaderUnlock, Lock/Unlock",
     bench_peer_absl_create, bench_peer_absl_destroy, bench_peer_absl_lock, bench_peer_absl_unlock,
     bench_peer_absl_rlock, bench_peer_absl_runlock},
#endif
#if BATON_PEER_TBB
    {"peer:tbb_spin", "oneTBB tbb::spin_mutex: exchange, spins with backoff, then yields",
     bench_peer_tbb_spin_create, bench_peer_tbb_spin_destroy, bench_peer_tbb_spin_lock,
     bench_peer_tbb_spin_unlock},
    {"peer:tbb_queuing", "oneTBB tbb::queuing_mutex: queue, spins on its own node, then yields (FIFO)",
     bench_peer_tbb_queuing_create, bench_peer_tbb_queuing_destroy, bench_peer_tbb_queuing_lock,
     bench_peer_tbb_queuing_unlock},
    {"peer:tbb_mutex", "oneTBB tbb::mutex: exchange, spins a while, then sleeps in TBB's address waiter",
     bench_peer_tbb_mutex_create, bench_peer_tbb_mutex_destroy, bench_peer_tbb_mutex_lock,
     bench_peer_tbb_mutex_unlock},
    {"peer:tbb_spin_rw",
     "oneTBB tbb::spin_rw_mutex: RW, one state word, spins with backoff (writer-preferring)",
     bench_peer_tbb_spin_rw_create, bench_peer_tbb_spin_rw_destroy, bench_peer_tbb_spin_rw_lock,
     bench_peer_tbb_spin_rw_unlock, bench_peer_tbb_spin_rw_rlock, bench_peer_tbb_spin_rw_runlock},
#endif
#if BATON_PEER_STD
    {"peer:std_mutex", "C++ std::mutex (libstdc++: pthread_mutex_t): sleeps (futex), no spinning",
     bench_peer_std_mutex_create, bench_peer_std_mutex_destroy, bench_peer_std_mutex_lock,
     bench_peer_std_mutex_unlock},
#endif
#if BATON_PEER_PTHREAD_RW
    {"peer:pthread_rwlock", "glibc pthread_rwlock_t, PREFER_WRITER_NONRECURSIVE_NP: RW, sleeps (futex)",
     bench_peer_pthread_rw_create, bench_peer_pthread_rw_destroy, bench_peer_pthread_rw_lock,
     bench_peer_pthread_rw_unlock, bench_peer_pthread_rw_rlock, bench_peer_pthread_rw_runlock},
    {"peer:pthread_rwlock_rp",
     "glibc pthread_rwlock_t, default attributes (PREFER_READER_NP): RW, sleeps (futex)",
     bench_peer_pthread_rw_rp_create, bench_peer_pthread_rw_destroy, bench_peer_pthread_rw_lock,
     bench_peer_pthread_rw_unlock, bench_peer_pthread_rw_rlock, bench_peer_pthread_rw_runlock},
#endif
#if BATON_PEER_QDLIB
    {"peer:qdlib_qd",
     "qd_lock_lib (the QD paper's authors) QD lock: TATAS + delegation queue; delegates detached, waiters yield",
     bench_peer_qdlib_qd_create, bench_peer_qdlib_qd_destroy, bench_peer_qdlib_qd_lock,
     bench_peer_qdlib_qd_unlock, NULL, NULL, bench_peer_qdlib_qd_execute, bench_peer_qdlib_qd_delegate, true},
    {"peer:qdlib_mrqd", "qd_lock_lib MR-QD lock: QD + 64 reader groups + write barrier; RW, waiters yield",
     bench_peer_qdlib_mrqd_create, bench_peer_qdlib_mrqd_destroy, bench_peer_qdlib_mrqd_lock,
     bench_peer_qdlib_mrqd_unlock, bench_peer_qdlib_mrqd_rlock, bench_peer_qdlib_mrqd_runlock,
     bench_peer_qdlib_mrqd_execute, bench_peer_qdlib_mrqd_delegate, true},
    {"peer:qdlib_ccsynch",
     "qd_lock_lib CC-Synch: swap-based request queue, head combines; waiters yield (FIFO)",
     bench_peer_qdlib_ccsynch_create, bench_peer_qdlib_ccsynch_destroy, bench_peer_qdlib_ccsynch_lock,
     bench_peer_qdlib_ccsynch_unlock, NULL, NULL, bench_peer_qdlib_ccsynch_execute,
     bench_peer_qdlib_ccsynch_delegate, false},
    {"peer:qdlib_mcs", "qd_lock_lib MCS lock: queue, waiters yield on their own node (FIFO)",
     bench_peer_qdlib_mcs_create, bench_peer_qdlib_mcs_destroy, bench_peer_qdlib_mcs_lock,
     bench_peer_qdlib_mcs_unlock},
#endif
#if BATON_PEER_GOMP
    {"peer:gomp", "GNU OpenMP omp_lock_t: spins (GOMP_SPINCOUNT), then sleeps (futex)",
     bench_peer_gomp_create, bench_peer_gomp_destroy, bench_peer_gomp_lock, bench_peer_gomp_unlock},
#endif
    {.name = NULL}, /* end mark; keeps the array non-empty when no peer is built */
};

size_t bench_peers(const bench_peer_t **list)
{
    *list = table;
    return sizeof table / sizeof table[0] - 1;
}
