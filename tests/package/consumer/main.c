/* A program outside fpull's tree, built against an installed libfpull by package.consumers
 * (pkg-config, pkg-config --static, find_package). It prints one line the test checks. */
#include <fpull/fpull.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Naming these links the code behind them into a static program: layer decompression
 * (zlib/isal, zstd, libarchive), the registry client (curl, OpenSSL), detection
 * (libcpuid), the config and spec readers (libyaml, cJSON). A link that lacks one of
 * fpull's dependencies fails here, not in a user's program. */
static void (*const volatile linked[])(void) = {
    (void (*)(void))fpull_pull,         (void (*)(void))fpull_unpack_rootfs,
    (void (*)(void))fpull_target_build, (void (*)(void))fpull_config_load,
    (void (*)(void))fpull_spec_push,
};

int main(void)
{
  if (strcmp(fpull_version(), FPULL_VERSION) != 0) {
    fprintf(stderr, "library %s, headers %s\n", fpull_version(), FPULL_VERSION);
    return 1;
  }
  fpull_err err = {0};
  struct fpull_ref *ref = NULL;
  if (fpull_ref_parse(&ref, "ubuntu", &err) != FPULL_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  /* The installed headers and library agree on the options structs' versioning. */
  struct fpull_pull_opts o = FPULL_PULL_OPTS_INIT;
  o.version = FPULL_PULL_OPTS_VERSION + 1;
  struct fpull_inspect_result *ir = NULL;
  if (fpull_inspect(&ir, "ubuntu", &o, &err) != FPULL_EUSAGE) {
    fprintf(stderr, "a newer fpull_pull_opts version was not refused\n");
    fpull_ref_free(ref);
    return 1;
  }
  char *s = fpull_ref_format(ref);
  printf("fpull %s %s %zu\n", fpull_version(), s, sizeof linked / sizeof linked[0]);
  free(s);
  fpull_ref_free(ref);
  return 0;
}
