/* Eligibility and the five ranking rules (contract, "Features and matching"), with the
 * eleven-entry cv-tf index of issue 3 as the main table. Detection never runs here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/config.h"
#include "fpull/features.h"
#include "fpull/match.h"
#include "harness.h"
#include "base/util.h"

static struct fpull_tagdb *db;

static void load_db(const struct fpull_config *cfg)
{
  fpull_err err = {0};
  fpull_tagdb_free(db);
  db = NULL;
  if (fpull_tagdb_load(&db, NULL, cfg, &err))
    th_fail(__FILE__, __LINE__, "tag table: %s", err.msg);
}

/* One index entry written as "os/arch[/variant] feature,feature" or "-" for no platform;
 * a leading "@TYPE " sets the vnd.docker.reference.type annotation. */
struct entry_spec {
  const char *name;
  const char *spec;
};

static struct fpull_descriptor *make_index(const struct entry_spec *specs, size_t n)
{
  struct fpull_descriptor *d = fp_xcalloc(n, sizeof *d);
  for (size_t i = 0; i < n; i++) {
    const char *s = specs[i].spec;
    d[i].media_type = fp_xstrdup("application/vnd.oci.image.manifest.v1+json");
    d[i].digest = fp_xasprintf("sha256:%064zx", i + 1);
    d[i].size = 100;
    if (s[0] == '@') {
      const char *sp = strchr(s, ' ');
      d[i].ref_type = fp_xstrndup(s + 1, (size_t)(sp - s - 1));
      s = sp + 1;
    }
    if (strcmp(s, "-") == 0)
      continue;
    struct fpull_platform *p = fp_xcalloc(1, sizeof *p);
    const char *sp = strchr(s, ' ');
    cleanup_free char *head = fp_xstrndup(s, sp ? (size_t)(sp - s) : strlen(s));
    char *slash1 = strchr(head, '/'), *slash2 = strchr(slash1 + 1, '/');
    *slash1 = '\0';
    if (slash2) {
      *slash2 = '\0';
      p->variant = fp_xstrdup(slash2 + 1);
    }
    p->os = fp_xstrdup(head);
    p->architecture = fp_xstrdup(slash1 + 1);
    if (sp) {
      cleanup_free char *list = fp_xstrdup(sp + 1);
      char *save = NULL;
      p->features = fp_xcalloc(1, sizeof *p->features);
      for (char *f = strtok_r(list, ",", &save); f; f = strtok_r(NULL, ",", &save))
        p->features = fp_strv_push(p->features, f);
    }
    d[i].platform = p;
  }
  return d;
}

static void free_index(struct fpull_descriptor *d, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    free(d[i].media_type);
    free(d[i].digest);
    free(d[i].ref_type);
    fpull_platform_free(d[i].platform);
  }
  free(d);
}

static struct fpull_match *match(const struct entry_spec *specs, size_t n, const char *platform,
                                 const char *features)
{
  if (!db)
    load_db(NULL);
  /* The non-CPU names these tables use are declared, as a site would (contract v3). */
  static char *site[] = {"infiniband", "x", "y", NULL};
  static const struct fpull_config cfg = {.detect = 1, .site_features = site};
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION,
                                .platform = platform,
                                .features = features,
                                .config = &cfg,
                                .tagdb = db,
                                .no_detect = 1};
  struct fpull_target *t = NULL;
  fpull_err err = {0};
  if (fpull_target_build(&t, &o, &err))
    th_fail(__FILE__, __LINE__, "target %s %s: %s", platform ? platform : "-",
            features ? features : "-", err.msg);
  struct fpull_descriptor *d = make_index(specs, n);
  struct fpull_match *m = NULL;
  CHECK_INT_EQ(fpull_match_entries(&m, t, d, n, db, &err), 0);
  CHECK(m != NULL);
  CHECK_INT_EQ(m->n, n);
  /* Invariants of every result: ranks 1..k over the eligible entries, the chosen one
   * ranked 1, a reason exactly for the others. */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const struct fpull_match_entry *e = &m->entries[i];
    CHECK(e->missing != NULL);
    if (e->eligible) {
      k++;
      CHECK_NULL(e->why);
      CHECK(e->missing[0] == NULL);
      CHECK(e->rank >= 1 && (size_t)e->rank <= n);
    } else {
      CHECK(e->why != NULL);
      CHECK_INT_EQ(e->rank, 0);
    }
  }
  for (size_t r = 1; r <= k; r++) {
    size_t seen = 0;
    for (size_t i = 0; i < n; i++)
      seen += m->entries[i].rank == (int)r;
    CHECK_INT_EQ(seen, 1);
  }
  if (k)
    CHECK_INT_EQ(m->entries[m->chosen].rank, 1);
  else
    CHECK_INT_EQ(m->chosen, -1);
  free_index(d, n);
  fpull_target_free(t);
  return m;
}

