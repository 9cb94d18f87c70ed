/* A critical section rewritten as a function plus a context (the
 * transformation of the Remote Core Locking paper's Figure 3), run on a
 * spin lock, a queue-delegation lock and a remote-core lock by changing
 * only the spec string.
 *
 *   cc -O2 main.c $(pkg-config --cflags --libs baton) && ./a.out mcs qd rcl
 *
 * The original code was
 *
 *   int func(int p1, int p2) {
 *       int v1 = p2 * 2, r1, r2;
 *       LOCK();
 *       shared.total += p1;          // the critical section reads p1 and v1,
 *       shared.calls++;              // writes r1
 *       r1 = shared.total + v1;
 *       UNLOCK();
 *       r2 = p2 + 1;
 *       return r1 + r2;
 *   }
 *
 * Below, the variables the critical section reads and writes move into a
 * context struct, the section into a function of that struct, and LOCK ...
 * UNLOCK into one call.  Where the section returns nothing the caller needs,
 * baton_delegate() ships it and goes on at once.
 */
#include <baton/baton.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
    long total;
    long calls;
} shared; /* protected by `lock` */

static baton_lock_t *lock;

/* The context: the section's inputs and outputs. */
typedef struct func_cs_ctx {
    int p1;  /* input: a parameter of func */
    int v1;  /* input: a local of func */
    long r1; /* output */
} func_cs_ctx_t;

/* The section itself, on the context. */
static void func_cs(void *arg)
{
    func_cs_ctx_t *ctx = arg;
    shared.total += ctx->p1;
    shared.calls++;
    ctx->r1 = shared.total + ctx->v1;
}

static long func(int p1, int p2)
{
    func_cs_ctx_t ctx = {.p1 = p1, .v1 = p2 * 2};
    if (baton_execute(lock, func_cs, &ctx) != 0) { /* LOCK(); section; UNLOCK(); */
        fprintf(stderr, "execute: %s\n", baton_last_error());
        exit(1);
    }
    long r2 = p2 + 1;
    return ctx.r1 + r2;
}

/* A section whose result nobody waits for: delegated, detached. */
static void count_cs(void *arg) { shared.calls += *(const int *)arg; }

enum { THREADS = 4, CALLS = 20000 };

static void *worker(void *arg)
{
    long sum = 0;
    for (int i = 0; i < CALLS; i++) {
        sum += func(1, i & 7);
        int zero = 0;
        baton_delegate(lock, count_cs, &zero, sizeof zero); /* copies the argument */
    }
    *(long *)arg = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    const char *defaults[] = {NULL, "mcs", "qd", "rcl"};
    if (argc < 2) {
        argc = 4;
        argv = (char **)defaults;
    }
    int failed = 0;
    for (int a = 1; a < argc; a++) {
        lock = baton_lock_new(argv[a]); /* the only line that names the algorithm */
        if (!lock) {
            fprintf(stderr, "%s: %s\n", argv[a], baton_last_error());
            return 2;
        }
        shared.total = shared.calls = 0;
        pthread_t t[THREADS];
        long sums[THREADS];
        for (int i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, worker, &sums[i]);
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        baton_lock_free(lock); /* runs any delegated section still queued */
        int ok = shared.total == (long)THREADS * CALLS && shared.calls == (long)THREADS * CALLS;
        printf("%-10s total=%ld calls=%ld %s\n", argv[a], shared.total, shared.calls, ok ? "ok" : "WRONG");
        failed += !ok;
    }
    return failed ? 1 : 0;
}
