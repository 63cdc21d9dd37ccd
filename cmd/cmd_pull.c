/* fpull pull and fpull prefetch. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "cli.h"

static cJSON *result_json(const struct fpull_pull_result *r)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "reference", r->reference);
  if (r->index_digest)
    cJSON_AddStringToObject(o, "index_digest", r->index_digest);
  else
    cJSON_AddNullToObject(o, "index_digest");
  cJSON_AddStringToObject(o, "manifest_digest", r->manifest_digest);
  cJSON_AddItemToObject(o, "platform", cli_json_platform(r->platform));
  if (r->rootfs)
    cJSON_AddStringToObject(o, "rootfs", r->rootfs);
  cJSON_AddNumberToObject(o, "layers", (double)r->layers);
  cJSON_AddNumberToObject(o, "bytes_downloaded", (double)r->bytes_downloaded);
  cJSON_AddNumberToObject(o, "bytes_from_cache", (double)r->bytes_from_cache);
  return o;
}

static void say_done(const struct cli_settings *s, const struct fpull_pull_result *r)
{
  if (s->json || s->quiet)
    return;
  fprintf(stderr, "%s: %s", r->reference, r->manifest_digest);
  if (r->index_digest && r->platform) {
    fprintf(stderr, " (entry %s/%s%s%s", r->platform->os, r->platform->architecture,
            r->platform->variant ? "/" : "", r->platform->variant ? r->platform->variant : "");
    for (size_t i = 0; r->platform->features && r->platform->features[i]; i++)
      fprintf(stderr, "%c%s", i ? ',' : ' ', r->platform->features[i]);
    fprintf(stderr, ")");
  }
  fprintf(stderr, ", %zu layers, %llu bytes downloaded, %llu from cache%s%s\n", r->layers,
          (unsigned long long)r->bytes_downloaded, (unsigned long long)r->bytes_from_cache,
          r->rootfs ? " -> " : "", r->rootfs ? r->rootfs : "");
}

static int run_pull(struct cli_settings *s, int argc, char **argv)
{
  fpull_err err = {0};
  struct cli_env env = {0};
  const char *dest = argc > 1 ? argv[1] : s->output;
  if (argc > 1 && s->output) {
    fpull_err_set(&err, FPULL_EUSAGE, "pull: give DEST either as an argument or with -o, not both");
    return cli_fail(&err);
  }
  int rc = cli_env_load(&env, s, 1, &err);
  if (rc == 0) {
    struct fpull_pull_opts o;
    cli_pull_opts(&o, &env, s);
    struct fpull_pull_result *r = NULL;
    rc = fpull_pull(&r, argv[0], dest, &o, &err);
    if (rc == 0) {
      say_done(s, r);
      if (s->json)
        cli_print_json(result_json(r));
    }
    fpull_pull_result_free(r);
  }
  cli_env_free(&env);
  return rc ? cli_fail(&err) : 0;
}

static int run_prefetch(struct cli_settings *s, int argc, char **argv)
{
  fpull_err err = {0};
  struct cli_env env = {0};
  if (cli_env_load(&env, s, 1, &err))
    return cli_fail(&err);
  struct fpull_pull_opts o;
  cli_pull_opts(&o, &env, s);
  cJSON *all = cJSON_CreateArray();
  /* Every image is tried; the first failure decides the exit code. */
  int first_rc = 0;
  for (int i = 0; i < argc; i++) {
    struct fpull_pull_result *r = NULL;
    fpull_err e = {0};
    int rc = fpull_prefetch(&r, argv[i], &o, &e);
    if (rc == 0) {
      say_done(s, r);
      cJSON_AddItemToArray(all, result_json(r));
    } else if (!first_rc) {
      first_rc = rc;
      err = e;
    } else {
      fprintf(stderr, "fpull: warning: %s\n", e.msg);
    }
    fpull_pull_result_free(r);
  }
  cli_env_free(&env);
  if (s->json && !first_rc)
    cli_print_json(all);
  else
    cJSON_Delete(all);
  return first_rc ? cli_fail(&err) : 0;
}

static const enum cli_opt_id pull_opts[] = {
    OPT_HELP,      OPT_OUTPUT,          OPT_FORCE,      OPT_FEATURES,     OPT_PLATFORM,
    OPT_CACHE_DIR, OPT_CERTS_DIR,       OPT_CONFIG,     OPT_INSECURE,     OPT_OFFLINE,
    OPT_JSON,      OPT_QUIET,           OPT_VERBOSE,    OPT_JOBS,         OPT_FORMAT,
    OPT_SQFS_COMP, OPT_SQFS_BLOCK_SIZE, OPT_SQFS_LEVEL, OPT_SQFS_THREADS, 0};

static const enum cli_opt_id prefetch_opts[] = {
    OPT_HELP,    OPT_FEATURES, OPT_PLATFORM, OPT_CACHE_DIR, OPT_CERTS_DIR, OPT_CONFIG, OPT_INSECURE,
    OPT_OFFLINE, OPT_JSON,     OPT_QUIET,    OPT_VERBOSE,   OPT_JOBS,      0};

const struct cli_cmd cmd_pull = {
    .name = "pull",
    .args = "[OPTIONS] IMAGE [DEST]",
    .summary = "choose the entry for this node, download its blobs and unpack them into DEST",
    .opts = pull_opts,
    .min_args = 1,
    .max_args = 2,
    .run = run_pull,
};

const struct cli_cmd cmd_prefetch = {
    .name = "prefetch",
    .args = "[OPTIONS] IMAGE...",
    .summary = "download the chosen entry's blobs into the cache only (job prologues)",
    .opts = prefetch_opts,
    .min_args = 1,
    .max_args = -1,
    .run = run_prefetch,
};
