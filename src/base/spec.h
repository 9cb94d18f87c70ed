/* spec.h - the spec grammar's tail, shared by lock specs (src/api/lockspec.c)
 * and barrier specs (src/barrier/registry.c): after a kind's name,
 * [:wait][,key=value...]. */
#ifndef BATON_BASE_SPEC_H
#define BATON_BASE_SPEC_H

#include "kind.h"

#include <stdbool.h>
#include <stddef.h>

/* What the tail parser needs to know of a kind. */
typedef struct baton_spec_tail {
    const char *what;       /* "lock" or "barrier": for messages */
    const char *name;       /* the kind's name */
    bool takes_wait;        /* a wait policy may follow ':' */
    unsigned waits;         /* the policies it accepts (BATON_WAIT_BIT) */
    int default_wait;       /* baton_wait_kind or BATON_WAIT_AUTO, when none is written */
    const baton_option_desc_t *options;
    size_t noptions;        /* at most BATON_KIND_MAX_OPTIONS */
    bool check;             /* takes check=0|1 (owner checking: the locks) */
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

/* A wrapper kind's inner spec, NUL-terminated, into buf: 0, or EINVAL (with
 * the last-error message) when it does not fit. */
int baton_opts_inner(const baton_opts_t *o, char *buf, size_t size);

#endif
