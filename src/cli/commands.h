/* commands.h - the commands of `baton` written here (main.c dispatches;
 * the benches' are in bench_cli.h).  Each takes its arguments with argv[0]
 * its own name. */
#ifndef BATON_CLI_COMMANDS_H
#define BATON_CLI_COMMANDS_H

int cmd_info(int argc, char **argv);       /* info.c */
int cmd_bench_apps(int argc, char **argv); /* apps.c */
int cmd_run(int argc, char **argv);        /* run.c */
int cmd_profile(int argc, char **argv);    /* profile.c */
int cmd_advise(int argc, char **argv);     /* advise.c */
int cmd_torture(int argc, char **argv);    /* torture.c */
int cmd_plot(int argc, char **argv);       /* plot.c */

#endif
