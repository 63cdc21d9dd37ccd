/* Manifests: a tag is answered with an index reduced to one entry per platform, this node's
 * being the entry fpull pull on this node would choose; a digest with the document's own
 * bytes (man fpull, SERVE, "What a client gets"). */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <string.h>

#include "pull/resolve.h"
#include "serve_internal.h"
#include "base/util.h"
#include "fpull/features.h"
#include "fpull/manifest.h"
#include "fpull/match.h"
#include "fpull/ref.h"

void sv_answer_free(struct sv_answer *a)
{
  free(a->body);
  free(a->content_type);
  free(a->digest);
  if (a->fd >= 0)
    close(a->fd);
  memset(a, 0, sizeof *a);
  a->fd = -1;
}

int sv_answer_error(struct sv_answer *a, int status, const char *code, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cJSON *j = cJSON_CreateObject(), *errs = cJSON_AddArrayToObject(j, "errors");
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "code", code);
  cJSON_AddStringToObject(e, "message", msg);
  cJSON_AddItemToArray(errs, e);
  free(a->body);
  a->body = cJSON_PrintUnformatted(j);
  a->len = strlen(a->body);
  cJSON_Delete(j);
  free(a->content_type);
  a->content_type = fp_xstrdup("application/json");
  free(a->digest);
  a->digest = NULL;
  a->status = status;
  a->length = a->len;
  return status;
}

/* fpull's exit codes as a registry's answers. */
static void answer_failure(struct sv_answer *a, int rc, const fpull_err *e)
{
  switch (rc) {
  case FPULL_ENOTFOUND:
  case FPULL_ENOMATCH:
    sv_answer_error(a, 404, "MANIFEST_UNKNOWN", "%s", e->msg);
    break;
  case FPULL_EPOLICY:
    sv_answer_error(a, 403, "DENIED", "%s", e->msg);
    break;
  case FPULL_EAUTH:
    sv_answer_error(a, 403, "DENIED", "the registry refused fpull serve's credentials: %s", e->msg);
    break;
  case FPULL_EUSAGE:
    sv_answer_error(a, 400, "NAME_INVALID", "%s", e->msg);
    break;
  default:
    sv_answer_error(a, 502, "UNKNOWN", "%s", e->msg);
  }
}

static void answer_bytes(struct sv_answer *a, const char *data, size_t len, const char *type,
                         const char *digest)
{
  a->status = 200;
  free(a->body);
  a->body = fp_xmalloc(len + 1);
  memcpy(a->body, data, len);
  a->body[len] = '\0';
  a->len = a->length = a->total = len;
  a->content_type = fp_xstrdup(type);
  a->digest = fp_xstrdup(digest);
}

/* The media type a document is served with: the registry's Content-Type, else its body's
 * mediaType, else OCI's type of its kind. */
static const char *media_type_of(const struct fpull_fetched *f, int kind, const char *body_type)
{
  if (f->content_type && fpull_media_type_kind(f->content_type))
    return f->content_type;
  if (body_type && fpull_media_type_kind(body_type))
    return body_type;
  return kind == FPULL_DOC_INDEX ? FPULL_MT_OCI_INDEX : FPULL_MT_OCI_MANIFEST;
}

/* An image manifest about to be served: the policy decides, and its blobs become servable. */
static int admit_manifest(struct fpull_server *sv, struct fp_session *s, const struct sv_route *rt,
                          const struct fpull_fetched *f, const char *index_digest,
                          struct fpull_manifest **out, fpull_err *err)
{
  struct fpull_manifest *m = NULL;
  int rc = fpull_manifest_parse(&m, f->data, f->len, f->content_type, err);
  if (rc)
    return rc;
  int invalid = 0;
  char *no = fpull_manifest_not_image(m, &invalid);
  if (!no) {
    struct fpull_sig_check *sig = NULL;
    rc = fp_sig_check_manifest(s, f->digest, f->data, f->len, index_digest, &sig, err);
    if (rc == 0 && sig)
      fp_info("serve: %s: %s: signature %s", rt->image, f->digest, sig->state);
    fpull_sig_check_free(sig);
  }
  free(no);
  if (rc == 0)
    rc = fp_sig_commit(s, err);
  if (rc) {
    fpull_manifest_free(m);
    return rc;
  }
  sv_size_note(sv, rt->registry, rt->repository, m->config.digest, m->config.size);
  for (size_t i = 0; i < m->n_layers; i++)
    sv_size_note(sv, rt->registry, rt->repository, m->layers[i].digest, m->layers[i].size);
  if (out)
    *out = m;
  else
    fpull_manifest_free(m);
  return 0;
}

