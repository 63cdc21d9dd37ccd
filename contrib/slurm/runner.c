/* fpull-slurm-runner: pulls the step's image and creates its container, as the job's user
 * (see container.h). slurmstepd execs it with every id the user's, the request on
 * descriptor 3 (request.h), the tasks' info pipe on 4 and their acknowledgements on 5:
 * a fresh program, not a copy of slurmstepd. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <grp.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sys/syscall.h>

#include <fpull/cache.h>
#include <fpull/config.h>
#include <fpull/ref.h>

#include "container.h"
#include "request.h"
#include "run.h"
#include "sqsh_config.h"
#include "sqsh_mount.h"
#include "store.h"
#include "util.h"

/* The runner's records for the tasks, each "K<value>\0": D digest, W workdir, E one Env
 * entry, N one Entrypoint element (--fpull-entrypoint), P the holder's pid and Q its
 * child's (last), X an exit code when it failed. */
/* PATH where the image names none: the runtimes' default. */
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define SPEC_MAX (4u << 20)

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
  int home_mounted;         /* the user's home is bind mounted at its own path */
  const char *rootfs;       /* the container's root when it is not the tree's rootfs/ (a
                               writable layer over a kept tree), or NULL */
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
  /* The site's policy for every pull of every step: no option of the user's replaces it. */
  if (rn->r->s->policy) {
    argv[n++] = "--policy";
    argv[n++] = rn->r->s->policy;
    argv[n++] = "--require-signatures";
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

/* What of the pull's stderr reaches the step's. With --fpull-quiet, fpull's errors only;
 * by default also the progress lines of a pull slow enough to print them (one every few
 * seconds), but not the first and last lines of every pull: the line that says what this
 * node chose is enough. The container runs no command of the image's: a warning that the
 * image names none would only mislead. */
static int keep_quiet(const char *line)
{
  return strncmp(line, "fpull: ", 7) == 0 && !strstr(line, "neither Entrypoint nor Cmd");
}

static int keep_default(const char *line)
{
  return keep_quiet(line) || (strstr(line, " downloaded, ") && !strstr(line, ": done: "));
}

/* fpull pull --format bundle (or rn->format) as the user; the --json result into out. */
static int pull_once(struct runner *rn, int offline, int quiet, struct fp_buf *out)
{
  const struct fp_slurm_request *r = rn->r;
  char jobs[16];
  snprintf(jobs, sizeof jobs, "%d", r->s->jobs);
  const char *argv[32];
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
  char max[48];
  if (r->s->max_unpacked && !rn->inspect) {
    snprintf(max, sizeof max, "--max-unpacked=%lluB", r->s->max_unpacked);
    argv[n++] = max;
  }
  argv[n++] = "--";
  argv[n++] = rn->pull_image;
  if (!rn->inspect)
    argv[n++] = rn->dest[0] ? rn->dest : rn->tree;
  argv[n] = NULL;
  out->len = 0;
  if (fp_slurm_run_timed_out())
    return FPULL_ENET;
  return fp_slurm_run_to((char *const *)argv, rn->envp, out, quiet, NULL,
                         r->quiet ? keep_quiet : keep_default);
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
  if (rn->r->quiet)
    return;
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
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    /* Said here, as the user and in fpull's words, rather than by the runtime. */
    if (access(m[i].src, F_OK) != 0) {
      fp_slurm_say("fpull: %s: %s: %s", what, m[i].src, strerror(errno));
      rc = FPULL_EUSAGE;
      break;
    }
    cJSON *b = bind_mount(m[i].src, m[i].dst, m[i].ro);
    cJSON *o = cJSON_GetObjectItem(b, "options");
    for (size_t j = 0; m[i].options && m[i].options[j]; j++)
      if (strcmp(m[i].options[j], "nosuid") != 0)
        cJSON_AddItemToArray(o, cJSON_CreateString(m[i].options[j]));
    cJSON_AddItemToArray(arr, b);
  }
  fp_slurm_mounts_free(m, n);
  return rc;
}

/* path (below rootfs, resolved inside it as the kernel would for a process there) into
 * *out; "" when it is missing. */
