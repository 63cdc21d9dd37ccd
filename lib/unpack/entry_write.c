/* Writing tar entries into the rootfs (see entry_write.h). Every object is created relative
 * to a directory fd from the in-root resolver, with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW, and its
 * metadata is set on the fd we created or with the no-follow *at() variants: never through
 * a symlink (containerd CVE-2021-32760, libarchive CVE-2021-31566). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "entry_write.h"
#include "base/util.h"

void fp_writer_init(struct fp_writer *w, int rootfd, int force_fallback, int privileged,
                    struct fpull_unpack_stats *stats)
{
  memset(w, 0, sizeof *w);
  fp_root_init(&w->root, rootfd, force_fallback);
  w->privileged = privileged;
  w->stats = stats;
  for (int i = 0; i < FP_PARENT_CACHE; i++)
    w->cache[i].fd = -1;
  w->max_file = UINT64_MAX;
  if (fstat(rootfd, &w->root_st) < 0)
    memset(&w->root_st, 0, sizeof w->root_st);
  w->euid = geteuid();
  w->egid = getegid();
  /* umask() itself would change it for a moment under other threads: read it instead. */
  cleanup_free char *status = NULL;
  size_t len;
  const char *u;
  if (fp_read_file("/proc/self/status", 1 << 16, &status, &len) == 0 &&
      (u = strstr(status, "\nUmask:")) != NULL) {
    char *end;
    unsigned long m = strtoul(u + 7, &end, 8);
    w->umask_known = end != u + 7 && m <= 0777;
    w->umask = (mode_t)m;
  }
  /* Directories inherit a default ACL: then open() does not apply the umask but the ACL,
   * and every mode is set explicitly. */
  if (fgetxattr(rootfd, "system.posix_acl_default", NULL, 0) >= 0 ||
      (errno != ENODATA && errno != EOPNOTSUPP))
    w->umask_known = 0;
}

/* Drops every cached parent but keep (an fd, or -1 for none). */
static void forget_except(struct fp_writer *w, int keep)
{
  for (int i = 0; i < FP_PARENT_CACHE; i++) {
    struct fp_parent_slot *c = &w->cache[i];
    if (c->fd < 0 || c->fd == keep)
      continue;
    close(c->fd);
    free(c->path);
    c->path = NULL;
    c->fd = -1;
  }
}

void fp_writer_forget(struct fp_writer *w)
{
  forget_except(w, -1);
}

void fp_writer_free(struct fp_writer *w)
{
  fp_writer_forget(w);
  fp_layerset_free(&w->layer);
  free(w->dirs);
  free(w->dir_index);
  w->dirs = NULL;
  w->dir_index = NULL;
  w->n_dirs = w->cap_dirs = w->dir_index_cap = 0;
}

void fp_writer_layer_begin(struct fp_writer *w)
{
  fp_layerset_clear(&w->layer);
  fp_writer_forget(w);
}

static const char *type_name(mode_t t)
{
  switch (t) {
  case AE_IFREG:
    return "file";
  case AE_IFDIR:
    return "directory";
  case AE_IFLNK:
    return "symlink";
  case AE_IFIFO:
    return "fifo";
  case AE_IFCHR:
    return "character device";
  case AE_IFBLK:
    return "block device";
  case AE_IFSOCK:
    return "socket";
  default:
    return "unknown type";
  }
}

/* Records that the layer writes into directory fd (which is st) and every directory above
 * it up to the root, for the layer's whiteouts; stops at the first one already known. The
 * tree is our private staging directory, so ".." is the directory above. */
static void mark_written_into(struct fp_writer *w, int fd, const struct stat *st)
{
  struct stat s = *st;
  int cur = -1, from = fd;
  while (fp_layerset_add_dir(&w->layer, &s) &&
         !(s.st_dev == w->root_st.st_dev && s.st_ino == w->root_st.st_ino)) {
    int up = openat(from, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cur >= 0)
      close(cur);
    cur = up;
    if (up < 0 || fstat(up, &s) < 0)
      break;
    from = up;
  }
  if (cur >= 0)
    close(cur);
}

/* The resolved parent of path; owned by the writer (cached), and what it is (*pst). Missing
 * parents are created. *own_gid: see fp_parent_slot. */
