/* A layer blob as the uncompressed tar stream libarchive reads: decompressed here (ISA-L
 * igzip, libzstd) rather than by libarchive, so the stream can be hashed for the DiffID,
 * counted against the size limit and drained to its end. libarchive only parses tar. */
#ifndef FP_LAYER_STREAM_H
#define FP_LAYER_STREAM_H

#include <archive.h>
#include <stdint.h>

#include "base/digest.h"
#include "fpull/error.h"

/* The values of fpull_layer_compression() (manifest.h). */
enum fp_compression { FP_COMP_NONE = 0, FP_COMP_GZIP = 1, FP_COMP_ZSTD = 2 };

struct fp_layer_stream;

/* Reads the blob from fd when fd > 0 (a duplicate is taken: the caller keeps fd), else
 * opens path. max_bytes bounds the uncompressed stream. The uncompressed stream is hashed
 * with the algorithm of diff_id (the DiffID it should have: sha512 for "sha512:...", else
 * sha256); diff_id NULL: nothing to check, and the stream is not hashed at all. */
int fp_layer_stream_open(struct fp_layer_stream **out, const char *path, int fd, int compression,
                         uint64_t max_bytes, const char *diff_id, fpull_err *err);
void fp_layer_stream_close(struct fp_layer_stream *s);

/* A libarchive reader (tar formats only, no filters) over the stream. */
struct archive *fp_layer_stream_archive(struct fp_layer_stream *s, fpull_err *err);

/* Set once the stream failed (limit, decompression, I/O): the real cause of an archive
 * error. NULL while all is well. */
const fpull_err *fp_layer_stream_error(const struct fp_layer_stream *s);

/* Reads what libarchive left (tar padding, trailing data) so the digest covers the whole
 * uncompressed stream, then writes "sha256:HEX" (or "sha512:HEX") into diff_id ("" when it
 * was opened without one). */
int fp_layer_stream_finish(struct fp_layer_stream *s, char diff_id[FP_DIGEST_MAX], fpull_err *err);

uint64_t fp_layer_stream_bytes(const struct fp_layer_stream *s);

#endif
