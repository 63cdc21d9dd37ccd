/* Names a person gives (lib/names.c): a typo never selects another image. The property
 * test runs every feature name fpull knows through one- and two-edit typos. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/config.h"
#include "fpull/features.h"
#include "detect/cpuid.h"
#include "harness.h"
#include "detect/hwcap.h"
#include "select/tagdb.h"
#include "base/util.h"

static struct fpull_tagdb *load(void)
{
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  if (fpull_tagdb_load(&db, th_src("data/cputags.yaml"), NULL, &err))
    th_fail(__FILE__, __LINE__, "tagdb: %s", err.msg);
  return db;
}

/* Plain Levenshtein with adjacent swaps, as the oracle. */
static int dist(const char *a, const char *b)
{
  size_t n = strlen(a), m = strlen(b);
  int d[80][80];
  for (size_t i = 0; i <= n; i++)
    d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++)
    d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int c = a[i - 1] != b[j - 1];
      int v = d[i - 1][j - 1] + c;
      if (d[i - 1][j] + 1 < v)
        v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v)
        v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[n][m];
}

static char **all_known(const struct fpull_tagdb *db)
{
  char **v = NULL;
  for (size_t i = 0; i < db->n_tags; i++) {
    v = fp_strv_push(v, db->tags[i].name);
    for (size_t j = 0; db->tags[i].aliases && db->tags[i].aliases[j]; j++)
      v = fp_strv_push(v, db->tags[i].aliases[j]);
    for (size_t j = 0; j < db->tags[i].n_isa; j++)
      if (!fp_strv_contains(v, db->tags[i].isa[j]))
        v = fp_strv_push(v, db->tags[i].isa[j]);
  }
  /* The detectors' raw flags are names a person may give too. */
  for (const char *const *k = fp_cpuid_known_isa(); k && *k; k++)
    if (!fp_strv_contains(v, *k))
      v = fp_strv_push(v, *k);
  const char *name;
  for (size_t i = 0; (name = fp_hwcap_arm64_name(i)) != NULL; i++)
    if (!fp_strv_contains(v, name))
      v = fp_strv_push(v, name);
  for (size_t i = 0; (name = fp_hwcap_ppc64_name(i)) != NULL; i++)
    if (!fp_strv_contains(v, name))
      v = fp_strv_push(v, name);
  return v;
}

static int accepted(const struct fpull_tagdb *db, const struct fpull_config *c, const char *name,
                    char *msg, size_t cap)
{
  fpull_err err = {0};
  int r = fpull_feature_name_check(db, c, name, &err);
  snprintf(msg, cap, "%s", err.msg);
  return r == 0;
}

/* The near miss: the suggestion quoted in the message ("did you mean \"X\"?"). */
static int suggestion(const char *msg, char *out, size_t cap)
{
  const char *p = strstr(msg, "did you mean \"");
  if (!p)
    return 0;
  p += 14;
  size_t n = strcspn(p, "\"");
  if (n >= cap)
    return 0;
  memcpy(out, p, n);
  out[n] = '\0';
  return 1;
}

static void check_typo(const struct fpull_tagdb *db, char **known, const char *orig,
                       const char *typo, unsigned *checked)
{
  if (fp_strv_contains(known, typo) || !*typo)
    return; /* an edit that lands on another real name is that name */
  char msg[1100], near[256];
  if (accepted(db, NULL, typo, msg, sizeof msg)) {
    /* Only the grammar names (nv-compute-5-3, cuda-9-9) are real names that no list
     * holds; anything else accepted is a typo let through. */
    if (strncmp(typo, "nvidia-", 7) == 0 || strncmp(typo, "nv-compute-", 11) == 0 ||
        strncmp(typo, "cuda-", 5) == 0 || strncmp(typo, "amdgpu-gfx", 10) == 0)
      return;
    th_fail(__FILE__, __LINE__, "typo \"%s\" of \"%s\" accepted", typo, orig);
  }
  CHECK_CONTAINS(msg, typo);
  if (!suggestion(msg, near, sizeof near))
    th_fail(__FILE__, __LINE__, "typo \"%s\" of \"%s\": no suggestion in: %s", typo, orig, msg);
  /* The suggestion is a known name at least as close as the one the typo came from. */
  CHECK(accepted(db, NULL, near, msg, sizeof msg));
  int want = dist(typo, orig), got = dist(typo, near);
  if (got > want)
    th_fail(__FILE__, __LINE__, "typo \"%s\" of \"%s\": suggested \"%s\" (%d edits, not %d)", typo,
            orig, near, got, want);
  (*checked)++;
}

