/* spec.h - the spec grammar's tail, shared by lock specs (src/api/lockspec.c)
 * and barrier specs (src/barrier/registry.c): after a kind's name,
 * [:wait][,key=value...]; and the parsed lock spec as a value.
 *
 * A spec is text only at the edges: a program hands one to baton_lock_new,
 * a user writes one in an environment variable or on a command line.  Past
 * that edge it is a baton_spec_t, which code inspects and derives new specs
 * from by changing fields, then prints (src/api/lockspec.c) where text is
 * needed again.  So no caller re-implements the grammar (its parentheses,
 * its switches, where the policy goes) to read or rewrite a spec. */
#ifndef BATON_BASE_SPEC_H
#define BATON_BASE_SPEC_H

#include "kind.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the tail parser needs to know of a kind. */
typedef struct baton_spec_tail {
    const char *what; /* "lock" or "barrier": for messages */
    const char *name; /* the kind's name */
    bool takes_wait;  /* a wait policy may follow ':' */
    unsigned waits;   /* the policies it accepts (BATON_WAIT_BIT) */
    int default_wait; /* baton_wait_kind or BATON_WAIT_AUTO, when none is written */
    const baton_option_desc_t *options;
    size_t noptions; /* at most BATON_KIND_MAX_OPTIONS */
    bool check;      /* takes check=0|1 (owner checking: the locks) */
} baton_spec_tail_t;

/* Parse p, the rest of `spec` after the kind's name (and a wrapper's inner
 * spec): the policy, initialised into o->wait when t->takes_wait; option
 * values into o->value (defaults for those not written); check into
 * o->check (left alone unless written).  *asked (may be NULL) receives the
 * policy as written or defaulted, BATON_WAIT_AUTO not yet resolved.
 * Returns 0, or an errno value with the last-error message set (listing the
 * valid policies or options). */
int baton_spec_parse_tail(const baton_spec_tail_t *t, const char *spec, const char *p, baton_opts_t *o,
                          int *asked);

/* One kind of a parsed lock spec: "mcs:spinpark" whole, or the outer part
 * "rw(...),prefer_readers" of a wrapper. */
typedef struct baton_spec_node {
    const baton_kind_t *kind;
    /* The kind's options in its table's order, defaults where the text
     * wrote none; 0 past kind->noptions, so that copies compare whole. */
    uint64_t value[BATON_KIND_MAX_OPTIONS];
    /* The policy, resolved ("auto" and the kind's default are stored as
     * what they resolve to on this machine, as the canonical spec prints
     * them); BATON_NO_WAIT for kinds that take none. */
    uint8_t wait;
    /* Whether the text named the policy.  Provenance, not meaning: the
     * interposer parks where a spec names no policy (src/preload/config.c);
     * baton_spec_equal ignores it, and a printed spec always names one. */
    bool wait_named;
    bool check; /* check=1: the API tracks the owner */
} baton_spec_node_t;

/* How deep wrappers nest: node[0] is the outermost kind, node[i + 1] the
 * inner spec of the wrapper node[i].  The deepest useful spec has three
 * (elide(rw(mcs))); eight keeps the value small (it lives on the stack of
 * every baton_lock_new) with room to spare, and a deeper spec is refused
 * by name. */
#define BATON_SPEC_DEPTH 8

typedef struct baton_spec {
    size_t depth; /* nodes used, 1 or more */
    baton_spec_node_t node[BATON_SPEC_DEPTH];
} baton_spec_t;

/* Do a and b mean the same lock: the same kinds, policies, option values
 * and checks, level by level (wait_named aside)? */
bool baton_spec_equal(const baton_spec_t *a, const baton_spec_t *b);

/* Parse p, the tail of `spec` after the kind's name (and a wrapper's inner
 * spec), into n: n->kind is the caller's, n->check its default (left alone
 * unless written); the rest is filled in.  0, or an errno value with the
 * last-error message set, as baton_spec_parse_tail. */
int baton_spec_node_tail(const baton_spec_tail_t *t, const char *spec, const char *p, baton_spec_node_t *n);

/* A wrapper kind's inner spec, NUL-terminated, into buf: 0, or EINVAL (with
 * the last-error message) when it does not fit. */
int baton_opts_inner(const baton_opts_t *o, char *buf, size_t size);

#endif
