/* lockspec.c - lock specs, "kind[:wait][,key=value...]" or
 * "wrapper(<inner spec>)[...]" (grammar in baton/baton.h): the one parser
 * from text to a baton_spec_t (src/base/spec.h), the kind by name from the
 * registry and the tail through the grammar's parser (src/base/spec.c);
 * the one printer from a value to the canonical text; and what a kind's
 * init sees (baton_opts_t), derived from the value. */
#include "registry.h"
#include "../base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef BATON_DEBUG
#define BATON_DEBUG 0
#endif

/* The longest inner spec a wrapper takes, in bytes: what the API's spec
 * buffers (SPEC_MAX, api.c) hold, and the limit specs have always had. */
#define INNER_MAX 159

/* What the tail's parser needs to know of a lock kind. */
static baton_spec_tail_t tail_of(const baton_kind_t *k)
{
    return (baton_spec_tail_t){
        .what = "lock",
        .name = k->name,
        .takes_wait = (k->caps & BATON_CAP_WAIT) != 0,
        .waits = k->waits,
        .default_wait = k->default_wait,
        .options = k->options,
        .noptions = k->noptions,
        .check = true,
    };
}

/* Parse `text` into s->node[at] and, for a wrapper, its inner spec into the
 * nodes after it; s->depth becomes the nodes used.  *inner_off and
 * *inner_len (wrappers) receive where the inner spec lies in `text`.
 * Messages quote `text`, the level being parsed, as they always have. */
static int parse_at(const char *text, baton_spec_t *s, size_t at, size_t *inner_off, size_t *inner_len)
{
    char valid[512];
    baton_spec_node_t *n = &s->node[at];
    memset(n, 0, sizeof *n);
    n->check = BATON_DEBUG;
    *inner_off = *inner_len = 0;

    size_t klen = strcspn(text, ":,()");
    const baton_kind_t *k = baton_registry_find(text, klen);
    if (!k) {
        baton_registry_names(valid, sizeof valid);
        return baton_fail(EINVAL, "unknown lock kind '%.*s'; valid kinds: %s", (int)klen, text, valid);
    }
    n->kind = k;
    s->depth = at + 1;
    const char *p = text + klen;
    if (k->wrapper) {
        /* kind(<inner spec>): find the matching parenthesis. */
        if (*p != '(')
            return baton_fail(EINVAL, "'%s' wraps another kind: write %s(<kind>), e.g. %s(mcs)", k->name,
                              k->name, k->name);
        int depth = 0;
        const char *q = p;
        for (; *q; q++) {
            if (*q == '(')
                depth++;
            else if (*q == ')' && --depth == 0)
                break;
        }
        if (*q != ')')
            return baton_fail(EINVAL, "unbalanced parentheses in lock spec '%s'", text);
        char inner[INNER_MAX + 1];
        size_t ilen = (size_t)(q - p - 1);
        if (ilen == 0 || ilen > INNER_MAX)
            return baton_fail(EINVAL, "'%s(...)' needs an inner lock spec, e.g. %s(mcs)", k->name, k->name);
        if (at + 1 == BATON_SPEC_DEPTH)
            return baton_fail(EINVAL, "lock spec nested too deep: wrappers nest at most %d deep (at '%s')",
                              BATON_SPEC_DEPTH - 1, text);
        memcpy(inner, p + 1, ilen);
        inner[ilen] = '\0';
        size_t ioff, ilen2;
        int rc = parse_at(inner, s, at + 1, &ioff, &ilen2);
        if (rc != 0)
            return rc;
        *inner_off = (size_t)(p + 1 - text);
        *inner_len = ilen;
        p = q + 1;
    } else if (*p == '(') {
        return baton_fail(EINVAL, "lock kind '%s' does not wrap another kind (got '%s')", k->name, text);
    }

    baton_spec_tail_t t = tail_of(k);
    return baton_spec_node_tail(&t, text, p, n);
}

int baton_lockspec_parse(const char *text, baton_spec_t *s)
{
    size_t off, len;
    memset(s, 0, sizeof *s);
    return parse_at(text ? text : "", s, 0, &off, &len);
}

int baton_lockspec_node(const baton_kind_t *k, baton_spec_node_t *n)
{
    baton_spec_tail_t t = tail_of(k);
    memset(n, 0, sizeof *n);
    n->kind = k;
    n->check = BATON_DEBUG;
    /* The empty tail: every default, as the kind's name alone means. */
    return baton_spec_node_tail(&t, k->name, "", n);
}

