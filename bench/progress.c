/* progress.c - the progress line of the long benches (progress.h). */
#include "progress.h"

#include "bench.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* No estimate before this much of the bench has run: the first runs are
 * the slowest (calibration, reference rates) and would overstate it. */
#define PROGRESS_MIN_ELAPSED_S 1.0

static struct {
    bool on;   /* stderr is a terminal */
    int cells; /* planned; 0: unknown */
    int cell;  /* the current cell, from 1; 0: none yet */
    double t0; /* when the bench began */
    char label[128];
    bool shown; /* a line is on the terminal */
} pg;

void bench_progress_begin(int cells)
{
    memset(&pg, 0, sizeof pg);
    pg.on = isatty(STDERR_FILENO);
    pg.cells = cells > 0 ? cells : 0;
    pg.t0 = bench_now();
}

void bench_progress_fmt_left(char *buf, size_t size, double s)
{
    if (s < 60)
        snprintf(buf, size, "%.0f s", s);
    else if (s < 3600)
        snprintf(buf, size, "%d min %02d s", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, size, "%d h %02d min", (int)(s / 3600), (int)(s / 60) % 60);
}

static int columns(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
        return ws.ws_col;
    return 100;
}

static void show(int step, int steps, const char *what)
{
    if (!pg.on)
        return;
    char head[96], line[512];
    const double elapsed = bench_now() - pg.t0;
    if (pg.cells > 0) {
        const double done = (pg.cell - 1 + (steps > 0 ? (double)step / steps : 0.0)) / pg.cells;
        char left[48] = "estimating";
        if (done > 0 && elapsed >= PROGRESS_MIN_ELAPSED_S) {
            bench_progress_fmt_left(left, sizeof left, elapsed * (1 - done) / done);
            strncat(left, " left", sizeof left - strlen(left) - 1);
        }
        snprintf(head, sizeof head, "cell %d of %d, %s", pg.cell, pg.cells, left);
    } else {
        snprintf(head, sizeof head, "cell %d", pg.cell);
    }
    int n = snprintf(line, sizeof line, "  [%s] %s", head, pg.label);
    if (what && what[0] && n > 0 && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, ": %d/%d %s", step + 1, steps, what);
    /* One terminal line, or \r cannot take it back. */
    const int cols = columns() - 1;
    if (n > cols)
        line[cols] = '\0';
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
    pg.shown = true;
}

void bench_progress_cell(const char *label)
{
    pg.cell++;
    snprintf(pg.label, sizeof pg.label, "%s", label ? label : "");
    show(0, 0, NULL);
}

void bench_progress_step(int step, int steps, const char *what) { show(step, steps, what); }

void bench_progress_cell_done(void) { bench_progress_clear(); }

void bench_progress_clear(void)
{
    if (pg.on && pg.shown) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        pg.shown = false;
    }
}
