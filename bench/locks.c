/* locks.c - the locks under test: open and close a baton kind or a peer by
 * its spec, and expand --locks into specs (bench.h). */
#include "bench.h"
#include "machine.h"
#include "report.h"
#include "topo.h"
#include "../src/wait/wait_internal.h" /* baton_rdtsc, baton_tsc_per_ns, baton_now_ns */
#include "../src/base/join.h"

#include <baton/wait.h>

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- locks -------------------------------------------------------------------- */

static void peer_names(char *buf, size_t size)
{
    const bench_peer_t *peers;
    size_t n = bench_peers(&peers);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        baton_join(buf, size, ", ", "%s", peers[i].name);
    if (n == 0)
        snprintf(buf, size, "(none built: install libck-dev, libabsl-dev, libtbb-dev and rebuild)");
}

int bench_lock_open(const char *spec, bench_lock_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    snprintf(out->spec, sizeof out->spec, "%s", spec);
    if (strncmp(spec, "peer:", 5) == 0) {
        const bench_peer_t *peers;
        size_t n = bench_peers(&peers);
        for (size_t i = 0; i < n; i++) {
            if (strcmp(peers[i].name, spec) != 0)
                continue;
            out->peer = &peers[i];
            out->obj = peers[i].create();
            if (!out->obj) {
                snprintf(err, errlen, "%s: out of memory", spec);
                return ENOMEM;
            }
            out->lock = peers[i].lock;
            out->unlock = peers[i].unlock;
            out->rlock = peers[i].rlock;
            out->runlock = peers[i].runlock;
            out->execute = peers[i].execute;
            out->delegate = peers[i].delegate;
            out->caps = BATON_CAP_LOCK | (peers[i].rlock ? BATON_CAP_RW : 0u);
            if (peers[i].execute) {
                out->caps |= BATON_CAP_EXECUTE | (peers[i].delegate ? BATON_CAP_DELEGATE : 0u) |
                             (peers[i].delegate && peers[i].detached ? BATON_CAP_DETACH : 0u);
                out->delegates = true;
            }
            return 0;
        }
        char names[512];
        peer_names(names, sizeof names);
        snprintf(err, errlen, "unknown peer '%s'; peers in this build: %s", spec, names);
        return EINVAL;
    }
    out->baton = baton_lock_new(spec);
    if (!out->baton) {
        int e = errno;
        char names[512];
        peer_names(names, sizeof names);
        snprintf(err, errlen, "%s (peers: %s)", baton_last_error(), names);
        return e ? e : EINVAL;
    }
    snprintf(out->spec, sizeof out->spec, "%s", baton_lock_spec(out->baton));
    out->obj = out->baton;
    out->caps = baton_lock_kind(out->baton)->caps;
    /* No capability bit tells a combining kind (fc) from a mutex: both
     * offer lock, execute and delegate.  What they differ in is that a
     * delegation kind runs other threads' operations, and counts its help
     * sessions; a mutex keeps no statistics. */
    baton_stats_t st;
    out->delegates =
        (out->caps & (BATON_CAP_DETACH | BATON_CAP_SERVER)) || baton_lock_stats(out->baton, &st) == 0;
    return 0;
}

double bench_lock_ops_per_session(const bench_lock_t *l)
{
    baton_stats_t st;
    if (!l->baton || baton_lock_stats(l->baton, &st) != 0 || st.help_sessions == 0)
        return -1.0;
    return (double)st.helped_ops / (double)st.help_sessions;
}

void bench_lock_close(bench_lock_t *l)
{
    if (l->baton)
        baton_lock_free(l->baton);
    else if (l->peer && l->obj)
        l->peer->destroy(l->obj);
    memset(l, 0, sizeof *l);
}

int bench_add_spec(char specs[][BENCH_SPEC_MAX], int n, int max, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(specs[i], s) == 0)
            return n; /* no duplicates */
    if (n < max)
        snprintf(specs[n++], BENCH_SPEC_MAX, "%s", s);
    return n;
}

static bool monitor_available(void)
{
    const baton_cpu_features_t *f = baton_cpu_features();
    return f->waitpkg || f->monitorx;
}

/* A wrapper kind (rw(<kind>)) needs its inner kind named, so keywords
 * leave it out. */
static bool keyword_lists(const baton_kind_info_t *k) { return !(k->caps & BATON_CAP_WRAPPER); }

