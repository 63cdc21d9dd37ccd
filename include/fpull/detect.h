/* fpull: what the host is: CPU (CPUID, XCR0), NVIDIA (NVML at run time), os/arch. */
#ifndef FPULL_DETECT_H
#define FPULL_DETECT_H

#include "error.h"

struct fpull_cpu_info {
  char *architecture; /* normalised: amd64, arm64, arm, ppc64le, ... */
  char *variant;      /* arm64 "v8"; arm from AT_PLATFORM/HWCAP ("v7"); ppc64le from
                         AT_PLATFORM ("power9"); else NULL (amd64: derived from the levels) */
  char *vendor;       /* information only */
  char *codename;     /* information only (libcpuid's guess, often wrong on VMs) */
  char **isa;         /* extensions CPUID reports and the OS enables, lower case, names as in
                         data/cputags.yaml ("avx2", "rdseed", "avx512f"); NULL-terminated */
  /* Added in v6. x86: CPUID.1's family and model as the SDM and the APM display them
   * (extended family and model folded in: 0x19 and 0x11 for a Zen 4 EPYC, 6 and 0x8f for a
   * Sapphire Rapids), its stepping, and the hypervisor bit (CPUID.1:ECX[31]: a virtual
   * machine, whose hypervisor may hide extensions its chip has). arm64: MIDR_EL1's
   * implementer as family and part number as model (0x41 and 0xd4f for a Neoverse V2), its
   * variant (bits 23:20) and revision (bits 3:0) as stepping, variant * 16 + revision (0x13
   * for r1p3), from /sys/devices/system/cpu/cpu0/regs/identification/midr_el1.
   * 0 where unknown. */
  unsigned family, model, stepping;
  int hypervisor;
};

/* Reads the host CPU. Never fails on an unknown CPU: isa is then empty. On x86,
 * $FPULL_CPUID_FILE names a text CPUID dump (tests/fixtures/cpuid format) to decode instead
 * of this CPU, for tests and support; an unreadable or malformed one is FPULL_EUSAGE. */
FPULL_API int fpull_detect_cpu(struct fpull_cpu_info **out, fpull_err *err);
FPULL_API void fpull_cpu_info_free(struct fpull_cpu_info *ci);

struct fpull_gpu {
  int cc_major, cc_minor; /* CUDA compute capability */
  char *name;
  char *uuid; /* "GPU-..." (NVML), NULL when unknown */
};

struct fpull_nvidia_info {
  char *driver_version; /* "580.159.04", NULL when unknown */
  int cuda_version;     /* NVML's encoding, 12040 for 12.4; 0 when unknown */
  struct fpull_gpu *gpus;
  size_t n_gpus;
  char *note; /* why nothing was found ("libnvidia-ml.so.1 not found"), or NULL */
  /* Added in v3. */
  char *brand;  /* the toolkit's brand name of the GPUs counted ("tesla", "geforce", ...), as
                   NVIDIA_REQUIRE_CUDA's brand= clauses name it; NULL when unknown or when
                   the GPUs differ */
  char *reason; /* one line for people (features -v): why nothing was found and which GPUs
                   were left out and why ("GPU 2 (GPU-...): no permission, skipped"); NULL
                   when every GPU NVML lists was counted */
};

/* Loads libnvidia-ml.so.1 with dlopen ($FPULL_NVML_LIBRARY overrides the name, else the
 * loader's search path, LD_LIBRARY_PATH included); falls back to /proc/driver/nvidia/version
 * ($FPULL_NVIDIA_PROC_VERSION overrides the path) for the driver version. No library, no GPU
 * or an NVML error is not an error: the info is then empty with a note. GPUs are listed only
 * when every one's compute capability could be read. */
/* Which GPUs count (fpull(1), FEATURES): a GPU NVML lists but cannot open
 * (NVML_ERROR_NO_PERMISSION, a job's device cgroup) is skipped and named in reason;
 * CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES (comma-separated indexes, counted among
 * the GPUs this process may open, or GPU-/MIG- UUIDs and unique prefixes; NVIDIA_: also
 * "all", and "none", "void" or empty for no GPU; an index beyond the GPUs NVML lists
 * means a container runtime applied it already, and the variable is ignored) narrow the
 * set, each when set; a MIG
 * instance named by its UUID counts as its parent GPU. Without a usable NVML, libcuda.so.1
 * ($FPULL_CUDA_LIBRARY overrides the name) gives the CUDA version and the compute
 * capabilities (it applies CUDA_VISIBLE_DEVICES itself). */
FPULL_API int fpull_detect_nvidia(struct fpull_nvidia_info **out, fpull_err *err);
FPULL_API void fpull_nvidia_info_free(struct fpull_nvidia_info *ni);

/* AMD GPUs from the kernel's KFD topology (added in v3). */
struct fpull_amdgpu_info {
  char **targets; /* LLVM targets every GPU has ("gfx90a"), NULL-terminated; empty when
                     there is no GPU or the GPUs differ */
  size_t n_gpus;  /* GPU nodes seen (nodes whose gfx_target_version is not 0) */
  char *reason;   /* one line for people when targets is empty ("no KFD topology"), or NULL */
};

/* Reads $FPULL_SYSFS_ROOT/class/kfd/kfd/topology/nodes/N/properties (FPULL_SYSFS_ROOT:
 * tests only, default /sys): each GPU node's gfx_target_version (major*10000 + minor*100 +
 * stepping, 90010) is the LLVM target gfx<major><minor hex><stepping hex> (gfx90a); CPU
 * nodes have 0. No topology, no GPU or GPUs of different targets is not an error: targets
 * is then empty with a reason. */
FPULL_API int fpull_detect_amdgpu(struct fpull_amdgpu_info **out, fpull_err *err);
FPULL_API void fpull_amdgpu_info_free(struct fpull_amdgpu_info *ai);

#endif
