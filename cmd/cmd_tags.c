/* fpull tags REPOSITORY: the repository's tags, every page of the registry's tags/list
 * (crane ls, skopeo list-tags, regctl tag ls). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void ref_freep(struct fpull_ref **r)
{
  fpull_ref_free(*r);
}

static void reg_freep(fpull_registry **r)
{
  fpull_registry_free(*r);
}

/* FPULL_TAGS_PAGE_SIZE: tags a request asks for (the registry may send fewer). */
static unsigned page_size(void)
{
  const char *v = getenv("FPULL_TAGS_PAGE_SIZE");
  long n = v ? strtol(v, NULL, 10) : 0;
  return n > 0 && n <= 10000 ? (unsigned)n : 0;
}

static int list(const struct cli_settings *s, const struct cli_env *env,
                const struct fpull_ref *ref, char ***tags, fpull_err *err)
{
  struct fpull_registry_opts ro;
  fpull_registry_opts_init(&ro, ref->registry, env->config, s->insecure, s->certs_dir);
  ro.cert_dir = s->cert_dir;
  ro.creds = s->creds;
  __attribute__((cleanup(reg_freep))) fpull_registry *reg = NULL;
  int rc = fpull_registry_open(&reg, ref->registry, &ro, err);
  if (rc == 0)
    rc = fpull_registry_list_tags(tags, reg, ref->repository, page_size(), err);
  return rc;
}

static int run_tags(struct cli_settings *s, int argc, char **argv)
{
  (void)argc;
  const char *text = argv[0];
  fpull_err err = {0};
  __attribute__((cleanup(ref_freep))) struct fpull_ref *ref = NULL;
  int rc = fpull_ref_parse(&ref, text, &err);
  /* A tag or digest given is a mistake: the answer would not depend on it. */
  const char *last = strrchr(text, '/');
  if (rc == 0 && (ref->digest || strchr(last ? last : text, ':')))
    rc = fpull_err_set(&err, FPULL_EUSAGE,
                       "tags: %s: give a repository, without a tag or digest ('fpull digest "
                       "IMAGE' prints an image's digest)",
                       text);
  char repo[600] = "";
  if (rc == 0)
    snprintf(repo, sizeof repo, "%s/%s", ref->registry, ref->repository);
  struct cli_env env = {0};
  if (rc == 0)
    rc = cli_env_load(&env, s, 0, &err);
  char **tags = NULL;
  if (rc == 0) {
    rc = list(s, &env, ref, &tags, &err);
    if (rc)
      fpull_err_prefix(&err, "%s", repo);
  }
  if (rc == 0 && s->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "repository", repo);
    cJSON_AddItemToObject(j, "tags", cli_json_strv(tags));
    cli_print_json(j);
  } else if (rc == 0) {
    for (size_t i = 0; tags[i]; i++)
      printf("%s\n", tags[i]);
  } else if (s->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "repository", *repo ? repo : text);
    cJSON *eo = cJSON_AddObjectToObject(j, "error");
    cJSON_AddNumberToObject(eo, "code", err.code ? err.code : FPULL_EFAIL);
    cJSON_AddStringToObject(eo, "message", err.msg);
    cli_print_json(j);
  }
  fpull_strv_free(tags);
  cli_env_free(&env);
  return rc ? cli_fail(&err) : 0;
}

static const enum cli_opt_id tags_opts[] = {
    OPT_HELP,     OPT_CERTS_DIR, OPT_CERT_DIR, OPT_CREDS,   OPT_CONFIG,
    OPT_INSECURE, OPT_JSON,      OPT_QUIET,    OPT_VERBOSE, 0};

const struct cli_cmd cmd_tags = {
    .name = "tags",
    .args = "[OPTIONS] REPOSITORY",
    .summary = "list a repository's tags (every page of the registry's list)",
    .opts = tags_opts,
    .min_args = 1,
    .max_args = 1,
    .run = run_tags,
};
