/* The CPU's own generation (vendor, family, model, then extensions, as GCC's -march=native)
 * and the best CPU tag it decides (lib/select/cpugen.c): equal tag sets go to the CPU's
 * model, not to table order. */
#include <stdlib.h>
#include <string.h>

#include "fpull/detect.h"
#include "fpull/features.h"
#include "harness.h"
#include "base/util.h"

static struct fpull_tagdb *load_shipped(void)
{
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "loading the shipped table: %s", err.msg);
  return db;
}

/* A CPU of vendor, family and model whose extensions are those of tag (the table's set),
 * less the comma-separated names of drop. */
static struct fpull_cpu_info cpu(const struct fpull_tagdb *db, const char *vendor, unsigned family,
                                 unsigned model, const char *tag, const char *drop)
{
  struct fpull_cpu_info ci = {0};
  ci.architecture = (char *)"amd64";
  ci.vendor = (char *)vendor;
  ci.family = family;
  ci.model = model;
  ci.isa = fp_xcalloc(1, sizeof *ci.isa);
  const char *const *isa = tag ? fpull_tagdb_isa(db, tag) : NULL;
  for (size_t i = 0; isa && isa[i]; i++) {
    char pat[64];
    snprintf(pat, sizeof pat, ",%s,", isa[i]);
    char dl[512];
    snprintf(dl, sizeof dl, ",%s,", drop ? drop : "");
    if (!strstr(dl, pat))
      ci.isa = fp_strv_push(ci.isa, isa[i]);
  }
  return ci;
}

/* The target a host with ci's extensions gets, built as --features gives them. */
static struct fpull_target *target_of(const struct fpull_tagdb *db, const struct fpull_cpu_info *ci)
{
  size_t len = 1;
  for (size_t i = 0; ci->isa[i]; i++)
    len += strlen(ci->isa[i]) + 1;
  char *list = fp_xcalloc(1, len);
  for (size_t i = 0; ci->isa[i]; i++) {
    if (i)
      strcat(list, ",");
    strcat(list, ci->isa[i]);
  }
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION, .tagdb = db};
  o.platform = "linux/amd64";
  o.features = list;
  o.no_detect = 1;
  struct fpull_target *t = NULL;
  fpull_err err = {0};
  if (fpull_target_build(&t, &o, &err))
    th_fail(__FILE__, __LINE__, "target: %s", err.msg);
  free(list);
  return t;
}

static void want_best(const struct fpull_tagdb *db, const char *vendor, unsigned family,
                      unsigned model, const char *tag, const char *drop, const char *want,
                      const char *without_model)
{
  struct fpull_cpu_info ci = cpu(db, vendor, family, model, tag, drop);
  struct fpull_target *t = target_of(db, &ci);
  const char *best = fpull_best_cpu_tag(db, t, &ci, 0);
  if (!best || strcmp(best, want) != 0)
    th_fail(__FILE__, __LINE__, "%s family 0x%x model 0x%x (%s): best %s, want %s", vendor, family,
            model, tag, best ? best : "none", want);
  /* Without the model the same set goes to the largest set in table order: the model is
   * what decides. */
  if (without_model) {
    const char *plain = fpull_best_cpu_tag(db, t, NULL, 0);
    if (!plain || strcmp(plain, without_model) != 0)
      th_fail(__FILE__, __LINE__, "%s without a model: %s, want %s", tag, plain ? plain : "none",
              without_model);
  }
  fpull_target_free(t);
  fpull_strv_free(ci.isa);
}

/* The four patterns real CPUs showed (issue 42): the set alone names another chip. */
TEST(equal_sets_go_to_the_cpus_model)
{
  struct fpull_tagdb *db = load_shipped();
  /* Rocket Lake has icelake-client's set: model 0xa7 says rocketlake. */
  want_best(db, "GenuineIntel", 6, 0xa7, "rocketlake", NULL, "rocketlake", "icelake-client");
  /* Arrow Lake-H (0xc5) has sierraforest's gating set. */
  want_best(db, "GenuineIntel", 6, 0xc5, "arrowlake", NULL, "arrowlake", NULL);
  /* Emerald Rapids (0xcf) has sapphirerapids' set. */
  want_best(db, "GenuineIntel", 6, 0xcf, "emeraldrapids", NULL, "emeraldrapids", "graniterapids-d");
  /* A Goldmont lacks goldmont-plus's PTWRITE and RDPID (intrinsic-only: they do not gate, so
   * goldmont-plus holds too, with the larger set). */
  want_best(db, "GenuineIntel", 6, 0x5c, "goldmont", NULL, "goldmont", "goldmont-plus");
  fpull_tagdb_free(db);
}

