/* fpull Slurm plugin: the step's container (see container.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fpull/cache.h>
#include <fpull/config.h>
#include <fpull/ref.h>

#include "container.h"
#include "job_dir.h"
#include "run.h"
#include "sqsh_mount.h"
#include "store.h"
#include "unpack/inroot.h"
#include "util.h"

/* The runner's records to slurmstepd, each "K<value>\0": D digest, W workdir, E one Env
 * entry, N one Entrypoint element (--fpull-entrypoint), P the holder's pid (last). */
/* PATH where the image names none: the runtimes' default. */
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define INFO_MAX (1u << 20)
#define SPEC_MAX (4u << 20)

static pid_t runner_pid;

void fp_slurm_container_cancel(void)
{
  /* Only while it is still our unreaped child: its pid cannot have been reused then. */
  if (runner_pid > 0 && waitpid(runner_pid, NULL, WNOHANG) == 0) {
    kill(-runner_pid, SIGKILL);
    kill(runner_pid, SIGKILL);
    while (waitpid(runner_pid, NULL, 0) < 0 && errno == EINTR)
      ;
    runner_pid = 0;
  }
}

void fp_slurm_container_free(struct fp_slurm_container *c)
{
  int *fds[] = {&c->userns_fd, &c->mntns_fd, &c->info_fd, &c->ack_fd};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (*fds[i] >= 0)
      close(*fds[i]);
  free(c->workdir);
  fpull_strv_free(c->env);
  fpull_strv_free(c->entrypoint);
  memset(c, 0, sizeof *c);
  c->userns_fd = c->mntns_fd = c->info_fd = c->ack_fd = -1;
}

/* ---- in the runner (the job's user, every id) -------------------------------------- */

static void send_rec(struct fp_buf *recs, char kind, const char *value)
{
  fp_buf_append(recs, &kind, 1);
  fp_buf_append(recs, value, strlen(value) + 1);
}

static int run(char *const argv[], char *const envp[], struct fp_buf *out, int quiet)
{
  return fp_slurm_run_to(argv, envp, out, quiet, NULL, NULL);
}

static int dir_writable(const char *p)
{
  struct stat st;
  return p && p[0] == '/' && stat(p, &st) == 0 && S_ISDIR(st.st_mode) && access(p, W_OK) == 0;
}

struct runner {
  const struct fp_slurm_request *r;
  char step[64];         /* the step's directory, relative to the job's */
  char bundle[PATH_MAX]; /* the step's bundle (config.json), absolute */
  char tree[PATH_MAX];   /* the image's (rootfs/, fpull's config.json): the bundle's, or
                            a kept one in the node store */
  char cache[PATH_MAX];  /* --cache-dir, or "" for fpull's default (the user's own) */
  char **envp;
  const char *pull_image;   /* what is pulled: the image, or it pinned to a digest */
  int inspect;              /* resolve only (fpull inspect) */
  int offline_only;         /* an earlier resolution found the registry down */
  int went_offline;         /* the last pull() used the cache only */
  int mounted;              /* the image is a SquashFS file mounted in the bundle */
  const char *format;       /* what pull() asks fpull for: "bundle" or "squashfs" */
  char dest[PATH_MAX + 16]; /* where: the tree, or the SquashFS file in the bundle */
};

static char *const *env_add(char ***envp, const char *k, const char *v)
{
  if (v) {
    cleanup_free char *kv = fp_xasprintf("%s=%s", k, v);
    *envp = fp_strv_push(*envp, kv);
  }
  return *envp;
}

/* The options every fpull the step runs shares: the site's config and the user's cache. */
static size_t common_args(const struct runner *rn, const char **argv, size_t n)
{
  if (rn->r->s->config) {
    argv[n++] = "--config";
    argv[n++] = rn->r->s->config;
  }
  if (rn->cache[0]) {
    argv[n++] = "--cache-dir";
    argv[n++] = rn->cache;
  }
  return n;
}

/* IMAGE pinned to digest, so that every later run reads the entry the step runs. NULL
 * when IMAGE does not parse. */
static char *pinned_ref(const char *image, const char *digest)
{
  struct fpull_ref *ref = NULL;
  char *pinned = NULL;
  if (fpull_ref_parse(&ref, image, NULL) == 0) {
    /* With a tag and a digest the digest wins (contract); the tag stays for messages. */
    free(ref->digest);
    ref->digest = fp_xstrdup(digest);
    pinned = fpull_ref_format(ref);
  }
  fpull_ref_free(ref);
  return pinned;
}

/* fpull pull --format bundle (or rn->format) as the user; the --json result into out. */
static int pull_once(struct runner *rn, int offline, int quiet, struct fp_buf *out)
{
  const struct fp_slurm_request *r = rn->r;
  char jobs[16];
  snprintf(jobs, sizeof jobs, "%d", r->s->jobs);
  const char *argv[24];
  size_t n = 0;
  argv[n++] = r->s->fpull;
  argv[n++] = rn->inspect ? "inspect" : "pull";
  argv[n++] = "--json";
  char format[32];
  snprintf(format, sizeof format, "--format=%s", rn->format ? rn->format : "bundle");
  if (!rn->inspect) {
    argv[n++] = format;
    argv[n++] = "--progress=lines";
    argv[n++] = "--force";
  }
  if (offline)
    argv[n++] = "--offline";
  n = common_args(rn, argv, n);
  if (r->features) {
    argv[n++] = "--features";
    argv[n++] = r->features;
  }
  if (r->s->jobs && !rn->inspect) {
    argv[n++] = "--jobs";
    argv[n++] = jobs;
  }
  argv[n++] = "--";
  argv[n++] = rn->pull_image;
  if (!rn->inspect)
    argv[n++] = rn->dest[0] ? rn->dest : rn->tree;
  argv[n] = NULL;
  out->len = 0;
  if (fp_slurm_run_timed_out())
    return FPULL_ENET;
  /* The container runs no command of the image's: a warning that the image names none
   * would only mislead. */
  return fp_slurm_run_to((char *const *)argv, rn->envp, out, quiet, NULL,
                         "neither Entrypoint nor Cmd");
}

