/* profile.c - `baton profile`: run a command under the interposer with its
 * contention profiler on (BATON_PROFILE=1), then read the raw reports each
 * process wrote at exit (format: src/preload/profile.c), symbolize the call
 * sites and print the locks sorted by total wait, on stderr: the program's
 * stdout stays its own. */
#include "bench_cli.h"
#include "commands.h"
#include "launch.h"

#include <baton/baton.h>

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct proc {
    int pid;
    char *exe;
    char *classes[4]; /* "mutex relay:spinpark 128 bytes/lock, peak 2 live" */
    char *clock;
    uint64_t records, memory;
    bool complete;
} proc_t;

enum {
    F_ACQ,
    F_CONT,
    F_WAIT,
    F_WMAX,
    F_HOLD,
    F_HOLDS,
    F_SACQ,
    F_SCONT,
    F_SWAIT,
    F_TRYFAIL,
    F_CONDW,
    F_DESTROYED,
    F_COUNT
};

typedef struct rec {
    size_t proc;
    char type[16], addr[32];
    uint64_t f[F_COUNT];
    uint64_t caller, offset;
    char *sym, *module;
    /* Symbolized: */
    char *func, *where; /* from addr2line, NULL when unknown */
    char *site;         /* what the table shows */
    /* elide(<kind>): attempts, commits, aborts by cause, fallbacks, skipped */
    bool elided;
    uint64_t tx[2 + BATON_ABORT_CAUSES + 2];
    /* Lock servers: messages sent and received, by role (BATON_ROLE_*). */
    bool served;
    uint64_t sent[BATON_ROLES], received[BATON_ROLES];
} rec_t;

#define TX_FIELDS (2 + BATON_ABORT_CAUSES + 2)
enum { TX_ATTEMPTS, TX_COMMITS, TX_ABORTS, TX_FALLBACKS = TX_ABORTS + BATON_ABORT_CAUSES, TX_SKIPPED };

static proc_t *procs;
static size_t nprocs;
static rec_t *recs;
static size_t nrecs, caprecs;

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (d == NULL) {
        fprintf(stderr, "baton profile: out of memory\n");
        exit(1);
    }
    return d;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (q == NULL) {
        fprintf(stderr, "baton profile: out of memory\n");
        exit(1);
    }
    return q;
}

/* --- reading the raw reports --------------------------------------------------------- */

/* Split `line` at tabs into at most max fields; returns the count. */
static size_t split(char *line, char **field, size_t max)
{
    size_t n = 0;
    char *p = line;
    while (n < max) {
        field[n++] = p;
        char *t = strchr(p, '\t');
        if (t == NULL || n == max)
            break;
        *t = '\0';
        p = t + 1;
    }
    return n;
}

