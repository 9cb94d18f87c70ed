/* check.h - the failure counter and CHECK macro of the unit tests: a failed
 * check prints where and what, counts, and lets the test go on, so that one
 * run reports every failure; the test's main says how many at the end. */
#ifndef BATON_TESTS_CHECK_H
#define BATON_TESTS_CHECK_H

#include <stdio.h>

static int failures;

/* CHECK(cond, printf-style message) */
#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            failures++;                                                                                      \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                           \
            printf(__VA_ARGS__);                                                                             \
            printf("\n");                                                                                    \
        }                                                                                                    \
    } while (0)

#endif
