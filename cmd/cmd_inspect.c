/* fpull inspect: every entry, whether it fits, what it lacks, its rank, the chosen one. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"

/* The target and all its features (85 on a recent GPU node), wrapped at 79 columns under
 * the first one, as fpull features lists them one per line. */
#define TARGET_WIDTH 79
#define TARGET_INDENT "        "
static void print_target(FILE *out, const struct fpull_target *t)
{
  int col = fprintf(out, "target: %s/%s%s%s", t->os, t->architecture, t->variant ? "/" : "",
                    t->variant ? t->variant : "");
  size_t n = fpull_featureset_count(t->features);
  for (size_t i = 0; i < n; i++) {
    const char *f = fpull_featureset_get(t->features, i, NULL);
    /* A name and the comma after it must fit; the first one goes on the first line. */
    if (i && col + 1 + (int)strlen(f) + (i + 1 < n) > TARGET_WIDTH)
      col = fprintf(out, ",\n" TARGET_INDENT) - 2;
    else
      col += fprintf(out, "%c", i ? ',' : ' ');
    col += fprintf(out, "%s", f);
  }
  fputc('\n', out);
}

static int no_trunc; /* --no-trunc: whole digests and feature lists */
static int verbose;  /* -v: every feature of the target */

/* The target in one line: what matching turns on (the variant, the best CPU tag, the newest
 * NVIDIA and AMD names, as many as fit in 79 columns) and how many features more; -v lists
 * them all (issue 43.11: twelve lines of them came before the table). */
static void print_target_line(const struct fpull_target *t, const struct fpull_tagdb *tagdb)
{
  struct cli_env e = {.target = (struct fpull_target *)t, .tagdb = (struct fpull_tagdb *)tagdb};
  const char *names[6];
  size_t k = 0;
  if ((names[k] = cli_best_cpu_tag(&e)))
    k++;
  static const char *const kinds[] = {"nvidia-", "cuda-", "nv-compute-", "amdgpu-", NULL};
  for (size_t i = 0; kinds[i]; i++)
    if ((names[k] = cli_top_feature(t, kinds[i])))
      k++;
  size_t n = fpull_featureset_count(t->features);
  char line[256], more[48];
  int len = snprintf(line, sizeof line, "target: %s/%s%s%s", t->os, t->architecture,
                     t->variant ? "/" : "", t->variant ? t->variant : "");
  size_t shown = 0;
  for (size_t i = 0; i < k; i++) {
    int m = snprintf(more, sizeof more, " +%zu more (-v)", n - shown - 1);
    if (len + 1 + (int)strlen(names[i]) + (n > shown + 1 ? m : 0) > TARGET_WIDTH)
      break;
    len += snprintf(line + len, sizeof line - (size_t)len, "%c%s", shown ? ',' : ' ', names[i]);
    shown++;
  }
  if (n > shown)
    snprintf(line + len, sizeof line - (size_t)len, " %s%zu %s (-v)", shown ? "+" : "", n - shown,
             shown ? "more" : (n - shown == 1 ? "feature" : "features"));
  printf("%s\n", line);
}

static const char *short_digest(const char *d)
{
  static char buf[160];
  const char *hex = strchr(d, ':');
  snprintf(buf, sizeof buf, no_trunc ? "%s" : "%.12s", no_trunc ? d : hex ? hex + 1 : d);
  return buf;
}

/* The width the table fits: the terminal's when stdout is one (80 when it says none), else
 * $COLUMNS; 0 (whole lines, for scripts and pipes) when neither. */
static int table_width(void)
{
  struct winsize ws;
  const char *c = getenv("COLUMNS");
  long n = c ? strtol(c, NULL, 10) : 0;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
    return ws.ws_col;
  if (n >= 40 && n <= 1000)
    return (int)n;
  return isatty(STDOUT_FILENO) ? 80 : 0;
}

/* text in a column of width w: cut with a '+' at its end when longer (not with --no-trunc). */
static void cell(char *out, size_t cap, const char *text, int w)
{
  if (no_trunc || (int)strlen(text) <= w)
    snprintf(out, cap, "%s", text);
  else
    snprintf(out, cap, "%.*s+", w - 1, text);
}

/* STATUS from column col to the width: words wrapped under the column; when the column
 * leaves under 24, the status goes on lines of its own, indented. */
