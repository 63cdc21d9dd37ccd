/* prefetch --all: every image entry of an index into the cache, so that a login node can
 * prepare the cache for nodes of every kind and each of them pulls --offline its own. */
#include <string.h>

#include "cache/cache_use.h"
#include "resolve.h"
#include "base/util.h"
#include "fpull/features.h"
#include "fpull/manifest.h"

/* Distinct images one prefetch --all caches at most (man page, prefetch). */
#define FP_PREFETCH_ALL_MAX 1024

/* Image entries only: attestations and unknown/unknown are never pulled by anyone. */
static int wanted(const struct fpull_descriptor *d, const char *os, const char *arch)
{
  const struct fpull_platform *p = d->platform;
  if (d->ref_type)
    return 0;
  if (p && p->os && p->architecture && strcmp(p->os, "unknown") == 0 &&
      strcmp(p->architecture, "unknown") == 0)
    return 0;
  if (os && (!p || !p->os || strcmp(p->os, os) != 0))
    return 0;
  if (arch) {
    cleanup_free char *a = fpull_arch_normalise(p && p->architecture ? p->architecture : "");
    cleanup_free char *want = fpull_arch_normalise(arch);
    if (strcmp(a, want) != 0)
      return 0;
  }
  return 1;
}

/* The manifest's layers into the cache, with the configured number of workers; a layer an
 * earlier entry of this run brought (its digest in *seen) is neither fetched nor hashed
 * again. */
static int fetch_layers(struct fp_session *s, const struct fp_resolved *r, char ***seen,
                        fpull_err *err)
{
  const struct fpull_manifest *m = r->manifest;
  struct fpull_manifest part = *m;
  part.layers = fp_xcalloc(m->n_layers ? m->n_layers : 1, sizeof *part.layers);
  part.n_layers = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    if (fp_strv_contains(*seen, m->layers[i].digest))
      continue;
    *seen = fp_strv_push(*seen, m->layers[i].digest);
    part.layers[part.n_layers++] = m->layers[i];
  }
  struct fp_resolved view = *r;
  view.manifest = &part;
  int rc = 0;
  if (part.n_layers) {
    struct fp_fetch *fetch = fp_fetch_start(s, &view, 0);
    rc = fp_fetch_finish(fetch, 0, err);
  }
  free(part.layers);
  return rc;
}

static void add_entry(struct fpull_pull_result *res, const struct fp_resolved *r)
{
  res->entries = fp_xrealloc(res->entries, (res->n_entries + 1) * sizeof *res->entries);
  struct fpull_prefetch_entry *e = &res->entries[res->n_entries++];
  e->manifest_digest = fp_xstrdup(r->manifest_digest);
  e->platform = fpull_platform_dup(r->platform);
  e->layers = r->manifest->n_layers;
  res->layers += e->layers;
}

/* A layer fpull cannot unpack (Windows' foreign layers, encrypted ones, ...): no node will
 * ever pull that entry with fpull, so --all passes it over instead of failing on it. */
static const char *unusable_layer(const struct fpull_manifest *m)
{
  for (size_t i = 0; i < m->n_layers; i++)
    if (fpull_layer_compression(m->layers[i].media_type) < 0)
      return m->layers[i].media_type;
  return NULL;
}

