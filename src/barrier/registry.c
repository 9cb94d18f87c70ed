/* registry.c - the one table that names every barrier kind.
 *
 * Adding a kind: write src/barrier/<name>.c with its algorithm and, at the
 * bottom, its `const bar_kind_t bar_kind_<name>`; declare it in barrier.h;
 * add it to `kinds` below; add the file to CMakeLists.txt.  The barrier
 * tests (tests/test_barrier.c) and `baton bench barrier` pick it up from
 * here (baton_barrier_kinds()).
 */
#include "barrier.h"
#include "../base/join.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const bar_kind_t *const kinds[] = {
    &bar_kind_central,
    &bar_kind_twolevel,
    &bar_kind_dissemination,
    &bar_kind_tournament,
};

#define NKINDS (sizeof kinds / sizeof kinds[0])

/* The default kind: what "default", "" and NULL name.  twolevel is the
 * seed's design; on a machine with one core group it is the central
 * counter with its episode word beside the counter (barrier.h:
 * BAR_SHARE_LINE_MAX), and with several it keeps most arrivals inside a
 * group. */
#define DEFAULT_KIND bar_kind_twolevel

/* Options every kind takes, after its own. */
static const baton_option_desc_t common_options[] = {
    {"yield_us", 0, 1000000, BAR_YIELD_AUTO,
     "before its policy, a waiter polls with sched_yield() for up to this many microseconds "
     "(default: decided at creation, see baton_barrier_new)"},
};
#define NCOMMON (sizeof common_options / sizeof common_options[0])

static baton_option_desc_t tables[NKINDS][BATON_KIND_MAX_OPTIONS];
static baton_barrier_kind_info_t infos[NKINDS];
static char option_text[NKINDS][320];
static char names[NKINDS * 24]; /* "central, twolevel, ..." */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
    for (size_t i = 0; i < NKINDS; i++) {
        const bar_kind_t *k = kinds[i];
        size_t n = 0;
        for (size_t j = 0; j < k->noptions && n < BATON_KIND_MAX_OPTIONS; j++)
            tables[i][n++] = k->options[j];
        for (size_t j = 0; j < NCOMMON && n < BATON_KIND_MAX_OPTIONS; j++)
            tables[i][n++] = common_options[j];
        char *p = option_text[i];
        size_t left = sizeof option_text[i];
        p[0] = '\0';
        for (size_t j = 0; j < n; j++) {
            const baton_option_desc_t *d = &tables[i][j];
            int w = d->def > d->max
                        ? snprintf(p, left, "%s%s=<%llu..%llu, default auto>", j ? " " : "", d->name,
                                   (unsigned long long)d->min, (unsigned long long)d->max)
                        : snprintf(p, left, "%s%s=<%llu..%llu, default %llu>", j ? " " : "", d->name,
                                   (unsigned long long)d->min, (unsigned long long)d->max,
                                   (unsigned long long)d->def);
            if (w < 0 || (size_t)w >= left)
                break;
            p += w;
            left -= (size_t)w;
        }
        baton_join(names, sizeof names, ", ", "%s", k->name);
        infos[i] = (baton_barrier_kind_info_t){
            .name = k->name,
            .summary = k->summary,
            .waits = k->waits,
            .default_wait = baton_wait_name((baton_wait_kind)k->default_wait),
            .options = option_text[i],
        };
    }
}

size_t baton_barrier_kinds(const baton_barrier_kind_info_t **list)
{
    pthread_once(&once, build);
    if (list)
        *list = infos;
    return NKINDS;
}

size_t bar_options(const bar_kind_t *k, const baton_option_desc_t **table)
{
    pthread_once(&once, build);
    for (size_t i = 0; i < NKINDS; i++)
        if (kinds[i] == k) {
            *table = tables[i];
            size_t n = k->noptions + NCOMMON;
            return n < BATON_KIND_MAX_OPTIONS ? n : BATON_KIND_MAX_OPTIONS;
        }
    *table = NULL;
    return 0;
}

const bar_kind_t *bar_registry_find(const char *name, size_t len)
{
    if (len == 0 || (len == 7 && memcmp(name, "default", 7) == 0))
        return &DEFAULT_KIND;
    for (size_t i = 0; i < NKINDS; i++)
        if (strncmp(kinds[i]->name, name, len) == 0 && kinds[i]->name[len] == '\0')
            return kinds[i];
    return NULL;
}

const char *bar_registry_names(void)
{
    pthread_once(&once, build);
    return names;
}
