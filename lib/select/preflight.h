/* Internal: the GPU preflight (contract, "GPU preflight"): whether an image's
 * NVIDIA_REQUIRE_* environment, with nvidia-container-toolkit's semantics, holds on the
 * target, decided from the image config before any layer is downloaded. */
#ifndef FP_PREFLIGHT_H
#define FP_PREFLIGHT_H

#include <stddef.h>

#include "fpull/features.h"
#include "tagdb.h"

/* What the target says about its NVIDIA stack; has_* 0 when unknown. */
struct fp_gpu_facts {
  int has_cuda, has_driver, has_arch;
  struct fp_version cuda, driver, arch;
  const char *brand; /* NULL when unknown (--features, --platform, no NVML brand) */
  /* The feature driver came from, for messages: "nvidia-580-159-04" keeps the zero that
   * the numbers lose. Points into the target's feature set. */
  const char *driver_feature;
};

/* Reads the facts from the target's features (the highest cuda-X-Y, the longest
 * nvidia-A-B-C, the highest nv-compute-X-Y) and its gpu_brand. Returns 0 when the target
 * has neither a cuda-X-Y nor an nvidia-N feature: then there is no preflight. */
int fp_gpu_facts_from_target(struct fp_gpu_facts *g, const struct fpull_target *t);

/* One requirement value ("cuda>=12.4 brand=tesla,driver>=470,driver<471"): alternatives
 * separated by spaces, any one of which suffices; within one, clauses joined by commas, all
 * of which must hold. Clauses are KEY OP VALUE with KEY cuda, driver, arch (compute
 * capability) or brand, OP one of = == != < <= > >=. A clause about something the target
 * does not know, an unknown key or a malformed clause does not hold. 1 when it holds. */
int fp_require_holds(const char *req, const struct fp_gpu_facts *g);

/* The preflight over an image config (JSON bytes): 1 when the image may run on the target
 * (no requirement, NVIDIA_DISABLE_REQUIRE true, or every NVIDIA_REQUIRE_* except _JETPACK
 * holds; an image with CUDA_VERSION and no NVIDIA_REQUIRE_CUDA requires cuda>=its
 * major.minor, as the toolkit does for such images), 0 with *why ("requires cuda>=12.4;
 * the driver gives cuda-12-0") when not. A config that is not JSON passes: its parser
 * reports it where it matters. */
int fp_preflight_config(const char *cfg, size_t len, const struct fpull_target *t, char **why);

#endif
