/* fpull Slurm plugin: plugstack.conf arguments and the job's options (see settings.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fpull/config.h>
#include <fpull/features.h>
#include <fpull/ref.h>

#include "settings.h"
#include "base/util.h"

#ifndef FPULL_BINDIR
#define FPULL_BINDIR "/usr/local/bin"
#endif

static const char *const arg_names[] = {"fpull",
                                        "runtime",
                                        "run_dir",
                                        "cache_dir",
                                        "config",
                                        "data_dir",
                                        "mounts",
                                        "env_passthrough",
                                        "nvidia_hook",
                                        "jobs",
                                        "mount_home",
                                        "pull",
                                        "pull_timeout",
                                        "store_max",
                                        "max_unpacked",
                                        "cleanup_timeout",
                                        "remap_root",
                                        "execute_entrypoint",
                                        "shared_cache",
                                        "container_scope",
                                        "policy",
                                        "check_timeout",
                                        "sqsh_store",
                                        "sqsh_store_max",
                                        NULL};

static const char *const pull_names[] = {"always", "missing", "newer", "never", NULL};

/* --fpull-format's values; the first is the default. */
static const char *const format_names[] = {"dir", "squashfs", NULL};

int fp_slurm_pull_parse(const char *value)
{
  for (int i = 0; value && pull_names[i]; i++)
    if (strcmp(value, pull_names[i]) == 0)
      return i;
  return -1;
}

static int bad_word(fpull_err *err, const char *what, const char *value, const char *const *known,
                    const char *list)
{
  const char *near = fpull_suggest(value ? value : "", known);
  if (near)
    return fpull_err_set(err, FPULL_EUSAGE, "%s=%s: unknown value (did you mean '%s'?)", what,
                         value ? value : "", near);
  return fpull_err_set(err, FPULL_EUSAGE, "%s=%s: unknown value (%s)", what, value ? value : "",
                       list);
}

static int set_path(char **dst, const char *key, const char *val, fpull_err *err)
{
  if (val[0] != '/')
    return fpull_err_set(err, FPULL_EUSAGE, "plugin argument %s=%s: not an absolute path", key,
                         val);
  free(*dst);
  *dst = fp_xstrdup(val);
  return 0;
}

static int set_word(char **dst, const char *val)
{
  free(*dst);
  *dst = fp_xstrdup(val);
  return 0;
}

static int parse_yes_no(int *out, const char *key, const char *val, fpull_err *err)
{
  static const char *const yn[] = {"yes", "no", NULL};
  if (strcmp(val, "yes") != 0 && strcmp(val, "no") != 0) {
    cleanup_free char *what = fp_xasprintf("plugin argument %s", key);
    return bad_word(err, what, val, yn, "yes or no");
  }
  *out = strcmp(val, "yes") == 0;
  return 0;
}

/* A size in bytes, or with K, M, G or T (powers of 1024). */
static int parse_size(unsigned long long *out, const char *key, const char *val, fpull_err *err)
{
  char *end = NULL;
  unsigned long long n = strtoull(val, &end, 10);
  unsigned long long unit = !*end                ? 1
                            : strchr("kK", *end) ? 1ULL << 10
                            : strchr("mM", *end) ? 1ULL << 20
                            : strchr("gG", *end) ? 1ULL << 30
                            : strchr("tT", *end) ? 1ULL << 40
                                                 : 0;
  if (!*val || val[0] == '-' || !unit || (*end && end[1]) || n > ~0ULL / unit)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "plugin argument %s=%s: not a size (bytes, or with K, M, G or T)", key,
                         val);
  *out = n * unit;
  return 0;
}

