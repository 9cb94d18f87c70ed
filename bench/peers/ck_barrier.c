/* ck_barrier.c - Concurrency Kit's barriers as peers: centralized,
 * dissemination, tournament and MCS.  All of them spin (ck_pr_stall) and
 * never sleep, so they collapse when threads outnumber CPUs: the bench's
 * time box cuts such cells short.
 *
 * Each keeps per-thread state (a sense, a round parity, a place in a tree),
 * which Concurrency Kit hands out with *_subscribe in the order threads
 * call it.  The bench names its threads by index, so create() subscribes n
 * states in index order and wait(b, i) uses state i; every state sits on a
 * line of its own, since its thread writes it every episode.  The
 * dissemination, tournament and MCS barriers live in libck (not inline in
 * the header), so this unit links it. */
#include <ck_barrier.h>
#include <stdlib.h>
#include <string.h>

#include "barrier_peers.h"
#include "peers_impl.h"

/* n per-thread states of `size` bytes, each starting a line of its own. */
static void *states_alloc(unsigned n, size_t size)
{
    size_t stride = (size + BENCH_PEER_ALIGN - 1) / BENCH_PEER_ALIGN * BENCH_PEER_ALIGN;
    void *p = aligned_alloc(BENCH_PEER_ALIGN, stride * n);
    if (p != NULL)
        memset(p, 0, stride * n);
    return p;
}

#define STATE(base, type, i)                                                                                 \
    ((type *)((char *)(base) +                                                                               \
              (size_t)(i) * ((sizeof(type) + BENCH_PEER_ALIGN - 1) / BENCH_PEER_ALIGN * BENCH_PEER_ALIGN)))

/* --- centralized: one counter and a global sense -------------------------- */

typedef struct {
    ck_barrier_centralized_t *barrier; /* on a line of its own */
    void *states;                      /* ck_barrier_centralized_state_t per index */
    unsigned n;
} ck_central_t;

void *bench_bpeer_ck_centralized_create(unsigned n)
{
    ck_central_t *c = bench_peer_alloc(sizeof *c);
    if (c == NULL)
        return NULL;
    c->n = n;
    c->barrier = bench_peer_alloc(sizeof *c->barrier);
    c->states = states_alloc(n, sizeof(ck_barrier_centralized_state_t));
    if (c->barrier == NULL || c->states == NULL) {
        bench_bpeer_ck_centralized_destroy(c);
        return NULL;
    }
    *c->barrier = (ck_barrier_centralized_t)CK_BARRIER_CENTRALIZED_INITIALIZER;
    for (unsigned i = 0; i < n; i++)
        *STATE(c->states, ck_barrier_centralized_state_t, i) =
            (ck_barrier_centralized_state_t)CK_BARRIER_CENTRALIZED_STATE_INITIALIZER;
    return c;
}

void bench_bpeer_ck_centralized_destroy(void *b)
{
    ck_central_t *c = b;
    if (c == NULL)
        return;
    free(c->barrier);
    free(c->states);
    free(c);
}

void bench_bpeer_ck_centralized_wait(void *b, unsigned index)
{
    ck_central_t *c = b;
    ck_barrier_centralized(c->barrier, STATE(c->states, ck_barrier_centralized_state_t, index), c->n);
}

/* --- dissemination: an array of n barriers, two flag sets per thread ------ */

typedef struct {
    ck_barrier_dissemination_t *barrier; /* n of them */
    ck_barrier_dissemination_flag_t **flags;
    void *states; /* ck_barrier_dissemination_state_t per index */
    unsigned n;
} ck_dissem_t;

void bench_bpeer_ck_dissemination_destroy(void *b)
{
    ck_dissem_t *d = b;
    if (d == NULL)
        return;
    for (unsigned i = 0; d->flags != NULL && i < d->n; i++)
        free(d->flags[i]);
    free(d->flags);
    free(d->barrier);
    free(d->states);
    free(d);
}

