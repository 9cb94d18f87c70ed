/* launch.h - what `baton run`, `baton profile`, `baton advise`,
 * `baton bench apps` and `baton plot` share (defined in launch.c): finding the
 * interposer and the scripts next to the baton binary, checking specs, and
 * running a command with the interposer in its environment. */
#ifndef BATON_CLI_LAUNCH_H
#define BATON_CLI_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Which configurable class a spec is for. */
typedef enum cli_class { CLI_MUTEX, CLI_RWLOCK, CLI_SPIN } cli_class_t;

/* The environment variable of a class ("BATON_LOCK", ...). */
const char *cli_class_env(cli_class_t c);

/* Check that `spec` parses and names a kind that can stand in for the
 * class's pthread object ("pthread" means glibc's own).  On error print
 * "<prog>: <option> '<spec>': why; interposable kinds: ..." and return -1. */
int cli_check_spec(const char *prog, const char *option, cli_class_t c, const char *spec);

/* The absolute path of libbaton-preload.so: $BATON_PRELOAD_LIB, else next
 * to the installed binary (<prefix>/bin/baton -> <prefix>/lib/...), else in
 * the build tree (<build>/src/cli/baton -> <build>/src/preload/...).  NULL
 * (after printing why, prefixed by prog) when none is found. */
const char *cli_preload_lib(const char *prog);

/* The directory holding the real-application scripts (run-apps.sh):
 * <prefix>/share/baton/apps when installed, else the source tree's
 * bench/apps.  NULL (after printing why) when neither exists. */
const char *cli_apps_dir(const char *prog);

/* dir(self)/rel/name, resolved, if it exists: into out (size bytes).
 * name "" names the directory rel itself. */
bool cli_beside_self(const char *rel, const char *name, char *out, size_t size);

/* The absolute path of the running baton binary. */
const char *cli_self_exe(void);

/* If the dynamic loader will run `cmd` (as execvp finds it) in secure mode,
 * ignoring LD_PRELOAD (set-user-ID or set-group-ID to another identity,
 * file capabilities), say so on stderr: it would run stock, and baton
 * would measure nothing.  cli_spawn() calls it when it preloads. */
void cli_warn_secure(const char *prog, const char *cmd);

/* Environment changes applied in the child just before exec. */
typedef struct cli_env {
    const char *preload;   /* prepended to LD_PRELOAD; NULL: none */
    const char *set[8][2]; /* name, value (value NULL: unset) */
    size_t nset;
} cli_env_t;

void cli_env_put(cli_env_t *e, const char *name, const char *value);

/* Apply e to this process's environment (for exec without fork). */
int cli_env_apply(const cli_env_t *e);

/* Fork and exec argv[0] (PATH search) with e applied; stdout/stderr go to
 * out_fd/err_fd when >= 0.  Until cli_wait() returns, SIGINT, SIGQUIT,
 * SIGTERM and SIGHUP sent to baton alone are forwarded to the command, and
 * those from the terminal (which reach the command too) do not stop baton.
 * Returns the pid, or -1 (after printing why). */
pid_t cli_spawn(const char *prog, char **argv, const cli_env_t *e, int out_fd, int err_fd);

/* Wait for pid; returns its exit status, 128 + signal when killed (and
 * *signal receives the signal number, else 0). */
int cli_wait(pid_t pid, int *signal);

#endif
