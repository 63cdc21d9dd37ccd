/* Manifests, indexes and image configs: cJSON into the typed model of fpull/manifest.h.
 * Every byte here came from a registry, so each field is checked before it is used:
 * digests against the grammar, sizes for range, media types against the Content-Type. */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "fpull/manifest.h"
#include "fpull/ref.h"
#include "json_strict.h"
#include "platform.h"
#include "base/util.h"

/* Sizes above 2^53 cannot be held exactly by cJSON's double, so they are refused. */
#define FP_SIZE_MAX_JSON 9007199254740992.0

static const char *const index_types[] = {FPULL_MT_OCI_INDEX, FPULL_MT_DOCKER_LIST, NULL};
static const char *const manifest_types[] = {FPULL_MT_OCI_MANIFEST, FPULL_MT_DOCKER_MANIFEST, NULL};
static const char *const schema1_types[] = {FPULL_MT_DOCKER_SCHEMA1, FPULL_MT_DOCKER_SCHEMA1_SIGNED,
                                            NULL};

static int in_list(const char *const *list, const char *s)
{
  for (size_t i = 0; s && list[i]; i++)
    if (strcasecmp(list[i], s) == 0)
      return 1;
  return 0;
}

/* A one-line, printable rendering of a hostile string for error messages. */
static const char *shown(char buf[96], const char *s)
{
  size_t i = 0;
  for (; s && s[i] && i < 80; i++)
    buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  if (s && s[i])
    buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
  buf[i] = '\0';
  return buf;
}

/* Content-Type without parameters and blanks, lower case; NULL when absent or empty. */
static char *norm_type(const char *ct)
{
  if (!ct)
    return NULL;
  while (*ct == ' ' || *ct == '\t')
    ct++;
  size_t n = strcspn(ct, "; \t");
  if (n == 0)
    return NULL;
  char *s = fp_xstrndup(ct, n);
  for (char *p = s; *p; p++)
    if (*p >= 'A' && *p <= 'Z')
      *p = (char)(*p - 'A' + 'a');
  return s;
}

static int get_string(char **out, const cJSON *obj, const char *key, int required, const char *what,
                      fpull_err *err)
{
  *out = NULL;
  const cJSON *j;
  int r = fp_json_member(&j, obj, key, what, err);
  if (r)
    return r;
  if (!j) {
    if (required)
      return fpull_err_set(err, FPULL_EINTEGRITY, "%s: missing \"%s\"", what, key);
    return 0;
  }
  if (!cJSON_IsString(j) || !j->valuestring)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: \"%s\" is not a string", what, key);
  *out = fp_xstrdup(j->valuestring);
  return 0;
}

/* A list of strings: at most most entries (SIZE_MAX for no bound). */
static int get_strv(char ***out, const cJSON *obj, const char *key, const char *what, size_t most,
                    fpull_err *err)
{
  *out = NULL;
  const cJSON *j;
  int r = fp_json_member(&j, obj, key, what, err);
  if (r || !j)
    return r;
  if (!cJSON_IsArray(j))
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: \"%s\" is not an array", what, key);
  if ((size_t)cJSON_GetArraySize(j) > most)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: \"%s\" holds more than %zu entries", what, key,
                         most);
  cleanup_strv char **v = fp_xcalloc(1, sizeof *v);
  for (const cJSON *c = j->child; c; c = c->next) {
    if (!cJSON_IsString(c) || !c->valuestring)
      return fpull_err_set(err, FPULL_EINTEGRITY, "%s: \"%s\" holds a non-string", what, key);
    v = fp_strv_push(v, c->valuestring);
  }
  *out = steal_pointer(&v);
  return 0;
}

/* A digest fpull can verify (sha256, sha512), or: FPULL_EUNSAFE for a well-formed digest of
 * another algorithm (image-spec's grammar: algorithm ":" encoded), FPULL_EINTEGRITY otherwise. */
