/* Internal: progress reports of one image's layers (fpull_progress_fn), serialised across
 * the download threads, with the running totals a display needs. */
#ifndef FP_PROGRESS_H
#define FP_PROGRESS_H

#include <pthread.h>

#include "fpull/log.h"
#include "fpull/manifest.h"
#include "fpull/registry.h"

struct fp_progress {
  fpull_progress_fn fn; /* NULL: every call below does nothing */
  void *ud;
  pthread_mutex_t lock;
  struct fpull_progress st; /* the running totals */
};

/* Starts the reports of one image (FPULL_PROGRESS_START); fn may be NULL. */
void fp_progress_begin(struct fp_progress *p, fpull_progress_fn fn, void *ud, const char *reference,
                       const struct fpull_manifest *m);
/* FPULL_PROGRESS_FINISH when ok, then releases p. */
void fp_progress_end(struct fp_progress *p, int ok);
void fp_progress_cached(struct fp_progress *p, const struct fpull_descriptor *d);
void fp_progress_blob_done(struct fp_progress *p, const struct fpull_descriptor *d);
void fp_progress_unpack(struct fp_progress *p, size_t layer);

/* A blob sink that passes everything to inner and reports the bytes as they arrive. */
struct fp_progress_sink {
  struct fpull_blob_sink sink;
  const struct fpull_blob_sink *inner;
  struct fp_progress *p;
  const struct fpull_descriptor *d;
  uint64_t pos;     /* bytes of d the inner sink holds */
  uint64_t resumed; /* of those, kept from an earlier run's partial download */
  int started;      /* the first restart (the partial's offset) has come */
};
/* Returns the sink to use: ps->sink, or inner itself when p is NULL or reports nothing. */
const struct fpull_blob_sink *fp_progress_sink_wrap(struct fp_progress_sink *ps,
                                                    struct fp_progress *p,
                                                    const struct fpull_descriptor *d,
                                                    const struct fpull_blob_sink *inner);

#endif
