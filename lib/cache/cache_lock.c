#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_lock.h"

static int lock_fd(int fd, int wait)
{
  /* Open-file-description locks: unlike classic POSIX locks they also exclude threads of
   * one process (parallel downloads), and unlike flock they reach NFS servers. */
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  int r;
  do
    r = fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
  while (r < 0 && errno == EINTR);
  if (r < 0 && errno == EINVAL) {
    /* Kernels before 3.15 have no OFD locks. */
    do
      r = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno == EWOULDBLOCK)
      errno = EAGAIN;
  }
  return r;
}

int fp_lock_take(int dirfd, const char *name, int wait, int *out)
{
  *out = -1;
  for (;;) {
    /* Another user of a group-shared cache must be able to lock it too (the umask decides:
     * 022 keeps it 0644). A lock guards no content, so its mode cannot hurt integrity. */
    int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0664);
    if (fd < 0)
      return -1;
    if (lock_fd(fd, wait) < 0) {
      int e = errno;
      close(fd);
      if (!wait && (e == EAGAIN || e == EACCES))
        return 1;
      errno = e;
      return -1;
    }
    /* The previous holder unlinks the file before it unlocks (fp_lock_drop): a lock on a
     * file no longer at this name protects nothing, so start over on the current one. */
    struct stat a, b;
    if (fstat(fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      *out = fd;
      return 0;
    }
    close(fd);
  }
}

void fp_lock_drop(int dirfd, const char *name, int fd)
{
  if (fd < 0)
    return;
  unlinkat(dirfd, name, 0);
  close(fd);
}
