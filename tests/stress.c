/* stress.c - run the shared stress harness over every registered kind and
 * every wait policy it takes, at 2, 4 and 16 threads; or, with --broken,
 * over a deliberately broken lock, where the harness must report failure.
 *
 *   stress [--millis N] [--threads 2,4,16] [--kinds k1,k2] [--broken | --broken-order | --broken-timed]
 *
 * --broken-order drives a correct lock whose delegate runs a thread's
 * operations out of order; the harness's program-order check must catch it.
 * --broken-timed drives a correct lock whose timed lock answers 0 when it
 * timed out; the exclusion checks must catch it.
 *
 * Every spec whose timed lock works must see some of its timed locks time
 * out (the harness's deadlines are that short): a run where none did is a
 * failure, so that the time-out paths are known to have run.
 *
 * Exit status: 0 when every run is clean (or, with --broken, when the
 * harness caught the broken lock); 1 otherwise.
 */
#include "harness.h"
#include "guard.h"

#include <baton/baton.h>
#include <baton/wait.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the broken lock (bench/guard.h): test, dawdle, then set (not atomic) -- */

static void *broken_create(const char *spec)
{
    (void)spec;
    return calloc(1, sizeof(guard_broken_t));
}
static int broken_destroy(void *l)
{
    free(l);
    return 0;
}
static int broken_lock(void *l)
{
    guard_broken_lock(l);
    return 0;
}
static int broken_trylock(void *l) { return guard_broken_trylock(l); }
static int broken_unlock(void *l)
{
    guard_broken_unlock(l);
    return 0;
}

static const harness_ops_t broken_ops = {
    .name = "broken",
    .create = broken_create,
    .destroy = broken_destroy,
    .lock = broken_lock,
    .trylock = broken_trylock,
    .unlock = broken_unlock,
};

/* --- the reordering delegation: a correct lock whose delegate holds one
 * operation back and runs it after the thread's next one (--broken-order).
 * Mutual exclusion holds; only program order is broken, which the
 * harness's order check must catch. */

static _Thread_local struct {
    void *lock;
    void (*fn)(void *);
    _Alignas(16) unsigned char args[BATON_ARGS_MAX];
    int pending;
} held;

static void *ro_create(const char *spec)
{
    (void)spec;
    return baton_lock_new("mcs");
}
static int ro_destroy(void *l) { return baton_lock_free(l); }
static int ro_lock(void *l) { return baton_lock(l); }
static int ro_trylock(void *l) { return baton_trylock(l); }
static int ro_unlock(void *l) { return baton_unlock(l); }
static int ro_execute(void *l, void (*fn)(void *), void *ctx) { return baton_execute(l, fn, ctx); }
static int ro_run_held(void)
{
    held.pending = 0;
    return baton_delegate(held.lock, held.fn, held.args, sizeof held.args);
}
static int ro_delegate(void *l, void (*fn)(void *), const void *args, size_t n)
{
    if (held.pending && held.lock == l) {
        int rc = baton_delegate(l, fn, args, n); /* the newer one first: wrong */
        return rc ? rc : ro_run_held();
    }
    if (held.pending && ro_run_held() != 0)
        return EIO;
    held.lock = l;
    held.fn = fn;
    memcpy(held.args, args, n);
    held.pending = 1;
    return 0;
}

static const harness_ops_t reorder_ops = {
    .name = "reorder",
    .create = ro_create,
    .destroy = ro_destroy,
    .lock = ro_lock,
    .trylock = ro_trylock,
    .unlock = ro_unlock,
    .execute = ro_execute,
    .delegate = ro_delegate,
};

/* --- the lying timed lock: a correct lock whose timed lock answers 0 when
 * it timed out (--broken-timed).  The harness's exclusion checks must catch
 * the sections it lets in. */

static int lt_clocklock(void *l, clockid_t c, const struct timespec *t)
{
    int rc = baton_clocklock(l, c, t);
    return rc == ETIMEDOUT ? 0 : rc;
}
static int lt_unlock(void *l)
{
    (void)baton_unlock(l); /* EPERM for the sections it let in: not the point */
    return 0;
}

static harness_ops_t lying_timed_ops;

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        out[n++] = atoi(s);
        s = strchr(s, ',');
        if (!s)
            break;
        s++;
    }
    return n;
}

static bool in_list(const char *list, const char *name)
{
    if (!list)
        return true;
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == len && strncmp(p, name, len) == 0)
            return true;
        p += l;
        if (*p == ',')
            p++;
    }
    return false;
}