static int get_parent(struct fp_writer *w, const char *path, const char **base, int *own_gid,
                      const struct stat **pst)
{
  const char *slash = strrchr(path, '/');
  size_t plen = slash ? (size_t)(slash - path) : 0;
  *base = slash ? slash + 1 : path;
  struct fp_parent_slot *victim = &w->cache[0];
  for (int i = 0; i < FP_PARENT_CACHE; i++) {
    struct fp_parent_slot *c = &w->cache[i];
    if (c->fd >= 0 && strncmp(c->path, path, plen) == 0 && c->path[plen] == '\0') {
      c->used = ++w->clock;
      *own_gid = c->own_gid;
      *pst = &c->st;
      return c->fd;
    }
    if (c->fd < 0 || (victim->fd >= 0 && c->used < victim->used))
      victim = c;
  }
  /* Mostly the parent is a directory just created under a cached one (tar order): one
   * openat of a real directory below it (never a symlink: O_NOFOLLOW with O_DIRECTORY)
   * instead of resolving the whole path again. Anything else takes the resolver. */
  int fd = -1;
  const char *up = plen ? memrchr(path, '/', plen) : NULL;
  size_t ulen = up ? (size_t)(up - path) : 0;
  const char *comp = up ? up + 1 : path;
  size_t clen = plen - (size_t)(comp - path);
  if (plen && clen <= NAME_MAX) {
    for (int i = 0; i < FP_PARENT_CACHE; i++) {
      struct fp_parent_slot *c = &w->cache[i];
      if (c->fd >= 0 && strncmp(c->path, path, ulen) == 0 && c->path[ulen] == '\0') {
        char name[NAME_MAX + 1];
        memcpy(name, comp, clen);
        name[clen] = '\0';
        fd = openat(c->fd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        break;
      }
    }
  }
  if (fd < 0) {
    const char *b;
    fd = fp_inroot_parent(&w->root, path, 1, &b);
  }
  if (fd < 0)
    return -1;
  if (victim->fd >= 0) {
    close(victim->fd);
    free(victim->path);
  }
  victim->path = fp_xstrndup(path, plen);
  victim->fd = fd;
  victim->used = ++w->clock;
  if (fstat(fd, &victim->st) < 0)
    memset(&victim->st, 0, sizeof victim->st);
  victim->own_gid = victim->st.st_gid == w->egid;
  *own_gid = victim->own_gid;
  mark_written_into(w, fd, &victim->st);
  *pst = &victim->st;
  return fd;
}

/* Tar semantics for an entry landing on an existing name: a directory onto a directory
 * keeps it (and its content); anything else is removed first, a symlink itself, never
 * what it points to. */
static int make_room(struct fp_writer *w, int dfd, const char *base, int keep_dir, int *kept)
{
  struct stat st;
  if (kept)
    *kept = 0;
  if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : -1;
  if (keep_dir && S_ISDIR(st.st_mode)) {
    *kept = 1;
    return 0;
  }
  /* Other cached parents may lie under what goes, or have been reached through it. */
  forget_except(w, dfd);
  if (S_ISDIR(st.st_mode))
    return fp_rm_rf_at(dfd, base);
  return unlinkat(dfd, base, 0) < 0 && errno != ENOENT ? -1 : 0;
}

static void entry_times(struct archive_entry *e, struct timespec t[2])
{
  t[1].tv_sec = archive_entry_mtime(e);
  t[1].tv_nsec = archive_entry_mtime_nsec(e);
  if (!archive_entry_mtime_is_set(e)) {
    t[1].tv_sec = 0;
    t[1].tv_nsec = UTIME_NOW;
  }
  if (archive_entry_atime_is_set(e)) {
    t[0].tv_sec = archive_entry_atime(e);
    t[0].tv_nsec = archive_entry_atime_nsec(e);
  } else {
    t[0] = t[1];
  }
  if (t[0].tv_nsec < 0 || t[0].tv_nsec > 999999999)
    t[0].tv_nsec = 0;
  if (t[1].tv_nsec < 0 || (t[1].tv_nsec > 999999999 && t[1].tv_nsec != UTIME_NOW))
    t[1].tv_nsec = 0;
}

static void owner_failed(struct fp_writer *w, const char *path)
{
  if (!w->stats->owners_failed++)
    fp_warn("cannot set owners in this rootfs (%s: %s); keeping the caller's", path,
            strerror(errno));
}

/* Extended attributes from the allowlist: user.* always, security.capability as root.
 * trusted.*, system.* (ACLs) and the rest are dropped and counted. */
static void apply_xattrs(struct fp_writer *w, struct archive_entry *e, int fd)
{
  const char *name;
  const void *value;
  size_t size;
  if (archive_entry_xattr_reset(e) == 0)
    return;
  while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
    if (!fp_xattr_allowed(name, size, w->privileged, w->stats) || fd < 0 ||
        fsetxattr(fd, name, value, size, 0) < 0)
      w->stats->xattrs_skipped++;
  }
}

