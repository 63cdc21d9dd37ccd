/* Resolving a reference: top document (by tag or digest, online or from the cache),
 * the index entry for the target, the manifest and its config. */
#include <string.h>

#include "cache/cache_use.h"
#include "cache/cache_verified.h"
#include "registry/blob_memory.h"
#include "base/opts.h"
#include "select/preflight.h"
#include "resolve.h"
#include "base/digest.h"
#include "base/util.h"
#include "fpull/config.h"
#include "fpull/features.h"
#include "fpull/manifest.h"
#include "fpull/match.h"

static int session_open(struct fp_session *s, const char *image, const struct fpull_pull_opts *o,
                        int cache_optional, fpull_err *err)
{
  memset(s, 0, sizeof *s);
  s->opts = o;
  int rc = FP_OPTS_CHECK(o, FPULL_PULL_OPTS, "fpull_pull_opts", err);
  if (rc)
    return rc;
  rc = fpull_ref_parse(&s->ref, image, err);
  if (rc)
    return rc;
  s->reference = fpull_ref_format(s->ref);
  rc = fp_sig_session_open(s, err);
  if (rc)
    return rc;
  if (!cache_optional || o->offline || o->cache_dir)
    rc = fpull_cache_open_with_shared(&s->cache, o->cache_dir, o->config, err);
  if (rc)
    return rc;
  /* Under a policy someone named (a site's, with --policy and --require-signatures) every
   * blob is hashed: records are the user's own to forge. */
  if (s->policy && s->policy_named)
    fp_verified_distrust(s->cache);
  /* What this session uses is pinned against fpull cache prune|rm until it closes. */
  fp_cache_pins_open(s->cache);
  if (o->offline)
    return 0;
  struct fpull_registry_opts ro;
  fpull_registry_opts_init(&ro, s->ref->registry, o->config, o->insecure, o->certs_dir);
  ro.cert_dir = o->version >= 2 ? o->cert_dir : NULL;
  ro.creds = o->version >= 2 ? o->creds : NULL;
  return fpull_registry_open(&s->reg, s->ref->registry, &ro, err);
}

int fp_session_open(struct fp_session *s, const char *image, const struct fpull_pull_opts *o,
                    fpull_err *err)
{
  return session_open(s, image, o, 0, err);
}

int fp_session_open_inspect(struct fp_session *s, const char *image,
                            const struct fpull_pull_opts *o, fpull_err *err)
{
  return session_open(s, image, o, 1, err);
}

void fp_session_close(struct fp_session *s)
{
  fp_sig_session_close(s);
  fpull_registry_free(s->reg);
  fpull_cache_free(s->cache);
  fpull_ref_free(s->ref);
  free(s->reference);
  memset(s, 0, sizeof *s);
}

void fp_resolved_free(struct fp_resolved *r)
{
  free(r->index_digest);
  fpull_match_free(r->match);
  free(r->manifest_digest);
  fpull_manifest_free(r->manifest);
  fpull_image_config_free(r->config);
  free(r->config_json);
  fpull_platform_free(r->platform);
  free(r->preflight_why);
  fpull_sig_check_free(r->sig);
  for (size_t i = 0; r->cands && r->index && i < r->index->n_manifests; i++)
    free(r->cands[i].skip);
  free(r->cands);
  fpull_index_free(r->index);
  memset(r, 0, sizeof *r);
}

/* A manifest or index by tag or digest: from the registry (kept in the cache, tag
 * recorded for --offline) or, offline, from the cache alone. */
