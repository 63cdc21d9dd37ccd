/* CPUID decoding against recorded dumps of CPUs we do not have (tests/fixtures/cpuid), the
 * XCR0 rules, the list of decodable names against GCC, and host detection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/cpuid.h"
#include "fpull/detect.h"
#include "fpull/features.h"
#include "harness.h"
#include "base/util.h"

static void load(struct fp_cpuid_raw *raw, const char *name)
{
  char rel[256];
  snprintf(rel, sizeof rel, "tests/fixtures/cpuid/%s.txt", name);
  cleanup_free char *text = NULL;
  size_t len;
  CHECK_INT_EQ(fp_read_file(th_src(rel), 1 << 20, &text, &len), 0);
  fpull_err err = {0};
  if (fp_cpuid_raw_parse(raw, text, &err))
    th_fail(__FILE__, __LINE__, "%s: %s", rel, err.msg);
}

/* The decoded names joined by spaces (they come sorted). */
static char *decode_str(const struct fp_cpuid_raw *raw)
{
  cleanup_strv char **v = fp_cpuid_decode(raw);
  struct fp_buf b = {0};
  for (size_t i = 0; v[i]; i++) {
    if (i)
      fp_buf_append(&b, " ", 1);
    fp_buf_append(&b, v[i], strlen(v[i]));
  }
  return b.data ? b.data : fp_xstrdup("");
}

static int has(char **v, const char *name)
{
  return fp_strv_contains(v, name);
}

TEST(broadwell_ep)
{
  struct fp_cpuid_raw raw;
  load(&raw, "broadwell-ep");
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s, "abm adx aes avx avx2 bmi bmi2 crc32 cx16 f16c fma fsgsbase fxsr hle lzcnt mmx "
                  "movbe osxsave pclmul popcnt prfchw rdrnd rdseed rtm sahf sse sse2 sse3 sse4_1 "
                  "sse4_2 ssse3 xsave xsaveopt");
}

TEST(skylake_sp)
{
  struct fp_cpuid_raw raw;
  load(&raw, "skylake-sp");
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s, "abm adx aes avx avx2 avx512bw avx512cd avx512dq avx512f avx512vl bmi bmi2 "
                  "clflushopt clwb crc32 cx16 f16c fma fsgsbase fxsr hle lzcnt mmx movbe osxsave "
                  "pclmul popcnt prfchw rdrnd rdseed rtm sahf sse sse2 sse3 sse4_1 sse4_2 "
                  "ssse3 xsave xsavec xsaveopt xsaves");
  /* PKU without OSPKE (CPUID.7.0:ECX bit 4 clear in this dump): the OS has not enabled it. */
}

TEST(icelake_server)
{
  struct fp_cpuid_raw raw;
  load(&raw, "icelake-server");
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s, "abm adx aes avx avx2 avx512bitalg avx512bw avx512cd avx512dq avx512f avx512ifma "
                  "avx512vbmi avx512vbmi2 avx512vl avx512vnni avx512vpopcntdq bmi bmi2 clflushopt "
                  "clwb crc32 cx16 f16c fma fsgsbase fxsr gfni hle lzcnt mmx movbe osxsave pclmul "
                  "popcnt prfchw rdpid rdrnd rdseed rtm sahf sha sse sse2 sse3 sse4_1 sse4_2 ssse3 "
                  "vaes vpclmulqdq xsave xsavec xsaveopt xsaves");
}

TEST(zen2_epyc_7002)
{
  struct fp_cpuid_raw raw;
  load(&raw, "zen2-epyc-7002");
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s, "abm adx aes avx avx2 bmi bmi2 clflushopt clwb clzero crc32 cx16 f16c fma "
                  "fsgsbase fxsr lzcnt mmx movbe mwaitx osxsave pclmul popcnt prfchw rdpid rdrnd "
                  "rdseed sahf sha sse sse2 sse3 sse4_1 sse4_2 sse4a ssse3 wbnoinvd xsave xsavec "
                  "xsaveopt xsaves");
}

TEST(zen3_epyc_7003)
{
  struct fp_cpuid_raw raw;
  load(&raw, "zen3-epyc-7003");
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s, "abm adx aes avx avx2 bmi bmi2 clflushopt clwb clzero crc32 cx16 f16c fma "
                  "fsgsbase fxsr lzcnt mmx movbe mwaitx osxsave pclmul popcnt prfchw rdpid "
                  "rdrnd rdseed sahf sha sse sse2 sse3 sse4_1 sse4_2 sse4a ssse3 vaes vpclmulqdq "
                  "wbnoinvd xsave xsavec xsaveopt xsaves");
}

