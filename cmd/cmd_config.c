/* fpull config: the image configuration of the entry pull would choose, like crane
 * config: the verified bytes as they are, so that jq and scripts see what the image says. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int run_config(struct cli_settings *s, int argc, char **argv)
{
  (void)argc;
  fpull_err err = {0};
  struct cli_env env = {0};
  if (cli_env_load(&env, s, 1, &err))
    return cli_fail(&err);
  struct fpull_pull_opts o;
  cli_pull_opts(&o, &env, s);
  o.progress = NULL; /* a config is a few bytes: no progress line */
  char *json = NULL;
  size_t len = 0;
  int rc = fpull_image_config_get(&json, &len, argv[0], &o, &err);
  if (rc == 0) {
    fwrite(json, 1, len, stdout);
    if (len == 0 || json[len - 1] != '\n')
      fputc('\n', stdout);
  }
  free(json);
  cli_env_free(&env);
  return rc ? cli_fail(&err) : 0;
}

/* clang-format off */
static const enum cli_opt_id config_opts[] = {
    OPT_HELP,  OPT_FEATURES, OPT_PLATFORM, OPT_CACHE_DIR, OPT_CERTS_DIR, OPT_CERT_DIR,
    OPT_CREDS, OPT_CONFIG,   OPT_INSECURE, OPT_OFFLINE,   OPT_QUIET,     OPT_VERBOSE,
    OPT_POLICY, OPT_REQUIRE_SIGS, OPT_SIG_INDEX, /* signatures (cli_sig.c) */
    0};
/* clang-format on */

const struct cli_cmd cmd_config = {
    .name = "config",
    .args = "[OPTIONS] IMAGE",
    .summary = "print the image configuration (JSON) of the entry pull would choose",
    .opts = config_opts,
    .min_args = 1,
    .max_args = 1,
    .run = run_config,
};
