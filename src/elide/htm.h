/* htm.h - hardware transactions (Intel RTM) as elide(<kind>) uses them.
 *
 * The instructions are reached through the compiler's intrinsics, compiled
 * for the "rtm" target function by function, so the library builds with any
 * gcc or clang for x86-64 without -mrtm and runs on CPUs without RTM: no
 * RTM instruction executes unless baton_htm_mode() is BATON_HTM_REAL, which
 * start-up sets only after CPUID advertised RTM and a probe committed.  On
 * other architectures, or with -DBATON_NO_HTM, every begin "aborts" and the
 * mode is never REAL.
 *
 * Testing without RTM: BATON_RTM=inject:<cause> makes every begin report an
 * abort of that cause (nothing runs speculatively), so the retry policies,
 * the statistics and every fallback path run on any machine.
 */
#ifndef BATON_ELIDE_HTM_H
#define BATON_ELIDE_HTM_H

#include <baton/atomic.h>
#include <baton/baton.h>
#include <stdint.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && !defined(BATON_NO_HTM)
#define BATON_HAVE_RTM 1
#include <immintrin.h>
#define BATON_RTM_FN __attribute__((target("rtm")))
#else
#define BATON_HAVE_RTM 0
#define BATON_RTM_FN
#endif

/* The status a begin returns: STARTED, or an abort status in RTM's layout
 * (the same bits as _XABORT_*; an explicit abort's code in bits 24-31). */
#define HTM_STARTED 0xffffffffu
#define HTM_EXPLICIT (1u << 0)
#define HTM_RETRY (1u << 1)
#define HTM_CONFLICT (1u << 2)
#define HTM_CAPACITY (1u << 3)
#define HTM_DEBUG (1u << 4)
#define HTM_NESTED (1u << 5)
#define HTM_CODE(s) (((s) >> 24) & 0xffu)

/* Explicit abort codes of our own: the lock was held for real; the flat
 * nesting table is full; a lock was locked again inside the transaction
 * that elides it (the non-speculative run must show what that does). */
#define HTM_CODE_BUSY 0xffu
#define HTM_CODE_DEPTH 0xfeu
#define HTM_CODE_SELF 0xfdu

enum { BATON_HTM_NONE = 0, BATON_HTM_REAL = 1, BATON_HTM_INJECT = 2 };

/* What BATON_RTM's value (NULL: unset) asks for: AUTO (unset, empty,
 * "auto"), OFF ("0", "off"), INJECT ("inject:<cause>", the cause's index
 * in *cause), or BAD.  Reads nothing else (a fuzz target calls it). */
enum { BATON_RTM_ENV_AUTO, BATON_RTM_ENV_OFF, BATON_RTM_ENV_INJECT, BATON_RTM_ENV_BAD };
int baton_htm_env(const char *value, unsigned *cause);

/* Decided once (baton_htm_setup, from every elide lock's init), then only
 * read.  Relaxed loads: pthread_once orders the setup before the first
 * lock that could read them is published. */
extern _Atomic int baton_htm_mode_v;
extern _Atomic uint32_t baton_htm_inject_status;
void baton_htm_setup(void);

static inline int baton_htm_mode(void)
{
    return baton_load(&baton_htm_mode_v, memory_order_relaxed); /* see above */
}

#if BATON_HAVE_RTM
static inline BATON_RTM_FN __attribute__((always_inline)) uint32_t htm_begin(void)
{
    if (BATON_UNLIKELY(baton_htm_mode() != BATON_HTM_REAL))
        return baton_load(&baton_htm_inject_status, memory_order_relaxed); /* see above */
    return (uint32_t)_xbegin();
}
static inline BATON_RTM_FN __attribute__((always_inline)) void htm_end(void) { _xend(); }
#define htm_abort(code) _xabort(code)
#else
static inline uint32_t htm_begin(void)
{
    return baton_load(&baton_htm_inject_status, memory_order_relaxed); /* see above */
}
static inline void htm_end(void) {}
#define htm_abort(code) ((void)(code))
#endif

/* The cause an abort status is counted under (BATON_ABORT_*).  One status
 * may carry several bits (conflict usually comes with retry): the most
 * specific wins. */
static inline unsigned htm_cause(uint32_t s)
{
    if (s & HTM_EXPLICIT)
        return HTM_CODE(s) == HTM_CODE_BUSY ? BATON_ABORT_BUSY : BATON_ABORT_EXPLICIT;
    if (s & HTM_CAPACITY)
        return BATON_ABORT_CAPACITY;
    if (s & HTM_CONFLICT)
        return BATON_ABORT_CONFLICT;
    if (s & HTM_NESTED)
        return BATON_ABORT_NESTED;
    if (s & HTM_DEBUG)
        return BATON_ABORT_DEBUG;
    if (s & HTM_RETRY)
        return BATON_ABORT_RETRY;
    return BATON_ABORT_OTHER;
}

#endif
