/* pull --format bundle: DEST/rootfs plus DEST/config.json, built in a staging directory
 * beside DEST and renamed into place, so that a runtime never sees half a bundle. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bundle.h"
#include "unpack/inroot.h"
#include "unpack/dest.h"
#include "base/util.h"
#include "fpull/bundle.h"
#include "fpull/cache.h"
#include "fpull/manifest.h"

/* The chosen entry's image config, from the cache the pull just used (no second
 * resolution: a tag moved meanwhile cannot mix two images). */
static int image_config(char **json, size_t *len, const struct fpull_pull_result *r,
                        const struct fpull_pull_opts *o, fpull_err *err)
{
  fpull_cache *c = NULL;
  int rc = fpull_cache_open_with_shared(&c, o->cache_dir, o->config, err);
  cleanup_free char *mtext = NULL;
  size_t mlen = 0;
  struct fpull_manifest *m = NULL;
  if (rc == 0)
    rc = fpull_cache_get_bytes(c, r->manifest_digest, FPULL_MANIFEST_MAX, &mtext, &mlen, err);
  if (rc == 0)
    rc = fpull_manifest_parse(&m, mtext, mlen, NULL, err);
  if (rc == 0)
    rc = fpull_cache_get_bytes(c, m->config.digest, FPULL_MANIFEST_MAX, json, len, err);
  fpull_manifest_free(m);
  fpull_cache_free(c);
  return rc;
}

