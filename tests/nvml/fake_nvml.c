/* A stand-in for libnvidia-ml.so.1 with the C signatures fpull uses, answering from the
 * environment: FAKE_NVML_DRIVER ("580.159.04"), FAKE_NVML_CUDA (12040), FAKE_NVML_GPUS
 * (compute capabilities, one per GPU: "8.6,7.5"; empty: no GPU), FAKE_NVML_INIT_FAIL=1.
 * Built twice: the full library, and with FAKE_NVML_MINIMAL one that lacks the CUDA version
 * and compute capability entry points, as old drivers do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
struct fake_dev {
  int major, minor;
};
typedef struct fake_dev *nvmlDevice_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
};

#define MAX_GPUS 16

static struct fake_dev devs[MAX_GPUS];
static unsigned n_devs;
static int initialised;

/* Counters a test can read through dlsym to see that every init is matched by a shutdown. */
int fake_nvml_inits, fake_nvml_shutdowns;

static const char *env(const char *name, const char *dflt)
{
  const char *v = getenv(name);
  return v ? v : dflt;
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
    devs[n_devs++] = (struct fake_dev){major, minor};
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
  *dev = &devs[index];
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