static const char *chosen_name(const struct entry_spec *specs, const struct fpull_match *m)
{
  return m->chosen < 0 ? "(none)" : specs[m->chosen].name;
}

/* The index of issue 3, in its order. */
static const struct entry_spec cvtf[] = {
    {"cv-tf-dev:1.12.0-rev11", "linux/amd64"},
    {"cv-tf-dev:skylake_1.12.0-rev6", "linux/amd64 skylake"},
    {"cv-nccl90-tf-dev:1.12.0-rev1", "linux/amd64 nvidia-390-30"},
    {"cv-nccl92-tf-dev:1.12.0-rev11", "linux/amd64 nvidia-396-44"},
    {"cv-nccl90-tf-dev:broadwell_1.12.0-rev2", "linux/amd64 broadwell,nvidia-390-30"},
    {"cv-nccl92-tf-dev:broadwell_1.12.0-rev8", "linux/amd64 broadwell,nvidia-396-44"},
    {"cv-nccl92-tf-dev:skylake_1.12.0-rev6", "linux/amd64 nvidia-396-44,skylake"},
    {"cv-nccl92-tf-dev:skylake512_1.12.0-rev8", "linux/amd64 nvidia-396-44,skylake512"},
    {"cv-nccl92-tf-dev:nvcap52_1.12.0-rev3", "linux/amd64 nv-compute-5-2,nvidia-396-44"},
    {"cv-nccl92-tf-dev:nvcap37_1.12.0-rev4", "linux/amd64 nv-compute-3-7,nvidia-396-44"},
    {"cv-nccl92-tf-dev:broadwell_nvcap52_1.12.0-rev2",
     "linux/amd64 broadwell,nv-compute-5-2,nvidia-396-44"},
};
#define N_CVTF (sizeof cvtf / sizeof cvtf[0])

/* Feature sets (comma-separated) and the entry each must choose, worked out by hand
 * from the eligibility rule and the five ranking rules. */
static const struct {
  const char *features, *want;
} cvtf_rows[] = {
    {"", "cv-tf-dev:1.12.0-rev11"},
    {"broadwell,nv-compute-5-2,nvidia-396-44", "cv-nccl92-tf-dev:broadwell_nvcap52_1.12.0-rev2"},
    {"BROADWELL,NV-Compute-5-2,Nvidia-396-44", "cv-nccl92-tf-dev:broadwell_nvcap52_1.12.0-rev2"},
    {"skylake-avx512,nvidia-396-44", "cv-nccl92-tf-dev:skylake512_1.12.0-rev8"},
    {"skylake_avx512,nvidia-396-44", "cv-nccl92-tf-dev:skylake512_1.12.0-rev8"},
    {"nvidia-390-30", "cv-nccl90-tf-dev:1.12.0-rev1"},
    {"broadwell", "cv-tf-dev:1.12.0-rev11"},
    {"skylake", "cv-tf-dev:skylake_1.12.0-rev6"},
    {"skylake,nvidia-396-44", "cv-nccl92-tf-dev:skylake_1.12.0-rev6"},
    {"broadwell,nvidia-396-44", "cv-nccl92-tf-dev:broadwell_1.12.0-rev8"},
    {"broadwell,nvidia-390-30", "cv-nccl90-tf-dev:broadwell_1.12.0-rev2"},
    {"nvidia-396-44", "cv-nccl92-tf-dev:1.12.0-rev11"},
    {"nvidia-396-44,nv-compute-5-2", "cv-nccl92-tf-dev:nvcap52_1.12.0-rev3"},
    {"nvidia-396-44,nv-compute-3-7", "cv-nccl92-tf-dev:nvcap37_1.12.0-rev4"},
    /* Both capabilities: rule 4 prefers the higher one named. */
    {"nvidia-396-44,nv-compute-5-2,nv-compute-3-7", "cv-nccl92-tf-dev:nvcap52_1.12.0-rev3"},
    /* znver3 implies skylake (not skylake-avx512): rule 3 prefers skylake to broadwell. */
    {"zen3,nvidia-396-44", "cv-nccl92-tf-dev:skylake_1.12.0-rev6"},
    {"cascadelake,nvidia-396-44,nv-compute-7-0", "cv-nccl92-tf-dev:skylake512_1.12.0-rev8"},
    {"sapphirerapids,nvidia-396-44,nv-compute-5-2",
     "cv-nccl92-tf-dev:broadwell_nvcap52_1.12.0-rev2"},
    {"skylake512,nv-compute-5-2,nvidia-396-44", "cv-nccl92-tf-dev:broadwell_nvcap52_1.12.0-rev2"},
    /* haswell lacks RDSEED, so it implies no broadwell. */
    {"haswell,nvidia-396-44,nv-compute-5-2", "cv-nccl92-tf-dev:nvcap52_1.12.0-rev3"},
    /* nvidia-580-159-04 implies nvidia-580-159 and nvidia-580, not an older driver. */
    {"nvidia-580-159-04,skylake", "cv-tf-dev:skylake_1.12.0-rev6"},
    /* x86-64-v4 is a psABI level: it implies no gcc tag. */
    {"x86-64-v4,nvidia-396-44", "cv-nccl92-tf-dev:1.12.0-rev11"},
    {"nv-compute-5-2,infiniband", "cv-tf-dev:1.12.0-rev11"},
};

