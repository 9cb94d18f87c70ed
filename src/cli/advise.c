/* advise.c - `baton advise`: run a command stock and under each candidate lock
 * kind, interleaved, and recommend a spec only when its gain exceeds the
 * run-to-run spread. */
#include "bench_cli.h"
#include "commands.h"
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Candidates when --locks is not given: the interposer's default, a FIFO
 * queue lock and a ticket lock that park when the wait is long, a
 * test-and-test-and-set lock, and queue delegation. */
static const char *const default_locks[] = {"default", "mcs:spinpark", "ttas", "ticket:spinpark", "qd"};
static const char *const default_rwlocks[] = {"mrqd", "rw(default)", "rw(mcs:spinpark)", "rw(ttas)"};
static const char *const default_spins[] = {"ttas", "tas", "ticket", "mcs"};

typedef struct cand {
    char *spec; /* NULL: stock, no interposer */
    double *v;  /* one value per repetition */
    size_t n;
    double median, min, max, spread; /* spread: (max - min) / median, in % */
} cand_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton advise [--locks LIST] [--class mutex|rwlock|spin] [--metric wall|stdout-regex:RE]\n"
            "                    [--repeat R] [--] CMD [ARGS...]\n"
            "\n"
            "Run CMD stock (glibc's locks, no interposer) and under each candidate lock\n"
            "spec, R times each, interleaving the candidates within every round (the\n"
            "order rotates from round to round) so that machine noise spreads evenly.\n"
            "Print the median, min, max and spread of each, and recommend the best spec\n"
            "when its median beats stock by more than the larger of the two spreads;\n"
            "otherwise \"keep the default\" (stock).\n"
            "\n"
            "  --locks LIST    candidate specs, separated by commas, semicolons or spaces\n"
            "                  (a spec's own ,key=value options stay with it), default:\n"
            "                  mutex: default, mcs:spinpark, ttas, ticket:spinpark, qd;\n"
            "                  rwlock: mrqd, rw(default), rw(mcs:spinpark), rw(ttas);\n"
            "                  spin: ttas, tas, ticket, mcs\n"
            "  --class C       which pthread objects the candidates replace: mutex (BATON_LOCK,\n"
            "                  the default, also OpenMP locks), rwlock (BATON_RWLOCK), spin\n"
            "                  (BATON_SPIN); the other classes keep the environment's setting\n"
            "  --metric M      wall: elapsed seconds, lower is better (default);\n"
            "                  stdout-regex:RE: the first number that the POSIX extended\n"
            "                  regular expression RE captures (its first group, else the\n"
            "                  whole match) in CMD's stdout: higher is better (e.g. ops/s)\n"
            "  --repeat R      runs per candidate (default 3)\n"
            "  -h, --help      show this help\n"
            "\n"
            "CMD's stdout is read (regex) or discarded (wall); its stderr is shown if it\n"
            "fails, and then advise stops with CMD's exit status.  The table goes to stdout,\n"
            "progress to stderr.  \"vs stock\" is a speedup: above 1.00 is better.\n");
}

/* Split LIST into specs: at ';' and blanks, and at commas outside
 * parentheses unless what follows is a key=value option of the spec before. */
