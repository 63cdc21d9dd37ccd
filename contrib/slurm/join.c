/* fpull Slurm plugin: a task enters the step's container (see container.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container.h"
#include "util.h"

/* As root, since crun's waiting init is not dumpable (runc's is): the pid comes from the
 * user's runner, so the namespaces must be ones the job's user owns, the mount namespace
 * owned by that user namespace. The kernel checks the same again at setns() as the user. */
int fp_slurm_ns_open(struct fp_slurm_container *c, const char *pid, uid_t uid, fpull_err *err)
{
  char p[64];
  snprintf(p, sizeof p, "/proc/%s/ns/user", pid);
  c->userns_fd = open(p, O_RDONLY | O_CLOEXEC);
  if (c->userns_fd >= 0) {
    snprintf(p, sizeof p, "/proc/%s/ns/mnt", pid);
    c->mntns_fd = open(p, O_RDONLY | O_CLOEXEC);
  }
  if (c->userns_fd < 0 || c->mntns_fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "the container's namespaces (%s): %s", p,
                         strerror(errno));
  uid_t owner = (uid_t)-1;
  cleanup_close int owning = ioctl(c->mntns_fd, NS_GET_USERNS);
  struct stat a, b;
  if (ioctl(c->userns_fd, NS_GET_OWNER_UID, &owner) < 0 || owner != uid || owning < 0 ||
      fstat(owning, &a) < 0 || fstat(c->userns_fd, &b) < 0 || a.st_ino != b.st_ino ||
      a.st_dev != b.st_dev)
    return fpull_err_set(err, FPULL_EFAIL, "process %s holds no container of uid %u", pid,
                         (unsigned)uid);
  return 0;
}

/* ---- in a task ---------------------------------------------------------------------- */

static int write_proc(const char *name, const char *text)
{
  int fd = open(name, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t n = strlen(text);
  int ok = write(fd, text, n) == (ssize_t)n;
  close(fd);
  return ok ? 0 : -1;
}

int fp_slurm_container_join(const struct fp_slurm_container *c, uid_t uid, gid_t gid,
                            int remap_root, fpull_err *err)
{
  if (setns(c->userns_fd, CLONE_NEWUSER) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "joining the container's user namespace: %s",
                         strerror(errno));
  if (setns(c->mntns_fd, CLONE_NEWNS) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "joining the container's mount namespace: %s",
                         strerror(errno));
  if (!remap_root) {
    /* The runtime made the user root of the container's user namespace; a task that is
     * not to be root there sees its own ids through one more, nested in it. */
    char map[64];
    /* Slurm changed this process's ids, which made it non-dumpable: its /proc files are
     * then root's, whom the namespace does not map. Its exec makes it dumpable anyway. */
    prctl(PR_SET_DUMPABLE, 1);
    if (unshare(CLONE_NEWUSER) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "user namespace: %s", strerror(errno));
    snprintf(map, sizeof map, "%u 0 1\n", (unsigned)uid);
    if (write_proc("/proc/self/uid_map", map) < 0 || write_proc("/proc/self/setgroups", "deny") < 0)
      return fpull_err_set(err, FPULL_EFAIL, "uid_map: %s", strerror(errno));
    snprintf(map, sizeof map, "%u 0 1\n", (unsigned)gid);
    if (write_proc("/proc/self/gid_map", map) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "gid_map: %s", strerror(errno));
  }
  return 0;
}
