/* The CPU's own generation and the best CPU tag (fpull(1), FEATURES: "best CPU tag").
 *
 * The generation is decided as GCC's -march=native decides it (gcc/common/config/i386/
 * cpuinfo.h, get_intel_cpu, get_amd_cpu and get_zhaoxin_cpu, and gcc/config/i386/
 * driver-i386.cc for the vendors and families those leave to the features): vendor, family
 * and model first, the extensions only where one model covers several generations
 * (Skylake-SP, Cascade Lake and Cooper Lake share model 0x55) or the model is not one GCC
 * lists. Where the table has a more precise name than GCC's -march=native (Emerald Rapids,
 * Lunar Lake, Penryn: GCC says sapphirerapids, arrowlake-s and core2 there),
 * the table's name is the CPU's own. Written from those files' tables, not copied. */
#include <string.h>

#include "fpull/detect.h"
#include "fpull/features.h"
#include "tagdb.h"
#include "base/util.h"

struct model_name {
  unsigned model;
  const char *name;
};

/* Intel family 6, by display model. */
static const struct model_name intel6[] = {
    {0x0f, "core2"}, /* Merom; GCC says core2 for Penryn too, the table has its name */
    {0x17, "penryn"},
    {0x1d, "penryn"}, /* Penryn, Dunnington */
    {0x1c, "bonnell"},
    {0x26, "bonnell"},
    {0x37, "silvermont"},
    {0x4a, "silvermont"},
    {0x4d, "silvermont"},
    {0x5d, "silvermont"},
    {0x4c, "silvermont"},
    {0x5a, "silvermont"},
    {0x75, "silvermont"}, /* Airmont */
    {0x5c, "goldmont"},
    {0x5f, "goldmont"},
    {0x7a, "goldmont-plus"},
    {0x86, "tremont"},
    {0x96, "tremont"},
    {0x9c, "tremont"},
    {0xaf, "sierraforest"},
    {0xb6, "grandridge"},
    {0xdd, "clearwaterforest"},
    {0x57, "knl"},
    {0x85, "knm"},
    {0x1a, "nehalem"},
    {0x1e, "nehalem"},
    {0x1f, "nehalem"},
    {0x2e, "nehalem"},
    {0x25, "westmere"},
    {0x2c, "westmere"},
    {0x2f, "westmere"},
    {0x2a, "sandybridge"},
    {0x2d, "sandybridge"},
    {0x3a, "ivybridge"},
    {0x3e, "ivybridge"},
    {0x3c, "haswell"},
    {0x3f, "haswell"},
    {0x45, "haswell"},
    {0x46, "haswell"},
    {0x3d, "broadwell"},
    {0x47, "broadwell"},
    {0x4f, "broadwell"},
    {0x56, "broadwell"},
    {0x4e, "skylake"},
    {0x5e, "skylake"},
    {0x8e, "skylake"},
    {0x9e, "skylake"}, /* Kaby Lake, Coffee Lake */
    {0xa5, "skylake"},
    {0xa6, "skylake"}, /* Comet Lake */
    {0xa7, "rocketlake"},
    {0x66, "cannonlake"},
    {0x6a, "icelake-server"},
    {0x6c, "icelake-server"},
    {0x7d, "icelake-client"},
    {0x7e, "icelake-client"},
    {0x9d, "icelake-client"},
    {0x8c, "tigerlake"},
    {0x8d, "tigerlake"},
    {0x97, "alderlake"},
    {0x9a, "alderlake"},
    {0xbe, "alderlake"}, /* Alder Lake-N */
    {0xb7, "alderlake"},
    {0xba, "alderlake"},
    {0xbf, "alderlake"}, /* Raptor Lake */
    {0xaa, "alderlake"},
    {0xac, "alderlake"}, /* Meteor Lake */
    {0x8f, "sapphirerapids"},
    {0xcf, "emeraldrapids"},
    {0xad, "graniterapids"},
    {0xae, "graniterapids-d"},
    {0xc5, "arrowlake"},
    {0xc6, "arrowlake-s"},
    {0xbd, "lunarlake"},
    {0xcc, "pantherlake"},
};