/* How old the cached manifest is, for the outage warning. */
static void cached_age(const struct runner *rn, const char *digest, char *buf, size_t len)
{
  snprintf(buf, len, "unknown age");
  const char *hex = strchr(digest, ':');
  if (!hex)
    return;
  cleanup_free char *dir = NULL;
  if (rn->cache[0]) {
    dir = fp_xstrdup(rn->cache);
  } else {
    struct fpull_config *config = NULL;
    fpull_err ignored = {0};
    if (fpull_config_load(&config, rn->r->s->config, &ignored) == 0)
      dir = fpull_cache_resolve_dir(NULL, config);
    fpull_config_free(config);
  }
  struct stat st;
  cleanup_free char *p = dir ? fp_xasprintf("%s/blobs/sha256/%s", dir, hex + 1) : NULL;
  if (!p || stat(p, &st) != 0)
    return;
  long secs = (long)(time(NULL) - st.st_mtime);
  if (secs < 0)
    secs = 0;
  if (secs >= 86400)
    snprintf(buf, len, "%ldd%02ldh old", secs / 86400, secs / 3600 % 24);
  else if (secs >= 3600)
    snprintf(buf, len, "%ldh%02ldm old", secs / 3600, secs / 60 % 60);
  else
    snprintf(buf, len, "%ldm%02lds old", secs / 60, secs % 60);
}

/* The pull policy (settings.h) over fpull's exit codes. */
static int pull(struct runner *rn, cJSON **result)
{
  struct fp_buf out = {0};
  int rc;
  /* A registry that trickles cannot hold the job longer than the site allows (the job's
   * time limit bounds it anyway; the node is never at stake). */
  if (rn->r->s->pull_timeout > 0) {
    fp_slurm_run_deadline((unsigned)rn->r->s->pull_timeout);
  }
  rn->went_offline = 0;
  switch (rn->offline_only ? FP_PULL_NEVER : rn->r->pull) {
  case FP_PULL_NEVER:
    rc = pull_once(rn, 1, 0, &out);
    rn->went_offline = 1;
    break;
  case FP_PULL_MISSING:
    rc = pull_once(rn, 1, 1, &out);
    rn->went_offline = rc == 0;
    if (rc != 0)
      rc = pull_once(rn, 0, 0, &out);
    break;
  case FP_PULL_NEWER:
    rc = pull_once(rn, 0, 0, &out);
    if (rc == FPULL_ENET && pull_once(rn, 1, 1, &out) == 0) {
      cJSON *j = cJSON_ParseWithLength(out.data ? out.data : "", out.len);
      const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(j, "manifest_digest"));
      if (!d)
        d = cJSON_GetStringValue(cJSON_GetObjectItem(j, "chosen"));
      rn->went_offline = 1;
      char age[64];
      cached_age(rn, d ? d : "", age, sizeof age);
      fp_slurm_say("fpull: warning: %s: the registry cannot be reached: running the cached %s (%s)",
                   rn->r->image, d ? d : "image", age);
      cJSON_Delete(j);
      rc = 0;
    }
    break;
  default:
    rc = pull_once(rn, 0, 0, &out);
    break;
  }
  fp_slurm_run_deadline(0);
  if (fp_slurm_run_timed_out()) {
    fp_slurm_say("fpull: %s: the pull took longer than pull_timeout=%d seconds (exit 6: network or "
                 "registry failure, worth retrying)",
                 rn->r->image, rn->r->s->pull_timeout);
    rc = FPULL_ENET;
  }
  if (rc == 0) {
    *result = cJSON_ParseWithLength(out.data ? out.data : "", out.len);
    if (!*result)
      rc = FPULL_EFAIL;
  }
  fp_buf_free(&out);
  return rc;
}

/* The line saying what this node chose, on the step's stderr. */
static void say_chosen(const struct runner *rn, const cJSON *res)
{
  const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(res, "manifest_digest"));
  const cJSON *pl = cJSON_GetObjectItem(res, "platform");
  char feats[1024] = "";
  size_t off = 0;
  const cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(pl, "features"))
  {
    const char *s = cJSON_GetStringValue(f);
    if (s && off + strlen(s) + 2 < sizeof feats)
      off += (size_t)snprintf(feats + off, sizeof feats - off, "%s%s", off ? "," : "", s);
  }
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  const char *os = cJSON_GetStringValue(cJSON_GetObjectItem(pl, "os"));
  const char *arch = cJSON_GetStringValue(cJSON_GetObjectItem(pl, "architecture"));
  /* The deciding rule, as fpull inspect says it (pull --json's why). */
  const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(res, "why"));
  int single = cJSON_IsNull(cJSON_GetObjectItem(res, "index_digest"));
  fp_slurm_say(
      "fpull: %s: %s: %s (%s/%s%s%s, %s%s%s)", host, rn->r->image, d ? d : "?", os ? os : "?",
      arch ? arch : "?", feats[0] ? " " : "", feats,
      single ? "the only entry"
             : (rn->r->features ? "the entry for --fpull-features" : "the entry for this node"),
      single ? "" : ": ", single ? "" : (why ? why : "the only one that fits"));
}

static cJSON *bind_mount(const char *src, const char *dst, int ro)
{
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "destination", dst);
  cJSON_AddStringToObject(m, "type", "bind");
  cJSON_AddStringToObject(m, "source", src);
  cJSON *o = cJSON_AddArrayToObject(m, "options");
  cJSON_AddItemToArray(o, cJSON_CreateString("rbind"));
  cJSON_AddItemToArray(o, cJSON_CreateString("nosuid"));
  if (ro)
    cJSON_AddItemToArray(o, cJSON_CreateString("ro"));
  return m;
}