TEST(zen4_epyc_9004)
{
  struct fp_cpuid_raw raw;
  load(&raw, "zen4-epyc-9004");
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s, "abm adx aes avx avx2 avx512bf16 avx512bitalg avx512bw avx512cd avx512dq avx512f "
                  "avx512ifma avx512vbmi avx512vbmi2 avx512vl avx512vnni avx512vpopcntdq bmi bmi2 "
                  "clflushopt clwb clzero crc32 cx16 f16c fma fsgsbase fxsr gfni lzcnt mmx movbe "
                  "mwaitx osxsave pclmul popcnt prfchw rdpid rdrnd rdseed sahf sha sse sse2 "
                  "sse3 sse4_1 sse4_2 sse4a ssse3 vaes vpclmulqdq wbnoinvd xsave xsavec xsaveopt "
                  "xsaves");
}

/* Constructed from the documented bits (see the dump's header). */
TEST(zen5_epyc_9005)
{
  struct fp_cpuid_raw raw;
  load(&raw, "zen5-epyc-9005");
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s, "abm adx aes avx avx2 avx512bf16 avx512bitalg avx512bw avx512cd avx512dq avx512f "
                  "avx512ifma avx512vbmi avx512vbmi2 avx512vl avx512vnni avx512vp2intersect "
                  "avx512vpopcntdq avxvnni bmi bmi2 clflushopt clwb clzero crc32 cx16 f16c fma "
                  "fsgsbase fxsr gfni lzcnt mmx movbe movdir64b movdiri mwaitx osxsave pclmul pku "
                  "popcnt prefetchi prfchw rdpid rdrnd rdseed sahf sha sse sse2 sse3 sse4_1 sse4_2 "
                  "sse4a ssse3 vaes vpclmulqdq wbnoinvd xsave xsavec xsaveopt xsaves");
  /* AMD reports PREFETCHI in 80000021h only, and only a CPU whose maximum extended leaf
   * reaches it. */
  fp_cpuid_raw_set(&raw, 0x80000000u, 0, 0x80000020u, 0x68747541, 0x444d4163, 0x69746e65);
  cleanup_strv char **v = fp_cpuid_decode(&raw);
  CHECK(!has(v, "prefetchi") && has(v, "movdiri"));
}

/* Constructed from the documented bits (see the dump's header). */
TEST(graniterapids)
{
  struct fp_cpuid_raw raw;
  load(&raw, "graniterapids");
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s,
               "abm adx aes amx_bf16 amx_fp16 amx_int8 amx_tile avx avx2 avx512bf16 avx512bitalg "
               "avx512bw avx512cd avx512dq avx512f avx512fp16 avx512ifma avx512vbmi avx512vbmi2 "
               "avx512vl avx512vnni avx512vpopcntdq avxvnni bmi bmi2 cldemote clflushopt clwb "
               "crc32 cx16 enqcmd f16c fma fsgsbase fxsr gfni lzcnt mmx movbe movdir64b movdiri "
               "osxsave pclmul pconfig pku popcnt prefetchi prfchw ptwrite rdpid rdrnd rdseed "
               "rtm sahf serialize sgx sha sse sse2 sse3 sse4_1 sse4_2 ssse3 tsxldtrk uintr vaes "
               "vpclmulqdq waitpkg xsave xsavec xsaveopt xsaves");
  /* Without the AMX state in XCR0 no AMX name holds, AMX-FP16 included. */
  raw.xcr0 = 0x2e7;
  cleanup_strv char **v = fp_cpuid_decode(&raw);
  CHECK(!has(v, "amx_fp16") && !has(v, "amx_tile") && has(v, "prefetchi"));
}

TEST(turin_vm)
{
  struct fp_cpuid_raw raw;
  load(&raw, "turin-vm");
  cleanup_free char *s = decode_str(&raw);
  /* RDSEED, RDPID, XSAVES, PKU masked by the hypervisor; AVX-512 enabled in XCR0. */
  CHECK_STR_EQ(s, "abm adx aes avx avx2 avx512bf16 avx512bitalg avx512bw avx512cd avx512dq avx512f "
                  "avx512ifma avx512vbmi avx512vbmi2 avx512vl avx512vnni avx512vp2intersect "
                  "avx512vpopcntdq avxvnni bmi bmi2 clflushopt clwb clzero crc32 cx16 f16c fma "
                  "fsgsbase fxsr gfni lzcnt mmx movbe movdir64b movdiri osxsave pclmul popcnt "
                  "prfchw rdrnd sahf sha sse sse2 sse3 sse4_1 sse4_2 sse4a ssse3 vaes vpclmulqdq "
                  "xsave xsavec xsaveopt");
}

/* AVX-512 state not enabled by the OS (a kernel booted without it, some hypervisors): no
 * avx512* names although CPUID reports them; AVX and AVX2 stay. */