static int check_digest(const char *d, const char *what, const char *key, fpull_err *err)
{
  if (fpull_digest_valid(d))
    return 0;
  char b[96];
  size_t alg = strspn(d, "abcdefghijklmnopqrstuvwxyz0123456789+._-");
  size_t enc = d[alg] == ':' ? strspn(d + alg + 1, "abcdefghijklmnopqrstuvwxyz"
                                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789=_-")
                             : 0;
  if (alg > 0 && enc > 0 && d[alg + 1 + enc] == '\0' && strncmp(d, "sha256:", 7) != 0 &&
      strncmp(d, "sha512:", 7) != 0) {
    char a[32];
    snprintf(a, sizeof a, "%.*s", (int)(alg < 24 ? alg : 24), d);
    return fpull_err_set(err, FPULL_EUNSAFE, "%s: \"%s\": unsupported digest algorithm \"%s\"",
                         what, key, a);
  }
  return fpull_err_set(err, FPULL_EINTEGRITY, "%s: \"%s\" is not a sha256 digest: \"%s\"", what,
                       key, shown(b, d));
}

static int get_digest(char **out, const cJSON *obj, const char *key, const char *what,
                      fpull_err *err)
{
  cleanup_free char *d = NULL;
  int r = get_string(&d, obj, key, 1, what, err);
  if (r)
    return r;
  /* Before the digest reaches a URL or a cache path (CVE-2024-3727). */
  if ((r = check_digest(d, what, key, err)))
    return r;
  *out = steal_pointer(&d);
  return 0;
}

static int get_size(int64_t *out, const cJSON *obj, const char *what, fpull_err *err)
{
  const cJSON *j;
  int r = fp_json_member(&j, obj, "size", what, err);
  if (r)
    return r;
  if (!j)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: missing \"size\"", what);
  if (!cJSON_IsNumber(j))
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: \"size\" is not a number", what);
  double d = j->valuedouble;
  if (d < 0)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: negative size %.0f", what, d);
  if (d >= FP_SIZE_MAX_JSON)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: absurd size %.0f", what, d);
  if ((double)(int64_t)d != d)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: size %g is not an integer", what, d);
  *out = (int64_t)d;
  return 0;
}

void fp_platform_clear(struct fpull_platform *p)
{
  free(p->os);
  free(p->architecture);
  free(p->variant);
  free(p->os_version);
  fpull_strv_free(p->os_features);
  fpull_strv_free(p->features);
  memset(p, 0, sizeof *p);
}

void fpull_platform_free(struct fpull_platform *p)
{
  if (!p)
    return;
  fp_platform_clear(p);
  free(p);
}

static void platform_freep(struct fpull_platform **p)
{
  fpull_platform_free(*p);
}

struct fpull_platform *fpull_platform_dup(const struct fpull_platform *p)
{
  if (!p)
    return NULL;
  struct fpull_platform *d = fp_xcalloc(1, sizeof *d);
  d->os = fp_xstrdup(p->os);
  d->architecture = fp_xstrdup(p->architecture);
  d->variant = fp_xstrdup(p->variant);
  d->os_version = fp_xstrdup(p->os_version);
  d->os_features = fp_strv_dup(p->os_features);
  d->features = fp_strv_dup(p->features);
  return d;
}

int fp_platform_read(struct fpull_platform *out, const cJSON *j, const char *what,
                     size_t most_features, fpull_err *err)
{
  memset(out, 0, sizeof *out);
  if (!cJSON_IsObject(j))
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: \"platform\" is not an object", what);
  struct fpull_platform p = {0};
  int r;
  if ((r = get_string(&p.os, j, "os", 0, what, err)) ||
      (r = get_string(&p.architecture, j, "architecture", 0, what, err)) ||
      (r = get_string(&p.variant, j, "variant", 0, what, err)) ||
      (r = get_string(&p.os_version, j, "os.version", 0, what, err)) ||
      (r = get_strv(&p.os_features, j, "os.features", what, most_features, err)) ||
      (r = get_strv(&p.features, j, "features", what, most_features, err))) {
    fp_platform_clear(&p);
    return r;
  }
  /* Go leaves a missing field empty; matching then treats the entry as fitting nothing. */
  if (!p.os)
    p.os = fp_xstrdup("");
  if (!p.architecture)
    p.architecture = fp_xstrdup("");
  *out = p;
  return 0;
}

static int parse_platform(struct fpull_platform **out, const cJSON *j, const char *what,
                          fpull_err *err)
{
  *out = NULL;
  __attribute__((cleanup(platform_freep))) struct fpull_platform *p = fp_xcalloc(1, sizeof *p);
  int r = fp_platform_read(p, j, what, SIZE_MAX, err);
  if (r)
    return r;
  *out = steal_pointer(&p);
  return 0;
}

