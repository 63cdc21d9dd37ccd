/* The seam between reading layers and writing their merged tree: unpack.c reads each layer,
 * checks every name, classifies whiteouts and verifies the DiffID, then hands what it found
 * to a sink. The directory writer (entry_write.c, whiteout.c: a rootfs on disk, through
 * the in-root resolver) and the SquashFS writer (sqfs_sink.c: one image file, no tree on
 * disk) are the two sinks; both follow the same rules (contract, "Rootfs"). */
#ifndef FP_SINK_H
#define FP_SINK_H

#include <archive.h>
#include <archive_entry.h>

#include "fpull/error.h"

struct fp_sink;

struct fp_sink_ops {
  /* A new layer starts: whiteouts of the layer spare what it writes itself. */
  void (*layer_begin)(struct fp_sink *s);
  /* An ordinary entry e at cleaned path ("" is the root), its data read from a. Errors:
   * FPULL_EUNSAFE (the message names the reason; the caller adds the entry), FPULL_EFAIL. */
  int (*entry)(struct fp_sink *s, struct archive *a, struct archive_entry *e, const char *path,
               fpull_err *err);
  /* ".wh.NAME" in cleaned directory dir ("" the root) and ".wh..wh..opq" in dir: 0, or -1
   * with errno (ELOOP: a symlink loop, reported as unsafe content). */
  int (*whiteout)(struct fp_sink *s, const char *dir, const char *name);
  int (*opaque)(struct fp_sink *s, const char *dir);
  /* All layers are in: deferred work (directory metadata, the image's tables). */
  int (*finish)(struct fp_sink *s, fpull_err *err);
};

struct fp_sink {
  const struct fp_sink_ops *ops;
};

#endif
