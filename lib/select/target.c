/* The target platform: what the host is (or what --platform/--features say it is), its
 * features with their sources, and its variant (contract, "Which features the target
 * has"). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "base/opts.h"
#include "fpull/config.h"
#include "fpull/detect.h"
#include "names.h"
#include "tagdb.h"
#include "base/util.h"

char *fpull_arch_normalise(const char *arch)
{
  static const struct {
    const char *from, *to;
  } map[] = {
      {"x86_64", "amd64"}, {"x86-64", "amd64"}, {"aarch64", "arm64"}, {"armhf", "arm"},
      {"armel", "arm"},    {"i386", "386"},     {"i686", "386"},      {"ppc64el", "ppc64le"},
  };
  char *low = fp_xstrdup_lower(arch ? arch : "");
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(low, map[i].from) == 0) {
      free(low);
      return fp_xstrdup(map[i].to);
    }
  /* uname's armv7l, armv6l, ... are 32-bit arm. */
  if (strncmp(low, "armv", 4) == 0 && isdigit((unsigned char)low[4])) {
    free(low);
    return fp_xstrdup("arm");
  }
  return low;
}

void fpull_target_free(struct fpull_target *t)
{
  if (!t)
    return;
  free(t->os);
  free(t->architecture);
  free(t->variant);
  fpull_featureset_free(t->features);
  free(t->gpu_brand);
  fpull_target_free(t->host);
  free(t);
}

static void target_freep(struct fpull_target **t)
{
  fpull_target_free(*t);
}

static void names_freep(struct fp_feature_names **k)
{
  fp_feature_names_free(*k);
}

static void cpu_info_freep(struct fpull_cpu_info **c)
{
  fpull_cpu_info_free(*c);
}

static void nvidia_info_freep(struct fpull_nvidia_info **n)
{
  fpull_nvidia_info_free(*n);
}

/* A feature a person gave: known or declared, else a usage error (contract v3). */
static int add_given(struct fpull_target *t, const char *name, int src,
                     const struct fpull_tagdb *db, const struct fp_feature_names *names,
                     fpull_err *err)
{
  int r = fp_feature_names_check(names, name, err);
  return r ? r : fpull_featureset_add(t->features, name, src, db, err);
}

/* Each name of a comma-separated list (empty items are skipped, as before). */
static int add_given_list(struct fpull_target *t, const char *list, int src,
                          const struct fpull_tagdb *db, const struct fp_feature_names *names,
                          fpull_err *err)
{
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    cleanup_free char *f = fp_xstrndup(p, n);
    char *s = f, *e = f + strlen(f);
    while (*s == ' ' || *s == '\t')
      s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
      *--e = '\0';
    if (*s) {
      int r = add_given(t, s, src, db, names, err);
      if (r)
        return r;
    }
    p = end ? end + 1 : p + n;
  }
  return 0;
}

/* --platform [OS/]ARCH[/VARIANT][:FEATURE...]. */
static int parse_platform(struct fpull_target *t, const char *spec, const struct fpull_tagdb *db,
                          const struct fp_feature_names *names, fpull_err *err)
{
  const char *colon = strchr(spec, ':');
  cleanup_free char *head = fp_xstrndup(spec, colon ? (size_t)(colon - spec) : strlen(spec));
  char *parts[4] = {0};
  size_t n = 0;
  for (char *p = head, *slash; n < 4; p = slash + 1) {
    parts[n++] = p;
    if (!(slash = strchr(p, '/')))
      break;
    *slash = '\0';
  }
  /* The architecture alone is linux/ARCH, as docker and containerd parse it (contract
   * v6); an os alone is not enough to choose by. */
  if (n == 1 && *parts[0] && fpull_platform_name_check(NULL, parts[0], NULL, NULL) == 0) {
    parts[1] = parts[0];
    parts[0] = "linux";
    n = 2;
  } else if (n == 1 && *parts[0]) {
    if (fpull_platform_name_check(parts[0], NULL, NULL, NULL) == 0)
      return fpull_err_set(err, FPULL_EUSAGE,
                           "--platform \"%s\": an os alone; give OS/ARCH (%s/amd64) or ARCH "
                           "alone",
                           spec, parts[0]);
    fpull_platform_name_check(NULL, parts[0], NULL, err);
    return fpull_err_prefix(err, "--platform \"%s\"", spec);
  }
  if (n < 2 || n > 3 || strchr(parts[n - 1], '/'))
    return fpull_err_set(err, FPULL_EUSAGE,
                         "--platform \"%s\": expected [OS/]ARCH[/VARIANT][:FEATURE...]", spec);
  for (size_t i = 0; i < n; i++)
    if (!fp_feature_name_valid(parts[i]))
      return fpull_err_set(err, FPULL_EUSAGE, "--platform \"%s\": bad component \"%s\"", spec,
                           parts[i]);
  if (fpull_platform_name_check(parts[0], parts[1], n == 3 ? parts[2] : NULL, err))
    return fpull_err_prefix(err, "--platform \"%s\"", spec);
  t->os = fp_xstrdup_lower(parts[0]);
  t->architecture = fpull_arch_normalise(parts[1]);
  if (n == 3)
    t->variant = fp_xstrdup_lower(parts[2]);
  for (const char *p = colon; p; p = strchr(p, ':')) {
    p++;
    const char *end = strchr(p, ':');
    cleanup_free char *f = fp_xstrndup(p, end ? (size_t)(end - p) : strlen(p));
    int r = add_given(t, f, FPULL_SRC_CLI, db, names, err);
    if (r)
      return fpull_err_prefix(err, "--platform \"%s\"", spec);
  }
  return 0;
}

