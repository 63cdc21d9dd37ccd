/* The SquashFS output holds the image's tree until every layer is in: past its resident
 * bound the tree moves out to a temporary file beside DEST, so that memory does not grow with
 * the entries (contract v3: peak RSS under 256 MiB for any layer, millions of entries
 * included), and the image is the same as when it all stays in memory. */
#include <archive.h>
#include <archive_entry.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fpull/unpack.h"
#include "harness.h"

#define MT_GZ "application/vnd.oci.image.layer.v1.tar+gzip"
#define MT_TAR "application/vnd.oci.image.layer.v1.tar"

static struct archive *tar_open(const char *path, int gzip)
{
  struct archive *a = archive_write_new();
  CHECK(a != NULL);
  CHECK(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
  if (gzip)
    CHECK(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
  CHECK(archive_write_open_filename(a, path) == ARCHIVE_OK);
  return a;
}

static void tar_close(struct archive *a)
{
  CHECK(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
}

static void add(struct archive *a, const char *name, unsigned type, unsigned perm, const char *link,
                const void *data, size_t size)
{
  struct archive_entry *e = archive_entry_new();
  archive_entry_set_pathname(e, name);
  archive_entry_set_mtime(e, 1000000, 0);
  if (type == AE_IFLNK + 1) {
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_hardlink(e, link);
  } else {
    archive_entry_set_filetype(e, type);
    if (type == AE_IFLNK)
      archive_entry_set_symlink(e, link);
  }
  archive_entry_set_perm(e, perm);
  archive_entry_set_size(e, type == AE_IFREG ? (la_int64_t)size : 0);
  CHECK(archive_write_header(a, e) == ARCHIVE_OK);
  if (type == AE_IFREG && size)
    CHECK(archive_write_data(a, data, size) == (la_ssize_t)size);
  archive_entry_free(e);
}

/* N empty files in directories of 1000 (what a conda or spack tree looks like to the
 * tree: many names, little data). */
static const char *empty_files_layer(int n)
{
  static char path[4200];
  snprintf(path, sizeof path, "%s/empty-%d.tar.gz", th_tmpdir(), n);
  if (access(path, F_OK) == 0)
    return path;
  struct archive *a = tar_open(path, 1);
  char name[64];
  for (int i = 0; i < n; i++) {
    if (i % 1000 == 0) {
      snprintf(name, sizeof name, "d%05d", i / 1000);
      add(a, name, AE_IFDIR, 0755, NULL, NULL, 0);
    }
    snprintf(name, sizeof name, "d%05d/file-%07d.txt", i / 1000, i);
    add(a, name, AE_IFREG, 0644, NULL, NULL, 0);
  }
  tar_close(a);
  return path;
}

static int squashfs(const struct fpull_layer *l, size_t n, const char *img, uint64_t max_resident,
                    struct fpull_unpack_stats *st, fpull_err *err)
{
  struct fpull_unpack_opts o = FPULL_UNPACK_OPTS_INIT;
  o.sqfs.max_resident = max_resident;
  fpull_err_clear(err);
  return fpull_unpack_squashfs(img, l, n, &o, st, err);
}

struct million {
  const char *layer, *img;
};

/* The pull in a child of its own, so that its peak RSS is its own. */
static int million_child(void *ud)
{
  const struct million *m = ud;
  struct fpull_layer l = {m->layer, MT_GZ, "sha256:many", NULL, 0};
  fpull_err err;
  struct fpull_unpack_stats st;
  int rc = squashfs(&l, 1, m->img, 0, &st, &err);
  if (rc)
    fprintf(stderr, "child: exit %d: %s\n", rc, err.msg);
  return rc ? 90 : st.entries == 1001000 ? 0 : 91;
}

TEST(million_entries_pull_under_the_contract_bound)
{
  char out[4200], img[4300], cmd[9000];
  snprintf(out, sizeof out, "%s/out", th_tmpdir());
  CHECK(mkdir(out, 0700) == 0);
  snprintf(img, sizeof img, "%s/million.sqsh", out);
  struct million m = {empty_files_layer(1000000), img};
  /* Held in memory, this layer took 330 MiB. */
  th_child_peak_rss(million_child, &m, 256 * 1024);
  /* The image and nothing else (the tree's file had no name); every inode is in it. */
  CHECK_INT_EQ(th_count_entries(out), 1);
  snprintf(cmd, sizeof cmd, "unsquashfs -s '%.4200s' | grep -qx 'Number of inodes 1001001'", img);
  CHECK(system(cmd) == 0);
}

/* Two layers with all the kinds of file data (empty, a fragment, full blocks, a zero tail
 * that becomes a sparse block), symlinks, hardlinks, and whiteouts and replacements in the
 * second layer. */
static void mixed_layers(char paths[2][4200])
{
  static char buf[300 << 10];
  for (size_t k = 0; k < sizeof buf; k++)
    buf[k] = (char)((k * 2654435761u) >> 13);
  snprintf(paths[0], 4200, "%s/mixed-0.tar", th_tmpdir());
  snprintf(paths[1], 4200, "%s/mixed-1.tar", th_tmpdir());
  struct archive *a = tar_open(paths[0], 0);
  char name[64], link[64];
  for (int i = 0; i < 1500; i++) {
    if (i % 100 == 0) {
      snprintf(name, sizeof name, "d%02d", i / 100);
      add(a, name, AE_IFDIR, 0755, NULL, NULL, 0);
    }
    snprintf(name, sizeof name, "d%02d/f%04d", i / 100, i);
    size_t size = (size_t)(i % 7) * 37 + (size_t)(i % 3);
    if (i % 50 == 2)
      size = 200 << 10;
    else if (i % 50 == 3)
      size = 256 << 10;
    if (i % 13 == 5) {
      snprintf(link, sizeof link, "f%04d", i - 1);
      add(a, name, AE_IFLNK, 0777, link, NULL, 0);
    } else if (i % 17 == 6 && i > 100) {
      snprintf(link, sizeof link, "d%02d/f%04d", (i - 100) / 100, i - 100);
      add(a, name, AE_IFLNK + 1, 0644, link, NULL, 0);
    } else if (i % 50 == 4) {
      /* 128 KiB of data, then 4 KiB of zeros: the tail is a sparse block. */
      static char z[(128 + 4) << 10];
      memcpy(z, buf + i, 128 << 10);
      add(a, name, AE_IFREG, 0644, NULL, z, sizeof z);
    } else {
      add(a, name, AE_IFREG, 0644, NULL, buf + (i * 31) % (100 << 10), size);
    }
  }
  tar_close(a);
  a = tar_open(paths[1], 0);
  for (int i = 0; i < 1500; i += 9) {
    snprintf(name, sizeof name, "d%02d/.wh.f%04d", i / 100, i);
    add(a, name, AE_IFREG, 0644, NULL, NULL, 0);
  }
  for (int i = 4; i < 1500; i += 11) {
    snprintf(name, sizeof name, "d%02d/f%04d", i / 100, i);
    add(a, name, AE_IFREG, 0600, NULL, buf + i, (size_t)(i % 5) * 1000 + 1);
  }
  add(a, "d07/.wh..wh..opq", AE_IFREG, 0644, NULL, NULL, 0);
  add(a, "d07/new", AE_IFREG, 0644, NULL, "n", 1);
  tar_close(a);
}

TEST(tree_moved_out_gives_the_same_image)
{
  char paths[2][4200], dest[4200], img[4300], held[4300], cmd[16384];
  mixed_layers(paths);
  struct fpull_layer l[2] = {{paths[0], MT_TAR, "sha256:mixed0", NULL, 0},
                             {paths[1], MT_TAR, "sha256:mixed1", NULL, 0}};
  snprintf(dest, sizeof dest, "%s/rootfs", th_tmpdir());
  snprintf(img, sizeof img, "%s/moved.sqsh", th_tmpdir());
  snprintf(held, sizeof held, "%s/held.sqsh", th_tmpdir());
  struct fpull_unpack_opts o = FPULL_UNPACK_OPTS_INIT;
  struct fpull_unpack_stats dst, mst, hst;
  fpull_err err;
  CHECK_INT_EQ(fpull_unpack_rootfs(dest, l, 2, &o, &dst, &err), 0);
  /* A one-byte bound: the tree moves out at every check (every 256 entries and inodes). */
  CHECK_INT_EQ(squashfs(l, 2, img, 1, &mst, &err), 0);
  CHECK_INT_EQ(squashfs(l, 2, held, 1ull << 40, &hst, &err), 0);
  CHECK_INT_EQ(mst.entries, dst.entries);
  CHECK_INT_EQ(mst.whiteouts, dst.whiteouts);
  const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  snprintf(cmd, sizeof cmd, "%s '%.4096s' '%.4096s' '%.4096s' >&2", py,
           th_src("tests/fixtures/sqfs_trees.py"), dest, img);
  CHECK(system(cmd) == 0);
  /* And the one made with everything held in memory holds that tree too. */
  snprintf(cmd, sizeof cmd, "%s '%.4096s' '%.4096s' '%.4096s' >&2", py,
           th_src("tests/fixtures/sqfs_trees.py"), dest, held);
  CHECK(system(cmd) == 0);
}

/* Runs the squashfs output of layer in a child with resource limit res at lim (RLIMIT_FSIZE:
 * the tree's file cannot grow, as on a full disk; RLIMIT_AS: no address space for it, as on
 * a 32-bit system); the child's exit status is the pull's, its message goes to msg. */
static int pull_limited(const char *layer, const char *img, int res, rlim_t lim, char *msg,
                        size_t cap)
{
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {lim, lim};
    if (setrlimit(res, &rl) != 0)
      _exit(99);
    struct fpull_layer l = {layer, MT_GZ, "sha256:many", NULL, 0};
    fpull_err err;
    struct fpull_unpack_stats st;
    int rc = squashfs(&l, 1, img, 0, &st, &err);
    if (rc && write(fds[1], err.msg, strlen(err.msg)) < 0)
      _exit(98);
    _exit(rc);
  }
  close(fds[1]);
  ssize_t n = read(fds[0], msg, cap - 1);
  msg[n > 0 ? n : 0] = '\0';
  close(fds[0]);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  return WEXITSTATUS(status);
}

TEST(tree_file_that_cannot_grow_keeps_the_tree_in_memory_or_fails_cleanly)
{
  char out[4200], img[4300], msg[1100], cmd[9000];
  snprintf(out, sizeof out, "%s/out", th_tmpdir());
  CHECK(mkdir(out, 0700) == 0);
  snprintf(img, sizeof img, "%s/small.sqsh", out);
  /* Not even its first 8 MiB: the tree stays in memory and the image is whole. */
  CHECK_INT_EQ(pull_limited(empty_files_layer(2000), img, RLIMIT_FSIZE, 1 << 20, msg, sizeof msg),
               0);
  snprintf(cmd, sizeof cmd, "unsquashfs -s '%.4200s' | grep -qx 'Number of inodes 2003'", img);
  CHECK(system(cmd) == 0);
  CHECK(unlink(img) == 0);
  /* Its first 8 MiB, not more (60,000 entries need about 18): the pull fails, names the
   * reason, and leaves nothing. */
  CHECK_INT_EQ(pull_limited(empty_files_layer(60000), img, RLIMIT_FSIZE, 9 << 20, msg, sizeof msg),
               FPULL_EFAIL);
  CHECK_CONTAINS(msg, "layer sha256:many");
  CHECK_CONTAINS(msg, "cannot grow the image's temporary tree file: File too large");
  CHECK_INT_EQ(th_count_entries(out), 0);
  /* No address space to reserve for the file (4 GiB, against the 64 it takes): the tree
   * stays in memory. AddressSanitizer needs far more address space than that itself. */
  if (th_asan())
    return;
  CHECK_INT_EQ(pull_limited(empty_files_layer(2000), img, RLIMIT_AS, 4ull << 30, msg, sizeof msg),
               0);
  CHECK(system(cmd) == 0);
}
