/* DEST of a pull, whatever it becomes (a rootfs directory, a bundle, a SquashFS file): the
 * rules for naming it, for replacing what is there, and for finding what a killed run left
 * beside it are the same for every output, so they live here once. */
#ifndef FP_DEST_H
#define FP_DEST_H

#include <stddef.h>
#include <sys/types.h>

#include "fpull/error.h"
#include "fpull/unpack.h"

struct fp_dest {
  char *buf;          /* owns the strings below */
  const char *parent; /* the directory DEST goes into, created if missing */
  const char *base;   /* DEST's own name in parent */
};

/* The DEST of a pull that names none: ./NAME (the repository's last component) followed
 * by suffix, as docker and skopeo name what they write. */
int fp_dest_default(char **out, const char *image, const char *suffix, fpull_err *err);

/* Splits dest into parent and base; with parents, creates a missing parent (mkdir -p),
 * else a missing parent is FPULL_EFAIL. A directory DEST may end in '/'; a file DEST may
 * not. base must be a name, never "", "." or "..". */
int fp_dest_split(struct fp_dest *d, const char *dest, int is_dir, int parents, fpull_err *err);
/* Whether opts (a caller's fpull_unpack_opts) asks for DEST's parents to be created. */
int fp_dest_parents(const struct fpull_unpack_opts *opts);
void fp_dest_free(struct fp_dest *d);

/* What is at base in pfd must be ours to replace: never a symlink, never another user's,
 * of the type the output writes (S_IFDIR or S_IFREG), and only with force. *exists says
 * whether anything is there; 0 when nothing is. */
int fp_dest_check(int pfd, const char *base, const char *dest, mode_t type, int force, int *exists,
                  fpull_err *err);

/* Renames tmp to base in pfd when nothing was at base: never over something that appeared
 * meanwhile (RENAME_NOREPLACE; plain rename only where the filesystem lacks it). */
int fp_dest_publish_new(int pfd, const char *tmp, const char *base, const char *dest,
                        fpull_err *err);

/* prefix followed by 8 random letters and digits, in name (cap bytes): the name of a
 * temporary file or directory beside DEST, created by the caller with O_EXCL or mkdir. */
void fp_dest_random_name(char *name, size_t cap, const char *prefix);
/* A new file prefix + random letters in pfd (its name in name), opened read-write with
 * O_EXCL and O_NOFOLLOW; a name taken is tried again, up to 100 times. -1 with errno. */
int fp_dest_create_random(int pfd, const char *prefix, mode_t mode, char *name, size_t cap);

/* The names in pfd that start with prefix (NULL when none, or pfd cannot be read). */
char **fp_dest_names_with_prefix(int pfd, const char *prefix);

#endif