static const char *intel_family6(unsigned model, char *const *isa)
{
  if (model == 0x55) /* Skylake-SP, Cascade Lake and Cooper Lake */
    return fp_strv_contains(isa, "avx512bf16")   ? "cooperlake"
           : fp_strv_contains(isa, "avx512vnni") ? "cascadelake"
                                                 : "skylake-avx512";
  for (size_t i = 0; i < sizeof intel6 / sizeof intel6[0]; i++)
    if (intel6[i].model == model)
      return intel6[i].name;
  return NULL;
}

static int in(unsigned v, unsigned lo, unsigned hi)
{
  return v >= lo && v <= hi;
}

static const char *amd(unsigned family, unsigned model, char *const *isa)
{
  switch (family) {
  case 0xf:
    return fp_strv_contains(isa, "sse3") ? "k8-sse3" : "k8";
  case 0x10:
    return "amdfam10";
  case 0x14:
    return "btver1";
  case 0x15:
    if (in(model, 0x60, 0x7f))
      return "bdver4";
    if (in(model, 0x30, 0x3f))
      return "bdver3";
    if (in(model, 0x10, 0x1f) || model == 0x02)
      return "bdver2";
    if (model <= 0x0f)
      return "bdver1";
    return fp_strv_contains(isa, "avx2")       ? "bdver4"
           : fp_strv_contains(isa, "xsaveopt") ? "bdver3"
           : fp_strv_contains(isa, "bmi")      ? "bdver2"
                                               : "bdver1";
  case 0x16:
    return "btver2";
  case 0x17:
    if (in(model, 0x30, 0x3f) || model == 0x47 || in(model, 0x60, 0x7f) || in(model, 0x84, 0x87) ||
        in(model, 0x90, 0xaf))
      return "znver2";
    if (model <= 0x2f)
      return "znver1";
    return fp_strv_contains(isa, "clwb") ? "znver2" : "znver1";
  case 0x18: /* Hygon Dhyana: Zen */
    return "znver1";
  case 0x19:
    if (model <= 0x0f || in(model, 0x20, 0x5f))
      return "znver3";
    if (in(model, 0x10, 0x1f) || in(model, 0x60, 0xaf))
      return "znver4";
    return fp_strv_contains(isa, "avx512f") ? "znver4" : "znver3";
  case 0x1a:
    return "znver5";
  default:
    return NULL;
  }
}

/* VIA/Centaur and Zhaoxin: Zhaoxin's own cores by family 7 and model, the older cores by
 * their extensions as GCC's driver names them. */
static const char *centaur(unsigned family, unsigned model, char *const *isa)
{
  if (family == 7) { /* KX-6000, KH-40000, KX-7000 */
    if (model == 0x3b)
      return "lujiazui";
    if (model == 0x5b)
      return "yongfeng";
    if (model == 0x6b)
      return "shijidadao";
  }
  if (family != 6 && family != 7)
    return NULL;
  return fp_strv_contains(isa, "sse4_1")  ? "nano-3000"
         : fp_strv_contains(isa, "ssse3") ? "nano"
         : fp_strv_contains(isa, "sse3")  ? "eden-x2"
                                          : "k8";
}

/* arm64: MIDR_EL1's implementer, part number and variant, as GCC's -mcpu=native reads them:
 * the first entry of gcc/config/aarch64/aarch64-cores.def (gcc 15's order and rows; gcc 12's
 * for the cores it knows, scripts/gen-cputags names each later core's gcc) with that
 * implementer and part whose variant is the CPU's or any (GCC's -1). So 0x43 0x0a2 is
 * octeontx81 (thunderxt81 comes later), 0x42 0x516 thunderx2t99p1 (thunderx2t99 is Cavium's
 * 0x43 0x0af), 0x50 0x000 emag at variant 3 and xgene1 else, and a ThunderX3 is
 * thunderx3t110 only at variant 0xa, as in GCC (another variant has no own name: the level
 * decides). gcc 15 made thunderxt88p1 an alias listed after thunderxt88 (gcc 12 to 14 keyed
 * it on variant 0 before): the newest order wins, so no MIDR names it. NVIDIA Grace reports
 * Arm's Neoverse V2; GCC lists the Apple cores and GB10 as big.LITTLE pairs, each part of a
 * pair names the pair's core here (the detector reads CPU 0's MIDR alone; GB10's parts are
 * Cortex-X925's and Cortex-A725's, which come first). Rows written from the file, not
 * copied. Checked on 16 real machines and a synthetic MIDR per later core
 * (tests/unit/test_cpugen_real.c). */
