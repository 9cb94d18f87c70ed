/* mutex_loop - nanoseconds per uncontended pthread_mutex_lock+unlock, for
 * comparing glibc with the interposer on the same binary:
 *
 *   mutex_loop [N] [--idle-thread]
 *
 * --idle-thread starts a second, sleeping thread first: glibc skips its
 * atomic instructions while a process has one thread, which real threaded
 * programs never see.  Verifies that the protected counter reached N.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *idle(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

int main(int argc, char **argv)
{
    long n = 50000000;
    int idle_thread = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--idle-thread") == 0)
            idle_thread = 1;
        else if ((n = atol(argv[i])) <= 0) {
            fprintf(stderr, "usage: mutex_loop [N] [--idle-thread]\n");
            return 2;
        }
    }
    pthread_t th;
    if (idle_thread && pthread_create(&th, NULL, idle, NULL) != 0) {
        fprintf(stderr, "mutex_loop: pthread_create failed\n");
        return 1;
    }
    double t0 = now();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    double t = now() - t0;
    if (counter != n) {
        fprintf(stderr, "mutex_loop: counter %ld, expected %ld\n", counter, n);
        return 1;
    }
    printf("threads=%d n=%ld ns_per_pair=%.2f\n", idle_thread ? 2 : 1, n, t * 1e9 / (double)n);
    return 0;
}
