/* test_spec.c - the lock spec as a value (src/base/spec.h, src/api/
 * lockspec.c): for every kind of the registry, every option at its minimum,
 * maximum and default, every switch written bare, every wait policy, and
 * every wrapper over every other kind, the printed spec parses back to the
 * same value and prints the same again; some specs print as written down
 * here; bad specs fail with a message that lists what is valid; the option
 * descriptors of the public API (baton_kind_options) are the kinds' tables.
 *
 * --broken-printer runs the round trips through a printer that drops the
 * last option of a kind: the test must fail then (ctest: WILL_FAIL). */
#include "check.h"
#include "../src/api/registry.h"

#include <baton/baton.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef BATON_DEBUG
#define BATON_DEBUG 0
#endif

#define TEXT_MAX 512

static bool broken_printer;
static size_t roundtrips;

/* The printer under test: the library's, or one that forgets the outer
 * kind's last option (a value other than its default is lost). */
static void print(const baton_spec_t *s, char *buf, size_t size)
{
    if (!broken_printer) {
        size_t n = baton_lockspec_print(s, buf, size);
        CHECK(n < size, "printed spec of %zu bytes cut short", n);
        return;
    }
    baton_spec_t t = *s;
    const baton_kind_t *k = t.node[0].kind;
    if (k->noptions > 0)
        t.node[0].value[k->noptions - 1] = k->options[k->noptions - 1].def;
    (void)baton_lockspec_print(&t, buf, size);
}

/* text must parse; print(parse(text)) parses to the same value and prints
 * the same text again.  The value goes to *out (may be NULL). */
static bool roundtrip(const char *text, baton_spec_t *out)
{
    baton_spec_t x, y;
    char t1[TEXT_MAX], t2[TEXT_MAX];
    int rc = baton_lockspec_parse(text, &x);
    CHECK(rc == 0, "'%s' does not parse: %s", text, baton_last_error());
    if (rc != 0)
        return false;
    roundtrips++;
    print(&x, t1, sizeof t1);
    rc = baton_lockspec_parse(t1, &y);
    CHECK(rc == 0, "'%s' printed as '%s', which does not parse: %s", text, t1, baton_last_error());
    if (rc != 0)
        return false;
    CHECK(baton_spec_equal(&x, &y), "'%s' printed as '%s', which parses to another value", text, t1);
    print(&y, t2, sizeof t2);
    CHECK(strcmp(t1, t2) == 0, "'%s' printed as '%s', then as '%s'", text, t1, t2);
    if (out)
        *out = x;
    return true;
}

/* text must fail with errno-value rc and a message holding each of the
 * NULL-terminated strings that follow. */
static void expect_bad(const char *text, int rc, ...)
{
    baton_spec_t x;
    int got = baton_lockspec_parse(text, &x);
    CHECK(got == rc, "'%s': %d, expected %d (%s)", text, got, rc, baton_last_error());
    va_list ap;
    va_start(ap, rc);
    for (const char *want; (want = va_arg(ap, const char *)) != NULL;)
        CHECK(strstr(baton_last_error(), want) != NULL, "'%s': message '%s' does not say '%s'", text,
              baton_last_error(), want);
    va_end(ap);
}

static bool monitor_available(void)
{
    baton_wait_t w;
    return baton_wait_init(&w, BATON_WAIT_MONITOR) == 0;
}

/* Every option of k, written after `prefix` (a kind, or a wrapper over an
 * inner kind): minimum, maximum, default, bare switches, and the values
 * just out of range. */
