/* cli.c - the option parser of every `baton` command, and the list of the
 * peers (bench_cli.h). */
#include "bench_cli.h"

#include "peers/peers.h"

#include <string.h>

/* The entry `arg` ("--name" or "--name=value", name length len) names: an
 * exact name, else the one name it is a prefix of.  NULL: none; *ambiguous
 * when more than one. */
static const cli_opt_t *find(const cli_opt_t *opts, const char *name, size_t len, bool *ambiguous)
{
    const cli_opt_t *hit = NULL;
    int prefixes = 0;
    *ambiguous = false;
    for (const cli_opt_t *o = opts; o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (o->name[len] == '\0')
            return o;
        hit = o;
        prefixes++;
    }
    *ambiguous = prefixes > 1;
    return prefixes == 1 ? hit : NULL;
}

int cli_getopt(const char *prog, int argc, char **argv, const cli_opt_t *opts, int operands, cli_opt_fn own,
               void *ctx, void (*usage)(FILE *), int *first)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (operands == CLI_COMMAND)
                break;
            fprintf(stderr, "%s: unexpected argument '%s'\n", prog, a);
            usage(stderr);
            return 2;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        bool ambiguous = false;
        const cli_opt_t *o = a[1] == '-' && len > 0 ? find(opts, name, len, &ambiguous) : NULL;
        if (o == NULL) {
            fprintf(stderr, "%s: %s option '%s'\n", prog, ambiguous ? "ambiguous" : "unknown", a);
            usage(stderr);
            return 2;
        }
        const char *value = NULL;
        if (o->has_arg == CLI_FLAG) {
            if (eq) {
                fprintf(stderr, "%s: --%s takes no value\n", prog, o->name);
                usage(stderr);
                return 2;
            }
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            fprintf(stderr, "%s: --%s needs %s\n", prog, o->name, o->needs ? o->needs : "a value");
            return 2;
        }
        int bad = 0;
        if (o->flag)
            *o->flag = true;
        else if (o->str)
            *o->str = value;
        else
            bad = own ? own(o->code, value, ctx) : 1;
        if (bad == 1) {
            fprintf(stderr, "%s: bad value for --%s: '%s'\n", prog, o->name, value ? value : "");
            usage(stderr);
        }
        if (bad)
            return 2;
    }
    if (operands == CLI_COMMAND && i >= argc) {
        fprintf(stderr, "%s: no command given\n", prog);
        usage(stderr);
        return 2;
    }
    if (first)
        *first = i;
    return -1;
}

void bench_print_peers(FILE *f)
{
    const bench_peer_t *p;
    size_t np = bench_peers(&p);
    fprintf(f, "\npeers in this build (baton bench only):\n");
    for (size_t i = 0; i < np; i++)
        fprintf(f, "  %-18s %s\n", p[i].name, p[i].summary);
    if (np == 0)
        fprintf(f, "  none (install libck-dev, libabsl-dev, libtbb-dev and rebuild)\n");
}
