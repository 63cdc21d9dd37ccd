/* fpull: the Docker Registry v2 / OCI distribution client (libcurl). */
#ifndef FPULL_REGISTRY_H
#define FPULL_REGISTRY_H

#include "error.h"

struct fpull_config;

/* Options structs grow at the end: version says which layout the caller was compiled
 * with, and the library refuses versions it does not know (FPULL_EUSAGE). Start from
 * FPULL_REGISTRY_OPTS_INIT, then set fields. */
#define FPULL_REGISTRY_OPTS_VERSION 2
struct fpull_registry_opts {
  unsigned int version;         /* FPULL_REGISTRY_OPTS_VERSION */
  int insecure;                 /* --insecure or insecure-registries: HTTP and unverified TLS */
  const char *certs_dir;        /* --certs-dir, searched first; may be NULL */
  const char *config_certs_dir; /* the config's certs-dir; may be NULL */
  char *const *mirrors;         /* registry-mirrors URLs for this registry, tried in order */
  int max_tries;                /* per request; 0: the default (5) */
  const struct fpull_config *config; /* may be NULL: its insecure-registries also cover
                                        mirror hosts (an http:// mirror needs that) */
  /* Version 2: --cert-dir, skopeo's: the registry's own *.crt, client.cert and client.key
   * directly in it (no HOST:PORT folder), searched before everything else; may be NULL. */
  const char *cert_dir;
  /* Version 2: --creds USER:PASS, skopeo's and podman's: used for the registry (not its
   * mirrors) instead of the auth files; NULL: none. A value without ':' is FPULL_EUSAGE. */
  const char *creds;
};
#define FPULL_REGISTRY_OPTS_INIT                                                                   \
  {                                                                                                \
    .version = FPULL_REGISTRY_OPTS_VERSION                                                         \
  }

/* Fills opts for registry from the config (may be NULL): insecure-registries, certs-dir,
 * registry-mirrors and retries, plus the command line's --insecure and --certs-dir. */
FPULL_API void fpull_registry_opts_init(struct fpull_registry_opts *opts, const char *registry,
                                        const struct fpull_config *config, int insecure,
                                        const char *certs_dir);

/* One registry (one host[:port]); safe to use from several threads at once. */
typedef struct fpull_registry fpull_registry;

/* registry is fpull_ref's registry ("docker.io", "127.0.0.1:5000"). Nothing is sent
 * until the first request. Credentials come from the docker/containers auth files. */
FPULL_API int fpull_registry_open(fpull_registry **out, const char *registry,
                                  const struct fpull_registry_opts *opts, fpull_err *err);
FPULL_API void fpull_registry_free(fpull_registry *r);

struct fpull_fetched {
  char *data; /* the bytes as served */
  size_t len;
  char *content_type; /* Content-Type without parameters, or NULL */
  char *digest;       /* sha256 of data, "sha256:HEX" */
};
FPULL_API void fpull_fetched_free(struct fpull_fetched *f);

/* GET /v2/REPO/manifests/REF with an Accept for OCI index/manifest and Docker list/v2s2.
 * REF is a tag or a digest; by digest, the bytes are verified against it. A
 * Docker-Content-Digest header that disagrees with the bytes is FPULL_EINTEGRITY.
 * Bodies over 4 MiB are refused. Errors: FPULL_ENOTFOUND, FPULL_EAUTH, FPULL_ENET,
 * FPULL_EINTEGRITY. */
FPULL_API int fpull_registry_get_manifest(struct fpull_fetched **out, fpull_registry *r,
                                          const char *repo, const char *ref, fpull_err *err);

/* GET /v2/REPO/tags/list, page after page (page_size tags a request, "n"; 0: 1000),
 * following the registry's Link: rel="next". *out is NULL-terminated in the registry's
 * order; the caller frees it (fpull_strv_free). A name that is no valid tag is left out with
 * a warning. At most 100000 tags. Errors: FPULL_ENOTFOUND, FPULL_EAUTH, FPULL_ENET,
 * FPULL_EFAIL (a malformed answer). */
FPULL_API int fpull_registry_list_tags(char ***out, fpull_registry *r, const char *repo,
                                       unsigned page_size, fpull_err *err);

/* Where blob bytes go. restart is called before each attempt with the offset that will be
 * requested; when a server ignores a Range request it is called again with 0, and the
 * sink must then discard what it had. */
struct fpull_blob_sink {
  void *ud;
  int (*write)(void *ud, const void *data, size_t len, fpull_err *err);
  int (*restart)(void *ud, uint64_t offset, fpull_err *err);
};

/* GET /v2/REPO/blobs/DIGEST from byte OFFSET on (Range), following redirects without the
 * Authorization header to another origin, retrying and resuming on transient failures.
 * *received (may be NULL) is increased by every body byte received, retries included.
 * The sink does the verification. */
FPULL_API int fpull_registry_get_blob(fpull_registry *r, const char *repo, const char *digest,
                                      uint64_t offset, const struct fpull_blob_sink *sink,
                                      uint64_t *received, fpull_err *err);

/* ---- pushing (manifest push) ---- */
/* HEAD the blob; *exists 1/0. */
FPULL_API int fpull_registry_blob_exists(fpull_registry *r, const char *repo, const char *digest,
                                         int *exists, fpull_err *err);
/* Cross-repository mount from from_repo; *mounted 0 when the registry answered with an
 * upload session instead (the caller then copies). */
FPULL_API int fpull_registry_mount_blob(fpull_registry *r, const char *repo, const char *digest,
                                        const char *from_repo, int *mounted, fpull_err *err);
/* Monolithic upload of a blob from a file. */
FPULL_API int fpull_registry_put_blob_file(fpull_registry *r, const char *repo, const char *digest,
                                           const char *path, fpull_err *err);
/* PUT /v2/REPO/manifests/REF; *digest_out (may be NULL) gets the digest of bytes. */
FPULL_API int fpull_registry_put_manifest(fpull_registry *r, const char *repo, const char *ref,
                                          const char *media_type, const char *bytes, size_t len,
                                          char **digest_out, fpull_err *err);

#endif
