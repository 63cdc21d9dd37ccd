/* fpull: building a rootfs from layers, safely (fpull(1), ROOTFS). */
#ifndef FPULL_UNPACK_H
#define FPULL_UNPACK_H

#include "error.h"

struct fpull_layer {
  const char *path;       /* the (compressed) blob file */
  const char *media_type; /* decides the decompression */
  const char *digest;     /* for messages */
  const char *diff_id;    /* expected sha256 of the uncompressed stream, or NULL (then the
                             stream is not hashed) */
  /* > 0: read the blob from this open descriptor, from its start (the one that was verified:
   * see fpull_cache_open_verified), and path only names it. 0: open path. Not closed. */
  int fd;
};

/* What pull writes (fpull(1), --format). */
enum fpull_unpack_format {
  FPULL_FORMAT_DIR = 0,      /* DEST is the rootfs */
  FPULL_FORMAT_SQUASHFS = 2, /* DEST is one SquashFS file holding it and, through
                                fpull_pull, the image's Env, WorkingDir and command in
                                enroot's files (fpull(1), SQUASHFS OUTPUT) */
};

/* SquashFS output; zeros are fpull's defaults: zstd at FPULL_SQFS_ZSTD_LEVEL in blocks of
 * FPULL_SQFS_BLOCK_SIZE (fast to write: measured in docs/bench-results.md). */
struct fpull_sqfs_opts {
  const char *compressor; /* "zstd" (NULL), "gzip", "xz", "lz4", "none" (nothing compressed) */
  unsigned block_size;    /* a power of two, 4 KiB .. 1 MiB; 0: FPULL_SQFS_BLOCK_SIZE */
  int level;              /* 0: FPULL_SQFS_ZSTD_LEVEL for zstd, else the compressor's default */
  unsigned threads;       /* compression threads, at most the CPUs we may use; 0: those */
  /* The image's tree is held until the tables are written at the end: past this much
   * resident memory (the process's RSS) it is moved out to a temporary file beside DEST,
   * so that memory does not grow with the entries. 0: FPULL_SQFS_MAX_RESIDENT. */
  uint64_t max_resident;
};
#define FPULL_SQFS_MAX_RESIDENT (160ull << 20)
#define FPULL_SQFS_ZSTD_LEVEL 1
#define FPULL_SQFS_BLOCK_SIZE (1u << 20)

/* Options structs grow at the end: version says which layout the caller was compiled
 * with, and the library refuses versions it does not know (FPULL_EUSAGE). Start from
 * FPULL_UNPACK_OPTS_INIT, then set fields. */
#define FPULL_UNPACK_OPTS_VERSION 2
struct fpull_unpack_opts {
  unsigned int version; /* FPULL_UNPACK_OPTS_VERSION */
  int force;            /* DEST may exist; replaced only once the new rootfs is complete */
  int resolve_fallback; /* tests: never use openat2, always the O_NOFOLLOW walk */
  uint64_t max_entries; /* per layer; 0: default */
  uint64_t max_bytes;   /* uncompressed bytes per layer; 0: default */
  int unprivileged;     /* tests: behave as a non-root caller even when root */
  /* Called before layer i is opened, to wait until its blob is complete: pull unpacks
   * layer i while later layers are still downloading. NULL: all layers are there. */
  int (*wait_layer)(void *ud, size_t i, fpull_err *err);
  void *wait_ud;
  int format; /* enum fpull_unpack_format, for fpull_pull */
  struct fpull_sqfs_opts sqfs;
  /* SquashFS output as root: keep setuid/setgid bits, file capabilities and device nodes
   * (dropped and counted by default: others mount the image). FPULL_EUSAGE as non-root. */
  int keep_privileged;
  /* Added in v5: the most bytes of file content the pull may write (--max-unpacked): the
   * sizes of the regular files of every layer as written, summed over the layers; a hard
   * link, a whiteout, a directory, a symlink or a device adds nothing, and a file that a later
   * layer replaces or removes still counts (it was written). Checked at each file's header,
   * before its data is read: past it, FPULL_EUNSAFE naming the layer, and nothing is left.
   * 0: no limit (fpull_pull: the config's max-unpacked:, if any); FPULL_UNPACK_UNLIMITED:
   * no limit, whatever the config says. */
  uint64_t max_unpacked;
  /* Version 2: DEST's missing parent directories are created (pull --parents); 0: a
   * missing parent is FPULL_EFAIL, as with tar -C. Version 1 callers get them created. */
  int parents;
};
#define FPULL_UNPACK_UNLIMITED UINT64_MAX
#define FPULL_UNPACK_OPTS_INIT                                                                     \
  {                                                                                                \
    .version = FPULL_UNPACK_OPTS_VERSION                                                           \
  }

/* Defaults of the limits above. */
#define FPULL_UNPACK_MAX_ENTRIES 10000000ull
#define FPULL_UNPACK_MAX_BYTES (1ull << 40)

struct fpull_unpack_stats {
  uint64_t entries;
  uint64_t devices_skipped;
  uint64_t whiteouts;
  uint64_t bytes;          /* uncompressed layer bytes read */
  uint64_t xattrs_skipped; /* not on the allowlist, or refused by the file system */
  uint64_t owners_failed;  /* as root, where the file system refused chown */
  /* Not kept as non-root, nor as root in a SquashFS image without keep_privileged (as
   * devices_skipped): */
  uint64_t setid_dropped; /* setuid/setgid bits of files */
  uint64_t caps_dropped;  /* file capabilities (security.capability xattrs) */
  /* SquashFS: file data written into the image before a later layer removed the file (cut
   * out again before the tables are written) and the image's size. */
  uint64_t sqfs_dead_bytes;
  uint64_t sqfs_image_bytes;
};

/* Builds the rootfs beside dest (a private staging directory), applies the layers in order
 * and renames it into place. On failure neither dest (if it did not exist) nor the staging
 * directory is left. Errors: FPULL_EUNSAFE (naming the layer and entry), FPULL_EINTEGRITY
 * (DiffID), FPULL_EFAIL (dest exists without force, I/O). */
FPULL_API int fpull_unpack_rootfs(const char *dest, const struct fpull_layer *layers, size_t n,
                                  const struct fpull_unpack_opts *opts,
                                  struct fpull_unpack_stats *stats, fpull_err *err);

/* Writes the merged layers as one SquashFS image at dest (a file), the layers' tree only (no
 * image config is given here: fpull_pull adds it): the same merge, rules and
 * verification as fpull_unpack_rootfs, no tree on disk. The image is written beside dest
 * and renamed in when complete; with force a regular file dest is replaced. Errors as
 * fpull_unpack_rootfs, and FPULL_EUSAGE for bad sqfs options. */
FPULL_API int fpull_unpack_squashfs(const char *dest, const struct fpull_layer *layers, size_t n,
                                    const struct fpull_unpack_opts *opts,
                                    struct fpull_unpack_stats *stats, fpull_err *err);

/* Checks sqfs options before any work: FPULL_EUSAGE naming the bad one. */
FPULL_API int fpull_sqfs_opts_check(const struct fpull_sqfs_opts *so, fpull_err *err);

/* The compression threads a SquashFS pull uses for opts->sqfs.threads: the CPUs this
 * process may run on (sched_getaffinity), fewer when asked. */
FPULL_API unsigned fpull_sqfs_threads(unsigned asked);

#endif
