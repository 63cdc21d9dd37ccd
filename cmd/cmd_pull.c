/* fpull pull, and the result output that prefetch shares. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

void *cli_pull_json(const struct fpull_pull_result *r)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "reference", r->reference);
  if (r->index_digest)
    cJSON_AddStringToObject(o, "index_digest", r->index_digest);
  else
    cJSON_AddNullToObject(o, "index_digest");
  cJSON_AddStringToObject(o, "manifest_digest", r->manifest_digest);
  cJSON_AddItemToObject(o, "platform", cli_json_platform(r->platform));
  if (r->why)
    cJSON_AddStringToObject(o, "why", r->why);
  else
    cJSON_AddNullToObject(o, "why");
  if (r->rootfs)
    cJSON_AddStringToObject(o, "rootfs", r->rootfs);
  cJSON_AddNumberToObject(o, "layers", (double)r->layers);
  cJSON_AddNumberToObject(o, "bytes_downloaded", (double)r->bytes_downloaded);
  cJSON_AddNumberToObject(o, "bytes_from_cache", (double)r->bytes_from_cache);
  cJSON_AddItemToObject(o, "signature", cli_sig_json(r->signature));
  return o;
}

/* prefetch --json: a failed IMAGE keeps its place in the array (contract v3), under its
 * normalised reference when it parses, as given otherwise. */
void *cli_pull_error_json(const char *image, const fpull_err *e)
{
  cJSON *o = cJSON_CreateObject();
  struct fpull_ref *ref = NULL;
  fpull_err ignored = {0};
  char *norm = fpull_ref_parse(&ref, image, &ignored) == 0 ? fpull_ref_format(ref) : NULL;
  cJSON_AddStringToObject(o, "reference", norm ? norm : image);
  free(norm);
  fpull_ref_free(ref);
  cJSON *eo = cJSON_AddObjectToObject(o, "error");
  cJSON_AddNumberToObject(eo, "code", e->code ? e->code : FPULL_EFAIL);
  cJSON_AddStringToObject(eo, "message", e->msg);
  return o;
}

void cli_pull_say_done(const struct cli_settings *s, const struct fpull_pull_result *r)
{
  if (s->json || s->quiet)
    return;
  cli_sig_say(s, r->reference, r->signature);
  fprintf(stderr, "%s: %s", r->reference, r->manifest_digest);
  if (r->index_digest && r->platform) {
    fprintf(stderr, " (entry %s/%s%s%s", r->platform->os, r->platform->architecture,
            r->platform->variant ? "/" : "", r->platform->variant ? r->platform->variant : "");
    for (size_t i = 0; r->platform->features && r->platform->features[i]; i++)
      fprintf(stderr, "%c%s", i ? ',' : ' ', r->platform->features[i]);
    fprintf(stderr, ")");
  }
  char down[32], cached[32];
  fprintf(stderr, ", %zu layer%s, %s downloaded, %s from cache%s%s\n", r->layers,
          r->layers == 1 ? "" : "s", cli_human_bytes(down, sizeof down, r->bytes_downloaded),
          cli_human_bytes(cached, sizeof cached, r->bytes_from_cache), r->rootfs ? " -> " : "",
          r->rootfs ? r->rootfs : "");
}

/* DEST in skopeo's transport syntax: TRANSPORT:PATH[:NAME], split at the first ':' after
 * the transport as skopeo splits it. */
static const struct {
  const char *word;
  enum fpull_layout_kind kind;
} dest_transports[] = {
    {"oci", FPULL_LAYOUT_OCI},
    {"oci-archive", FPULL_LAYOUT_OCI_ARCHIVE},
    {"docker-archive", FPULL_LAYOUT_DOCKER_ARCHIVE},
};

struct dest_spec {
  enum fpull_layout_kind kind; /* 0: a path (a rootfs, bundle or SquashFS file) */
  char *path;
  const char *name; /* in path's buffer, or NULL */
};

