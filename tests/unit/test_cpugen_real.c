/* arm64 and POWER on real machines: the best CPU tag from MIDR_EL1 (implementer, part) and
 * AT_PLATFORM, with the extensions from the kernel's AT_HWCAP/AT_HWCAP2 (lib/detect/hwcap.c),
 * as `fpull features` reports them on those hosts.
 *
 * 67 machines. 61 arm64 (tests/fixtures/cpuinfo/arm64.txt): 16 from archspec/archspec-json's
 * tests/targets (commit 90b453f4053b: Graviton 1, 2 and 3 (Cortex-A72, Neoverse N1 and V1),
 * Neoverse V1 under RHEL 8, Neoverse N2 twice, Neoverse V2 / NVIDIA Grace three times,
 * Neoverse V3AE, Fujitsu A64FX, Marvell ThunderX2, AmpereOne and AmpereOne A, Apple M1 and
 * M2 under Asahi Linux), 44 phones, tablets and boards from pytorch/cpuinfo's test/cpuinfo
 * (commit d6108819d1d4: Cortex-A35/A53/A55/A57/A72, Exynos, Kirin, Snapdragon with Qualcomm
 * Kryo parts GCC has no name for, NVIDIA Denver, ThunderX at Scaleway) and 1 from
 * google/cpu_features (Cortex-A53). 6 POWER (tests/fixtures/cpuinfo/ppc64le.txt: archspec's
 * POWER8NVL, POWER9 and POWER10, google/cpu_features' POWER7, POWER8 and POWER9, commit
 * 054aa19350c2; their AT_HWCAP2 words reconstructed from the kernel's table for the PVR).
 *
 * On each: the best tag is the core's own GCC name (the fixture's CORE) wherever the table has
 * that name and every extension it gates on is in the kernel's words (45 arm64, 5 POWER);
 * else, on arm64, an architecture level (armv8-a ... armv9-a), never the core's name nor
 * another vendor's core; and no tag reported lacks an extension it gates on (0 wrong tags). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/detect.h"
#include "fpull/features.h"
#include "harness.h"
#include "detect/hwcap.h"
#include "base/util.h"

/* /proc/cpuinfo's Features names for arm64, in AT_HWCAP bit order then AT_HWCAP2 bit order
 * (the kernel's hwcap_str, arch/arm64/kernel/cpuinfo.c; the uapi hwcap.h bits). */
static const char *const hwcap_names[] = {
    "fp",      "asimd", "evtstrm", "aes",   "pmull",    "sha1",   "sha2", "crc32",
    "atomics", "fphp",  "asimdhp", "cpuid", "asimdrdm", "jscvt",  "fcma", "lrcpc",
    "dcpop",   "sha3",  "sm3",     "sm4",   "asimddp",  "sha512", "sve",  "asimdfhm",
    "dit",     "uscat", "ilrcpc",  "flagm", "ssbs",     "sb",     "paca", "pacg",
};
static const char *const hwcap2_names[] = {
    "dcpodp",    "sve2",      "sveaes",  "svepmull",  "svebitperm", "svesha3",    "svesm4",
    "flagm2",    "frint",     "svei8mm", "svef32mm",  "svef64mm",   "svebf16",    "i8mm",
    "bf16",      "dgh",       "rng",     "bti",       "mte",        "ecv",        "afp",
    "rpres",     "mte3",      "sme",     "smei16i64", "smef64f64",  "smei8i32",   "smef16f32",
    "smeb16f32", "smef32f32", "smefa64", "wfxt",      "ebf16",      "sveebf16",   "cssc",
    "rprfm",     "sve2p1",    "sme2",    "sme2p1",    "smei16i32",  "smebi32i32", "smeb16b16",
    "smef16f16", "mops",      "hbc",
};

static void words_of(const char *features, uint64_t *hw, uint64_t *hw2)
{
  *hw = *hw2 = 0;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", features);
  for (char *save = NULL, *w = strtok_r(buf, " \t\n", &save); w;
       w = strtok_r(NULL, " \t\n", &save)) {
    for (size_t i = 0; i < sizeof hwcap_names / sizeof hwcap_names[0]; i++)
      if (strcmp(w, hwcap_names[i]) == 0)
        *hw |= 1ull << i;
    for (size_t i = 0; i < sizeof hwcap2_names / sizeof hwcap2_names[0]; i++)
      if (strcmp(w, hwcap2_names[i]) == 0)
        *hw2 |= 1ull << i;
  }
}

