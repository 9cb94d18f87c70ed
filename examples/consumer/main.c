/* A program that uses baton as an installed library. */
#include <baton/baton.h>

#include <pthread.h>
#include <stdio.h>

static long counter;

static void add(void *ctx) { counter += *(const long *)ctx; }

static void *worker(void *arg)
{
    baton_lock_t *l = arg;
    for (long i = 0; i < 100000; i++) {
        long one = 1;
        baton_execute(l, add, &one);
    }
    return NULL;
}

int main(void)
{
    baton_lock_t *l = baton_lock_new("mcs:spinpark");
    if (!l) {
        fprintf(stderr, "%s\n", baton_last_error());
        return 1;
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, l);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    baton_lock_free(l);
    if (counter != 400000) {
        printf("consumer FAILED: %ld\n", counter);
        return 1;
    }
    printf("consumer ok (baton %s)\n", baton_version());
    return 0;
}
