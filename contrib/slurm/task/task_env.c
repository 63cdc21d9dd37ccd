/* fpull Slurm plugin: what a task gets from the image besides its root, in task_init as
 * the job's user: the image's Env merged under the job's, and the Entrypoint in front of
 * the command. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "task_env.h"
#include "base/util.h"

/* The job's value of these wins over the image's: Slurm's, the MPI launchers', the GPUs
 * the job was given, fpull's, and the site's env_passthrough= names. */
static int listed(const char *list, const char *name, size_t len)
{
  for (const char *p = list; p && *p;) {
    size_t n = strcspn(p, ",");
    if (n == len && strncmp(p, name, len) == 0)
      return 1;
    p += n + (p[n] == ',');
  }
  return 0;
}

static int passes_through(const char *name, size_t len, const char *names, const char *site)
{
  if (listed(names, name, len) || listed("TERM", name, len))
    return 1;
  static const char *const prefixes[] = {"SLURM_", "PMI", "FPULL_", NULL};
  for (size_t i = 0; prefixes[i]; i++)
    if (len >= strlen(prefixes[i]) && strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
      return 1;
  /* NVIDIA's, and AMD's as Slurm's gres/gpu sets them (ROCm reads ROCR_ and HIP_). */
  static const char *const gpus[] = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                     "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", NULL};
  for (size_t i = 0; gpus[i]; i++)
    if (len == strlen(gpus[i]) && strncmp(name, gpus[i], len) == 0)
      return 1;
  return listed(site, name, len);
}

/* The host's locale names a locale the image may lack (perl and others then complain on
 * every start): dropped unless --fpull-env keeps them, as pyxis does; the image's own
 * apply. */
static const char *const host_locale[] = {"LANG", "LANGUAGE", "LC_ALL", NULL};

/* Slurm's PMIx server says which of its modules the tasks' PMIx client is to use; the
 * client in the image, another build of PMIx, may otherwise pick others (as enroot's PMI
 * hook, the job's own PMIX_MCA_* first). */
static const char *const pmix_modules[][2] = {{"PMIX_PTL_MODULE", "PMIX_MCA_ptl"},
                                              {"PMIX_SECURITY_MODE", "PMIX_MCA_psec"},
                                              {"PMIX_GDS_MODULE", "PMIX_MCA_gds"}};

void fp_slurm_task_env(spank_t sp, const struct fp_slurm_container *c, const char *names,
                       const char *site)
{
  for (size_t i = 0; host_locale[i]; i++)
    if (!listed(names, host_locale[i], strlen(host_locale[i])))
      spank_unsetenv(sp, host_locale[i]);
  for (size_t i = 0; i < sizeof pmix_modules / sizeof pmix_modules[0]; i++) {
    char val[256], have[8];
    if (spank_getenv(sp, pmix_modules[i][0], val, sizeof val) == ESPANK_SUCCESS && val[0] &&
        spank_getenv(sp, pmix_modules[i][1], have, sizeof have) == ESPANK_ENV_NOEXIST)
      spank_setenv(sp, pmix_modules[i][1], val, 0);
  }
  for (size_t i = 0; c->env && c->env[i]; i++) {
    const char *kv = c->env[i];
    const char *eq = strchr(kv, '=');
    size_t klen = (size_t)(eq - kv);
    cleanup_free char *name = fp_xstrndup(kv, klen);
    char buf[8];
    int have = spank_getenv(sp, name, buf, sizeof buf) != ESPANK_ENV_NOEXIST;
    spank_setenv(sp, name, eq + 1, !(have && passes_through(name, klen, names, site)));
  }
  spank_setenv(sp, "FPULL_IMAGE_DIGEST", c->digest, 1);
  /* The user's home, where it is mounted, is HOME (the image's would be a throw-away). */
  if (c->home)
    spank_setenv(sp, "HOME", c->home, 1);
}

/* --fpull-entrypoint: the task runs ENTRYPOINT... COMMAND ARGS... (as pyxis). SPANK gives
 * the task's argv (S_JOB_ARGV) as an array it owns, which a plugin cannot lengthen, and
 * Slurm execs it after task_init. So only its first element changes: to a script, in a
 * memfd this task inherits (it is on no file system, the container's or the host's), that
 * execs the Entrypoint with the command's first word and then the rest ("$@"). The
 * script's interpreter is the image's /bin/sh. */
int fp_slurm_task_entrypoint(spank_t sp, char **entry, fpull_err *err)
{
  int argc = 0;
  char **argv = NULL;
  if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 || !argv ||
      !argv[0])
    return fpull_err_set(err, FPULL_EFAIL, "--fpull-entrypoint: the task's command is unknown");
  struct fp_buf b = {0};
  static const char head[] = "#!/bin/sh\nexec";
  fp_buf_append(&b, head, sizeof head - 1);
  size_t ne = fpull_strv_len(entry);
  for (size_t i = 0; i <= ne; i++) {
    const char *w = i < ne ? entry[i] : argv[0];
    fp_buf_append(&b, " '", 2);
    for (const char *q = w; *q; q++) {
      if (*q == '\'')
        fp_buf_append(&b, "'\\''", 4);
      else
        fp_buf_append(&b, q, 1);
    }
    fp_buf_append(&b, "'", 1);
  }
  fp_buf_append(&b, " \"$@\"\n", 6);
  int fd = memfd_create("fpull-entrypoint", 0);
  int ok = fd >= 0 && write(fd, b.data, b.len) == (ssize_t)b.len;
  fp_buf_free(&b);
  if (!ok) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    return fpull_err_set(err, FPULL_EFAIL, "--fpull-entrypoint: %s", strerror(e));
  }
  /* Slurm execs right after the plugins' task_init: the path must outlive this call. */
  static char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  argv[0] = path;
  return 0;
}
