/* test_typed.c - the typed (static) API of every algorithm: init with each
 * wait policy, trylock/EBUSY, destroy/EBUSY, timedlock (ETIMEDOUT on a lock
 * the caller holds, leaving no trace: the lock frees after), and a
 * two-thread counter. */
#include <baton/locks.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(cond, what)                                                                                    \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            failures++;                                                                                      \
            printf("FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, what);                                \
        }                                                                                                    \
    } while (0)

enum { ITERS = 20000 };

/* One generic driver over a table of typed calls per algorithm. */
struct typed {
    const char *name;
    size_t size;
    int (*init)(void *, const baton_wait_t *);
    int (*destroy)(void *);
    void (*lock)(void *);
    int (*trylock)(void *);
    int (*unlock)(void *);
    int (*timedlock)(void *, const baton_deadline_t *);
};

static int tas_init(void *l, const baton_wait_t *w) { return baton_tas_init(l, w); }
static int tas_destroy(void *l) { return baton_tas_destroy(l); }
static void tas_lock(void *l) { baton_tas_lock(l); }
static int tas_trylock(void *l) { return baton_tas_trylock(l); }
static int tas_unlock(void *l) { return baton_tas_unlock(l); }
static int tas_timedlock(void *l, const baton_deadline_t *d) { return baton_tas_timedlock(l, d); }
static int ttas_init(void *l, const baton_wait_t *w) { return baton_ttas_init(l, w); }
static int ttas_destroy(void *l) { return baton_ttas_destroy(l); }
static void ttas_lock(void *l) { baton_ttas_lock(l); }
static int ttas_trylock(void *l) { return baton_ttas_trylock(l); }
static int ttas_unlock(void *l) { return baton_ttas_unlock(l); }
static int ttas_timedlock(void *l, const baton_deadline_t *d) { return baton_ttas_timedlock(l, d); }
static int ticket_init(void *l, const baton_wait_t *w) { return baton_ticket_init(l, w); }
static int ticket_destroy(void *l) { return baton_ticket_destroy(l); }
static void ticket_lock(void *l) { baton_ticket_lock(l); }
static int ticket_trylock(void *l) { return baton_ticket_trylock(l); }
static int ticket_unlock(void *l) { return baton_ticket_unlock(l); }
static int ticket_timedlock(void *l, const baton_deadline_t *d) { return baton_ticket_timedlock(l, d); }
static int mcs_init(void *l, const baton_wait_t *w) { return baton_mcs_init(l, w); }
static int mcs_destroy(void *l) { return baton_mcs_destroy(l); }
static void mcs_lock(void *l) { baton_mcs_lock(l); }
static int mcs_trylock(void *l) { return baton_mcs_trylock(l); }
static int mcs_unlock(void *l) { return baton_mcs_unlock(l); }
static int mcs_timedlock(void *l, const baton_deadline_t *d) { return baton_mcs_timedlock(l, d); }
static int clh_init(void *l, const baton_wait_t *w) { return baton_clh_init(l, w); }
static int clh_destroy(void *l) { return baton_clh_destroy(l); }
static void clh_lock(void *l) { baton_clh_lock(l); }
static int clh_trylock(void *l) { return baton_clh_trylock(l); }
static int clh_unlock(void *l) { return baton_clh_unlock(l); }
static int clh_timedlock(void *l, const baton_deadline_t *d) { return baton_clh_timedlock(l, d); }
static int one_init(void *l, const baton_wait_t *w) { return baton_onespinner_init(l, w); }
static int one_destroy(void *l) { return baton_onespinner_destroy(l); }
static void one_lock(void *l) { baton_onespinner_lock(l); }
static int one_trylock(void *l) { return baton_onespinner_trylock(l); }
static int one_unlock(void *l) { return baton_onespinner_unlock(l); }
static int one_timedlock(void *l, const baton_deadline_t *d) { return baton_onespinner_timedlock(l, d); }
static int relay_init(void *l, const baton_wait_t *w) { return baton_relay_init(l, w, 0); }
static int relay_destroy(void *l) { return baton_relay_destroy(l); }
static void relay_lock(void *l) { baton_relay_lock(l); }
static int relay_trylock(void *l) { return baton_relay_trylock(l); }
static int relay_unlock(void *l) { return baton_relay_unlock(l); }
static int relay_timedlock(void *l, const baton_deadline_t *d) { return baton_relay_timedlock(l, d); }
static int runner_init(void *l, const baton_wait_t *w) { return baton_runner_init(l, w, 0); }
static int runner_destroy(void *l) { return baton_runner_destroy(l); }
static void runner_lock(void *l) { baton_runner_lock(l); }
static int runner_trylock(void *l) { return baton_runner_trylock(l); }
static int runner_unlock(void *l) { return baton_runner_unlock(l); }
static int runner_timedlock(void *l, const baton_deadline_t *d) { return baton_runner_timedlock(l, d); }

static const struct typed algos[] = {
    {"tas", sizeof(baton_tas_t), tas_init, tas_destroy, tas_lock, tas_trylock, tas_unlock, tas_timedlock},
    {"ttas", sizeof(baton_ttas_t), ttas_init, ttas_destroy, ttas_lock, ttas_trylock, ttas_unlock,
     ttas_timedlock},
    {"ticket", sizeof(baton_ticket_t), ticket_init, ticket_destroy, ticket_lock, ticket_trylock,
     ticket_unlock, ticket_timedlock},
    {"mcs", sizeof(baton_mcs_t), mcs_init, mcs_destroy, mcs_lock, mcs_trylock, mcs_unlock, mcs_timedlock},
    {"clh", sizeof(baton_clh_t), clh_init, clh_destroy, clh_lock, clh_trylock, clh_unlock, clh_timedlock},
    {"onespinner", sizeof(baton_onespinner_t), one_init, one_destroy, one_lock, one_trylock, one_unlock,
     one_timedlock},
    {"relay", sizeof(baton_relay_t), relay_init, relay_destroy, relay_lock, relay_trylock, relay_unlock,
     relay_timedlock},
    {"runner", sizeof(baton_runner_t), runner_init, runner_destroy, runner_lock, runner_trylock,
     runner_unlock, runner_timedlock},
};

/* An absolute deadline ns from now on CLOCK_MONOTONIC. */
static baton_deadline_t in_ns(long ns)
{
    baton_deadline_t d = {.clock = CLOCK_MONOTONIC};
    clock_gettime(CLOCK_MONOTONIC, &d.at);
    d.at.tv_nsec += ns;
    if (d.at.tv_nsec >= 1000000000L) {
        d.at.tv_nsec -= 1000000000L;
        d.at.tv_sec++;
    }
    return d;
}

struct run {
    const struct typed *t;
    void *lock;
    long counter;
    _Atomic int unlock_errors;
};

static void *counter_main(void *arg)
{
    struct run *r = arg;
    for (int i = 0; i < ITERS; i++) {
        r->t->lock(r->lock);
        r->counter++;
        if (r->t->unlock(r->lock) != 0)
            atomic_fetch_add(&r->unlock_errors, 1);
    }
    return NULL;
}

int main(void)
{
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
        const struct typed *t = &algos[a];
        for (int k = -1; k < BATON_WAIT_KINDS; k++) {
            baton_wait_t w;
            const baton_wait_t *wp = NULL; /* k == -1: the algorithm's default */
            if (k >= 0) {
                if (baton_wait_init(&w, (baton_wait_kind)k) == ENOTSUP)
                    continue;
                wp = &w;
            }
            _Alignas(BATON_CACHELINE) unsigned char mem[512];
            memset(mem, 0xcc, sizeof mem);
            void *l = mem;
            CHECK(t->init(l, wp) == 0, t->name);
            CHECK(t->trylock(l) == 0, t->name);
            CHECK(t->trylock(l) == EBUSY, t->name);
            CHECK(t->destroy(l) == EBUSY, t->name);
            /* Held by the caller: a timed lock times out (at once, or after
             * queueing behind its own hold) and leaves nothing behind. */
            baton_deadline_t d = in_ns(0);
            CHECK(t->timedlock(l, &d) == ETIMEDOUT, t->name);
            d = in_ns(1000000);
            CHECK(t->timedlock(l, &d) == ETIMEDOUT, t->name);
            CHECK(t->unlock(l) == 0, t->name);
            d = in_ns(1000000);
            CHECK(t->timedlock(l, &d) == 0, t->name);
            CHECK(t->unlock(l) == 0, t->name);
            CHECK(t->destroy(l) == 0, t->name); /* no trace */
            CHECK(t->init(l, wp) == 0, t->name);
            struct run r = {t, l, 0, 0};
            pthread_t th[2];
            for (int i = 0; i < 2; i++)
                pthread_create(&th[i], NULL, counter_main, &r);
            for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
            CHECK(r.counter == 2L * ITERS, t->name);
            CHECK(atomic_load(&r.unlock_errors) == 0, t->name);
            CHECK(t->destroy(l) == 0, t->name);
            printf("%-10s %-9s ok\n", t->name, k < 0 ? "default" : baton_wait_name((baton_wait_kind)k));
        }
    }
    printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