TEST(xcr0_without_avx512_state)
{
  struct fp_cpuid_raw raw;
  load(&raw, "zen4-epyc-9004");
  raw.xcr0 = 0x7;
  cleanup_strv char **v = fp_cpuid_decode(&raw);
  for (size_t i = 0; v[i]; i++)
    CHECK(strncmp(v[i], "avx512", 6) != 0);
  CHECK(has(v, "avx2") && has(v, "avx") && has(v, "fma") && has(v, "vaes"));
  CHECK(has(v, "gfni")); /* has SSE encodings */
  CHECK(has(v, "bmi2") && has(v, "sha") && has(v, "rdseed"));

  /* Only two of the three AVX-512 states: still none. */
  raw.xcr0 = 0x67;
  cleanup_strv char **w = fp_cpuid_decode(&raw);
  CHECK(!has(w, "avx512f"));
  raw.xcr0 = 0xe7;
  cleanup_strv char **x = fp_cpuid_decode(&raw);
  CHECK(has(x, "avx512f") && has(x, "avx512bf16"));
}

TEST(xcr0_without_avx_state)
{
  struct fp_cpuid_raw raw;
  load(&raw, "turin-vm");
  raw.xcr0 = 0x3; /* x87 and SSE only */
  cleanup_strv char **v = fp_cpuid_decode(&raw);
  static const char *const gone[] = {"avx",     "avx2",     "fma",  "f16c",       "avxvnni",
                                     "avx512f", "avx512vl", "vaes", "vpclmulqdq", NULL};
  for (size_t i = 0; gone[i]; i++)
    if (has(v, gone[i]))
      th_fail(__FILE__, __LINE__, "%s decoded without AVX state in XCR0", gone[i]);
  CHECK(has(v, "sse4_2") && has(v, "bmi") && has(v, "osxsave") && has(v, "xsave"));
}

TEST(no_osxsave)
{
  struct fp_cpuid_raw raw;
  load(&raw, "skylake-sp");
  const uint32_t *l1 = fp_cpuid_raw_get(&raw, 1, 0);
  CHECK(l1 != NULL);
  /* CR4.OSXSAVE clear: XCR0 cannot be read, whatever the dump says it holds. */
  fp_cpuid_raw_set(&raw, 1, 0, l1[0], l1[1], l1[2] & ~(1u << 27), l1[3]);
  raw.xcr0 = 0x2e7;
  cleanup_strv char **v = fp_cpuid_decode(&raw);
  CHECK(!has(v, "osxsave") && !has(v, "xsave") && !has(v, "xsaveopt") && !has(v, "xsavec"));
  CHECK(!has(v, "avx") && !has(v, "avx2") && !has(v, "avx512f"));
  CHECK(has(v, "sse4_2") && has(v, "aes") && has(v, "rdseed"));
}

/* Sapphire Rapids-like AMX bits: usable only with the tile states (XCR0 bits 17, 18). */
TEST(amx_needs_tile_state)
{
  struct fp_cpuid_raw raw;
  load(&raw, "icelake-server");
  const uint32_t *l7 = fp_cpuid_raw_get(&raw, 7, 0);
  CHECK(l7 != NULL);
  uint32_t edx = l7[3] | (1u << 22) | (1u << 24) | (1u << 25) | (1u << 23); /* AMX, FP16 */
  fp_cpuid_raw_set(&raw, 7, 0, 1, l7[1], l7[2], edx);
  fp_cpuid_raw_set(&raw, 7, 1, 1u << 4 | 1u << 5, 0, 0, 0); /* AVX-VNNI, AVX512_BF16 */
  raw.xcr0 = 0xe7;
  cleanup_strv char **v = fp_cpuid_decode(&raw);
  CHECK(!has(v, "amx_tile") && !has(v, "amx_int8") && !has(v, "amx_bf16"));
  CHECK(has(v, "avx512fp16") && has(v, "avxvnni") && has(v, "avx512bf16"));
  raw.xcr0 = 0x600e7;
  cleanup_strv char **w = fp_cpuid_decode(&raw);
  CHECK(has(w, "amx_tile") && has(w, "amx_int8") && has(w, "amx_bf16"));
}

/* CPUs answer leaves above their maximum with other data: such leaves must not count. */
TEST(leaves_above_maximum_ignored)
{
  struct fp_cpuid_raw raw;
  load(&raw, "broadwell-ep");
  const uint32_t *l0 = fp_cpuid_raw_get(&raw, 0, 0);
  fp_cpuid_raw_set(&raw, 0, 0, 6, l0[1], l0[2], l0[3]);
  cleanup_strv char **v = fp_cpuid_decode(&raw);
  CHECK(!has(v, "avx2") && !has(v, "bmi") && !has(v, "rdseed") && !has(v, "xsaveopt"));
  CHECK(has(v, "avx") && has(v, "sahf"));

  /* Subleaf 1 of leaf 7 only when 7.0 EAX says it exists. */
  load(&raw, "zen4-epyc-9004");
  const uint32_t *l7 = fp_cpuid_raw_get(&raw, 7, 0);
  fp_cpuid_raw_set(&raw, 7, 0, 0, l7[1], l7[2], l7[3]);
  cleanup_strv char **w = fp_cpuid_decode(&raw);
  CHECK(!has(w, "avx512bf16") && has(w, "avx512f"));

  /* Extended leaves above 0x80000000's maximum. */
  load(&raw, "zen2-epyc-7002");
  const uint32_t *e0 = fp_cpuid_raw_get(&raw, 0x80000000u, 0);
  fp_cpuid_raw_set(&raw, 0x80000000u, 0, 0x80000001u, e0[1], e0[2], e0[3]);
  cleanup_strv char **x = fp_cpuid_decode(&raw);
  CHECK(!has(x, "clzero") && !has(x, "wbnoinvd") && has(x, "sse4a"));
}

