/* fuzz_env.c - libFuzzer target: the interposer's environment.
 *
 * The input is the values of every BATON_* variable the interposer (and the
 * library inside it) reads, one per line in this order: BATON_LOCK,
 * BATON_RWLOCK, BATON_SPIN, BATON_OMP_LOCK, BATON_BARRIER, BATON_VERBOSE,
 * BATON_PROFILE, BATON_PROFILE_HOLD_EVERY, BATON_PROFILE_CLOCK,
 * BATON_PROFILE_OUT, BATON_RTM, BATON_SPIN_BUDGET_NS, BATON_SPIN_FIXED.  A
 * missing line, or one that is a single '!', means unset.  Each value goes
 * through the function that parses it (src/preload/config.c and the
 * library's own), linked here without the rest of the interposer: nothing
 * is interposed, no constructor runs.  What each returns is checked:
 * configured classes have a kind that can stand in for their pthread
 * object, errors say why, numbers stay in their ranges, the profile's path
 * fits its buffer.
 */
#include "preload/preload.h"
#include "elide/htm.h"
#include "wait/wait_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    V_LOCK,
    V_RWLOCK,
    V_SPIN,
    V_OMP,
    V_BARRIER,
    V_VERBOSE,
    V_PROFILE,
    V_HOLD,
    V_CLOCK,
    V_OUT,
    V_RTM,
    V_BUDGET,
    V_FIXED,
    V_COUNT
};

static pl_class_t classes[4] = {
    {.what = "mutex", .env = "BATON_LOCK"},
    {.what = "rwlock", .env = "BATON_RWLOCK"},
    {.what = "spinlock", .env = "BATON_SPIN"},
    {.what = "omp", .env = "BATON_OMP_LOCK"},
};

static void check_class(pl_class_t *c, const char *value, const char *deflt, unsigned need)
{
    char err[1024];
    err[0] = '\0';
    memset(c->spec, 0, sizeof c->spec);
    c->kind = NULL;
    c->stock = false;
    if (pl_config_class(c, value, deflt, need, err, sizeof err) != 0) {
        if (err[0] == '\0' || strlen(err) >= sizeof err)
            __builtin_trap(); /* an error must say why */
        return;
    }
    if (c->kind == NULL || c->spec[0] == '\0' || c->slot < sizeof(uint32_t) ||
        memchr(c->spec, '\0', sizeof c->spec) == NULL)
        __builtin_trap();
    /* The kind stands in for the object: it locks and trylocks (a readers-
     * writer lock: or elides one), or it is glibc's. */
    unsigned basic = BATON_CAP_LOCK | BATON_CAP_TRYLOCK;
    if (!c->stock && (c->kind->caps & basic) != basic)
        __builtin_trap();
    if (!c->stock && (need & BATON_CAP_RW) && !(c->kind->caps & BATON_CAP_RW) && c->kind != &baton_kind_elide)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char buf[8192];
    if (size >= sizeof buf)
        size = sizeof buf - 1;
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *v[V_COUNT] = {0};
    char *p = buf;
    for (int i = 0; i < V_COUNT && p != NULL; i++) {
        char *nl = strchr(p, '\n');
        if (nl != NULL)
            *nl = '\0';
        v[i] = strcmp(p, "!") == 0 ? NULL : p;
        p = nl != NULL ? nl + 1 : NULL;
    }

    const unsigned lock = BATON_CAP_LOCK | BATON_CAP_TRYLOCK;
    check_class(&classes[0], v[V_LOCK], "default", lock);
    char rwbuf[sizeof classes[1].spec];
    const char *rwdeflt =
        pl_config_rwlock_default(v[V_LOCK], "rw(default),prefer_readers", rwbuf, sizeof rwbuf);
    if (rwdeflt == NULL)
        __builtin_trap();
    check_class(&classes[1], v[V_RWLOCK], rwdeflt, lock | BATON_CAP_RW);
    check_class(&classes[2], v[V_SPIN], "ttas", lock);
    check_class(&classes[3], v[V_OMP] != NULL && v[V_OMP][0] != '\0' ? v[V_OMP] : v[V_LOCK], "default", lock);

    bool stock = false;
    char spec[160], desc[360], err[760];
    err[0] = '\0';
    if (pl_config_barrier(v[V_BARRIER], &stock, spec, sizeof spec, desc, sizeof desc, err, sizeof err) != 0) {
        if (err[0] == '\0')
            __builtin_trap();
    } else if (!stock && memchr(spec, '\0', sizeof spec) == NULL) {
        __builtin_trap();
    }

    (void)pl_config_flag(v[V_VERBOSE]);
    (void)pl_config_flag(v[V_PROFILE]);
    uint32_t every = pl_config_hold_every(v[V_HOLD]);
    if (every < 1 || every > 65536)
        __builtin_trap();
    (void)pl_config_clock_monotonic(v[V_CLOCK]);
    char pattern[4096], path[4096 + 32];
    if (pl_config_out_pattern(v[V_OUT], pattern, sizeof pattern)) {
        int pid = size > 0 ? (int)data[0] * 1000003 : 1;
        size_t n = pl_config_out_path(pattern, pid, path, sizeof path);
        if (n >= sizeof path || strlen(path) != n)
            __builtin_trap();
        /* Too small a buffer still gives a terminated prefix. */
        char small[8];
        if (pl_config_out_path(pattern, pid, small, sizeof small) >= sizeof small)
            __builtin_trap();
    }

    unsigned cause = 0;
    int rtm = baton_htm_env(v[V_RTM], &cause);
    if (rtm == BATON_RTM_ENV_INJECT && cause >= BATON_ABORT_CAUSES)
        __builtin_trap();
    double ns = -1.0;
    if (baton_spin_budget_env(v[V_BUDGET], &ns) && !(ns >= 0.0 && ns <= 1e9))
        __builtin_trap();
    (void)baton_spin_fixed_env(v[V_FIXED]);
    return 0;
}