static void print(const char *spec, int threads, const harness_result_t *r)
{
    printf("%-24s %2d threads %9llu ops %6.0f ms  overlaps=%llu torn=%llu mismatch=%llu "
           "payload=%llu errors=%llu order=%llu badreads=%llu busy=%llu timeouts=%llu/%llu  %s\n",
           spec, threads, (unsigned long long)r->ops, r->seconds * 1e3, (unsigned long long)r->overlaps,
           (unsigned long long)r->torn, (unsigned long long)r->count_mismatch,
           (unsigned long long)r->bad_payload, (unsigned long long)r->bad_errors,
           (unsigned long long)r->out_of_order, (unsigned long long)r->bad_reads,
           (unsigned long long)r->trylock_busy, (unsigned long long)r->timeouts,
           (unsigned long long)(r->timeouts + r->timed_ok), harness_failures(r) ? "FAIL" : "ok");
    fflush(stdout);
}

/* Every thread count on one spec: the failed runs.  A spec whose timed
 * lock works must have timed out somewhere (the deadlines are short enough
 * that it does under contention); one that answered ENOTSUP is exempt, and
 * so is a spec that made too few timed attempts for that to be expected
 * (a chaos build on a loaded machine: qd:spinpark once made 18 in 90 ms;
 * the lying lock of --broken-timed makes tens of thousands). */
#define TIMED_MIN 200u
static int run_spec(const char *spec, const int *threads, int nthreads, int millis, int *runs)
{
    int failed = 0;
    uint64_t timeouts = 0, timed = 0;
    bool unsupported = false;
    for (int t = 0; t < nthreads; t++) {
        harness_result_t r;
        if (harness_run(&harness_baton_ops, spec, threads[t], millis, &r) != 0) {
            failed++;
            continue;
        }
        print(spec, threads[t], &r);
        (*runs)++;
        failed += harness_failures(&r) > 0 || r.ops < (uint64_t)threads[t];
        timeouts += r.timeouts;
        timed += r.timeouts + r.timed_ok;
        unsupported |= r.timed_unsupported;
    }
    if (!unsupported && timed >= TIMED_MIN && timeouts == 0) {
        printf("%-24s FAIL: %llu timed locks and none timed out\n", spec, (unsigned long long)timed);
        failed++;
    }
    return failed;
}