TEST(empty_dump)
{
  struct fp_cpuid_raw raw;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_cpuid_raw_parse(&raw, "# nothing\n\n", &err), 0);
  cleanup_strv char **v = fp_cpuid_decode(&raw);
  CHECK(v != NULL);
  CHECK_NULL(v[0]);
}

/* Raw pku needs OSPKE as well: RDPKRU/WRPKRU fault while CR4.PKE is clear. Fails before the
 * fix, which reported PKU from CPUID.7.0:ECX bit 3 alone. */
TEST(pku_needs_ospke)
{
  struct fp_cpuid_raw raw = {0};
  fp_cpuid_raw_set(&raw, 0, 0, 7, 0, 0, 0);
  fp_cpuid_raw_set(&raw, 7, 0, 0, 0, 1u << 3, 0);
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s, "");
  fp_cpuid_raw_set(&raw, 7, 0, 0, 0, (1u << 3) | (1u << 4), 0);
  cleanup_free char *s2 = decode_str(&raw);
  CHECK_STR_EQ(s2, "pku");
  /* OSPKE without PKU cannot happen; it says nothing on its own. */
  fp_cpuid_raw_set(&raw, 7, 0, 0, 0, 1u << 4, 0);
  cleanup_free char *s3 = decode_str(&raw);
  CHECK_STR_EQ(s3, "");
}

/* PREFETCHW comes from CPUID.80000001h:ECX bit 8 only, as GCC reads it; 3DNow! (EDX bit 31)
 * is 3dnow and nothing more. Fails before the fix, which also inferred prfchw from 3DNow!. */
TEST(prfchw_not_from_3dnow)
{
  struct fp_cpuid_raw raw = {0};
  fp_cpuid_raw_set(&raw, 0x80000000u, 0, 0x80000001u, 0, 0, 0);
  fp_cpuid_raw_set(&raw, 0x80000001u, 0, 0, 0, 0, (1u << 31) | (1u << 30));
  cleanup_free char *s = decode_str(&raw);
  CHECK_STR_EQ(s, "3dnow 3dnow_a");
  fp_cpuid_raw_set(&raw, 0x80000001u, 0, 0, 0, 1u << 8, 0);
  cleanup_free char *s2 = decode_str(&raw);
  CHECK_STR_EQ(s2, "prfchw");
}

