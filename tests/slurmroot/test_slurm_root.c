/* The Slurm plugin's root side against a job's user (security review 3): the epilog's
 * unmount follows neither a mount source dressed as a path nor a renamed directory, its
 * removal never enters a mount point and ends by its deadline, and run_dir is refused
 * under a directory others can write. As root, each test in a mount namespace of its own
 * (nothing it mounts reaches the host). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "root/job_dir.h"
#include "base/util.h"

#define USER 65534

/* A mount namespace of our own, nothing propagated back; a stuck test fails, not hangs. */
static void own_namespace(void)
{
  if (geteuid() != 0)
    th_fail(__FILE__, __LINE__, "needs root (scripts/test runs as root)");
  CHECK(unshare(CLONE_NEWNS) == 0);
  CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  alarm(60);
}

/* DIR/run (root's, 0755) and DIR/run/JOB (the user's, 0700), as the plugin makes them. */
static int job_dir(const char *dir, int job, char *jobdir, size_t len)
{
  char run[4096];
  snprintf(run, sizeof run, "%s/run", dir);
  CHECK(mkdir(run, 0755) == 0 || errno == EEXIST);
  int fd = -1;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_slurm_run_dir_open(&fd, run, 0, &err), 0);
  CHECK_INT_EQ(fp_slurm_job_dir_create(fd, (uint32_t)job, USER, USER, 5, &err), 0);
  CHECK((size_t)snprintf(jobdir, len, "%.4000s/%d", run, job) < len);
  return fd;
}

static void mkdir_as_user(const char *path)
{
  CHECK(mkdir(path, 0700) == 0);
  CHECK(chown(path, USER, USER) == 0);
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  CHECK(fclose(f) == 0);
}

static int exists(const char *path)
{
  struct stat st;
  return lstat(path, &st) == 0;
}

/* Finding 1: a mount point so long that its mountinfo line exceeds 8192 bytes, whose
 * source (chosen by the user, as fsname= of a FUSE mount) reads like a path under the job
 * directory that leads to a host mount. */
TEST(epilog_unmount_ignores_a_source_dressed_as_a_path)
{
  own_namespace();
  const char *t = th_tmpdir();
  char target[4096], keep[4200], jobdir[4096], path[8192], source[8192];
  snprintf(target, sizeof target, "%s/target", t);
  CHECK(mkdir(target, 0755) == 0);
  CHECK(mount("host", target, "tmpfs", 0, "size=1m") == 0);
  snprintf(keep, sizeof keep, "%s/keep", target);
  write_file(keep, "host data\n");
  int run_fd = job_dir(t, 42, jobdir, sizeof jobdir);
  size_t off = (size_t)snprintf(path, sizeof path, "%s", jobdir);
  for (int level = 0; level < 9; level++) {
    path[off++] = '/';
    memset(path + off, ' ', 250);
    off += 250;
    path[off] = '\0';
    mkdir_as_user(path);
  }
  snprintf(source, sizeof source, "%s/../../target", jobdir);
  CHECK(mount(source, path, "tmpfs", 0, "size=1m") == 0);
  char run[4096];
  snprintf(run, sizeof run, "%s/run", t);
  fpull_err err = {0};
  fp_slurm_job_dir_remove(run_fd, run, 42, USER, USER, 5, &err);
  CHECK(exists(keep));
  CHECK(!exists(jobdir));
  close(run_fd);
}

/* Finding 1: a parent of a listed mount point swapped for a symlink to a host directory
 * between the epilog's reading of mountinfo and its unmount (here: before the epilog, the
 * mount moved along with its directory). */
TEST(epilog_unmount_does_not_follow_a_renamed_parent)
{
  own_namespace();
  const char *t = th_tmpdir();
  char jobdir[4096], a[4200], b[4200], m[4300], host[4096], hostm[4200], keep[4300];
  int run_fd = job_dir(t, 43, jobdir, sizeof jobdir);
  snprintf(host, sizeof host, "%s/host", t);
  snprintf(hostm, sizeof hostm, "%s/m", host);
  CHECK(mkdir(host, 0755) == 0 && mkdir(hostm, 0755) == 0);
  CHECK(mount("host", hostm, "tmpfs", 0, "size=1m") == 0);
  snprintf(keep, sizeof keep, "%s/keep", hostm);
  write_file(keep, "host data\n");
  snprintf(a, sizeof a, "%s/a", jobdir);
  snprintf(b, sizeof b, "%s/b", jobdir);
  snprintf(m, sizeof m, "%s/m", a);
  mkdir_as_user(a);
  mkdir_as_user(m);
  CHECK(mount("user", m, "tmpfs", 0, "size=1m") == 0);
  /* What the user does: a/ becomes b/, and a is a symlink to the host's directory. */
  CHECK(rename(a, b) == 0);
  CHECK(symlink(host, a) == 0);
  char run[4096];
  snprintf(run, sizeof run, "%s/run", t);
  fpull_err err = {0};
  fp_slurm_job_dir_remove(run_fd, run, 43, USER, USER, 5, &err);
  CHECK(exists(keep));
  close(run_fd);
}

/* Finding 2: what is mounted in the job directory after the unmount (renamed in, or the
 * unmount not allowed) is never entered: its files stay, and the removal says so. */
