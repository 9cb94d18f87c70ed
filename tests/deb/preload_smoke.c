/* preload_smoke.c - a plain pthread program for the package test
 * (tests/deb/check.sh): four threads add to one counter under one pthread
 * mutex, and the program says whether libbaton-preload.so is in the
 * process, and with which mutex spec (baton_preload_info, found with
 * dlsym: it is absent without the interposer).
 *
 *   preload_smoke          prints "stock" or "interposed: <spec>, <n> mutexes"
 *   preload_smoke KIND     and exits 2 unless interposed with a spec that
 *                          starts with KIND and has made the mutex its own
 *
 * Exit 1 when the count is wrong.  It needs only the headers of
 * libbaton-dev (baton/preload.h) and links nothing of baton's.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <baton/preload.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { THREADS = 4, ROUNDS = 50000 };

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static long counter; /* protected by mutex */

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&mutex);
        counter++;
        pthread_mutex_unlock(&mutex);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    if (counter != (long)THREADS * ROUNDS) {
        printf("preload_smoke: counter %ld, not %ld\n", counter, (long)THREADS * ROUNDS);
        return 1;
    }

    int (*info)(int, baton_preload_info_t *) =
        (int (*)(int, baton_preload_info_t *))dlsym(RTLD_DEFAULT, "baton_preload_info");
    baton_preload_info_t mi;
    if (info == NULL || info(BATON_PRELOAD_MUTEX, &mi) != 0) {
        printf("stock\n");
        return argc > 1 ? 2 : 0;
    }
    printf("interposed: %s, %llu mutexes\n", mi.spec, (unsigned long long)mi.created);
    if (argc > 1 && (strncmp(mi.spec, argv[1], strlen(argv[1])) != 0 || mi.created < 1))
        return 2;
    return 0;
}
