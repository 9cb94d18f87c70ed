/* bench_cli.h - what the bench library gives the `baton` command (src/cli):
 * the benches as commands, the one option parser every command uses, and
 * the pieces `baton info`, `baton kinds` and `baton torture` share with the
 * benches.  The CLI includes this header and no other of bench/.
 */
#ifndef BATON_BENCH_BENCH_CLI_H
#define BATON_BENCH_BENCH_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "guard.h"   /* baton torture: guarded data and the broken lock */
#include "machine.h" /* baton info: the machine described and measured */

/* --- the benches: `baton bench <name>`, argv[0] being the name ------------- */

int cmd_bench_micro(int argc, char **argv);
int cmd_bench_pq(int argc, char **argv);
int cmd_bench_rw(int argc, char **argv);
int cmd_bench_uncontended(int argc, char **argv);
int cmd_bench_elide(int argc, char **argv);
int cmd_bench_barrier(int argc, char **argv);
int cmd_bench_wake(int argc, char **argv);
int cmd_bench_server(int argc, char **argv);
int cmd_bench_matrix(int argc, char **argv);

/* The peers this build has, one "  <name> <summary>" line each (or how to
 * get some), under a heading: the tail of `baton kinds`. */
void bench_print_peers(FILE *f);

/* --- the option parser of every command -------------------------------------
 *
 * A command describes its options in a table and hands the parser a
 * callback for those the table does not store itself.  Options are long
 * (--name VALUE or --name=VALUE; a unique prefix of a name will do), plus
 * -h and --help, which print the usage on stdout.  "--" ends the options.
 * The messages, each prefixed by the command ("baton advise: ..."):
 *   unknown option '<arg>'              (usage follows)
 *   ambiguous option '<arg>'            (usage follows)
 *   --<name> takes no value             (usage follows)
 *   --<name> needs <needs>
 *   bad value for --<name>: '<value>'   (usage follows; the callback said 1)
 *   unexpected argument '<arg>'         (usage follows; CLI_NO_OPERANDS)
 *   no command given                    (usage follows; CLI_COMMAND)
 */

#define CLI_FLAG 0  /* has_arg: a flag */
#define CLI_VALUE 1 /* has_arg: takes a value */

typedef struct cli_opt {
    const char *name;  /* without the dashes; NULL ends the table */
    int has_arg;       /* CLI_FLAG or CLI_VALUE */
    bool *flag;        /* a flag with flag set: *flag = true, no callback */
    int code;          /* what the callback receives */
    const char **str;  /* a value with str set: *str = the value, no callback */
    const char *needs; /* "--name needs <needs>" when it has no value; NULL: "a value" */
} cli_opt_t;

/* An option the table does not store (its code; its value, or NULL for a
 * flag): 0 taken, 1 a bad value (the parser says so), 2 refused, with the
 * callback having said why on stderr. */
typedef int (*cli_opt_fn)(int code, const char *value, void *ctx);

enum {
    CLI_NO_OPERANDS, /* options only: an operand is an error */
    CLI_COMMAND      /* options, then a command: stop at its first word; one is required */
};

/* Parse argv[1..argc) for the command `prog` ("baton advise").  Returns -1
 * to go on, with *first (NULL: not wanted) the index of the first operand
 * (argc when none); else the exit status: 0 after --help, 2 after an error
 * (said on stderr). */
int cli_getopt(const char *prog, int argc, char **argv, const cli_opt_t *opts, int operands, cli_opt_fn own,
               void *ctx, void (*usage)(FILE *), int *first);

/* --- shared with the benches ------------------------------------------------ */

double bench_now(void); /* CLOCK_MONOTONIC seconds */

#define BENCH_HOGS_MAX 64

/* Fork n hogs (at most BENCH_HOGS_MAX; a spin loop each, unpinned) into
 * pids; returns how many run, or -1 (none left running) with errno set.
 * A hog dies with the thread that forked it (PR_SET_PDEATHSIG); stop
 * them by PID with bench_hogs_stop(). */
int bench_hogs_start(int n, pid_t *pids);
void bench_hogs_stop(const pid_t *pids, int n);

#endif
