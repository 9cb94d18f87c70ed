/* syslock.h - the library's own internal mutex, for its bookkeeping tables
 * (the node arena, the delegation slot lists, the RCL server table).
 *
 * Why not pthread_mutex_t: inside libbaton-preload.so every pthread_mutex_*
 * call is baton's own, so a table guarded by a pthread mutex would re-enter
 * the interposer (and, under a lazily created lock, itself).  This lock
 * depends on nothing but the futex: 0 free, 1 held, 2 held with sleepers.
 * It is never contended on a hot path, so it parks at once.
 */
#ifndef BATON_BASE_SYSLOCK_H
#define BATON_BASE_SYSLOCK_H

#include <baton/atomic.h>
#include <baton/wait.h>
#include <stdint.h>

typedef struct baton_syslock {
    _Atomic uint32_t word;
} baton_syslock_t;

/* Left as written: clang-format 14 spreads a braced initialiser in a
 * macro over four lines. */
/* clang-format off */
#define BATON_SYSLOCK_INIT {0}
/* clang-format on */

static inline void baton_syslock_lock(baton_syslock_t *l)
{
    uint32_t expected = 0;
    /* Acquire: pairs with the release exchange in baton_syslock_unlock(). */
    if (BATON_LIKELY(baton_cas(&l->word, &expected, 1u, memory_order_acquire, memory_order_relaxed)))
        return;
    /* Mark sleepers (2) and sleep until a release found us; acquire as above. */
    while (baton_xchg(&l->word, 2u, memory_order_acquire) != 0)
        baton_park(&l->word, 2u);
}

static inline void baton_syslock_unlock(baton_syslock_t *l)
{
    /* Release: pairs with the acquiring CAS/exchange in baton_syslock_lock(). */
    if (baton_xchg(&l->word, 0u, memory_order_release) == 2u)
        baton_wake_one(&l->word);
}

/* After fork() the child has one thread: whatever the parent's other threads
 * held is free again. */
static inline void baton_syslock_reset(baton_syslock_t *l)
{
    baton_store(&l->word, 0u, memory_order_relaxed); /* single-threaded child */
}

#endif
