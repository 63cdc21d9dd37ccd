/* Decodes raw CPUID leaves and XCR0 into ISA extension names.
 *
 * Bit positions: Intel SDM vol. 2A, "CPUID" (table 3-8 onwards) and AMD APM vol. 3,
 * appendix E. Names are GCC's feature macros in lower case (see data/cputags.yaml).
 * Only CPUID and XCR0 count: codenames and /proc/cpuinfo lie on virtual machines. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cpuid.h"
#include "base/util.h"

/* What the OS must have enabled in XCR0 before an instruction group is usable. */
enum need {
  NEED_NONE = 0,
  NEED_XSAVE,  /* CR4.OSXSAVE: XSAVE* and XGETBV fault without it */
  NEED_AVX,    /* XCR0 SSE|AVX (bits 1, 2) */
  NEED_AVX512, /* plus opmask, ZMM_Hi256, Hi16_ZMM (bits 5, 6, 7) */
  NEED_AMX,    /* plus XTILECFG, XTILEDATA (bits 17, 18) */
};

struct bit {
  uint32_t leaf, subleaf;
  unsigned char reg, bit, need;
  const char *name;
};

#define EXT 0x80000000u

static const struct bit bits[] = {
    {1, 0, FP_ECX, 0, NEED_NONE, "sse3"},
    {1, 0, FP_ECX, 1, NEED_NONE, "pclmul"},
    {1, 0, FP_ECX, 9, NEED_NONE, "ssse3"},
    {1, 0, FP_ECX, 12, NEED_AVX, "fma"},
    {1, 0, FP_ECX, 13, NEED_NONE, "cx16"},
    {1, 0, FP_ECX, 19, NEED_NONE, "sse4_1"},
    {1, 0, FP_ECX, 20, NEED_NONE, "sse4_2"},
    {1, 0, FP_ECX, 20, NEED_NONE, "crc32"}, /* the CRC32 instruction is part of SSE4.2 */
    {1, 0, FP_ECX, 22, NEED_NONE, "movbe"},
    {1, 0, FP_ECX, 23, NEED_NONE, "popcnt"},
    {1, 0, FP_ECX, 25, NEED_NONE, "aes"},
    {1, 0, FP_ECX, 26, NEED_XSAVE, "xsave"},
    {1, 0, FP_ECX, 27, NEED_XSAVE, "osxsave"},
    {1, 0, FP_ECX, 28, NEED_AVX, "avx"},
    {1, 0, FP_ECX, 29, NEED_AVX, "f16c"},
    {1, 0, FP_ECX, 30, NEED_NONE, "rdrnd"},
    {1, 0, FP_EDX, 23, NEED_NONE, "mmx"},
    {1, 0, FP_EDX, 24, NEED_NONE, "fxsr"},
    {1, 0, FP_EDX, 25, NEED_NONE, "sse"},
    {1, 0, FP_EDX, 26, NEED_NONE, "sse2"},

    {7, 0, FP_EBX, 0, NEED_NONE, "fsgsbase"},
    {7, 0, FP_EBX, 2, NEED_NONE, "sgx"},
    {7, 0, FP_EBX, 3, NEED_NONE, "bmi"},
    {7, 0, FP_EBX, 4, NEED_NONE, "hle"},
    {7, 0, FP_EBX, 5, NEED_AVX, "avx2"},
    {7, 0, FP_EBX, 8, NEED_NONE, "bmi2"},
    {7, 0, FP_EBX, 11, NEED_NONE, "rtm"},
    {7, 0, FP_EBX, 16, NEED_AVX512, "avx512f"},
    {7, 0, FP_EBX, 17, NEED_AVX512, "avx512dq"},
    {7, 0, FP_EBX, 18, NEED_NONE, "rdseed"},
    {7, 0, FP_EBX, 19, NEED_NONE, "adx"},
    {7, 0, FP_EBX, 21, NEED_AVX512, "avx512ifma"},
    {7, 0, FP_EBX, 23, NEED_NONE, "clflushopt"},
    {7, 0, FP_EBX, 24, NEED_NONE, "clwb"},
    {7, 0, FP_EBX, 26, NEED_AVX512, "avx512pf"},
    {7, 0, FP_EBX, 27, NEED_AVX512, "avx512er"},
    {7, 0, FP_EBX, 28, NEED_AVX512, "avx512cd"},
    {7, 0, FP_EBX, 29, NEED_NONE, "sha"},
    {7, 0, FP_EBX, 30, NEED_AVX512, "avx512bw"},
    {7, 0, FP_EBX, 31, NEED_AVX512, "avx512vl"},
    {7, 0, FP_ECX, 0, NEED_NONE, "prefetchwt1"},
    {7, 0, FP_ECX, 1, NEED_AVX512, "avx512vbmi"},
    /* PKU (bit 3) counts only with OSPKE (bit 4), checked below: RDPKRU/WRPKRU fault
     * while CR4.PKE is clear. */
    {7, 0, FP_ECX, 5, NEED_NONE, "waitpkg"},
    {7, 0, FP_ECX, 6, NEED_AVX512, "avx512vbmi2"},
    {7, 0, FP_ECX, 8, NEED_NONE, "gfni"}, /* has SSE encodings besides the VEX/EVEX ones */
    /* VEX/EVEX only: without YMM state they cannot run at all. */
    {7, 0, FP_ECX, 9, NEED_AVX, "vaes"},
    {7, 0, FP_ECX, 10, NEED_AVX, "vpclmulqdq"},
    {7, 0, FP_ECX, 11, NEED_AVX512, "avx512vnni"},
    {7, 0, FP_ECX, 12, NEED_AVX512, "avx512bitalg"},
    {7, 0, FP_ECX, 14, NEED_AVX512, "avx512vpopcntdq"},
    {7, 0, FP_ECX, 22, NEED_NONE, "rdpid"},
    {7, 0, FP_ECX, 25, NEED_NONE, "cldemote"},
    {7, 0, FP_ECX, 27, NEED_NONE, "movdiri"},
    {7, 0, FP_ECX, 28, NEED_NONE, "movdir64b"},
    {7, 0, FP_ECX, 29, NEED_NONE, "enqcmd"},
    {7, 0, FP_EDX, 2, NEED_AVX512, "avx5124vnniw"},
    {7, 0, FP_EDX, 3, NEED_AVX512, "avx5124fmaps"},
    {7, 0, FP_EDX, 5, NEED_NONE, "uintr"},
    {7, 0, FP_EDX, 8, NEED_AVX512, "avx512vp2intersect"},
    {7, 0, FP_EDX, 14, NEED_NONE, "serialize"},
    {7, 0, FP_EDX, 16, NEED_NONE, "tsxldtrk"},
    {7, 0, FP_EDX, 18, NEED_NONE, "pconfig"},
    {7, 0, FP_EDX, 22, NEED_AMX, "amx_bf16"},
    {7, 0, FP_EDX, 23, NEED_AVX512, "avx512fp16"},
    {7, 0, FP_EDX, 24, NEED_AMX, "amx_tile"},
    {7, 0, FP_EDX, 25, NEED_AMX, "amx_int8"},
    /* SHA512, SM3 and SM4 are VEX-encoded on x86. */
    {7, 1, FP_EAX, 0, NEED_AVX, "sha512"},
    {7, 1, FP_EAX, 1, NEED_AVX, "sm3"},
    {7, 1, FP_EAX, 2, NEED_AVX, "sm4"},
    {7, 1, FP_EAX, 4, NEED_AVX, "avxvnni"},
    {7, 1, FP_EAX, 5, NEED_AVX512, "avx512bf16"},
    {7, 1, FP_EAX, 7, NEED_NONE, "cmpccxadd"},
    {7, 1, FP_EAX, 21, NEED_AMX, "amx_fp16"},
    {7, 1, FP_EAX, 22, NEED_NONE, "hreset"},
    {7, 1, FP_EAX, 23, NEED_AVX, "avxifma"},
    {7, 1, FP_EDX, 4, NEED_AVX, "avxvnniint8"},
    {7, 1, FP_EDX, 5, NEED_AVX, "avxneconvert"},
    {7, 1, FP_EDX, 10, NEED_AVX, "avxvnniint16"},
    {7, 1, FP_EDX, 14, NEED_NONE, "prefetchi"},

    {0xd, 1, FP_EAX, 0, NEED_XSAVE, "xsaveopt"},
    {0xd, 1, FP_EAX, 1, NEED_XSAVE, "xsavec"},
    {0xd, 1, FP_EAX, 3, NEED_XSAVE, "xsaves"},

    {0x14, 0, FP_EBX, 4, NEED_NONE, "ptwrite"},

    /* Key Locker: AESKLE says the AES KL instructions are enabled, WIDE_KL the wide ones.
     * The "kl" name also needs CPUID.7:ECX.KL, checked below. */
    {0x19, 0, FP_EBX, 2, NEED_NONE, "widekl"},

    {EXT | 1, 0, FP_ECX, 0, NEED_NONE, "sahf"}, /* LAHF/SAHF in 64-bit mode */
    /* AMD's ABM bit; Intel reports LZCNT in the same place. */
    {EXT | 1, 0, FP_ECX, 5, NEED_NONE, "abm"},
    {EXT | 1, 0, FP_ECX, 5, NEED_NONE, "lzcnt"},
    {EXT | 1, 0, FP_ECX, 6, NEED_NONE, "sse4a"},
    {EXT | 1, 0, FP_ECX, 8, NEED_NONE, "prfchw"}, /* 3DNowPrefetch: PREFETCHW */
    {EXT | 1, 0, FP_ECX, 11, NEED_AVX, "xop"},
    {EXT | 1, 0, FP_ECX, 15, NEED_NONE, "lwp"},
    {EXT | 1, 0, FP_ECX, 16, NEED_AVX, "fma4"},
    {EXT | 1, 0, FP_ECX, 21, NEED_NONE, "tbm"},
    {EXT | 1, 0, FP_ECX, 29, NEED_NONE, "mwaitx"},
    {EXT | 1, 0, FP_EDX, 30, NEED_NONE, "3dnow_a"},
    /* 3DNow! has a PREFETCHW too, but GCC (-march=native, __builtin_cpu_supports) reads
     * PRFCHW from ECX bit 8 only, and so does this table. */
    {EXT | 1, 0, FP_EDX, 31, NEED_NONE, "3dnow"},

    {EXT | 8, 0, FP_EBX, 0, NEED_NONE, "clzero"},
    /* AMD reports PREFETCHIT0/1 here (Zen 5); Intel in CPUID.(7,1):EDX bit 14 above. */
    {EXT | 0x21, 0, FP_EAX, 20, NEED_NONE, "prefetchi"},
    {EXT | 8, 0, FP_EBX, 9, NEED_NONE, "wbnoinvd"},
};

