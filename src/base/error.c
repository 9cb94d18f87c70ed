/* error.c - the thread-local last-error message (baton_last_error()). */
#include <baton/baton.h>
#include "error.h"

#include <stdio.h>

#define ERROR_MAX 1024

static _Thread_local char message[ERROR_MAX];

int baton_fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return err;
}

void baton_clear_error(void) { message[0] = '\0'; }

const char *baton_last_error(void) { return message; }
