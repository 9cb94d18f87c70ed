/* registry.h - lookup in the one table of kinds. */
#ifndef BATON_API_REGISTRY_H
#define BATON_API_REGISTRY_H

#include "../base/kind.h"
#include "../base/spec.h" /* baton_spec_t, baton_opts_inner */

const baton_kind_t *baton_registry_find(const char *name, size_t len);
const baton_kind_info_t *baton_registry_info(const baton_kind_t *k);
/* The i-th kind of the table (NULL past its end), and k's place in it (the
 * number of kinds if k is not there). */
const baton_kind_t *baton_registry_at(size_t i);
size_t baton_registry_index(const baton_kind_t *k);
/* "tas, ttas, ..." into buf; returns the length. */
size_t baton_registry_names(char *buf, size_t size);

/* The lock spec as a value (src/base/spec.h): the one parser and the one
 * printer (src/api/lockspec.c).
 *
 * baton_lockspec_parse: text (NULL or "" names the default kind) into *s;
 * 0, or an errno value with the last-error message set (it lists what is
 * valid: the kinds, policies or options).
 *
 * baton_lockspec_print: the canonical text of *s into buf, cut short to
 * size - 1 bytes; returns the full length, as snprintf.  For every s that
 * baton_lockspec_parse made, parsing the printed text gives s again
 * (baton_spec_equal), and printing that gives the same text.
 *
 * baton_lockspec_inner: a wrapper's inner spec (s->node[1..]) as a value of
 * its own; depth 0 if s is no wrapper.
 *
 * baton_lockspec_opts: what the outer kind's init sees, derived from s;
 * `canon` is s printed in full (baton_lockspec_print), in memory that lives
 * as long as the options: a wrapper's inner spec points into it.  0, or
 * EINVAL when canon is not s printed. */
int baton_lockspec_parse(const char *text, baton_spec_t *s);
/* Building values without text: the node that k's name alone means (every
 * default), and an option of a node set by name (0, or EINVAL with the
 * message for an unknown option or a value out of its range). */
int baton_lockspec_node(const baton_kind_t *k, baton_spec_node_t *n);
int baton_lockspec_set(baton_spec_node_t *n, const char *name, uint64_t v);
size_t baton_lockspec_print(const baton_spec_t *s, char *buf, size_t size);
void baton_lockspec_inner(const baton_spec_t *s, baton_spec_t *inner);
int baton_lockspec_opts(const baton_spec_t *s, const char *canon, baton_opts_t *o);

/* Parse a spec into a kind and options (baton_lockspec_parse, then
 * baton_lockspec_opts), for the callers that make a lock from text at
 * once; on error returns an errno value and sets the last-error message.
 * `canon` receives the canonical spec (cut short if it does not fit); a
 * wrapper's inner spec points into `spec`. */
int baton_spec_parse(const char *spec, const baton_kind_t **kind, baton_opts_t *opts, char *canon,
                     size_t canon_size);

/* Is the lock held?  (The kind's is_locked: a racy, relaxed look, for
 * is_locked of wrapper kinds.)  Internal: used by rw(<kind>). */
int baton_is_locked(baton_lock_t *lock);

/* The memory baton_lock_new(spec) takes: its block (header and state) and
 * the kind's footprint, allocator overhead included; 0 for a bad spec.
 * Internal: rw(<kind>) reports its inner lock's cost with it. */
size_t baton_spec_footprint(const char *spec);

/* A lock's state and its kind's table: elide(<kind>) reads its inner lock's
 * word inside transactions through the kind's is_locked, with no call
 * through the dynamic API in between.  Internal. */
void *baton_lock_state(baton_lock_t *lock);
const baton_kind_t *baton_lock_ops(const baton_lock_t *lock);
/* Unlock a held lock whatever thread calls, as a NORMAL pthread mutex
 * allows: the kind's release (its unlock where it has none), clearing the
 * owner the API recorded (check=1).  0 and nothing done on a free lock.
 * Internal: wrapper kinds release their inner lock with it. */
int baton_lock_release(baton_lock_t *lock);
/* Can the lock's writers time their waits (baton_timedlock)?  Internal:
 * wrapper kinds answer the kind table's `timed` with their inner lock's. */
int baton_lock_timed(const baton_lock_t *lock);
/* Does the dynamic API check the lock's owner (check=1)?  Then a wrapper
 * must call it through the API rather than the kind's ops. */
int baton_lock_checks(const baton_lock_t *lock);

#endif
