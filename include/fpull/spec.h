/* fpull: manifest-tool style YAML specs and `manifest push`. */
#ifndef FPULL_SPEC_H
#define FPULL_SPEC_H

#include "error.h"
#include "manifest.h"

struct fpull_spec_entry {
  char *image;
  struct fpull_platform platform;
  unsigned line, column; /* where the entry starts, for messages */
  /* Where each of platform.features was written (same order), for warnings. */
  unsigned *feature_lines, *feature_columns;
};

struct fpull_spec {
  char *image; /* the target */
  struct fpull_spec_entry *entries;
  size_t n_entries;
  char **tags; /* "tags:": more tags to push the same index to; NULL when absent */
  char *name;  /* the file name used in messages */
};

/* Errors: FPULL_EUSAGE naming the file, line and column (unknown keys, duplicate
 * platforms, missing image). Unknown feature names are warnings. */
FPULL_API int fpull_spec_load(struct fpull_spec **out, const char *path, fpull_err *err);
FPULL_API int fpull_spec_parse(struct fpull_spec **out, const char *text, size_t len,
                               const char *name, fpull_err *err);
FPULL_API void fpull_spec_free(struct fpull_spec *s);

struct fpull_tagdb;
struct fpull_config;
/* Warns (fpull: warning: FILE:LINE:COLUMN: ...) about every feature name fpull does not
 * know: not a CPU tag or ISA extension of db (may be NULL: CPU names are then not
 * checked), not an NVIDIA driver, compute-capability or CUDA name, or not usable on the
 * command line. Never refuses a name. Returns the number of warnings. */
FPULL_API unsigned fpull_spec_check_features(const struct fpull_spec *s,
                                             const struct fpull_tagdb *db);
/* Added in v3: every feature, os, architecture and variant of the spec must be a name
 * fpull knows or a site feature of config (may be NULL), as for the command line
 * (fpull_feature_name_check). FPULL_EUSAGE for the first that is not, naming file, line
 * and column, with "did you mean". Since v5 it also warns about an amd64 entry whose CPU
 * tag implies a higher x86-64 level than its variant says. */
FPULL_API int fpull_spec_check_names(const struct fpull_spec *s, const struct fpull_tagdb *db,
                                     const struct fpull_config *config, fpull_err *err);

enum fpull_push_type {
  FPULL_PUSH_OCI = 0,    /* application/vnd.oci.image.index.v1+json */
  FPULL_PUSH_DOCKER = 1, /* application/vnd.docker.distribution.manifest.list.v2+json */
};

struct fpull_config;

/* Options structs grow at the end: version says which layout the caller was compiled
 * with, and the library refuses versions it does not know (FPULL_EUSAGE). Start from
 * FPULL_PUSH_OPTS_INIT, then set fields. */
#define FPULL_PUSH_OPTS_VERSION 2
struct fpull_push_opts {
  unsigned int version;              /* FPULL_PUSH_OPTS_VERSION */
  int type;                          /* enum fpull_push_type */
  int insecure;                      /* --insecure: for every registry involved */
  const char *certs_dir;             /* --certs-dir or NULL */
  const struct fpull_config *config; /* insecure-registries, certs-dir, retries; may be NULL */
  /* Version 2: for the target's registry only (and the sources on it), as
   * fpull_registry_opts's: --cert-dir (its *.crt, client.cert and client.key) and --creds
   * USER:PASS instead of the auth files; NULL: none. */
  const char *cert_dir;
  const char *creds;
};
#define FPULL_PUSH_OPTS_INIT                                                                       \
  {                                                                                                \
    .version = FPULL_PUSH_OPTS_VERSION                                                             \
  }

struct fpull_push_result {
  char *reference;  /* the normalised target, REGISTRY/REPO:TAG */
  char *digest;     /* of the pushed index */
  char *media_type; /* of the pushed index */
  int64_t size;
  struct fpull_descriptor *manifests; /* the index entries as pushed */
  size_t n_manifests;
  size_t copied; /* entries whose manifest was copied in from another repository */
};
FPULL_API void fpull_push_result_free(struct fpull_push_result *r);

/* Resolves every entry of spec to its digest, size and media type (for a source that is
 * an index: its entry for the entry's os/architecture/variant), copies manifests from
 * other repositories into the target repository (blobs first: mounted within a registry,
 * else downloaded and uploaded), builds the index with each platform as written in the
 * spec, and pushes it to the target tag and to every extra tag.
 * Errors: FPULL_EUSAGE (no entry of a source index fits, a schema 1 source),
 * FPULL_ENOTFOUND, FPULL_EAUTH, FPULL_ENET, FPULL_EINTEGRITY, each naming the entry. */
FPULL_API int fpull_spec_push(struct fpull_push_result **out, const struct fpull_spec *spec,
                              const struct fpull_push_opts *opts, fpull_err *err);

/* The index bytes fpull_spec_push would push for these resolved entries (platforms as
 * given, features in their order). Caller frees. */
FPULL_API char *fpull_index_build(const struct fpull_descriptor *entries, size_t n, int type,
                                  size_t *len);

#endif
