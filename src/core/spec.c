/* spec.c - parse "kind[:wait][,key=value...]" (grammar in baton/baton.h). */
#include "registry.h"
#include "error.h"
#include "spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef BATON_DEBUG
#define BATON_DEBUG 0
#endif

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
                         (unsigned long long)t->options[j].min,
                         (unsigned long long)t->options[j].max);
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
        return baton_fail(EINVAL, "inner lock spec too long (%zu bytes; at most %zu)", o->inner_len, size - 1);
    memcpy(buf, o->inner, o->inner_len);
    buf[o->inner_len] = '\0';
    return 0;
}

int baton_spec_parse_tail(const baton_spec_tail_t *t, const char *spec, const char *p, baton_opts_t *o,
                          int *asked)
{
    char valid[512];
    int wait = t->default_wait;
    if (*p == ':') {
        p++;
        size_t wlen = strcspn(p, ",");
        if (!t->takes_wait)
            return baton_fail(EINVAL, "%s kind '%s' takes no wait policy (got '%.*s')", t->what, t->name,
                              (int)wlen, p);
        wait = baton_wait_parse(p, wlen);
        if (wait < 0 || (wait != BATON_WAIT_AUTO && !(t->waits & BATON_WAIT_BIT(wait)))) {
            list_waits(valid, sizeof valid, t->waits);
            return baton_fail(EINVAL, "unknown wait policy '%.*s' for '%s'; valid policies: %s",
                              (int)wlen, p, t->name, valid);
        }
        p += wlen;
    }

    for (size_t j = 0; j < t->noptions; j++)
        o->value[j] = t->options[j].def;
    while (*p == ',') {
        p++;
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        size_t nlen = eq ? (size_t)(eq - p) : len;
        uint64_t v = 0;
        /* A bare name is a switch: key=1, for the options that are 0 or 1
         * ("elide(ttas),sleep"). */
        if (!eq && t->check && nlen == 5 && memcmp(p, "check", 5) == 0) {
            v = 1;
        } else if (!eq) {
            for (size_t j = 0; j < t->noptions; j++)
                if (strlen(t->options[j].name) == nlen && memcmp(t->options[j].name, p, nlen) == 0 &&
                    t->options[j].min == 0 && t->options[j].max == 1)
                    eq = p + nlen, v = 1;
        }
        if (!eq || (eq < p + len && parse_uint(eq + 1, len - nlen - 1, &v) != 0)) {
            list_options(valid, sizeof valid, t);
            return baton_fail(EINVAL, "bad option '%.*s' for '%s': expected key=<unsigned> (or a bare switch, key alone for key=1); valid options: %s",
                              (int)len, p, t->name, valid);
        }
        if (t->check && nlen == 5 && memcmp(p, "check", 5) == 0 && v <= 1) {
            o->check = (int)v;
        } else {
            size_t j = 0;
            while (j < t->noptions && !(strlen(t->options[j].name) == nlen &&
                                        memcmp(t->options[j].name, p, nlen) == 0))
                j++;
            if (j == t->noptions || v < t->options[j].min || v > t->options[j].max) {
                list_options(valid, sizeof valid, t);
                return baton_fail(EINVAL, "%s option '%.*s' for '%s'; valid options: %s",
                                  j == t->noptions ? "unknown" : "out-of-range", (int)len, p,
                                  t->name, valid);
            }
            o->value[j] = v;
        }
        p += len;
    }
    if (*p != '\0')
        return baton_fail(EINVAL, "unexpected '%s' in %s spec '%s' (grammar: kind[:wait][,key=value...])",
                          p, t->what, spec);

    if (asked)
        *asked = wait;
    if (t->takes_wait) {
        int rc = baton_wait_init(&o->wait, (baton_wait_kind)wait);
        if (rc == ENOTSUP)
            return baton_fail(ENOTSUP, "wait policy 'monitor' needs UMONITOR/UMWAIT (waitpkg) or "
                                       "MONITORX/MWAITX, and this CPU has neither; use 'auto' to "
                                       "pick the best available");
        if (rc != 0)
            return baton_fail(rc, "cannot initialise wait policy for '%s'", t->name);
    }

    return 0;
}

int baton_spec_parse(const char *spec, const baton_kind_t **kindp, baton_opts_t *o, char *canon,
                     size_t canon_size)
{
    char valid[512];
    if (spec == NULL)
        spec = "";
    memset(o, 0, sizeof *o);
    o->check = BATON_DEBUG;

    size_t klen = strcspn(spec, ":,()");
    const baton_kind_t *k = baton_registry_find(spec, klen);
    if (!k) {
        baton_registry_names(valid, sizeof valid);
        return baton_fail(EINVAL, "unknown lock kind '%.*s'; valid kinds: %s", (int)klen, spec, valid);
    }
    const char *p = spec + klen;
    char inner_canon[160] = "";
    if (k->wrapper) {
        /* kind(<inner spec>): find the matching parenthesis. */
        if (*p != '(')
            return baton_fail(EINVAL, "'%s' wraps another kind: write %s(<kind>), e.g. %s(mcs)",
                              k->name, k->name, k->name);
        int depth = 0;
        const char *q = p;
        for (; *q; q++) {
            if (*q == '(')
                depth++;
            else if (*q == ')' && --depth == 0)
                break;
        }
        if (*q != ')')
            return baton_fail(EINVAL, "unbalanced parentheses in lock spec '%s'", spec);
        char inner[160];
        size_t ilen = (size_t)(q - p - 1);
        if (ilen == 0 || ilen >= sizeof inner)
            return baton_fail(EINVAL, "'%s(...)' needs an inner lock spec, e.g. %s(mcs)", k->name, k->name);
        memcpy(inner, p + 1, ilen);
        inner[ilen] = '\0';
        /* Validate the inner spec now, for its message and canonical form. */
        const baton_kind_t *ik;
        baton_opts_t io;
        int rc = baton_spec_parse(inner, &ik, &io, inner_canon, sizeof inner_canon);
        if (rc != 0)
            return rc;
        o->inner = p + 1;
        o->inner_len = ilen;
        p = q + 1;
    } else if (*p == '(') {
        return baton_fail(EINVAL, "lock kind '%s' does not wrap another kind (got '%s')", k->name, spec);
    }

    baton_spec_tail_t t = {
        .what = "lock", .name = k->name, .takes_wait = (k->caps & BATON_CAP_WAIT) != 0,
        .waits = k->waits, .default_wait = k->default_wait, .options = k->options,
        .noptions = k->noptions, .check = true,
    };
    int rc = baton_spec_parse_tail(&t, spec, p, o, NULL);
    if (rc != 0)
        return rc;

    /* Canonical form: kind, resolved policy, options that differ from their
     * defaults, check if on. */
    int n = k->wrapper ? snprintf(canon, canon_size, "%s(%s)", k->name, inner_canon)
            : (k->caps & BATON_CAP_WAIT)
                ? snprintf(canon, canon_size, "%s:%s", k->name, baton_wait_name(o->wait.kind))
                : snprintf(canon, canon_size, "%s", k->name);
    size_t used = n > 0 ? (size_t)n : 0;
    for (size_t j = 0; j < k->noptions && used < canon_size; j++)
        if (o->value[j] != k->options[j].def) {
            n = snprintf(canon + used, canon_size - used, ",%s=%llu", k->options[j].name,
                         (unsigned long long)o->value[j]);
            used += n > 0 ? (size_t)n : 0;
        }
    if (o->check && used < canon_size)
        snprintf(canon + used, canon_size - used, ",check=1");
    *kindp = k;
    return 0;
}
