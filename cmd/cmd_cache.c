/* fpull cache ls|du|prune|rm: what the blob cache holds, and removing what is not needed,
 * as podman image prune, apptainer cache clean and enroot remove do. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char *const subs[] = {"ls", "du", "prune", "rm", NULL};

static int usage(const char *sub, const char *what, const char *msg)
{
  fprintf(stderr, "fpull: cache %s: %s%s%s (see 'fpull cache --help')\n", sub, what ? what : "",
          what ? ": " : "", msg);
  return FPULL_EUSAGE;
}

/* "2026-11-25T21:00:00Z" */
static const char *iso_time(char *buf, size_t len, int64_t t)
{
  time_t tt = (time_t)t;
  struct tm tm;
  if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
    snprintf(buf, len, "?");
  return buf;
}

/* "3 hours ago", as docker images says it. */
static const char *ago(char *buf, size_t len, int64_t t)
{
  int64_t d = (int64_t)time(NULL) - t;
  static const struct {
    int64_t secs;
    const char *unit;
  } units[] = {{604800, "week"}, {86400, "day"}, {3600, "hour"}, {60, "minute"}};
  if (d < 60) {
    snprintf(buf, len, "just now");
    return buf;
  }
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (d >= units[i].secs) {
      long long n = (long long)(d / units[i].secs);
      snprintf(buf, len, "%lld %s%s ago", n, units[i].unit, n == 1 ? "" : "s");
      break;
    }
  return buf;
}

static cJSON *kind_json(const struct fpull_cache_kind_usage *k)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "count", (double)k->count);
  cJSON_AddNumberToObject(o, "bytes", (double)k->bytes);
  return o;
}

static int run_ls(const struct cli_settings *s, const char *dir)
{
  fpull_err err = {0};
  struct fpull_cache_listing *l = NULL;
  if (fpull_cache_list(&l, dir, &err))
    return cli_fail(&err);
  if (s->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cache", dir);
    cJSON *a = cJSON_AddArrayToObject(o, "images");
    for (size_t i = 0; i < l->n_images; i++) {
      const struct fpull_cache_image *im = &l->images[i];
      char when[32];
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "reference", im->reference);
      cJSON_AddStringToObject(e, "digest", im->digest);
      cJSON_AddNumberToObject(e, "size", (double)im->size);
      cJSON_AddNumberToObject(e, "unique_size", (double)im->unique_size);
      cJSON_AddNumberToObject(e, "blobs", (double)im->blobs);
      cJSON_AddStringToObject(e, "last_used", iso_time(when, sizeof when, im->last_use));
      cJSON_AddBoolToObject(e, "in_use", im->in_use);
      cJSON_AddItemToArray(a, e);
    }
    cli_print_json(o);
  } else {
    /* A reference by digest ends in '@': its digest is DIGEST's (12 digits, as docker
     * images shows them; --json has every reference and digest whole), so that rows stay
     * within 80 columns for the usual names. */
    int w = 5;
    char(*refs)[300] = calloc(l->n_images ? l->n_images : 1, sizeof *refs);
    for (size_t i = 0; refs && i < l->n_images; i++) {
      const char *r = l->images[i].reference, *at = strchr(r, '@');
      snprintf(refs[i], sizeof refs[i], "%.*s%s", at ? (int)(at - r) : 255, r, at ? "@" : "");
      if ((int)strlen(refs[i]) > w)
        w = (int)strlen(refs[i]);
    }
    printf("%-*s  %-12s  %8s  %8s  %s\n", w, "IMAGE", "DIGEST", "SIZE", "UNIQUE", "LAST USED");
    for (size_t i = 0; refs && i < l->n_images; i++) {
      const struct fpull_cache_image *im = &l->images[i];
      const char *hex = strchr(im->digest, ':');
      char a[32], b[32], when[48];
      printf("%-*s  %.12s  %8s  %8s  %s%s\n", w, refs[i], hex ? hex + 1 : im->digest,
             cli_human_bytes(a, sizeof a, im->size), cli_human_bytes(b, sizeof b, im->unique_size),
             ago(when, sizeof when, im->last_use), im->in_use ? " (in use)" : "");
    }
    free(refs);
  }
  fpull_cache_listing_free(l);
  return 0;
}

static int run_du(const struct cli_settings *s, const char *dir)
{
  fpull_err err = {0};
  struct fpull_cache_usage u;
  if (fpull_cache_du(&u, dir, &err))
    return cli_fail(&err);
  if (s->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cache", dir);
    cJSON_AddNumberToObject(o, "images", (double)u.images);
    cJSON_AddNumberToObject(o, "total", (double)u.total);
    cJSON_AddItemToObject(o, "blobs", kind_json(&u.blobs));
    cJSON_AddItemToObject(o, "manifests", kind_json(&u.manifests));
    cJSON_AddItemToObject(o, "partials", kind_json(&u.partials));
    cJSON_AddItemToObject(o, "records", kind_json(&u.records));
    cJSON_AddItemToObject(o, "unreferenced", kind_json(&u.unreferenced));
    cli_print_json(o);
    return 0;
  }
  const struct {
    const char *name;
    const struct fpull_cache_kind_usage *k;
  } rows[] = {{"blobs", &u.blobs},
              {"manifests", &u.manifests},
              {"partials", &u.partials},
              {"records", &u.records},
              {"unreferenced", &u.unreferenced}};
  char a[32];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    printf("%-13s %6llu files  %10s%s\n", rows[i].name, (unsigned long long)rows[i].k->count,
           cli_human_bytes(a, sizeof a, rows[i].k->bytes),
           i == 4 ? "  (of the blobs: what prune removes)" : "");
  printf("%-13s %6zu images %10s  in %s\n", "total", u.images,
         cli_human_bytes(a, sizeof a, u.total), dir);
  return 0;
}