static int parse_dest(struct dest_spec *d, const char *dest, enum cli_format format, fpull_err *err)
{
  memset(d, 0, sizeof *d);
  if (!dest)
    return 0;
  size_t w = strspn(dest, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");
  /* A path with a colon in its first component that exists is a path, as it always was. */
  struct stat st;
  if (w == 0 || dest[w] != ':' || lstat(dest, &st) == 0)
    return 0;
  for (size_t i = 0; i < sizeof dest_transports / sizeof dest_transports[0]; i++) {
    if (strlen(dest_transports[i].word) != w || strncmp(dest, dest_transports[i].word, w) != 0)
      continue;
    if (format != CLI_FORMAT_DIR)
      return fpull_err_set(err, FPULL_EUSAGE, "pull: %.*s: writes an image layout, not --format %s",
                           (int)w + 1, dest, format == CLI_FORMAT_BUNDLE ? "bundle" : "squashfs");
    d->kind = dest_transports[i].kind;
    d->path = strdup(dest + w + 1);
    char *colon = d->path ? strchr(d->path, ':') : NULL;
    if (colon) {
      *colon = '\0';
      d->name = colon + 1;
    }
    if (!d->path || !*d->path)
      return fpull_err_set(err, FPULL_EUSAGE, "pull: %s: no %s after '%.*s'", dest,
                           d->kind == FPULL_LAYOUT_OCI ? "directory" : "file", (int)w + 1, dest);
    return 0;
  }
  return fpull_err_set(err, FPULL_EUSAGE,
                       "pull: unknown destination type '%.*s' in %s: fpull writes a path "
                       "(a rootfs, --format bundle or squashfs), oci:DIR[:TAG], "
                       "oci-archive:FILE[:TAG] or docker-archive:FILE[:REFERENCE] "
                       "(./%s names a file with a colon)",
                       (int)w + 1, dest, dest, dest);
}

/* --format: what DEST becomes. */
static int pull_as(enum cli_format format, struct fpull_pull_result **r, const char *image,
                   const char *dest, const struct fpull_pull_opts *o, fpull_err *err)
{
  switch (format) {
  case CLI_FORMAT_BUNDLE:
    return fpull_pull_bundle(r, image, dest, o, err);
  case CLI_FORMAT_SQUASHFS: /* cli_pull_opts put it in o->unpack.format */
  case CLI_FORMAT_DIR:
    break;
  }
  return fpull_pull(r, image, dest, o, err);
}

/* What an interrupted pull must clear away is named after DEST, the default one too. */
static void watch_dest(const char *image, const char *dest, enum cli_format format)
{
  if (dest) {
    cli_interrupt_watch_dest(dest);
    return;
  }
  struct fpull_ref *ref = NULL;
  fpull_err ignored = {0};
  if (fpull_ref_parse(&ref, image, &ignored) != 0)
    return;
  char def[600];
  snprintf(def, sizeof def, "./%s%s", fpull_ref_basename(ref),
           format == CLI_FORMAT_SQUASHFS ? ".sqsh" : "");
  fpull_ref_free(ref);
  cli_interrupt_watch_dest(def);
}

static int run_pull(struct cli_settings *s, int argc, char **argv)
{
  fpull_err err = {0};
  struct cli_env env = {0};
  const char *dest = argc > 1 ? argv[1] : s->output;
  int rc = 0;
  if (argc > 1 && s->output)
    rc = fpull_err_set(&err, FPULL_EUSAGE,
                       "pull: give DEST either as an argument or with -o, not both");
  struct dest_spec ds = {0};
  if (rc == 0)
    rc = parse_dest(&ds, dest, s->format, &err);
  if (rc == 0)
    rc = cli_env_load(&env, s, 1, &err);
  if (rc == 0) {
    cli_interrupt_install();
    watch_dest(argv[0], ds.kind ? ds.path : dest, s->format);
  }
  if (rc == 0) {
    struct fpull_pull_opts o;
    cli_pull_opts(&o, &env, s);
    struct fpull_pull_result *r = NULL;
    rc = ds.kind ? fpull_pull_layout(&r, argv[0], ds.kind, ds.path, ds.name, &o, &err)
                 : pull_as(s->format, &r, argv[0], dest, &o, &err);
    if (rc == 0) {
      cli_pull_say_done(s, r);
      if (s->json)
        cli_print_json(cli_pull_json(r));
    }
    fpull_pull_result_free(r);
  }
  cli_env_free(&env);
  free(ds.path);
  /* --json fails with an object too, as prefetch's entries do (contract v4). */
  if (rc && s->json)
    cli_print_json(cli_pull_error_json(argv[0], &err));
  return rc ? cli_fail(&err) : 0;
}

/* Its column layout gives up at 21 entries: */
/* clang-format off */
static const enum cli_opt_id pull_opts[] = {
    OPT_HELP,      OPT_OUTPUT,          OPT_FORCE,      OPT_FEATURES,     OPT_PLATFORM,
    OPT_CACHE_DIR, OPT_CERTS_DIR, OPT_CERT_DIR, OPT_CREDS,       OPT_CONFIG,     OPT_INSECURE,     OPT_OFFLINE,
    OPT_JSON,      OPT_QUIET,           OPT_VERBOSE,    OPT_JOBS,         OPT_PROGRESS,
    OPT_FORMAT,    OPT_SQFS_COMP,       OPT_SQFS_BLOCK_SIZE, OPT_SQFS_LEVEL, OPT_SQFS_THREADS,
    OPT_POLICY, OPT_REQUIRE_SIGS, OPT_SIG_INDEX, /* signatures (cli_sig.c) */
    OPT_KEEP_PRIV, OPT_MAX_UNPACKED, OPT_PARENTS, 0};
/* clang-format on */

const struct cli_cmd cmd_pull = {
    .name = "pull",
    .args = "[OPTIONS] IMAGE [DEST]",
    .summary = "choose the entry for this node, download its blobs and unpack them into DEST",
    .notes = "IMAGE  [docker://][REGISTRY[:PORT]/]REPOSITORY[:TAG][@sha256:HEX]\n"
             "       docker.io and library/ when no registry is named, :latest without tag\n"
             "       or digest; a digest is verified against the bytes\n"
             "DEST   a directory (default ./NAME), the file of --format squashfs, or\n"
             "       oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE[:REFERENCE]\n",
    .opts = pull_opts,
    .min_args = 1,
    .max_args = 2,
    .run = run_pull,
};
