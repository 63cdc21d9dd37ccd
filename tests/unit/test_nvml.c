/* NVIDIA detection against stand-ins for libnvidia-ml.so.1 (tests/nvml/fake_nvml.c). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fpull/detect.h"
#include "fpull/features.h"
#include "harness.h"
#include "util.h"

#define FULL_LIB FAKE_NVML_FULL_DIR "/libnvidia-ml.so.1"
#define MINIMAL_LIB FAKE_NVML_MINIMAL_DIR "/libnvidia-ml.so.1"

/* Every test starts from the same environment: no /proc fallback unless it asks for one. */
static void fake_env(const char *lib, const char *gpus)
{
  setenv("FPULL_NVML_LIBRARY", lib, 1);
  setenv("FPULL_NVIDIA_PROC_VERSION", "/nonexistent/nvidia/version", 1);
  setenv("FAKE_NVML_DRIVER", "580.159.04", 1);
  setenv("FAKE_NVML_CUDA", "12040", 1);
  setenv("FAKE_NVML_GPUS", gpus, 1);
  unsetenv("FAKE_NVML_INIT_FAIL");
}

static struct fpull_nvidia_info *detect(void)
{
  fpull_err err = {0};
  struct fpull_nvidia_info *ni = NULL;
  CHECK_INT_EQ(fpull_detect_nvidia(&ni, &err), 0);
  CHECK(ni != NULL);
  return ni;
}

/* The library's own counters, read through a second reference that keeps it loaded. */
static void check_balanced(void *dl, int inits)
{
  int *in = dlsym(dl, "fake_nvml_inits"), *out = dlsym(dl, "fake_nvml_shutdowns");
  CHECK(in && out);
  CHECK_INT_EQ(*in, inits);
  CHECK_INT_EQ(*out, inits);
}

TEST(one_gpu)
{
  fake_env(FULL_LIB, "8.6");
  void *dl = dlopen(FULL_LIB, RTLD_NOW | RTLD_LOCAL);
  CHECK(dl != NULL);
  struct fpull_nvidia_info *ni = detect();
  CHECK_STR_EQ(ni->driver_version, "580.159.04");
  CHECK_INT_EQ(ni->cuda_version, 12040);
  CHECK_INT_EQ(ni->n_gpus, 1);
  CHECK_INT_EQ(ni->gpus[0].cc_major, 8);
  CHECK_INT_EQ(ni->gpus[0].cc_minor, 6);
  CHECK_STR_EQ(ni->gpus[0].name, "Fake GPU sm_86");
  CHECK_NULL(ni->note);
  fpull_nvidia_info_free(ni);
  check_balanced(dl, 1);
  dlclose(dl);
}

TEST(two_different_gpus)
{
  fake_env(FULL_LIB, "8.6,7.5");
  setenv("FAKE_NVML_DRIVER", "396.44", 1);
  setenv("FAKE_NVML_CUDA", "9020", 1);
  struct fpull_nvidia_info *ni = detect();
  CHECK_STR_EQ(ni->driver_version, "396.44");
  CHECK_INT_EQ(ni->cuda_version, 9020);
  CHECK_INT_EQ(ni->n_gpus, 2);
  CHECK_INT_EQ(ni->gpus[0].cc_major, 8);
  CHECK_INT_EQ(ni->gpus[0].cc_minor, 6);
  CHECK_INT_EQ(ni->gpus[1].cc_major, 7);
  CHECK_INT_EQ(ni->gpus[1].cc_minor, 5);
  CHECK_STR_EQ(ni->gpus[1].name, "Fake GPU sm_75");
  fpull_nvidia_info_free(ni);
}

TEST(no_gpu)
{
  fake_env(FULL_LIB, "");
  struct fpull_nvidia_info *ni = detect();
  /* The driver is there even without a GPU: its version is still a fact about the node. */
  CHECK_STR_EQ(ni->driver_version, "580.159.04");
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_NULL(ni->gpus);
  CHECK_CONTAINS(ni->note, "no GPU");
  fpull_nvidia_info_free(ni);
}

