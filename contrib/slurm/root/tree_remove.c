/* fpull Slurm plugin: removing a job's tree (see tree_remove.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree_remove.h"
#include "base/util.h"

int fp_slurm_mount_id(int fd)
{
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  int info = open(path, O_RDONLY | O_CLOEXEC);
  if (info < 0)
    return -1;
  ssize_t n = read(info, buf, sizeof buf - 1);
  close(info);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  const char *m = strstr(buf, "\nmnt_id:");
  return m ? atoi(m + 8) : -1;
}

/* One level of the walk: the directory's name in its parent, what it is, its mount, and
 * the entries in it that stay (mount points, or what could not be removed). */
struct level {
  char *name;
  dev_t dev;
  ino_t ino;
  int mnt;
  char **skip;
};

static int skipped(const struct level *l, const char *name)
{
  for (size_t i = 0; l->skip && l->skip[i]; i++)
    if (strcmp(l->skip[i], name) == 0)
      return 1;
  return 0;
}

static void leave(struct level *l, const char *name, size_t *left)
{
  l->skip = fp_strv_push(l->skip, name);
  (*left)++;
}

/* name in dirfd as an O_PATH descriptor, when it is on mount mnt; -1 (errno EBUSY) when it
 * is a mount point, or another error. */
static int open_same_mount(int dirfd, const char *name, int mnt)
{
  int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  if (fp_slurm_mount_id(fd) != mnt) {
    close(fd);
    errno = EBUSY;
    return -1;
  }
  return fd;
}

/* The directory behind pfd (an O_PATH descriptor on our mount), opened for listing; as its
 * owner without u+rwx, opened up first through the descriptor (never by name, which could
 * be swapped). */
static int open_listing(int pfd, struct stat *st)
{
  if (fstat(pfd, st) < 0)
    return -1;
  if (!S_ISDIR(st->st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  if (geteuid() != 0 && st->st_uid == geteuid() && (st->st_mode & S_IRWXU) != S_IRWXU) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
    (void)chmod(proc, S_IRWXU);
  }
  return openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void free_level(struct level *l)
{
  free(l->name);
  fpull_strv_free(l->skip);
}

int fp_slurm_remove_tree(int dirfd, const char *name, size_t *left)
{
  *left = 0;
  int top_mnt = fp_slurm_mount_id(dirfd);
  struct stat st;
  int pfd = open_same_mount(dirfd, name, top_mnt);
  if (pfd < 0) {
    if (errno == ENOENT)
      return 0;
    if (errno == EBUSY)
      *left = 1;
    return -1;
  }
  if (fstat(pfd, &st) == 0 && !S_ISDIR(st.st_mode)) {
    close(pfd);
    return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -1 : 0;
  }
  int cur = open_listing(pfd, &st);
  close(pfd);
  if (cur < 0)
    return -1;
  size_t depth = 0, cap = 16;
  struct level *stack = fp_xcalloc(cap, sizeof *stack);
  stack[depth++] = (struct level){fp_xstrdup(name), st.st_dev, st.st_ino, top_mnt, NULL};
  int rc = 0, saved = 0;
  while (depth) {
    struct level *l = &stack[depth - 1];
    int rfd = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
    if (!d) {
      if (rfd >= 0)
        close(rfd);
      rc = -1;
      saved = errno;
      break;
    }
    char *sub = NULL;
    int sub_fd = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
      const char *n = de->d_name;
      if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || skipped(l, n))
        continue;
      if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
        int fd = open_same_mount(cur, n, l->mnt);
        if (fd < 0) {
          if (errno != ENOENT)
            leave(l, n, left);
          continue;
        }
        struct stat s2;
        if (fstat(fd, &s2) == 0 && S_ISDIR(s2.st_mode)) {
          sub = fp_xstrdup(n);
          sub_fd = fd;
          break;
        }
        close(fd);
      }
      /* A file, or a mount point over one (unlink says EBUSY without entering it). */
      if (unlinkat(cur, n, 0) < 0 && errno != ENOENT)
        leave(l, n, left);
    }
    closedir(d);
    if (sub) {
      int nfd = open_listing(sub_fd, &st);
      close(sub_fd);
      if (nfd < 0) {
        leave(l, sub, left);
        free(sub);
        continue;
      }
      close(cur);
      cur = nfd;
      int mnt = l->mnt;
      if (depth == cap)
        stack = fp_xrealloc(stack, sizeof *stack * (cap *= 2));
      stack[depth++] = (struct level){sub, st.st_dev, st.st_ino, mnt, NULL};
      continue;
    }
    /* This level is done: up through "..", only when it is the very directory we came
     * down from. */
    struct level me = stack[--depth];
    int up = -1;
    if (depth) {
      up = openat(cur, "..", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      struct stat pst;
      if (up >= 0 && (fstat(up, &pst) < 0 || pst.st_dev != stack[depth - 1].dev ||
                      pst.st_ino != stack[depth - 1].ino)) {
        close(up);
        up = -1;
        errno = EXDEV;
      }
      if (up < 0) {
        saved = errno;
        rc = -1;
        free_level(&me);
        close(cur);
        cur = -1;
        break;
      }
    }
    close(cur);
    cur = up;
    if (unlinkat(depth ? up : dirfd, me.name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
      if (depth)
        leave(&stack[depth - 1], me.name, left);
      else
        (*left)++;
    }
    free_level(&me);
  }
  if (cur >= 0)
    close(cur);
  while (depth)
    free_level(&stack[--depth]);
  free(stack);
  if (rc == 0 && *left) {
    rc = -1;
    saved = EBUSY;
  }
  errno = saved;
  return rc;
}
