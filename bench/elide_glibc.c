/* elide_glibc.c - glibc's own lock elision as a peer of `baton bench elide`:
 * the pthread kind run by this same command in a subprocess with
 * GLIBC_TUNABLES=glibc.elision.enable=1 (glibc reads its tunables at
 * start-up only), its JSON read back into the cell (elide.h). */
#include "elide.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* --- the glibc elision peer: this command again, in a subprocess ------------------- */

static const char *tmp_dir(void)
{
    const char *t = getenv("TMPDIR");
    return t && t[0] ? t : "/tmp";
}

/* The number after "key": in a record of our own JSON (one line), or dflt. */
static double json_num(const char *rec, const char *key, double dflt)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(rec, pat);
    if (!p)
        return dflt;
    char *end;
    double v = strtod(p + strlen(pat), &end);
    return end == p + strlen(pat) ? dflt : v;
}

/* The string after "key": (escapes undone as far as we write them). */
static void json_str(const char *rec, const char *key, char *out, size_t size)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    out[0] = '\0';
    const char *p = strstr(rec, pat);
    if (!p || size == 0)
        return;
    p += strlen(pat);
    size_t n = 0;
    while (*p && *p != '"' && n + 1 < size) {
        if (*p == '\\' && p[1] == 'u' && p[2] && p[3] && p[4] && p[5]) {
            out[n++] = (char)strtol((char[]){p[4], p[5], 0}, NULL, 16);
            p += 6;
            continue;
        }
        if (*p == '\\' && p[1])
            p++;
        out[n++] = *p++;
    }
    out[n] = '\0';
}

static int status_of(const char *name)
{
    if (!strcmp(name, "ok") || !strcmp(name, "COLLAPSED"))
        return BENCH_OK;
    if (!strcmp(name, "VERIFY-FAILED"))
        return BENCH_VERIFY_FAILED;
    if (!strcmp(name, "COLLAPSED(timeout)"))
        return BENCH_TIMEOUT;
    if (!strcmp(name, "CRASHED"))
        return BENCH_CRASHED;
    return BENCH_ERROR;
}

/* Fill rec from the first record of the subprocess's JSON file; false if
 * there is none. */
static bool read_peer_json(const char *path, bench_record_t *rec)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    while (getline(&line, &cap, f) > 0) {
        if (!strstr(line, "{\"bench\": \"elide\""))
            continue;
        bench_result_t *m = &rec->median;
        char status[64];
        json_str(line, "status", status, sizeof status);
        m->status = status_of(status);
        json_str(line, "message", m->message, sizeof m->message);
        m->ops = (uint64_t)json_num(line, "ops", 0);
        m->seconds = json_num(line, "duration_s", 0);
        m->cpu_s = json_num(line, "cpu_s", 0);
        m->min_thread_ops = (uint64_t)json_num(line, "min_thread_ops", 0);
        m->max_thread_ops = (uint64_t)json_num(line, "max_thread_ops", 0);
        m->energy_j = json_num(line, "energy_j", -1);
        m->wait_max_ns = json_num(line, "wait_max_ns", -1);
        m->wait_p999_ns = json_num(line, "wait_p999_ns", -1);
        m->extra[EXTRA_HIT_RATE] = json_num(line, "hit_rate", -1);
        m->extra[EXTRA_EVICT] = json_num(line, "evictions_per_op", -1);
        const char *runs = strstr(line, "\"runs_ops_per_s\": [");
        rec->nruns = 0;
        if (runs) {
            const char *p = runs + strlen("\"runs_ops_per_s\": [");
            while (rec->nruns < REPORT_MAX_RUNS) {
                char *end;
                double v = strtod(p, &end);
                if (end == p)
                    break;
                rec->runs_ops_per_s[rec->nruns++] = v;
                p = end + strspn(end, ", ");
            }
        }
        found = true;
        break;
    }
    free(line);
    fclose(f);
    return found;
}

/* The environment for the subprocess: ours, with the elision tunable added
 * to GLIBC_TUNABLES (kept, if set).  NULL when out of memory. */
static char **peer_environ(char **tunables_out)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    const char *old = getenv("GLIBC_TUNABLES");
    size_t len = strlen("GLIBC_TUNABLES=") + (old ? strlen(old) + 1 : 0) + strlen(GLIBC_TUNABLE) + 1;
    char *t = malloc(len);
    if (!env || !t) {
        free(env);
        free(t);
        return NULL;
    }
    snprintf(t, len, "GLIBC_TUNABLES=%s%s%s", old && old[0] ? old : "", old && old[0] ? ":" : "",
             GLIBC_TUNABLE);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "GLIBC_TUNABLES=", 15) != 0)
            env[k++] = environ[i];
    env[k++] = t;
    env[k] = NULL;
    *tunables_out = t;
    return env;
}

