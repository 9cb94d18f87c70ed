/* config.c - what the interposer's environment variables mean.
 *
 * Each function here takes a variable's value (NULL: unset) and reads
 * nothing else: not the environment, not the interposer's classes beyond
 * the one it is handed.  It neither prints nor exits: an error comes back
 * as a message.  So tests/fuzz/fuzz_env.c calls them with arbitrary values,
 * without the interposer's constructors or its replaced pthread calls.
 * init.c, barrier.c and profile.c read the variables and call these.
 */
#include "preload.h"
#include "standin.h"
#include "../api/registry.h"
#include <baton/barrier.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pl_config_flag(const char *value)
{
    return value != NULL && value[0] != '\0' && strcmp(value, "0") != 0;
}

/* Give spinpark to every kind of s (the outer one, or a wrapper's inner
 * ones) whose spec names no policy although the kind takes spinpark and by
 * default only spins. */
static void park_by_default(baton_spec_t *s)
{
    for (size_t i = 0; i < s->depth; i++) {
        baton_spec_node_t *n = &s->node[i];
        const baton_kind_t *k = n->kind;
        baton_wait_t w = {.kind = n->wait};
        if (!n->wait_named && (k->caps & BATON_CAP_WAIT) &&
            (k->waits & BATON_WAIT_BIT(BATON_WAIT_SPINPARK)) && !baton_wait_may_park(&w)) {
            n->wait = BATON_WAIT_SPINPARK;
            n->wait_named = true;
        }
    }
}

/* An elide(<kind>) spec made fit for rwlocks, into out: elide(rw(<kind>),
 * prefer_readers) with elide's options (reader-preferring, as glibc's
 * default rwlock; elide's rwlocks cannot follow each rwlock's attribute,
 * rwlock.c), or the spec itself when <kind> is a readers-writer kind
 * already (its own policy).  false: not an elide spec, or it would nest
 * too deep. */
static bool elide_for_rwlock(const baton_spec_t *s, baton_spec_t *out)
{
    if (s->node[0].kind != &baton_kind_elide || s->depth < 2)
        return false;
    if (s->node[1].kind->caps & BATON_CAP_RW) {
        *out = *s;
        return true;
    }
    if (s->depth + 1 > BATON_SPEC_DEPTH)
        return false;
    memset(out, 0, sizeof *out);
    out->depth = s->depth + 1;
    out->node[0] = s->node[0];
    if (baton_lockspec_node(&baton_kind_rw, &out->node[1]) != 0 ||
        baton_lockspec_set(&out->node[1], "prefer_readers", 1) != 0)
        return false;
    memcpy(&out->node[2], &s->node[1], (s->depth - 1) * sizeof s->node[0]);
    return true;
}

int pl_config_parse(const pl_class_t *c, const char *value, const char *deflt, baton_spec_t *s, char *err,
                    size_t errlen)
{
    const char *text = value != NULL && value[0] != '\0' ? value : deflt;
    if (baton_lockspec_parse(text, s) != 0) {
        snprintf(err, errlen, "%s='%s': %s", c->env, text, baton_last_error());
        return -1;
    }
    return 0;
}

int pl_config_class_spec(pl_class_t *c, const baton_spec_t *parsed, const char *text, unsigned need,
                         char *err, size_t errlen)
{
    baton_spec_t s = *parsed;
    /* A spec that names no policy gets spinpark where the kind's own default
     * only spins: an unmodified program may run more threads than there
     * are cores, and a spinning FIFO lock then hands the lock to preempted
     * waiters (measured: seconds per thousand acquisitions).  Name a policy
     * ("mcs:spin") to get pure spinning.  Wrappers' inner kinds too. */
    park_by_default(&s);
    /* Readers elide too: elide(<kind>) stands in for an rwlock over a
     * readers-writer inner kind, and a mutex kind is wrapped in rw() first
     * (so pl_stands_in() takes elide for rwlocks). */
    const baton_kind_t *k = s.node[0].kind;
    if ((need & BATON_CAP_RW) && k == &baton_kind_elide) {
        baton_spec_t rw_elided;
        if (elide_for_rwlock(&s, &rw_elided))
            s = rw_elided;
    }
    /* The class keeps the canonical text: it is what BATON_VERBOSE and
     * baton_preload_info() show, and a wrapper's inner spec (which its
     * init reads as text) points into it for the life of the class. */
    size_t len = baton_lockspec_print(&s, c->spec, sizeof c->spec);
    if (len >= sizeof c->spec) {
        snprintf(err, errlen, "%s='%s': its canonical form is %zu bytes long; at most %zu fit", c->env, text,
                 len, sizeof c->spec - 1);
        return -1;
    }
    /* A wrapper's inner kind is checked when a lock is made (elide(rcl) has
     * no lock word to watch): make one now, so a bad spec stops the program
     * at start like every other.  Out of memory proves nothing: the locks
     * made later fall back (preload.h). */
    if (k->wrapper) {
        baton_lock_t *probe = baton_lock_new(c->spec);
        if (probe == NULL && errno != ENOMEM) {
            snprintf(err, errlen, "%s='%s': %s", c->env, text, baton_last_error());
            return -1;
        }
        if (probe != NULL)
            baton_lock_free(probe);
    }
    c->stock = strcmp(k->name, "pthread") == 0;
    if (!pl_stands_in(k->name, k->caps, need)) {
        char names[512];
        pl_standin_names(names, sizeof names, need, false);
        snprintf(err, errlen, "%s='%s': kind '%s' cannot stand in for a pthread %s; use one of: %s", c->env,
                 text, k->name, c->what, names);
        return -1;
    }
    if (baton_lockspec_opts(&s, c->spec, &c->opts) != 0) {
        snprintf(err, errlen, "%s='%s': %s", c->env, text, baton_last_error());
        return -1;
    }
    c->kind = k;
    c->release = k->release ? k->release : k->unlock;
    size_t align = k->align ? k->align : sizeof(void *);
    c->slot = (k->size + align - 1) / align * align;
    if (c->slot < sizeof(uint32_t))
        c->slot = sizeof(uint32_t);
    c->extra = k->footprint ? k->footprint(&c->opts) : 0;
    return 0;
}