static void options_of(const baton_kind_t *k, const char *prefix)
{
    char text[TEXT_MAX];
    baton_spec_t x;
    for (size_t j = 0; j < k->noptions; j++) {
        const baton_option_desc_t *d = &k->options[j];
        const uint64_t vals[] = {d->min, d->max, d->def};
        for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
            snprintf(text, sizeof text, "%s,%s=%llu", prefix, d->name, (unsigned long long)vals[v]);
            if (vals[v] < d->min || vals[v] > d->max) {
                /* A default outside the range means "not chosen"; it cannot be written. */
                expect_bad(text, EINVAL, "out-of-range option", d->name, (const char *)NULL);
                continue;
            }
            if (roundtrip(text, &x))
                CHECK(x.node[0].value[j] == vals[v], "'%s': value %llu", text,
                      (unsigned long long)x.node[0].value[j]);
        }
        if (d->min > 0) {
            snprintf(text, sizeof text, "%s,%s=%llu", prefix, d->name, (unsigned long long)d->min - 1);
            expect_bad(text, EINVAL, "out-of-range option", (const char *)NULL);
        }
        if (d->max < UINT64_MAX / 10) {
            snprintf(text, sizeof text, "%s,%s=%llu", prefix, d->name, (unsigned long long)d->max + 1);
            expect_bad(text, EINVAL, "out-of-range option", (const char *)NULL);
        }
        snprintf(text, sizeof text, "%s,%s", prefix, d->name);
        if (d->min == 0 && d->max == 1) {
            if (roundtrip(text, &x))
                CHECK(x.node[0].value[j] == 1, "'%s': a bare switch is not 1", text);
        } else {
            expect_bad(text, EINVAL, "bad option", (const char *)NULL);
        }
    }
    /* Two options at once, the last one winning where a key repeats. */
    if (k->noptions >= 2) {
        const baton_option_desc_t *a = &k->options[0], *b = &k->options[1];
        snprintf(text, sizeof text, "%s,%s=%llu,%s=%llu,%s=%llu", prefix, a->name, (unsigned long long)a->max,
                 b->name, (unsigned long long)b->min, a->name, (unsigned long long)a->min);
        if (roundtrip(text, &x))
            CHECK(x.node[0].value[0] == a->min && x.node[0].value[1] == b->min, "'%s': values", text);
    }
    for (int c = 0; c <= 2; c++) {
        snprintf(text, sizeof text, "%s,check%s", prefix, c == 2 ? "" : c ? "=1" : "=0");
        if (roundtrip(text, &x))
            CHECK(x.node[0].check == (c != 0), "'%s': check %d", text, x.node[0].check);
    }
}

static void every_kind(void)
{
    char text[TEXT_MAX], prefix[TEXT_MAX];
    baton_spec_t x;
    const baton_kind_t *k;
    for (size_t i = 0; (k = baton_registry_at(i)) != NULL; i++) {
        if (k->wrapper) {
            /* Over every kind that is not a wrapper, and over another wrapper. */
            const baton_kind_t *ik;
            for (size_t m = 0; (ik = baton_registry_at(m)) != NULL; m++) {
                if (ik->wrapper)
                    continue;
                snprintf(text, sizeof text, "%s(%s)", k->name, ik->name);
                if (roundtrip(text, &x))
                    CHECK(x.depth == 2 && x.node[0].kind == k && x.node[1].kind == ik, "'%s': nodes", text);
            }
            snprintf(prefix, sizeof prefix, "%s(rw(mcs:spinpark,check),readers=8)", k->name);
            if (roundtrip(prefix, &x))
                CHECK(x.depth == 3 && x.node[1].value[0] == 8 && x.node[2].check &&
                          x.node[2].wait == BATON_WAIT_SPINPARK,
                      "'%s': nodes", prefix);
            options_of(k, prefix);
            continue;
        }
        if (roundtrip(k->name, &x))
            CHECK(x.depth == 1 && x.node[0].kind == k && !x.node[0].wait_named &&
                      x.node[0].check == BATON_DEBUG,
                  "'%s': node", k->name);
        if (k->caps & BATON_CAP_WAIT) {
            for (unsigned w = 0; w <= BATON_WAIT_KINDS; w++) {
                const char *wn = w == BATON_WAIT_KINDS ? "auto" : baton_wait_name((baton_wait_kind)w);
                snprintf(text, sizeof text, "%s:%s", k->name, wn);
                if (w < BATON_WAIT_KINDS && !(k->waits & BATON_WAIT_BIT(w))) {
                    expect_bad(text, EINVAL, "unknown wait policy", (const char *)NULL);
                } else if (w == BATON_WAIT_MONITOR && !monitor_available()) {
                    expect_bad(text, ENOTSUP, "monitor", (const char *)NULL);
                } else if (roundtrip(text, &x)) {
                    CHECK(x.node[0].wait_named && x.node[0].wait < BATON_WAIT_KINDS &&
                              (w == BATON_WAIT_KINDS || x.node[0].wait == w),
                          "'%s': policy %u", text, x.node[0].wait);
                }
            }
            snprintf(prefix, sizeof prefix, "%s:yield", k->name);
        } else {
            snprintf(text, sizeof text, "%s:spin", k->name);
            expect_bad(text, EINVAL, "takes no wait policy", (const char *)NULL);
            snprintf(prefix, sizeof prefix, "%s", k->name);
        }
        options_of(k, prefix);
        options_of(k, k->name);
    }
}