int main(int argc, char **argv)
{
    int millis = 40;
    int threads[8] = {2, 4, 16};
    int nthreads = 3;
    const char *kinds = NULL;
    bool broken = false, broken_order = false, broken_timed = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--millis") && i + 1 < argc)
            millis = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nthreads = parse_list(argv[++i], threads, 8);
        else if (!strcmp(argv[i], "--kinds") && i + 1 < argc)
            kinds = argv[++i];
        else if (!strcmp(argv[i], "--broken"))
            broken = true;
        else if (!strcmp(argv[i], "--broken-order"))
            broken_order = true;
        else if (!strcmp(argv[i], "--broken-timed"))
            broken_timed = true;
        else {
            fprintf(stderr,
                    "usage: %s [--millis N] [--threads LIST] [--kinds LIST] "
                    "[--broken | --broken-order | --broken-timed]\n",
                    argv[0]);
            return 2;
        }
    }

    if (broken_order) {
        /* Mutual exclusion holds, program order does not: the order check
         * (and only it, plus the counts of operations held back at the
         * end) must fire at every thread count. */
        int caught = 0;
        for (int t = 0; t < nthreads; t++) {
            harness_result_t r;
            harness_run_ex(&reorder_ops, "reorder", threads[t], millis, false, &r);
            print("reorder", threads[t], &r);
            caught += r.out_of_order > 0 && r.overlaps == 0 && r.torn == 0;
        }
        printf("%s: harness caught the reordering delegation in %d of %d runs\n",
               caught == nthreads ? "PASS" : "FAIL", caught, nthreads);
        return caught == nthreads ? 0 : 1;
    }

    if (broken_timed) {
        /* A timed lock that claims the lock on a time-out: the exclusion
         * checks must fire at every thread count, within up to 30 runs
         * each.  At 2 threads an overlap needs the holder preempted inside
         * its section while the other thread times out; on a machine whose
         * other CPU is busy the two seldom run at once, and 10 runs of
         * 100 ms missed it once (a local CI run beside other work). */
        lying_timed_ops = harness_baton_ops;
        lying_timed_ops.name = "lying-timed";
        lying_timed_ops.clocklock = lt_clocklock;
        lying_timed_ops.unlock = lt_unlock;
        lying_timed_ops.execute = NULL;
        lying_timed_ops.delegate = NULL;
        int caught = 0;
        for (int t = 0; t < nthreads; t++) {
            for (int attempt = 0; attempt < 30; attempt++) {
                harness_result_t r;
                harness_run_ex(&lying_timed_ops, "mcs:spinpark", threads[t], millis, false, &r);
                print("lying-timed", threads[t], &r);
                if (r.overlaps + r.torn > 0) {
                    caught++;
                    break;
                }
            }
        }
        printf("%s: harness caught the lying timed lock in %d of %d runs\n",
               caught == nthreads ? "PASS" : "FAIL", caught, nthreads);
        return caught == nthreads ? 0 : 1;
    }

    if (broken) {
        /* The harness must catch it at every thread count above one. */
        /* On a loaded machine the threads may seldom run at the same time,
         * so a run may miss the overlap: allow up to 10 runs per count. */
        int caught = 0;
        for (int t = 0; t < nthreads; t++) {
            for (int attempt = 0; attempt < 10; attempt++) {
                harness_result_t r;
                harness_run_ex(&broken_ops, "broken", threads[t], millis, false, &r);
                print("broken", threads[t], &r);
                if (harness_failures(&r) > 0) {
                    caught++;
                    break;
                }
            }
        }
        printf("%s: harness caught the broken lock in %d of %d runs\n", caught == nthreads ? "PASS" : "FAIL",
               caught, nthreads);
        return caught == nthreads ? 0 : 1;
    }

    const baton_kind_info_t *list;
    size_t n = baton_kinds(&list);
    int failures = 0, runs = 0;
    for (size_t k = 0; k < n; k++) {
        if (!in_list(kinds, list[k].name))
            continue;
        /* Wrapper kinds run over a few inner kinds instead of policies. */
        static const char *const inners[] = {"ttas", "mcs:spinpark", "relay", "qd"};
        const bool wrapper = (list[k].caps & BATON_CAP_WRAPPER) != 0;
        const unsigned nvariants = wrapper ? sizeof inners / sizeof inners[0] : BATON_WAIT_KINDS + 1;
        for (unsigned w = 0; w < nvariants; w++) {
            char spec[64];
            if (wrapper) {
                snprintf(spec, sizeof spec, "%s(%s)", list[k].name, inners[w]);
            } else if (w == BATON_WAIT_KINDS) {
                if (list[k].waits != 0)
                    continue; /* kinds that take a policy ran once per policy */
                snprintf(spec, sizeof spec, "%s", list[k].name);
            } else {
                if (!(list[k].waits & (1u << w)))
                    continue;
                snprintf(spec, sizeof spec, "%s:%s", list[k].name, baton_wait_policy_name(w));
            }
            baton_lock_t *probe = baton_lock_new(spec);
            if (!probe) {
                if (errno == ENOTSUP) {
                    printf("%-24s skipped: %s\n", spec, baton_last_error());
                    continue;
                }
                printf("%-24s FAIL: %s\n", spec, baton_last_error());
                failures++;
                continue;
            }
            baton_lock_free(probe);
            failures += run_spec(spec, threads, nthreads, millis, &runs);
        }
    }
    /* Options that change a protocol get runs of their own. */
    static const struct {
        const char *kind, *spec;
    } extra[] = {
        {"qd", "qd,tenure_us=50"},
        {"qd", "qd:park,tenure_us=20"},
        {"qd", "qd,queue=256,help_limit=3"},
        {"qd", "qd:park,help_limit=2"}, /* every waiter parks: the helpers' owed wakes */
        {"fc", "fc:park,help_limit=2"},
        {"ccsynch", "ccsynch:park,help_limit=2"}, /* past the limit for parked owners */
        {"qd", "qd,retries=0,pad=1,cas=1"},
        {"hqd", "hqd,groups=2"}, /* more than one group, whatever the machine */
        {"hqd", "hqd:park,groups=3,help_limit=2"},
        {"mrqd", "mrqd,readers=1,read_patience=1"},
        {"rcl", "rcl,post=1"},
        {"rcl", "rcl,server=1,idle_us=1"},
        {"server", "server,chain"},
        {"server", "server,hier,groups=2"}, /* two local servers, whatever the machine */
        {"server", "server,hier,chain,groups=2"},
        {"server", "server:park,hier,chain,groups=2,local_bound=2"},
        {"server", "server,server=2"},
        {"server", "server,keep_us=20"}, /* leases, taken back under contention */
        {"server", "server:park,chain,keep_us=5"},
        {"elide", "elide(ttas),base"},
        {"elide", "elide(mcs:spinpark),sleep"},
        {"elide", "elide(relay),nretries=2,stats=0"},
        {"elide", "elide(pthread)"},
        {"elide", "elide(rw(relay))"},
        {"elide", "elide(mrqd)"},
    };
    for (size_t e = 0; e < sizeof extra / sizeof extra[0]; e++) {
        if (!in_list(kinds, extra[e].kind))
            continue;
        failures += run_spec(extra[e].spec, threads, nthreads, millis, &runs);
    }
    printf("%s: %d runs, %d failed\n", failures ? "FAIL" : "PASS", runs, failures);
    return failures ? 1 : 0;
}
