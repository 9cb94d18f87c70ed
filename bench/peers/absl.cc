/* absl.cc - absl::Mutex as a peer, both as a mutex (peer:absl) and as a
 * readers-writer lock (peer:absl_mutex_rw: ReaderLock/ReaderUnlock for
 * readers, Lock/Unlock for writers; the same type, so its create and
 * destroy serve both).  Debian builds abseil with deadlock
 * detection on, which records every acquisition in a lock graph; the first
 * create turns it off, as a release build of abseil would have it. */
#include <mutex>
#include <new>

#include <absl/synchronization/mutex.h>

#include "peers_impl.h"

using absl_lock = bench_peer_padded<absl::Mutex>;

static std::once_flag detection_off;

extern "C" {

void *bench_peer_absl_create(void)
{
    std::call_once(detection_off, [] {
        absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    });
    return new (std::nothrow) absl_lock();
}

void bench_peer_absl_destroy(void *lock) { delete static_cast<absl_lock *>(lock); }
void bench_peer_absl_lock(void *lock) { static_cast<absl_lock *>(lock)->lock.Lock(); }
void bench_peer_absl_unlock(void *lock) { static_cast<absl_lock *>(lock)->lock.Unlock(); }
void bench_peer_absl_rlock(void *lock) { static_cast<absl_lock *>(lock)->lock.ReaderLock(); }
void bench_peer_absl_runlock(void *lock) { static_cast<absl_lock *>(lock)->lock.ReaderUnlock(); }

}