/* print(parse(text)) is `want` (want_debug in builds that check owners). */
static void expect_canon(const char *text, const char *want, const char *want_debug)
{
    baton_spec_t x;
    char got[TEXT_MAX];
    if (!roundtrip(text, &x))
        return;
    print(&x, got, sizeof got);
    const char *w = BATON_DEBUG ? want_debug : want;
    CHECK(strcmp(got, w) == 0, "'%s' prints as '%s', expected '%s'", text, got, w);
}

static void canonical_forms(void)
{
    expect_canon("relay:spinpark,slice_us=100", "relay:spinpark,slice_us=100",
                 "relay:spinpark,slice_us=100,check=1");
    expect_canon("mcs", "mcs:spin", "mcs:spin,check=1");
    expect_canon("mcs,check", "mcs:spin,check=1", "mcs:spin,check=1");
    expect_canon("mcs,check=0", "mcs:spin", "mcs:spin,check=0");
    expect_canon("pthread", "pthread", "pthread,check=1");
    expect_canon("elide(ttas),sleep", "elide(ttas:backoff),sleep=1",
                 "elide(ttas:backoff,check=1),sleep=1,check=1");
    expect_canon("rw(mcs:spinpark),prefer_readers", "rw(mcs:spinpark),prefer_readers=1",
                 "rw(mcs:spinpark,check=1),prefer_readers=1,check=1");
    expect_canon("rw(relay:park,slice_us=7),readers=4,prefer_readers=0",
                 "rw(relay:park,slice_us=7),readers=4",
                 "rw(relay:park,slice_us=7,check=1),readers=4,check=1");
    expect_canon("elide(rw(default),prefer_readers)", "elide(rw(runner:spinpark),prefer_readers=1)",
                 "elide(rw(runner:spinpark,check=1),prefer_readers=1,check=1),check=1");

    /* "default", "" and NULL name the default kind; "auto" resolves. */
    baton_spec_t a, b, c, d;
    if (roundtrip("default", &a) && roundtrip("", &b) && roundtrip(NULL, &c) && roundtrip("runner:auto", &d))
        CHECK(baton_spec_equal(&a, &b) && baton_spec_equal(&a, &c) && baton_spec_equal(&a, &d) &&
                  strcmp(a.node[0].kind->name, "runner") == 0 && !a.node[0].wait_named &&
                  d.node[0].wait_named,
              "default, \"\", NULL and runner:auto differ");
}

/* baton_spec_equal sees each field: a value that differs in one field only
 * is another value (or the round trips above could not fail on it). */
static void equality(void)
{
    baton_spec_t x, y;
    if (!roundtrip("rw(relay:park,slice_us=7),readers=4", &x))
        return;
    CHECK(baton_spec_equal(&x, &x), "a value differs from itself");
    y = x, y.node[1].value[0]++;
    CHECK(!baton_spec_equal(&x, &y), "an inner option is not compared");
    y = x, y.node[0].value[0]++;
    CHECK(!baton_spec_equal(&x, &y), "an outer option is not compared");
    y = x, y.node[1].wait = BATON_WAIT_SPIN;
    CHECK(!baton_spec_equal(&x, &y), "the policy is not compared");
    y = x, y.node[0].check = !y.node[0].check;
    CHECK(!baton_spec_equal(&x, &y), "check is not compared");
    y = x, y.node[1].kind = &baton_kind_mcs;
    CHECK(!baton_spec_equal(&x, &y), "the kind is not compared");
    y = x, y.depth = 1;
    CHECK(!baton_spec_equal(&x, &y), "the depth is not compared");
    y = x, y.node[1].wait_named = !y.node[1].wait_named;
    CHECK(baton_spec_equal(&x, &y), "provenance (wait_named) is compared");
}

