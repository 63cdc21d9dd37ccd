/* fpull version. */
#include "cli.h"

static int run_version(struct cli_settings *s, int argc, char **argv)
{
  printf("fpull %s\n", FPULL_VERSION);
  return 0;
}

static const enum cli_opt_id version_opts[] = {OPT_HELP, 0};

const struct cli_cmd cmd_version = {
    .name = "version",
    .args = "",
    .summary = "print the version",
    .opts = version_opts,
    .min_args = 0,
    .max_args = 0,
    .run = run_version,
};