static void print_status(const char *status, int col, int width)
{
  if (no_trunc || !width) {
    printf("%s\n", status);
    return;
  }
  int indent = col;
  if (width - col < 24) {
    printf("\n");
    indent = 6;
    printf("%*s", indent, "");
  }
  int at = indent;
  for (const char *p = status; *p;) {
    size_t w = strcspn(p, " ");
    if (at > indent && at + 1 + (int)w > width - 1) {
      printf("\n%*s", indent, "");
      at = indent;
    } else if (at > indent) {
      putchar(' ');
      at++;
    }
    printf("%.*s", (int)w, p);
    at += (int)w;
    p += w;
    while (*p == ' ')
      p++;
  }
  putchar('\n');
}

/* Where an entry of a nested index came from, and a platform its config gave. */
static void origin_note(char *status, size_t sz, const struct fpull_inspect_result *r, size_t i)
{
  const struct fpull_entry_origin *o = r->origins ? &r->origins[i] : NULL;
  size_t l = strlen(status);
  if (o && o->platform_from_config)
    l += (size_t)snprintf(status + l, l < sz ? sz - l : 0, "; platform from its config");
  if (o && o->parent >= 0 && l < sz)
    snprintf(status + l, sz - l, " (in nested index %s)",
             short_digest(r->entries[o->parent].digest));
}

static void entry_platform(char *plat, size_t ps, char *feats, size_t fs,
                           const struct fpull_descriptor *d)
{
  snprintf(plat, ps, "-");
  feats[0] = '\0';
  if (d->platform)
    snprintf(plat, ps, "%s/%s%s%s", d->platform->os ? d->platform->os : "?",
             d->platform->architecture ? d->platform->architecture : "?",
             d->platform->variant ? "/" : "", d->platform->variant ? d->platform->variant : "");
  for (size_t j = 0; d->platform && d->platform->features && d->platform->features[j]; j++) {
    size_t l = strlen(feats);
    snprintf(feats + l, fs - l, "%s%s", j ? "," : "", d->platform->features[j]);
  }
  if (!feats[0])
    snprintf(feats, fs, "-");
}

/* A single-platform image: what it is, in a few lines, from its config. */
static void print_single(const struct fpull_inspect_result *r, const struct fpull_pull_opts *o)
{
  char sz[32];
  printf("size: %s in %zu layer%s\n", cli_human_bytes(sz, sizeof sz, r->layers_size), r->n_layers,
         r->n_layers == 1 ? "" : "s");
  char *json = NULL;
  size_t len = 0;
  fpull_err err = {0};
  if (r->match->chosen < 0 || fpull_image_config_get(&json, &len, r->reference, o, &err) != 0)
    return;
  cJSON *c = cJSON_ParseWithLength(json, len);
  free(json);
  const cJSON *created = cJSON_GetObjectItemCaseSensitive(c, "created");
  if (cJSON_IsString(created))
    printf("created: %s\n", created->valuestring);
  const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(c, "config");
  static const char *const keys[] = {"Entrypoint", "Cmd", "WorkingDir", "User", NULL};
  for (size_t i = 0; keys[i]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, keys[i]);
    if (cJSON_IsString(v) && *v->valuestring) {
      printf("%s: %s\n", keys[i], v->valuestring);
    } else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0) {
      char *t = cJSON_PrintUnformatted(v);
      printf("%s: %s\n", keys[i], t);
      free(t);
    }
  }
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(cfg, "Env");
  if (cJSON_IsArray(env))
    printf("Env: %d variable%s\n", cJSON_GetArraySize(env),
           cJSON_GetArraySize(env) == 1 ? "" : "s");
  cJSON_Delete(c);
}