static int write_all(int fd, const char *p, size_t n)
{
  while (n) {
    ssize_t r = write(fd, p, n);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* Whether a new entry in a directory with own_gid needs fchown to get the entry's owner. */
static int needs_chown(const struct fp_writer *w, struct archive_entry *e, int own_gid)
{
  return w->privileged && (!own_gid || (uid_t)archive_entry_uid(e) != w->euid ||
                           (gid_t)archive_entry_gid(e) != w->egid);
}

int fp_priv_policy(const struct fpull_unpack_opts *o, int image)
{
  if (geteuid() != 0 || o->unprivileged)
    return 0;
  return FP_PRIV_OWNERS | (!image || o->keep_privileged ? FP_PRIV_SPECIAL : 0);
}

/* As non-root the kernel still lets the owner set setuid and setgid: a shared rootfs would
 * hand other users a program that runs as us (contract v3, "Rootfs"); a root's SquashFS
 * image mounted without nosuid, one that runs as root (v4). Dropped and counted. */
mode_t fp_entry_perm(struct archive_entry *e, int privileged, struct fpull_unpack_stats *stats)
{
  mode_t perm = archive_entry_perm(e) & 07777;
  if (!(privileged & FP_PRIV_SPECIAL) && (perm & (S_ISUID | S_ISGID))) {
    stats->setid_dropped++;
    perm &= (mode_t) ~(S_ISUID | S_ISGID);
  }
  return perm;
}

int fp_entry_node(struct archive_entry *e, int privileged, struct fpull_unpack_stats *stats,
                  int *make, unsigned long *maj, unsigned long *min, fpull_err *err)
{
  *make = 1;
  *maj = *min = 0;
  if (archive_entry_filetype(e) == AE_IFIFO)
    return 0;
  *maj = (unsigned long)archive_entry_rdevmajor(e);
  *min = (unsigned long)archive_entry_rdevminor(e);
  if (*maj >= (1ul << 12) || *min >= (1ul << 20))
    return fpull_err_set(err, FPULL_EUNSAFE, "device number %lu:%lu out of range", *maj, *min);
  if (!(privileged & FP_PRIV_SPECIAL)) {
    stats->devices_skipped++;
    *make = 0;
  }
  return 0;
}

static int write_file(struct fp_writer *w, struct archive *a, struct archive_entry *e,
                      const char *path, int dfd, const char *base, int own_gid, fpull_err *err)
{
  int64_t size = archive_entry_size(e);
  if (size < 0 || (uint64_t)size > w->max_file)
    return fpull_err_set(err, FPULL_EUNSAFE, "file size %lld over the layer's limit",
                         (long long)size);
  /* Created with its final permissions where open() gives exactly those (the fd is
   * writable whatever they say); setuid, setgid and sticky only after the owner. */
  mode_t perm = fp_entry_perm(e, w->privileged, w->stats);
  int chmod_after = !w->umask_known || (perm & 07000) || (perm & w->umask);
  mode_t create = chmod_after ? 0600 : perm;
  /* Always a new inode: never truncate in place, an existing file may be a hardlink. */
  cleanup_close int fd =
      openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, create);
  if (fd < 0 && errno == EEXIST) {
    if (make_room(w, dfd, base, 0, NULL) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "cannot replace: %s", strerror(errno));
    fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, create);
  }
  if (fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot create: %s", strerror(errno));

  const void *buf;
  size_t len;
  la_int64_t off;
  int64_t pos = 0;
  int r;
  while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
    /* Never past the size in the header: max-unpacked counted that (unpack.c). */
    if (off < 0 || off > size || len > (uint64_t)(size - off))
      return fpull_err_set(err, FPULL_EUNSAFE, "bad sparse map");
    if (off != pos) {
      /* A sparse entry: leave a hole. */
      if (off < pos || lseek(fd, off, SEEK_SET) < 0)
        return fpull_err_set(err, FPULL_EUNSAFE, "bad sparse map");
      pos = off;
    }
    if (write_all(fd, buf, len) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "write: %s", strerror(errno));
    pos += (int64_t)len;
  }
  if (r != ARCHIVE_EOF)
    return fpull_err_set(err, FPULL_EUNSAFE, "corrupt layer: %s",
                         archive_error_string(a) ? archive_error_string(a) : "read error");
  if (pos < size && ftruncate(fd, size) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "truncate: %s", strerror(errno));

  /* Owner before mode (chown clears setuid), xattrs after both (chown drops
   * security.capability), times last (everything before bumps them). */
  if (needs_chown(w, e, own_gid) &&
      fchown(fd, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e)) < 0)
    owner_failed(w, path);
  if (chmod_after && fchmod(fd, perm) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "chmod: %s", strerror(errno));
  apply_xattrs(w, e, fd);
  struct timespec t[2];
  entry_times(e, t);
  if (futimens(fd, t) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "set times: %s", strerror(errno));
  return 0;
}

