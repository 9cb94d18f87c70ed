/* info.c - `baton info`: describe this machine (topology, CPU features,
 * measured costs of the primitives) as text, and optionally as JSON. */
#include "bench_cli.h"
#include "commands.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: baton info [--json FILE] [--no-measure]\n"
               "\n"
               "Describe this machine: CPU topology, the features baton's wait\n"
               "policies use, and what the primitives cost here.\n"
               "\n"
               "  --json FILE    also write {\"machine\": {...}} to FILE (\"-\": stdout)\n"
               "  --no-measure   skip the timed measurements (instant)\n"
               "  -h, --help     show this help\n");
}

int cmd_info(int argc, char **argv)
{
    const char *json_path = NULL;
    bool no_measure = false;
    const cli_opt_t opts[] = {
        {"json", CLI_VALUE, 0, 'j', &json_path, "a file name"}, {"no-measure", CLI_FLAG, &no_measure}, {0}};
    const int prc = cli_getopt("baton info", argc, argv, opts, CLI_NO_OPERANDS, NULL, NULL, usage, NULL);
    if (prc >= 0)
        return prc;
    if (json_path && !*json_path) {
        fprintf(stderr, "baton info: --json needs a file name\n");
        return 2;
    }
    const bool measure = !no_measure;

    machine_t m;
    machine_describe(&m, measure);
    machine_print(stdout, &m);

    int rc = 0;
    if (json_path) {
        bool to_stdout = strcmp(json_path, "-") == 0;
        FILE *f = to_stdout ? stdout : fopen(json_path, "w");
        if (!f) {
            fprintf(stderr, "baton info: cannot write %s: %s\n", json_path, strerror(errno));
            rc = 1;
        } else {
            if (to_stdout)
                fputc('\n', f);
            fputs("{\"machine\": ", f);
            machine_json(f, &m);
            fputs("}\n", f);
            bool bad = ferror(f) != 0;
            if (to_stdout ? fflush(f) != 0 : fclose(f) != 0)
                bad = true;
            if (bad) {
                fprintf(stderr, "baton info: error writing %s: %s\n", json_path, strerror(errno));
                rc = 1;
            }
        }
    }
    machine_free(&m);
    return rc;
}
