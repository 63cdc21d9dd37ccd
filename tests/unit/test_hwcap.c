/* AT_HWCAP/AT_HWCAP2 decoding (lib/hwcap.c) and the arm64/ppc64le tags derived from it with
 * the shipped table. The hwcap words are those of real machines, built from the Features
 * line their kernels print in /proc/cpuinfo (the names of the kernel's hwcap lists). The
 * same decoder runs under qemu-user's CPU models in tests/qemu. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/features.h"
#include "harness.h"
#include "detect/hwcap.h"
#include "select/tagdb.h"
#include "base/util.h"

/* Kernel hwcap names (arch/arm64/include/uapi/asm/hwcap.h, bit order) for building words. */
static const char *const arm_hw[] = {
    "fp",      "asimd", "evtstrm", "aes",   "pmull",    "sha1",   "sha2", "crc32",
    "atomics", "fphp",  "asimdhp", "cpuid", "asimdrdm", "jscvt",  "fcma", "lrcpc",
    "dcpop",   "sha3",  "sm3",     "sm4",   "asimddp",  "sha512", "sve",  "asimdfhm",
    "dit",     "uscat", "ilrcpc",  "flagm", "ssbs",     "sb",     "paca", "pacg",
};
static const char *const arm_hw2[] = {
    "dcpodp",    "sve2",      "sveaes",  "svepmull",  "svebitperm", "svesha3",  "svesm4",
    "flagm2",    "frint",     "svei8mm", "svef32mm",  "svef64mm",   "svebf16",  "i8mm",
    "bf16",      "dgh",       "rng",     "bti",       "mte",        "ecv",      "afp",
    "rpres",     "mte3",      "sme",     "smei16i64", "smef64f64",  "smei8i32", "smef16f32",
    "smeb16f32", "smef32f32", "smefa64", "wfxt",      "ebf16",      "sveebf16", "cssc",
};

/* Words from a /proc/cpuinfo Features line. */
static void words(const char *features, uint64_t *hw, uint64_t *hw2)
{
  *hw = *hw2 = 0;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", features);
  for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    int found = 0;
    for (size_t i = 0; i < sizeof arm_hw / sizeof arm_hw[0] && !found; i++)
      if (strcmp(w, arm_hw[i]) == 0)
        *hw |= 1ull << i, found = 1;
    for (size_t i = 0; i < sizeof arm_hw2 / sizeof arm_hw2[0] && !found; i++)
      if (strcmp(w, arm_hw2[i]) == 0)
        *hw2 |= 1ull << i, found = 1;
    if (!found)
      th_fail(__FILE__, __LINE__, "unknown hwcap name %s", w);
  }
}

static struct fpull_tagdb *load_db(void)
{
  fpull_err err = {0};
  struct fpull_tagdb *db = NULL;
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "tag table: %s", err.msg);
  return db;
}

/* The target fpull builds from --platform linux/ARCH:NAME:NAME... */
static struct fpull_target *target_of(struct fpull_tagdb *db, const char *arch, const char **names,
                                      size_t n)
{
  struct fp_buf b = {0};
  char head[64];
  snprintf(head, sizeof head, "linux/%s", arch);
  fp_buf_append(&b, head, strlen(head));
  for (size_t i = 0; i < n; i++) {
    fp_buf_append(&b, ":", 1);
    fp_buf_append(&b, names[i], strlen(names[i]));
  }
  fp_buf_append(&b, "", 1);
  struct fpull_target_opts o = {
      .version = FPULL_TARGET_OPTS_VERSION, .platform = b.data, .tagdb = db, .no_detect = 1};
  struct fpull_target *t = NULL;
  fpull_err err = {0};
  if (fpull_target_build(&t, &o, &err))
    th_fail(__FILE__, __LINE__, "target %s: %s", b.data, err.msg);
  free(b.data);
  return t;
}

static struct fpull_target *arm_target(struct fpull_tagdb *db, const char *features)
{
  uint64_t hw, hw2;
  words(features, &hw, &hw2);
  const char *names[FP_HWCAP_MAX];
  size_t n = fp_hwcap_arm64(hw, hw2, names, FP_HWCAP_MAX);
  return target_of(db, "arm64", names, n);
}

static void want(struct fpull_target *t, struct fpull_tagdb *db, const char *const *yes,
                 const char *const *no)
{
  for (size_t i = 0; yes[i]; i++)
    if (!fpull_featureset_has(t->features, yes[i], db))
      th_fail(__FILE__, __LINE__, "%s missing", yes[i]);
  for (size_t i = 0; no[i]; i++)
    if (fpull_featureset_has(t->features, no[i], db))
      th_fail(__FILE__, __LINE__, "%s present", no[i]);
}

