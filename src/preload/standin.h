/* standin.h - which kinds can stand in for each interposed pthread object.
 *
 * What a kind must offer to replace a class's pthread object (`need`), and
 * the one test of it, for the interposer's configuration (config.c) and
 * for the CLI, which checks a spec before it launches a program with the
 * interposer (src/cli/launch.c).  Everything here is inline: the CLI links
 * the library, not the interposer.
 */
#ifndef BATON_PRELOAD_STANDIN_H
#define BATON_PRELOAD_STANDIN_H

#include "../base/join.h"

#include <baton/baton.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Mutexes, spinlocks and OpenMP locks: lock and trylock. */
#define PL_NEED_LOCK ((unsigned)(BATON_CAP_LOCK | BATON_CAP_TRYLOCK))
/* Rwlocks: shared readers too. */
#define PL_NEED_RWLOCK (PL_NEED_LOCK | (unsigned)BATON_CAP_RW)

/* Can the kind `name` (with `caps`) stand in for an object that needs
 * `need`?  "pthread" (stock: glibc's own) always can.  elide(<kind>) stands
 * in for rwlocks too, without BATON_CAP_RW: the interposer wraps a mutex
 * kind in rw() inside it (config.c). */
static inline bool pl_stands_in(const char *name, unsigned caps, unsigned need)
{
    if (strcmp(name, "pthread") == 0)
        return true;
    if ((need & BATON_CAP_RW) && strcmp(name, "elide") == 0)
        need &= ~(unsigned)BATON_CAP_RW;
    return (caps & need) == need;
}

/* What `need` asks for, in words: "lock, trylock", and " and shared
 * readers" after it for rwlocks. */
static inline const char *pl_need_words(unsigned need)
{
    return need & BATON_CAP_RW ? "lock, trylock and shared readers" : "lock, trylock";
}

/* The kinds that can stand in for an object that needs `need`, in the
 * registry's order, ", "-joined into buf (cut short if it does not fit).
 * `annotate`: "pthread (glibc's own)", a wrapper as "rw(<kind>)". */
static inline void pl_standin_names(char *buf, size_t size, unsigned need, bool annotate)
{
    const baton_kind_info_t *k;
    size_t n = baton_kinds(&k);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!pl_stands_in(k[i].name, k[i].caps, need))
            continue;
        const char *note = !annotate                           ? ""
                           : strcmp(k[i].name, "pthread") == 0 ? " (glibc's own)"
                           : (k[i].caps & BATON_CAP_WRAPPER)   ? "(<kind>)"
                                                               : "";
        if (!baton_join(buf, size, ", ", "%s%s", k[i].name, note))
            break;
    }
}

#endif
