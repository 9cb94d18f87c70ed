/* registry.c - the one table that names every lock kind.
 *
 * Adding a kind: write src/locks/<name>.c with its algorithm and, at the
 * bottom, its `const baton_kind_t baton_kind_<name>`; declare it in
 * src/base/kind.h; add it to `kinds` below; add the file to CMakeLists.txt.
 * The stress suite, the unit tests and `baton bench` pick it up from here.
 */
#include "registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const baton_kind_t *const kinds[] = {
    &baton_kind_tas,        &baton_kind_ttas,  &baton_kind_ticket,  &baton_kind_mcs,     &baton_kind_clh,
    &baton_kind_onespinner, &baton_kind_relay, &baton_kind_runner,  &baton_kind_pthread, &baton_kind_rcl,
    &baton_kind_server,     &baton_kind_fc,    &baton_kind_ccsynch, &baton_kind_qd,      &baton_kind_mrqd,
    &baton_kind_hqd,        &baton_kind_rw,    &baton_kind_elide,
};

#define NKINDS (sizeof kinds / sizeof kinds[0])

/* The default kind: what "default", "" and NULL name. */
#define DEFAULT_KIND "runner"

#ifndef BATON_DEBUG
#define BATON_DEBUG 0
#endif

static baton_kind_info_t infos[NKINDS];
/* Each kind's options as public data: its own, then check. */
static baton_option_info_t option_infos[NKINDS][BATON_KIND_MAX_OPTIONS + 1];
static size_t noption_infos[NKINDS];
static char option_text[NKINDS][256];
static pthread_once_t infos_once = PTHREAD_ONCE_INIT;

/* Options that are 0 or 1 may be written bare (the tail's grammar,
 * src/base/spec.c). */
static unsigned option_flags(uint64_t min, uint64_t max)
{
    return min == 0 && max == 1 ? BATON_OPTION_SWITCH : 0u;
}

static void build_infos(void)
{
    for (size_t i = 0; i < NKINDS; i++) {
        const baton_kind_t *k = kinds[i];
        baton_option_info_t *oi = option_infos[i];
        for (size_t j = 0; j < k->noptions; j++) {
            const baton_option_desc_t *d = &k->options[j];
            oi[j] = (baton_option_info_t){.name = d->name,
                                          .min = d->min,
                                          .max = d->max,
                                          .def = d->def,
                                          .help = d->help,
                                          .flags = option_flags(d->min, d->max)};
        }
        oi[k->noptions] = (baton_option_info_t){
            .name = "check",
            .min = 0,
            .max = 1,
            .def = BATON_DEBUG,
            .help = "track the owner and report misuse (EPERM, EBUSY) even where the kind does not",
            .flags = BATON_OPTION_SWITCH | BATON_OPTION_COMMON};
        noption_infos[i] = k->noptions + 1;

        /* The one-line text of baton_kind_info_t, from the same data: the
         * kind's own options (check is the grammar's, baton/baton.h). */
        char *p = option_text[i];
        size_t left = sizeof option_text[i];
        p[0] = '\0';
        for (size_t j = 0; j < k->noptions; j++) {
            int n = snprintf(p, left, "%s%s=<%llu..%llu, default %llu>", j ? " " : "", oi[j].name,
                             (unsigned long long)oi[j].min, (unsigned long long)oi[j].max,
                             (unsigned long long)oi[j].def);
            if (n < 0 || (size_t)n >= left)
                break;
            p += n;
            left -= (size_t)n;
        }
        infos[i] = (baton_kind_info_t){
            .name = k->name,
            .summary = k->summary,
            .caps = k->caps,
            .waits = k->waits,
            .default_wait = k->default_wait == BATON_NO_WAIT ? "-" : baton_wait_name(k->default_wait),
            .options = option_text[i],
        };
    }
}

size_t baton_kind_options(const baton_kind_info_t *kind, const baton_option_info_t **list)
{
    pthread_once(&infos_once, build_infos);
    if (list)
        *list = NULL;
    for (size_t i = 0; i < NKINDS; i++)
        if (&infos[i] == kind) {
            if (list)
                *list = option_infos[i];
            return noption_infos[i];
        }
    return 0;
}

size_t baton_kinds(const baton_kind_info_t **list)
{
    pthread_once(&infos_once, build_infos);
    if (list)
        *list = infos;
    return NKINDS;
}

const baton_kind_info_t *baton_registry_info(const baton_kind_t *k)
{
    pthread_once(&infos_once, build_infos);
    for (size_t i = 0; i < NKINDS; i++)
        if (kinds[i] == k)
            return &infos[i];
    return NULL;
}

const baton_kind_t *baton_registry_at(size_t i) { return i < NKINDS ? kinds[i] : NULL; }

size_t baton_registry_index(const baton_kind_t *k)
{
    size_t i = 0;
    while (i < NKINDS && kinds[i] != k)
        i++;
    return i;
}

const baton_kind_t *baton_registry_find(const char *name, size_t len)
{
    if (len == 0 || (len == 7 && memcmp(name, "default", 7) == 0)) {
        name = DEFAULT_KIND;
        len = strlen(DEFAULT_KIND);
    }
    for (size_t i = 0; i < NKINDS; i++)
        if (strlen(kinds[i]->name) == len && memcmp(kinds[i]->name, name, len) == 0)
            return kinds[i];
    return NULL;
}

size_t baton_registry_names(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NKINDS; i++) {
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", kinds[i]->name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    return used;
}

const char *baton_wait_policy_name(unsigned kind) { return baton_wait_name((baton_wait_kind)kind); }
