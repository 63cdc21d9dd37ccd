/* Whiteouts: name classification, the per-layer path set, and their effect on a rootfs
 * (T18-T22), with both path resolvers and a victim directory beside DEST. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fpull/unpack.h"
#include "harness.h"
#include "unpack/whiteout.h"

TEST(kind_classifies_names)
{
  const char *t = NULL;
  CHECK_INT_EQ(fp_whiteout_kind("foo", &t), FP_WH_NONE);
  CHECK_INT_EQ(fp_whiteout_kind(".whfoo", &t), FP_WH_NONE);
  CHECK_INT_EQ(fp_whiteout_kind(".wh.foo", &t), FP_WH_FILE);
  CHECK_STR_EQ(t, "foo");
  CHECK_INT_EQ(fp_whiteout_kind(".wh..hidden", &t), FP_WH_FILE);
  CHECK_STR_EQ(t, ".hidden");
  CHECK_INT_EQ(fp_whiteout_kind(".wh..wh..opq", &t), FP_WH_OPAQUE_DIR);
  CHECK_INT_EQ(fp_whiteout_kind(".wh..wh.plnk", &t), FP_WH_META);
  CHECK_INT_EQ(fp_whiteout_kind(".wh.", &t), FP_WH_INVALID);
  CHECK_INT_EQ(fp_whiteout_kind(".wh..", &t), FP_WH_INVALID);
  CHECK_INT_EQ(fp_whiteout_kind(".wh...", &t), FP_WH_INVALID);
}

TEST(layerset_keys_by_directory_identity)
{
  struct fp_layerset s = {0};
  struct stat d1 = {0}, d2 = {0};
  d1.st_dev = d2.st_dev = 5;
  d1.st_ino = 100;
  d2.st_ino = 101;
  CHECK(!fp_layerset_has_name(&s, &d1, "a"));
  fp_layerset_add_name(&s, &d1, "a");
  CHECK(fp_layerset_has_name(&s, &d1, "a"));
  CHECK(!fp_layerset_has_name(&s, &d2, "a"));
  CHECK(!fp_layerset_has_name(&s, &d1, "b"));
  CHECK_INT_EQ(fp_layerset_add_dir(&s, &d2), 1);
  CHECK_INT_EQ(fp_layerset_add_dir(&s, &d2), 0);
  CHECK(fp_layerset_has_dir(&s, &d2));
  CHECK(!fp_layerset_has_dir(&s, &d1));
  char p[64];
  for (int i = 0; i < 5000; i++) {
    d1.st_ino = 1000 + (ino_t)(i % 37);
    snprintf(p, sizeof p, "file%d", i);
    fp_layerset_add_name(&s, &d1, p);
  }
  for (int i = 0; i < 5000; i++) {
    d1.st_ino = 1000 + (ino_t)(i % 37);
    snprintf(p, sizeof p, "file%d", i);
    CHECK(fp_layerset_has_name(&s, &d1, p));
    snprintf(p, sizeof p, "other%d", i);
    CHECK(!fp_layerset_has_name(&s, &d1, p));
  }
  fp_layerset_clear(&s);
  CHECK(!fp_layerset_has_dir(&s, &d2));
  fp_layerset_free(&s);
}

/* ---- through fpull_unpack_rootfs ---- */

#include "unpack_case.h"

static int exists(const char *rel)
{
  struct stat st;
  return lstat(fmt("%s/%s", dest, rel), &st) == 0;
}

/* Builds the layers (uncompressed) and unpacks them into DEST. */
static int run(fpull_err *err, struct fpull_unpack_stats *st, int n, ...)
{
  struct built b[8];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    build(&b[i], "none", va_arg(ap, const char *));
  va_end(ap);
  return unpack(b, (size_t)n, NULL, err, st);
}

static void c_invalid_names(void)
{
  static const char *names[] = {".wh.", ".wh..", ".wh...", "etc/.wh..", "etc/.wh..."};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    fpull_err err;
    int rc = run(&err, NULL, 2, "file etc/passwd data=p\nfile keep data=k\n",
                 fmt("file %s\n", names[i]));
    CHECK_INT_EQ(rc, FPULL_EUNSAFE);
    CHECK_CONTAINS(err.msg, "invalid whiteout");
    CHECK_CONTAINS(err.msg, names[i]);
    CHECK(access(dest, F_OK) != 0);
  }
}
TEST(t18_invalid_whiteout_names_refused)
{
  run_both(c_invalid_names);
}

static void c_through_symlink(void)
{
  fpull_err err;
  struct fpull_unpack_stats st;
  expect_ok(run(&err, &st, 2,
                fmt("file etc/passwd data=p\nsymlink localetc /etc\nsymlink lv %s\n", victim),
                "file localetc/.wh.passwd\nfile lv/.wh.hello\n"),
            &err);
  CHECK(!exists("etc/passwd"));
  CHECK(exists("localetc"));
  CHECK_INT_EQ(st.whiteouts, 2);
}
TEST(t19_whiteout_through_symlinked_dir_stays_inside)
{
  run_both(c_through_symlink);
}

