/* test_elide.c - elide(<kind>): specs, misuse, the retry policies and their
 * statistics, and (where the CPU has working RTM) every abort cause,
 * nesting and trylock inside a transaction.
 *
 * It runs under each BATON_RTM setting (see tests/CMakeLists.txt):
 *   off             elide(x) must be exactly x: no transaction, no counter
 *   inject:<cause>  every transaction aborts with <cause>: the policies'
 *                   abort and fallback counts are exact
 *   unset           the machine's own RTM: the hardware tests run where it
 *                   is usable, and are reported skipped where it is not
 */
#include <baton/baton.h>
#include <baton/counter.h>
#include "check.h"
#include "../src/elide/htm.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const inners[] = {"ttas", "relay", "mcs:spinpark", "ticket",       "pthread",
                                     "qd",   "mrqd",  "rw(relay)",    "hqd,groups=2", "fc"};
#define NINNERS (sizeof inners / sizeof inners[0])

static baton_htm_info_t htm;

static baton_lock_t *make(const char *fmt, const char *inner)
{
    char spec[160];
    snprintf(spec, sizeof spec, fmt, inner);
    baton_lock_t *l = baton_lock_new(spec);
    CHECK(l != NULL, "baton_lock_new(%s): %s", spec, baton_last_error());
    return l;
}

static void expect_bad(const char *spec, const char *needle)
{
    baton_lock_t *l = baton_lock_new(spec);
    CHECK(l == NULL, "'%s' accepted", spec);
    if (l) {
        baton_lock_free(l);
        return;
    }
    CHECK(errno == EINVAL, "'%s': errno %d", spec, errno);
    CHECK(strstr(baton_last_error(), needle) != NULL, "'%s': message '%s' lacks '%s'", spec,
          baton_last_error(), needle);
}

static void test_specs(void)
{
    baton_lock_t *l = baton_lock_new("elide(ttas)");
    CHECK(l && !strncmp(baton_lock_spec(l), "elide(ttas:backoff", 18), "canonical: %s",
          l ? baton_lock_spec(l) : "-");
    baton_lock_free(l);
    l = baton_lock_new("elide(mcs),sleep");
    CHECK(l && strstr(baton_lock_spec(l), "sleep=1"), "bare switch: %s",
          l ? baton_lock_spec(l) : baton_last_error());
    baton_lock_free(l);
    l = baton_lock_new("elide(relay),nretries=3,stats=0");
    CHECK(l != NULL, "nretries: %s", baton_last_error());
    baton_lock_free(l);
    expect_bad("elide(ttas),base,sleep", "choose one policy");
    expect_bad("elide(ttas),nretries=2,adaptive", "choose one policy");
    expect_bad("elide(rcl)", "no lock word");
    expect_bad("elide(ccsynch)", "no lock word");
    expect_bad("elide(elide(ttas))", "already elided");
    expect_bad("elide(nosuch)", "valid kinds:");
    expect_bad("elide(ttas),retries", "bare switch");
    expect_bad("elide(ttas),nretries=0", "out-of-range");
}

/* --- misuse, on every inner kind ------------------------------------------- */

static void *hold_then_try(void *arg)
{
    baton_lock_t *l = arg;
    return (void *)(intptr_t)baton_trylock(l);
}

static void test_misuse(void)
{
    for (size_t i = 0; i < NINNERS; i++) {
        baton_lock_t *l = make("elide(%s)", inners[i]);
        if (!l)
            continue;
        const baton_kind_info_t *ik = NULL;
        {
            baton_lock_t *plain = baton_lock_new(inners[i]);
            ik = baton_lock_kind(plain);
            baton_lock_free(plain);
        }
        /* Unlock of a lock nobody holds: never an XEND outside a
         * transaction.  EPERM wherever elide tracks the owner (RTM usable,
         * or injected) or the inner kind does. */
        if (htm.usable || (ik->caps & BATON_CAP_OWNER)) {
            int rc = baton_unlock(l);
            CHECK(rc == EPERM, "elide(%s): unlock of a free lock gave %d", inners[i], rc);
        } /* else undefined, as for the inner kind (a ticket lock's turn would advance) */
        CHECK(baton_lock(l) == 0, "lock");
        pthread_t t;
        void *other = NULL;
        pthread_create(&t, NULL, hold_then_try, l);
        pthread_join(t, &other);
        CHECK((intptr_t)other == EBUSY, "elide(%s): trylock by another thread while held gave %d", inners[i],
              (int)(intptr_t)other);
        CHECK(baton_unlock(l) == 0, "unlock");
        CHECK(baton_lock_free(l) == 0, "free");
    }
}

/* --- the policies under injected aborts ------------------------------------- */

#define ROUNDS 50