static void bad_specs(void)
{
    /* An unknown kind lists every kind. */
    char all[1024] = "";
    const baton_kind_t *k;
    for (size_t i = 0; (k = baton_registry_at(i)) != NULL; i++)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "", k->name);
    expect_bad("nosuchlock", EINVAL, "unknown lock kind 'nosuchlock'; valid kinds: ", all,
               (const char *)NULL);
    expect_bad("rw(nosuchlock)", EINVAL, "unknown lock kind 'nosuchlock'; valid kinds: ", all,
               (const char *)NULL);
    expect_bad("mcs,bogus=1", EINVAL, "unknown option 'bogus=1'", (const char *)NULL);
    expect_bad("relay,bogus=1", EINVAL, "valid options: slice_us=<1..1000000>, check=<0|1>",
               (const char *)NULL);
    expect_bad("relay,slice_us=0", EINVAL, "out-of-range option 'slice_us=0'", (const char *)NULL);
    expect_bad("relay,slice_us=abc", EINVAL, "bad option", (const char *)NULL);
    expect_bad("relay,slice_us=99999999999999999999", EINVAL, "bad option", (const char *)NULL);
    expect_bad("relay,slice_us", EINVAL, "bad option 'slice_us'", (const char *)NULL);
    expect_bad("relay,check=2", EINVAL, "valid options", (const char *)NULL);
    expect_bad("mcs:nosuch", EINVAL, "unknown wait policy 'nosuch'", "spinpark", (const char *)NULL);
    expect_bad("pthread:spin", EINVAL, "takes no wait policy", (const char *)NULL);
    expect_bad("mcs(tas)", EINVAL, "does not wrap", (const char *)NULL);
    expect_bad("rw", EINVAL, "wraps another kind", (const char *)NULL);
    expect_bad("rw()", EINVAL, "needs an inner lock spec", (const char *)NULL);
    expect_bad("rw(mcs", EINVAL, "unbalanced parentheses", (const char *)NULL);
    expect_bad("rw(mcs)x", EINVAL, "unexpected 'x'", (const char *)NULL);
    expect_bad("rw(mcs,slice_us=1)", EINVAL, "unknown option 'slice_us=1' for 'mcs'", (const char *)NULL);
    /* Wrappers nest BATON_SPEC_DEPTH - 1 deep, no deeper. */
    char deep[TEXT_MAX] = "";
    for (int i = 0; i < BATON_SPEC_DEPTH - 1; i++)
        strcat(deep, "rw(");
    strcat(deep, "mcs");
    for (int i = 0; i < BATON_SPEC_DEPTH - 1; i++)
        strcat(deep, ")");
    baton_spec_t x;
    if (roundtrip(deep, &x))
        CHECK(x.depth == BATON_SPEC_DEPTH, "'%s': depth %zu", deep, x.depth);
    char deeper[TEXT_MAX + 8];
    snprintf(deeper, sizeof deeper, "rw(%s)", deep);
    expect_bad(deeper, EINVAL, "nest at most", (const char *)NULL);
}

/* What a kind's init sees, derived from the value: options, policy, and a
 * wrapper's inner spec as the printed value's inner text. */