TEST(parse_errors)
{
  struct fp_cpuid_raw raw;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_cpuid_raw_parse(&raw, "1 0 1 2 3\n", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "line 1");
  CHECK_INT_EQ(fp_cpuid_raw_parse(&raw, "# c\n1 0 1 2 3 4 5\n", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "line 2");
  CHECK_INT_EQ(fp_cpuid_raw_parse(&raw, "1 0 1 2 3 1ffffffff\n", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "32 bits");
  CHECK_INT_EQ(fp_cpuid_raw_parse(&raw, "1 0 1 2 3 -4\n", &err), FPULL_EUSAGE);
  CHECK_INT_EQ(fp_cpuid_raw_parse(&raw, "1 0 1 2 3 4x\n", &err), FPULL_EUSAGE);
  CHECK_INT_EQ(fp_cpuid_raw_parse(&raw, "xcr0\n", &err), FPULL_EUSAGE);
  CHECK_INT_EQ(fp_cpuid_raw_parse(&raw, "xcr0 7 8\n", &err), FPULL_EUSAGE);

  CHECK_INT_EQ(fp_cpuid_raw_parse(&raw, "  1 0 0x1 2 3 4 # comment\nxcr0 0xe7\n1 0 5 6 7 8", &err),
               0);
  CHECK_INT_EQ(raw.n, 1); /* the second leaf 1 replaced the first */
  CHECK_INT_EQ(fp_cpuid_raw_get(&raw, 1, 0)[FP_EDX], 8);
  CHECK_INT_EQ(raw.xcr0, 0xe7);
  CHECK_NULL(fp_cpuid_raw_get(&raw, 1, 1));
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* fp_cpuid_known_isa is sorted and is exactly what a CPU with every bit set decodes to. */
TEST(known_isa_is_what_decodes)
{
  const char *const *k = fp_cpuid_known_isa();
  size_t n = 0;
  for (; k[n]; n++)
    if (n > 0 && strcmp(k[n - 1], k[n]) >= 0)
      th_fail(__FILE__, __LINE__, "known list not sorted at %s", k[n]);
  CHECK(n > 80);

  struct fp_cpuid_raw raw = {0};
  static const uint32_t leaves[][2] = {
      {0, 0},    {1, 0},           {7, 0},           {7, 1},           {0xd, 1},        {0x14, 0},
      {0x19, 0}, {0x80000000u, 0}, {0x80000001u, 0}, {0x80000008u, 0}, {0x80000021u, 0}};
  for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++)
    fp_cpuid_raw_set(&raw, leaves[i][0], leaves[i][1], ~0u, ~0u, ~0u, ~0u);
  raw.xcr0 = ~0ull;
  cleanup_strv char **v = fp_cpuid_decode(&raw);
  CHECK_INT_EQ(fpull_strv_len(v), n);
  for (size_t i = 0; i < n; i++)
    CHECK_STR_EQ(v[i], k[i]);
  (void)cmp_str;
}

/* Every ISA macro GCC defines for any -march it accepts has a decodable name (the names of
 * data/cputags.yaml come from those macros). Needs GCC 12, whose list this is. */
TEST(covers_every_gcc12_isa_macro)
{
  FILE *p = popen("gcc -dumpversion 2>/dev/null", "r");
  char ver[32] = "";
  if (p) {
    if (!fgets(ver, sizeof ver, p))
      ver[0] = '\0';
    pclose(p);
  }
  if (atoi(ver) != 12) {
    fprintf(stderr, "gcc 12 not found (\"%s\"): nothing to compare with\n", ver);
    return;
  }
  p = popen("for f in -m64 -m32; do "
            "  ms=$(LC_ALL=C gcc $f -march=no-such-cpu -E -x c /dev/null 2>&1 | "
            "       sed -n 's/.*valid arguments to .-march=. switch are: //p'); "
            "  for m in $ms; do [ $m = native ] || gcc $f -march=$m -dM -E -x c /dev/null; done; "
            "done | sort -u",
            "r");
  CHECK(p != NULL);
  static const char *const not_isa[] = {"DECIMAL_BID_FORMAT",
                                        "ELF",
                                        "GCC_ASM_FLAG_OUTPUTS",
                                        "GNUC_STDC_INLINE",
                                        "ILP32",
                                        "LP64",
                                        "MMX_WITH_SSE",
                                        "NO_INLINE",
                                        "SSE_MATH",
                                        "SSE2_MATH",
                                        "CET",
                                        "SEG_FS",
                                        "SEG_GS",
                                        "CHAR_UNSIGNED",
                                        "OPTIMIZE",
                                        NULL};
  const char *const *known = fp_cpuid_known_isa();
  char line[512];
  int checked = 0;
  struct fp_buf missing = {0};
  while (fgets(line, sizeof line, p)) {
    /* Only "#define __NAME__ 1": the feature macros. */
    char name[128];
    size_t len = strlen(line);
    if (strncmp(line, "#define __", 10) != 0 || len < 16 || strcmp(line + len - 5, "__ 1\n") != 0 ||
        len - 15 >= sizeof name)
      continue;
    memcpy(name, line + 10, len - 15);
    name[len - 15] = '\0';
    if (strchr(name, ' '))
      continue;
    int upper = 0, skip = 0;
    for (char *c = name; *c; c++)
      upper |= (*c >= 'A' && *c <= 'Z');
    if (!upper || strstr(name, "_HAS_") || strncmp(name, "STDC", 4) == 0)
      continue; /* -march names (__haswell__, __tune_k8__), float properties, standards */
    for (size_t i = 0; not_isa[i]; i++)
      skip |= strcmp(name, not_isa[i]) == 0;
    if (skip)
      continue;
    cleanup_free char *isa = fp_xstrdup_lower(name);
    if (strcmp(isa, "lahf_sahf") == 0) /* the tag table calls it sahf */
      strcpy(isa, "sahf");
    int found = 0;
    for (size_t i = 0; known[i] && !found; i++)
      found = strcmp(known[i], isa) == 0;
    if (!found) {
      fp_buf_append(&missing, " ", 1);
      fp_buf_append(&missing, isa, strlen(isa));
    }
    checked++;
  }
  pclose(p);
  if (missing.len)
    th_fail(__FILE__, __LINE__, "not decodable:%s", missing.data);
  CHECK(checked > 70);
}

TEST(host_detection)
{
  unsetenv("FPULL_CPUID_FILE");
  fpull_err err = {0};
  struct fpull_cpu_info *ci = NULL;
  CHECK_INT_EQ(fpull_detect_cpu(&ci, &err), 0);
  CHECK(ci && ci->architecture && ci->isa);
#if defined(__x86_64__)
  CHECK_STR_EQ(ci->architecture, "amd64");
  CHECK(ci->vendor != NULL && strlen(ci->vendor) == 12);
  /* Every x86-64 CPU has SSE2; every name is one the decoder documents. */
  CHECK(has(ci->isa, "sse2") && has(ci->isa, "fxsr"));
  const char *const *known = fp_cpuid_known_isa();
  for (size_t i = 0; ci->isa[i]; i++) {
    int found = 0;
    for (size_t j = 0; known[j] && !found; j++)
      found = strcmp(known[j], ci->isa[i]) == 0;
    CHECK(found);
  }
  CHECK_NULL(ci->variant);
#elif defined(__aarch64__)
  CHECK_STR_EQ(ci->architecture, "arm64");
  CHECK_STR_EQ(ci->variant, "v8");
#endif
  fpull_cpu_info_free(ci);
}

TEST(cpuid_file_override)
{
  setenv("FPULL_CPUID_FILE", th_src("tests/fixtures/cpuid/skylake-sp.txt"), 1);
  fpull_err err = {0};
  struct fpull_cpu_info *ci = NULL;
  CHECK_INT_EQ(fpull_detect_cpu(&ci, &err), 0);
#if defined(__x86_64__) || defined(__i386__)
  CHECK_STR_EQ(ci->vendor, "GenuineIntel");
  CHECK(has(ci->isa, "avx512f") && has(ci->isa, "clwb") && !has(ci->isa, "avx512vnni"));
  fpull_cpu_info_free(ci);

  setenv("FPULL_CPUID_FILE", "/nonexistent/dump.txt", 1);
  ci = NULL;
  CHECK_INT_EQ(fpull_detect_cpu(&ci, &err), FPULL_EUSAGE);
  CHECK_NULL(ci);
  CHECK_CONTAINS(err.msg, "/nonexistent/dump.txt");
#else
  fpull_cpu_info_free(ci);
#endif
  unsetenv("FPULL_CPUID_FILE");
}

/* End to end on this project's machines (recorded in turin-vm.txt): a Turin-like VM that masks
 * RDSEED and hides MWAITX, RDPID and PREFETCHI, all reached only through intrinsics: znver5 and
 * everything below it (before issue 33: haswell at most, since RDSEED gated broadwell). The raw
 * rdseed flag stays absent: a tag does not lend the flags that do not gate it. */
TEST(turin_vm_tags)
{
#if defined(__x86_64__)
  setenv("FPULL_CPUID_FILE", th_src("tests/fixtures/cpuid/turin-vm.txt"), 1);
  setenv("FPULL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  setenv("FPULL_NVIDIA_PROC_VERSION", "/nonexistent/version", 1);
  fpull_err err = {0};
  struct fpull_tagdb *db = NULL;
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "tag table: %s", err.msg);
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION, .tagdb = db};
  struct fpull_target *t = NULL;
  if (fpull_target_build(&t, &o, &err))
    th_fail(__FILE__, __LINE__, "target: %s", err.msg);
  CHECK(fpull_featureset_has(t->features, "x86-64-v4", db));
  CHECK(fpull_featureset_has(t->features, "x86-64-v3", db));
  CHECK(fpull_featureset_has(t->features, "x86-64-v2", db));
  CHECK(fpull_featureset_has(t->features, "haswell", db));
  CHECK(fpull_featureset_has(t->features, "avx512f", db));
  static const char *const turin[] = {"broadwell", "skylake-avx512", "icelake-server",
                                      "znver1",    "znver3",         "znver5"};
  for (size_t i = 0; i < sizeof turin / sizeof *turin; i++)
    if (!fpull_featureset_has(t->features, turin[i], db))
      th_fail(__FILE__, __LINE__, "%s missing on the Turin-like VM", turin[i]);
  static const char *const absent[] = {"rdseed", "mwaitx", "sapphirerapids", NULL};
  for (size_t i = 0; absent[i]; i++)
    if (fpull_featureset_has(t->features, absent[i], db))
      th_fail(__FILE__, __LINE__, "%s detected on the Turin-like VM", absent[i]);
  CHECK_STR_EQ(t->variant, "v4");
  fpull_target_free(t);

  /* The same table on the Zen 4 dump: everything up to znver4. */
  setenv("FPULL_CPUID_FILE", th_src("tests/fixtures/cpuid/zen4-epyc-9004.txt"), 1);
  t = NULL;
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), 0);
  CHECK(fpull_featureset_has(t->features, "znver4", db));
  CHECK(fpull_featureset_has(t->features, "broadwell", db));
  CHECK(fpull_featureset_has(t->features, "skylake-avx512", db));
  CHECK(!fpull_featureset_has(t->features, "sapphirerapids", db));
  fpull_target_free(t);

  /* Zen 5: znver5 and everything below it, none of Intel's AMX line. */
  setenv("FPULL_CPUID_FILE", th_src("tests/fixtures/cpuid/zen5-epyc-9005.txt"), 1);
  t = NULL;
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), 0);
  /* k8 needs 3DNow!, which Zen dropped; bdver1 needs FMA4 and XOP. */
  static const char *const zen5_yes[] = {"znver5", "zen5",  "znver4",    "tigerlake",
                                         "btver2", "core2", "x86-64-v4", NULL};
  static const char *const zen5_no[] = {
      "sapphirerapids", "graniterapids", "lunarlake", "bdver1", "k8", NULL};
  for (size_t i = 0; zen5_yes[i]; i++)
    if (!fpull_featureset_has(t->features, zen5_yes[i], db))
      th_fail(__FILE__, __LINE__, "Zen 5: %s missing", zen5_yes[i]);
  for (size_t i = 0; zen5_no[i]; i++)
    if (fpull_featureset_has(t->features, zen5_no[i], db))
      th_fail(__FILE__, __LINE__, "Zen 5: %s present", zen5_no[i]);
  fpull_target_free(t);

  /* Granite Rapids: graniterapids, emeraldrapids and sapphirerapids (without the
   * AVX512_VP2INTERSECT of gcc 12.2's table, which no Sapphire Rapids part has). */
  setenv("FPULL_CPUID_FILE", th_src("tests/fixtures/cpuid/graniterapids.txt"), 1);
  t = NULL;
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), 0);
  static const char *const gnr_yes[] = {"graniterapids",
                                        "emeraldrapids",
                                        "sapphirerapids",
                                        "alderlake",
                                        "cooperlake",
                                        "x86-64-v4",
                                        NULL};
  static const char *const gnr_no[] = {"tigerlake", "znver4", "sierraforest", "lunarlake", NULL};
  for (size_t i = 0; gnr_yes[i]; i++)
    if (!fpull_featureset_has(t->features, gnr_yes[i], db))
      th_fail(__FILE__, __LINE__, "Granite Rapids: %s missing", gnr_yes[i]);
  for (size_t i = 0; gnr_no[i]; i++)
    if (fpull_featureset_has(t->features, gnr_no[i], db))
      th_fail(__FILE__, __LINE__, "Granite Rapids: %s present", gnr_no[i]);
  fpull_target_free(t);

  /* Broadwell-EP: broadwell, no skylake, no x86-64-v4. */
  setenv("FPULL_CPUID_FILE", th_src("tests/fixtures/cpuid/broadwell-ep.txt"), 1);
  t = NULL;
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), 0);
  CHECK(fpull_featureset_has(t->features, "broadwell", db));
  CHECK(fpull_featureset_has(t->features, "x86-64-v3", db));
  CHECK(!fpull_featureset_has(t->features, "x86-64-v4", db));
  CHECK(!fpull_featureset_has(t->features, "skylake", db));
  CHECK_STR_EQ(t->variant, "v3");
  fpull_target_free(t);
  fpull_tagdb_free(db);
  unsetenv("FPULL_CPUID_FILE");
