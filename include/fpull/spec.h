/* fpull: manifest-tool style YAML specs and `manifest push`. */
#ifndef FPULL_SPEC_H
#define FPULL_SPEC_H

#include "error.h"
#include "manifest.h"

struct fpull_spec_entry {
  char *image;
  struct fpull_platform platform;
  unsigned line, column; /* where the entry starts, for messages */
};

struct fpull_spec {
  char *image; /* the target */
  struct fpull_spec_entry *entries;
  size_t n_entries;
};

/* Errors: FPULL_EUSAGE naming the file, line and column (unknown keys, duplicate
 * platforms, missing image). Unknown feature names are warnings. */
FPULL_API int fpull_spec_load(struct fpull_spec **out, const char *path, fpull_err *err);
FPULL_API int fpull_spec_parse(struct fpull_spec **out, const char *text, size_t len,
                               const char *name, fpull_err *err);
FPULL_API void fpull_spec_free(struct fpull_spec *s);

#endif
