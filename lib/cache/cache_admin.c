/* Cache housekeeping: fpull cache ls|du|prune|rm. The cache wing says what is in a cache and
 * removes entries under the locks pulls take (cache/cache_scan.h); which blobs belong to
 * which image is read from the cached manifests here, where the manifest parsers are in
 * reach. Least recently used is the time of the last pull or prefetch (cache/cache_use.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache_scan.h"
#include "cache/cache_use.h"
#include "base/opts.h"
#include "base/util.h"
#include "fpull/cache.h"
#include "fpull/manifest.h"
#include "fpull/ref.h"

/* Nested indexes are followed this deep, as pulls follow them (contract). */
#define FP_ADMIN_MAX_DEPTH 5

/* A cache as housekeeping sees it: its images, its blobs, and which image needs which. */
struct model {
  fpull_cache *c;
  struct fp_cache_root *roots;
  size_t n_roots;
  struct fp_cache_blob *blobs; /* sorted by digest */
  size_t n_blobs;
  unsigned *refs;      /* per blob: how many images (not removed) need it */
  unsigned char *doc;  /* per blob: an image reaches it as an index or manifest */
  unsigned char *gone; /* per blob: removed */
  size_t **members;    /* per image: its blobs (indexes into blobs) */
  size_t *n_members;   /* per image */
  unsigned char *done; /* per image: removed, or kept because it is in use */
  uint64_t partial_bytes, partial_count;
  uint64_t record_bytes, record_count;
};

static void model_free(struct model *m)
{
  for (size_t i = 0; i < m->n_roots; i++)
    free(m->members ? m->members[i] : NULL);
  free(m->members);
  free(m->n_members);
  free(m->done);
  fp_cache_roots_free(m->roots, m->n_roots);
  free(m->blobs);
  free(m->refs);
  free(m->doc);
  free(m->gone);
  fpull_cache_free(m->c);
  memset(m, 0, sizeof *m);
}

