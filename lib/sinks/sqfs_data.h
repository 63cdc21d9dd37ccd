/* The image's data beyond what libsquashfs does for us: a compressor that stores everything
 * as it is (--sqfs-comp none), and cutting the data of files a later layer removed out of
 * the image before its tables are written. */
#ifndef FP_SQFS_DATA_H
#define FP_SQFS_DATA_H

#include <stdint.h>

#include <sqfs/compressor.h>
#include <sqfs/frag_table.h>

#include "fpull/error.h"
#include "sqfs_file.h"
#include "sqfs_tree.h"

/* The superblock flags of an image without compression (mksquashfs -noI -noD -noF -noX). */
#define FP_SQFS_UNCOMPRESSED_FLAGS                                                                 \
  (SQFS_FLAG_UNCOMPRESSED_INODES | SQFS_FLAG_UNCOMPRESSED_DATA |                                   \
   SQFS_FLAG_UNCOMPRESSED_FRAGMENTS | SQFS_FLAG_UNCOMPRESSED_XATTRS | SQFS_FLAG_UNCOMPRESSED_IDS)

/* A compressor that never compresses: every data and metadata block is stored as it is,
 * flagged uncompressed, at no CPU cost. It names itself cfg's compressor (gzip, which every
 * reader has, as mksquashfs does for -noI -noD -noF -noX) and writes no options. NULL when
 * out of memory. */
sqfs_compressor_t *fp_sqfs_none_create(const sqfs_compressor_config_t *cfg);

/* Once every block is written (fp_sqfs_blocks_finish) and before any table is written: moves every
 * data and fragment block that a file of the final tree (or the fragment table) references down
 * over the blocks only removed files used, updates the inodes and the fragment table to the
 * new places and truncates the file. data_start: where the first data block went. *cut: the
 * bytes taken out. Memory: one record per file of at least one block, and per fragment. */
int fp_sqfs_compact(struct fp_mtree *t, sqfs_frag_table_t *frags, struct fp_fd_file *f,
                    uint64_t data_start, uint64_t *cut, fpull_err *err);

#endif