TEST(cvtf_index_with_features)
{
  for (size_t i = 0; i < sizeof cvtf_rows / sizeof cvtf_rows[0]; i++) {
    struct fpull_match *m = match(cvtf, N_CVTF, "linux/amd64", cvtf_rows[i].features);
    if (strcmp(chosen_name(cvtf, m), cvtf_rows[i].want) != 0)
      th_fail(__FILE__, __LINE__, "--features %s: chose %s, want %s", cvtf_rows[i].features,
              chosen_name(cvtf, m), cvtf_rows[i].want);
    fpull_match_free(m);
  }
}

TEST(cvtf_index_with_platform)
{
  for (size_t i = 0; i < sizeof cvtf_rows / sizeof cvtf_rows[0]; i++) {
    char platform[512];
    snprintf(platform, sizeof platform, "linux/amd64%s%s", *cvtf_rows[i].features ? ":" : "",
             cvtf_rows[i].features);
    for (char *p = platform; *p; p++)
      if (*p == ',')
        *p = ':';
    struct fpull_match *m = match(cvtf, N_CVTF, platform, NULL);
    if (strcmp(chosen_name(cvtf, m), cvtf_rows[i].want) != 0)
      th_fail(__FILE__, __LINE__, "--platform %s: chose %s, want %s", platform,
              chosen_name(cvtf, m), cvtf_rows[i].want);
    fpull_match_free(m);
  }
}

/* The whole result for the issue's own example: ranks, reasons and what each lacks. */
TEST(cvtf_issue_example_in_full)
{
  static const struct {
    int eligible, rank;
    const char *why, *missing;
  } want[] = {
      {1, 5, NULL, ""},
      {0, 0, "lacks skylake", "skylake"},
      {0, 0, "lacks nvidia-390-30", "nvidia-390-30"},
      {1, 4, NULL, ""},
      {0, 0, "lacks nvidia-390-30", "nvidia-390-30"},
      {1, 2, NULL, ""},
      {0, 0, "lacks skylake", "skylake"},
      {0, 0, "lacks skylake512", "skylake512"},
      {1, 3, NULL, ""},
      {0, 0, "lacks nv-compute-3-7", "nv-compute-3-7"},
      {1, 1, NULL, ""},
  };
  struct fpull_match *m =
      match(cvtf, N_CVTF, "linux/amd64:broadwell:nv-compute-5-2:nvidia-396-44", NULL);
  CHECK_INT_EQ(m->chosen, 10);
  for (size_t i = 0; i < N_CVTF; i++) {
    const struct fpull_match_entry *e = &m->entries[i];
    CHECK_INT_EQ(e->eligible, want[i].eligible);
    CHECK_INT_EQ(e->rank, want[i].rank);
    if (want[i].why)
      CHECK_STR_EQ(e->why, want[i].why);
    if (*want[i].missing) {
      CHECK_STR_EQ(e->missing[0], want[i].missing);
      CHECK_NULL(e->missing[1]);
    } else {
      CHECK_NULL(e->missing[0]);
    }
  }
  fpull_match_free(m);
}

/* Nothing fits: chosen -1, and each entry says what it lacks. */
TEST(nothing_fits)
{
  struct fpull_match *m = match(cvtf + 1, N_CVTF - 1, "linux/amd64:haswell", NULL);
  CHECK_INT_EQ(m->chosen, -1);
  for (size_t i = 0; i < m->n; i++)
    CHECK(!m->entries[i].eligible && m->entries[i].missing[0] != NULL);
  /* cvtf[10]: broadwell, nv-compute-5-2, nvidia-396-44, all lacking, as listed. */
  const struct fpull_match_entry *e = &m->entries[9];
  CHECK_STR_EQ(e->missing[0], "broadwell");
  CHECK_STR_EQ(e->missing[1], "nv-compute-5-2");
  CHECK_STR_EQ(e->missing[2], "nvidia-396-44");
  CHECK_NULL(e->missing[3]);
  CHECK_STR_EQ(e->why, "lacks broadwell, nv-compute-5-2, nvidia-396-44");
  fpull_match_free(m);

  static const struct entry_spec arm_only[] = {{"a", "linux/arm64"}, {"b", "linux/arm/v7"}};
  m = match(arm_only, 2, "linux/amd64", NULL);
  CHECK_INT_EQ(m->chosen, -1);
  CHECK_STR_EQ(m->entries[0].why, "architecture arm64");
  CHECK_STR_EQ(m->entries[1].why, "architecture arm");
  fpull_match_free(m);

  m = match(arm_only, 0, "linux/amd64", NULL);
  CHECK_INT_EQ(m->chosen, -1);
  fpull_match_free(m);
}