static void descriptor_clear(struct fpull_descriptor *d)
{
  free(d->media_type);
  free(d->digest);
  fpull_platform_free(d->platform);
  free(d->ref_type);
  free(d->artifact_type);
  memset(d, 0, sizeof *d);
}

static int parse_annotations(struct fpull_descriptor *d, const cJSON *obj, const char *what,
                             fpull_err *err)
{
  const cJSON *a;
  int r = fp_json_member(&a, obj, "annotations", what, err);
  if (r || !a)
    return r;
  if (!cJSON_IsObject(a))
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: \"annotations\" is not an object", what);
  for (const cJSON *c = a->child; c; c = c->next)
    if (!cJSON_IsString(c))
      return fpull_err_set(err, FPULL_EINTEGRITY, "%s: annotation values must be strings", what);
  /* Annotations are a map in Go, so keys match exactly here. */
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "vnd.docker.reference.type");
  if (t)
    d->ref_type = fp_xstrdup(t->valuestring);
  return 0;
}

static int parse_descriptor(struct fpull_descriptor *d, const cJSON *obj, int with_platform,
                            const char *what, fpull_err *err)
{
  memset(d, 0, sizeof *d);
  if (!cJSON_IsObject(obj))
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: descriptor is not an object", what);
  int r;
  if ((r = get_string(&d->media_type, obj, "mediaType", 1, what, err)) ||
      (r = get_digest(&d->digest, obj, "digest", what, err)) ||
      (r = get_size(&d->size, obj, what, err)) || (r = parse_annotations(d, obj, what, err)) ||
      (r = get_string(&d->artifact_type, obj, "artifactType", 0, what, err))) {
    descriptor_clear(d);
    return r;
  }
  if (with_platform) {
    const cJSON *p;
    r = fp_json_member(&p, obj, "platform", what, err);
    if (!r && p)
      r = parse_platform(&d->platform, p, what, err);
    if (r) {
      descriptor_clear(d);
      return r;
    }
  }
  return 0;
}

/* The kind of a parsed document, and the media type it declares (body, else a specific
 * Content-Type; NULL when neither says). */
static int classify(int *kind, char **media_type, const cJSON *root, const char *content_type,
                    fpull_err *err)
{
  *kind = FPULL_DOC_UNKNOWN;
  *media_type = NULL;
  cleanup_free char *ct = norm_type(content_type);
  if (in_list(schema1_types, ct)) {
    *kind = FPULL_DOC_SCHEMA1;
    return 0;
  }
  if (!cJSON_IsObject(root))
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest: not a JSON object");
  const cJSON *sv, *manifests, *layers, *config;
  int r;
  if ((r = fp_json_member(&sv, root, "schemaVersion", "manifest", err)) ||
      (r = fp_json_member(&manifests, root, "manifests", "manifest", err)) ||
      (r = fp_json_member(&layers, root, "layers", "manifest", err)) ||
      (r = fp_json_member(&config, root, "config", "manifest", err)))
    return r;
  if (!cJSON_IsNumber(sv))
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest: missing or non-numeric schemaVersion");
  if (sv->valuedouble == 1) {
    *kind = FPULL_DOC_SCHEMA1;
    return 0;
  }
  if (sv->valuedouble != 2)
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest: schemaVersion %g, expected 2",
                         sv->valuedouble);
  /* CVE-2021-41190: one digest must not read as an index to one client and as a manifest
   * to another. */
  if (manifests && (layers || config))
    return fpull_err_set(err, FPULL_EINTEGRITY,
                         "manifest: ambiguous document with both \"manifests\" and \"%s\"",
                         layers ? "layers" : "config");
  cleanup_free char *body_raw = NULL;
  if ((r = get_string(&body_raw, root, "mediaType", 0, "manifest", err)))
    return r;
  cleanup_free char *body = norm_type(body_raw);
  if (body_raw && !body)
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest: empty mediaType");
  /* Only a specific Content-Type is compared: some servers send application/json. */
  int ct_specific = in_list(index_types, ct) || in_list(manifest_types, ct);
  char b1[96], b2[96];
  if (body && ct_specific && strcmp(body, ct) != 0)
    return fpull_err_set(
        err, FPULL_EINTEGRITY,
        "manifest: mediaType \"%s\" in the body disagrees with Content-Type \"%s\"",
        shown(b1, body), shown(b2, ct));
  const char *mt = body ? body : ct_specific ? ct : NULL;
  if (mt) {
    if (in_list(index_types, mt))
      *kind = FPULL_DOC_INDEX;
    else if (in_list(manifest_types, mt))
      *kind = FPULL_DOC_MANIFEST;
    else if (in_list(schema1_types, mt))
      *kind = FPULL_DOC_SCHEMA1;
    else
      return fpull_err_set(err, FPULL_EUNSAFE, "manifest: unsupported media type \"%s\"",
                           shown(b1, mt));
    if (*kind == FPULL_DOC_INDEX && (layers || config))
      return fpull_err_set(err, FPULL_EINTEGRITY,
                           "manifest: media type %s but the document has \"%s\"", mt,
                           layers ? "layers" : "config");
    if (*kind == FPULL_DOC_MANIFEST && manifests)
      return fpull_err_set(err, FPULL_EINTEGRITY,
                           "manifest: media type %s but the document has \"manifests\"", mt);
    *media_type = fp_xstrdup(mt);
    return 0;
  }
  if (manifests)
    *kind = FPULL_DOC_INDEX;
  else if (layers || config)
    *kind = FPULL_DOC_MANIFEST;
  else
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest: neither an index nor a manifest");
  return 0;
}