static void read_report(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    procs = xrealloc(procs, (nprocs + 1) * sizeof *procs);
    proc_t *pr = &procs[nprocs];
    memset(pr, 0, sizeof *pr);
    size_t pi = nprocs++, ncls = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = '\0';
        char *fl[24];
        size_t n = split(line, fl, 24);
        if (strcmp(fl[0], "pid") == 0 && n >= 2) {
            pr->pid = atoi(fl[1]);
        } else if (strcmp(fl[0], "exe") == 0 && n >= 2) {
            pr->exe = xstrdup(fl[1]);
        } else if (strcmp(fl[0], "clock") == 0 && n >= 3) {
            char b[96];
            snprintf(b, sizeof b, "%s (%s ticks/us)", fl[1], fl[2]);
            pr->clock = xstrdup(b);
        } else if (strcmp(fl[0], "class") == 0 && n >= 7 && ncls < 4) {
            char b[320];
            if (strcmp(fl[2], "pthread") == 0)
                snprintf(b, sizeof b, "%s: pthread (glibc's own)", fl[1]);
            else
                snprintf(b, sizeof b, "%s: %s (%s bytes per lock, %s created, peak %s live)", fl[1], fl[2],
                         fl[3], fl[6], fl[5]);
            pr->classes[ncls++] = xstrdup(b);
        } else if (strcmp(fl[0], "memory") == 0 && n >= 3) {
            pr->records = strtoull(fl[1], NULL, 10);
            pr->memory = strtoull(fl[2], NULL, 10);
        } else if (strcmp(fl[0], "end") == 0) {
            pr->complete = true;
        } else if (strcmp(fl[0], "lock") == 0 && n >= 3 + F_COUNT + 4) {
            if (nrecs == caprecs) {
                caprecs = caprecs ? caprecs * 2 : 64;
                recs = xrealloc(recs, caprecs * sizeof *recs);
            }
            rec_t *r = &recs[nrecs++];
            memset(r, 0, sizeof *r);
            r->proc = pi;
            snprintf(r->type, sizeof r->type, "%s", fl[1]);
            snprintf(r->addr, sizeof r->addr, "%s", fl[2]);
            for (int k = 0; k < F_COUNT; k++)
                r->f[k] = strtoull(fl[3 + k], NULL, 10);
            r->caller = strtoull(fl[3 + F_COUNT], NULL, 16);
            r->offset = strtoull(fl[4 + F_COUNT], NULL, 16);
            r->sym = strcmp(fl[5 + F_COUNT], "-") ? xstrdup(fl[5 + F_COUNT]) : NULL;
            r->module = strcmp(fl[6 + F_COUNT], "-") ? xstrdup(fl[6 + F_COUNT]) : NULL;
        } else if (strcmp(fl[0], "elide") == 0 && n >= 2 + TX_FIELDS && nrecs > 0 &&
                   recs[nrecs - 1].proc == pi && strcmp(recs[nrecs - 1].addr, fl[1]) == 0) {
            /* The elision counters of the lock on the line before. */
            rec_t *r = &recs[nrecs - 1];
            r->elided = true;
            for (int k = 0; k < TX_FIELDS; k++)
                r->tx[k] = strtoull(fl[2 + k], NULL, 10);
        } else if (strcmp(fl[0], "server") == 0 && n >= 2 + 2 * BATON_ROLES && nrecs > 0 &&
                   recs[nrecs - 1].proc == pi && strcmp(recs[nrecs - 1].addr, fl[1]) == 0) {
            /* The lock server's messages, of the lock on the line before. */
            rec_t *r = &recs[nrecs - 1];
            r->served = true;
            for (int k = 0; k < BATON_ROLES; k++) {
                r->sent[k] = strtoull(fl[2 + 2 * k], NULL, 10);
                r->received[k] = strtoull(fl[3 + 2 * k], NULL, 10);
            }
        }
    }
    free(line);
    fclose(f);
}

static int by_pid(const void *a, const void *b)
{
    const proc_t *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

static int read_reports(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".prof") != 0)
            continue;
        char path[PATH_MAX + sizeof e->d_name];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        read_report(path);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
    /* Processes in pid order; records follow their process. */
    int *pid_of = xrealloc(NULL, (nprocs + 1) * sizeof *pid_of);
    for (size_t i = 0; i < nprocs; i++)
        pid_of[i] = procs[i].pid;
    qsort(procs, nprocs, sizeof *procs, by_pid);
    for (size_t i = 0; i < nrecs; i++)
        for (size_t j = 0; j < nprocs; j++)
            if (procs[j].pid == pid_of[recs[i].proc]) {
                recs[i].proc = j;
                break;
            }
    free(pid_of);
    return 0;
}

/* --- symbolizing ------------------------------------------------------------------------ */

static bool have_program(const char *name)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t len = strcspn(path, ":");
        char cand[PATH_MAX];
        snprintf(cand, sizeof cand, "%.*s/%s", (int)len, path, name);
        if (len > 0 && access(cand, X_OK) == 0)
            return true;
        path += len;
        path += *path == ':';
    }
    return false;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Run addr2line -f -C -e module on the offsets of the records recs[idx[0..n)]
 * (all of that module) and fill in their func/where. */