static int fetch_document(struct fp_session *s, const char *tag_or_digest,
                          struct fpull_fetched **out, fpull_err *err)
{
  int by_digest = fpull_digest_valid(tag_or_digest);
  /* A document named by its digest is the same wherever it comes from: one the cache
   * holds (checked against the digest below) costs the registry nothing, so that a job's
   * nodes pulling its pinned index ask the registry for nothing once a node or an earlier
   * step cached it (issue 41), as its layers never were asked for twice. */
  if (s->reg && by_digest && s->cache && fpull_cache_has_blob(s->cache, tag_or_digest, -1)) {
    fpull_err e = {0};
    struct fpull_fetched *f = fp_xcalloc(1, sizeof *f);
    if (fpull_cache_get_bytes(s->cache, tag_or_digest, FPULL_MANIFEST_MAX, &f->data, &f->len, &e) ==
        0) {
      f->digest = fp_digest_of_like(tag_or_digest, f->data, f->len);
      if (strcmp(f->digest, tag_or_digest) == 0) {
        fp_cache_pin(s->cache, f->digest);
        *out = f;
        return 0;
      }
    }
    fpull_fetched_free(f); /* unreadable or not what it should be: the registry's then */
  }
  if (s->reg) {
    int rc = fpull_registry_get_manifest(out, s->reg, s->ref->repository, tag_or_digest, err);
    if (rc || !s->cache)
      return rc;
    fp_cache_pin(s->cache, (*out)->digest);
    if (fp_sig_enforced(s)) {
      /* Into the cache only once the policy accepted the image (fp_sig_commit). */
      cleanup_free char *tagref =
          by_digest ? NULL
                    : fp_xasprintf("%s/%s:%s", s->ref->registry, s->ref->repository, tag_or_digest);
      fp_sig_defer(s, (*out)->digest, (*out)->data, (*out)->len, tagref);
      return 0;
    }
    rc = fpull_cache_put_bytes(s->cache, (*out)->digest, (*out)->data, (*out)->len, err);
    if (rc == 0 && !by_digest) {
      cleanup_free char *tagref =
          fp_xasprintf("%s/%s:%s", s->ref->registry, s->ref->repository, tag_or_digest);
      rc = fpull_cache_tag_record(s->cache, tagref, (*out)->digest, err);
    }
    return rc;
  }
  cleanup_free char *digest = NULL;
  if (by_digest) {
    digest = fp_xstrdup(tag_or_digest);
  } else {
    cleanup_free char *tagref =
        fp_xasprintf("%s/%s:%s", s->ref->registry, s->ref->repository, tag_or_digest);
    fpull_err e = {0};
    if (fpull_cache_tag_lookup(s->cache, tagref, &digest, &e) != 0)
      return fpull_err_set(err, FPULL_ENOTFOUND, "tag %s is not in the cache (--offline)",
                           tag_or_digest);
  }
  fp_cache_pin(s->cache, digest);
  struct fpull_fetched *f = fp_xcalloc(1, sizeof *f);
  fpull_err e = {0};
  if (fpull_cache_get_bytes(s->cache, digest, FPULL_MANIFEST_MAX, &f->data, &f->len, &e) != 0) {
    fpull_fetched_free(f);
    return fpull_err_set(err, FPULL_ENOTFOUND, "manifest %s is not in the cache (--offline)",
                         digest);
  }
  f->digest = fp_digest_of_like(digest, f->data, f->len);
  if (strcmp(f->digest, digest) != 0) {
    fpull_fetched_free(f);
    return fpull_err_set(err, FPULL_EINTEGRITY, "cached manifest %s does not match its digest",
                         digest);
  }
  *out = f;
  return 0;
}

static int fetch_small_blob(struct fp_session *s, const struct fpull_descriptor *d, char **data,
                            size_t *len, fpull_err *err)
{
  if (d->size > (int64_t)FPULL_MANIFEST_MAX)
    return fpull_err_set(err, FPULL_EINTEGRITY, "config %s is larger than 4 MiB", d->digest);
  if (!s->cache) /* inspect without a cache: verified in memory */
    return fp_blob_fetch_memory(s->reg, s->ref->repository, d, data, len, &s->bytes_downloaded,
                                err);
  int rc = fp_fetch_blob(s, d, NULL, NULL, err);
  if (rc)
    return rc;
  return fpull_cache_get_bytes(s->cache, d->digest, FPULL_MANIFEST_MAX, data, len, err);
}

/* why: when not NULL, the GPU preflight runs over the config and says here why the image
 * may not run on the target (NULL when it may). */
