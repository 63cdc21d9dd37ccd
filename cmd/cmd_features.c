/* fpull features: the target platform and where each feature came from. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Orders names with their digit runs compared as numbers ("cuda-2-0" < "cuda-10-0"). */
static int version_cmp(const char *a, const char *b)
{
  while (*a && *b) {
    if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
      while (*a == '0' && isdigit((unsigned char)a[1]))
        a++;
      while (*b == '0' && isdigit((unsigned char)b[1]))
        b++;
      size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
      if (la != lb)
        return la < lb ? -1 : 1;
      int c = strncmp(a, b, la);
      if (c)
        return c;
      a += la;
      b += lb;
    } else {
      if (*a != *b)
        return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
      a++;
      b++;
    }
  }
  return *a ? 1 : *b ? -1 : 0;
}

/* The best CPU tag ("skylake-avx512": the CPU's own generation where it holds, as the
 * library decides) and its x86-64 level: these, not libcpuid's codename guess (which names a
 * Zen 5 "Abu Dhabi" and an emulated Skylake-SP "P-II Xeon (Drake)"), say what the CPU can run.
 * ci: the host's CPU when the target is the detected one, else NULL. */
static const char *best_tag(const struct cli_env *env, const struct fpull_cpu_info *ci, int levels)
{
  return fpull_best_cpu_tag(env->tagdb, env->target, ci, levels);
}

/* The target's feature that starts with prefix and has the most components, or the highest
 * version of those with as many ("nvidia-550-54-14", "cuda-12-4", "nv-compute-9-0"). */
static const char *top_feature(const struct fpull_target *t, const char *prefix)
{
  const char *top = NULL;
  size_t np = strlen(prefix);
  for (size_t i = 0; i < fpull_featureset_count(t->features); i++) {
    const char *f = fpull_featureset_get(t->features, i, NULL);
    if (strncmp(f, prefix, np) != 0)
      continue;
    if (!top || version_cmp(f + np, top + np) > 0)
      top = f;
  }
  return top;
}

/* One line for people, before the list: best CPU tag, level, driver, GPUs. */
static void print_summary(const struct cli_env *env, const struct fpull_cpu_info *ci)
{
  const struct fpull_target *t = env->target;
  const char *tag = best_tag(env, ci, 0), *level = best_tag(env, ci, 1);
  printf("summary: %s/%s", t->os, t->architecture);
  printf(", best CPU tag %s", tag ? tag : "none");
  if (level)
    printf(" (%s)", level);
  else if (t->variant)
    printf(" (variant %s)", t->variant);
  const char *drv = top_feature(t, "nvidia-"), *cuda = top_feature(t, "cuda-");
  const char *cc = top_feature(t, "nv-compute-");
  if (drv) {
    printf(", NVIDIA driver ");
    for (const char *c = drv + 7; *c; c++)
      putchar(*c == '-' ? '.' : *c);
  } else {
    printf(", no NVIDIA driver");
  }
  if (cuda)
    printf(" (%s)", cuda);
  int src = -1;
  for (size_t i = 0; cc && i < fpull_featureset_count(t->features); i++)
    if (strcmp(fpull_featureset_get(t->features, i, &src), cc) == 0)
      break;
  struct fpull_nvidia_info *ni = NULL;
  fpull_err err = {0};
  if (cc && src == FPULL_SRC_NVIDIA && fpull_detect_nvidia(&ni, &err) == 0 && ni && ni->n_gpus)
    printf(", %zu GPU%s %s", ni->n_gpus, ni->n_gpus == 1 ? "" : "s", cc);
  else if (cc)
    printf(", GPUs %s", cc);
  else
    printf(", no NVIDIA GPU");
  fpull_nvidia_info_free(ni);
  const char *amd = top_feature(t, "amdgpu-");
  if (amd)
    printf(", AMD %s", amd + 7);
  putchar('\n');
}

/* Under -v: why NVIDIA detection found nothing (no libnvidia-ml, no GPU, every GPU held by
 * another job, ...) or which GPUs it left out, as the library found it. */