static void addr2line_module(const char *module, size_t *idx, size_t n)
{
    int fd[2];
    if (pipe(fd) != 0)
        return;
    char **argv = xrealloc(NULL, (n + 6) * sizeof *argv);
    char **owned = xrealloc(NULL, n * sizeof *owned);
    size_t a = 0;
    argv[a++] = "addr2line";
    argv[a++] = "-f";
    argv[a++] = "-C";
    argv[a++] = "-e";
    argv[a++] = (char *)module;
    for (size_t i = 0; i < n; i++) {
        char b[32];
        /* The return address follows the call: ask about the call itself. */
        uint64_t off = recs[idx[i]].offset;
        snprintf(b, sizeof b, "0x%" PRIx64, off ? off - 1 : 0);
        owned[i] = xstrdup(b);
        argv[a++] = owned[i];
    }
    argv[a] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2);
        execvp("addr2line", argv);
        _exit(127);
    }
    close(fd[1]);
    if (pid > 0) {
        FILE *f = fdopen(fd[0], "r");
        char *line = NULL;
        size_t cap = 0;
        for (size_t i = 0; f != NULL && i < n; i++) {
            if (getline(&line, &cap, f) <= 0)
                break;
            line[strcspn(line, "\n")] = '\0';
            rec_t *r = &recs[idx[i]];
            if (strcmp(line, "??") != 0)
                r->func = xstrdup(line);
            if (getline(&line, &cap, f) <= 0)
                break;
            line[strcspn(line, "\n")] = '\0';
            /* "file:line", "file:line (discriminator 2)", "??:0", "??:?" */
            char *disc = strstr(line, " (discriminator");
            if (disc)
                *disc = '\0';
            size_t ll = strlen(line);
            if (ll >= 2 && strcmp(line + ll - 2, ":?") == 0)
                line[ll - 2] = '\0'; /* a file but no line number */
            if (strncmp(line, "??", 2) != 0) {
                char b[PATH_MAX];
                snprintf(b, sizeof b, "%s", base_name(line));
                r->where = xstrdup(b);
            }
        }
        free(line);
        if (f)
            fclose(f);
        else
            close(fd[0]);
        int st;
        waitpid(pid, &st, 0);
    } else {
        close(fd[0]);
    }
    for (size_t i = 0; i < n; i++)
        free(owned[i]);
    free(owned);
    free(argv);
}

static int by_site(const void *a, const void *b)
{
    const rec_t *x = &recs[*(const size_t *)a], *y = &recs[*(const size_t *)b];
    int c = strcmp(x->module, y->module);
    return c ? c : (x->offset > y->offset) - (x->offset < y->offset);
}

static bool same_site(size_t a, size_t b)
{
    return recs[a].offset == recs[b].offset && strcmp(recs[a].module, recs[b].module) == 0;
}

static void symbolize(bool use_addr2line)
{
    if (use_addr2line && nrecs > 0) {
        size_t *idx = xrealloc(NULL, nrecs * sizeof *idx), n = 0;
        for (size_t i = 0; i < nrecs; i++)
            if (recs[i].module != NULL && recs[i].module[0] == '/' && recs[i].caller != 0)
                idx[n++] = i;
        /* One question per distinct (module, offset): many locks share a site. */
        qsort(idx, n, sizeof *idx, by_site);
        size_t *uniq = xrealloc(NULL, (n + 1) * sizeof *uniq), nu = 0;
        for (size_t i = 0; i < n; i++)
            if (i == 0 || !same_site(idx[i], idx[i - 1]))
                uniq[nu++] = idx[i];
        for (size_t i = 0; i < nu;) {
            size_t j = i;
            while (j < nu && strcmp(recs[uniq[j]].module, recs[uniq[i]].module) == 0 && j - i < 512)
                j++;
            addr2line_module(recs[uniq[i]].module, uniq + i, j - i);
            i = j;
        }
        for (size_t i = 1; i < n; i++)
            if (same_site(idx[i], idx[i - 1])) { /* share the answer (never freed) */
                recs[idx[i]].func = recs[idx[i - 1]].func;
                recs[idx[i]].where = recs[idx[i - 1]].where;
            }
        free(uniq);
        free(idx);
    }
    for (size_t i = 0; i < nrecs; i++) {
        rec_t *r = &recs[i];
        char b[PATH_MAX + 64];
        const char *mod = r->module ? base_name(r->module) : "?";
        if (r->caller == 0)
            snprintf(b, sizeof b, "?");
        else if (r->func && r->where)
            snprintf(b, sizeof b, "%s (%s)", r->func, r->where);
        else if (r->func)
            snprintf(b, sizeof b, "%s [%s+0x%" PRIx64 "]", r->func, mod, r->offset);
        else if (r->sym)
            snprintf(b, sizeof b, "%s [%s]", r->sym, mod);
        else
            snprintf(b, sizeof b, "%s+0x%" PRIx64, mod, r->offset);
        r->site = xstrdup(b);
    }
}