void *bench_bpeer_ck_dissemination_create(unsigned n)
{
    ck_dissem_t *d = bench_peer_alloc(sizeof *d);
    if (d == NULL)
        return NULL;
    memset(d, 0, sizeof *d);
    d->n = n;
    d->barrier = bench_peer_alloc(n * sizeof *d->barrier);
    d->flags = calloc(n, sizeof *d->flags);
    d->states = states_alloc(n, sizeof(ck_barrier_dissemination_state_t));
    if (d->barrier == NULL || d->flags == NULL || d->states == NULL) {
        bench_bpeer_ck_dissemination_destroy(d);
        return NULL;
    }
    /* _size() counts both flag sets. */
    unsigned size = ck_barrier_dissemination_size(n);
    for (unsigned i = 0; i < n; i++) {
        d->flags[i] = bench_peer_alloc(size * sizeof **d->flags);
        if (d->flags[i] == NULL) {
            bench_bpeer_ck_dissemination_destroy(d);
            return NULL;
        }
    }
    ck_barrier_dissemination_init(d->barrier, d->flags, n);
    for (unsigned i = 0; i < n; i++)
        ck_barrier_dissemination_subscribe(d->barrier, STATE(d->states, ck_barrier_dissemination_state_t, i));
    return d;
}

void bench_bpeer_ck_dissemination_wait(void *b, unsigned index)
{
    ck_dissem_t *d = b;
    ck_barrier_dissemination(d->barrier, STATE(d->states, ck_barrier_dissemination_state_t, index));
}

/* --- tournament: per thread, one round record per level -------------------- */

typedef struct {
    ck_barrier_tournament_t barrier;
    ck_barrier_tournament_round_t **rounds;
    void *states; /* ck_barrier_tournament_state_t per index */
    unsigned n;
} ck_tourn_t;

void bench_bpeer_ck_tournament_destroy(void *b)
{
    ck_tourn_t *t = b;
    if (t == NULL)
        return;
    for (unsigned i = 0; t->rounds != NULL && i < t->n; i++)
        free(t->rounds[i]);
    free(t->rounds);
    free(t->states);
    free(t);
}

void *bench_bpeer_ck_tournament_create(unsigned n)
{
    ck_tourn_t *t = bench_peer_alloc(sizeof *t);
    if (t == NULL)
        return NULL;
    memset(t, 0, sizeof *t);
    t->n = n;
    t->rounds = calloc(n, sizeof *t->rounds);
    t->states = states_alloc(n, sizeof(ck_barrier_tournament_state_t));
    if (t->rounds == NULL || t->states == NULL) {
        bench_bpeer_ck_tournament_destroy(t);
        return NULL;
    }
    unsigned size = ck_barrier_tournament_size(n);
    for (unsigned i = 0; i < n; i++) {
        t->rounds[i] = bench_peer_alloc(size * sizeof **t->rounds);
        if (t->rounds[i] == NULL) {
            bench_bpeer_ck_tournament_destroy(t);
            return NULL;
        }
        memset(t->rounds[i], 0, size * sizeof **t->rounds);
    }
    ck_barrier_tournament_init(&t->barrier, t->rounds, n);
    for (unsigned i = 0; i < n; i++)
        ck_barrier_tournament_subscribe(&t->barrier, STATE(t->states, ck_barrier_tournament_state_t, i));
    return t;
}

void bench_bpeer_ck_tournament_wait(void *b, unsigned index)
{
    ck_tourn_t *t = b;
    ck_barrier_tournament(&t->barrier, STATE(t->states, ck_barrier_tournament_state_t, index));
}

/* --- MCS: an array of n tree nodes ------------------------------------------ */

typedef struct {
    ck_barrier_mcs_t *barrier; /* n of them */
    void *states;              /* ck_barrier_mcs_state_t per index */
} ck_mcsb_t;

void bench_bpeer_ck_mcs_destroy(void *b)
{
    ck_mcsb_t *m = b;
    if (m == NULL)
        return;
    free(m->barrier);
    free(m->states);
    free(m);
}

void *bench_bpeer_ck_mcs_create(unsigned n)
{
    ck_mcsb_t *m = bench_peer_alloc(sizeof *m);
    if (m == NULL)
        return NULL;
    m->barrier = bench_peer_alloc(n * sizeof *m->barrier);
    m->states = states_alloc(n, sizeof(ck_barrier_mcs_state_t));
    if (m->barrier == NULL || m->states == NULL) {
        bench_bpeer_ck_mcs_destroy(m);
        return NULL;
    }
    ck_barrier_mcs_init(m->barrier, n);
    for (unsigned i = 0; i < n; i++)
        ck_barrier_mcs_subscribe(m->barrier, STATE(m->states, ck_barrier_mcs_state_t, i));
    return m;
}

void bench_bpeer_ck_mcs_wait(void *b, unsigned index)
{
    ck_mcsb_t *m = b;
    ck_barrier_mcs(m->barrier, STATE(m->states, ck_barrier_mcs_state_t, index));
}
