/* Host CPU detection: architecture and variant from the kernel, ISA extensions from CPUID
 * and XCR0 (x86) or AT_HWCAP/AT_HWCAP2 (arm64, ppc64le; lib/hwcap.c). Tags are derived
 * elsewhere, from the ISA names only. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#if defined(__x86_64__) || defined(__i386__)
/* Not <cpuid.h>: lib/cpuid.h shadows it on the include path. */
#include <libcpuid.h>
#define FP_X86 1
#endif
#if defined(__linux__) && !defined(FP_X86)
#include <sys/auxv.h>
#endif

#include "cpuid.h"
#include "fpull/detect.h"
#include "hwcap.h"
#include "base/util.h"

/* Debian's and OCI's names for what uname(2) calls the machine. */
static char *arch_from_machine(const char *m)
{
  static const struct {
    const char *machine, *arch;
  } map[] = {
      {"x86_64", "amd64"},    {"amd64", "amd64"},   {"i386", "386"},
      {"i486", "386"},        {"i586", "386"},      {"i686", "386"},
      {"aarch64", "arm64"},   {"arm64", "arm64"},   {"aarch64_be", "arm64be"},
      {"ppc64le", "ppc64le"}, {"ppc64", "ppc64"},   {"s390x", "s390x"},
      {"riscv64", "riscv64"}, {"mips64", "mips64"}, {"loongarch64", "loong64"},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(m, map[i].machine) == 0)
      return fp_xstrdup(map[i].arch);
  if (strncmp(m, "arm", 3) == 0) /* armv7l, armv6l, armv8l (AArch32 on a 64-bit kernel) */
    return fp_xstrdup("arm");
  return fp_xstrdup_lower(m);
}

#ifdef FP_X86
static uint64_t read_xcr0(void)
{
  uint32_t lo, hi;
  /* Only called with CPUID.1:ECX.OSXSAVE set: XGETBV raises #UD otherwise. */
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static void raw_cpuid(struct fp_cpuid_raw *raw, uint32_t leaf, uint32_t subleaf)
{
  uint32_t a, b, c, d;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(leaf), "c"(subleaf));
  fp_cpuid_raw_set(raw, leaf, subleaf, a, b, c, d);
}

/* Collects the leaves the decoder reads. libcpuid keeps subleaf 0 of the basic and
 * extended leaves; subleaves it does not keep (7.1, 0xD.1) come from the instruction. */