TEST(init_failure)
{
  fake_env(FULL_LIB, "8.6");
  setenv("FAKE_NVML_INIT_FAIL", "1", 1);
  void *dl = dlopen(FULL_LIB, RTLD_NOW | RTLD_LOCAL);
  CHECK(dl != NULL);
  struct fpull_nvidia_info *ni = detect();
  CHECK_NULL(ni->driver_version);
  CHECK_INT_EQ(ni->cuda_version, 0);
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_CONTAINS(ni->note, "NVML initialisation failed: Driver Not Loaded (9)");
  fpull_nvidia_info_free(ni);
  check_balanced(dl, 0); /* no shutdown without a successful init */
  dlclose(dl);
}

TEST(init_failure_proc_fallback)
{
  fake_env(FULL_LIB, "8.6");
  setenv("FAKE_NVML_INIT_FAIL", "1", 1);
  char path[4096];
  snprintf(path, sizeof path, "%s/version", th_tmpdir());
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Thu Jan 23 22:50:56 UTC 2025\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
        f);
  fclose(f);
  setenv("FPULL_NVIDIA_PROC_VERSION", path, 1);
  struct fpull_nvidia_info *ni = detect();
  CHECK_STR_EQ(ni->driver_version, "570.86.15");
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_CONTAINS(ni->note, "initialisation failed");
  fpull_nvidia_info_free(ni);
}

TEST(missing_symbols)
{
  fake_env(MINIMAL_LIB, "8.6,8.0");
  void *dl = dlopen(MINIMAL_LIB, RTLD_NOW | RTLD_LOCAL);
  CHECK(dl != NULL);
  CHECK_NULL(dlsym(dl, "nvmlDeviceGetCudaComputeCapability"));
  struct fpull_nvidia_info *ni = detect();
  CHECK_STR_EQ(ni->driver_version, "580.159.04");
  CHECK_INT_EQ(ni->cuda_version, 0);
  /* GPUs whose compute capability is unknown must not be reported with a made-up one. */
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_CONTAINS(ni->note, "lacks nvmlSystemGetCudaDriverVersion");
  fpull_nvidia_info_free(ni);
  check_balanced(dl, 1);
  dlclose(dl);
}

TEST(not_nvml_at_all)
{
  /* A library that loads but is not NVML. */
  fake_env("libc.so.6", "8.6");
  struct fpull_nvidia_info *ni = detect();
  CHECK_NULL(ni->driver_version);
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_CONTAINS(ni->note, "lacks nvmlInit_v2");
  fpull_nvidia_info_free(ni);
}