int pl_config_class(pl_class_t *c, const char *value, const char *deflt, unsigned need, char *err,
                    size_t errlen)
{
    baton_spec_t s;
    if (pl_config_parse(c, value, deflt, &s, err, errlen) != 0)
        return -1;
    return pl_config_class_spec(c, &s, value != NULL && value[0] != '\0' ? value : deflt, need, err, errlen);
}

bool pl_config_rwlock_derive(const baton_spec_t *lock, baton_spec_t *rw)
{
    return elide_for_rwlock(lock, rw);
}

const char *pl_config_rwlock_default(const char *lock_value, const char *deflt, char *buf, size_t size)
{
    baton_spec_t lock, rw;
    if (lock_value == NULL || baton_lockspec_parse(lock_value, &lock) != 0 || !elide_for_rwlock(&lock, &rw) ||
        baton_lockspec_print(&rw, buf, size) >= size)
        return deflt;
    return buf;
}

int pl_config_barrier(const char *value, bool *stock, char *spec, size_t size, char *desc, size_t desclen,
                      char *err, size_t errlen)
{
    const char *s = value != NULL && value[0] != '\0' ? value : "default";
    *stock = strcmp(s, "pthread") == 0;
    if (*stock) {
        snprintf(desc, desclen, "pthread (stock: glibc's own)");
        return 0;
    }
    if (strlen(s) >= size) {
        snprintf(err, errlen, "BATON_BARRIER='%s': longer than %zu bytes", s, size - 1);
        return -1;
    }
    /* Validate now, for one clear message at the first barrier.  Out of
     * memory proves nothing: each barrier that gets none is glibc's. */
    baton_barrier_t *probe = baton_barrier_new(s, 1);
    if (probe == NULL && errno != ENOMEM) {
        snprintf(err, errlen, "BATON_BARRIER='%s': %s", s, baton_last_error());
        return -1;
    }
    if (probe != NULL) {
        snprintf(desc, desclen, "%s (for one thread: %s)", s, baton_barrier_spec(probe));
        (void)baton_barrier_free(probe);
    } else {
        snprintf(desc, desclen, "%s (not checked: out of memory)", s);
    }
    memcpy(spec, s, strlen(s) + 1);
    return 0;
}

uint32_t pl_config_hold_every(const char *value)
{
    long e = value != NULL && value[0] != '\0' ? strtol(value, NULL, 10) : 8;
    return e >= 1 && e <= 65536 ? (uint32_t)e : 8;
}

bool pl_config_clock_monotonic(const char *value) { return value != NULL && strcmp(value, "monotonic") == 0; }

bool pl_config_out_pattern(const char *value, char *out, size_t size)
{
    if (value == NULL || strlen(value) >= size)
        return false;
    memcpy(out, value, strlen(value) + 1);
    return true;
}

size_t pl_config_out_path(const char *pattern, int pid, char *path, size_t size)
{
    size_t n = 0;
    if (size == 0)
        return 0;
    for (const char *p = pattern; *p; p++) {
        char pidbuf[16];
        const char *piece = pidbuf;
        size_t len;
        if (p[0] == '%' && p[1] == 'p') {
            len = (size_t)snprintf(pidbuf, sizeof pidbuf, "%d", pid);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            piece = "%";
            len = 1;
            p++;
        } else {
            piece = p;
            len = 1;
        }
        if (n + len >= size)
            break; /* cut short: what fits */
        memcpy(path + n, piece, len);
        n += len;
    }
    path[n] = '\0';
    return n;
}
