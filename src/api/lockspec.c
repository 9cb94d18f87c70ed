/* lockspec.c - parse a lock spec, "kind[:wait][,key=value...]" or
 * "wrapper(<inner spec>)[...]" (grammar in baton/baton.h): the kind by name
 * from the registry, the tail through the grammar's parser (src/base/spec.c),
 * and the canonical form. */
#include "registry.h"
#include "../base/error.h"
#include "../base/spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifndef BATON_DEBUG
#define BATON_DEBUG 0
#endif

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
