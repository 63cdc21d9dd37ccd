/* Internal: sigstore signatures as containers/image stores them (sha256-HEX.sig tags):
 * the attachment manifest, public keys, the signature over the payload's raw bytes, and
 * the strict reading of the payload (signature/internal/sigstore_payload.go). Every
 * failure is FPULL_EPOLICY with a message of its own. */
#ifndef FP_SIG_SIGSTORE_H
#define FP_SIG_SIGSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "fpull/error.h"

/* The largest payload read (containers/image's MaxSignatureBodySize), and the most
 * attachments one .sig manifest may list (CVE-2024-29902/-29903: attacker-sized lists). */
#define FP_SIG_PAYLOAD_MAX (4u << 20)
#define FP_SIG_MAX_ATTACHMENTS 64

#define FP_SIG_LAYER_TYPE "application/vnd.dev.cosign.simplesigning.v1+json"
#define FP_SIG_ANNOTATION "dev.cosignproject.cosign/signature"

struct fp_sig_attachment {
  char *digest;
  int64_t size;
  char *signature; /* the annotation's base64 text; NULL when missing */
};

struct fp_sig_attachments {
  struct fp_sig_attachment *a; /* only the simple-signing layers */
  size_t n;
  size_t ignored; /* layers of other media types */
};

/* The .sig tag's manifest: an OCI image manifest whose simple-signing layers are the
 * signatures. */
int fp_sig_attachments_parse(struct fp_sig_attachments *out, const char *data, size_t len,
                             const char *content_type, fpull_err *err);
void fp_sig_attachments_free(struct fp_sig_attachments *s);

/* The public keys of one requirement: PEM files (paths) and base64 of PEM (datas). ECDSA
 * P-256/384/521, RSA, Ed25519. */
struct fp_sig_keys;
int fp_sig_keys_load(struct fp_sig_keys **out, char *const *paths, char *const *datas,
                     fpull_err *err);
void fp_sig_keys_free(struct fp_sig_keys *k);
/* PEM public key text to a key set of one (for tests and fpull manifest push). */
int fp_sig_keys_from_pem(struct fp_sig_keys **out, const char *pem, size_t len, const char *what,
                         fpull_err *err);

/* Checks signature_b64 (standard base64) over payload with SHA-256 (pure Ed25519) against
 * every key; the first that verifies gives *fingerprint ("sha256:HEX" of its
 * SubjectPublicKeyInfo, the caller frees). */
int fp_sig_verify(const struct fp_sig_keys *k, const char *signature_b64, const char *payload,
                  size_t len, char **fingerprint, fpull_err *err);

/* The payload, parsed only after its signature verified: exactly critical and optional;
 * critical exactly type, image and identity; no duplicate key anywhere; type "cosign
 * container image signature"; optional null or an object whose creator is a string and
 * timestamp an integer. *identity and *digest are the caller's. */
int fp_sig_payload_parse(char **identity, char **digest, const char *payload, size_t len,
                         fpull_err *err);

/* Strict standard base64 (padding required, no whitespace); *out is the caller's. -1 when
 * text is not base64. */
int fp_base64_decode(unsigned char **out, size_t *len, const char *text);

#endif