static void collect(struct fp_cpuid_raw *raw, struct cpu_raw_data_t *lc, int have_lc)
{
  memset(raw, 0, sizeof *raw);
  if (have_lc) {
    uint32_t max = lc->basic_cpuid[0][0], ext = lc->ext_cpuid[0][0];
    static const uint32_t basic[] = {0, 1, 7, 0x14, 0x19};
    for (size_t i = 0; i < sizeof basic / sizeof basic[0]; i++)
      if (basic[i] <= max && basic[i] < MAX_CPUID_LEVEL) {
        const uint32_t *r = lc->basic_cpuid[basic[i]];
        fp_cpuid_raw_set(raw, basic[i], 0, r[0], r[1], r[2], r[3]);
      }
    for (uint32_t i = 0; i <= 8 && (ext & 0x80000000u) && 0x80000000u + i <= ext; i++) {
      const uint32_t *r = lc->ext_cpuid[i];
      fp_cpuid_raw_set(raw, 0x80000000u + i, 0, r[0], r[1], r[2], r[3]);
    }
  } else {
    raw_cpuid(raw, 0, 0);
    raw_cpuid(raw, 0x80000000u, 0);
    uint32_t max = fp_cpuid_raw_get(raw, 0, 0)[FP_EAX];
    uint32_t ext = fp_cpuid_raw_get(raw, 0x80000000u, 0)[FP_EAX];
    static const uint32_t basic[] = {1, 7, 0x14, 0x19};
    for (size_t i = 0; i < sizeof basic / sizeof basic[0]; i++)
      if (basic[i] <= max)
        raw_cpuid(raw, basic[i], 0);
    for (uint32_t l = 0x80000001u; l <= ext && l <= 0x80000008u; l++)
      raw_cpuid(raw, l, 0);
  }
  const uint32_t *l0 = fp_cpuid_raw_get(raw, 0, 0), *l7 = fp_cpuid_raw_get(raw, 7, 0);
  if (l7 && l7[FP_EAX] >= 1)
    raw_cpuid(raw, 7, 1);
  /* AMX's newer extensions (0x1E.1) and AVX10's version (0x24), past libcpuid's table. */
  if (l0 && l0[FP_EAX] >= 0x1e) {
    raw_cpuid(raw, 0x1e, 0);
    if (fp_cpuid_raw_get(raw, 0x1e, 0)[FP_EAX] >= 1)
      raw_cpuid(raw, 0x1e, 1);
  }
  if (l0 && l0[FP_EAX] >= 0x24)
    raw_cpuid(raw, 0x24, 0);
  if (l0 && l0[FP_EAX] >= 0xd)
    raw_cpuid(raw, 0xd, 1);
  /* 0x80000021 lies beyond libcpuid's table of extended leaves: asked directly. */
  const uint32_t *e0 = fp_cpuid_raw_get(raw, 0x80000000u, 0);
  if (e0 && e0[FP_EAX] >= 0x80000021u && e0[FP_EAX] < 0x80000100u)
    raw_cpuid(raw, 0x80000021u, 0);
  const uint32_t *l1 = fp_cpuid_raw_get(raw, 1, 0);
  if (l1 && (l1[FP_ECX] >> 27) & 1)
    raw->xcr0 = read_xcr0();
}

static char *vendor_from_leaf0(const struct fp_cpuid_raw *raw)
{
  const uint32_t *l0 = fp_cpuid_raw_get(raw, 0, 0);
  if (!l0)
    return NULL;
  char v[13];
  memcpy(v, &l0[FP_EBX], 4);
  memcpy(v + 4, &l0[FP_EDX], 4);
  memcpy(v + 8, &l0[FP_ECX], 4);
  v[12] = '\0';
  return fp_xstrdup(v);
}

static int detect_x86(struct fpull_cpu_info *ci, fpull_err *err)
{
  struct fp_cpuid_raw raw;
  const char *dump = getenv("FPULL_CPUID_FILE");
  if (dump && *dump) {
    /* Tests and support: decode a recorded dump instead of this CPU. */
    cleanup_free char *text = NULL;
    size_t len;
    if (fp_read_file(dump, 1 << 20, &text, &len) < 0)
      return fpull_err_set(err, FPULL_EUSAGE, "FPULL_CPUID_FILE %s: %s", dump, strerror(errno));
    if (fp_cpuid_raw_parse(&raw, text, err))
      return fpull_err_prefix(err, "FPULL_CPUID_FILE %s", dump);
    ci->vendor = vendor_from_leaf0(&raw);
    ci->isa = fp_cpuid_decode(&raw);
    fp_cpuid_signature(&raw, &ci->family, &ci->model, &ci->stepping, &ci->hypervisor);
    return 0;
  }
  cleanup_free struct cpu_raw_data_t *lc = fp_xcalloc(1, sizeof *lc);
  int have_lc = cpuid_get_raw_data(lc) == 0;
  collect(&raw, lc, have_lc);
  ci->isa = fp_cpuid_decode(&raw);
  ci->vendor = vendor_from_leaf0(&raw);
  fp_cpuid_signature(&raw, &ci->family, &ci->model, &ci->stepping, &ci->hypervisor);
  if (have_lc) {
    /* The codename is libcpuid's guess from family/model tables: information only. */
    cleanup_free struct cpu_id_t *id = fp_xcalloc(1, sizeof *id);
    if (cpu_identify(lc, id) == 0 && id->cpu_codename[0])
      ci->codename = fp_xstrdup(id->cpu_codename);
  }
  return 0;
}
#endif

