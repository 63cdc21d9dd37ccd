/* The GPU preflight (contract, "GPU preflight"): NVIDIA_REQUIRE_* of an image config
 * against the target, with the nvidia-container-toolkit's rules, so that an image the
 * container runtime would refuse to start is never chosen, let alone downloaded. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry/json_strict.h"
#include "preflight.h"
#include "base/util.h"

#include "fpull/manifest.h"

/* "12-4" / "12.4" -> the version, dashes or dots. */
static int parse_ver(struct fp_version *v, const char *s)
{
  return fp_version_parse(v, s, strchr(s, '-') ? '-' : '.');
}

int fp_gpu_facts_from_target(struct fp_gpu_facts *g, const struct fpull_target *t)
{
  memset(g, 0, sizeof *g);
  for (size_t i = 0; i < fpull_featureset_count(t->features); i++) {
    int src;
    const char *f = fpull_featureset_get(t->features, i, &src);
    struct fp_version v;
    if (strncmp(f, "cuda-", 5) == 0 && parse_ver(&v, f + 5) == 0) {
      if (!g->has_cuda || fp_version_cmp(&v, &g->cuda) > 0)
        g->cuda = v;
      g->has_cuda = 1;
    } else if (strncmp(f, "nvidia-", 7) == 0 && parse_ver(&v, f + 7) == 0) {
      /* The full version, not the implied shorter prefixes (nvidia-580 for 580.159.04). */
      if (!g->has_driver || v.n > g->driver.n ||
          (v.n == g->driver.n && fp_version_cmp(&v, &g->driver) > 0)) {
        g->driver = v;
        g->driver_feature = f;
      }
      g->has_driver = 1;
    } else if (strncmp(f, "nv-compute-", 11) == 0 && parse_ver(&v, f + 11) == 0) {
      if (!g->has_arch || fp_version_cmp(&v, &g->arch) > 0)
        g->arch = v;
      g->has_arch = 1;
    }
  }
  g->brand = t->gpu_brand;
  /* Requirements are about the driver: a target that names only a compute capability
   * (cross-preparation with --features nv-compute-8-0) has nothing to check them against. */
  return g->has_cuda || g->has_driver;
}

static int cmp_holds(int c, const char *op)
{
  if (!strcmp(op, "=") || !strcmp(op, "=="))
    return c == 0;
  if (!strcmp(op, "!="))
    return c != 0;
  if (!strcmp(op, "<"))
    return c < 0;
  if (!strcmp(op, "<="))
    return c <= 0;
  if (!strcmp(op, ">"))
    return c > 0;
  if (!strcmp(op, ">="))
    return c >= 0;
  return 0;
}

/* One clause KEY OP VALUE. */
static int clause_holds(const char *cl, const struct fp_gpu_facts *g)
{
  size_t klen = strcspn(cl, "=!<>");
  if (!klen || !cl[klen])
    return 0;
  char op[3] = {0};
  size_t olen = strspn(cl + klen, "=!<>");
  if (olen > 2)
    return 0;
  memcpy(op, cl + klen, olen);
  const char *val = cl + klen + olen;
  if (!*val)
    return 0;
  if (klen == 5 && strncasecmp(cl, "brand", 5) == 0) {
    /* Unknown brand: neither = nor != can be decided, so the clause does not hold. */
    if (!g->brand || (strcmp(op, "=") && strcmp(op, "==") && strcmp(op, "!=")))
      return 0;
    return cmp_holds(strcasecmp(g->brand, val) ? 1 : 0, op);
  }
  struct fp_version want;
  if (fp_version_parse(&want, val, '.') != 0)
    return 0;
  const struct fp_version *have = NULL;
  if (klen == 4 && strncasecmp(cl, "cuda", 4) == 0 && g->has_cuda)
    have = &g->cuda;
  else if (klen == 6 && strncasecmp(cl, "driver", 6) == 0 && g->has_driver)
    have = &g->driver;
  else if (klen == 4 && strncasecmp(cl, "arch", 4) == 0 && g->has_arch)
    have = &g->arch;
  return have && cmp_holds(fp_version_cmp(have, &want), op);
}

int fp_require_holds(const char *req, const struct fp_gpu_facts *g)
{
  cleanup_free char *copy = fp_xstrdup(req);
  char *save = NULL;
  int any_alt = 0;
  for (char *alt = strtok_r(copy, " \t", &save); alt; alt = strtok_r(NULL, " \t", &save)) {
    any_alt = 1;
    int all = 1;
    char *save2 = NULL;
    for (char *cl = strtok_r(alt, ",", &save2); cl && all; cl = strtok_r(NULL, ",", &save2))
      all = clause_holds(cl, g);
    if (all)
      return 1;
  }
  /* An empty requirement asks for nothing. */
  return !any_alt;
}

