/* fpull: shared definitions for the public API. */
#ifndef FPULL_COMMON_H
#define FPULL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(FPULL_BUILDING) && defined(__GNUC__)
#define FPULL_API __attribute__((visibility("default")))
#else
#define FPULL_API
#endif

/* A NULL-terminated, heap-allocated array of heap-allocated strings. */
FPULL_API void fpull_strv_free(char **v);
/* Number of strings in v (0 for NULL). */
FPULL_API size_t fpull_strv_len(char *const *v);

/* FPULL_VERSION and fpull_version(): every header has them through this one. */
#include "version.h"

#endif
