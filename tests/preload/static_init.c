/* static_init.c - objects made by static initializers, first used by 64
 * threads at once: PTHREAD_MUTEX_INITIALIZER, the recursive, errorcheck and
 * adaptive _NP initializers, PTHREAD_RWLOCK_INITIALIZER and
 * PTHREAD_COND_INITIALIZER.  Each round starts fresh objects (genuine
 * static storage for the first round, the same bytes copied afterwards) and
 * releases the 64 threads together from a barrier.
 */
#include "ptest.h"

#define THREADS 64
#define ROUNDS 12
#define ITERS 20

static pthread_mutex_t s_normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t s_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_rwlock_t s_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t s_cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_c = PTHREAD_COND_INITIALIZER;

typedef struct objs {
    pthread_mutex_t *normal, *recursive, *errorcheck, *adaptive, *cm;
    pthread_rwlock_t *rw;
    pthread_cond_t *c;
    /* What they guard. */
    long n_normal, n_recursive, n_errorcheck, n_adaptive, n_rw;
    int arrived; /* guarded by cm */
} objs_t;

static objs_t cur;
static pthread_barrier_t start, done;
static _Atomic int errors, overlaps, readers, writers;

static void count_error(int line, const char *what, int rc)
{
    ptest_fail(line, "%s returned %d (%s)", what, rc, ptest_errname(rc));
    baton_fetch_add(&errors, 1, memory_order_relaxed); /* a count only */
}

#define CALL(call)                                                                                           \
    do {                                                                                                     \
        int rc_ = (call);                                                                                    \
        if (rc_ != 0)                                                                                        \
            count_error(__LINE__, #call, rc_);                                                               \
    } while (0)

static void *worker(void *arg)
{
    intptr_t id = (intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&start);
        /* Everyone touches every object first thing, in a different order. */
        for (int i = 0; i < ITERS; i++) {
            int which = (int)((id + i) % 5);
            switch (which) {
            case 0:
                CALL(pthread_mutex_lock(cur.normal));
                cur.n_normal++;
                CALL(pthread_mutex_unlock(cur.normal));
                break;
            case 1:
                CALL(pthread_mutex_lock(cur.recursive));
                CALL(pthread_mutex_lock(cur.recursive));
                cur.n_recursive++;
                CALL(pthread_mutex_unlock(cur.recursive));
                CALL(pthread_mutex_unlock(cur.recursive));
                break;
            case 2: {
                CALL(pthread_mutex_lock(cur.errorcheck));
                int rc = pthread_mutex_lock(cur.errorcheck);
                if (rc != EDEADLK)
                    count_error(__LINE__, "relock of the ERRORCHECK initializer (expected EDEADLK)", rc);
                cur.n_errorcheck++;
                CALL(pthread_mutex_unlock(cur.errorcheck));
                break;
            }
            case 3:
                if (pthread_mutex_trylock(cur.adaptive) != 0)
                    CALL(pthread_mutex_lock(cur.adaptive));
                cur.n_adaptive++;
                CALL(pthread_mutex_unlock(cur.adaptive));
                break;
            case 4:
                if ((id + i) % 3 == 0) {
                    CALL(pthread_rwlock_wrlock(cur.rw));
                    /* Relaxed: detection only; the lock orders the sections. */
                    if (baton_fetch_add(&writers, 1, memory_order_relaxed) != 0 ||
                        baton_load(&readers, memory_order_relaxed) != 0)
                        baton_fetch_add(&overlaps, 1, memory_order_relaxed);
                    cur.n_rw++;
                    baton_fetch_sub(&writers, 1, memory_order_relaxed); /* as above */
                } else {
                    CALL(pthread_rwlock_rdlock(cur.rw));
                    baton_fetch_add(&readers, 1, memory_order_relaxed); /* as above */
                    if (baton_load(&writers, memory_order_relaxed) != 0)
                        baton_fetch_add(&overlaps, 1, memory_order_relaxed);
                    baton_fetch_sub(&readers, 1, memory_order_relaxed); /* as above */
                }
                CALL(pthread_rwlock_unlock(cur.rw));
                break;
            }
        }
        /* The condition variable's first use: wait until all have arrived. */
        CALL(pthread_mutex_lock(cur.cm));
        if (++cur.arrived == THREADS)
            CALL(pthread_cond_broadcast(cur.c));
        else
            CALL(pthread_cond_signal(cur.c)); /* harmless: the waiters re-check */
        while (cur.arrived < THREADS)
            CALL(pthread_cond_wait(cur.c, cur.cm));
        CALL(pthread_mutex_unlock(cur.cm));
        pthread_barrier_wait(&done);
    }
    return NULL;
}