static void read_in_root(const char *rootfs, const char *path, struct fp_buf *out)
{
  cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
                         .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
  cleanup_close int fd = root < 0 ? -1 : (int)syscall(SYS_openat2, root, path, &how, sizeof how);
  char *data = NULL;
  size_t len = 0;
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      fp_read_fd(fd, SPEC_MAX, &data, &len) == 0 && len)
    fp_buf_append(out, data, len);
  free(data);
}

static int exists_in_root(const char *rootfs, const char *path)
{
  cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                         .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
  cleanup_close int fd = root < 0 ? -1 : (int)syscall(SYS_openat2, root, path, &how, sizeof how);
  return fd >= 0;
}

/* The image's lines of a passwd or group file (text), without those of the same name or
 * id as the one added in front of them. */
static void merge_id_file(struct fp_buf *out, const char *first, const char *name, unsigned id,
                          const struct fp_buf *image)
{
  fp_buf_append(out, first, strlen(first));
  for (size_t off = 0; off < image->len;) {
    const char *line = image->data + off;
    const char *nl = memchr(line, '\n', image->len - off);
    size_t n = nl ? (size_t)(nl - line) : image->len - off;
    off += n + (nl != NULL);
    const char *c1 = memchr(line, ':', n);
    const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
    if (!c1 || !c2)
      continue;
    char idbuf[16];
    snprintf(idbuf, sizeof idbuf, "%u", id);
    size_t idlen = strlen(idbuf);
    int same_name = (size_t)(c1 - line) == strlen(name) && strncmp(line, name, strlen(name)) == 0;
    int same_id = strncmp(c2 + 1, idbuf, idlen) == 0 && c2[1 + idlen] == ':';
    if (same_name || same_id)
      continue;
    fp_buf_append(out, line, n);
    fp_buf_append(out, "\n", 1);
  }
}

static int write_small(const char *path, const struct fp_buf *b)
{
  cleanup_close int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  return fd >= 0 && fchmod(fd, 0644) == 0 &&
                 write(fd, b->data ? b->data : "", b->len) == (ssize_t)b->len
             ? 0
             : -1;
}

/* The user as enroot shows them: their name, uid, gid, home and shell in front of the
 * image's /etc/passwd, their groups in front of its /etc/group, in files of the step's
 * bound read-only over the image's (a kept tree, which the user's other steps share, is not
 * changed). The names are the host's (its NSS, as the user sees it). */
