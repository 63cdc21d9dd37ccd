/* The signature policy over a session (sigcheck.h): containers/image's evaluation of
 * sigstoreSigned (signature/policy_eval_sigstore.go) on the manifest fpull fetched, before
 * any config or layer of it is fetched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/blob_memory.h"
#include "sig/policy.h"
#include "sig/sigstore.h"
#include "base/digest.h"
#include "resolve.h"
#include "base/util.h"
#include "fpull/config.h"

void fpull_sig_check_free(struct fpull_sig_check *c)
{
  if (!c)
    return;
  free(c->state);
  free(c->scope);
  free(c->requirement);
  free(c->key_fingerprint);
  free(c->identity);
  free(c->digest);
  free(c->reason);
  free(c);
}

int fp_sig_session_open(struct fp_session *s, fpull_err *err)
{
  const struct fpull_pull_opts *o = s->opts;
  const struct fpull_config *cfg = o->config;
  const char *path = o->version >= 2 && o->policy ? o->policy : cfg ? cfg->policy : NULL;
  int require = (o->version >= 2 && o->require_signatures) || (cfg && cfg->require_signatures);
  int rc = fpull_policy_load(&s->policy, path, err);
  if (rc)
    return rc;
  s->policy_named = path != NULL || require;
  if (!s->policy && require)
    return fpull_err_set(err, FPULL_EPOLICY,
                         "signatures are required but no policy was found (--policy, the "
                         "config's policy:, ~/.config/containers/policy.json, "
                         "/etc/containers/policy.json)");
  s->require_signed = require;
  if (s->policy)
    fp_debug("signature policy: %s", fpull_policy_name(s->policy));
  return 0;
}

void fp_sig_session_close(struct fp_session *s)
{
  for (size_t i = 0; i < s->n_deferred; i++) {
    free(s->deferred[i].digest);
    free(s->deferred[i].data);
    free(s->deferred[i].tagref);
  }
  free(s->deferred);
  s->deferred = NULL;
  s->n_deferred = 0;
  fpull_policy_free(s->policy);
  s->policy = NULL;
}

int fp_sig_enforced(const struct fp_session *s)
{
  if (!s->policy)
    return 0;
  if (s->require_signed)
    return 1;
  struct fp_dref image = {.name = fp_xasprintf("%s/%s", s->ref->registry, s->ref->repository),
                          .tag = s->ref->digest ? NULL : fp_xstrdup(s->ref->tag),
                          .digest = fp_xstrdup(s->ref->digest)};
  const struct fp_reqlist *l = fp_policy_for(s->policy, &image);
  fp_dref_clear(&image);
  for (size_t i = 0; i < l->n; i++)
    if (l->r[i].type != FP_REQ_ACCEPT)
      return 1;
  return 0;
}

void fp_sig_defer(struct fp_session *s, const char *digest, const char *data, size_t len,
                  const char *tagref)
{
  s->deferred = fp_xrealloc(s->deferred, (s->n_deferred + 1) * sizeof *s->deferred);
  struct fp_deferred *d = &s->deferred[s->n_deferred++];
  d->digest = fp_xstrdup(digest);
  d->data = fp_xmalloc(len + 1);
  memcpy(d->data, data, len);
  d->len = len;
  d->tagref = fp_xstrdup(tagref);
}

int fp_sig_commit(struct fp_session *s, fpull_err *err)
{
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < s->n_deferred; i++) {
    struct fp_deferred *d = &s->deferred[i];
    if (!s->cache)
      continue;
    rc = fpull_cache_put_bytes(s->cache, d->digest, d->data, d->len, err);
    if (rc == 0 && d->tagref)
      rc = fpull_cache_tag_record(s->cache, d->tagref, d->digest, err);
  }
  for (size_t i = 0; i < s->n_deferred; i++) {
    free(s->deferred[i].digest);
    free(s->deferred[i].data);
    free(s->deferred[i].tagref);
  }
  s->n_deferred = 0;
  return rc;
}

/* ---- the signatures of one manifest ---- */

struct sigs {
  struct fp_sig_attachments att;
  char **payloads; /* att.n, verified against their digests */
  size_t *lens;
  int loaded;
  int not_cached; /* offline, and the cache has no record of the .sig tag */
};

