/* fpull_unpack_rootfs: normal layers, the hostile cases of the security notes (T1-T34,
 * C5-C6), each against a "victim" directory beside DEST that must stay unchanged, and each
 * with both path resolvers (openat2 and the O_NOFOLLOW walk). Layers are built at test time
 * by tests/fixtures/mklayer.py from the text descriptions below. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <grp.h>
#include <unistd.h>

#include "fpull/unpack.h"
#include "harness.h"

#include "unpack_case.h"

/* ---- normal layers ---- */

static void c_basic(void)
{
  static const char *comps[] = {"none", "gzip", "zstd"};
  for (int c = 0; c < 3; c++) {
    fresh();
    struct built b[2];
    build(&b[0], comps[c],
          "dir etc mode=755 mtime=1600000000\n"
          "file etc/hostname data=box\\n mode=644 mtime=1600000001\n"
          "file bin/tool data=#!/bin/sh mode=4755\n"
          "dir usr/lib mode=755\n"
          "symlink lib usr/lib\n"
          "file usr/lib/libc.so data=elf mode=755\n"
          "hardlink bin/tool2 bin/tool\n"
          "fifo run/fifo mode=600\n"
          "dir locked mode=500\n"
          "file locked/inside data=in mode=400\n"
          "file big zeros=3000000\n");
    build(&b[1], comps[(c + 1) % 3],
          "file etc/hostname data=box2\n"
          "file lib/libm.so data=m\n"
          "dir etc mode=750 mtime=1500000000\n");
    fpull_err err;
    struct fpull_unpack_stats st;
    expect_ok(unpack(b, 2, NULL, &err, &st), &err);
    CHECK_STR_EQ(read_file(fmt("%s/etc/hostname", dest)), "box2");
    CHECK_STR_EQ(read_file(fmt("%s/usr/lib/libm.so", dest)), "m");
    CHECK(is_link(fmt("%s/lib", dest), "usr/lib"));
    struct stat s1, s2;
    CHECK(stat(fmt("%s/bin/tool", dest), &s1) == 0);
    CHECK(stat(fmt("%s/bin/tool2", dest), &s2) == 0);
    CHECK_INT_EQ(s1.st_ino, s2.st_ino);
    CHECK_INT_EQ(s1.st_mode & 07777, 04755);
    CHECK(stat(fmt("%s/etc", dest), &s1) == 0);
    CHECK_INT_EQ(s1.st_mode & 07777, 0750);
    CHECK_INT_EQ(s1.st_mtime, 1500000000);
    CHECK(stat(fmt("%s/etc/hostname", dest), &s1) == 0);
    CHECK_INT_EQ(s1.st_mode & 07777, 0644);
    CHECK(stat(fmt("%s/locked", dest), &s1) == 0);
    CHECK_INT_EQ(s1.st_mode & 07777, 0500);
    CHECK(lstat(fmt("%s/run/fifo", dest), &s1) == 0);
    CHECK(S_ISFIFO(s1.st_mode));
    CHECK(stat(fmt("%s/big", dest), &s1) == 0);
    CHECK_INT_EQ(s1.st_size, 3000000);
    CHECK(stat(dest, &s1) == 0);
    CHECK_INT_EQ(s1.st_mode & 07777, 0700);
    CHECK_INT_EQ(st.entries, 14);
    CHECK(st.bytes > 3000000);
    check_base_clean(1);
    check_victim();
  }
}
TEST(basic_layers_all_compressions)
{
  run_both(c_basic);
}

static void c_diffid_mismatch(void)
{
  struct built b;
  build(&b, "gzip", "file a data=x\n");
  b.diff_id[10] = b.diff_id[10] == '0' ? '1' : '0';
  fpull_err err;
  CHECK_INT_EQ(unpack(&b, 1, NULL, &err, NULL), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "layer sha256:");
  CHECK_CONTAINS(err.msg, "DiffID");
  check_base_clean(0);
}
TEST(diffid_mismatch_is_integrity_error)
{
  run_both(c_diffid_mismatch);
}

/* T32: the DiffID covers data after the end-of-archive blocks. */
static void c_trailing(void)
{
  struct built b;
  build(&b, "zstd", "%trailing 700\nfile a data=x\n");
  fpull_err err;
  expect_ok(unpack(&b, 1, NULL, &err, NULL), &err);
  CHECK_STR_EQ(read_file(fmt("%s/a", dest)), "x");
}
TEST(t32_diffid_covers_trailing_data)
{
  run_both(c_trailing);
}

static void c_gzip_junk(void)
{
  struct built b;
  build(&b, "gzip", "%compressed-junk 512\nfile a data=x\n");
  fpull_err err;
  expect_unsafe(unpack(&b, 1, NULL, &err, NULL), &err, "gzip");
}
TEST(t32_junk_after_gzip_refused)
{
  run_both(c_gzip_junk);
}

/* ---- T1, T2: names ---- */

static void c_dotdot(void)
{
  static const char *names[] = {"../victim/dotdot", "/../victim/x", "a/../../victim/x", "..",
                                "./../victim/x"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    fpull_err err;
    int rc = run_descs(&err, 1, fmt("file ok data=1\nfile %s data=pwned\n", names[i]));
    expect_unsafe(rc, &err, "path has a .. component");
    CHECK_CONTAINS(err.msg, fmt("entry %s", names[i]));
  }
}
TEST(t01_dotdot_names_refused)
{
  run_both(c_dotdot);
}

static void c_absolute(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      fmt("file /etc/passwd data=pwned\nfile //etc//x data=y\nfile %s/new data=z\n",
                          victim)),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/etc/passwd", dest)), "pwned");
  CHECK_STR_EQ(read_file(fmt("%s/etc/x", dest)), "y");
  CHECK_STR_EQ(read_file(fmt("%s%s/new", dest, victim)), "z");
}
TEST(t02_absolute_names_land_in_dest)
{
  run_both(c_absolute);
}

/* ---- T3-T8: symlinks ---- */

static void c_symlink_same_layer(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      fmt("symlink evil ../victim\nfile evil/through data=1\n"
                          "symlink evil2 %s\nfile evil2/through data=2\n",
                          victim)),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/victim/through", dest)), "1");
  CHECK_STR_EQ(read_file(fmt("%s%s/through", dest, victim)), "2");
  CHECK(is_link(fmt("%s/evil", dest), "../victim"));
}
TEST(t03_write_through_symlink_same_layer)
{
  run_both(c_symlink_same_layer);
}

static void c_symlink_cross_layer(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 2, fmt("symlink evil /etc\nsymlink ev2 %s\n", victim),
                      "file evil/passwd data=pwned\nfile ev2/hello data=pwned\n"),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/etc/passwd", dest)), "pwned");
  CHECK_STR_EQ(read_file(fmt("%s%s/hello", dest, victim)), "pwned");
  CHECK(is_link(fmt("%s/evil", dest), "/etc"));
}
TEST(t04_write_through_symlink_cross_layer)
{
  run_both(c_symlink_cross_layer);
}

