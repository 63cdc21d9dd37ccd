/* fpull digest IMAGE: the digest of the entry pull would unpack (crane digest, skopeo
 * inspect --format '{{.Digest}}'), or with --index the digest of the index itself. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "cli.h"

static int run_digest(struct cli_settings *s, int argc, char **argv)
{
  (void)argc;
  fpull_err err = {0};
  struct cli_env env = {0};
  struct fpull_inspect_result *r = NULL;
  int rc = cli_env_load(&env, s, 1, &err);
  if (rc == 0) {
    struct fpull_pull_opts o;
    cli_pull_opts(&o, &env, s);
    rc = fpull_inspect(&r, argv[0], &o, &err);
  }
  const struct fpull_descriptor *chosen = NULL;
  if (rc == 0 && r->match->chosen >= 0)
    chosen = &r->entries[r->match->chosen];
  /* Without --index the answer is the chosen entry's: none fits is pull's failure. */
  if (rc == 0 && !chosen && !s->index) {
    rc = fpull_match_no_fit(r->match, r->entries, !r->index_digest, env.target, &err);
    fpull_err_prefix(&err, "%s", r->reference);
  }
  if (rc == 0) {
    /* A single manifest is its own top document. */
    const char *top = r->index_digest ? r->index_digest : r->entries[0].digest;
    const char *digest = s->index ? top : chosen->digest;
    if (s->json) {
      cJSON *j = cJSON_CreateObject();
      cJSON_AddStringToObject(j, "reference", r->reference);
      cJSON_AddStringToObject(j, "digest", digest);
      if (r->index_digest)
        cJSON_AddStringToObject(j, "index_digest", r->index_digest);
      else
        cJSON_AddNullToObject(j, "index_digest");
      if (chosen)
        cJSON_AddStringToObject(j, "manifest_digest", chosen->digest);
      else
        cJSON_AddNullToObject(j, "manifest_digest");
      cJSON_AddItemToObject(j, "platform", cli_json_platform(chosen ? chosen->platform : NULL));
      cli_print_json(j);
    } else {
      printf("%s\n", digest);
    }
  }
  fpull_inspect_result_free(r);
  cli_env_free(&env);
  if (rc && s->json)
    cli_print_json(cli_pull_error_json(argv[0], &err));
  return rc ? cli_fail(&err) : 0;
}

static const enum cli_opt_id digest_opts[] = {
    OPT_HELP,      OPT_INDEX,    OPT_FEATURES, OPT_PLATFORM, OPT_CACHE_DIR,
    OPT_CERTS_DIR, OPT_CERT_DIR, OPT_CREDS,    OPT_CONFIG,   OPT_INSECURE,
    OPT_OFFLINE,   OPT_JSON,     OPT_QUIET,    OPT_VERBOSE,  0};

const struct cli_cmd cmd_digest = {
    .name = "digest",
    .args = "[OPTIONS] IMAGE",
    .summary = "print the digest of the entry pull would choose (--index: of the index)",
    .opts = digest_opts,
    .min_args = 1,
    .max_args = 1,
    .run = run_digest,
};