#define ANY (-1)
static const struct {
  unsigned implementer, part;
  int variant; /* MIDR_EL1 bits 23:20, or ANY */
  const char *name;
} arm_parts[] = {
    {0x41, 0xd02, ANY, "cortex-a34"},     {0x41, 0xd04, ANY, "cortex-a35"},
    {0x41, 0xd03, ANY, "cortex-a53"},     {0x41, 0xd07, ANY, "cortex-a57"},
    {0x41, 0xd08, ANY, "cortex-a72"},     {0x41, 0xd09, ANY, "cortex-a73"},
    {0x43, 0x0a0, ANY, "thunderx"},       {0x43, 0x0a1, ANY, "thunderxt88"},
    {0x43, 0x0a1, ANY, "thunderxt88p1"},  {0x43, 0x0a0, ANY, "octeontx"},
    {0x43, 0x0a2, ANY, "octeontx81"},     {0x43, 0x0a3, ANY, "octeontx83"},
    {0x43, 0x0a2, ANY, "thunderxt81"},    {0x43, 0x0a3, ANY, "thunderxt83"},
    {0xc0, 0xac3, ANY, "ampere1"},        {0xc0, 0xac4, ANY, "ampere1a"},
    {0xc0, 0xac5, ANY, "ampere1b"},       {0x50, 0x000, 3, "emag"},
    {0x50, 0x000, ANY, "xgene1"},         {0x51, 0xc00, ANY, "qdf24xx"},
    {0x53, 0x001, ANY, "exynos-m1"},      {0x68, 0x000, ANY, "phecda"},
    {0x42, 0x516, ANY, "thunderx2t99p1"}, {0x43, 0x0af, ANY, "thunderx2t99"},
    {0x41, 0xd05, ANY, "cortex-a55"},     {0x41, 0xd0a, ANY, "cortex-a75"},
    {0x41, 0xd0b, ANY, "cortex-a76"},     {0x41, 0xd0e, ANY, "cortex-a76ae"},
    {0x41, 0xd0d, ANY, "cortex-a77"},     {0x41, 0xd41, ANY, "cortex-a78"},
    {0x41, 0xd42, ANY, "cortex-a78ae"},   {0x41, 0xd4b, ANY, "cortex-a78c"},
    {0x41, 0xd06, ANY, "cortex-a65"},     {0x41, 0xd43, ANY, "cortex-a65ae"},
    {0x41, 0xd44, ANY, "cortex-x1"},      {0x41, 0xd4c, ANY, "cortex-x1c"},
    {0x41, 0xd0c, ANY, "neoverse-n1"},    {0x41, 0xd4a, ANY, "neoverse-e1"},
    {0x43, 0x0b0, ANY, "octeontx2"},      {0x43, 0x0b1, ANY, "octeontx2t98"},
    {0x43, 0x0b2, ANY, "octeontx2t96"},   {0x43, 0x0b2, ANY, "octeontx2t93"},
    {0x43, 0x0b3, ANY, "octeontx2f95"},   {0x43, 0x0b4, ANY, "octeontx2f95n"},
    {0x43, 0x0b5, ANY, "octeontx2f95mm"}, {0x46, 0x001, ANY, "a64fx"},
    {0x46, 0x003, ANY, "fujitsu-monaka"}, {0x48, 0xd06, ANY, "hip12"},
    {0x48, 0xd01, ANY, "tsv110"},         {0x43, 0x0b8, 10, "thunderx3t110"},
    {0x41, 0xd40, ANY, "neoverse-v1"},    {0x51, 0xc01, ANY, "saphira"},
    {0x51, 0x001, ANY, "oryon-1"},        {0x41, 0xd15, ANY, "cortex-r82"},
    {0x41, 0xd14, ANY, "cortex-r82ae"},   {0x61, 0x012, ANY, "apple-a12"},
    {0x61, 0x021, ANY, "apple-m1"},       {0x61, 0x020, ANY, "apple-m1"},
    {0x61, 0x023, ANY, "apple-m1"},       {0x61, 0x022, ANY, "apple-m1"},
    {0x61, 0x025, ANY, "apple-m1"},       {0x61, 0x024, ANY, "apple-m1"},
    {0x61, 0x029, ANY, "apple-m1"},       {0x61, 0x028, ANY, "apple-m1"},
    {0x61, 0x031, ANY, "apple-m2"},       {0x61, 0x030, ANY, "apple-m2"},
    {0x61, 0x033, ANY, "apple-m2"},       {0x61, 0x032, ANY, "apple-m2"},
    {0x61, 0x035, ANY, "apple-m2"},       {0x61, 0x034, ANY, "apple-m2"},
    {0x61, 0x039, ANY, "apple-m2"},       {0x61, 0x038, ANY, "apple-m2"},
    {0x61, 0x043, ANY, "apple-m3"},       {0x61, 0x042, ANY, "apple-m3"},
    {0x61, 0x045, ANY, "apple-m3"},       {0x61, 0x044, ANY, "apple-m3"},
    {0x61, 0x049, ANY, "apple-m3"},       {0x61, 0x048, ANY, "apple-m3"},
    {0x61, 0x053, ANY, "apple-m4"},       {0x61, 0x052, ANY, "apple-m4"},
    {0x61, 0x055, ANY, "apple-m4"},       {0x61, 0x054, ANY, "apple-m4"},
    {0x61, 0x059, ANY, "apple-m4"},       {0x61, 0x058, ANY, "apple-m4"},
    {0x61, 0x063, ANY, "apple-m5"},       {0x61, 0x062, ANY, "apple-m5"},
    {0x61, 0x065, ANY, "apple-m5"},       {0x61, 0x064, ANY, "apple-m5"},
    {0x61, 0x069, ANY, "apple-m5"},       {0x61, 0x068, ANY, "apple-m5"},
    {0x41, 0xd46, ANY, "cortex-a510"},    {0x41, 0xd80, ANY, "cortex-a520"},
    {0x41, 0xd88, ANY, "cortex-a520ae"},  {0x41, 0xd47, ANY, "cortex-a710"},
    {0x41, 0xd4d, ANY, "cortex-a715"},    {0x41, 0xd81, ANY, "cortex-a720"},
    {0x41, 0xd89, ANY, "cortex-a720ae"},  {0x41, 0xd87, ANY, "cortex-a725"},
    {0x41, 0xd48, ANY, "cortex-x2"},      {0x41, 0xd4e, ANY, "cortex-x3"},
    {0x41, 0xd82, ANY, "cortex-x4"},      {0x41, 0xd85, ANY, "cortex-x925"},
    {0x41, 0xd49, ANY, "neoverse-n2"},    {0x6d, 0xd49, ANY, "cobalt-100"},
    {0x41, 0xd8e, ANY, "neoverse-n3"},    {0x41, 0xd4f, ANY, "neoverse-v2"},
    {0x41, 0xd4f, ANY, "grace"},          {0x41, 0xd84, ANY, "neoverse-v3"},
    {0x41, 0xd83, ANY, "neoverse-v3ae"},  {0x4e, 0x010, ANY, "olympus"},
};

