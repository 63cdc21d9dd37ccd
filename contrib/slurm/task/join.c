/* fpull Slurm plugin: a task enters the step's container (see container.h), as the job's
 * user: root opens nothing here. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "container.h"
#include "base/util.h"

int fp_pidfd_open(pid_t pid)
{
  return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* The holder and its child are the user's own, dumpable processes: setns() through their
 * pidfds succeeds only for namespaces the user owns (the kernel's checks, as the user).
 * Every task of the step joins the same ones, so they share one user namespace. */
int fp_slurm_container_join(const struct fp_slurm_container *c, int remap_root, fpull_err *err)
{
  if (geteuid() == 0)
    return fpull_err_set(err, FPULL_EFAIL, "the container is joined as the job's user, not root");
  if (setns(c->holder_fd, CLONE_NEWUSER | CLONE_NEWNS) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "joining the container's namespaces: %s",
                         strerror(errno));
  /* Without remap_root, the user is themselves again in the holder's child's namespace,
   * nested in the container's (where the user is root). */
  if (!remap_root && setns(c->nested_fd, CLONE_NEWUSER) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "joining the container's user namespace: %s",
                         strerror(errno));
  return 0;
}