/* Sorted; a unit test checks that it is exactly what the decoder can produce. */
static const char *const known[] = {
    "3dnow",
    "3dnow_a",
    "abm",
    "adx",
    "aes",
    "amx_bf16",
    "amx_fp16",
    "amx_int8",
    "amx_tile",
    "avx",
    "avx2",
    "avx5124fmaps",
    "avx5124vnniw",
    "avx512bf16",
    "avx512bitalg",
    "avx512bw",
    "avx512cd",
    "avx512dq",
    "avx512er",
    "avx512f",
    "avx512fp16",
    "avx512ifma",
    "avx512pf",
    "avx512vbmi",
    "avx512vbmi2",
    "avx512vl",
    "avx512vnni",
    "avx512vp2intersect",
    "avx512vpopcntdq",
    "avxifma",
    "avxneconvert",
    "avxvnni",
    "avxvnniint16",
    "avxvnniint8",
    "bmi",
    "bmi2",
    "cldemote",
    "clflushopt",
    "clwb",
    "clzero",
    "cmpccxadd",
    "crc32",
    "cx16",
    "enqcmd",
    "f16c",
    "fma",
    "fma4",
    "fsgsbase",
    "fxsr",
    "gfni",
    "hle",
    "hreset",
    "kl",
    "lwp",
    "lzcnt",
    "mmx",
    "movbe",
    "movdir64b",
    "movdiri",
    "mwaitx",
    "osxsave",
    "pclmul",
    "pconfig",
    "pku",
    "popcnt",
    "prefetchi",
    "prefetchwt1",
    "prfchw",
    "ptwrite",
    "rdpid",
    "rdrnd",
    "rdseed",
    "rtm",
    "sahf",
    "serialize",
    "sgx",
    "sha",
    "sha512",
    "sm3",
    "sm4",
    "sse",
    "sse2",
    "sse3",
    "sse4_1",
    "sse4_2",
    "sse4a",
    "ssse3",
    "tbm",
    "tsxldtrk",
    "uintr",
    "vaes",
    "vpclmulqdq",
    "waitpkg",
    "wbnoinvd",
    "widekl",
    "xop",
    "xsave",
    "xsavec",
    "xsaveopt",
    "xsaves",
    NULL,
};