static void c_two_hop(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      "dir inner\nsymlink inner/go_up ..\nsymlink inner/go_up/escape ../victim\n"
                      "file inner/go_up/escape/newfile data=x\n"
                      "symlink up ../../..\nfile up/top data=t\n"),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/victim/newfile", dest)), "x");
  CHECK_STR_EQ(read_file(fmt("%s/top", dest)), "t");
}
TEST(t05_two_hop_chain_contained)
{
  run_both(c_two_hop);
}

static void c_rel_then_abs(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 2, "symlink escape ..\nsymlink absolute /target\n",
                      "file escape/absolute/file data=x\n"),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/target/file", dest)), "x");
}
TEST(t06_relative_escape_then_absolute)
{
  run_both(c_rel_then_abs);
}

static void c_merged_usr(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 2, "dir usr/lib\nsymlink lib usr/lib\n",
                      "file lib/x86_64-linux-gnu/libfoo.so data=so\n"),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/usr/lib/x86_64-linux-gnu/libfoo.so", dest)), "so");
  CHECK(is_link(fmt("%s/lib", dest), "usr/lib"));
}
TEST(t07_merged_usr_benign)
{
  run_both(c_merged_usr);
}

static void c_var_run(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 2, "dir var\nsymlink var/run /run\ndir run/existing\n",
                      "file var/run/existing/non-existing/file data=pid\n"),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/run/existing/non-existing/file", dest)), "pid");
}
TEST(t08_absolute_in_image_symlink_benign)
{
  run_both(c_var_run);
}

/* ---- T9-T15: hardlinks ---- */

static void c_hardlink_outside(void)
{
  fpull_err err;
  expect_unsafe(run_descs(&err, 1, "hardlink dotdot ../victim/hello\n"), &err,
                "path has a .. component");
  expect_unsafe(run_descs(&err, 1, "hardlink slash-dotdot /../victim/hello\n"), &err,
                "path has a .. component");
  /* An absolute target is inside DEST, where it does not exist. */
  expect_unsafe(run_descs(&err, 1, fmt("hardlink abs %s/hello\n", victim)), &err, "does not exist");
}
TEST(t09_hardlink_to_outside_refused)
{
  run_both(c_hardlink_outside);
}

static void c_hardlink_symlinked_dir(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      "file etc/passwd data=inner\ndir breakouts\n"
                      "symlink breakouts/d1 ../../etc\n"
                      "hardlink breakouts/mypasswd /breakouts/d1/passwd\n"),
            &err);
  struct stat a, b;
  CHECK(stat(fmt("%s/etc/passwd", dest), &a) == 0);
  CHECK(stat(fmt("%s/breakouts/mypasswd", dest), &b) == 0);
  CHECK_INT_EQ(a.st_ino, b.st_ino);
}
TEST(t10_hardlink_via_symlinked_dir)
{
  run_both(c_hardlink_symlinked_dir);
}

static void c_abs_hardlink(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      "file usr/bin/perlbug data=perl\nhardlink usr/bin/perlthanks "
                      "/usr/bin/perlbug\n"),
            &err);
  struct stat a, b;
  CHECK(stat(fmt("%s/usr/bin/perlbug", dest), &a) == 0);
  CHECK(stat(fmt("%s/usr/bin/perlthanks", dest), &b) == 0);
  CHECK_INT_EQ(a.st_ino, b.st_ino);
}
TEST(t11_absolute_hardlink_target_benign)
{
  run_both(c_abs_hardlink);
}

