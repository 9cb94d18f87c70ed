/* versions.c - every exported version of every replaced call reaches the
 * interposer.
 *
 * versions_gen.h (generated at build time from src/preload/exports.map and
 * `objdump -T` of glibc and libgomp) holds one link-time reference per
 * (name, version) pair, e.g. pthread_mutex_trylock@GLIBC_2.2.5 and
 * @GLIBC_2.34, made with .symver: the dynamic loader binds each exactly as
 * it would a call in a program built against that version.  Under the
 * interposer each must resolve into libbaton-preload.so (dladdr); without
 * it, into the system library that defines it (which shows the references
 * are real).  Also: dlsym(RTLD_DEFAULT, name) of every exported name.
 *
 * Not asserted, printed: dlvsym(RTLD_DEFAULT, name, version).  glibc's
 * dlvsym looks versions up as "hidden" and so never matches an unversioned
 * definition: it answers with glibc's own function even under the
 * interposer.  A program that calls dlvsym itself bypasses the interposer;
 * binding at load time, which is what programs do, is what is tested.
 */
#include "ptest.h"
#include "versions_gen.h"

static int in_preload(const char *fname)
{
    return fname != NULL && strstr(fname, "libbaton-preload") != NULL;
}

static const char *base(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path ? path : "(none)";
}

int main(void)
{
    ptest_begin("versions", 30);
    int interposed = ptest_interposer() != NULL;
    size_t nrefs = sizeof pv_refs / sizeof pv_refs[0];
    size_t nexported = sizeof pv_exported / sizeof pv_exported[0];

    ptest_phase = "link-time versioned references";
    size_t reached = 0;
    for (size_t i = 0; i < nrefs; i++) {
        const pv_ref_t *r = &pv_refs[i];
        void *addr;
        memcpy(&addr, &r->fn, sizeof addr);
        Dl_info d;
        memset(&d, 0, sizeof d);
        if (addr == NULL || dladdr(addr, &d) == 0) {
            ptest_fail(__LINE__, "%s@%s did not resolve", r->name, r->version);
            continue;
        }
        if (interposed) {
            if (in_preload(d.dli_fname))
                reached++;
            else
                ptest_fail(__LINE__, "%s@%s binds to %s, not to libbaton-preload.so", r->name, r->version,
                           d.dli_fname);
        } else {
            const char *want = strcmp(r->lib, "libc") == 0 ? "libc.so" : "libgomp.so";
            CHECK(strstr(base(d.dli_fname), want) != NULL, "control: %s@%s binds to %s, expected %s", r->name,
                  r->version, d.dli_fname, want);
        }
    }

    ptest_phase = "dlsym of every exported name";
    size_t dl_reached = 0;
    for (size_t i = 0; i < nexported && interposed; i++) {
        void *p = dlsym(RTLD_DEFAULT, pv_exported[i]);
        Dl_info d;
        memset(&d, 0, sizeof d);
        if (p != NULL && dladdr(p, &d) != 0 && in_preload(d.dli_fname))
            dl_reached++;
        else
            ptest_fail(__LINE__, "dlsym(RTLD_DEFAULT, \"%s\") gives %p in %s, not libbaton-preload.so",
                       pv_exported[i], p, p ? d.dli_fname : "(nothing)");
    }

    /* Information only (see the header comment). */
    size_t dlv_total = 0, dlv_preload = 0;
    for (size_t i = 0; i < nrefs && interposed; i++) {
        void *p = dlvsym(RTLD_DEFAULT, pv_refs[i].name, pv_refs[i].version);
        Dl_info d;
        if (p == NULL || dladdr(p, &d) == 0)
            continue;
        dlv_total++;
        dlv_preload += in_preload(d.dli_fname) != 0;
    }
    size_t not_replaced = 0;
    char list[1024] = "";
    for (size_t i = 0; pv_not_replaced[i] != NULL; i++) {
        not_replaced++;
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", used ? " " : "", pv_not_replaced[i]);
    }
    const char *q = getenv("PTEST_QUIET");
    if (interposed && (q == NULL || q[0] == '\0'))
        printf(
            "versions: note: dlvsym(RTLD_DEFAULT) resolves %zu of %zu versioned names into the interposer "
            "(glibc's dlvsym never matches an unversioned definition); glibc lock calls not in exports.map "
            "(%zu): %s\n",
            dlv_preload, dlv_total, not_replaced, list);

    if (interposed)
        return ptest_end(
            "%zu of %zu (name, version) references and %zu of %zu exported names reach the interposer",
            reached, nrefs, dl_reached, nexported);
    return ptest_end("%zu (name, version) references bind to the system libraries", nrefs);
}