static const char *arm64(unsigned implementer, unsigned part, unsigned variant)
{
  for (size_t i = 0; i < sizeof arm_parts / sizeof arm_parts[0]; i++)
    if (arm_parts[i].implementer == implementer && arm_parts[i].part == part &&
        (arm_parts[i].variant == ANY || (unsigned)arm_parts[i].variant == variant))
      return arm_parts[i].name;
  return NULL;
}

const char *fpull_cpu_generation(const struct fpull_tagdb *db, const struct fpull_cpu_info *ci)
{
  if (!ci || !ci->architecture)
    return NULL;
  const char *name = NULL;
  if (strcmp(ci->architecture, "arm64") == 0)
    name = arm64(ci->family, ci->model, (ci->stepping >> 4) & 0xf); /* variant, revision */
  else if (strcmp(ci->architecture, "ppc64le") == 0)
    name = ci->variant; /* AT_PLATFORM: power9, power10 */
  if (name) {
    const struct fp_tag *t = fp_tagdb_find(db, name);
    return t ? t->name : NULL;
  }
  if (!ci->vendor || strcmp(ci->architecture, "amd64") != 0)
    return NULL;
  if (strcmp(ci->vendor, "GenuineIntel") == 0) {
    if (ci->family == 6)
      name = intel_family6(ci->model, ci->isa);
    else if (ci->family == 0xf) /* NetBurst: only the 64-bit ones run amd64 */
      name = "nocona";
  } else if (strcmp(ci->vendor, "AuthenticAMD") == 0 || strcmp(ci->vendor, "HygonGenuine") == 0) {
    name = amd(ci->family, ci->model, ci->isa);
  } else if (strcmp(ci->vendor, "CentaurHauls") == 0 || strcmp(ci->vendor, "  Shanghai  ") == 0) {
    name = centaur(ci->family, ci->model, ci->isa);
  }
  if (!name)
    return NULL;
  const struct fp_tag *t = fp_tagdb_find(db, name);
  return t ? t->name : name;
}

