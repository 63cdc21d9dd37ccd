/* File data into SquashFS data and fragment blocks, compressed on worker threads.
 *
 * It takes the place of libsquashfs's block processor, whose thread pool hands every
 * file's tail to a worker and back (a lock, a wake-up and an ordered wait per small file)
 * and keeps two cores only three quarters busy on an image of many small files. Here the
 * tails are packed into fragment blocks on the caller's thread; only whole blocks (1 MiB
 * by default) go to the workers, and the caller writes the finished blocks in order
 * through libsquashfs's block writer, which keeps its deduplication of whole files.
 * Tails that equal an earlier tail byte for byte share its place, as mksquashfs does. */
#ifndef FP_SQFS_BLOCKS_H
#define FP_SQFS_BLOCKS_H

#include <stddef.h>

#include <sqfs/block_writer.h>
#include <sqfs/compressor.h>
#include <sqfs/frag_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>

struct fp_sqfs_blocks;

struct fp_sqfs_blocks_desc {
  size_t block;             /* the image's block size */
  unsigned workers;         /* compressing threads, at least 1 */
  size_t backlog;           /* blocks between the caller and the file, at least workers + 1 */
  sqfs_compressor_t *cmp;   /* copied for each worker */
  sqfs_compressor_t *uncmp; /* reads a written fragment block back; NULL: blocks are stored */
  sqfs_block_writer_t *bw;
  sqfs_frag_table_t *frags;
  sqfs_file_t *file; /* the image, for reading fragment blocks back */
};

/* 0, or SQFS_ERROR_ALLOC. Where no thread can be started, blocks are compressed on the
 * caller's thread. */
int fp_sqfs_blocks_new(struct fp_sqfs_blocks **out, const struct fp_sqfs_blocks_desc *d);
/* Stops the workers and frees everything; blocks not yet written are dropped. */
void fp_sqfs_blocks_free(struct fp_sqfs_blocks *b);

/* A regular file: *ino gets a new file inode (malloc'd; it may move while its blocks are
 * written, so the caller keeps ino where it is until fp_sqfs_blocks_sync). */
int fp_sqfs_blocks_begin(struct fp_sqfs_blocks *b, sqfs_inode_generic_t **ino);
int fp_sqfs_blocks_append(struct fp_sqfs_blocks *b, const void *data, size_t size);
/* The file's last block and its tail: after this the inode's fragment is set. */
int fp_sqfs_blocks_end(struct fp_sqfs_blocks *b);
/* Waits until every block handed over is written: no inode is referred to any more. */
int fp_sqfs_blocks_sync(struct fp_sqfs_blocks *b);
/* Writes the last fragment block, then syncs. */
int fp_sqfs_blocks_finish(struct fp_sqfs_blocks *b);

#endif
