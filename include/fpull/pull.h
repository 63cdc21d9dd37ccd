/* fpull: the orchestration behind pull, prefetch and inspect. */
#ifndef FPULL_PULL_H
#define FPULL_PULL_H

#include "error.h"
#include "log.h"
#include "features.h"
#include "unpack.h"
#include "policy.h"

struct fpull_config;

/* Options structs grow at the end: version says which layout the caller was compiled
 * with, and the library refuses versions it does not know (FPULL_EUSAGE). Start from
 * FPULL_PULL_OPTS_INIT, then set fields. */
#define FPULL_PULL_OPTS_VERSION 2
struct fpull_pull_opts {
  unsigned int version;              /* FPULL_PULL_OPTS_VERSION */
  const struct fpull_config *config; /* may be NULL */
  const struct fpull_target *target; /* required */
  const struct fpull_tagdb *tagdb;   /* required */
  const char *cache_dir;             /* resolved with fpull_cache_resolve_dir */
  const char *certs_dir;             /* --certs-dir or NULL */
  int insecure;
  int offline;
  int jobs; /* parallel blob downloads; 0: 4 */
  fpull_progress_fn progress;
  void *progress_ud;
  struct fpull_unpack_opts unpack;
  /* Added in version 2: signatures (man fpull, SIGNATURES). */
  const char *policy;     /* containers-policy.json; NULL: the config's policy:, else the
                             user's or the system's as containers/image finds them */
  int require_signatures; /* FPULL_EPOLICY unless a signature check accepts (also the config's) */
  int signature_index;    /* enum fpull_sigindex */
  /* Version 2: skopeo's --cert-dir, the registry's own CA and client certificate folder
   * (fpull_registry_opts.cert_dir); NULL: none. */
  const char *cert_dir;
  /* Version 2: --creds USER:PASS for the registry (fpull_registry_opts.creds); NULL: the
   * auth files. */
  const char *creds;
};
#define FPULL_PULL_OPTS_INIT                                                                       \
  {                                                                                                \
    .version = FPULL_PULL_OPTS_VERSION, .unpack = FPULL_UNPACK_OPTS_INIT                           \
  }

/* One index entry that fpull_prefetch_all put into the cache. */
struct fpull_prefetch_entry {
  char *manifest_digest;
  struct fpull_platform *platform; /* as listed in the index; NULL when it lists none */
  size_t layers;
};

struct fpull_pull_result {
  char *reference;    /* normalised */
  char *index_digest; /* NULL for a single manifest */
  char *manifest_digest;
  struct fpull_platform *platform; /* the chosen entry's, as listed (from the config for a
                                      single manifest) */
  char *rootfs;                    /* absolute; NULL for prefetch */
  size_t layers;
  uint64_t bytes_downloaded;
  uint64_t bytes_from_cache;
  /* fpull_prefetch_all only: every entry cached (then manifest_digest and platform are
   * NULL for an index, and layers counts the layers of all entries). */
  struct fpull_prefetch_entry *entries;
  size_t n_entries;
  /* For an index: what put the chosen entry above the next one, as fpull inspect says it
   * (fpull_match_why); NULL for a single manifest, or when no other entry fits. */
  char *why;
  /* What the signature policy found for the chosen entry; NULL when no policy applies. */
  struct fpull_sig_check *signature;
};
FPULL_API void fpull_pull_result_free(struct fpull_pull_result *r);

/* Resolves image, chooses the entry, downloads into the cache, unpacks into dest
 * (NULL: ./NAME). Returns fpull(1)'s exit codes (EXIT STATUS). */
FPULL_API int fpull_pull(struct fpull_pull_result **out, const char *image, const char *dest,
                         const struct fpull_pull_opts *opts, fpull_err *err);
/* The same without a rootfs. */
FPULL_API int fpull_prefetch(struct fpull_pull_result **out, const char *image,
                             const struct fpull_pull_opts *opts, fpull_err *err);

/* prefetch --all: caches the manifest, config and layers of every image entry of image's
 * index (attestations and unknown/unknown entries are not images), or of the single
 * manifest, so that nodes of every kind can pull --offline from the cache. os and arch
 * (NULL: any) keep only the entries of that os/architecture. FPULL_ENOMATCH when they
 * leave no entry; otherwise fpull(1)'s exit code of the first failure. */
FPULL_API int fpull_prefetch_all(struct fpull_pull_result **out, const char *image, const char *os,
                                 const char *arch, const struct fpull_pull_opts *opts,
                                 fpull_err *err);

/* The image configuration (the config blob's bytes as the registry holds them, verified)
 * of the entry fpull_pull would choose; *json is NUL-terminated, the caller frees it.
 * Codes as fpull_inspect's, and FPULL_ENOMATCH when no entry fits. */
FPULL_API int fpull_image_config_get(char **json, size_t *len, const char *image,
                                     const struct fpull_pull_opts *opts, fpull_err *err);

/* Where an entry of fpull_inspect came from (fpull(1), "Which entries are
 * candidates" under MATCHING). */
struct fpull_entry_origin {
  long parent;              /* the entry (nested index) that listed it; -1: the top index */
  int depth;                /* 1 for the top index's entries */
  int platform_from_config; /* the entry had no platform: its image config gave it */
  int followed;             /* a nested index: the entries naming it as parent follow */
};

struct fpull_inspect_result {
  char *reference;
  char *index_digest;               /* NULL for a single manifest */
  struct fpull_descriptor *entries; /* for a single manifest: one, from its config; for an
                                       index, nested indexes flattened in document order */
  size_t n_entries;
  struct fpull_match *match;          /* why: the reason an entry is passed over, too */
  struct fpull_entry_origin *origins; /* n_entries; NULL for a single manifest */
  /* n_entries signature states, each NULL when not checked (not a candidate); the array
   * is NULL when no policy applies. */
  struct fpull_sig_check **signatures;
  struct fpull_sig_check *index_signature; /* the index's own, when one was checked */
  /* A single manifest's layers: their count and the sum of their sizes (0 for an index). */
  size_t n_layers;
  uint64_t layers_size;
};
FPULL_API void fpull_inspect_result_free(struct fpull_inspect_result *r);
/* Fetches manifests only (and a single manifest's config). Returns FPULL_OK even when
 * nothing fits: the caller reads match->chosen. */
FPULL_API int fpull_inspect(struct fpull_inspect_result **out, const char *image,
                            const struct fpull_pull_opts *opts, fpull_err *err);

#endif
