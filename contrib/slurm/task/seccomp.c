/* fpull Slurm plugin: the seccomp filter a task gets once it joined the container (task
 * init, as the job's user). In a user namespace where the user is the only id, a package
 * manager run as the remapped root fails on every chown to the package's owner and every
 * switch to a service user; the filter makes those calls succeed without doing anything,
 * as pyxis and enroot do. The task stays the user on the host whatever the call would
 * have done: the kernel never let it become anyone else. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "seccomp.h"

#if defined(__x86_64__)
#define FP_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FP_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef FP_AUDIT_ARCH
/* Calls that succeed without effect. setfsuid and setfsgid too, but not with -1: that
 * only asks for the current id. */
static const unsigned faked[] = {
#ifdef SYS_chown
    SYS_chown,
#endif
#ifdef SYS_lchown
    SYS_lchown,
#endif
    SYS_fchown,   SYS_fchownat,  SYS_setuid,    SYS_setgid,    SYS_setreuid,
    SYS_setregid, SYS_setresuid, SYS_setresgid, SYS_setgroups,
};

#define NFAKED (sizeof faked / sizeof faked[0])
#define NPROG (NFAKED + 11) /* 4 in front, 2 setfs tests, 5 at the end */

static size_t build(struct sock_filter *p)
{
  size_t n = 0;
  /* Another ABI (x32, i386 on x86_64) runs unfiltered: its numbers are other calls. */
  p[n++] =
      (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  p[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FP_AUDIT_ARCH, 1, 0);
  p[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  p[n++] =
      (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  /* The program's end: [allow] [load arg0] [arg0 == -1 ?] [allow] [fake]; each test
   * below jumps to "fake" or the setfs check by its distance. */
  size_t tests = NFAKED + 2;
  size_t allow = n + tests, check = allow + 1, fake = check + 3;
  for (size_t i = 0; i < NFAKED; i++, n++)
    p[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, faked[i],
                                        (unsigned char)(fake - n - 1), 0);
  p[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setfsuid,
                                      (unsigned char)(check - n - 1), 0);
  n++;
  p[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setfsgid,
                                      (unsigned char)(check - n - 1), 0);
  n++;
  p[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  p[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                        offsetof(struct seccomp_data, args[0]));
  p[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 0, 1);
  p[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  p[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0);
  return n;
}

#ifndef SECCOMP_FILTER_FLAG_SPEC_ALLOW
#define SECCOMP_FILTER_FLAG_SPEC_ALLOW (1UL << 2)
#endif

/* Kernels before 5.16 turn on the speculative store bypass mitigation for every process
 * with a seccomp filter, which costs compute-bound tasks dearly: asked not to, where the
 * kernel knows the flag. */
static long install(struct sock_fprog *fprog)
{
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, fprog);
  if (rc < 0 && errno == EINVAL)
    rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, fprog);
  return rc;
}

int fp_slurm_task_seccomp(fpull_err *err)
{
  struct sock_filter prog[NPROG];
  struct sock_fprog fprog = {.len = (unsigned short)build(prog), .filter = prog};
  /* The container has noNewPrivileges (docs/cluster.md section 12), as the runtime's own
   * processes do: set first, for every task, whether or not the filter would need it (a
   * remapped root's CAP_SYS_ADMIN in the nested namespace lets the kernel install it
   * without; review 4 found such tasks with NoNewPrivs: 0). */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "the container's no_new_privs: %s", strerror(errno));
  if (install(&fprog) == 0)
    return 0;
  return fpull_err_set(err, FPULL_EFAIL, "the container's seccomp filter: %s", strerror(errno));
}
#else
int fp_slurm_task_seccomp(fpull_err *err)
{
  (void)err;
  return 0;
}
#endif
