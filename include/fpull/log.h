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

/* What a progress report is about (added in v3). Reports of one image come in this
 * order: START, then BYTES / CACHED / BLOB_DONE per layer (downloads run in parallel, so
 * layers interleave), UNPACK per layer for pull (while later layers still download), and
 * FINISH once every layer is in the cache (and unpacked). */
enum fpull_progress_event {
  FPULL_PROGRESS_BLOB_DONE = 0, /* digest was downloaded and is in the cache */
  FPULL_PROGRESS_START = 1,     /* a new image: its layers are known, all counters are 0 */
  FPULL_PROGRESS_BYTES = 2,     /* bytes of digest arrived: done of total */
  FPULL_PROGRESS_CACHED = 3,    /* digest was in the cache already: nothing downloaded */
  FPULL_PROGRESS_UNPACK = 4,    /* layer number `layer` (0-based) is being unpacked */
  FPULL_PROGRESS_FINISH = 5,    /* every layer is in the cache (and unpacked, for pull) */
};

/* Progress of one image's layers, for a terminal progress display. The library calls the
 * callback from its download threads, one call at a time (never concurrently); the struct
 * is valid only during the call. */
struct fpull_progress {
  const char *digest;               /* the layer the report is about (NULL for START and FINISH) */
  uint64_t done;                    /* bytes of this layer so far */
  uint64_t total;                   /* its size */
  unsigned blobs_done, blobs_total; /* layers in the cache (downloaded or cached), layers */
  /* Added in v3. */
  int event;             /* enum fpull_progress_event */
  const char *reference; /* the image, normalised */
  unsigned blobs_cached; /* layers found in the cache, never downloaded */
  uint64_t bytes_done;   /* layer bytes received over the network for this image */
  uint64_t bytes_cached; /* layer bytes taken from the cache */
  uint64_t bytes_total;  /* the sum of the layers' sizes */
  unsigned layer;        /* FPULL_PROGRESS_UNPACK: which layer, 0-based */
  /* Added in v4: layer bytes an earlier, interrupted run had downloaded and this one
   * resumed from (not in bytes_done: they did not arrive now). */
  uint64_t bytes_resumed;
};
typedef void (*fpull_progress_fn)(void *ud, const struct fpull_progress *p);

#endif