/* What prune and rm did: removed references on stdout, the rest on stderr. */
static int report(const struct cli_settings *s, const char *dir,
                  const struct fpull_cache_prune_result *r)
{
  for (size_t i = 0; r->in_use[i]; i++)
    fprintf(stderr, "fpull: warning: kept %s: a pull of it is running\n", r->in_use[i]);
  if (s->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cache", dir);
    cJSON_AddItemToObject(o, "removed", cli_json_strv(r->removed));
    cJSON_AddItemToObject(o, "in_use", cli_json_strv(r->in_use));
    cJSON_AddNumberToObject(o, "blobs_removed", (double)r->blobs_removed);
    cJSON_AddNumberToObject(o, "bytes_freed", (double)r->bytes_freed);
    cJSON_AddNumberToObject(o, "size", (double)r->size);
    cli_print_json(o);
    return 0;
  }
  for (size_t i = 0; r->removed[i]; i++)
    printf("%s\n", r->removed[i]);
  char a[32], b[32];
  if (!s->quiet)
    fprintf(stderr, "freed %s (%llu files); %s holds %s\n",
            cli_human_bytes(a, sizeof a, r->bytes_freed), (unsigned long long)r->blobs_removed, dir,
            cli_human_bytes(b, sizeof b, r->size));
  return 0;
}

static int run_prune(const struct cli_settings *s, const char *dir)
{
  struct fpull_cache_prune_opts o = FPULL_CACHE_PRUNE_OPTS_INIT;
  fpull_err err = {0};
  if (s->older_than && fpull_cache_parse_duration(&o.older_than, s->older_than, &err))
    return usage("prune", "--older-than", err.msg);
  if (s->max_size && fpull_cache_parse_size(&o.max_size, s->max_size, &err))
    return usage("prune", "--max-size", err.msg);
  o.all = s->prune_all;
  if (o.all && (s->older_than || s->max_size))
    return usage("prune", NULL,
                 "--all removes every image; it takes no --older-than or --max-size");
  struct fpull_cache_prune_result *r = NULL;
  if (fpull_cache_prune(&r, dir, &o, &err))
    return cli_fail(&err);
  int rc = report(s, dir, r);
  fpull_cache_prune_result_free(r);
  return rc;
}

static int run_rm(const struct cli_settings *s, const char *dir, const char *image)
{
  fpull_err err = {0};
  struct fpull_cache_prune_result *r = NULL;
  if (fpull_cache_rm(&r, dir, image, &err))
    return cli_fail(&err);
  int rc = report(s, dir, r);
  fpull_cache_prune_result_free(r);
  return rc;
}

static int run_cache(struct cli_settings *s, int argc, char **argv)
{
  const char *sub = argv[0];
  size_t k = 0;
  while (subs[k] && strcmp(subs[k], sub) != 0)
    k++;
  if (!subs[k]) {
    const char *near = fpull_suggest(sub, subs);
    if (near)
      fprintf(stderr, "fpull: cache: unknown subcommand '%s' (did you mean '%s'?)\n", sub, near);
    else
      fprintf(stderr, "fpull: cache: unknown subcommand '%s' (ls, du, prune or rm)\n", sub);
    return FPULL_EUSAGE;
  }
  int is_prune = strcmp(sub, "prune") == 0, is_rm = strcmp(sub, "rm") == 0;
  if (!is_prune && (s->older_than || s->max_size || s->prune_all))
    return usage(sub, NULL, "--older-than, --max-size and --all are for cache prune only");
  if (is_rm && argc != 2)
    return usage(sub, NULL, "takes one IMAGE");
  if (!is_rm && argc != 1)
    return usage(sub, NULL, "takes no arguments");
  fpull_err err = {0};
  struct cli_env env = {0};
  if (cli_env_load(&env, s, 0, &err))
    return cli_fail(&err);
  int rc;
  if (!env.cache_dir) {
    fpull_err_set(&err, FPULL_EFAIL,
                  "no cache directory: none given, and no $FPULL_CACHE, $XDG_CACHE_HOME or "
                  "home directory");
    rc = cli_fail(&err);
  } else if (strcmp(sub, "ls") == 0) {
    rc = run_ls(s, env.cache_dir);
  } else if (strcmp(sub, "du") == 0) {
    rc = run_du(s, env.cache_dir);
  } else if (is_prune) {
    rc = run_prune(s, env.cache_dir);
  } else {
    rc = run_rm(s, env.cache_dir, argv[1]);
  }
  cli_env_free(&env);
  return rc;
}

static const enum cli_opt_id cache_opts[] = {
    OPT_HELP,     OPT_CACHE_DIR, OPT_CONFIG, OPT_JSON,    OPT_OLDER_THAN,
    OPT_MAX_SIZE, OPT_PRUNE_ALL, OPT_QUIET,  OPT_VERBOSE, 0,
};

const struct cli_cmd cmd_cache = {
    .name = "cache",
    .args = "ls | du | prune [--older-than DURATION] [--max-size SIZE] [--all] | rm IMAGE",
    .summary = "list the cached images, sum the cache up, prune it, remove one image",
    .opts = cache_opts,
    .min_args = 1,
    .max_args = 2,
    .run = run_cache,
};
