/* The Slurm plugin's root side against security review 4 (issue 39): a FUSE mount the job's
 * user puts ON run_dir/JOBID, made as fusermount3 makes one (fake_fuse.h: the daemon is the
 * user's, and reports the owner and the files it likes), never makes root act as another
 * uid, kill what its files name, or wait for it; the epilog kills only the job's container
 * processes; and a lock any user can take holds no step. As root, each test in a mount
 * namespace of its own. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_fuse.h"
#include "harness.h"
#include "root/job_dir.h"
#include "base/util.h"

#define USER 65534 /* the job's user */
#define OTHER 4242 /* another user of the node */

static void own_namespace(void)
{
  if (geteuid() != 0)
    th_fail(__FILE__, __LINE__, "needs root (scripts/test runs as root)");
  CHECK(unshare(CLONE_NEWNS) == 0);
  CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  alarm(90);
}

/* DIR/run (root's, 0755) opened as the plugin opens it; its path into run. */
static int run_dir(char *run, size_t len)
{
  CHECK((size_t)snprintf(run, len, "%s/run", th_tmpdir()) < len);
  int fd = -1;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_slurm_run_dir_open(&fd, run, 1, &err), 0);
  return fd;
}

/* run/JOB as a step start makes it (the user's, 0700); its path into jobdir. */
static void job_dir(int run_fd, const char *run, int job, char *jobdir, size_t len)
{
  fpull_err err = {0};
  CHECK_INT_EQ(fp_slurm_job_dir_create(run_fd, (uint32_t)job, USER, USER, 5, &err), 0);
  CHECK((size_t)snprintf(jobdir, len, "%s/%d", run, job) < len);
}

/* The job's epilog, as slurmd runs it: the job's ids are Slurm's. */
static int epilog(int run_fd, const char *run, int job, int timeout, fpull_err *err)
{
  return fp_slurm_job_dir_remove(run_fd, run, (uint32_t)job, USER, USER, timeout, err);
}

/* A process of uid's (in a user namespace of its own with userns: as a container's), a
 * fresh program so that it is dumpable as any of the user's. */
static pid_t process_of(uid_t uid, int userns)
{
  int ready[2];
  CHECK(pipe2(ready, O_CLOEXEC) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    if ((uid && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                 setresuid(uid, uid, uid) < 0)) ||
        (userns && unshare(CLONE_NEWUSER) < 0))
      _exit(1);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execl("/bin/sleep", "sleep", "300", (char *)NULL);
    _exit(1);
  }
  close(ready[1]);
  char b;
  CHECK(read(ready[0], &b, 1) == 0); /* closed by the exec */
  close(ready[0]);
  return pid;
}

/* Alive (not even a zombie), after a moment for a signal to land. */
static int alive(pid_t pid)
{
  struct timespec t = {0, 200 * 1000 * 1000};
  nanosleep(&t, NULL);
  return waitpid(pid, NULL, WNOHANG) == 0;
}

static void end(pid_t pid)
{
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

static void write_user_file(const char *path, const void *data, size_t len)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  CHECK(fd >= 0);
  CHECK(write(fd, data, len) == (ssize_t)len);
  CHECK(fchown(fd, USER, USER) == 0);
  close(fd);
}

/* The job directory is gone: no mount on it, and no directory under it (an lstat that
 * went into a mount root may not enter could not tell). */
static int gone(const char *jobdir)
{
  struct stat st;
  return !fake_fuse_is_mounted(jobdir) && lstat(jobdir, &st) < 0 && errno == ENOENT;
}

/* Review 4, HIGH 1: the daemon says the job directory is OTHER's and its step's info names
 * OTHER's process: the epilog removed as that uid and killed it. */
TEST(epilog_kills_nothing_a_fuse_mount_on_the_job_directory_names)
{
  own_namespace();
  char run[4096], jobdir[4200];
  int run_fd = run_dir(run, sizeof run);
  job_dir(run_fd, run, 60, jobdir, sizeof jobdir);
  pid_t victim = process_of(OTHER, 0);
  struct fake_fuse how = {
      .user = USER, .reported = OTHER, .victim = victim, .step = "1", .allow_other = 1};
  pid_t daemon = fake_fuse_mount(jobdir, &how);
  fpull_err err = {0};
  epilog(run_fd, run, 60, 5, &err);
  CHECK(alive(victim));
  CHECK(gone(jobdir));
  end(victim);
  fake_fuse_stop(daemon);
  close(run_fd);
}

