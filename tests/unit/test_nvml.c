/* NVIDIA detection against stand-ins for libnvidia-ml.so.1 (tests/nvml/fake_nvml.c). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fpull/detect.h"
#include "fpull/features.h"
#include "harness.h"
#include "base/util.h"

#define FULL_LIB FAKE_NVML_FULL_DIR "/libnvidia-ml.so.1"
#define MINIMAL_LIB FAKE_NVML_MINIMAL_DIR "/libnvidia-ml.so.1"
#define CUDA_LIB FAKE_CUDA_DIR "/libcuda.so.1"

/* Every test starts from the same environment: no /proc fallback unless it asks for one. */
static void fake_env(const char *lib, const char *gpus)
{
  setenv("FPULL_NVML_LIBRARY", lib, 1);
  setenv("FPULL_NVIDIA_PROC_VERSION", "/nonexistent/nvidia/version", 1);
  setenv("FAKE_NVML_DRIVER", "580.159.04", 1);
  setenv("FAKE_NVML_CUDA", "12040", 1);
  setenv("FAKE_NVML_GPUS", gpus, 1);
  unsetenv("FAKE_NVML_INIT_FAIL");
  unsetenv("FAKE_NVML_DENIED");
  unsetenv("FAKE_NVML_MIG");
  unsetenv("FAKE_NVML_BRAND");
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("NVIDIA_VISIBLE_DEVICES");
  setenv("FPULL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
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
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION, .tagdb = *db};
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

/* The nv-compute features of a target built over the fake NVML as the environment stands. */
static int has_feature(const char *gpus, const char *name)
{
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "tag table: %s", err.msg);
  setenv("FAKE_NVML_GPUS", gpus, 1);
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION, .tagdb = db};
  struct fpull_target *t = NULL;
  if (fpull_target_build(&t, &o, &err))
    th_fail(__FILE__, __LINE__, "target: %s", err.msg);
  int has = fpull_featureset_has(t->features, name, db);
  fpull_target_free(t);
  fpull_tagdb_free(db);
  return has;
}

/* Issue 15: four 9.0 GPUs with one denied reported no nv-compute-9-0 (the whole list was
 * dropped). A denied GPU is skipped and named in reason. */
TEST(denied_gpu_is_skipped)
{
  fake_env(FULL_LIB, "9.0,9.0,9.0,9.0");
  setenv("FAKE_NVML_DENIED", "2", 1);
  struct fpull_nvidia_info *ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 3);
  CHECK_STR_EQ(ni->gpus[2].uuid, "GPU-fa4e0000-0000-4000-8000-000000000003");
  CHECK_CONTAINS(ni->reason, "GPU 2: Insufficient Permissions (4), skipped");
  CHECK_STR_EQ(ni->brand, "tesla");
  fpull_nvidia_info_free(ni);
  CHECK(has_feature("9.0,9.0,9.0,9.0", "nv-compute-9-0"));

  /* Every GPU denied: nothing, and why. */
  setenv("FAKE_NVML_DENIED", "0,1", 1);
  setenv("FAKE_NVML_GPUS", "9.0,9.0", 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_CONTAINS(ni->reason, "no GPU NVML lists may be used by this process");
  /* The driver is still a fact about the node. */
  CHECK_STR_EQ(ni->driver_version, "580.159.04");
  fpull_nvidia_info_free(ni);
}

/* Other per-GPU errors still drop the list: the rest would overstate what every GPU has. */
TEST(all_counted_no_reason)
{
  fake_env(FULL_LIB, "8.0,8.0");
  struct fpull_nvidia_info *ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 2);
  CHECK_NULL(ni->reason);
  CHECK_NULL(ni->note);
  fpull_nvidia_info_free(ni);
}

