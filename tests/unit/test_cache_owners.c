/* Whose cache fpull writes into (issue 39, security review 4): never a cache root, nor a
 * directory of its layout, that another user made first (a squatted shared_cache=DIR/UID
 * would see every private image its victim pulls); in a group cache every directory is
 * sticky and a name another member took first never denies a pull. As root, each user a
 * child of its own. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/digest.h"
#include "fpull/cache.h"
#include "harness.h"

#define USER 65534 /* the victim, or a member */
#define OTHER 4242 /* the squatter, or another member */
#define GROUP 4243 /* the group cache's group */
#define BLOB "private layer bytes of the victim's image"

static void need_root(void)
{
  if (geteuid() != 0)
    th_fail(__FILE__, __LINE__, "needs root (scripts/test runs as root)");
  /* Every user may reach the test's directories, as they may a site's cache. */
  CHECK(chmod(th_tmpdir(), 0755) == 0);
}

static char *path_in(const char *dir, const char *rel)
{
  char *p = NULL;
  CHECK(asprintf(&p, "%s/%s", dir, rel) > 0);
  return p;
}

/* Runs fn(dir) in a child that is uid (in GROUP too), umask 002; its exit status. */
static int as_user(uid_t uid, int (*fn)(const char *), const char *dir)
{
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    gid_t g = GROUP;
    if (setgroups(1, &g) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
      _exit(100);
    umask(002);
    _exit(fn(dir));
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  return WEXITSTATUS(status);
}

/* Opens the cache at dir and stores BLOB: 0, 1 when the open is refused for another
 * user's directory, 2 for any other failure. */
static int pull_into(const char *dir)
{
  fpull_cache *c = NULL;
  fpull_err err = {0};
  if (fpull_cache_open(&c, dir, &err) != 0) {
    fprintf(stderr, "open: %s\n", err.msg);
    return strstr(err.msg, "neither yours nor root's") ? 1 : 2;
  }
  /* Each user's own bytes: a blob another stored already would need no writing. */
  char blob[128];
  snprintf(blob, sizeof blob, "%s of uid %u", BLOB, (unsigned)getuid());
  char *digest = fp_digest_of_like("sha256:", blob, strlen(blob));
  int rc = fpull_cache_put_bytes(c, digest, blob, strlen(blob), &err);
  if (rc)
    fprintf(stderr, "put: %s\n", err.msg);
  free(digest);
  fpull_cache_free(c);
  return rc ? 2 : 0;
}

static int mkdir_owned(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
  CHECK(mkdir(path, 0700) == 0);
  CHECK(chown(path, uid, gid) == 0);
  CHECK(chmod(path, mode) == 0);
  return 0;
}

/* Review 4, HIGH 2: another user made DIR/<victim's uid> first (DIR 1777, as the docs had
 * it), open to the victim: the victim's pull wrote its blobs there, 0644, for the squatter
 * to read. */
TEST(a_cache_root_another_user_made_is_never_written)
{
  need_root();
  char *dir = path_in(th_tmpdir(), "65534");
  mkdir_owned(dir, 01777, OTHER, OTHER);
  CHECK_INT_EQ(as_user(USER, pull_into, dir), 1);
  CHECK_INT_EQ(th_count_entries(dir), 0);
  free(dir);
}

/* Review 4, HIGH 2: in a cache root others may add to, a layout directory another user
 * made first (blobs/) is theirs to read, empty or close: never written into. */
TEST(a_layout_directory_another_user_made_is_never_written)
{
  need_root();
  char *dir = path_in(th_tmpdir(), "open");
  char *blobs = path_in(dir, "blobs");
  mkdir_owned(dir, 01777, 0, 0);
  mkdir_owned(blobs, 0777, OTHER, OTHER);
  CHECK_INT_EQ(as_user(USER, pull_into, dir), 1);
  CHECK_INT_EQ(th_count_entries(blobs), 0);
  free(blobs);
  free(dir);
}

static int squat_private_dir(const char *dir)
{
  /* A member takes the other member's private working directory name first. */
  char *p = path_in(dir, "tmp/u65534");
  int rc = mkdir(p, 0700) == 0 ? 0 : 3;
  free(p);
  return rc;
}

/* Review 4, LOW 7: a group cache (root's, 2775, the group's): a member's first pull makes
 * the layout, and every directory of it others may write is sticky; a member who takes
 * another's tmp/uUID first denies that member nothing. */
TEST(group_cache_members_never_deny_each_other)
{
  need_root();
  char *dir = path_in(th_tmpdir(), "group");
  mkdir_owned(dir, 02775, 0, GROUP);
  CHECK_INT_EQ(as_user(OTHER, pull_into, dir), 0);
  CHECK_INT_EQ(as_user(OTHER, squat_private_dir, dir), 0);
  CHECK_INT_EQ(as_user(USER, pull_into, dir), 0);
  CHECK_INT_EQ(as_user(USER, pull_into, dir), 0);
  const char *layout[] = {"blobs", "blobs/sha256", "tmp", "locks", "tags"};
  for (size_t i = 0; i < sizeof layout / sizeof layout[0]; i++) {
    char *p = path_in(dir, layout[i]);
    struct stat st;
    CHECK(lstat(p, &st) == 0);
    if (!(st.st_mode & S_ISVTX))
      th_fail(__FILE__, __LINE__, "%s: mode %04o, not sticky", layout[i],
              (unsigned)(st.st_mode & 07777));
    free(p);
  }
  /* The member's own working directory is another name of theirs alone. */
  char *tmp = path_in(dir, "tmp");
  CHECK_INT_EQ(th_count_entries(tmp), 3);
  free(tmp);
  free(dir);
}