static void opts(void)
{
    baton_spec_t x, inner;
    baton_opts_t o;
    char canon[TEXT_MAX], itext[TEXT_MAX];
    if (!roundtrip("elide(rw(mcs:park),prefer_readers),sleep", &x))
        return;
    (void)baton_lockspec_print(&x, canon, sizeof canon);
    CHECK(baton_lockspec_opts(&x, canon, &o) == 0, "opts: %s", baton_last_error());
    baton_lockspec_inner(&x, &inner);
    (void)baton_lockspec_print(&inner, itext, sizeof itext);
    CHECK(o.inner == canon + strlen("elide(") && o.inner_len == strlen(itext) &&
              strncmp(o.inner, itext, o.inner_len) == 0,
          "inner '%.*s', expected '%s'", (int)o.inner_len, o.inner, itext);
    CHECK(inner.depth == 2 && inner.node[0].kind == &baton_kind_rw && inner.node[1].wait == BATON_WAIT_PARK,
          "inner value");
    CHECK(baton_lockspec_opts(&x, "elide(mcs)", &o) == EINVAL, "opts from another spec's text");
    /* baton_spec_parse (the text-to-lock path) agrees with the value. */
    const baton_kind_t *k;
    char c2[TEXT_MAX];
    const char *text = "relay:yield,slice_us=9";
    CHECK(baton_spec_parse(text, &k, &o, c2, sizeof c2) == 0 && k == &baton_kind_relay && o.value[0] == 9 &&
              o.wait.kind == BATON_WAIT_YIELD && o.check == BATON_DEBUG,
          "baton_spec_parse('%s')", text);
    text = "rw(mcs:park ),readers=2";
    CHECK(baton_spec_parse(text, &k, &o, c2, sizeof c2) == EINVAL, "'%s' parses", text);
    text = "rw(mcs:park),readers=2";
    CHECK(baton_spec_parse(text, &k, &o, c2, sizeof c2) == 0 && o.inner == text + 3 && o.inner_len == 8,
          "baton_spec_parse('%s'): inner '%.*s'", text, (int)o.inner_len, o.inner);
    if (baton_lockspec_parse(text, &x) == 0) {
        (void)baton_lockspec_print(&x, canon, sizeof canon);
        CHECK(strcmp(canon, c2) == 0, "baton_spec_parse printed '%s', the value '%s'", c2, canon);
    }
}

/* The public descriptors are the kinds' tables, with check after them. */
static void descriptors(void)
{
    const baton_kind_info_t *info;
    size_t n = baton_kinds(&info);
    for (size_t i = 0; i < n; i++) {
        const baton_kind_t *k = baton_registry_at(i);
        const baton_option_info_t *opt;
        size_t m = baton_kind_options(&info[i], &opt);
        CHECK(m == k->noptions + 1 && opt != NULL, "%s: %zu options", k->name, m);
        if (m != k->noptions + 1 || opt == NULL)
            continue;
        for (size_t j = 0; j < k->noptions; j++) {
            const baton_option_desc_t *d = &k->options[j];
            bool sw = d->min == 0 && d->max == 1;
            CHECK(strcmp(opt[j].name, d->name) == 0 && opt[j].min == d->min && opt[j].max == d->max &&
                      opt[j].def == d->def && opt[j].help == d->help &&
                      opt[j].flags == (sw ? BATON_OPTION_SWITCH : 0u),
                  "%s: option %s", k->name, d->name);
        }
        const baton_option_info_t *c = &opt[k->noptions];
        CHECK(strcmp(c->name, "check") == 0 && c->min == 0 && c->max == 1 && c->def == BATON_DEBUG &&
                  c->flags == (BATON_OPTION_SWITCH | BATON_OPTION_COMMON) && c->help[0] != '\0',
              "%s: check", k->name);
    }
    baton_kind_info_t copy = info[0];
    const baton_option_info_t *opt = &(baton_option_info_t){0};
    CHECK(baton_kind_options(&copy, &opt) == 0 && opt == NULL, "a copy of a kind's info has options");
    CHECK(baton_kind_options(NULL, NULL) == 0, "NULL has options");
}

int main(int argc, char **argv)
{
    broken_printer = argc > 1 && strcmp(argv[1], "--broken-printer") == 0;
    every_kind();
    canonical_forms();
    equality();
    bad_specs();
    opts();
    descriptors();
    printf("%zu round trips%s; %d failure%s\n", roundtrips, broken_printer ? " (broken printer)" : "",
           failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
