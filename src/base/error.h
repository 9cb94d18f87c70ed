/* error.h - the thread-local last-error message. */
#ifndef BATON_BASE_ERROR_H
#define BATON_BASE_ERROR_H

#include <stdarg.h>

/* Format a message into the calling thread's error buffer; returns err so
 * callers can write `return baton_fail(EINVAL, "...")`. */
int baton_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void baton_clear_error(void);

#endif