static size_t dir_slot(const struct fp_writer *w, dev_t dev, ino_t ino)
{
  uint64_t h = ((uint64_t)dev * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)ino * 0xbf58476d1ce4e5b9ull);
  h ^= h >> 31;
  return (size_t)h & (w->dir_index_cap - 1);
}

static void dir_index_put(struct fp_writer *w, size_t i)
{
  size_t j = dir_slot(w, w->dirs[i].dev, w->dirs[i].ino);
  while (w->dir_index[j])
    j = (j + 1) & (w->dir_index_cap - 1);
  w->dir_index[j] = i + 1;
}

static struct fp_dirmeta *dir_find(const struct fp_writer *w, dev_t dev, ino_t ino)
{
  if (!w->dir_index_cap)
    return NULL;
  for (size_t j = dir_slot(w, dev, ino); w->dir_index[j]; j = (j + 1) & (w->dir_index_cap - 1)) {
    struct fp_dirmeta *m = &w->dirs[w->dir_index[j] - 1];
    if (m->dev == dev && m->ino == ino)
      return m;
  }
  return NULL;
}

static uint64_t name_hash(const char *name)
{
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  return h;
}

static void defer_dir(struct fp_writer *w, const struct stat *st, const struct stat *parent,
                      const char *base, struct archive_entry *e)
{
  struct fp_dirmeta *m = dir_find(w, st->st_dev, st->st_ino);
  if (!m) {
    if (w->n_dirs == w->cap_dirs) {
      w->cap_dirs = w->cap_dirs ? w->cap_dirs * 2 : 256;
      w->dirs = fp_xrealloc(w->dirs, w->cap_dirs * sizeof *w->dirs);
    }
    if ((w->n_dirs + 1) * 2 > w->dir_index_cap) {
      free(w->dir_index);
      w->dir_index_cap = w->dir_index_cap ? w->dir_index_cap * 2 : 512;
      w->dir_index = fp_xcalloc(w->dir_index_cap, sizeof *w->dir_index);
      for (size_t i = 0; i < w->n_dirs; i++)
        dir_index_put(w, i);
    }
    m = &w->dirs[w->n_dirs];
    m->dev = st->st_dev;
    m->ino = st->st_ino;
    dir_index_put(w, w->n_dirs++);
  }
  m->parent_dev = parent->st_dev;
  m->parent_ino = parent->st_ino;
  m->name_hash = name_hash(base);
  m->mode = archive_entry_perm(e);
  m->uid = archive_entry_uid(e);
  m->gid = archive_entry_gid(e);
  entry_times(e, m->times);
}

