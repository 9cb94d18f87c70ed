/* join.c - lists written into a fixed buffer (join.h). */
#include "join.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool baton_join(char *buf, size_t size, const char *sep, const char *fmt, ...)
{
    if (size == 0)
        return false;
    size_t used = strnlen(buf, size - 1);
    if (used > 0) {
        int w = snprintf(buf + used, size - used, "%s", sep);
        if (w < 0 || (size_t)w >= size - used)
            return false;
        used += (size_t)w;
    }
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
    return w >= 0 && (size_t)w < size - used;
}