static int add_mounts(cJSON *arr, const char *what, const char *spec)
{
  struct fp_slurm_mount *m = NULL;
  size_t n = 0;
  fpull_err err = {0};
  if (fp_slurm_mounts_parse(&m, &n, what, spec, &err) != 0) {
    fp_slurm_say("fpull: %s", err.msg);
    return FPULL_EUSAGE;
  }
  for (size_t i = 0; i < n; i++)
    cJSON_AddItemToArray(arr, bind_mount(m[i].src, m[i].dst, m[i].ro));
  fp_slurm_mounts_free(m, n);
  return 0;
}

static cJSON *id_map(unsigned host)
{
  cJSON *a = cJSON_CreateArray();
  cJSON *m = cJSON_CreateObject();
  cJSON_AddNumberToObject(m, "containerID", 0);
  cJSON_AddNumberToObject(m, "hostID", host);
  cJSON_AddNumberToObject(m, "size", 1);
  cJSON_AddItemToArray(a, m);
  return a;
}

/* Writes the container's config.json: the image's rootfs, the user's id as the user
 * namespace's only one (runc needs a root inside: the user's uid is it; tasks that are not
 * to be root nest their own, see fp_slurm_container_join), user and mount namespaces only
 * (the host's network, PIDs and IPC, as a Slurm task has them), the host's /proc, /sys and
 * /dev, and the site's, the home and the job's bind mounts. No cgroups: the tasks stay in
 * Slurm's. The image's own config.json is kept as image.json. */
static int write_spec(struct runner *rn, char **workdir, char ***env)
{
  const struct fp_slurm_request *r = rn->r;
  int own = strcmp(rn->tree, rn->bundle) == 0;
  cleanup_free char *ipath = fp_xasprintf("%s/config.json", rn->tree);
  cleanup_free char *kept = fp_xasprintf("%s/image.json", rn->bundle);
  cleanup_free char *opath = fp_xasprintf("%s/config.json", rn->bundle);
  cleanup_free char *rootfs = fp_xasprintf("%s/rootfs", rn->tree);
  char *text = NULL;
  size_t len = 0;
  if (fp_read_file(ipath, SPEC_MAX, &text, &len) != 0) {
    fp_slurm_say("fpull: %s: %s", ipath, strerror(errno));
    return FPULL_EFAIL;
  }
  cJSON *img = cJSON_ParseWithLength(text, len);
  free(text);
  const cJSON *proc = cJSON_GetObjectItem(img, "process");
  const char *cwd = cJSON_GetStringValue(cJSON_GetObjectItem(proc, "cwd"));
  if (cwd && cwd[0] == '/')
    *workdir = fp_xstrdup(cwd);
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(proc, "env"))
  {
    const char *s = cJSON_GetStringValue(e);
    /* "A" or "=x" is no variable: not passed on. */
    if (s && strchr(s, '=') && s[0] != '=')
      *env = fp_strv_push(*env, s);
  }
  cJSON_Delete(img);

  cJSON *spec = cJSON_CreateObject();
  cJSON_AddStringToObject(spec, "ociVersion", "1.0.2");
  cJSON *root = cJSON_AddObjectToObject(spec, "root");
  /* A kept tree is shared by the user's steps: named by its absolute path. */
  cJSON_AddStringToObject(root, "path", own ? "rootfs" : rootfs);
  cJSON *p = cJSON_AddObjectToObject(spec, "process");
  cJSON_AddFalseToObject(p, "terminal");
  cJSON *u = cJSON_AddObjectToObject(p, "user");
  cJSON_AddNumberToObject(u, "uid", 0);
  cJSON_AddNumberToObject(u, "gid", 0);
  /* Never started: the container's init only holds its namespaces. */
  cJSON *args = cJSON_AddArrayToObject(p, "args");
  /* runc looks args[0] up before it waits to start; the host's /proc is mounted. */
  cJSON_AddItemToArray(args, cJSON_CreateString("/proc/self/exe"));
  cJSON_AddArrayToObject(p, "env");
  cJSON_AddStringToObject(p, "cwd", "/");
  cJSON_AddTrueToObject(p, "noNewPrivileges");
  cJSON *mounts = cJSON_AddArrayToObject(spec, "mounts");
  cJSON_AddItemToArray(mounts, bind_mount("/proc", "/proc", 0));
  cJSON_AddItemToArray(mounts, bind_mount("/sys", "/sys", 1));
  /* The host's /dev whole: GPUs are there as on the host, NVIDIA's (the hook below adds
   * the driver's libraries) and AMD's (/dev/kfd and /dev/dri's render nodes, which need
   * no hook: ROCm's libraries are the image's). Which of them a task may open is Slurm's
   * device cgroup's call (ConstrainDevices=yes in cgroup.conf), as outside. */
  cJSON_AddItemToArray(mounts, bind_mount("/dev", "/dev", 0));
  int rc = add_mounts(mounts, "plugin argument mounts", r->s->mounts);
  if (rc == 0 && r->mount_home && dir_writable(r->home))
    cJSON_AddItemToArray(mounts, bind_mount(r->home, r->home, 0));
  if (rc == 0)
    rc = add_mounts(mounts, "--fpull-mounts", r->mounts);
  cJSON *linux_ = cJSON_AddObjectToObject(spec, "linux");
  cJSON_AddItemToObject(linux_, "uidMappings", id_map((unsigned)r->uid));
  cJSON_AddItemToObject(linux_, "gidMappings", id_map((unsigned)r->gid));
  cJSON *ns = cJSON_AddArrayToObject(linux_, "namespaces");
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "type", "user");
  cJSON_AddItemToArray(ns, t);
  t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "type", "mount");
  cJSON_AddItemToArray(ns, t);
  if (!r->s->nvidia_hook && r->gpus && access("/dev/nvidiactl", F_OK) == 0)
    fp_slurm_say(
        "fpull: warning: the job has GPUs (%s) but the container gets none: the site's "
        "plugstack.conf names no nvidia_hook= (install the NVIDIA Container Toolkit and give "
        "nvidia_hook=/usr/bin/nvidia-container-runtime-hook)",
        r->gpus);
  if (r->s->nvidia_hook && r->gpus) {
    /* The NVIDIA Container Toolkit's hook mounts the driver and exactly these devices. */
    cJSON *hooks = cJSON_AddObjectToObject(spec, "hooks");
    cJSON *pre = cJSON_AddArrayToObject(hooks, "prestart");
    cJSON *h = cJSON_CreateObject();
    cJSON_AddStringToObject(h, "path", r->s->nvidia_hook);
    cJSON *ha = cJSON_AddArrayToObject(h, "args");
    cJSON_AddItemToArray(ha, cJSON_CreateString(r->s->nvidia_hook));
    cJSON_AddItemToArray(ha, cJSON_CreateString("prestart"));
    cJSON *he = cJSON_AddArrayToObject(h, "env");
    cleanup_free char *vis = fp_xasprintf("NVIDIA_VISIBLE_DEVICES=%s", r->gpus);
    cJSON_AddItemToArray(he, cJSON_CreateString(vis));
    cJSON_AddItemToArray(he, cJSON_CreateString(DEFAULT_PATH));
    cJSON_AddItemToArray(pre, h);
    cJSON *pe = cJSON_GetObjectItem(p, "env");
    cJSON_AddItemToArray(pe, cJSON_CreateString(vis));
  }
  char *out = rc == 0 ? cJSON_PrintUnformatted(spec) : NULL;
  cJSON_Delete(spec);
  if (rc)
    return rc;
  if (!own && mkdir(rn->bundle, 0700) < 0 && errno != EEXIST) {
    free(out);
    fp_slurm_say("fpull: %s: %s", rn->bundle, strerror(errno));
    return FPULL_EFAIL;
  }
  cleanup_free char *tmp = fp_xasprintf("%s/config.json.tmp", rn->bundle);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  size_t n = strlen(out);
  int ok = fd >= 0 && write(fd, out, n) == (ssize_t)n;
  if (fd >= 0 && close(fd) < 0)
    ok = 0;
  free(out);
  if (!ok || (own && rename(ipath, kept) < 0) || rename(tmp, opath) < 0) {
    fp_slurm_say("fpull: %s: %s", opath, strerror(errno));
    return FPULL_EFAIL;
  }
  return 0;
}