/* ---- the reduced index ---- */

static cJSON *platform_json(const struct fpull_platform *p)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "architecture", p->architecture ? p->architecture : "");
  cJSON_AddStringToObject(j, "os", p->os ? p->os : "");
  if (p->os_version)
    cJSON_AddStringToObject(j, "os.version", p->os_version);
  if (p->os_features)
    cJSON_AddItemToObject(j, "os.features",
                          cJSON_CreateStringArray((const char *const *)p->os_features,
                                                  (int)fpull_strv_len(p->os_features)));
  if (p->variant)
    cJSON_AddStringToObject(j, "variant", p->variant);
  if (p->features)
    cJSON_AddItemToObject(j, "features",
                          cJSON_CreateStringArray((const char *const *)p->features,
                                                  (int)fpull_strv_len(p->features)));
  return j;
}

static cJSON *descriptor_json(const struct fpull_descriptor *d)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "mediaType", d->media_type);
  cJSON_AddStringToObject(j, "digest", d->digest);
  cJSON_AddNumberToObject(j, "size", (double)d->size);
  if (d->platform)
    cJSON_AddItemToObject(j, "platform", platform_json(d->platform));
  return j;
}

/* Whether row i can be pulled as an image by some platform: a manifest with a platform. */
static int servable_row(const struct fp_resolved *r, size_t i)
{
  const struct fpull_descriptor *d = &r->index->manifests[i];
  return !r->cands[i].skip && !r->cands[i].followed && d->platform &&
         fpull_media_type_kind(d->media_type) == 1;
}

static int same_os_arch(const struct fpull_platform *p, const char *os, const char *arch)
{
  cleanup_free char *a = fpull_arch_normalise(p->architecture ? p->architecture : "");
  return p->os && strcmp(p->os, os) == 0 && strcmp(a, arch) == 0;
}

static int same_platform(const struct fpull_platform *p, const struct fpull_platform *q)
{
  cleanup_free char *a = fpull_arch_normalise(p->architecture ? p->architecture : "");
  cleanup_free char *b = fpull_arch_normalise(q->architecture ? q->architecture : "");
  return strcmp(p->os ? p->os : "", q->os ? q->os : "") == 0 && strcmp(a, b) == 0 &&
         strcmp(p->variant ? p->variant : "", q->variant ? q->variant : "") == 0;
}

/* Of the rows of another platform (the rows where group[i] is set), the one a node of that
 * platform without any feature would pull; else the first. */
static size_t best_of_platform(const struct fpull_server *sv, const struct fp_resolved *r,
                               const unsigned char *group, size_t first)
{
  const struct fpull_platform *p = r->index->manifests[first].platform;
  cleanup_free char *arch = fpull_arch_normalise(p->architecture ? p->architecture : "");
  cleanup_free char *plat =
      fp_xasprintf("%s/%s%s%s", p->os, arch, p->variant ? "/" : "", p->variant ? p->variant : "");
  struct fpull_target_opts to = FPULL_TARGET_OPTS_INIT;
  to.platform = plat;
  to.tagdb = sv->opts->tagdb;
  to.no_detect = 1;
  struct fpull_target *t = NULL;
  fpull_err e = {0};
  size_t best = first;
  if (fpull_target_build(&t, &to, &e) != 0) {
    fp_debug("serve: platform %s: %s", plat, e.msg);
    return first;
  }
  size_t n = 0;
  for (size_t i = 0; i < r->index->n_manifests; i++)
    n += group[i];
  struct fpull_descriptor *ds = fp_xcalloc(n, sizeof *ds);
  size_t *rows = fp_xcalloc(n, sizeof *rows);
  n = 0;
  for (size_t i = 0; i < r->index->n_manifests; i++)
    if (group[i]) {
      rows[n] = i;
      ds[n++] = r->index->manifests[i]; /* shallow: the match only reads them */
    }
  struct fpull_match *m = NULL;
  if (fpull_match_entries(&m, t, ds, n, sv->opts->tagdb, &e) == 0 && m->chosen >= 0)
    best = rows[m->chosen];
  fpull_match_free(m);
  fpull_target_free(t);
  free(ds);
  free(rows);
  return best;
}

