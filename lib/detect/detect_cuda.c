/* The CUDA driver library (libcuda.so.1) as the fallback of NVIDIA detection: containers
 * built with the driver's CUDA library mounted but not NVML still tell their CUDA version
 * and compute capabilities. Loaded at run time like NVML. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "detect_gpu.h"
#include "base/util.h"

#define CUDA_NAME_LEN 96
/* The CUDA driver API (libcuda.so.1), for containers that have it but not NVML. */
typedef int CUresult;
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

void fp_query_cuda(struct fpull_nvidia_info *ni, const char *lib)
{
  void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *e = dlerror();
    fp_nvidia_note(ni, "%s not loaded either: %s", lib, e ? e : "unknown error");
    return;
  }
  CUresult (*init)(unsigned) = fp_dlsym2(dl, "cuInit", NULL);
  CUresult (*version)(int *) = fp_dlsym2(dl, "cuDriverGetVersion", NULL);
  CUresult (*count)(int *) = fp_dlsym2(dl, "cuDeviceGetCount", NULL);
  CUresult (*get)(int *, int) = fp_dlsym2(dl, "cuDeviceGet", NULL);
  CUresult (*attr)(int *, int, int) = fp_dlsym2(dl, "cuDeviceGetAttribute", NULL);
  CUresult (*name)(char *, int, int) = fp_dlsym2(dl, "cuDeviceGetName", NULL);
  CUresult r;
  int v = 0, n = 0, initialised = 0;
  if (!init || !version || !count || !get || !attr) {
    fp_nvidia_note(ni, "%s lacks the CUDA driver API entry points", lib);
  } else if ((r = init(0)) != 0) {
    fp_nvidia_note(ni, "%s: cuInit failed (CUresult %d)", lib, r);
  } else {
    initialised = 1;
    if ((r = version(&v)) == 0 && v > 0)
      ni->cuda_version = v;
    if ((r = count(&n)) != 0 || n <= 0) {
      fp_nvidia_note(ni, "%s reports no GPU", lib);
      n = 0;
    }
    if (n > 1024)
      n = 1024;
    ni->gpus = n ? fp_xcalloc((size_t)n, sizeof *ni->gpus) : NULL;
    for (int i = 0; i < n; i++) {
      int dev = 0, major = 0, minor = 0;
      if (get(&dev, i) != 0 ||
          attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != 0 ||
          attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != 0) {
        /* As with NVML: a partial list would overstate what every GPU has. */
        fp_nvidia_note(ni, "%s: GPU %d unreadable", lib, i);
        for (size_t j = 0; j < ni->n_gpus; j++)
          free(ni->gpus[j].name);
        free(ni->gpus);
        ni->gpus = NULL;
        ni->n_gpus = 0;
        break;
      }
      struct fpull_gpu *o = &ni->gpus[ni->n_gpus++];
      o->cc_major = major;
      o->cc_minor = minor;
      char buf[CUDA_NAME_LEN + 1] = "";
      if (name && name(buf, CUDA_NAME_LEN, dev) == 0 && buf[0])
        o->name = fp_xstrndup(buf, strnlen(buf, CUDA_NAME_LEN));
    }
    if (ni->n_gpus)
      fp_nvidia_note(ni, "GPUs and CUDA version from %s (no NVML)", lib);
  }
  /* libcuda keeps driver threads and state: it is never unloaded once initialised. */
  if (!initialised)
    dlclose(dl);
}