static int write_dir(struct fp_writer *w, struct archive_entry *e, const char *path, int dfd,
                     const struct stat *pst, const char *base, fpull_err *err)
{
  int kept = 0;
  /* 0700 while the tree is built, whatever the image says: we must be able to fill it. */
  if (mkdirat(dfd, base, 0700) < 0) {
    if (errno != EEXIST || make_room(w, dfd, base, 1, &kept) < 0 ||
        (!kept && mkdirat(dfd, base, 0700) < 0))
      return fpull_err_set(err, FPULL_EFAIL, "cannot create directory: %s", strerror(errno));
  }
  if (archive_entry_xattr_count(e)) {
    cleanup_close int fd = openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    apply_xattrs(w, e, fd);
  }
  struct stat st;
  if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
    return fpull_err_set(err, FPULL_EFAIL, "cannot stat the new directory: %s",
                         S_ISDIR(st.st_mode) ? strerror(errno) : "replaced");
  defer_dir(w, &st, pst, base, e);
  (void)path;
  return 0;
}

static int write_symlink(struct fp_writer *w, struct archive_entry *e, const char *path, int dfd,
                         const char *base, int own_gid, fpull_err *err)
{
  const char *target = archive_entry_symlink(e);
  if (!target || !*target)
    return fpull_err_set(err, FPULL_EUNSAFE, "symlink with an empty target");
  if (strlen(target) > FP_PATH_MAX)
    return fpull_err_set(err, FPULL_EUNSAFE, "symlink target too long");
  /* Stored verbatim: it is resolved inside the rootfs when something goes through it. */
  if (symlinkat(target, dfd, base) < 0) {
    if (errno != EEXIST || make_room(w, dfd, base, 0, NULL) < 0 || symlinkat(target, dfd, base) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "cannot create symlink: %s", strerror(errno));
  }
  if (needs_chown(w, e, own_gid) && fchownat(dfd, base, (uid_t)archive_entry_uid(e),
                                             (gid_t)archive_entry_gid(e), AT_SYMLINK_NOFOLLOW) < 0)
    owner_failed(w, path);
  if (archive_entry_xattr_count(e))
    w->stats->xattrs_skipped += (uint64_t)archive_entry_xattr_count(e);
  struct timespec t[2];
  entry_times(e, t);
  (void)utimensat(dfd, base, t, AT_SYMLINK_NOFOLLOW);
  return 0;
}

static int write_hardlink(struct fp_writer *w, struct archive_entry *e, const char *path, int dfd,
                          const char *base, fpull_err *err)
{
  char target[FP_PATH_MAX + 1];
  const char *why;
  if (fp_path_clean(archive_entry_hardlink(e), target, &why) < 0)
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink target: %s", why);
  if (!*target)
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink to the root directory");
  if (strcmp(target, path) == 0)
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink to itself");
  /* The target's directories are followed inside the root, its last component is not: a
   * hardlink to a symlink links the symlink. */
  const char *sbase;
  cleanup_close int sfd = fp_inroot_parent(&w->root, target, 0, &sbase);
  struct stat sst;
  if (sfd < 0 || fstatat(sfd, sbase, &sst, AT_SYMLINK_NOFOLLOW) < 0)
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink target does not exist: %s", strerror(errno));
  if (S_ISDIR(sst.st_mode))
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink to a directory");
  struct stat dst;
  if (fstatat(dfd, base, &dst, AT_SYMLINK_NOFOLLOW) == 0 && dst.st_dev == sst.st_dev &&
      dst.st_ino == sst.st_ino)
    return 0;
  if (make_room(w, dfd, base, 0, NULL) < 0 || linkat(sfd, sbase, dfd, base, 0) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot link: %s", strerror(errno));
  return 0;
}

static int write_node(struct fp_writer *w, struct archive_entry *e, const char *path, int dfd,
                      const char *base, fpull_err *err)
{
  mode_t type = archive_entry_filetype(e);
  int make;
  unsigned long maj, min;
  int rc = fp_entry_node(e, w->privileged, w->stats, &make, &maj, &min, err);
  if (rc || !make)
    return rc;
  dev_t dev = type == AE_IFIFO ? 0 : makedev(maj, min);
  mode_t mode = (type == AE_IFIFO ? S_IFIFO : type == AE_IFCHR ? S_IFCHR : S_IFBLK) | 0600;
  if (mknodat(dfd, base, mode, dev) < 0) {
    if (errno != EEXIST || make_room(w, dfd, base, 0, NULL) < 0 ||
        mknodat(dfd, base, mode, dev) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "cannot create %s: %s", type_name(type),
                           strerror(errno));
  }
  if (w->privileged && fchownat(dfd, base, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e),
                                AT_SYMLINK_NOFOLLOW) < 0)
    owner_failed(w, path);
  /* glibc does AT_SYMLINK_NOFOLLOW through an O_PATH fd: it refuses symlinks. Opening a
   * device to fchmod it could have side effects. */
  if (fchmodat(dfd, base, fp_entry_perm(e, w->privileged, w->stats), AT_SYMLINK_NOFOLLOW) < 0 &&
      errno != EOPNOTSUPP)
    return fpull_err_set(err, FPULL_EFAIL, "chmod: %s", strerror(errno));
  struct timespec t[2];
  entry_times(e, t);
  (void)utimensat(dfd, base, t, AT_SYMLINK_NOFOLLOW);
  return 0;
}

