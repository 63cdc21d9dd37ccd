/* AT_HWCAP / AT_HWCAP2 decoding (arm64, ppc64le): each bit is mapped to the compiler feature
 * macro it stands for, so that the names match data/cputags.yaml.
 *
 * Bit positions: the kernel's uapi headers, arch/arm64/include/uapi/asm/hwcap.h and
 * arch/powerpc/include/uapi/asm/cputable.h (documented for arm64 in
 * Documentation/arch/arm64/elf_hwcaps.rst). Macros: the Arm C Language Extensions
 * (__ARM_FEATURE_*) and GCC's rs6000 target macros. Only the kernel's word counts: it
 * reports what the CPU has and the kernel enabled (SVE, MTE, SME need kernel support). */
#include "hwcap.h"

#include <string.h>

struct cap {
  uint64_t hw, hw2; /* every bit of both must be set */
  const char *name;
};

#define B(n) (1ull << (n))

/* arm64 AT_HWCAP bits. */
enum {
  A_FP = 0,
  A_ASIMD = 1,
  A_AES = 3,
  A_PMULL = 4,
  A_SHA1 = 5,
  A_SHA2 = 6,
  A_CRC32 = 7,
  A_ATOMICS = 8,
  A_FPHP = 9,
  A_ASIMDHP = 10,
  A_ASIMDRDM = 12,
  A_JSCVT = 13,
  A_FCMA = 14,
  A_LRCPC = 15,
  A_SHA3 = 17,
  A_SM3 = 18,
  A_SM4 = 19,
  A_ASIMDDP = 20,
  A_SHA512 = 21,
  A_SVE = 22,
  A_ASIMDFHM = 23,
  A_FLAGM = 27,
  A_SB = 29,
  A_PACA = 30,
  A_PACG = 31,
};

/* arm64 AT_HWCAP2 bits. */
enum {
  A2_SVE2 = 1,
  A2_SVEAES = 2,
  A2_SVEPMULL = 3,
  A2_SVEBITPERM = 4,
  A2_SVESHA3 = 5,
  A2_SVESM4 = 6,
  A2_FRINT = 8,
  A2_SVEI8MM = 9,
  A2_SVEF32MM = 10,
  A2_SVEF64MM = 11,
  A2_SVEBF16 = 12,
  A2_I8MM = 13,
  A2_BF16 = 14,
  A2_RNG = 16,
  A2_BTI = 17,
  A2_MTE = 18,
  A2_SME = 23,
  A2_CSSC = 34,
  A2_MOPS = 43,
  A2_LRCPC3 = 46,
  A2_FPMR = 48,
  A2_LUT = 49,
  A2_FAMINMAX = 50,
  A2_F8FMA = 52,
  A2_F8DP4 = 53,
  A2_F8DP2 = 54,
};

static const struct cap arm64[] = {
    /* Armv8-A baseline: GCC defines these for every -mcpu with FP and Advanced SIMD. */
    {B(A_FP) | B(A_ASIMD), 0, "clz"},
    {B(A_FP) | B(A_ASIMD), 0, "fma"},
    {B(A_FP) | B(A_ASIMD), 0, "idiv"},
    {B(A_FP) | B(A_ASIMD), 0, "numeric_maxmin"},
    {B(A_FP) | B(A_ASIMD), 0, "unaligned"},
    /* GCC's +aes is AES with PMULL, +sha2 SHA1 with SHA256, +crypto both. */
    {B(A_AES) | B(A_PMULL), 0, "aes"},
    {B(A_SHA1) | B(A_SHA2), 0, "sha2"},
    {B(A_AES) | B(A_PMULL) | B(A_SHA1) | B(A_SHA2), 0, "crypto"},
    {B(A_CRC32), 0, "crc32"},
    {B(A_ATOMICS), 0, "atomics"},
    {B(A_FPHP), 0, "fp16_scalar_arithmetic"},
    {B(A_ASIMDHP), 0, "fp16_vector_arithmetic"},
    {B(A_ASIMDRDM), 0, "qrdmx"},
    {B(A_JSCVT), 0, "jcvt"},
    {B(A_FCMA), 0, "complex"},
    {B(A_LRCPC), 0, "rcpc"},
    {B(A_SHA3) | B(A_SHA1) | B(A_SHA2), 0, "sha3"},
    {B(A_SHA512) | B(A_SHA1) | B(A_SHA2), 0, "sha512"},
    {B(A_SM3), 0, "sm3"},
    {B(A_SM4), 0, "sm4"},
    {B(A_ASIMDDP), 0, "dotprod"},
    {B(A_SVE), 0, "sve"},
    {B(A_ASIMDFHM), 0, "fp16_fml"},
    {B(A_PACA) | B(A_PACG), 0, "pauth"},
    /* Extensions GCC enables under -mcpu/-march without a macro (gen-cputags), named as
     * GCC's +EXT. */
    {B(A_FLAGM), 0, "flagm"},
    {B(A_SB), 0, "sb"},
    {0, B(A2_MOPS), "mops"},
    {B(A_SVE), B(A2_SVE2), "sve2"},
    {B(A_SVE), B(A2_SVE2) | B(A2_SVEAES) | B(A2_SVEPMULL), "sve2_aes"},
    {B(A_SVE), B(A2_SVE2) | B(A2_SVEBITPERM), "sve2_bitperm"},
    {B(A_SVE), B(A2_SVE2) | B(A2_SVESHA3), "sve2_sha3"},
    {B(A_SVE), B(A2_SVE2) | B(A2_SVESM4), "sve2_sm4"},
    {0, B(A2_FRINT), "frint"},
    {B(A_SVE), B(A2_SVEI8MM), "sve_matmul_int8"},
    {B(A_SVE), B(A2_SVEF32MM), "sve_matmul_fp32"},
    {B(A_SVE), B(A2_SVEF64MM), "sve_matmul_fp64"},
    {B(A_SVE), B(A2_SVEBF16), "sve_bf16"},
    {0, B(A2_I8MM), "matmul_int8"},
    {0, B(A2_BF16), "bf16_scalar_arithmetic"},
    {0, B(A2_BF16), "bf16_vector_arithmetic"},
    {0, B(A2_RNG), "rng"},
    {0, B(A2_BTI), "bti"},
    {0, B(A2_MTE), "memory_tagging"},
    {0, B(A2_SME), "sme"},
    /* What gcc 14 and 15 know and gcc 12 does not (gen-cputags ARM_LATER_EXTRA): ACLE's names;
     * RCpc3 as gcc's +rcpc3. FP8 instructions take their format from FPMR. */
    {0, B(A2_CSSC), "cssc"},
    {B(A_LRCPC), B(A2_LRCPC3), "rcpc3"},
    {0, B(A2_FAMINMAX), "faminmax"},
    {0, B(A2_LUT), "lut"},
    {0, B(A2_FPMR) | B(A2_F8FMA), "fp8fma"},
    {0, B(A2_FPMR) | B(A2_F8DP2), "fp8dot2"},
    {0, B(A2_FPMR) | B(A2_F8DP4), "fp8dot4"},
};

