/* launch.c - what the commands that launch a program share (launch.h):
 * checking a spec for an interposed class, finding the interposer and the
 * application scripts next to this binary, the environment, spawning and
 * waiting with signals forwarded. */
#include "bench_cli.h"
#include "commands.h"
#include "launch.h"
#include "../api/registry.h"
#include "../preload/standin.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef BATON_SOURCE_DIR
#define BATON_SOURCE_DIR ""
#endif
#ifndef BATON_BIN_TO_LIB
#define BATON_BIN_TO_LIB "../lib"
#endif
#ifndef BATON_BIN_TO_APPS
#define BATON_BIN_TO_APPS "../share/baton/apps"
#endif

/* --- specs ------------------------------------------------------------------------ */

static const char *const class_env[] = {"BATON_LOCK", "BATON_RWLOCK", "BATON_SPIN"};
static const char *const class_what[] = {"mutex", "rwlock", "spinlock"};
/* What a kind needs to stand in for each pthread object (the interposer's
 * own rule, src/preload/standin.h). */
static const unsigned class_need[] = {PL_NEED_LOCK, PL_NEED_RWLOCK, PL_NEED_LOCK};

const char *cli_class_env(cli_class_t c) { return class_env[c]; }

int cli_check_spec(const char *prog, const char *option, cli_class_t c, const char *spec)
{
    const baton_kind_t *k;
    baton_opts_t o;
    char canon[160], names[768];
    pl_standin_names(names, sizeof names, class_need[c], true);
    if (baton_spec_parse(spec, &k, &o, canon, sizeof canon) != 0) {
        fprintf(stderr, "%s: %s '%s': %s\n  interposable %s kinds: %s\n", prog, option, spec,
                baton_last_error(), class_what[c], names);
        return -1;
    }
    if (k->wrapper) {
        /* The inner kind is checked when a lock is made (elide(rcl)). */
        baton_lock_t *probe = baton_lock_new(spec);
        if (probe == NULL) {
            fprintf(stderr, "%s: %s '%s': %s\n  interposable %s kinds: %s\n", prog, option, spec,
                    baton_last_error(), class_what[c], names);
            return -1;
        }
        baton_lock_free(probe);
    }
    if (!pl_stands_in(k->name, k->caps, class_need[c])) {
        fprintf(stderr,
                "%s: %s '%s': kind '%s' cannot stand in for a pthread %s (it needs %s)\n"
                "  interposable %s kinds: %s\n",
                prog, option, spec, k->name, class_what[c], pl_need_words(class_need[c]), class_what[c],
                names);
        return -1;
    }
    return 0;
}

/* --- finding things next to the binary ------------------------------------------------ */

const char *cli_self_exe(void)
{
    static char path[PATH_MAX];
    if (path[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? (size_t)n : 0] = '\0';
    }
    return path;
}

