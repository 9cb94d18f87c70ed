/* main.c - the `baton` command: info, kinds, bench, plot, run, profile, advise, torture. */
#include <baton/baton.h>
#include <baton/wait.h>

#include <stdio.h>
#include <string.h>

#include "bench_cli.h"
#include "commands.h"
#include "../base/join.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: baton <command> [options]\n"
        "\n"
        "commands:\n"
        "  info                    the machine: topology, features, measured costs\n"
        "  kinds                   every lock kind, its capabilities and wait policies, and the peers\n"
        "  bench micro             lock micro-benchmark (S shared, P private lines, L local work)\n"
        "  bench pq                priority queue (pairing heap): insert / extract_min, delegation\n"
        "  bench rw                RWBench: readers and writers on a shared 64-entry array\n"
        "  bench uncontended       cost of one uncontended lock+unlock, typed and dynamic API\n"
        "  bench elide             memcached-like cache under one lock: elide(<kind>) vs plain locks\n"
        "  bench barrier           barrier episodes (EPCC): N threads do W of work and meet, vs peers\n"
        "  bench wake              each wait policy's wake-up latency and CPU burnt, vs spin and park\n"
        "  bench server            lock servers (basic, chain, hier, hier+chain): throughput, latency, messages\n"
        "  bench matrix            the default lock against the locks people use, cell by cell: does it ever lose?\n"
        "  bench apps              real applications (memcached, Kyoto Cabinet, OpenMP) stock vs baton\n"
        "  plot                    figures and an HTML report from the benches' JSON (Python, matplotlib)\n"
        "  run                     run a program with baton locks in place of pthread's (LD_PRELOAD)\n"
        "  profile                 run a program and print the contention of each of its locks\n"
        "  advise                  time a program stock and under candidate lock kinds; recommend one\n"
        "  torture                 torture every lock kind under faults (locktorture-style); check everything\n"
        "  version                 print the version\n"
        "\n"
        "'baton <command> --help' describes a command's options.\n");
}

static int cmd_kinds(void)
{
    const baton_kind_info_t *k;
    size_t n = baton_kinds(&k);
    printf("%-12s %-9s %-50s %s\n", "kind", "default", "capabilities", "summary");
    for (size_t i = 0; i < n; i++) {
        char caps[128] = "";
        static const struct {
            unsigned bit;
            const char *name;
        } names[] = {{BATON_CAP_TRYLOCK, "trylock"},
                     {BATON_CAP_WAIT, "wait"},
                     {BATON_CAP_OWNER, "owner"},
                     {BATON_CAP_FIFO, "fifo"},
                     {BATON_CAP_NOCOLLAPSE, "nocollapse"},
                     {BATON_CAP_EXECUTE, "execute"},
                     {BATON_CAP_DELEGATE, "delegate"},
                     {BATON_CAP_DETACH, "detach"},
                     {BATON_CAP_RW, "rw"},
                     {BATON_CAP_SERVER, "server"},
                     {BATON_CAP_WRAPPER, "wrapper"},
                     {BATON_CAP_TIMED, "timed"}};
        for (size_t j = 0; j < sizeof names / sizeof names[0]; j++)
            if (k[i].caps & names[j].bit)
                baton_join(caps, sizeof caps, ",", "%s", names[j].name);
        printf("%-12s %-9s %-50s %s\n", k[i].name, k[i].default_wait, caps, k[i].summary);
        /* The options from the registry's data, one a line with its help;
         * those every kind takes (check) once, below. */
        const baton_option_info_t *opt;
        size_t no = baton_kind_options(&k[i], &opt);
        for (size_t j = 0; j < no; j++) {
            if (opt[j].flags & BATON_OPTION_COMMON)
                continue;
            char range[96];
            snprintf(range, sizeof range, "%s=<%llu..%llu, default %llu>%s", opt[j].name,
                     (unsigned long long)opt[j].min, (unsigned long long)opt[j].max,
                     (unsigned long long)opt[j].def, opt[j].flags & BATON_OPTION_SWITCH ? " (switch)" : "");
            printf("%-12s %-46s %s\n", "", range, opt[j].help);
        }
    }
    const baton_option_info_t *opt;
    size_t no = n ? baton_kind_options(&k[0], &opt) : 0;
    printf("\nevery kind takes:\n");
    for (size_t j = 0; j < no; j++)
        if (opt[j].flags & BATON_OPTION_COMMON)
            printf("  %s=<%llu..%llu>%s  %s\n", opt[j].name, (unsigned long long)opt[j].min,
                   (unsigned long long)opt[j].max, opt[j].flags & BATON_OPTION_SWITCH ? " (switch)" : "",
                   opt[j].help);
    printf("a switch written bare means 1: elide(ttas),sleep is elide(ttas),sleep=1\n");
    printf("\nwait policies: ");
    for (unsigned w = 0; w < BATON_WAIT_KINDS; w++)
        printf("%s, ", baton_wait_policy_name(w));
    printf("auto\nspec grammar: kind[:wait][,key=value...], e.g. relay:spinpark,slice_us=100;\n"
           "              wrappers: kind(<inner spec>)[,key=value...], e.g. rw(mcs:spinpark)\n");
    bench_print_peers(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "info"))
        return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "kinds"))
        return cmd_kinds();
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("baton %s\n", baton_version());
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "run"))
        return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "profile"))
        return cmd_profile(argc - 1, argv + 1);
    if (!strcmp(cmd, "advise"))
        return cmd_advise(argc - 1, argv + 1);
    if (!strcmp(cmd, "torture"))
        return cmd_torture(argc - 1, argv + 1);
    if (!strcmp(cmd, "plot"))
        return cmd_plot(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) {
        if (argc >= 3 && !strcmp(argv[2], "micro"))
            return cmd_bench_micro(argc - 2, argv + 2);
        if (argc >= 3 && !strcmp(argv[2], "pq"))
            return cmd_bench_pq(argc - 2, argv + 2);
        if (argc >= 3 && !strcmp(argv[2], "rw"))
            return cmd_bench_rw(argc - 2, argv + 2);
        if (argc >= 3 && !strcmp(argv[2], "uncontended"))
            return cmd_bench_uncontended(argc - 2, argv + 2);
        if (argc >= 3 && !strcmp(argv[2], "elide"))
            return cmd_bench_elide(argc - 2, argv + 2);
        if (argc >= 3 && !strcmp(argv[2], "barrier"))
            return cmd_bench_barrier(argc - 2, argv + 2);
        if (argc >= 3 && !strcmp(argv[2], "wake"))
            return cmd_bench_wake(argc - 2, argv + 2);
        if (argc >= 3 && !strcmp(argv[2], "server"))
            return cmd_bench_server(argc - 2, argv + 2);
        if (argc >= 3 && !strcmp(argv[2], "matrix"))
            return cmd_bench_matrix(argc - 2, argv + 2);
        if (argc >= 3 && !strcmp(argv[2], "apps"))
            return cmd_bench_apps(argc - 2, argv + 2);
        fprintf(
            stderr,
            "baton bench: unknown workload '%s'; valid: micro, pq, rw, uncontended, elide, barrier, wake, server, matrix, apps\n",
            argc >= 3 ? argv[2] : "");
        return 2;
    }
    fprintf(stderr, "baton: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
