/* wait_internal.h - what the wait layer shares between its files. */
#ifndef BATON_WAIT_INTERNAL_H
#define BATON_WAIT_INTERNAL_H

#include <baton/wait.h>
#include <stdbool.h>

/* Monitor-wait until *word != val or `cycles` TSC cycles pass. */
void baton_monitor_wait(uint8_t hw, const _Atomic uint32_t *word, uint32_t val, uint64_t cycles);
/* A timed low-power pause (TPAUSE) of about `cycles`, or a spin hint. */
void baton_monitor_pause(uint8_t hw, uint64_t cycles);
uint64_t baton_rdtsc(void);

/* TSC cycles per nanosecond, measured by calibration (0 if unknown). */
double baton_tsc_per_ns(void);

/* The calibration if it has completed, else NULL (never blocks). */
const baton_calibration_t *baton_calibration_ready(void);
/* Run the calibration in the calling thread if nobody has started it, and
 * return it; NULL if another thread is running it now. */
const baton_calibration_t *baton_calibration_start(void);

/* Sleep while *word == val until woken or the absolute time abstime
 * (NULL: none) on `clock` (CLOCK_REALTIME or CLOCK_MONOTONIC) passes;
 * `shared`: a futex other processes may wake (process-shared condition
 * variables).  ETIMEDOUT once passed, else 0; errno is left as it was. */
int baton_futex_wait_abs(_Atomic uint32_t *word, uint32_t val, clockid_t clock, const struct timespec *abstime,
                         bool shared);
/* Wake up to n sleepers of word; errno is left as it was. */
void baton_futex_wake_n(_Atomic uint32_t *word, int n, bool shared);

/* Monotonic clock in nanoseconds. */
uint64_t baton_now_ns(void);

/* The environment's say in calibration (values, NULL: unset; they read
 * nothing else, so that a fuzz target can call them): BATON_SPIN_FIXED=1,
 * and BATON_SPIN_BUDGET_NS, a spin budget clamped to [0, 1e9] ns (false
 * when unset or empty). */
bool baton_spin_fixed_env(const char *value);
bool baton_spin_budget_env(const char *value, double *ns);

#endif