typedef struct expect {
    const char *fmt;
    /* aborts per acquisition, when every transaction aborts with `cause` */
    unsigned (*aborts)(unsigned cause);
} expect_t;

static unsigned adaptive_aborts(unsigned c)
{
    /* Retries what a retry may cure, up to retries=5; stops at once otherwise. */
    return c == BATON_ABORT_BUSY || c == BATON_ABORT_CONFLICT || c == BATON_ABORT_RETRY ? 5 : 1;
}
static unsigned nretries_aborts(unsigned c)
{
    (void)c;
    return 3;
}
/* base and sleep take the free lock with one trylock after the first
 * abort, unless the abort said "busy" (then they wait and speculate again). */
static unsigned base_aborts(unsigned c) { return c == BATON_ABORT_BUSY ? 5 : 1; }

static void test_injected(const char *state)
{
    unsigned cause = BATON_ABORT_CAUSES;
    for (unsigned c = 0; c < BATON_ABORT_CAUSES; c++)
        if (!strcmp(state + 7, baton_abort_cause_name(c)))
            cause = c;
    CHECK(cause < BATON_ABORT_CAUSES, "state %s names no cause", state);
    if (cause >= BATON_ABORT_CAUSES)
        return;
    static const expect_t policies[] = {
        {"elide(%s),skip=0", adaptive_aborts},
        {"elide(%s),nretries=3", nretries_aborts},
        {"elide(%s),base", base_aborts},
        {"elide(%s),sleep", base_aborts},
    };
    for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++)
        for (size_t i = 0; i < NINNERS; i++) {
            baton_lock_t *l = make(policies[p].fmt, inners[i]);
            if (!l)
                continue;
            for (int r = 0; r < ROUNDS; r++) {
                CHECK(baton_lock(l) == 0, "lock");
                CHECK(baton_unlock(l) == 0, "unlock");
            }
            baton_stats_t st;
            CHECK(baton_lock_stats(l, &st) == 0, "stats");
            uint64_t want = (uint64_t)ROUNDS * policies[p].aborts(cause);
            CHECK(st.tx_aborts[cause] == want, "%s: %llu %s aborts, want %llu", baton_lock_spec(l),
                  (unsigned long long)st.tx_aborts[cause], baton_abort_cause_name(cause),
                  (unsigned long long)want);
            CHECK(st.tx_commits == 0 && st.tx_attempts == want, "%s: commits %llu attempts %llu",
                  baton_lock_spec(l), (unsigned long long)st.tx_commits, (unsigned long long)st.tx_attempts);
            CHECK(st.tx_fallbacks == ROUNDS, "%s: %llu fallbacks, want %d", baton_lock_spec(l),
                  (unsigned long long)st.tx_fallbacks, ROUNDS);
            baton_lock_free(l);
        }
    /* Adaptive back-off: after a failed acquisition the next ones skip
     * elision; every acquisition is either a fallback or a skip. */
    baton_lock_t *l = make("elide(%s)", "ttas");
    for (int r = 0; l && r < 1000; r++) {
        baton_lock(l);
        baton_unlock(l);
    }
    baton_stats_t st;
    if (l && baton_lock_stats(l, &st) == 0) {
        CHECK(st.tx_skipped > 0 && st.tx_fallbacks + st.tx_skipped == 1000,
              "adaptive back-off: %llu fallbacks + %llu skipped != 1000", (unsigned long long)st.tx_fallbacks,
              (unsigned long long)st.tx_skipped);
        CHECK(st.tx_skipped > 900, "failures in a row should back off exponentially: %llu skipped",
              (unsigned long long)st.tx_skipped);
    }
    baton_lock_free(l);
    /* execute, delegate and readers take the same paths. */
    int x = 0;
    l = make("elide(%s),skip=0", "rw(relay)");
    if (l) {
        baton_rlock(l);
        baton_runlock(l);
        baton_stats_t s2;
        baton_lock_stats(l, &s2);
        CHECK(s2.tx_fallbacks == 1, "a reader's elision falls back once: %llu",
              (unsigned long long)s2.tx_fallbacks);
        baton_lock_free(l);
    }
    l = make("elide(%s),skip=0", "qd");
    if (l) {
        void incr(void *p);
        CHECK(baton_execute(l, incr, &x) == 0 && x == 1, "execute over qd");
        CHECK(baton_delegate(l, incr, &(int *){&x}, sizeof(int *)) == 0, "delegate over qd");
        baton_lock_free(l); /* runs the delegated operation */
        CHECK(x == 2, "delegated operation ran: x=%d", x);
    }
}

void incr(void *p);
void incr(void *p)
{
    /* execute passes &x; delegate passes a copy of &x */
    static int calls;
    int *x = calls++ == 0 ? p : *(int **)p;
    (*x)++;
}

