/* run.c - `baton run`: run a command with the interposer
 * (libbaton-preload.so) and the chosen lock kinds (launch.h). */
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

/* --- baton run ----------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: baton run [--lock SPEC] [--rwlock SPEC] [--spin SPEC] [--verbose] [--] CMD [ARGS...]\n"
        "\n"
        "Run CMD with baton's interposer (libbaton-preload.so prepended to LD_PRELOAD):\n"
        "its pthread mutexes, condition variables, rwlocks, spinlocks and OpenMP locks\n"
        "become baton locks.  Unmodified, dynamically linked programs only.\n"
        "\n"
        "  --lock SPEC     kind for pthread mutexes and OpenMP locks (BATON_LOCK; default: default)\n"
        "  --rwlock SPEC   kind for pthread rwlocks: needs shared readers (BATON_RWLOCK; default: rw(default),prefer_readers)\n"
        "  --spin SPEC     kind for pthread spinlocks (BATON_SPIN; default: ttas)\n"
        "  --verbose       diagnostics from the interposer on stderr (BATON_VERBOSE=1)\n"
        "  -h, --help      show this help\n"
        "\n"
        "A class whose option is not given keeps the BATON_* value already in the\n"
        "environment.  SPEC is a lock spec ('baton kinds'); 'pthread' keeps glibc's own.\n"
        "The interposer is found next to this binary, or named by BATON_PRELOAD_LIB.\n"
        "Exit status: CMD's (127 when it cannot be run).\n");
}

int cmd_run(int argc, char **argv)
{
    const char *spec[3] = {NULL, NULL, NULL};
    static const char *const opt[3] = {"--lock", "--rwlock", "--spin"};
    bool verbose = false;
    const cli_opt_t opts[] = {{"lock", CLI_VALUE, 0, 0, &spec[CLI_MUTEX], "a spec"},
                              {"rwlock", CLI_VALUE, 0, 0, &spec[CLI_RWLOCK], "a spec"},
                              {"spin", CLI_VALUE, 0, 0, &spec[CLI_SPIN], "a spec"},
                              {"verbose", CLI_FLAG, &verbose},
                              {0}};
    int i;
    const int prc = cli_getopt("baton run", argc, argv, opts, CLI_COMMAND, NULL, NULL, usage, &i);
    if (prc >= 0)
        return prc;
    cli_env_t env = {0};
    for (int c = 0; c < 3; c++) {
        if (spec[c] == NULL)
            continue;
        if (cli_check_spec("baton run", opt[c], (cli_class_t)c, spec[c]) != 0)
            return 2;
        cli_env_put(&env, cli_class_env((cli_class_t)c), spec[c]);
    }
    /* Check the inherited values too: the interposer would stop the program. */
    for (int c = 0; c < 3; c++) {
        const char *v = getenv(cli_class_env((cli_class_t)c));
        if (spec[c] == NULL && v != NULL && v[0] != '\0' &&
            cli_check_spec("baton run", cli_class_env((cli_class_t)c), (cli_class_t)c, v) != 0)
            return 2;
    }
    if (verbose)
        cli_env_put(&env, "BATON_VERBOSE", "1");
    env.preload = cli_preload_lib("baton run");
    if (env.preload == NULL)
        return 2;
    if (cli_env_apply(&env) != 0) {
        fprintf(stderr, "baton run: cannot set the environment: %s\n", strerror(errno));
        return 2;
    }
    cli_warn_secure("baton run", argv[i]);
    fflush(NULL);
    execvp(argv[i], argv + i);
    int err = errno;
    fprintf(stderr, "baton run: cannot run '%s': %s\n", argv[i], strerror(err));
    return err == ENOENT ? 127 : 126;
}
