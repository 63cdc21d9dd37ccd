/* Paths inside a rootfs: the one place that turns a layer's names into file descriptors.
 * Every lookup behaves as if the root were "/": absolute symlinks restart at the root,
 * ".." stops there, and nothing outside it is ever opened, created or followed. */
#ifndef FP_INROOT_H
#define FP_INROOT_H

#include <sys/types.h>

/* Longest entry name or link target accepted, and most symlinks followed in one lookup. */
#define FP_PATH_MAX 4096
#define FP_SYMLINK_MAX 40

struct fp_root {
  int fd;       /* O_PATH directory fd of the root; not owned */
  int fallback; /* never use openat2: the O_NOFOLLOW walk only */
};

/* Uses dirfd as the root. force_fallback (tests) or a kernel without openat2 selects the
 * component walk. */
void fp_root_init(struct fp_root *r, int dirfd, int force_fallback);

/* Cleans a layer entry name (or hardlink target) into out: leading "/" and "./" dropped,
 * "//" and "." components removed, trailing "/" removed. Returns 0, or -1 with *why set
 * ("path has a .. component", "path too long", "empty name", ...). An empty out is the
 * root itself. out needs FP_PATH_MAX + 1 bytes. */
int fp_path_clean(const char *in, char *out, const char **why);

/* Resolves the directory holding the last component of path (a cleaned, non-empty path)
 * and returns an O_PATH fd of it, following every symlink on the way inside the root;
 * with create, missing directories are made (mode 0755, subject to the umask). *base
 * points into path at the last component. -1 with errno on failure (ELOOP after
 * FP_SYMLINK_MAX links, ENOTDIR, ENOENT without create, ENAMETOOLONG). */
int fp_inroot_parent(const struct fp_root *r, const char *path, int create, const char **base);

/* Opens path (cleaned; "" is the root) as O_PATH inside the root. nofollow_last: a final
 * symlink is returned itself instead of being followed. -1 with errno on failure. */
int fp_inroot_open(const struct fp_root *r, const char *path, int nofollow_last);

/* Removes name in dirfd and, for a directory, everything under it, never following a
 * symlink (a symlink is removed itself). Directories we own but cannot write or search
 * are opened up first. Iterative: depth costs memory, not stack or fds. It never climbs
 * out of the tree: a directory renamed away while it is being emptied (the tree may be
 * shared with other users) stops the removal with EXDEV, leaving the rest in place.
 * 0 or -1/errno; a missing name is not an error. */
int fp_rm_rf_at(int dirfd, const char *name);

/* strerror for fp_rm_rf_at's errno: EXDEV says what happened instead of "cross-device". */
const char *fp_rm_strerror(int e);

#endif
