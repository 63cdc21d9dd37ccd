/* Which index entries take part in the choice: mediaType, artifacts, attestations, nested
 * indexes and entries without a platform (contract, "Which index entries are candidates"). */
#include <string.h>
#include <strings.h>

#include "candidates.h"
#include "base/util.h"
#include "fpull/features.h"
#include "fpull/registry.h"

struct memo_index {
  char *digest;
  struct fpull_index *idx;
};

struct builder {
  struct fp_cands *out;
  size_t cap;
  const struct fp_cand_io *io;
  char **chain;               /* digests of the indexes from the top to the one being read */
  struct memo_index *indexes; /* each nested index fetched once */
  size_t n_indexes;
};

static void descriptor_copy(struct fpull_descriptor *to, const struct fpull_descriptor *from)
{
  memset(to, 0, sizeof *to);
  to->media_type = fp_xstrdup(from->media_type);
  to->digest = fp_xstrdup(from->digest);
  to->size = from->size;
  to->platform = fpull_platform_dup(from->platform);
  to->ref_type = fp_xstrdup(from->ref_type);
  to->artifact_type = fp_xstrdup(from->artifact_type);
}

static char *plat_text(const struct fpull_platform *p)
{
  return fp_xasprintf("%s/%s%s%s", p->os ? p->os : "", p->architecture ? p->architecture : "",
                      p->variant ? "/" : "", p->variant ? p->variant : "");
}

/* Why entry d is never a candidate, whatever the target; NULL when it may be one. */
static char *not_candidate(const struct fpull_descriptor *d)
{
  const struct fpull_platform *p = d->platform;
  if (d->ref_type)
    return fp_xasprintf("attestation (vnd.docker.reference.type %s)", d->ref_type);
  if (p && p->os && p->architecture && strcasecmp(p->os, "unknown") == 0 &&
      strcasecmp(p->architecture, "unknown") == 0)
    return fp_xstrdup("attestation (platform unknown/unknown)");
  if (d->artifact_type)
    return fp_xasprintf("artifact (artifactType %s)", d->artifact_type);
  if (fpull_media_type_kind(d->media_type) == 0)
    return fp_xasprintf("mediaType \"%s\" is neither an image manifest nor an index",
                        d->media_type ? d->media_type : "");
  return NULL;
}

/* 1 when platform p lies within the nested descriptor's platform f: same os and
 * architecture, and the same variant where both name one. */
static int within(const struct fpull_platform *p, const struct fpull_platform *f)
{
  if (!f)
    return 1;
  if (!p || strcasecmp(p->os ? p->os : "", f->os ? f->os : "") != 0)
    return 0;
  cleanup_free char *a = fpull_arch_normalise(p->architecture ? p->architecture : "");
  cleanup_free char *b = fpull_arch_normalise(f->architecture ? f->architecture : "");
  if (strcmp(a, b) != 0)
    return 0;
  return !p->variant || !f->variant || strcasecmp(p->variant, f->variant) == 0;
}

static size_t add_row(struct builder *b, const struct fpull_descriptor *d, long parent, int depth)
{
  struct fp_cands *o = b->out;
  if (o->n == b->cap) {
    b->cap = b->cap ? b->cap * 2 : 16;
    o->d = fp_xrealloc(o->d, b->cap * sizeof *o->d);
    o->c = fp_xrealloc(o->c, b->cap * sizeof *o->c);
  }
  descriptor_copy(&o->d[o->n], d);
  memset(&o->c[o->n], 0, sizeof o->c[o->n]);
  o->c[o->n].parent = parent;
  o->c[o->n].depth = depth;
  return o->n++;
}

/* The platform of a manifest entry without one: from an earlier row of the same digest,
 * else from its config (through io). */