/* The last non-empty line of the file at fd (for a failure's message). */
static void last_line(int fd, char *out, size_t size)
{
    char buf[4096];
    out[0] = '\0';
    off_t end = lseek(fd, 0, SEEK_END);
    off_t start = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
    ssize_t got = pread(fd, buf, sizeof buf - 1, start);
    if (got <= 0)
        return;
    buf[got] = '\0';
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
        buf[--got] = '\0';
    const char *nl = strrchr(buf, '\n');
    const char *last = nl ? nl + 1 : buf;
    size_t len = strlen(last) < size ? strlen(last) : size - 1;
    memcpy(out, last, len);
    out[len] = '\0';
}

/* Run `pthread` for one cell in a subprocess with glibc's elision on, and
 * fill rec (the bench name, lock, threads and duration; the median and the
 * runs) from its JSON. */
void elide_run_glibc_peer(const struct elide_cli *cli, int threads, int mix, int stats, bench_record_t *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->bench = "elide";
    snprintf(rec->lock, sizeof rec->lock, "%s", GLIBC_PEER);
    rec->threads = threads;
    rec->duration_s = cli->duration;
    bench_result_t *m = &rec->median;
    m->threads = threads;
    m->energy_j = -1;
    for (int e = 0; e < BENCH_EXTRAS; e++)
        m->extra[e] = -1;
    m->status = BENCH_ERROR;

    char json_path[512], log_path[512];
    snprintf(json_path, sizeof json_path, "%s/baton-elide-peer.XXXXXX", tmp_dir());
    snprintf(log_path, sizeof log_path, "%s/baton-elide-log.XXXXXX", tmp_dir());
    int jfd = mkstemp(json_path);
    int lfd = jfd >= 0 ? mkstemp(log_path) : -1;
    if (jfd < 0 || lfd < 0) {
        snprintf(m->message, sizeof m->message, "cannot make a temporary file in %s: %s", tmp_dir(),
                 strerror(errno));
        if (jfd >= 0) {
            close(jfd);
            unlink(json_path);
        }
        return;
    }
    close(jfd);
    unlink(log_path); /* the open descriptor keeps it */

    char a_threads[16], a_mix[16], a_dur[32], a_rep[16], a_b[16], a_k[16], a_i[16];
    snprintf(a_threads, sizeof a_threads, "%d", threads);
    snprintf(a_mix, sizeof a_mix, "%d", mix);
    snprintf(a_dur, sizeof a_dur, "%.17g", cli->duration);
    snprintf(a_rep, sizeof a_rep, "%d", cli->repeat);
    snprintf(a_b, sizeof a_b, "%u", cli->buckets);
    snprintf(a_k, sizeof a_k, "%u", cli->keys);
    snprintf(a_i, sizeof a_i, "%u", cli->items);
    char *argv[] = {"baton",      "bench",   "elide",
                    "--as-peer",  "--locks", "pthread",
                    "--threads",  a_threads, "--mix",
                    a_mix,        "--stats", (char *)elide_stats_names[stats],
                    "--duration", a_dur,     "--repeat",
                    a_rep,        "--pin",   (char *)cli->pin,
                    "--buckets",  a_b,       "--keys",
                    a_k,          "--items", a_i,
                    "--json",     json_path, cli->fault ? "--inject-fault" : NULL,
                    NULL};
    char *tunables = NULL;
    char **env = peer_environ(&tunables);
    if (!env) {
        snprintf(m->message, sizeof m->message, "out of memory");
        close(lfd);
        unlink(json_path);
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(lfd, STDOUT_FILENO);
        dup2(lfd, STDERR_FILENO);
        execve("/proc/self/exe", argv, env);
        fprintf(stderr, "cannot run /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    free(env);
    free(tunables);
    int wstatus = 0;
    bool timed_out = false;
    if (pid < 0) {
        snprintf(m->message, sizeof m->message, "fork: %s", strerror(errno));
    } else {
        /* Every run may take its deadline (bench_cmd_setup's), plus the
         * subprocess's own start-up. */
        double deadline = bench_now() + cli->repeat * (cli->duration * 2 + 2) + 10;
        for (;;) {
            pid_t w = waitpid(pid, &wstatus, WNOHANG);
            if (w == pid || (w < 0 && errno != EINTR))
                break;
            if (bench_now() > deadline) {
                kill(pid, SIGKILL);
                waitpid(pid, &wstatus, 0);
                timed_out = true;
                break;
            }
            struct timespec nap = {0, 10 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        /* Exit 0, or 1 for a run that failed its check: either wrote JSON. */
        bool exited = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) <= 1;
        if (timed_out) {
            m->status = BENCH_TIMEOUT;
            snprintf(m->message, sizeof m->message, "the subprocess ran past its deadline (killed)");
        } else if (!exited || !read_peer_json(json_path, rec)) {
            char why[200];
            last_line(lfd, why, sizeof why);
            m->status = WIFSIGNALED(wstatus) ? BENCH_CRASHED : BENCH_ERROR;
            snprintf(m->message, sizeof m->message, "subprocess %s %d: %s",
                     WIFSIGNALED(wstatus) ? "killed by signal" : "exited",
                     WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus), why);
        }
    }
    close(lfd);
    unlink(json_path);
}