/* "cuda-12-0, nvidia-525-60-13, brand tesla": what the target offers, for messages. */
static char *facts_text(const struct fp_gpu_facts *g)
{
  struct fp_buf b = {0};
  char part[96];
  if (g->has_cuda) {
    snprintf(part, sizeof part, "cuda-%u-%u", g->cuda.v[0], g->cuda.n > 1 ? g->cuda.v[1] : 0);
    fp_buf_append(&b, part, strlen(part));
  }
  if (g->has_driver) {
    snprintf(part, sizeof part, "%s%s", b.len ? ", " : "", g->driver_feature);
    fp_buf_append(&b, part, strlen(part));
  }
  if (g->brand) {
    snprintf(part, sizeof part, "%sbrand %s", b.len ? ", " : "", g->brand);
    fp_buf_append(&b, part, strlen(part));
  }
  if (!b.len)
    fp_buf_append(&b, "no CUDA version", 15);
  return b.data;
}

/* "requires cuda>=12.4 (or 1 other alternative); the driver gives cuda-12-0, ...". */
static char *explain(const char *req, const struct fp_gpu_facts *g)
{
  cleanup_free char *copy = fp_xstrdup(req);
  char *save = NULL;
  const char *first = strtok_r(copy, " \t", &save);
  size_t others = 0;
  while (strtok_r(NULL, " \t", &save))
    others++;
  cleanup_free char *facts = facts_text(g);
  if (!others)
    return fp_xasprintf("requires %s; the driver gives %s", first ? first : req, facts);
  return fp_xasprintf("requires %s (or %zu other alternative%s); the driver gives %s", first,
                      others, others == 1 ? "" : "s", facts);
}

/* Go's strconv.ParseBool true values, which the toolkit uses for NVIDIA_DISABLE_REQUIRE. */
static int go_true(const char *v)
{
  static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(v, t[i]) == 0)
      return 1;
  return 0;
}

int fp_preflight_config(const char *cfg, size_t len, const struct fpull_target *t, char **why)
{
  *why = NULL;
  struct fp_gpu_facts g;
  if (!fp_gpu_facts_from_target(&g, t))
    return 1;
  cleanup_json cJSON *root = NULL;
  fpull_err err = {0};
  if (fp_json_parse_strict(&root, cfg, len, FPULL_MANIFEST_MAX, "image config", &err) != 0)
    return 1;
  const cJSON *config = cJSON_GetObjectItemCaseSensitive(root, "config");
  const cJSON *env = config ? cJSON_GetObjectItemCaseSensitive(config, "Env") : NULL;
  if (!cJSON_IsArray(env))
    return 1;
  const char *legacy = NULL;
  int has_require_cuda = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, env)
  {
    const char *s = cJSON_GetStringValue(e);
    if (!s)
      continue;
    if (strncmp(s, "NVIDIA_DISABLE_REQUIRE=", 23) == 0 && go_true(s + 23))
      return 1;
    if (strncmp(s, "NVIDIA_REQUIRE_CUDA=", 20) == 0 && s[20])
      has_require_cuda = 1;
    if (strncmp(s, "CUDA_VERSION=", 13) == 0 && s[13])
      legacy = s + 13;
  }
  cJSON_ArrayForEach(e, env)
  {
    const char *s = cJSON_GetStringValue(e);
    const char *eq = s ? strchr(s, '=') : NULL;
    if (!eq || strncmp(s, "NVIDIA_REQUIRE_", 15) != 0 ||
        strncmp(s, "NVIDIA_REQUIRE_JETPACK", 22) == 0)
      continue;
    if (!fp_require_holds(eq + 1, &g)) {
      *why = explain(eq + 1, &g);
      return 0;
    }
  }
  if (legacy && !has_require_cuda) {
    /* An image from before NVIDIA_REQUIRE_CUDA: the toolkit requires its CUDA_VERSION's
     * major.minor. */
    struct fp_version v;
    if (fp_version_parse(&v, legacy, '.') == 0 && v.n >= 2) {
      char req[64];
      snprintf(req, sizeof req, "cuda>=%u.%u", v.v[0], v.v[1]);
      if (!fp_require_holds(req, &g)) {
        *why = explain(req, &g);
        return 0;
      }
    }
  }
  return 1;
}