/* --- the table -------------------------------------------------------------------------------- */

static uint64_t acquisitions(const rec_t *r) { return r->f[F_ACQ] + r->f[F_SACQ]; }
static uint64_t contended(const rec_t *r) { return r->f[F_CONT] + r->f[F_SCONT]; }
static uint64_t total_wait(const rec_t *r) { return r->f[F_WAIT] + r->f[F_SWAIT]; }
static uint64_t max_wait(const rec_t *r) { return r->f[F_WMAX]; }

static int by_wait(const void *a, const void *b)
{
    const rec_t *x = a, *y = b;
    uint64_t wx = total_wait(x), wy = total_wait(y);
    if (wx != wy)
        return wx < wy ? 1 : -1;
    uint64_t cx = contended(x), cy = contended(y);
    if (cx != cy)
        return cx < cy ? 1 : -1;
    uint64_t ax = acquisitions(x), ay = acquisitions(y);
    if (ax != ay)
        return ax < ay ? 1 : -1;
    return strcmp(x->addr, y->addr);
}

/* Nanoseconds in a short human form. */
static const char *fmt_ns(char *b, size_t size, double ns)
{
    if (ns < 1e3)
        snprintf(b, size, "%.0fns", ns);
    else if (ns < 1e6)
        snprintf(b, size, "%.1fus", ns / 1e3);
    else if (ns < 1e9)
        snprintf(b, size, "%.1fms", ns / 1e6);
    else
        snprintf(b, size, "%.2fs", ns / 1e9);
    return b;
}

static void print_table(FILE *f, size_t top)
{
    bool shared = false, many = false;
    uint64_t acq = 0, waits = 0;
    for (size_t i = 0; i < nrecs; i++) {
        shared |= recs[i].f[F_SACQ] != 0;
        acq += acquisitions(&recs[i]);
        waits += total_wait(&recs[i]);
    }
    size_t active = 0;
    for (size_t i = 0; i < nprocs; i++)
        active += procs[i].records > 0 || !procs[i].complete;
    many = active > 1;
    char t1[32], t2[32], t3[32], t4[32];
    fprintf(f,
            "\nbaton profile: %zu lock%s, %" PRIu64
            " acquisitions, %s waiting in total; sorted by total wait\n",
            nrecs, nrecs == 1 ? "" : "s", acq, fmt_ns(t1, sizeof t1, (double)waits));
    if (nrecs == 0)
        return;
    fprintf(f, "%s%-24s %11s %6s %9s %9s %9s %9s %8s %8s%s  %s\n", many ? "    pid " : "", "lock", "acquired",
            "cont%", "wait", "mean", "max", "hold", "tryfail", "condwait", shared ? "  shared" : "",
            "call site (first use)");
    size_t shown = top == 0 || top > nrecs ? nrecs : top;
    for (size_t i = 0; i < shown; i++) {
        const rec_t *r = &recs[i];
        uint64_t a = acquisitions(r), c = contended(r);
        char lock[48];
        snprintf(lock, sizeof lock, "%s %s", r->type, r->addr);
        if (many)
            fprintf(f, "%7d ", procs[r->proc].pid);
        fprintf(f, "%-24s %11" PRIu64 " %5.1f%% %9s %9s %9s %9s %8" PRIu64 " %8" PRIu64, lock, a,
                a ? 100.0 * (double)c / (double)a : 0.0, fmt_ns(t1, sizeof t1, (double)total_wait(r)),
                c ? fmt_ns(t2, sizeof t2, (double)total_wait(r) / (double)c) : "-",
                c ? fmt_ns(t3, sizeof t3, (double)max_wait(r)) : "-",
                r->f[F_HOLDS] ? fmt_ns(t4, sizeof t4, (double)r->f[F_HOLD] / (double)r->f[F_HOLDS]) : "-",
                r->f[F_TRYFAIL], r->f[F_CONDW]);
        if (shared)
            fprintf(f, " %7.1f%%", a ? 100.0 * (double)r->f[F_SACQ] / (double)a : 0.0);
        fprintf(f, "  %s\n", r->site);
    }
    if (shown < nrecs)
        fprintf(f, "... %zu more (--top 0 shows every lock)\n", nrecs - shown);
    fprintf(
        f,
        "wait: total time spent blocked; mean and max: per contended acquisition; hold: mean exclusive hold\n"
        "(every contended hold and a sample of the others, see --help);\n"
        "shared: reader acquisitions (rwlocks); call site: the return address of the first call on the lock\n");
}