/* A runtime or tool not found is run by its name: its exec fails with a line that says so. */
static const char *runtime_path(const char *rt, char *buf, size_t len)
{
  const char *found = fp_slurm_find_program(rt, buf, len);
  return found ? found : rt;
}

/* crun, unlike runc, refuses a rootless container it cannot give a cgroup of its own on a
 * hybrid (v1 + v2) hierarchy; the tasks stay in the job's cgroup anyway (above), so it is
 * told to make none. */
static int is_crun(const char *rt)
{
  const char *slash = strrchr(rt, '/');
  return strcmp(slash ? slash + 1 : rt, "crun") == 0;
}

/* The runtime's argv up to its verb: the program, its global options. Returns the count. */
static size_t runtime_head(const char **argv, const char *rt, const char *state)
{
  size_t n = 0;
  argv[n++] = rt;
  if (is_crun(rt))
    argv[n++] = "--cgroup-manager=disabled";
  argv[n++] = "--root";
  argv[n++] = state;
  return n;
}

/* The runtime's verb on the step's container; its output (warnings about cgroups it was
 * not given) is said only when it fails. */
static int runtime(struct runner *rn, const char *verb, const char *extra1, const char *extra2,
                   int quiet)
{
  char rtbuf[PATH_MAX];
  const char *rt = runtime_path(rn->r->s->runtime, rtbuf, sizeof rtbuf);
  cleanup_free char *state = fp_xasprintf("%s/%s/runtime", rn->r->s->run_dir, rn->step);
  char name[64];
  snprintf(name, sizeof name, "fpull-%" PRIu32 ".%" PRIu32, rn->r->job_id, rn->r->step_id);
  const char *argv[12];
  size_t n = runtime_head(argv, rt, state);
  argv[n++] = verb;
  if (extra1)
    argv[n++] = extra1;
  if (extra2)
    argv[n++] = extra2;
  argv[n++] = name;
  argv[n] = NULL;
  /* A file, not a pipe: the container's init keeps what it was given open. */
  cleanup_free char *log = fp_xasprintf("%s/%s/runtime.log", rn->r->s->run_dir, rn->step);
  int rc = fp_slurm_run_to((char *const *)argv, rn->envp, NULL, 1, log, NULL);
  if (rc && !quiet) {
    /* Its last line says why. */
    char why[1024];
    fp_slurm_log_last_line(log, why, sizeof why);
    if (why[0])
      fp_slurm_say("fpull: %s %s: %s", rn->r->s->runtime, verb, why);
  }
  return rc;
}

static char *info_path(const struct fp_slurm_settings *s, uint32_t job_id, uint32_t step_id)
{
  return fp_xasprintf("%s/%" PRIu32 "/%" PRIu32 "/info", s->run_dir, job_id, step_id);
}