/* An Alder Lake whose firmware left AVX-512 on holds tigerlake-class sets; it is still an
 * Alder Lake. */
TEST(alderlake_with_avx512_stays_alderlake)
{
  struct fpull_tagdb *db = load_shipped();
  struct fpull_cpu_info ci = cpu(db, "GenuineIntel", 6, 0x97, "alderlake", NULL);
  const char *const *extra = fpull_tagdb_isa(db, "icelake-client");
  for (size_t i = 0; extra[i]; i++)
    if (!fp_strv_contains(ci.isa, extra[i]))
      ci.isa = fp_strv_push(ci.isa, extra[i]);
  struct fpull_target *t = target_of(db, &ci);
  CHECK(fpull_featureset_has(t->features, "icelake-client", db));
  CHECK_STR_EQ(fpull_best_cpu_tag(db, t, &ci, 0), "alderlake");
  CHECK_STR_EQ(fpull_best_cpu_tag(db, t, &ci, 1), "x86-64-v4");
  fpull_target_free(t);
  fpull_strv_free(ci.isa);
  fpull_tagdb_free(db);
}

/* When the own generation cannot run (a VM hiding what gates), the best tag is the largest
 * set that holds on the CPU's own line (a subset of its generation's set: icelake-server for
 * a Sapphire Rapids, not the client tigerlake, whose extra VP2INTERSECT does not gate). */
TEST(own_generation_that_cannot_run_falls_back)
{
  struct fpull_tagdb *db = load_shipped();
  want_best(db, "GenuineIntel", 6, 0x8f, "sapphirerapids", "avx512fp16", "icelake-server", NULL);
  /* A Rocket Lake whose hypervisor hides GFNI: the largest set left is cannonlake's. */
  want_best(db, "GenuineIntel", 6, 0xa7, "rocketlake", "gfni", "cannonlake", NULL);
  fpull_tagdb_free(db);
}

struct gen_case {
  const char *vendor;
  unsigned family, model;
  const char *extensions_of; /* the CPU's extensions: this tag's set */
  const char *want;
};

