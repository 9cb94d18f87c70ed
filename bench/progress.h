/* progress.h - one line of progress on stderr while a long bench runs, and
 * only when stderr is a terminal: which cell of how many, the time left at
 * the pace of the cells so far, and what runs now.  The benches call it
 * where they iterate cells (bench_cell_run() for micro, pq, rw, elide,
 * server and matrix; barrier and wake themselves).  One bench runs per
 * process, so the state is the process's; the runner's children never
 * call it. */
#ifndef BATON_BENCH_PROGRESS_H
#define BATON_BENCH_PROGRESS_H

#include <stddef.h>

/* A bench of `cells` cells starts (0: the count is not known; then no time
 * left is shown). */
void bench_progress_begin(int cells);

/* The next cell starts; `label` names it ("micro S=1 L=0 N=8"). */
void bench_progress_cell(const char *label);

/* Inside the current cell: step `step` (from 0) of `steps` runs `what`. */
void bench_progress_step(int step, int steps, const char *what);

/* The current cell is done. */
void bench_progress_cell_done(void);

/* Erase the line (before printing a table, and at the end). */
void bench_progress_clear(void);

/* "42 s", "3 min 20 s", "1 h 05 min" (for tests: the estimate's format). */
void bench_progress_fmt_left(char *buf, size_t size, double seconds);

#endif
