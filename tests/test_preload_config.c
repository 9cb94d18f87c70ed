/* test_preload_config.c - the interposer's configuration (src/preload/
 * config.c, linked alone: nothing is interposed, no constructor runs), on
 * parsed specs: kinds whose spec names no policy and whose default only
 * spins get spinpark, wrappers' inner kinds too; elide's rwlocks get
 * rw(<kind>),prefer_readers under elide; BATON_RWLOCK's default follows an
 * eliding BATON_LOCK; a wrapper's inner spec is read from the class's
 * canonical text; what cannot stand in for the pthread object fails with
 * the valid kinds. */
#include "check.h"
#include "preload/preload.h"
#include "api/registry.h"

#include <string.h>

#ifndef BATON_DEBUG
#define BATON_DEBUG 0
#endif
/* Debug builds check owners by default: the canonical text says so, per level. */
#define C(s) (BATON_DEBUG ? s ",check=1" : s)

static const unsigned lock = BATON_CAP_LOCK | BATON_CAP_TRYLOCK;

static void expect_spec(const char *value, unsigned need, const char *want, const char *want_debug)
{
    pl_class_t c = {.what = need & BATON_CAP_RW ? "rwlock" : "mutex", .env = "BATON_TEST"};
    char err[1024] = "";
    int rc = pl_config_class(&c, value, "default", need, err, sizeof err);
    const char *w = BATON_DEBUG ? want_debug : want;
    CHECK(rc == 0 && strcmp(c.spec, w) == 0, "'%s': '%s' (%s), expected '%s'", value, c.spec, err, w);
    if (rc != 0 || !c.kind->wrapper)
        return;
    /* The inner spec the wrapper's init reads: the canonical inner text. */
    baton_spec_t s, inner;
    char itext[160];
    if (baton_lockspec_parse(c.spec, &s) != 0)
        return;
    baton_lockspec_inner(&s, &inner);
    (void)baton_lockspec_print(&inner, itext, sizeof itext);
    CHECK(c.opts.inner >= c.spec && c.opts.inner < c.spec + sizeof c.spec &&
              c.opts.inner_len == strlen(itext) && strncmp(c.opts.inner, itext, c.opts.inner_len) == 0,
          "'%s': inner '%.*s', expected '%s'", value, (int)c.opts.inner_len, c.opts.inner, itext);
}

static void expect_bad(const char *value, unsigned need, const char *says)
{
    pl_class_t c = {.what = need & BATON_CAP_RW ? "rwlock" : "mutex", .env = "BATON_TEST"};
    char err[1024] = "";
    CHECK(pl_config_class(&c, value, "default", need, err, sizeof err) != 0 && strstr(err, says) &&
              strncmp(err, "BATON_TEST='", 12) == 0,
          "'%s': '%s', expected a message with '%s'", value, err, says);
}

static void expect_rwlock_default(const char *lock_value, const char *want, const char *want_debug)
{
    char buf[160];
    const char *got = pl_config_rwlock_default(lock_value, "DEFAULT", buf, sizeof buf);
    const char *w = BATON_DEBUG ? want_debug : want;
    CHECK(strcmp(got, w) == 0, "rwlock default for BATON_LOCK='%s': '%s', expected '%s'", lock_value, got, w);
}

int main(void)
{
    const unsigned rw = lock | BATON_CAP_RW;
    expect_spec("mcs", lock, "mcs:spinpark", C("mcs:spinpark"));
    expect_spec("mcs:spin", lock, "mcs:spin", C("mcs:spin"));
    expect_spec("ttas,check=1", lock, "ttas:spinpark,check=1", "ttas:spinpark,check=1");
    expect_spec("relay:yield,slice_us=9", lock, "relay:yield,slice_us=9", C("relay:yield,slice_us=9"));
    expect_spec("pthread", lock, "pthread", C("pthread"));
    expect_spec("elide(tas),sleep", lock, "elide(tas:spinpark),sleep=1",
                "elide(tas:spinpark,check=1),sleep=1,check=1");
    expect_spec("elide(tas:spin)", lock, "elide(tas:spin)", "elide(tas:spin,check=1),check=1");
    expect_spec("rw(ticket),readers=4", rw, "rw(ticket:spinpark),readers=4",
                "rw(ticket:spinpark,check=1),readers=4,check=1");
    expect_spec("elide(mcs),base", rw, "elide(rw(mcs:spinpark),prefer_readers=1),base=1",
                "elide(rw(mcs:spinpark,check=1),prefer_readers=1,check=1),base=1,check=1");
    expect_spec("elide(mrqd)", rw, "elide(mrqd:spinpark)", "elide(mrqd:spinpark,check=1),check=1");
    expect_spec("elide(mcs)", lock, "elide(mcs:spinpark)", "elide(mcs:spinpark,check=1),check=1");

    expect_bad("nosuch", lock, "valid kinds: tas, ttas");
    expect_bad("rcl", lock, "cannot stand in for a pthread mutex; use one of:");
    expect_bad("mcs", rw, "cannot stand in for a pthread rwlock; use one of: pthread, mrqd, rw");
    expect_bad("elide(rcl)", lock, "no lock word");
    expect_bad("relay,slice_us=0", lock, "out-of-range");

    expect_rwlock_default(NULL, "DEFAULT", "DEFAULT");
    expect_rwlock_default("", "DEFAULT", "DEFAULT");
    expect_rwlock_default("mcs", "DEFAULT", "DEFAULT");
    expect_rwlock_default("nosuch", "DEFAULT", "DEFAULT");
    expect_rwlock_default("elide(ttas),sleep", "elide(rw(ttas:backoff),prefer_readers=1),sleep=1",
                          "elide(rw(ttas:backoff,check=1),prefer_readers=1,check=1),sleep=1,check=1");
    expect_rwlock_default("elide(mrqd)", "elide(mrqd:spinpark)", "elide(mrqd:spinpark,check=1),check=1");

    /* The derivation works on the parsed value: the same as the text's. */
    baton_spec_t l, r, t;
    CHECK(baton_lockspec_parse("elide(clh:park)", &l) == 0 && pl_config_rwlock_derive(&l, &r) &&
              baton_lockspec_parse("elide(rw(clh:park),prefer_readers)", &t) == 0 && baton_spec_equal(&r, &t),
          "derived rwlock spec");
    CHECK(baton_lockspec_parse("rw(clh)", &l) == 0 && !pl_config_rwlock_derive(&l, &r), "rw(clh) derives");
    printf("%d failure%s\n", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
