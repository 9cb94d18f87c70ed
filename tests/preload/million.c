/* million.c - 1 000 000 mutexes initialised, each locked and unlocked once,
 * then destroyed: the memory they cost stays within a stated bound.
 *
 * Bound: RSS growth <= N * (40 + bytes_per_lock) * 1.25 + 16 MiB, where 40 is
 * the pthread_mutex_t itself (the program's array) and bytes_per_lock is the
 * side state the interposer reports (0 for glibc).  Under the interposer the
 * live count must reach N and fall back after the destroys.
 */
#include "ptest.h"

#define N 1000000

static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (f == NULL || fscanf(f, "%ld %ld", &size, &res) != 2)
        ptest_fatal(__LINE__, "cannot read /proc/self/statm");
    fclose(f);
    return res * sysconf(_SC_PAGESIZE);
}

/* Stop early, before taking the machine's memory, once the growth is over
 * the bound meant for all N mutexes (the array itself counts in full: the
 * program wrote all of it). */
static void early_check(long rss0, double bound, long done, const baton_preload_info_t *in, int interposed)
{
    double g = (double)(rss_bytes() - rss0);
    if (g > bound)
        ptest_fatal(
            __LINE__,
            "in phase %s, RSS grew by %.1f MiB after %ld of %d mutexes (%.0f bytes per mutex beyond the "
            "40-byte object so far), over the bound of %.1f MiB for all of them; bytes_per_lock reported: "
            "%zu (%s)",
            ptest_phase, g / 1048576.0, done, N, (g - 40.0 * N) / (double)done, bound / 1048576.0,
            in->bytes_per_lock, interposed ? (in->stock ? "stock" : in->spec) : "no interposer");
}

int main(void)
{
    ptest_begin("million", 120);
    ptest_info_fn info = ptest_interposer();
    baton_preload_info_t in0 = {0}, in1 = {0}, in2 = {0};
    if (info)
        REQUIRE(info(BATON_PRELOAD_MUTEX, &in0), 0);
    long rss0 = rss_bytes();
    if (info)
        REQUIRE(info(BATON_PRELOAD_MUTEX, &in1), 0);
    double per = in1.stock ? 0.0 : (double)in1.bytes_per_lock;
    double bound = (double)N * (40.0 + per) * 1.25 + 16.0 * 1024 * 1024;
    ptest_phase = "init";
    pthread_mutex_t *m = calloc(N, sizeof *m);
    if (m == NULL)
        ptest_fatal(__LINE__, "calloc failed");
    for (long i = 0; i < N; i++) {
        int rc = pthread_mutex_init(&m[i], NULL);
        if (rc != 0)
            ptest_fatal(__LINE__, "pthread_mutex_init of mutex %ld returned %s", i, ptest_errname(rc));
        if ((i & 16383) == 16383)
            early_check(rss0, bound, i + 1, &in1, info != NULL);
    }
    ptest_phase = "lock/unlock";
    for (long i = 0; i < N; i++) {
        int rc = pthread_mutex_lock(&m[i]);
        if (rc == 0)
            rc = pthread_mutex_unlock(&m[i]);
        if (rc != 0)
            ptest_fatal(__LINE__, "mutex %ld: lock/unlock returned %s", i, ptest_errname(rc));
        if ((i & 16383) == 16383)
            early_check(rss0, bound, i + 1, &in1, info != NULL);
    }
    long rss1 = rss_bytes();
    if (info)
        REQUIRE(info(BATON_PRELOAD_MUTEX, &in1), 0);
    ptest_phase = "destroy";
    for (long i = 0; i < N; i++) {
        int rc = pthread_mutex_destroy(&m[i]);
        if (rc != 0)
            ptest_fatal(__LINE__, "pthread_mutex_destroy of mutex %ld returned %s", i, ptest_errname(rc));
    }
    if (info)
        REQUIRE(info(BATON_PRELOAD_MUTEX, &in2), 0);
    long rss2 = rss_bytes();
    free(m);

    double growth = (double)(rss1 - rss0);
    const char *quiet = getenv("PTEST_QUIET");
    if (quiet == NULL || quiet[0] == '\0')
        printf(
            "million: %d mutexes: RSS %.1f MiB -> %.1f MiB (growth %.1f MiB, %.1f bytes per mutex), "
            "bound %.1f MiB; after destroy %.1f MiB; interposer: %s, bytes_per_lock %zu, live %llu -> %llu -> %llu, "
            "reserved %.1f MiB\n",
            N, rss0 / 1048576.0, rss1 / 1048576.0, growth / 1048576.0, growth / N, bound / 1048576.0,
            rss2 / 1048576.0, info ? (in1.stock ? "stock" : in1.spec) : "absent", in1.bytes_per_lock,
            (unsigned long long)in0.live, (unsigned long long)in1.live, (unsigned long long)in2.live,
            in1.reserved_bytes / 1048576.0);
    CHECK(growth <= bound, "RSS grew by %.1f MiB for %d mutexes, over the bound of %.1f MiB",
          growth / 1048576.0, N, bound / 1048576.0);
    if (info && !in1.stock) {
        CHECK(in1.live >= in0.live + N,
              "live mutex states %llu with %d mutexes initialised (expected >= %llu)",
              (unsigned long long)in1.live, N, (unsigned long long)(in0.live + N));
        CHECK(in2.live == in0.live, "live mutex states %llu after destroying all, %llu before",
              (unsigned long long)in2.live, (unsigned long long)in0.live);
        /* A sanity check of the number itself (qd's queue option goes up to
         * 64 KiB); the RSS bound above is what holds the report honest. */
        CHECK(in1.bytes_per_lock > 0 && in1.bytes_per_lock <= 256 * 1024,
              "bytes_per_lock %zu is not plausible", in1.bytes_per_lock);
    }
    return ptest_end("RSS growth %.1f MiB within %.1f MiB", growth / 1048576.0, bound / 1048576.0);
}