struct tally {
  size_t machines, own, own_runs, wrong, missed, other_core;
};

/* One machine: ci (architecture, family/model or variant set) with the names of the words. */
static void judge(const struct fpull_tagdb *db, struct fpull_cpu_info *ci, const char **names,
                  size_t n, const char *machine, const char *core, struct tally *tl)
{
  char **isa = fp_xcalloc(1, sizeof *isa);
  size_t len = 1;
  for (size_t i = 0; i < n; i++)
    if (!fp_strv_contains(isa, names[i])) {
      isa = fp_strv_push(isa, names[i]);
      len += strlen(names[i]) + 1;
    }
  ci->isa = isa;
  char *list = fp_xcalloc(1, len);
  for (size_t i = 0; isa[i]; i++) {
    if (i)
      strcat(list, ",");
    strcat(list, isa[i]);
  }
  char platform[64];
  snprintf(platform, sizeof platform, "linux/%s%s%s", ci->architecture,
           strcmp(ci->architecture, "arm64") == 0 ? "/" : "",
           strcmp(ci->architecture, "arm64") == 0 ? ci->variant : "");
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION, .tagdb = db};
  o.platform = platform;
  o.features = list;
  o.no_detect = 1;
  struct fpull_target *t = NULL;
  fpull_err err = {0};
  tl->machines++;
  if (fpull_target_build(&t, &o, &err)) {
    th_fail(__FILE__, __LINE__, "%s: target: %s", machine, err.msg);
    goto out;
  }
  /* Does core's code run here: every extension of its set that gates is in the words. */
  const char *const *core_isa = fpull_tagdb_isa(db, core);
  int core_runs = core_isa != NULL;
  for (size_t k = 0; core_isa && core_isa[k]; k++)
    if (fpull_tagdb_tag_isa_gates(db, core, core_isa[k]) && !fp_strv_contains(isa, core_isa[k]))
      core_runs = 0;
  const char *best = fpull_best_cpu_tag(db, t, ci, 0);
  const char *gen = fpull_cpu_generation(db, ci);
  if (core_isa)
    tl->own++;
  if (core_runs) {
    tl->own_runs++;
    if (!best || strcmp(best, core) != 0) {
      th_fail(__FILE__, __LINE__, "%s: best tag %s, want its own %s (generation %s)", machine,
              best ? best : "none", core, gen ? gen : "none");
      tl->missed++;
    }
  } else if (best && strcmp(best, core) == 0) {
    th_fail(__FILE__, __LINE__, "%s: best tag %s, whose code does not run there", machine, best);
  } else if (strcmp(ci->architecture, "arm64") == 0 && (!best || strncmp(best, "armv", 4) != 0)) {
    /* Not its own core: an architecture level, not another vendor's core. */
    th_fail(__FILE__, __LINE__, "%s: best tag %s, want an armv8/armv9 level", machine,
            best ? best : "none");
    tl->other_core++;
  }
  if (core_isa && (!gen || strcmp(gen, core) != 0))
    th_fail(__FILE__, __LINE__, "%s: generation %s, want %s", machine, gen ? gen : "none", core);
  if (strcmp(core, "-") == 0 && gen) /* a part GCC has no name for */
    th_fail(__FILE__, __LINE__, "%s: generation %s, want none", machine, gen);
  /* No tag reported whose gated extensions the CPU lacks. */
  const char *const *tags = fpull_tagdb_tags(db, ci->architecture);
  for (size_t i = 0; tags && tags[i]; i++) {
    if (!fpull_featureset_has(t->features, tags[i], db))
      continue;
    const char *const *ti = fpull_tagdb_isa(db, tags[i]);
    for (size_t k = 0; ti[k]; k++)
      if (fpull_tagdb_tag_isa_gates(db, tags[i], ti[k]) && !fp_strv_contains(isa, ti[k])) {
        th_fail(__FILE__, __LINE__, "%s: %s reported without %s", machine, tags[i], ti[k]);
        tl->wrong++;
      }
  }
  fprintf(stderr, "%-32s %-13s generation %-13s best %s\n", machine, core, gen ? gen : "-",
          best ? best : "-");
  fpull_target_free(t);
out:
  free(list);
  fpull_strv_free(isa);
  ci->isa = NULL;
}