int fpull_doc_kind(int *out, const char *bytes, size_t len, const char *content_type,
                   fpull_err *err)
{
  *out = FPULL_DOC_UNKNOWN;
  cleanup_free char *ct = norm_type(content_type);
  /* Schema 1 is refused by callers whatever its JSON looks like (JWS signatures included). */
  if (in_list(schema1_types, ct)) {
    *out = FPULL_DOC_SCHEMA1;
    return 0;
  }
  cleanup_json cJSON *root = NULL;
  int r = fp_json_parse_strict(&root, bytes, len, FPULL_MANIFEST_MAX, "manifest", err);
  if (r)
    return r;
  cleanup_free char *mt = NULL;
  return classify(out, &mt, root, content_type, err);
}

void fpull_index_free(struct fpull_index *idx)
{
  if (!idx)
    return;
  for (size_t i = 0; i < idx->n_manifests; i++)
    descriptor_clear(&idx->manifests[i]);
  free(idx->manifests);
  free(idx->media_type);
  free(idx);
}

static void index_freep(struct fpull_index **p)
{
  fpull_index_free(*p);
}

static int parse_doc(cJSON **root, int *kind, char **media_type, const char *bytes, size_t len,
                     const char *content_type, int want, fpull_err *err)
{
  int r = fp_json_parse_strict(root, bytes, len, FPULL_MANIFEST_MAX, "manifest", err);
  if (r)
    return r;
  if ((r = classify(kind, media_type, *root, content_type, err)))
    return r;
  if (*kind == FPULL_DOC_SCHEMA1)
    return fpull_err_set(err, FPULL_EUNSAFE, FPULL_SCHEMA1_MESSAGE);
  if (*kind != want)
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest: expected %s, got %s",
                         want == FPULL_DOC_INDEX ? "an index" : "a manifest",
                         *kind == FPULL_DOC_INDEX ? "an index" : "a manifest");
  return 0;
}

int fpull_index_parse(struct fpull_index **out, const char *bytes, size_t len,
                      const char *content_type, fpull_err *err)
{
  *out = NULL;
  cleanup_json cJSON *root = NULL;
  cleanup_free char *mt = NULL;
  int kind, r = parse_doc(&root, &kind, &mt, bytes, len, content_type, FPULL_DOC_INDEX, err);
  if (r)
    return r;
  const cJSON *arr;
  if ((r = fp_json_member(&arr, root, "manifests", "index", err)))
    return r;
  if (!cJSON_IsArray(arr))
    return fpull_err_set(err, FPULL_EINTEGRITY, "index: \"manifests\" is not an array");
  __attribute__((cleanup(index_freep))) struct fpull_index *idx = fp_xcalloc(1, sizeof *idx);
  idx->media_type = mt ? steal_pointer(&mt) : fp_xstrdup(FPULL_MT_OCI_INDEX);
  size_t n = (size_t)cJSON_GetArraySize(arr);
  idx->manifests = fp_xcalloc(n ? n : 1, sizeof *idx->manifests);
  for (const cJSON *c = arr->child; c; c = c->next) {
    char what[64];
    snprintf(what, sizeof what, "index: manifests[%zu]", idx->n_manifests);
    if ((r = parse_descriptor(&idx->manifests[idx->n_manifests], c, 1, what, err)))
      return r;
    idx->n_manifests++;
  }
  *out = steal_pointer(&idx);
  return 0;
}

