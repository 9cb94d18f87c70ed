/* fuzz_spec.c - libFuzzer target: the spec parser.
 *
 * The input is a spec, as a program would pass it: a lock spec for
 * baton_lock_new (kind[:wait][,key=value...], wrappers nested, e.g.
 * rw(elide(mcs:spinpark)),readers=4) and the same text as a barrier spec
 * for baton_barrier_new, of 1 to 64 threads (the input's first byte).
 * Each call either makes a lock or barrier, which is used once and freed,
 * or fails with errno set and a message: a failure without either traps.
 * Leaks (a lock that fails half-way through its init) are found by
 * LeakSanitizer.  A lock spec that parses prints as text that parses to the
 * same value (baton_spec_equal) and prints the same again.
 */
#include <baton/barrier.h>
#include <baton/baton.h>

#include "api/registry.h" /* baton_spec_footprint, baton_lockspec_* */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void add_one(void *ctx) { ++*(long *)ctx; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char spec[512];
    if (size >= sizeof spec)
        size = sizeof spec - 1;
    memcpy(spec, data, size);
    spec[size] = '\0';

    errno = 0;
    baton_lock_t *l = baton_lock_new(spec);
    if (l == NULL) {
        if (errno == 0 || baton_last_error()[0] == '\0')
            __builtin_trap(); /* a failure must say why */
    } else {
        long n = 0;
        if (baton_lock_kind(l)->caps & BATON_CAP_LOCK) {
            if (baton_lock(l) != 0 || baton_unlock(l) != 0)
                __builtin_trap();
        }
        if (baton_execute(l, add_one, &n) != 0 || n != 1)
            __builtin_trap();
        if (baton_lock_spec(l)[0] == '\0')
            __builtin_trap();
        baton_lock_free(l);
    }
    (void)baton_spec_footprint(spec);

    baton_spec_t x, y;
    if (baton_lockspec_parse(spec, &x) == 0) {
        char t1[1024], t2[1024];
        if (baton_lockspec_print(&x, t1, sizeof t1) >= sizeof t1 || baton_lockspec_parse(t1, &y) != 0 ||
            !baton_spec_equal(&x, &y) || baton_lockspec_print(&y, t2, sizeof t2) >= sizeof t2 ||
            strcmp(t1, t2) != 0)
            __builtin_trap();
    }

    unsigned threads = size > 0 ? 1u + data[0] % 64u : 1u;
    errno = 0;
    baton_barrier_t *b = baton_barrier_new(spec, threads);
    if (b == NULL) {
        if (errno == 0 || baton_last_error()[0] == '\0')
            __builtin_trap();
    } else {
        if (threads == 1 && baton_barrier_wait(b) != BATON_BARRIER_SERIAL_THREAD)
            __builtin_trap(); /* one thread: every episode is its own */
        if (baton_barrier_free(b) != 0)
            __builtin_trap();
    }
    return 0;
}