static void host_os_arch(struct fpull_target *t)
{
  struct utsname u;
  if (uname(&u) < 0) {
    t->os = fp_xstrdup("linux");
    t->architecture = fp_xstrdup("unknown");
    return;
  }
  t->os = fp_xstrdup_lower(u.sysname);
  t->architecture = fpull_arch_normalise(u.machine);
}

static int add_detected_cpu(struct fpull_target *t, const struct fpull_cpu_info *ci,
                            const struct fpull_tagdb *db, fpull_err *err)
{
  for (size_t i = 0; ci->isa && ci->isa[i]; i++) {
    int r = fpull_featureset_add(t->features, ci->isa[i], FPULL_SRC_CPU, db, err);
    if (r)
      return fpull_err_prefix(err, "CPU detection");
  }
  /* A tag is present when the CPU has every extension of its set that gates: what a
   * hypervisor hides among the intrinsic-only ones (MWAITX, WAITPKG, ...) does not count. */
  const char *const *tags = fpull_tagdb_tags(db, t->architecture);
  for (size_t i = 0; tags[i]; i++) {
    const struct fp_tag *tag = fp_tagdb_find(db, tags[i]);
    size_t k = 0;
    while (k < tag->n_isa &&
           (fp_strv_contains(ci->isa, tag->isa[k]) || !fp_tag_gates(db, tag, tag->isa[k])))
      k++;
    if (k == tag->n_isa)
      fpull_featureset_add(t->features, tags[i], FPULL_SRC_CPU, db, NULL);
  }
  return 0;
}

static void add_detected_nvidia(struct fpull_target *t, const struct fpull_nvidia_info *ni,
                                const struct fpull_tagdb *db)
{
  char buf[128];
  if (ni->driver_version) {
    cleanup_free char *name = fp_xasprintf("nvidia-%s", ni->driver_version);
    for (char *p = name; *p; p++)
      if (*p == '.')
        *p = '-';
    /* An odd version string from the driver is not worth failing a pull over. */
    if (fpull_featureset_add(t->features, name, FPULL_SRC_NVIDIA, db, NULL) != 0)
      fp_warn("NVIDIA driver version \"%s\" is not a feature name", ni->driver_version);
  }
  if (ni->cuda_version > 0) {
    snprintf(buf, sizeof buf, "cuda-%d-%d", ni->cuda_version / 1000,
             (ni->cuda_version % 1000) / 10);
    fpull_featureset_add(t->features, buf, FPULL_SRC_NVIDIA, db, NULL);
  }
  /* Only what every GPU has: lower minors of one major, so GPUs of different majors
   * share no capability at all. */
  if (ni->n_gpus) {
    int major = ni->gpus[0].cc_major, minor = ni->gpus[0].cc_minor;
    for (size_t i = 1; i < ni->n_gpus; i++) {
      if (ni->gpus[i].cc_major != major)
        major = -1;
      if (ni->gpus[i].cc_minor < minor)
        minor = ni->gpus[i].cc_minor;
    }
    if (major >= 0 && minor >= 0) {
      snprintf(buf, sizeof buf, "nv-compute-%d-%d", major, minor);
      fpull_featureset_add(t->features, buf, FPULL_SRC_NVIDIA, db, NULL);
    }
  }
  if (ni->brand && ni->n_gpus)
    t->gpu_brand = fp_xstrdup(ni->brand);
}

