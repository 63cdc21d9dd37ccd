/* Internal: resolving an image reference to one manifest, shared by pull, prefetch and
 * inspect. */
#ifndef FP_RESOLVE_H
#define FP_RESOLVE_H

#include "fpull/pull.h"
#include "fpull/cache.h"
#include "fpull/registry.h"
#include "fpull/ref.h"
#include "select/candidates.h"
#include "progress.h"
#include "sigcheck.h"

struct fp_session {
  const struct fpull_pull_opts *opts;
  struct fpull_ref *ref;
  char *reference;     /* normalised */
  fpull_cache *cache;  /* NULL for inspect without a cache directory */
  fpull_registry *reg; /* NULL with --offline */
  uint64_t bytes_downloaded, bytes_from_cache;
  /* The signature policy in force (sigcheck.h), NULL when none; while one is, fetched
   * manifests wait in deferred until an image is accepted. */
  struct fpull_policy *policy;
  int policy_named;   /* the policy was named (--policy, the config's) or signatures are
                         required: no verified record is trusted (cache_verified.h) */
  int require_signed; /* --require-signatures: a requirement that checks a signature must
                         accept the image */
  struct fp_deferred *deferred;
  size_t n_deferred;
};

struct fp_resolved {
  char *index_digest;        /* NULL for a single manifest */
  struct fpull_index *index; /* the index, when there is one */
  struct fpull_match *match; /* index entries ranked for the target */
  char *manifest_digest;
  struct fpull_manifest *manifest;
  struct fpull_image_config *config;
  char *config_json; /* config's bytes, as verified */
  size_t config_len;
  struct fpull_platform *platform; /* the chosen entry's, or from the config */
  char *preflight_why;             /* a single-manifest image the GPU preflight refused */
  /* For an index: index->manifests is the index flattened (candidates.h), and cands says
   * for each row where it came from and why it is passed over. */
  struct fp_cand *cands;
  struct fpull_sig_check *sig; /* the chosen manifest's signature check, or NULL */
};

int fp_session_open(struct fp_session *s, const char *image, const struct fpull_pull_opts *o,
                    fpull_err *err);
/* The same for inspect, which needs no cache: with no opts->cache_dir (and not offline),
 * s->cache stays NULL and manifests and configs are fetched and verified in memory. */
int fp_session_open_inspect(struct fp_session *s, const char *image,
                            const struct fpull_pull_opts *o, fpull_err *err);
void fp_session_close(struct fp_session *s);

/* Fetches the top document; for an index, ranks the entries (*r->match) and, unless
 * index_only, follows the chosen one. Fetches the config of the manifest. FPULL_ENOMATCH
 * when no entry fits (with the closest entry named). */
int fp_resolve(struct fp_session *s, struct fp_resolved *r, int index_only, fpull_err *err);
void fp_resolved_free(struct fp_resolved *r);
/* One index entry d: its manifest and config (no ranking, no preflight); r->platform is
 * d's. For prefetch --all. When the entry is not a container image, returns 0 with
 * *not_image set (the caller frees it). */
int fp_resolve_entry(struct fp_session *s, const struct fpull_descriptor *d, struct fp_resolved *r,
                     char **not_image, fpull_err *err);

/* Downloads one blob into the cache unless it is there (verified on commit). fd: when not
 * NULL, gets a descriptor of the verified blob to read it from (the caller closes it).
 * pg: when not NULL, hears of the bytes as they arrive and of a blob found cached. */
int fp_fetch_blob(struct fp_session *s, const struct fpull_descriptor *d, int *fd,
                  struct fp_progress *pg, fpull_err *err);

/* Downloads every layer of r->manifest with opts->jobs workers, in the background. */
struct fp_fetch;
struct fp_fetch *fp_fetch_start(struct fp_session *s, const struct fp_resolved *r, int want_fds);
/* After fp_fetch_wait(i) succeeded, with want_fds: the verified descriptor of layer i, now
 * the caller's to close (-1 when taken already). */
int fp_fetch_take_fd(struct fp_fetch *f, size_t i);
/* Reports that layer i is being unpacked (FPULL_PROGRESS_UNPACK). */
void fp_fetch_note_unpack(struct fp_fetch *f, size_t i);
/* Waits until layer i is in the cache; the first failure of any layer otherwise. */
int fp_fetch_wait(struct fp_fetch *f, size_t i, fpull_err *err);
/* Waits for the workers (cancel: start no more downloads) and frees f; returns the first
 * failure. */
int fp_fetch_finish(struct fp_fetch *f, int cancel, fpull_err *err);

#endif