static void c_hardlink_symlink_chmod(void)
{
  char perm[4200];
  snprintf(perm, sizeof perm, "%s/perm400", base);
  FILE *f = fopen(perm, "w");
  CHECK(f != NULL);
  fclose(f);
  CHECK(chmod(perm, 0400) == 0);
  fpull_err err;
  expect_ok(run_descs(&err, 1, fmt("symlink ep %s\nhardlink sketchylink ep mode=777\n", perm)),
            &err);
  struct stat st;
  CHECK(stat(perm, &st) == 0);
  CHECK_INT_EQ(st.st_mode & 07777, 0400);
  CHECK(lstat(fmt("%s/sketchylink", dest), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(unlink(perm) == 0);
}
TEST(t12_hardlink_to_symlink_never_chmods_target)
{
  run_both(c_hardlink_symlink_chmod);
}

static void c_hardlink_to_symlink(void)
{
  fpull_err err;
  expect_ok(
      run_descs(&err, 1, "file regular data=r\nsymlink link ../../../regular\nhardlink hl link\n"),
      &err);
  struct stat a, b;
  CHECK(lstat(fmt("%s/link", dest), &a) == 0);
  CHECK(lstat(fmt("%s/hl", dest), &b) == 0);
  CHECK_INT_EQ(a.st_ino, b.st_ino);
  CHECK(is_link(fmt("%s/hl", dest), "../../../regular"));
}
TEST(t13_hardlink_to_symlink_benign)
{
  run_both(c_hardlink_to_symlink);
}

static void c_hardlink_self(void)
{
  fpull_err err;
  expect_unsafe(run_descs(&err, 1, "file a data=keep\nhardlink a a\n"), &err, "itself");
  expect_unsafe(run_descs(&err, 1, "hardlink b notyet\nfile notyet data=x\n"), &err,
                "does not exist");
  expect_unsafe(run_descs(&err, 1, "dir d\nhardlink x d\n"), &err, "directory");
  expect_unsafe(run_descs(&err, 1, "dir d\nhardlink x /\n"), &err, "root");
}
TEST(t14_t15_hardlink_self_forward_and_directory_refused)
{
  run_both(c_hardlink_self);
}

/* ---- T16, T17: the root, and directories replaced by symlinks ---- */

static void c_root_type(void)
{
  static const char *names[] = {".", "./", "/"};
  for (size_t i = 0; i < 3; i++) {
    fpull_err err;
    expect_unsafe(run_descs(&err, 2, fmt("symlink %s %s\n", names[i], victim), "file pwn data=x\n"),
                  &err, "refusing to change the type of the rootfs root");
    /* (A file named "./" or "/" reads as a directory with data: refused as corrupt.) */
    if (i == 0)
      expect_unsafe(run_descs(&err, 1, fmt("file %s data=x\n", names[i])), &err, "rootfs root");
    expect_unsafe(run_descs(&err, 1, fmt("fifo %s\n", names[i])), &err, "rootfs root");
  }
  fpull_err err;
  expect_ok(run_descs(&err, 1, "dir ./ mode=777\nfile a data=1\n"), &err);
  struct stat st;
  CHECK(stat(dest, &st) == 0);
  CHECK_INT_EQ(st.st_mode & 07777, 0700);
}
TEST(t16_root_never_changes_type)
{
  run_both(c_root_type);
}

static void c_dir_then_symlink(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      fmt("dir foo\ndir foo/tmp\nfile foo/tmp/f data=012\n"
                          "symlink foo %s\nfile foo/hello data=345\n"
                          "dir foo\ndir foo/tmp\nfile foo/tmp/f data=678\n",
                          base)),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/foo/tmp/f", dest)), "678");
  CHECK_STR_EQ(read_file(fmt("%s%s/hello", dest, base)), "345");
}
TEST(t17_directory_replaced_by_symlink)
{
  run_both(c_dir_then_symlink);
}

/* ---- T23-T25: devices, modes, owners (as root; see nonroot_* for the rest) ---- */

static void c_devices_root(void)
{
  if (geteuid() != 0)
    return;
  fpull_err err;
  struct fpull_unpack_stats st;
  struct built b;
  build(&b, "none",
        "chardev dev/null major=1 minor=3 mode=666\nblockdev sda major=8 minor=0 mode=660\n"
        "fifo fifo mode=600\nfile bin/su data=su mode=4755 uid=0\ndir tmp mode=1777\n"
        "file owned data=o uid=1234 gid=5678\nsymlink owned-link owned uid=42 gid=43\n"
        "file big-uid data=x uid=2147483648 gid=65534\n");
  expect_ok(unpack(&b, 1, NULL, &err, &st), &err);
  struct stat s;
  CHECK(lstat(fmt("%s/dev/null", dest), &s) == 0);
  CHECK(S_ISCHR(s.st_mode));
  CHECK_INT_EQ(major(s.st_rdev), 1);
  CHECK_INT_EQ(minor(s.st_rdev), 3);
  CHECK_INT_EQ(s.st_mode & 07777, 0666);
  CHECK(lstat(fmt("%s/sda", dest), &s) == 0);
  CHECK(S_ISBLK(s.st_mode));
  CHECK(lstat(fmt("%s/bin/su", dest), &s) == 0);
  CHECK_INT_EQ(s.st_mode & 07777, 04755);
  CHECK(lstat(fmt("%s/tmp", dest), &s) == 0);
  CHECK_INT_EQ(s.st_mode & 07777, 01777);
  CHECK(lstat(fmt("%s/owned", dest), &s) == 0);
  CHECK_INT_EQ(s.st_uid, 1234);
  CHECK_INT_EQ(s.st_gid, 5678);
  CHECK(lstat(fmt("%s/owned-link", dest), &s) == 0);
  CHECK_INT_EQ(s.st_uid, 42);
  CHECK(lstat(fmt("%s/big-uid", dest), &s) == 0);
  CHECK_INT_EQ(s.st_uid, 2147483648u);
  CHECK_INT_EQ(st.devices_skipped, 0);
}
TEST(t23_t25_root_devices_owners_modes)
{
  run_both(c_devices_root);
}

static void c_devices_simulated(void)
{
  fpull_err err;
  struct fpull_unpack_stats st;
  struct built b;
  build(&b, "none",
        "chardev dev/mem major=1 minor=1 mode=666\nblockdev sda major=8 minor=0\n"
        "fifo fifo mode=4644\nfile owned data=o uid=1234 gid=5678\n"
        "file su data=x mode=4755\nfile sg data=x mode=2711\nfile t data=x mode=1755\n"
        "dir sgdir mode=2775\nhardlink su2 su\n");
  struct fpull_unpack_opts o = {.version = FPULL_UNPACK_OPTS_VERSION, .unprivileged = 1};
  expect_ok(unpack(&b, 1, &o, &err, &st), &err);
  CHECK_INT_EQ(st.devices_skipped, 2);
  CHECK_INT_EQ(st.setid_dropped, 3);
  static const struct {
    const char *name;
    mode_t mode;
  } want[] = {{"su", 0755}, {"su2", 0755},  {"sg", 0711},
              {"t", 01755}, {"fifo", 0644}, {"sgdir", 02775}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    struct stat m;
    CHECK(lstat(fmt("%s/%s", dest, want[i].name), &m) == 0);
    CHECK_INT_EQ(m.st_mode & 07777, want[i].mode);
  }
  CHECK(access(fmt("%s/dev/mem", dest), F_OK) != 0);
  CHECK(access(fmt("%s/sda", dest), F_OK) != 0);
  struct stat s;
  CHECK(lstat(fmt("%s/fifo", dest), &s) == 0 && S_ISFIFO(s.st_mode));
  CHECK(lstat(fmt("%s/owned", dest), &s) == 0);
  CHECK_INT_EQ(s.st_uid, geteuid());
}
TEST(t23_unprivileged_mode_skips_devices_keeps_owner)
{
  run_both(c_devices_simulated);
}

static void c_bad_devices_and_owners(void)
{
  fpull_err err;
  expect_unsafe(run_descs(&err, 1, "chardev x major=5000 minor=1\n"), &err, "out of range");
  expect_unsafe(run_descs(&err, 1, "file x data=1 uid=4294967295\n"), &err, "invalid owner");
}
TEST(t23_t25_out_of_range_devices_and_owners_refused)
{
  run_both(c_bad_devices_and_owners);
}

/* The real thing: a child that is not root (uid 65534) unpacks. */
static void c_nonroot(void)
{
  if (geteuid() != 0) {
    fprintf(stderr, "skipped: needs root to switch to uid 65534\n");
    return;
  }
  struct built b;
  build(&b, "gzip",
        "chardev dev/null major=1 minor=3 mode=666\nfifo fifo\n"
        "file bin/su data=su mode=4755 uid=0\nfile bin/sg data=sg mode=2755 gid=0\n"
        "dir ro mode=555\nfile ro/inside data=in mode=444\ndir ro/sub mode=500\n"
        "file ro/sub/deep data=d\nfile owned data=o uid=0 gid=0\n"
        "file cap data=c xattr.security.capability=xx xattr.user.note=hi xattr.trusted.x=no\n");
  CHECK(chmod(th_tmpdir(), 0755) == 0);
  CHECK(chmod(b.path, 0644) == 0);
  CHECK(chown(base, 65534, 65534) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
      _exit(90);
    struct fpull_layer l = {b.path, b.mt, b.digest, b.diff_id, 0};
    struct fpull_unpack_opts o = {.version = FPULL_UNPACK_OPTS_VERSION,
                                  .resolve_fallback = fallback};
    struct fpull_unpack_stats st;
    fpull_err err;
    int rc = fpull_unpack_rootfs(dest, &l, 1, &o, &st, &err);
    if (rc) {
      fprintf(stderr, "child: %s\n", err.msg);
      _exit(91);
    }
    _exit(st.devices_skipped == 1 && st.setid_dropped == 2 ? 0 : 92);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK_INT_EQ(WEXITSTATUS(status), 0);
  struct stat s;
  CHECK(access(fmt("%s/dev/null", dest), F_OK) != 0);
  CHECK(lstat(fmt("%s/fifo", dest), &s) == 0 && S_ISFIFO(s.st_mode));
  CHECK(lstat(fmt("%s/owned", dest), &s) == 0);
  CHECK_INT_EQ(s.st_uid, 65534);
  CHECK(lstat(fmt("%s/bin/su", dest), &s) == 0);
  CHECK_INT_EQ(s.st_mode & 07777, 0755); /* the kernel would let an owner set it: dropped */
  CHECK(lstat(fmt("%s/bin/sg", dest), &s) == 0);
  CHECK_INT_EQ(s.st_mode & 07777, 0755);
  CHECK(lstat(fmt("%s/ro", dest), &s) == 0);
  CHECK_INT_EQ(s.st_mode & 07777, 0555);
  CHECK(lstat(fmt("%s/ro/sub", dest), &s) == 0);
  CHECK_INT_EQ(s.st_mode & 07777, 0500);
  CHECK_STR_EQ(read_file(fmt("%s/ro/sub/deep", dest)), "d");
  char v[16] = {0};
  CHECK(lgetxattr(fmt("%s/cap", dest), "security.capability", v, sizeof v) < 0);
  CHECK(lgetxattr(fmt("%s/cap", dest), "trusted.x", v, sizeof v) < 0);
  CHECK(chown(base, 0, 0) == 0);
}
TEST(nonroot_child_unpacks_with_user_semantics)
{
  run_both(c_nonroot);
}

/* Issue 20.2: one privilege policy (fp_priv_policy) for both outputs. As root the rootfs
 * directory keeps setuid bits, file capabilities and devices (it stays 0700); a SquashFS
 * image, which others mount, keeps them only with keep_privileged, which non-root callers
 * cannot ask for. */
#define PRIV_LAYER                                                                                 \
  "file bin/rootsh data=sh mode=4755 uid=0\nfile bin/sg data=sg mode=2755\n"                       \
  "blockdev dev/sda major=8 minor=0 mode=666\n"                                                    \
  "file bin/ping data=p xattr.security.capability=\\x01\\x00\\x00\\x02\\x00\\x20\\x00\\x00"        \
  "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\n"

static void c_priv_dir_root(void)
{
  if (geteuid() != 0)
    return;
  fpull_err err;
  struct fpull_unpack_stats st;
  struct built b;
  build(&b, "none", PRIV_LAYER);
  expect_ok(unpack(&b, 1, NULL, &err, &st), &err);
  struct stat s;
  CHECK(lstat(fmt("%s/bin/rootsh", dest), &s) == 0);
  CHECK_INT_EQ(s.st_mode & 07777, 04755);
  CHECK(lstat(fmt("%s/dev/sda", dest), &s) == 0 && S_ISBLK(s.st_mode));
  char v[32];
  CHECK_INT_EQ(lgetxattr(fmt("%s/bin/ping", dest), "security.capability", v, sizeof v), 20);
  CHECK_INT_EQ(st.setid_dropped + st.devices_skipped + st.caps_dropped, 0);
  /* DEST itself stays private: nothing in it is reachable by other users. */
  CHECK(stat(dest, &s) == 0);
  CHECK_INT_EQ(s.st_mode & 07777, 0700);
}
TEST(root_directory_keeps_setuid_caps_devices_in_a_private_dest)
{
  run_both(c_priv_dir_root);
}

/* What unsquashfs lists of the image at img (owners, modes, devices), and the xattr names
 * sqfs2tar writes for it (pax SCHILY.xattr.NAME records). */
static char *sqfs_listing(const char *img)
{
  static char out[16384];
  FILE *p = popen(
      fmt("unsquashfs -lls -n '%s' 2>&1; sqfs2tar '%s' 2>&1 | grep -ao 'SCHILY.xattr.[a-z.]*'", img,
          img),
      "r");
  CHECK(p != NULL);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  pclose(p);
  return out;
}

TEST(root_squashfs_keeps_setuid_caps_devices_only_when_asked)
{
  if (geteuid() != 0 || access("/usr/bin/unsquashfs", X_OK) != 0 ||
      access("/usr/bin/sqfs2tar", X_OK) != 0) {
    fprintf(stderr, "skipped: needs root, unsquashfs and sqfs2tar\n");
    return;
  }
  struct built b;
  build(&b, "none", PRIV_LAYER);
  struct fpull_layer l = {b.path, b.mt, b.digest, b.diff_id, 0};
  struct fpull_unpack_opts o = FPULL_UNPACK_OPTS_INIT;
  struct fpull_unpack_stats st;
  fpull_err err;
  const char *img = fmt("%s/priv-default.sqsh", th_tmpdir());
  expect_ok(fpull_unpack_squashfs(img, &l, 1, &o, &st, &err), &err);
  CHECK_INT_EQ(st.setid_dropped, 2);
  CHECK_INT_EQ(st.devices_skipped, 1);
  CHECK_INT_EQ(st.caps_dropped, 1);
  char *ls = sqfs_listing(img);
  CHECK(strstr(ls, "-rwxr-xr-x root/root") != NULL); /* bin/rootsh, its owner kept */
  CHECK(strstr(ls, "rws") == NULL && strstr(ls, "r-s") == NULL);
  CHECK(strstr(ls, "dev/sda") == NULL);
  CHECK(strstr(ls, "security.capability") == NULL);
  CHECK(strstr(ls, "squashfs-root/bin/ping") != NULL);

  o.keep_privileged = 1;
  img = fmt("%s/priv-kept.sqsh", th_tmpdir());
  expect_ok(fpull_unpack_squashfs(img, &l, 1, &o, &st, &err), &err);
  CHECK_INT_EQ(st.setid_dropped + st.devices_skipped + st.caps_dropped, 0);
  ls = sqfs_listing(img);
  CHECK(strstr(ls, "-rwsr-xr-x root/root") != NULL);
  CHECK(strstr(ls, "brw-rw-rw- root/root") != NULL);
  CHECK(strstr(ls, "security.capability") != NULL);

  /* Only root may ask: as a non-root caller it is a usage error, and nothing is written. */
  o.unprivileged = 1;
  img = fmt("%s/priv-refused.sqsh", th_tmpdir());
  CHECK_INT_EQ(fpull_unpack_squashfs(img, &l, 1, &o, &st, &err), FPULL_EUSAGE);
  CHECK(strstr(err.msg, "needs root") != NULL);
  CHECK(access(img, F_OK) != 0);
}

static void c_xattrs(void)
{
  fpull_err err;
  struct fpull_unpack_stats st;
  struct built b;
  build(&b, "none",
        "file f data=x xattr.user.note=hello xattr.trusted.overlay.opaque=y\n"
        "dir d xattr.user.dir=1\nsymlink l f xattr.user.no=1\n");
  expect_ok(unpack(&b, 1, NULL, &err, &st), &err);
  char v[64] = {0};
  ssize_t n = getxattr(fmt("%s/f", dest), "user.note", v, sizeof v);
  if (n < 0 && errno == ENOTSUP) {
    fprintf(stderr, "no user xattrs on this file system\n");
    return;
  }
  CHECK_INT_EQ(n, 5);
  CHECK_STR_EQ(v, "hello");
  CHECK(getxattr(fmt("%s/f", dest), "trusted.overlay.opaque", v, sizeof v) < 0);
  CHECK(getxattr(fmt("%s/d", dest), "user.dir", v, sizeof v) == 1);
  CHECK(st.xattrs_skipped >= 2);
}
TEST(t35_xattrs_from_the_allowlist_only)
{
  run_both(c_xattrs);
}

/* ---- T26, T28, T29: names and duplicates ---- */

static void c_long_names(void)
{
  char comp[301];
  memset(comp, 'a', 300);
  comp[300] = '\0';
  fpull_err err;
  expect_unsafe(run_descs(&err, 1, fmt("file %s data=x\n", comp)), &err, "longer than 255");
  /* Past PATH_MAX through a symlink in the middle: contained, or refused; never outside. */
  char deep[6000] = "";
  for (int i = 0; i < 40; i++)
    strcat(deep, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
                 "bbbbbbbbbbbbbb/");
  (void)run_descs(&err, 2, fmt("dir %s\nsymlink %sc40 ../../../..\n", deep, deep),
                  fmt("file %sc40/x data=x\n", deep));
}
TEST(t26_long_names)
{
  run_both(c_long_names);
}

static void c_odd_names(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      "file \\xff\\xfe data=1\nfile caf\\xc3\\xa9 data=2\nfile a\\nb data=3\n"
                      "file back\\\\slash:colon data=4\n"),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/\xff\xfe", dest)), "1");
  CHECK_STR_EQ(read_file(fmt("%s/caf\xc3\xa9", dest)), "2");
  CHECK_STR_EQ(read_file(fmt("%s/a\nb", dest)), "3");
  CHECK_STR_EQ(read_file(fmt("%s/back\\slash:colon", dest)), "4");
}
TEST(t28_odd_names_byte_exact)
{
  run_both(c_odd_names);
}

static void c_duplicates(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      fmt("file x data=1\nsymlink x %s/hello\nfile x data=2\n"
                          "dir d\nfile d/in data=i\nfile d data=3\n",
                          victim)),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/x", dest)), "2");
  CHECK_STR_EQ(read_file(fmt("%s/d", dest)), "3");
}
TEST(t29_duplicate_paths_replace_never_write_through)
{
  run_both(c_duplicates);
}

