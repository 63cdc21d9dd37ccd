/* Options structs carry a version (issue 12.8): the library refuses one it does not know
 * before it acts on any field, and the _INIT macros give the current one. */
#include "fpull/fpull.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(version_of_library_and_headers_agree)
{
  CHECK_STR_EQ(fpull_version(), FPULL_VERSION);
  char s[32];
  snprintf(s, sizeof s, "%d.%d.%d", FPULL_VERSION_MAJOR, FPULL_VERSION_MINOR, FPULL_VERSION_PATCH);
  CHECK_STR_EQ(s, FPULL_VERSION);
  CHECK_INT_EQ(FPULL_VERSION_NUM,
               (FPULL_VERSION_MAJOR << 16) | (FPULL_VERSION_MINOR << 8) | FPULL_VERSION_PATCH);
}

TEST(init_macros_set_the_current_version)
{
  struct fpull_pull_opts p = FPULL_PULL_OPTS_INIT;
  struct fpull_registry_opts r = FPULL_REGISTRY_OPTS_INIT;
  struct fpull_target_opts t = FPULL_TARGET_OPTS_INIT;
  struct fpull_push_opts s = FPULL_PUSH_OPTS_INIT;
  CHECK_INT_EQ(p.version, FPULL_PULL_OPTS_VERSION);
  CHECK_INT_EQ(p.unpack.version, FPULL_UNPACK_OPTS_VERSION);
  CHECK_INT_EQ(r.version, FPULL_REGISTRY_OPTS_VERSION);
  CHECK_INT_EQ(t.version, FPULL_TARGET_OPTS_VERSION);
  CHECK_INT_EQ(s.version, FPULL_PUSH_OPTS_VERSION);
  CHECK_NULL(p.cache_dir);
  fpull_registry_opts_init(&r, "docker.io", NULL, 0, NULL);
  CHECK_INT_EQ(r.version, FPULL_REGISTRY_OPTS_VERSION);
}

TEST(target_refuses_unset_and_newer_versions)
{
  struct fpull_target_opts o = {.platform = "linux/amd64", .no_detect = 1};
  struct fpull_target *t = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), FPULL_EUSAGE);
  CHECK_NULL(t);
  CHECK_CONTAINS(err.msg, "fpull_target_opts has no version");
  o.version = FPULL_TARGET_OPTS_VERSION + 1;
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "newer than this libfpull knows");
}

TEST(pull_inspect_prefetch_refuse_before_any_request)
{
  struct fpull_pull_opts o = FPULL_PULL_OPTS_INIT;
  o.version = 0;
  o.cache_dir = "/nonexistent/fpull-never-created";
  fpull_err err = {0};
  struct fpull_inspect_result *ir = NULL;
  struct fpull_pull_result *pr = NULL;
  CHECK_INT_EQ(fpull_inspect(&ir, "fpull-test.invalid/x:1", &o, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "fpull_pull_opts");
  CHECK_INT_EQ(fpull_prefetch(&pr, "fpull-test.invalid/x:1", &o, &err), FPULL_EUSAGE);
  CHECK_INT_EQ(fpull_pull(&pr, "fpull-test.invalid/x:1", "/nonexistent/d", &o, &err), FPULL_EUSAGE);
  CHECK_NULL(ir);
  CHECK_NULL(pr);
  struct stat st;
  CHECK(stat(o.cache_dir, &st) < 0);
}

TEST(unpack_registry_push_refuse_unknown_versions)
{
  fpull_err err = {0};
  struct fpull_unpack_opts u = {.version = 7};
  char dest[] = "/tmp/fpull-opts-version-XXXXXX";
  CHECK(mkdtemp(dest) != NULL);
  char out[sizeof dest + 8];
  snprintf(out, sizeof out, "%s/rootfs", dest);
  CHECK_INT_EQ(fpull_unpack_rootfs(out, NULL, 0, &u, NULL, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "fpull_unpack_opts");
  struct stat st;
  CHECK(stat(out, &st) < 0);
  rmdir(dest);

  struct fpull_registry_opts r = {.insecure = 1};
  fpull_registry *reg = NULL;
  CHECK_INT_EQ(fpull_registry_open(&reg, "docker.io", &r, &err), FPULL_EUSAGE);
  CHECK_NULL(reg);
  CHECK_CONTAINS(err.msg, "fpull_registry_opts");

  struct fpull_push_opts p = {.insecure = 1};
  struct fpull_push_result *pr = NULL;
  CHECK_INT_EQ(fpull_spec_push(&pr, NULL, &p, &err), FPULL_EUSAGE);
  CHECK_NULL(pr);
  CHECK_CONTAINS(err.msg, "fpull_push_opts");
}
