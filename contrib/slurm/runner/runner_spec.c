/* fpull-slurm-runner: the container's config.json (runtime-spec): the user's ids, the
 * namespaces, the mounts (the site's, the home, the job's, the batch script, PMIx) and the
 * user's passwd and group lines over the image's. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <grp.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sys/syscall.h>

#include "common/run.h"
#include "sinks/bundle.h"
#include "unpack/inroot.h"
#include "runner_spec.h"
#include "stage.h"

#define SPEC_MAX (4u << 20)

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

static size_t trimmed(const char *p)
{
  size_t n = p ? strlen(p) : 0;
  while (n > 1 && p[n - 1] == '/')
    n--;
  return n;
}

/* Whether a mount listed so far is at dst (a trailing "/" aside); with drop, each such one
 * is dropped (umount:DST). */
static int mounted_at(cJSON *arr, const char *dst, int drop)
{
  size_t n = trimmed(dst);
  int found = 0;
  for (int i = cJSON_GetArraySize(arr) - 1; i >= 0; i--) {
    const char *d =
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, i), "destination"));
    if (d && trimmed(d) == n && strncmp(d, dst, n) == 0) {
      found = 1;
      if (drop)
        cJSON_DeleteItemFromArray(arr, i);
    }
  }
  return found;
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
    if (m[i].kind == FP_MOUNT_UMOUNT) {
      mounted_at(arr, m[i].dst, 1);
      continue;
    }
    if (m[i].kind == FP_MOUNT_TMPFS) {
      cJSON *t = cJSON_CreateObject();
      cJSON_AddStringToObject(t, "destination", m[i].dst);
      cJSON_AddStringToObject(t, "type", "tmpfs");
      cJSON_AddStringToObject(t, "source", "tmpfs");
      cJSON *o = cJSON_AddArrayToObject(t, "options");
      cJSON_AddItemToArray(o, cJSON_CreateString("nosuid"));
      cJSON_AddItemToArray(o, cJSON_CreateString("nodev"));
      for (size_t j = 0; m[i].options && m[i].options[j]; j++)
        cJSON_AddItemToArray(o, cJSON_CreateString(m[i].options[j]));
      cJSON_AddItemToArray(arr, t);
      continue;
    }
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

int fp_runner_write_small(const char *path, const struct fp_buf *b)
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
  int ok = fp_runner_write_small(passwd, &out) == 0;
  image.len = out.len = 0;
  struct group *gr = getgrgid(r->gid);
  char gfallback[32];
  snprintf(gfallback, sizeof gfallback, "group%u", (unsigned)r->gid);
  const char *gname = gr ? gr->gr_name : gfallback;
  cleanup_free char *gline = fp_xasprintf("%s:x:%u:%s\n", gname, (unsigned)r->gid, name);
  read_in_root(rootfs, "etc/group", &image);
  merge_id_file(&out, gline, gname, (unsigned)r->gid, &image);
  cleanup_free char *group = fp_xasprintf("%s/group", rn->bundle);
  ok = ok && fp_runner_write_small(group, &out) == 0;
  fp_buf_free(&image);
  fp_buf_free(&out);
  if (!ok) {
    fp_slurm_say("fpull: warning: the user's passwd and group entries: %s", strerror(errno));
    return;
  }
  cJSON_AddItemToArray(mounts, bind_mount(passwd, "/etc/passwd", 1));
  cJSON_AddItemToArray(mounts, bind_mount(group, "/etc/group", 1));
}

/* The image's WorkingDir, made in the container's root when the layers lack it, as docker
 * and runc make it: the tasks enter it after they join. In the step's own tree or layer,
 * never a kept one; resolved inside the root. Said when it cannot be made (the tasks then
 * fail on it, naming it). */
static void make_workdir(const char *rootfs, const char *workdir)
{
  char clean[FP_PATH_MAX + 1];
  const char *why = NULL, *base = NULL;
  cleanup_close int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0 || fp_path_clean(workdir, clean, &why) != 0 || !clean[0])
    return;
  struct fp_root rt;
  fp_root_init(&rt, root, 0);
  cleanup_close int dir = fp_inroot_open(&rt, clean, 0);
  if (dir >= 0)
    return;
  cleanup_close int parent = fp_inroot_parent(&rt, clean, 1, &base);
  if (parent < 0 || (mkdirat(parent, base, 0755) < 0 && errno != EEXIST))
    fp_slurm_say("fpull: the image's WorkingDir %s cannot be made: %s", workdir, strerror(errno));
}

/* Writes the container's config.json: the image's rootfs, the user's id as the user
 * namespace's only one (runc needs a root inside: the user's uid is it; tasks that are not
 * to be root nest their own, see fp_slurm_container_join), user and mount namespaces only
 * (the host's network, PIDs and IPC, as a Slurm task has them), the host's /proc, /sys and
 * /dev, and the site's, the home and the job's bind mounts. No cgroups: the tasks stay in
 * Slurm's. The image's own config.json is kept as image.json. */
int fp_runner_write_spec(struct runner *rn, char **workdir, char ***env)
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
  if (*workdir)
    make_workdir(rn->rootfs ? rn->rootfs : rootfs, *workdir);
  if (r->readonly)
    cJSON_AddTrueToObject(root, "readonly");
  cJSON *p = cJSON_AddObjectToObject(spec, "process");
  cJSON_AddFalseToObject(p, "terminal");
  cJSON *u = cJSON_AddObjectToObject(p, "user");
  cJSON_AddNumberToObject(u, "uid", 0);
  cJSON_AddNumberToObject(u, "gid", 0);
  /* The holder (holder/hold.c), the runner's descriptor 3, run as it is, whatever the image
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
  rn->home_mounted = rc == 0 && r->mount_home && fp_runner_dir_writable(r->home);
  if (rn->home_mounted)
    cJSON_AddItemToArray(mounts, bind_mount(r->home, r->home, 0));
  /* Slurm's PMIx server keeps the step's data store there, which every MPI task maps. */
  if (rc == 0 && r->pmix_dir && fp_runner_dir_writable(r->pmix_dir)) {
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
  /* umount:HOME took the home away: HOME stays the job's, not a path that is not there. */
  if (rn->home_mounted && !mounted_at(mounts, r->home, 0))
    rn->home_mounted = 0;
  if (rc == 0 && (mkdir(rn->bundle, 0700) == 0 || errno == EEXIST))
    add_identity(rn, mounts, rootfs);
  cJSON *linux_ = cJSON_AddObjectToObject(spec, "linux");
  cJSON_AddItemToObject(linux_, "uidMappings", fp_bundle_id_map((unsigned)r->uid));
  cJSON_AddItemToObject(linux_, "gidMappings", fp_bundle_id_map((unsigned)r->gid));
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
