/* fpull: what a build is made of, for `fpull version` and bug reports. */
#ifndef FPULL_COMPONENTS_H
#define FPULL_COMPONENTS_H

#include "common.h"

/* The source revision the library was built from (`git describe` when it was configured
 * from a git checkout), or NULL when it was built from a tarball. */
FPULL_API const char *fpull_build_revision(void);

struct fpull_component {
  const char *name;    /* "libcurl", "OpenSSL", ... */
  const char *version; /* as the library reports it at run time; "(none)" when left out */
};
/* The libraries fpull runs with, in a fixed order, terminated by an entry whose name is
 * NULL. Versions are asked of the loaded libraries where they can say (so a newer shared
 * library shows), else the headers' at build time. Static storage; never fails. */
FPULL_API const struct fpull_component *fpull_components(void);

#endif