/* The index a tag is answered with (see the file's comment): *out the bytes, NULL when the
 * upstream index itself is the answer (nothing would be left out). */
static char *reduce_index(const struct fpull_server *sv, const struct fpull_fetched *top,
                          const struct fp_resolved *r, long chosen, size_t *kept_out)
{
  const struct fpull_target *t = sv->opts->target;
  size_t n = r->index->n_manifests;
  cleanup_free unsigned char *keep = fp_xcalloc(n + 1, 1);
  cleanup_free unsigned char *done = fp_xcalloc(n + 1, 1);
  cleanup_free unsigned char *group = fp_xcalloc(n + 1, 1);
  if (chosen >= 0)
    keep[chosen] = 1;
  for (size_t i = 0; i < n; i++) {
    const struct fpull_platform *p = r->index->manifests[i].platform;
    if (!servable_row(r, i) || done[i])
      continue;
    if (same_os_arch(p, t->os, t->architecture)) {
      done[i] = 1; /* this node's: only the chosen entry stays */
      continue;
    }
    memset(group, 0, n);
    for (size_t k = i; k < n; k++)
      if (servable_row(r, k) && !done[k] &&
          !same_os_arch(r->index->manifests[k].platform, t->os, t->architecture) &&
          same_platform(p, r->index->manifests[k].platform)) {
        group[k] = 1;
        done[k] = 1;
      }
    keep[best_of_platform(sv, r, group, i)] = 1;
  }
  /* The same digest listed twice (a nested index and the top) is kept once. */
  size_t kept = 0, top_rows = 0, nested_or_config = 0;
  for (size_t i = 0; i < n; i++) {
    for (size_t k = 0; keep[i] && k < i; k++)
      if (keep[k] && strcmp(r->index->manifests[k].digest, r->index->manifests[i].digest) == 0)
        keep[i] = 0;
    kept += keep[i];
    top_rows += r->cands[i].depth == 1;
    if (keep[i] && (r->cands[i].depth != 1 || r->cands[i].from_config))
      nested_or_config++;
  }
  *kept_out = kept;
  if (kept == top_rows && !nested_or_config)
    return NULL;
  cJSON *orig = cJSON_ParseWithLength(top->data, top->len);
  cJSON *orig_list = cJSON_GetObjectItemCaseSensitive(orig, "manifests");
  cJSON *out = cJSON_CreateObject();
  cJSON_AddNumberToObject(out, "schemaVersion", 2);
  const char *mt = r->index->media_type && fpull_media_type_kind(r->index->media_type) == 2
                       ? r->index->media_type
                       : FPULL_MT_OCI_INDEX;
  cJSON_AddStringToObject(out, "mediaType", mt);
  cJSON *list = cJSON_AddArrayToObject(out, "manifests");
  int top_i = -1;
  for (size_t i = 0; i < n; i++) {
    if (r->cands[i].depth == 1)
      top_i++;
    if (!keep[i])
      continue;
    cJSON *o = NULL;
    if (r->cands[i].depth == 1 && !r->cands[i].from_config && orig_list)
      o = cJSON_Duplicate(cJSON_GetArrayItem(orig_list, top_i), 1);
    cJSON_AddItemToArray(list, o ? o : descriptor_json(&r->index->manifests[i]));
  }
  if (strcmp(mt, FPULL_MT_OCI_INDEX) == 0) {
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(orig, "annotations");
    ann = cJSON_IsObject(ann) ? cJSON_Duplicate(ann, 1) : cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(ann, "org.fpull.serve.index");
    cJSON_AddStringToObject(ann, "org.fpull.serve.index", top->digest);
    cJSON_AddItemToObject(out, "annotations", ann);
  }
  char *bytes = cJSON_PrintUnformatted(out);
  cJSON_Delete(out);
  cJSON_Delete(orig);
  return bytes;
}

/* Whether the client takes an index for a tag (its Accept lists one, or anything). */
static int accepts_index(const char *accept)
{
  return !accept || !*accept || strstr(accept, "*/*") || strstr(accept, "image.index") ||
         strstr(accept, "manifest.list");
}

static void platform_text(char *buf, size_t len, const struct fpull_platform *p)
{
  size_t l = (size_t)snprintf(buf, len, "%s/%s%s%s", p && p->os ? p->os : "?",
                              p && p->architecture ? p->architecture : "?",
                              p && p->variant ? "/" : "", p && p->variant ? p->variant : "");
  for (size_t i = 0; p && p->features && p->features[i] && l < len; i++)
    l += (size_t)snprintf(buf + l, len - l, "%s%s", i ? "," : " features ", p->features[i]);
}