#endif
}

/* Every extension the shipped tag table names can be decoded, or its tag could never be
 * detected. */
TEST(tag_table_names_are_decodable)
{
  fpull_err err = {0};
  struct fpull_tagdb *db = NULL;
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "tag table: %s", err.msg);
  const char *const *tags = fpull_tagdb_tags(db, "amd64");
  CHECK(tags && tags[0]);
  const char *const *known = fp_cpuid_known_isa();
  size_t n_tags = 0;
  for (; tags[n_tags]; n_tags++) {
    const char *const *isa = fpull_tagdb_isa(db, tags[n_tags]);
    CHECK(isa != NULL);
    for (size_t i = 0; isa[i]; i++) {
      int found = 0;
      for (size_t j = 0; known[j] && !found; j++)
        found = strcmp(known[j], isa[i]) == 0;
      if (!found)
        th_fail(__FILE__, __LINE__, "tag %s: %s is not decodable", tags[n_tags], isa[i]);
    }
  }
  CHECK(n_tags > 20);
  fpull_tagdb_free(db);
}

/* The CPUs HPC users rent or run, as bare metal and as cloud VMs (tests/fixtures/cpuid, each
 * file says where its bits come from and why these tags): the best tag is the one GCC's
 * -march=native names, and a hypervisor that hides intrinsic-only instructions (MWAITX,
 * MONITOR, PTWRITE, WAITPKG) takes no tag away. Before issue 33 the VMs lost every znver tag
 * (MWAITX gated them) and sapphirerapids (PTWRITE, WAITPKG and gcc 12.2's VP2INTERSECT). */