/* (launch.h) */
bool cli_beside_self(const char *rel, const char *name, char *out, size_t size)
{
    char dir[PATH_MAX], cand[PATH_MAX * 2], real[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", cli_self_exe());
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        return false;
    *slash = '\0';
    snprintf(cand, sizeof cand, "%s/%s%s%s", dir, rel, name[0] ? "/" : "", name);
    if (realpath(cand, real) == NULL || strlen(real) >= size)
        return false;
    memcpy(out, real, strlen(real) + 1);
    return true;
}

const char *cli_preload_lib(const char *prog)
{
    static char lib[PATH_MAX];
    const char *env = getenv("BATON_PRELOAD_LIB");
    if (env != NULL && env[0] != '\0') {
        if (realpath(env, lib) == NULL) {
            fprintf(stderr, "%s: BATON_PRELOAD_LIB=%s: %s\n", prog, env, strerror(errno));
            return NULL;
        }
    } else if (!cli_beside_self(BATON_BIN_TO_LIB, "libbaton-preload.so", lib, sizeof lib) &&
               !cli_beside_self("../preload", "libbaton-preload.so", lib, sizeof lib)) {
        fprintf(stderr,
                "%s: cannot find libbaton-preload.so next to %s (looked in %s/ and ../preload/; "
                "set BATON_PRELOAD_LIB to its path)\n",
                prog, cli_self_exe(), BATON_BIN_TO_LIB);
        return NULL;
    }
    /* The dynamic loader splits LD_PRELOAD at spaces and colons. */
    if (strpbrk(lib, " :\t") != NULL) {
        fprintf(stderr,
                "%s: the interposer's path '%s' holds a space or colon, which LD_PRELOAD cannot carry\n",
                prog, lib);
        return NULL;
    }
    return lib;
}

const char *cli_apps_dir(const char *prog)
{
    static char dir[PATH_MAX];
    if (cli_beside_self(BATON_BIN_TO_APPS, "", dir, sizeof dir))
        return dir;
    struct stat st;
    if (BATON_SOURCE_DIR[0] != '\0' && snprintf(dir, sizeof dir, "%s/bench/apps", BATON_SOURCE_DIR) > 0 &&
        stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return dir;
    fprintf(stderr,
            "%s: cannot find the application scripts (looked in %s/ beside %s and in %s/bench/apps)\n", prog,
            BATON_BIN_TO_APPS, cli_self_exe(), BATON_SOURCE_DIR);
    return NULL;
}

/* --- programs the loader runs without the interposer ------------------------------------ */

/* The file execvp() would run for `cmd`: cmd itself when it names a path,
 * else the first executable regular file of that name on PATH. */
static bool find_program(const char *cmd, char *out, size_t size)
{
    struct stat st;
    if (strchr(cmd, '/') != NULL) {
        int n = snprintf(out, size, "%s", cmd);
        return n > 0 && (size_t)n < size;
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        size_t len = strcspn(p, ":");
        int n = snprintf(out, size, "%.*s%s%s", (int)len, p, len ? "/" : "", cmd);
        if (n > 0 && (size_t)n < size && stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
            return true;
        p += len;
        if (*p == '\0')
            return false;
    }
}

void cli_warn_secure(const char *prog, const char *cmd)
{
    char path[PATH_MAX];
    struct stat st;
    struct statvfs fs;
    if (!find_program(cmd, path, sizeof path) || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    if (statvfs(path, &fs) == 0 && (fs.f_flag & ST_NOSUID))
        return; /* the loader ignores the bits there: the interposer loads */
    /* What makes the loader run the program in secure mode (AT_SECURE),
     * where it ignores LD_PRELOAD's paths: an identity that changes at
     * exec, or file capabilities. */
    const char *why = NULL;
    if ((st.st_mode & S_ISUID) && st.st_uid != geteuid())
        why = "set-user-ID";
    else if ((st.st_mode & S_ISGID) && st.st_gid != getegid())
        why = "set-group-ID";
    else if (getxattr(path, "security.capability", NULL, 0) > 0)
        why = "given file capabilities";
    static bool said; /* once per baton process (advise runs the command many times) */
    if (why != NULL && !said) {
        said = true;
        fprintf(stderr,
                "%s: %s is %s: the dynamic loader ignores LD_PRELOAD for it (secure execution), so it runs "
                "with glibc's own locks, stock, and baton measures nothing\n",
                prog, path, why);
    }
}

/* --- environment and processes ---------------------------------------------------------- */

void cli_env_put(cli_env_t *e, const char *name, const char *value)
{
    for (size_t i = 0; i < e->nset; i++)
        if (strcmp(e->set[i][0], name) == 0) {
            e->set[i][1] = value;
            return;
        }
    if (e->nset < sizeof e->set / sizeof e->set[0]) {
        e->set[e->nset][0] = name;
        e->set[e->nset][1] = value;
        e->nset++;
    }
}

/* Is `lib` already one of the entries of an LD_PRELOAD value? */
static bool preloads(const char *list, const char *lib)
{
    size_t n = strlen(lib);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " :");
        if (len == n && strncmp(p, lib, n) == 0)
            return true;
        p += len;
        p += strspn(p, " :");
    }
    return false;
}

int cli_env_apply(const cli_env_t *e)
{
    for (size_t i = 0; i < e->nset; i++) {
        int rc = e->set[i][1] ? setenv(e->set[i][0], e->set[i][1], 1) : unsetenv(e->set[i][0]);
        if (rc != 0)
            return -1;
    }
    if (e->preload != NULL) {
        const char *old = getenv("LD_PRELOAD");
        if (old == NULL || old[0] == '\0')
            return setenv("LD_PRELOAD", e->preload, 1);
        if (preloads(old, e->preload))
            return 0;
        size_t len = strlen(e->preload) + strlen(old) + 2;
        char *v = malloc(len);
        if (v == NULL)
            return -1;
        /* Ours first: its definitions must win over any other interposer. */
        snprintf(v, len, "%s:%s", e->preload, old);
        int rc = setenv("LD_PRELOAD", v, 1);
        free(v);
        return rc;
    }
    return 0;
}

/* While a command runs, signals meant for it are passed on: ^C at the
 * terminal reaches the whole process group (the command gets it from the
 * kernel, so baton only survives it, as system() does); a signal another
 * process sent to baton alone (kill, timeout) is forwarded to the command.
 * Either way baton lives to read the reports and clean up. */
static const int forwarded[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
static struct sigaction saved[sizeof forwarded / sizeof forwarded[0]];
static volatile sig_atomic_t child_pid;

static void forward(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    if (child_pid > 0 && (info->si_code == SI_USER || info->si_code == SI_QUEUE))
        kill((pid_t)child_pid, sig);
}

static void restore_signals(void)
{
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaction(forwarded[i], &saved[i], NULL);
}

pid_t cli_spawn(const char *prog, char **argv, const cli_env_t *e, int out_fd, int err_fd)
{
    if (e != NULL && e->preload != NULL)
        cli_warn_secure(prog, argv[0]);
    fflush(NULL);
    struct sigaction fw;
    memset(&fw, 0, sizeof fw);
    fw.sa_sigaction = forward;
    fw.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&fw.sa_mask);
    child_pid = 0;
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaction(forwarded[i], &fw, &saved[i]);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
        restore_signals();
        return -1;
    }
    if (pid == 0) {
        restore_signals();
        if (out_fd >= 0 && out_fd != 1)
            dup2(out_fd, 1);
        if (err_fd >= 0 && err_fd != 2)
            dup2(err_fd, 2);
        if (e != NULL && cli_env_apply(e) != 0) {
            fprintf(stderr, "%s: cannot set the environment: %s\n", prog, strerror(errno));
            _exit(127);
        }
        execvp(argv[0], argv);
        int err = errno;
        fprintf(stderr, "%s: cannot run '%s': %s\n", prog, argv[0], strerror(err));
        _exit(err == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    return pid;
}

int cli_wait(pid_t pid, int *signal)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            status = 127 << 8;
            break;
        }
    }
    child_pid = 0;
    restore_signals();
    if (signal)
        *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
