/* test_barrier.c - the barriers (baton/barrier.h): every kind x every wait
 * policy the CPU has, N threads in {1, 2, 3, 4, 8, 16} (oversubscribed on a
 * small machine), many episodes; bad input; places (the (n+1)-th thread,
 * places handed back by exiting threads); EBUSY; and a broken barrier the
 * checks must catch.
 *
 * The checks, per episode e: every thread counts its arrival in arrived[e]
 * (relaxed: the barrier must order it) before waiting and reads it after the
 * wait: a value below N means someone passed before everyone had arrived.
 * Exactly one wait per episode returns BATON_BARRIER_SERIAL_THREAD.  And a
 * plain (non-atomic) word per thread, written before the wait and read by a
 * neighbour after it, must hold the episode: the barrier's happens-before
 * (ThreadSanitizer checks that too; the words are double-buffered by
 * episode parity, so a correct barrier leaves no race).
 *
 *   test_barrier [-v] [--broken]
 * --broken runs only the broken barrier and exits 1 if it was caught (the
 * ctest expect-failure wrapper checks that), -v prints every configuration.
 */
#include <baton/baton.h>
#include <baton/barrier.h>
#include <baton/wait.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

static int verbose;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
    struct timespec d = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0 && errno == EINTR) {
    }
}

static baton_barrier_t *new_barrier(const char *spec, unsigned n)
{
    baton_barrier_t *b = baton_barrier_new(spec, n);
    if (!b) {
        printf("FAIL: baton_barrier_new(\"%s\", %u): %s\n", spec, n, baton_last_error());
        exit(1);
    }
    return b;
}

/* --- one configuration: N threads x E episodes ------------------------------------ */

/* Broken mode: in episode BROKEN_EPISODE the thread of id 0 does not wait
 * (a barrier that lets one thread through early) and the last thread
 * arrives 2 ms late, so the early one must see a short count; thread 0
 * waits once more at the end so that every episode still completes. */
#define BROKEN_EPISODE 3u

typedef struct run {
    baton_barrier_t *b;
    unsigned n, episodes;
    int broken;
    _Atomic uint32_t *arrived; /* per episode */
    _Atomic uint32_t *serials; /* per episode */
    unsigned *data[2];         /* per thread, by episode parity (plain words) */
    _Atomic uint32_t early, bad_data, errors;
} run_t;

typedef struct worker {
    run_t *r;
    unsigned id;
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    run_t *r = w->r;
    const unsigned n = r->n, id = w->id, next = (id + 1) % n;
    for (unsigned e = 0; e < r->episodes; e++) {
        bool skip = r->broken && e == BROKEN_EPISODE && id == 0;
        if (r->broken && e == BROKEN_EPISODE && id == n - 1)
            sleep_ms(2);
        r->data[e & 1][id] = e;
        /* Relaxed: a count; the barrier orders it before the others' reads. */
        atomic_fetch_add_explicit(&r->arrived[e], 1u, memory_order_relaxed);
        int rc = skip ? 0 : baton_barrier_wait(r->b);
        if (rc == BATON_BARRIER_SERIAL_THREAD)
            atomic_fetch_add_explicit(&r->serials[e], 1u, memory_order_relaxed);
        else if (rc != 0)
            atomic_fetch_add_explicit(&r->errors, 1u, memory_order_relaxed);
        if (atomic_load_explicit(&r->arrived[e], memory_order_relaxed) != n)
            atomic_fetch_add_explicit(&r->early, 1u, memory_order_relaxed);
        if (!r->broken && r->data[e & 1][next] != e)
            atomic_fetch_add_explicit(&r->bad_data, 1u, memory_order_relaxed);
    }
    if (r->broken && id == 0)
        (void)baton_barrier_wait(r->b);
    return NULL;
}

