/* The GPU preflight: NVIDIA_REQUIRE_* with the nvidia-container-toolkit's semantics
 * (alternatives separated by spaces, comma-joined clauses within one) against facts read
 * from the target's features. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/features.h"
#include "harness.h"
#include "select/preflight.h"
#include "base/util.h"

static struct fpull_tagdb *db;

static struct fpull_target *target(const char *features, const char *brand)
{
  fpull_err err = {0};
  if (!db && fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "tag table: %s", err.msg);
  struct fpull_target_opts o = {
      .version = FPULL_TARGET_OPTS_VERSION, .tagdb = db, .features = features, .no_detect = 1};
  struct fpull_target *t = NULL;
  if (fpull_target_build(&t, &o, &err))
    th_fail(__FILE__, __LINE__, "target %s: %s", features, err.msg);
  t->gpu_brand = brand ? fp_xstrdup(brand) : NULL;
  return t;
}

/* The NVIDIA_REQUIRE_CUDA of NVIDIA's CUDA 12.4 images, shortened to three brands. */
#define REQ_124                                                                                    \
  "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=tesla,driver>=525,driver<526 "              \
  "brand=geforce,driver>=535,driver<536"

TEST(facts_from_features)
{
  struct fpull_target *t = target("nvidia-525-60-13,nv-compute-8-6", "tesla");
  struct fp_gpu_facts g;
  CHECK_INT_EQ(fp_gpu_facts_from_target(&g, t), 1);
  CHECK_INT_EQ(g.cuda.v[0], 12);
  CHECK_INT_EQ(g.cuda.v[1], 0);
  CHECK_INT_EQ(g.driver.n, 3);
  CHECK_INT_EQ(g.driver.v[1], 60);
  CHECK_INT_EQ(g.arch.v[0], 8);
  CHECK_INT_EQ(g.arch.v[1], 6);
  CHECK_STR_EQ(g.brand, "tesla");
  fpull_target_free(t);

  /* Only a compute capability, or nothing NVIDIA: no preflight. */
  t = target("nv-compute-8-0", NULL);
  CHECK_INT_EQ(fp_gpu_facts_from_target(&g, t), 0);
  fpull_target_free(t);
  t = target("x86-64-v3", NULL);
  CHECK_INT_EQ(fp_gpu_facts_from_target(&g, t), 0);
  fpull_target_free(t);
  fpull_tagdb_free(db);
  db = NULL;
}

TEST(require_semantics)
{
  static const struct {
    const char *features, *brand, *req;
    int holds;
  } rows[] = {
      {"nvidia-525-60-13", NULL, "cuda>=12.4", 0},
      {"nvidia-550-54-14", NULL, "cuda>=12.4", 1},
      {"cuda-12-4", NULL, "cuda>=12.4", 1},
      {"cuda-12-4", NULL, "cuda>12.4", 0},
      {"cuda-12-4", NULL, "cuda<12.4", 0},
      {"cuda-12-4", NULL, "cuda=12.4", 1},
      {"cuda-12-4", NULL, "cuda==12.4", 1},
      {"cuda-12-4", NULL, "cuda!=12.4", 0},
      {"cuda-12-4", NULL, "cuda<=13.0", 1},
      /* An alternative through a brand: tesla on 525 passes, geforce does not. */
      {"nvidia-525-60-13", "tesla", REQ_124, 1},
      {"nvidia-525-60-13", "geforce", REQ_124, 0},
      {"nvidia-535-54-03", "geforce", REQ_124, 1},
      /* Unknown brand (--features): a brand clause never holds. */
      {"nvidia-525-60-13", NULL, REQ_124, 0},
      {"nvidia-525-60-13", NULL, "brand!=tesla", 0},
      {"nvidia-525-60-13", "geforce", "brand!=tesla", 1},
      {"nvidia-525-60-13", "Tesla", "brand=TESLA", 1},
      /* Driver versions compare component by component, a missing one as 0. */
      {"nvidia-470-57-02", "tesla", "driver>=470,driver<471", 1},
      {"nvidia-471", "tesla", "driver>=470,driver<471", 0},
      {"nvidia-525-60-13", NULL, "driver>=525.60.13", 1},
      {"nvidia-525-60-13", NULL, "driver>525.60.13", 0},
      /* arch: the compute capability every GPU has. */
      {"nvidia-550-54-14,nv-compute-8-0", NULL, "cuda>=12.0,arch>=7.0", 1},
      {"nvidia-550-54-14,nv-compute-6-1", NULL, "cuda>=12.0,arch>=7.0", 0},
      {"nvidia-550-54-14", NULL, "arch>=7.0", 0},
      /* Malformed or unknown clauses do not hold; empty asks for nothing. */
      {"nvidia-550-54-14", NULL, "cuda>>12.0", 0},
      {"nvidia-550-54-14", NULL, "cuda>=", 0},
      {"nvidia-550-54-14", NULL, "cuda>=twelve", 0},
      {"nvidia-550-54-14", NULL, "vram>=80", 0},
      {"nvidia-550-54-14", NULL, "vram>=80 cuda>=12.0", 1},
      {"nvidia-550-54-14", NULL, "", 1},
      {"nvidia-550-54-14", NULL, "  ", 1},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct fpull_target *t = target(rows[i].features, rows[i].brand);
    struct fp_gpu_facts g;
    fp_gpu_facts_from_target(&g, t);
    if (fp_require_holds(rows[i].req, &g) != rows[i].holds)
      th_fail(__FILE__, __LINE__, "%s (brand %s): \"%s\" should %shold", rows[i].features,
              rows[i].brand ? rows[i].brand : "unknown", rows[i].req, rows[i].holds ? "" : "not ");
    fpull_target_free(t);
  }
  fpull_tagdb_free(db);
  db = NULL;
}

