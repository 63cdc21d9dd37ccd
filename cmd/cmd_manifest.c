/* fpull manifest push SPEC.yaml | fpull manifest inspect IMAGE */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fpull/spec.h"

static void config_freep(struct fpull_config **c)
{
  fpull_config_free(*c);
}

static void spec_freep(struct fpull_spec **s)
{
  fpull_spec_free(*s);
}

static void tagdb_freep(struct fpull_tagdb **db)
{
  fpull_tagdb_free(*db);
}

static void result_freep(struct fpull_push_result **r)
{
  fpull_push_result_free(*r);
}

static void print_push_json(const struct fpull_push_result *r, const struct fpull_spec *spec)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "reference", r->reference);
  cJSON_AddStringToObject(o, "digest", r->digest);
  cJSON_AddStringToObject(o, "media_type", r->media_type);
  cJSON_AddNumberToObject(o, "size", (double)r->size);
  cJSON_AddItemToObject(o, "tags", cli_json_strv(spec->tags));
  cJSON *list = cJSON_AddArrayToObject(o, "manifests");
  for (size_t i = 0; i < r->n_manifests; i++) {
    const struct fpull_descriptor *d = &r->manifests[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "image", spec->entries[i].image);
    cJSON_AddStringToObject(e, "digest", d->digest);
    cJSON_AddStringToObject(e, "media_type", d->media_type);
    cJSON_AddNumberToObject(e, "size", (double)d->size);
    cJSON_AddItemToObject(e, "platform", cli_json_platform(d->platform));
    cJSON_AddItemToArray(list, e);
  }
  cJSON_AddNumberToObject(o, "copied", (double)r->copied);
  cli_print_json(o);
}

static void signer_freep(fpull_signer **s)
{
  fpull_signer_free(*s);
}

/* --sign-key: the index and each entry, for the target reference and for each tag of the
 * spec's tags: (so that a pull of any pushed tag meets the default identity rule), as
 * skopeo and cosign sign --recursive do; the signatures go to the target repository. */
static int sign_pushed(const struct cli_settings *s, const struct fpull_config *config,
                       const fpull_signer *signer, const struct fpull_push_result *r,
                       char *const *tags, fpull_err *err)
{
  struct fpull_ref *ref = NULL;
  fpull_registry *reg = NULL;
  int rc = fpull_ref_parse(&ref, r->reference, err);
  if (rc == 0) {
    struct fpull_registry_opts ro;
    fpull_registry_opts_init(&ro, ref->registry, config, s->insecure, s->certs_dir);
    ro.cert_dir = s->cert_dir;
    ro.creds = s->creds;
    rc = fpull_registry_open(&reg, ref->registry, &ro, err);
  }
  size_t n_tags = 0;
  while (tags && tags[n_tags])
    n_tags++;
  char **ids = calloc(n_tags + 2, sizeof *ids);
  size_t n = 0;
  ids[n++] = strdup(r->reference);
  for (size_t i = 0; rc == 0 && i < n_tags; i++) {
    if (asprintf(&ids[n], "%s/%s:%s", ref->registry, ref->repository, tags[i]) < 0)
      abort();
    if (strcmp(ids[n], r->reference) == 0) {
      free(ids[n]);
      ids[n] = NULL;
    } else {
      n++;
    }
  }
  if (rc == 0)
    rc = fpull_signer_push_identities(signer, reg, ref->repository, r->digest, ids, err);
  for (size_t i = 0; rc == 0 && i < r->n_manifests; i++)
    rc = fpull_signer_push_identities(signer, reg, ref->repository, r->manifests[i].digest, ids,
                                      err);
  if (rc == 0 && !s->quiet && !s->json)
    fprintf(stderr, "signed %s and its %zu entries (%zu tag%s)\n", r->reference, r->n_manifests, n,
            n == 1 ? "" : "s");
  for (size_t i = 0; i < n; i++)
    free(ids[i]);
  free(ids);
  fpull_registry_free(reg);
  fpull_ref_free(ref);
  return rc;
}

/* --sign-passphrase-file's first line (skopeo's), else COSIGN_PASSWORD (cosign's, even
 * empty), else NULL. */
static int sign_passphrase(char **out, const struct cli_settings *s, fpull_err *err)
{
  *out = NULL;
  if (!s->sign_passphrase_file) {
    const char *env = getenv("COSIGN_PASSWORD");
    *out = env ? strdup(env) : NULL;
    return 0;
  }
  FILE *f = fopen(s->sign_passphrase_file, "r");
  if (!f)
    return fpull_err_set(err, FPULL_EUSAGE, "--sign-passphrase-file %s: %s",
                         s->sign_passphrase_file, strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, f);
  fclose(f);
  if (n < 0) {
    free(line);
    line = strdup("");
    n = 0;
  }
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
    line[--n] = '\0';
  *out = line;
  return 0;
}

static void wipe_freep(char **p)
{
  if (*p) {
    explicit_bzero(*p, strlen(*p));
    free(*p);
  }
}