static int holds(const struct fpull_target *t, const char *tag, const struct fpull_tagdb *db)
{
  return fpull_featureset_has(t->features, tag, db);
}

/* The largest set that holds on the own line (a subset of own's set, when own is not NULL),
 * else the largest that holds; equal sizes in table order. only: 1 the x86-64 levels, 2 the
 * A-profile Arm architecture levels (armv8-a ... armv9-a; not armv8-r, the R profile), 0 every
 * other tag. */
static const char *largest(const struct fpull_tagdb *db, const struct fpull_target *t,
                           const struct fp_tag *own, int only)
{
  const char *const *tags = fpull_tagdb_tags(db, t->architecture);
  const char *best = NULL;
  size_t best_n = 0;
  int best_line = 0;
  for (size_t i = 0; tags && tags[i]; i++) {
    size_t len = strlen(tags[i]);
    int kind = strncmp(tags[i], "x86-64-v", 8) == 0 ? 1
               : strncmp(tags[i], "armv", 4) == 0   ? (strcmp(tags[i] + len - 2, "-a") == 0 ? 2 : 3)
                                                    : 0;
    int want = only == 2 ? kind == 2 : only == 1 ? kind == 1 : kind != 1;
    if (!want || !holds(t, tags[i], db))
      continue;
    const struct fp_tag *tag = fp_tagdb_find(db, tags[i]);
    int line = own && fp_tag_subset(tag, own);
    if (line > best_line || (line == best_line && tag->n_isa > best_n)) {
      best = tag->name;
      best_n = tag->n_isa;
      best_line = line;
    }
  }
  return best;
}

const char *fpull_best_cpu_tag(const struct fpull_tagdb *db, const struct fpull_target *t,
                               const struct fpull_cpu_info *ci, int levels)
{
  if (!db || !t)
    return NULL;
  const char *own = levels ? NULL : fpull_cpu_generation(db, ci);
  const struct fp_tag *own_tag = own ? fp_tagdb_find(db, own) : NULL;
  if (own_tag && holds(t, own_tag->name, db))
    return own_tag->name;
  /* An arm64 host whose own core cannot run (the kernel or a hypervisor hides pointer
   * authentication or RNG) or that GCC has no name for (Qualcomm Kryo, NVIDIA Denver, a core
   * newer than the table): the largest Arm architecture level that holds, as GCC's
   * -mcpu=native then says -march=armv8.N-a+..., not another vendor's core of equal set (a
   * Snapdragon is no thunderxt88p1, a Neoverse N2 no a64fx). */
  if (!levels && ci && ci->architecture && strcmp(ci->architecture, "arm64") == 0 &&
      t->architecture && strcmp(t->architecture, "arm64") == 0) {
    const char *level = largest(db, t, own_tag, 2);
    if (level)
      return level;
  }
  return largest(db, t, own_tag, levels ? 1 : 0);
}