TEST(no_library)
{
  fake_env("/nonexistent/libnvidia-ml.so.1", "8.6");
  struct fpull_nvidia_info *ni = detect();
  CHECK_NULL(ni->driver_version);
  CHECK_INT_EQ(ni->cuda_version, 0);
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_NULL(ni->gpus);
  CHECK_CONTAINS(ni->note, "/nonexistent/libnvidia-ml.so.1 not loaded");
  fpull_nvidia_info_free(ni);
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

TEST(proc_fallback)
{
  fake_env("/nonexistent/libnvidia-ml.so.1", "8.6");
  char path[4096];
  snprintf(path, sizeof path, "%s/version", th_tmpdir());
  setenv("FPULL_NVIDIA_PROC_VERSION", path, 1);

  write_file(path, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Wed Oct 1 "
                   "12:00:00 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  struct fpull_nvidia_info *ni = detect();
  CHECK_STR_EQ(ni->driver_version, "580.159.04");
  CHECK_INT_EQ(ni->cuda_version, 0);
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_CONTAINS(ni->note, "not loaded");
  fpull_nvidia_info_free(ni);

  /* The open kernel module names the architecture after "Kernel Module". */
  write_file(path, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release "
                   "Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024\n");
  ni = detect();
  CHECK_STR_EQ(ni->driver_version, "550.54.14");
  fpull_nvidia_info_free(ni);

  write_file(path, "something else entirely 1.2.3\n");
  ni = detect();
  CHECK_NULL(ni->driver_version);
  fpull_nvidia_info_free(ni);
}

/* LD_LIBRARY_PATH is read once by the dynamic loader at start-up, so the test runs itself
 * again with it set and the default library name. */
TEST(ld_library_path)
{
  if (!getenv("FPULL_TEST_NVML_CHILD")) {
    fake_env(FULL_LIB, "7.0,7.0,7.0");
    unsetenv("FPULL_NVML_LIBRARY");
    setenv("LD_LIBRARY_PATH", FAKE_NVML_FULL_DIR, 1);
    setenv("FPULL_TEST_NVML_CHILD", "1", 1);
    char *argv[] = {"test_nvml", "ld_library_path", NULL};
    execv("/proc/self/exe", argv);
    CHECK(!"execv failed");
  }
  struct fpull_nvidia_info *ni = detect();
  CHECK_NULL(ni->note);
  CHECK_STR_EQ(ni->driver_version, "580.159.04");
  CHECK_INT_EQ(ni->n_gpus, 3);
  CHECK_INT_EQ(ni->gpus[2].cc_major, 7);
  CHECK_INT_EQ(ni->gpus[2].cc_minor, 0);
  fpull_nvidia_info_free(ni);
}

TEST(free_null)
{
  fpull_nvidia_info_free(NULL);
  fpull_cpu_info_free(NULL);
}

/* Through target building: the contract's NVIDIA features from what NVML reported. */
static struct fpull_target *target_with_gpus(const char *gpus, struct fpull_tagdb **db)
{
  fake_env(FULL_LIB, gpus);
  fpull_err err = {0};
  if (fpull_tagdb_load(db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "tag table: %s", err.msg);
  struct fpull_target_opts o = {.tagdb = *db};
  struct fpull_target *t = NULL;
  if (fpull_target_build(&t, &o, &err))
    th_fail(__FILE__, __LINE__, "target: %s", err.msg);
  return t;
}

static int count_prefix(const struct fpull_featureset *fs, const char *prefix)
{
  int n = 0, src;
  for (size_t i = 0; i < fpull_featureset_count(fs); i++)
    n += strncmp(fpull_featureset_get(fs, i, &src), prefix, strlen(prefix)) == 0;
  return n;
}

TEST(features_same_major)
{
  struct fpull_tagdb *db = NULL;
  struct fpull_target *t = target_with_gpus("8.6,8.0", &db);
  static const char *const want[] = {"nvidia-580-159-04", "nvidia-580-159", "nvidia-580",
                                     "cuda-12-4",         "nv-compute-8-0", NULL};
  for (size_t i = 0; want[i]; i++)
    if (!fpull_featureset_has(t->features, want[i], db))
      th_fail(__FILE__, __LINE__, "%s missing", want[i]);
  CHECK(!fpull_featureset_has(t->features, "nv-compute-8-6", db));
  for (size_t i = 0; i < fpull_featureset_count(t->features); i++) {
    int src;
    const char *name = fpull_featureset_get(t->features, i, &src);
    if (strcmp(name, "nv-compute-8-0") == 0)
      CHECK_INT_EQ(src, FPULL_SRC_NVIDIA);
  }
  fpull_target_free(t);
  fpull_tagdb_free(db);
}

TEST(features_different_majors)
{
  struct fpull_tagdb *db = NULL;
  struct fpull_target *t = target_with_gpus("8.6,7.5", &db);
  /* Lower minors of one major only: an 8.6 and a 7.5 share no compute capability. */
  CHECK_INT_EQ(count_prefix(t->features, "nv-compute-"), 0);
  CHECK(fpull_featureset_has(t->features, "nvidia-580", db));
  fpull_target_free(t);
  fpull_tagdb_free(db);
}
