/* fpull Slurm plugin: plugstack.conf arguments and the job's options (see settings.h). */
#include <stdlib.h>
#include <string.h>

#include <fpull/config.h>
#include <fpull/features.h>
#include <fpull/ref.h>

#include "settings.h"
#include "util.h"

#ifndef FPULL_BINDIR
#define FPULL_BINDIR "/usr/local/bin"
#endif

static const char *const arg_names[] = {
    "fpull",        "runtime",         "run_dir",      "cache_dir", "config",     "data_dir",
    "mounts",       "env_passthrough", "nvidia_hook",  "jobs",      "mount_home", "pull",
    "pull_timeout", "store_max",       "shared_cache", NULL};

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
  if (strcmp(key, "config") == 0)
    return set_path(&s->config, key, val, err);
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
  if (strcmp(key, "store_max") == 0) {
    char *end = NULL;
    unsigned long long n = strtoull(val, &end, 10);
    unsigned long long unit = !*end                ? 1
                              : strchr("kK", *end) ? 1ULL << 10
                              : strchr("mM", *end) ? 1ULL << 20
                              : strchr("gG", *end) ? 1ULL << 30
                              : strchr("tT", *end) ? 1ULL << 40
                                                   : 0;
    if (!*val || val[0] == '-' || !unit || (*end && end[1]))
      return fpull_err_set(err, FPULL_EUSAGE,
                           "plugin argument store_max=%s: not a size (bytes, or with K, M, G or T)",
                           val);
    s->store_max = n * unit;
    return 0;
  }
  if (strcmp(key, "mount_home") == 0) {
    static const char *const yn[] = {"yes", "no", NULL};
    if (strcmp(val, "yes") != 0 && strcmp(val, "no") != 0)
      return bad_word(err, "plugin argument mount_home", val, yn, "yes or no");
    s->mount_home = strcmp(val, "yes") == 0;
    return 0;
  }
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
  s->run_dir = fp_xstrdup("/run/fpull-slurm");
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
  return 0;
}

void fp_slurm_settings_free(struct fp_slurm_settings *s)
{
  free(s->fpull);
  free(s->runtime);
  free(s->run_dir);
  free(s->cache_dir);
  free(s->shared_cache);
  free(s->config);
  free(s->data_dir);
  free(s->mounts);
  free(s->env_passthrough);
  free(s->nvidia_hook);
  memset(s, 0, sizeof *s);
}

void fp_slurm_mounts_free(struct fp_slurm_mount *m, size_t n)
{
  for (size_t i = 0; m && i < n; i++) {
    free(m[i].src);
    free(m[i].dst);
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
  }
  if (!dst || !*src || !*dst)
    return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': not SRC:DST[:ro|rw]", what, item);
  if (src[0] != '/' || dst[0] != '/')
    return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': SRC and DST must be absolute paths", what,
                         item);
  if (has_dotdot(dst))
    return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': DST must not contain '..'", what, item);
  if (flags && strcmp(flags, "ro") != 0 && strcmp(flags, "rw") != 0) {
    static const char *const known[] = {"ro", "rw", NULL};
    const char *near = fpull_suggest(flags, known);
    return fpull_err_set(err, FPULL_EUSAGE, "%s: '%s': unknown flag '%s' (%s%s%s)", what, item,
                         flags, near ? "did you mean '" : "ro or rw", near ? near : "",
                         near ? "'?" : "");
  }
  m->src = fp_xstrdup(src);
  m->dst = fp_xstrdup(dst);
  m->ro = flags && strcmp(flags, "ro") == 0;
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

int fp_slurm_option_check(int opt, const char *value, const struct fp_slurm_settings *s,
                          fpull_err *err)
{
  switch (opt) {
  case FP_OPT_IMAGE: {
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
    int rc = fp_slurm_mounts_parse(&m, &n, "--fpull-mounts", value, err);
    fp_slurm_mounts_free(m, n);
    if (rc == 0 && n == 0)
      rc = fpull_err_set(err, FPULL_EUSAGE, "--fpull-mounts: empty list");
    return rc;
  }
  case FP_OPT_WORKDIR:
    return check_path("--fpull-workdir", value, err);
  case FP_OPT_SAVE:
    return check_path("--fpull-save", value, err);
  case FP_OPT_PULL:
    if (fp_slurm_pull_parse(value) >= 0)
      return 0;
    return bad_word(err, "--fpull-pull", value, pull_names, "always, missing, newer or never");
  default:
    return 0;
  }
}
