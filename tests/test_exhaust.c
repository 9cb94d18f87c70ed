/* test_exhaust.c - baton_lock_new and baton_barrier_new out of memory.
 *
 * The program lowers RLIMIT_AS to what it maps already plus a little, fills
 * the heap until malloc fails, and then asks for a lock of every kind (and
 * the wrappers over a few) and a barrier of every kind: each must return
 * NULL with errno ENOMEM, never crash.  Then it gives the heap back a piece
 * at a time, from the smallest, and asks again after each piece, so that
 * kinds whose init allocates more than once also fail half-way (their
 * first allocation succeeds, a later one not): still NULL with ENOMEM (or a
 * lock that works), nothing else.  At the end, with the heap back, every
 * kind must work again.
 */
#include "check.h"
#include "limit_as.h"

#include <baton/barrier.h>
#include <baton/baton.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SPECS 64

static char specs[MAX_SPECS][64];
static int nspecs;

static void add_spec(const char *s)
{
    if (nspecs < MAX_SPECS)
        snprintf(specs[nspecs++], sizeof specs[0], "%s", s);
}

static const char *const barriers[] = {"central", "twolevel", "dissemination", "tournament"};

/* The heap, hoarded: a list of blocks, largest first. */
typedef struct block {
    struct block *next;
    size_t size;
} block_t;

static block_t *hoard;

static void fill_heap(void)
{
    for (size_t size = (size_t)1 << 20; size >= sizeof(block_t); size /= 2) {
        block_t *b;
        while ((b = malloc(size)) != NULL) {
            b->size = size;
            b->next = hoard;
            hoard = b;
        }
    }
}

static int successes, fails_seen;

/* Every spec once: NULL with ENOMEM, or a lock that locks. */
static void try_all(const char *when)
{
    for (int i = 0; i < nspecs; i++) {
        errno = 0;
        baton_lock_t *l = baton_lock_new(specs[i]);
        if (l == NULL) {
            fails_seen++;
            CHECK(errno == ENOMEM, "%s: baton_lock_new(\"%s\") returned NULL with errno %d (%s), not ENOMEM",
                  when, specs[i], errno, strerror(errno));
            continue;
        }
        successes++;
        if (baton_lock_kind(l)->caps & BATON_CAP_LOCK) {
            CHECK(baton_lock(l) == 0 && baton_unlock(l) == 0, "%s: a '%s' lock does not lock", when,
                  specs[i]);
        }
        baton_lock_free(l);
    }
    for (size_t i = 0; i < sizeof barriers / sizeof barriers[0]; i++) {
        errno = 0;
        baton_barrier_t *b = baton_barrier_new(barriers[i], 2);
        if (b == NULL) {
            fails_seen++;
            CHECK(errno == ENOMEM,
                  "%s: baton_barrier_new(\"%s\", 2) returned NULL with errno %d (%s), not ENOMEM", when,
                  barriers[i], errno, strerror(errno));
            continue;
        }
        successes++;
        CHECK(baton_barrier_free(b) == 0, "%s: baton_barrier_free(\"%s\") failed", when, barriers[i]);
    }
}

int main(void)
{
    static char outbuf[4096]; /* stdout needs no memory later */
    setvbuf(stdout, outbuf, _IOLBF, sizeof outbuf);
    /* Every kind the registry lists that a lock can be made of, and the
     * wrappers over two of them.  (Server kinds start a thread, and give
     * each client thread a mailbox at its first lock: before the limit, one
     * of each is made, locked and freed, so that the thread machinery has
     * what it keeps.) */
    const baton_kind_info_t *k;
    size_t n = baton_kinds(&k);
    for (size_t i = 0; i < n; i++)
        if (!(k[i].caps & BATON_CAP_WRAPPER))
            add_spec(k[i].name);
    add_spec("rw(mcs)");
    add_spec("rw(relay),readers=4");
    add_spec("elide(ttas)");
    add_spec("elide(rw(mcs:spinpark))");
    for (int i = 0; i < nspecs; i++) {
        baton_lock_t *l = baton_lock_new(specs[i]);
        CHECK(l != NULL, "baton_lock_new(\"%s\") failed before the limit: %s", specs[i], baton_last_error());
        if (l != NULL && (baton_lock_kind(l)->caps & BATON_CAP_LOCK))
            CHECK(baton_lock(l) == 0 && baton_unlock(l) == 0, "a '%s' lock does not lock", specs[i]);
        if (l != NULL)
            baton_lock_free(l);
    }
    struct rlimit lim;
    CHECK(limit_as_lower(512 * 1024, &lim) == 0, "cannot lower RLIMIT_AS");
    fill_heap();
    CHECK(hoard != NULL, "nothing could be allocated under the limit");

    fails_seen = 0;
    try_all("with the heap full");
    CHECK(fails_seen == nspecs + (int)(sizeof barriers / sizeof barriers[0]),
          "with the heap full, only %d of %d calls failed", fails_seen,
          nspecs + (int)(sizeof barriers / sizeof barriers[0]));

    /* Give the heap back a block at a time, smallest first. */
    int steps = 0;
    while (hoard != NULL) {
        block_t *b = hoard;
        hoard = b->next;
        free(b);
        if (++steps % 8 == 0 || hoard == NULL)
            try_all("as the heap comes back");
    }
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit back");
    fails_seen = 0;
    try_all("with the heap back");
    CHECK(fails_seen == 0, "with the heap back, %d calls still failed", fails_seen);
    printf(
        "exhaust: %d specs and %zu barrier kinds: every failure was ENOMEM; %d locks or barriers made on the "
        "way back (%d steps)\n",
        nspecs, sizeof barriers / sizeof barriers[0], successes, steps);
    if (failures)
        printf("exhaust: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
