/* fpull version: the version, the revision it was built from and the libraries it runs
 * with, as `curl -V` and `regctl version` do. */
#include "cli.h"

static int run_version(struct cli_settings *s, int argc, char **argv)
{
  const char *rev = fpull_build_revision();
  printf("fpull %s\n", FPULL_VERSION);
  if (rev)
    printf("commit: %s\n", rev);
  for (const struct fpull_component *c = fpull_components(); c->name; c++)
    printf("%s: %s\n", c->name, c->version);
  return 0;
}

static const enum cli_opt_id version_opts[] = {OPT_HELP, 0};

const struct cli_cmd cmd_version = {
    .name = "version",
    .args = "",
    .summary = "print the version, the source revision and the libraries' versions",
    .opts = version_opts,
    .min_args = 0,
    .max_args = 0,
    .run = run_version,
};