static void print_nvidia_reason(const struct cli_env *env)
{
  int found = 0;
  for (size_t i = 0; i < fpull_featureset_count(env->target->features); i++) {
    int src;
    fpull_featureset_get(env->target->features, i, &src);
    if (src == FPULL_SRC_NVIDIA)
      found = 1;
  }
  struct fpull_nvidia_info *ni = NULL;
  fpull_err err = {0};
  if (fpull_detect_nvidia(&ni, &err) != 0) {
    fprintf(stderr, "nvidia: nothing found: %s\n", err.msg);
    return;
  }
  const char *why = ni && ni->reason ? ni->reason : ni && ni->note ? ni->note : NULL;
  if (!found)
    fprintf(stderr, "nvidia: nothing found: %s\n", why ? why : "no reason given");
  else if (ni && ni->n_gpus == 0)
    fprintf(stderr, "nvidia: driver only, no GPU counted: %s\n", why ? why : "no reason given");
  else if (ni && ni->reason)
    fprintf(stderr, "nvidia: %s\n", ni->reason);
  fpull_nvidia_info_free(ni);
}

/* Under -v: the CPU's own generation when it cannot run here, and why. */
static void print_own_generation(const struct cli_env *env, const struct fpull_cpu_info *ci,
                                 const char *best)
{
  const char *own = fpull_cpu_generation(env->tagdb, ci);
  if (!own) {
    fprintf(stderr, "cpu: family 0x%x model 0x%x: no generation of the table by model\n",
            ci->family, ci->model);
    return;
  }
  if (best && strcmp(own, best) == 0)
    return;
  const char *const *isa = fpull_tagdb_isa(env->tagdb, own);
  if (!isa) {
    fprintf(stderr, "cpu: own generation %s (family 0x%x model 0x%x) is not in the table\n", own,
            ci->family, ci->model);
    return;
  }
  char missing[512] = "";
  int n = 0;
  for (size_t j = 0; isa[j]; j++) {
    int have = 0;
    for (size_t k = 0; ci->isa && ci->isa[k]; k++)
      have |= strcmp(ci->isa[k], isa[j]) == 0;
    if (!have && fpull_tagdb_tag_isa_gates(env->tagdb, own, isa[j])) {
      size_t l = strlen(missing);
      snprintf(missing + l, sizeof missing - l, "%s%s", n ? ", " : "", isa[j]);
      n++;
    }
  }
  fprintf(stderr, "cpu: own generation %s (family 0x%x model 0x%x) cannot run here: no %s (%s)\n",
          own, ci->family, ci->model, n ? missing : "extension named",
          ci->hypervisor ? "a virtual machine: its hypervisor hides them"
                         : "this part or the OS does not enable them");
}

/* Under -v: the CPU tags that are just missed, and which extensions they lack, because
 * "why is broadwell not listed on this Xeon?" is the first question users ask. */