static int load_manifest(struct fp_session *s, struct fp_resolved *r, const struct fpull_fetched *f,
                         char **why, char **not_image, fpull_err *err)
{
  int rc = fpull_manifest_parse(&r->manifest, f->data, f->len, f->content_type, err);
  if (rc)
    return rc;
  /* The whole image stays while this session runs, the layers not reached yet included. */
  fp_cache_pin(s->cache, r->manifest->config.digest);
  for (size_t i = 0; i < r->manifest->n_layers; i++)
    fp_cache_pin(s->cache, r->manifest->layers[i].digest);
  r->manifest_digest = fp_xstrdup(f->digest);
  /* An artifact is not an image, and nothing of it is fetched: in an index it is passed
   * over (not_image), alone it is the invalid-content code. */
  int invalid = 0;
  char *no = fpull_manifest_not_image(r->manifest, &invalid);
  if (no && not_image && !invalid) {
    *not_image = no;
    return 0;
  }
  if (no) {
    rc = fpull_err_set(err, FPULL_EUNSAFE, "manifest %s is not a container image: %s",
                       r->manifest_digest, no);
    free(no);
    return rc;
  }
  /* The policy decides before anything of the image but its manifests is fetched. */
  fpull_sig_check_free(r->sig);
  r->sig = NULL;
  rc = fp_sig_check_manifest(s, f->digest, f->data, f->len, r->index_digest, &r->sig, err);
  if (rc == 0)
    rc = fp_sig_commit(s, err);
  if (rc)
    return rc;
  cleanup_free char *cfg = NULL;
  size_t cfg_len = 0;
  rc = fetch_small_blob(s, &r->manifest->config, &cfg, &cfg_len, err);
  if (rc)
    return fpull_err_prefix(err, "config %s", r->manifest->config.digest);
  rc = fpull_image_config_parse(&r->config, cfg, cfg_len, err);
  if (rc)
    return fpull_err_prefix(err, "config %s", r->manifest->config.digest);
  free(r->config_json);
  r->config_len = cfg_len;
  r->config_json = fp_xmalloc(cfg_len + 1);
  memcpy(r->config_json, cfg, cfg_len);
  r->config_json[cfg_len] = '\0';
  if (why && !fp_preflight_config(cfg, cfg_len, s->opts->target, why))
    return 0;
  size_t nd = fpull_strv_len(r->config->diff_ids);
  if (nd != r->manifest->n_layers)
    return fpull_err_set(err, FPULL_EINTEGRITY,
                         "manifest %s has %zu layers but its config lists %zu diff_ids",
                         r->manifest_digest, r->manifest->n_layers, nd);
  return 0;
}

static int check_single_platform(struct fp_resolved *r, const struct fpull_target *t,
                                 fpull_err *err)
{
  struct fpull_platform *p = fp_xcalloc(1, sizeof *p);
  p->os = fp_xstrdup(r->config->os);
  p->architecture = fp_xstrdup(r->config->architecture);
  p->variant = fp_xstrdup(r->config->variant);
  r->platform = p;
  cleanup_free char *arch = fpull_arch_normalise(p->architecture ? p->architecture : "");
  if ((p->os && strcmp(p->os, t->os) != 0) || (p->architecture && strcmp(arch, t->architecture)))
    return fpull_err_set(err, FPULL_ENOMATCH, "the image is for %s/%s, the target is %s/%s",
                         p->os ? p->os : "?", p->architecture, t->os, t->architecture);
  return 0;
}

/* Entry i failed the preflight: no longer eligible, the ones ranked below it move up. */
static void reject_entry(struct fpull_match *m, size_t i, char *why)
{
  struct fpull_match_entry *e = &m->entries[i];
  int rank = e->rank;
  e->eligible = 0;
  e->rank = 0;
  free(e->why);
  e->why = why;
  m->chosen = -1;
  for (size_t k = 0; k < m->n; k++) {
    if (m->entries[k].rank > rank)
      m->entries[k].rank--;
    if (m->entries[k].rank == 1)
      m->chosen = (long)k;
  }
}

/* Entry i is no candidate (candidates.h): never eligible, and the reason is why. */
static void pass_over(struct fpull_match *m, size_t i, const char *why)
{
  if (m->entries[i].eligible) {
    reject_entry(m, i, fp_xstrdup(why));
    return;
  }
  free(m->entries[i].why);
  m->entries[i].why = fp_xstrdup(why);
}