/* ---- T31, T33, T34: limits, corrupt input, media types ---- */

static void c_limits(void)
{
  struct built b;
  fpull_err err;
  build(&b, "gzip", "file bomb zeros=8000000\n");
  struct fpull_unpack_opts o = {.version = FPULL_UNPACK_OPTS_VERSION, .max_bytes = 1000000};
  expect_unsafe(unpack(&b, 1, &o, &err, NULL), &err, "limit");
  build(&b, "zstd", "repeat 200 file f{i} data=x\n");
  struct fpull_unpack_opts o2 = {.version = FPULL_UNPACK_OPTS_VERSION, .max_entries = 100};
  expect_unsafe(unpack(&b, 1, &o2, &err, NULL), &err, "more than 100 entries");
}
TEST(t31_limits_stop_bombs)
{
  run_both(c_limits);
}

/* max_unpacked (--max-unpacked): the sizes of regular files as the layers write them,
 * summed over the layers; hard links, whiteouts (even with data), symlinks and directories
 * add nothing; a file written again counts again. Exactly the limit is allowed. */
static void c_max_unpacked(void)
{
  struct built b[3];
  fpull_err err;
  struct fpull_unpack_stats st;
  build(&b[0], "gzip",
        "dir d\nfile d/a zeros=600000\nhardlink d/a2 d/a\nhardlink d/a3 d/a\n"
        "symlink d/s a\nfifo d/p\n");
  build(&b[1], "zstd", "file d/.wh.a data=whiteouts-add-nothing\nfile d/b zeros=400000\n");
  struct fpull_unpack_opts o = FPULL_UNPACK_OPTS_INIT;
  o.max_unpacked = 1000000;
  expect_ok(unpack(b, 2, &o, &err, &st), &err);
  struct stat sb;
  CHECK(stat(fmt("%s/d/b", dest), &sb) == 0);
  CHECK_INT_EQ(sb.st_size, 400000);
  CHECK(stat(fmt("%s/d/a2", dest), &sb) == 0);
  CHECK_INT_EQ(sb.st_size, 600000);
  check_base_clean(1);
  check_victim();

  /* One byte less: the second layer's file crosses it, and nothing stays. */
  fresh();
  o.max_unpacked = 999999;
  expect_unsafe(unpack(b, 2, &o, &err, NULL), &err,
                "unpacked content exceeds the max-unpacked limit of 999999 bytes (entry d/b "
                "would bring it to 1000000 bytes)");
  CHECK_CONTAINS(err.msg, fmt("layer %s: ", b[1].digest));
  check_victim();

  /* A file that a later layer writes again was written twice. */
  fresh();
  build(&b[2], "none", "file d/a zeros=600000\n");
  o.max_unpacked = 1100000;
  expect_unsafe(unpack((struct built[]){b[0], b[2]}, 2, &o, &err, NULL), &err,
                "limit of 1100000 bytes (entry d/a would bring it to 1200000 bytes)");
  check_victim();

  /* A bomb stops at the header of the entry that crosses the limit: 64 MiB of zeros in a
   * few KiB of zstd, over a limit in whole MiB (shown as given). */
  fresh();
  build(&b[2], "zstd", "file small data=x\nfile bomb zeros=67108864\n");
  o.max_unpacked = 1 << 20;
  expect_unsafe(unpack(&b[2], 1, &o, &err, NULL), &err,
                "limit of 1 MiB (entry bomb would bring it to 67108865 bytes)");
  check_victim();

  /* 0 and FPULL_UNPACK_UNLIMITED: no limit. */
  fresh();
  o.max_unpacked = FPULL_UNPACK_UNLIMITED;
  expect_ok(unpack(b, 2, &o, &err, NULL), &err);
  check_base_clean(1);
}
TEST(max_unpacked_counts_file_content_once_per_write)
{
  run_both(c_max_unpacked);
}

