/* Shared by the two outputs of the unpacker (unpack.c: a rootfs directory, sqfs_sink.c: a
 * SquashFS image). */
#ifndef FP_UNPACK_INTERNAL_H
#define FP_UNPACK_INTERNAL_H

#include <stddef.h>

#include "fpull/unpack.h"
#include "sink.h"

/* Reads the layers in order (waiting for each with o->wait_layer), checks every name,
 * classifies whiteouts, verifies the DiffIDs and feeds it all to sink, then finishes it.
 * Warnings about skipped devices and dropped setid bits go out on success. Errors name the
 * layer and the entry. */
int fp_unpack_feed(struct fp_sink *sink, const struct fpull_layer *layers, size_t n,
                   const struct fpull_unpack_opts *o, struct fpull_unpack_stats *stats,
                   fpull_err *err);

#endif