int baton_lockspec_set(baton_spec_node_t *n, const char *name, uint64_t v)
{
    const baton_kind_t *k = n->kind;
    for (size_t j = 0; j < k->noptions; j++)
        if (strcmp(k->options[j].name, name) == 0) {
            if (v < k->options[j].min || v > k->options[j].max)
                return baton_fail(EINVAL, "out-of-range option '%s=%llu' for '%s'", name,
                                  (unsigned long long)v, k->name);
            n->value[j] = v;
            return 0;
        }
    return baton_fail(EINVAL, "unknown option '%s' for '%s'", name, k->name);
}

/* snprintf's contract for a piece: append to buf[*used..size), count what
 * would have been written in full. */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t size, size_t *used, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    char dummy[1];
    int n = *used < size ? vsnprintf(buf + *used, size - *used, fmt, ap) : vsnprintf(dummy, 0, fmt, ap);
    va_end(ap);
    *used += n > 0 ? (size_t)n : 0;
}

static void print_at(const baton_spec_t *s, size_t at, char *buf, size_t size, size_t *used)
{
    const baton_spec_node_t *n = &s->node[at];
    const baton_kind_t *k = n->kind;
    put(buf, size, used, "%s", k->name);
    if (k->wrapper && at + 1 < s->depth) {
        put(buf, size, used, "(");
        print_at(s, at + 1, buf, size, used);
        put(buf, size, used, ")");
    } else if (k->caps & BATON_CAP_WAIT) {
        /* Always the policy, resolved: the canonical spec says what runs. */
        put(buf, size, used, ":%s", baton_wait_name((baton_wait_kind)n->wait));
    }
    for (size_t j = 0; j < k->noptions; j++)
        if (n->value[j] != k->options[j].def)
            put(buf, size, used, ",%s=%llu", k->options[j].name, (unsigned long long)n->value[j]);
    /* check=1 whenever on (what a reader looks for); check=0 only where the
     * build's default is on, so that the printed spec means this value. */
    if (n->check || BATON_DEBUG)
        put(buf, size, used, ",check=%d", n->check ? 1 : 0);
}

size_t baton_lockspec_print(const baton_spec_t *s, char *buf, size_t size)
{
    size_t used = 0;
    if (size > 0)
        buf[0] = '\0';
    print_at(s, 0, buf, size, &used);
    return used;
}

void baton_lockspec_inner(const baton_spec_t *s, baton_spec_t *inner)
{
    memset(inner, 0, sizeof *inner);
    if (s->depth < 2)
        return;
    inner->depth = s->depth - 1;
    memcpy(inner->node, s->node + 1, inner->depth * sizeof s->node[0]);
}

/* What a kind's init sees of node n (a wrapper's inner spec aside). */
static void opts_of(const baton_spec_node_t *n, baton_opts_t *o)
{
    memset(o, 0, sizeof *o);
    memcpy(o->value, n->value, sizeof o->value);
    o->check = n->check;
    /* The policy was resolved and checked when the spec was parsed. */
    if (n->kind->caps & BATON_CAP_WAIT)
        (void)baton_wait_init(&o->wait, (baton_wait_kind)n->wait);
}

int baton_lockspec_opts(const baton_spec_t *s, const char *canon, baton_opts_t *o)
{
    const baton_kind_t *k = s->node[0].kind;
    opts_of(&s->node[0], o);
    if (!k->wrapper)
        return 0;
    /* canon is "name(<inner>)...", as print_at writes it. */
    size_t name = strlen(k->name);
    baton_spec_t inner;
    baton_lockspec_inner(s, &inner);
    char dummy[1];
    size_t ilen = baton_lockspec_print(&inner, dummy, 0);
    if (strncmp(canon, k->name, name) != 0 || canon[name] != '(' || strlen(canon + name + 1) <= ilen ||
        canon[name + 1 + ilen] != ')')
        return baton_fail(EINVAL, "'%s' is not the printed form of its spec", canon);
    o->inner = canon + name + 1;
    o->inner_len = ilen;
    return 0;
}

int baton_spec_parse(const char *spec, const baton_kind_t **kindp, baton_opts_t *o, char *canon,
                     size_t canon_size)
{
    baton_spec_t s;
    size_t off, len;
    if (spec == NULL)
        spec = "";
    memset(&s, 0, sizeof s);
    int rc = parse_at(spec, &s, 0, &off, &len);
    if (rc != 0)
        return rc;
    opts_of(&s.node[0], o);
    /* The inner spec as the caller wrote it, in memory the caller keeps:
     * the canonical text may not fit canon (it is cut short there). */
    if (s.node[0].kind->wrapper) {
        o->inner = spec + off;
        o->inner_len = len;
    }
    (void)baton_lockspec_print(&s, canon, canon_size);
    *kindp = s.node[0].kind;
    return 0;
}
