/* fpull: the typed model of manifests, indexes and image configs. */
#ifndef FPULL_MANIFEST_H
#define FPULL_MANIFEST_H

#include "error.h"

#define FPULL_MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define FPULL_MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define FPULL_MT_OCI_CONFIG "application/vnd.oci.image.config.v1+json"
#define FPULL_MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define FPULL_MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define FPULL_MT_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"
#define FPULL_MT_DOCKER_SCHEMA1 "application/vnd.docker.distribution.manifest.v1+json"
#define FPULL_MT_DOCKER_SCHEMA1_SIGNED "application/vnd.docker.distribution.manifest.v1+prettyjws"
#define FPULL_MT_OCI_EMPTY "application/vnd.oci.empty.v1+json"
/* The one message for a Docker schema 1 manifest, whichever way it was recognised. */
#define FPULL_SCHEMA1_MESSAGE                                                                      \
  "the manifest is Docker schema 1, which fpull does not support (push the image again "           \
  "with a current docker or skopeo)"

/* Largest manifest, index or config accepted (fpull(1) and the distribution spec). */
#define FPULL_MANIFEST_MAX (4u * 1024 * 1024)

enum fpull_doc_kind {
  FPULL_DOC_UNKNOWN = 0,
  FPULL_DOC_INDEX = 1,    /* OCI index or Docker manifest list */
  FPULL_DOC_MANIFEST = 2, /* OCI manifest or Docker v2 schema 2 */
  FPULL_DOC_SCHEMA1 = 3,  /* refused by callers with a clear error */
};

struct fpull_platform {
  char *os;           /* "" when the document leaves it out (as Go reads it): fits nothing */
  char *architecture; /* likewise */
  char *variant;      /* NULL when absent */
  char *os_version;   /* NULL when absent */
  char **os_features; /* NULL-terminated, NULL when absent */
  char **features;    /* platform.features as listed, NULL-terminated, NULL when absent */
};

struct fpull_descriptor {
  char *media_type;
  char *digest;                    /* validated with fpull_digest_valid */
  int64_t size;                    /* >= 0 */
  struct fpull_platform *platform; /* index entries only; NULL when absent */
  char *ref_type;      /* annotation "vnd.docker.reference.type" (attestations), or NULL */
  char *artifact_type; /* "artifactType", or NULL */
};

struct fpull_index {
  char *media_type; /* as declared in the body, or the Content-Type when absent */
  struct fpull_descriptor *manifests;
  size_t n_manifests;
};

struct fpull_manifest {
  char *media_type;
  struct fpull_descriptor config;
  struct fpull_descriptor *layers;
  size_t n_layers;
  char *artifact_type; /* "artifactType", or NULL */
};

struct fpull_image_config {
  char *os;           /* "" when absent */
  char *architecture; /* "" when absent */
  char *variant;      /* NULL when absent */
  char **diff_ids;    /* rootfs.diff_ids, validated, NULL-terminated; empty (not NULL) when the
                         config has no rootfs */
  char **os_features; /* "os.features", NULL-terminated, NULL when absent */
};

/* Which kind of document BYTES is. content_type (may be NULL) is the HTTP Content-Type;
 * the body's mediaType must agree with it when it names a manifest or index type (a generic
 * one such as application/json is ignored), and a body that has both "manifests" and
 * "layers" or "config" is refused (CVE-2021-41190). schemaVersion must be 2; 1 (or a
 * schema 1 Content-Type) gives FPULL_DOC_SCHEMA1 with 0 returned. Errors: FPULL_EINTEGRITY
 * for malformed, ambiguous or contradictory documents, FPULL_EUNSAFE for a mediaType fpull
 * does not know (artifact manifests, ...), FPULL_EUSAGE never. */
FPULL_API int fpull_doc_kind(int *out, const char *bytes, size_t len, const char *content_type,
                             fpull_err *err);

/* Parsers. Duplicate JSON keys (at any depth, and keys fpull reads spelt in another case,
 * which Go would match), nesting over 64, NUL characters, bad digests, negative or
 * non-integer sizes or sizes of 2^53 and more, and documents over FPULL_MANIFEST_MAX are
 * refused with FPULL_EINTEGRITY, as is the other kind of document (an index given to
 * fpull_manifest_parse) and schema 1. Descriptors need mediaType, digest and size. The
 * caller owns *out. */
FPULL_API int fpull_index_parse(struct fpull_index **out, const char *bytes, size_t len,
                                const char *content_type, fpull_err *err);
FPULL_API int fpull_manifest_parse(struct fpull_manifest **out, const char *bytes, size_t len,
                                   const char *content_type, fpull_err *err);
FPULL_API int fpull_image_config_parse(struct fpull_image_config **out, const char *bytes,
                                       size_t len, fpull_err *err);

FPULL_API void fpull_index_free(struct fpull_index *idx);
FPULL_API void fpull_manifest_free(struct fpull_manifest *m);
FPULL_API void fpull_image_config_free(struct fpull_image_config *c);
FPULL_API void fpull_platform_free(struct fpull_platform *p);
FPULL_API struct fpull_platform *fpull_platform_dup(const struct fpull_platform *p);

/* Layer compression from a layer media type: 0 none, 1 gzip, 2 zstd, -1 not a layer type
 * fpull can unpack (foreign and non-distributable layers, encrypted layers, unknown
 * types). OCI tar/tar+gzip/tar+zstd and Docker rootfs.diff.tar[.gzip|.zstd] are known. */
FPULL_API int fpull_layer_compression(const char *media_type);

/* Why manifest m is not a container image, or NULL when it is one: an artifact (an
 * "artifactType", the empty config application/vnd.oci.empty.v1+json, a config of another
 * type than an OCI or Docker image config). *invalid is set to 1 when the manifest is not
 * even a valid artifact (a config typed as a layer). The caller frees the string. */
FPULL_API char *fpull_manifest_not_image(const struct fpull_manifest *m, int *invalid);
/* 1 when media_type names an image manifest (OCI, Docker v2 schema 2), 2 an index (OCI
 * index, Docker manifest list), 0 anything else. */
FPULL_API int fpull_media_type_kind(const char *media_type);

/* "sha256:HEX" of the bytes. Caller frees. NULL only if OpenSSL fails. */
FPULL_API char *fpull_digest_of(const void *bytes, size_t len);

#endif
