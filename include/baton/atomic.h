/* baton/atomic.h - the one thin layer every atomic access in baton goes through.
 *
 * Each macro is the C11 <stdatomic.h> operation with an explicit memory order,
 * preceded by an injection point.  In a normal build the injection point is
 * nothing.  A "chaos" build (compiled with -DBATON_CHAOS=1, used by the stress
 * suite) calls baton_chaos_point() before every atomic step, which yields or
 * delays at random so that rare interleavings show up in tests.
 *
 * Callers name the memory order at every call and say in a comment what an
 * acquire or release pairs with.
 */
#ifndef BATON_ATOMIC_H
#define BATON_ATOMIC_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdbool.h>

#include <baton/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif


/* One cache-line constant for padding and alignment.  128 rather than 64:
 * adjacent-line prefetchers on x86 pull lines in pairs, so two hot words
 * 64 bytes apart still interfere. */
#define BATON_CACHELINE 128

#if defined(BATON_CHAOS) && BATON_CHAOS
BATON_API BATON_API void baton_chaos_point(void);
#define BATON_INJECT() baton_chaos_point()
#else
#define BATON_INJECT() ((void)0)
#endif

#define baton_load(p, mo) (BATON_INJECT(), atomic_load_explicit((p), (mo)))
#define baton_store(p, v, mo)                                                                                \
    do {                                                                                                     \
        BATON_INJECT();                                                                                      \
        atomic_store_explicit((p), (v), (mo));                                                               \
    } while (0)
#define baton_xchg(p, v, mo) (BATON_INJECT(), atomic_exchange_explicit((p), (v), (mo)))
#define baton_fetch_add(p, v, mo) (BATON_INJECT(), atomic_fetch_add_explicit((p), (v), (mo)))
#define baton_fetch_sub(p, v, mo) (BATON_INJECT(), atomic_fetch_sub_explicit((p), (v), (mo)))
#define baton_fetch_or(p, v, mo) (BATON_INJECT(), atomic_fetch_or_explicit((p), (v), (mo)))
#define baton_fetch_and(p, v, mo) (BATON_INJECT(), atomic_fetch_and_explicit((p), (v), (mo)))
/* Strong compare-and-swap; *expected is updated on failure as in C11. */
#define baton_cas(p, expected, desired, mo_ok, mo_fail)                                                      \
    (BATON_INJECT(), atomic_compare_exchange_strong_explicit((p), (expected), (desired), (mo_ok), (mo_fail)))
#define baton_fence(mo) atomic_thread_fence(mo)

/* The spin hint: tells the core we are in a wait loop (PAUSE on x86, YIELD on
 * Arm).  Not an atomic access, so no injection point. */
static inline void baton_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

#if defined(__GNUC__)
#define BATON_LIKELY(x) __builtin_expect(!!(x), 1)
#define BATON_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define BATON_LIKELY(x) (x)
#define BATON_UNLIKELY(x) (x)
#endif

#ifdef __cplusplus
}
#endif
#endif /* BATON_ATOMIC_H */