/* --offline and the chosen entry is missing: name the entry (digest, platform, features),
 * since the cache may well hold the entries of other node kinds, and say how to fetch it. */
static int offline_hint(struct fp_session *s, const struct fpull_descriptor *d, fpull_err *err)
{
  const struct fpull_platform *p = d->platform;
  char plat[160] = "no platform", feats[512] = "";
  if (p)
    snprintf(plat, sizeof plat, "%s/%s%s%s", p->os, p->architecture, p->variant ? "/" : "",
             p->variant ? p->variant : "");
  for (size_t i = 0; p && p->features && p->features[i]; i++) {
    size_t l = strlen(feats);
    snprintf(feats + l, sizeof feats - l, "%s%s", l ? "," : "", p->features[i]);
  }
  /* What is missing, when it is not the entry's manifest itself (its config, say). */
  cleanup_free char *was = NULL;
  if (err && !strstr(err->msg, d->digest))
    was = fp_xasprintf(" (%s)", err->msg);
  const struct fpull_target *t = s->opts->target;
  cleanup_free char *how = feats[0]
                               ? fp_xasprintf("--features %s", feats)
                               : (p ? fp_xasprintf("--platform %s", plat)
                                    : fp_xasprintf("--platform %s/%s", t->os, t->architecture));
  /* The commands to type fill the same cache: the user's --cache-dir goes into them when
   * it is not where a command without one would look (issue 43.11). */
  cleanup_free char *dflt = fpull_cache_resolve_dir(NULL, s->opts->config);
  const char *cd = s->opts->cache_dir;
  cleanup_free char *in =
      cd && (!dflt || strcmp(cd, dflt) != 0) ? fp_xasprintf("--cache-dir %s ", cd) : NULL;
  return fpull_err_set(err, FPULL_ENOTFOUND,
                       "the entry for this target, %s (%s, features: %s), is not in the cache "
                       "(--offline)%s; fetch it with 'fpull prefetch --all %s%s' or "
                       "'fpull prefetch %s%s %s'",
                       d->digest, plat, feats[0] ? feats : "none", was ? was : "", in ? in : "",
                       s->reference, in ? in : "", how, s->reference);
}

/* The document an index entry names, which must be what the entry says (want: a
 * FPULL_DOC_ kind) and of the entry's size; the digest was checked as it was fetched. *f
 * is set even when it fails, for the caller to free. */
static int fetch_entry_doc(struct fp_session *s, const struct fpull_descriptor *d, int want,
                           struct fpull_fetched **f, fpull_err *err)
{
  int rc = fetch_document(s, d->digest, f, err);
  return rc ? rc : fp_cand_check_doc(d, *f, want, err);
}

static int fetch_entry_manifest(struct fp_session *s, const struct fpull_descriptor *d,
                                struct fpull_fetched **f, fpull_err *err)
{
  return fetch_entry_doc(s, d, FPULL_DOC_MANIFEST, f, err);
}

/* ---- the candidates of an index (candidates.h), through the session ---- */

static int cand_fetch_index(void *ud, const struct fpull_descriptor *d, struct fpull_index **out,
                            fpull_err *err)
{
  struct fp_session *s = ud;
  struct fpull_fetched *f = NULL;
  int rc = fetch_document(s, d->digest, &f, err);
  if (rc == 0)
    rc = fp_cand_read_index(d, f, out, err);
  fpull_fetched_free(f);
  return rc;
}

