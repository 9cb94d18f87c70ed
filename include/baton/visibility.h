/* baton/visibility.h - BATON_API marks what libbaton exports (the library
 * is built with -fvisibility=hidden). */
#ifndef BATON_VISIBILITY_H
#define BATON_VISIBILITY_H

#if defined(__GNUC__)
#define BATON_API __attribute__((visibility("default")))
#else
#define BATON_API
#endif

#endif
