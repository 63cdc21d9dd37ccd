/* The SquashFS image as a file: a libsquashfs file over a descriptor we opened, and the
 * temporary file beside DEST that is renamed into place only when the image is complete
 * (contract, "Rootfs": DEST appears only complete; a failed pull leaves nothing). */
#ifndef FP_SQFS_FILE_H
#define FP_SQFS_FILE_H

#include <limits.h>
#include <stdint.h>

#include <sqfs/io.h>

#include "unpack/dest.h"
#include "fpull/error.h"

/* Positioned reads and writes on fd (not closed by destroy), the size kept by us. */
struct fp_fd_file {
  sqfs_file_t base;
  int fd;
  uint64_t size;
  int error; /* errno of the first failed write, for the message */
};
struct fp_fd_file *fp_fd_file_new(int fd);

struct fp_image_dest {
  const char *dest;     /* as given, for messages */
  struct fp_dest where; /* DEST's directory and name */
  int pfd;              /* DEST's directory */
  int fd;               /* the temporary file, locked while we write it */
  int exists;           /* DEST existed (and may be replaced: force) */
  char tmp[NAME_MAX + 64];
};

/* Checks DEST (never a symlink, another user's file or a directory; an existing file only
 * with force), removes temporary files of killed runs and creates ours beside DEST.
 * FPULL_EFAIL naming DEST on failure, with nothing left behind. */
int fp_image_open(struct fp_image_dest *d, const char *dest, int force, int parents,
                  fpull_err *err);
/* Renames the complete image into place (atomically replacing an old one). */
int fp_image_publish(struct fp_image_dest *d, fpull_err *err);
/* Closes everything; after a failure (or without publish) the temporary file goes. */
void fp_image_close(struct fp_image_dest *d);

#endif
