/* barrier.c - the barrier API (baton/barrier.h): specs, places, the wait
 * policy, EBUSY.  The algorithms are in central.c, twolevel.c,
 * dissemination.c and tournament.c; what they share is in barrier.h.
 */
#include "barrier.h"
#include "../base/error.h"
#include "../base/spec.h"
#include "../wait/wait_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- the wait policy ------------------------------------------------------------ */

/* The yield phase of `auto` on an oversubscribed barrier, at least: how long
 * a waiter keeps handing its CPU to the threads that have yet to arrive
 * before it parks.  Measured on a 2-CPU machine, 16 threads, 1 us of work
 * per episode (central counter, median of 5 runs): parking at once 39 us
 * per episode, yielding for 5 us 27, 20 us 26, 50 us 23, 100 us 27, 200 us
 * 78 (waiters that keep yielding crowd out the threads they wait for), and
 * pthread_barrier 42.  With 250 us of work, yielding 50 us then parking
 * cost no more CPU than pthread_barrier (3964 against 3983 us per episode,
 * for 4000 us of work). */
#define YIELD_BUDGET_MIN_NS 50000u

/* CPUs this process may run on. */
static unsigned usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
}

/* Resolve `auto` (the policy and the yield phase).
 *
 * At most one thread per CPU: the wait layer's auto (monitor where the CPU
 * has it, else spinpark).  Arrivals then come from threads that are running,
 * so a waiter spins for about a futex round trip and parks only when the
 * episode is long.
 *
 * More threads than CPUs: park, after yielding for YIELD_BUDGET_MIN_NS (or
 * the calibrated spin budget, if longer).  Spinning is useless there: the
 * threads a waiter waits for need its CPU, and a spinner keeps it from them
 * for its whole budget (measured: 323 us per episode at 16 threads on 2
 * CPUs).  Parking at once is slow the other way: the CPUs go idle while the
 * last arrivals are still queued, and every episode pays futex wake-ups.
 * Yielding hands the CPU straight to a thread that has yet to arrive, keeps
 * the CPUs busy, and costs about one context switch per arrival; the budget
 * bounds what it burns when the wait is long (waiting on 250 us of work,
 * the waiter is parked for most of it).
 *
 * An explicit policy is used as written, with no yield phase unless
 * yield_us says so. */
static void choose_policy(baton_barrier_t *b, int asked, const baton_opts_t *o, size_t yield_index)
{
    bool oversubscribed = b->n > usable_cpus();
    uint64_t yield_us = o->value[yield_index];
    if (asked == BATON_WAIT_AUTO && oversubscribed)
        (void)baton_wait_init(&b->wait, BATON_WAIT_PARK);
    else
        b->wait = o->wait;
    /* An episode ends for everyone only once its last waiter runs: a
     * waiter that parked early makes every thread wait for its wake-up
     * (wait.h: BATON_WAIT_FULL_SPIN; bench barrier at N = 16 on 16 cores,
     * docs/results.md). */
    b->wait.flags |= BATON_WAIT_FULL_SPIN;
    if (yield_us == BAR_YIELD_AUTO) {
        uint64_t ns = 0;
        if (asked == BATON_WAIT_AUTO && oversubscribed) {
            /* Never waits for the calibration (it may take tens of ms
             * on a busy machine): until it is published, the minimum. */
            const baton_calibration_t *c = baton_calibration_start();
            double budget = c != NULL ? c->spin_budget_ns : 0.0;
            ns = budget > YIELD_BUDGET_MIN_NS ? (uint64_t)budget : YIELD_BUDGET_MIN_NS;
        }
        yield_us = (ns + 999u) / 1000u;
    }
    b->value[yield_index] = yield_us;
    b->yield_ns = yield_us * 1000u;
}

uint32_t bar_wait_slow(const baton_barrier_t *b, _Atomic uint32_t *word, uint32_t old)
{
    if (b->yield_ns != 0) {
        uint64_t start = baton_now_ns();
        do {
            sched_yield();
            /* Acquire: pairs with the release in bar_publish(). */
            uint32_t v = baton_load(word, memory_order_acquire) & BAR_EPISODE_MASK;
            if (v != old)
                return v;
        } while (baton_now_ns() - start < b->yield_ns);
    }
    return baton_wait_while_eq(&b->wait, word, old);
}

/* --- places ---------------------------------------------------------------------- */

static baton_barrier_t *owner_barrier(baton_slot_owner_t *o)
{
    return (baton_barrier_t *)(void *)((char *)o - offsetof(baton_barrier_t, owner));
}