/* An entry without platform: its manifest and config say (as containerd reads them). */
static int cand_platform(void *ud, const struct fpull_descriptor *d, struct fpull_platform **out,
                         char **why, fpull_err *err)
{
  struct fp_session *s = ud;
  struct fp_resolved r = {0};
  struct fpull_fetched *f = NULL;
  *out = NULL;
  int rc = fetch_entry_manifest(s, d, &f, err);
  if (rc == 0)
    rc = load_manifest(s, &r, f, NULL, why, err);
  if (rc == 0 && !*why)
    rc = fp_cand_check_media_type(d, r.manifest->media_type, err);
  fpull_fetched_free(f);
  if (rc == 0 && *why) {
    char *no = *why;
    *why = fp_xasprintf("not a container image: %s", no);
    free(no);
  }
  /* What cannot be had, or fails its checks, leaves the platform unknown: passed over, as
   * the entry of another platform would be (an entry that is not chosen never fails the
   * index); a pull that needs it names what fits instead. */
  if (rc == FPULL_ENOTFOUND || rc == FPULL_EINTEGRITY || rc == FPULL_EUNSAFE) {
    *why = fp_xasprintf("no platform, and its manifest or config cannot be had: %s", err->msg);
    fpull_err_clear(err);
    rc = 0;
  }
  if (rc == 0 && !*why)
    *out = fp_cand_platform_of(r.config);
  fp_resolved_free(&r);
  return rc ? fpull_err_prefix(err, "entry %s", d->digest) : 0;
}

/* r->index flattened in place: nested indexes followed, entries without a platform given
 * their config's, and every row the ranking must pass over marked in r->cands. */
static int flatten(struct fp_session *s, struct fp_resolved *r, fpull_err *err)
{
  struct fp_cand_io io = {.ud = s, .fetch_index = cand_fetch_index, .platform = cand_platform};
  struct fp_cands c;
  int rc = fp_cands_build(&c, r->index, r->index_digest, &io, err);
  if (rc)
    return rc;
  struct fpull_index *old = fp_xcalloc(1, sizeof *old);
  old->manifests = r->index->manifests;
  old->n_manifests = r->index->n_manifests;
  fpull_index_free(old);
  r->index->manifests = c.d;
  r->index->n_manifests = c.n;
  r->cands = c.c;
  return 0;
}

static void pass_over(struct fpull_match *m, size_t i, const char *why);

/* Fetches the manifest and config of the chosen entry; with gpu, while its config fails the
 * preflight, marks it and goes on with the next. chosen is -1 when none is left. */
static int follow_chosen(struct fp_session *s, struct fp_resolved *r, int gpu, fpull_err *err)
{
  while (r->match->chosen >= 0) {
    const struct fpull_descriptor *d = &r->index->manifests[r->match->chosen];
    struct fpull_fetched *f = NULL;
    int rc = fetch_entry_manifest(s, d, &f, err);
    char *why = NULL, *no = NULL;
    if (rc == 0)
      rc = load_manifest(s, r, f, gpu ? &why : NULL, &no, err);
    if (rc == 0 && !no)
      rc = fp_cand_check_media_type(d, r->manifest->media_type, err);
    if (no) {
      why = fp_xasprintf("not a container image: %s", no);
      free(no);
    }
    fpull_fetched_free(f);
    if (rc == FPULL_ENOTFOUND && !s->reg)
      rc = offline_hint(s, d, err);
    if (rc || !why) {
      if (rc == 0)
        r->platform = fpull_platform_dup(d->platform);
      return rc;
    }
    fp_debug("%s: entry %s: %s", s->reference, d->digest, why);
    reject_entry(r->match, (size_t)r->match->chosen, why);
    free(r->manifest_digest);
    r->manifest_digest = NULL;
    fpull_manifest_free(r->manifest);
    r->manifest = NULL;
    fpull_image_config_free(r->config);
    r->config = NULL;
    free(r->config_json);
    r->config_json = NULL;
  }
  return 0;
}

/* --platform on the host's own architecture constrains the target (contract v5): say so
 * when the host's own features would have chosen another entry. */
static void note_host_choice(struct fp_session *s, const struct fp_resolved *r)
{
  const struct fpull_target *t = s->opts->target, *h = t->host;
  struct fpull_match *m = NULL;
  fpull_err e = {0};
  /* Features given replace the host's on purpose (preparing for another node type): no
   * note then, only the no-fit error names what they dropped. */
  int src = 0;
  if (h && (fpull_featureset_count(t->features) == 0 ||
            (fpull_featureset_get(t->features, 0, &src) && src == FPULL_SRC_CLI)))
    return;
  if (!h || fpull_match_entries(&m, h, r->index->manifests, r->index->n_manifests, s->opts->tagdb,
                                &e) != 0)
    return;
  for (size_t i = 0; i < r->index->n_manifests; i++)
    if (r->cands[i].skip)
      pass_over(m, i, r->cands[i].skip);
  if (m->chosen >= 0 && m->chosen != r->match->chosen)
    fp_info("note: %s: --platform %s/%s%s%s chose %s; this host's own features (%s/%s%s%s) "
            "would choose %s",
            s->reference, t->os, t->architecture, t->variant ? "/" : "",
            t->variant ? t->variant : "", r->index->manifests[r->match->chosen].digest, h->os,
            h->architecture, h->variant ? "/" : "", h->variant ? h->variant : "",
            r->index->manifests[m->chosen].digest);
  fpull_match_free(m);
}