void fpull_manifest_free(struct fpull_manifest *m)
{
  if (!m)
    return;
  descriptor_clear(&m->config);
  for (size_t i = 0; i < m->n_layers; i++)
    descriptor_clear(&m->layers[i]);
  free(m->layers);
  free(m->media_type);
  free(m->artifact_type);
  free(m);
}

static void manifest_freep(struct fpull_manifest **p)
{
  fpull_manifest_free(*p);
}

int fpull_manifest_parse(struct fpull_manifest **out, const char *bytes, size_t len,
                         const char *content_type, fpull_err *err)
{
  *out = NULL;
  cleanup_json cJSON *root = NULL;
  cleanup_free char *mt = NULL;
  int kind, r = parse_doc(&root, &kind, &mt, bytes, len, content_type, FPULL_DOC_MANIFEST, err);
  if (r)
    return r;
  const cJSON *config, *layers;
  if ((r = fp_json_member(&config, root, "config", "manifest", err)) ||
      (r = fp_json_member(&layers, root, "layers", "manifest", err)))
    return r;
  if (!config)
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest: missing \"config\"");
  if (!cJSON_IsArray(layers))
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest: missing or non-array \"layers\"");
  __attribute__((cleanup(manifest_freep))) struct fpull_manifest *m = fp_xcalloc(1, sizeof *m);
  m->media_type = mt ? steal_pointer(&mt) : fp_xstrdup(FPULL_MT_OCI_MANIFEST);
  if ((r = parse_descriptor(&m->config, config, 0, "manifest: config", err)) ||
      (r = get_string(&m->artifact_type, root, "artifactType", 0, "manifest", err)))
    return r;
  size_t n = (size_t)cJSON_GetArraySize(layers);
  m->layers = fp_xcalloc(n ? n : 1, sizeof *m->layers);
  for (const cJSON *c = layers->child; c; c = c->next) {
    char what[64];
    snprintf(what, sizeof what, "manifest: layers[%zu]", m->n_layers);
    if ((r = parse_descriptor(&m->layers[m->n_layers], c, 0, what, err)))
      return r;
    m->n_layers++;
  }
  *out = steal_pointer(&m);
  return 0;
}

void fpull_image_config_free(struct fpull_image_config *c)
{
  if (!c)
    return;
  free(c->os);
  free(c->architecture);
  free(c->variant);
  fpull_strv_free(c->diff_ids);
  fpull_strv_free(c->os_features);
  free(c);
}

static void config_freep(struct fpull_image_config **p)
{
  fpull_image_config_free(*p);
}

int fpull_image_config_parse(struct fpull_image_config **out, const char *bytes, size_t len,
                             fpull_err *err)
{
  *out = NULL;
  const char *what = "image config";
  cleanup_json cJSON *root = NULL;
  int r = fp_json_parse_strict(&root, bytes, len, FPULL_MANIFEST_MAX, what, err);
  if (r)
    return r;
  if (!cJSON_IsObject(root))
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: not a JSON object", what);
  __attribute__((cleanup(config_freep))) struct fpull_image_config *c = fp_xcalloc(1, sizeof *c);
  if ((r = get_string(&c->os, root, "os", 0, what, err)) ||
      (r = get_string(&c->architecture, root, "architecture", 0, what, err)) ||
      (r = get_string(&c->variant, root, "variant", 0, what, err)) ||
      (r = get_strv(&c->os_features, root, "os.features", what, SIZE_MAX, err)))
    return r;
  if (!c->os)
    c->os = fp_xstrdup("");
  if (!c->architecture)
    c->architecture = fp_xstrdup("");
  const cJSON *rootfs;
  if ((r = fp_json_member(&rootfs, root, "rootfs", what, err)))
    return r;
  if (rootfs) {
    if (!cJSON_IsObject(rootfs))
      return fpull_err_set(err, FPULL_EINTEGRITY, "%s: \"rootfs\" is not an object", what);
    cleanup_free char *type = NULL;
    if ((r = get_string(&type, rootfs, "type", 0, what, err)) ||
        (r = get_strv(&c->diff_ids, rootfs, "diff_ids", what, SIZE_MAX, err)))
      return r;
    char b[96];
    if (type && strcmp(type, "layers") != 0)
      return fpull_err_set(err, FPULL_EINTEGRITY, "%s: rootfs type \"%s\", expected \"layers\"",
                           what, shown(b, type));
    if (!c->diff_ids)
      return fpull_err_set(err, FPULL_EINTEGRITY, "%s: missing rootfs.diff_ids", what);
    for (size_t i = 0; c->diff_ids[i]; i++)
      if ((r = check_digest(c->diff_ids[i], what, "rootfs.diff_ids", err)))
        return r;
  }
  if (!c->diff_ids)
    c->diff_ids = fp_xcalloc(1, sizeof *c->diff_ids);
  *out = steal_pointer(&c);
  return 0;
}