/* Review 4, HIGH 1: the daemon says the job directory is root's: the next step start's
 * removal of what it took for a stale directory stayed root and killed root's process. */
TEST(step_start_kills_nothing_a_fuse_mount_on_the_job_directory_names)
{
  own_namespace();
  char run[4096], jobdir[4200];
  int run_fd = run_dir(run, sizeof run);
  job_dir(run_fd, run, 61, jobdir, sizeof jobdir);
  pid_t victim = process_of(0, 0);
  struct fake_fuse how = {
      .user = USER, .reported = 0, .victim = victim, .step = "1", .allow_other = 1};
  pid_t daemon = fake_fuse_mount(jobdir, &how);
  fpull_err err = {0};
  int rc = fp_slurm_job_dir_create(run_fd, 61, USER, USER, 5, &err);
  CHECK(alive(victim));
  CHECK_INT_EQ(rc, 0);
  /* The step runs in the job directory root made, not in the user's mount over it. */
  CHECK(!fake_fuse_is_mounted(jobdir));
  struct stat st, rst;
  CHECK(lstat(jobdir, &st) == 0 && fstat(run_fd, &rst) == 0);
  CHECK(st.st_dev == rst.st_dev);
  CHECK_INT_EQ(st.st_uid, USER);
  CHECK_INT_EQ(st.st_mode & 07777, 0700);
  end(victim);
  fake_fuse_stop(daemon);
  close(run_fd);
}

/* Review 4, HIGH 1: a daemon that reads every request and answers none: whoever asks it
 * waits where no signal ends the wait. The epilog asks it nothing and ends by its deadline. */
TEST(epilog_ends_by_its_deadline_on_a_silent_fuse_mount_on_the_job_directory)
{
  own_namespace();
  char run[4096], jobdir[4200];
  int run_fd = run_dir(run, sizeof run);
  job_dir(run_fd, run, 62, jobdir, sizeof jobdir);
  struct fake_fuse how = {
      .user = USER, .reported = USER, .step = "1", .allow_other = 1, .silent = 1};
  pid_t daemon = fake_fuse_mount(jobdir, &how);
  /* Timed from outside: a process stuck on the mount is not one the test could end. */
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    fpull_err err = {0};
    epilog(run_fd, run, 62, 2, &err);
    _exit(0);
  }
  int done = 0;
  for (int i = 0; i < 60 && !done; i++) {
    done = waitpid(child, NULL, WNOHANG) == child;
    if (!done) {
      struct timespec t = {0, 100 * 1000 * 1000};
      nanosleep(&t, NULL);
    }
  }
  /* Ending the daemon aborts its connection: a child stuck on it ends too. */
  fake_fuse_stop(daemon);
  if (!done)
    waitpid(child, NULL, 0);
  CHECK(done);
  CHECK(gone(jobdir));
  close(run_fd);
}

/* Review 4, HIGH 1: without allow_other root may not even look into the mount: the epilog
 * left the mount and the directory, and said nothing. */
TEST(epilog_removes_a_job_directory_under_a_mount_root_may_not_enter)
{
  own_namespace();
  char run[4096], jobdir[4200];
  int run_fd = run_dir(run, sizeof run);
  job_dir(run_fd, run, 63, jobdir, sizeof jobdir);
  struct fake_fuse how = {.user = USER, .reported = USER, .step = "1"};
  pid_t daemon = fake_fuse_mount(jobdir, &how);
  fpull_err err = {0};
  epilog(run_fd, run, 63, 5, &err);
  CHECK(gone(jobdir));
  fake_fuse_stop(daemon);
  close(run_fd);
}

/* Review 4, HIGH 1: the info file is the user's to write: the epilog kills the holders it
 * names (processes of the job's uid in a user namespace, as a container's are), never the
 * user's other processes. */