static int parse_one(struct fp_slurm_settings *s, const char *key, const char *val, fpull_err *err)
{
  if (strcmp(key, "fpull") == 0)
    return set_path(&s->fpull, key, val, err);
  if (strcmp(key, "runtime") == 0) {
    if (val[0] != '/' && strcmp(val, "runc") != 0 && strcmp(val, "crun") != 0)
      return fpull_err_set(err, FPULL_EUSAGE,
                           "plugin argument runtime=%s: runc, crun or an absolute path", val);
    return set_word(&s->runtime, val);
  }
  if (strcmp(key, "run_dir") == 0)
    return set_path(&s->run_dir, key, val, err);
  if (strcmp(key, "cache_dir") == 0)
    return set_path(&s->cache_dir, key, val, err);
  if (strcmp(key, "shared_cache") == 0)
    return set_path(&s->shared_cache, key, val, err);
  if (strcmp(key, "sqsh_store") == 0)
    return set_path(&s->sqsh_store, key, val, err);
  if (strcmp(key, "config") == 0)
    return set_path(&s->config, key, val, err);
  if (strcmp(key, "policy") == 0)
    return set_path(&s->policy, key, val, err);
  if (strcmp(key, "data_dir") == 0)
    return set_path(&s->data_dir, key, val, err);
  if (strcmp(key, "nvidia_hook") == 0)
    return set_path(&s->nvidia_hook, key, val, err);
  if (strcmp(key, "mounts") == 0) {
    struct fp_slurm_mount *m = NULL;
    size_t n = 0;
    int rc = fp_slurm_mounts_parse(&m, &n, "plugin argument mounts", val, err);
    fp_slurm_mounts_free(m, n);
    return rc ? rc : set_word(&s->mounts, val);
  }
  if (strcmp(key, "env_passthrough") == 0)
    return set_word(&s->env_passthrough, val);
  if (strcmp(key, "jobs") == 0) {
    char *end = NULL;
    long n = strtol(val, &end, 10);
    if (!*val || *end || n < 1 || n > 64)
      return fpull_err_set(err, FPULL_EUSAGE, "plugin argument jobs=%s: not a number from 1 to 64",
                           val);
    s->jobs = (int)n;
    return 0;
  }
  if (strcmp(key, "pull_timeout") == 0) {
    char *end = NULL;
    long n = strtol(val, &end, 10);
    if (!*val || *end || n < 0 || n > 86400 * 7)
      return fpull_err_set(err, FPULL_EUSAGE,
                           "plugin argument pull_timeout=%s: not a number of seconds", val);
    s->pull_timeout = (int)n;
    return 0;
  }
  if (strcmp(key, "check_timeout") == 0) {
    char *end = NULL;
    long n = strtol(val, &end, 10);
    if (!*val || *end || n < 0 || n > 3600)
      return fpull_err_set(err, FPULL_EUSAGE,
                           "plugin argument check_timeout=%s: not a number of seconds from 0 "
                           "to 3600",
                           val);
    s->check_timeout = (int)n;
    return 0;
  }
  if (strcmp(key, "store_max") == 0) {
    s->store_max_set = 1;
    if (strcmp(val, "auto") == 0) {
      s->store_max = FP_SLURM_STORE_AUTO;
      return 0;
    }
    return parse_size(&s->store_max, key, val, err);
  }
  if (strcmp(key, "sqsh_store_max") == 0)
    return parse_size(&s->sqsh_store_max, key, val, err);
  if (strcmp(key, "max_unpacked") == 0)
    return parse_size(&s->max_unpacked, key, val, err);
  if (strcmp(key, "cleanup_timeout") == 0) {
    char *end = NULL;
    long n = strtol(val, &end, 10);
    if (!*val || *end || n < 1 || n > 3600)
      return fpull_err_set(err, FPULL_EUSAGE,
                           "plugin argument cleanup_timeout=%s: not a number of seconds from 1 "
                           "to 3600",
                           val);
    s->cleanup_timeout = (int)n;
    return 0;
  }
  if (strcmp(key, "mount_home") == 0)
    return parse_yes_no(&s->mount_home, key, val, err);
  if (strcmp(key, "container_scope") == 0) {
    static const char *const scopes[] = {"job", "global", NULL};
    if (strcmp(val, "job") != 0 && strcmp(val, "global") != 0)
      return bad_word(err, "plugin argument container_scope", val, scopes, "job or global");
    s->container_scope_global = strcmp(val, "global") == 0;
    return 0;
  }
  if (strcmp(key, "remap_root") == 0)
    return parse_yes_no(&s->remap_root, key, val, err);
  if (strcmp(key, "execute_entrypoint") == 0)
    return parse_yes_no(&s->execute_entrypoint, key, val, err);
  if (strcmp(key, "pull") == 0) {
    int p = fp_slurm_pull_parse(val);
    if (p < 0)
      return bad_word(err, "plugin argument pull", val, pull_names,
                      "always, missing, newer or never");
    s->pull = (enum fp_slurm_pull)p;
    return 0;
  }
  const char *near = fpull_suggest(key, arg_names);
  return fpull_err_set(err, FPULL_EUSAGE, "unknown plugin argument '%s'%s%s%s", key,
                       near ? " (did you mean '" : "", near ? near : "", near ? "='?)" : "");
}

