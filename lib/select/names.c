/* Names a person gives: features, os, architecture, variant (contract v3, "Every feature
 * name a person gives ..."). One module for the CLI, the environment, the config and
 * manifest specs, so that a typo is refused the same way wherever it is typed. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "detect/cpuid.h"
#include "fpull/config.h"
#include "fpull/features.h"
#include "detect/hwcap.h"
#include "names.h"
#include "tagdb.h"
#include "base/util.h"

#define SUGGEST_MAX 2

/* Optimal string alignment distance (Damerau-Levenshtein without repeated edits of one
 * substring), case-insensitive, giving up above limit. */
static int edit_distance(const char *a, const char *b, int limit)
{
  size_t n = strlen(a), m = strlen(b);
  if (n > 64 || m > 64)
    return limit + 1;
  if ((n > m ? n - m : m - n) > (size_t)limit)
    return limit + 1;
  int d[66][66];
  for (size_t i = 0; i <= n; i++)
    d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++)
    d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    int best = limit + 1;
    for (size_t j = 1; j <= m; j++) {
      int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
      int cost = ca != cb;
      int v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v)
        v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v)
        v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
      if (v < best)
        best = v;
    }
    if (best > limit)
      return limit + 1;
  }
  return d[n][m];
}

const char *fpull_suggest(const char *name, const char *const *known)
{
  const char *best = NULL;
  int bd = SUGGEST_MAX + 1;
  for (size_t i = 0; name && known && known[i]; i++) {
    int d = edit_distance(name, known[i], SUGGEST_MAX);
    /* Replacing every letter of a short word is no near miss: "y" does not mean "x". */
    if (d >= (int)strlen(name) || d >= (int)strlen(known[i]))
      continue;
    if (d < bd && d > 0) {
      bd = d;
      best = known[i];
    }
  }
  return best;
}

/* PREFIX then groups of decimal digits joined by '-', between min and max groups. */
static int dashed_numbers(const char *s, const char *prefix, int min, int max)
{
  size_t pl = strlen(prefix);
  if (strncmp(s, prefix, pl) != 0)
    return 0;
  s += pl;
  int groups = 0;
  for (;;) {
    if (!isdigit((unsigned char)*s))
      return 0;
    while (isdigit((unsigned char)*s))
      s++;
    groups++;
    if (!*s)
      break;
    if (*s != '-')
      return 0;
    s++;
  }
  return groups >= min && groups <= max;
}

int fp_nvidia_feature_name(const char *lower)
{
  return dashed_numbers(lower, "nvidia-", 1, 3) || dashed_numbers(lower, "nv-compute-", 2, 2) ||
         dashed_numbers(lower, "cuda-", 2, 2);
}

static int amdgpu_target(const char *s)
{
  if (strncmp(s, "amdgpu-gfx", 10) != 0)
    return 0;
  size_t n = 0;
  for (s += 10; *s; s++, n++)
    if (!isxdigit((unsigned char)*s) || isupper((unsigned char)*s))
      return 0;
  return n >= 3 && n <= 5;
}

/* Every name a table or detector knows, for the check and suggestions (duplicates are
 * harmless: the first of equal names is the one suggested). Borrowed strings only. */