#if defined(__linux__) && (defined(__arm__) || defined(__powerpc64__))
static const char *platform_string(void)
{
  return (const char *)getauxval(AT_PLATFORM);
}
#endif

#if defined(__arm__) && defined(__linux__)
/* AT_PLATFORM is "v7l", "v6l", "v5tel", "v8l" ...; HWCAP NEON or VFPv3 means ARMv7. */
static char *arm_variant(void)
{
  const char *p = platform_string();
  if (p && p[0] == 'v' && p[1] >= '5' && p[1] <= '8')
    return fp_xasprintf("v%c", p[1]);
  unsigned long hw = getauxval(AT_HWCAP);
  if (hw & ((1ul << 12) | (1ul << 13))) /* HWCAP_NEON, HWCAP_VFPv3 */
    return fp_xstrdup("v7");
  return NULL;
}
#endif

#if defined(__linux__) && (defined(__aarch64__) || defined(__powerpc64__))
static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of lib/hwcap.c for this kernel's AT_HWCAP and AT_HWCAP2, sorted, unique. */
static char **hwcap_isa(void)
{
  const char *names[FP_HWCAP_MAX];
  uint64_t hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
#ifdef __aarch64__
  size_t n = fp_hwcap_arm64(hw, hw2, names, FP_HWCAP_MAX);
#else
  size_t n = fp_hwcap_ppc64(hw, hw2, names, FP_HWCAP_MAX);
#endif
  char **v = fp_xcalloc(1, sizeof *v);
  for (size_t i = 0; i < n; i++)
    if (!fp_strv_contains(v, names[i]))
      v = fp_strv_push(v, names[i]);
  qsort(v, fpull_strv_len(v), sizeof *v, cmp_str);
  return v;
}
#endif

#if defined(__aarch64__) && defined(__linux__)
/* MIDR_EL1 as the kernel exports it (4.11 and later): implementer, part number, and variant
 * and revision as one number (r1p3 is 0x13; GCC tells some cores apart by the variant). */
static void midr(struct fpull_cpu_info *ci)
{
  cleanup_free char *text = NULL;
  size_t len;
  if (fp_read_file("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", 64, &text, &len) <
      0)
    return;
  unsigned long long v = strtoull(text, NULL, 16);
  ci->family = (unsigned)((v >> 24) & 0xff);
  ci->model = (unsigned)((v >> 4) & 0xfff);
  ci->stepping = (unsigned)(((v >> 16) & 0xf0) | (v & 0xf));
}
#endif

int fpull_detect_cpu(struct fpull_cpu_info **out, fpull_err *err)
{
  *out = NULL;
  (void)err; /* only the x86 path can fail (FPULL_CPUID_FILE) */
  struct fpull_cpu_info *ci = fp_xcalloc(1, sizeof *ci);
  struct utsname u;
  if (uname(&u) == 0)
    ci->architecture = arch_from_machine(u.machine);
  else
    ci->architecture = fp_xstrdup("unknown");
#ifdef FP_X86
  int r = detect_x86(ci, err);
  if (r) {
    fpull_cpu_info_free(ci);
    return r;
  }
#elif defined(__aarch64__) && defined(__linux__)
  ci->variant = fp_xstrdup("v8"); /* the OCI image spec lists no v9 */
  ci->isa = hwcap_isa();
  midr(ci);
#elif defined(__arm__) && defined(__linux__)
  ci->variant = arm_variant();
#elif defined(__powerpc64__) && defined(__linux__)
  const char *level = fp_hwcap_ppc64_level(platform_string(), getauxval(AT_HWCAP2));
  if (level)
    ci->variant = fp_xstrdup(level);
  ci->isa = hwcap_isa();
#endif
  if (!ci->isa)
    ci->isa = fp_xcalloc(1, sizeof *ci->isa);
  *out = ci;
  return 0;
}

void fpull_cpu_info_free(struct fpull_cpu_info *ci)
{
  if (!ci)
    return;
  free(ci->architecture);
  free(ci->variant);
  free(ci->vendor);
  free(ci->codename);
  fpull_strv_free(ci->isa);
  free(ci);
}
