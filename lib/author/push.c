/* `manifest push`: resolve the entries of a spec, copy foreign entries into the target
 * repository, and push the index. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "select/candidates.h"
#include "base/opts.h"
#include "base/digest.h"
#include "registry/blob_memory.h"
#include "fpull/config.h"
#include "fpull/features.h"
#include "fpull/ref.h"
#include "fpull/registry.h"
#include "fpull/spec.h"
#include "base/util.h"

/* Registries are opened once each: a spec usually names one or two. */
struct reg_slot {
  char *host;
  fpull_registry *reg;
};

struct pusher {
  const struct fpull_spec *spec;
  const struct fpull_push_opts *opts;
  struct reg_slot *regs;
  size_t n_regs;
  struct fpull_ref *target;
  fpull_registry *target_reg;
};

static void ref_freep(struct fpull_ref **r)
{
  fpull_ref_free(*r);
}
#define cleanup_ref __attribute__((cleanup(ref_freep)))

static void fetched_freep(struct fpull_fetched **f)
{
  fpull_fetched_free(*f);
}
#define cleanup_fetched __attribute__((cleanup(fetched_freep)))

static void index_freep(struct fpull_index **i)
{
  fpull_index_free(*i);
}

static void manifest_freep(struct fpull_manifest **m)
{
  fpull_manifest_free(*m);
}

static int open_reg(fpull_registry **out, struct pusher *p, const char *host, fpull_err *err)
{
  for (size_t i = 0; i < p->n_regs; i++)
    if (strcmp(p->regs[i].host, host) == 0) {
      *out = p->regs[i].reg;
      return 0;
    }
  /* Pushing never goes through mirrors: they are read-only caches. */
  struct fpull_registry_opts ro;
  fpull_registry_opts_init(&ro, host, p->opts->config, p->opts->insecure, p->opts->certs_dir);
  ro.mirrors = NULL;
  if (p->opts->version >= 2 && strcmp(host, p->target->registry) == 0) {
    ro.cert_dir = p->opts->cert_dir;
    ro.creds = p->opts->creds;
  }
  fpull_registry *r = NULL;
  int rc = fpull_registry_open(&r, host, &ro, err);
  if (rc)
    return rc;
  p->regs = fp_xrealloc(p->regs, (p->n_regs + 1) * sizeof *p->regs);
  p->regs[p->n_regs++] = (struct reg_slot){fp_xstrdup(host), r};
  *out = r;
  return 0;
}

static void pusher_clear(struct pusher *p)
{
  for (size_t i = 0; i < p->n_regs; i++) {
    fpull_registry_free(p->regs[i].reg);
    free(p->regs[i].host);
  }
  free(p->regs);
  fpull_ref_free(p->target);
}

/* ---- choosing a source index's entry ---- */

static int arch_eq(const char *a, const char *b)
{
  cleanup_free char *na = fpull_arch_normalise(a ? a : "");
  cleanup_free char *nb = fpull_arch_normalise(b ? b : "");
  return strcasecmp(na, nb) == 0;
}

static int str_eq_ci(const char *a, const char *b)
{
  if (!a || !b)
    return !a && !b;
  return strcasecmp(a, b) == 0;
}

static int same_feature_set(char *const *a, char *const *b)
{
  for (size_t i = 0; a && a[i]; i++) {
    int found = 0;
    for (size_t j = 0; b && b[j] && !found; j++)
      found = strcasecmp(a[i], b[j]) == 0;
    if (!found)
      return 0;
  }
  for (size_t j = 0; b && b[j]; j++) {
    int found = 0;
    for (size_t i = 0; a && a[i] && !found; i++)
      found = strcasecmp(a[i], b[j]) == 0;
    if (!found)
      return 0;
  }
  return 1;
}

/* As manifest-tool does: the entry with the spec's os, architecture and variant. Among
 * several, the one with the same features; without a variant in the spec and no entry
 * without one, the first for the os and architecture (arm64 indexes often say v8). */
static long pick_entry(const struct fpull_index *idx, const struct fpull_platform *want)
{
  long exact = -1, same_features = -1, any_variant = -1;
  for (size_t i = 0; i < idx->n_manifests; i++) {
    const struct fpull_descriptor *d = &idx->manifests[i];
    const struct fpull_platform *pl = d->platform;
    if (!pl || d->ref_type || !str_eq_ci(pl->os, want->os) ||
        !arch_eq(pl->architecture, want->architecture))
      continue;
    if (any_variant < 0)
      any_variant = (long)i;
    if (!str_eq_ci(pl->variant, want->variant))
      continue;
    if (exact < 0)
      exact = (long)i;
    if (same_features < 0 && same_feature_set(pl->features, want->features))
      same_features = (long)i;
  }
  if (same_features >= 0)
    return same_features;
  if (exact >= 0)
    return exact;
  return want->variant ? -1 : any_variant;
}