/* elide(<kind>): what speculation did on each elided lock. */
static void print_elision(FILE *f)
{
    size_t n = 0;
    for (size_t i = 0; i < nrecs; i++)
        n += recs[i].elided;
    if (n == 0)
        return;
    fprintf(f,
            "\nlock elision (%zu lock%s): transactions started, committed, aborts by cause, acquisitions "
            "that fell back to the lock or skipped speculation\n",
            n, n == 1 ? "" : "s");
    fprintf(f, "%-24s %11s %7s %10s %10s  %s\n", "lock", "attempts", "commit%", "fallbacks", "skipped",
            "aborts");
    for (size_t i = 0; i < nrecs; i++) {
        const rec_t *r = &recs[i];
        if (!r->elided)
            continue;
        char lock[48];
        snprintf(lock, sizeof lock, "%s %s", r->type, r->addr);
        fprintf(f, "%-24s %11" PRIu64 " %6.1f%% %10" PRIu64 " %10" PRIu64 " ", lock, r->tx[TX_ATTEMPTS],
                r->tx[TX_ATTEMPTS] ? 100.0 * (double)r->tx[TX_COMMITS] / (double)r->tx[TX_ATTEMPTS] : 0.0,
                r->tx[TX_FALLBACKS], r->tx[TX_SKIPPED]);
        bool any = false;
        for (unsigned c = 0; c < BATON_ABORT_CAUSES; c++)
            if (r->tx[TX_ABORTS + c]) {
                fprintf(f, " %s %" PRIu64, baton_abort_cause_name(c), r->tx[TX_ABORTS + c]);
                any = true;
            }
        fprintf(f, "%s  %s\n", any ? "" : " -", r->site);
    }
}

/* Lock servers: the messages each lock's protocol cost, per acquisition. */
static void print_servers(FILE *f)
{
    size_t n = 0;
    for (size_t i = 0; i < nrecs; i++)
        n += recs[i].served;
    if (n == 0)
        return;
    fprintf(f,
            "\nlock servers (%zu lock%s): messages sent/received by the global server, local servers "
            "and clients\n",
            n, n == 1 ? "" : "s");
    fprintf(f, "%-24s %11s %8s %15s %15s %15s\n", "lock", "acquired", "msg/acq", "global", "local",
            "clients");
    for (size_t i = 0; i < nrecs; i++) {
        const rec_t *r = &recs[i];
        if (!r->served)
            continue;
        char lock[48], role[BATON_ROLES][32];
        snprintf(lock, sizeof lock, "%s %s", r->type, r->addr);
        uint64_t total = 0, a = acquisitions(r);
        for (int k = 0; k < BATON_ROLES; k++) {
            total += r->sent[k];
            snprintf(role[k], sizeof role[k], "%" PRIu64 "/%" PRIu64, r->sent[k], r->received[k]);
        }
        fprintf(f, "%-24s %11" PRIu64 " %8.2f %15s %15s %15s  %s\n", lock, a,
                a ? (double)total / (double)a : 0.0, role[BATON_ROLE_GLOBAL], role[BATON_ROLE_LOCAL],
                role[BATON_ROLE_CLIENT], r->site);
    }
}

static void print_processes(FILE *f, bool symbolized)
{
    for (size_t i = 0; i < nprocs; i++) {
        proc_t *p = &procs[i];
        fprintf(f, "process %d %s: %" PRIu64 " lock record%s (%" PRIu64 " KiB of profiler memory)%s\n",
                p->pid, p->exe ? p->exe : "?", p->records, p->records == 1 ? "" : "s", p->memory / 1024,
                p->complete ? "" : " [report cut short]");
        for (int k = 0; k < 4; k++)
            if (p->classes[k])
                fprintf(f, "  %s\n", p->classes[k]);
    }
    if (!symbolized)
        fprintf(f, "(addr2line not found: call sites are module+offset; install binutils for names)\n");
}

