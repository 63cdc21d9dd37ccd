/* config.json for a bundle: the runtime-spec defaults umoci unpack starts from (those of
 * `runc spec`), with the image config applied as umoci applies it: args = Entrypoint + Cmd,
 * Env over the default PATH and TERM, cwd = WorkingDir, the User resolved in the rootfs,
 * HOME from /etc/passwd when the image does not set it, Labels as annotations. Two
 * departures, because the image is untrusted and the runtime trusts config.json: only the
 * org.opencontainers.image.* Labels become annotations (crun acts on run.oci.*, runc on
 * org.criu.config, Kata, CRI-O and containerd on their own prefixes), and Env entries that
 * are no NAME=VALUE are dropped. Both with a warning count. */
#include <string.h>
#include <unistd.h>

#include "bundle.h"
#include "bundle_user.h"
#include "registry/json_strict.h"
#include "base/util.h"

#define FP_DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const cJSON *member(const cJSON *o, const char *key)
{
  return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *str_member(const cJSON *o, const char *key)
{
  const cJSON *v = member(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* KEY=VALUE into env: replaces an entry of the same KEY, else appends. */
static void env_set(cJSON *env, const char *kv)
{
  const char *eq = strchr(kv, '=');
  size_t kl = eq ? (size_t)(eq - kv) : strlen(kv);
  int i = 0;
  for (cJSON *e = env->child; e; e = e->next, i++)
    if (strncmp(e->valuestring, kv, kl) == 0 &&
        (e->valuestring[kl] == '=' || e->valuestring[kl] == '\0')) {
      cJSON_ReplaceItemInArray(env, i, cJSON_CreateString(kv));
      return;
    }
  cJSON_AddItemToArray(env, cJSON_CreateString(kv));
}

static int env_has(const cJSON *env, const char *key)
{
  size_t kl = strlen(key);
  for (const cJSON *e = env->child; e; e = e->next)
    if (strncmp(e->valuestring, key, kl) == 0 && e->valuestring[kl] == '=')
      return 1;
  return 0;
}

static void add_strings(cJSON *to, const cJSON *list)
{
  for (const cJSON *e = cJSON_IsArray(list) ? list->child : NULL; e; e = e->next)
    if (cJSON_IsString(e))
      cJSON_AddItemToArray(to, cJSON_CreateString(e->valuestring));
}

static cJSON *process(const cJSON *ic, const struct fp_exec_user *u, int rootless)
{
  cJSON *p = cJSON_CreateObject();
  /* Batch jobs have no terminal; runc refuses terminal: true without one. */
  cJSON_AddFalseToObject(p, "terminal");
  cJSON *user = cJSON_AddObjectToObject(p, "user");
  cJSON_AddNumberToObject(user, "uid", u->uid);
  cJSON_AddNumberToObject(user, "gid", u->gid);
  /* Rootless maps one gid: further groups could not be set (umoci drops them too). */
  if (u->n_groups && !rootless) {
    cJSON *g = cJSON_AddArrayToObject(user, "additionalGids");
    for (size_t i = 0; i < u->n_groups; i++)
      cJSON_AddItemToArray(g, cJSON_CreateNumber(u->groups[i]));
  }
  cJSON *args = cJSON_AddArrayToObject(p, "args");
  add_strings(args, member(ic, "Entrypoint"));
  add_strings(args, member(ic, "Cmd"));
  if (!args->child)
    fp_warn("the image sets neither Entrypoint nor Cmd: config.json has no process.args");
  cJSON *env = cJSON_AddArrayToObject(p, "env");
  cJSON_AddItemToArray(env, cJSON_CreateString(FP_DEFAULT_PATH));
  cJSON_AddItemToArray(env, cJSON_CreateString("TERM=xterm"));
  size_t bad_env = 0;
  for (const cJSON *e = cJSON_IsArray(member(ic, "Env")) ? member(ic, "Env")->child : NULL; e;
       e = e->next) {
    if (!cJSON_IsString(e))
      continue;
    /* "A" or "=x" is no variable: runtimes would pass it on as it is. */
    const char *eq = strchr(e->valuestring, '=');
    if (!eq || eq == e->valuestring)
      bad_env++;
    else
      env_set(env, e->valuestring);
  }
  if (bad_env)
    fp_warn("%zu Env entr%s of the image without NAME=VALUE not in config.json", bad_env,
            bad_env == 1 ? "y" : "ies");
  if (u->home && !env_has(env, "HOME")) {
    cleanup_free char *home = fp_xasprintf("HOME=%s", u->home);
    env_set(env, home);
  }
  const char *wd = str_member(ic, "WorkingDir");
  cleanup_free char *cwd = fp_xasprintf("%s%s", wd && wd[0] == '/' ? "" : "/", wd ? wd : "");
  cJSON_AddStringToObject(p, "cwd", cwd);
  static const char *const caps[] = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted",
                                     "ambient"};
  cJSON *c = cJSON_AddObjectToObject(p, "capabilities");
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
    cJSON_AddItemToObject(c, sets[i], cJSON_CreateStringArray(caps, 3));
  cJSON *rl = cJSON_AddArrayToObject(p, "rlimits");
  cJSON *nofile = cJSON_CreateObject();
  cJSON_AddStringToObject(nofile, "type", "RLIMIT_NOFILE");
  cJSON_AddNumberToObject(nofile, "hard", 1024);
  cJSON_AddNumberToObject(nofile, "soft", 1024);
  cJSON_AddItemToArray(rl, nofile);
  cJSON_AddTrueToObject(p, "noNewPrivileges");
  return p;
}

static void add_mount(cJSON *mounts, const char *dest, const char *type, const char *src,
                      const char *opts)
{
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "destination", dest);
  cJSON_AddStringToObject(m, "type", type);
  cJSON_AddStringToObject(m, "source", src);
  if (opts) {
    cJSON *o = cJSON_AddArrayToObject(m, "options");
    cleanup_free char *copy = fp_xstrdup(opts);
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
      cJSON_AddItemToArray(o, cJSON_CreateString(t));
  }
  cJSON_AddItemToArray(mounts, m);
}

/* As root: sysfs and cgroup mounts; rootless: what an unprivileged user namespace may
 * mount (umoci --rootless's choice: /sys bound read-only, no gid=5 for devpts). */
static cJSON *mounts(int rootless)
{
  cJSON *m = cJSON_CreateArray();
  add_mount(m, "/proc", "proc", "proc", NULL);
  add_mount(m, "/dev", "tmpfs", "tmpfs", "nosuid,strictatime,mode=755,size=65536k");
  add_mount(m, "/dev/pts", "devpts", "devpts",
            rootless ? "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620"
                     : "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620,gid=5");
  add_mount(m, "/dev/shm", "tmpfs", "shm", "nosuid,noexec,nodev,mode=1777,size=65536k");
  add_mount(m, "/dev/mqueue", "mqueue", "mqueue", "nosuid,noexec,nodev");
  if (rootless) {
    add_mount(m, "/sys", "bind", "/sys", "rbind,nosuid,noexec,nodev,ro");
    add_mount(m, "/etc/resolv.conf", "bind", "/etc/resolv.conf", "rbind,ro");
  } else {
    add_mount(m, "/sys", "sysfs", "sysfs", "nosuid,noexec,nodev,ro");
    add_mount(m, "/sys/fs/cgroup", "cgroup", "cgroup", "nosuid,noexec,nodev,relatime,ro");
  }
  return m;
}

cJSON *fp_bundle_id_map(unsigned host)
{
  cJSON *a = cJSON_CreateArray();
  cJSON *e = cJSON_CreateObject();
  cJSON_AddNumberToObject(e, "containerID", 0);
  cJSON_AddNumberToObject(e, "hostID", host);
  cJSON_AddNumberToObject(e, "size", 1);
  cJSON_AddItemToArray(a, e);
  return a;
}

static cJSON *linux_section(int rootless)
{
  cJSON *l = cJSON_CreateObject();
  if (rootless) {
    cJSON_AddItemToObject(l, "uidMappings", fp_bundle_id_map((unsigned)geteuid()));
    cJSON_AddItemToObject(l, "gidMappings", fp_bundle_id_map((unsigned)getegid()));
  } else {
    cJSON *dev = cJSON_CreateObject();
    cJSON_AddFalseToObject(dev, "allow");
    cJSON_AddStringToObject(dev, "access", "rwm");
    cJSON *devices = cJSON_CreateArray();
    cJSON_AddItemToArray(devices, dev);
    cJSON_AddItemToObject(cJSON_AddObjectToObject(l, "resources"), "devices", devices);
  }
  static const char *const ns_root[] = {"pid", "network", "ipc", "uts", "mount"};
  static const char *const ns_rootless[] = {"pid", "ipc", "uts", "mount", "user"};
  cJSON *ns = cJSON_AddArrayToObject(l, "namespaces");
  for (size_t i = 0; i < 5; i++) {
    cJSON *n = cJSON_CreateObject();
    cJSON_AddStringToObject(n, "type", rootless ? ns_rootless[i] : ns_root[i]);
    cJSON_AddItemToArray(ns, n);
  }
  static const char *const masked[] = {
      "/proc/kcore",       "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
      "/proc/sched_debug", "/sys/firmware",       "/proc/scsi"};
  static const char *const ro[] = {"/proc/asound", "/proc/bus", "/proc/fs",
                                   "/proc/irq",    "/proc/sys", "/proc/sysrq-trigger"};
  cJSON_AddItemToObject(l, "maskedPaths", cJSON_CreateStringArray(masked, 7));
  cJSON_AddItemToObject(l, "readonlyPaths", cJSON_CreateStringArray(ro, 6));
  return l;
}

/* The org.opencontainers.image.* Labels (the others are dropped: an annotation is an
 * instruction to some runtime, and the image must not give those), and the image's own
 * facts under the same names (as umoci). */
static cJSON *annotations(const cJSON *cfg, const cJSON *ic)
{
  static const char keep[] = "org.opencontainers.image.";
  cJSON *a = cJSON_CreateObject();
  const cJSON *labels = member(ic, "Labels");
  size_t dropped = 0;
  for (const cJSON *l = cJSON_IsObject(labels) ? labels->child : NULL; l; l = l->next) {
    if (!cJSON_IsString(l))
      continue;
    if (strncmp(l->string, keep, sizeof keep - 1) == 0)
      cJSON_AddStringToObject(a, l->string, l->valuestring);
    else
      dropped++;
  }
  if (dropped)
    fp_warn("%zu image label(s) not made annotations: only %s* are (runtimes act on others)",
            dropped, keep);
  static const char *const top[][2] = {{"architecture", "org.opencontainers.image.architecture"},
                                       {"author", "org.opencontainers.image.author"},
                                       {"created", "org.opencontainers.image.created"},
                                       {"os", "org.opencontainers.image.os"}};
  for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
    const char *v = str_member(cfg, top[i][0]);
    cJSON_DeleteItemFromObjectCaseSensitive(a, top[i][1]);
    cJSON_AddStringToObject(a, top[i][1], v ? v : "");
  }
  const char *stop = str_member(ic, "StopSignal");
  cJSON_DeleteItemFromObjectCaseSensitive(a, "org.opencontainers.image.stopSignal");
  cJSON_AddStringToObject(a, "org.opencontainers.image.stopSignal", stop ? stop : "");
  return a;
}