static int each_entry(struct fp_session *s, const struct fp_resolved *all, const char *os,
                      const char *arch, struct fpull_pull_result *res, fpull_err *err)
{
  const struct fpull_index *idx = all->index;
  cleanup_strv char **done = fp_xcalloc(1, sizeof *done);     /* manifest digests */
  cleanup_strv char **layers = fp_xcalloc(1, sizeof *layers); /* layer digests */
  /* The bound before anything is fetched: distinct images the run would cache. */
  size_t n_distinct = 0;
  for (size_t i = 0; i < idx->n_manifests; i++) {
    const struct fpull_descriptor *d = &idx->manifests[i];
    if (all->cands[i].skip || !wanted(d, os, arch) || fp_strv_contains(done, d->digest))
      continue;
    if (++n_distinct > FP_PREFETCH_ALL_MAX)
      return fpull_err_set(err, FPULL_EUNSAFE,
                           "the index names more than %d distinct images; prefetch --all "
                           "refuses it (narrow it with --platform)",
                           FP_PREFETCH_ALL_MAX);
    done = fp_strv_push(done, d->digest);
  }
  fpull_strv_free(done);
  done = fp_xcalloc(1, sizeof *done);
  for (size_t i = 0; i < idx->n_manifests; i++) {
    const struct fpull_descriptor *d = &idx->manifests[i];
    if (all->cands[i].skip) {
      if (!all->cands[i].followed)
        fp_debug("%s: entry %s passed over: %s", s->reference, d->digest, all->cands[i].skip);
      continue;
    }
    /* Each manifest once, however many entries name it. */
    if (!wanted(d, os, arch) || fp_strv_contains(done, d->digest))
      continue;
    done = fp_strv_push(done, d->digest);
    struct fp_resolved r;
    cleanup_free char *no = NULL;
    int rc = fp_resolve_entry(s, d, &r, &no, err);
    const char *bad = rc == 0 && !no ? unusable_layer(r.manifest) : NULL;
    if (no)
      fp_warn("%s: entry %s passed over: not a container image: %s", s->reference, d->digest, no);
    else if (bad)
      fp_warn("%s: entry %s passed over: it has a layer of type %s, which fpull cannot unpack",
              s->reference, d->digest, bad);
    else if (rc == 0)
      rc = fetch_layers(s, &r, &layers, err);
    if (rc == 0 && !bad && !no)
      add_entry(res, &r);
    fp_resolved_free(&r);
    if (rc)
      return fpull_err_prefix(err, "entry %s", d->digest);
  }
  if (res->n_entries == 0 && os)
    return fpull_err_set(err, FPULL_ENOMATCH, "no image entry of the index is for %s/%s", os,
                         arch ? arch : "any architecture");
  if (res->n_entries == 0)
    return fpull_err_set(err, FPULL_ENOMATCH, "no entry of the index is an image fpull can unpack");
  return 0;
}

static int run_all(struct fp_session *s, const char *os, const char *arch,
                   struct fpull_pull_result *res, fpull_err *err)
{
  struct fp_resolved r = {0};
  int rc = fp_resolve(s, &r, 1, err);
  if (rc == FPULL_ENOMATCH && !r.index && r.manifest && !os && !arch) {
    /* A single manifest for another platform: --all without --platform takes it anyway. */
    fpull_err_clear(err);
    rc = 0;
  }
  if (rc == 0)
    res->index_digest = fp_xstrdup(r.index_digest);
  if (rc == 0 && r.index) {
    rc = each_entry(s, &r, os, arch, res, err);
  } else if (rc == 0) {
    res->manifest_digest = fp_xstrdup(r.manifest_digest);
    res->platform = fpull_platform_dup(r.platform);
    cleanup_strv char **seen = fp_xcalloc(1, sizeof *seen);
    rc = fetch_layers(s, &r, &seen, err);
    if (rc == 0)
      add_entry(res, &r);
  }
  fp_resolved_free(&r);
  return rc;
}

int fpull_prefetch_all(struct fpull_pull_result **out, const char *image, const char *os,
                       const char *arch, const struct fpull_pull_opts *o, fpull_err *err)
{
  *out = NULL;
  struct fp_session s;
  int rc = fp_session_open(&s, image, o, err);
  struct fpull_pull_result *res = fp_xcalloc(1, sizeof *res);
  if (rc == 0)
    rc = run_all(&s, os, arch, res, err);
  if (rc == 0) {
    fp_cache_note_use(s.cache, s.reference);
    res->reference = fp_xstrdup(s.reference);
    res->bytes_downloaded = s.bytes_downloaded;
    res->bytes_from_cache = s.bytes_from_cache;
    *out = res;
  } else {
    fpull_pull_result_free(res);
    if (s.reference)
      fpull_err_prefix(err, "%s", s.reference);
  }
  fp_session_close(&s);
  return rc;
}
