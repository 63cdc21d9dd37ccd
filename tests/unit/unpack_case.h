/* The unpack test case fixture shared by test_unpack.c and test_whiteout.c: layers built
 * at test time by tests/fixtures/mklayer.py from text descriptions, a fresh case directory
 * with a "victim" beside DEST, the oracle that the victim is untouched, and running each
 * case with both path resolvers (openat2 and the O_NOFOLLOW walk). Include once per test
 * program, after the system headers. */
#ifndef FPULL_TEST_UNPACK_CASE_H
#define FPULL_TEST_UNPACK_CASE_H

#include <dirent.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fpull/unpack.h"
#include "harness.h"

/* Each program uses only some of the helpers. */
#define FP_CASE_UNUSED __attribute__((unused))

#define MT_TAR "application/vnd.oci.image.layer.v1.tar"
#define MT_GZ "application/vnd.oci.image.layer.v1.tar+gzip"
#define MT_ZST "application/vnd.oci.image.layer.v1.tar+zstd"
#define VICTIM_DATA "victim data, must never change"

static FP_CASE_UNUSED int fallback; /* the resolver of the current run */
static FP_CASE_UNUSED char base[4096], dest[4200], victim[4200];
static FP_CASE_UNUSED struct stat victim_st;

struct built {
  char path[4096];
  char diff_id[80];
  char digest[80];
  const char *mt;
};

/* Builds one layer from a text description; comp is "none", "gzip" or "zstd". */
static FP_CASE_UNUSED void build(struct built *b, const char *comp, const char *desc)
{
  static int n;
  char dpath[4200], cmd[16384];
  snprintf(dpath, sizeof dpath, "%s/layer%d.txt", th_tmpdir(), n);
  snprintf(b->path, sizeof b->path, "%s/layer%d.blob", th_tmpdir(), n);
  snprintf(b->digest, sizeof b->digest, "sha256:%064d", ++n);
  FILE *f = fopen(dpath, "w");
  CHECK(f != NULL);
  fputs(desc, f);
  fclose(f);
  /* The distribution's python3 directly: wrappers such as pyenv's shims cost seconds. */
  const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  snprintf(cmd, sizeof cmd, "%s '%.4096s' -c %.8s -o '%.4096s' '%.4096s'", py,
           th_src("tests/fixtures/mklayer.py"), comp, b->path, dpath);
  FILE *p = popen(cmd, "r");
  CHECK(p != NULL);
  CHECK(fgets(b->diff_id, sizeof b->diff_id, p) != NULL);
  CHECK_INT_EQ(pclose(p), 0);
  b->diff_id[strcspn(b->diff_id, "\n")] = '\0';
  b->mt = strcmp(comp, "gzip") == 0 ? MT_GZ : strcmp(comp, "zstd") == 0 ? MT_ZST : MT_TAR;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static FP_CASE_UNUSED char *fmt(const char *f, ...)
{
  static char bufs[8][8192];
  static int i;
  char *b = bufs[i++ % 8];
  va_list ap;
  va_start(ap, f);
  vsnprintf(b, sizeof bufs[0], f, ap);
  va_end(ap);
  return b;
}

/* A fresh case directory: BASE/victim/hello and BASE/dest (not created). */
static FP_CASE_UNUSED void fresh(void)
{
  static int n;
  snprintf(base, 3000, "%s/case%d", th_tmpdir(), n++);
  snprintf(dest, sizeof dest, "%s/dest", base);
  snprintf(victim, sizeof victim, "%s/victim", base);
  CHECK(mkdir(base, 0755) == 0);
  CHECK(mkdir(victim, 0755) == 0);
  FILE *f = fopen(fmt("%s/hello", victim), "w");
  CHECK(f != NULL);
  fputs(VICTIM_DATA, f);
  fclose(f);
  CHECK(chmod(fmt("%s/hello", victim), 0640) == 0);
  CHECK(stat(fmt("%s/hello", victim), &victim_st) == 0);
}

static FP_CASE_UNUSED ino_t victim_ino;
static FP_CASE_UNUSED int shares_victim(const char *p, const struct stat *st, int flag,
                                        struct FTW *ftw)
{
  (void)p, (void)flag, (void)ftw;
  return st->st_ino == victim_ino && st->st_dev == victim_st.st_dev;
}

/* The oracle (go-archive testBreakout): victim holds exactly hello, unchanged, and nothing
 * in DEST is a hardlink to it. */
static FP_CASE_UNUSED void check_victim(void)
{
  DIR *d = opendir(victim);
  CHECK(d != NULL);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
      if (strcmp(de->d_name, "hello") != 0)
        th_fail(__FILE__, __LINE__, "victim has a new entry %s", de->d_name);
      n++;
    }
  closedir(d);
  CHECK_INT_EQ(n, 1);
  struct stat st;
  CHECK(lstat(fmt("%s/hello", victim), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK_INT_EQ(st.st_mode & 07777, 0640);
  CHECK_INT_EQ(st.st_ino, victim_st.st_ino);
  CHECK_INT_EQ(st.st_nlink, 1);
  CHECK_INT_EQ(st.st_uid, victim_st.st_uid);
  CHECK_INT_EQ(st.st_mtime, victim_st.st_mtime);
  char buf[100] = {0};
  FILE *f = fopen(fmt("%s/hello", victim), "r");
  CHECK(f != NULL);
  CHECK(fread(buf, 1, sizeof buf - 1, f) > 0);
  fclose(f);
  CHECK_STR_EQ(buf, VICTIM_DATA);
  victim_ino = victim_st.st_ino;
  if (access(dest, F_OK) == 0)
    CHECK_INT_EQ(nftw(dest, shares_victim, 16, FTW_PHYS), 0);
}

/* Nothing but victim and (optionally) dest in BASE: no staging leftovers. */
static FP_CASE_UNUSED void check_base_clean(int dest_expected)
{
  DIR *d = opendir(base);
  CHECK(d != NULL);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "victim"))
      continue;
    if (strcmp(de->d_name, "dest") == 0 && dest_expected)
      continue;
    th_fail(__FILE__, __LINE__, "unexpected %s in %s", de->d_name, base);
  }
  closedir(d);
  CHECK_INT_EQ(access(dest, F_OK) == 0, dest_expected);
}

