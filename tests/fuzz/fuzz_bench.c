/* fuzz_bench.c - libFuzzer target: `baton bench` option parsing.
 *
 * The input's first byte picks a bench (micro, pq, rw, elide, barrier,
 * wake, server); the rest is its command line, one argument per line (a
 * NUL ends one too).  The bench's cmd_bench_* runs with bench_parse_only
 * set: bench_getopt() parses the shared options and passes the bench's own
 * to its callback, expands --locks, and returns before any benchmark runs.
 * The result must be 0 (parsed, or --help) or 2 (refused).
 */
#include "bench.h" /* bench_parse_only; the benches (bench_cli.h) */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
    const char *name;
    int (*cmd)(int, char **);
} benches[] = {
    {"micro", cmd_bench_micro},   {"pq", cmd_bench_pq},           {"rw", cmd_bench_rw},
    {"elide", cmd_bench_elide},   {"barrier", cmd_bench_barrier}, {"wake", cmd_bench_wake},
    {"server", cmd_bench_server},
};

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t which = data[0] % (sizeof benches / sizeof benches[0]);
    /* Each argument in its own heap block, so that AddressSanitizer sees a
     * read past one, or a pointer kept into it after the call. */
    char *args[MAX_ARGS + 2];
    int argc = 0;
    args[argc++] = strdup(benches[which].name);
    const uint8_t *p = data + 1, *end = data + size;
    while (p < end && argc <= MAX_ARGS) {
        const uint8_t *q = p;
        while (q < end && *q != '\n' && *q != '\0')
            q++;
        char *a = malloc((size_t)(q - p) + 1);
        memcpy(a, p, (size_t)(q - p));
        a[q - p] = '\0';
        args[argc++] = a;
        p = q + 1;
    }
    args[argc] = NULL;
    bench_parse_only = true;
    int rc = benches[which].cmd(argc, args);
    if (rc != 0 && rc != 2)
        __builtin_trap();
    for (int i = 0; i < argc; i++)
        free(args[i]);
    return 0;
}
