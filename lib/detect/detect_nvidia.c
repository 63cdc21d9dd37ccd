/* NVIDIA detection: NVML loaded at run time (the same binary must run where there is no
 * driver), with /proc/driver/nvidia/version as the fallback for the driver version. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "detect_gpu.h"
#include "fpull/detect.h"
#include "base/util.h"

/* The few NVML declarations used (nvml.h is not a build dependency). */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_NAME_LEN 96
#define NVML_VERSION_LEN 80
#define NVML_UUID_LEN 96
#define NVML_MIG_ENABLE 1

struct nvml {
  void *dl;
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(nvmlReturn_t);
  nvmlReturn_t (*driver_version)(char *, unsigned);
  nvmlReturn_t (*cuda_version)(int *);
  nvmlReturn_t (*count)(unsigned *);
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *);
  nvmlReturn_t (*cc)(nvmlDevice_t, int *, int *);
  nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*brand)(nvmlDevice_t, int *);
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned *, unsigned *);
  nvmlReturn_t (*mig_max)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned, nvmlDevice_t *);
};

/* nvmlBrandType_t in the names NVIDIA_REQUIRE_CUDA's brand= clauses use (the CUDA images
 * list brand=unknown, quadro, tesla, nvs, grid, geforce, titan, vapps, vpc, vcs, vws,
 * cloudgaming, quadrortx, nvidiartx, nvidia, geforcertx, titanrtx). */
static const char *brand_name(int b)
{
  static const char *const names[] = {
      "unknown",   "quadro",    "tesla",  "nvs",        "grid",     "geforce",
      "titan",     "vapps",     "vpc",    "vcs",        "vws",      "cloudgaming",
      "quadrortx", "nvidiartx", "nvidia", "geforcertx", "titanrtx",
  };
  return b >= 0 && (size_t)b < sizeof names / sizeof names[0] ? names[b] : "unknown";
}

void *fp_dlsym2(void *dl, const char *a, const char *b)
{
  void *p = dlsym(dl, a);
  if (!p && b)
    p = dlsym(dl, b);
  return p;
}

static const char *nvml_err(const struct nvml *n, nvmlReturn_t r)
{
  const char *s = n->error_string ? n->error_string(r) : NULL;
  return s ? s : "NVML error";
}

/* Everything worth telling a person goes into reason; the first thing also into note (the
 * v2 field, "why nothing was found"). */
void fp_nvidia_note(struct fpull_nvidia_info *ni, const char *fmt, ...)
{
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    abort();
  va_end(ap);
  char *r = ni->reason ? fp_xasprintf("%s; %s", ni->reason, msg) : fp_xstrdup(msg);
  free(ni->reason);
  ni->reason = r;
  if (!ni->note)
    ni->note = msg;
  else
    free(msg);
}

/* A GPU as NVML showed it, before the visible-devices filters. */
struct seen_gpu {
  unsigned index; /* NVML's */
  int major, minor, brand;
  char *name, *uuid;
  char **mig; /* UUIDs of its MIG instances */
  int keep;
};

static void seen_free(struct seen_gpu *g, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    free(g[i].name);
    free(g[i].uuid);
    fpull_strv_free(g[i].mig);
  }
  free(g);
}

/* Which of the n GPUs one visible-devices token names: -1 none (or ambiguous), else the
 * position. Only GPUs still kept count: indexes count the GPUs this process may open and
 * an earlier filter left (NVIDIA_VISIBLE_DEVICES=0,2 then CUDA_VISIBLE_DEVICES=1 is GPU 2,
 * as inside a container that holds GPUs 0 and 2), as CUDA numbers them. */
static long visible_token(const char *tok, const struct seen_gpu *g, size_t n)
{
  if (!*tok)
    return -1;
  if (strspn(tok, "0123456789") == strlen(tok)) {
    unsigned long k = strtoul(tok, NULL, 10);
    for (size_t i = 0; i < n; i++)
      if (g[i].keep && k-- == 0)
        return (long)i;
    return -1;
  }
  long found = -1;
  int hits = 0;
  /* Old MIG syntax MIG-GPU-<uuid>/<gi>/<ci>: the parent GPU by its UUID. */
  cleanup_free char *parent = NULL;
  if (strncasecmp(tok, "MIG-GPU-", 8) == 0) {
    const char *slash = strchr(tok, '/');
    parent = fp_xstrndup(tok + 4, slash ? (size_t)(slash - tok - 4) : strlen(tok + 4));
  }
  for (size_t i = 0; i < n; i++) {
    int match = 0;
    if (!g[i].keep)
      continue;
    if (parent)
      match = g[i].uuid && strncasecmp(g[i].uuid, parent, strlen(parent)) == 0;
    else if (strncasecmp(tok, "MIG-", 4) == 0)
      for (size_t k = 0; g[i].mig && g[i].mig[k] && !match; k++)
        match = strncasecmp(g[i].mig[k], tok, strlen(tok)) == 0;
    else
      match = g[i].uuid && strncasecmp(g[i].uuid, tok, strlen(tok)) == 0;
    if (match) {
      found = (long)i;
      hits++;
    }
  }
  return hits == 1 ? found : -1;
}