/* ppc64 AT_HWCAP (PPC_FEATURE_*) and AT_HWCAP2 (PPC_FEATURE2_*) bits. */
#define P_ALTIVEC 0x10000000ull
#define P_VSX 0x00000080ull
#define P2_ARCH_2_07 0x80000000ull
#define P2_VEC_CRYPTO 0x02000000ull
#define P2_ARCH_3_00 0x00800000ull
#define P2_IEEE128 0x00400000ull
#define P2_ARCH_3_1 0x00040000ull
#define P2_MMA 0x00020000ull

/* ISA 2.07 is POWER8, 3.00 POWER9, 3.1 POWER10 (GCC's _ARCH_PWRn). GCC's -mpower8-vector
 * and -mpower9-vector are the VSX instructions of that ISA level. */
static const struct cap ppc64[] = {
    {P_ALTIVEC, 0, "altivec"},
    {P_VSX, 0, "vsx"},
    {0, P2_ARCH_2_07, "arch_pwr8"},
    {P_ALTIVEC | P_VSX, P2_ARCH_2_07, "power8_vector"},
    {0, P2_VEC_CRYPTO, "crypto"},
    {0, P2_ARCH_3_00, "arch_pwr9"},
    {P_ALTIVEC | P_VSX, P2_ARCH_3_00, "power9_vector"},
    {0, P2_IEEE128, "float128_hardware"},
    {0, P2_ARCH_3_1, "arch_pwr10"},
    {0, P2_MMA, "mma"},
};

static size_t decode(const struct cap *t, size_t n, uint64_t hw, uint64_t hw2, const char **out,
                     size_t max)
{
  size_t k = 0;
  for (size_t i = 0; i < n && k < max; i++)
    if ((hw & t[i].hw) == t[i].hw && (hw2 & t[i].hw2) == t[i].hw2)
      out[k++] = t[i].name;
  return k;
}

size_t fp_hwcap_arm64(uint64_t hwcap, uint64_t hwcap2, const char **out, size_t max)
{
  return decode(arm64, sizeof arm64 / sizeof arm64[0], hwcap, hwcap2, out, max);
}

size_t fp_hwcap_ppc64(uint64_t hwcap, uint64_t hwcap2, const char **out, size_t max)
{
  return decode(ppc64, sizeof ppc64 / sizeof ppc64[0], hwcap, hwcap2, out, max);
}

const char *fp_hwcap_ppc64_level(const char *platform, uint64_t hwcap2)
{
  static const char *const levels[] = {"power8", "power9", "power10"};
  for (size_t i = 0; platform && i < sizeof levels / sizeof levels[0]; i++)
    if (strcmp(platform, levels[i]) == 0 || (strncmp(platform, levels[i], strlen(levels[i])) == 0 &&
                                             platform[strlen(levels[i])] == '+'))
      return levels[i];
  /* qemu-user and some containers leave AT_PLATFORM out: the ISA level says the same. */
  if (hwcap2 & P2_ARCH_3_1)
    return "power10";
  if (hwcap2 & P2_ARCH_3_00)
    return "power9";
  if (hwcap2 & P2_ARCH_2_07)
    return "power8";
  return NULL;
}

const char *fp_hwcap_arm64_name(size_t i)
{
  return i < sizeof arm64 / sizeof arm64[0] ? arm64[i].name : NULL;
}

const char *fp_hwcap_ppc64_name(size_t i)
{
  return i < sizeof ppc64 / sizeof ppc64[0] ? ppc64[i].name : NULL;
}