static int fill_platform(struct builder *b, size_t row, fpull_err *err)
{
  struct fp_cands *o = b->out;
  o->c[row].asked = 1;
  for (size_t i = 0; i < row; i++) {
    if (!o->c[i].asked || strcmp(o->d[i].digest, o->d[row].digest) != 0)
      continue;
    o->d[row].platform = fpull_platform_dup(o->d[i].platform);
    o->c[row].from_config = o->c[i].from_config;
    o->c[row].skip = fp_xstrdup(o->c[i].skip);
    return 0;
  }
  struct fpull_platform *p = NULL;
  char *why = NULL;
  int rc = b->io->platform(b->io->ud, &o->d[row], &p, &why, err);
  if (rc)
    return rc;
  if (why) {
    o->c[row].skip = why;
    fpull_platform_free(p);
    return 0;
  }
  o->d[row].platform = p;
  o->c[row].from_config = 1;
  return 0;
}

static int nested_index(struct builder *b, const struct fpull_descriptor *d,
                        const struct fpull_index **out, fpull_err *err)
{
  for (size_t i = 0; i < b->n_indexes; i++)
    if (strcmp(b->indexes[i].digest, d->digest) == 0) {
      *out = b->indexes[i].idx;
      return 0;
    }
  struct fpull_index *idx = NULL;
  int rc = b->io->fetch_index(b->io->ud, d, &idx, err);
  if (rc)
    return rc;
  b->indexes = fp_xrealloc(b->indexes, (b->n_indexes + 1) * sizeof *b->indexes);
  b->indexes[b->n_indexes].digest = fp_xstrdup(d->digest);
  b->indexes[b->n_indexes++].idx = idx;
  *out = idx;
  return 0;
}

static int walk(struct builder *b, const struct fpull_index *idx, long parent, int depth,
                const struct fpull_platform *filter, fpull_err *err)
{
  for (size_t i = 0; i < idx->n_manifests; i++) {
    const struct fpull_descriptor *d = &idx->manifests[i];
    if (b->out->n >= FP_CANDIDATES_MAX)
      return fpull_err_set(err, FPULL_EUNSAFE,
                           "the index lists more than %d entries, nested indexes included",
                           FP_CANDIDATES_MAX);
    size_t row = add_row(b, d, parent, depth);
    struct fp_cand *c = &b->out->c[row];
    if ((c->skip = not_candidate(d)))
      continue;
    if (fpull_media_type_kind(d->media_type) == 1) {
      int rc = d->platform ? 0 : fill_platform(b, row, err);
      c = &b->out->c[row];
      if (rc)
        return rc;
      if (!c->skip && !within(b->out->d[row].platform, filter)) {
        cleanup_free char *t = plat_text(filter);
        c->skip = fp_xasprintf("outside the platform %s of the nested index's entry", t);
      }
      continue;
    }
    /* A nested index. Its digest among those above it: it contains itself. */
    if (fp_strv_contains(b->chain, d->digest))
      return fpull_err_set(err, FPULL_EUNSAFE, "index %s contains itself", d->digest);
    if (depth >= FP_INDEX_DEPTH_MAX) {
      c->skip = fp_xasprintf("nested index deeper than %d levels", FP_INDEX_DEPTH_MAX);
      continue;
    }
    if (d->platform && !within(d->platform, filter)) {
      cleanup_free char *t = plat_text(filter);
      c->skip = fp_xasprintf("outside the platform %s of the nested index's entry", t);
      continue;
    }
    const struct fpull_index *sub = NULL;
    int rc = nested_index(b, d, &sub, err);
    if (rc)
      return fpull_err_prefix(err, "nested index %s", d->digest);
    c = &b->out->c[row];
    c->followed = 1;
    c->skip = fp_xasprintf("nested index with %zu entr%s, followed", sub->n_manifests,
                           sub->n_manifests == 1 ? "y" : "ies");
    b->chain = fp_strv_push(b->chain, d->digest);
    rc = walk(b, sub, (long)row, depth + 1, d->platform ? d->platform : filter, err);
    size_t n = fpull_strv_len(b->chain);
    free(b->chain[n - 1]);
    b->chain[n - 1] = NULL;
    if (rc)
      return rc;
  }
  return 0;
}