int fp_slurm_settings_parse(struct fp_slurm_settings *s, int ac, char **av, fpull_err *err)
{
  memset(s, 0, sizeof *s);
  s->fpull = fp_xstrdup(FPULL_BINDIR "/fpull");
  s->runtime = fp_xstrdup("runc");
  /* On disk, not in /run (RAM shared with the node's daemons): images are large. */
  s->run_dir = fp_xstrdup(FP_SLURM_RUN_DIR_DEFAULT);
  s->cleanup_timeout = 10;
  s->check_timeout = FP_SLURM_CHECK_TIMEOUT_DEFAULT;
  /* A kept store by default (issue 41.3): every step of a job unpacking the whole image
   * again was the default's cost; store_max=0 turns it off. */
  s->store_max = FP_SLURM_STORE_AUTO;
  s->mount_home = 1;
  s->pull = FP_PULL_NEWER;
  for (int i = 0; i < ac; i++) {
    const char *eq = strchr(av[i], '=');
    cleanup_free char *key = eq ? fp_xstrndup(av[i], (size_t)(eq - av[i])) : fp_xstrdup(av[i]);
    int rc = parse_one(s, key, eq ? eq + 1 : "", err);
    if (rc) {
      fp_slurm_settings_free(s);
      return rc;
    }
  }
  /* Each DIR/UID would hold the other's files (a cache's blobs/ beside the .sqsh files). */
  if (s->sqsh_store && s->shared_cache && strcmp(s->sqsh_store, s->shared_cache) == 0) {
    fpull_err_set(err, FPULL_EUSAGE,
                  "plugin arguments sqsh_store= and shared_cache= name one directory (%s): give "
                  "each its own",
                  s->sqsh_store);
    fp_slurm_settings_free(s);
    return FPULL_EUSAGE;
  }
  /* The runner (a program of its own) parses the same arguments again. */
  for (int i = 0; i < ac; i++)
    s->args = fp_strv_push(s->args, av[i]);
  return 0;
}

void fp_slurm_settings_free(struct fp_slurm_settings *s)
{
  free(s->fpull);
  free(s->runtime);
  free(s->run_dir);
  free(s->cache_dir);
  free(s->shared_cache);
  free(s->sqsh_store);
  free(s->config);
  free(s->policy);
  free(s->data_dir);
  free(s->mounts);
  free(s->env_passthrough);
  free(s->nvidia_hook);
  fpull_strv_free(s->args);
  memset(s, 0, sizeof *s);
}

void fp_slurm_mounts_free(struct fp_slurm_mount *m, size_t n)
{
  for (size_t i = 0; m && i < n; i++) {
    free(m[i].src);
    free(m[i].dst);
    fpull_strv_free(m[i].options);
  }
  free(m);
}

/* A ".." component: a destination that climbs is refused rather than resolved. */
static int has_dotdot(const char *p)
{
  for (const char *c = p; (c = strstr(c, "..")) != NULL; c += 2)
    if ((c == p || c[-1] == '/') && (c[2] == '\0' || c[2] == '/'))
      return 1;
  return 0;
}

/* A tmpfs's options as pyxis passes them to mount(8): the kernel's own tmpfs options
 * (huge=within_size, size=1G, mode=1777, ...) and the generic ones. */
static int tmpfs_options(struct fp_slurm_mount *m, const char *what, const char *item, char *flags,
                         fpull_err *err)
{
  static const char *const keys[] = {"size",  "nr_blocks", "nr_inodes", "mode",    "uid",
                                     "gid",   "huge",      "mpol",      "ro",      "rw",
                                     "nodev", "noexec",    "nosuid",    "noatime", NULL};
  for (char *f = flags; f;) {
    char *next = strchr(f, '+');
    if (next)
      *next++ = '\0';
    size_t klen = strcspn(f, "=");
    size_t i = 0;
    while (keys[i] && (strlen(keys[i]) != klen || strncmp(keys[i], f, klen) != 0))
      i++;
    if (!keys[i] || !f[0]) {
      cleanup_free char *key = fp_xstrndup(f, klen);
      const char *near = fpull_suggest(key, keys);
      return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': unknown tmpfs option '%s'%s%s%s", what,
                           item, f, near ? " (did you mean '" : "", near ? near : "",
                           near ? "'?)" : "");
    }
    m->options = fp_strv_push(m->options, f);
    f = next;
  }
  return 0;
}