static void amdgpu_info_freep(struct fpull_amdgpu_info **a)
{
  fpull_amdgpu_info_free(*a);
}

static void add_detected_amdgpu(struct fpull_target *t, const struct fpull_amdgpu_info *ai,
                                const struct fpull_tagdb *db)
{
  for (size_t i = 0; ai->targets[i]; i++) {
    cleanup_free char *name = fp_xasprintf("amdgpu-%s", ai->targets[i]);
    fpull_featureset_add(t->features, name, FPULL_SRC_AMDGPU, db, NULL);
  }
}

static int detect(struct fpull_target *t, const struct fpull_tagdb *db, fpull_err *err)
{
  __attribute__((cleanup(cpu_info_freep))) struct fpull_cpu_info *ci = NULL;
  __attribute__((cleanup(nvidia_info_freep))) struct fpull_nvidia_info *ni = NULL;
  int r = fpull_detect_cpu(&ci, err);
  if (r)
    return r;
  if ((r = add_detected_cpu(t, ci, db, err)))
    return r;
  if ((r = fpull_detect_nvidia(&ni, err)))
    return r;
  add_detected_nvidia(t, ni, db);
  __attribute__((cleanup(amdgpu_info_freep))) struct fpull_amdgpu_info *ai = NULL;
  if ((r = fpull_detect_amdgpu(&ai, err)))
    return r;
  add_detected_amdgpu(t, ai, db);
  return 0;
}

/* Detection (unless turned off), the config's platform-features and FPULL_FEATURES. */
static int detected_and_configured(struct fpull_target *t, const struct fpull_target_opts *o,
                                   const struct fpull_tagdb *db,
                                   const struct fp_feature_names *names, fpull_err *err)
{
  int r;
  int want_detect = !o->no_detect && (!o->config || o->config->detect);
  if (want_detect && (r = detect(t, db, err)))
    return r;
  for (size_t i = 0; o->config && o->config->platform_features && o->config->platform_features[i];
       i++)
    if ((r = add_given(t, o->config->platform_features[i], FPULL_SRC_CONFIG, db, names, err)))
      return fpull_err_prefix(err, "%s: platform-features",
                              o->config->path ? o->config->path : "config");
  if ((r = add_given_list(t, o->env_features, FPULL_SRC_CONFIG, db, names, err)))
    return fpull_err_prefix(err, "FPULL_FEATURES");
  return 0;
}

/* 1 when the target's os and architecture are this host's. */
static int on_host(const struct fpull_target *t)
{
  struct fpull_target h = {0};
  host_os_arch(&h);
  int same = strcmp(h.os, t->os) == 0 && strcmp(h.architecture, t->architecture) == 0;
  free(h.os);
  free(h.architecture);
  return same;
}

/* 1 when extension f is beyond x86-64 level n: in a higher level's set but not in vn's, or
 * needing the vector state of a higher level (AVX-512's above v3, AVX's above v2). */
static int isa_above(const char *f, int n, const struct fpull_tagdb *db)
{
  if ((n < 4 && strncmp(f, "avx512", 6) == 0) ||
      (n < 3 && (strncmp(f, "avx", 3) == 0 || strcmp(f, "fma") == 0 || strcmp(f, "f16c") == 0 ||
                 strcmp(f, "vaes") == 0 || strcmp(f, "vpclmulqdq") == 0)))
    return 1;
  char name[32];
  snprintf(name, sizeof name, "x86-64-v%d", n);
  const char *const *own = n >= 2 ? fpull_tagdb_isa(db, name) : NULL;
  for (int m = n + 1; m <= 4; m++) {
    snprintf(name, sizeof name, "x86-64-v%d", m);
    const char *const *isa = fpull_tagdb_isa(db, name);
    for (size_t k = 0; isa && isa[k]; k++)
      if (strcmp(isa[k], f) == 0 && !fp_strv_contains((char *const *)own, f))
        return 1;
  }
  return 0;
}

/* An amd64 variant vN keeps what fits it: the extensions beyond level N go, and so do the
 * CPU tags that need one of them. Other architectures' variants keep everything. */