/* slots.h: a thread's first wait.  The record is made now and a seat taken
 * when one is free (take_seat), so that a thread refused a seat can get one
 * later, once another thread has exited. */
static void *member_make(baton_slot_owner_t *o)
{
    baton_barrier_t *b = owner_barrier(o);
    bar_member_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    baton_syslock_lock(&b->mu);
    m->next = b->members;
    if (b->members)
        b->members->prev = m;
    b->members = m;
    baton_syslock_unlock(&b->mu);
    return m;
}

/* slots.h: the thread exited (called with the slot table's lock held, never
 * after baton_barrier_free() unregistered the owner).  Its seat is free for
 * the next thread; the seat's per-rank state goes with it, in step with the
 * other seats, because the thread was not inside a wait. */
static void member_release(baton_slot_owner_t *o, void *record)
{
    baton_barrier_t *b = owner_barrier(o);
    bar_member_t *m = record;
    if (m == NULL)
        return;
    baton_syslock_lock(&b->mu);
    if (m->seat) {
        m->seat->taken = 0;
        b->taken--;
    }
    if (m->prev)
        m->prev->next = m->next;
    else
        b->members = m->next;
    if (m->next)
        m->next->prev = m->prev;
    baton_syslock_unlock(&b->mu);
    free(m);
}

static bar_seat_t *free_seat_in(baton_barrier_t *b, uint32_t first, uint32_t end)
{
    for (uint32_t r = first; r < end; r++)
        if (!b->seats[r].taken)
            return &b->seats[r];
    return NULL;
}

/* Give m a seat: one in the group of the CPU we run on if it has one free,
 * else the lowest free rank. */
__attribute__((noinline, cold)) static int take_seat(baton_barrier_t *b, bar_member_t *m)
{
    if (m == NULL)
        return baton_fail(ENOMEM, "barrier '%s': no memory for the calling thread's record", b->spec);
    int cpu = b->cpu_group != NULL ? sched_getcpu() : -1;
    baton_syslock_lock(&b->mu);
    bar_seat_t *s = NULL;
    if (cpu >= 0 && cpu < b->ncpus && b->cpu_group[cpu] < b->ngroups) {
        unsigned g = b->cpu_group[cpu];
        s = free_seat_in(b, b->group_first[g], b->group_first[g + 1]);
    }
    if (s == NULL)
        s = free_seat_in(b, 0, b->n);
    if (s != NULL) {
        s->taken = 1;
        b->taken++;
        m->seat = s;
    }
    baton_syslock_unlock(&b->mu);
    if (s == NULL)
        return baton_fail(EINVAL,
                          "barrier '%s' has %u places and %u live threads hold them: a thread keeps "
                          "its place from its first wait until it exits, so at most %u distinct "
                          "threads may use the barrier at a time",
                          b->spec, b->n, b->n, b->n);
    return 0;
}

/* --- the API --------------------------------------------------------------------- */

int baton_barrier_wait(baton_barrier_t *b)
{
    bar_member_t *m = baton_slot_get(&b->owner);
    if (BATON_UNLIKELY(m == NULL || m->seat == NULL)) {
        int rc = take_seat(b, m);
        if (rc != 0)
            return rc;
    }
    bar_seat_t *s = m->seat;
    /* Relaxed: only baton_barrier_free() reads it, and a free that races
     * with a thread entering is the program's error; the kind's first
     * release (its arrival) orders it before anything another thread sees. */
    baton_store(&s->inside, 1u, memory_order_relaxed);
    int rc = b->kind->wait(b, s);
    /* Release: our last access to the barrier happens before a free that
     * sees 0 (pairs with the acquire in baton_barrier_free()). */
    baton_store(&s->inside, 0u, memory_order_release);
    return rc;
}

static int set_groups_one(baton_barrier_t *b)
{
    b->ngroups = 1;
    b->group_first = malloc(2 * sizeof *b->group_first);
    if (b->group_first == NULL)
        return ENOMEM;
    b->group_first[0] = 0;
    b->group_first[1] = b->n;
    return 0;
}

static void destroy(baton_barrier_t *b)
{
    if (b->state != NULL && b->kind->destroy)
        b->kind->destroy(b);
    for (bar_member_t *m = b->members, *next; m != NULL; m = next) {
        next = m->next;
        free(m);
    }
    free(b->state);
    free(b->seats);
    free(b->group_first);
    free(b->cpu_group);
    free(b);
}

