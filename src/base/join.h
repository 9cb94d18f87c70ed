/* join.h - lists written into a fixed buffer ("a, b, c"): the one loop the
 * library, the interposer, the benches and the CLI write their lists of
 * names, CPUs and values with. */
#ifndef BATON_BASE_JOIN_H
#define BATON_BASE_JOIN_H

#include <stdbool.h>
#include <stddef.h>

/* Append one item, printf-formatted, to the string in buf (size bytes;
 * start from ""), after `sep` when buf is not empty.  A list longer than
 * buf is cut at its end, never overrun.  Returns false when the item did
 * not fit whole (buf then holds what did): a caller may stop there. */
bool baton_join(char *buf, size_t size, const char *sep, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