static void c_corrupt(void)
{
  struct built b;
  fpull_err err;
  build(&b, "none", "%truncate 700\nfile a data=x\nfile b zeros=2000\n");
  expect_unsafe(unpack(&b, 1, NULL, &err, NULL), &err, "corrupt");
  FILE *f = fopen(b.path, "w");
  for (int i = 0; i < 4096; i++)
    fputc((i * 7919) & 0xff, f);
  fclose(f);
  expect_unsafe(unpack(&b, 1, NULL, &err, NULL), &err, "corrupt");
  b.mt = MT_GZ;
  expect_unsafe(unpack(&b, 1, NULL, &err, NULL), &err, "gzip");
  b.mt = MT_ZST;
  expect_unsafe(unpack(&b, 1, NULL, &err, NULL), &err, "zstd");
  build(&b, "gzip", "%truncate 100000\nfile a zeros=50000\n");
  struct stat st;
  CHECK(stat(b.path, &st) == 0);
  CHECK(truncate(b.path, st.st_size - 10) == 0);
  expect_unsafe(unpack(&b, 1, NULL, &err, NULL), &err, "gzip");
}
TEST(t33_corrupt_and_truncated_layers)
{
  run_both(c_corrupt);
}

static void c_media_types(void)
{
  struct built b;
  fpull_err err;
  build(&b, "zstd", "file a data=x\n");
  b.mt = MT_GZ;
  expect_unsafe(unpack(&b, 1, NULL, &err, NULL), &err, "gzip");
  b.mt = "application/vnd.oci.image.layer.v1.tar+bzip2";
  expect_unsafe(unpack(&b, 1, NULL, &err, NULL), &err, "unsupported layer media type");
  /* A zip is not parsed even when declared plain tar. */
  FILE *f = fopen(b.path, "w");
  fputs("PK\x03\x04", f);
  for (int i = 0; i < 600; i++)
    fputc(0, f);
  fclose(f);
  b.mt = MT_TAR;
  expect_unsafe(unpack(&b, 1, NULL, &err, NULL), &err, "corrupt");
}
TEST(t34_media_type_must_match)
{
  run_both(c_media_types);
}