int main(void)
{
    ptest_begin("static_init", 120);
    REQUIRE(pthread_barrier_init(&start, NULL, THREADS + 1), 0);
    REQUIRE(pthread_barrier_init(&done, NULL, THREADS + 1), 0);
    static const pthread_mutex_t i_normal = PTHREAD_MUTEX_INITIALIZER;
    static const pthread_mutex_t i_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    static const pthread_mutex_t i_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    static const pthread_mutex_t i_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
    static const pthread_rwlock_t i_rw = PTHREAD_RWLOCK_INITIALIZER;
    static const pthread_cond_t i_c = PTHREAD_COND_INITIALIZER;
    /* Fresh objects for rounds after the first (never destroyed: a static
     * object need not be). */
    static pthread_mutex_t f_normal[ROUNDS], f_recursive[ROUNDS], f_errorcheck[ROUNDS], f_adaptive[ROUNDS],
        f_cm[ROUNDS];
    static pthread_rwlock_t f_rw[ROUNDS];
    static pthread_cond_t f_c[ROUNDS];

    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++)
        t[i] = ptest_spawn(worker, (void *)i);
    for (int r = 0; r < ROUNDS; r++) {
        ptest_phase = r == 0 ? "round 0 (static storage)" : "later rounds (copied initializers)";
        if (r == 0) {
            cur = (objs_t){&s_normal, &s_recursive, &s_errorcheck, &s_adaptive, &s_cm, &s_rw, &s_c};
        } else {
            memcpy(&f_normal[r], &i_normal, sizeof i_normal);
            memcpy(&f_recursive[r], &i_recursive, sizeof i_recursive);
            memcpy(&f_errorcheck[r], &i_errorcheck, sizeof i_errorcheck);
            memcpy(&f_adaptive[r], &i_adaptive, sizeof i_adaptive);
            memcpy(&f_cm[r], &i_normal, sizeof i_normal);
            memcpy(&f_rw[r], &i_rw, sizeof i_rw);
            memcpy(&f_c[r], &i_c, sizeof i_c);
            cur = (objs_t){&f_normal[r], &f_recursive[r], &f_errorcheck[r], &f_adaptive[r],
                           &f_cm[r],     &f_rw[r],        &f_c[r]};
        }
        pthread_barrier_wait(&start);
        pthread_barrier_wait(&done);
        long each = (long)THREADS * ITERS / 5;
        CHECK(cur.n_normal == each, "round %d: PTHREAD_MUTEX_INITIALIZER counter %ld, expected %ld", r,
              cur.n_normal, each);
        CHECK(cur.n_recursive == each, "round %d: recursive initializer counter %ld, expected %ld", r,
              cur.n_recursive, each);
        CHECK(cur.n_errorcheck == each, "round %d: errorcheck initializer counter %ld, expected %ld", r,
              cur.n_errorcheck, each);
        CHECK(cur.n_adaptive == each, "round %d: adaptive initializer counter %ld, expected %ld", r,
              cur.n_adaptive, each);
        CHECK(cur.arrived == THREADS, "round %d: %d threads passed the condition variable", r, cur.arrived);
    }
    for (int i = 0; i < THREADS; i++)
        ptest_join(t[i]);
    /* Relaxed: after the joins. */
    CHECK(baton_load(&overlaps, memory_order_relaxed) == 0, "%d rwlock exclusion violation(s)",
          baton_load(&overlaps, memory_order_relaxed));
    CHECK(baton_load(&errors, memory_order_relaxed) == 0, "%d failed call(s)",
          baton_load(&errors, memory_order_relaxed));
    return ptest_end("%d threads x %d rounds on fresh statically initialized objects", THREADS, ROUNDS);
}
