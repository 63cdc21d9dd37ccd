/* fpull: image references, [REGISTRY[:PORT]/]REPOSITORY[:TAG][@sha256:HEX]. */
#ifndef FPULL_REF_H
#define FPULL_REF_H

#include "error.h"

struct fpull_ref {
  char *registry;   /* "docker.io", "127.0.0.1:5000", "localhost" */
  char *repository; /* "library/ubuntu" */
  char *tag;        /* "latest" when neither tag nor digest given; NULL with a digest only */
  char *digest;     /* "sha256:<64 hex>", "sha512:<128 hex>" or NULL */
};

/* Parses text as fpull(1) describes IMAGE (docker.io normalisation, library/ prefix, :latest).
 * On success *out is owned by the caller (fpull_ref_free). Errors: FPULL_EUSAGE with
 * the reason. */
FPULL_API int fpull_ref_parse(struct fpull_ref **out, const char *text, fpull_err *err);
FPULL_API void fpull_ref_free(struct fpull_ref *ref);

/* Normalised form: REGISTRY/REPO:TAG, REGISTRY/REPO@DIGEST or REGISTRY/REPO:TAG@DIGEST.
 * Caller frees. NULL only when out of memory. */
FPULL_API char *fpull_ref_format(const struct fpull_ref *ref);

/* Host[:port] to talk to: "registry-1.docker.io" for docker.io, else the registry. */
FPULL_API const char *fpull_ref_api_host(const struct fpull_ref *ref);

/* Last component of the repository ("qnib/cv-tf" -> "cv-tf"): the default DEST. */
FPULL_API const char *fpull_ref_basename(const struct fpull_ref *ref);

/* 1 when HOST[:PORT] is localhost, ::1 or in 127.0.0.0/8 (literally, never resolved). */
FPULL_API int fpull_ref_host_is_loopback(const char *hostport);

/* 1 when s is "sha256:" followed by exactly 64 lower-case hex digits, or "sha512:" and
 * 128: the algorithms fpull verifies (the distribution-spec registers both). */
FPULL_API int fpull_digest_valid(const char *s);

#endif
