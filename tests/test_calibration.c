/* test_calibration - who waits for the wait layer's calibration (calibrate.c).
 *
 * In a fresh process:
 *   - nothing is measured before a wait needs it;
 *   - baton_calibration_start() (what the first wait that needs a budget
 *     calls) returns at once, with the measurement under way on a thread
 *     of its own, named baton-calib;
 *   - a child forked while it runs can still calibrate: baton_calibration()
 *     in the child returns (it would sleep for good on a measurement whose
 *     thread the fork left behind);
 *   - baton_calibration() in the parent waits for the background one, and
 *     the results are in their bounds; the thread is gone afterwards.
 */
#include <baton/baton.h>
#include "../src/wait/wait_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "limit_as.h" /* limit_as_calibrating(): is baton-calib running? */

static int plausible(const baton_calibration_t *c)
{
    return c != NULL && c->pause_ns > 0.0 && c->spin_budget_ns >= 1000.0 && c->spin_budget_ns <= 200000.0 &&
           c->spin_budget_iters >= 1 && c->backoff_max >= 1 && c->yield_ns > 0.0;
}

static void sleep_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    CHECK(baton_calibration_ready() == NULL, "measured before anything needed it");
    /* The measurement begins with a 2 ms sleep (the TSC against the
     * clock): a start that waited for it could not return NULL. */
    const baton_calibration_t *c = baton_calibration_start();
    CHECK(c == NULL, "baton_calibration_start() waited for the measurement");
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30); /* a child that sleeps for good is killed, and fails */
        const baton_calibration_t *k = baton_calibration();
        _exit(plausible(k) && baton_calibration_ready() == k ? 0 : 3);
    }
    CHECK(pid > 0, "fork");
    int forked_inside = baton_calibration_ready() == NULL;
    int seen = 0;
    for (int i = 0; i < 50 && !seen && baton_calibration_ready() == NULL; i++) {
        seen = limit_as_calibrating();
        if (!seen)
            sleep_ms(1);
    }
    int st = 0;
    if (pid > 0) {
        CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child forked during the measurement: %s %d",
              WIFSIGNALED(st) ? "killed by signal" : "exit status",
              WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
    c = baton_calibration();
    CHECK(plausible(c), "the parent's measurement is out of bounds");
    CHECK(baton_calibration_ready() == c, "ready after baton_calibration()");
    CHECK(baton_calibration_start() == c, "start after it is done returns it");
    int left = 1;
    for (int i = 0; i < 200 && left; i++) {
        left = limit_as_calibrating();
        if (left)
            sleep_ms(5);
    }
    CHECK(!left, "the baton-calib thread is still there 1 s after the measurement");
    printf("fork during the measurement: %s; baton-calib thread seen: %s; budget %.1f us\n",
           forked_inside ? "yes" : "no (it had finished)", seen ? "yes" : "no",
           c ? c->spin_budget_ns / 1e3 : 0.0);
    printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