int fp_bundle_spec(char **out, const char *json, size_t len, int rootfs_fd, int rootless,
                   fpull_err *err)
{
  *out = NULL;
  cleanup_json cJSON *cfg = NULL;
  int rc = fp_json_parse_strict(&cfg, json, len, len + 1, "image config", err);
  if (rc)
    return rc;
  const cJSON *ic = member(cfg, "config");
  struct fp_exec_user u;
  rc = fp_exec_user_resolve(&u, str_member(ic, "User"), rootfs_fd, err);
  if (rc) {
    fp_exec_user_free(&u);
    return rc;
  }
  cleanup_json cJSON *spec = cJSON_CreateObject();
  cJSON_AddStringToObject(spec, "ociVersion", "1.0.2");
  cJSON_AddItemToObject(spec, "process", process(ic, &u, rootless));
  cJSON *root = cJSON_AddObjectToObject(spec, "root");
  cJSON_AddStringToObject(root, "path", "rootfs");
  cJSON_AddStringToObject(spec, "hostname", "fpull");
  cJSON_AddItemToObject(spec, "mounts", mounts(rootless));
  cJSON_AddItemToObject(spec, "linux", linux_section(rootless));
  cJSON_AddItemToObject(spec, "annotations", annotations(cfg, ic));
  fp_exec_user_free(&u);
  *out = cJSON_Print(spec);
  return 0;
}
