/* The cache trust model (man fpull, SECURITY): a cache may be shared with users who can
 * write into it, so nothing read from it is trusted for what its name says. Content named
 * by its digest is hashed from the very descriptor that is then used; what cannot be
 * hashed (a tag -> digest record) is used only when the caller or root wrote it and nobody
 * else can change it; files are opened without following symlinks, without blocking on a
 * planted FIFO, and checked with fstat; the caller's own work files live in a directory
 * only the caller can write. Every cache operation goes through these helpers. */
#ifndef FP_CACHE_TRUST_H
#define FP_CACHE_TRUST_H

#include <sys/stat.h>

/* Opens dirfd/name (flags: O_RDONLY or O_RDWR, maybe O_CREAT|O_EXCL) with O_NOFOLLOW and
 * O_NONBLOCK, checks that it is a regular file (*st filled), and clears O_NONBLOCK. -1 with
 * errno: ELOOP for a symlink, EINVAL for another type (a FIFO, a device, a directory). */
int fp_trust_open_file(int dirfd, const char *name, int flags, mode_t mode, struct stat *st);

/* Whether a file's content is what its writer made it and stays so: a regular file with a
 * single link, owned by the caller or root, that no group or other user may write. */
int fp_trust_file_is_safe(const struct stat *st);

/* Why a file is not safe, for messages ("owned by uid 1000", "has 2 links", ...). */
const char *fp_trust_file_why(const struct stat *st, char *buf, size_t cap);

/* The caller's private working directory parent/NAME (NAME is "u" and the effective uid):
 * created mode 0700 when missing, opened with O_NOFOLLOW, and accepted only when owned by
 * the caller and closed to everyone else. Returns the fd or -1 with errno (EPERM when it is
 * someone else's). */
int fp_trust_private_dir(int parent);

/* Creates a new file dirfd/PREFIX-RANDOM (O_EXCL, mode, checked like fp_trust_open_file)
 * and puts its name into name (cap: 64 bytes are enough for a prefix of 40). -1 with errno. */
int fp_trust_create_random(int dirfd, const char *prefix, mode_t mode, char *name, size_t cap,
                           struct stat *st);

/* Whether a directory's entries are the owner's to replace alone: owned by the caller or
 * root, and either closed to writes by group and others or sticky (others may add entries
 * but not rename or remove the owner's). A record is trusted only under a chain of these. */
int fp_trust_dir_is_safe(const struct stat *st);

/* Why a directory is not safe, for messages. */
const char *fp_trust_dir_why(const struct stat *st, char *buf, size_t cap);

/* An unnamed file in dirfd that only the caller can reach (O_TMPFILE, or a name unlinked at
 * once where the file system has no O_TMPFILE). -1 with errno. */
int fp_trust_anon_file(int dirfd);

#endif
