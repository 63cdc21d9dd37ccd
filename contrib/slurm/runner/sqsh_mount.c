/* fpull Slurm plugin: SquashFS images mounted with squashfuse and fuse-overlayfs (see
 * sqsh_mount.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fuse_unmount.h"
#include "common/run.h"
#include "sqsh_mount.h"
#include "base/util.h"

/* A mount that does not appear within this long is a daemon that failed. */
#define MOUNT_WAIT_MS 20000

int fp_slurm_sqsh_mountable(void)
{
  char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
  return fp_slurm_find_program("squashfuse", a, sizeof a) &&
         fp_slurm_find_program("fuse-overlayfs", b, sizeof b) &&
         fp_slurm_find_program("fusermount3", c, sizeof c) && access("/dev/fuse", R_OK | W_OK) == 0;
}

/* Starts argv in the background (stdin and stdout /dev/null, stderr to log); its pid. */
static pid_t start(char *const argv[], char *const envp[], const char *log)
{
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
  int err = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(err >= 0 ? err : nul, 2) < 0)
    _exit(127);
  execve(argv[0], argv, envp);
  _exit(127);
}

/* Waits until path is a mount point of its own (another device than its parent), or the
 * daemon pid has exited. 0 when mounted. */
static int wait_mounted(const char *path, const char *parent, pid_t pid)
{
  struct stat p;
  if (stat(parent, &p) < 0)
    return -1;
  for (int waited = 0; waited < MOUNT_WAIT_MS; waited += 5) {
    struct stat st;
    if (stat(path, &st) == 0 && st.st_dev != p.st_dev)
      return 0;
    if (waitpid(pid, NULL, WNOHANG) == pid)
      return -1;
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

/* Starts the FUSE daemon argv and waits until it has mounted point (in dir): its pid, or -1
 * with the daemon killed and why holding the last line it logged. */
static pid_t mount_with(char *const argv[], char *const envp[], const char *log, const char *point,
                        const char *dir, char *why, size_t len)
{
  pid_t pid = start(argv, envp, log);
  if (pid > 0 && wait_mounted(point, dir, pid) == 0)
    return pid;
  fp_slurm_log_last_line(log, why, len);
  if (pid > 0)
    kill(pid, SIGKILL);
  return -1;
}

int fp_slurm_overlay_mountable(void)
{
  char b[PATH_MAX], c[PATH_MAX];
  return fp_slurm_find_program("fuse-overlayfs", b, sizeof b) &&
         fp_slurm_find_program("fusermount3", c, sizeof c) && access("/dev/fuse", R_OK | W_OK) == 0;
}

static int make_dirs(const char *dir, const char *const *subdirs, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    cleanup_free char *p = fp_xasprintf("%s/%s", dir, subdirs[i]);
    if (mkdir(p, 0700) < 0 && errno != EEXIST) {
      fp_slurm_say("fpull: %s: %s", p, strerror(errno));
      return -1;
    }
  }
  return 0;
}

pid_t fp_slurm_overlay_mount(const char *lower, const char *dir, char *const envp[],
                             const char *what)
{
  char ov[PATH_MAX];
  if (!fp_slurm_find_program("fuse-overlayfs", ov, sizeof ov)) {
    fp_slurm_say("fpull: %s: fuse-overlayfs is not installed", what);
    return -1;
  }
  static const char *const subdirs[] = {"upper", "work", "rootfs"};
  if (make_dirs(dir, subdirs, sizeof subdirs / sizeof subdirs[0]) < 0)
    return -1;
  cleanup_free char *rootfs = fp_xasprintf("%s/rootfs", dir);
  cleanup_free char *log = fp_xasprintf("%s/mount.log", dir);
  cleanup_free char *opts =
      fp_xasprintf("lowerdir=%s,upperdir=%s/upper,workdir=%s/work", lower, dir, dir);
  const char *ova[] = {ov, "-f", "-o", opts, rootfs, NULL};
  char why[256];
  pid_t pid = mount_with((char *const *)ova, envp, log, rootfs, dir, why, sizeof why);
  if (pid < 0)
    fp_slurm_say("fpull: %s: cannot put a writable layer over the image (fuse-overlayfs%s%s)", what,
                 why[0] ? ": " : "", why);
  return pid;
}

int fp_slurm_sqsh_mount(const char *image, const char *dir, char *const envp[])
{
  char sq[PATH_MAX], ov[PATH_MAX];
  if (!fp_slurm_find_program("squashfuse", sq, sizeof sq) ||
      !fp_slurm_find_program("fuse-overlayfs", ov, sizeof ov)) {
    fp_slurm_say("fpull: %s: squashfuse or fuse-overlayfs is not installed", image);
    return -1;
  }
  static const char *const subdirs[] = {"lower"};
  if (make_dirs(dir, subdirs, 1) < 0)
    return -1;
  cleanup_free char *lower = fp_xasprintf("%s/lower", dir);
  cleanup_free char *log = fp_xasprintf("%s/mount.log", dir);
  /* Owned by the user, whom the container maps to its root: as unsquashfs run by the user
   * would have left them, and writable through the overlay. */
  cleanup_free char *ids = fp_xasprintf("uid=%u,gid=%u", (unsigned)getuid(), (unsigned)getgid());
  char why[256];
  const char *sqa[] = {sq, "-f", "-o", ids, image, lower, NULL};
  pid_t sp = mount_with((char *const *)sqa, envp, log, lower, dir, why, sizeof why);
  if (sp < 0) {
    fp_slurm_say("fpull: %s: cannot be mounted as a SquashFS file (squashfuse%s%s)", image,
                 why[0] ? ": " : "", why);
    fp_slurm_sqsh_unmount(dir);
    return -1;
  }
  if (fp_slurm_overlay_mount(lower, dir, envp, image) < 0) {
    kill(sp, SIGKILL);
    fp_slurm_sqsh_unmount(dir);
    return -1;
  }
  return 0;
}
