/* AMD GPU detection over recorded KFD topologies (tests/fixtures/kfd, see its README). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fpull/detect.h"
#include "fpull/features.h"
#include "harness.h"
#include "base/util.h"

static struct fpull_amdgpu_info *detect_tree(const char *name)
{
  char root[4096];
  snprintf(root, sizeof root, "%s/tests/fixtures/kfd/%s", getenv("FPULL_SRC_DIR"), name);
  setenv("FPULL_SYSFS_ROOT", root, 1);
  fpull_err err = {0};
  struct fpull_amdgpu_info *ai = NULL;
  CHECK_INT_EQ(fpull_detect_amdgpu(&ai, &err), 0);
  CHECK(ai != NULL);
  return ai;
}

TEST(mi250x_eight_gcds)
{
  struct fpull_amdgpu_info *ai = detect_tree("mi250x");
  CHECK_INT_EQ(ai->n_gpus, 8);
  CHECK_STR_EQ(ai->targets[0], "gfx90a");
  CHECK_NULL(ai->targets[1]);
  CHECK_NULL(ai->reason);
  fpull_amdgpu_info_free(ai);
}

TEST(mi300a_apus)
{
  struct fpull_amdgpu_info *ai = detect_tree("mi300a");
  CHECK_INT_EQ(ai->n_gpus, 4);
  CHECK_STR_EQ(ai->targets[0], "gfx942");
  fpull_amdgpu_info_free(ai);
}

TEST(consumer_rx7900)
{
  struct fpull_amdgpu_info *ai = detect_tree("rx7900");
  CHECK_INT_EQ(ai->n_gpus, 1);
  CHECK_STR_EQ(ai->targets[0], "gfx1100");
  fpull_amdgpu_info_free(ai);
}

TEST(mixed_node_has_nothing_common)
{
  struct fpull_amdgpu_info *ai = detect_tree("mixed");
  CHECK_INT_EQ(ai->n_gpus, 2);
  CHECK_NULL(ai->targets[0]);
  CHECK_CONTAINS(ai->reason, "different targets (gfx90a, node 2: gfx1100)");
  fpull_amdgpu_info_free(ai);
}

TEST(no_gpu_or_no_topology)
{
  struct fpull_amdgpu_info *ai = detect_tree("cpuonly");
  CHECK_INT_EQ(ai->n_gpus, 0);
  CHECK_NULL(ai->targets[0]);
  CHECK_CONTAINS(ai->reason, "no AMD GPU in");
  fpull_amdgpu_info_free(ai);
  ai = detect_tree("no-such-tree");
  CHECK_NULL(ai->targets[0]);
  CHECK_CONTAINS(ai->reason, "no KFD topology");
  fpull_amdgpu_info_free(ai);
  fpull_amdgpu_info_free(NULL);
}

static void write_node(const char *root, int node, const char *text)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/class", root);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/class/kfd", root);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/class/kfd/kfd", root);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/class/kfd/kfd/topology", root);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/class/kfd/kfd/topology/nodes", root);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/class/kfd/kfd/topology/nodes/%d", root, node);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/class/kfd/kfd/topology/nodes/%d/properties", root, node);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* The decoding: minor and stepping are one hex digit each; values that cannot be an LLVM
 * target give no feature rather than a made-up one. */
TEST(target_decoding)
{
  static const struct {
    const char *props, *target;
  } rows[] = {
      {"gfx_target_version 90008\n", "gfx908"},
      {"simd_count 4\ngfx_target_version 90012\n", "gfx90c"},
      {"gfx_target_version 100300\n", "gfx1030"},
      {"gfx_target_version 120001\nvendor_id 4098\n", "gfx1201"},
      {"gfx_target_version 90500", "gfx950"},
      {"gfx_target_version 91600\n", NULL},
      {"gfx_target_version 90x\n", NULL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char root[4096];
    snprintf(root, sizeof root, "%s/t%zu", th_tmpdir(), i);
    mkdir(root, 0755);
    write_node(root, 0, "cpu_cores_count 8\ngfx_target_version 0\n");
    write_node(root, 1, rows[i].props);
    setenv("FPULL_SYSFS_ROOT", root, 1);
    fpull_err err = {0};
    struct fpull_amdgpu_info *ai = NULL;
    CHECK_INT_EQ(fpull_detect_amdgpu(&ai, &err), 0);
    if (rows[i].target)
      CHECK_STR_EQ(ai->targets[0], rows[i].target);
    else
      CHECK_NULL(ai->targets[0]);
    fpull_amdgpu_info_free(ai);
  }
}

/* Through target building: the feature, with its source. */
TEST(target_feature)
{
  struct fpull_amdgpu_info *ai = detect_tree("mi250x"); /* sets FPULL_SYSFS_ROOT */
  fpull_amdgpu_info_free(ai);
  setenv("FPULL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  setenv("FPULL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  setenv("FPULL_NVIDIA_PROC_VERSION", "/nonexistent/version", 1);
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_tagdb_load(&db, NULL, NULL, &err), 0);
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION, .tagdb = db};
  struct fpull_target *t = NULL;
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), 0);
  int found = 0;
  for (size_t i = 0; i < fpull_featureset_count(t->features); i++) {
    int src;
    const char *name = fpull_featureset_get(t->features, i, &src);
    if (strcmp(name, "amdgpu-gfx90a") == 0) {
      found = 1;
      CHECK_STR_EQ(fpull_feature_source_name(src), "amdgpu");
    }
    CHECK(strncmp(name, "amdgpu-", 7) != 0 || strcmp(name, "amdgpu-gfx90a") == 0);
  }
  CHECK(found);
  fpull_target_free(t);
  fpull_tagdb_free(db);
}
