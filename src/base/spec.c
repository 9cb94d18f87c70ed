/* spec.c - the spec grammar's tail, "[:wait][,key=value...]" after a kind's
 * name (grammar in baton/baton.h), for lock and barrier specs alike; the
 * lock spec as a whole, kind and all, is parsed in src/api/lockspec.c. */
#include "error.h"
#include "spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void list_waits(char *buf, size_t size, unsigned mask)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned k = 0; k < BATON_WAIT_KINDS; k++) {
        if (!(mask & BATON_WAIT_BIT(k)))
            continue;
        int n = snprintf(buf + used, size - used, "%s, ", baton_wait_name((baton_wait_kind)k));
        if (n < 0 || (size_t)n >= size - used)
            return;
        used += (size_t)n;
    }
    snprintf(buf + used, size - used, "auto");
}

static void list_options(char *buf, size_t size, const baton_spec_tail_t *t)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t j = 0; j < t->noptions; j++) {
        int n = snprintf(buf + used, size - used, "%s%s=<%llu..%llu>", j ? ", " : "", t->options[j].name,
                         (unsigned long long)t->options[j].min, (unsigned long long)t->options[j].max);
        if (n < 0 || (size_t)n >= size - used)
            return;
        used += (size_t)n;
    }
    if (t->check)
        snprintf(buf + used, size - used, "%scheck=<0|1>", used ? ", " : "");
}

static int parse_uint(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 19)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10u + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int baton_opts_inner(const baton_opts_t *o, char *buf, size_t size)
{
    if (o->inner_len >= size)
        return baton_fail(EINVAL, "inner lock spec too long (%zu bytes; at most %zu)", o->inner_len,
                          size - 1);
    memcpy(buf, o->inner, o->inner_len);
    buf[o->inner_len] = '\0';
    return 0;
}

/* The tail's grammar, shared by both parsers below: the policy as written
 * (or the kind's default) into *wait, whether it was written into *named,
 * option values into value (defaults first), check into *check (left
 * alone unless written). */
static int parse_tail(const baton_spec_tail_t *t, const char *spec, const char *p, int *waitp, bool *named,
                      uint64_t *value, int *check)
{
    char valid[512];
    int wait = t->default_wait;
    *named = false;
    if (*p == ':') {
        p++;
        size_t wlen = strcspn(p, ",");
        if (!t->takes_wait)
            return baton_fail(EINVAL, "%s kind '%s' takes no wait policy (got '%.*s')", t->what, t->name,
                              (int)wlen, p);
        wait = baton_wait_parse(p, wlen);
        if (wait < 0 || (wait != BATON_WAIT_AUTO && !(t->waits & BATON_WAIT_BIT(wait)))) {
            list_waits(valid, sizeof valid, t->waits);
            return baton_fail(EINVAL, "unknown wait policy '%.*s' for '%s'; valid policies: %s", (int)wlen, p,
                              t->name, valid);
        }
        *named = true;
        p += wlen;
    }

    for (size_t j = 0; j < t->noptions; j++)
        value[j] = t->options[j].def;
    while (*p == ',') {
        p++;
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        size_t nlen = eq ? (size_t)(eq - p) : len;
        uint64_t v = 0;
        /* A bare name is a switch: key=1, for the options that are 0 or 1
         * ("elide(ttas),sleep"), check among them. */
        if (!eq && t->check && nlen == 5 && memcmp(p, "check", 5) == 0) {
            eq = p + nlen, v = 1;
        } else if (!eq) {
            for (size_t j = 0; j < t->noptions; j++)
                if (strlen(t->options[j].name) == nlen && memcmp(t->options[j].name, p, nlen) == 0 &&
                    t->options[j].min == 0 && t->options[j].max == 1)
                    eq = p + nlen, v = 1;
        }
        if (!eq || (eq < p + len && parse_uint(eq + 1, len - nlen - 1, &v) != 0)) {
            list_options(valid, sizeof valid, t);
            return baton_fail(
                EINVAL,
                "bad option '%.*s' for '%s': expected key=<unsigned> (or a bare switch, key alone for key=1); valid options: %s",
                (int)len, p, t->name, valid);
        }
        if (t->check && nlen == 5 && memcmp(p, "check", 5) == 0 && v <= 1) {
            *check = (int)v;
        } else {
            size_t j = 0;
            while (j < t->noptions &&
                   !(strlen(t->options[j].name) == nlen && memcmp(t->options[j].name, p, nlen) == 0))
                j++;
            if (j == t->noptions || v < t->options[j].min || v > t->options[j].max) {
                list_options(valid, sizeof valid, t);
                return baton_fail(EINVAL, "%s option '%.*s' for '%s'; valid options: %s",
                                  j == t->noptions ? "unknown" : "out-of-range", (int)len, p, t->name, valid);
            }
            value[j] = v;
        }
        p += len;
    }
    if (*p != '\0')
        return baton_fail(EINVAL, "unexpected '%s' in %s spec '%s' (grammar: kind[:wait][,key=value...])", p,
                          t->what, spec);
    *waitp = wait;
    return 0;
}

/* Initialise *w to `wait` (AUTO resolved), with the messages both parsers give. */
static int resolve_wait(const baton_spec_tail_t *t, int wait, baton_wait_t *w)
{
    int rc = baton_wait_init(w, (baton_wait_kind)wait);
    if (rc == ENOTSUP)
        return baton_fail(ENOTSUP, "wait policy 'monitor' needs UMONITOR/UMWAIT (waitpkg) or "
                                   "MONITORX/MWAITX, and this CPU has neither; use 'auto' to "
                                   "pick the best available");
    if (rc != 0)
        return baton_fail(rc, "cannot initialise wait policy for '%s'", t->name);
    return 0;
}

int baton_spec_parse_tail(const baton_spec_tail_t *t, const char *spec, const char *p, baton_opts_t *o,
                          int *asked)
{
    int wait, check = o->check;
    bool named;
    int rc = parse_tail(t, spec, p, &wait, &named, o->value, &check);
    if (rc != 0)
        return rc;
    o->check = check;
    if (asked)
        *asked = wait;
    return t->takes_wait ? resolve_wait(t, wait, &o->wait) : 0;
}

int baton_spec_node_tail(const baton_spec_tail_t *t, const char *spec, const char *p, baton_spec_node_t *n)
{
    int wait, check = n->check;
    bool named;
    memset(n->value, 0, sizeof n->value);
    int rc = parse_tail(t, spec, p, &wait, &named, n->value, &check);
    if (rc != 0)
        return rc;
    n->check = check != 0;
    n->wait_named = named;
    n->wait = BATON_NO_WAIT;
    if (t->takes_wait) {
        baton_wait_t w;
        rc = resolve_wait(t, wait, &w);
        if (rc != 0)
            return rc;
        n->wait = w.kind;
    }
    return 0;
}

bool baton_spec_equal(const baton_spec_t *a, const baton_spec_t *b)
{
    if (a->depth != b->depth)
        return false;
    for (size_t i = 0; i < a->depth; i++) {
        const baton_spec_node_t *x = &a->node[i], *y = &b->node[i];
        if (x->kind != y->kind || x->wait != y->wait || x->check != y->check ||
            memcmp(x->value, y->value, sizeof x->value) != 0)
            return false;
    }
    return true;
}
