/* The SquashFS output holds the image's tree in memory until every layer is in: its size is
 * accounted and bounded, so that an image of millions of entries fails with one clear error
 * instead of taking the node's memory (contract v3: peak RSS under 256 MiB for any layer). */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fpull/unpack.h"
#include "harness.h"

#define MT_GZ "application/vnd.oci.image.layer.v1.tar+gzip"

/* N empty files in directories of 1000 (what a conda or spack tree looks like to the
 * tree: many names, little data). */
static void build_layer(const char *path, int n)
{
  struct archive *a = archive_write_new();
  CHECK(a != NULL);
  CHECK(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
  CHECK(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
  CHECK(archive_write_open_filename(a, path) == ARCHIVE_OK);
  struct archive_entry *e = archive_entry_new();
  char name[64];
  for (int i = 0; i < n; i++) {
    if (i % 1000 == 0) {
      snprintf(name, sizeof name, "d%05d", i / 1000);
      archive_entry_clear(e);
      archive_entry_set_pathname(e, name);
      archive_entry_set_filetype(e, AE_IFDIR);
      archive_entry_set_perm(e, 0755);
      CHECK(archive_write_header(a, e) == ARCHIVE_OK);
    }
    snprintf(name, sizeof name, "d%05d/file-%07d.txt", i / 1000, i);
    archive_entry_clear(e);
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, 0);
    CHECK(archive_write_header(a, e) == ARCHIVE_OK);
  }
  archive_entry_free(e);
  CHECK(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
}

static const char *layer_of(int n)
{
  static char path[4200];
  snprintf(path, sizeof path, "%s/layer-%d.tar.gz", th_tmpdir(), n);
  if (access(path, F_OK) != 0)
    build_layer(path, n);
  return path;
}

/* Nothing but what the test made: no image after a failure, no temporary file. */
static int dir_entries(const char *dir)
{
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

static int pull(const char *layer, const char *img, uint64_t max_tree,
                struct fpull_unpack_stats *st, fpull_err *err)
{
  struct fpull_layer l = {layer, MT_GZ, "sha256:many", NULL, 0};
  struct fpull_unpack_opts o = FPULL_UNPACK_OPTS_INIT;
  o.sqfs.max_tree_bytes = max_tree;
  fpull_err_clear(err);
  return fpull_unpack_squashfs(img, &l, 1, &o, st, err);
}

TEST(tree_over_its_bound_fails_with_one_clear_error_and_leaves_nothing)
{
  const char *layer = layer_of(5000);
  char out[4200], img[4300];
  snprintf(out, sizeof out, "%s/out", th_tmpdir());
  CHECK(mkdir(out, 0700) == 0);
  snprintf(img, sizeof img, "%s/many.sqsh", out);
  fpull_err err;
  struct fpull_unpack_stats st;
  /* 5000 entries take about 1.5 MiB: a 256 KiB bound stops the pull part way. */
  CHECK_INT_EQ(pull(layer, img, 256 << 10, &st, &err), FPULL_EFAIL);
  CHECK_CONTAINS(err.msg, "layer sha256:many");
  CHECK_CONTAINS(err.msg, "more than its 256 KiB");
  CHECK_CONTAINS(err.msg, "--format dir");
  CHECK(strchr(err.msg, '\n') == NULL);
  CHECK(st.entries > 100 && st.entries < 5000);
  CHECK_INT_EQ(dir_entries(out), 0);
  /* The same layer under the default bound: the whole image. */
  CHECK_INT_EQ(pull(layer, img, 0, &st, &err), 0);
  CHECK_INT_EQ(st.entries, 5005);
  struct stat s;
  CHECK(stat(img, &s) == 0 && S_ISREG(s.st_mode));
  CHECK_INT_EQ(dir_entries(out), 1);
}

TEST(million_entries_stay_under_the_contract_bound)
{
  const char *layer = layer_of(1000000);
  char out[4200], img[4300];
  snprintf(out, sizeof out, "%s/out", th_tmpdir());
  CHECK(mkdir(out, 0700) == 0);
  snprintf(img, sizeof img, "%s/million.sqsh", out);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    fpull_err err;
    struct fpull_unpack_stats st;
    int rc = pull(layer, img, 0, &st, &err);
    fprintf(stderr, "child: exit %d after %llu entries: %s\n", rc, (unsigned long long)st.entries,
            err.msg);
    _exit(rc == FPULL_EFAIL && strstr(err.msg, "--format dir") ? 0 : 90);
  }
  int status;
  struct rusage ru;
  CHECK(wait4(pid, &status, 0, &ru) == pid);
  CHECK(WIFEXITED(status));
  CHECK_INT_EQ(WEXITSTATUS(status), 0);
  fprintf(stderr, "peak RSS: %ld KiB\n", ru.ru_maxrss);
  /* Under AddressSanitizer the peak is its quarantine and shadow memory: the bound is
   * checked by the plain build's run of this test. */
  if (!th_asan())
    CHECK(ru.ru_maxrss < 256 * 1024);
  CHECK_INT_EQ(dir_entries(out), 0);
}
