/* info.c - `baton info`: describe this machine (topology, CPU features,
 * measured costs of the primitives) as text, and optionally as JSON. */
#include "machine.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The `info` subcommand; argv[0] is "info".  Declared here because the CLI
 * has no header of its own for subcommands: main.c declares it too. */
int cmd_info(int argc, char **argv);

static void usage(FILE *f)
{
    fprintf(f,
            "usage: baton info [--json FILE] [--no-measure]\n"
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
    bool measure = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--no-measure") == 0) {
            measure = false;
        } else if (strcmp(a, "--json") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "baton info: --json needs a file name\n");
                return 2;
            }
            json_path = argv[++i];
        } else if (strncmp(a, "--json=", 7) == 0) {
            json_path = a + 7;
        } else {
            fprintf(stderr, "baton info: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (json_path && !*json_path) {
        fprintf(stderr, "baton info: --json needs a file name\n");
        return 2;
    }

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
                fprintf(stderr, "baton info: error writing %s: %s\n", json_path,
                        strerror(errno));
                rc = 1;
            }
        }
    }
    machine_free(&m);
    return rc;
}