int fp_fetch_document(struct fp_session *s, const char *tag_or_digest, struct fpull_fetched **out,
                      fpull_err *err)
{
  return fetch_document(s, tag_or_digest, out, err);
}

int fp_resolve(struct fp_session *s, struct fp_resolved *r, int index_only, fpull_err *err)
{
  memset(r, 0, sizeof *r);
  const char *top = s->ref->digest ? s->ref->digest : s->ref->tag;
  struct fpull_fetched *f = NULL;
  int rc = fetch_document(s, top, &f, err);
  if (rc)
    return rc;
  rc = fp_resolve_top(s, r, f, index_only, err);
  fpull_fetched_free(f);
  return rc;
}

int fp_resolve_top(struct fp_session *s, struct fp_resolved *r, const struct fpull_fetched *f,
                   int index_only, fpull_err *err)
{
  memset(r, 0, sizeof *r);
  int kind = 0;
  int rc = fpull_doc_kind(&kind, f->data, f->len, f->content_type, err);
  if (rc == 0 && kind == FPULL_DOC_SCHEMA1)
    rc = fpull_err_set(err, FPULL_EUNSAFE, FPULL_SCHEMA1_MESSAGE);
  if (rc == 0 && kind == FPULL_DOC_UNKNOWN)
    rc = fpull_err_set(err, FPULL_EUNSAFE, "unknown manifest media type %s",
                       f->content_type ? f->content_type : "(none)");
  if (rc == 0 && kind == FPULL_DOC_MANIFEST) {
    rc = load_manifest(s, r, f, &r->preflight_why, NULL, err);
    if (rc == 0)
      rc = check_single_platform(r, s->opts->target, err);
    if (rc == 0 && r->preflight_why)
      rc = fpull_err_set(err, FPULL_ENOMATCH, "the image %s", r->preflight_why);
  }
  if (rc == 0 && kind == FPULL_DOC_INDEX) {
    r->index_digest = fp_xstrdup(f->digest);
    rc = fpull_index_parse(&r->index, f->data, f->len, f->content_type, err);
    if (rc == 0)
      rc = flatten(s, r, err);
    if (rc == 0)
      rc = fpull_match_entries(&r->match, s->opts->target, r->index->manifests,
                               r->index->n_manifests, s->opts->tagdb, err);
    for (size_t i = 0; rc == 0 && i < r->index->n_manifests; i++)
      if (r->cands[i].skip)
        pass_over(r->match, i, r->cands[i].skip);
    if (rc == 0 && r->match->chosen < 0 && !index_only)
      rc = fpull_match_no_fit(r->match, r->index->manifests, 0, s->opts->target, err);
    /* The GPU preflight walks the ranking: only the configs of entries that would be
     * chosen are fetched, the best first, the next when it fails. inspect (index_only)
     * follows entries only for it. */
    struct fp_gpu_facts g;
    int gpu = fp_gpu_facts_from_target(&g, s->opts->target);
    if (rc == 0 && !index_only)
      rc = follow_chosen(s, r, gpu, err);
    if (rc == 0 && index_only && gpu && follow_chosen(s, r, gpu, err) != 0) {
      /* inspect lists what it can: an entry whose config cannot be had (--offline without
       * it, say) stays as the index ranks it; pull reports the failure where it matters. */
      fp_debug("%s: GPU preflight stopped: %s", s->reference, err->msg);
      fpull_err_clear(err);
    }
    if (rc == 0 && r->match->chosen < 0 && !index_only)
      rc = fpull_match_no_fit(r->match, r->index->manifests, 0, s->opts->target, err);
    if (rc == 0 && r->match->chosen >= 0)
      note_host_choice(s, r);
  }
  return rc;
}

