/* In-root path resolution (see inroot.h). With openat2 the kernel keeps every lookup inside
 * the root (RESOLVE_IN_ROOT); without it, or when tests ask, a walk that opens one component
 * at a time with O_NOFOLLOW and expands symlinks itself gives the same answers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inroot.h"
#include "base/util.h"

/* Symlink expansion can grow the remaining path; bound it so a crafted chain costs little. */
#define WALK_REST_MAX (64 * 1024)

static int sys_openat2(int dirfd, const char *path, int flags)
{
  struct open_how how = {
      .flags = (uint64_t)(flags | O_CLOEXEC),
      .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
  };
  /* EAGAIN means a concurrent rename raced the lookup; retrying is what the man page asks. */
  for (int i = 0; i < 16; i++) {
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (fd >= 0 || errno != EAGAIN)
      return fd;
  }
  return -1;
}

void fp_root_init(struct fp_root *r, int dirfd, int force_fallback)
{
  r->fd = dirfd;
  r->fallback = force_fallback;
  if (!r->fallback) {
    /* ENOSYS on old kernels, EPERM under some seccomp filters: use the walk there. */
    int fd = sys_openat2(dirfd, ".", O_PATH | O_DIRECTORY);
    if (fd < 0)
      r->fallback = 1;
    else
      close(fd);
  }
}

int fp_path_clean(const char *in, char *out, const char **why)
{
  if (strlen(in) > FP_PATH_MAX) {
    *why = "path too long";
    errno = ENAMETOOLONG;
    return -1;
  }
  size_t o = 0;
  const char *p = in;
  while (*p) {
    while (*p == '/')
      p++;
    if (!*p)
      break;
    const char *s = p;
    while (*p && *p != '/')
      p++;
    size_t n = (size_t)(p - s);
    if (n == 1 && s[0] == '.')
      continue;
    if (n == 2 && s[0] == '.' && s[1] == '.') {
      *why = "path has a .. component";
      errno = EINVAL;
      return -1;
    }
    if (n > NAME_MAX) {
      *why = "path component longer than 255 bytes";
      errno = ENAMETOOLONG;
      return -1;
    }
    if (o)
      out[o++] = '/';
    memcpy(out + o, s, n);
    o += n;
  }
  out[o] = '\0';
  return 0;
}

/* The walk's state: the path still to resolve, and the canonical path of cur (the
 * directories entered so far, all real directories reached without following anything). */
struct walk {
  char *rest;
  size_t pos;
  char *canon;
  size_t canon_len, canon_cap;
  int cur;
};

static void walk_free(struct walk *w)
{
  free(w->rest);
  free(w->canon);
  if (w->cur >= 0)
    close(w->cur);
}