/* AWS Graviton2 (Neoverse N1). */
TEST(graviton2_is_neoverse_n1)
{
  struct fpull_tagdb *db = load_db();
  struct fpull_target *t = arm_target(db, "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics "
                                          "fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs");
  static const char *const yes[] = {"neoverse-n1", "neoverse_n1", "armv8.2-a", "cortex-a76",
                                    "dotprod",     "crypto",      NULL};
  /* Issue 23: no pointer authentication (paca, pacg), so none of the cores GCC defines
   * with it, although their macro sets are Neoverse N1's. */
  static const char *const no[] = {"neoverse-v1", "a64fx",      "sve",   "armv8.3-a", "x86-64-v2",
                                   "cortex-a78c", "cortex-x1c", "pauth", NULL};
  want(t, db, yes, no);
  CHECK_STR_EQ(t->variant, "v8");
  fpull_target_free(t);
  fpull_tagdb_free(db);
}

/* AWS Graviton3 (Neoverse V1): EESSI tells it from N1 by svei8mm. */
TEST(graviton3_is_neoverse_v1)
{
  struct fpull_tagdb *db = load_db();
  struct fpull_target *t =
      arm_target(db, "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid "
                     "asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit "
                     "uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng");
  static const char *const yes[] = {"neoverse-v1",     "neoverse-n1", "a64fx",  "armv8.4-a",
                                    "sve_matmul_int8", "sve_bf16",    "rng",    "pauth",
                                    "matmul_int8",     "sha3",        "sha512", NULL};
  static const char *const no[] = {"neoverse-v2", "sve2", "armv8.5-a", "armv9-a", "bti", NULL};
  want(t, db, yes, no);
  fpull_target_free(t);
  fpull_tagdb_free(db);
}

/* NVIDIA Grace (Neoverse V2). */
TEST(grace_is_neoverse_v2)
{
  struct fpull_tagdb *db = load_db();
  struct fpull_target *t = arm_target(
      db, "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt "
          "fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs "
          "sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint "
          "svei8mm svebf16 i8mm bf16 dgh rng bti");
  static const char *const yes[] = {"neoverse-v2",  "neoverse_v2", "demeter", "grace",
                                    "neoverse-v1",  "neoverse-n2", "armv9-a", "sve2",
                                    "sve2_bitperm", "bti",         NULL};
  static const char *const no[] = {"memory_tagging", "sme", NULL};
  want(t, db, yes, no);
  fpull_target_free(t);
  fpull_tagdb_free(db);
}

/* A Cortex-A78C (its kernel's Features line): PAuth and FlagM on top of Neoverse N1's
 * set, which is what GCC's -mcpu=cortex-a78c has without a macro for either. */
TEST(cortex_a78c_needs_pauth_not_flagm)
{
  struct fpull_tagdb *db = load_db();
  static const char *const a78c =
      "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc "
      "dcpop asimddp uscat ilrcpc flagm ssbs paca pacg";
  struct fpull_target *t = arm_target(db, a78c);
  static const char *const yes[] = {"cortex-a78c", "cortex-x1c", "neoverse-n1",
                                    "pauth",       "flagm",      NULL};
  static const char *const no[] = {"armv8.3-a", "neoverse-v1", NULL};
  want(t, db, yes, no);
  fpull_target_free(t);
  /* Without FlagM it is still an X1C (GCC 13: armv8.2-a+...+pauth), and an A78C too: FlagM
   * is intrinsic-only (tests/evidence/verdicts-arm64.txt: no compiler emits it on its
   * own), so it never gates. */
  static const char *const x1c =
      "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc "
      "dcpop asimddp ssbs paca pacg";
  t = arm_target(db, x1c);
  static const char *const yes2[] = {"cortex-x1c", "cortex-a78c", NULL};
  static const char *const no2[] = {"flagm", NULL};
  want(t, db, yes2, no2);
  fpull_target_free(t);
  /* Neither without RCpc, which every one of these cores has in GCC (lrcpc). */
  t = arm_target(db, "fp asimd aes pmull sha1 sha2 crc32 atomics fphp asimdhp asimdrdm asimddp");
  static const char *const none[] = {NULL};
  static const char *const no3[] = {"neoverse-n1", "cortex-a55", "cortex-a76", NULL};
  want(t, db, none, no3);
  fpull_target_free(t);
  fpull_tagdb_free(db);
}

