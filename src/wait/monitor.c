/* monitor.c - wait in a low-power state until a cache line is written.
 *
 * UMONITOR/UMWAIT (Intel waitpkg) and MONITORX/MWAITX (AMD) arm a monitor on
 * the line holding an address and then stop the core until that line is
 * written, an interrupt arrives, or a deadline passes.  Unlike MONITOR/MWAIT
 * (privileged on Intel, the instructions of the MONITOR/MWAIT paper), both
 * pairs run in user mode.  The waker needs nothing special: its store to the
 * line ends the wait, which is why a monitor waiter wakes as fast as a
 * spinner while it burns much less power and leaves execution resources to
 * an SMT sibling.
 *
 * Waits that watch no single word pause with TPAUSE where waitpkg exists
 * (MONITORX has no timed-pause counterpart; there it is PAUSE).
 *
 * Each call waits at most `cycles` TSC cycles (the kernel may cap UMWAIT
 * further through IA32_UMWAIT_CONTROL); callers loop and re-check.
 */
#include "wait_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <x86intrin.h>

__attribute__((target("waitpkg"))) static void
wait_waitpkg(const volatile void *addr, const _Atomic uint32_t *word, uint32_t val, uint64_t cycles)
{
    _umonitor((void *)addr);
    /* Re-check after arming: a store between our last read and the
     * UMONITOR would otherwise be missed until the deadline.  Acquire pairs
     * with the waker's release; the caller re-reads anyway. */
    if (atomic_load_explicit(word, memory_order_acquire) != val)
        return;
    /* Control 0 requests the deeper C0.2 state; the deadline is absolute TSC. */
    (void)_umwait(0, __rdtsc() + cycles);
}

__attribute__((target("mwaitx"))) static void
wait_mwaitx(const volatile void *addr, const _Atomic uint32_t *word, uint32_t val, uint64_t cycles)
{
    _mm_monitorx((void *)addr, 0, 0);
    if (atomic_load_explicit(word, memory_order_acquire) != val)
        return;
    /* Extension bit 1 enables the timer; hint 0 asks for C1; the timer
     * counts `cycles` at the TSC rate. */
    _mm_mwaitx(0x2u, 0u, (unsigned)(cycles > 0xffffffffu ? 0xffffffffu : cycles));
}

__attribute__((target("waitpkg"))) static void pause_waitpkg(uint64_t cycles)
{
    /* TPAUSE: a timed pause in the C0.2 state, the waitpkg counterpart of
     * a run of PAUSE hints, for waits that watch no single word. */
    (void)_tpause(0, __rdtsc() + cycles);
}

void baton_monitor_pause(uint8_t hw, uint64_t cycles)
{
    if (hw == BATON_MONITOR_WAITPKG)
        pause_waitpkg(cycles);
    else
        baton_cpu_relax();
}

void baton_monitor_wait(uint8_t hw, const _Atomic uint32_t *word, uint32_t val, uint64_t cycles)
{
    if (hw == BATON_MONITOR_WAITPKG)
        wait_waitpkg(word, word, val, cycles);
    else if (hw == BATON_MONITOR_MWAITX)
        wait_mwaitx(word, word, val, cycles);
    else
        baton_cpu_relax();
}

uint64_t baton_rdtsc(void) { return __rdtsc(); }
#else
void baton_monitor_pause(uint8_t hw, uint64_t cycles)
{
    (void)hw;
    (void)cycles;
    baton_cpu_relax();
}

void baton_monitor_wait(uint8_t hw, const _Atomic uint32_t *word, uint32_t val, uint64_t cycles)
{
    (void)hw;
    (void)word;
    (void)val;
    (void)cycles;
    baton_cpu_relax();
}

uint64_t baton_rdtsc(void) { return 0; }
#endif
