/* omp_garbage.c - OpenMP locks whose memory holds garbage (never
 * initialised, or planted with a value that names another lock).
 *
 * The expectation is GNU OpenMP's (libgomp on Linux), which the control run
 * checks: an omp_lock_t is a futex word, 0 when free and anything else when
 * held.  omp_test_lock takes only 0; omp_set_lock waits while the word is
 * not 0 (until an omp_unset_lock, which writes 0 whatever was there);
 * omp_destroy_lock changes nothing.  A nest lock's first word is such a
 * lock too.  Under the interposer the same values can name another lock's
 * state: it must neither crash nor touch the other lock.
 */
#include "ptest.h"

#include <omp.h>

static void *test_lock_on_other(void *arg)
{
    int got = omp_test_lock(arg);
    if (got)
        omp_unset_lock(arg);
    return (void *)(intptr_t)got;
}

static void *test_nest_on_other(void *arg)
{
    int got = omp_test_nest_lock(arg);
    if (got)
        omp_unset_nest_lock(arg);
    return (void *)(intptr_t)got;
}

static uint32_t word_of(const void *lock)
{
    uint32_t v;
    memcpy(&v, lock, sizeof v);
    return v;
}

static void plant(void *lock, uint32_t v) { memcpy(lock, &v, sizeof v); }

typedef struct setter {
    omp_lock_t *l;
    ptest_flag_t started, done, release;
} setter_t;

static void *set_lock(void *arg)
{
    setter_t *s = arg;
    ptest_raise(&s->started, 1);
    omp_set_lock(s->l);
    ptest_raise(&s->done, 1);
    ptest_await(&s->release, 1);
    omp_unset_lock(s->l);
    return NULL;
}

int main(void)
{
    ptest_begin("omp_garbage", 60);
    omp_lock_t pad[3], A, G, C;
    for (int i = 0; i < 3; i++) {
        omp_init_lock(&pad[i]);
        omp_set_lock(&pad[i]);
        omp_unset_lock(&pad[i]);
    }
    omp_init_lock(&A);
    omp_set_lock(&A);
    omp_unset_lock(&A);
    const uint32_t vA = word_of(&A); /* libgomp: 0; interposed: A's handle */

    ptest_phase = "omp_test_lock of a word that names a live lock";
    plant(&G, vA);
    int want = vA == 0;
    int got = omp_test_lock(&G);
    CHECK(got == want, "omp_test_lock returned %d, expected %d", got, want);
    CHECK(ptest_on_other_thread(test_lock_on_other, &A) == 1, "the named lock was taken");
    if (got)
        omp_unset_lock(&G);

    ptest_phase = "omp_unset_lock of a word that names a held lock";
    omp_set_lock(&A);
    plant(&G, vA);
    omp_unset_lock(&G);
    CHECK(ptest_on_other_thread(test_lock_on_other, &A) == 0, "the named lock was released");
    CHECK(ptest_on_other_thread(test_lock_on_other, &G) == 1, "the unset garbage lock is not free");
    omp_unset_lock(&A);

    ptest_phase = "omp_destroy_lock of a word that names a live lock";
    plant(&G, vA);
    omp_destroy_lock(&G);
    omp_init_lock(&C);
    omp_set_lock(&C);
    omp_unset_lock(&C);
    omp_set_lock(&A);
    CHECK(ptest_on_other_thread(test_lock_on_other, &C) == 1, "a new lock shares the state of a live one");
    omp_unset_lock(&A);
    omp_destroy_lock(&C);

    static const uint32_t garbage[] = {0x5000u, 0x10000000u, 0x40000000u, 0x90000000u, 0xffffffffu};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        ptest_phase = "omp_test_lock and omp_unset_lock of a garbage word";
        plant(&G, garbage[i]);
        got = omp_test_lock(&G);
        CHECK(got == 0, "omp_test_lock of 0x%x returned %d, expected 0", garbage[i], got);
        omp_unset_lock(&G);
        got = omp_test_lock(&G);
        CHECK(got == 1, "omp_test_lock after omp_unset_lock of 0x%x returned %d, expected 1", garbage[i],
              got);
        omp_unset_lock(&G);
        omp_destroy_lock(&G);
    }

    ptest_phase = "omp_set_lock of a garbage word waits for an unset";
    plant(&G, 0x5000u);
    setter_t s = {.l = &G};
    pthread_t t = ptest_spawn(set_lock, &s);
    ptest_await(&s.started, 1);
    CHECK(!ptest_await_ms(&s.done, 1, 50), "omp_set_lock of a word that reads as held returned");
    omp_unset_lock(&G);
    if (!ptest_await_ms(&s.done, 1, 5000))
        ptest_fatal(__LINE__, "omp_set_lock still waits 5 s after the garbage word was unset");
    CHECK(ptest_on_other_thread(test_lock_on_other, &G) == 0, "the lock the waiter took reads as free");
    ptest_raise(&s.release, 1);
    ptest_join(t);
    CHECK(ptest_on_other_thread(test_lock_on_other, &G) == 1, "the lock the waiter released reads as held");
    omp_destroy_lock(&G);

    ptest_phase = "omp_test_nest_lock of a word that names a live lock";
    omp_nest_lock_t NA, NG;
    omp_init_nest_lock(&NA);
    omp_set_nest_lock(&NA);
    omp_unset_nest_lock(&NA);
    memcpy((void *)&NG, (const void *)&NA, sizeof NG);
    want = word_of(&NA) == 0;
    got = omp_test_nest_lock(&NG);
    CHECK(got == want, "omp_test_nest_lock returned %d, expected %d", got, want);
    CHECK(ptest_on_other_thread(test_nest_on_other, &NA) == 1, "the named nest lock was taken");
    if (got)
        omp_unset_nest_lock(&NG);
    omp_destroy_nest_lock(&NA);

    omp_destroy_lock(&A);
    for (int i = 0; i < 3; i++)
        omp_destroy_lock(&pad[i]);
    return ptest_end("omp locks holding garbage");
}