int fp_entry_check(struct archive_entry *e, const char *path, fpull_err *err)
{
  mode_t type = archive_entry_filetype(e);
  const char *hl = archive_entry_hardlink(e);
  int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);
  /* Numeric ids only (no NSS lookups); (uid_t)-1 would mean "leave unchanged". */
  if (uid < 0 || gid < 0 || uid >= UINT32_MAX || gid >= UINT32_MAX)
    return fpull_err_set(err, FPULL_EUNSAFE, "invalid owner %lld:%lld", (long long)uid,
                         (long long)gid);
  if (!*path) {
    /* The root keeps its type and its private mode (umoci CVE-2021-29136). */
    if (hl || type != AE_IFDIR)
      return fpull_err_set(err, FPULL_EUNSAFE,
                           "refusing to change the type of the rootfs root: an empty name, / "
                           "or . names it, and it stays a directory (entry is a %s)",
                           hl ? "hardlink" : type_name(type));
    return FP_ENTRY_ROOT;
  }
  if (!hl && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK && type != AE_IFIFO &&
      type != AE_IFCHR && type != AE_IFBLK)
    return fpull_err_set(err, FPULL_EUNSAFE, "unsupported entry type (%s)", type_name(type));
  return 0;
}

int fp_entry_parent_error(const char *path, fpull_err *err)
{
  int e = errno;
  if (e == ENOTDIR) {
    /* umoci replaces a file met as a directory (file, then file/child); docker's overlay
     * fails. Refused as content: the layer contradicts itself or its lower layers. */
    const char *slash = strrchr(path, '/');
    return fpull_err_set(err, FPULL_EUNSAFE,
                         "parent %.*s is not a directory: a path through a file is refused",
                         slash ? (int)(slash - path) : 0, path);
  }
  return fpull_err_set(err, e == ELOOP ? FPULL_EUNSAFE : FPULL_EFAIL,
                       "cannot resolve parent directory: %s", strerror(e));
}

int fp_xattr_allowed(const char *name, size_t size, int privileged,
                     struct fpull_unpack_stats *stats)
{
  int cap = strcmp(name, "security.capability") == 0;
  if (cap && !(privileged & FP_PRIV_SPECIAL))
    stats->caps_dropped++;
  return (strncmp(name, "user.", 5) == 0 || (cap && (privileged & FP_PRIV_SPECIAL))) &&
         strlen(name) <= 255 && size <= 65536;
}

int fp_entry_write(struct fp_writer *w, struct archive *a, struct archive_entry *e,
                   const char *path, fpull_err *err)
{
  mode_t type = archive_entry_filetype(e);
  const char *hl = archive_entry_hardlink(e);
  int rc = fp_entry_check(e, path, err);
  if (rc)
    return rc == FP_ENTRY_ROOT ? 0 : rc;
  const char *base;
  int own_gid;
  const struct stat *pst;
  int dfd = get_parent(w, path, &base, &own_gid, &pst);
  if (dfd < 0)
    return fp_entry_parent_error(path, err);
  if (hl) {
    rc = write_hardlink(w, e, path, dfd, base, err);
  } else {
    switch (type) {
    case AE_IFREG:
      rc = write_file(w, a, e, path, dfd, base, own_gid, err);
      break;
    case AE_IFDIR:
      rc = write_dir(w, e, path, dfd, pst, base, err);
      break;
    case AE_IFLNK:
      rc = write_symlink(w, e, path, dfd, base, own_gid, err);
      break;
    default:
      rc = write_node(w, e, path, dfd, base, err);
      break;
    }
  }
  if (rc == 0)
    fp_layerset_add_name(&w->layer, pst, base);
  return rc;
}