/* --- JSON ------------------------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static int write_json(const char *path, char **cmd, int status)
{
    bool to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "baton profile: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fputs("{\"command\": [", f);
    for (size_t i = 0; cmd[i]; i++) {
        if (i)
            fputs(", ", f);
        json_str(f, cmd[i]);
    }
    fprintf(f, "], \"exit_status\": %d,\n \"processes\": [", status);
    for (size_t i = 0; i < nprocs; i++) {
        proc_t *p = &procs[i];
        fprintf(f, "%s\n  {\"pid\": %d, \"exe\": ", i ? "," : "", p->pid);
        json_str(f, p->exe);
        fputs(", \"clock\": ", f);
        json_str(f, p->clock);
        fprintf(f,
                ", \"locks\": %" PRIu64 ", \"profiler_bytes\": %" PRIu64 ", \"complete\": %s, \"classes\": [",
                p->records, p->memory, p->complete ? "true" : "false");
        for (int k = 0; k < 4 && p->classes[k]; k++) {
            if (k)
                fputs(", ", f);
            json_str(f, p->classes[k]);
        }
        fputs("]}", f);
    }
    fputs("],\n \"locks\": [", f);
    static const char *const names[F_COUNT] = {"acquisitions",        "contended",        "wait_ns",
                                               "max_wait_ns",         "hold_ns",          "holds",
                                               "shared_acquisitions", "shared_contended", "shared_wait_ns",
                                               "trylock_failures",    "cond_waits",       "destroyed"};
    for (size_t i = 0; i < nrecs; i++) {
        rec_t *r = &recs[i];
        fprintf(f, "%s\n  {\"pid\": %d, \"type\": \"%s\", \"address\": \"%s\"", i ? "," : "",
                procs[r->proc].pid, r->type, r->addr);
        for (int k = 0; k < F_COUNT; k++)
            fprintf(f, ", \"%s\": %" PRIu64, names[k], r->f[k]);
        fprintf(f, ",\n   \"site\": ");
        json_str(f, r->site);
        fprintf(f, ", \"caller\": \"0x%" PRIx64 "\", \"module\": ", r->caller);
        json_str(f, r->module);
        fprintf(f, ", \"offset\": \"0x%" PRIx64 "\", \"function\": ", r->offset);
        if (r->func)
            json_str(f, r->func);
        else
            fputs("null", f);
        fputs(", \"line\": ", f);
        if (r->where)
            json_str(f, r->where);
        else
            fputs("null", f);
        fputs(", \"symbol\": ", f);
        if (r->sym)
            json_str(f, r->sym);
        else
            fputs("null", f);
        if (r->served) {
            static const char *const roles[BATON_ROLES] = {"global", "local", "client"};
            fputs(",\n   \"messages\": {", f);
            for (int k = 0; k < BATON_ROLES; k++)
                fprintf(f, "%s\"%s\": {\"sent\": %" PRIu64 ", \"received\": %" PRIu64 "}", k ? ", " : "",
                        roles[k], r->sent[k], r->received[k]);
            fputc('}', f);
        }
        if (r->elided) {
            fprintf(f,
                    ",\n   \"elision\": {\"attempts\": %" PRIu64 ", \"commits\": %" PRIu64 ", \"aborts\": {",
                    r->tx[TX_ATTEMPTS], r->tx[TX_COMMITS]);
            for (unsigned c = 0; c < BATON_ABORT_CAUSES; c++)
                fprintf(f, "%s\"%s\": %" PRIu64, c ? ", " : "", baton_abort_cause_name(c),
                        r->tx[TX_ABORTS + c]);
            fprintf(f, "}, \"fallbacks\": %" PRIu64 ", \"skipped\": %" PRIu64 "}", r->tx[TX_FALLBACKS],
                    r->tx[TX_SKIPPED]);
        }
        fputc('}', f);
    }
    fputs("]}\n", f);
    bool bad = ferror(f) != 0;
    if (to_stdout ? fflush(f) != 0 : fclose(f) != 0)
        bad = true;
    if (bad) {
        fprintf(stderr, "baton profile: error writing %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* --- the command ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: baton profile [--top N] [--json FILE] [--] CMD [ARGS...]\n"
               "\n"
               "Run CMD under baton's interposer with its contention profiler on\n"
               "(BATON_PROFILE=1), then print every lock the program used, sorted by the\n"
               "total time threads spent waiting for it: the call site that first used it,\n"
               "acquisitions, the share that had to wait, mean and max wait per contended\n"
               "acquisition, mean hold time, trylock failures and condition waits.\n"
               "Every process of CMD that exits normally reports (forked children too);\n"
               "one killed by a signal or leaving by _exit() does not.\n"
               "\n"
               "  --top N       show the N locks with the most wait (default 20; 0: all)\n"
               "  --json FILE   also write every lock and process as JSON to FILE\n"
               "  -h, --help    show this help\n"
               "\n"
               "The profile goes to stderr; CMD's stdout is left alone.  The lock kinds are\n"
               "the interposer's (BATON_LOCK, BATON_RWLOCK, BATON_SPIN from the environment;\n"
               "see 'baton run').  Call sites are named by addr2line (binutils) when it is\n"
               "installed, else module+offset.  Hold times are estimated from every hold\n"
               "that followed a wait and one in 8 of the others (BATON_PROFILE_HOLD_EVERY=1\n"
               "times them all, at about 20 ns per lock/unlock); counts and waits are exact.\n"
               "Exit status: CMD's.\n");
}

static int profile_option(int c, const char *val, void *ctx)
{
    (void)c; /* --top: the one option not stored by the table */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (val[0] == '\0' || val[0] == '-' || *end != '\0' || errno != 0) {
        fprintf(stderr, "baton profile: --top '%s': not a count\n", val);
        return 2;
    }
    *(size_t *)ctx = (size_t)v;
    return 0;
}

