/* Reading a blob while a cache writer (fpull_cache_writer_begin) is still writing it: what
 * fpull serve hands to its clients before the blob is complete. */
#ifndef FP_CACHE_WRITER_H
#define FP_CACHE_WRITER_H

struct fpull_cache_writer;

/* A new descriptor (close-on-exec) of w's partial file, to pread from: the bytes below
 * fpull_cache_writer_offset(w) are there, unverified until the commit. After a successful
 * commit it reads the committed blob (the same file, renamed). The caller closes it; -1
 * with errno when none can be had. */
int fp_cache_writer_read_fd(const struct fpull_cache_writer *w);

#endif