int fp_fetch_blob(struct fp_session *s, const struct fpull_descriptor *d, int *fd,
                  struct fp_progress *pg, fpull_err *err)
{
  uint64_t size = (uint64_t)d->size;
  if (fd)
    *fd = -1;
  fp_cache_pin(s->cache, d->digest);
  /* A cached blob is re-hashed on every use, since the cache may be shared (unless it is
   * our own cache's, only we can write it, and our record says it is the very file we
   * verified: cache/cache_verified.h): a corrupt one is removed by the check and fetched
   * again, never extracted. */
  if (fpull_cache_has_blob(s->cache, d->digest, d->size)) {
    fpull_err verr = {0};
    int vrc = fd ? fpull_cache_open_verified(fd, s->cache, d->digest, d->size, &verr)
                 : fpull_cache_verify_blob(s->cache, d->digest, d->size, &verr);
    if (vrc == 0) {
      __atomic_add_fetch(&s->bytes_from_cache, size, __ATOMIC_RELAXED);
      fp_progress_cached(pg, d);
      return 0;
    }
    if (vrc != FPULL_EINTEGRITY) {
      *err = verr;
      return vrc;
    }
    fp_warn("%s: cached blob %s was corrupt; fetching it again", s->reference, d->digest);
  }
  if (!s->reg)
    return fpull_err_set(err, FPULL_ENOTFOUND, "blob %s is not in the cache (--offline)",
                         d->digest);
  /* A resumed download builds on bytes an earlier run stored, maybe from another registry
   * or a lying one: when the whole fails verification, its partial is gone (the commit
   * removes it) and the blob is fetched once more from byte 0, so that a wrong byte from
   * one source never fails a pull from another. */
  for (int attempt = 0;; attempt++) {
    struct fpull_cache_writer *w = NULL;
    int done = 0;
    int rc = fpull_cache_writer_begin(&w, &done, s->cache, d->digest, d->size, err);
    if (rc)
      return rc;
    if (done) { /* another process fetched it while we waited for the lock */
      __atomic_add_fetch(&s->bytes_from_cache, size, __ATOMIC_RELAXED);
      fp_progress_cached(pg, d);
      return fd ? fpull_cache_open_verified(fd, s->cache, d->digest, d->size, err) : 0;
    }
    uint64_t from = fpull_cache_writer_offset(w), received = 0;
    struct fp_progress_sink ps;
    rc = fpull_registry_get_blob(s->reg, s->ref->repository, d->digest, from,
                                 fp_progress_sink_wrap(&ps, pg, d, fpull_cache_writer_sink(w)),
                                 &received, err);
    __atomic_add_fetch(&s->bytes_downloaded, received, __ATOMIC_RELAXED);
    if (rc) {
      fpull_cache_writer_abort(w);
      return rc;
    }
    rc = fpull_cache_writer_commit_fd(w, fd, err);
    if (rc == 0)
      fp_progress_blob_done(pg, d);
    if (rc != FPULL_EINTEGRITY || from == 0 || attempt > 0)
      return rc;
    fp_warn("%s: blob %s resumed at byte %llu did not verify (%s); fetching it again from the "
            "start",
            s->reference, d->digest, (unsigned long long)from, err ? err->msg : "");
    fpull_err_clear(err);
  }
}

int fp_resolve_entry(struct fp_session *s, const struct fpull_descriptor *d, struct fp_resolved *r,
                     char **not_image, fpull_err *err)
{
  memset(r, 0, sizeof *r);
  *not_image = NULL;
  struct fpull_fetched *f = NULL;
  int rc = fetch_entry_manifest(s, d, &f, err);
  if (rc == 0)
    rc = load_manifest(s, r, f, NULL, not_image, err);
  if (rc == 0 && !*not_image)
    rc = fp_cand_check_media_type(d, r->manifest->media_type, err);
  if (rc == 0)
    r->platform = fpull_platform_dup(d->platform);
  fpull_fetched_free(f);
  return rc;
}