TEST(cuda_visible_devices_index)
{
  /* A 7.0 and an 8.6: nothing in common, until CUDA_VISIBLE_DEVICES picks one. */
  fake_env(FULL_LIB, "7.0,8.6");
  CHECK(!has_feature("7.0,8.6", "nv-compute-8-0"));
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  struct fpull_nvidia_info *ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 1);
  CHECK_INT_EQ(ni->gpus[0].cc_major, 8);
  CHECK_CONTAINS(ni->reason, "GPU 0 (GPU-fa4e0000-0000-4000-8000-000000000000) not in "
                             "CUDA_VISIBLE_DEVICES=\"1\"");
  fpull_nvidia_info_free(ni);
  CHECK(has_feature("7.0,8.6", "nv-compute-8-6"));

  /* Indexes count the GPUs the process may open, as CUDA numbers them: with GPU 0 denied
   * (a job's cgroup), index 0 is NVML's GPU 1. */
  fake_env(FULL_LIB, "7.0,8.6,7.5");
  setenv("FAKE_NVML_DENIED", "0", 1);
  setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 1);
  CHECK_INT_EQ(ni->gpus[0].cc_major, 8);
  fpull_nvidia_info_free(ni);

  /* An entry naming no GPU ends the list, as in CUDA. */
  fake_env(FULL_LIB, "7.0,8.6,7.5");
  setenv("CUDA_VISIBLE_DEVICES", "2,9,0", 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 1);
  CHECK_INT_EQ(ni->gpus[0].cc_minor, 5);
  CHECK_CONTAINS(ni->reason, "\"9\" names no GPU");
  fpull_nvidia_info_free(ni);

  /* Empty: no GPU. */
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_CONTAINS(ni->reason, "no GPU left to count");
  fpull_nvidia_info_free(ni);
}

TEST(visible_devices_uuid)
{
  fake_env(FULL_LIB, "7.0,8.6,8.0");
  setenv("CUDA_VISIBLE_DEVICES",
         "GPU-fa4e0000-0000-4000-8000-000000000002,"
         "GPU-fa4e0000-0000-4000-8000-000000000001",
         1);
  struct fpull_nvidia_info *ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 2);
  CHECK_INT_EQ(ni->gpus[0].cc_minor, 6);
  CHECK_INT_EQ(ni->gpus[1].cc_minor, 0);
  fpull_nvidia_info_free(ni);
  CHECK(has_feature("7.0,8.6,8.0", "nv-compute-8-0"));

  /* A unique prefix names a GPU; an ambiguous one names none. */
  setenv("CUDA_VISIBLE_DEVICES", "GPU-fa4e0000-0000-4000-8000-000000000002", 1);
  setenv("NVIDIA_VISIBLE_DEVICES", "GPU-fa4e0000-0000-4000-8000-00000000000", 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_CONTAINS(ni->reason, "NVIDIA_VISIBLE_DEVICES: \"GPU-fa4e0000-0000-4000-8000-00000000000\" "
                             "names no GPU");
  fpull_nvidia_info_free(ni);

  /* NVIDIA_VISIBLE_DEVICES: all, none, void, indexes; both variables narrow. */
  unsetenv("CUDA_VISIBLE_DEVICES");
  static const struct {
    const char *nv, *cuda;
    size_t n;
  } rows[] = {{"all", NULL, 3},
              {"none", NULL, 0},
              {"void", NULL, 0},
              {"", NULL, 0},
              {"0,2", NULL, 2},
              {"0,2", "1", 1},
              {"ALL", "2", 1},
              {"1", "0", 1},
              {"1", "1", 0},
              /* Host indexes beyond the list: a container whose runtime applied them. */
              {"1,3", NULL, 3},
              {"5", "1", 1}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    setenv("NVIDIA_VISIBLE_DEVICES", rows[i].nv, 1);
    if (rows[i].cuda)
      setenv("CUDA_VISIBLE_DEVICES", rows[i].cuda, 1);
    else
      unsetenv("CUDA_VISIBLE_DEVICES");
    ni = detect();
    if (ni->n_gpus != rows[i].n)
      th_fail(__FILE__, __LINE__, "NVIDIA_VISIBLE_DEVICES=%s CUDA_VISIBLE_DEVICES=%s: %zu GPUs",
              rows[i].nv, rows[i].cuda ? rows[i].cuda : "(unset)", ni->n_gpus);
    fpull_nvidia_info_free(ni);
  }
}

