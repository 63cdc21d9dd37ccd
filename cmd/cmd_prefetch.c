/* fpull prefetch: blobs into the cache only, for batch-job prologues; --all caches every
 * entry of the index for cross-preparation on a login node. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "cli.h"

/* --all: what was cached for each entry, after the fields every prefetch result has. */
static cJSON *all_json(const struct fpull_pull_result *r)
{
  cJSON *o = cli_pull_json(r);
  if (!r->manifest_digest) {
    /* An index has no one chosen entry here: the fields stay, as null. */
    cJSON_DeleteItemFromObjectCaseSensitive(o, "manifest_digest");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "platform");
    cJSON_AddNullToObject(o, "manifest_digest");
    cJSON_AddNullToObject(o, "platform");
  }
  cJSON *a = cJSON_AddArrayToObject(o, "entries");
  for (size_t i = 0; i < r->n_entries; i++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "manifest_digest", r->entries[i].manifest_digest);
    cJSON_AddItemToObject(e, "platform", cli_json_platform(r->entries[i].platform));
    cJSON_AddNumberToObject(e, "layers", (double)r->entries[i].layers);
    cJSON_AddItemToArray(a, e);
  }
  return o;
}

static void say_all(const struct cli_settings *s, const struct fpull_pull_result *r)
{
  if (s->json || s->quiet)
    return;
  char down[32], cached[32];
  fprintf(stderr, "%s: %zu entries, %zu layers, %s downloaded, %s from cache\n", r->reference,
          r->n_entries, r->layers, cli_human_bytes(down, sizeof down, r->bytes_downloaded),
          cli_human_bytes(cached, sizeof cached, r->bytes_from_cache));
}

static int prefetch_one(const struct cli_settings *s, const struct cli_env *env,
                        const struct fpull_pull_opts *o, const char *image, cJSON *all,
                        fpull_err *e)
{
  struct fpull_pull_result *r = NULL;
  int rc;
  if (s->all) {
    /* --platform narrows --all to its os/architecture; without it, every image entry. */
    const char *os = s->platform ? env->target->os : NULL;
    const char *arch = s->platform ? env->target->architecture : NULL;
    rc = fpull_prefetch_all(&r, image, os, arch, o, e);
  } else {
    rc = fpull_prefetch(&r, image, o, e);
  }
  if (rc == 0 && s->all) {
    say_all(s, r);
    cJSON_AddItemToArray(all, all_json(r));
  } else if (rc == 0) {
    cli_pull_say_done(s, r);
    cJSON_AddItemToArray(all, cli_pull_json(r));
  }
  fpull_pull_result_free(r);
  return rc;
}

static int run_prefetch(struct cli_settings *s, int argc, char **argv)
{
  fpull_err err = {0};
  struct cli_env env = {0};
  if (cli_env_load(&env, s, 1, &err))
    return cli_fail(&err);
  struct fpull_pull_opts o;
  cli_pull_opts(&o, &env, s);
  /* Ctrl-C: one line and 130; the cache keeps the partial downloads to resume. */
  cli_interrupt_install();
  cJSON *all = cJSON_CreateArray();
  /* Every image is tried; the first failure decides the exit code. */
  int first_rc = 0;
  for (int i = 0; i < argc; i++) {
    fpull_err e = {0};
    int rc = prefetch_one(s, &env, &o, argv[i], all, &e);
    if (rc)
      cJSON_AddItemToArray(all, cli_pull_error_json(argv[i], &e));
    if (rc && !first_rc) {
      first_rc = rc;
      err = e;
    } else if (rc) {
      fprintf(stderr, "fpull: warning: %s\n", e.msg);
    }
  }
  cli_env_free(&env);
  /* Failed images keep their place in the array (contract v3). */
  if (s->json)
    cli_print_json(all);
  else
    cJSON_Delete(all);
  return first_rc ? cli_fail(&err) : 0;
}

/* clang-format off */
static const enum cli_opt_id prefetch_opts[] = {
    OPT_HELP,      OPT_ALL,     OPT_FEATURES, OPT_PLATFORM, OPT_CACHE_DIR,
    OPT_CERTS_DIR, OPT_CERT_DIR, OPT_CREDS, OPT_CONFIG,  OPT_INSECURE, OPT_OFFLINE,  OPT_JSON,
    OPT_POLICY, OPT_REQUIRE_SIGS, OPT_SIG_INDEX, /* signatures (cli_sig.c) */
    OPT_QUIET,     OPT_VERBOSE, OPT_JOBS,     OPT_PROGRESS, 0};
/* clang-format on */

const struct cli_cmd cmd_prefetch = {
    .name = "prefetch",
    .args = "[OPTIONS] IMAGE...",
    .summary = "download the chosen entry's blobs (--all: every entry's) into the cache only",
    .opts = prefetch_opts,
    .min_args = 1,
    .max_args = -1,
    .run = run_prefetch,
};