const char *const *fp_cpuid_known_isa(void)
{
  return known;
}

int fp_cpuid_raw_set(struct fp_cpuid_raw *raw, uint32_t leaf, uint32_t subleaf, uint32_t eax,
                     uint32_t ebx, uint32_t ecx, uint32_t edx)
{
  struct fp_cpuid_leaf *l = NULL;
  for (unsigned i = 0; i < raw->n && !l; i++)
    if (raw->leaves[i].leaf == leaf && raw->leaves[i].subleaf == subleaf)
      l = &raw->leaves[i];
  if (!l) {
    if (raw->n >= FP_CPUID_MAX_LEAVES)
      return -1;
    l = &raw->leaves[raw->n++];
  }
  *l = (struct fp_cpuid_leaf){leaf, subleaf, {eax, ebx, ecx, edx}};
  return 0;
}

const uint32_t *fp_cpuid_raw_get(const struct fp_cpuid_raw *raw, uint32_t leaf, uint32_t subleaf)
{
  for (unsigned i = 0; i < raw->n; i++)
    if (raw->leaves[i].leaf == leaf && raw->leaves[i].subleaf == subleaf)
      return raw->leaves[i].r;
  return NULL;
}

/* A register of a leaf the CPU implements, else 0: CPUs answer leaves above their maximum
 * with the data of the highest basic leaf, so a stray value must not count. */