/* ---- C5, C6: the destination ---- */

static void c_dest(void)
{
  struct built good, bad;
  build(&good, "gzip", "file new data=new\n");
  build(&bad, "none", "file ok data=1\nfile ../x data=2\n");
  fpull_err err;
  CHECK(mkdir(dest, 0755) == 0);
  FILE *f = fopen(fmt("%s/old", dest), "w");
  fclose(f);
  CHECK_INT_EQ(unpack(&good, 1, NULL, &err, NULL), FPULL_EFAIL);
  CHECK_CONTAINS(err.msg, "already exists");
  CHECK(access(fmt("%s/old", dest), F_OK) == 0);
  /* A failed --force pull leaves the old DEST as it was. */
  struct fpull_unpack_opts force = {.version = FPULL_UNPACK_OPTS_VERSION, .force = 1};
  CHECK_INT_EQ(unpack(&bad, 1, &force, &err, NULL), FPULL_EUNSAFE);
  CHECK(access(fmt("%s/old", dest), F_OK) == 0);
  check_base_clean(1);
  /* An old DEST we cannot write into is still replaced. */
  CHECK(mkdir(fmt("%s/ro", dest), 0500) == 0);
  expect_ok(unpack(&good, 1, &force, &err, NULL), &err);
  CHECK(access(fmt("%s/old", dest), F_OK) != 0);
  CHECK_STR_EQ(read_file(fmt("%s/new", dest)), "new");
  check_base_clean(1);

  /* A symlink DEST is refused even with --force, and what it points to is untouched. */
  CHECK(rename(dest, fmt("%s/real", base)) == 0);
  CHECK(symlink("real", dest) == 0);
  CHECK_INT_EQ(unpack(&good, 1, &force, &err, NULL), FPULL_EFAIL);
  CHECK_CONTAINS(err.msg, "symlink");
  CHECK(is_link(dest, "real"));
  CHECK(unlink(dest) == 0);
  CHECK(rename(fmt("%s/real", base), dest) == 0);

  if (geteuid() == 0) {
    CHECK(chown(dest, 65534, 65534) == 0);
    CHECK_INT_EQ(unpack(&good, 1, &force, &err, NULL), FPULL_EFAIL);
    CHECK_CONTAINS(err.msg, "uid 65534");
    CHECK(chown(dest, 0, 0) == 0);
  }
  CHECK(system(fmt("rm -rf '%s'", dest)) == 0);
  CHECK(mkdir(dest, 0755) == 0);
  CHECK(rmdir(dest) == 0);
  /* DEST given with a trailing slash and in a parent that does not exist yet: an error
   * naming it, nothing created, unless parents asks for it (pull --parents). */
  char saved[4200];
  strcpy(saved, dest);
  snprintf(dest, sizeof dest, "%.3000s/sub/dir/", base);
  CHECK_INT_EQ(unpack(&good, 1, NULL, &err, NULL), FPULL_EFAIL);
  CHECK_CONTAINS(err.msg, "--parents");
  CHECK_CONTAINS(err.msg, "/sub does not exist");
  struct stat pst;
  CHECK(stat(fmt("%s/sub", base), &pst) < 0 && errno == ENOENT);
  struct fpull_unpack_opts parents = FPULL_UNPACK_OPTS_INIT;
  parents.parents = 1;
  expect_ok(unpack(&good, 1, &parents, &err, NULL), &err);
  CHECK_STR_EQ(read_file(fmt("%s/sub/dir/new", base)), "new");
  /* A caller built against version 1 of the struct gets its parents created, as before. */
  CHECK(system(fmt("rm -rf '%s/sub'", base)) == 0);
  struct fpull_unpack_opts v1 = FPULL_UNPACK_OPTS_INIT;
  v1.version = 1;
  expect_ok(unpack(&good, 1, &v1, &err, NULL), &err);
  CHECK_STR_EQ(read_file(fmt("%s/sub/dir/new", base)), "new");
  CHECK(system(fmt("rm -rf '%s/sub'", base)) == 0);
  strcpy(dest, saved);
}
TEST(c5_destination_rules)
{
  run_both(c_dest);
}

/* Staging directories of a killed run are removed by the next one; a live one is not. */
static void c_leftovers(void)
{
  CHECK(mkdir(fmt("%s/.dest.fpull-staging-dead01", base), 0700) == 0);
  CHECK(mkdir(fmt("%s/.dest.fpull-staging-dead01/sub", base), 0500) == 0);
  struct built b;
  build(&b, "none", "file a data=1\n");
  fpull_err err;
  expect_ok(unpack(&b, 1, NULL, &err, NULL), &err);
  check_base_clean(1);
}
TEST(c6_leftover_staging_removed)
{
  run_both(c_leftovers);
}

/* SIGKILL in the middle of a layer: DEST does not appear, the next run cleans up. The layer
 * comes through a FIFO so the child is stopped mid-stream for sure. */
static void c_sigkill(void)
{
  struct built b;
  build(&b, "none", "file a data=1\nfile b zeros=2000000\nfile c data=3\n");
  char fifo[4200];
  snprintf(fifo, sizeof fifo, "%s/fifo", base);
  CHECK(mkfifo(fifo, 0600) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    struct fpull_layer l = {fifo, MT_TAR, b.digest, NULL, 0};
    struct fpull_unpack_opts o = {.version = FPULL_UNPACK_OPTS_VERSION,
                                  .resolve_fallback = fallback};
    fpull_err err;
    _exit(fpull_unpack_rootfs(dest, &l, 1, &o, NULL, &err));
  }
  int w = open(fifo, O_WRONLY);
  CHECK(w >= 0);
  int r = open(b.path, O_RDONLY);
  CHECK(r >= 0);
  char buf[65536];
  ssize_t n = read(r, buf, sizeof buf);
  CHECK(n == (ssize_t)sizeof buf);
  CHECK(write(w, buf, (size_t)n) == n);
  /* Wait until the child has started writing b into its staging directory. */
  int seen = 0;
  for (int i = 0; i < 500 && !seen; i++) {
    usleep(10000);
    DIR *d = opendir(base);
    struct dirent *de;
    while (d && (de = readdir(d)))
      if (strncmp(de->d_name, ".dest.fpull-staging-", 20) == 0 &&
          access(fmt("%s/%s/b", base, de->d_name), F_OK) == 0)
        seen = 1;
    if (d)
      closedir(d);
  }
  CHECK(seen);
  CHECK(kill(pid, SIGKILL) == 0);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  close(w);
  close(r);
  CHECK(access(dest, F_OK) != 0);
  CHECK(unlink(fifo) == 0);
  fpull_err err;
  expect_ok(unpack(&b, 1, NULL, &err, NULL), &err);
  CHECK_STR_EQ(read_file(fmt("%s/c", dest)), "3");
  check_base_clean(1);
}
TEST(c6_sigkill_mid_unpack)
{
  run_both(c_sigkill);
}