static void answer_index(struct fpull_server *sv, struct fp_session *s, const struct sv_route *rt,
                         const struct fpull_fetched *f, const char *accept, const char *how,
                         struct sv_answer *a)
{
  struct fp_resolved r = {0};
  fpull_err e = {0};
  int rc = fp_resolve_top(s, &r, f, 0, &e);
  long chosen = rc == 0 ? r.match->chosen : -1;
  char nofit[1024] = "";
  if (rc == FPULL_ENOMATCH) {
    /* No entry fits this node: like pull, it gets none; other platforms keep theirs. */
    snprintf(nofit, sizeof nofit, "%s", e.msg);
    fp_resolved_free(&r);
    fpull_err_clear(&e);
    rc = fp_resolve_top(s, &r, f, 1, &e);
    chosen = -1;
  }
  if (rc) {
    fp_info("serve: %s: %s", rt->image, e.msg);
    answer_failure(a, rc, &e);
    fp_resolved_free(&r);
    return;
  }
  char plat[512] = "";
  cleanup_free char *why = NULL;
  if (chosen >= 0) {
    platform_text(plat, sizeof plat, r.index->manifests[chosen].platform);
    why = fpull_match_why(r.match, r.index->manifests, (size_t)chosen, sv->opts->tagdb);
    sv_size_note(sv, rt->registry, rt->repository, r.manifest->config.digest,
                 r.manifest->config.size);
    for (size_t i = 0; i < r.manifest->n_layers; i++)
      sv_size_note(sv, rt->registry, rt->repository, r.manifest->layers[i].digest,
                   r.manifest->layers[i].size);
  }
  const struct fpull_target *t = sv->opts->target;
  if (!accepts_index(accept) && chosen >= 0) {
    /* A client that takes no index gets this node's manifest itself. */
    char *data = NULL;
    size_t len = 0;
    const char *md = r.index->manifests[chosen].digest;
    if (fpull_cache_get_bytes(sv->cache, md, FPULL_MANIFEST_MAX, &data, &len, &e) == 0) {
      answer_bytes(a, data, len, r.manifest->media_type, md);
      fp_info("serve: %s%s: index %s: %s/%s: %s (%s%s%s), sent as the manifest itself", rt->image,
              how, f->digest, t->os, t->architecture, md, plat, why ? "; " : "", why ? why : "");
    } else {
      answer_failure(a, rc = FPULL_ENOTFOUND, &e);
    }
    free(data);
    fp_resolved_free(&r);
    return;
  }
  size_t kept = 0;
  cleanup_free char *bytes = reduce_index(sv, f, &r, chosen, &kept);
  const char *type = media_type_of(f, FPULL_DOC_INDEX, r.index->media_type);
  if (!bytes) {
    answer_bytes(a, f->data, f->len, type, f->digest);
  } else {
    cleanup_free char *digest = fpull_digest_of(bytes, strlen(bytes));
    /* Kept, so that the client's GET or HEAD by this digest (and a restart, and the
     * registry going down) answers the same bytes. */
    if (fpull_cache_put_bytes(sv->cache, digest, bytes, strlen(bytes), &e) != 0) {
      fp_warn("serve: %s: %s", rt->image, e.msg);
      fpull_err_clear(&e);
    } else {
      /* No tag record names it: stamped as a pull by digest is, it is an image of its own
       * to fpull cache prune, which would otherwise remove it as unreferenced. */
      cleanup_free char *ref =
          fp_xasprintf("%s/%s@%s", s->ref->registry, s->ref->repository, digest);
      sv_note_use(sv, ref);
    }
    answer_bytes(a, bytes, strlen(bytes), type, digest);
  }
  if (chosen >= 0)
    fp_info("serve: %s%s: index %s: %s/%s: %s (%s%s%s); answered with index %s (%zu of %zu "
            "entries)",
            rt->image, how, f->digest, t->os, t->architecture, r.index->manifests[chosen].digest,
            plat, why ? "; " : "", why ? why : "", a->digest, kept, r.index->n_manifests);
  else
    fp_info("serve: %s%s: index %s: no entry for this node (%s); answered with index %s (%zu of "
            "%zu entries)",
            rt->image, how, f->digest, nofit, a->digest, kept, r.index->n_manifests);
  fp_resolved_free(&r);
}