static uint32_t reg(const struct fp_cpuid_raw *raw, uint32_t leaf, uint32_t subleaf, int r)
{
  const uint32_t *max = fp_cpuid_raw_get(raw, leaf & EXT, 0);
  if (max && leaf > max[FP_EAX])
    return 0;
  if (leaf == 7 && subleaf > 0) {
    const uint32_t *l7 = fp_cpuid_raw_get(raw, 7, 0);
    if (!l7 || subleaf > l7[FP_EAX])
      return 0;
  }
  const uint32_t *l = fp_cpuid_raw_get(raw, leaf, subleaf);
  return l ? l[r] : 0;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char **fp_cpuid_decode(const struct fp_cpuid_raw *raw)
{
  /* Without CR4.OSXSAVE, XGETBV faults and XCR0 says nothing: no AVX state then. */
  int osxsave = (reg(raw, 1, 0, FP_ECX) >> 27) & 1;
  uint64_t xcr0 = osxsave ? raw->xcr0 : 0;
  int ok[] = {
      [NEED_NONE] = 1,
      [NEED_XSAVE] = osxsave,
      [NEED_AVX] = (xcr0 & 0x6) == 0x6,
      [NEED_AVX512] = (xcr0 & 0xe6) == 0xe6,
      [NEED_AMX] = (xcr0 & 0x60006) == 0x60006,
  };

  char **v = fp_xcalloc(1, sizeof *v);
  for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
    const struct bit *b = &bits[i];
    if (!ok[b->need] || !((reg(raw, b->leaf, b->subleaf, b->reg) >> b->bit) & 1))
      continue;
    if (!fp_strv_contains(v, b->name))
      v = fp_strv_push(v, b->name);
  }
  if (((reg(raw, 7, 0, FP_ECX) >> 3) & 1) && ((reg(raw, 7, 0, FP_ECX) >> 4) & 1))
    v = fp_strv_push(v, "pku");
  if (((reg(raw, 7, 0, FP_ECX) >> 23) & 1) && (reg(raw, 0x19, 0, FP_EBX) & 1))
    v = fp_strv_push(v, "kl");
  /* WIDE_KL without KL itself is not usable. */
  if (!fp_strv_contains(v, "kl") && fp_strv_contains(v, "widekl")) {
    size_t n = fpull_strv_len(v), j = 0;
    for (size_t i = 0; i < n; i++) {
      if (strcmp(v[i], "widekl") == 0)
        free(v[i]);
      else
        v[j++] = v[i];
    }
    v[j] = NULL;
  }
  qsort(v, fpull_strv_len(v), sizeof *v, cmp_str);
  return v;
}