TEST(variant_ordering)
{
  static const struct entry_spec amd64[] = {
      {"none", "linux/amd64"},  {"v1", "linux/amd64/v1"}, {"v2", "linux/amd64/v2"},
      {"v3", "linux/amd64/v3"}, {"v4", "linux/amd64/v4"},
  };
  static const struct entry_spec arm[] = {
      {"none", "linux/arm"},  {"v5", "linux/arm/v5"}, {"v6", "linux/arm/v6"},
      {"v7", "linux/arm/v7"}, {"v8", "linux/arm/v8"},
  };
  static const struct {
    const struct entry_spec *index;
    const char *platform, *want, *why4;
  } rows[] = {
      {amd64, "linux/amd64", "v1", "variant v2 above v1"},
      {amd64, "linux/amd64/v1", "v1", "variant v2 above v1"},
      {amd64, "linux/amd64/v2", "v2", "variant v3 above v2"},
      {amd64, "linux/amd64/v3", "v3", "variant v4 above v3"},
      {amd64, "linux/amd64/v4", "v4", NULL},
      /* The variant from the features: the highest psABI level after implications. */
      {amd64, "linux/amd64:nehalem", "v2", "variant v3 above v2"},
      {amd64, "linux/amd64:haswell", "v3", "variant v4 above v3"},
      {amd64, "linux/amd64:skylake512", "v4", NULL},
      {amd64, "linux/x86_64:znver3", "v3", "variant v4 above v3"},
      {arm, "linux/arm/v5", "v5", "variant v6 above v5"},
      {arm, "linux/arm/v6", "v6", "variant v7 above v6"},
      /* The entry without variant is v7 too, and first in the index (rule 5). */
      {arm, "linux/arm/v7", "none", "variant v8 above v7"},
      {arm, "linux/arm/v8", "v8", NULL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct fpull_match *m = match(rows[i].index, 5, rows[i].platform, NULL);
    if (strcmp(chosen_name(rows[i].index, m), rows[i].want) != 0)
      th_fail(__FILE__, __LINE__, "%s: chose %s, want %s", rows[i].platform,
              chosen_name(rows[i].index, m), rows[i].want);
    /* An entry without variant fits any target, except on arm, where it is v7 (as containerd
     * reads it): not for a v5 or v6 target. */
    int below_v7 = rows[i].index == arm && (strcmp(rows[i].platform, "linux/arm/v5") == 0 ||
                                            strcmp(rows[i].platform, "linux/arm/v6") == 0);
    CHECK(m->entries[0].eligible == !below_v7);
    if (rows[i].why4) {
      size_t k = 1; /* the entry with an explicit variant */
      while (!m->entries[k].why || strncmp(m->entries[k].why, "variant", 7) != 0)
        k++;
      CHECK_STR_EQ(m->entries[k].why, rows[i].why4);
    }
    fpull_match_free(m);
  }
  /* arm's variant ordering counts an entry without variant as v7: it ranks with v7, above v6,
   * on a v8 target (it ranked last before issue 33). */
  static const struct entry_spec arm_low[] = {{"none", "linux/arm"}, {"v6", "linux/arm/v6"}};
  struct fpull_match *am = match(arm_low, 2, "linux/arm/v8", NULL);
  CHECK_STR_EQ(chosen_name(arm_low, am), "none");
  fpull_match_free(am);
  am = match(arm_low, 2, "linux/arm/v6", NULL);
  CHECK_STR_EQ(chosen_name(arm_low, am), "v6");
  CHECK_STR_EQ(am->entries[0].why, "variant v7 (none given) above v6");
  fpull_match_free(am);
  /* arm64: v9.N takes v9.0..v9.N, then v8 up to v8.(N+5); the highest that fits wins. */
  static const struct entry_spec a64[] = {{"v8.5", "linux/arm64/v8.5"},
                                          {"v8.6", "linux/arm64/v8.6"},
                                          {"v9", "linux/arm64/v9"},
                                          {"v9.1", "linux/arm64/v9.1"},
                                          {"none", "linux/arm64"}};
  static const struct {
    const char *platform, *want;
    int fits[5];
  } a64_rows[] = {
      {"linux/arm64/v9", "v9", {1, 0, 1, 0, 1}},     {"linux/arm64/v9.0", "v9", {1, 0, 1, 0, 1}},
      {"linux/arm64/v9.1", "v9.1", {1, 1, 1, 1, 1}}, {"linux/arm64/v9.6", "v9.1", {1, 1, 1, 1, 1}},
      {"linux/arm64/v8.6", "v8.6", {1, 1, 0, 0, 1}}, {"linux/arm64", "none", {0, 0, 0, 0, 1}},
  };
  for (size_t i = 0; i < sizeof a64_rows / sizeof *a64_rows; i++) {
    am = match(a64, 5, a64_rows[i].platform, NULL);
    if (strcmp(chosen_name(a64, am), a64_rows[i].want) != 0)
      th_fail(__FILE__, __LINE__, "%s: chose %s, want %s", a64_rows[i].platform,
              chosen_name(a64, am), a64_rows[i].want);
    for (size_t k = 0; k < 5; k++)
      if (am->entries[k].eligible != a64_rows[i].fits[k])
        th_fail(__FILE__, __LINE__, "%s: %s %s", a64_rows[i].platform, a64[k].name,
                a64_rows[i].fits[k] ? "does not fit" : "fits");
    fpull_match_free(am);
  }
  /* arm64 targets are v8; variants they do not know must be equal to fit. */
  static const struct entry_spec arm64[] = {
      {"v8", "linux/arm64/v8"}, {"v9", "linux/arm64/v9"}, {"odd", "linux/arm64/weird"}};
  struct fpull_match *m = match(arm64, 3, "linux/arm64", NULL);
  CHECK_STR_EQ(chosen_name(arm64, m), "v8");
  CHECK(!m->entries[1].eligible && !m->entries[2].eligible);
  CHECK_STR_EQ(m->entries[1].why, "variant v9 above v8");
  fpull_match_free(m);
  /* A target without variant (riscv64) takes only entries without one. */
  static const struct entry_spec riscv[] = {{"v", "linux/riscv64/rva20"},
                                            {"plain", "linux/riscv64"}};
  m = match(riscv, 2, "linux/riscv64", NULL);
  CHECK_STR_EQ(chosen_name(riscv, m), "plain");
  CHECK_STR_EQ(m->entries[0].why, "variant rva20 above none");
  fpull_match_free(m);
}

TEST(os_and_architecture_aliases)
{
  static const struct {
    const char *entry, *platform;
    int eligible;
    const char *why;
  } rows[] = {
      {"linux/x86_64", "linux/amd64", 1, NULL},
      {"linux/amd64", "linux/x86_64", 1, NULL},
      {"linux/X86_64", "linux/amd64", 1, NULL},
      {"Linux/amd64", "linux/amd64", 1, NULL},
      {"linux/aarch64", "linux/arm64", 1, NULL},
      {"linux/arm64", "linux/aarch64", 1, NULL},
      {"linux/arm64/v8", "linux/aarch64", 1, NULL},
      {"linux/arm64", "linux/amd64", 0, "architecture arm64"},
      {"linux/aarch64", "linux/amd64", 0, "architecture arm64"},
      {"linux/386", "linux/amd64", 0, "architecture 386"},
      {"windows/amd64", "linux/amd64", 0, "os windows"},
      {"linux/ppc64le", "linux/ppc64le", 1, NULL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct entry_spec e[] = {{"e", rows[i].entry}};
    struct fpull_match *m = match(e, 1, rows[i].platform, NULL);
    if (m->entries[0].eligible != rows[i].eligible)
      th_fail(__FILE__, __LINE__, "%s on %s: eligible %d", rows[i].entry, rows[i].platform,
              m->entries[0].eligible);
    if (rows[i].why)
      CHECK_STR_EQ(m->entries[0].why, rows[i].why);
    fpull_match_free(m);
  }
}

/* Attestations, unknown/unknown and entries without platform are never eligible, even when
 * nothing else fits. */
TEST(non_images_are_never_eligible)
{
  static const struct entry_spec idx[] = {
      {"att", "@attestation-manifest unknown/unknown"},
      {"att-claiming-amd64", "@attestation-manifest linux/amd64"},
      {"other-ref", "@signature linux/amd64"},
      {"unknown", "unknown/unknown"},
      {"no-platform", "-"},
      {"image", "linux/amd64"},
  };
  static const char *const why[] = {"attestation", "attestation", "not an image",
                                    "not an image (unknown/unknown)", "no platform"};
  struct fpull_match *m = match(idx, 6, "linux/amd64", NULL);
  CHECK_STR_EQ(chosen_name(idx, m), "image");
  for (size_t i = 0; i < 5; i++) {
    CHECK(!m->entries[i].eligible);
    CHECK_STR_EQ(m->entries[i].why, why[i]);
  }
  fpull_match_free(m);
  m = match(idx, 5, "linux/amd64", NULL);
  CHECK_INT_EQ(m->chosen, -1);
  fpull_match_free(m);
  /* "unknown" is no os of the OCI image spec: as a target it is a usage error. */
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION,
                                .platform = "unknown/unknown",
                                .tagdb = db,
                                .no_detect = 1};
  struct fpull_target *t = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "unknown os \"unknown\"");
  CHECK_NULL(t);
}