static void *zalloc_lines(size_t size)
{
    size_t rounded = (size + BATON_CACHELINE - 1) / BATON_CACHELINE * BATON_CACHELINE;
    void *p = aligned_alloc(BATON_CACHELINE, rounded ? rounded : BATON_CACHELINE);
    if (p)
        memset(p, 0, rounded ? rounded : BATON_CACHELINE);
    return p;
}

/* The canonical spec: kind, resolved policy, every option. */
static void canonical(baton_barrier_t *b, const baton_option_desc_t *opts, size_t nopts)
{
    int w = snprintf(b->spec, sizeof b->spec, "%s:%s", b->kind->name, baton_wait_name(b->wait.kind));
    size_t used = w > 0 ? (size_t)w : 0;
    for (size_t j = 0; j < nopts && used < sizeof b->spec; j++) {
        w = snprintf(b->spec + used, sizeof b->spec - used, ",%s=%llu", opts[j].name,
                     (unsigned long long)b->value[j]);
        used += w > 0 ? (size_t)w : 0;
    }
}

baton_barrier_t *baton_barrier_new(const char *spec, unsigned n)
{
    if (spec == NULL)
        spec = "";
    int err;
    if (n == 0) {
        err = baton_fail(EINVAL, "a barrier needs at least one thread (n = 0 for '%s')", spec);
        goto fail;
    }
    size_t klen = strcspn(spec, ":,");
    const bar_kind_t *k = bar_registry_find(spec, klen);
    if (k == NULL) {
        err = baton_fail(EINVAL, "unknown barrier kind '%.*s'; valid kinds: %s", (int)klen, spec,
                         bar_registry_names());
        goto fail;
    }
    const baton_option_desc_t *opts;
    size_t nopts = bar_options(k, &opts);
    baton_spec_tail_t tail = {
        .what = "barrier",
        .name = k->name,
        .takes_wait = true,
        .waits = k->waits,
        .default_wait = k->default_wait,
        .options = opts,
        .noptions = nopts,
        .check = false,
    };
    baton_opts_t o;
    memset(&o, 0, sizeof o);
    int asked;
    err = baton_spec_parse_tail(&tail, spec, spec + klen, &o, &asked);
    if (err != 0)
        goto fail;

    baton_barrier_t *b = aligned_alloc(BATON_CACHELINE, sizeof *b);
    if (b == NULL) {
        err = baton_fail(ENOMEM, "no memory for barrier '%s'", spec);
        goto fail;
    }
    memset(b, 0, sizeof *b);
    b->kind = k;
    b->n = n;
    memcpy(b->value, o.value, sizeof b->value);
    choose_policy(b, asked, &o, nopts - 1); /* yield_us is the last option */
    canonical(b, opts, nopts);
    b->state = zalloc_lines(k->size);
    b->seats = zalloc_lines((size_t)n * sizeof *b->seats);
    if (b->state == NULL || b->seats == NULL || set_groups_one(b) != 0) {
        destroy(b);
        err = baton_fail(ENOMEM, "no memory for barrier '%s' of %u threads", spec, n);
        goto fail;
    }
    for (unsigned r = 0; r < n; r++)
        b->seats[r].rank = r;
    err = k->init(b);
    if (err != 0) {
        destroy(b);
        goto fail;
    }
    canonical(b, opts, nopts); /* the kind may have resolved options (twolevel's groups) */
    b->owner.make = member_make;
    b->owner.release = member_release;
    if (baton_slot_owner_register(&b->owner) != 0) {
        destroy(b);
        err = baton_fail(ENOMEM, "no memory to register barrier '%s'", spec);
        goto fail;
    }
    return b;
fail:
    errno = err;
    return NULL;
}

int baton_barrier_free(baton_barrier_t *b)
{
    if (b == NULL)
        return 0;
    for (unsigned r = 0; r < b->n; r++)
        /* Acquire: pairs with the release in baton_barrier_wait(), so that a
         * thread that has left is done with the barrier before we free it. */
        if (baton_load(&b->seats[r].inside, memory_order_acquire) != 0)
            return baton_fail(EBUSY,
                              "barrier '%s': a thread is still inside baton_barrier_wait "
                              "(rank %u); nothing was freed",
                              b->spec, r);
    /* No release callback runs for this barrier once this returns; records
     * of threads still alive are freed below (their slot entries die with
     * the owner's serial). */
    baton_slot_owner_unregister(&b->owner);
    destroy(b);
    return 0;
}

const char *baton_barrier_spec(const baton_barrier_t *b) { return b->spec; }