/* Applies the deferred metadata of the directory fd (if it has any). */
static int apply_dir(struct fp_writer *w, int fd, int up, const char *name, fpull_err *err)
{
  struct stat st, ust;
  if (fstat(fd, &st) < 0 || fstat(up, &ust) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: cannot stat directory: %s", name, strerror(errno));
  const struct fp_dirmeta *m = dir_find(w, st.st_dev, st.st_ino);
  if (!m || m->parent_dev != ust.st_dev || m->parent_ino != ust.st_ino ||
      m->name_hash != name_hash(name))
    return 0;
  if (w->privileged && (st.st_uid != (uid_t)m->uid || st.st_gid != (gid_t)m->gid) &&
      fchown(fd, (uid_t)m->uid, (gid_t)m->gid) < 0)
    owner_failed(w, name);
  if (fchmod(fd, m->mode) < 0 || futimens(fd, m->times) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: cannot set mode or times: %s", name,
                         strerror(errno));
  return 0;
}

/* The subdirectories of the directory fd (never symlinks). */
static int list_subdirs(int fd, char ***out)
{
  *out = NULL;
  int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
  if (!d) {
    if (rfd >= 0)
      close(rfd);
    return -1;
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    struct stat st;
    if (de->d_type == DT_DIR ||
        (de->d_type == DT_UNKNOWN && fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISDIR(st.st_mode)))
      *out = fp_strv_push(*out, de->d_name);
  }
  closedir(d);
  return 0;
}

struct walk_level {
  char **subs;
  size_t next;
};

/* Directory metadata goes on once everything is in, children before their parent: writing
 * into a directory changes its times, and its mode may forbid writing or searching. The
 * directories are found by walking the tree (our private staging directory) and matched by
 * (dev, ino), so no path is kept per directory. Iterative, one fd at a time besides the
 * one above: depth costs memory, not stack or fds. */
int fp_writer_finish(struct fp_writer *w, fpull_err *err)
{
  fp_writer_forget(w);
  if (!w->n_dirs)
    return 0;
  int cur = openat(w->root.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cur < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot open the rootfs: %s", strerror(errno));
  struct walk_level *stack = fp_xmalloc(sizeof *stack * 16);
  size_t depth = 0, cap = 16;
  int rc = 0;
  char **subs;
  if (list_subdirs(cur, &subs) < 0) {
    rc = fpull_err_set(err, FPULL_EFAIL, "cannot read the rootfs: %s", strerror(errno));
    goto out;
  }
  stack[depth++] = (struct walk_level){subs, 0};
  while (depth) {
    struct walk_level *top = &stack[depth - 1];
    if (top->subs && top->subs[top->next]) {
      const char *name = top->subs[top->next++];
      int nfd = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (nfd < 0) {
        rc =
            fpull_err_set(err, FPULL_EFAIL, "%s: cannot open directory: %s", name, strerror(errno));
        goto out;
      }
      if (list_subdirs(nfd, &subs) < 0) {
        rc =
            fpull_err_set(err, FPULL_EFAIL, "%s: cannot read directory: %s", name, strerror(errno));
        close(nfd);
        goto out;
      }
      if (depth == cap)
        stack = fp_xrealloc(stack, sizeof *stack * (cap *= 2));
      stack[depth++] = (struct walk_level){subs, 0};
      close(cur);
      cur = nfd;
      continue;
    }
    /* All children done: this directory's own metadata, then up (".." first: the new mode
     * may forbid searching it). The root keeps its private mode. */
    fp_strvp(&top->subs);
    depth--;
    if (!depth)
      break;
    const char *name = stack[depth - 1].subs[stack[depth - 1].next - 1];
    int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (up < 0) {
      rc = fpull_err_set(err, FPULL_EFAIL, "%s: cannot go up: %s", name, strerror(errno));
      goto out;
    }
    rc = apply_dir(w, cur, up, name, err);
    close(cur);
    cur = up;
    if (rc)
      goto out;
  }
out:
  while (depth)
    fp_strvp(&stack[--depth].subs);
  free(stack);
  if (cur >= 0)
    close(cur);
  free(w->dir_index);
  w->dir_index = NULL;
  w->dir_index_cap = 0;
  return rc;
}