static int write_spec(int sfd, const char *json, size_t len, int rootless, fpull_err *err)
{
  cleanup_close int rootfs = openat(sfd, "rootfs", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (rootfs < 0)
    return fpull_err_set(err, FPULL_EFAIL, "bundle: no rootfs: %s", strerror(errno));
  /* The unpacker keeps a rootfs without an entry for "/" at its staging mode, 0700: the
   * container's own "/" must be searchable by the image's User (runc execs as that uid).
   * As root that opens nothing to other users: the bundle directory above stays 0700. */
  struct stat st;
  cleanup_close int rfd = openat(sfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (rfd >= 0 && fstat(rfd, &st) == 0 && (st.st_mode & 07777) == 0700 && fchmod(rfd, 0755) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "bundle: rootfs: %s", strerror(errno));
  cleanup_free char *spec = NULL;
  int rc = fp_bundle_spec(&spec, json, len, rootfs, rootless, err);
  if (rc)
    return rc;
  cleanup_close int fd =
      openat(sfd, "config.json", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  size_t n = strlen(spec), off = 0;
  while (fd >= 0 && off < n) {
    ssize_t w = write(fd, spec + off, n - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  if (fd < 0 || off < n || write(fd, "\n", 1) != 1)
    return fpull_err_set(err, FPULL_EFAIL, "bundle: cannot write config.json: %s", strerror(errno));
  return 0;
}

/* Staging -> DEST in one rename: RENAME_NOREPLACE when DEST is new, RENAME_EXCHANGE over an
 * old one (which then leaves under the staging name and is removed). */
static int publish(int pfd, const char *sname, const char *base, const char *dest, int exists,
                   fpull_err *err)
{
  if (!exists)
    return fp_dest_publish_new(pfd, sname, base, dest, err);
  if (renameat2(pfd, sname, pfd, base, RENAME_EXCHANGE) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot rename the bundle into %s: %s", dest,
                         strerror(errno));
  if (fp_rm_rf_at(pfd, sname) < 0)
    fp_warn("cannot remove the old %s: %s", dest, fp_rm_strerror(errno));
  return 0;
}

/* A killed run leaves its staging directory beside DEST. Each run holds a lock on its own
 * while it works, so one of ours that nobody holds (and that is not brand new: a run
 * takes its lock right after creating it) is debris, and goes. */
static void remove_leftovers(int pfd, const char *base)
{
  cleanup_free char *prefix = fp_xasprintf(".%s.fpull-bundle-", base);
  cleanup_strv char **names = fp_dest_names_with_prefix(pfd, prefix);
  time_t now = time(NULL);
  for (size_t i = 0; names && names[i]; i++) {
    cleanup_close int sfd = openat(pfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (sfd < 0 || fstat(sfd, &st) < 0 || st.st_uid != geteuid() || st.st_mtime > now - 10 ||
        flock(sfd, LOCK_EX | LOCK_NB) < 0)
      continue;
    fp_debug("removing %s, left by a run that did not finish", names[i]);
    if (fp_rm_rf_at(pfd, names[i]) < 0)
      fp_warn("cannot remove %s: %s", names[i], fp_rm_strerror(errno));
  }
}

/* Whether name in dfd (not followed; AT_FDCWD: a path, followed) is the file fd holds. */
static int same_file(int dfd, const char *name, int fd)
{
  struct stat a, b;
  return fstatat(dfd, name, &a, dfd == AT_FDCWD ? 0 : AT_SYMLINK_NOFOLLOW) == 0 &&
         fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The inner pull's messages name the rootfs by the descriptor's path: the user knows
 * DEST. */
static void name_dest(fpull_err *err, const char *rootfs, const char *dest)
{
  char *at = err ? strstr(err->msg, rootfs) : NULL;
  if (!at)
    return;
  char msg[FPULL_ERR_MSG_MAX];
  snprintf(msg, sizeof msg, "%.*s%s/rootfs%s", (int)(at - err->msg), err->msg, dest,
           at + strlen(rootfs));
  snprintf(err->msg, sizeof err->msg, "%s", msg);
}

static int build(struct fpull_pull_result **out, const char *image, const char *parent,
                 const char *base, const char *dest, const struct fpull_pull_opts *o,
                 fpull_err *err)
{
  cleanup_close int pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (pfd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot open %s: %s", parent, strerror(errno));
  remove_leftovers(pfd, base);
  int exists, rc = fp_dest_check(pfd, base, dest, S_IFDIR, o->unpack.force, &exists, err);
  if (rc)
    return rc;
  cleanup_free char *staging = fp_xasprintf("%s/.%s.fpull-bundle-XXXXXX", parent, base);
  if (!mkdtemp(staging))
    return fpull_err_set(err, FPULL_EFAIL, "cannot create a staging directory beside %s: %s", dest,
                         strerror(errno));
  const char *sname = strrchr(staging, '/') + 1;
  /* Held until the end: the mark of a staging directory still in use. */
  cleanup_close int sfd = openat(pfd, sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sfd < 0 && (errno == ELOOP || errno == ENOTDIR))
    /* Swapped between mkdtemp and here: what is there now is not ours to remove. */
    return fpull_err_set(err, FPULL_EFAIL, "%s was replaced while the bundle was built", staging);
  if (sfd < 0 || flock(sfd, LOCK_EX) < 0) {
    rc = fpull_err_set(err, FPULL_EFAIL, "%s: %s", staging, strerror(errno));
    fp_rm_rf_at(pfd, sname);
    return rc;
  }
  /* The inner pull names the staging directory through the descriptor we hold, never by
   * its path again after the network: whatever is renamed beside DEST meanwhile, the
   * rootfs goes into this directory. */
  char fdpath[64];
  snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", sfd);
  cleanup_free char *rootfs =
      fp_xasprintf("%s/rootfs", same_file(AT_FDCWD, fdpath, sfd) ? fdpath : staging);
  struct fpull_pull_opts po = *o;
  po.unpack.force = 0;
  rc = fpull_pull(out, image, rootfs, &po, err);
  if (rc)
    name_dest(err, rootfs, dest);
  cleanup_free char *json = NULL;
  size_t len = 0;
  int rootless = geteuid() != 0;
  if (rc == 0)
    rc = image_config(&json, &len, *out, o, err);
  if (rc == 0)
    rc = write_spec(sfd, json, len, rootless, err);
  /* mkdtemp made it 0700. As root it stays so: the rootfs keeps setuid-root files, file
   * capabilities and device nodes, and the runtimes that run it are root too (contract
   * v4). A rootless bundle has none of those, and runtimes as other users may read it. */
  if (rc == 0 && rootless && fchmod(sfd, 0755) < 0)
    rc = fpull_err_set(err, FPULL_EFAIL, "%s: %s", staging, strerror(errno));
  if (rc == 0 && exists)
    rc = fp_dest_check(pfd, base, dest, S_IFDIR, 1, &exists, err);
  /* The rename below goes by name: it must still be the directory we built. */
  if (!same_file(pfd, sname, sfd)) {
    if (rc == 0)
      rc = fpull_err_set(err, FPULL_EFAIL, "%s was replaced while the bundle was built", staging);
    /* What is there now is not ours to remove; ours, wherever it went, is emptied. */
    if (fp_rm_rf_at(sfd, "rootfs") < 0)
      fp_warn("cannot remove a bundle's rootfs: %s", fp_rm_strerror(errno));
    (void)unlinkat(sfd, "config.json", 0);
    return rc;
  }
  if (rc == 0)
    rc = publish(pfd, sname, base, dest, exists, err);
  if (rc && fp_rm_rf_at(pfd, sname) < 0)
    fp_warn("cannot remove %s: %s", staging, fp_rm_strerror(errno));
  return rc;
}

int fpull_pull_bundle(struct fpull_pull_result **out, const char *image, const char *dest,
                      const struct fpull_pull_opts *o, fpull_err *err)
{
  *out = NULL;
  cleanup_free char *def = NULL;
  if (!dest) {
    int rc = fp_dest_default(&def, image, "", err);
    if (rc)
      return rc;
    dest = def;
  }
  __attribute__((cleanup(fp_dest_free))) struct fp_dest dd = {0};
  int rc = fp_dest_split(&dd, dest, 1, fp_dest_parents(&o->unpack), err);
  if (rc)
    return rc;
  rc = build(out, image, dd.parent, dd.base, dest, o, err);
  if (rc) {
    fpull_pull_result_free(*out);
    *out = NULL;
    return rc;
  }
  char abs[PATH_MAX];
  free((*out)->rootfs);
  (*out)->rootfs = fp_xasprintf("%s/rootfs", realpath(dest, abs) ? abs : dest);
  return 0;
}
