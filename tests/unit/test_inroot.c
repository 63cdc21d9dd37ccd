/* The in-root resolver on its own: name cleaning, symlink resolution as if the root were
 * "/", loops, creation of missing parents, and the no-follow recursive remove. Each
 * resolution case runs with openat2 and with the O_NOFOLLOW walk. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "unpack/inroot.h"
#include "base/util.h"

static void clean_ok(const char *in, const char *want)
{
  char out[FP_PATH_MAX + 1];
  const char *why = NULL;
  if (fp_path_clean(in, out, &why) != 0)
    th_fail(__FILE__, __LINE__, "clean(%s) failed: %s", in, why);
  CHECK_STR_EQ(out, want);
}

static void clean_bad(const char *in, const char *want_why)
{
  char out[FP_PATH_MAX + 1];
  const char *why = NULL;
  CHECK_INT_EQ(fp_path_clean(in, out, &why), -1);
  CHECK_CONTAINS(why, want_why);
}

TEST(clean_names)
{
  clean_ok("a/b", "a/b");
  clean_ok("/etc/passwd", "etc/passwd");
  clean_ok("//etc//x", "etc/x");
  clean_ok("./a/./b/", "a/b");
  clean_ok(".", "");
  clean_ok("./", "");
  clean_ok("/", "");
  clean_ok("...", "...");
  clean_ok("a/..b/c..", "a/..b/c..");
  clean_bad("..", ".. component");
  clean_bad("../x", ".. component");
  clean_bad("a/../b", ".. component");
  clean_bad("/../x", ".. component");
  clean_bad("a/..", ".. component");
  char longc[300];
  memset(longc, 'x', 299);
  longc[299] = '\0';
  clean_bad(longc, "longer than 255");
  char *longp = fp_xmalloc(5000);
  for (int i = 0; i < 4999; i++)
    longp[i] = i % 2 ? '/' : 'a';
  longp[4999] = '\0';
  clean_bad(longp, "too long");
  free(longp);
}

static char root[4096];
static int rootfd = -1;

static void fresh_root(void)
{
  static int n;
  snprintf(root, sizeof root, "%.3000s/root%d", th_tmpdir(), n++);
  CHECK(mkdir(root, 0700) == 0);
  if (rootfd >= 0)
    close(rootfd);
  rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  CHECK(rootfd >= 0);
}

static void sh(const char *cmd)
{
  char full[8192];
  snprintf(full, sizeof full, "cd '%s' && %s", root, cmd);
  if (system(full) != 0)
    th_fail(__FILE__, __LINE__, "command failed: %s", cmd);
}

/* fd must be the object at root/rel (same inode). */
static void same(int fd, const char *rel)
{
  struct stat a, b;
  char p[8192];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  CHECK(fd >= 0);
  CHECK(fstat(fd, &a) == 0);
  CHECK(lstat(p, &b) == 0);
  if (a.st_ino != b.st_ino)
    th_fail(__FILE__, __LINE__, "resolved to another inode than %s", rel);
  close(fd);
}

static void resolution(int fb)
{
  struct fp_root r;
  const char *base;
  fresh_root();
  fp_root_init(&r, rootfd, fb);
  if (fb)
    CHECK_INT_EQ(r.fallback, 1);
  else if (r.fallback)
    fprintf(stderr, "openat2 unavailable here: this run used the walk too\n");
  sh("mkdir -p etc usr/lib a/b && touch etc/passwd && ln -s /etc evil && ln -s ../../.. up"
     " && ln -s usr/lib lib && ln -s loop1 loop2 && ln -s loop2 loop1 && ln -s etc/passwd pw"
     " && ln -s a/b/../../etc rel");
  same(fp_inroot_parent(&r, "evil/passwd", 0, &base), "etc");
  CHECK_STR_EQ(base, "passwd");
  same(fp_inroot_open(&r, "evil/passwd", 0), "etc/passwd");
  same(fp_inroot_open(&r, "up", 0), ".");
  same(fp_inroot_open(&r, "up/up/etc", 0), "etc");
  same(fp_inroot_open(&r, "lib", 0), "usr/lib");
  same(fp_inroot_open(&r, "lib", 1), "lib");
  same(fp_inroot_open(&r, "pw", 0), "etc/passwd");
  same(fp_inroot_open(&r, "pw", 1), "pw");
  same(fp_inroot_open(&r, "rel", 0), "etc");
  same(fp_inroot_open(&r, "", 0), ".");
  CHECK_INT_EQ(fp_inroot_open(&r, "loop1", 0), -1);
  CHECK_INT_EQ(errno, ELOOP);
  CHECK_INT_EQ(fp_inroot_parent(&r, "loop1/x", 1, &base), -1);
  CHECK_INT_EQ(errno, ELOOP);
  CHECK_INT_EQ(fp_inroot_parent(&r, "etc/passwd/x", 1, &base), -1);
  CHECK_INT_EQ(errno, ENOTDIR);
  CHECK_INT_EQ(fp_inroot_open(&r, "nothere", 0), -1);
  CHECK_INT_EQ(errno, ENOENT);
  CHECK_INT_EQ(fp_inroot_parent(&r, "nothere/x", 0, &base), -1);
  CHECK_INT_EQ(errno, ENOENT);
  /* Missing parents are made where the symlinks lead, inside the root. */
  sh("mkdir var && ln -s /run var/run");
  same(fp_inroot_parent(&r, "var/run/x/y/file", 1, &base), "run/x/y");
  same(fp_inroot_parent(&r, "up/evil/new/f", 1, &base), "etc/new");
  close(rootfd);
  rootfd = -1;
}
TEST(resolution_openat2)
{
  resolution(0);
}
TEST(resolution_walk)
{
  resolution(1);
}