/* The records for the tasks, in the step's directory (written beside, renamed in). */
static int info_publish(const struct fp_slurm_request *r, const struct fp_buf *info)
{
  cleanup_free char *path = info_path(r->s, r->job_id, r->step_id);
  cleanup_free char *tmp = fp_xasprintf("%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return FPULL_EFAIL;
  int ok = write(fd, info->data, info->len) == (ssize_t)info->len;
  if (close(fd) < 0 || !ok || rename(tmp, path) < 0)
    return FPULL_EFAIL;
  return 0;
}

/* --fpull-save: the entry the step runs, as a SquashFS file, from the cache (the pull just
 * filled it) and as the user. Said, not fatal, when it cannot be written: the step runs. */
static void save(struct runner *rn, const char *digest)
{
  const struct fp_slurm_request *r = rn->r;
  cleanup_free char *pinned = pinned_ref(r->image, digest);
  if (!pinned)
    return;
  const char *argv[16];
  size_t n = 0;
  argv[n++] = r->s->fpull;
  argv[n++] = "pull";
  argv[n++] = "--format=squashfs";
  argv[n++] = "--offline";
  argv[n++] = "--force";
  argv[n++] = "--quiet";
  n = common_args(rn, argv, n);
  argv[n++] = "--";
  argv[n++] = pinned;
  argv[n++] = r->save;
  argv[n] = NULL;
  int rc = run((char *const *)argv, rn->envp, NULL, 0);
  if (rc)
    fp_slurm_say("fpull: warning: --fpull-save=%s: not saved (exit %d)", r->save, rc);
  else
    fp_slurm_say("fpull: saved %s to %s", pinned, r->save);
}

/* The bundle's config.json (what write_spec reads of the image) for an image that came as
 * a SquashFS file, not as fpull's bundle. 0, or -1 after saying why. */
static int write_bundle_config(const struct runner *rn, const char *text)
{
  cleanup_free char *config = fp_xasprintf("%s/config.json", rn->bundle);
  size_t n = strlen(text);
  int fd = open(config, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  int ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
  if (fd >= 0 && close(fd) < 0)
    ok = 0;
  if (!ok) {
    fp_slurm_say("fpull: %s: %s", config, strerror(errno));
    return -1;
  }
  return 0;
}

/* --fpull-image=/path/file.sqsh (made by fpull pull --format squashfs, enroot import or
 * mksquashfs): extracted as the user into the step's rootfs with unsquashfs (no FUSE mount:
 * a copy per step), with the default PATH and / as the working directory, since a SquashFS
 * file carries no image config. */
static int from_squashfs(struct runner *rn)
{
  const struct fp_slurm_request *r = rn->r;
  cleanup_free char *rootfs = fp_xasprintf("%s/rootfs", rn->bundle);
  if (mkdir(rn->bundle, 0700) < 0 && errno != EEXIST) {
    fp_slurm_say("fpull: %s: %s", rn->bundle, strerror(errno));
    return FPULL_EFAIL;
  }
  /* Mounted where the node can (no copy of the image per step), else unpacked. */
  rn->mounted = fp_slurm_sqsh_mountable();
  if (rn->mounted) {
    if (fp_slurm_sqsh_mount(r->image, rn->bundle, rn->envp) < 0)
      return FPULL_EFAIL;
  } else {
    char tool[PATH_MAX];
    const char *argv[] = {runtime_path("unsquashfs", tool, sizeof tool),
                          "-n",
                          "-no-xattrs",
                          "-d",
                          rootfs,
                          r->image,
                          NULL};
    int rc = run((char *const *)argv, rn->envp, NULL, 1);
    if (rc) {
      fp_slurm_say("fpull: %s: cannot be unpacked as a SquashFS file (unsquashfs: exit %d)",
                   r->image, rc);
      return rc == FPULL_EFAIL || rc == 127 ? FPULL_EFAIL : FPULL_EUNSAFE;
    }
  }
  static const char spec[] = "{\"process\":{\"cwd\":\"/\",\"env\":[\"" DEFAULT_PATH "\"]}}";
  if (write_bundle_config(rn, spec) != 0)
    return FPULL_EFAIL;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  fp_slurm_say("fpull: %s: %s (a SquashFS file, %s)", host, r->image,
               rn->mounted ? "mounted with squashfuse" : "unpacked with unsquashfs");
  return 0;
}

/* --fpull-entrypoint: the chosen entry's Entrypoint, from its image config (fpull config,
 * from the cache the pull just filled), as N records. */
/* The chosen entry's image configuration (fpull config, from the cache the pull just
 * filled), or NULL after saying why (what: the option that needs it). */
static cJSON *image_config(const struct runner *rn, const char *digest, const char *what, int *rc)
{
  const struct fp_slurm_request *r = rn->r;
  cleanup_free char *pinned = pinned_ref(r->image, digest);
  *rc = FPULL_EFAIL;
  if (!pinned)
    return NULL;
  const char *argv[12];
  size_t n = 0;
  argv[n++] = r->s->fpull;
  argv[n++] = "config";
  argv[n++] = "--offline";
  n = common_args(rn, argv, n);
  argv[n++] = "--";
  argv[n++] = pinned;
  argv[n] = NULL;
  struct fp_buf out = {0};
  int run_rc = run((char *const *)argv, rn->envp, &out, 0);
  cJSON *cfg = run_rc == 0 ? cJSON_ParseWithLength(out.data ? out.data : "", out.len) : NULL;
  fp_buf_free(&out);
  if (!cfg) {
    fp_slurm_say("fpull: %s: %s: the image's configuration cannot be read", r->image, what);
    *rc = run_rc ? run_rc : FPULL_EFAIL;
  }
  return cfg;
}

static int send_entrypoint(const struct runner *rn, const char *digest, struct fp_buf *info)
{
  int rc;
  cJSON *cfg = image_config(rn, digest, "--fpull-entrypoint", &rc);
  if (!cfg)
    return rc;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "config"), "Entrypoint"))
  {
    if (cJSON_IsString(e))
      send_rec(info, 'N', e->valuestring);
  }
  cJSON_Delete(cfg);
  return 0;
}

/* --fpull-format=squashfs: the entry pulled as one SquashFS file into the bundle and
 * mounted there (sqsh_mount.h); the bundle's config.json gets the image's Env and
 * WorkingDir, as fpull's bundle would have. *res: what say_chosen needs. */
