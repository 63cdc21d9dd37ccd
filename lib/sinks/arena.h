/* Memory that lives in an unnamed temporary file: the SquashFS output's tree, which must be
 * held until the last layer is in, can outgrow what a pull may keep resident (contract:
 * under 256 MiB for any layer, millions of entries included). Allocations are bump
 * pointers into one fixed mapping (pointers stay valid as it grows) and are never freed
 * one by one; fp_arena_release() drops the resident pages, whose contents stay in the file
 * (the page cache, written back by the kernel) and come back on the next access. */
#ifndef FP_ARENA_H
#define FP_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "fpull/error.h"

struct fp_arena {
  int fd;
  char *base;
  size_t reserved; /* address space held for the mapping */
  size_t mapped;   /* bytes of the file mapped at base */
  size_t used;
};

/* An empty arena in a file of dirfd's directory that has no name (O_TMPFILE, else one
 * unlinked at once). FPULL_EFAIL naming the directory as dirname on failure. */
int fp_arena_open(struct fp_arena *a, int dirfd, const char *dirname, fpull_err *err);
/* size zeroed bytes, 16-aligned; NULL with errno when the file cannot grow (ENOSPC...). */
void *fp_arena_alloc(struct fp_arena *a, size_t size);
/* The process's resident memory (RSS), or 0 when /proc says nothing. */
uint64_t fp_resident_bytes(void);
/* Gives back the resident pages; the data stays. */
void fp_arena_release(struct fp_arena *a);
void fp_arena_close(struct fp_arena *a);

#endif