static void print_table(const struct fpull_inspect_result *r, const struct fpull_target *t,
                        const struct fpull_tagdb *tagdb, const struct fpull_pull_opts *o)
{
  int width = table_width();
  /* The index digest on a line of its own where the reference and it are too wide for
   * one (a 71-column digest after a long reference: 103 columns). */
  size_t first = strlen(r->reference) + (r->index_digest ? 7 + strlen(r->index_digest) : 18);
  if (r->index_digest && width && (int)first > width - 1)
    printf("%s\nindex: %s\n", r->reference, r->index_digest);
  else
    printf("%s%s%s\n", r->reference, r->index_digest ? " index " : " (single manifest)",
           r->index_digest ? r->index_digest : "");
  if (verbose)
    print_target(stdout, t);
  else
    print_target_line(t, tagdb);
  if (!r->index_digest)
    print_single(r, o);
  /* Columns as wide as their widest cell; FEATURES shares what is left with STATUS. */
  int pw = 8, fw = 8, dw = no_trunc ? 71 : 12;
  for (size_t i = 0; i < r->n_entries; i++) {
    char plat[64], feats[256];
    entry_platform(plat, sizeof plat, feats, sizeof feats, &r->entries[i]);
    pw = (int)strlen(plat) > pw ? (int)strlen(plat) : pw;
    fw = (int)strlen(feats) > fw ? (int)strlen(feats) : fw;
  }
  int before = 5 + dw + 2 + pw + 1;
  int fmax = width - before - 1 - 30;
  if (!no_trunc && width && fw > fmax)
    fw = fmax > 8 ? fmax : 8;
  printf("%-4s %-*s  %-*s %-*s %s\n", "RANK", dw, "DIGEST", pw, "PLATFORM", fw, "FEATURES",
         "STATUS");
  for (size_t i = 0; i < r->n_entries; i++) {
    const struct fpull_descriptor *d = &r->entries[i];
    const struct fpull_match_entry *m = &r->match->entries[i];
    char plat[64], feats[256], fcell[260];
    entry_platform(plat, sizeof plat, feats, sizeof feats, d);
    cell(fcell, sizeof fcell, feats, fw);
    char rank[16] = "-";
    if (m->eligible)
      snprintf(rank, sizeof rank, "%d", m->rank);
    char status[512];
    char *why = fpull_match_why(r->match, r->entries, i, tagdb);
    if (m->eligible)
      snprintf(status, sizeof status, "%s%s%s", (long)i == r->match->chosen ? "chosen" : "eligible",
               why ? ": " : "", why ? why : "");
    else
      snprintf(status, sizeof status, "%s", m->why ? m->why : "not eligible");
    free(why);
    origin_note(status, sizeof status, r, i);
    const struct fpull_sig_check *sc = r->signatures ? r->signatures[i] : NULL;
    if (sc) {
      size_t l = strlen(status);
      /* "accepted" is a rule that checks no signature (insecureAcceptAnything). */
      if (strcmp(sc->state, "accepted") == 0)
        snprintf(status + l, sizeof status - l, "; no signature required");
      else
        snprintf(status + l, sizeof status - l, "; signature %s%s%s", sc->state,
                 sc->reason ? ": " : "", sc->reason ? sc->reason : "");
    }
    int col =
        printf("%-4s %-*s  %-*s %-*s ", rank, dw, short_digest(d->digest), pw, plat, fw, fcell);
    print_status(status, col, width);
  }
  if (r->index_signature && strcmp(r->index_signature->state, "accepted") == 0)
    printf("index signature: none required\n");
  else if (r->index_signature)
    printf("index signature: %s%s%s\n", r->index_signature->state,
           r->index_signature->reason ? ": " : "",
           r->index_signature->reason ? r->index_signature->reason : "");
  if (r->match->chosen >= 0)
    printf("chosen: %s\n", r->entries[r->match->chosen].digest);
  else
    printf("chosen: none\n");
}

/* media_type; platform_source ("index", "config" (a single manifest's too), null); parent (the
 * digest of the nested index that listed the entry, null at the top); led_to (a followed nested
 * index: the digests of its entries, in order; null otherwise). */
static void add_origin(cJSON *e, const struct fpull_inspect_result *r, size_t i)
{
  const struct fpull_entry_origin *o = r->origins ? &r->origins[i] : NULL;
  cJSON_AddStringToObject(e, "media_type",
                          r->entries[i].media_type ? r->entries[i].media_type : "");
  if (!r->entries[i].platform)
    cJSON_AddNullToObject(e, "platform_source");
  else
    cJSON_AddStringToObject(e, "platform_source",
                            !r->index_digest || (o && o->platform_from_config) ? "config"
                                                                               : "index");
  if (o && o->parent >= 0)
    cJSON_AddStringToObject(e, "parent", r->entries[o->parent].digest);
  else
    cJSON_AddNullToObject(e, "parent");
  if (!o || !o->followed) {
    cJSON_AddNullToObject(e, "led_to");
    return;
  }
  cJSON *to = cJSON_AddArrayToObject(e, "led_to");
  for (size_t k = i + 1; k < r->n_entries; k++)
    if (r->origins[k].parent == (long)i)
      cJSON_AddItemToArray(to, cJSON_CreateString(r->entries[k].digest));
}