static int run_push(struct cli_settings *s, const struct fpull_config *config, const char *path)
{
  fpull_err err = {0};
  __attribute__((cleanup(signer_freep))) fpull_signer *signer = NULL;
  __attribute__((cleanup(wipe_freep))) char *pass = NULL;
  if (s->sign_passphrase_file && !s->sign_key) {
    fprintf(stderr, "fpull: manifest push: --sign-passphrase-file goes with --sign-key\n");
    return FPULL_EUSAGE;
  }
  if (s->sign_key &&
      (sign_passphrase(&pass, s, &err) || fpull_signer_load_key(&signer, s->sign_key, pass, &err)))
    return cli_fail(&err);
  __attribute__((cleanup(spec_freep))) struct fpull_spec *spec = NULL;
  if (fpull_spec_load(&spec, path, &err))
    return cli_fail(&err);

  /* Every name in the spec is checked like one typed on the command line: a typo in an
   * index would make its entry unreachable for the nodes it was built for. */
  __attribute__((cleanup(tagdb_freep))) struct fpull_tagdb *db = NULL;
  if (fpull_tagdb_load(&db, NULL, config, &err) || fpull_spec_check_names(spec, db, config, &err))
    return cli_fail(&err);

  struct fpull_push_opts opts = {
      .version = FPULL_PUSH_OPTS_VERSION,
      .type = s->type && strcmp(s->type, "docker") == 0 ? FPULL_PUSH_DOCKER : FPULL_PUSH_OCI,
      .insecure = s->insecure,
      .certs_dir = s->certs_dir,
      .config = config,
      .cert_dir = s->cert_dir,
      .creds = s->creds,
  };
  __attribute__((cleanup(result_freep))) struct fpull_push_result *r = NULL;
  if (fpull_spec_push(&r, spec, &opts, &err) ||
      (signer && sign_pushed(s, config, signer, r, spec->tags, &err)))
    return cli_fail(&err);
  if (s->json) {
    print_push_json(r, spec);
  } else {
    if (!s->quiet)
      fprintf(stderr, "pushed %s (%zu entries, %zu copied)\n", r->reference, r->n_manifests,
              r->copied);
    printf("%s\n", r->digest);
  }
  return 0;
}

static void ref_freep(struct fpull_ref **r)
{
  fpull_ref_free(*r);
}

static void registry_freep(fpull_registry **r)
{
  fpull_registry_free(*r);
}

static void fetched_freep(struct fpull_fetched **f)
{
  fpull_fetched_free(*f);
}

/* Prints the manifest or index exactly as served, like `skopeo inspect --raw`. */
static int run_inspect(struct cli_settings *s, const struct fpull_config *config, const char *image)
{
  fpull_err err = {0};
  __attribute__((cleanup(ref_freep))) struct fpull_ref *ref = NULL;
  if (fpull_ref_parse(&ref, image, &err))
    return cli_fail(&err);
  struct fpull_registry_opts ro;
  fpull_registry_opts_init(&ro, ref->registry, config, s->insecure, s->certs_dir);
  ro.cert_dir = s->cert_dir;
  ro.creds = s->creds;
  __attribute__((cleanup(registry_freep))) fpull_registry *reg = NULL;
  if (fpull_registry_open(&reg, ref->registry, &ro, &err))
    return cli_fail(&err);
  __attribute__((cleanup(fetched_freep))) struct fpull_fetched *f = NULL;
  if (fpull_registry_get_manifest(&f, reg, ref->repository, ref->digest ? ref->digest : ref->tag,
                                  &err)) {
    fpull_err_prefix(&err, "%s", image);
    return cli_fail(&err);
  }
  if (fwrite(f->data, 1, f->len, stdout) != f->len || fflush(stdout) != 0) {
    fprintf(stderr, "fpull: writing to standard output failed\n");
    return FPULL_EFAIL;
  }
  return 0;
}

static int run_manifest(struct cli_settings *s, int argc, char **argv)
{
  const char *sub = argv[0];
  if (strcmp(sub, "push") != 0 && strcmp(sub, "inspect") != 0) {
    static const char *const subs[] = {"push", "inspect", NULL};
    const char *near = fpull_suggest(sub, subs);
    if (near)
      fprintf(stderr, "fpull: manifest: unknown subcommand '%s' (did you mean '%s'?)\n", sub, near);
    else
      fprintf(stderr,
              "fpull: manifest: unknown subcommand '%s' (push or inspect; see 'fpull manifest "
              "--help')\n",
              sub);
    return FPULL_EUSAGE;
  }
  /* --type is what push writes; on inspect it would be silently ignored. */
  if (strcmp(sub, "inspect") == 0 && (s->type || s->sign_key || s->sign_passphrase_file)) {
    fprintf(stderr, "fpull: manifest inspect: --%s is for manifest push only\n",
            s->type       ? "type"
            : s->sign_key ? "sign-key"
                          : "sign-passphrase-file");
    return FPULL_EUSAGE;
  }
  fpull_err err = {0};
  __attribute__((cleanup(config_freep))) struct fpull_config *config = NULL;
  if (fpull_config_load(&config, s->config, &err))
    return cli_fail(&err);
  if (strcmp(sub, "push") == 0)
    return run_push(s, config, argv[1]);
  return run_inspect(s, config, argv[1]);
}

/* clang-format off */
static const enum cli_opt_id manifest_opts[] = {
    OPT_HELP,  OPT_TYPE,    OPT_JSON, OPT_INSECURE, OPT_CERTS_DIR, OPT_CERT_DIR, OPT_CREDS,
    OPT_CONFIG,
    OPT_SIGN_KEY, OPT_SIGN_PASSPHRASE_FILE, /* signatures (cli_sig.c) */
    OPT_QUIET, OPT_VERBOSE, 0,
};
/* clang-format on */

const struct cli_cmd cmd_manifest = {
    .name = "manifest",
    .args = "push [OPTIONS] SPEC.yaml | inspect [OPTIONS] IMAGE",
    .summary = "push an index built from a manifest-tool YAML spec, or print a raw manifest",
    .opts = manifest_opts,
    .min_args = 2,
    .max_args = 2,
    .run = run_manifest,
};
