/* fpull Slurm plugin: prefetch in the prolog, offline pull in the user part. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <fpull/bundle.h>
#include <fpull/cache.h>
#include <fpull/config.h>
#include <fpull/features.h>
#include <fpull/pull.h>
#include <fpull/ref.h>

#include "image.h"
#include "util.h"

static int set_path(char **dst, const char *key, const char *val, fpull_err *err)
{
  if (val[0] != '/')
    return fpull_err_set(err, FPULL_EUSAGE, "plugin argument %s=%s: not an absolute path", key,
                         val);
  free(*dst);
  *dst = fp_xstrdup(val);
  return 0;
}

int fp_slurm_settings_parse(struct fp_slurm_settings *s, int ac, char **av, fpull_err *err)
{
  memset(s, 0, sizeof *s);
  s->cache_dir = fp_xstrdup("/var/cache/fpull");
  s->run_dir = fp_xstrdup("/run/fpull-slurm");
  for (int i = 0; i < ac; i++) {
    const char *eq = strchr(av[i], '=');
    size_t klen = eq ? (size_t)(eq - av[i]) : strlen(av[i]);
    const char *val = eq ? eq + 1 : "";
    int rc = 0;
    if (klen == 9 && strncmp(av[i], "cache_dir", klen) == 0)
      rc = set_path(&s->cache_dir, "cache_dir", val, err);
    else if (klen == 7 && strncmp(av[i], "run_dir", klen) == 0)
      rc = set_path(&s->run_dir, "run_dir", val, err);
    else if (klen == 6 && strncmp(av[i], "config", klen) == 0)
      rc = set_path(&s->config, "config", val, err);
    else if (klen == 8 && strncmp(av[i], "data_dir", klen) == 0)
      rc = set_path(&s->data_dir, "data_dir", val, err);
    else if (klen == 4 && strncmp(av[i], "jobs", klen) == 0) {
      char *end = NULL;
      long n = strtol(val, &end, 10);
      if (!*val || *end || n < 1 || n > 64)
        rc = fpull_err_set(err, FPULL_EUSAGE, "plugin argument jobs=%s: not a number from 1 to 64",
                           val);
      s->jobs = (int)n;
    } else
      rc = fpull_err_set(err, FPULL_EUSAGE,
                         "unknown plugin argument '%s' (known: cache_dir=, run_dir=, config=, "
                         "data_dir=, jobs=)",
                         av[i]);
    if (rc) {
      fp_slurm_settings_free(s);
      return rc;
    }
  }
  return 0;
}

void fp_slurm_settings_free(struct fp_slurm_settings *s)
{
  free(s->cache_dir);
  free(s->run_dir);
  free(s->config);
  free(s->data_dir);
  memset(s, 0, sizeof *s);
}

/* What the CLI's option handling does, for the plugin's few options. */
struct env {
  struct fpull_config *config;
  struct fpull_tagdb *tagdb;
  struct fpull_target *target;
};

static void env_free(struct env *e)
{
  fpull_target_free(e->target);
  fpull_tagdb_free(e->tagdb);
  fpull_config_free(e->config);
}

static int env_load(struct env *e, const struct fp_slurm_settings *s, const char *features,
                    fpull_err *err)
{
  memset(e, 0, sizeof *e);
  int rc = fpull_config_load(&e->config, s->config, err);
  if (rc)
    return rc;
  cleanup_free char *tags = s->data_dir ? fp_xasprintf("%s/cputags.yaml", s->data_dir) : NULL;
  rc = fpull_tagdb_load(&e->tagdb, tags, e->config, err);
  if (rc)
    return rc;
  /* Without --fpull-features both parts run on the same node and detect the same target,
   * so the user part picks the entry the prolog fetched. */
  struct fpull_target_opts to = {
      .version = FPULL_TARGET_OPTS_VERSION,
      .features = features,
      .env_features = NULL,
      .config = e->config,
      .tagdb = e->tagdb,
  };
  return fpull_target_build(&e->target, &to, err);
}

static void pull_opts(struct fpull_pull_opts *o, const struct env *e,
                      const struct fp_slurm_settings *s)
{
  *o = (struct fpull_pull_opts)FPULL_PULL_OPTS_INIT;
  o->config = e->config;
  o->target = e->target;
  o->tagdb = e->tagdb;
  o->cache_dir = s->cache_dir;
  o->jobs = s->jobs;
}

int fp_slurm_prefetch(char **digest, const struct fp_slurm_settings *s, const char *image,
                      const char *features, fpull_err *err)
{
  *digest = NULL;
  struct env e;
  int rc = env_load(&e, s, features, err);
  if (rc == 0) {
    /* This cache is for every job's user. A named cache (not fpull's default, which is
     * 0700) and what goes in it get the umask's modes, and slurmd's may be stricter. */
    mode_t old = umask(022);
    if (mkdir(s->cache_dir, 0755) < 0 && errno != EEXIST)
      rc = fpull_err_set(err, FPULL_EFAIL, "cache %s: %s", s->cache_dir, strerror(errno));
    struct fpull_pull_opts o;
    pull_opts(&o, &e, s);
    struct fpull_pull_result *r = NULL;
    if (rc == 0)
      rc = fpull_prefetch(&r, image, &o, err);
    if (rc == 0)
      *digest = fp_xstrdup(r->manifest_digest);
    fpull_pull_result_free(r);
    umask(old);
  }
  env_free(&e);
  return rc;
}

int fp_slurm_pull_offline(const struct fp_slurm_settings *s, const char *image,
                          const char *features, const char *dest, int bundle, fpull_err *err)
{
  struct env e;
  int rc = env_load(&e, s, features, err);
  if (rc == 0) {
    struct fpull_pull_opts o;
    pull_opts(&o, &e, s);
    o.offline = 1;
    struct fpull_pull_result *r = NULL;
    rc =
        bundle ? fpull_pull_bundle(&r, image, dest, &o, err) : fpull_pull(&r, image, dest, &o, err);
    fpull_pull_result_free(r);
  }
  env_free(&e);
  return rc;
}

char *fp_slurm_pinned_ref(const char *image, const char *digest)
{
  struct fpull_ref *ref = NULL;
  if (!fpull_digest_valid(digest) || fpull_ref_parse(&ref, image, NULL) != 0)
    return NULL;
  /* With a tag and a digest the digest wins (contract); the tag stays for messages. */
  free(ref->digest);
  ref->digest = fp_xstrdup(digest);
  char *out = fpull_ref_format(ref);
  fpull_ref_free(ref);
  return out;
}