static size_t split_list(char *list, char **out, size_t max)
{
    size_t n = 0;
    char *start = list;
    int depth = 0;
    for (char *p = list;; p++) {
        bool end = *p == '\0';
        bool hard = *p == ';' || *p == ' ' || *p == '\t';
        bool comma = *p == ',' && depth == 0;
        if (*p == '(')
            depth++;
        else if (*p == ')' && depth > 0)
            depth--;
        if (comma) {
            /* "slice_us=100" after the comma: an option, keep going. */
            size_t k = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz0123456789_");
            if (k > 0 && p[1 + k] == '=')
                continue;
        }
        if (end || hard || comma) {
            *p = '\0';
            if (*start != '\0' && n < max)
                out[n++] = start;
            if (end)
                break;
            start = p + 1;
        }
    }
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The first number in s[0..len), or NAN. */
static double first_number(const char *s, size_t len)
{
    char buf[128];
    for (size_t i = 0; i < len; i++) {
        bool digit = s[i] >= '0' && s[i] <= '9';
        bool sign_digit =
            (s[i] == '-' || s[i] == '+' || s[i] == '.') && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9';
        if (!digit && !sign_digit)
            continue;
        size_t n = len - i < sizeof buf - 1 ? len - i : sizeof buf - 1;
        memcpy(buf, s + i, n);
        buf[n] = '\0';
        char *end;
        double v = strtod(buf, &end);
        if (end != buf)
            return v;
    }
    return NAN;
}

/* Read all of fd into a growing, NUL-terminated buffer. */
static char *slurp(int fd, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    if (b == NULL)
        return NULL;
    for (;;) {
        if (n + 1 == cap) {
            char *nb = realloc(b, cap * 2);
            if (nb == NULL)
                break;
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    b[n] = '\0';
    *len = n;
    return b;
}

/* The last `lines` lines of the file behind fd, on stderr. */
static void show_tail(int fd, int lines)
{
    if (lseek(fd, 0, SEEK_SET) != 0)
        return;
    size_t len;
    char *b = slurp(fd, &len);
    if (b == NULL)
        return;
    size_t start = len;
    for (int seen = 0; start > 0; start--)
        if (b[start - 1] == '\n' && start != len && ++seen == lines)
            break;
    fprintf(stderr, "---- its stderr%s ----\n%s%s----\n", start > 0 ? " (end)" : "", b + start,
            len && b[len - 1] != '\n' ? "\n" : "");
    free(b);
}

/* What advise's options set. */
struct advise_opts {
    char *list;
    long repeat;
    cli_class_t cls;
};

static int advise_option(int c, const char *val, void *ctx)
{
    struct advise_opts *ao = ctx;
    if (c == 'l') {
        free(ao->list);
        ao->list = strdup(val);
    } else if (c == 'r') {
        char *end;
        errno = 0;
        ao->repeat = strtol(val, &end, 10);
        if (*val == '\0' || *end != '\0' || errno != 0 || ao->repeat < 1 || ao->repeat > 1000) {
            fprintf(stderr, "baton advise: --repeat '%s': a count from 1 to 1000\n", val);
            return 2;
        }
    } else if (strcmp(val, "mutex") == 0) {
        ao->cls = CLI_MUTEX;
    } else if (strcmp(val, "rwlock") == 0) {
        ao->cls = CLI_RWLOCK;
    } else if (strcmp(val, "spin") == 0) {
        ao->cls = CLI_SPIN;
    } else {
        fprintf(stderr, "baton advise: --class '%s': one of mutex, rwlock, spin\n", val);
        return 2;
    }
    return 0;
}

int cmd_advise(int argc, char **argv)
{
    const char *metric = "wall";
    struct advise_opts ao = {NULL, 3, CLI_MUTEX};
    const cli_opt_t opts[] = {{"locks", CLI_VALUE, 0, 'l'},
                              {"metric", CLI_VALUE, 0, 'm', &metric},
                              {"repeat", CLI_VALUE, 0, 'r'},
                              {"class", CLI_VALUE, 0, 'c'},
                              {0}};
    int i;
    const int prc = cli_getopt("baton advise", argc, argv, opts, CLI_COMMAND, advise_option, &ao, usage, &i);
    if (prc >= 0) {
        free(ao.list);
        return prc;
    }
    char *list = ao.list;
    const long repeat = ao.repeat;
    const cli_class_t cls = ao.cls;
    char **cmd = argv + i;

    regex_t re;
    bool use_re = false;
    if (strncmp(metric, "stdout-regex:", 13) == 0) {
        int rc = regcomp(&re, metric + 13, REG_EXTENDED);
        if (rc != 0) {
            char msg[256];
            regerror(rc, &re, msg, sizeof msg);
            fprintf(stderr, "baton advise: --metric '%s': %s\n", metric, msg);
            return 2;
        }
        use_re = true;
    } else if (strcmp(metric, "wall") != 0) {
        fprintf(stderr, "baton advise: --metric '%s': wall or stdout-regex:RE\n", metric);
        return 2;
    }

    /* Candidates: stock first, then the specs (checked before any run). */
    char *specs[64];
    size_t nspecs = 0;
    if (list != NULL) {
        nspecs = split_list(list, specs, sizeof specs / sizeof specs[0]);
    } else {
        const char *const *d = cls == CLI_MUTEX    ? default_locks
                               : cls == CLI_RWLOCK ? default_rwlocks
                                                   : default_spins;
        size_t nd = cls == CLI_MUTEX    ? sizeof default_locks / sizeof *default_locks
                    : cls == CLI_RWLOCK ? sizeof default_rwlocks / sizeof *default_rwlocks
                                        : sizeof default_spins / sizeof *default_spins;
        for (size_t k = 0; k < nd; k++)
            specs[nspecs++] = (char *)d[k];
    }
    if (nspecs == 0) {
        fprintf(stderr, "baton advise: --locks names no spec\n");
        return 2;
    }
    for (size_t k = 0; k < nspecs; k++)
        if (cli_check_spec("baton advise", "--locks", cls, specs[k]) != 0)
            return 2;
    for (int c = 0; c < 3; c++) {
        const char *v = getenv(cli_class_env((cli_class_t)c));
        if (c != (int)cls && v != NULL && v[0] != '\0' &&
            cli_check_spec("baton advise", cli_class_env((cli_class_t)c), (cli_class_t)c, v) != 0)
            return 2;
    }
    const char *lib = cli_preload_lib("baton advise");
    if (lib == NULL)
        return 2;

    size_t nc = nspecs + 1;
    cand_t *cand = calloc(nc, sizeof *cand);
    if (cand == NULL)
        return 1;
    for (size_t k = 0; k < nc; k++) {
        cand[k].spec = k == 0 ? NULL : specs[k - 1];
        cand[k].v = calloc((size_t)repeat, sizeof(double));
        if (cand[k].v == NULL)
            return 1;
    }
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    char errpath[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    snprintf(errpath, sizeof errpath, "%s/baton-advise.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    int errfd = mkstemp(errpath);
    if (errfd < 0 || null < 0) {
        fprintf(stderr, "baton advise: cannot make a temporary file %s: %s\n", errpath, strerror(errno));
        return 2;
    }
    unlink(errpath);

    fprintf(stderr, "baton advise: %zu candidates + stock, %ld round%s, metric %s\n", nspecs, repeat,
            repeat == 1 ? "" : "s", use_re ? metric : "wall seconds");
    for (long r = 0; r < repeat; r++) {
        fprintf(stderr, "round %ld/%ld:", r + 1, repeat);
        for (size_t j = 0; j < nc; j++) {
            cand_t *c = &cand[(j + (size_t)r) % nc];
            cli_env_t env = {0};
            cli_env_put(&env, "BATON_PROFILE", NULL);
            if (c->spec != NULL) {
                env.preload = lib;
                cli_env_put(&env, cli_class_env(cls), c->spec);
            }
            int pfd[2] = {-1, -1};
            if (use_re && pipe(pfd) != 0) {
                fprintf(stderr, "\nbaton advise: pipe: %s\n", strerror(errno));
                return 2;
            }
            if (ftruncate(errfd, 0) != 0 || lseek(errfd, 0, SEEK_SET) != 0) {
                fprintf(stderr, "\nbaton advise: cannot reuse %s\n", errpath);
                return 2;
            }
            double t0 = bench_now();
            pid_t pid = cli_spawn("baton advise", cmd, &env, use_re ? pfd[1] : null, errfd);
            char *outbuf = NULL;
            size_t outlen = 0;
            if (use_re) {
                close(pfd[1]);
                if (pid > 0)
                    outbuf = slurp(pfd[0], &outlen);
                close(pfd[0]);
            }
            int sig = 0, status = pid < 0 ? 127 : cli_wait(pid, &sig);
            double elapsed = bench_now() - t0;
            const char *label = c->spec ? c->spec : "stock";
            if (status != 0) {
                fprintf(stderr, "\nbaton advise: '%s' failed under %s: %s %d\n", cmd[0], label,
                        sig ? "killed by signal" : "exit status", sig ? sig : status);
                show_tail(errfd, 20);
                return status;
            }
            double v = elapsed;
            if (use_re) {
                regmatch_t m[2];
                v = NAN;
                if (outbuf != NULL && regexec(&re, outbuf, 2, m, 0) == 0) {
                    regmatch_t *g = re.re_nsub >= 1 && m[1].rm_so >= 0 ? &m[1] : &m[0];
                    v = first_number(outbuf + g->rm_so, (size_t)(g->rm_eo - g->rm_so));
                }
                free(outbuf);
                if (isnan(v)) {
                    fprintf(stderr,
                            "\nbaton advise: under %s, '%s' captured no number from the command's stdout\n",
                            label, metric + 13);
                    return 1;
                }
            }
            c->v[c->n++] = v;
            fprintf(stderr, " %s %.4g", label, v);
        }
        fputc('\n', stderr);
    }
    close(errfd);
    close(null);

    for (size_t k = 0; k < nc; k++) {
        cand_t *c = &cand[k];
        qsort(c->v, c->n, sizeof *c->v, cmp_double);
        c->min = c->v[0];
        c->max = c->v[c->n - 1];
        c->median = c->n % 2 ? c->v[c->n / 2] : (c->v[c->n / 2 - 1] + c->v[c->n / 2]) / 2;
        c->spread = c->median != 0 ? 100.0 * (c->max - c->min) / fabs(c->median) : 0;
    }
    /* Speedup vs stock: above 1 is better for either metric. */
    const cand_t *stock = &cand[0];
#define SPEEDUP(c) (use_re ? (c)->median / stock->median : stock->median / (c)->median)
    printf("baton advise: %s (%s), %ld run%s each, interleaved\n", use_re ? metric + 13 : "wall seconds",
           use_re ? "higher is better" : "lower is better", repeat, repeat == 1 ? "" : "s");
    printf("%-28s %12s %12s %12s %8s %9s\n", cli_class_env(cls), "median", "min", "max", "spread",
           "vs stock");
    size_t best = 0;
    for (size_t k = 0; k < nc; k++) {
        const cand_t *c = &cand[k];
        printf("%-28s %12.4g %12.4g %12.4g %7.1f%% %8.2fx\n", c->spec ? c->spec : "stock (no interposer)",
               c->median, c->min, c->max, c->spread, SPEEDUP(c));
        if (k > 0 && (best == 0 || SPEEDUP(c) > SPEEDUP(&cand[best])))
            best = k;
    }
    const cand_t *b = &cand[best];
    double gain =
        stock->median != 0
            ? 100.0 * (use_re ? b->median - stock->median : stock->median - b->median) / fabs(stock->median)
            : 0;
    double noise = b->spread > stock->spread ? b->spread : stock->spread;
    printf("\n");
    if (gain > noise && gain > 0) {
        printf(
            "recommendation: %s=%s (%.2fx stock: median %.4g vs %.4g, a %.1f%% gain over a %.1f%% spread)\n",
            cli_class_env(cls), b->spec, SPEEDUP(b), b->median, stock->median, gain, noise);
        printf("  baton run --%s '%s' -- %s ...\n",
               cls == CLI_MUTEX    ? "lock"
               : cls == CLI_RWLOCK ? "rwlock"
                                   : "spin",
               b->spec, cmd[0]);
    } else {
        if (gain <= 0)
            printf("recommendation: keep the default (stock): the best candidate, %s, is %.2fx stock\n",
                   b->spec, SPEEDUP(b));
        else
            printf(
                "recommendation: keep the default (stock): the best candidate, %s, gains %.1f%%, within the "
                "run-to-run spread of %.1f%%\n",
                b->spec, gain, noise);
        if (repeat < 3)
            printf("  (with fewer than 3 runs each the spread says little: try --repeat 5)\n");
    }
#undef SPEEDUP
    return 0;
}