static void sigs_free(struct sigs *g)
{
  for (size_t i = 0; g->payloads && i < g->att.n; i++)
    free(g->payloads[i]);
  free(g->payloads);
  free(g->lens);
  fp_sig_attachments_free(&g->att);
  memset(g, 0, sizeof *g);
}

/* The cached bytes of digest, re-hashed (a shared cache may hold anything). */
static int cached_bytes(struct fp_session *s, const char *digest, char **data, size_t *len)
{
  fpull_err e = {0};
  if (fpull_cache_get_bytes(s->cache, digest, FP_SIG_PAYLOAD_MAX, data, len, &e) != 0)
    return -1;
  cleanup_free char *got = fp_digest_of_like(digest, *data, *len);
  if (!got || strcmp(got, digest) != 0) {
    free(*data);
    *data = NULL;
    return -1;
  }
  return 0;
}

/* The attachments at the .sig tag of digest: from the registry (kept back for the cache)
 * or, offline, from the cache. None is not an error (g->att.n == 0). */
static int load_sigs(struct fp_session *s, const char *digest, struct sigs *g, fpull_err *err)
{
  g->loaded = 1;
  const char *colon = strchr(digest, ':');
  cleanup_free char *tag = fp_xasprintf("%.*s-%s.sig", (int)(colon - digest), digest, colon + 1);
  cleanup_free char *tagref = fp_xasprintf("%s/%s:%s", s->ref->registry, s->ref->repository, tag);
  struct fpull_fetched *f = NULL;
  int rc = 0;
  if (s->reg) {
    rc = fpull_registry_get_manifest(&f, s->reg, s->ref->repository, tag, err);
    if (rc == FPULL_ENOTFOUND) {
      fpull_err_clear(err);
      return 0;
    }
    if (rc)
      return fpull_err_prefix(err, "signatures %s", tag);
  } else {
    cleanup_free char *md = NULL;
    fpull_err e = {0};
    if (!s->cache || fpull_cache_tag_lookup(s->cache, tagref, &md, &e) != 0) {
      g->not_cached = 1;
      return 0;
    }
    f = fp_xcalloc(1, sizeof *f);
    f->digest = fp_xstrdup(md);
    if (cached_bytes(s, md, &f->data, &f->len) != 0) {
      fpull_fetched_free(f);
      g->not_cached = 1;
      return 0;
    }
  }
  rc = fp_sig_attachments_parse(&g->att, f->data, f->len, f->content_type, err);
  if (rc == 0 && s->reg)
    fp_sig_defer(s, f->digest, f->data, f->len, tagref);
  fpull_fetched_free(f);
  if (rc)
    return rc;
  g->payloads = fp_xcalloc(g->att.n + 1, sizeof *g->payloads);
  g->lens = fp_xcalloc(g->att.n + 1, sizeof *g->lens);
  for (size_t i = 0; i < g->att.n; i++) {
    const struct fp_sig_attachment *a = &g->att.a[i];
    if (!s->reg) {
      if (cached_bytes(s, a->digest, &g->payloads[i], &g->lens[i]) != 0)
        return fpull_err_set(err, FPULL_EPOLICY,
                             "signature payload %s is not in the cache; prefetch with the "
                             "policy in force before --offline",
                             a->digest);
      continue;
    }
    struct fpull_descriptor d = {.digest = (char *)a->digest, .size = a->size};
    rc = fp_blob_fetch_memory(s->reg, s->ref->repository, &d, &g->payloads[i], &g->lens[i], NULL,
                              err);
    if (rc == FPULL_EINTEGRITY || rc == FPULL_ENOTFOUND)
      return fpull_err_set(err, FPULL_EPOLICY, "signature payload %s: %s", a->digest, err->msg);
    if (rc)
      return fpull_err_prefix(err, "signature payload %s", a->digest);
    fp_sig_defer(s, a->digest, g->payloads[i], g->lens[i], NULL);
  }
  return 0;
}

static const char *ident_name(enum fp_ident_type t)
{
  static const char *const n[] = {"matchRepoDigestOrExact", "matchExact",      "matchRepository",
                                  "exactReference",         "exactRepository", "remapIdentity"};
  return n[t];
}

/* One signature, in containers/image's order: crypto over the raw bytes, then the strict
 * payload, then the digest, then the identity. */
