/* tbb.cc - oneTBB's mutexes as peers: tbb::spin_mutex, tbb::queuing_mutex
 * and tbb::mutex, and the readers-writer tbb::spin_rw_mutex.
 *
 * A queuing_mutex waiter spins on its own scoped_lock, which is the queue
 * node and must stay put from acquire to release.  A bench thread holds at
 * most one peer lock at a time, so one scoped_lock per thread is enough. */
#include <new>

#include <oneapi/tbb/mutex.h>
#include <oneapi/tbb/queuing_mutex.h>
#include <oneapi/tbb/spin_mutex.h>
#include <oneapi/tbb/spin_rw_mutex.h>

#include "peers_impl.h"

using spin_lock = bench_peer_padded<tbb::spin_mutex>;
using queuing_lock = bench_peer_padded<tbb::queuing_mutex>;
using mutex_lock = bench_peer_padded<tbb::mutex>;
using spin_rw_lock = bench_peer_padded<tbb::spin_rw_mutex>;

/* On a line of its own: the predecessor writes to it to hand over. */
static thread_local bench_peer_padded<tbb::queuing_mutex::scoped_lock> queuing_self;

extern "C" {

void *bench_peer_tbb_spin_create(void) { return new (std::nothrow) spin_lock(); }
void bench_peer_tbb_spin_destroy(void *lock) { delete static_cast<spin_lock *>(lock); }
void bench_peer_tbb_spin_lock(void *lock) { static_cast<spin_lock *>(lock)->lock.lock(); }
void bench_peer_tbb_spin_unlock(void *lock) { static_cast<spin_lock *>(lock)->lock.unlock(); }

void *bench_peer_tbb_queuing_create(void) { return new (std::nothrow) queuing_lock(); }
void bench_peer_tbb_queuing_destroy(void *lock) { delete static_cast<queuing_lock *>(lock); }

void bench_peer_tbb_queuing_lock(void *lock)
{
    queuing_self.lock.acquire(static_cast<queuing_lock *>(lock)->lock);
}

void bench_peer_tbb_queuing_unlock(void *lock)
{
    (void)lock; /* the scoped_lock knows its mutex */
    queuing_self.lock.release();
}

void *bench_peer_tbb_mutex_create(void) { return new (std::nothrow) mutex_lock(); }
void bench_peer_tbb_mutex_destroy(void *lock) { delete static_cast<mutex_lock *>(lock); }
void bench_peer_tbb_mutex_lock(void *lock) { static_cast<mutex_lock *>(lock)->lock.lock(); }
void bench_peer_tbb_mutex_unlock(void *lock) { static_cast<mutex_lock *>(lock)->lock.unlock(); }

void *bench_peer_tbb_spin_rw_create(void) { return new (std::nothrow) spin_rw_lock(); }
void bench_peer_tbb_spin_rw_destroy(void *lock) { delete static_cast<spin_rw_lock *>(lock); }
void bench_peer_tbb_spin_rw_lock(void *lock) { static_cast<spin_rw_lock *>(lock)->lock.lock(); }
void bench_peer_tbb_spin_rw_unlock(void *lock) { static_cast<spin_rw_lock *>(lock)->lock.unlock(); }
void bench_peer_tbb_spin_rw_rlock(void *lock) { static_cast<spin_rw_lock *>(lock)->lock.lock_shared(); }
void bench_peer_tbb_spin_rw_runlock(void *lock)
{
    static_cast<spin_rw_lock *>(lock)->lock.unlock_shared();
}

}