static long find_blob(const struct model *m, const char *digest)
{
  size_t lo = 0, hi = m->n_blobs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(m->blobs[mid].digest, digest);
    if (c == 0)
      return (long)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* Adds blob digest to image i once; returns its index, -1 when it is not in the cache. */
static long add_member(struct model *m, size_t i, const char *digest)
{
  long b = find_blob(m, digest);
  if (b < 0)
    return -1;
  for (size_t k = 0; k < m->n_members[i]; k++)
    if (m->members[i][k] == (size_t)b)
      return -2;
  m->members[i] = fp_xrealloc(m->members[i], (m->n_members[i] + 1) * sizeof *m->members[i]);
  m->members[i][m->n_members[i]++] = (size_t)b;
  m->refs[b]++;
  return b;
}

/* The blobs of image i reached from document digest: an index's entries (those cached),
 * a manifest's config and layers. A document that is not there, does not verify or does
 * not parse ends the walk there: what it would name is not known to be this image's. */
static void walk(struct model *m, size_t i, const char *digest, int depth)
{
  long b = add_member(m, i, digest);
  if (b < 0 || depth > FP_ADMIN_MAX_DEPTH)
    return;
  m->doc[b] = 1;
  cleanup_free char *data = NULL;
  size_t len = 0;
  int kind = 0;
  fpull_err e = {0};
  if (fpull_cache_get_bytes(m->c, digest, FPULL_MANIFEST_MAX, &data, &len, &e) != 0 ||
      fpull_doc_kind(&kind, data, len, NULL, &e) != 0)
    return;
  if (kind == FPULL_DOC_INDEX) {
    struct fpull_index *idx = NULL;
    if (fpull_index_parse(&idx, data, len, NULL, &e) == 0)
      for (size_t k = 0; k < idx->n_manifests; k++)
        walk(m, i, idx->manifests[k].digest, depth + 1);
    fpull_index_free(idx);
  } else if (kind == FPULL_DOC_MANIFEST) {
    struct fpull_manifest *man = NULL;
    if (fpull_manifest_parse(&man, data, len, NULL, &e) == 0) {
      add_member(m, i, man->config.digest);
      for (size_t k = 0; k < man->n_layers; k++)
        add_member(m, i, man->layers[k].digest);
    }
    fpull_manifest_free(man);
  }
}

static int model_load(struct model *m, const char *dir, int write, fpull_err *err)
{
  memset(m, 0, sizeof *m);
  int rc = fp_cache_admin_open(&m->c, dir, write, err);
  if (rc)
    return rc;
  fp_cache_scan_roots(m->c, &m->roots, &m->n_roots);
  fp_cache_scan_blobs(m->c, &m->blobs, &m->n_blobs);
  fp_cache_scan_partials(m->c, &m->partial_bytes, &m->partial_count);
  fp_cache_scan_records(m->c, &m->record_bytes, &m->record_count);
  size_t nb = m->n_blobs ? m->n_blobs : 1, nr = m->n_roots ? m->n_roots : 1;
  m->refs = fp_xcalloc(nb, sizeof *m->refs);
  m->doc = fp_xcalloc(nb, 1);
  m->gone = fp_xcalloc(nb, 1);
  m->members = fp_xcalloc(nr, sizeof *m->members);
  m->n_members = fp_xcalloc(nr, sizeof *m->n_members);
  m->done = fp_xcalloc(nr, 1);
  for (size_t i = 0; i < m->n_roots; i++)
    walk(m, i, m->roots[i].digest, 0);
  return 0;
}

/* No cache at dir: the same as an empty one for ls, du and prune. */
static int load_or_empty(struct model *m, const char *dir, int write, fpull_err *err)
{
  int rc = model_load(m, dir, write, err);
  if (rc == FPULL_ENOTFOUND) {
    fpull_err_clear(err);
    return 1;
  }
  return rc ? -rc : 0;
}

static uint64_t blobs_total(const struct model *m)
{
  uint64_t t = 0;
  for (size_t b = 0; b < m->n_blobs; b++)
    if (!m->gone[b])
      t += m->blobs[b].size;
  return t;
}

static uint64_t model_total(const struct model *m)
{
  return blobs_total(m) + m->partial_bytes + m->record_bytes;
}

static void image_sizes(const struct model *m, size_t i, uint64_t *size, uint64_t *unique)
{
  *size = *unique = 0;
  for (size_t k = 0; k < m->n_members[i]; k++) {
    size_t b = m->members[i][k];
    *size += m->blobs[b].size;
    if (m->refs[b] == 1)
      *unique += m->blobs[b].size;
  }
}

static int by_last_use_desc(const void *a, const void *b)
{
  const struct fpull_cache_image *x = a, *y = b;
  if (x->last_use != y->last_use)
    return x->last_use < y->last_use ? 1 : -1;
  return strcmp(x->reference, y->reference);
}

int fpull_cache_list(struct fpull_cache_listing **out, const char *dir, fpull_err *err)
{
  *out = NULL;
  struct model m;
  int rc = load_or_empty(&m, dir, 0, err);
  if (rc < 0)
    return -rc;
  struct fpull_cache_listing *l = fp_xcalloc(1, sizeof *l);
  l->images = fp_xcalloc(m.n_roots ? m.n_roots : 1, sizeof *l->images);
  for (size_t i = 0; rc == 0 && i < m.n_roots; i++) {
    struct fpull_cache_image *im = &l->images[l->n_images++];
    im->reference = fp_xstrdup(m.roots[i].reference);
    im->digest = fp_xstrdup(m.roots[i].digest);
    image_sizes(&m, i, &im->size, &im->unique_size);
    im->blobs = m.n_members[i];
    im->last_use = m.roots[i].last_use;
    im->in_use = fp_cache_pinned(m.c, m.roots[i].digest);
  }
  if (l->n_images)
    qsort(l->images, l->n_images, sizeof *l->images, by_last_use_desc);
  model_free(&m);
  *out = l;
  return 0;
}

void fpull_cache_listing_free(struct fpull_cache_listing *l)
{
  if (!l)
    return;
  for (size_t i = 0; i < l->n_images; i++) {
    free(l->images[i].reference);
    free(l->images[i].digest);
  }
  free(l->images);
  free(l);
}

int fpull_cache_du(struct fpull_cache_usage *out, const char *dir, fpull_err *err)
{
  memset(out, 0, sizeof *out);
  struct model m;
  int rc = load_or_empty(&m, dir, 0, err);
  if (rc < 0)
    return -rc;
  if (rc > 0)
    return 0;
  for (size_t b = 0; b < m.n_blobs; b++) {
    struct fpull_cache_kind_usage *k = m.doc[b] ? &out->manifests : &out->blobs;
    k->count++;
    k->bytes += m.blobs[b].size;
    if (m.refs[b] == 0) {
      out->unreferenced.count++;
      out->unreferenced.bytes += m.blobs[b].size;
    }
  }
  out->partials = (struct fpull_cache_kind_usage){m.partial_count, m.partial_bytes};
  out->records = (struct fpull_cache_kind_usage){m.record_count, m.record_bytes};
  out->images = m.n_roots;
  out->total = model_total(&m);
  model_free(&m);
  return 0;
}

void fpull_cache_prune_result_free(struct fpull_cache_prune_result *r)
{
  if (!r)
    return;
  fpull_strv_free(r->removed);
  fpull_strv_free(r->in_use);
  free(r);
}

static struct fpull_cache_prune_result *result_new(void)
{
  struct fpull_cache_prune_result *r = fp_xcalloc(1, sizeof *r);
  r->removed = fp_xcalloc(1, sizeof *r->removed);
  r->in_use = fp_xcalloc(1, sizeof *r->in_use);
  return r;
}

static void remove_blob(struct model *m, size_t b, struct fpull_cache_prune_result *res)
{
  if (m->gone[b] || fp_cache_remove_blob(m->c, m->blobs[b].digest) != 0)
    return;
  m->gone[b] = 1;
  res->blobs_removed++;
  res->bytes_freed += m->blobs[b].size;
}

/* Removes image i and the blobs only it needed, unless a pull of it is running: it pins
 * the top document first, and it is held here while the image goes, so that a pull that
 * starts meanwhile waits and then finds the image gone. 1 when it is in use. */
static int remove_image(struct model *m, size_t i, struct fpull_cache_prune_result *res)
{
  const struct fp_cache_root *r = &m->roots[i];
  m->done[i] = 1;
  if (fp_cache_pin_hold(m->c, r->digest) == 1) {
    res->in_use = fp_strv_push(res->in_use, r->reference);
    return 1;
  }
  fp_cache_remove_root(m->c, r);
  long top = find_blob(m, r->digest);
  for (size_t k = 0; k < m->n_members[i]; k++) {
    size_t b = m->members[i][k];
    /* A blob a running pull of another image pins stays: fp_cache_remove_blob says so. */
    if (--m->refs[b] == 0 && (long)b != top)
      remove_blob(m, b, res);
  }
  if (top >= 0 && m->refs[top] == 0)
    remove_blob(m, (size_t)top, res); /* gives the hold back too */
  else
    fp_cache_pin_release(m->c, r->digest);
  res->removed = fp_strv_push(res->removed, r->reference);
  return 0;
}

struct lru_entry {
  size_t i;
  const struct fp_cache_root *r;
};

static int by_last_use_asc(const void *a, const void *b)
{
  const struct fp_cache_root *x = ((const struct lru_entry *)a)->r;
  const struct fp_cache_root *y = ((const struct lru_entry *)b)->r;
  if (x->last_use != y->last_use)
    return x->last_use < y->last_use ? -1 : 1;
  return strcmp(x->reference, y->reference);
}

/* Image indexes, least recently used first. */
static size_t *lru_order(const struct model *m)
{
  struct lru_entry *e = fp_xcalloc(m->n_roots ? m->n_roots : 1, sizeof *e);
  for (size_t i = 0; i < m->n_roots; i++)
    e[i] = (struct lru_entry){i, &m->roots[i]};
  if (m->n_roots)
    qsort(e, m->n_roots, sizeof *e, by_last_use_asc);
  size_t *order = fp_xcalloc(m->n_roots ? m->n_roots : 1, sizeof *order);
  for (size_t i = 0; i < m->n_roots; i++)
    order[i] = e[i].i;
  free(e);
  return order;
}

static int prune_model(struct model *m, const struct fpull_cache_prune_opts *o,
                       struct fpull_cache_prune_result *res)
{
  uint64_t pb = 0, pc = 0;
  fp_cache_remove_partials(m->c, &pb, &pc);
  m->partial_bytes -= pb < m->partial_bytes ? pb : m->partial_bytes;
  res->blobs_removed += pc;
  res->bytes_freed += pb;
  /* Blobs no image needs: left by tags that moved on, pulls that failed, rm. */
  for (size_t b = 0; b < m->n_blobs; b++)
    if (m->refs[b] == 0)
      remove_blob(m, b, res);
  cleanup_free size_t *order = lru_order(m);
  int64_t cutoff = o->older_than >= 0 ? (int64_t)time(NULL) - o->older_than : 0;
  for (size_t k = 0; k < m->n_roots; k++) {
    size_t i = order[k];
    if (o->all || (o->older_than >= 0 && m->roots[i].last_use < cutoff))
      remove_image(m, i, res);
  }
  for (size_t k = 0; o->max_size >= 0 && k < m->n_roots; k++) {
    if (model_total(m) <= (uint64_t)o->max_size)
      break;
    if (!m->done[order[k]])
      remove_image(m, order[k], res);
  }
  return 0;
}

int fpull_cache_prune(struct fpull_cache_prune_result **out, const char *dir,
                      const struct fpull_cache_prune_opts *o, fpull_err *err)
{
  *out = NULL;
  int rc = FP_OPTS_CHECK(o, FPULL_CACHE_PRUNE_OPTS, "fpull_cache_prune_opts", err);
  if (rc)
    return rc;
  if (o->all && (o->older_than >= 0 || o->max_size >= 0))
    return fpull_err_set(err, FPULL_EUSAGE,
                         "prune: all removes every image; it takes no age or size limit");
  struct model m;
  rc = model_load(&m, dir, 1, err);
  if (rc == FPULL_ENOTFOUND) {
    fpull_err_clear(err);
    *out = result_new();
    return 0;
  }
  if (rc)
    return rc;
  struct fpull_cache_prune_result *res = result_new();
  prune_model(&m, o, res);
  fp_cache_scan_records(m.c, &m.record_bytes, &m.record_count);
  res->size = model_total(&m);
  model_free(&m);
  *out = res;
  return 0;
}

/* Whether image i is what IMAGE names: the same normalised reference, or for a reference
 * with a digest, the same repository and digest. */
static int matches(const struct fp_cache_root *r, const struct fpull_ref *want, const char *norm)
{
  if (strcmp(r->reference, norm) == 0)
    return 1;
  if (!want->digest || strcmp(r->digest, want->digest) != 0)
    return 0;
  struct fpull_ref *have = NULL;
  fpull_err e = {0};
  int same = fpull_ref_parse(&have, r->reference, &e) == 0 &&
             strcmp(have->registry, want->registry) == 0 &&
             strcmp(have->repository, want->repository) == 0;
  fpull_ref_free(have);
  return same;
}

int fpull_cache_rm(struct fpull_cache_prune_result **out, const char *dir, const char *image,
                   fpull_err *err)
{
  *out = NULL;
  struct fpull_ref *want = NULL;
  int rc = fpull_ref_parse(&want, image, err);
  if (rc)
    return rc;
  cleanup_free char *norm = fpull_ref_format(want);
  struct model m;
  rc = model_load(&m, dir, 1, err);
  if (rc == FPULL_ENOTFOUND)
    rc = fpull_err_set(err, FPULL_ENOTFOUND, "%s: not in the cache %s (there is no cache)", norm,
                       dir);
  size_t found = 0;
  const char *busy = NULL;
  for (size_t i = 0; rc == 0 && i < m.n_roots; i++) {
    if (!matches(&m.roots[i], want, norm))
      continue;
    found++;
    if (!busy && fp_cache_pinned(m.c, m.roots[i].digest))
      busy = m.roots[i].reference;
  }
  if (rc == 0 && !found)
    rc = fpull_err_set(err, FPULL_ENOTFOUND, "%s: not in the cache %s", norm, dir);
  if (rc == 0 && busy)
    rc = fpull_err_set(err, FPULL_EFAIL,
                       "%s: a pull of it is running now; nothing removed (try again when it is "
                       "done)",
                       busy);
  struct fpull_cache_prune_result *res = rc == 0 ? result_new() : NULL;
  for (size_t i = 0; rc == 0 && i < m.n_roots; i++)
    if (matches(&m.roots[i], want, norm) && remove_image(&m, i, res))
      rc = fpull_err_set(err, FPULL_EFAIL, "%s: a pull of it started; it is kept",
                         m.roots[i].reference);
  if (res) {
    fp_cache_scan_records(m.c, &m.record_bytes, &m.record_count);
    res->size = model_total(&m);
  }
  if (m.c)
    model_free(&m);
  fpull_ref_free(want);
  if (rc) {
    fpull_cache_prune_result_free(res);
    return rc;
  }
  *out = res;
  return 0;
}