int fp_cands_build(struct fp_cands *out, const struct fpull_index *top, const char *top_digest,
                   const struct fp_cand_io *io, fpull_err *err)
{
  memset(out, 0, sizeof *out);
  struct builder b = {.out = out, .io = io};
  b.chain = fp_xcalloc(1, sizeof *b.chain);
  b.chain = fp_strv_push(b.chain, top_digest);
  int rc = walk(&b, top, -1, 1, NULL, err);
  fpull_strv_free(b.chain);
  for (size_t i = 0; i < b.n_indexes; i++) {
    free(b.indexes[i].digest);
    fpull_index_free(b.indexes[i].idx);
  }
  free(b.indexes);
  if (rc)
    fp_cands_free(out);
  return rc;
}

void fp_cands_free(struct fp_cands *c)
{
  if (!c)
    return;
  /* The descriptors go back through the index's own free. */
  struct fpull_index *idx = fp_xcalloc(1, sizeof *idx);
  idx->manifests = c->d;
  idx->n_manifests = c->n;
  fpull_index_free(idx);
  for (size_t i = 0; i < c->n; i++)
    free(c->c[i].skip);
  free(c->c);
  memset(c, 0, sizeof *c);
}

static const char *kind_name(int kind)
{
  return kind == FPULL_DOC_INDEX      ? "an index"
         : kind == FPULL_DOC_MANIFEST ? "an image manifest"
         : kind == FPULL_DOC_SCHEMA1  ? "a Docker schema 1 manifest"
                                      : "an unknown document";
}

int fp_cand_check_doc(const struct fpull_descriptor *d, const struct fpull_fetched *f, int want,
                      fpull_err *err)
{
  if ((int64_t)f->len != d->size)
    return fpull_err_set(err, FPULL_EINTEGRITY,
                         "index entry %s gives the size %lld, the manifest has %zu bytes",
                         d->digest, (long long)d->size, f->len);
  int kind = 0;
  int rc = fpull_doc_kind(&kind, f->data, f->len, f->content_type, err);
  if (rc == 0 && kind != want)
    rc = fpull_err_set(err, FPULL_EINTEGRITY, "index entry %s is typed as %s but holds %s",
                       d->digest, kind_name(want), kind_name(kind));
  return rc;
}

int fp_cand_check_media_type(const struct fpull_descriptor *d, const char *got, fpull_err *err)
{
  /* By kind, as containerd checks: an OCI entry may hold a Docker v2 manifest and a Docker
   * list an OCI one (go-containerregistry's test layout, the image-spec's own vectors); the
   * digest vouches for the bytes. A manifest where an index is named, or the reverse, is
   * refused. */
  if (got && d->media_type && fpull_media_type_kind(got) != fpull_media_type_kind(d->media_type))
    return fpull_err_set(err, FPULL_EINTEGRITY,
                         "index entry %s is typed %s but the document says %s", d->digest,
                         d->media_type, got);
  return 0;
}

int fp_cand_read_index(const struct fpull_descriptor *d, const struct fpull_fetched *f,
                       struct fpull_index **out, fpull_err *err)
{
  *out = NULL;
  int rc = fp_cand_check_doc(d, f, FPULL_DOC_INDEX, err);
  if (rc == 0)
    rc = fpull_index_parse(out, f->data, f->len, f->content_type, err);
  if (rc == 0)
    rc = fp_cand_check_media_type(d, (*out)->media_type, err);
  if (rc) {
    fpull_index_free(*out);
    *out = NULL;
  }
  return rc;
}

struct fpull_platform *fp_cand_platform_of(const struct fpull_image_config *c)
{
  struct fpull_platform *p = fp_xcalloc(1, sizeof *p);
  p->os = fp_xstrdup(c->os);
  p->architecture = fp_xstrdup(c->architecture);
  p->variant = fp_xstrdup(c->variant);
  p->os_features = fp_strv_dup(c->os_features);
  return p;
}