TEST(every_known_name_and_its_typos)
{
  struct fpull_tagdb *db = load();
  char **known = all_known(db);
  unsigned names = 0, checked = 0;
  char typo[300];
  for (size_t i = 0; known[i]; i++, names++) {
    const char *k = known[i];
    size_t n = strlen(k);
    char msg[1100];
    CHECK(accepted(db, NULL, k, msg, sizeof msg));
    /* Upper case is the same name. */
    for (size_t j = 0; j <= n; j++)
      typo[j] = (char)toupper((unsigned char)k[j]);
    CHECK(accepted(db, NULL, typo, msg, sizeof msg));
    if (n < 3)
      continue; /* "fp", "sve": too short for a meaningful near miss */
    /* One edit of each kind at a few positions, and one two-edit typo. */
    size_t pos[] = {0, n / 2, n - 1};
    for (size_t q = 0; q < 3; q++) {
      size_t p = pos[q];
      snprintf(typo, sizeof typo, "%.*s%s", (int)p, k, k + p + 1); /* deletion */
      check_typo(db, known, k, typo, &checked);
      snprintf(typo, sizeof typo, "%.*sq%s", (int)p, k, k + p); /* insertion */
      check_typo(db, known, k, typo, &checked);
      snprintf(typo, sizeof typo, "%s", k); /* substitution */
      typo[p] = typo[p] == 'z' ? 'y' : 'z';
      check_typo(db, known, k, typo, &checked);
      if (p + 1 < n && k[p] != k[p + 1]) { /* swap */
        snprintf(typo, sizeof typo, "%s", k);
        typo[p] = k[p + 1];
        typo[p + 1] = k[p];
        check_typo(db, known, k, typo, &checked);
      }
    }
    snprintf(typo, sizeof typo, "%.*s%s", (int)(n - 2), k, "zq"); /* two substitutions */
    if (strcmp(typo, k) != 0)
      check_typo(db, known, k, typo, &checked);
  }
  fprintf(stderr, "%u known names, %u typos refused with a suggestion\n", names, checked);
  CHECK(names > 250);
  CHECK(checked > 1000);
  fpull_strv_free(known);
  fpull_tagdb_free(db);
}

TEST(site_features_are_the_only_way_in)
{
  struct fpull_tagdb *db = load();
  char msg[1100];
  CHECK(!accepted(db, NULL, "infiniband", msg, sizeof msg));
  CHECK_CONTAINS(msg, "site-features");
  struct fpull_config *c = NULL;
  fpull_err err = {0};
  const char *yaml = "site-features: [InfiniBand, omnipath]\n";
  CHECK_INT_EQ(fpull_config_parse(&c, yaml, strlen(yaml), "t.yaml", &err), 0);
  CHECK(accepted(db, c, "infiniband", msg, sizeof msg));
  CHECK(accepted(db, c, "OMNIPATH", msg, sizeof msg));
  /* A typo of a site feature is refused, pointing at it. */
  CHECK(!accepted(db, c, "infinband", msg, sizeof msg));
  CHECK_CONTAINS(msg, "did you mean \"infiniband\"");
  fpull_config_free(c);
  fpull_tagdb_free(db);
}

TEST(grammar_names_and_their_near_misses)
{
  struct fpull_tagdb *db = load();
  char msg[1100];
  static const char *const ok[] = {"nvidia-396",     "nvidia-396-44",  "nvidia-580-159-04",
                                   "nv-compute-5-2", "cuda-12-4",      "amdgpu-gfx90a",
                                   "amdgpu-gfx942",  "amdgpu-gfx1100", NULL};
  for (size_t i = 0; ok[i]; i++)
    CHECK(accepted(db, NULL, ok[i], msg, sizeof msg));
  static const struct {
    const char *typo, *meant;
  } bad[] = {{"nvidia-396.44", "nvidia-396-44"},
             {"nv-compute-5.2", "nv-compute-5-2"},
             {"cuda12-4", "cuda-12-4"},
             {"cuda-12.4", "cuda-12-4"},
             {"nvcompute-7-0", "nv-compute-7-0"},
             {"gfx90a", "amdgpu-gfx90a"},
             {"brodwell", "broadwell"},
             {"skylak", "skylake"},
             {"skylake-avx521", "skylake-avx512"},
             {"neoverse-v", "neoverse-v1"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    CHECK(!accepted(db, NULL, bad[i].typo, msg, sizeof msg));
    char want[128];
    snprintf(want, sizeof want, "did you mean \"%s\"", bad[i].meant);
    CHECK_CONTAINS(msg, want);
  }
  CHECK(!accepted(db, NULL, "nvidia-396-44-1-2", msg, sizeof msg));
  CHECK(!accepted(db, NULL, "totally-unrelated", msg, sizeof msg));
  CHECK(strstr(msg, "did you mean") == NULL);
  fpull_tagdb_free(db);
}

TEST(platform_names)
{
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_platform_name_check("linux", "amd64", NULL, &err), 0);
  CHECK_INT_EQ(fpull_platform_name_check("linux", "x86_64", "v3", &err), 0);
  CHECK_INT_EQ(fpull_platform_name_check("linux", "arm64", "v8", &err), 0);
  CHECK_INT_EQ(fpull_platform_name_check("linux", "arm", "v7", &err), 0);
  CHECK_INT_EQ(fpull_platform_name_check("windows", "amd64", NULL, &err), 0);
  CHECK_INT_EQ(fpull_platform_name_check("linux", "amd46", NULL, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "did you mean \"amd64\"");
  CHECK_INT_EQ(fpull_platform_name_check("linx", "amd64", NULL, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "did you mean \"linux\"");
  CHECK_INT_EQ(fpull_platform_name_check("linux", "amd64", "v9", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "v1, v2, v3, v4");
  CHECK_INT_EQ(fpull_platform_name_check("linux", "s390x", "v1", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "no variants");
}

TEST(suggest_is_deterministic_and_bounded)
{
  static const char *const words[] = {"pull", "prefetch", "inspect", "features", NULL};
  CHECK_STR_EQ(fpull_suggest("inpsect", words), "inspect");
  CHECK_STR_EQ(fpull_suggest("PUL", words), "pull");
  CHECK_NULL(fpull_suggest("ubuntu", words));
  CHECK_NULL(fpull_suggest("pull", words)); /* an exact name is no suggestion */
  CHECK_NULL(fpull_suggest("", NULL));
  static const char *const short_words[] = {"x", "ab", NULL};
  CHECK_NULL(fpull_suggest("y", short_words));
  CHECK_NULL(fpull_suggest("cd", short_words));
  CHECK_STR_EQ(fpull_suggest("abc", short_words), "ab");
}