/* Each HWCAP bit stands for its macro and nothing else. */
TEST(arm64_bits_map_to_macros)
{
  const char *names[FP_HWCAP_MAX];
  CHECK_INT_EQ(fp_hwcap_arm64(0, 0, names, FP_HWCAP_MAX), 0);
  /* SVE2 without SVE (a kernel would never say so) is not SVE2. */
  CHECK_INT_EQ(fp_hwcap_arm64(0, 1u << 1, names, FP_HWCAP_MAX), 0);
  size_t n = fp_hwcap_arm64(1u << 22, 1u << 1, names, FP_HWCAP_MAX);
  CHECK_INT_EQ(n, 2);
  CHECK_STR_EQ(names[0], "sve");
  CHECK_STR_EQ(names[1], "sve2");
  /* AES without PMULL is not GCC's +aes. */
  CHECK_INT_EQ(fp_hwcap_arm64(1u << 3, 0, names, FP_HWCAP_MAX), 0);
  static const struct {
    unsigned bit2;
    const char *name;
  } two[] = {
      {9, "sve_matmul_int8"}, {12, "sve_bf16"}, {13, "matmul_int8"}, {16, "rng"}, {17, "bti"},
      {18, "memory_tagging"}, {23, "sme"}};
  for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
    n = fp_hwcap_arm64(1u << 22, 1ull << two[i].bit2, names, FP_HWCAP_MAX);
    if (n != 2 || strcmp(names[1], two[i].name) != 0)
      th_fail(__FILE__, __LINE__, "HWCAP2 bit %u: %zu names, want sve %s", two[i].bit2, n,
              two[i].name);
  }
  /* The extensions GCC enables without a macro: FlagM, SB (AT_HWCAP), MOPS (AT_HWCAP2). */
  static const struct {
    uint64_t hw, hw2;
    const char *name;
  } nomacro[] = {{1ull << 27, 0, "flagm"}, {1ull << 29, 0, "sb"}, {0, 1ull << 43, "mops"}};
  for (size_t i = 0; i < sizeof nomacro / sizeof nomacro[0]; i++) {
    n = fp_hwcap_arm64(nomacro[i].hw, nomacro[i].hw2, names, FP_HWCAP_MAX);
    if (n != 1 || strcmp(names[0], nomacro[i].name) != 0)
      th_fail(__FILE__, __LINE__, "%s: %zu names", nomacro[i].name, n);
  }
  /* PAuth is both keys' instructions: PACA alone is not enough. */
  CHECK_INT_EQ(fp_hwcap_arm64(1ull << 30, 0, names, FP_HWCAP_MAX), 0);
  /* A short buffer is never overrun. */
  CHECK_INT_EQ(fp_hwcap_arm64(~0ull, ~0ull, names, 3), 3);
}

/* The extensions of gcc 14's and 15's cores that gcc 12 has no option for (gen-cputags
 * ARM_LATER_EXTRA), from the kernel's AT_HWCAP2 bits: CSSC 34, LRCPC3 46 (with LRCPC), FPMR
 * 48, LUT 49, FAMINMAX 50, F8FMA 52, F8DP4 53, F8DP2 54; an FP8 bit without FPMR is no FP8.
 * An AmpereOne A (no CSSC) holds ampere1a, not ampere1b, whose set is the same but for CSSC. */
TEST(arm64_later_extensions_decode_and_gate)
{
  const char *names[FP_HWCAP_MAX];
  static const struct {
    uint64_t hw, hw2;
    const char *name;
  } one[] = {
      {0, 1ull << 34, "cssc"},
      {1ull << 15, 1ull << 46, "rcpc3"},
      {0, 1ull << 49, "lut"},
      {0, 1ull << 50, "faminmax"},
      {0, 1ull << 48 | 1ull << 52, "fp8fma"},
      {0, 1ull << 48 | 1ull << 54, "fp8dot2"},
      {0, 1ull << 48 | 1ull << 53, "fp8dot4"},
  };
  for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
    size_t n = fp_hwcap_arm64(one[i].hw, one[i].hw2, names, FP_HWCAP_MAX);
    int found = 0;
    for (size_t k = 0; k < n; k++)
      found |= strcmp(names[k], one[i].name) == 0;
    if (!found)
      th_fail(__FILE__, __LINE__, "%s not decoded", one[i].name);
  }
  CHECK_INT_EQ(fp_hwcap_arm64(0, 1ull << 52, names, FP_HWCAP_MAX), 0); /* F8FMA, no FPMR */
  CHECK_INT_EQ(fp_hwcap_arm64(0, 1ull << 46, names, FP_HWCAP_MAX), 0); /* LRCPC3, no LRCPC */
  struct fpull_tagdb *db = load_db();
  static const char ampere1a[] =
      "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
      "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg "
      "dcpodp flagm2 frint i8mm bf16 rng bti ecv";
  struct fpull_target *t = arm_target(db, ampere1a);
  want(t, db, (const char *const[]){"ampere1a", NULL}, (const char *const[]){"ampere1b", NULL});
  fpull_target_free(t);
  char *with = fp_xasprintf("%s cssc", ampere1a);
  t = arm_target(db, with);
  want(t, db, (const char *const[]){"ampere1a", "ampere1b", NULL}, (const char *const[]){NULL});
  fpull_target_free(t);
  free(with);
  fpull_tagdb_free(db);
}