/* Equal on every rule: the earlier one in the index, whatever else is around. */
TEST(ties_go_to_index_order)
{
  static const struct entry_spec idx[] = {
      {"first", "linux/amd64 infiniband"},
      {"plain", "linux/amd64"},
      {"second", "linux/amd64 infiniband"},
      {"third", "linux/x86_64 InfiniBand"},
  };
  struct fpull_match *m = match(idx, 4, "linux/amd64:infiniband", NULL);
  CHECK_STR_EQ(chosen_name(idx, m), "first");
  CHECK_INT_EQ(m->entries[0].rank, 1);
  CHECK_INT_EQ(m->entries[2].rank, 2);
  CHECK_INT_EQ(m->entries[3].rank, 3);
  CHECK_INT_EQ(m->entries[1].rank, 4);
  fpull_match_free(m);
  /* The same features under an alias tie as well. */
  static const struct entry_spec alias[] = {{"a", "linux/amd64 skylake512"},
                                            {"b", "linux/amd64 skylake-avx512"}};
  m = match(alias, 2, "linux/amd64:skylake_avx512", NULL);
  CHECK_STR_EQ(chosen_name(alias, m), "a");
  fpull_match_free(m);
}

/* Each rule decides before the ones after it. */
TEST(rule_order)
{
  static const struct {
    const char *name_a, *spec_a, *name_b, *spec_b, *platform, *want;
  } rows[] = {
      /* 1 before 2: two features beat a higher variant. */
      {"v4-one", "linux/amd64/v4 skylake-avx512", "two", "linux/amd64 broadwell,infiniband",
       "linux/amd64:skylake-avx512:infiniband", "two"},
      /* 2 before 3: a variant beats a larger ISA set. */
      {"sky", "linux/amd64 skylake", "v4-hsw", "linux/amd64/v4 haswell",
       "linux/amd64:skylake-avx512", "v4-hsw"},
      /* 2: a CPU tag implies its level (issue 33): skylake-avx512 is v4 undeclared. */
      {"sky512", "linux/amd64 skylake-avx512", "v3-bdw", "linux/amd64/v3 broadwell",
       "linux/amd64:skylake-avx512", "sky512"},
      /* 2: the higher variant. */
      {"v2", "linux/amd64/v2 x", "v3", "linux/amd64/v3 x", "linux/amd64:haswell:x", "v3"},
      /* 3 before 4: the larger ISA set beats a higher compute capability. */
      {"cc86", "linux/amd64 broadwell,nv-compute-8-6", "sky", "linux/amd64 skylake,nv-compute-5-0",
       "linux/amd64:skylake:nv-compute-8-6:nv-compute-5-0", "sky"},
      /* 3: a CPU tag beats none; several tags count the largest. */
      {"ib", "linux/amd64 infiniband,x", "tag", "linux/amd64 haswell,x",
       "linux/amd64:haswell:infiniband:x", "tag"},
      {"two-small", "linux/amd64 nehalem,haswell", "one-big", "linux/amd64 skylake,x",
       "linux/amd64:skylake:x", "one-big"},
      /* 4: the higher capability; none counts lowest. */
      {"none", "linux/amd64 x,y", "cc50", "linux/amd64 x,nv-compute-5-0",
       "linux/amd64:x:y:nv-compute-5-2", "cc50"},
      {"cc61", "linux/amd64 nv-compute-6-1", "cc70", "linux/amd64 nv-compute-7-0",
       "linux/amd64:nv-compute-7-0:nv-compute-6-1", "cc70"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    /* Both orders: index order must not be what decides. */
    for (int rev = 0; rev < 2; rev++) {
      struct entry_spec idx[2] = {{rows[i].name_a, rows[i].spec_a},
                                  {rows[i].name_b, rows[i].spec_b}};
      if (rev) {
        struct entry_spec tmp = idx[0];
        idx[0] = idx[1];
        idx[1] = tmp;
      }
      struct fpull_match *m = match(idx, 2, rows[i].platform, NULL);
      if (!m->entries[0].eligible || !m->entries[1].eligible)
        th_fail(__FILE__, __LINE__, "row %zu: %s / %s", i,
                m->entries[0].why ? m->entries[0].why : "",
                m->entries[1].why ? m->entries[1].why : "");
      if (strcmp(chosen_name(idx, m), rows[i].want) != 0)
        th_fail(__FILE__, __LINE__, "row %zu (order %d): chose %s, want %s", i, rev,
                chosen_name(idx, m), rows[i].want);
      fpull_match_free(m);
    }
  }
}

static size_t isa_count(const char *tag)
{
  const char *const *v = fpull_tagdb_isa(db, tag);
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

static int isa_subset(const char *a, const char *b)
{
  const char *const *va = fpull_tagdb_isa(db, a), *const *vb = fpull_tagdb_isa(db, b);
  for (size_t i = 0; va[i]; i++) {
    size_t k = 0;
    while (vb[k] && strcmp(vb[k], va[i]) != 0)
      k++;
    if (!vb[k])
      return 0;
  }
  return 1;
}

/* Rule 3 when neither ISA set contains the other: the one with more extensions. */
TEST(rule3_incomparable_sets_count)
{
  load_db(NULL);
  /* skylake-avx512 (AVX-512) and znver1 (SSE4A, CLZERO, ...): neither contains the other. */
  CHECK(!isa_subset("skylake-avx512", "znver1") && !isa_subset("znver1", "skylake-avx512"));
  CHECK(isa_count("skylake-avx512") > isa_count("znver1"));
  for (int rev = 0; rev < 2; rev++) {
    struct entry_spec idx[2] = {{"sky512", "linux/amd64 skylake-avx512"},
                                {"zen", "linux/amd64 znver1"}};
    if (rev) {
      struct entry_spec tmp = idx[0];
      idx[0] = idx[1];
      idx[1] = tmp;
    }
    struct fpull_match *m = match(idx, 2, "linux/amd64:skylake-avx512:zen", NULL);
    CHECK_STR_EQ(chosen_name(idx, m), "sky512");
    fpull_match_free(m);
  }
}

/* Equal counts go on to rule 4, then index order. User tags make the sets. */
TEST(rule3_equal_counts_go_on)
{
  char *isa_a[] = {"avx2", "fma", NULL};
  char *isa_b[] = {"avx2", "sse4a", NULL};
  struct fpull_user_tag user[] = {{.name = "tag-a", .isa = isa_a}, {.name = "tag-b", .isa = isa_b}};
  struct fpull_config cfg = {.detect = 1, .cpu_tags = user, .n_cpu_tags = 2};
  load_db(&cfg);
  static const struct {
    const char *a, *b, *platform, *want;
  } rows[] = {
      {"linux/amd64 tag-a,nv-compute-3-7", "linux/amd64 tag-b,nv-compute-5-2",
       "linux/amd64:tag-a:tag-b:nv-compute-5-2:nv-compute-3-7", "B"},
      {"linux/amd64 tag-a,x", "linux/amd64 tag-b,x", "linux/amd64:tag-a:tag-b:x", "A"},
  };
  for (size_t i = 0; i < 2; i++) {
    struct entry_spec idx[2] = {{"A", rows[i].a}, {"B", rows[i].b}};
    struct fpull_match *m = match(idx, 2, rows[i].platform, NULL);
    CHECK_STR_EQ(chosen_name(idx, m), rows[i].want);
    fpull_match_free(m);
  }
  /* The raw extensions complete a user tag as well. */
  struct entry_spec one[] = {{"A", "linux/amd64 tag-a"}};
  struct fpull_match *m = match(one, 1, "linux/amd64:avx2:fma", NULL);
  CHECK_INT_EQ(m->chosen, 0);
  fpull_match_free(m);
  load_db(NULL);
}

/* Entry features are matched through implications and aliases of the target's. */
TEST(implied_and_aliased_features_match)
{
  static const struct {
    const char *entry, *platform;
    int eligible;
  } rows[] = {
      {"linux/amd64 haswell", "linux/amd64:skylake", 1},
      {"linux/amd64 x86-64-v3", "linux/amd64:haswell", 1},
      {"linux/amd64 x86-64-v2", "linux/amd64:corei7", 1},
      {"linux/amd64 skylake", "linux/amd64:zen3", 1},
      {"linux/amd64 Skylake512", "linux/amd64:skylake_avx512", 1},
      {"linux/amd64 avx2", "linux/amd64:haswell", 1},
      {"linux/amd64 nvidia-580", "linux/amd64:nvidia-580-159-04", 1},
      {"linux/amd64 cuda-12-0", "linux/amd64:nvidia-550-54-14", 1},
      {"linux/amd64 cuda-12-5", "linux/amd64:nvidia-550-54-14", 0},
      {"linux/amd64 nv-compute-8-0", "linux/amd64:nv-compute-8-6", 1},
      {"linux/amd64 nv-compute-7-5", "linux/amd64:nv-compute-8-6", 0},
      {"linux/amd64 broadwell", "linux/amd64:haswell", 0},
      {"linux/amd64 skylake-avx512", "linux/amd64:znver3", 0},
      {"linux/amd64 bad name!", "linux/amd64", 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct entry_spec e[] = {{"e", rows[i].entry}};
    struct fpull_match *m = match(e, 1, rows[i].platform, NULL);
    if (m->entries[0].eligible != rows[i].eligible)
      th_fail(__FILE__, __LINE__, "%s on %s: eligible %d (%s)", rows[i].entry, rows[i].platform,
              m->entries[0].eligible, m->entries[0].why ? m->entries[0].why : "");
    fpull_match_free(m);
  }
}

/* The no-fit error pull and inspect share: the closest entry of the target's architecture
 * and what it needs; for a single manifest, the platform it is for. */
TEST(no_fit_names_the_closest)
{
  if (!db)
    load_db(NULL);
  struct fpull_target_opts o = {
      .version = FPULL_TARGET_OPTS_VERSION, .platform = "linux/amd64", .tagdb = db, .no_detect = 1};
  struct fpull_target *t = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), 0);
  static const struct entry_spec specs[] = {
      {"arm", "linux/arm64 avx2"}, {"a", "linux/amd64 avx512f,avx2"}, {"b", "linux/amd64 avx512f"}};
  struct fpull_descriptor *d = make_index(specs, 3);
  struct fpull_match *m = NULL;
  CHECK_INT_EQ(fpull_match_entries(&m, t, d, 3, db, &err), 0);
  CHECK_INT_EQ(fpull_match_no_fit(m, d, 0, t, &err), FPULL_ENOMATCH);
  CHECK_INT_EQ(err.code, FPULL_ENOMATCH);
  CHECK_CONTAINS(err.msg, "no entry of the index fits linux/amd64/v1; closest is sha256:");
  CHECK_CONTAINS(err.msg, "0003, which needs avx512f");
  fpull_match_free(m);
  /* Nothing of the target's architecture: the count. */
  m = NULL;
  CHECK_INT_EQ(fpull_match_entries(&m, t, d, 1, db, &err), 0);
  CHECK_INT_EQ(fpull_match_no_fit(m, d, 0, t, &err), FPULL_ENOMATCH);
  CHECK_CONTAINS(err.msg, "no entry of the index fits linux/amd64/v1 (1 entry)");
  /* The same one entry as a single-platform image. */
  CHECK_INT_EQ(fpull_match_no_fit(m, d, 1, t, &err), FPULL_ENOMATCH);
  CHECK_STR_EQ(err.msg, "the image is for linux/arm64, the target is linux/amd64");
  fpull_match_free(m);
  free_index(d, 3);
  fpull_target_free(t);
}

/* containerd's own matcher table (tests/fixtures/platform_pairs.txt, from containerd/platforms'
 * TestOnly): every pair gives containerd's answer, or the one fpull gives on purpose where the
 * file says so. Before issue 33, 105 of these agreed. */
TEST(containerd_pairs)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (fp_read_file(th_src("tests/fixtures/platform_pairs.txt"), 1 << 20, &text, &len) < 0)
    th_fail(__FILE__, __LINE__, "cannot read platform_pairs.txt");
  size_t n = 0, differ = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (line[0] == '#' || !line[0])
      continue;
    char target[64], entry[64], answer[8], own[8] = "";
    if (sscanf(line, "%63s %63s %7s %7s", target, entry, answer, own) < 3) {
      th_fail(__FILE__, __LINE__, "bad line: %s", line);
      continue;
    }
    if (strcmp(own, "#") == 0)
      own[0] = '\0';
    int want = strcmp(own[0] ? own : answer, "yes") == 0;
    differ += own[0] != '\0';
    /* "windows(10.0.17763)/amd64": the os.version, which fpull does not match on, goes. */
    char *paren = strchr(entry, '(');
    if (paren) {
      char *close = strchr(paren, ')');
      memmove(paren, close + 1, strlen(close + 1) + 1);
    }
    const struct entry_spec e[] = {{"entry", entry}};
    struct fpull_match *m = match(e, 1, target, NULL);
    if (m->entries[0].eligible != want)
      th_fail(__FILE__, __LINE__, "--platform %s, entry %s: %s, want %s (%s)", target, entry,
              m->entries[0].eligible ? "fits" : "does not fit", want ? "fits" : "does not fit",
              m->entries[0].why ? m->entries[0].why : "eligible");
    fpull_match_free(m);
    n++;
  }
  CHECK(n > 150);
  CHECK(differ > 0 && differ < 30);
}

/* An entry's CPU tag implies its x86-64 level (issue 33): an icelake-server entry whose author
 * left out the variant ranks as v4, above a plain v3 entry, on an Ice Lake-class target; it
 * ranked below it (no variant counted lowest). A declared variant still counts when higher. */
TEST(cpu_tag_implies_variant)
{
  static const struct entry_spec idx[] = {{"v3", "linux/amd64/v3 x86-64-v3"},
                                          {"icx", "linux/amd64 icelake-server"}};
  struct fpull_match *m = match(idx, 2, "linux/amd64:icelake-server", NULL);
  CHECK_STR_EQ(chosen_name(idx, m), "icx");
  fpull_match_free(m);
  static const struct entry_spec idx2[] = {{"v4", "linux/amd64/v4 x86-64-v4"},
                                           {"hsw", "linux/amd64 haswell"}};
  m = match(idx2, 2, "linux/amd64:icelake-server", NULL);
  CHECK_STR_EQ(chosen_name(idx2, m), "v4");
  fpull_match_free(m);
}