static cJSON *inspect_json(const struct fpull_inspect_result *r, const struct fpull_target *t,
                           const struct fpull_tagdb *tagdb)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "reference", r->reference);
  if (r->index_digest)
    cJSON_AddStringToObject(o, "index_digest", r->index_digest);
  else
    cJSON_AddNullToObject(o, "index_digest");
  cJSON *tj = cJSON_AddObjectToObject(o, "target");
  cJSON_AddStringToObject(tj, "os", t->os);
  cJSON_AddStringToObject(tj, "architecture", t->architecture);
  if (t->variant)
    cJSON_AddStringToObject(tj, "variant", t->variant);
  else
    cJSON_AddNullToObject(tj, "variant");
  cJSON *tf = cJSON_AddArrayToObject(tj, "features");
  for (size_t i = 0; i < fpull_featureset_count(t->features); i++)
    cJSON_AddItemToArray(tf, cJSON_CreateString(fpull_featureset_get(t->features, i, NULL)));
  if (!r->index_digest) {
    cJSON_AddNumberToObject(o, "layers", (double)r->n_layers);
    cJSON_AddNumberToObject(o, "size", (double)r->layers_size);
  }
  cJSON *entries = cJSON_AddArrayToObject(o, "entries");
  for (size_t i = 0; i < r->n_entries; i++) {
    const struct fpull_match_entry *m = &r->match->entries[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "digest", r->entries[i].digest);
    cJSON_AddItemToObject(e, "platform", cli_json_platform(r->entries[i].platform));
    cJSON_AddBoolToObject(e, "eligible", m->eligible);
    cJSON_AddItemToObject(e, "missing", cli_json_strv(m->missing));
    if (m->eligible)
      cJSON_AddNumberToObject(e, "rank", m->rank);
    else
      cJSON_AddNullToObject(e, "rank");
    cJSON_AddBoolToObject(e, "chosen", (long)i == r->match->chosen);
    /* reason: why the entry is not eligible (os, architecture, variant, missing features,
     * not an image, the GPU preflight); why: what put it above the next rank. */
    if (!m->eligible)
      cJSON_AddStringToObject(e, "reason", m->why ? m->why : "not eligible");
    else
      cJSON_AddNullToObject(e, "reason");
    char *why = fpull_match_why(r->match, r->entries, i, tagdb);
    if (why)
      cJSON_AddStringToObject(e, "why", why);
    else
      cJSON_AddNullToObject(e, "why");
    free(why);
    add_origin(e, r, i);
    if (r->signatures)
      cJSON_AddItemToObject(e, "signature", cli_sig_json(r->signatures[i]));
    cJSON_AddItemToArray(entries, e);
  }
  if (r->match->chosen >= 0)
    cJSON_AddStringToObject(o, "chosen", r->entries[r->match->chosen].digest);
  else
    cJSON_AddNullToObject(o, "chosen");
  if (r->signatures)
    cJSON_AddItemToObject(o, "index_signature", cli_sig_json(r->index_signature));
  return o;
}

static int run_inspect(struct cli_settings *s, int argc, char **argv)
{
  (void)argc;
  fpull_err err = {0};
  struct cli_env env = {0};
  struct fpull_inspect_result *r = NULL;
  struct fpull_pull_opts o;
  no_trunc = s->no_trunc;
  verbose = s->verbose;
  int rc = cli_env_load(&env, s, 1, &err);
  if (rc == 0) {
    cli_pull_opts(&o, &env, s);
    o.progress = NULL;
    rc = fpull_inspect(&r, argv[0], &o, &err);
  }
  int printed = 0;
  if (rc == 0) {
    printed = 1;
    if (s->json)
      cli_print_json(inspect_json(r, env.target, env.tagdb));
    else
      print_table(r, env.target, env.tagdb, &o);
    /* The same message as pull's: what the user has to change is the same. */
    if (r->match->chosen < 0) {
      rc = fpull_match_no_fit(r->match, r->entries, !r->index_digest, env.target, &err);
      fpull_err_prefix(&err, "%s", r->reference);
    }
  }
  fpull_inspect_result_free(r);
  cli_env_free(&env);
  /* --json fails with an object too, as pull does; a table printed already says it all. */
  if (rc && s->json && !printed)
    cli_print_json(cli_pull_error_json(argv[0], &err));
  return rc ? cli_fail(&err) : 0;
}

/* clang-format off */
static const enum cli_opt_id inspect_opts[] = {
    OPT_HELP,     OPT_FEATURES, OPT_PLATFORM, OPT_CACHE_DIR, OPT_CERTS_DIR,
    OPT_CERT_DIR, OPT_CREDS,    OPT_CONFIG,   OPT_INSECURE,  OPT_OFFLINE,
    OPT_POLICY, OPT_REQUIRE_SIGS, OPT_SIG_INDEX, /* signatures (cli_sig.c) */
    OPT_JSON,     OPT_QUIET,    OPT_VERBOSE,  OPT_NO_TRUNC,  0};
/* clang-format on */

const struct cli_cmd cmd_inspect = {
    .name = "inspect",
    .args = "[OPTIONS] IMAGE",
    .summary = "show every index entry, whether it fits, its rank, and the chosen one",
    .opts = inspect_opts,
    .min_args = 1,
    .max_args = 1,
    .run = run_inspect,
};