static int pull_squashfs(struct runner *rn, cJSON **res)
{
  if (mkdir(rn->bundle, 0700) < 0 && errno != EEXIST) {
    fp_slurm_say("fpull: %s: %s", rn->bundle, strerror(errno));
    return FPULL_EFAIL;
  }
  rn->format = "squashfs";
  snprintf(rn->dest, sizeof rn->dest, "%s/image.sqsh", rn->bundle);
  int rc = pull(rn, res);
  if (rc)
    return rc;
  const char *digest = cJSON_GetStringValue(cJSON_GetObjectItem(*res, "manifest_digest"));
  cJSON *cfg = digest ? image_config(rn, digest, "--fpull-format=squashfs", &rc) : NULL;
  if (!cfg)
    return digest ? rc : FPULL_EFAIL;
  const cJSON *c = cJSON_GetObjectItem(cfg, "config");
  cJSON *spec = cJSON_CreateObject();
  cJSON *proc = cJSON_AddObjectToObject(spec, "process");
  const char *wd = cJSON_GetStringValue(cJSON_GetObjectItem(c, "WorkingDir"));
  cJSON_AddStringToObject(proc, "cwd", wd && wd[0] == '/' ? wd : "/");
  cJSON *env = cJSON_AddArrayToObject(proc, "env");
  int has_path = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "Env"))
  {
    const char *v = cJSON_GetStringValue(e);
    if (!v)
      continue;
    has_path |= strncmp(v, "PATH=", 5) == 0;
    cJSON_AddItemToArray(env, cJSON_CreateString(v));
  }
  if (!has_path)
    cJSON_AddItemToArray(env, cJSON_CreateString(DEFAULT_PATH));
  cJSON_Delete(cfg);
  cleanup_free char *text = cJSON_PrintUnformatted(spec);
  cJSON_Delete(spec);
  if (!text || write_bundle_config(rn, text) != 0)
    return FPULL_EFAIL;
  if (fp_slurm_sqsh_mount(rn->dest, rn->bundle, rn->envp) < 0)
    return FPULL_EFAIL;
  rn->mounted = 1;
  return 0;
}

/* With store_max=: resolves the entry (fpull inspect, under the pull policy), and unpacks
 * it into the user's store only when it is not there yet. *lock stays held (shared) for
 * the step: no other job evicts the tree meanwhile. *res: what say_chosen needs. */
static int from_store(struct runner *rn, cJSON **res, int *lock)
{
  const struct fp_slurm_request *r = rn->r;
  cJSON *ins = NULL;
  rn->inspect = 1;
  int rc = pull(rn, &ins);
  rn->inspect = 0;
  if (rc)
    return rc;
  rn->offline_only = rn->went_offline;
  const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(ins, "chosen"));
  struct fp_slurm_store st;
  fpull_err err = {0};
  int kept = d ? fp_slurm_store_claim(&st, r->s->run_dir, r->uid, d, &err) : -1;
  if (kept < 0) {
    if (!d || err.code == FPULL_ENOMATCH)
      fp_slurm_say("fpull: %s: no entry of the image fits this node", r->image);
    else
      fp_slurm_say("fpull: %s", err.msg);
    cJSON_Delete(ins);
    return !d || err.code == FPULL_ENOMATCH ? FPULL_ENOMATCH : FPULL_EFAIL;
  }
  if ((size_t)snprintf(rn->tree, sizeof rn->tree, "%s", st.tree) >= sizeof rn->tree) {
    fp_slurm_say("fpull: %s: path too long", st.tree);
    fp_slurm_store_release(&st);
    cJSON_Delete(ins);
    return FPULL_EFAIL;
  }
  /* What the pull of the image would have said: the pull below is of the entry's digest,
   * a single manifest, which knows neither the index nor why the entry was chosen. */
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "manifest_digest", d);
  cJSON_AddItemToObject(o, "index_digest",
                        cJSON_Duplicate(cJSON_GetObjectItem(ins, "index_digest"), 1));
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(ins, "entries"))
  {
    if (!cJSON_IsTrue(cJSON_GetObjectItem(e, "chosen")))
      continue;
    cJSON_AddItemToObject(o, "platform", cJSON_Duplicate(cJSON_GetObjectItem(e, "platform"), 1));
    cJSON_AddItemToObject(o, "why", cJSON_Duplicate(cJSON_GetObjectItem(e, "why"), 1));
  }
  if (kept) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    fp_slurm_say("fpull: %s: %s: %s is kept on this node: not unpacked again", host, r->image, d);
  } else {
    cleanup_free char *pinned = pinned_ref(r->image, d);
    rn->pull_image = pinned ? pinned : r->image;
    cJSON *pulled = NULL;
    rc = pull(rn, &pulled);
    cJSON_Delete(pulled);
    rn->pull_image = r->image;
    if (rc == 0)
      fp_slurm_store_filled(&st);
  }
  cJSON_Delete(ins);
  if (rc)
    cJSON_Delete(o);
  else
    *res = o;
  if (rc) {
    fp_slurm_store_release(&st);
    return rc;
  }
  *lock = fp_slurm_store_hold(&st, r->s->store_max);
  return 0;
}