static int one_signature(const struct fp_req *req, const struct fp_sig_keys *keys,
                         const struct fp_sig_attachment *a, const char *payload, size_t plen,
                         const struct fp_dref *image, const char *digest, const char *data,
                         size_t len, struct fpull_sig_check *c, fpull_err *err)
{
  cleanup_free char *fpr = NULL, *ident = NULL, *pdig = NULL;
  int rc = fp_sig_verify(keys, a->signature, payload, plen, &fpr, err);
  if (rc == 0)
    rc = fp_sig_payload_parse(&ident, &pdig, payload, plen, err);
  if (rc)
    return rc;
  cleanup_free char *mine = data ? fp_digest_of_like(pdig, data, len) : fp_xstrdup(digest);
  if (!mine || strcmp(mine, pdig) != 0)
    return fpull_err_set(err, FPULL_EPOLICY,
                         "the signature is for manifest %s, not for %s (a signature replayed "
                         "onto another image)",
                         pdig, digest);
  struct fp_dref sig;
  if (fp_dref_parse(&sig, ident) != 0)
    return fpull_err_set(err, FPULL_EPOLICY, "the signed identity \"%.200s\" is not a reference",
                         ident);
  int ok = fp_identity_accepts(&req->id, image, &sig);
  fp_dref_clear(&sig);
  if (!ok) {
    cleanup_free char *im = fp_dref_string(image);
    return fpull_err_set(err, FPULL_EPOLICY,
                         "the signed identity %s is not accepted for %s (signedIdentity %s)", ident,
                         im, ident_name(req->id.type));
  }
  c->key_fingerprint = steal_pointer(&fpr);
  c->identity = steal_pointer(&ident);
  return 0;
}

static int sigstore_req(struct fp_session *s, const struct fp_req *req, struct sigs *g,
                        const struct fp_dref *image, const char *digest, const char *data,
                        size_t len, struct fpull_sig_check *c, fpull_err *err)
{
  struct fp_sig_keys *keys = NULL;
  int rc = fp_sig_keys_load(&keys, req->key_paths, req->key_datas, err);
  if (rc == 0 && !g->loaded)
    rc = load_sigs(s, digest, g, err);
  if (rc == 0 && g->att.n == 0 && g->not_cached)
    rc = fpull_err_set(err, FPULL_EPOLICY,
                       "the signatures of %s are not in the cache; prefetch with the policy in "
                       "force (fpull prefetch --policy FILE IMAGE) before --offline",
                       digest);
  else if (rc == 0 && g->att.n == 0)
    rc = fpull_err_set(err, FPULL_EPOLICY,
                       "a signature was required, but no signature exists for %s%s", digest,
                       g->att.ignored ? " (only attachments of other types)" : "");
  fpull_err first = {0};
  for (size_t i = 0; rc == 0 && i < g->att.n; i++) {
    fpull_err e = {0};
    if (one_signature(req, keys, &g->att.a[i], g->payloads[i], g->lens[i], image, digest, data, len,
                      c, &e) == 0) {
      fp_sig_keys_free(keys);
      return 0;
    }
    if (!first.code)
      first = e;
  }
  fp_sig_keys_free(keys);
  if (rc)
    return rc;
  if (g->att.n > 1)
    return fpull_err_set(err, FPULL_EPOLICY, "none of %zu signatures is accepted; the first: %s",
                         g->att.n, first.msg);
  *err = first;
  return first.code;
}

/* One manifest against the list that applies; 0 or FPULL_EPOLICY (c says which), or the
 * code of a failure to get the signatures. */
