/* NVIDIA detection: NVML loaded at run time (the same binary must run where there is no
 * driver), with /proc/driver/nvidia/version as the fallback for the driver version. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/detect.h"
#include "util.h"

/* The few NVML declarations used (nvml.h is not a build dependency). */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS 0
#define NVML_NAME_LEN 96
#define NVML_VERSION_LEN 80

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
};

/* The first of the names the library exports (newer versions first), or NULL. */
static void *sym(void *dl, const char *a, const char *b)
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

static void set_note(struct fpull_nvidia_info *ni, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_note(struct fpull_nvidia_info *ni, const char *fmt, ...)
{
  if (ni->note)
    return; /* the first reason is the useful one */
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&ni->note, fmt, ap) < 0)
    abort();
  va_end(ap);
}

/* Queries NVML; on any failure leaves a note and whatever it had read. */
static void query_nvml(struct fpull_nvidia_info *ni, const char *lib)
{
  struct nvml n = {0};
  /* RTLD_LOCAL: NVML's symbols must not leak into the process's namespace. */
  n.dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!n.dl) {
    const char *e = dlerror();
    set_note(ni, "%s not loaded: %s", lib, e ? e : "unknown error");
    return;
  }
  n.init = sym(n.dl, "nvmlInit_v2", "nvmlInit");
  n.shutdown = sym(n.dl, "nvmlShutdown", NULL);
  n.error_string = sym(n.dl, "nvmlErrorString", NULL);
  n.driver_version = sym(n.dl, "nvmlSystemGetDriverVersion", NULL);
  n.cuda_version = sym(n.dl, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
  n.count = sym(n.dl, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  n.handle = sym(n.dl, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  n.cc = sym(n.dl, "nvmlDeviceGetCudaComputeCapability", NULL);
  n.name = sym(n.dl, "nvmlDeviceGetName", NULL);
  if (!n.init || !n.shutdown) {
    set_note(ni, "%s lacks nvmlInit_v2 or nvmlShutdown", lib);
    dlclose(n.dl);
    return;
  }
  nvmlReturn_t r = n.init();
  if (r != NVML_SUCCESS) {
    set_note(ni, "NVML initialisation failed: %s (%d)", nvml_err(&n, r), r);
    dlclose(n.dl);
    return;
  }

  char buf[NVML_VERSION_LEN + 1] = "";
  if (!n.driver_version)
    set_note(ni, "%s lacks nvmlSystemGetDriverVersion", lib);
  else if ((r = n.driver_version(buf, NVML_VERSION_LEN)) != NVML_SUCCESS)
    set_note(ni, "nvmlSystemGetDriverVersion: %s (%d)", nvml_err(&n, r), r);
  else if (buf[0])
    ni->driver_version = fp_xstrndup(buf, strnlen(buf, NVML_VERSION_LEN));

  int cuda = 0;
  if (!n.cuda_version)
    set_note(ni, "%s lacks nvmlSystemGetCudaDriverVersion", lib);
  else if ((r = n.cuda_version(&cuda)) != NVML_SUCCESS)
    set_note(ni, "nvmlSystemGetCudaDriverVersion: %s (%d)", nvml_err(&n, r), r);
  else if (cuda > 0)
    ni->cuda_version = cuda;

  unsigned count = 0;
  if (!n.count || !n.handle || !n.cc) {
    /* Without compute capabilities a GPU tells nothing the features could use. */
    set_note(ni, "%s lacks %s", lib,
             !n.count    ? "nvmlDeviceGetCount_v2"
             : !n.handle ? "nvmlDeviceGetHandleByIndex_v2"
                         : "nvmlDeviceGetCudaComputeCapability");
  } else if ((r = n.count(&count)) != NVML_SUCCESS) {
    set_note(ni, "nvmlDeviceGetCount_v2: %s (%d)", nvml_err(&n, r), r);
  } else if (count == 0) {
    set_note(ni, "NVML reports no GPU");
  } else {
    if (count > 1024)
      count = 1024; /* a broken library must not make us allocate without bound */
    ni->gpus = fp_xcalloc(count, sizeof *ni->gpus);
    for (unsigned i = 0; i < count; i++) {
      nvmlDevice_t dev = NULL;
      int major = 0, minor = 0;
      if ((r = n.handle(i, &dev)) != NVML_SUCCESS ||
          (r = n.cc(dev, &major, &minor)) != NVML_SUCCESS) {
        /* One unreadable GPU: reporting the others would overstate what every GPU has. */
        set_note(ni, "GPU %u: %s (%d)", i, nvml_err(&n, r), r);
        for (size_t j = 0; j < ni->n_gpus; j++)
          free(ni->gpus[j].name);
        free(ni->gpus);
        ni->gpus = NULL;
        ni->n_gpus = 0;
        break;
      }
      struct fpull_gpu *g = &ni->gpus[ni->n_gpus++];
      g->cc_major = major;
      g->cc_minor = minor;
      char name[NVML_NAME_LEN + 1] = "";
      if (n.name && n.name(dev, name, NVML_NAME_LEN) == NVML_SUCCESS && name[0])
        g->name = fp_xstrndup(name, strnlen(name, NVML_NAME_LEN));
    }
    if (!ni->n_gpus) {
      free(ni->gpus);
      ni->gpus = NULL;
    }
  }
  n.shutdown();
  dlclose(n.dl);
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
  query_nvml(ni, lib && *lib ? lib : "libnvidia-ml.so.1");

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
  for (size_t i = 0; i < ni->n_gpus; i++)
    free(ni->gpus[i].name);
  free(ni->gpus);
  free(ni->note);
  free(ni);
}
