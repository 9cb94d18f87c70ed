/* plot.c - `baton plot`: figures and an HTML report from the JSON that the
 * benches write.  The drawing is Python with matplotlib (tools/plot/), kept
 * out of the C library and of this binary: this command only finds the
 * script and a Python that can run it, and says how to install what is
 * missing.
 *
 * The script: <datadir>/baton/plot/baton_plot.py when installed (found
 * relative to this binary, as the interposer is), else the source tree's
 * tools/plot/.  The Python, first found of:
 *   $BATON_PYTHON;
 *   in the build tree, <build>/plot-venv (tools/plot-deps.sh makes it;
 *   make bench and make test run it);
 *   installed, $XDG_DATA_HOME/baton/plot-venv (~/.local/share/...), which
 *   <datadir>/baton/plot/plot-deps.sh makes;
 *   python3 on PATH (matplotlib may be installed system-wide).
 * The script exits 3 when matplotlib cannot be imported, after saying why
 * and the command that installs it (BATON_PLOT_INSTALL, set here). */
#include "commands.h"
#include "launch.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef BATON_SOURCE_DIR
#define BATON_SOURCE_DIR ""
#endif
#ifndef BATON_BIN_TO_PLOT
#define BATON_BIN_TO_PLOT "../share/baton/plot"
#endif

#define PLOT_SCRIPT "baton_plot.py"
#define PLOT_EXIT_NO_MATPLOTLIB 3 /* baton_plot.py's */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton plot FILE.json... -o DIR [options]\n"
            "  One figure per cell of each bench's JSON (baton bench micro|pq|rw|barrier|wake|\n"
            "  server|elide|matrix --json FILE), into DIR:\n"
            "    micro, pq, rw  throughput, fairness and CPU-s/Mop against the threads, per set\n"
            "                   of workload parameters, one series per lock\n"
            "    barrier        us per episode against N, per W\n"
            "    wake           cost against the delay, with min(spin, park) and the\n"
            "                   2-competitive bound\n"
            "    server         messages per section against the clients, with the pLock\n"
            "                   paper's bounds; throughput and latency\n"
            "    elide          throughput; commits and aborts by cause\n"
            "    matrix         default / fastest reference per cell: a heat map centred on 1\n"
            "  --format png|svg       (default png)\n"
            "  --report FILE.html     one self-contained page: machine, tables, figures\n"
            "  --text FILE.txt        a bench's printed tables, for the report (repeatable)\n"
            "  --info FILE.txt        `baton info` output, for the report\n"
            "  --machine FILE.json    `baton info --json` output, for the report\n"
            "  --report-json FILE     what each figure drew (its records and series)\n"
            "  Needs Python 3 with matplotlib: %s\n"
            "  BATON_PYTHON=/path/to/python overrides the Python chosen.\n",
            "make bench and make test install it (tools/plot-deps.sh)");
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Where the per-user environment of an installed baton goes. */
static void user_venv(char *out, size_t size)
{
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(out, size, "%s/baton/plot-venv", xdg);
    else
        snprintf(out, size, "%s/.local/share/baton/plot-venv", home && home[0] ? home : "/tmp");
}

int cmd_plot(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    static char script[PATH_MAX], dir[PATH_MAX], venv[PATH_MAX], python[PATH_MAX + 32];
    static char install[PATH_MAX * 3];
    bool installed = cli_beside_self(BATON_BIN_TO_PLOT, PLOT_SCRIPT, script, sizeof script);
    if (installed) {
        cli_beside_self(BATON_BIN_TO_PLOT, "", dir, sizeof dir);
        user_venv(venv, sizeof venv);
        snprintf(install, sizeof install, "%s/plot-deps.sh %s", dir, venv);
    } else {
        snprintf(script, sizeof script, "%s/tools/plot/%s", BATON_SOURCE_DIR, PLOT_SCRIPT);
        if (BATON_SOURCE_DIR[0] == '\0' || !is_file(script)) {
            fprintf(stderr, "baton plot: cannot find %s (looked in %s/ beside %s and in %s/tools/plot)\n",
                    PLOT_SCRIPT, BATON_BIN_TO_PLOT, cli_self_exe(), BATON_SOURCE_DIR);
            return 2;
        }
        /* The build tree: <build>/src/cli/baton, <build>/plot-venv. */
        char build[PATH_MAX - 16];
        if (!cli_beside_self("../..", "", build, sizeof build))
            snprintf(build, sizeof build, "build");
        snprintf(venv, sizeof venv, "%s/plot-venv", build);
        snprintf(install, sizeof install, "%s/tools/plot-deps.sh %s", BATON_SOURCE_DIR, venv);
    }
    const char *env_python = getenv("BATON_PYTHON");
    if (env_python && env_python[0])
        snprintf(python, sizeof python, "%s", env_python);
    else if (snprintf(python, sizeof python, "%s/bin/python3", venv) > 0 && is_file(python))
        ; /* the environment that plot-deps.sh made */
    else
        snprintf(python, sizeof python, "python3");

    cli_env_t env = {0};
    cli_env_put(&env, "MPLBACKEND", "Agg");
    cli_env_put(&env, "BATON_PLOT_VENV", venv);
    cli_env_put(&env, "BATON_PLOT_INSTALL", install);
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) {
        fprintf(stderr, "baton plot: out of memory\n");
        return 2;
    }
    args[0] = python;
    args[1] = script;
    for (int i = 1; i < argc; i++)
        args[i + 1] = argv[i];
    pid_t pid = cli_spawn("baton plot", args, &env, -1, -1);
    int status = pid < 0 ? 127 : cli_wait(pid, NULL);
    free(args);
    if (status == 127 || status == 126)
        fprintf(stderr,
                "baton plot: no Python 3 to run %s (tried %s): install python3, then matplotlib "
                "with: %s\n",
                script, python, install);
    return status;
}
