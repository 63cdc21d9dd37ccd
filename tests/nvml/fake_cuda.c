/* A stand-in for the CUDA driver library libcuda.so.1 with the C signatures fpull uses,
 * answering from the environment: FAKE_CUDA_VERSION (cuDriverGetVersion's 12040 for 12.4),
 * FAKE_CUDA_GPUS (compute capabilities, one per device: "9.0,9.0"; empty: none),
 * FAKE_CUDA_INIT_FAIL=1 (cuInit answers CUDA_ERROR_NO_DEVICE, 100). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
};

#define MAX_GPUS 16
static int majors[MAX_GPUS], minors[MAX_GPUS], n_devs, initialised;

static const char *env(const char *name, const char *dflt)
{
  const char *v = getenv(name);
  return v ? v : dflt;
}

CUresult cuInit(unsigned flags)
{
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (strcmp(env("FAKE_CUDA_INIT_FAIL", "0"), "1") == 0)
    return CUDA_ERROR_NO_DEVICE;
  n_devs = 0;
  const char *p = env("FAKE_CUDA_GPUS", "9.0");
  while (*p && n_devs < MAX_GPUS) {
    int used;
    if (sscanf(p, "%d.%d%n", &majors[n_devs], &minors[n_devs], &used) != 2)
      break;
    n_devs++;
    p += used;
    if (*p == ',')
      p++;
  }
  initialised = 1;
  return CUDA_SUCCESS;
}

/* Like the real one, this works before cuInit. */
CUresult cuDriverGetVersion(int *v)
{
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  *v = atoi(env("FAKE_CUDA_VERSION", "12040"));
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = n_devs;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!dev || ordinal < 0 || ordinal >= n_devs)
    return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attrib, CUdevice dev)
{
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!v || dev < 0 || dev >= n_devs)
    return CUDA_ERROR_INVALID_DEVICE;
  if (attrib == 75) /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
    *v = majors[dev];
  else if (attrib == 76) /* ..._MINOR */
    *v = minors[dev];
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
  if (!initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!name || len <= 0 || dev < 0 || dev >= n_devs)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "Fake CUDA GPU sm_%d%d", majors[dev], minors[dev]);
  return CUDA_SUCCESS;
}