static void test_off(void)
{
    for (size_t i = 0; i < NINNERS; i++) {
        baton_lock_t *l = make("elide(%s)", inners[i]);
        if (!l)
            continue;
        for (int r = 0; r < ROUNDS; r++) {
            baton_lock(l);
            baton_unlock(l);
        }
        baton_stats_t st;
        baton_lock_stats(l, &st);
        CHECK(st.tx_attempts == 0 && st.tx_fallbacks == 0 && st.tx_skipped == 0,
              "elide(%s) without RTM must be exactly its inner kind: %llu attempts", inners[i],
              (unsigned long long)st.tx_attempts);
        baton_lock_free(l);
    }
}

/* --- the machine's own RTM ----------------------------------------------------- */

#if BATON_HAVE_RTM
static volatile char big[1 << 22];
static unsigned shared_counter;

static BATON_RTM_FN void explicit_abort(void)
{
    if (_xtest())
        _xabort(0x42);
}

static void *conflict_thread(void *arg)
{
    baton_lock_t *l = arg;
    for (int i = 0; i < 200000; i++) {
        baton_lock(l);
        shared_counter++;
        baton_unlock(l);
    }
    return NULL;
}

static uint64_t aborts_of(baton_lock_t *l, unsigned cause)
{
    baton_stats_t st;
    baton_lock_stats(l, &st);
    return st.tx_aborts[cause];
}

static void test_rtm(void)
{
    baton_lock_t *l = make("elide(%s),skip=0", "ttas");
    baton_lock_t *m = make("elide(%s),skip=0", "relay");
    if (!l || !m)
        return;
    /* Commits. */
    for (int r = 0; r < 100; r++) {
        baton_lock(l);
        baton_unlock(l);
    }
    baton_stats_t st;
    baton_lock_stats(l, &st);
    CHECK(st.tx_commits >= 50, "only %llu of 100 trivial critical sections committed",
          (unsigned long long)st.tx_commits);
    /* Nesting: the inner lock joins the outer transaction; one commit. */
    uint64_t before = st.tx_commits;
    baton_lock(l);
    baton_lock(m);
    CHECK(baton_trylock(m) == EBUSY, "trylock of a lock this transaction holds must say EBUSY");
    baton_unlock(m);
    baton_unlock(l);
    baton_lock_stats(l, &st);
    baton_stats_t sm;
    baton_lock_stats(m, &sm);
    CHECK(st.tx_commits + sm.tx_commits <= before + 1 + 0 && st.tx_commits >= before,
          "nested elided locks commit once");
    /* Capacity: write 4 MiB inside the critical section. */
    baton_lock(l);
    for (size_t i = 0; i < sizeof big; i += 64)
        big[i] = 1;
    baton_unlock(l);
    CHECK(aborts_of(l, BATON_ABORT_CAPACITY) >= 1, "no capacity abort after writing 4 MiB");
    /* Explicit. */
    baton_lock(l);
    explicit_abort();
    baton_unlock(l);
    CHECK(aborts_of(l, BATON_ABORT_EXPLICIT) >= 1, "no explicit abort");
    /* A system call. */
    baton_lock(l);
    (void)syscall(SYS_getpid);
    baton_unlock(l);
    CHECK(aborts_of(l, BATON_ABORT_OTHER) >= 1, "no causeless abort from a system call");
    /* Conflict: two threads on one counter; and mutual exclusion holds. */
    shared_counter = 0;
    pthread_t a, b;
    pthread_create(&a, NULL, conflict_thread, l);
    pthread_create(&b, NULL, conflict_thread, l);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(shared_counter == 400000, "lost updates: %u", shared_counter);
    CHECK(aborts_of(l, BATON_ABORT_CONFLICT) >= 1, "no conflict abort between two threads");
    baton_lock_free(l);
    baton_lock_free(m);
}
#endif

int main(void)
{
    baton_htm_info(&htm);
    printf("RTM: %s (%s), probe %u/%u\n", htm.state, htm.why, htm.probe_commits, htm.probe_tries);
    const char *env = getenv("BATON_RTM");
    test_specs();
    test_misuse();
    if (env && !strcmp(env, "off")) {
        CHECK(!htm.usable && !strcmp(htm.state, "disabled"), "BATON_RTM=off: state %s", htm.state);
        test_off();
    } else if (env && !strncmp(env, "inject:", 7)) {
        CHECK(htm.usable && !strcmp(htm.state, env), "BATON_RTM=%s: state %s", env, htm.state);
        test_injected(htm.state);
    } else if (htm.usable) {
#if BATON_HAVE_RTM
        test_rtm();
#endif
    } else {
        test_off();
        printf("skipped: the hardware-transaction tests (RTM here: %s)\n", htm.state);
    }
    printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