static void describe_platforms(char *buf, size_t sz, const struct fpull_index *idx)
{
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < idx->n_manifests && used + 1 < sz; i++) {
    const struct fpull_platform *pl = idx->manifests[i].platform;
    if (!pl)
      continue;
    int n = snprintf(buf + used, sz - used, "%s%s/%s%s%s", used ? ", " : "", pl->os,
                     pl->architecture, pl->variant ? "/" : "", pl->variant ? pl->variant : "");
    if (n < 0)
      break;
    used += (size_t)n;
  }
  if (used >= sz)
    buf[sz - 1] = '\0';
}

/* ---- copying blobs and manifests between repositories ---- */

struct file_sink {
  int fd;
  uint64_t written;
  struct fp_sha256 h;
};

static int sink_write(void *ud, const void *data, size_t len, fpull_err *err)
{
  struct file_sink *s = ud;
  const char *p = data;
  while (len) {
    ssize_t w = write(s->fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return fpull_err_set(err, FPULL_EFAIL, "writing a temporary file: %s", strerror(errno));
    fp_sha256_update(&s->h, p, (size_t)w);
    s->written += (uint64_t)w;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

static int sink_restart(void *ud, uint64_t offset, fpull_err *err)
{
  struct file_sink *s = ud;
  if (offset == s->written)
    return 0;
  if (offset != 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot resume a copy at byte %llu",
                         (unsigned long long)offset);
  if (ftruncate(s->fd, 0) < 0 || lseek(s->fd, 0, SEEK_SET) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "truncating a temporary file: %s", strerror(errno));
  s->written = 0;
  fp_sha256_reset(&s->h);
  return 0;
}

/* Downloads a blob into a temporary file, verifying digest and size, and uploads it. */
static int copy_blob(fpull_registry *from, const char *from_repo, fpull_registry *to,
                     const char *to_repo, const struct fpull_descriptor *d, fpull_err *err)
{
  const char *tmpdir = getenv("TMPDIR");
  cleanup_free char *path =
      fp_xasprintf("%s/fpull-push-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  struct file_sink s = {.fd = mkostemp(path, O_CLOEXEC)};
  if (s.fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "creating a temporary file in %s: %s",
                         tmpdir && *tmpdir ? tmpdir : "/tmp", strerror(errno));
  if (fp_hash_init(&s.h, d->digest) < 0) {
    close(s.fd);
    unlink(path);
    return fpull_err_set(err, FPULL_EFAIL, "sha256 unavailable");
  }
  struct fpull_blob_sink sink = {.ud = &s, .write = sink_write, .restart = sink_restart};
  int rc = fpull_registry_get_blob(from, from_repo, d->digest, 0, &sink, NULL, err);
  char got[FP_DIGEST_MAX] = "";
  if (rc == 0) {
    fp_hash_final(&s.h, got);
    if (strcmp(got, d->digest) != 0 || s.written != (uint64_t)d->size)
      rc = fpull_err_set(err, FPULL_EINTEGRITY, "blob %s: got %s, %llu bytes (expected %lld)",
                         d->digest, got, (unsigned long long)s.written, (long long)d->size);
  }
  fp_sha256_free(&s.h);
  close(s.fd);
  if (rc == 0)
    rc = fpull_registry_put_blob_file(to, to_repo, d->digest, path, err);
  unlink(path);
  return rc;
}

/* Foreign and non-distributable layers live elsewhere by definition: they are not copied. */
static int is_foreign(const char *media_type)
{
  return media_type && (strstr(media_type, ".foreign.") || strstr(media_type, "nondistributable"));
}

static int ensure_blob(struct pusher *p, fpull_registry *src, const struct fpull_ref *sref,
                       const struct fpull_descriptor *d, fpull_err *err)
{
  const char *repo = p->target->repository;
  int exists = 0, rc;
  if ((rc = fpull_registry_blob_exists(p->target_reg, repo, d->digest, &exists, err)))
    return rc;
  if (exists)
    return 0;
  if (strcmp(sref->registry, p->target->registry) == 0) {
    int mounted = 0;
    if ((rc = fpull_registry_mount_blob(p->target_reg, repo, d->digest, sref->repository, &mounted,
                                        err)))
      return rc;
    if (mounted)
      return 0;
  }
  fp_debug("copying blob %s from %s/%s", d->digest, sref->registry, sref->repository);
  return copy_blob(src, sref->repository, p->target_reg, repo, d, err);
}

static int copy_manifest(struct pusher *p, fpull_registry *src, const struct fpull_ref *sref,
                         const struct fpull_fetched *f, const struct fpull_manifest *m,
                         fpull_err *err)
{
  int rc = 0;
  if (!is_foreign(m->config.media_type))
    rc = ensure_blob(p, src, sref, &m->config, err);
  for (size_t i = 0; rc == 0 && i < m->n_layers; i++)
    if (!is_foreign(m->layers[i].media_type))
      rc = ensure_blob(p, src, sref, &m->layers[i], err);
  if (rc)
    return rc;
  cleanup_free char *pushed = NULL;
  rc = fpull_registry_put_manifest(p->target_reg, p->target->repository, f->digest, m->media_type,
                                   f->data, f->len, &pushed, err);
  if (rc)
    return rc;
  if (pushed && strcmp(pushed, f->digest) != 0)
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest %s was stored as %s", f->digest, pushed);
  return 0;
}

/* ---- a source index's candidates (candidates.h), read from its registry ---- */

struct src_io {
  fpull_registry *reg;
  const char *repo;
};

static int src_fetch_index(void *ud, const struct fpull_descriptor *d, struct fpull_index **out,
                           fpull_err *err)
{
  const struct src_io *s = ud;
  cleanup_fetched struct fpull_fetched *f = NULL;
  int rc = fpull_registry_get_manifest(&f, s->reg, s->repo, d->digest, err);
  return rc ? rc : fp_cand_read_index(d, f, out, err);
}

static int src_platform(void *ud, const struct fpull_descriptor *d, struct fpull_platform **out,
                        char **why, fpull_err *err)
{
  const struct src_io *s = ud;
  cleanup_fetched struct fpull_fetched *f = NULL;
  __attribute__((cleanup(manifest_freep))) struct fpull_manifest *m = NULL;
  int rc = fpull_registry_get_manifest(&f, s->reg, s->repo, d->digest, err);
  if (rc == 0)
    rc = fp_cand_check_doc(d, f, FPULL_DOC_MANIFEST, err);
  if (rc == 0)
    rc = fpull_manifest_parse(&m, f->data, f->len, f->content_type, err);
  if (rc)
    return rc;
  int invalid = 0;
  char *no = fpull_manifest_not_image(m, &invalid);
  if (no) {
    *why = fp_xasprintf("not a container image: %s", no);
    free(no);
    return 0;
  }
  if (m->config.size > (int64_t)FPULL_MANIFEST_MAX)
    return fpull_err_set(err, FPULL_EINTEGRITY, "config %s is larger than 4 MiB", m->config.digest);
  cleanup_free char *cfg = NULL;
  size_t len = 0;
  uint64_t got = 0;
  struct fpull_image_config *c = NULL;
  rc = fp_blob_fetch_memory(s->reg, s->repo, &m->config, &cfg, &len, &got, err);
  if (rc == 0)
    rc = fpull_image_config_parse(&c, cfg, len, err);
  if (rc == 0)
    *out = fp_cand_platform_of(c);
  fpull_image_config_free(c);
  return rc;
}

/* The entries of the source index that may be listed: nested indexes followed, entries
 * without platform given their config's, non-images passed over. view holds c's
 * descriptors without owning them. */
static int src_candidates(struct fp_cands *c, struct fpull_index *view, fpull_registry *reg,
                          const char *repo, const struct fpull_index *idx, const char *digest,
                          fpull_err *err)
{
  struct src_io s = {reg, repo};
  const struct fp_cand_io io = {.ud = &s, .fetch_index = src_fetch_index, .platform = src_platform};
  int rc = fp_cands_build(c, idx, digest, &io, err);
  if (rc)
    return rc;
  view->manifests = fp_xcalloc(c->n ? c->n : 1, sizeof *view->manifests);
  for (size_t i = 0; i < c->n; i++)
    if (!c->c[i].skip)
      view->manifests[view->n_manifests++] = c->d[i];
  return 0;
}

/* ---- one entry ---- */

/* An entry resolved: what copying it needs, kept until every entry is resolved. */
struct resolved {
  struct fpull_ref *sref;
  fpull_registry *src; /* the pusher's */
  struct fpull_fetched *f;
  struct fpull_manifest *m;
};

static void resolved_clear(struct resolved *r)
{
  fpull_ref_free(r->sref);
  fpull_fetched_free(r->f);
  fpull_manifest_free(r->m);
  memset(r, 0, sizeof *r);
}

/* Resolves entry e into out (and *copied: it is in another repository) without writing
 * anything: every entry is resolved before the first is copied, so that a missing later
 * entry leaves the target repository as it was (issue 43.11). */
static int resolve_entry(struct pusher *p, const struct fpull_spec_entry *e,
                         struct fpull_descriptor *out, int *copied, struct resolved *keep,
                         fpull_err *err)
{
  cleanup_ref struct fpull_ref *sref = NULL;
  int rc = fpull_ref_parse(&sref, e->image, err);
  if (rc)
    return rc;
  fpull_registry *src = NULL;
  if ((rc = open_reg(&src, p, sref->registry, err)))
    return rc;
  cleanup_fetched struct fpull_fetched *f = NULL;
  const char *ref = sref->digest ? sref->digest : sref->tag;
  if ((rc = fpull_registry_get_manifest(&f, src, sref->repository, ref, err)))
    return rc;
  int kind = 0;
  if ((rc = fpull_doc_kind(&kind, f->data, f->len, f->content_type, err)))
    return rc;
  if (kind == FPULL_DOC_INDEX) {
    __attribute__((cleanup(index_freep))) struct fpull_index *idx = NULL;
    if ((rc = fpull_index_parse(&idx, f->data, f->len, f->content_type, err)))
      return rc;
    struct fp_cands cands;
    struct fpull_index view = {0};
    if ((rc = src_candidates(&cands, &view, src, sref->repository, idx, f->digest, err)))
      return rc;
    long pick = pick_entry(&view, &e->platform);
    cleanup_free char *digest = NULL;
    struct fpull_descriptor chosen = {0};
    if (pick >= 0) {
      digest = fp_xstrdup(view.manifests[pick].digest);
      chosen.digest = digest;
      chosen.size = view.manifests[pick].size;
      chosen.media_type = view.manifests[pick].media_type;
    }
    if (pick < 0) {
      char have[512];
      describe_platforms(have, sizeof have, &view);
      free(view.manifests);
      fp_cands_free(&cands);
      return fpull_err_set(err, FPULL_EUSAGE, "the index has no entry for %s/%s%s%s (it has: %s)",
                           e->platform.os, e->platform.architecture, e->platform.variant ? "/" : "",
                           e->platform.variant ? e->platform.variant : "", have);
    }
    fpull_fetched_free(f);
    f = NULL;
    rc = fpull_registry_get_manifest(&f, src, sref->repository, digest, err);
    if (rc == 0)
      rc = fp_cand_check_doc(&chosen, f, FPULL_DOC_MANIFEST, err);
    free(view.manifests);
    fp_cands_free(&cands);
    if (rc)
      return rc;
    kind = FPULL_DOC_MANIFEST;
  }
  if (kind == FPULL_DOC_SCHEMA1)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "%s is a Docker schema 1 manifest, which cannot be listed in an index; "
                         "push it again with a current client",
                         e->image);
  if (kind != FPULL_DOC_MANIFEST)
    return fpull_err_set(err, FPULL_EUSAGE, "%s is not an image manifest", e->image);
  __attribute__((cleanup(manifest_freep))) struct fpull_manifest *m = NULL;
  if ((rc = fpull_manifest_parse(&m, f->data, f->len, f->content_type, err)))
    return rc;

  *copied = strcmp(sref->registry, p->target->registry) != 0 ||
            strcmp(sref->repository, p->target->repository) != 0;
  out->media_type = fp_xstrdup(m->media_type);
  out->digest = fp_xstrdup(f->digest);
  out->size = (int64_t)f->len;
  out->platform = fpull_platform_dup(&e->platform);
  keep->src = src;
  keep->sref = steal_pointer(&sref);
  keep->f = steal_pointer(&f);
  keep->m = steal_pointer(&m);
  return 0;
}

static int copy_entry(struct pusher *p, const struct fpull_spec_entry *e, struct resolved *r,
                      fpull_err *err)
{
  fp_info("copying %s into %s/%s", e->image, p->target->registry, p->target->repository);
  return copy_manifest(p, r->src, r->sref, r->f, r->m, err);
}

void fpull_push_result_free(struct fpull_push_result *r)
{
  if (!r)
    return;
  for (size_t i = 0; i < r->n_manifests; i++) {
    free(r->manifests[i].media_type);
    free(r->manifests[i].digest);
    fpull_platform_free(r->manifests[i].platform);
    free(r->manifests[i].ref_type);
  }
  free(r->manifests);
  free(r->reference);
  free(r->digest);
  free(r->media_type);
  free(r);
}

static void result_freep(struct fpull_push_result **r)
{
  fpull_push_result_free(*r);
}

static void pusher_clearp(struct pusher *p)
{
  pusher_clear(p);
}

static int push_tags(struct pusher *p, struct fpull_push_result *res, const char *bytes, size_t len,
                     fpull_err *err)
{
  const char *repo = p->target->repository;
  cleanup_free char *digest = NULL;
  int rc = fpull_registry_put_manifest(p->target_reg, repo, p->target->tag, res->media_type, bytes,
                                       len, &digest, err);
  if (rc)
    return fpull_err_prefix(err, "pushing %s", res->reference);
  for (size_t i = 0; p->spec->tags && p->spec->tags[i]; i++) {
    rc = fpull_registry_put_manifest(p->target_reg, repo, p->spec->tags[i], res->media_type, bytes,
                                     len, NULL, err);
    if (rc)
      return fpull_err_prefix(err, "pushing %s/%s:%s", p->target->registry, repo, p->spec->tags[i]);
  }
  if (digest && strcmp(digest, res->digest) != 0)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: the registry stored the index as %s, not %s",
                         res->reference, digest, res->digest);
  return 0;
}

int fpull_spec_push(struct fpull_push_result **out, const struct fpull_spec *spec,
                    const struct fpull_push_opts *opts, fpull_err *err)
{
  *out = NULL;
  struct fpull_push_opts defaults = FPULL_PUSH_OPTS_INIT;
  if (!opts)
    opts = &defaults;
  int vrc = FP_OPTS_CHECK(opts, FPULL_PUSH_OPTS, "fpull_push_opts", err);
  if (vrc)
    return vrc;
  __attribute__((cleanup(pusher_clearp))) struct pusher p = {.spec = spec, .opts = opts};
  int rc = fpull_ref_parse(&p.target, spec->image, err);
  if (rc)
    return fpull_err_prefix(err, "%s", spec->name);
  if (p.target->digest || !p.target->tag)
    return fpull_err_set(err, FPULL_EUSAGE, "%s: the target %s must name a tag", spec->name,
                         spec->image);
  if ((rc = open_reg(&p.target_reg, &p, p.target->registry, err)))
    return rc;

  __attribute__((cleanup(result_freep))) struct fpull_push_result *res = fp_xcalloc(1, sizeof *res);
  res->reference = fpull_ref_format(p.target);
  res->manifests = fp_xcalloc(spec->n_entries + 1, sizeof *res->manifests);
  struct resolved *keep = fp_xcalloc(spec->n_entries + 1, sizeof *keep);
  int *copied = fp_xcalloc(spec->n_entries + 1, sizeof *copied);
  /* Every entry first, then the copies: nothing is written for a spec that cannot be
   * pushed. */
  for (size_t i = 0; rc == 0 && i < spec->n_entries; i++) {
    const struct fpull_spec_entry *e = &spec->entries[i];
    rc = resolve_entry(&p, e, &res->manifests[i], &copied[i], &keep[i], err);
    if (rc) {
      fpull_err_prefix(err, "%s:%u:%u: %s", spec->name, e->line, e->column, e->image);
      break;
    }
    res->n_manifests++;
    res->copied += (size_t)copied[i];
    if (opts->type == FPULL_PUSH_DOCKER &&
        strcmp(res->manifests[i].media_type, FPULL_MT_DOCKER_MANIFEST) != 0)
      fp_warn("%s:%u:%u: %s is %s, not a Docker manifest, in a Docker manifest list", spec->name,
              e->line, e->column, e->image, res->manifests[i].media_type);
  }
  for (size_t i = 0; rc == 0 && i < spec->n_entries; i++) {
    const struct fpull_spec_entry *e = &spec->entries[i];
    if (copied[i] && (rc = copy_entry(&p, e, &keep[i], err)))
      fpull_err_prefix(err, "%s:%u:%u: %s", spec->name, e->line, e->column, e->image);
  }
  for (size_t i = 0; i < spec->n_entries; i++)
    resolved_clear(&keep[i]);
  free(keep);
  free(copied);
  if (rc)
    return rc;

  size_t len = 0;
  cleanup_free char *bytes = fpull_index_build(res->manifests, res->n_manifests, opts->type, &len);
  res->media_type =
      fp_xstrdup(opts->type == FPULL_PUSH_DOCKER ? FPULL_MT_DOCKER_LIST : FPULL_MT_OCI_INDEX);
  res->digest = fpull_digest_of(bytes, len);
  res->size = (int64_t)len;
  if ((rc = push_tags(&p, res, bytes, len, err)))
    return rc;
  *out = steal_pointer(&res);
  return 0;
}