static const char **known_features(const struct fpull_tagdb *db, const struct fpull_config *config,
                                   char ***site)
{
  size_t n = 0, cap = 64;
  const char **v = fp_xmalloc(cap * sizeof *v);
#define KEEP(x)                                                                                    \
  do {                                                                                             \
    if (n + 1 == cap)                                                                              \
      v = fp_xrealloc(v, (cap *= 2) * sizeof *v);                                                  \
    v[n++] = (x);                                                                                  \
  } while (0)
  for (size_t i = 0; db && i < db->n_tags; i++) {
    KEEP(db->tags[i].name);
    for (size_t j = 0; db->tags[i].aliases && db->tags[i].aliases[j]; j++)
      KEEP(db->tags[i].aliases[j]);
  }
  for (size_t i = 0; db && i < db->n_tags; i++)
    for (size_t j = 0; j < db->tags[i].n_isa; j++)
      KEEP(db->tags[i].isa[j]);
  for (const char *const *k = fp_cpuid_known_isa(); k && *k; k++)
    KEEP(*k);
  const char *name;
  for (size_t i = 0; (name = fp_hwcap_arm64_name(i)) != NULL; i++)
    KEEP(name);
  for (size_t i = 0; (name = fp_hwcap_ppc64_name(i)) != NULL; i++)
    KEEP(name);
  size_t n_site = config && config->site_features ? fpull_strv_len(config->site_features) : 0;
  *site = fp_xcalloc(n_site + 1, sizeof **site);
  for (size_t i = 0; i < n_site; i++) {
    (*site)[i] = fp_xstrdup_lower(config->site_features[i]);
    KEEP((*site)[i]);
  }
#undef KEEP
  v[n] = NULL;
  return v;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

struct fp_feature_names {
  const struct fpull_tagdb *db;
  const char **order;  /* every known name in the order known_features gives (suggestions) */
  const char **sorted; /* the same sorted, without duplicates (membership), n of them */
  size_t n;
  char **site; /* the config's site features in lower case, which both borrow */
};

struct fp_feature_names *fp_feature_names_new(const struct fpull_tagdb *db,
                                              const struct fpull_config *config)
{
  struct fp_feature_names *k = fp_xcalloc(1, sizeof *k);
  k->db = db;
  k->order = known_features(db, config, &k->site);
  size_t n = 0;
  while (k->order[n])
    n++;
  k->sorted = fp_xmalloc((n + 1) * sizeof *k->sorted);
  memcpy(k->sorted, k->order, (n + 1) * sizeof *k->sorted);
  qsort(k->sorted, n, sizeof *k->sorted, cmp_str);
  for (size_t i = 0; i < n; i++)
    if (k->n == 0 || strcmp(k->sorted[i], k->sorted[k->n - 1]) != 0)
      k->sorted[k->n++] = k->sorted[i];
  k->sorted[k->n] = NULL;
  return k;
}

void fp_feature_names_free(struct fp_feature_names *k)
{
  if (!k)
    return;
  free(k->order);
  free(k->sorted);
  fpull_strv_free(k->site);
  free(k);
}

char **fpull_feature_known_names(const struct fpull_tagdb *db, const struct fpull_config *config)
{
  struct fp_feature_names *k = fp_feature_names_new(db, config);
  char **out = fp_xcalloc(k->n + 1, sizeof *out);
  for (size_t i = 0; i < k->n; i++)
    out[i] = fp_xstrdup(k->sorted[i]);
  fp_feature_names_free(k);
  return out;
}

/* The NVIDIA/CUDA/AMD spelling a near miss was meant to be ("nvidia-396.44"). */
static char *grammar_fix(const char *low)
{
  cleanup_free char *fixed = fp_xstrdup(low);
  for (char *p = fixed; *p; p++)
    if (*p == '.' || *p == '_')
      *p = '-';
  static const struct {
    const char *wrong, *right;
  } prefixes[] = {{"nv-compute", "nv-compute-"}, {"nvcompute-", "nv-compute-"},
                  {"nv-cc-", "nv-compute-"},     {"cuda", "cuda-"},
                  {"nvidia", "nvidia-"},         {"amdgpu-", "amdgpu-"},
                  {"gfx", "amdgpu-gfx"},         {"amd-gfx", "amdgpu-gfx"}};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
    size_t wl = strlen(prefixes[i].wrong);
    if (strncmp(fixed, prefixes[i].wrong, wl) != 0)
      continue;
    const char *rest = fixed + wl;
    if (*rest == '-' && prefixes[i].right[strlen(prefixes[i].right) - 1] == '-')
      rest++;
    char *cand = fp_xasprintf("%s%s", prefixes[i].right, rest);
    if (fp_nvidia_feature_name(cand) || amdgpu_target(cand))
      return cand;
    free(cand);
  }
  if (strcmp(fixed, low) != 0 && fp_nvidia_feature_name(fixed))
    return steal_pointer(&fixed);
  return NULL;
}

/* Whether the name needs no list of known names: 0 known by its shape or the tag table, 1
 * for the list to decide, or an error. *low gets it in lower case. */
static int check_shape(const struct fpull_tagdb *db, const char *name, char **low, fpull_err *err)
{
  *low = NULL;
  if (!name || !*name)
    return fpull_err_set(err, FPULL_EUSAGE, "empty feature name");
  *low = fp_xstrdup_lower(name);
  if (fp_nvidia_feature_name(*low) || amdgpu_target(*low))
    return 0;
  if (db && fp_tagdb_find(db, *low))
    return 0;
  return -1;
}

int fp_feature_names_check(const struct fp_feature_names *k, const char *name, fpull_err *err)
{
  cleanup_free char *low = NULL;
  int r = check_shape(k->db, name, &low, err);
  if (r >= 0)
    return r;
  if (bsearch(&low, k->sorted, k->n, sizeof *k->sorted, cmp_str))
    return 0;
  cleanup_free char *fix = grammar_fix(low);
  const char *near = fix ? fix : fpull_suggest(low, k->order);
  if (near)
    return fpull_err_set(err, FPULL_EUSAGE, "unknown feature \"%s\" (did you mean \"%s\"?)", name,
                         near);
  return fpull_err_set(err, FPULL_EUSAGE,
                       "unknown feature \"%s\" (not a CPU tag, ISA extension, nvidia-N-N, "
                       "nv-compute-N-N, cuda-N-N or amdgpu-gfxX; declare site features under "
                       "site-features in the config)",
                       name);
}

