/* A stand-in for libnvidia-ml.so.1 with the C signatures fpull uses, answering from the
 * environment: FAKE_NVML_DRIVER ("580.159.04"), FAKE_NVML_CUDA (12040), FAKE_NVML_GPUS
 * (compute capabilities, one per GPU: "8.6,7.5"; empty: no GPU), FAKE_NVML_INIT_FAIL=1,
 * FAKE_NVML_DENIED (indexes whose handle is NVML_ERROR_NO_PERMISSION, as in a job whose
 * device cgroup holds other GPUs: "1,3"), FAKE_NVML_BRAND (nvmlBrandType_t number, one for
 * every GPU, default 2 = tesla), FAKE_NVML_MIG (indexes of GPUs in MIG mode, each with two
 * instances). GPU i has UUID GPU-fa4e0000-0000-4000-8000-00000000000i; instance k of GPU
 * i has MIG-fa4e0000-0000-4000-8000-0000000000ik.
 * Built twice: the full library, and with FAKE_NVML_MINIMAL one that lacks the CUDA version
 * and compute capability entry points, as old drivers do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
struct fake_dev {
  int major, minor;
  unsigned index;
  int mig; /* -1: a full GPU; k: MIG instance k of GPU index */
};
typedef struct fake_dev *nvmlDevice_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
};

#define MAX_GPUS 16

static struct fake_dev devs[MAX_GPUS];
static struct fake_dev migs[MAX_GPUS][2];
static unsigned n_devs;
static int initialised;

/* Counters a test can read through dlsym to see that every init is matched by a shutdown. */
int fake_nvml_inits, fake_nvml_shutdowns;

static const char *env(const char *name, const char *dflt)
{
  const char *v = getenv(name);
  return v ? v : dflt;
}

/* 1 when index i is in the comma-separated list of variable name. */
static int listed(const char *name, unsigned i)
{
  const char *p = env(name, "");
  while (*p) {
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p)
      return 0;
    if (v == i)
      return 1;
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}

nvmlReturn_t nvmlInit_v2(void)
{
  if (strcmp(env("FAKE_NVML_INIT_FAIL", "0"), "1") == 0)
    return NVML_ERROR_DRIVER_NOT_LOADED;
  n_devs = 0;
  const char *p = env("FAKE_NVML_GPUS", "8.6");
  while (*p && n_devs < MAX_GPUS) {
    int major, minor, used;
    if (sscanf(p, "%d.%d%n", &major, &minor, &used) != 2)
      break;
    devs[n_devs] = (struct fake_dev){major, minor, n_devs, -1};
    for (int k = 0; k < 2; k++)
      migs[n_devs][k] = (struct fake_dev){major, minor, n_devs, k};
    n_devs++;
    p += used;
    if (*p == ',')
      p++;
  }
  initialised = 1;
  fake_nvml_inits++;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  initialised = 0;
  fake_nvml_shutdowns++;
  return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
  switch (r) {
  case NVML_SUCCESS:
    return "Success";
  case NVML_ERROR_UNINITIALIZED:
    return "Uninitialized";
  case NVML_ERROR_DRIVER_NOT_LOADED:
    return "Driver Not Loaded";
  case NVML_ERROR_NO_PERMISSION:
    return "Insufficient Permissions";
  case NVML_ERROR_INSUFFICIENT_SIZE:
    return "Insufficient Size";
  default:
    return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  const char *v = env("FAKE_NVML_DRIVER", "580.159.04");
  if (!version || strlen(v) + 1 > length)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(version, v, strlen(v) + 1);
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_MINIMAL
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cuda)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (!cuda)
    return NVML_ERROR_INVALID_ARGUMENT;
  *cuda = atoi(env("FAKE_NVML_CUDA", "12040"));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cuda)
{
  return nvmlSystemGetCudaDriverVersion_v2(cuda);
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (!dev || !major || !minor)
    return NVML_ERROR_INVALID_ARGUMENT;
  *major = dev->major;
  *minor = dev->minor;
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (!count)
    return NVML_ERROR_INVALID_ARGUMENT;
  *count = n_devs;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (index >= n_devs || !dev)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (listed("FAKE_NVML_DENIED", index))
    return NVML_ERROR_NO_PERMISSION;
  *dev = &devs[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (!dev || !uuid)
    return NVML_ERROR_INVALID_ARGUMENT;
  int n = dev->mig < 0
              ? snprintf(uuid, length, "GPU-fa4e0000-0000-4000-8000-%012u", dev->index)
              : snprintf(uuid, length, "MIG-fa4e0000-0000-4000-8000-%011u%d", dev->index, dev->mig);
  return n < 0 || (unsigned)n >= length ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t dev, int *brand)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (!dev || !brand)
    return NVML_ERROR_INVALID_ARGUMENT;
  *brand = atoi(env("FAKE_NVML_BRAND", "2"));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned *current, unsigned *pending)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (!dev || !current || !pending || dev->mig >= 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  *current = *pending = listed("FAKE_NVML_MIG", dev->index) ? 1 : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned *count)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (!dev || !count)
    return NVML_ERROR_INVALID_ARGUMENT;
  *count = 7; /* an A100's limit: more slots than instances, as on real parts */
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned index,
                                                 nvmlDevice_t *mig)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (!dev || !mig || dev->mig >= 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!listed("FAKE_NVML_MIG", dev->index) || index >= 2)
    return NVML_ERROR_NOT_FOUND;
  *mig = &migs[dev->index][index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length)
{
  if (!initialised)
    return NVML_ERROR_UNINITIALIZED;
  if (!dev || !name)
    return NVML_ERROR_INVALID_ARGUMENT;
  int n = snprintf(name, length, "Fake GPU sm_%d%d", dev->major, dev->minor);
  return n < 0 || (unsigned)n >= length ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}
