/* fpull Slurm plugin: the runner's request (see request.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

static void put(struct fp_buf *b, const char *key, const char *value)
{
  if (!value)
    return;
  fp_buf_append(b, key, strlen(key));
  fp_buf_append(b, "=", 1);
  fp_buf_append(b, value, strlen(value) + 1);
}

static void put_num(struct fp_buf *b, const char *key, unsigned long long v)
{
  char num[32];
  snprintf(num, sizeof num, "%llu", v);
  put(b, key, num);
}

int fp_slurm_request_pack(struct fp_buf *out, const struct fp_slurm_request *r)
{
  for (size_t i = 0; r->s->args && r->s->args[i]; i++)
    put(out, "arg", r->s->args[i]);
  put_num(out, "job", r->job_id);
  put_num(out, "step", r->step_id);
  put_num(out, "uid", r->uid);
  put_num(out, "gid", r->gid);
  put_num(out, "pull", (unsigned)r->pull);
  put_num(out, "mount_home", (unsigned)r->mount_home);
  put_num(out, "entrypoint", (unsigned)r->entrypoint);
  put_num(out, "squashfs", (unsigned)r->squashfs);
  put_num(out, "ntasks", r->ntasks);
  put_num(out, "quiet", (unsigned)r->quiet);
  put_num(out, "readonly", (unsigned)r->readonly);
  put_num(out, "save_nodes", r->save_nodes);
  put(out, "term", r->term);
  put(out, "name", r->name);
  put(out, "image", r->image);
  put(out, "features", r->features);
  put(out, "mounts", r->mounts);
  put(out, "home", r->home);
  put(out, "docker_config", r->docker_config);
  put(out, "xdg_config_home", r->xdg_config_home);
  put(out, "xdg_cache_home", r->xdg_cache_home);
  put(out, "gpus", r->gpus);
  put(out, "cache", r->cache);
  put(out, "save", r->save);
  put(out, "holder", r->holder);
  put(out, "pmix_dir", r->pmix_dir);
  put(out, "script", r->script);
  put(out, "pin", r->pin);
  put(out, "node", r->node);
  put_num(out, "node_id", r->node_id);
  return out->len <= FP_SLURM_REQUEST_MAX ? 0 : -1;
}

static int num(const char *v, unsigned long long max, unsigned long long *out)
{
  char *end = NULL;
  if (!v[0] || v[0] == '-')
    return -1;
  unsigned long long n = strtoull(v, &end, 10);
  if (*end || n > max)
    return -1;
  *out = n;
  return 0;
}

int fp_slurm_request_unpack(struct fp_slurm_request *r, struct fp_slurm_settings *s, char *data,
                            size_t len, fpull_err *err)
{
  char **args = NULL;
  int nargs = 0;
  memset(r, 0, sizeof *r);
  r->info_fd = -1;
  if (len == 0 || data[len - 1] != '\0')
    return fpull_err_set(err, FPULL_EFAIL, "runner: a truncated request");
  for (size_t off = 0, next; off < len; off = next) {
    char *key = data + off;
    next = off + strlen(key) + 1;
    char *eq = strchr(key, '=');
    if (!eq)
      return fpull_err_set(err, FPULL_EFAIL, "runner: a request record without '='");
    *eq = '\0';
    const char *v = eq + 1;
    unsigned long long n = 0;
    int bad = 0;
#define NUM(name, field, max)                                                                      \
  else if (strcmp(key, name) == 0)                                                                 \
  {                                                                                                \
    bad = num(v, max, &n);                                                                         \
    field = n;                                                                                     \
  }
#define STR(name, field) else if (strcmp(key, name) == 0) field = v;
    if (strcmp(key, "arg") == 0) {
      args = fp_xrealloc(args, (size_t)(nargs + 2) * sizeof *args);
      args[nargs++] = (char *)v;
      args[nargs] = NULL;
    }
    NUM("job", r->job_id, UINT32_MAX)
    NUM("step", r->step_id, UINT32_MAX)
    NUM("uid", r->uid, UINT32_MAX - 1)
    NUM("gid", r->gid, UINT32_MAX - 1)
    NUM("pull", r->pull, FP_PULL_NEVER)
    NUM("mount_home", r->mount_home, 1)
    NUM("entrypoint", r->entrypoint, 1)
    NUM("squashfs", r->squashfs, 1)
    NUM("ntasks", r->ntasks, UINT32_MAX)
    NUM("quiet", r->quiet, 1)
    NUM("readonly", r->readonly, 1)
    NUM("save_nodes", r->save_nodes, UINT32_MAX)
    STR("term", r->term)
    STR("name", r->name)
    STR("image", r->image)
    STR("features", r->features)
    STR("mounts", r->mounts)
    STR("home", r->home)
    STR("docker_config", r->docker_config)
    STR("xdg_config_home", r->xdg_config_home)
    STR("xdg_cache_home", r->xdg_cache_home)
    STR("gpus", r->gpus)
    STR("cache", r->cache)
    STR("save", r->save)
    STR("holder", r->holder)
    STR("pmix_dir", r->pmix_dir)
    STR("script", r->script)
    STR("pin", r->pin)
    STR("node", r->node)
    NUM("node_id", r->node_id, UINT32_MAX)
    else bad = 1;
#undef NUM
#undef STR
    if (bad) {
      free(args);
      return fpull_err_set(err, FPULL_EFAIL, "runner: bad request record '%s'", key);
    }
  }
  int rc = fp_slurm_settings_parse(s, nargs, args, err);
  free(args);
  if (rc)
    return rc;
  if (!r->image || !r->job_id)
    return fpull_err_set(err, FPULL_EFAIL, "runner: the request names no image or job");
  r->s = s;
  return 0;
}
