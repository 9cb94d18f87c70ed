/* apps.c - `baton bench apps`: the real applications (memcached, Kyoto
 * Cabinet, OpenMP) stock against baton, through their scripts (launch.h). */
#include "bench_cli.h"
#include "commands.h"
#include "launch.h"
#include "../api/registry.h"
#include "../base/join.h"

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

/* --- baton bench apps ------------------------------------------------------------------------ */

/* `baton bench apps [ARGS]`: exec bench/apps/run-apps.sh ARGS (installed as
 * <prefix>/share/baton/apps/run-apps.sh) with BATON_BIN (this binary) and
 * BATON_PRELOAD_LIB (the interposer) in its environment. */
int cmd_bench_apps(int argc, char **argv)
{
    const char *dir = cli_apps_dir("baton bench apps");
    if (dir == NULL)
        return 2;
    char script[PATH_MAX + 16];
    snprintf(script, sizeof script, "%s/run-apps.sh", dir);
    if (access(script, R_OK) != 0) {
        fprintf(stderr, "baton bench apps: cannot read %s: %s\n", script, strerror(errno));
        return 2;
    }
    const char *lib = cli_preload_lib("baton bench apps");
    if (lib == NULL)
        return 2;
    if (setenv("BATON_BIN", cli_self_exe(), 1) != 0 || setenv("BATON_PRELOAD_LIB", lib, 1) != 0) {
        fprintf(stderr, "baton bench apps: cannot set the environment: %s\n", strerror(errno));
        return 2;
    }
    /* argv[0] is "apps": the script takes its place, behind "bash" when the
     * file has lost its execute bit. */
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (args == NULL)
        return 1;
    bool direct = access(script, X_OK) == 0;
    size_t n = 0;
    if (!direct)
        args[n++] = "bash";
    args[n++] = script;
    for (int i = 1; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    fflush(NULL);
    if (direct)
        execv(script, args);
    else
        execvp("bash", args);
    fprintf(stderr, "baton bench apps: cannot run %s: %s\n", script, strerror(errno));
    free(args);
    return 126;
}