static const struct {
  const char *fixture, *best, *variant;
  const char *yes[6], *no[4];
} real_cpus[] = {
    {"zen3-epyc-7003", "znver3", "v3", {"znver2", "broadwell"}, {"znver4", "x86-64-v4"}},
    {"milan-vm", "znver3", "v3", {"znver2", "znver1", "haswell"}, {"znver4", "mwaitx"}},
    {"milan-x", "znver3", "v3", {"znver2"}, {"znver4"}},
    {"zen4-epyc-9004", "znver4", "v4", {"znver3", "icelake-server"}, {"znver5"}},
    {"genoa-vm", "znver4", "v4", {"znver3", "skylake-avx512"}, {"znver5", "mwaitx"}},
    {"genoa-x", "znver4", "v4", {"znver3"}, {"znver5"}},
    {"bergamo", "znver4", "v4", {"znver3"}, {"znver5"}},
    {"icelake-server",
     "icelake-server",
     "v4",
     {"cascadelake", "icelake-client"},
     {"tigerlake", "sapphirerapids"}},
    {"icelake-sp",
     "icelake-server",
     "v4",
     {"cascadelake", "skylake-avx512"},
     {"tigerlake", "sapphirerapids"}},
    {"sapphirerapids",
     "sapphirerapids",
     "v4",
     {"emeraldrapids", "alderlake", "icelake-server"},
     {"graniterapids", "tigerlake", "znver4"}},
    {"sapphirerapids-vm",
     "sapphirerapids",
     "v4",
     {"emeraldrapids", "cooperlake"},
     {"graniterapids", "ptwrite", "waitpkg"}},
    {"emeraldrapids",
     "sapphirerapids",
     "v4",
     {"emeraldrapids", "icelake-server"},
     {"graniterapids"}},
};