/* 40 links are followed, the 41st is refused: the same for both resolvers. */
static void hops(int fb)
{
  struct fp_root r;
  fresh_root();
  fp_root_init(&r, rootfd, fb);
  sh("mkdir d && ln -s d l0 && for i in $(seq 1 40); do ln -s l$((i-1)) l$i; done");
  same(fp_inroot_open(&r, "l39", 0), "d");
  CHECK_INT_EQ(fp_inroot_open(&r, "l40", 0), -1);
  CHECK_INT_EQ(errno, ELOOP);
}
TEST(symlink_hop_limit_openat2)
{
  hops(0);
}
TEST(symlink_hop_limit_walk)
{
  hops(1);
}

TEST(rm_rf_never_follows)
{
  fresh_root();
  sh("mkdir -p outside/keep t/a/b t/ro/sub && touch outside/keep/f t/a/b/f t/ro/sub/g"
     " && ln -s ../outside t/link && ln -s ../outside/keep/f t/a/flink && chmod 0500 t/ro/sub"
     " && chmod 0000 t/ro");
  CHECK_INT_EQ(fp_rm_rf_at(rootfd, "t"), 0);
  struct stat st;
  char p[8192];
  snprintf(p, sizeof p, "%s/t", root);
  CHECK(lstat(p, &st) != 0);
  snprintf(p, sizeof p, "%s/outside/keep/f", root);
  CHECK(lstat(p, &st) == 0);
  CHECK_INT_EQ(fp_rm_rf_at(rootfd, "nothere"), 0);
  sh("ln -s outside lnk");
  CHECK_INT_EQ(fp_rm_rf_at(rootfd, "lnk"), 0);
  snprintf(p, sizeof p, "%s/outside/keep/f", root);
  CHECK(lstat(p, &st) == 0);
}

/* Far deeper than PATH_MAX or the fd limit: removed without recursion. */
TEST(rm_rf_deep_tree)
{
  fresh_root();
  int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY);
  CHECK(mkdirat(fd, "deep", 0755) == 0);
  int cur = openat(fd, "deep", O_RDONLY | O_DIRECTORY);
  for (int i = 0; i < 1200; i++) {
    CHECK(mkdirat(cur, "aaaaaaaaaa", 0755) == 0);
    int n = openat(cur, "aaaaaaaaaa", O_RDONLY | O_DIRECTORY);
    CHECK(n >= 0);
    close(cur);
    cur = n;
  }
  close(cur);
  CHECK_INT_EQ(fp_rm_rf_at(fd, "deep"), 0);
  struct stat st;
  CHECK(fstatat(fd, "deep", &st, AT_SYMLINK_NOFOLLOW) != 0);
  close(fd);
}

/* Another user renames a directory out of the tree while it is being removed (issue 11.1):
 * coming back up through ".." must never reach the directory it was moved into, nor
 * anything above. Each round: R/dest/tmp/a/b holds many files; a child waits until the
 * removal has started inside b and renames b into R/hold, which holds the victim files;
 * R/victim is a second victim one level further up. */
static int race_round(int rfd, int files)
{
  char p[64];
  CHECK(mkdirat(rfd, "dest", 0755) == 0 && mkdirat(rfd, "dest/tmp", 01777) == 0 &&
        mkdirat(rfd, "dest/tmp/a", 0755) == 0 && mkdirat(rfd, "dest/tmp/a/b", 0755) == 0 &&
        mkdirat(rfd, "dest/tmp/a/b/c", 0755) == 0);
  for (int i = 0; i < files; i++) {
    snprintf(p, sizeof p, "dest/tmp/a/b/f%04d", i);
    int fd = openat(rfd, p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    close(fd);
  }
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    /* Rename as soon as any file of b is gone: the remover is inside b then. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
      for (int i = 0; i < files; i += 7) {
        struct stat st;
        snprintf(p, sizeof p, "dest/tmp/a/b/f%04d", i);
        if (fstatat(rfd, p, &st, AT_SYMLINK_NOFOLLOW) < 0)
          _exit(renameat(rfd, "dest/tmp/a/b", rfd, "hold/b") == 0 ? 0 : 1);
      }
      clock_gettime(CLOCK_MONOTONIC, &t);
      if (t.tv_sec - t0.tv_sec > 5)
        _exit(2);
    }
  }
  int rc = fp_rm_rf_at(rfd, "dest"), saved = errno;
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  if (rc < 0)
    CHECK_INT_EQ(saved, EXDEV);
  /* Both victims are whole. */
  for (int i = 0; i < 4; i++) {
    struct stat st;
    snprintf(p, sizeof p, "hold/h%d", i);
    CHECK(fstatat(rfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0);
    snprintf(p, sizeof p, "victim/v%d", i);
    CHECK(fstatat(rfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0);
  }
  CHECK_INT_EQ(fp_rm_rf_at(rfd, "hold/b"), 0);
  CHECK_INT_EQ(fp_rm_rf_at(rfd, "dest"), 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(rm_rf_racing_rename_never_climbs_out)
{
  fresh_root();
  int rfd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CHECK(rfd >= 0);
  sh("mkdir hold victim && touch hold/h0 hold/h1 hold/h2 hold/h3 victim/v0 victim/v1 victim/v2"
     " victim/v3");
  int moved = 0;
  for (int round = 0; round < 200; round++)
    moved += race_round(rfd, 300);
  /* The test means something only if the rename did land mid-removal. */
  fprintf(stderr, "renamed mid-removal in %d of 200 rounds\n", moved);
  CHECK(moved > 0);
  close(rfd);
}
