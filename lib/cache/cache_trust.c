/* The cache trust model (see cache_trust.h). */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include "cache_trust.h"

int fp_trust_open_file(int dirfd, const char *name, int flags, mode_t mode, struct stat *st)
{
  int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0)
    return -1;
  if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
    int e = S_ISREG(st->st_mode) ? errno : EINVAL;
    close(fd);
    errno = e;
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

int fp_trust_file_is_safe(const struct stat *st)
{
  return S_ISREG(st->st_mode) && st->st_nlink == 1 &&
         (st->st_uid == geteuid() || st->st_uid == 0) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

const char *fp_trust_file_why(const struct stat *st, char *buf, size_t cap)
{
  if (!S_ISREG(st->st_mode))
    snprintf(buf, cap, "not a regular file");
  else if (st->st_uid != geteuid() && st->st_uid != 0)
    snprintf(buf, cap, "written by uid %u", (unsigned)st->st_uid);
  else if (st->st_mode & (S_IWGRP | S_IWOTH))
    snprintf(buf, cap, "writable by other users (mode %04o)", (unsigned)(st->st_mode & 07777));
  else if (st->st_nlink != 1)
    snprintf(buf, cap, "has %lu links", (unsigned long)st->st_nlink);
  else
    snprintf(buf, cap, "trusted");
  return buf;
}

/* parent/name opened, when it is a directory of the caller's alone; -1 with errno. */
static int own_private(int parent, const char *name)
{
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
    int e = errno;
    close(fd);
    errno = st.st_uid != geteuid() || (st.st_mode & 077) ? EPERM : e;
    return -1;
  }
  return fd;
}

int fp_trust_private_dir(int parent)
{
  char name[32];
  snprintf(name, sizeof name, "u%u", (unsigned)geteuid());
  if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
    return -1;
  errno = 0;
  int fd = own_private(parent, name);
  if (fd >= 0 ||
      (errno != EPERM && errno != EACCES && errno != ENOTDIR && errno != ELOOP && errno != EEXIST))
    return fd;
  /* Someone else took the name first (a member of a group cache): it denies nothing. A
   * directory of ours named uUID.SUFFIX is ours (nobody else can make one we own), else a
   * new one. */
  size_t len = strlen(name);
  int dup_fd = dup(parent);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!d && dup_fd >= 0)
    close(dup_fd);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strncmp(e->d_name, name, len) == 0 && e->d_name[len] == '.' &&
        (fd = own_private(parent, e->d_name)) >= 0)
      break;
  if (d)
    closedir(d);
  if (fd >= 0)
    return fd;
  for (int i = 0; i < 100; i++) {
    unsigned char r[6];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
      return -1;
    char alt[64];
    snprintf(alt, sizeof alt, "%s.%02x%02x%02x%02x%02x%02x", name, r[0], r[1], r[2], r[3], r[4],
             r[5]);
    if (mkdirat(parent, alt, 0700) == 0)
      return own_private(parent, alt);
    if (errno != EEXIST)
      return -1;
  }
  errno = EEXIST;
  return -1;
}

int fp_trust_create_random(int dirfd, const char *prefix, mode_t mode, char *name, size_t cap,
                           struct stat *st)
{
  for (int i = 0; i < 100; i++) {
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
      return -1;
    snprintf(name, cap, "%s-%02x%02x%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2], r[3], r[4],
             r[5], r[6], r[7]);
    int fd = fp_trust_open_file(dirfd, name, O_RDWR | O_CREAT | O_EXCL, mode, st);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  errno = EEXIST;
  return -1;
}

int fp_trust_dir_is_safe(const struct stat *st)
{
  return S_ISDIR(st->st_mode) && (st->st_uid == geteuid() || st->st_uid == 0) &&
         (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX));
}

const char *fp_trust_dir_why(const struct stat *st, char *buf, size_t cap)
{
  if (!S_ISDIR(st->st_mode))
    snprintf(buf, cap, "not a directory");
  else if (st->st_uid != geteuid() && st->st_uid != 0)
    snprintf(buf, cap, "owned by uid %u", (unsigned)st->st_uid);
  else if (!fp_trust_dir_is_safe(st))
    snprintf(buf, cap, "writable by other users without the sticky bit (mode %04o)",
             (unsigned)(st->st_mode & 07777));
  else
    snprintf(buf, cap, "trusted");
  return buf;
}

int fp_trust_anon_file(int dirfd)
{
  int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
    return fd;
  char name[64];
  struct stat st;
  fd = fp_trust_create_random(dirfd, "anon", 0600, name, sizeof name, &st);
  if (fd >= 0)
    unlinkat(dirfd, name, 0);
  return fd;
}