static void add_identity(struct runner *rn, cJSON *mounts, const char *rootfs)
{
  const struct fp_slurm_request *r = rn->r;
  struct passwd *pw = getpwuid(r->uid);
  char fallback[32];
  snprintf(fallback, sizeof fallback, "user%u", (unsigned)r->uid);
  const char *name = pw ? pw->pw_name : fallback;
  const char *home = rn->home_mounted ? r->home : pw ? pw->pw_dir : "/";
  const char *shell =
      pw && pw->pw_shell && exists_in_root(rootfs, pw->pw_shell) ? pw->pw_shell : "/bin/sh";
  struct fp_buf image = {0}, out = {0};
  cleanup_free char *line =
      fp_xasprintf("%s:x:%u:%u:%s:%s:%s\n", name, (unsigned)r->uid, (unsigned)r->gid,
                   pw && pw->pw_gecos ? pw->pw_gecos : "", home, shell);
  read_in_root(rootfs, "etc/passwd", &image);
  merge_id_file(&out, line, name, (unsigned)r->uid, &image);
  cleanup_free char *passwd = fp_xasprintf("%s/passwd", rn->bundle);
  int ok = write_small(passwd, &out) == 0;
  image.len = out.len = 0;
  struct group *gr = getgrgid(r->gid);
  char gfallback[32];
  snprintf(gfallback, sizeof gfallback, "group%u", (unsigned)r->gid);
  const char *gname = gr ? gr->gr_name : gfallback;
  cleanup_free char *gline = fp_xasprintf("%s:x:%u:%s\n", gname, (unsigned)r->gid, name);
  read_in_root(rootfs, "etc/group", &image);
  merge_id_file(&out, gline, gname, (unsigned)r->gid, &image);
  cleanup_free char *group = fp_xasprintf("%s/group", rn->bundle);
  ok = ok && write_small(group, &out) == 0;
  fp_buf_free(&image);
  fp_buf_free(&out);
  if (!ok) {
    fp_slurm_say("fpull: warning: the user's passwd and group entries: %s", strerror(errno));
    return;
  }
  cJSON_AddItemToArray(mounts, bind_mount(passwd, "/etc/passwd", 1));
  cJSON_AddItemToArray(mounts, bind_mount(group, "/etc/group", 1));
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
  cJSON_AddStringToObject(root, "path", rn->rootfs ? rn->rootfs : own ? "rootfs" : rootfs);
  if (r->readonly)
    cJSON_AddTrueToObject(root, "readonly");
  cJSON *p = cJSON_AddObjectToObject(spec, "process");
  cJSON_AddFalseToObject(p, "terminal");
  cJSON *u = cJSON_AddObjectToObject(p, "user");
  cJSON_AddNumberToObject(u, "uid", 0);
  cJSON_AddNumberToObject(u, "gid", 0);
  /* The holder (hold.c), the runner's descriptor 3, run as it is, whatever the image
   * holds: the host's /proc is mounted. */
  cJSON *args = cJSON_AddArrayToObject(p, "args");
  char id[16];
  cJSON_AddItemToArray(args, cJSON_CreateString("/proc/self/fd/3"));
  snprintf(id, sizeof id, "%u", (unsigned)r->uid);
  cJSON_AddItemToArray(args, cJSON_CreateString(id));
  snprintf(id, sizeof id, "%u", (unsigned)r->gid);
  cJSON_AddItemToArray(args, cJSON_CreateString(id));
  cJSON_AddArrayToObject(p, "env");
  cJSON_AddStringToObject(p, "cwd", "/");
  cJSON_AddTrueToObject(p, "noNewPrivileges");
  /* The holder's child maps the container's root (the user) in its nested namespace,
   * which the kernel allows only where the namespace's creator could set file
   * capabilities: CAP_SETFCAP in the container's namespace, which is the user's own. */
  cJSON *caps = cJSON_AddObjectToObject(p, "capabilities");
  static const char *const sets[] = {"bounding", "effective", "permitted"};
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
    cJSON_AddItemToArray(cJSON_AddArrayToObject(caps, sets[i]), cJSON_CreateString("CAP_SETFCAP"));
  cJSON *mounts = cJSON_AddArrayToObject(spec, "mounts");
  cJSON_AddItemToArray(mounts, bind_mount("/proc", "/proc", 0));
  cJSON_AddItemToArray(mounts, bind_mount("/sys", "/sys", 1));
  /* The host's /dev whole: GPUs are there as on the host, NVIDIA's (the hook below adds
   * the driver's libraries) and AMD's (/dev/kfd and /dev/dri's render nodes, which need
   * no hook: ROCm's libraries are the image's). Which of them a task may open is Slurm's
   * device cgroup's call (ConstrainDevices=yes in cgroup.conf), as outside. */
  cJSON_AddItemToArray(mounts, bind_mount("/dev", "/dev", 0));
  int rc = add_mounts(mounts, "plugin argument mounts", r->s->mounts);
  rn->home_mounted = rc == 0 && r->mount_home && dir_writable(r->home);
  if (rn->home_mounted)
    cJSON_AddItemToArray(mounts, bind_mount(r->home, r->home, 0));
  /* Slurm's PMIx server keeps the step's data store there, which every MPI task maps. */
  if (rc == 0 && r->pmix_dir && dir_writable(r->pmix_dir)) {
    cJSON *pm = bind_mount(r->pmix_dir, r->pmix_dir, 0);
    cJSON *o = cJSON_GetObjectItem(pm, "options");
    cJSON_AddItemToArray(o, cJSON_CreateString("nodev"));
    cJSON_AddItemToArray(o, cJSON_CreateString("noexec"));
    cJSON_AddItemToArray(mounts, pm);
  }
  /* The batch script runs inside: slurmstepd execs it by its path in slurmd's spool. */
  if (rc == 0 && r->script) {
    cJSON *sc = bind_mount(r->script, r->script, 1);
    cJSON_AddItemToArray(cJSON_GetObjectItem(sc, "options"), cJSON_CreateString("nodev"));
    cJSON_AddItemToArray(mounts, sc);
  }
  if (rc == 0)
    rc = add_mounts(mounts, "--fpull-mounts", r->mounts);
  if (rc == 0 && (mkdir(rn->bundle, 0700) == 0 || errno == EEXIST))
    add_identity(rn, mounts, own ? rootfs : rootfs);
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
static int runtime(struct runner *rn, const char *verb, const char *const *extra, int quiet)
{
  char rtbuf[PATH_MAX];
  const char *rt = runtime_path(rn->r->s->runtime, rtbuf, sizeof rtbuf);
  cleanup_free char *state = fp_xasprintf("%s/%s/runtime", rn->r->s->run_dir, rn->step);
  char name[64];
  snprintf(name, sizeof name, "fpull-%" PRIu32 ".%" PRIu32, rn->r->job_id, rn->r->step_id);
  const char *argv[16];
  size_t n = runtime_head(argv, rt, state);
  argv[n++] = verb;
  for (size_t i = 0; extra && extra[i] && n < 14; i++)
    argv[n++] = extra[i];
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

static const char *const force[] = {"--force", NULL};

/* The holder (hold.c) as the container's process: created with its program as descriptor
 * 3 and a pipe as 4, started, and its word read back: its pid and its child's (the
 * nested user namespace's). 0, or an exit code after saying why. */
static int start_holder(struct runner *rn, long *holder, long *nested)
{
  const struct fp_slurm_request *r = rn->r;
  cleanup_close int prog = open(r->holder, O_RDONLY | O_CLOEXEC);
  int rep[2];
  if (prog < 0 || pipe2(rep, O_CLOEXEC) < 0) {
    fp_slurm_say("fpull: %s: %s", r->holder, strerror(errno));
    return FPULL_EFAIL;
  }
  cleanup_close int rep_r = rep[0];
  const char *const create[] = {"--preserve-fds=2", "--bundle", rn->bundle, NULL};
  int fds[2] = {prog, rep[1]};
  fp_slurm_run_preserve(fds, 2);
  int rc = runtime(rn, "create", create, 0);
  close(rep[1]);
  if (rc == 0)
    rc = runtime(rn, "start", NULL, 0);
  if (rc) {
    runtime(rn, "delete", force, 1);
    return FPULL_EFAIL;
  }
  char buf[64] = "";
  size_t got = 0;
  struct pollfd p = {.fd = rep_r, .events = POLLIN};
  while (got < sizeof buf - 1) {
    int n = poll(&p, 1, 30000);
    if (n < 0 && errno == EINTR)
      continue;
    ssize_t k = n > 0 ? read(rep_r, buf + got, sizeof buf - 1 - got) : -1;
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  buf[got] = '\0';
  if (sscanf(buf, "%ld %ld\n", holder, nested) != 2 || *holder <= 1 || *nested <= 1) {
    char why[1024];
    cleanup_free char *log = fp_xasprintf("%s/%s/runtime.log", r->s->run_dir, rn->step);
    fp_slurm_log_last_line(log, why, sizeof why);
    fp_slurm_say("fpull: the container's holder did not start%s%s", why[0] ? ": " : "", why);
    runtime(rn, "delete", force, 1);
    return FPULL_EFAIL;
  }
  return 0;
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
  const char *argv[24];
  size_t n = 0;
  argv[n++] = r->s->fpull;
  argv[n++] = "pull";
  argv[n++] = "--format=squashfs";
  argv[n++] = "--offline";
  argv[n++] = "--force";
  argv[n++] = "--quiet";
  char max[48];
  if (r->s->max_unpacked) {
    snprintf(max, sizeof max, "--max-unpacked=%lluB", r->s->max_unpacked);
    argv[n++] = max;
  }
  n = common_args(rn, argv, n);
  argv[n++] = "--";
  argv[n++] = pinned;
  argv[n++] = r->save;
  argv[n] = NULL;
  int rc = run((char *const *)argv, rn->envp, NULL, 0);
  if (rc)
    fp_slurm_say("fpull: warning: --fpull-save=%s: not saved (exit %d)", r->save, rc);
  else if (!r->quiet)
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

/* The bundle's config.json for a .sqsh image: the image config its enroot files keep
 * (sqsh_config.h), each file that cannot be used said in one line; the default PATH, /
 * and no Entrypoint where they keep none. --fpull-entrypoint: its Entrypoint as N records.
 * FPULL_IMAGE_DIGEST stays empty: the file's provenance line is no digest of what runs, and
 * anyone who can write the file can change it. 0, or -1 after saying why. */
static int sqsh_config(const struct runner *rn, const char *rootfs, struct fp_buf *info)
{
  const struct fp_slurm_request *r = rn->r;
  struct fp_slurm_sqsh_config c;
  fpull_err env_err = {0}, rc_err = {0};
  cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    fp_slurm_say("fpull: warning: %s: %s: %s: the image's config is not read", r->image, rootfs,
                 strerror(errno));
  fp_slurm_sqsh_config_read(&c, root, &env_err, &rc_err);
  if (env_err.code)
    fp_slurm_say("fpull: warning: %s: %s: the image's Env is not used", r->image, env_err.msg);
  if (rc_err.code)
    fp_slurm_say("fpull: warning: %s: %s: the image's WorkingDir and Entrypoint are not used",
                 r->image, rc_err.msg);
  for (size_t i = 0; c.host_refs && c.host_refs[i]; i++)
    fp_slurm_say("fpull: warning: %s: /etc/environment: %s takes the host's ${VAR}, which only "
                 "enroot start substitutes: not set",
                 r->image, c.host_refs[i]);
  if (r->entrypoint && !c.has_rc && !rc_err.code)
    fp_slurm_say("fpull: %s: --fpull-entrypoint: the SquashFS file has no /etc/rc (enroot's "
                 "command script), so no Entrypoint: the command runs as given",
                 r->image);
  for (size_t i = 0; r->entrypoint && c.entrypoint && c.entrypoint[i]; i++)
    send_rec(info, 'N', c.entrypoint[i]);
  cJSON *spec = cJSON_CreateObject();
  cJSON *proc = cJSON_AddObjectToObject(spec, "process");
  cJSON_AddStringToObject(proc, "cwd", c.workdir ? c.workdir : "/");
  cJSON *env = cJSON_AddArrayToObject(proc, "env");
  int has_path = 0;
  for (size_t i = 0; c.env && c.env[i]; i++) {
    has_path |= strncmp(c.env[i], "PATH=", 5) == 0;
    cJSON_AddItemToArray(env, cJSON_CreateString(c.env[i]));
  }
  if (!has_path)
    cJSON_AddItemToArray(env, cJSON_CreateString(DEFAULT_PATH));
  fp_slurm_sqsh_config_free(&c);
  cleanup_free char *text = cJSON_PrintUnformatted(spec);
  cJSON_Delete(spec);
  return text ? write_bundle_config(rn, text) : -1;
}

/* --fpull-image=/path/file.sqsh (made by fpull pull --format squashfs, enroot import or
 * mksquashfs): mounted, or extracted as the user into the step's rootfs with unsquashfs (a
 * copy per step), and run with the image config its enroot files keep (sqsh_config). */
static int from_squashfs(struct runner *rn, struct fp_buf *info)
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
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  if (!r->quiet)
    fp_slurm_say("fpull: %s: %s (a SquashFS file, %s)", host, r->image,
                 rn->mounted ? "mounted with squashfuse" : "unpacked with unsquashfs");
  return sqsh_config(rn, rootfs, info) == 0 ? 0 : FPULL_EFAIL;
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
  const char *argv[20];
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

/* --fpull-name=NAME: the container's tree (fpull's bundle layout: rootfs/, config.json) is
 * kept as it is left, for later steps of the job (container_scope=job: in the job's
 * directory, gone with the job) or of the user's later jobs on this node (global: in the
 * user's store directory). An existing name is run as it is, without a pull; its "digest"
 * file says what it was made from. NAME.lock: exclusive while the tree is made, shared
 * while a step runs in it. */
static int from_name(struct runner *rn, cJSON **res, int *lock, int *reused)
{
  const struct fp_slurm_request *r = rn->r;
  cleanup_free char *base = r->s->container_scope_global
                                ? fp_xasprintf("%s/store/%u/names", r->s->run_dir, (unsigned)r->uid)
                                : fp_xasprintf("%s/%" PRIu32 "/names", r->s->run_dir, r->job_id);
  cleanup_free char *lockp = fp_xasprintf("%s/%s.lock", base, r->name);
  cleanup_free char *digestp = fp_xasprintf("%s/%s/digest", base, r->name);
  if ((mkdir(base, 0700) < 0 && errno != EEXIST) ||
      (size_t)snprintf(rn->tree, sizeof rn->tree, "%s/%s", base, r->name) >= sizeof rn->tree) {
    fp_slurm_say("fpull: %s: %s", base, strerror(errno));
    return FPULL_EFAIL;
  }
  int fd = open(lockp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || flock(fd, LOCK_EX) < 0) {
    fp_slurm_say("fpull: %s: %s", lockp, strerror(errno));
    if (fd >= 0)
      close(fd);
    return FPULL_EFAIL;
  }
  char *digest = NULL;
  size_t len = 0;
  cleanup_free char *config = fp_xasprintf("%s/config.json", rn->tree);
  int rc = 0;
  if (fp_read_file(digestp, 128, &digest, &len) == 0 && access(config, F_OK) == 0) {
    *reused = 1;
    digest[strcspn(digest, "\n")] = '\0';
    *res = cJSON_CreateObject();
    cJSON_AddStringToObject(*res, "manifest_digest", digest);
    if (!r->quiet) {
      char host[256] = "";
      gethostname(host, sizeof host - 1);
      fp_slurm_say("fpull: %s: container %s (%s) as the job's earlier steps left it", host, r->name,
                   digest);
    }
    free(digest);
  } else {
    free(digest);
    snprintf(rn->dest, sizeof rn->dest, "%s", rn->tree);
    rc = pull(rn, res);
    const char *d =
        rc == 0 ? cJSON_GetStringValue(cJSON_GetObjectItem(*res, "manifest_digest")) : NULL;
    struct fp_buf b = {0};
    if (d)
      fp_buf_append(&b, d, strlen(d));
    if (rc == 0 && (!d || write_small(digestp, &b) != 0)) {
      fp_slurm_say("fpull: %s: %s", digestp, strerror(errno));
      rc = FPULL_EFAIL;
    }
    fp_buf_free(&b);
  }
  if (rc) {
    close(fd);
    return rc;
  }
  flock(fd, LOCK_SH);
  *lock = fd;
  return 0;
}

/* A kept tree is shared by the user's steps and jobs: each step writes into a layer of its
 * own over it (fuse-overlayfs, in the step's bundle, gone with the step). With
 * --fpull-readonly too: the runtime makes the mount points of the home, the batch script
 * and the site's mounts before it turns the root read-only, and they must land in the
 * step's layer. The tree stays as fpull unpacked it, and FPULL_IMAGE_DIGEST names what the
 * step runs. */
static int keep_pristine(struct runner *rn, const char *image)
{
  static char merged[PATH_MAX + 16];
  cleanup_free char *lower = fp_xasprintf("%s/rootfs", rn->tree);
  if (mkdir(rn->bundle, 0700) < 0 && errno != EEXIST) {
    fp_slurm_say("fpull: %s: %s", rn->bundle, strerror(errno));
    return FPULL_EFAIL;
  }
  if (fp_slurm_overlay_mount(lower, rn->bundle, rn->envp, image) < 0)
    return FPULL_EFAIL;
  snprintf(merged, sizeof merged, "%s/rootfs", rn->bundle);
  rn->rootfs = merged;
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
    if (!r->quiet)
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
  return keep_pristine(rn, r->image);
}

static int runner_main(const struct fp_slurm_request *r, struct fp_buf *info, int ack)
{
  /* Exec'd with every id the user's (container.c): nothing to drop here. */
  if (getuid() == 0 || geteuid() == 0) {
    fp_slurm_say("fpull: the runner must not run as root");
    return FPULL_EFAIL;
  }
  umask(077);
  struct runner rn = {.r = r};
  /* The array only: putenv keeps its strings in environ. */
  cleanup_free char **envp_array = NULL;
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
  envp_array = rn.envp;

  int rc;
  if (r->image[0] == '/' && r->s->policy) {
    /* A SquashFS file carries no signature the site's policy could check. */
    fp_slurm_say("fpull: %s: the site's signature policy (%s) admits registry images only: a "
                 "SquashFS file carries no signature (exit 9)",
                 r->image, r->s->policy);
    return FPULL_EPOLICY;
  }
  if (r->image[0] == '/') {
    rc = from_squashfs(&rn, info);
    if (rc)
      return rc;
    send_rec(info, 'D', "");
  } else {
    cJSON *res = NULL;
    int squashfs = r->squashfs && fp_slurm_sqsh_mountable();
    if (r->squashfs && !squashfs)
      fp_slurm_say("fpull: %s: --fpull-format=squashfs: this node cannot mount SquashFS files "
                   "for users (it needs squashfuse, fuse-overlayfs and a /dev/fuse users may "
                   "open): unpacked instead",
                   r->image);
    int store = r->s->store_max && fp_slurm_overlay_mountable();
    if (r->s->store_max && !store && !squashfs && !r->quiet)
      fp_slurm_say("fpull: %s: store_max=: this node cannot put a writable layer over a kept "
                   "image for users (it needs fuse-overlayfs and a /dev/fuse users may open): "
                   "unpacked for this step instead",
                   r->image);
    int reused = 0;
    rc = r->name    ? from_name(&rn, &res, &store_lock, &reused)
         : squashfs ? pull_squashfs(&rn, &res)
         : store    ? from_store(&rn, &res, &store_lock)
                    : pull(&rn, &res);
    if (rc)
      return rc; /* fpull said why on the step's stderr */
    if (!reused)
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
  if (rn.home_mounted)
    send_rec(info, 'H', r->home);
  for (size_t i = 0; env && env[i]; i++)
    send_rec(info, 'E', env[i]);
  long pid = 0, nested = 0;
  rc = start_holder(&rn, &pid, &nested);
  if (rc)
    return rc;
  char pidbuf[32];
  snprintf(pidbuf, sizeof pidbuf, "%ld", pid);
  send_rec(info, 'P', pidbuf);
  snprintf(pidbuf, sizeof pidbuf, "%ld", nested);
  send_rec(info, 'Q', pidbuf);
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
  runtime(&rn, "delete", force, 1);
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

int main(void)
{
  char *data = NULL;
  size_t len = 0;
  if (fp_read_fd(3, FP_SLURM_REQUEST_MAX, &data, &len) != 0) {
    fp_slurm_say("fpull: runner: no request: %s", strerror(errno));
    return FPULL_EFAIL;
  }
  close(3);
  /* What the runner starts (fpull, the runtime, squashfuse) must not hold the tasks'
   * pipes: the tasks wait for the info pipe's end to close. */
  fcntl(4, F_SETFD, FD_CLOEXEC);
  fcntl(5, F_SETFD, FD_CLOEXEC);
  struct fp_slurm_settings s;
  struct fp_slurm_request r;
  fpull_err err = {0};
  if (fp_slurm_request_unpack(&r, &s, data, len, &err) != 0) {
    fp_slurm_say("fpull: %s", err.msg);
    return err.code ? err.code : FPULL_EFAIL;
  }
  r.info_fd = 4;
  struct fp_buf recs = {0};
  int rc = runner_main(&r, &recs, 5);
  if (rc) {
    char code[16];
    snprintf(code, sizeof code, "%d", rc);
    send_rec(&recs, 'X', code);
    info_publish(&r, &recs);
  }
  fp_buf_free(&recs);
  fp_slurm_settings_free(&s);
  free(data);
  return rc & 0xff;
}