static int evaluate(struct fp_session *s, const char *digest, const char *data, size_t len,
                    struct fpull_sig_check *c, fpull_err *err)
{
  struct fp_dref image = {.name = fp_xasprintf("%s/%s", s->ref->registry, s->ref->repository),
                          .tag = s->ref->digest ? NULL : fp_xstrdup(s->ref->tag),
                          .digest = fp_xstrdup(s->ref->digest)};
  const struct fp_reqlist *l = fp_policy_for(s->policy, &image);
  c->scope = fp_xstrdup(l->scope);
  c->digest = fp_xstrdup(digest);
  struct sigs g = {0};
  int rc = 0, signed_ok = 0;
  /* Every requirement of the list must accept (AND). */
  for (size_t i = 0; rc == 0 && i < l->n; i++) {
    const struct fp_req *r = &l->r[i];
    if (r->type == FP_REQ_ACCEPT)
      continue;
    free(c->requirement);
    c->requirement = fp_xstrdup(r->name);
    if (r->type == FP_REQ_REJECT)
      rc = fpull_err_set(err, FPULL_EPOLICY, "the policy rejects it (requirement \"reject\")");
    else if (r->type == FP_REQ_UNSUPPORTED)
      rc = fpull_err_set(err, FPULL_EPOLICY,
                         "requirement %s cannot be evaluated by fpull, so the image is not "
                         "accepted",
                         r->name);
    else if ((rc = sigstore_req(s, r, &g, &image, digest, data, len, c, err)) == 0)
      signed_ok = 1;
  }
  sigs_free(&g);
  fp_dref_clear(&image);
  if (!c->requirement)
    c->requirement = fp_xstrdup("insecureAcceptAnything");
  /* --require-signatures promises a signature: a rule that accepts without one (an
   * insecureAcceptAnything scope, a stock accept-anything policy.json) does not do. */
  if (rc == 0 && !signed_ok && s->require_signed)
    rc = fpull_err_set(err, FPULL_EPOLICY,
                       "signatures are required (--require-signatures), but the rule %s accepts "
                       "it without checking one (give this scope a sigstoreSigned requirement)",
                       c->requirement);
  c->state = fp_xstrdup(rc == 0 ? (signed_ok ? "verified" : "accepted") : "rejected");
  if (rc == FPULL_EPOLICY) {
    c->reason = fp_xstrdup(err->msg);
    fpull_err_set(err, FPULL_EPOLICY, "signature policy %s, %s: %s", fpull_policy_name(s->policy),
                  l->scope, c->reason);
  }
  return rc;
}

int fp_sig_check_manifest(struct fp_session *s, const char *digest, const char *data, size_t len,
                          const char *index_digest, struct fpull_sig_check **out, fpull_err *err)
{
  *out = NULL;
  if (!s->policy)
    return 0;
  const struct fpull_pull_opts *o = s->opts;
  int mode = o->version >= 2 ? o->signature_index : FPULL_SIGINDEX_INSTANCE;
  if (!index_digest)
    mode = FPULL_SIGINDEX_INSTANCE;
  struct fpull_sig_check *c = fp_xcalloc(1, sizeof *c);
  int rc = 0;
  if (mode == FPULL_SIGINDEX_BOTH) {
    struct fpull_sig_check *ic = fp_xcalloc(1, sizeof *ic);
    rc = evaluate(s, index_digest, NULL, 0, ic, err);
    fpull_sig_check_free(ic);
    if (rc == FPULL_EPOLICY) {
      char msg[FPULL_ERR_MSG_MAX];
      snprintf(msg, sizeof msg, "%s", err->msg);
      fpull_err_set(err, rc, "the index's own signature (--signature-index=both): %s", msg);
    }
    if (rc) {
      c->state = fp_xstrdup("rejected");
      c->digest = fp_xstrdup(index_digest);
      c->reason = fp_xstrdup(err->msg);
      *out = c;
      return rc;
    }
  }
  rc = evaluate(s, digest, data, len, c, err);
  if (rc == FPULL_EPOLICY && index_digest && mode == FPULL_SIGINDEX_INSTANCE &&
      strstr(err->msg, "no signature exists")) {
    /* The usual cause: an index signed without its entries (cosign sign without
     * --recursive). */
    char msg[FPULL_ERR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", err->msg);
    fpull_err_set(err, rc,
                  "%s (an entry of index %s needs its own signature: sign with cosign sign "
                  "--recursive, or accept the index's with --signature-index=either)",
                  msg, index_digest);
  }
  if (rc == FPULL_EPOLICY && mode == FPULL_SIGINDEX_EITHER) {
    /* The index's signature stands for the entry it lists. */
    struct fpull_sig_check *ic = fp_xcalloc(1, sizeof *ic);
    fpull_err ie = {0};
    if (evaluate(s, index_digest, NULL, 0, ic, &ie) == 0) {
      fp_debug("%s: entry %s accepted by the index's signature (--signature-index=either)",
               s->reference, digest);
      fpull_sig_check_free(c);
      c = ic;
      free(c->digest);
      c->digest = fp_xstrdup(index_digest);
      rc = 0;
      fpull_err_clear(err);
    } else {
      fpull_sig_check_free(ic);
    }
  }
  *out = c;
  return rc;
}
