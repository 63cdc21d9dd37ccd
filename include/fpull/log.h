/* fpull: the library never prints; it reports through this callback. */
#ifndef FPULL_LOG_H
#define FPULL_LOG_H

#include "common.h"

enum fpull_log_level {
  FPULL_LOG_WARN = 0,  /* printed as "fpull: warning: ..." by the CLI */
  FPULL_LOG_INFO = 1,  /* normal progress messages */
  FPULL_LOG_DEBUG = 2, /* -v */
};

typedef void (*fpull_log_fn)(void *ud, int level, const char *msg);

/* Installs the process-wide message sink (NULL: drop messages). */
FPULL_API void fpull_log_set(fpull_log_fn fn, void *ud);
/* Number of warnings reported since the start of the process. */
FPULL_API unsigned fpull_log_warnings(void);

/* Progress of blob transfers, for a terminal progress display. */
struct fpull_progress {
  const char *digest; /* blob being transferred */
  uint64_t done;      /* bytes of this blob so far */
  uint64_t total;     /* its size */
  unsigned blobs_done, blobs_total;
};
typedef void (*fpull_progress_fn)(void *ud, const struct fpull_progress *p);

#endif