static int runner_main(const struct fp_slurm_request *r, struct fp_buf *info, int ack)
{
  /* Every id, for good: a bug in what parses the image must not be one setresuid(0) away
   * from root (slurmstepd keeps ruid and suid 0 here). The groups are the user's already. */
  int ng = getgroups(0, NULL);
  cleanup_free gid_t *groups = fp_xcalloc(ng > 0 ? (size_t)ng : 1, sizeof *groups);
  if (ng < 0 || (ng = getgroups(ng, groups)) < 0) {
    fp_slurm_say("fpull: the job's groups: %s", strerror(errno));
    return FPULL_EFAIL;
  }
  /* Only the effective uid is the user's here: back to root to be allowed to drop all. */
  if (seteuid(0) < 0) {
    fp_slurm_say("fpull: cannot become root: %s", strerror(errno));
    return FPULL_EFAIL;
  }
  /* As root, before anything of the image is read: the job's directory, the user's, in
   * the root-only run_dir. */
  fpull_err err = {0};
  cleanup_close int run_fd = -1;
  if (fp_slurm_run_dir_open(&run_fd, r->s->run_dir, 1, &err) != 0 ||
      fp_slurm_job_dir_create(run_fd, r->job_id, r->uid, r->gid, &err) != 0) {
    fp_slurm_say("fpull: %s", err.msg);
    return err.code ? err.code : FPULL_EFAIL;
  }
  if (r->s->store_max && fp_slurm_store_dir_create(run_fd, r->uid, r->gid, &err) != 0) {
    fp_slurm_say("fpull: %s/%s", r->s->run_dir, err.msg);
    return err.code ? err.code : FPULL_EFAIL;
  }
  close(run_fd);
  run_fd = -1;
  if (setgroups((size_t)ng, groups) < 0 || setresgid(r->gid, r->gid, r->gid) < 0 ||
      setresuid(r->uid, r->uid, r->uid) < 0) {
    fp_slurm_say("fpull: cannot become uid %u: %s", (unsigned)r->uid, strerror(errno));
    return FPULL_EFAIL;
  }
  uid_t ru, eu, su;
  if (getresuid(&ru, &eu, &su) < 0 || ru != r->uid || eu != r->uid || su != r->uid)
    return FPULL_EFAIL;
  prctl(PR_SET_DUMPABLE, 1);
  umask(077);
  struct runner rn = {.r = r};
  snprintf(rn.step, sizeof rn.step, "%" PRIu32 "/%" PRIu32, r->job_id, r->step_id);
  cleanup_free char *jobdir = fp_xasprintf("%s/%" PRIu32, r->s->run_dir, r->job_id);
  cleanup_free char *stepdir = fp_xasprintf("%s/%" PRIu32, jobdir, r->step_id);
  if (mkdir(stepdir, 0700) < 0 && errno != EEXIST) {
    fp_slurm_say("fpull: %s: %s", stepdir, strerror(errno));
    return FPULL_EFAIL;
  }
  snprintf(rn.bundle, sizeof rn.bundle, "%s/bundle", stepdir);
  snprintf(rn.tree, sizeof rn.tree, "%s", rn.bundle);
  rn.pull_image = r->image;
  int store_lock = -1;
  /* The user's own cache (their HOME) keeps images between jobs; without a home to write,
   * one for the job only. */
  if (!r->cache && !dir_writable(r->xdg_cache_home) && !dir_writable(r->home))
    snprintf(rn.cache, sizeof rn.cache, "%s/cache", jobdir);
  env_add(&rn.envp, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  env_add(&rn.envp, "HOME", r->home);
  env_add(&rn.envp, "DOCKER_CONFIG", r->docker_config);
  env_add(&rn.envp, "XDG_CONFIG_HOME", r->xdg_config_home);
  env_add(&rn.envp, "XDG_CACHE_HOME", r->xdg_cache_home);
  env_add(&rn.envp, "XDG_RUNTIME_DIR", stepdir);
  env_add(&rn.envp, "FPULL_SHARED_CACHES", r->s->cache_dir);
  env_add(&rn.envp, "FPULL_CACHE", r->cache);
  env_add(&rn.envp, "FPULL_DATA_DIR", r->s->data_dir);
  /* The helpers below read the same. */
  for (size_t i = 0; rn.envp[i]; i++)
    putenv(rn.envp[i]);

  int rc;
  if (r->image[0] == '/') {
    rc = from_squashfs(&rn);
    if (rc)
      return rc;
    if (r->entrypoint)
      fp_slurm_say(
          "fpull: %s: --fpull-entrypoint: a SquashFS file has no image configuration, so no "
          "Entrypoint: the command runs as given",
          r->image);
    send_rec(info, 'D', "");
  } else {
    cJSON *res = NULL;
    int squashfs = r->squashfs && fp_slurm_sqsh_mountable();
    if (r->squashfs && !squashfs)
      fp_slurm_say("fpull: %s: --fpull-format=squashfs: this node cannot mount SquashFS files "
                   "for users (it needs squashfuse, fuse-overlayfs and a /dev/fuse users may "
                   "open): unpacked instead",
                   r->image);
    rc = squashfs          ? pull_squashfs(&rn, &res)
         : r->s->store_max ? from_store(&rn, &res, &store_lock)
                           : pull(&rn, &res);
    if (rc)
      return rc; /* fpull said why on the step's stderr */
    say_chosen(&rn, res);
    const char *digest = cJSON_GetStringValue(cJSON_GetObjectItem(res, "manifest_digest"));
    if (r->save && digest)
      save(&rn, digest);
    if (r->entrypoint && digest && (rc = send_entrypoint(&rn, digest, info)) != 0) {
      cJSON_Delete(res);
      return rc;
    }
    send_rec(info, 'D', digest ? digest : "");
    cJSON_Delete(res);
  }
  cleanup_free char *workdir = NULL;
  cleanup_strv char **env = NULL;
  rc = write_spec(&rn, &workdir, &env);
  if (rc)
    return rc;
  if (workdir)
    send_rec(info, 'W', workdir);
  for (size_t i = 0; env && env[i]; i++)
    send_rec(info, 'E', env[i]);
  rc = runtime(&rn, "create", "--bundle", rn.bundle, 0);
  if (rc)
    return FPULL_EFAIL;
  /* runc and crun both say the init's pid in `state`. */
  struct fp_buf out = {0};
  {
    char rtbuf[PATH_MAX];
    const char *rt = runtime_path(r->s->runtime, rtbuf, sizeof rtbuf);
    cleanup_free char *state = fp_xasprintf("%s/runtime", stepdir);
    char name[64];
    snprintf(name, sizeof name, "fpull-%" PRIu32 ".%" PRIu32, r->job_id, r->step_id);
    const char *argv[8];
    size_t n = runtime_head(argv, rt, state);
    argv[n++] = "state";
    argv[n++] = name;
    argv[n] = NULL;
    rc = run((char *const *)argv, rn.envp, &out, 0);
  }
  cJSON *st = rc == 0 ? cJSON_ParseWithLength(out.data ? out.data : "", out.len) : NULL;
  fp_buf_free(&out);
  double pid = cJSON_GetNumberValue(cJSON_GetObjectItem(st, "pid"));
  cJSON_Delete(st);
  if (!(pid > 1) || pid > INT_MAX) {
    fp_slurm_say("fpull: %s state: no pid of the container", r->s->runtime);
    runtime(&rn, "delete", "--force", NULL, 1);
    return FPULL_EFAIL;
  }
  char pidbuf[32];
  snprintf(pidbuf, sizeof pidbuf, "%.0f", pid);
  send_rec(info, 'P', pidbuf);
  int rc2 = info_publish(r, info);
  /* The tasks wait for this end of the pipe to close. */
  close(r->info_fd);
  /* Once every local task has joined (each says so), the namespaces live on in them and
   * the container's init is no longer needed. */
  for (uint32_t joined = 0; rc2 == 0 && joined < r->ntasks;) {
    char c;
    ssize_t n = read(ack, &c, 1);
    if (n == 1)
      joined++;
    else if (n == 0 || errno != EINTR)
      break;
  }
  /* Without a PID namespace of its own, runc finds the container's processes through its
   * cgroup, which a rootless container has not: it would leave the init running. It is
   * our child (we are the subreaper): kill and reap it, then let the runtime forget it. */
  kill((pid_t)pid, SIGKILL);
  while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
    ;
  /* Every task has read it; its pid is no one's to kill any more. */
  cleanup_free char *infop = info_path(r->s, r->job_id, r->step_id);
  unlink(infop);
  runtime(&rn, "delete", "--force", NULL, 1);
  /* A kept tree stays locked, and a mounted image's daemons (our children, in our process
   * group) serve it, while the step runs: the step's end kills us. Not with the
   * step's stdio open, which Slurm waits to see closed before it ends the step. */
  if (rc2 == 0 && (store_lock >= 0 || rn.mounted)) {
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3 && nul >= 0; fd++)
      dup2(nul, fd);
    for (;;)
      pause();
  }
  return rc2;
}

