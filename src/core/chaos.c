/* chaos.c - the injection point of chaos builds (see baton/atomic.h).
 *
 * Called before every atomic step when the library is compiled with
 * BATON_CHAOS=1: with probability 1/64 it yields the CPU, with 1/16 it
 * spins a few hundred spin hints, so that the stress suite sees
 * interleavings a quiet run would take hours to hit.
 */
#include <baton/atomic.h>

#include <sched.h>

void baton_chaos_point(void);

void baton_chaos_point(void)
{
    static _Thread_local uint32_t x;
    if (x == 0)
        x = (uint32_t)(uintptr_t)&x | 1u;
    /* xorshift32 */
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    if ((x & 63u) == 0) {
        sched_yield();
    } else if ((x & 15u) == 1) {
        for (uint32_t i = (x >> 8) & 255u; i > 0; i--)
            baton_cpu_relax();
    }
}