TEST(epilog_kills_only_the_jobs_container_processes)
{
  own_namespace();
  char run[4096], jobdir[4200], step[4300], info[4400], recs[64];
  int run_fd = run_dir(run, sizeof run);
  job_dir(run_fd, run, 64, jobdir, sizeof jobdir);
  snprintf(step, sizeof step, "%s/1", jobdir);
  CHECK(mkdir(step, 0700) == 0 && chown(step, USER, USER) == 0);
  pid_t shell = process_of(USER, 0), holder = process_of(USER, 1);
  int n = snprintf(recs, sizeof recs, "P%d", (int)shell);
  n += 1 + snprintf(recs + n + 1, sizeof recs - (size_t)n - 1, "Q%d", (int)holder);
  snprintf(info, sizeof info, "%s/info", step);
  write_user_file(info, recs, (size_t)n + 1);
  fpull_err err = {0};
  CHECK_INT_EQ(epilog(run_fd, run, 64, 5, &err), 0);
  CHECK(alive(shell));
  CHECK(!alive(holder));
  CHECK(gone(jobdir));
  end(shell);
  end(holder);
  close(run_fd);
}

/* Review 4, MEDIUM 3: step starts took flock(LOCK_EX) on run_dir, which any user may open:
 * a user who held it held every step of the node. */
TEST(a_lock_any_user_can_take_holds_no_step)
{
  own_namespace();
  /* run_dir's parents are open to every user, as they are on a node. */
  CHECK(chmod(th_tmpdir(), 0755) == 0);
  char run[4096];
  int run_fd = run_dir(run, sizeof run);
  int ready[2];
  CHECK(pipe(ready) == 0);
  pid_t holder = fork();
  CHECK(holder >= 0);
  if (holder == 0) {
    if (setgroups(0, NULL) < 0 || setresgid(USER, USER, USER) < 0 ||
        setresuid(USER, USER, USER) < 0)
      _exit(1);
    int fd = open(run, O_RDONLY | O_DIRECTORY);
    if (fd < 0 || flock(fd, LOCK_EX) < 0)
      _exit(1);
    if (write(ready[1], "x", 1) != 1)
      _exit(1);
    sleep(20);
    _exit(0);
  }
  close(ready[1]);
  char b;
  CHECK(read(ready[0], &b, 1) == 1);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    fpull_err err = {0};
    _exit(fp_slurm_job_dir_create(run_fd, 65, USER, USER, 5, &err) & 0xff);
  }
  int status = -1, done = 0;
  for (int i = 0; i < 50 && !done; i++) {
    done = waitpid(child, &status, WNOHANG) == child;
    if (!done) {
      struct timespec t = {0, 100 * 1000 * 1000};
      nanosleep(&t, NULL);
    }
  }
  end(holder);
  if (!done)
    waitpid(child, &status, 0);
  CHECK(done);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close(run_fd);
}

/* Review 4, MEDIUM 3: what step starts of a job do wait for (each other) is waited for only
 * so long, and the step says why it gave up. */
TEST(a_step_waits_for_its_jobs_lock_only_so_long)
{
  own_namespace();
  char run[4096], lock[4200];
  int run_fd = run_dir(run, sizeof run);
  snprintf(lock, sizeof lock, "%s/66.lock", run);
  int fd = open(lock, O_RDWR | O_CREAT | O_EXCL, 0600);
  CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  fpull_err err = {0};
  CHECK(fp_slurm_job_dir_create(run_fd, 66, USER, USER, 1, &err) != 0);
  clock_gettime(CLOCK_MONOTONIC, &b);
  CHECK(b.tv_sec - a.tv_sec < 10);
  CHECK_CONTAINS(err.msg, "another step of job 66");
  close(fd);
  err = (fpull_err){0};
  CHECK_INT_EQ(fp_slurm_job_dir_create(run_fd, 66, USER, USER, 1, &err), 0);
  /* The epilog leaves nothing in run_dir. */
  CHECK_INT_EQ(epilog(run_fd, run, 66, 5, &err), 0);
  CHECK_INT_EQ(th_count_entries(run), 0);
  close(run_fd);
}