/* Narrows g[].keep by the variable VAR when it is set. */
static void apply_visible(struct fpull_nvidia_info *ni, const char *var, struct seen_gpu *g,
                          size_t n)
{
  const char *val = getenv(var);
  if (!val)
    return;
  int nvidia = strcmp(var, "NVIDIA_VISIBLE_DEVICES") == 0;
  if (nvidia && strcasecmp(val, "all") == 0)
    return;
  int *sel = fp_xcalloc(n ? n : 1, sizeof *sel);
  if (!*val || (nvidia && (strcasecmp(val, "none") == 0 || strcasecmp(val, "void") == 0))) {
    /* No device at all: sel stays empty. */
  } else {
    cleanup_free char *copy = fp_xstrdup(val);
    char *save = NULL;
    if (nvidia) {
      /* Inside a container the runtime has applied NVIDIA_VISIBLE_DEVICES already: NVML there
       * lists only the GPUs it names, renumbered from 0, so a host index beyond that list
       * means "applied", not "no such GPU". (Indexes within it are then 0..n-1 and name
       * every GPU anyway.) */
      size_t kept = 0;
      for (size_t i = 0; i < n; i++)
        kept += g[i].keep;
      for (const char *p = val; *p;) {
        p += strspn(p, " ,");
        size_t l = strspn(p, "0123456789");
        if (l && (!p[l] || p[l] == ',' || p[l] == ' ') && strtoul(p, NULL, 10) >= kept) {
          fp_nvidia_note(ni,
                         "%s=\"%s\" names more GPUs than NVML lists (%zu): taken as applied "
                         "by the container runtime",
                         var, val, kept);
          free(sel);
          return;
        }
        p += strcspn(p, ",");
      }
    }
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      while (isspace((unsigned char)*tok))
        tok++;
      size_t l = strlen(tok);
      while (l && isspace((unsigned char)tok[l - 1]))
        tok[--l] = '\0';
      long k = visible_token(tok, g, n);
      if (k < 0) {
        /* CUDA stops at the first entry that names no device; so do we, and say so. */
        fp_nvidia_note(ni,
                       "%s: \"%s\" names no GPU this process may use; the entries from it on are "
                       "ignored",
                       var, tok);
        break;
      }
      sel[k] = 1;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (g[i].keep && !sel[i]) {
      g[i].keep = 0;
      fp_nvidia_note(ni, "GPU %u%s%s%s not in %s=\"%s\"", g[i].index, g[i].uuid ? " (" : "",
                     g[i].uuid ? g[i].uuid : "", g[i].uuid ? ")" : "", var, val);
    }
  free(sel);
}

/* The UUIDs of a GPU's MIG instances, when MIG is on. */
static char **mig_uuids(const struct nvml *n, nvmlDevice_t dev)
{
  char **v = NULL;
  unsigned cur = 0, pend = 0, max = 0;
  if (!n->mig_mode || !n->mig_max || !n->mig_handle || !n->uuid ||
      n->mig_mode(dev, &cur, &pend) != NVML_SUCCESS || cur != NVML_MIG_ENABLE ||
      n->mig_max(dev, &max) != NVML_SUCCESS)
    return NULL;
  if (max > 64)
    max = 64;
  for (unsigned k = 0; k < max; k++) {
    nvmlDevice_t mig = NULL;
    char buf[NVML_UUID_LEN + 1] = "";
    /* Slots without an instance answer NOT_FOUND: only existing instances count. */
    if (n->mig_handle(dev, k, &mig) != NVML_SUCCESS ||
        n->uuid(mig, buf, NVML_UUID_LEN) != NVML_SUCCESS || !buf[0])
      continue;
    if (!v)
      v = fp_xcalloc(1, sizeof *v);
    v = fp_strv_push(v, buf);
  }
  return v;
}

/* Reads every GPU; denied ones are skipped with a note. Returns the number read, or -1
 * when one failed otherwise (then nothing is reported: the others would overstate what
 * every GPU has). */
static long read_gpus(struct fpull_nvidia_info *ni, const struct nvml *n, unsigned count,
                      struct seen_gpu **out)
{
  struct seen_gpu *g = fp_xcalloc(count, sizeof *g);
  size_t ng = 0;
  for (unsigned i = 0; i < count; i++) {
    nvmlDevice_t dev = NULL;
    int major = 0, minor = 0;
    nvmlReturn_t r;
    if ((r = n->handle(i, &dev)) != NVML_SUCCESS ||
        (r = n->cc(dev, &major, &minor)) != NVML_SUCCESS) {
      if (r == NVML_ERROR_NO_PERMISSION) {
        /* Normal in a job whose device cgroup holds other GPUs: not ours to count. */
        fp_nvidia_note(ni, "GPU %u: %s (%d), skipped", i, nvml_err(n, r), r);
        continue;
      }
      fp_nvidia_note(ni, "GPU %u: %s (%d)", i, nvml_err(n, r), r);
      seen_free(g, ng);
      return -1;
    }
    struct seen_gpu *s = &g[ng++];
    s->index = i;
    s->major = major;
    s->minor = minor;
    s->keep = 1;
    s->brand = -1;
    char buf[NVML_UUID_LEN + NVML_NAME_LEN + 1] = "";
    if (n->name && n->name(dev, buf, NVML_NAME_LEN) == NVML_SUCCESS && buf[0])
      s->name = fp_xstrndup(buf, strnlen(buf, NVML_NAME_LEN));
    buf[0] = '\0';
    if (n->uuid && n->uuid(dev, buf, NVML_UUID_LEN) == NVML_SUCCESS && buf[0])
      s->uuid = fp_xstrndup(buf, strnlen(buf, NVML_UUID_LEN));
    int b = -1;
    if (n->brand && n->brand(dev, &b) == NVML_SUCCESS)
      s->brand = b;
    s->mig = mig_uuids(n, dev);
  }
  *out = g;
  return (long)ng;
}

/* Queries NVML; on any failure leaves a note and whatever it had read. Returns 1 when NVML
 * initialised (its answer stands, GPUs or not), 0 when it is unusable. */
static int query_nvml(struct fpull_nvidia_info *ni, const char *lib)
{
  struct nvml n = {0};
  /* RTLD_LOCAL: NVML's symbols must not leak into the process's namespace. */
  n.dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!n.dl) {
    const char *e = dlerror();
    fp_nvidia_note(ni, "%s not loaded: %s", lib, e ? e : "unknown error");
    return 0;
  }
  n.init = fp_dlsym2(n.dl, "nvmlInit_v2", "nvmlInit");
  n.shutdown = fp_dlsym2(n.dl, "nvmlShutdown", NULL);
  n.error_string = fp_dlsym2(n.dl, "nvmlErrorString", NULL);
  n.driver_version = fp_dlsym2(n.dl, "nvmlSystemGetDriverVersion", NULL);
  n.cuda_version =
      fp_dlsym2(n.dl, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
  n.count = fp_dlsym2(n.dl, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  n.handle = fp_dlsym2(n.dl, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  n.cc = fp_dlsym2(n.dl, "nvmlDeviceGetCudaComputeCapability", NULL);
  n.name = fp_dlsym2(n.dl, "nvmlDeviceGetName", NULL);
  n.uuid = fp_dlsym2(n.dl, "nvmlDeviceGetUUID", NULL);
  n.brand = fp_dlsym2(n.dl, "nvmlDeviceGetBrand", NULL);
  n.mig_mode = fp_dlsym2(n.dl, "nvmlDeviceGetMigMode", NULL);
  n.mig_max = fp_dlsym2(n.dl, "nvmlDeviceGetMaxMigDeviceCount", NULL);
  n.mig_handle = fp_dlsym2(n.dl, "nvmlDeviceGetMigDeviceHandleByIndex", NULL);
  if (!n.init || !n.shutdown) {
    fp_nvidia_note(ni, "%s lacks nvmlInit_v2 or nvmlShutdown", lib);
    dlclose(n.dl);
    return 0;
  }
  nvmlReturn_t r = n.init();
  if (r != NVML_SUCCESS) {
    fp_nvidia_note(ni, "NVML initialisation failed: %s (%d)", nvml_err(&n, r), r);
    dlclose(n.dl);
    return 0;
  }

  char buf[NVML_VERSION_LEN + 1] = "";
  if (!n.driver_version)
    fp_nvidia_note(ni, "%s lacks nvmlSystemGetDriverVersion", lib);
  else if ((r = n.driver_version(buf, NVML_VERSION_LEN)) != NVML_SUCCESS)
    fp_nvidia_note(ni, "nvmlSystemGetDriverVersion: %s (%d)", nvml_err(&n, r), r);
  else if (buf[0])
    ni->driver_version = fp_xstrndup(buf, strnlen(buf, NVML_VERSION_LEN));

  int cuda = 0;
  if (!n.cuda_version)
    fp_nvidia_note(ni, "%s lacks nvmlSystemGetCudaDriverVersion", lib);
  else if ((r = n.cuda_version(&cuda)) != NVML_SUCCESS)
    fp_nvidia_note(ni, "nvmlSystemGetCudaDriverVersion: %s (%d)", nvml_err(&n, r), r);
  else if (cuda > 0)
    ni->cuda_version = cuda;

  unsigned count = 0;
  struct seen_gpu *g = NULL;
  long ng = 0;
  if (!n.count || !n.handle || !n.cc) {
    /* Without compute capabilities a GPU tells nothing the features could use. */
    fp_nvidia_note(ni, "%s lacks %s", lib,
                   !n.count    ? "nvmlDeviceGetCount_v2"
                   : !n.handle ? "nvmlDeviceGetHandleByIndex_v2"
                               : "nvmlDeviceGetCudaComputeCapability");
  } else if ((r = n.count(&count)) != NVML_SUCCESS) {
    fp_nvidia_note(ni, "nvmlDeviceGetCount_v2: %s (%d)", nvml_err(&n, r), r);
  } else if (count == 0) {
    fp_nvidia_note(ni, "NVML reports no GPU");
  } else {
    if (count > 1024)
      count = 1024; /* a broken library must not make us allocate without bound */
    ng = read_gpus(ni, &n, count, &g);
  }
  if (ng > 0) {
    apply_visible(ni, "NVIDIA_VISIBLE_DEVICES", g, (size_t)ng);
    apply_visible(ni, "CUDA_VISIBLE_DEVICES", g, (size_t)ng);
    ni->gpus = fp_xcalloc((size_t)ng, sizeof *ni->gpus);
    int brand = -2; /* -2: none seen yet, -1: unknown or mixed */
    for (long i = 0; i < ng; i++) {
      if (!g[i].keep)
        continue;
      struct fpull_gpu *o = &ni->gpus[ni->n_gpus++];
      o->cc_major = g[i].major;
      o->cc_minor = g[i].minor;
      o->name = steal_pointer(&g[i].name);
      o->uuid = steal_pointer(&g[i].uuid);
      brand = brand == -2 || brand == g[i].brand ? g[i].brand : -1;
    }
    if (brand >= 0)
      ni->brand = fp_xstrdup(brand_name(brand));
    if (!ni->n_gpus) {
      free(ni->gpus);
      ni->gpus = NULL;
      fp_nvidia_note(ni, "no GPU left to count");
    }
  } else if (ng == 0 && count > 0) {
    fp_nvidia_note(ni, "no GPU NVML lists may be used by this process");
  }
  if (g) /* set only when read_gpus succeeded, also with every GPU skipped (ng 0) */
    seen_free(g, (size_t)ng);
  n.shutdown();
  dlclose(n.dl);
  return 1;
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..." -> "580.159.04".
 * The version is the first word of digits and dots after "Kernel Module". */
static char *parse_proc_version(const char *text)
{
  const char *p = strstr(text, "Kernel Module");
  if (!p)
    p = strstr(text, "NVRM version:");
  if (!p)
    return NULL;
  const char *eol = strchr(p, '\n');
  for (; *p && (!eol || p < eol); p++) {
    if (!isdigit((unsigned char)*p) || (p > text && !isspace((unsigned char)p[-1])))
      continue;
    size_t n = strspn(p, "0123456789.");
    if (memchr(p, '.', n) && (!p[n] || isspace((unsigned char)p[n])))
      return fp_xstrndup(p, n);
  }
  return NULL;
}

int fpull_detect_nvidia(struct fpull_nvidia_info **out, fpull_err *err)
{
  *out = NULL;
  struct fpull_nvidia_info *ni = fp_xcalloc(1, sizeof *ni);
  const char *lib = getenv("FPULL_NVML_LIBRARY");
  if (!query_nvml(ni, lib && *lib ? lib : "libnvidia-ml.so.1")) {
    const char *cu = getenv("FPULL_CUDA_LIBRARY");
    fp_query_cuda(ni, cu && *cu ? cu : "libcuda.so.1");
  }

  if (!ni->driver_version) {
    const char *proc = getenv("FPULL_NVIDIA_PROC_VERSION");
    if (!proc || !*proc)
      proc = "/proc/driver/nvidia/version";
    cleanup_free char *text = NULL;
    size_t len;
    if (fp_read_file(proc, 64 * 1024, &text, &len) == 0) {
      ni->driver_version = parse_proc_version(text);
      if (!ni->driver_version)
        fp_debug("%s: no driver version found", proc);
    } else if (errno != ENOENT) {
      fp_debug("%s: %s", proc, strerror(errno));
    }
  }
  *out = ni;
  return 0;
}

void fpull_nvidia_info_free(struct fpull_nvidia_info *ni)
{
  if (!ni)
    return;
  free(ni->driver_version);
  for (size_t i = 0; i < ni->n_gpus; i++) {
    free(ni->gpus[i].name);
    free(ni->gpus[i].uuid);
  }
  free(ni->gpus);
  free(ni->note);
  free(ni->brand);
  free(ni->reason);
  free(ni);
}