static void keep_within_variant(struct fpull_target *t, const struct fpull_tagdb *db)
{
  if (!t->variant || strcmp(t->architecture, "amd64") != 0 || strlen(t->variant) != 2 ||
      t->variant[1] < '1' || t->variant[1] > '4')
    return;
  int n = t->variant[1] - '0';
  struct fpull_featureset *kept = fpull_featureset_new();
  for (size_t i = 0; i < fpull_featureset_count(t->features); i++) {
    int src;
    const char *f = fpull_featureset_get(t->features, i, &src);
    const char *const *isa = fpull_tagdb_isa(db, f);
    int drop = isa_above(f, n, db);
    for (size_t k = 0; isa && isa[k] && !drop; k++)
      drop = isa_above(isa[k], n, db);
    if (!drop)
      fpull_featureset_add(kept, f, src, db, NULL);
  }
  fpull_featureset_free(t->features);
  t->features = kept;
}

/* Highest x86-64 psABI level among the features ("v1" when none). */
static char *amd64_level(const struct fpull_featureset *fs)
{
  static const char *const levels[] = {"x86-64-v4", "x86-64-v3", "x86-64-v2"};
  for (size_t i = 0; i < 3; i++)
    if (fpull_featureset_has(fs, levels[i], NULL))
      return fp_xasprintf("v%c", levels[i][8]);
  return fp_xstrdup("v1");
}

static int arm_variant(char **out, int no_detect, fpull_err *err)
{
  __attribute__((cleanup(cpu_info_freep))) struct fpull_cpu_info *ci = NULL;
  *out = NULL;
  if (no_detect)
    return 0;
  int r = fpull_detect_cpu(&ci, err);
  if (!r && ci->variant)
    *out = fp_xstrdup(ci->variant);
  return r;
}

int fpull_target_build(struct fpull_target **out, const struct fpull_target_opts *o, fpull_err *err)
{
  *out = NULL;
  int vrc = FP_OPTS_CHECK(o, FPULL_TARGET_OPTS, "fpull_target_opts", err);
  if (vrc)
    return vrc;
  __attribute__((cleanup(target_freep))) struct fpull_target *t = fp_xcalloc(1, sizeof *t);
  t->features = fpull_featureset_new();
  const struct fpull_tagdb *db = o->tagdb;
  /* Every name given is checked against one list, built once. */
  __attribute__((cleanup(names_freep))) struct fp_feature_names *names =
      fp_feature_names_new(db, o->config);
  int r;

  if (o->platform && (r = parse_platform(t, o->platform, db, names, err)))
    return r;
  if (o->platform && !o->features && !strchr(o->platform, ':') && on_host(t)) {
    /* --platform on the host's own os/architecture constrains, it does not erase: what
     * detection finds within that variant stays (contract v5); the config's and the
     * environment's features are replaced, as before. */
    int want_detect = !o->no_detect && (!o->config || o->config->detect);
    if (want_detect && (r = detect(t, db, err)))
      return r;
    keep_within_variant(t, db);
    /* What the host would be, for the note when the choice differs; a config or
     * environment that would not build one only costs the note. */
    struct fpull_target_opts ho = *o;
    ho.platform = NULL;
    fpull_err herr = {0};
    if (fpull_target_build(&t->host, &ho, &herr))
      t->host = NULL;
  } else if (o->platform || o->features) {
    /* --features and --platform replace everything else; together, their union. */
    if (!o->platform)
      host_os_arch(t);
    if (o->features && (r = add_given_list(t, o->features, FPULL_SRC_CLI, db, names, err)))
      return fpull_err_prefix(err, "--features");
    /* Given features replace the host's own on its os/architecture: keep what the host
     * would be, so that a no-fit error and the note name what the replacement dropped
     * (issue 43.9). A config or environment that would not build one only costs that. */
    if (on_host(t)) {
      struct fpull_target_opts ho = *o;
      ho.platform = NULL;
      ho.features = NULL;
      fpull_err herr = {0};
      if (fpull_target_build(&t->host, &ho, &herr))
        t->host = NULL;
    }
  } else {
    host_os_arch(t);
    if ((r = detected_and_configured(t, o, db, names, err)))
      return r;
  }
  fp_featureset_set_arch(t->features, t->architecture);
  if ((r = fpull_featureset_imply(t->features, db, err)))
    return r;

  if (!t->variant) {
    if (strcmp(t->architecture, "amd64") == 0)
      t->variant = amd64_level(t->features);
    else if (strcmp(t->architecture, "arm64") == 0)
      t->variant = fp_xstrdup("v8");
    else if (strcmp(t->architecture, "arm") == 0 &&
             (r = arm_variant(&t->variant, o->no_detect, err)))
      return r;
  }
  *out = steal_pointer(&t);
  return 0;
}