static struct fpull_tagdb *load_shipped(void)
{
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "loading the shipped table: %s", err.msg);
  return db;
}

/* Judges each machine of tests/fixtures/cpuinfo/arm64.txt that keep (when given) keeps, as
 * lib/detect would read it (MIDR_EL1's implementer, part, variant and revision, the hwcaps);
 * the number judged. */
static size_t judge_arm64_machines(struct fpull_tagdb *db, struct tally *tl,
                                   int (*keep)(const char *machine, const char *core,
                                               const char *hwcaps))
{
  FILE *f = fopen(th_src("tests/fixtures/cpuinfo/arm64.txt"), "r");
  CHECK(f != NULL);
  char line[2048];
  size_t judged = 0;
  while (f && fgets(line, sizeof line, f)) {
    char machine[96], core[64];
    unsigned impl, part, variant, rev;
    int off = 0;
    if (line[0] == '#' ||
        sscanf(line, "%95s %63s %x %x %x %u : %n", machine, core, &impl, &part, &variant, &rev,
               &off) != 6 ||
        !off || (keep && !keep(machine, core, line + off)))
      continue;
    uint64_t hw, hw2;
    words_of(line + off, &hw, &hw2);
    const char *names[FP_HWCAP_MAX];
    size_t n = fp_hwcap_arm64(hw, hw2, names, FP_HWCAP_MAX);
    struct fpull_cpu_info ci = {0};
    ci.architecture = (char *)"arm64";
    ci.variant = (char *)"v8";
    ci.family = impl;
    ci.model = part;
    ci.stepping = variant << 4 | rev; /* as lib/detect reads MIDR_EL1 */
    judge(db, &ci, names, n, machine, core, tl);
    judged++;
  }
  if (f)
    fclose(f);
  return judged;
}

TEST(arm64_real_machines_best_tag_is_the_own_core)
{
  struct fpull_tagdb *db = load_shipped();
  struct tally tl = {0};
  judge_arm64_machines(db, &tl, NULL);
  fprintf(stderr,
          "arm64: %zu machines, %zu cores in the table, %zu whose code runs there, %zu "
          "missed, %zu wrong tags\n",
          tl.machines, tl.own, tl.own_runs, tl.missed, tl.wrong);
  CHECK_INT_EQ(tl.machines, 61);
  CHECK_INT_EQ(tl.other_core, 0);
  /* 45: the two Ubuntu 22.04 Neoverse N2/V2 guests without rng count since RNG (and SVE2
   * BitPerm) are intrinsic-only on arm64 (tests/evidence/verdicts-arm64.txt); the Neoverse
   * V3AE since the table has gcc 14's neoverse-v3ae (an armv9-a level before). */
  CHECK_INT_EQ(tl.own, 50);
  CHECK_INT_EQ(tl.own_runs, 45);
  CHECK_INT_EQ(tl.missed, 0);
  CHECK_INT_EQ(tl.wrong, 0);
  fpull_tagdb_free(db);
}

static int ubuntu_neoverse_without_rng(const char *machine, const char *core, const char *hwcaps)
{
  if (strncmp(machine, "linux-ubuntu22.04-neoverse_", 27) != 0 ||
      (strcmp(core, "neoverse-n2") != 0 && strcmp(core, "neoverse-v2") != 0))
    return 0;
  CHECK(strstr(hwcaps, " rng") == NULL);
  return 1;
}

/* Two Ubuntu 22.04 machines, a Neoverse N2 and a Neoverse V2, whose kernel reports no rng
 * (RNDR): RNG is intrinsic-only (tests/evidence/verdicts-arm64.txt: compilers reach RNDR only
 * through __rndr), so each still gets its own core name, not an armv9-a level. */
TEST(arm64_neoverse_without_rng_keeps_its_own_core)
{
  struct fpull_tagdb *db = load_shipped();
  CHECK(!fpull_tagdb_tag_isa_gates(db, "neoverse-n2", "rng"));
  CHECK(!fpull_tagdb_tag_isa_gates(db, "neoverse-v2", "rng"));
  struct tally tl = {0};
  CHECK_INT_EQ(judge_arm64_machines(db, &tl, ubuntu_neoverse_without_rng), 2);
  CHECK_INT_EQ(tl.own_runs, 2); /* own core's code runs there: rng does not gate */
  CHECK_INT_EQ(tl.missed, 0);   /* and the best tag is that core */
  CHECK_INT_EQ(tl.wrong, 0);
  fpull_tagdb_free(db);
}