/* The top document by tag, or by digest; online, else (the registry down) from the cache. */
static int fetch_top(struct fpull_server *sv, struct fp_session *s, const struct sv_route *rt,
                     struct fpull_fetched **f, const char **how, fpull_err *err)
{
  *how = "";
  if (rt->by_digest) {
    /* A document by digest is the same wherever it comes from: the cache first (a reduced
     * index is only there). */
    struct fpull_fetched *c = fp_xcalloc(1, sizeof *c);
    fpull_err e = {0};
    if (fpull_cache_get_bytes(sv->cache, rt->reference, FPULL_MANIFEST_MAX, &c->data, &c->len,
                              &e) == 0) {
      c->digest = fp_xstrdup(rt->reference);
      *f = c;
      *how = " (cache)";
      return 0;
    }
    fpull_fetched_free(c);
  }
  if (!s->reg)
    *how = " (cache: registry not answering)";
  int rc = fp_fetch_document(s, rt->reference, f, err);
  if (rc == FPULL_ENET && s->reg) {
    sv_registry_down(sv, rt->registry);
    fp_info("serve: %s: registry %s is not answering (%s); answering from the cache's tag "
            "records, as --offline does",
            rt->image, rt->registry, err->msg);
    s->reg = NULL;
    fpull_err_clear(err);
    *how = " (cache: registry not answering)";
    rc = fp_fetch_document(s, rt->reference, f, err);
  }
  return rc;
}

void sv_manifest(struct fpull_server *sv, const struct sv_route *rt, int head, const char *accept,
                 struct sv_answer *a)
{
  struct fp_session s;
  memset(&s, 0, sizeof s);
  s.opts = sv->opts;
  s.cache = sv->cache;
  fpull_err e = {0};
  int rc = fpull_ref_parse(&s.ref, rt->image, &e);
  if (rc) {
    answer_failure(a, rc, &e);
    return;
  }
  s.reference = fpull_ref_format(s.ref);
  int down = 0;
  s.reg = sv_registry_get(sv, rt->registry, &down, &e);
  if (!s.reg && !down) {
    rc = e.code ? e.code : FPULL_EFAIL;
  } else {
    fpull_err_clear(&e);
    rc = fp_sig_session_open(&s, &e);
  }
  struct fpull_fetched *f = NULL;
  const char *how = "";
  if (rc == 0)
    rc = fetch_top(sv, &s, rt, &f, &how, &e);
  int kind = 0;
  if (rc == 0)
    rc = fpull_doc_kind(&kind, f->data, f->len, f->content_type, &e);
  if (rc == 0 && kind == FPULL_DOC_INDEX && !rt->by_digest) {
    answer_index(sv, &s, rt, f, accept, how, a);
    if (a->status == 200)
      sv_note_use(sv, s.reference);
  } else if (rc == 0 && kind == FPULL_DOC_INDEX) {
    /* An index the client named by digest: byte-identical, since the client verifies it. */
    struct fpull_index *idx = NULL;
    rc = fpull_index_parse(&idx, f->data, f->len, f->content_type, &e);
    if (rc == 0)
      rc = fp_sig_commit(&s, &e);
    if (rc == 0) {
      answer_bytes(a, f->data, f->len, media_type_of(f, kind, idx->media_type), f->digest);
      fp_info("serve: %s%s: index, as it is", rt->image, how);
    }
    fpull_index_free(idx);
  } else if (rc == 0 && kind == FPULL_DOC_MANIFEST) {
    struct fpull_manifest *m = NULL;
    rc = admit_manifest(sv, &s, rt, f, NULL, &m, &e);
    if (rc == 0) {
      answer_bytes(a, f->data, f->len, media_type_of(f, kind, m->media_type), f->digest);
      fp_info("serve: %s%s: manifest %s", rt->image, how, f->digest);
      if (!rt->by_digest)
        sv_note_use(sv, s.reference);
    }
    fpull_manifest_free(m);
  } else if (rc == 0) {
    rc = fpull_err_set(&e, FPULL_EUNSAFE, "%s is no image manifest or index fpull serves",
                       f->digest);
  }
  if (rc) {
    fp_info("serve: %s%s: %s", rt->image, how, e.msg);
    answer_failure(a, rc, &e);
  }
  (void)head;
  fpull_fetched_free(f);
  fp_sig_session_close(&s);
  fpull_ref_free(s.ref);
  free(s.reference);
}
