/* std_mutex.cc - std::mutex as a peer: the C++ standard library's mutex,
 * in libstdc++ a pthread_mutex_t (sleeps in a futex, no spinning). */
#include <mutex>
#include <new>

#include "peers_impl.h"

using std_lock = bench_peer_padded<std::mutex>;

extern "C" {

void *bench_peer_std_mutex_create(void) { return new (std::nothrow) std_lock(); }
void bench_peer_std_mutex_destroy(void *lock) { delete static_cast<std_lock *>(lock); }
void bench_peer_std_mutex_lock(void *lock) { static_cast<std_lock *>(lock)->lock.lock(); }
void bench_peer_std_mutex_unlock(void *lock) { static_cast<std_lock *>(lock)->lock.unlock(); }

}
