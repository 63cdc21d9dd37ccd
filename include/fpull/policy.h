/* fpull: the site's signature policy (containers-policy.json) and what a check found. */
#ifndef FPULL_POLICY_H
#define FPULL_POLICY_H

#include "error.h"

/* A parsed containers-policy.json (the subset fpull evaluates: man fpull, SIGNATURES). */
typedef struct fpull_policy fpull_policy;

/* --signature-index: which signature an index entry chosen from an index needs. */
enum fpull_sigindex {
  FPULL_SIGINDEX_INSTANCE = 0, /* the entry's own (containers/image's rule, the default) */
  FPULL_SIGINDEX_EITHER,       /* the entry's or the index's */
  FPULL_SIGINDEX_BOTH          /* the entry's and the index's */
};

/* Reads path, or when path is NULL the first that exists of
 * $XDG_CONFIG_HOME/containers/policy.json (~/.config/containers/policy.json) and
 * /etc/containers/policy.json; *out stays NULL when none exists. A given path that is
 * missing, and any file that is not a valid policy, is FPULL_EUSAGE naming the file. */
FPULL_API int fpull_policy_load(fpull_policy **out, const char *path, fpull_err *err);
/* Parses policy text; name is used in messages. Errors: FPULL_EUSAGE. */
FPULL_API int fpull_policy_parse(fpull_policy **out, const char *text, size_t len, const char *name,
                                 fpull_err *err);
FPULL_API void fpull_policy_free(fpull_policy *p);
/* The file it was read from (or the name given to fpull_policy_parse). */
FPULL_API const char *fpull_policy_name(const fpull_policy *p);

/* What the signature check of one manifest found (pull, inspect, --json). */
struct fpull_sig_check {
  char *state;           /* "verified", "accepted" (no signature needed), "rejected" */
  char *scope;           /* the policy scope that applied: a docker scope, "docker \"\""
                            (the transport's default) or "default" */
  char *requirement;     /* the requirement that decided: "sigstoreSigned", "reject",
                            "insecureAcceptAnything", or the one fpull cannot evaluate */
  char *key_fingerprint; /* "sha256:HEX" of the accepting key's SubjectPublicKeyInfo, or NULL */
  char *identity;        /* the signed docker-reference, or NULL */
  char *digest;          /* the manifest digest checked */
  char *reason;          /* why it was rejected, or NULL */
};
FPULL_API void fpull_sig_check_free(struct fpull_sig_check *c);

/* ---- signing (fpull manifest push --sign-key) ---- */

typedef struct fpull_signer fpull_signer;
struct fpull_registry;
/* Loads an unencrypted PEM private key (ECDSA P-256/384/521, RSA, Ed25519). Errors:
 * FPULL_EUSAGE naming the file. */
FPULL_API int fpull_signer_load(fpull_signer **out, const char *key_path, fpull_err *err);
/* The same, for an encrypted key too: cosign's (ENCRYPTED SIGSTORE PRIVATE KEY: scrypt and
 * NaCl secretbox, cosign generate-key-pair's) or an encrypted PEM, with passphrase (NULL:
 * none given, and an encrypted key is FPULL_EUSAGE saying how to give one). */
FPULL_API int fpull_signer_load_key(fpull_signer **out, const char *key_path,
                                    const char *passphrase, fpull_err *err);
FPULL_API void fpull_signer_free(fpull_signer *s);
/* Signs the manifest digest in repo for identity (a docker reference, REGISTRY/REPO:TAG) and
 * pushes the signature as containers/image and cosign store it: the sha256-HEX.sig tag,
 * replacing what it held. Errors as the registry's. */
FPULL_API int fpull_signer_push(const fpull_signer *s, struct fpull_registry *reg, const char *repo,
                                const char *digest, const char *identity, fpull_err *err);
/* The same for several identities (NULL-terminated; each pushed tag of one image): one
 * signature each, all in the one .sig tag. */
FPULL_API int fpull_signer_push_identities(const fpull_signer *s, struct fpull_registry *reg,
                                           const char *repo, const char *digest,
                                           char *const *identities, fpull_err *err);

#endif