/* Returns the violations found; *us receives microseconds per episode. */
static unsigned run_config(const char *spec, unsigned n, unsigned episodes, int broken, double *us)
{
    run_t r = {.n = n, .episodes = episodes, .broken = broken};
    r.b = new_barrier(spec, n);
    r.arrived = calloc(episodes, sizeof *r.arrived);
    r.serials = calloc(episodes, sizeof *r.serials);
    r.data[0] = calloc(n, sizeof *r.data[0]);
    r.data[1] = calloc(n, sizeof *r.data[1]);
    pthread_t *t = calloc(n, sizeof *t);
    worker_t *w = calloc(n, sizeof *w);
    if (!r.arrived || !r.serials || !r.data[0] || !r.data[1] || !t || !w) {
        printf("FAIL: out of memory\n");
        exit(1);
    }
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++) {
        w[i] = (worker_t){&r, i};
        if (pthread_create(&t[i], NULL, worker, &w[i]) != 0) {
            printf("FAIL: pthread_create\n");
            exit(1);
        }
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    *us = (double)(now_ns() - t0) / 1e3 / episodes;
    unsigned serial_bad = 0;
    for (unsigned e = 0; e < episodes; e++)
        serial_bad += atomic_load_explicit(&r.serials[e], memory_order_relaxed) != 1u;
    unsigned early = atomic_load_explicit(&r.early, memory_order_relaxed);
    unsigned bad_data = atomic_load_explicit(&r.bad_data, memory_order_relaxed);
    unsigned errors = atomic_load_explicit(&r.errors, memory_order_relaxed);
    unsigned violations = early + bad_data + errors + serial_bad;
    if (verbose || (violations && !broken))
        printf("%s %-40s N=%-2u %5u episodes %9.2f us/episode: %u early, %u stale data, %u errors, "
               "%u episodes without exactly one serial thread\n",
               violations ? "FAIL" : "ok  ", baton_barrier_spec(r.b), n, episodes, *us, early, bad_data,
               errors, serial_bad);
    int rc = baton_barrier_free(r.b);
    if (rc != 0)
        printf("FAIL: baton_barrier_free: %d %s\n", rc, baton_last_error());
    free(r.arrived);
    free(r.serials);
    free(r.data[0]);
    free(r.data[1]);
    free(t);
    free(w);
    return violations + (rc != 0);
}

/* --- every kind x policy x N -------------------------------------------------------- */

static unsigned online_cpus(void)
{
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (unsigned)c : 1u;
}

static void test_matrix(void)
{
    static const unsigned ns[] = {1, 2, 3, 4, 8, 16};
    const baton_barrier_kind_info_t *kinds;
    size_t nk = baton_barrier_kinds(&kinds);
    const baton_cpu_features_t *f = baton_cpu_features();
    const unsigned cpus = online_cpus();
    unsigned skipped = 0, configs = 0;
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < nk; i++) {
        /* Every policy the kind takes and the CPU has, then auto. */
        for (int p = 0; p <= BATON_WAIT_KINDS; p++) {
            char spec[96];
            if (p == BATON_WAIT_KINDS) {
                snprintf(spec, sizeof spec, "%s", kinds[i].name);
            } else {
                if (!(kinds[i].waits & BATON_WAIT_BIT(p)))
                    continue;
                if (p == BATON_WAIT_MONITOR && !f->waitpkg && !f->monitorx)
                    continue;
                snprintf(spec, sizeof spec, "%s:%s", kinds[i].name, baton_wait_name((baton_wait_kind)p));
            }
            /* Pure polling (spin, backoff) collapses when threads outnumber
             * CPUs: a waiter holds its CPU until the scheduler preempts it,
             * milliseconds per episode.  A few episodes still check it. */
            bool polls = p == BATON_WAIT_SPIN || p == BATON_WAIT_BACKOFF;
            for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
                unsigned n = ns[j], episodes = UNDER_TSAN ? 60 : 300;
                if (polls && n > 1)
                    episodes = 40; /* a busy machine makes even 2 threads oversubscribed */
                if (polls && n > cpus) {
                    if (n > 2 * cpus) {
                        skipped++;
                        if (verbose)
                            printf("skip %s N=%u: polling with %u threads on %u CPUs\n", spec, n, n, cpus);
                        continue;
                    }
                    episodes = 3;
                }
                double us;
                unsigned v = run_config(spec, n, episodes, 0, &us);
                CHECK(v == 0, "%s N=%u: %u violations", spec, n, v);
                configs++;
            }
        }
    }
    printf("matrix: %u configurations in %.2f s (%u polling configurations with more than 2 threads "
           "per CPU skipped: they take tens of milliseconds per episode)\n",
           configs, (double)(now_ns() - t0) / 1e9, skipped);
}

/* --- bad input, specs, the kind list ------------------------------------------------- */