static int mount_one(struct fp_slurm_mount *m, const char *what, const char *item, fpull_err *err)
{
  cleanup_free char *copy = fp_xstrdup(item);
  char *src = copy, *dst = strchr(copy, ':');
  char *flags = NULL;
  if (dst) {
    *dst++ = '\0';
    flags = strchr(dst, ':');
    if (flags)
      *flags++ = '\0';
  } else {
    /* pyxis's short form: SRC alone is mounted at the same path inside. */
    dst = src;
  }
  m->kind = strcmp(src, "tmpfs") == 0 && dst != src    ? FP_MOUNT_TMPFS
            : strcmp(src, "umount") == 0 && dst != src ? FP_MOUNT_UMOUNT
                                                       : FP_MOUNT_BIND;
  if (m->kind != FP_MOUNT_BIND) {
    if (dst[0] != '/' || has_dotdot(dst))
      return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': DST must be an absolute path without '..'",
                           what, item);
    if (m->kind == FP_MOUNT_UMOUNT && flags)
      return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': umount:DST takes no flags", what, item);
    m->options = NULL;
    if (m->kind == FP_MOUNT_TMPFS && tmpfs_options(m, what, item, flags, err) != 0) {
      fpull_strv_free(m->options);
      m->options = NULL;
      return FPULL_EUSAGE;
    }
    m->src = fp_xstrdup(src);
    m->dst = fp_xstrdup(dst);
    return 0;
  }
  if (!*src || !*dst)
    return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': not SRC[:DST[:FLAGS]]", what, item);
  if (src[0] != '/' || dst[0] != '/')
    return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': SRC and DST must be absolute paths", what,
                         item);
  if (has_dotdot(dst))
    return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': DST must not contain '..'", what, item);
  /* pyxis writes FLAG+FLAG: ro or rw, and the propagation and restriction flags of a bind
   * mount. */
  static const char *const known[] = {"ro",     "rw",     "private", "rprivate",   "slave",
                                      "rslave", "shared", "rshared", "unbindable", "runbindable",
                                      "nosuid", "nodev",  "noexec",  NULL};
  m->options = NULL;
  for (char *f = flags; f;) {
    char *next = strchr(f, '+');
    if (next)
      *next++ = '\0';
    size_t i = 0;
    while (known[i] && strcmp(known[i], f) != 0)
      i++;
    if (!known[i]) {
      const char *near = fpull_suggest(f, known);
      fpull_strv_free(m->options);
      m->options = NULL;
      return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': unknown flag '%s' (%s%s%s)", what, item, f,
                           near ? "did you mean '" : "ro, rw, rprivate, rslave, nosuid, ...",
                           near ? near : "", near ? "'?" : "");
    }
    if (strcmp(f, "ro") == 0)
      m->ro = 1;
    else if (strcmp(f, "rw") == 0)
      m->ro = 0;
    else
      m->options = fp_strv_push(m->options, f);
    f = next;
  }
  m->src = fp_xstrdup(src);
  m->dst = fp_xstrdup(dst);
  return 0;
}

int fp_slurm_mounts_parse(struct fp_slurm_mount **out, size_t *n, const char *what,
                          const char *spec, fpull_err *err)
{
  *out = NULL;
  *n = 0;
  if (!spec || !*spec)
    return 0;
  struct fp_slurm_mount *m = NULL;
  size_t count = 0;
  for (const char *p = spec;;) {
    size_t len = strcspn(p, ",");
    cleanup_free char *item = fp_xstrndup(p, len);
    m = fp_xrealloc(m, (count + 1) * sizeof *m);
    memset(&m[count], 0, sizeof *m);
    int rc = mount_one(&m[count], what, item, err);
    if (rc) {
      fp_slurm_mounts_free(m, count);
      return rc;
    }
    count++;
    if (!p[len])
      break;
    p += len + 1;
  }
  *out = m;
  *n = count;
  return 0;
}