static void print_near_misses(const struct cli_env *env, const struct fpull_cpu_info *ci)
{
  if (!ci)
    return;
  const char *tag = best_tag(env, ci, 0), *level = best_tag(env, ci, 1);
  fprintf(stderr, "cpu: %s, best tag %s%s%s%s\n", ci->vendor ? ci->vendor : "unknown vendor",
          tag ? tag : "none", level ? " (" : "", level ? level : "", level ? ")" : "");
  if (strcmp(ci->architecture, "amd64") == 0)
    print_own_generation(env, ci, tag);
  const char *const *tags = fpull_tagdb_tags(env->tagdb, ci->architecture);
  for (size_t i = 0; tags && tags[i]; i++) {
    /* The best tag's chip has them, this CPU hides them: they do not gate. Only a virtual
     * machine hides what its chip has; on bare metal the part simply lacks them (CLDEMOTE
     * on Alder Lake and its successors), and that is no news. */
    int hidden = tag && strcmp(tags[i], tag) == 0;
    if (!hidden && fpull_featureset_has(env->target->features, tags[i], env->tagdb))
      continue;
    if (hidden && !ci->hypervisor)
      continue;
    const char *const *isa = fpull_tagdb_isa(env->tagdb, tags[i]);
    char missing[256] = "";
    int n = 0;
    for (size_t j = 0; isa && isa[j]; j++) {
      int have = 0;
      for (size_t k = 0; ci->isa && ci->isa[k]; k++)
        if (strcmp(ci->isa[k], isa[j]) == 0)
          have = 1;
      if (!have && hidden == !fpull_tagdb_tag_isa_gates(env->tagdb, tags[i], isa[j])) {
        size_t l = strlen(missing);
        snprintf(missing + l, sizeof missing - l, "%s%s", n ? ", " : "", isa[j]);
        n++;
      }
    }
    if (hidden && n > 0)
      fprintf(stderr, "%s: hidden here, not gating (intrinsic-only): %s\n", tags[i], missing);
    else if (!hidden && n > 0 && n <= 3)
      fprintf(stderr, "%s: no %s\n", tags[i], missing);
  }
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
  for (size_t i = 0; names[i]; i++) {
    const char *tag = s->verbose ? fpull_tagdb_canonical(env.tagdb, names[i]) : NULL;
    if (tag && strcmp(tag, names[i]) != 0) {
      printf("%s = %s\n", names[i], tag); /* an alias */
    } else if (tag) {
      /* The tag's architecture is that of the list it is in. */
      static const char *const archs[] = {"amd64", "arm64", "ppc64le", "arm", "386", NULL};
      const char *arch = "?";
      for (size_t a = 0; archs[a] && arch[0] == '?'; a++)
        for (const char *const *t = fpull_tagdb_tags(env.tagdb, archs[a]); *t; t++)
          if (strcmp(*t, tag) == 0)
            arch = archs[a];
      printf("%s %s", tag, arch);
      for (const char *const *isa = fpull_tagdb_isa(env.tagdb, tag); isa && *isa; isa++)
        printf(fpull_tagdb_tag_isa_gates(env.tagdb, tag, *isa) ? " %s" : " (%s)", *isa);
      putchar('\n');
    } else {
      printf("%s\n", names[i]);
    }
  }
  fpull_strv_free(names);
  cli_env_free(&env);
  return 0;
}

static const struct fpull_featureset *sort_set;

static int by_version(const void *a, const void *b)
{
  return version_cmp(fpull_featureset_get(sort_set, *(const size_t *)a, NULL),
                     fpull_featureset_get(sort_set, *(const size_t *)b, NULL));
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
  /* The host's CPU decides the best tag's generation only for the detected target. */
  struct fpull_cpu_info *ci = NULL;
  fpull_err cerr = {0};
  if (!s->features && !s->platform && fpull_detect_cpu(&ci, &cerr) != 0)
    ci = NULL;
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
    print_summary(&env, ci);
    printf("os: %s\narchitecture: %s\nvariant: %s\nfeatures:\n", t->os, t->architecture,
           t->variant ? t->variant : "-");
    /* Versions sort as versions: cuda-2-0 before cuda-10-0. */
    size_t *order = calloc(n ? n : 1, sizeof *order);
    for (size_t i = 0; i < n; i++)
      order[i] = i;
    sort_set = t->features;
    if (order)
      qsort(order, n, sizeof *order, by_version);
    for (size_t i = 0; i < n; i++) {
      int sv;
      const char *name = fpull_featureset_get(t->features, order ? order[i] : i, &sv);
      printf("  %-28s %s\n", name, fpull_feature_source_name(sv));
    }
    free(order);
  }
  if (s->verbose && !s->features && !s->platform) {
    print_near_misses(&env, ci);
    print_nvidia_reason(&env);
  }
  fpull_cpu_info_free(ci);
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

/* For inspect's one-line target (issue 43.11): the same best CPU tag and newest NVIDIA
 * names that the summary line gives. */
const char *cli_best_cpu_tag(const struct cli_env *env)
{
  /* The host's own generation counts only where the target holds it (given features or
   * another platform decide otherwise); the name returned is the table's. */
  struct fpull_cpu_info *ci = NULL;
  fpull_err err = {0};
  if (fpull_detect_cpu(&ci, &err) != 0)
    ci = NULL;
  const char *tag = best_tag(env, ci, 0);
  fpull_cpu_info_free(ci);
  return tag;
}

const char *cli_top_feature(const struct fpull_target *t, const char *prefix)
{
  return top_feature(t, prefix);
}
