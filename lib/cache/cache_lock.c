#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_lock.h"

/* Tries once. 0, or -1 with errno (EAGAIN while someone else holds it). */
static int lock_fd(int fd)
{
  /* Open-file-description locks: unlike classic POSIX locks they also exclude threads of
   * one process (parallel downloads), and unlike flock they reach NFS servers. */
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  int r;
  do
    r = fcntl(fd, F_OFD_SETLK, &fl);
  while (r < 0 && errno == EINTR);
  if (r < 0 && errno == EACCES)
    errno = EAGAIN;
  if (r < 0 && errno == EINVAL) {
    /* Kernels before 3.15 have no OFD locks. */
    do
      r = flock(fd, LOCK_EX | LOCK_NB);
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno == EWOULDBLOCK)
      errno = EAGAIN;
  }
  return r;
}

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Polls for the lock: every 20 ms at first, then up to every 500 ms. 0 locked, 1 gave up,
 * -1 with errno. */
static int wait_for(int fd, double wait_s)
{
  double start = now_s(), quiet_since = start;
  struct timespec seen = {0};
  struct stat st;
  if (fstat(fd, &st) == 0)
    seen = st.st_mtim;
  long nap_ms = 20;
  for (;;) {
    if (lock_fd(fd) == 0)
      return 0;
    if (errno != EAGAIN)
      return -1;
    double t = now_s();
    if (fstat(fd, &st) == 0 &&
        (st.st_mtim.tv_sec != seen.tv_sec || st.st_mtim.tv_nsec != seen.tv_nsec)) {
      seen = st.st_mtim;
      quiet_since = t;
    }
    if (t - quiet_since >= wait_s || t - start >= 10 * wait_s)
      return 1;
    struct timespec nap = {.tv_sec = nap_ms / 1000, .tv_nsec = (nap_ms % 1000) * 1000000L};
    nanosleep(&nap, NULL);
    if (nap_ms < 500)
      nap_ms *= 2;
  }
}

int fp_lock_take(int dirfd, const char *name, mode_t mode, double wait_s, int *out)
{
  *out = -1;
  for (;;) {
    int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode);
    if (fd < 0)
      return errno == EACCES || errno == EPERM ? 1 : -1;
    struct stat a, b;
    if (fstat(fd, &a) < 0 || !S_ISREG(a.st_mode)) {
      close(fd);
      errno = EINVAL;
      return 1; /* a FIFO or device planted there: nothing to lock with */
    }
    int r = lock_fd(fd);
    if (r < 0 && errno == EAGAIN)
      r = wait_s > 0 ? wait_for(fd, wait_s) : 1;
    if (r != 0) {
      int e = errno;
      close(fd);
      errno = e;
      return r;
    }
    /* The previous holder unlinks the file before it unlocks (fp_lock_drop): a lock on a
     * file no longer at this name protects nothing, so start over on the current one. */
    if (fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino) {
      *out = fd;
      return 0;
    }
    close(fd);
  }
}

void fp_lock_touch(int fd)
{
  static __thread time_t last;
  time_t t = time(NULL);
  if (fd < 0 || t == last)
    return;
  last = t;
  (void)futimens(fd, NULL);
}

void fp_lock_drop(int dirfd, const char *name, int fd)
{
  if (fd < 0)
    return;
  unlinkat(dirfd, name, 0);
  close(fd);
}