#ifdef FP_CASE_SQFS
/* Built as test_unpack_sqfs / test_whiteout_sqfs (tests/sqfs/extra.cmake): every case also
 * writes a SquashFS image of the same layers, outside BASE, and that image must give the
 * same result as the directory output: the same error code and message, or exactly the
 * same tree (tests/fixtures/sqfs_trees.py), with the same counts. */
static void sqfs_twin(const struct fpull_layer *layers, size_t n, const struct fpull_unpack_opts *o,
                      int rc, const fpull_err *err, const struct fpull_unpack_stats *st)
{
  static int k;
  char dir[4200], img[4300], cmd[16384];
  /* Failures that do not name a layer are about DEST, which the image does not share. */
  if (rc && !strstr(err->msg, "layer "))
    return;
  snprintf(dir, sizeof dir, "%s/sqfs-out", th_tmpdir());
  (void)mkdir(dir, 0700);
  snprintf(img, sizeof img, "%s/img%d.sqsh", dir, k++);
  fpull_err serr;
  struct fpull_unpack_stats sst;
  fpull_err_clear(&serr);
  /* As root the image keeps setuid bits, capabilities and devices only when asked: asked
   * here, to hold what the root directory output holds. */
  struct fpull_unpack_opts so = FPULL_UNPACK_OPTS_INIT;
  if (o)
    so = *o;
  so.keep_privileged = geteuid() == 0 && !so.unprivileged;
  int src = fpull_unpack_squashfs(img, layers, n, &so, &sst, &serr);
  if (src != rc)
    th_fail(__FILE__, __LINE__, "squashfs: exit %d (%s), the directory output: %d (%s)", src,
            serr.msg, rc, err->msg);
  CHECK_STR_EQ(serr.msg, err->msg);
  if (rc == 0) {
    CHECK_INT_EQ(sst.entries, st->entries);
    CHECK_INT_EQ(sst.whiteouts, st->whiteouts);
    CHECK_INT_EQ(sst.devices_skipped, st->devices_skipped);
    CHECK_INT_EQ(sst.setid_dropped, st->setid_dropped);
    CHECK_INT_EQ(sst.caps_dropped, st->caps_dropped);
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    snprintf(cmd, sizeof cmd, "%s '%.4096s' '%.4096s' '%.4096s' >&2", py,
             th_src("tests/fixtures/sqfs_trees.py"), dest, img);
    if (system(cmd) != 0)
      th_fail(__FILE__, __LINE__, "the image %s does not hold the tree of %s", img, dest);
    CHECK(unlink(img) == 0);
  }
  /* Nothing left behind: no image after a failure, no temporary file ever. */
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      th_fail(__FILE__, __LINE__, "left behind: %s/%s", dir, de->d_name);
  closedir(d);
}
#endif

