/* fpull features: the target platform and where each feature came from. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Under -v: the CPU tags that are just missed, and which extensions they lack, because
 * "why is broadwell not listed on this Xeon?" is the first question users ask. */
static void print_near_misses(const struct cli_env *env)
{
  struct fpull_cpu_info *ci = NULL;
  fpull_err err = {0};
  if (fpull_detect_cpu(&ci, &err) != 0 || !ci)
    return;
  fprintf(stderr, "cpu: %s %s\n", ci->vendor ? ci->vendor : "?", ci->codename ? ci->codename : "?");
  const char *const *tags = fpull_tagdb_tags(env->tagdb, ci->architecture);
  for (size_t i = 0; tags && tags[i]; i++) {
    if (fpull_featureset_has(env->target->features, tags[i], env->tagdb))
      continue;
    const char *const *isa = fpull_tagdb_isa(env->tagdb, tags[i]);
    char missing[256] = "";
    int n = 0;
    for (size_t j = 0; isa && isa[j]; j++) {
      int have = 0;
      for (size_t k = 0; ci->isa && ci->isa[k]; k++)
        if (strcmp(ci->isa[k], isa[j]) == 0)
          have = 1;
      if (!have) {
        size_t l = strlen(missing);
        snprintf(missing + l, sizeof missing - l, "%s%s", n ? ", " : "", isa[j]);
        n++;
      }
    }
    if (n > 0 && n <= 3)
      fprintf(stderr, "%s: no %s\n", tags[i], missing);
  }
  fpull_cpu_info_free(ci);
}

/* --list-known: the names --features accepts, for shell completion and for people. */
static int list_known(const struct cli_settings *s)
{
  fpull_err err = {0};
  struct cli_env env = {0};
  if (cli_env_load(&env, s, 0, &err) || fpull_tagdb_load(&env.tagdb, NULL, env.config, &err)) {
    cli_env_free(&env);
    return cli_fail(&err);
  }
  char **names = fpull_feature_known_names(env.tagdb, env.config);
  for (size_t i = 0; names[i]; i++)
    printf("%s\n", names[i]);
  fpull_strv_free(names);
  cli_env_free(&env);
  return 0;
}

static int run_features(struct cli_settings *s, int argc, char **argv)
{
  if (s->list_known)
    return list_known(s);
  fpull_err err = {0};
  struct cli_env env = {0};
  if (cli_env_load(&env, s, 1, &err))
    return cli_fail(&err);
  const struct fpull_target *t = env.target;
  size_t n = fpull_featureset_count(t->features);
  if (s->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "os", t->os);
    cJSON_AddStringToObject(o, "architecture", t->architecture);
    if (t->variant)
      cJSON_AddStringToObject(o, "variant", t->variant);
    else
      cJSON_AddNullToObject(o, "variant");
    cJSON *f = cJSON_AddArrayToObject(o, "features");
    cJSON *src = cJSON_AddObjectToObject(o, "sources");
    for (size_t i = 0; i < n; i++) {
      int sv;
      const char *name = fpull_featureset_get(t->features, i, &sv);
      cJSON_AddItemToArray(f, cJSON_CreateString(name));
      cJSON_AddStringToObject(src, name, fpull_feature_source_name(sv));
    }
    cli_print_json(o);
  } else {
    printf("os: %s\narchitecture: %s\nvariant: %s\nfeatures:\n", t->os, t->architecture,
           t->variant ? t->variant : "-");
    for (size_t i = 0; i < n; i++) {
      int sv;
      const char *name = fpull_featureset_get(t->features, i, &sv);
      printf("  %-28s %s\n", name, fpull_feature_source_name(sv));
    }
  }
  if (s->verbose && !s->features && !s->platform)
    print_near_misses(&env);
  cli_env_free(&env);
  return 0;
}

static const enum cli_opt_id features_opts[] = {OPT_HELP,    OPT_FEATURES,   OPT_PLATFORM,
                                                OPT_CONFIG,  OPT_JSON,       OPT_QUIET,
                                                OPT_VERBOSE, OPT_LIST_KNOWN, 0};

const struct cli_cmd cmd_features = {
    .name = "features",
    .args = "[OPTIONS]",
    .summary = "print the target platform and every feature with its source",
    .opts = features_opts,
    .min_args = 0,
    .max_args = 0,
    .run = run_features,
};