static int check_features(const char *value, const struct fp_slurm_settings *s, fpull_err *err)
{
  if (!value || !*value)
    return fpull_err_set(err, FPULL_EUSAGE, "--fpull-features: empty list");
  struct fpull_config *config = NULL;
  struct fpull_tagdb *db = NULL;
  cleanup_free char *tags = s && s->data_dir ? fp_xasprintf("%s/cputags.yaml", s->data_dir) : NULL;
  int rc = fpull_config_load(&config, s ? s->config : NULL, err);
  if (rc == 0)
    rc = fpull_tagdb_load(&db, tags, config, err);
  for (const char *p = value; rc == 0;) {
    size_t len = strcspn(p, ",");
    cleanup_free char *name = fp_xstrndup(p, len);
    if (len == 0) {
      rc = fpull_err_set(err, FPULL_EUSAGE, "--fpull-features=%s: empty name", value);
      break;
    }
    rc = fpull_feature_name_check(db, config, name, err);
    if (rc)
      fpull_err_prefix(err, "--fpull-features=%s", value);
    if (!p[len])
      break;
    p += len + 1;
  }
  fpull_tagdb_free(db);
  fpull_config_free(config);
  return rc;
}

static int check_path(const char *what, const char *value, fpull_err *err)
{
  if (!value || value[0] != '/')
    return fpull_err_set(err, FPULL_EUSAGE, "%s=%s: not an absolute path", what,
                         value ? value : "");
  if (has_dotdot(value))
    return fpull_err_set(err, FPULL_EUSAGE, "%s=%s: must not contain '..'", what, value);
  return 0;
}

int fp_slurm_is_sqsh_name(const char *value)
{
  size_t n = value ? strlen(value) : 0;
  return (n > 5 && strcmp(value + n - 5, ".sqsh") == 0) ||
         (n > 9 && strcmp(value + n - 9, ".squashfs") == 0);
}

int fp_slurm_image_is_none(const char *value)
{
  return value && strcmp(value, "none") == 0;
}

/* --fpull-env's names: variables' names, each. */
static int check_env_names(const char *value, fpull_err *err)
{
  if (!value || !*value)
    return fpull_err_set(err, FPULL_EUSAGE, "--fpull-env: empty list");
  for (const char *p = value;;) {
    size_t n = strcspn(p, ",");
    int ok = n > 0 && !(p[0] >= '0' && p[0] <= '9');
    for (size_t i = 0; ok && i < n; i++)
      ok = p[i] == '_' || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z') ||
           (p[i] >= '0' && p[i] <= '9');
    if (!ok)
      return fpull_err_set(err, FPULL_EUSAGE, "--fpull-env=%s: '%.*s' is not a variable's name",
                           value, (int)n, p);
    if (!p[n])
      return 0;
    p += n + 1;
  }
}

char *fp_slurm_mounts_resolve(const char *spec, const char *dir)
{
  struct fp_buf out = {0};
  for (const char *p = spec ? spec : "";;) {
    size_t len = strcspn(p, ",");
    size_t slen = strcspn(p, ":,");
    int kind_word =
        (slen == 5 && strncmp(p, "tmpfs", 5) == 0) || (slen == 6 && strncmp(p, "umount", 6) == 0);
    if (out.len)
      fp_buf_append(&out, ",", 1);
    if (slen < len && slen > 0 && p[0] != '/' && !kind_word && dir && dir[0] == '/') {
      const char *src = p;
      size_t n = slen;
      while (n >= 2 && src[0] == '.' && src[1] == '/') { /* "./x", ".//x" */
        src += 2;
        n -= 2;
        while (n && src[0] == '/')
          src++, n--;
      }
      if (n == 1 && src[0] == '.')
        n = 0;
      fp_buf_append(&out, dir, strlen(dir));
      if (n) {
        if (dir[strlen(dir) - 1] != '/')
          fp_buf_append(&out, "/", 1);
        fp_buf_append(&out, src, n);
      }
      fp_buf_append(&out, p + slen, len - slen);
    } else {
      fp_buf_append(&out, p, len);
    }
    if (!p[len])
      break;
    p += len + 1;
  }
  return out.data ? out.data : fp_xstrdup("");
}

/* Each SRC of --fpull-mounts exists where the job is submitted (a typo fails there, not in
 * the runtime on every node). */