TEST(power_real_machines_best_tag_is_the_own_level)
{
  struct fpull_tagdb *db = load_shipped();
  FILE *f = fopen(th_src("tests/fixtures/cpuinfo/ppc64le.txt"), "r");
  CHECK(f != NULL);
  struct tally tl = {0};
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    char machine[96], core[64], pvr[16], platform[32];
    unsigned long long hw, hw2;
    if (line[0] == '#' ||
        sscanf(line, "%95s %63s %15s %31s %llx %llx", machine, core, pvr, platform, &hw, &hw2) != 6)
      continue;
    const char *names[FP_HWCAP_MAX];
    size_t n = fp_hwcap_ppc64(hw, hw2, names, FP_HWCAP_MAX);
    struct fpull_cpu_info ci = {0};
    ci.architecture = (char *)"ppc64le";
    ci.variant = (char *)fp_hwcap_ppc64_level(platform, hw2);
    judge(db, &ci, names, n, machine, core, &tl);
    /* Without AT_PLATFORM (qemu-user, some containers) the ISA level bits say the same. */
    const char *bare = fp_hwcap_ppc64_level(NULL, hw2);
    if ((bare || ci.variant) && (!bare || !ci.variant || strcmp(bare, ci.variant) != 0))
      th_fail(__FILE__, __LINE__, "%s: level %s from AT_PLATFORM, %s without", machine,
              ci.variant ? ci.variant : "none", bare ? bare : "none");
  }
  if (f)
    fclose(f);
  fprintf(stderr,
          "ppc64le: %zu machines, %zu levels in the table, %zu whose code runs there, "
          "%zu missed, %zu wrong tags\n",
          tl.machines, tl.own, tl.own_runs, tl.missed, tl.wrong);
  /* AT_PLATFORM strings the table has no level for: POWER11 runs POWER10's code (its
   * AT_HWCAP2 has ARCH_3_1); a suffix names its level. */
  CHECK_STR_EQ(fp_hwcap_ppc64_level("power11", 0xaef60000u), "power10");
  CHECK_STR_EQ(fp_hwcap_ppc64_level("power9+", 0xaef00000u), "power9");
  CHECK(fp_hwcap_ppc64_level("power7", 0x20000000u) == NULL);
  CHECK_INT_EQ(tl.machines, 6);
  CHECK_INT_EQ(tl.own_runs, 5);
  CHECK_INT_EQ(tl.missed, 0);
  CHECK_INT_EQ(tl.wrong, 0);
  fpull_tagdb_free(db);
}

