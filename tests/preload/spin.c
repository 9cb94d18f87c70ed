/* spin.c - pthread_spin_*: trylock EBUSY (held by another thread or by the
 * caller), mutual exclusion under stress with lock and trylock, several
 * spinlocks at once, init/destroy cycles in the same memory.
 */
#include "ptest.h"

#define THREADS 4
#define ITERS 20000

typedef struct sp {
    pthread_spinlock_t s;
    long counter; /* guarded by s */
    _Atomic int inside, overlaps;
} sp_t;

static void *trylock_rc(void *arg)
{
    int rc = pthread_spin_trylock(arg);
    if (rc == 0)
        pthread_spin_unlock(arg);
    return (void *)(intptr_t)rc;
}

static _Atomic int errors;

static void *worker(void *arg)
{
    sp_t *s = arg;
    for (int i = 0; i < ITERS; i++) {
        sp_t *x = &s[i % 2];
        int rc = 0;
        if (i % 3 == 0) {
            while ((rc = pthread_spin_trylock(&x->s)) == EBUSY)
                sched_yield();
        } else {
            rc = pthread_spin_lock(&x->s);
        }
        if (rc != 0) {
            baton_fetch_add(&errors, 1, memory_order_relaxed); /* a count only */
            continue;
        }
        /* Relaxed: detection only; the lock orders the sections. */
        if (baton_fetch_add(&x->inside, 1, memory_order_relaxed) != 0)
            baton_fetch_add(&x->overlaps, 1, memory_order_relaxed);
        x->counter++;
        baton_fetch_sub(&x->inside, 1, memory_order_relaxed); /* as above */
        if (pthread_spin_unlock(&x->s) != 0)
            baton_fetch_add(&errors, 1, memory_order_relaxed); /* a count only */
    }
    return NULL;
}

int main(void)
{
    ptest_begin("spin", 60);
    ptest_phase = "trylock";
    pthread_spinlock_t s;
    for (int round = 0; round < 3; round++) {
        REQUIRE(pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE), 0);
        EXPECT(pthread_spin_trylock(&s), 0);
        EXPECT(pthread_spin_trylock(&s), EBUSY); /* held by the caller */
        EXPECT(ptest_on_other_thread(trylock_rc, (void *)&s), EBUSY);
        EXPECT(pthread_spin_unlock(&s), 0);
        EXPECT(ptest_on_other_thread(trylock_rc, (void *)&s), 0);
        EXPECT(pthread_spin_lock(&s), 0);
        EXPECT(ptest_on_other_thread(trylock_rc, (void *)&s), EBUSY);
        EXPECT(pthread_spin_unlock(&s), 0);
        EXPECT(pthread_spin_destroy(&s), 0);
    }

    ptest_phase = "exclusion stress";
    sp_t two[2];
    memset(two, 0, sizeof two);
    REQUIRE(pthread_spin_init(&two[0].s, PTHREAD_PROCESS_PRIVATE), 0);
    REQUIRE(pthread_spin_init(&two[1].s, PTHREAD_PROCESS_PRIVATE), 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        t[i] = ptest_spawn(worker, two);
    for (int i = 0; i < THREADS; i++)
        ptest_join(t[i]);
    for (int k = 0; k < 2; k++) {
        /* Relaxed: after the joins. */
        int ov = baton_load(&two[k].overlaps, memory_order_relaxed);
        CHECK(ov == 0 && two[k].counter == (long)THREADS * ITERS / 2,
              "spinlock %d: counter %ld (expected %ld), %d overlap(s)", k, two[k].counter,
              (long)THREADS * ITERS / 2, ov);
        EXPECT(pthread_spin_destroy(&two[k].s), 0);
    }
    CHECK(baton_load(&errors, memory_order_relaxed) == 0, "%d failed call(s)",
          baton_load(&errors, memory_order_relaxed)); /* relaxed: after the joins */
    return ptest_end("trylock EBUSY, %d threads x %d on two spinlocks", THREADS, ITERS);
}