/* Owner names are ignored (image-spec; no NSS lookups): the numeric ids win. */
static void c_unames(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      "file a data=1 uid=1000 gid=1001 pax.uname=root pax.gname=root\n"
                      "file b data=2 uid=3 pax.uname=r\\xffoot pax.gname=\\xfe\n"),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/b", dest)), "2");
  struct stat st;
  CHECK(lstat(fmt("%s/a", dest), &st) == 0);
  if (geteuid() == 0) {
    CHECK_INT_EQ(st.st_uid, 1000);
    CHECK_INT_EQ(st.st_gid, 1001);
  }
}
TEST(t25_owner_names_ignored)
{
  run_both(c_unames);
}

/* A cached parent directory must not outlive the replacement of one of its ancestors. */
static void c_cache_invalidation(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      "dir a\ndir a/b\nfile a/b/f data=1\ndir x\nfile x/y data=2\n"
                      "symlink a elsewhere\nfile a/b/g data=3\nfile x/z data=4\n"),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/elsewhere/b/g", dest)), "3");
  CHECK_STR_EQ(read_file(fmt("%s/x/z", dest)), "4");
  CHECK(is_link(fmt("%s/a", dest), "elsewhere"));
}
TEST(t17_parent_cache_dropped_on_replacement)
{
  run_both(c_cache_invalidation);
}

/* A stream of many 1 MiB buffers (more than the ring between decompressor, hasher and
 * libarchive holds), with entry headers at different offsets in each buffer and junk after
 * the end of the tar: the DiffID must still cover exactly the whole stream in order. */
static void c_long_stream(void)
{
  static const char *comps[] = {"none", "gzip", "zstd"};
  char desc[4096] = "%trailing 3000\n";
  for (int i = 0; i < 24; i++)
    snprintf(desc + strlen(desc), sizeof desc - strlen(desc), "file z%d zeros=%d\n", i,
             600000 + i * 977);
  for (int c = 0; c < 3; c++) {
    struct built b;
    fpull_err err;
    build(&b, comps[c], desc);
    struct fpull_unpack_stats st = {0};
    expect_ok(unpack(&b, 1, NULL, &err, &st), &err);
    CHECK(st.bytes > 14u << 20);
    for (int i = 0; i < 24; i++) {
      struct stat s;
      CHECK(lstat(fmt("%s/z%d", dest, i), &s) == 0);
      CHECK_INT_EQ(s.st_size, 600000 + i * 977);
    }
    CHECK(system(fmt("rm -rf '%s'", dest)) == 0);
    b.diff_id[71] = b.diff_id[71] == '0' ? '1' : '0';
    CHECK_INT_EQ(unpack(&b, 1, NULL, &err, NULL), FPULL_EINTEGRITY);
    CHECK_CONTAINS(err.msg, "DiffID");
    check_base_clean(0);
  }
}
TEST(long_stream_diffid_covers_every_buffer)
{
  run_both(c_long_stream);
}

/* Modes and owners come out exactly as the layer says whatever the umask, whether they
 * equal what a new file gets anyway (no fchown / fchmod needed) or not. */
static void c_modes_owners(void)
{
  static const mode_t masks[] = {022, 077, 0};
  static const struct {
    const char *name;
    int mode;
  } files[] = {{"f644", 0644}, {"f666", 0666},   {"f777", 0777},   {"f000", 0},
               {"f640", 0640}, {"f4755", 04755}, {"f2755", 02755}, {"f1755", 01755}};
  for (int k = 0; k < 3; k++) {
    char desc[4096] = "dir d mode=755\n";
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
      snprintf(desc + strlen(desc), sizeof desc - strlen(desc),
               "file %s data=x mode=%o\nfile d/%s data=y mode=%o uid=0 gid=0\n", files[i].name,
               (unsigned)files[i].mode, files[i].name, (unsigned)files[i].mode);
    strcat(desc, "file mine data=m uid=0 gid=0\nfile u7 data=u uid=7 gid=0\n"
                 "file g9 data=g uid=0 gid=9\nsymlink d/l7 f644 uid=7 gid=8\n"
                 "symlink d/l0 f644 uid=0 gid=0\ndir d/sub mode=2750 uid=0 gid=5\n"
                 "file d/sub/in data=i mode=600 uid=0 gid=0\n");
    mode_t old = umask(masks[k]);
    fpull_err err;
    int rc = run_descs(&err, 1, desc);
    umask(old);
    expect_ok(rc, &err);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
      struct stat s;
      CHECK(lstat(fmt("%s/%s", dest, files[i].name), &s) == 0);
      CHECK_INT_EQ(s.st_mode & 07777, files[i].mode);
      CHECK(lstat(fmt("%s/d/%s", dest, files[i].name), &s) == 0);
      CHECK_INT_EQ(s.st_mode & 07777, files[i].mode);
    }
    struct stat s;
    CHECK(lstat(fmt("%s/d/sub/in", dest), &s) == 0);
    CHECK_INT_EQ(s.st_mode & 07777, 0600);
    CHECK(lstat(fmt("%s/d/sub", dest), &s) == 0);
    CHECK_INT_EQ(s.st_mode & 07777, 02750);
    if (geteuid() == 0) {
      CHECK_INT_EQ(s.st_gid, 5);
      CHECK(lstat(fmt("%s/mine", dest), &s) == 0);
      CHECK_INT_EQ(s.st_uid, 0);
      CHECK_INT_EQ(s.st_gid, 0);
      CHECK(lstat(fmt("%s/u7", dest), &s) == 0);
      CHECK_INT_EQ(s.st_uid, 7);
      CHECK_INT_EQ(s.st_gid, 0);
      CHECK(lstat(fmt("%s/g9", dest), &s) == 0);
      CHECK_INT_EQ(s.st_uid, 0);
      CHECK_INT_EQ(s.st_gid, 9);
      CHECK(lstat(fmt("%s/d/l7", dest), &s) == 0);
      CHECK(S_ISLNK(s.st_mode));
      CHECK_INT_EQ(s.st_uid, 7);
      CHECK_INT_EQ(s.st_gid, 8);
      CHECK(lstat(fmt("%s/d/l0", dest), &s) == 0);
      CHECK_INT_EQ(s.st_uid, 0);
      CHECK_INT_EQ(s.st_gid, 0);
      CHECK(lstat(fmt("%s/d/f4755", dest), &s) == 0);
      CHECK_INT_EQ(s.st_mode & 07777, 04755);
    }
    CHECK(system(fmt("rm -rf '%s'", dest)) == 0);
  }
}
TEST(modes_and_owners_exact_under_any_umask)
{
  run_both(c_modes_owners);
}

/* Beside a directory whose group is not ours, with the setgid bit (new entries inherit
 * the group): entries still get the layer's group, ours included. */