/* A MIG instance counts as its parent GPU: its compute capability, once. */
TEST(mig_instance_counts_as_parent)
{
  fake_env(FULL_LIB, "7.5,8.0,9.0");
  setenv("FAKE_NVML_MIG", "1,2", 1);
  setenv("CUDA_VISIBLE_DEVICES", "MIG-fa4e0000-0000-4000-8000-000000000021", 1);
  struct fpull_nvidia_info *ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 1);
  CHECK_INT_EQ(ni->gpus[0].cc_major, 9);
  CHECK_STR_EQ(ni->gpus[0].uuid, "GPU-fa4e0000-0000-4000-8000-000000000002");
  fpull_nvidia_info_free(ni);
  CHECK(has_feature("7.5,8.0,9.0", "nv-compute-9-0"));

  /* Two instances of GPU 1 and one of GPU 2: two parents, 8.0 and 9.0, nothing common. */
  setenv("CUDA_VISIBLE_DEVICES",
         "MIG-fa4e0000-0000-4000-8000-000000000010,MIG-fa4e0000-0000-4000-8000-000000000011", 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 1);
  CHECK_INT_EQ(ni->gpus[0].cc_major, 8);
  fpull_nvidia_info_free(ni);

  /* The old MIG-GPU-<uuid>/<gi>/<ci> form names the parent by its UUID. */
  setenv("CUDA_VISIBLE_DEVICES", "MIG-GPU-fa4e0000-0000-4000-8000-000000000002/1/0", 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 1);
  CHECK_INT_EQ(ni->gpus[0].cc_major, 9);
  fpull_nvidia_info_free(ni);

  /* GPU 0 has no MIG instances: a MIG UUID of its shape names nothing. */
  setenv("CUDA_VISIBLE_DEVICES", "MIG-fa4e0000-0000-4000-8000-000000000000", 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 0);
  fpull_nvidia_info_free(ni);
}

TEST(brand_mixed_or_unknown)
{
  fake_env(FULL_LIB, "8.6");
  setenv("FAKE_NVML_BRAND", "5", 1);
  struct fpull_nvidia_info *ni = detect();
  CHECK_STR_EQ(ni->brand, "geforce");
  fpull_nvidia_info_free(ni);
  setenv("FAKE_NVML_BRAND", "99", 1);
  ni = detect();
  CHECK_STR_EQ(ni->brand, "unknown");
  fpull_nvidia_info_free(ni);
}

/* A container with the driver's libcuda.so.1 but no NVML. */
TEST(libcuda_fallback)
{
  fake_env("/nonexistent/libnvidia-ml.so.1", "8.6");
  setenv("FPULL_CUDA_LIBRARY", CUDA_LIB, 1);
  setenv("FAKE_CUDA_VERSION", "12020", 1);
  setenv("FAKE_CUDA_GPUS", "9.0,9.0", 1);
  unsetenv("FAKE_CUDA_INIT_FAIL");
  struct fpull_nvidia_info *ni = detect();
  CHECK_INT_EQ(ni->cuda_version, 12020);
  CHECK_INT_EQ(ni->n_gpus, 2);
  CHECK_INT_EQ(ni->gpus[1].cc_major, 9);
  CHECK_STR_EQ(ni->gpus[1].name, "Fake CUDA GPU sm_90");
  CHECK_CONTAINS(ni->note, "libnvidia-ml.so.1 not loaded");
  CHECK_CONTAINS(ni->reason, "from " CUDA_LIB " (no NVML)");
  CHECK_NULL(ni->driver_version);
  fpull_nvidia_info_free(ni);
  CHECK(has_feature("8.6", "nv-compute-9-0"));
  CHECK(has_feature("8.6", "cuda-12-2"));
  CHECK(!has_feature("8.6", "cuda-12-3"));

  /* NVML that fails to initialise falls back too. */
  fake_env(FULL_LIB, "8.6");
  setenv("FAKE_NVML_INIT_FAIL", "1", 1);
  setenv("FPULL_CUDA_LIBRARY", CUDA_LIB, 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 2);
  fpull_nvidia_info_free(ni);

  /* libcuda without a device: nothing, and both reasons. */
  setenv("FAKE_CUDA_INIT_FAIL", "1", 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 0);
  CHECK_CONTAINS(ni->reason, "NVML initialisation failed");
  CHECK_CONTAINS(ni->reason, "cuInit failed (CUresult 100)");
  fpull_nvidia_info_free(ni);
  unsetenv("FAKE_CUDA_INIT_FAIL");

  /* A working NVML is never second-guessed by libcuda. */
  fake_env(FULL_LIB, "8.6");
  setenv("FPULL_CUDA_LIBRARY", CUDA_LIB, 1);
  ni = detect();
  CHECK_INT_EQ(ni->n_gpus, 1);
  CHECK_INT_EQ(ni->gpus[0].cc_major, 8);
  fpull_nvidia_info_free(ni);
}
