/* kinds.c - lists the kinds the interposer can stand in with, from the
 * registry itself: one line per kind, "<name> <spec> <mutex> <rwlock>", where
 * <mutex> is 1 when the kind's caps include BATON_CAP_LOCK|BATON_CAP_TRYLOCK
 * (usable for BATON_LOCK and BATON_SPIN) and <rwlock> is 1 when they also
 * include BATON_CAP_RW (usable for BATON_RWLOCK).  "pthread" (glibc's own
 * implementation, forwarded) counts as both.  A wrapper kind is listed with
 * the default kind inside ("rw(default)").  Kinds that are neither are
 * not listed.  Used by run.sh and by ctest to make one test per kind.
 *
 * A kind whose default wait policy never parks (spin: tas, ticket, mcs, clh;
 * backoff: ttas) is listed with ":spinpark": with more threads than the 2
 * CPUs of the test machine, a FIFO kind that only spins hands the lock to
 * preempted threads one time slice at a time, and the suite's many-thread
 * tests take minutes (static_init under ticket:spin ~100 s, under
 * ticket:spinpark 0.1 s; fork under ttas:backoff ~25 s).  The suite is about
 * semantics; run.sh accepts any spec, e.g. "mcs:spin", to try a policy.
 */
#include <baton/baton.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    const baton_kind_info_t *k;
    size_t n = baton_kinds(&k);
    const unsigned need = BATON_CAP_LOCK | BATON_CAP_TRYLOCK;
    for (size_t i = 0; i < n; i++) {
        int stock = strcmp(k[i].name, "pthread") == 0;
        int mutex = stock || (k[i].caps & need) == need;
        int rw = stock || (mutex && (k[i].caps & BATON_CAP_RW) != 0);
        if (!mutex)
            continue;
        char spec[128];
        if (k[i].caps & BATON_CAP_WRAPPER)
            snprintf(spec, sizeof spec, "%s(default)", k[i].name);
        else if (strcmp(k[i].default_wait, "spin") == 0 || strcmp(k[i].default_wait, "backoff") == 0)
            snprintf(spec, sizeof spec, "%s:spinpark", k[i].name);
        else
            snprintf(spec, sizeof spec, "%s", k[i].name);
        /* The spec must make a lock, or the listing is wrong. */
        baton_lock_t *l = baton_lock_new(spec);
        if (l == NULL) {
            fprintf(stderr, "preload_kinds: '%s' does not make a lock: %s\n", spec, baton_last_error());
            return 1;
        }
        baton_lock_free(l);
        printf("%s %s %d %d\n", k[i].name, spec, mutex, rw);
    }
    return 0;
}