TEST(removal_never_enters_a_mount_point)
{
  own_namespace();
  const char *t = th_tmpdir();
  char jobdir[4096], sub[4200], mnt[4300], precious[4400];
  int run_fd = job_dir(t, 44, jobdir, sizeof jobdir);
  snprintf(sub, sizeof sub, "%s/sub", jobdir);
  snprintf(mnt, sizeof mnt, "%s/mnt", sub);
  mkdir_as_user(sub);
  mkdir_as_user(mnt);
  CHECK(mount("other", mnt, "tmpfs", 0, "size=1m,mode=0777") == 0);
  snprintf(precious, sizeof precious, "%s/precious", mnt);
  write_file(precious, "not the job's\n");
  CHECK(chown(precious, USER, USER) == 0);
  char other[4300];
  snprintf(other, sizeof other, "%s/file", sub);
  write_file(other, "the job's\n");
  CHECK(chown(other, USER, USER) == 0);
  fpull_err err = {0};
  int rc = fp_slurm_job_dir_remove(run_fd, NULL, 44, USER, USER, 5, &err);
  CHECK(rc != 0);
  CHECK(strstr(err.msg, "left in place") != NULL);
  CHECK(exists(precious));
  CHECK(!exists(other));
  umount2(mnt, MNT_DETACH);
  close(run_fd);
}

/* Finding 2: a FUSE mount whose daemon never answers, in the job directory: the removal
 * ends by its deadline, well below Slurm's PrologEpilogTimeout, and says what stays. */
TEST(removal_ends_by_its_deadline_on_a_fuse_mount_that_never_answers)
{
  own_namespace();
  const char *t = th_tmpdir();
  char jobdir[4096], dead[4200];
  int run_fd = job_dir(t, 45, jobdir, sizeof jobdir);
  snprintf(dead, sizeof dead, "%s/dead", jobdir);
  mkdir_as_user(dead);
  int fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  CHECK(fuse >= 0);
  char opts[128];
  snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=%d,group_id=%d,allow_other", fuse, USER,
           USER);
  CHECK(mount("fpull-test", dead, "fuse", MS_NOSUID | MS_NODEV, opts) == 0);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  fpull_err err = {0};
  int rc = fp_slurm_job_dir_remove(run_fd, NULL, 45, USER, USER, 2, &err);
  clock_gettime(CLOCK_MONOTONIC, &b);
  CHECK(rc != 0);
  CHECK(b.tv_sec - a.tv_sec <= 4);
  /* Not even the deadline was needed: nothing asked the mount anything. */
  CHECK(strstr(err.msg, "left in place") != NULL);
  CHECK(exists(jobdir));
  umount2(dead, MNT_DETACH);
  close(fuse);
  close(run_fd);
}

/* Finding 6: a run_dir whose parent others can write could be made by anyone first. */
TEST(run_dir_refused_under_a_directory_others_can_write)
{
  const char *t = th_tmpdir();
  char open_dir[4096], run[4200];
  snprintf(open_dir, sizeof open_dir, "%s/open", t);
  CHECK(mkdir(open_dir, 0755) == 0 && chmod(open_dir, 0777) == 0);
  snprintf(run, sizeof run, "%s/run", open_dir);
  int fd = -1;
  fpull_err err = {0};
  CHECK(fp_slurm_run_dir_open(&fd, run, 1, &err) != 0);
  CHECK(strstr(err.msg, "writable by others") != NULL);
  CHECK(strstr(err.msg, open_dir) != NULL);
  CHECK(!exists(run));
  /* A sticky directory higher up (/tmp) is fine: its entries only their owner can move. */
  CHECK(chmod(open_dir, 0755) == 0);
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(fp_slurm_run_dir_open(&fd, run, 1, &err), 0);
  close(fd);
}

/* Issue 41's bench: the nodes of one job make DIR/UID at the same moment; none may find it
 * root's half-made and refuse it. Many makers at once, many times: every one gets the
 * user's directory. */
TEST(site_user_dir_made_by_many_at_once_is_never_seen_half_made)
{
  own_namespace();
  char tmpl[] = "/tmp/fpull-siteuser-XXXXXX";
  CHECK(mkdtemp(tmpl) != NULL);
  CHECK(chmod(tmpl, 0755) == 0);
  char dir[64], user[96];
  CHECK((size_t)snprintf(dir, sizeof dir, "%s/site", tmpl) < sizeof dir);
  CHECK((size_t)snprintf(user, sizeof user, "%s/%d", dir, USER) < sizeof user);
  CHECK(mkdir(dir, 0755) == 0);
  enum { MAKERS = 8, ROUNDS = 150 };
  int refused = 0;
  for (int round = 0; round < ROUNDS; round++) {
    rmdir(user);
    pid_t pids[MAKERS];
    for (int i = 0; i < MAKERS; i++) {
      pids[i] = fork();
      CHECK(pids[i] >= 0);
      if (pids[i] == 0) {
        fpull_err err = {0};
        _exit(fp_slurm_site_user_dir("sqsh_store", dir, USER, USER, &err) == 0 ? 0 : 1);
      }
    }
    for (int i = 0; i < MAKERS; i++) {
      int status = 0;
      CHECK(waitpid(pids[i], &status, 0) == pids[i]);
      refused += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    struct stat st;
    CHECK(stat(user, &st) == 0);
    CHECK_INT_EQ((int)st.st_uid, USER);
    CHECK_INT_EQ((int)(st.st_mode & 07777), 0700);
  }
  CHECK_INT_EQ(refused, 0);
  /* No maker's own name is left beside it. */
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int entries = 0;
  for (struct dirent *de; (de = readdir(d)) != NULL;)
    entries += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
  closedir(d);
  CHECK_INT_EQ(entries, 1);
  CHECK(rmdir(user) == 0);
  CHECK(rmdir(dir) == 0);
  CHECK(rmdir(tmpl) == 0);
}