static void c_of_symlink(void)
{
  fpull_err err;
  expect_ok(run(&err, NULL, 2,
                fmt("file etc/passwd data=p\nsymlink localetc /etc\nsymlink v %s\n"
                    "symlink rel ../victim\n",
                    victim),
                "file .wh.localetc\nfile .wh.v\nfile .wh.rel\n"),
            &err);
  CHECK(!exists("localetc"));
  CHECK(!exists("v"));
  CHECK(!exists("rel"));
  CHECK(exists("etc/passwd"));
}
TEST(t20_whiteout_of_symlink_removes_only_the_link)
{
  run_both(c_of_symlink);
}

static void c_scope(void)
{
  fpull_err err;
  expect_ok(run(&err, NULL, 2,
                "file a/b data=lower\nfile a/c data=lower\ndir a/d\nfile a/d/deep data=lower\n"
                "file x data=lower\nfile y/keep data=lower\nfile y/gone data=lower\n"
                "file z data=lower\n",
                "file a/b data=upper\nfile a/d/new data=upper\nfile a/.wh..wh..opq\n"
                "file x data=upper\nfile .wh.x\n"
                "file .wh.y\nfile y/keep data=upper\n"
                "file .wh.z\n"),
            &err);
  CHECK(exists("a/b"));
  CHECK(!exists("a/c"));
  CHECK(exists("a/d/new"));
  CHECK(!exists("a/d/deep"));
  CHECK(exists("x"));
  CHECK(exists("y/keep"));
  CHECK(!exists("y/gone"));
  CHECK(!exists("z"));
  FILE *f = fopen(fmt("%s/a/b", dest), "r");
  char buf[16] = {0};
  CHECK(f && fread(buf, 1, sizeof buf - 1, f) > 0);
  fclose(f);
  CHECK_STR_EQ(buf, "upper");
  CHECK(!exists("a/.wh..wh..opq"));
  CHECK(!exists(".wh.x"));
}
TEST(t21_whiteouts_apply_to_lower_layers_only)
{
  run_both(c_scope);
}

static void c_opaque_first(void)
{
  fpull_err err;
  expect_ok(run(&err, NULL, 2, "file d/old data=1\nfile d/sub/old data=1\nfile other data=1\n",
                "dir d\nfile d/.wh..wh..opq\nfile d/new data=2\n"),
            &err);
  CHECK(!exists("d/old"));
  CHECK(!exists("d/sub"));
  CHECK(exists("d/new"));
  CHECK(exists("other"));
}
TEST(t21_opaque_marker_first)
{
  run_both(c_opaque_first);
}

static void c_missing(void)
{
  fpull_err err;
  expect_ok(run(&err, NULL, 1,
                "file .wh.does-not-exist\nfile nodir/.wh.x\nfile nodir2/.wh..wh..opq\n"
                "file .wh..wh.plnk\n"),
            &err);
  DIR *d = opendir(dest);
  CHECK(d != NULL);
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      th_fail(__FILE__, __LINE__, "unexpected %s", de->d_name);
  closedir(d);
}
TEST(t22_missing_whiteout_target_creates_nothing)
{
  run_both(c_missing);
}

static void c_opaque_symlinked(void)
{
  /* An opaque marker in a directory reached through a symlink prunes inside DEST only. */
  fpull_err err;
  expect_ok(run(&err, NULL, 2, fmt("symlink v %s\nsymlink up ../..\nfile etc/x data=1\n", victim),
                "file v/.wh..wh..opq\nfile up/.wh..wh..opq\n"),
            &err);
  CHECK(!exists("etc/x"));
}
TEST(t19_opaque_through_symlinks_stays_inside)
{
  run_both(c_opaque_symlinked);
}

/* A whiteout spelled through a symlink still spares what its own layer wrote: what the
 * layer wrote is known by identity, not by spelling. */
static void c_own_file_other_spelling(void)
{
  fpull_err err;
  struct fpull_unpack_stats st;
  expect_ok(run(&err, &st, 2, "file real/lower data=l\n",
                "dir real\nsymlink l real\nfile real/f data=mine\nfile l/.wh.f\n"
                "file l/.wh.lower\n"),
            &err);
  CHECK(exists("real/f"));
  CHECK(!exists("real/lower"));
  CHECK_INT_EQ(st.whiteouts, 2);
}
TEST(whiteout_spares_own_layer_whatever_the_spelling)
{
  run_both(c_own_file_other_spelling);
}

/* ".wh." as a directory component: refused, naming the entry; aufs bookkeeping under
 * ".wh..wh.*" directories is skipped. */
static void c_inner_whiteout(void)
{
  fpull_err err;
  int rc = run(&err, NULL, 1, "file a/.wh.x/f data=1\n");
  CHECK_INT_EQ(rc, FPULL_EUNSAFE);
  CHECK_CONTAINS(err.msg, "a/.wh.x/f");
  CHECK(access(dest, F_OK) != 0);
  expect_ok(run(&err, NULL, 1, "file keep data=k\nfile .wh..wh.plnk/12.34 data=x\n"), &err);
  CHECK(exists("keep"));
  CHECK(!exists(".wh..wh.plnk"));
}
TEST(whiteout_prefix_as_directory_component)
{
  run_both(c_inner_whiteout);
}
