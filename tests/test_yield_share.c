/* test_yield_share.c - the runner's arrivals stop yielding where a yield
 * hands the CPU to another process, and go on where it goes to the
 * program's own threads (runner.c, OWN_MIN).
 *
 * Each case runs in a child process (a fresh estimate), pinned to one CPU:
 * a holder thread keeps a runner lock while it sleeps 200 us, again and
 * again, and an arriver thread takes the lock in a loop, so that arrivals
 * find it held by an owner that is off its CPU, and poll with yields.
 * Beside them on that CPU runs either another process (a CPU hog, forked
 * and pinned there) or a thread of the program that only computes.  Each
 * yield of an arrival then lets that one run for a scheduler slice: the
 * hog's slice is the other process's, the thread's the program's.
 *
 * Checked, after at least MIN_SAMPLES timed yields: beside the hog the
 * arrivals have stopped yielding (the share is below the line, 0.75, and
 * the time lost per yield above a wake-up latency); beside the program's
 * own thread the share is higher than beside the hog by SEPARATION at
 * least (not an absolute bar: on a loaded machine other processes take
 * part of that CPU as well, and the share says so).  A broken estimate,
 * fixed at either end or blind to whose the CPU is, fails one of the two.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <baton/baton.h>
#include <baton/runner.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define MIN_SAMPLES 12u
#define RUN_S 10        /* give up on a case after this long */
#define SEPARATION 0.25 /* own thread's estimate over the hog's, at least */
#define OWN_MIN 0.75    /* runner.c's line */

static baton_lock_t *lock;
static atomic_bool stop;

static void sleep_ns(long ns)
{
    struct timespec d = {0, ns};
    nanosleep(&d, NULL);
}

static void *holder(void *arg)
{
    (void)arg;
    /* Relaxed: a stop flag; the join orders everything else. */
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        baton_lock(lock);
        sleep_ns(200000);
        baton_unlock(lock);
        sleep_ns(20000);
    }
    return NULL;
}

static void *arriver(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        baton_lock(lock);
        baton_unlock(lock);
    }
    return NULL;
}

static void *computer(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        x++;
    return NULL;
}

static int pin_one(void)
{
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine)) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            return sched_setaffinity(0, sizeof one, &one);
        }
    return -1;
}

/* One case, in this (child) process: the estimate and its sample count go
 * to fd. */
static void run_case(bool hog, int fd)
{
    if (pin_one() != 0) {
        perror("sched_setaffinity");
        _exit(2);
    }
    pid_t h = -1;
    if (hog) {
        h = fork();
        if (h == 0)
            for (volatile unsigned long x = 0;; x++)
                ;
    }
    lock = baton_lock_new("runner:spinpark");
    if (lock == NULL) {
        fprintf(stderr, "runner:spinpark: %s\n", baton_last_error());
        _exit(2);
    }
    pthread_t t[3];
    int n = 0;
    pthread_create(&t[n++], NULL, holder, NULL);
    pthread_create(&t[n++], NULL, arriver, NULL);
    if (!hog)
        pthread_create(&t[n++], NULL, computer, NULL);
    baton_runner_yield_stats_t st = {0};
    time_t give_up = time(NULL) + RUN_S;
    while (st.samples < MIN_SAMPLES && time(NULL) <= give_up) {
        sleep_ns(10000000);
        baton_runner_yield_stats(&st);
    }
    atomic_store_explicit(&stop, true, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    baton_runner_yield_stats(&st);
    if (h > 0) {
        kill(h, SIGKILL);
        waitpid(h, NULL, 0);
    }
    baton_lock_free(lock);
    if (write(fd, &st, sizeof st) != (ssize_t)sizeof st)
        _exit(2);
    _exit(0);
}

static bool one_case(bool hog, baton_runner_yield_stats_t *st)
{
    int p[2];
    if (pipe(p) != 0)
        return false;
    pid_t c = fork();
    if (c == 0) {
        close(p[0]);
        run_case(hog, p[1]);
    }
    close(p[1]);
    ssize_t got = read(p[0], st, sizeof *st);
    close(p[0]);
    int status = 0;
    waitpid(c, &status, 0);
    return got == (ssize_t)sizeof *st && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void show(const char *what, const baton_runner_yield_stats_t *st)
{
    printf("%-28s share %.2f, %8.0f ns lost per yield, %u yields timed: arrivals %s\n", what, st->share,
           st->lost_ns, st->samples, st->yields ? "yield" : "queue at once");
}

int main(void)
{
    baton_runner_yield_stats_t hog = {0}, own = {0};
    bool ok = one_case(true, &hog);
    CHECK(ok, "the case beside a hog ran");
    ok = ok && one_case(false, &own);
    CHECK(ok, "the case beside the program's own thread ran");
    if (ok) {
        show("beside a CPU hog:", &hog);
        show("beside the program's thread:", &own);
        CHECK(hog.samples >= MIN_SAMPLES && own.samples >= MIN_SAMPLES, "samples: %u and %u, want %u",
              hog.samples, own.samples, MIN_SAMPLES);
        CHECK(!hog.yields && hog.share < OWN_MIN, "beside a hog arrivals should stop yielding (share %.2f)",
              hog.share);
        CHECK(own.share >= hog.share + SEPARATION,
              "beside our own thread the share %.2f should exceed %.2f + %.2f", own.share, hog.share,
              SEPARATION);
    }
    printf(failures ? "FAIL: %d failures\n" : "PASS\n", failures);
    return failures != 0;
}