static void expect_null(const char *spec, unsigned n, int err, const char *needle)
{
    errno = 0;
    baton_barrier_t *b = baton_barrier_new(spec, n);
    int e = errno;
    CHECK(b == NULL, "baton_barrier_new(\"%s\", %u) succeeded", spec ? spec : "(null)", n);
    if (b) {
        baton_barrier_free(b);
        return;
    }
    CHECK(e == err, "baton_barrier_new(\"%s\", %u): errno %d, expected %d", spec ? spec : "(null)", n, e,
          err);
    CHECK(strstr(baton_last_error(), needle) != NULL, "\"%s\": message '%s' lacks '%s'",
          spec ? spec : "(null)", baton_last_error(), needle);
}

static void test_bad_input(void)
{
    expect_null("central", 0, EINVAL, "at least one thread");
    expect_null(NULL, 0, EINVAL, "at least one thread");
    expect_null("nosuch", 2, EINVAL, "valid kinds: central, twolevel, dissemination, tournament");
    expect_null("central:nosuch", 2, EINVAL,
                "valid policies: spin, backoff, yield, park, spinpark, monitor, auto");
    expect_null("central,nosuch=1", 2, EINVAL, "valid options: yield_us=<0..1000000>");
    expect_null("twolevel,groups=5000", 2, EINVAL, "out-of-range option 'groups=5000'");
    expect_null("central,check=1", 2, EINVAL, "unknown option 'check=1'");
    expect_null("tournament:spin,yield_us=x", 2, EINVAL, "bad option");
    expect_null("dissemination junk", 2, EINVAL, "unknown barrier kind 'dissemination junk'");
    const baton_cpu_features_t *f = baton_cpu_features();
    if (!f->waitpkg && !f->monitorx)
        expect_null("central:monitor", 2, ENOTSUP, "use 'auto'");
}

static void expect_spec(const char *spec, unsigned n, const char *want)
{
    baton_barrier_t *b = new_barrier(spec, n);
    CHECK(strcmp(baton_barrier_spec(b), want) == 0, "spec of \"%s\", %u: '%s', expected '%s'", spec, n,
          baton_barrier_spec(b), want);
    /* The canonical spec names the same barrier. */
    baton_barrier_t *again = new_barrier(baton_barrier_spec(b), n);
    CHECK(strcmp(baton_barrier_spec(again), baton_barrier_spec(b)) == 0, "'%s' re-parsed as '%s'",
          baton_barrier_spec(b), baton_barrier_spec(again));
    baton_barrier_free(again);
    baton_barrier_free(b);
}

static void test_specs(void)
{
    const unsigned cpus = online_cpus();
    /* auto with a CPU per thread: the wait layer's auto, no yield phase. */
    baton_wait_t w;
    baton_wait_init(&w, BATON_WAIT_AUTO);
    char want[160];
    snprintf(want, sizeof want, "twolevel:%s,groups=0,yield_us=0", baton_wait_name((baton_wait_kind)w.kind));
    expect_spec(NULL, 1, want);
    expect_spec("", 1, want);
    expect_spec("default", 1, want);
    expect_spec("twolevel:auto", 1, want);
    expect_spec("central:spin", 3, "central:spin,yield_us=0");
    expect_spec("tournament:park,yield_us=20", 5, "tournament:park,yield_us=20");
    expect_spec("twolevel,groups=2", 2, "twolevel:spinpark,groups=2,yield_us=0");
    /* auto oversubscribed: park after a yield phase of at least 50 us. */
    baton_barrier_t *b = new_barrier("dissemination", 4 * cpus);
    const char *s = baton_barrier_spec(b);
    unsigned yus = 0;
    CHECK(sscanf(s, "dissemination:park,yield_us=%u", &yus) == 1 && yus >= 50,
          "oversubscribed auto: '%s', expected dissemination:park,yield_us=<at least 50>", s);
    baton_barrier_free(b);

    const baton_barrier_kind_info_t *k;
    size_t nk = baton_barrier_kinds(&k);
    CHECK(nk == 4, "%zu barrier kinds", nk);
    for (size_t i = 0; i < nk; i++) {
        CHECK(k[i].summary && k[i].summary[0], "%s: no summary", k[i].name);
        CHECK(strcmp(k[i].default_wait, "auto") == 0, "%s: default wait %s", k[i].name, k[i].default_wait);
        CHECK((k[i].waits & BATON_WAITS_ALL) == BATON_WAITS_ALL, "%s: waits %#x", k[i].name, k[i].waits);
        CHECK(strstr(k[i].options, "yield_us=<0..1000000, default auto>") != NULL, "%s: options '%s'",
              k[i].name, k[i].options);
    }
    CHECK(nk > 1 && strstr(k[1].options, "groups=<0..1024, default 0>") != NULL, "twolevel options '%s'",
          nk > 1 ? k[1].options : "");
}