static void c_setgid_parent(void)
{
  if (geteuid() != 0)
    return;
  CHECK(chown(base, 0, 4321) == 0);
  CHECK(chmod(base, 02755) == 0);
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      "file a data=1 uid=0 gid=0\nsymlink l a uid=0 gid=0\ndir d uid=0 gid=0\n"
                      "file d/b data=2 uid=0 gid=0\n"),
            &err);
  const char *names[] = {"a", "l", "d", "d/b"};
  for (int i = 0; i < 4; i++) {
    struct stat s;
    CHECK(lstat(fmt("%s/%s", dest, names[i]), &s) == 0);
    CHECK_INT_EQ(s.st_uid, 0);
    CHECK_INT_EQ(s.st_gid, 0);
  }
  CHECK(chmod(base, 0755) == 0);
}
TEST(owners_exact_under_a_setgid_parent)
{
  run_both(c_setgid_parent);
}

/* Parents reached from the cached grandparent: only real directories, never a symlink
 * (those go through the in-root resolver, absolute and ../ targets included). */
static void c_parent_below_cached(void)
{
  fpull_err err;
  expect_ok(run_descs(&err, 1,
                      "dir a\ndir a/b\nfile a/b/f data=1\nsymlink a/c b\nfile a/c/g data=2\n"
                      "symlink a/up ../../..\nfile a/up/h data=3\nsymlink a/abs /\n"
                      "file a/abs/i data=4\ndir a/b/d\nfile a/b/d/j data=5\nfile a/b/k data=6\n"),
            &err);
  CHECK_STR_EQ(read_file(fmt("%s/a/b/f", dest)), "1");
  CHECK_STR_EQ(read_file(fmt("%s/a/b/g", dest)), "2");
  CHECK_STR_EQ(read_file(fmt("%s/h", dest)), "3");
  CHECK_STR_EQ(read_file(fmt("%s/i", dest)), "4");
  CHECK_STR_EQ(read_file(fmt("%s/a/b/d/j", dest)), "5");
  CHECK_STR_EQ(read_file(fmt("%s/a/b/k", dest)), "6");
  CHECK(is_link(fmt("%s/a/c", dest), "b"));
  CHECK(is_link(fmt("%s/a/up", dest), "../../.."));
  CHECK(is_link(fmt("%s/a/abs", dest), "/"));
}
TEST(parent_below_cached_directory_never_a_symlink)
{
  run_both(c_parent_below_cached);
}

/* A directory removed by a whiteout frees its inode number, and a directory made for a
 * later path's missing parents may get it: the removed one's deferred metadata must not
 * land on the newcomer (found by the SquashFS twin, issue 14). Several removed ones make
 * the reuse all but certain on ext4. */
static void c_removed_dir_metadata(void)
{
  fpull_err err;
  char lower[4096] = "", upper[4096] = "";
  for (int i = 0; i < 8; i++) {
    snprintf(lower + strlen(lower), sizeof lower - strlen(lower),
             "dir gone%d mode=0700 mtime=1000\n", i);
    snprintf(upper + strlen(upper), sizeof upper - strlen(upper),
             "file gone%d/.wh..wh..opq\nfile .wh.gone%d\nfile fresh%d/sub/f data=x\n", i, i, i);
  }
  expect_ok(run_descs(&err, 2, lower, upper), &err);
  for (int i = 0; i < 8; i++) {
    struct stat st;
    CHECK(lstat(fmt("%s/fresh%d/sub", dest, i), &st) == 0);
    CHECK(st.st_mtime > 1000);
    CHECK(lstat(fmt("%s/fresh%d", dest, i), &st) == 0);
    CHECK(st.st_mtime > 1000);
    CHECK(access(fmt("%s/gone%d", dest, i), F_OK) != 0);
  }
}
TEST(removed_directory_metadata_never_lands_on_a_new_one)
{
  run_both(c_removed_dir_metadata);
}

/* Issue 11.4: memory grows with the number of spellings of one directory. 16 symlinks
 * "sN" -> "." with 249-byte names make every entry a new ~3.8 KB spelling of the directory
 * d: 100,000 directory entries, each a different path to the same directory. Deferred
 * directory metadata kept a record and a path copy per spelling (456 MB for this layer).
 * The unpack runs in a child so that its peak RSS is its own (th_child_peak_rss). */
#include <archive.h>
#include <archive_entry.h>

#define SPELLINGS 100000

static void symlink_name(char *out, int i)
{
  memset(out, 'a' + i, 249);
  out[0] = 's';
  out[249] = '\0';
}

static void build_spellings_layer(const char *path)
{
  struct archive *a = archive_write_new();
  CHECK(a != NULL);
  CHECK(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
  CHECK(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
  CHECK(archive_write_open_filename(a, path) == ARCHIVE_OK);
  struct archive_entry *e = archive_entry_new();
  char name[256];
  for (int i = 0; i < 16; i++) {
    archive_entry_clear(e);
    symlink_name(name, i);
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFLNK);
    archive_entry_set_symlink(e, ".");
    archive_entry_set_perm(e, 0777);
    CHECK(archive_write_header(a, e) == ARCHIVE_OK);
  }
  static char p[4096];
  for (int i = 0; i < SPELLINGS; i++) {
    /* 15 links picked by the digits of i in base 16 (and a mix of them): all distinct. */
    size_t len = 0;
    unsigned v = (unsigned)i, h = (unsigned)i * 2654435761u;
    for (int k = 0; k < 15; k++) {
      int pick = k < 5 ? (int)((v >> (4 * k)) & 15) : (int)((h >> (2 * k)) & 15);
      symlink_name(name, pick);
      memcpy(p + len, name, 249);
      p[len + 249] = '/';
      len += 250;
    }
    memcpy(p + len, "d", 2);
    archive_entry_clear(e);
    archive_entry_set_pathname(e, p);
    archive_entry_set_filetype(e, AE_IFDIR);
    archive_entry_set_perm(e, 0755);
    CHECK(archive_write_header(a, e) == ARCHIVE_OK);
  }
  archive_entry_free(e);
  CHECK(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
}

/* The unpack in a child of its own, so that its peak RSS is its own. */
static int spellings_child(void *layer)
{
  struct fpull_layer l = {layer, MT_GZ, "sha256:spellings", NULL, 0};
  struct fpull_unpack_opts o = {.version = FPULL_UNPACK_OPTS_VERSION, .resolve_fallback = fallback};
  struct fpull_unpack_stats st;
  fpull_err err;
  if (fpull_unpack_rootfs(dest, &l, 1, &o, &st, &err) != 0) {
    fprintf(stderr, "child: %s\n", err.msg);
    return 91;
  }
  return st.entries == SPELLINGS + 16 ? 0 : 92;
}

static void c_spellings_rss(void)
{
  static char layer[4200];
  snprintf(layer, sizeof layer, "%s/spellings.tar.gz", th_tmpdir());
  if (access(layer, F_OK) != 0)
    build_spellings_layer(layer);
  th_child_peak_rss(spellings_child, layer, 64 * 1024);
  struct stat s;
  CHECK(lstat(fmt("%s/d", dest), &s) == 0 && S_ISDIR(s.st_mode));
  CHECK_INT_EQ(s.st_mode & 07777, 0755);
}
TEST(many_spellings_of_one_directory_bounded_memory)
{
  run_both(c_spellings_rss);
}