/* ---- in slurmstepd ------------------------------------------------------------------ */

int fp_slurm_container_start(struct fp_slurm_container *c, const struct fp_slurm_request *req,
                             fpull_err *err)
{
  int info[2], ack[2];
  if (pipe2(info, O_CLOEXEC) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "pipe: %s", strerror(errno));
  if (pipe2(ack, O_CLOEXEC) < 0) {
    close(info[0]);
    close(info[1]);
    return fpull_err_set(err, FPULL_EFAIL, "pipe: %s", strerror(errno));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return fpull_err_set(err, FPULL_EFAIL, "fork: %s", strerror(errno));
  if (pid == 0) {
    /* Dies with slurmstepd; its own process group, so that cancelling kills fpull too.
     * slurmstepd's thread blocks signals that fpull must get (SIGTERM from scancel, our
     * SIGALRM): none blocked, default actions. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
      if (sig != SIGKILL && sig != SIGSTOP)
        signal(sig, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(FPULL_EFAIL);
    setpgid(0, 0);
    /* The container's init, which the runtime leaves behind, stays ours (and in our
     * process group): killing the group ends it too, never an orphan holding the image. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    close(info[0]);
    close(ack[1]);
    /* Nothing of slurmstepd's stays open here (its sockets, the tasks' stdio pipes): a
     * runner that outlives the tasks must not keep the step from ending. */
    for (int fd = 3; fd < 1024; fd++)
      if (fd != info[1] && fd != ack[0])
        close(fd);
    struct fp_slurm_request r = *req;
    r.info_fd = info[1];
    struct fp_buf recs = {0};
    int rc = runner_main(&r, &recs, ack[0]);
    if (rc) {
      char code[16];
      snprintf(code, sizeof code, "%d", rc);
      send_rec(&recs, 'X', code);
      info_publish(&r, &recs);
    }
    _exit(rc & 0xff);
  }
  runner_pid = pid;
  setpgid(pid, pid);
  close(info[1]);
  close(ack[0]);
  /* The tasks, forked after this, wait on info (see fp_slurm_container_wait): the step is
   * running meanwhile, so that scancel reaches the pull at once. */
  c->info_fd = info[0];
  c->ack_fd = ack[1];
  return 0;
}

int fp_slurm_container_wait(struct fp_slurm_container *c, const struct fp_slurm_settings *s,
                            uint32_t job_id, uint32_t step_id, uid_t uid, fpull_err *err)
{
  char b;
  while (read(c->info_fd, &b, 1) < 0 && errno == EINTR)
    ;
  close(c->info_fd);
  c->info_fd = -1;
  cleanup_free char *path = info_path(s, job_id, step_id);
  char *data = NULL;
  size_t len = 0;
  /* Root reads it: only the runner's own file, as the user could read it. */
  cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
      st.st_nlink != 1 || fp_read_fd(fd, INFO_MAX, &data, &len) != 0)
    return fpull_err_set(err, FPULL_EFAIL, "the step's pull ended without a result (killed?)");
  const char *pidrec = NULL;
  int code = 0;
  for (size_t off = 0; off < len;) {
    const char *rec = data + off;
    size_t n = strnlen(rec, len - off);
    if (off + n >= len)
      break;
    if (rec[0] == 'D')
      snprintf(c->digest, sizeof c->digest, "%s", rec + 1);
    else if (rec[0] == 'W')
      c->workdir = fp_xstrdup(rec + 1);
    else if (rec[0] == 'E')
      c->env = fp_strv_push(c->env, rec + 1);
    else if (rec[0] == 'N')
      c->entrypoint = fp_strv_push(c->entrypoint, rec + 1);
    else if (rec[0] == 'P')
      pidrec = rec + 1;
    else if (rec[0] == 'X')
      code = atoi(rec + 1);
    off += n + 1;
  }
  int rc = 0;
  if (code || !pidrec) {
    /* The runner or fpull said why on the step's stderr. */
    err->code = code ? code : FPULL_EFAIL;
    err->msg[0] = '\0';
    rc = err->code;
  } else {
    rc = fp_slurm_ns_open(c, pidrec, uid, err);
  }
  free(data);
  return rc;
}

void fp_slurm_container_joined(struct fp_slurm_container *c)
{
  char one = 1;
  if (c->ack_fd >= 0) {
    /* A runner that is gone is no reason for the task to die of SIGPIPE. */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    ssize_t w = write(c->ack_fd, &one, 1);
    (void)w;
    signal(SIGPIPE, old);
    close(c->ack_fd);
    c->ack_fd = -1;
  }
}
