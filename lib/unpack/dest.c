#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dest.h"
#include "fpull/ref.h"
#include "base/util.h"

int fp_dest_default(char **out, const char *image, const char *suffix, fpull_err *err)
{
  *out = NULL;
  struct fpull_ref *ref = NULL;
  int rc = fpull_ref_parse(&ref, image, err);
  if (rc)
    return rc;
  *out = fp_xasprintf("./%s%s", fpull_ref_basename(ref), suffix);
  fpull_ref_free(ref);
  return 0;
}

int fp_dest_parents(const struct fpull_unpack_opts *opts)
{
  return !opts || opts->version < 2 || opts->parents;
}

int fp_dest_split(struct fp_dest *d, const char *dest, int is_dir, int parents, fpull_err *err)
{
  memset(d, 0, sizeof *d);
  d->buf = fp_xstrdup(dest);
  size_t len = strlen(d->buf);
  while (is_dir && len > 1 && d->buf[len - 1] == '/')
    d->buf[--len] = '\0';
  char *slash = strrchr(d->buf, '/');
  d->base = slash ? slash + 1 : d->buf;
  d->parent = slash ? (slash == d->buf ? "/" : d->buf) : ".";
  if (slash)
    *slash = '\0';
  if (!*d->base || strcmp(d->base, ".") == 0 || strcmp(d->base, "..") == 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: the destination must name a %s to create", dest,
                         is_dir ? "directory" : "file");
  struct stat st;
  if (!parents) {
    if (stat(d->parent, &st) < 0 && errno == ENOENT)
      return fpull_err_set(err, FPULL_EFAIL,
                           "%s: the directory %s does not exist (--parents creates it)", dest,
                           d->parent);
    return 0;
  }
  if (fp_mkdir_p(d->parent, 0755) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot create %s: %s", d->parent, strerror(errno));
  return 0;
}

void fp_dest_free(struct fp_dest *d)
{
  free(d->buf);
  memset(d, 0, sizeof *d);
}

int fp_dest_check(int pfd, const char *base, const char *dest, mode_t type, int force, int *exists,
                  fpull_err *err)
{
  struct stat st;
  *exists = 0;
  if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : fpull_err_set(err, FPULL_EFAIL, "%s: %s", dest, strerror(errno));
  *exists = 1;
  if (S_ISLNK(st.st_mode))
    return fpull_err_set(err, FPULL_EFAIL, "%s is a symlink; refusing to replace it", dest);
  if (st.st_uid != geteuid())
    return fpull_err_set(err, FPULL_EFAIL,
                         "%s belongs to uid %u, not to us; refusing to replace it", dest,
                         (unsigned)st.st_uid);
  if ((st.st_mode & S_IFMT) != type)
    return fpull_err_set(err, FPULL_EFAIL, "%s exists and is not a %s", dest,
                         type == S_IFDIR ? "directory" : "regular file");
  if (!force)
    return fpull_err_set(err, FPULL_EFAIL, "%s already exists (--force replaces it)", dest);
  return 0;
}

int fp_dest_publish_new(int pfd, const char *tmp, const char *base, const char *dest,
                        fpull_err *err)
{
  if (renameat2(pfd, tmp, pfd, base, RENAME_NOREPLACE) == 0)
    return 0;
  if (errno == EEXIST)
    return fpull_err_set(err, FPULL_EFAIL, "%s appeared while we wrote it; not replacing it", dest);
  if ((errno != EINVAL && errno != ENOSYS) || renameat(pfd, tmp, pfd, base) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot rename into %s: %s", dest, strerror(errno));
  return 0;
}

void fp_dest_random_name(char *name, size_t cap, const char *prefix)
{
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char rnd[8];
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
    for (size_t i = 0; i < sizeof rnd; i++)
      rnd[i] = (unsigned char)(rand() ^ getpid());
  char suffix[sizeof rnd + 1];
  for (size_t i = 0; i < sizeof rnd; i++)
    suffix[i] = alphabet[rnd[i] % (sizeof alphabet - 1)];
  suffix[sizeof rnd] = '\0';
  snprintf(name, cap, "%s%s", prefix, suffix);
}

int fp_dest_create_random(int pfd, const char *prefix, mode_t mode, char *name, size_t cap)
{
  for (int attempt = 0; attempt < 100; attempt++) {
    fp_dest_random_name(name, cap, prefix);
    int fd = openat(pfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  return -1;
}

char **fp_dest_names_with_prefix(int pfd, const char *prefix)
{
  int rfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
  if (!d) {
    if (rfd >= 0)
      close(rfd);
    return NULL;
  }
  size_t plen = strlen(prefix);
  char **names = NULL;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strncmp(de->d_name, prefix, plen) == 0)
      names = fp_strv_push(names, de->d_name);
  closedir(d);
  return names;
}
