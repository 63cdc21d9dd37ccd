/* Internal: containers-policy.json as fpull evaluates it (containers/image's rules). */
#ifndef FP_SIG_POLICY_H
#define FP_SIG_POLICY_H

#include <stddef.h>

#include "fpull/policy.h"

/* Largest policy file read. */
#define FP_POLICY_MAX (1u << 20)

enum fp_req_type {
  FP_REQ_ACCEPT,     /* insecureAcceptAnything */
  FP_REQ_REJECT,     /* reject */
  FP_REQ_SIGSTORE,   /* sigstoreSigned with public keys */
  FP_REQ_UNSUPPORTED /* valid in the file, but fpull cannot evaluate it: rejects */
};

enum fp_ident_type {
  FP_ID_REPO_DIGEST_OR_EXACT, /* matchRepoDigestOrExact, the default */
  FP_ID_EXACT,                /* matchExact */
  FP_ID_REPOSITORY,           /* matchRepository */
  FP_ID_EXACT_REFERENCE,      /* exactReference{dockerReference} */
  FP_ID_EXACT_REPOSITORY,     /* exactRepository{dockerRepository} */
  FP_ID_REMAP                 /* remapIdentity{prefix, signedPrefix} */
};

struct fp_identity {
  enum fp_ident_type type;
  char *a; /* dockerReference, dockerRepository or prefix */
  char *b; /* signedPrefix */
};

struct fp_req {
  enum fp_req_type type;
  char *name;       /* as the message names it: "sigstoreSigned", "signedBy", "sigstoreSigned
                       with fulcio", ... */
  char **key_paths; /* keyPath / keyPaths (NULL-terminated) */
  char **key_datas; /* keyData / keyDatas, base64 of PEM as in the file */
  struct fp_identity id;
};

struct fp_reqlist {
  char *scope; /* as messages name it */
  struct fp_req *r;
  size_t n;
};

/* A docker reference as policies compare them: name is REGISTRY/REPOSITORY, fully
 * expanded (docker.io/library/busybox); tag and digest NULL when absent. */
struct fp_dref {
  char *name, *tag, *digest;
};
void fp_dref_clear(struct fp_dref *d);
/* Parses a docker reference as containers/image's ParseNormalizedNamed does (Docker Hub
 * names expanded, no implied :latest). Returns 0 or -1. */
int fp_dref_parse(struct fp_dref *d, const char *text);
/* NAME:TAG, NAME@DIGEST (a digest wins over a tag) or NAME; caller frees. */
char *fp_dref_string(const struct fp_dref *d);

/* The one list of requirements for image (name, tag, digest), the most specific scope of
 * the docker transport, else its "" default, else the policy's default. */
const struct fp_reqlist *fp_policy_for(const fpull_policy *p, const struct fp_dref *image);

/* 1 when signed (the signature's docker-reference, parsed) is accepted for image by id. */
int fp_identity_accepts(const struct fp_identity *id, const struct fp_dref *image,
                        const struct fp_dref *signed_ref);

#endif
