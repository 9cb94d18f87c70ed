/* test_bench_locks.c - the benches' --locks list (bench_expand_locks): a
 * word joins the spec before it when it is an option of that spec's kind,
 * key=value or one of its switches written bare (the registry's option
 * data says which), and starts a spec of its own otherwise. */
#include "check.h"
#include "bench.h"

#include <string.h>

static void expect(const char *arg, const char *const *want, int nwant)
{
    char specs[16][BENCH_SPEC_MAX], err[256] = "";
    int n = bench_expand_locks(arg, specs, 16, err, sizeof err);
    CHECK(n == nwant, "'%s': %d specs, expected %d (%s)", arg, n, nwant, err);
    for (int i = 0; i < n && i < nwant; i++)
        CHECK(strcmp(specs[i], want[i]) == 0, "'%s': spec %d is '%s', expected '%s'", arg, i, specs[i],
              want[i]);
}

int main(void)
{
    expect("elide(ttas),sleep,mcs,check,rw(mcs,readers=2),prefer_readers,relay,slice_us=9,tas",
           (const char *const[]){"elide(ttas),sleep", "mcs,check", "rw(mcs,readers=2),prefer_readers",
                                 "relay,slice_us=9", "tas"},
           5);
    /* Not a switch of the kind before: a spec of its own (which fails when
     * opened, naming the valid kinds). */
    expect("mcs,sleep", (const char *const[]){"mcs", "sleep"}, 2);
    expect("server:park,chain,hier,rcl,post", (const char *const[]){"server:park,chain,hier", "rcl,post"}, 2);
    /* A kind's name is never an option. */
    expect("ttas,mcs,ttas", (const char *const[]){"ttas", "mcs"}, 2);
    printf("%d failure%s\n", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