static int parse_u64(const char **p, uint64_t *out)
{
  while (**p == ' ' || **p == '\t')
    (*p)++;
  if (!isxdigit((unsigned char)**p))
    return -1;
  char *end;
  unsigned long long v = strtoull(*p, &end, 16);
  if (end == *p || (*end && *end != ' ' && *end != '\t' && *end != '\n' && *end != '#'))
    return -1;
  *p = end;
  *out = v;
  return 0;
}

int fp_cpuid_raw_parse(struct fp_cpuid_raw *out, const char *text, fpull_err *err)
{
  memset(out, 0, sizeof *out);
  int lineno = 0;
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    const char *next = nl ? nl + 1 : NULL;
    lineno++;
    const char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p == '#' || *p == '\n' || !*p) {
      line = next;
      continue;
    }
    uint64_t v[6];
    int n = 0;
    if (strncmp(p, "xcr0", 4) == 0) {
      p += 4;
      if (parse_u64(&p, &v[0]) < 0)
        return fpull_err_set(err, FPULL_EUSAGE, "line %d: bad xcr0 value", lineno);
      out->xcr0 = v[0];
      n = 6;
    } else {
      while (n < 6 && parse_u64(&p, &v[n]) == 0)
        n++;
      if (n != 6)
        return fpull_err_set(err, FPULL_EUSAGE,
                             "line %d: want LEAF SUBLEAF EAX EBX ECX EDX in hexadecimal", lineno);
      for (int i = 0; i < 6; i++)
        if (v[i] > UINT32_MAX)
          return fpull_err_set(err, FPULL_EUSAGE, "line %d: value over 32 bits", lineno);
      if (fp_cpuid_raw_set(out, (uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2], (uint32_t)v[3],
                           (uint32_t)v[4], (uint32_t)v[5]) < 0)
        return fpull_err_set(err, FPULL_EUSAGE, "line %d: more than %d leaves", lineno,
                             FP_CPUID_MAX_LEAVES);
    }
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p && *p != '\n' && *p != '#')
      return fpull_err_set(err, FPULL_EUSAGE, "line %d: trailing text", lineno);
    line = next;
  }
  return 0;
}
