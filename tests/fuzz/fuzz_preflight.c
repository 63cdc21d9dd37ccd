/* libFuzzer target: the GPU preflight over an image config (NVIDIA_REQUIRE_*, CUDA_VERSION
 * and NVIDIA_DISABLE_REQUIRE from a registry's hostile config), and the whole input read as
 * one requirement expression, against targets with and without an NVIDIA stack. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/features.h"
#include "select/preflight.h"
#include "base/util.h"

static struct fpull_target *targets[3];

static void setup(void)
{
  static const char *const features[3] = {"nvidia-525-60-13,nv-compute-8-6", "cuda-12-4", "avx2"};
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  if (fpull_tagdb_load(&db, NULL, NULL, &err)) {
    /* ctest sets FPULL_DATA_DIR; a manual run needs it too (the source tree's data/). */
    fprintf(stderr, "tag table: %s\n", err.msg);
    abort();
  }
  for (int i = 0; i < 3; i++) {
    struct fpull_target_opts o = FPULL_TARGET_OPTS_INIT;
    o.tagdb = db;
    o.features = features[i];
    o.no_detect = 1;
    if (fpull_target_build(&targets[i], &o, &err))
      abort();
  }
  targets[0]->gpu_brand = fp_xstrdup("tesla");
  fpull_tagdb_free(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!targets[0])
    setup();
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  for (int i = 0; i < 3; i++) {
    char *why = NULL;
    int r = fp_preflight_config((const char *)data, size, targets[i], &why);
    /* A refusal says why; a pass does not. */
    if ((r == 0) != (why != NULL) || (r != 0 && r != 1))
      abort();
    free(why);
    struct fp_gpu_facts g;
    fp_gpu_facts_from_target(&g, targets[i]);
    r = fp_require_holds(s, &g);
    if (r != 0 && r != 1)
      abort();
  }
  free(s);
  return 0;
}