static int preflight(const char *features, const char *brand, const char *env_json, char **why)
{
  struct fpull_target *t = target(features, brand);
  cleanup_free char *cfg = fp_xasprintf("{\"architecture\":\"amd64\",\"os\":\"linux\","
                                        "\"config\":{\"Env\":%s}}",
                                        env_json);
  int r = fp_preflight_config(cfg, strlen(cfg), t, why);
  fpull_target_free(t);
  return r;
}

TEST(config_env)
{
  char *why = NULL;
  CHECK_INT_EQ(preflight("nvidia-525-60-13", NULL, "[\"NVIDIA_REQUIRE_CUDA=cuda>=12.2\"]", &why),
               0);
  CHECK_STR_EQ(why, "requires cuda>=12.2; the driver gives cuda-12-0, nvidia-525-60-13");
  free(why);
  CHECK_INT_EQ(preflight("nvidia-525-60-13", NULL, "[\"NVIDIA_REQUIRE_CUDA=" REQ_124 "\"]", &why),
               0);
  CHECK_STR_EQ(why, "requires cuda>=12.4 (or 3 other alternatives); the driver gives cuda-12-0, "
                    "nvidia-525-60-13");
  free(why);

  /* A driver minor with a leading zero, as on the H200 of the device check (580.159.04),
   * is named as detected. */
  CHECK_INT_EQ(preflight("nvidia-580-159-04", NULL, "[\"NVIDIA_REQUIRE_CUDA=cuda>=99.0\"]", &why),
               0);
  CHECK_STR_EQ(why, "requires cuda>=99.0; the driver gives cuda-13-0, nvidia-580-159-04");
  free(why);

  /* NVIDIA_DISABLE_REQUIRE: Go's ParseBool true values turn it off; others do not. */
  static const char *const on[] = {"1", "true", "TRUE", "True", "t", "T"};
  for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
    cleanup_free char *env =
        fp_xasprintf("[\"NVIDIA_REQUIRE_CUDA=cuda>=12.4\",\"NVIDIA_DISABLE_REQUIRE=%s\"]", on[i]);
    CHECK_INT_EQ(preflight("nvidia-525-60-13", NULL, env, &why), 1);
    CHECK_NULL(why);
  }
  CHECK_INT_EQ(preflight("nvidia-525-60-13", NULL,
                         "[\"NVIDIA_DISABLE_REQUIRE=false\",\"NVIDIA_REQUIRE_CUDA=cuda>=12.4\"]",
                         &why),
               0);
  free(why);

  /* Every NVIDIA_REQUIRE_* must hold, except _JETPACK. */
  CHECK_INT_EQ(
      preflight("nvidia-550-54-14", NULL,
                "[\"NVIDIA_REQUIRE_CUDA=cuda>=12.4\",\"NVIDIA_REQUIRE_DRIVER=driver>=560\"]", &why),
      0);
  CHECK_CONTAINS(why, "requires driver>=560");
  free(why);
  CHECK_INT_EQ(preflight("nvidia-550-54-14", NULL,
                         "[\"NVIDIA_REQUIRE_CUDA=cuda>=12.4\",\"NVIDIA_REQUIRE_JETPACK=l4t>=36\"]",
                         &why),
               1);

  /* An image with CUDA_VERSION and no NVIDIA_REQUIRE_CUDA requires that major.minor. */
  CHECK_INT_EQ(preflight("nvidia-525-60-13", NULL, "[\"CUDA_VERSION=12.4.1\"]", &why), 0);
  CHECK_CONTAINS(why, "requires cuda>=12.4");
  free(why);
  CHECK_INT_EQ(preflight("nvidia-525-60-13", NULL, "[\"CUDA_VERSION=11.8.0\"]", &why), 1);
  CHECK_INT_EQ(preflight("nvidia-525-60-13", NULL,
                         "[\"CUDA_VERSION=12.4.1\",\"NVIDIA_REQUIRE_CUDA=cuda>=11.0\"]", &why),
               1);

  /* No NVIDIA driver or CUDA feature in the target: no preflight. */
  CHECK_INT_EQ(preflight("x86-64-v2", NULL, "[\"NVIDIA_REQUIRE_CUDA=cuda>=12.4\"]", &why), 1);
  CHECK_INT_EQ(preflight("nv-compute-8-0", NULL, "[\"NVIDIA_REQUIRE_CUDA=cuda>=12.4\"]", &why), 1);
  /* No Env, or not JSON at all: nothing to refuse here. */
  CHECK_INT_EQ(preflight("nvidia-525-60-13", NULL, "null", &why), 1);
  struct fpull_target *t = target("nvidia-525-60-13", NULL);
  CHECK_INT_EQ(fp_preflight_config("{", 1, t, &why), 1);
  fpull_target_free(t);
  fpull_tagdb_free(db);
  db = NULL;
}
