/* baton/token.h - the calling thread's token: what lock words that track
 * their owner store, and what owner checks compare against.
 *
 * The token is the thread pointer, which on glibc is pthread_self() but costs
 * one register read instead of a call.  It is unique among live threads,
 * never 0, and always even (the thread control block is aligned), so lock
 * words may use bit 0 for themselves.
 */
#ifndef BATON_TOKEN_H
#define BATON_TOKEN_H

#include <pthread.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline uintptr_t baton_thread_token(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return (uintptr_t)__builtin_thread_pointer();
#else
    return (uintptr_t)pthread_self();
#endif
}

#ifdef __cplusplus
}
#endif
#endif