/* Every extension an arm64 or ppc64le tag names can be decoded, or the tag could never be
 * detected. */
TEST(table_names_are_decodable)
{
  struct fpull_tagdb *db = load_db();
  static const char *const archs[] = {"arm64", "ppc64le"};
  for (size_t a = 0; a < 2; a++) {
    const char *const *tags = fpull_tagdb_tags(db, archs[a]);
    CHECK(tags && tags[0]);
    for (size_t t = 0; tags[t]; t++) {
      const char *const *isa = fpull_tagdb_isa(db, tags[t]);
      for (size_t i = 0; isa[i]; i++) {
        int found = 0;
        for (size_t j = 0; !found; j++) {
          const char *k = a == 0 ? fp_hwcap_arm64_name(j) : fp_hwcap_ppc64_name(j);
          if (!k)
            break;
          found = strcmp(k, isa[i]) == 0;
        }
        if (!found)
          th_fail(__FILE__, __LINE__, "%s tag %s: %s is not decodable", archs[a], tags[t], isa[i]);
      }
    }
  }
  fpull_tagdb_free(db);
}

/* --platform linux/arm64:neoverse-v1 implies what GCC's macro sets say: every arm64 tag whose
 * set is a subset, and the extensions themselves. */
TEST(neoverse_v1_implies_what_gcc_says)
{
  struct fpull_tagdb *db = load_db();
  const char *v1[] = {"neoverse-v1"};
  struct fpull_target *t = target_of(db, "arm64", v1, 1);
  /* RNG is intrinsic-only (tests/evidence/verdicts-arm64.txt): a tag does not lend it. */
  static const char *const yes[] = {"neoverse-n1", "a64fx", "armv8.4-a",   "armv8-a",
                                    "cortex-a76",  "sve",   "matmul_int8", "bf16_vector_arithmetic",
                                    NULL};
  static const char *const no[] = {"neoverse-v2", "armv8.5-a", "sve2", "thunderx3t110",
                                   "haswell",     "power8",    "rng",  NULL};
  want(t, db, yes, no);
  fpull_target_free(t);
  fpull_tagdb_free(db);
}

/* ISA names shared by two architectures never pull in the other architecture's tags. Fails
 * without the per-architecture rule: armv8-a's whole set is named here. */
TEST(no_tags_across_architectures)
{
  struct fpull_tagdb *db = load_db();
  const char *arm_names[] = {"clz", "fma", "idiv", "numeric_maxmin", "unaligned", "crc32"};
  struct fpull_target *t = target_of(db, "amd64", arm_names, 6);
  static const char *const none[] = {NULL};
  static const char *const arm[] = {"armv8-a", "cortex-a72", NULL};
  want(t, db, none, arm);
  fpull_target_free(t);
  const char *ppc_names[] = {"altivec", "arch_pwr8", "crypto", "power8_vector", "vsx"};
  t = target_of(db, "arm64", ppc_names, 5);
  static const char *const ppc[] = {"power8", NULL};
  want(t, db, none, ppc);
  fpull_target_free(t);
  t = target_of(db, "ppc64le", ppc_names, 5);
  want(t, db, ppc, none);
  fpull_target_free(t);
  fpull_tagdb_free(db);
}

/* POWER: AT_PLATFORM when the kernel gives it, else the ISA level bits of AT_HWCAP2. */
TEST(ppc64_levels)
{
  CHECK_STR_EQ(fp_hwcap_ppc64_level("power9", 0), "power9");
  CHECK_STR_EQ(fp_hwcap_ppc64_level("power10", 0), "power10");
  CHECK_STR_EQ(fp_hwcap_ppc64_level(NULL, 0x80000000ull), "power8");
  CHECK_STR_EQ(fp_hwcap_ppc64_level(NULL, 0x80800000ull), "power9");
  CHECK_STR_EQ(fp_hwcap_ppc64_level("ppc970", 0x80840000ull), "power10");
  CHECK_NULL(fp_hwcap_ppc64_level(NULL, 0));
  /* A POWER9 (qemu's register values): power9, not power10. */
  const char *names[FP_HWCAP_MAX];
  size_t n = fp_hwcap_ppc64(0x58000580ull, 0x8ee00000ull, names, FP_HWCAP_MAX);
  struct fpull_tagdb *db = load_db();
  struct fpull_target *t = target_of(db, "ppc64le", names, n);
  static const char *const yes[] = {"power9", "power9le", "power8", "float128_hardware", NULL};
  static const char *const no[] = {"power10", "mma", NULL};
  want(t, db, yes, no);
  fpull_target_free(t);
  fpull_tagdb_free(db);
}