int fpull_feature_name_check(const struct fpull_tagdb *db, const struct fpull_config *config,
                             const char *name, fpull_err *err)
{
  cleanup_free char *low = NULL;
  int r = check_shape(db, name, &low, err);
  if (r >= 0)
    return r;
  struct fp_feature_names *k = fp_feature_names_new(db, config);
  r = fp_feature_names_check(k, name, err);
  fp_feature_names_free(k);
  return r;
}

/* Go's GOOS and GOARCH lists, which the OCI image spec refers to for platform.os and
 * platform.architecture, and the variants those architectures use. */
static const char *const oses[] = {
    "aix",  "android", "darwin",  "dragonfly", "freebsd", "hurd",   "illumos", "ios", "js", "linux",
    "nacl", "netbsd",  "openbsd", "plan9",     "solaris", "wasip1", "windows", "zos", NULL};
static const char *const archs[] = {
    "386",     "amd64",   "amd64p32", "arm",      "arm64",     "arm64be",     "armbe",
    "loong64", "mips",    "mips64",   "mips64le", "mips64p32", "mips64p32le", "mipsle",
    "ppc",     "ppc64",   "ppc64le",  "riscv",    "riscv64",   "s390",        "s390x",
    "sparc",   "sparc64", "wasm",     "x86_64",   "aarch64",   "x86-64",      "i386",
    "i686",    "armhf",   "armel",    "ppc64el",  NULL};

struct arch_variants {
  const char *arch;
  const char *const *variants;
};
static const char *const v_amd64[] = {"v1", "v2", "v3", "v4", NULL};
static const char *const v_arm[] = {"v4", "v5", "v6", "v7", "v8", NULL};
static const char *const v_arm64[] = {"v8",   "v8.0", "v8.1", "v8.2", "v8.3", "v8.4", "v8.5",
                                      "v8.6", "v8.7", "v8.8", "v8.9", "v9",   "v9.0", "v9.1",
                                      "v9.2", "v9.3", "v9.4", "v9.5", "v9.6", "v9.7", NULL};
static const char *const v_386[] = {"sse2", "softfloat", NULL};
static const char *const v_ppc64[] = {"power8", "power9", "power10", NULL};
static const char *const v_riscv64[] = {"rva20u64", "rva22u64", NULL};
static const char *const v_none[] = {NULL};
static const struct arch_variants variants[] = {
    {"amd64", v_amd64}, {"arm", v_arm},       {"arm64", v_arm64},     {"386", v_386},
    {"ppc64", v_ppc64}, {"ppc64le", v_ppc64}, {"riscv64", v_riscv64},
};

static int listed(const char *s, const char *const *list)
{
  for (size_t i = 0; list[i]; i++)
    if (strcasecmp(s, list[i]) == 0)
      return 1;
  return 0;
}

static int unknown(fpull_err *err, const char *what, const char *s, const char *const *list)
{
  const char *near = fpull_suggest(s, list);
  if (near)
    return fpull_err_set(err, FPULL_EUSAGE, "unknown %s \"%s\" (did you mean \"%s\"?)", what, s,
                         near);
  char all[512] = "";
  for (size_t i = 0; list[i] && strlen(all) + strlen(list[i]) + 3 < sizeof all; i++)
    snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "", list[i]);
  return fpull_err_set(err, FPULL_EUSAGE, "unknown %s \"%s\" (known: %s)", what, s,
                       *all ? all : "none");
}

int fpull_platform_name_check(const char *os, const char *architecture, const char *variant,
                              fpull_err *err)
{
  if (os && !listed(os, oses))
    return unknown(err, "os", os, oses);
  if (architecture && !listed(architecture, archs))
    return unknown(err, "architecture", architecture, archs);
  if (!variant)
    return 0;
  cleanup_free char *arch = fpull_arch_normalise(architecture ? architecture : "");
  const char *const *list = v_none;
  for (size_t i = 0; i < sizeof variants / sizeof *variants; i++)
    if (strcmp(arch, variants[i].arch) == 0)
      list = variants[i].variants;
  if (listed(variant, list))
    return 0;
  /* No "did you mean" here: v9 is one edit from v1, and the list is short anyway. */
  char all[256] = "";
  for (size_t i = 0; list[i]; i++)
    snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "", list[i]);
  return fpull_err_set(err, FPULL_EUSAGE, "unknown variant \"%s\" for %s (%s%s)", variant, arch,
                       *all ? "known: " : "it has no variants", all);
}