/* GCC's -march=native names, by vendor, family and model (gcc/common/config/i386/cpuinfo.h). */
TEST(generation_by_vendor_family_model)
{
  struct fpull_tagdb *db = load_shipped();
  static const struct gen_case cases[] = {
      {"GenuineIntel", 6, 0x55, "skylake-avx512", "skylake-avx512"},
      {"GenuineIntel", 6, 0x55, "cascadelake", "cascadelake"},
      {"GenuineIntel", 6, 0x55, "cooperlake", "cooperlake"},
      {"GenuineIntel", 6, 0x9e, "skylake", "skylake"},
      {"GenuineIntel", 6, 0xb7, "alderlake", "alderlake"}, /* Raptor Lake */
      {"GenuineIntel", 6, 0xcc, "pantherlake", "pantherlake"},
      {"GenuineIntel", 6, 0xbd, "lunarlake", "lunarlake"},
      {"GenuineIntel", 6, 0xc6, "arrowlake-s", "arrowlake-s"},
      {"GenuineIntel", 6, 0xae, "graniterapids-d", "graniterapids-d"},
      {"GenuineIntel", 6, 0x0f, "core2", "core2"},
      {"GenuineIntel", 6, 0x17, "penryn", "penryn"},
      {"GenuineIntel", 0xf, 0x4, "nocona", "nocona"},
      {"AuthenticAMD", 0xf, 0x41, "k8-sse3", "k8-sse3"},
      {"AuthenticAMD", 0xf, 0x21, "k8", "k8"},
      {"AuthenticAMD", 0x10, 0x4, "amdfam10", "amdfam10"},
      {"AuthenticAMD", 0x15, 0x2, "bdver2", "bdver2"},
      {"AuthenticAMD", 0x17, 0x31, "znver2", "znver2"},
      {"AuthenticAMD", 0x19, 0x11, "znver4", "znver4"},
      {"AuthenticAMD", 0x1a, 0x02, "znver5", "znver5"},
      {"HygonGenuine", 0x18, 0x01, "znver1", "znver1"},
      {"CentaurHauls", 6, 0xf, "nano", "nano"},
      {"CentaurHauls", 6, 0x19, "nano-3000", "nano-3000"},
      {"CentaurHauls", 7, 0x3b, "lujiazui", "lujiazui"},
      {"  Shanghai  ", 7, 0x5b, "yongfeng", "yongfeng"},
      {"CentaurHauls", 7, 0x6b, "shijidadao", "shijidadao"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct gen_case *c = &cases[i];
    if (!fpull_tagdb_canonical(db, c->want)) {
      th_fail(__FILE__, __LINE__, "%s not in the table", c->want);
      continue;
    }
    struct fpull_cpu_info ci = cpu(db, c->vendor, c->family, c->model, c->extensions_of, NULL);
    const char *g = fpull_cpu_generation(db, &ci);
    if (!g || strcmp(g, c->want) != 0)
      th_fail(__FILE__, __LINE__, "%s family 0x%x model 0x%x: %s, want %s", c->vendor, c->family,
              c->model, g ? g : "none", c->want);
    /* And the best tag, the own generation holding. */
    struct fpull_target *t = target_of(db, &ci);
    const char *best = fpull_best_cpu_tag(db, t, &ci, 0);
    if (!best || strcmp(best, c->want) != 0)
      th_fail(__FILE__, __LINE__, "%s model 0x%x: best %s, want %s", c->vendor, c->model,
              best ? best : "none", c->want);
    fpull_target_free(t);
    fpull_strv_free(ci.isa);
  }
  /* Not amd64, an unknown vendor: no generation. */
  struct fpull_cpu_info other = {.architecture = (char *)"arm64", .vendor = (char *)"x"};
  CHECK(fpull_cpu_generation(db, &other) == NULL);
  other.architecture = (char *)"amd64";
  CHECK(fpull_cpu_generation(db, &other) == NULL);
  fpull_tagdb_free(db);
}

/* 83 real CPUs' CPUID dumps (InstLatx64's, tests/fixtures/cpuid/instlatx64/index.txt: Core 2
 * and K8 to Granite Rapids, Panther Lake and Zen 5, VIA Nano and Zhaoxin): the best tag is
 * the one the index names, the CPU's own generation wherever its code runs there, and every
 * tag reported holds (no wrong tag) while the own generation, where it runs, is reported (no
 * missed tag). */
TEST(real_dumps_best_tag_is_the_own_generation)
{
#if defined(__x86_64__)
  setenv("FPULL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  setenv("FPULL_NVIDIA_PROC_VERSION", "/nonexistent/version", 1);
  struct fpull_tagdb *db = load_shipped();
  FILE *f = fopen(th_src("tests/fixtures/cpuid/instlatx64/index.txt"), "r");
  CHECK(f != NULL);
  char line[512];
  size_t n = 0, wrong = 0, own_best = 0;
  while (f && fgets(line, sizeof line, f)) {
    char fixture[128], want[64];
    if (line[0] == '#' || sscanf(line, "%127s %63s", fixture, want) != 2)
      continue;
    char rel[256];
    snprintf(rel, sizeof rel, "tests/fixtures/cpuid/instlatx64/%s", fixture);
    setenv("FPULL_CPUID_FILE", th_src(rel), 1);
    fpull_err err = {0};
    struct fpull_cpu_info *ci = NULL;
    struct fpull_target *t = NULL;
    struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION, .tagdb = db};
    if (fpull_detect_cpu(&ci, &err) || fpull_target_build(&t, &o, &err)) {
      th_fail(__FILE__, __LINE__, "%s: %s", fixture, err.msg);
      fpull_cpu_info_free(ci);
      continue;
    }
    n++;
    const char *best = fpull_best_cpu_tag(db, t, ci, 0);
    const char *own = fpull_cpu_generation(db, ci);
    if (!best || strcmp(best, want) != 0) {
      th_fail(__FILE__, __LINE__, "%s: best tag %s, want %s (own generation %s)", fixture,
              best ? best : "none", want, own ? own : "none");
      wrong++;
    }
    if (best && own && strcmp(best, own) == 0)
      own_best++;
    /* Every tag reported has every extension of its set that gates on this CPU. */
    const char *const *tags = fpull_tagdb_tags(db, "amd64");
    for (size_t i = 0; tags[i]; i++) {
      if (!fpull_featureset_has(t->features, tags[i], db))
        continue;
      const char *const *isa = fpull_tagdb_isa(db, tags[i]);
      for (size_t k = 0; isa[k]; k++)
        if (fpull_tagdb_isa_gates(db, isa[k]) && !fp_strv_contains(ci->isa, isa[k]))
          th_fail(__FILE__, __LINE__, "%s: %s reported without %s", fixture, tags[i], isa[k]);
    }
    fpull_target_free(t);
    fpull_cpu_info_free(ci);
  }
  if (f)
    fclose(f);
  unsetenv("FPULL_CPUID_FILE");
  fprintf(stderr, "%zu real CPUs, %zu best tags off, %zu the own generation\n", n, wrong, own_best);
  CHECK(n >= 80);
  CHECK_INT_EQ(wrong, 0);
  /* The two the index names, and Arrow Lake-U (model 0xb5), a model GCC's table lacks. */
  CHECK_INT_EQ(own_best, n - 3);
  fpull_tagdb_free(db);
#endif
}

/* arm64 by MIDR's implementer and part (GCC's -mcpu=native), ppc64le by AT_PLATFORM: a
 * Neoverse V2 (or NVIDIA Grace) is neoverse-v2 though neoverse-n2 has the same set. */
TEST(arm64_and_power_by_their_own_ids)
{
  struct fpull_tagdb *db = load_shipped();
  static const struct {
    const char *arch;
    unsigned implementer, part;
    const char *variant, *tag, *want, *without_id;
  } cases[] = {
      {"arm64", 0x41, 0xd4f, "v8", "neoverse-v2", "neoverse-v2", "neoverse-n2"},
      {"arm64", 0x41, 0xd0c, "v8", "neoverse-n1", "neoverse-n1", "cortex-a55"},
      {"arm64", 0x46, 0x001, "v8", "a64fx", "a64fx", "a64fx"},
      {"arm64", 0xc0, 0xac3, "v8", "ampere1", "ampere1", "armv8.6-a"},
      {"ppc64le", 0, 0, "power10", "power10", "power10", "power10"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct fpull_cpu_info ci = cpu(db, "", cases[i].implementer, cases[i].part, cases[i].tag, NULL);
    ci.architecture = (char *)cases[i].arch;
    ci.variant = (char *)cases[i].variant;
    const char *g = fpull_cpu_generation(db, &ci);
    if (!g || strcmp(g, cases[i].want) != 0)
      th_fail(__FILE__, __LINE__, "%s 0x%x 0x%x: %s, want %s", cases[i].arch, cases[i].implementer,
              cases[i].part, g ? g : "none", cases[i].want);
    size_t len = 1;
    for (size_t k = 0; ci.isa[k]; k++)
      len += strlen(ci.isa[k]) + 1;
    char *list = fp_xcalloc(1, len);
    for (size_t k = 0; ci.isa[k]; k++) {
      if (k)
        strcat(list, ",");
      strcat(list, ci.isa[k]);
    }
    char platform[64];
    snprintf(platform, sizeof platform, "linux/%s/%s", cases[i].arch, cases[i].variant);
    struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION, .tagdb = db};
    o.platform = platform;
    o.features = list;
    o.no_detect = 1;
    struct fpull_target *t = NULL;
    fpull_err err = {0};
    if (fpull_target_build(&t, &o, &err)) {
      th_fail(__FILE__, __LINE__, "target: %s", err.msg);
    } else {
      const char *best = fpull_best_cpu_tag(db, t, &ci, 0);
      const char *plain = fpull_best_cpu_tag(db, t, NULL, 0);
      if (!best || strcmp(best, cases[i].want) != 0)
        th_fail(__FILE__, __LINE__, "%s: best %s", cases[i].want, best ? best : "none");
      if (!plain || strcmp(plain, cases[i].without_id) != 0)
        th_fail(__FILE__, __LINE__, "%s without its id: %s, want %s", cases[i].want,
                plain ? plain : "none", cases[i].without_id);
      fpull_target_free(t);
    }
    free(list);
    fpull_strv_free(ci.isa);
  }
  /* An unknown part: no generation. */
  struct fpull_cpu_info other = {.architecture = (char *)"arm64", .family = 0x41, .model = 0xfff};
  CHECK(fpull_cpu_generation(db, &other) == NULL);
  fpull_tagdb_free(db);
}
