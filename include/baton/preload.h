/* baton/preload.h - what libbaton-preload.so reports about itself.
 *
 * A program running under the interposer (LD_PRELOAD=libbaton-preload.so,
 * or `baton run`) may look these up with dlsym(RTLD_DEFAULT, ...); they are
 * absent otherwise.  Tests use them to check that the interposer is in
 * place and what its locks cost.
 */
#ifndef BATON_PRELOAD_PUBLIC_H
#define BATON_PRELOAD_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { BATON_PRELOAD_MUTEX = 0, BATON_PRELOAD_RWLOCK = 1, BATON_PRELOAD_SPIN = 2, BATON_PRELOAD_OMP = 3 };

typedef struct baton_preload_info {
    const char *what;      /* "mutex", "rwlock", "spinlock", "omp" */
    const char *spec;      /* the configured spec (canonical) */
    int stock;             /* 1: spec "pthread", glibc's own implementation */
    size_t bytes_per_lock; /* side-state bytes per lock (beyond the pthread object) */
    uint64_t live, peak, created;
    uint64_t reserved_bytes; /* address space reserved for lock states */
} baton_preload_info_t;

/* 0, or EINVAL for an unknown `which`. */
int baton_preload_info(int which, baton_preload_info_t *out);

#ifdef __cplusplus
}
#endif
#endif