TEST(real_cpu_tags)
{
#if defined(__x86_64__)
  setenv("FPULL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  setenv("FPULL_NVIDIA_PROC_VERSION", "/nonexistent/version", 1);
  fpull_err err = {0};
  struct fpull_tagdb *db = NULL;
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "tag table: %s", err.msg);
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION, .tagdb = db};
  for (size_t c = 0; c < sizeof real_cpus / sizeof *real_cpus; c++) {
    char rel[128];
    snprintf(rel, sizeof rel, "tests/fixtures/cpuid/%s.txt", real_cpus[c].fixture);
    setenv("FPULL_CPUID_FILE", th_src(rel), 1);
    struct fpull_target *t = NULL;
    if (fpull_target_build(&t, &o, &err)) {
      th_fail(__FILE__, __LINE__, "%s: %s", real_cpus[c].fixture, err.msg);
      continue;
    }
    /* The best tag: the largest ISA set among the tags present (what features prints). */
    const char *const *tags = fpull_tagdb_tags(db, "amd64");
    const char *best = NULL;
    size_t best_n = 0;
    for (size_t i = 0; tags[i]; i++) {
      size_t n = fpull_strv_len((char *const *)fpull_tagdb_isa(db, tags[i]));
      if (strncmp(tags[i], "x86-64-", 7) != 0 && n > best_n &&
          fpull_featureset_has(t->features, tags[i], db))
        best = tags[i], best_n = n;
    }
    if (!best || strcmp(best, real_cpus[c].best) != 0)
      th_fail(__FILE__, __LINE__, "%s: best tag %s, want %s", real_cpus[c].fixture,
              best ? best : "none", real_cpus[c].best);
    if (!t->variant || strcmp(t->variant, real_cpus[c].variant) != 0)
      th_fail(__FILE__, __LINE__, "%s: variant %s, want %s", real_cpus[c].fixture,
              t->variant ? t->variant : "none", real_cpus[c].variant);
    for (size_t i = 0; i < 6 && real_cpus[c].yes[i]; i++)
      if (!fpull_featureset_has(t->features, real_cpus[c].yes[i], db))
        th_fail(__FILE__, __LINE__, "%s: %s missing", real_cpus[c].fixture, real_cpus[c].yes[i]);
    for (size_t i = 0; i < 4 && real_cpus[c].no[i]; i++)
      if (fpull_featureset_has(t->features, real_cpus[c].no[i], db))
        th_fail(__FILE__, __LINE__, "%s: %s present", real_cpus[c].fixture, real_cpus[c].no[i]);
    fpull_target_free(t);
  }
  fpull_tagdb_free(db);
  unsetenv("FPULL_CPUID_FILE");
#endif
}

/* The table's intrinsic-only extensions never gate; the extensions code computes with do. */
TEST(intrinsic_only_gates_nothing)
{
  fpull_err err = {0};
  struct fpull_tagdb *db = NULL;
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "tag table: %s", err.msg);
  static const char *const never[] = {"mwaitx", "waitpkg", "ptwrite", "rdseed", "MWAITX", NULL};
  for (size_t i = 0; never[i]; i++)
    if (fpull_tagdb_isa_gates(db, never[i]))
      th_fail(__FILE__, __LINE__, "%s gates", never[i]);
  static const char *const always[] = {"avx512f",  "sha", "aes", "avx512vp2intersect",
                                       "amx_tile", NULL};
  for (size_t i = 0; always[i]; i++)
    if (!fpull_tagdb_isa_gates(db, always[i]))
      th_fail(__FILE__, __LINE__, "%s does not gate", always[i]);
  /* gcc 12.2's sapphirerapids had AVX512_VP2INTERSECT; the table follows gcc 12.3/13.1. */
  const char *const *spr = fpull_tagdb_isa(db, "sapphirerapids");
  CHECK(spr != NULL);
  for (size_t i = 0; spr && spr[i]; i++)
    if (strcmp(spr[i], "avx512vp2intersect") == 0)
      th_fail(__FILE__, __LINE__, "sapphirerapids lists avx512vp2intersect");
  fpull_tagdb_free(db);
}