static FP_CASE_UNUSED int unpack(struct built *b, size_t n, struct fpull_unpack_opts *o,
                                 fpull_err *err, struct fpull_unpack_stats *st)
{
  struct fpull_layer layers[8];
  for (size_t i = 0; i < n; i++)
    layers[i] = (struct fpull_layer){b[i].path, b[i].mt, b[i].digest, b[i].diff_id, 0};
  struct fpull_unpack_opts def = FPULL_UNPACK_OPTS_INIT;
  if (!o)
    o = &def;
  o->resolve_fallback = fallback;
  fpull_err_clear(err);
#ifdef FP_CASE_SQFS
  struct fpull_unpack_stats local;
  if (!st)
    st = &local;
  int rc = fpull_unpack_rootfs(dest, layers, n, o, st, err);
  /* The image has no resolver to choose: one run is enough. */
  if (!fallback)
    sqfs_twin(layers, n, o, rc, err, st);
  return rc;
#else
  return fpull_unpack_rootfs(dest, layers, n, o, st, err);
#endif
}

/* Unpacks the descriptions (one layer each, uncompressed) into a fresh DEST. */
static FP_CASE_UNUSED int run_descs(fpull_err *err, int n, ...)
{
  struct built b[8];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    build(&b[i], "none", va_arg(ap, const char *));
  va_end(ap);
  return unpack(b, (size_t)n, NULL, err, NULL);
}

static FP_CASE_UNUSED void expect_ok(int rc, const fpull_err *err)
{
  if (rc != 0)
    th_fail(__FILE__, __LINE__, "unpack failed (%d): %s", rc, err->msg);
}

static FP_CASE_UNUSED void expect_unsafe(int rc, const fpull_err *err, const char *what)
{
  if (rc != FPULL_EUNSAFE)
    th_fail(__FILE__, __LINE__, "expected FPULL_EUNSAFE, got %d: %s", rc, err->msg);
  CHECK_CONTAINS(err->msg, "layer sha256:");
  CHECK_CONTAINS(err->msg, what);
  check_base_clean(0);
}

static FP_CASE_UNUSED char *read_file(const char *p)
{
  static char buf[65536];
  FILE *f = fopen(p, "r");
  if (!f)
    return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static FP_CASE_UNUSED int is_link(const char *p, const char *target)
{
  char buf[4096];
  ssize_t n = readlink(p, buf, sizeof buf - 1);
  if (n < 0)
    return 0;
  buf[n] = '\0';
  return strcmp(buf, target) == 0;
}

static FP_CASE_UNUSED void run_both(void (*fn)(void))
{
  for (fallback = 0; fallback < 2; fallback++) {
    fprintf(stderr, "resolver: %s\n", fallback ? "O_NOFOLLOW walk" : "openat2");
    fresh();
    fn();
    check_victim();
  }
}

#endif