/* --- places: the (n+1)-th thread, and places handed back ----------------------------- */

typedef struct place_test {
    baton_barrier_t *b;
    atomic_int hold;   /* holders stay alive while 1 */
    atomic_int waited; /* holders past their wait */
    atomic_int bad;    /* waits that returned an error */
} place_test_t;

static void *holder(void *arg)
{
    place_test_t *p = arg;
    int rc = baton_barrier_wait(p->b);
    if (rc != 0 && rc != BATON_BARRIER_SERIAL_THREAD)
        atomic_fetch_add(&p->bad, 1);
    atomic_fetch_add(&p->waited, 1);
    while (atomic_load(&p->hold))
        sleep_ms(1);
    return NULL;
}

static void *outsider(void *arg)
{
    place_test_t *p = arg;
    int rc = baton_barrier_wait(p->b);
    CHECK(rc == EINVAL, "a third thread's wait on a barrier of 2 returned %d, expected EINVAL", rc);
    CHECK(strstr(baton_last_error(), "has 2 places") != NULL, "the third thread's message: '%s'",
          baton_last_error());
    return NULL;
}

/* Two threads take both places and stay alive: a third is refused; once
 * they exit, two new threads use the barrier. */
static void test_places(const char *spec)
{
    place_test_t p = {.b = new_barrier(spec, 2)};
    atomic_init(&p.hold, 1);
    atomic_init(&p.waited, 0);
    atomic_init(&p.bad, 0);
    pthread_t a, b, c;
    pthread_create(&a, NULL, holder, &p);
    pthread_create(&b, NULL, holder, &p);
    while (atomic_load(&p.waited) < 2)
        sleep_ms(1);
    pthread_create(&c, NULL, outsider, &p);
    pthread_join(c, NULL);
    atomic_store(&p.hold, 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_create(&a, NULL, holder, &p);
    pthread_create(&b, NULL, holder, &p);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(atomic_load(&p.bad) == 0, "%s: %d waits failed in the places test", spec, atomic_load(&p.bad));
    CHECK(baton_barrier_free(p.b) == 0, "%s: free after the places test: %s", spec, baton_last_error());
}

/* The thread refused a place gets one once another thread has exited. */
typedef struct retry_test {
    baton_barrier_t *b;
    atomic_int phase;
    atomic_int first_rc, second_rc;
} retry_test_t;

static void *retry_holder(void *arg)
{
    retry_test_t *t = arg;
    (void)baton_barrier_wait(t->b); /* with the main thread: take the place */
    while (atomic_load(&t->phase) < 1)
        sleep_ms(1);
    return NULL; /* and exit: the place is handed back */
}

static void *retry_outsider(void *arg)
{
    retry_test_t *t = arg;
    atomic_store(&t->first_rc, baton_barrier_wait(t->b));
    while (atomic_load(&t->phase) < 2)
        sleep_ms(1);
    atomic_store(&t->second_rc, baton_barrier_wait(t->b));
    return NULL;
}

static void test_place_retry(const char *spec)
{
    retry_test_t t = {.b = new_barrier(spec, 2)};
    atomic_init(&t.phase, 0);
    atomic_init(&t.first_rc, -100);
    atomic_init(&t.second_rc, -100);
    pthread_t h, o;
    pthread_create(&h, NULL, retry_holder, &t);
    (void)baton_barrier_wait(t.b); /* main and the holder take both places */
    pthread_create(&o, NULL, retry_outsider, &t);
    while (atomic_load(&t.first_rc) == -100)
        sleep_ms(1);
    CHECK(atomic_load(&t.first_rc) == EINVAL, "%s: outsider's first wait %d", spec, atomic_load(&t.first_rc));
    atomic_store(&t.phase, 1);
    pthread_join(h, NULL); /* the holder exits: its place is free */
    atomic_store(&t.phase, 2);
    (void)baton_barrier_wait(t.b); /* main and the outsider */
    pthread_join(o, NULL);
    int rc = atomic_load(&t.second_rc);
    CHECK(rc == 0 || rc == BATON_BARRIER_SERIAL_THREAD,
          "%s: outsider's wait after a place was freed: %d (%s)", spec, rc, baton_last_error());
    CHECK(baton_barrier_free(t.b) == 0, "%s: free: %s", spec, baton_last_error());
}

/* --- EBUSY ------------------------------------------------------------------------- */

static void *one_wait(void *arg)
{
    (void)baton_barrier_wait(arg);
    return NULL;
}

static void test_busy(const char *spec)
{
    baton_barrier_t *b = new_barrier(spec, 2);
    pthread_t t;
    pthread_create(&t, NULL, one_wait, b);
    sleep_ms(20); /* it is inside its wait by now */
    errno = 0;
    CHECK(baton_barrier_free(b) == EBUSY, "%s: free with a thread waiting did not give EBUSY", spec);
    CHECK(strstr(baton_last_error(), "still inside") != NULL, "%s: EBUSY message '%s'", spec,
          baton_last_error());
    (void)baton_barrier_wait(b); /* complete the episode */
    pthread_join(t, NULL);
    CHECK(baton_barrier_free(b) == 0, "%s: free after the episode: %s", spec, baton_last_error());
}

/* --- churn: threads exit and new ones take their places ----------------------------- */

static void test_churn(const char *spec)
{
    /* A run per generation on one barrier: new threads every time. */
    const unsigned n = 4, generations = UNDER_TSAN ? 3 : 8;
    baton_barrier_t *b = new_barrier(spec, n);
    unsigned bad = 0;
    for (unsigned g = 0; g < generations; g++) {
        run_t r = {.b = b, .n = n, .episodes = 40};
        r.arrived = calloc(r.episodes, sizeof *r.arrived);
        r.serials = calloc(r.episodes, sizeof *r.serials);
        r.data[0] = calloc(n, sizeof(unsigned));
        r.data[1] = calloc(n, sizeof(unsigned));
        pthread_t t[4];
        worker_t w[4];
        for (unsigned i = 0; i < n; i++) {
            w[i] = (worker_t){&r, i};
            pthread_create(&t[i], NULL, worker, &w[i]);
        }
        for (unsigned i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        for (unsigned e = 0; e < r.episodes; e++)
            bad += atomic_load(&r.serials[e]) != 1u;
        bad += atomic_load(&r.early) + atomic_load(&r.bad_data) + atomic_load(&r.errors);
        free(r.arrived);
        free(r.serials);
        free(r.data[0]);
        free(r.data[1]);
    }
    CHECK(bad == 0, "%s: %u violations with threads replaced every generation", spec, bad);
    CHECK(baton_barrier_free(b) == 0, "%s: free: %s", spec, baton_last_error());
}

/* --- the broken barrier must be caught --------------------------------------------- */

static int run_broken(void)
{
    unsigned caught = 0, tries = 0;
    const baton_barrier_kind_info_t *k;
    size_t nk = baton_barrier_kinds(&k);
    for (size_t i = 0; i < nk; i++)
        for (unsigned n = 2; n <= 4; n += 2) {
            double us;
            unsigned v = run_config(k[i].name, n, 8, 1, &us);
            tries++;
            caught += v > 0;
            printf("broken barrier over %s, N=%u: %u violations found\n", k[i].name, n, v);
        }
    if (caught == tries)
        printf("broken barrier: caught in all %u runs\n", tries);
    else
        printf("broken barrier: caught in only %u of %u runs\n", caught, tries);
    return caught == tries ? 1 : 0;
}

int main(int argc, char **argv)
{
    bool broken = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--broken") == 0)
            broken = true;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(UNDER_TSAN ? 600 : 120); /* a hang is a failure */
    if (broken)
        return run_broken();
    test_bad_input();
    test_specs();
    const baton_barrier_kind_info_t *k;
    size_t nk = baton_barrier_kinds(&k);
    for (size_t i = 0; i < nk; i++) {
        test_places(k[i].name);
        test_place_retry(k[i].name);
        test_busy(k[i].name);
        test_churn(k[i].name);
    }
    test_matrix();
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("ok: barriers\n");
    return failures ? 1 : 0;
}