/* MIDR as GCC's -mcpu=native reads it: the first aarch64-cores.def entry with the pair. */
TEST(arm64_parts_are_gccs_first_match)
{
  struct fpull_tagdb *db = load_shipped();
  static const struct {
    unsigned implementer, part;
    const char *want;
  } cases[] = {
      {0x42, 0x516, "thunderx2t99p1"}, /* Broadcom Vulcan, not Cavium's 0x43 0x0af */
      {0x43, 0x0af, "thunderx2t99"},   {0x43, 0x0a0, "thunderxt88"}, /* thunderx, an alias */
      {0x43, 0x0a2, "octeontx81"},     {0x43, 0x0a3, "octeontx83"},
      {0x43, 0x0b0, "octeontx2"},      {0x43, 0x0b2, "octeontx2t96"}, /* T93 is T96's alias */
      {0x43, 0x0b5, "octeontx2f95mm"}, {0x53, 0x001, "exynos-m1"},
      {0x68, 0x000, "phecda"},         {0x51, 0xc00, "qdf24xx"},  /* falkor, an alias */
      {0x61, 0x029, "apple-m1"},       {0x61, 0x039, "apple-m2"}, /* M1 Max, M2 Max */
      {0x6d, 0xd49, "cobalt-100"},     {0x41, 0xd49, "neoverse-n2"},
      {0x61, 0x020, "apple-m1"},       {0x61, 0x042, "apple-m3"},    /* gcc 15's Apple pairs */
      {0x61, 0x012, "apple-a12"},      {0x41, 0xd85, "cortex-x925"}, /* GB10's big part */
      {0x41, 0xd87, "cortex-a725"},    {0x48, 0xd06, "hip12"},       /* HiSilicon, not cortex-a65 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct fpull_cpu_info ci = {.architecture = (char *)"arm64", .variant = (char *)"v8"};
    ci.family = cases[i].implementer;
    ci.model = cases[i].part;
    const char *g = fpull_cpu_generation(db, &ci);
    if (!g || strcmp(g, cases[i].want) != 0)
      th_fail(__FILE__, __LINE__, "0x%x 0x%03x: %s, want %s", cases[i].implementer, cases[i].part,
              g ? g : "none", cases[i].want);
  }
  /* Every core tag of the table is some MIDR's own name (at some variant), but those GCC
   * gives no MIDR of its own (neoverse-512tvb, grace: Neoverse V2's; gb10: the pair of
   * Cortex-X925 and Cortex-A725, CPU 0 is one of them), or lists after another name for the
   * same part (octeontx and thunderxt81/83 after thunderx and octeontx81/83, octeontx2t93
   * after octeontx2t96, thunderxt88p1 after thunderxt88 since gcc 15). */
  static const char *const unreachable[] = {"neoverse-512tvb", "grace",        "gb10",
                                            "thunderxt88p1",   "octeontx",     "thunderxt81",
                                            "thunderxt83",     "octeontx2t93", NULL};
  static const unsigned implementers[] = {0x41, 0x42, 0x43, 0x46, 0x48, 0x4e, 0x50,
                                          0x51, 0x53, 0x61, 0x68, 0x6d, 0xc0};
  const char *const *tags = fpull_tagdb_tags(db, "arm64");
  size_t cores = 0;
  for (size_t i = 0; tags && tags[i]; i++) {
    if (strncmp(tags[i], "armv", 4) == 0 || strchr(tags[i], '.'))
      continue; /* architecture levels, big.LITTLE pairs */
    int skip = 0;
    for (size_t k = 0; unreachable[k]; k++)
      skip |= strcmp(tags[i], unreachable[k]) == 0;
    if (skip)
      continue;
    cores++;
    int found = 0;
    /* Variant 0 first; the others only for the cores GCC keys on one (emag, thunderx3t110). */
    for (unsigned variant = 0; !found && variant < 16; variant++)
      for (size_t m = 0; !found && m < sizeof implementers / sizeof implementers[0]; m++)
        for (unsigned part = 0; !found && part < 0x1000; part++) {
          struct fpull_cpu_info ci = {.architecture = (char *)"arm64",
                                      .family = implementers[m],
                                      .model = part,
                                      .stepping = variant << 4};
          const char *g = fpull_cpu_generation(db, &ci);
          found = g && strcmp(g, tags[i]) == 0;
        }
    if (!found)
      th_fail(__FILE__, __LINE__, "%s: no MIDR names it", tags[i]);
  }
  CHECK_INT_EQ(cores, 74);
  fpull_tagdb_free(db);
}

/* MIDR_EL1's variant (bits 23:20, the detector's stepping / 16), where GCC's aarch64-cores.def
 * keys on it: an Ampere eMAG is X-Gene's part at variant 3, and GCC names a ThunderX3 only at
 * variant 0xa (another variant has no own name, as -mcpu=native finds none); a ThunderX
 * T88 pass 1 (variant 0) is thunderxt88, as gcc 15 lists thunderxt88p1 after it. Without
 * the variant, eMAG would be xgene1 and every ThunderX3 thunderx3t110. */
TEST(arm64_midr_variant_as_gcc)
{
  struct fpull_tagdb *db = load_shipped();
  static const struct {
    unsigned implementer, part, variant, revision;
    const char *want;
  } cases[] = {
      {0x50, 0x000, 3, 2, "emag"},
      {0x50, 0x000, 0, 0, "xgene1"},
      {0x50, 0x000, 1, 0, "xgene1"},
      {0x43, 0x0b8, 0xa, 1, "thunderx3t110"},
      {0x43, 0x0b8, 1, 0, NULL},
      {0x43, 0x0a1, 0, 0, "thunderxt88"},
      {0x43, 0x0a1, 1, 1, "thunderxt88"},
      {0x41, 0xd4f, 0, 1, "neoverse-v2"},
      {0x41, 0xd4f, 0xf, 0xf, "neoverse-v2"}, /* ANY: every variant */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct fpull_cpu_info ci = {.architecture = (char *)"arm64", .variant = (char *)"v8"};
    ci.family = cases[i].implementer;
    ci.model = cases[i].part;
    ci.stepping = cases[i].variant << 4 | cases[i].revision;
    const char *g = fpull_cpu_generation(db, &ci);
    const char *want = cases[i].want;
    if (want ? !g || strcmp(g, want) != 0 : g != NULL)
      th_fail(__FILE__, __LINE__, "0x%x 0x%03x r%up%u: %s, want %s", cases[i].implementer,
              cases[i].part, cases[i].variant, cases[i].revision, g ? g : "none",
              want ? want : "none");
  }
  /* The eMAG's best tag with its own set: emag, not xgene1 (whose set is a subset). */
  struct fpull_cpu_info ci = {.architecture = (char *)"arm64", .variant = (char *)"v8"};
  ci.family = 0x50;
  ci.model = 0x000;
  ci.stepping = 3 << 4 | 2;
  const char *const *isa = fpull_tagdb_isa(db, "emag");
  CHECK(isa != NULL);
  struct tally tl = {0};
  judge(db, &ci, (const char **)isa, isa ? fpull_strv_len((char *const *)isa) : 0,
        "synthetic-emag-r3p2", "emag", &tl);
  CHECK_INT_EQ(tl.own_runs, 1);
  CHECK_INT_EQ(tl.missed, 0);
  CHECK_INT_EQ(tl.wrong, 0);
  fpull_tagdb_free(db);
}

/* The cores only gcc 14 and 15 know (scripts/gen-cputags ARM_LATER), each from a synthetic
 * MIDR (no real machine's /proc/cpuinfo of them was found, but the Neoverse V3AE in
 * tests/fixtures/cpuinfo/arm64.txt): implementer and part as gcc 15's aarch64-cores.def
 * lists them, the extensions the table's own set for that core (what such a core reports).
 * The best tag is the core's own name, never another core whose set is the same (Cortex-A720,
 * Cortex-X4, Cortex-X925, Neoverse N3 and V3 share one set: the MIDR decides), and no tag
 * reported lacks what it gates on. */
TEST(arm64_later_cores_synthetic_midr_best_tag_is_the_own_core)
{
  struct fpull_tagdb *db = load_shipped();
  static const struct {
    unsigned implementer, part;
    const char *core;
  } cores[] = {
      {0xc0, 0xac5, "ampere1b"},     {0x46, 0x003, "fujitsu-monaka"},
      {0x48, 0xd06, "hip12"},        {0x51, 0x001, "oryon-1"},
      {0x41, 0xd14, "cortex-r82ae"}, {0x61, 0x043, "apple-m3"},
      {0x61, 0x055, "apple-m4"},     {0x61, 0x062, "apple-m5"},
      {0x41, 0xd80, "cortex-a520"},  {0x41, 0xd88, "cortex-a520ae"},
      {0x41, 0xd81, "cortex-a720"},  {0x41, 0xd89, "cortex-a720ae"},
      {0x41, 0xd87, "cortex-a725"},  {0x41, 0xd82, "cortex-x4"},
      {0x41, 0xd85, "cortex-x925"},  {0x41, 0xd8e, "neoverse-n3"},
      {0x41, 0xd84, "neoverse-v3"},  {0x41, 0xd83, "neoverse-v3ae"},
      {0x4e, 0x010, "olympus"},
  };
  struct tally tl = {0};
  for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
    const char *const *isa = fpull_tagdb_isa(db, cores[i].core);
    if (!isa) {
      th_fail(__FILE__, __LINE__, "%s: not in the table", cores[i].core);
      continue;
    }
    struct fpull_cpu_info ci = {.architecture = (char *)"arm64", .variant = (char *)"v8"};
    ci.family = cores[i].implementer;
    ci.model = cores[i].part;
    char machine[64];
    snprintf(machine, sizeof machine, "synthetic-0x%02x-0x%03x", cores[i].implementer,
             cores[i].part);
    judge(db, &ci, (const char **)isa, fpull_strv_len((char *const *)isa), machine, cores[i].core,
          &tl);
  }
  CHECK_INT_EQ(tl.machines, 19);
  CHECK_INT_EQ(tl.own_runs, 19);
  CHECK_INT_EQ(tl.missed, 0);
  CHECK_INT_EQ(tl.wrong, 0);
  CHECK_INT_EQ(tl.other_core, 0);
  fpull_tagdb_free(db);
}