static int check_mount_sources(const struct fp_slurm_mount *m, size_t n, fpull_err *err)
{
  for (size_t i = 0; i < n; i++)
    if (m[i].kind == FP_MOUNT_BIND && access(m[i].src, F_OK) != 0)
      return fpull_err_set(err, FPULL_EUSAGE, "--fpull-mounts: %s: %s", m[i].src, strerror(errno));
  return 0;
}

int fp_slurm_option_check(int opt, const char *value, const struct fp_slurm_settings *s,
                          fpull_err *err)
{
  switch (opt) {
  case FP_OPT_ENV:
    return check_env_names(value, err);
  case FP_OPT_NAME: {
    size_t n = value ? strlen(value) : 0;
    int ok = n > 0 && n <= 64 && value[0] != '.' && value[0] != '-';
    for (size_t i = 0; ok && i < n; i++)
      ok = value[i] == '_' || value[i] == '-' || value[i] == '.' ||
           (value[i] >= 'A' && value[i] <= 'Z') || (value[i] >= 'a' && value[i] <= 'z') ||
           (value[i] >= '0' && value[i] <= '9');
    if (!ok)
      return fpull_err_set(err, FPULL_EUSAGE,
                           "--fpull-name=%s: not a name (letters, digits, '_', '-', '.'; at most "
                           "64; not starting with '.' or '-')",
                           value ? value : "");
    return 0;
  }
  case FP_OPT_IMAGE: {
    if (fp_slurm_image_is_none(value))
      return 0;
    /* A relative path to a SquashFS file (pyxis's habit), never an image called
     * docker.io/library/app.sqsh: it must be there where the job is submitted. */
    if (value && value[0] != '/' && fp_slurm_is_sqsh_name(value)) {
      if (access(value, R_OK) != 0)
        return fpull_err_set(err, FPULL_EUSAGE,
                             "--fpull-image=%s: %s (a relative path names a "
                             "SquashFS file in the directory the job is submitted from)",
                             value, strerror(errno));
      return check_path("--fpull-image", "/", err);
    }
    /* A path: a SquashFS file (no reference starts with '/'). */
    if (value && value[0] == '/')
      return check_path("--fpull-image", value, err);
    struct fpull_ref *ref = NULL;
    /* A typo in IMAGE is a submit-time error, never a job that runs something else. */
    if (fpull_ref_parse(&ref, value ? value : "", err) != 0)
      return fpull_err_prefix(err, "--fpull-image");
    fpull_ref_free(ref);
    return 0;
  }
  case FP_OPT_FEATURES:
    return check_features(value, s, err);
  case FP_OPT_FORMAT:
    for (size_t i = 0; value && format_names[i]; i++)
      if (strcmp(value, format_names[i]) == 0)
        return 0;
    return bad_word(err, "--fpull-format", value, format_names, "dir or squashfs");
  case FP_OPT_MOUNTS: {
    struct fp_slurm_mount *m = NULL;
    size_t n = 0;
    /* A relative SRC is the submit's working directory's, as pyxis has it; slurmstepd
     * resolves it against the job's PWD, the same directory. */
    char cwd[PATH_MAX];
    cleanup_free char *spec = fp_slurm_mounts_resolve(value, getcwd(cwd, sizeof cwd) ? cwd : NULL);
    int rc = fp_slurm_mounts_parse(&m, &n, "--fpull-mounts", spec, err);
    if (rc == 0 && n == 0)
      rc = fpull_err_set(err, FPULL_EUSAGE, "--fpull-mounts: empty list");
    if (rc == 0)
      rc = check_mount_sources(m, n, err);
    fp_slurm_mounts_free(m, n);
    return rc;
  }
  case FP_OPT_WORKDIR:
    return check_path("--fpull-workdir", value, err);
  case FP_OPT_SAVE: {
    int rc = check_path("--fpull-save", value, err);
    struct stat st;
    /* A directory is no file to write: said at submit, not as a warning after the step. */
    if (rc == 0 &&
        (value[strlen(value) - 1] == '/' || (stat(value, &st) == 0 && S_ISDIR(st.st_mode))))
      rc = fpull_err_set(err, FPULL_EUSAGE, "--fpull-save=%s: a directory (give the file to write)",
                         value);
    return rc;
  }
  case FP_OPT_PULL:
    if (fp_slurm_pull_parse(value) >= 0)
      return 0;
    return bad_word(err, "--fpull-pull", value, pull_names, "always, missing, newer or never");
  default:
    return 0;
  }
}