static int add_keyword(const char *kw, char specs[][BENCH_SPEC_MAX], int n, int max)
{
    const baton_kind_info_t *kinds;
    size_t nk = baton_kinds(&kinds);
    bool all = strcmp(kw, "all") == 0;
    if (all || strcmp(kw, "kinds") == 0) {
        for (size_t i = 0; i < nk; i++)
            if (keyword_lists(&kinds[i]))
                n = bench_add_spec(specs, n, max, kinds[i].name);
        if (all) {
            /* The spinpark variant of every kind whose default spins, so
             * one table shows what parking buys under oversubscription. */
            for (size_t i = 0; i < nk; i++) {
                const char *d = kinds[i].default_wait;
                if ((kinds[i].caps & BATON_CAP_WAIT) && keyword_lists(&kinds[i]) &&
                    (!strcmp(d, "spin") || !strcmp(d, "backoff") || !strcmp(d, "yield"))) {
                    char s[BENCH_SPEC_MAX];
                    snprintf(s, sizeof s, "%.80s:spinpark", kinds[i].name);
                    n = bench_add_spec(specs, n, max, s);
                }
            }
        }
    } else if (strcmp(kw, "allwaits") == 0) {
        for (size_t i = 0; i < nk; i++) {
            if (!keyword_lists(&kinds[i]))
                continue;
            if (!(kinds[i].caps & BATON_CAP_WAIT)) {
                n = bench_add_spec(specs, n, max, kinds[i].name);
                continue;
            }
            for (unsigned w = 0; w < BATON_WAIT_KINDS; w++) {
                if (!(kinds[i].waits & (1u << w)) || (w == BATON_WAIT_MONITOR && !monitor_available()))
                    continue;
                char s[BENCH_SPEC_MAX];
                snprintf(s, sizeof s, "%.60s:%.20s", kinds[i].name, baton_wait_name((baton_wait_kind)w));
                n = bench_add_spec(specs, n, max, s);
            }
        }
    }
    /* The RW peers are mutexes too (their write lock), but they are built
     * for readers: "peers" and "all" leave them to "rwpeers". */
    bool rw = strcmp(kw, "rwpeers") == 0;
    if (all || rw || strcmp(kw, "peers") == 0) {
        const bench_peer_t *peers;
        size_t np = bench_peers(&peers);
        for (size_t i = 0; i < np; i++)
            if ((peers[i].rlock != NULL) == rw)
                n = bench_add_spec(specs, n, max, peers[i].name);
    }
    return n;
}

/* Is `word` a switch (an option taking 0 or 1, written bare) of the kind
 * `spec` names?  Then "elide(ttas),sleep" is one spec, not two.  The kind
 * is the spec's leading name: the spec may be unfinished yet ("rw(mcs"
 * before "readers=2)" joins it), so it is not parsed whole; its options are
 * the registry's data (baton_kind_options). */
static bool is_switch_of(const char *spec, const char *word)
{
    const baton_kind_info_t *kinds;
    size_t nk = baton_kinds(&kinds), klen = strcspn(spec, ":,(");
    for (size_t i = 0; i < nk; i++) {
        if (strlen(kinds[i].name) != klen || strncmp(kinds[i].name, spec, klen) != 0)
            continue;
        const baton_option_info_t *opt;
        size_t no = baton_kind_options(&kinds[i], &opt);
        for (size_t j = 0; j < no; j++)
            if ((opt[j].flags & BATON_OPTION_SWITCH) && strcmp(opt[j].name, word) == 0)
                return true;
        return false;
    }
    return false;
}

int bench_split_specs(const char *arg, const bench_spec_list_t *how, char specs[][BENCH_SPEC_MAX], int max,
                      char *err, size_t errlen)
{
    int n = 0;
    char item[BENCH_SPEC_MAX];
    char pending[BENCH_SPEC_MAX] = "";
    const char *p = arg;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len >= sizeof item) {
            snprintf(err, errlen, "%s spec too long: '%.*s'", how->noun, (int)len, p);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (pending[0] && (strchr(item, '=') || (how->is_switch && how->is_switch(pending, item)))) {
            size_t used = strlen(pending);
            if (used + 1 + len >= sizeof pending) {
                snprintf(err, errlen, "%s spec too long: '%s,%s'", how->noun, pending, item);
                return -1;
            }
            pending[used] = ',';
            memcpy(pending + used + 1, item, len + 1);
        } else {
            if (pending[0])
                n = bench_add_spec(specs, n, max, pending);
            pending[0] = '\0';
            int k = how->keyword(item, specs, n, max);
            if (k >= 0)
                n = k;
            else if (item[0])
                snprintf(pending, sizeof pending, "%s", item);
        }
        p += len;
        if (*p != ',')
            break;
        p++;
    }
    if (pending[0])
        n = bench_add_spec(specs, n, max, pending);
    if (n == 0) {
        snprintf(err, errlen, "no %ss named in '%s'", how->noun, arg);
        return -1;
    }
    return n;
}

/* The lock list's keywords: their specs appended, or -1 for another word. */
static int lock_keyword(const char *item, char specs[][BENCH_SPEC_MAX], int n, int max)
{
    if (!strcmp(item, "all") || !strcmp(item, "kinds") || !strcmp(item, "peers") ||
        !strcmp(item, "rwpeers") || !strcmp(item, "allwaits"))
        return add_keyword(item, specs, n, max);
    return -1;
}

const bench_spec_list_t bench_lock_list = {"lock", is_switch_of, lock_keyword};

int bench_expand_locks(const char *arg, char specs[][BENCH_SPEC_MAX], int max, char *err, size_t errlen)
{
    return bench_split_specs(arg, &bench_lock_list, specs, max, err, errlen);
}