static int open_root(const struct fp_root *r)
{
  return openat(r->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* ".." in a symlink target: re-enter the parent by walking the canonical path again from
 * the root, each step a real directory opened with O_NOFOLLOW, so it cannot leave. */
static int walk_up(const struct fp_root *r, struct walk *w)
{
  char *slash = w->canon_len ? memrchr(w->canon, '/', w->canon_len) : NULL;
  w->canon_len = slash ? (size_t)(slash - w->canon) : 0;
  int fd = open_root(r);
  if (fd < 0)
    return -1;
  size_t i = 0;
  while (i < w->canon_len) {
    size_t j = i;
    while (j < w->canon_len && w->canon[j] != '/')
      j++;
    char comp[NAME_MAX + 1];
    memcpy(comp, w->canon + i, j - i);
    comp[j - i] = '\0';
    int nfd = openat(fd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
    close(fd);
    if (nfd < 0)
      return -1;
    fd = nfd;
    i = j + 1;
  }
  close(w->cur);
  w->cur = fd;
  return 0;
}

static void canon_push(struct walk *w, const char *comp, size_t n)
{
  if (w->canon_len + n + 2 > w->canon_cap) {
    w->canon_cap = (w->canon_len + n + 2) * 2;
    w->canon = fp_xrealloc(w->canon, w->canon_cap);
  }
  if (w->canon_len)
    w->canon[w->canon_len++] = '/';
  memcpy(w->canon + w->canon_len, comp, n);
  w->canon_len += n;
}

/* True when only "/" and "." remain. */
static int rest_is_last(const char *s)
{
  for (; *s; s++) {
    if (*s == '/')
      continue;
    if (*s == '.' && (s[1] == '/' || s[1] == '\0'))
      continue;
    return 0;
  }
  return 1;
}

/* Replaces the consumed part of rest by target, keeping what was not consumed yet. */
static int walk_splice(struct walk *w, const char *target, size_t tlen)
{
  size_t left = strlen(w->rest + w->pos);
  if (tlen + 1 + left + 1 > WALK_REST_MAX) {
    errno = ENAMETOOLONG;
    return -1;
  }
  char *n = fp_xmalloc(tlen + 1 + left + 1);
  memcpy(n, target, tlen);
  n[tlen] = '/';
  memcpy(n + tlen + 1, w->rest + w->pos, left + 1);
  free(w->rest);
  w->rest = n;
  w->pos = 0;
  return 0;
}

static int walk(const struct fp_root *r, const char *path, int create, int nofollow_last,
                int want_dir)
{
  struct walk w = {.rest = fp_xstrdup(path), .cur = open_root(r)};
  int hops = 0, saved;
  if (w.cur < 0)
    goto fail;
  for (;;) {
    while (w.rest[w.pos] == '/')
      w.pos++;
    if (!w.rest[w.pos])
      break;
    size_t s = w.pos;
    while (w.rest[w.pos] && w.rest[w.pos] != '/')
      w.pos++;
    size_t n = w.pos - s;
    if (n > NAME_MAX) {
      errno = ENAMETOOLONG;
      goto fail;
    }
    char comp[NAME_MAX + 1];
    memcpy(comp, w.rest + s, n);
    comp[n] = '\0';
    if (strcmp(comp, ".") == 0)
      continue;
    if (strcmp(comp, "..") == 0) {
      if (w.canon_len && walk_up(r, &w) < 0)
        goto fail;
      continue;
    }
    int last = rest_is_last(w.rest + w.pos);
    int fd = openat(w.cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      if (errno != ENOENT || !create)
        goto fail;
      if (mkdirat(w.cur, comp, 0755) < 0 && errno != EEXIST)
        goto fail;
      fd = openat(w.cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        goto fail;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
      saved = errno;
      close(fd);
      errno = saved;
      goto fail;
    }
    if (S_ISLNK(st.st_mode)) {
      if (last && nofollow_last && !want_dir) {
        close(w.cur);
        w.cur = fd;
        break;
      }
      char target[FP_PATH_MAX + 1];
      ssize_t tl =
          ++hops > FP_SYMLINK_MAX ? (errno = ELOOP, -1) : readlinkat(fd, "", target, sizeof target);
      saved = errno;
      close(fd);
      errno = saved;
      if (tl < 0)
        goto fail;
      if (tl == 0 || (size_t)tl >= sizeof target) {
        errno = tl ? ENAMETOOLONG : ENOENT;
        goto fail;
      }
      if (walk_splice(&w, target, (size_t)tl) < 0)
        goto fail;
      if (target[0] == '/') {
        close(w.cur);
        w.canon_len = 0;
        if ((w.cur = open_root(r)) < 0)
          goto fail;
      }
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      canon_push(&w, comp, n);
      close(w.cur);
      w.cur = fd;
      continue;
    }
    if (!last || want_dir) {
      close(fd);
      errno = ENOTDIR;
      goto fail;
    }
    close(w.cur);
    w.cur = fd;
    break;
  }
  free(w.rest);
  free(w.canon);
  return w.cur;
fail:
  saved = errno;
  walk_free(&w);
  errno = saved;
  return -1;
}

static int resolve(const struct fp_root *r, const char *path, int create, int nofollow_last,
                   int want_dir)
{
  if (!r->fallback) {
    int flags = O_PATH | (want_dir ? O_DIRECTORY : 0) | (nofollow_last ? O_NOFOLLOW : 0);
    int fd = sys_openat2(r->fd, *path ? path : ".", flags);
    /* Missing parents are made by the walk, which is as safe, only slower. */
    if (fd >= 0 || errno != ENOENT || !create)
      return fd;
  }
  return walk(r, path, create, nofollow_last, want_dir);
}

int fp_inroot_parent(const struct fp_root *r, const char *path, int create, const char **base)
{
  const char *slash = strrchr(path, '/');
  *base = slash ? slash + 1 : path;
  if (!slash)
    return open_root(r);
  char dir[FP_PATH_MAX + 1];
  size_t n = (size_t)(slash - path);
  if (n > FP_PATH_MAX) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(dir, path, n);
  dir[n] = '\0';
  return resolve(r, dir, create, 0, 1);
}

int fp_inroot_open(const struct fp_root *r, const char *path, int nofollow_last)
{
  return resolve(r, path, 0, nofollow_last, 0);
}

/* Opens a directory for emptying it. As non-root, a directory of ours without u+rwx (its
 * final mode from the image) is opened up first; it is about to be removed anyway. The mode
 * is changed through the O_PATH fd (fchmodat by name would follow a symlink swapped in after
 * the check), by its /proc/self/fd link, which names that very inode. */
static int open_for_rm(int dirfd, const char *name)
{
  if (geteuid() != 0) {
    int pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (pfd < 0)
      return -1;
    int bad = fstat(pfd, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (bad) {
      int saved = bad;
      close(pfd);
      errno = saved;
      return -1;
    }
    if ((st.st_mode & S_IRWXU) != S_IRWXU && st.st_uid == geteuid()) {
      char proc[64];
      snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
      (void)chmod(proc, S_IRWXU);
    }
    int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int saved = errno;
    close(pfd);
    errno = saved;
    return fd;
  }
  return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int is_dir_entry(int dirfd, const struct dirent *de)
{
  if (de->d_type != DT_UNKNOWN)
    return de->d_type == DT_DIR;
  struct stat st;
  return fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* One level of a removal in progress: the directory's name in its parent, and what it is. */
struct rm_level {
  char *name;
  dev_t dev;
  ino_t ino;
};

static int same_dir(int fd, const struct rm_level *l)
{
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino;
}

int fp_rm_rf_at(int dirfd, const char *name)
{
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode))
    return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -1 : 0;

  /* Depth-first without recursion, one fd at a time. Coming back up goes through "..", but
   * the tree may be shared (an old DEST, a 1777 /tmp in it): another user can rename a
   * directory out of it while we work, and ".." then names a directory of theirs. So every
   * level remembers what its directory is (dev, ino), and ".." is used only when it is the
   * very directory we came down from; anything else stops the removal (EXDEV) without
   * touching the directory ".." now names. */
  struct rm_level *stack = NULL;
  size_t depth = 0, cap = 0;
  int cur = open_for_rm(dirfd, name), rc = -1, saved = 0;
  if (cur < 0)
    return -1;
  if (fstat(cur, &st) < 0) {
    saved = errno;
    close(cur);
    errno = saved;
    return -1;
  }
  stack = fp_xmalloc(sizeof *stack * (cap = 16));
  stack[depth++] = (struct rm_level){fp_xstrdup(name), st.st_dev, st.st_ino};
  while (depth) {
    int rfd = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
    if (!d) {
      if (rfd >= 0)
        close(rfd);
      goto out;
    }
    char *sub = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
        continue;
      if (is_dir_entry(cur, de)) {
        sub = fp_xstrdup(de->d_name);
        break;
      }
      if (unlinkat(cur, de->d_name, 0) < 0 && errno != ENOENT) {
        closedir(d);
        goto out;
      }
    }
    closedir(d);
    if (sub) {
      int nfd = open_for_rm(cur, sub);
      if (nfd < 0 || fstat(nfd, &st) < 0) {
        if (nfd >= 0)
          close(nfd);
        free(sub);
        goto out;
      }
      close(cur);
      cur = nfd;
      if (depth == cap)
        stack = fp_xrealloc(stack, sizeof *stack * (cap *= 2));
      stack[depth++] = (struct rm_level){sub, st.st_dev, st.st_ino};
      continue;
    }
    struct rm_level me = stack[--depth];
    int up = -1;
    if (depth) {
      up = openat(cur, "..", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (up >= 0 && !same_dir(up, &stack[depth - 1])) {
        close(up);
        up = -1;
        errno = EXDEV;
      }
    }
    close(cur);
    cur = up;
    if (depth && up < 0) {
      free(me.name);
      goto out;
    }
    int r = unlinkat(depth ? up : dirfd, me.name, AT_REMOVEDIR);
    free(me.name);
    if (r < 0 && errno != ENOENT)
      goto out;
  }
  rc = 0;
out:
  saved = errno;
  if (cur >= 0)
    close(cur);
  while (depth)
    free(stack[--depth].name);
  free(stack);
  errno = saved;
  return rc;
}

const char *fp_rm_strerror(int e)
{
  return e == EXDEV ? "a directory in it was moved away during the removal; the rest is left"
                    : strerror(e);
}