int fpull_layer_compression(const char *media_type)
{
  static const struct {
    const char *type;
    int compression;
  } known[] = {
      {"application/vnd.oci.image.layer.v1.tar", 0},
      {"application/vnd.oci.image.layer.v1.tar+gzip", 1},
      {"application/vnd.oci.image.layer.v1.tar+zstd", 2},
      {"application/vnd.docker.image.rootfs.diff.tar", 0},
      {"application/vnd.docker.image.rootfs.diff.tar.gzip", 1},
      {"application/vnd.docker.image.rootfs.diff.tar.zstd", 2},
  };
  /* Foreign/non-distributable layers live at URLs fpull never fetches (CVE-2020-15157),
   * and "+encrypted" layers need keys fpull does not have: both fall through to -1. */
  if (!media_type)
    return -1;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcasecmp(media_type, known[i].type) == 0)
      return known[i].compression;
  return -1;
}

int fpull_media_type_kind(const char *media_type)
{
  if (in_list(manifest_types, media_type))
    return 1;
  if (in_list(index_types, media_type))
    return 2;
  return 0;
}

char *fpull_manifest_not_image(const struct fpull_manifest *m, int *invalid)
{
  char b[96];
  const char *ct = m->config.media_type;
  *invalid = 0;
  if (m->artifact_type)
    return fp_xasprintf("an artifact (artifactType %s)", shown(b, m->artifact_type));
  /* BuildKit's attestation manifests: an image config of platform unknown/unknown over
   * in-toto statements, reached by digest from an index entry marked as one. */
  for (size_t i = 0; i < m->n_layers; i++)
    if (m->layers[i].media_type &&
        strcasecmp(m->layers[i].media_type, "application/vnd.in-toto+json") == 0)
      return fp_xasprintf("an attestation (layer %s is an in-toto statement)", m->layers[i].digest);
  if (ct && strcasecmp(ct, FPULL_MT_OCI_EMPTY) == 0)
    return fp_xasprintf("an artifact (empty config %s)", FPULL_MT_OCI_EMPTY);
  if (ct &&
      (strcasecmp(ct, FPULL_MT_OCI_CONFIG) == 0 || strcasecmp(ct, FPULL_MT_DOCKER_CONFIG) == 0))
    return NULL;
  /* Docker v2 manifests written by old registries and tools carry these config types, which
   * moby pulls as image configs (the image-spec's backwards-compatibility vector,
   * library/docker@sha256:888206c7..., has application/octet-stream). */
  static const char *const legacy[] = {"application/octet-stream", "application/json", "text/html",
                                       ""};
  for (size_t i = 0; ct && m->media_type && i < sizeof legacy / sizeof *legacy; i++)
    if (strcasecmp(m->media_type, FPULL_MT_DOCKER_MANIFEST) == 0 && strcasecmp(ct, legacy[i]) == 0)
      return NULL;
  /* A layer type where the config belongs: not a valid document of any kind. */
  if (fpull_layer_compression(ct) >= 0 ||
      (ct && strncasecmp(ct, "application/vnd.oci.image.layer.", 32) == 0)) {
    *invalid = 1;
    return fp_xasprintf("invalid: its config has the layer media type %s", shown(b, ct));
  }
  return fp_xasprintf("an artifact (config media type %s)", shown(b, ct ? ct : ""));
}
