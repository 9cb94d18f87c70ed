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
#include "../api/registry.h"
#include "../base/join.h"
#include <baton/barrier.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pl_config_flag(const char *value)
{
    return value != NULL && value[0] != '\0' && strcmp(value, "0") != 0;
}

static void interposable_names(char *buf, size_t size, unsigned need)
{
    const baton_kind_info_t *k;
    size_t n = baton_kinds(&k);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if ((k[i].caps & need) != need && strcmp(k[i].name, "pthread") != 0)
            continue;
        if (!baton_join(buf, size, ", ", "%s", k[i].name))
            break;
    }
}

/* Does the spec name a wait policy ("kind:policy[,...]")? */
static bool names_wait(const char *spec)
{
    for (const char *p = spec; *p != '\0' && *p != ',' && *p != '('; p++)
        if (*p == ':')
            return true;
    return false;
}

/* Write into out the spec with ":spinpark" after every kind name (the
 * outer one, or a wrapper's inner ones) that names no policy although its
 * kind takes spinpark and by default only spins.  Returns false if nothing
 * changed or it did not fit. */
static bool park_by_default(const char *spec, char *out, size_t size)
{
    const baton_kind_t *k;
    baton_opts_t o;
    char canon[160];
    if (baton_spec_parse(spec, &k, &o, canon, sizeof canon) != 0)
        return false;
    if (k->wrapper) {
        /* name(inner)rest: rewrite the inner spec. */
        size_t name = strcspn(spec, "(");
        char inner[160], rewritten[160];
        if (baton_opts_inner(&o, inner, sizeof inner) != 0 || !park_by_default(inner, rewritten, sizeof rewritten))
            return false;
        int n = snprintf(out, size, "%.*s(%s)%s", (int)name, spec, rewritten, o.inner + o.inner_len + 1);
        return n > 0 && (size_t)n < size;
    }
    if (names_wait(spec) || !(k->caps & BATON_CAP_WAIT) ||
        !(k->waits & BATON_WAIT_BIT(BATON_WAIT_SPINPARK)) || baton_wait_may_park(&o.wait))
        return false;
    size_t name = strcspn(spec, ",");
    int n = snprintf(out, size, "%.*s:spinpark%s", (int)name, spec, spec + name);
    return n > 0 && (size_t)n < size;
}

/* An elide(<kind>) spec made fit for rwlocks, into out: elide(rw(<kind>),
 * prefer_readers) with elide's options (reader-preferring, as glibc's
 * default rwlock; elide's rwlocks cannot follow each rwlock's attribute,
 * rwlock.c), or the spec itself when <kind> is a readers-writer kind
 * already (its own policy).  false: not an elide spec, or it does not fit. */
static bool elide_for_rwlock(const char *spec, char *out, size_t size)
{
    const baton_kind_t *k, *ik;
    baton_opts_t o, io;
    char canon[160], inner[160];
    if (baton_spec_parse(spec, &k, &o, canon, sizeof canon) != 0 || k != &baton_kind_elide ||
        baton_opts_inner(&o, inner, sizeof inner) != 0 ||
        baton_spec_parse(inner, &ik, &io, canon, sizeof canon) != 0)
        return false;
    const char *rest = o.inner + o.inner_len + 1; /* elide's own options */
    int n = (ik->caps & BATON_CAP_RW) ? snprintf(out, size, "elide(%s)%s", inner, rest)
                                       : snprintf(out, size, "elide(rw(%s),prefer_readers)%s", inner, rest);
    return n > 0 && (size_t)n < size;
}

int pl_config_class(pl_class_t *c, const char *value, const char *deflt, unsigned need, char *err, size_t errlen)
{
    const char *spec = value != NULL && value[0] != '\0' ? value : deflt;
    const baton_kind_t *k;
    char canon[sizeof c->spec];
    if (baton_spec_parse(spec, &k, &c->opts, canon, sizeof canon) != 0) {
        snprintf(err, errlen, "%s='%s': %s", c->env, spec, baton_last_error());
        return -1;
    }
    /* A spec that names no policy gets spinpark where the kind's own default
     * only spins: an unmodified program may run more threads than there
     * are cores, and a spinning FIFO lock then hands the lock to preempted
     * waiters (measured: seconds per thousand acquisitions).  Name a policy
     * ("mcs:spin") to get pure spinning.  Wrappers' inner kinds too. */
    char parked[sizeof c->spec];
    if (park_by_default(spec, parked, sizeof parked) &&
        baton_spec_parse(parked, &k, &c->opts, canon, sizeof canon) == 0)
        spec = parked;
    else if (baton_spec_parse(spec, &k, &c->opts, canon, sizeof canon) != 0) {
        snprintf(err, errlen, "%s='%s': %s", c->env, spec, baton_last_error());
        return -1;
    }
    /* Readers elide too: elide(<kind>) stands in for an rwlock over a
     * readers-writer inner kind, and a mutex kind is wrapped in rw() first. */
    char rw_elided[sizeof c->spec];
    if ((need & BATON_CAP_RW) && k == &baton_kind_elide) {
        if (elide_for_rwlock(spec, rw_elided, sizeof rw_elided) &&
            baton_spec_parse(rw_elided, &k, &c->opts, canon, sizeof canon) == 0)
            spec = rw_elided;
        need &= ~(unsigned)BATON_CAP_RW; /* the inner kind is a readers-writer kind now */
    }
    /* A wrapper's inner kind is checked when a lock is made (elide(rcl) has
     * no lock word to watch): make one now, so a bad spec stops the program
     * at start like every other.  Out of memory proves nothing: the locks
     * made later fall back (preload.h). */
    if (k->wrapper) {
        baton_lock_t *probe = baton_lock_new(spec);
        if (probe == NULL && errno != ENOMEM) {
            snprintf(err, errlen, "%s='%s': %s", c->env, spec, baton_last_error());
            return -1;
        }
        if (probe != NULL)
            baton_lock_free(probe);
    }
    c->stock = strcmp(k->name, "pthread") == 0;
    if (!c->stock && (k->caps & need) != need) {
        char names[512];
        interposable_names(names, sizeof names, need);
        snprintf(err, errlen, "%s='%s': kind '%s' cannot stand in for a pthread %s; use one of: %s", c->env, spec,
                 k->name, c->what, names);
        return -1;
    }
    /* Parse again from our own copy, so that a wrapper's inner spec points
     * into memory that lives as long as the class. */
    memcpy(c->spec, canon, sizeof c->spec);
    if (baton_spec_parse(c->spec, &k, &c->opts, canon, sizeof canon) != 0) {
        snprintf(err, errlen, "%s='%s': %s", c->env, c->spec, baton_last_error());
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

const char *pl_config_rwlock_default(const char *lock_value, const char *deflt, char *buf, size_t size)
{
    return lock_value != NULL && elide_for_rwlock(lock_value, buf, size) ? buf : deflt;
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

bool pl_config_clock_monotonic(const char *value)
{
    return value != NULL && strcmp(value, "monotonic") == 0;
}

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