int cmd_profile(int argc, char **argv)
{
    size_t top = 20;
    const char *json = NULL;
    const cli_opt_t opts[] = {{"top", CLI_VALUE, 0, 't'}, {"json", CLI_VALUE, 0, 'j', &json}, {0}};
    int i;
    const int prc =
        cli_getopt("baton profile", argc, argv, opts, CLI_COMMAND, profile_option, &top, usage, &i);
    if (prc >= 0)
        return prc;
    if (json != NULL && json[0] == '\0') {
        fprintf(stderr, "baton profile: --json needs a file name\n");
        return 2;
    }
    for (int c = 0; c < 3; c++) {
        const char *v = getenv(cli_class_env((cli_class_t)c));
        if (v != NULL && v[0] != '\0' &&
            cli_check_spec("baton profile", cli_class_env((cli_class_t)c), (cli_class_t)c, v) != 0)
            return 2;
    }
    cli_env_t env = {0};
    env.preload = cli_preload_lib("baton profile");
    if (env.preload == NULL)
        return 2;
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], out[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/baton-profile.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "baton profile: cannot make a directory %s: %s\n", dir, strerror(errno));
        return 2;
    }
    snprintf(out, sizeof out, "%s/%%p.prof", dir);
    cli_env_put(&env, "BATON_PROFILE", "1");
    cli_env_put(&env, "BATON_PROFILE_OUT", out);

    pid_t pid = cli_spawn("baton profile", argv + i, &env, -1, -1);
    int sig = 0, status = pid < 0 ? 127 : cli_wait(pid, &sig);
    read_reports(dir);
    if (nprocs == 0 && (status == 126 || status == 127) && !sig)
        return status; /* it never ran: cli_spawn() said why */

    bool a2l = have_program("addr2line");
    symbolize(a2l);
    qsort(recs, nrecs, sizeof *recs, by_wait);
    fflush(stdout);
    print_table(stderr, top);
    print_elision(stderr);
    print_servers(stderr);
    print_processes(stderr, a2l || nrecs == 0);
    if (nprocs == 0)
        fprintf(stderr, "baton profile: no process wrote a profile (%s)\n",
                sig ? "the command was killed by a signal before it could exit"
                    : "a statically linked or setuid program, or one that left by _exit()?");
    else if (sig)
        fprintf(stderr,
                "baton profile: the command was killed by signal %d: its own process wrote no profile\n",
                sig);
    if (json != NULL && write_json(json, argv + i, status) != 0 && status == 0)
        status = 1;
    return status;
}
