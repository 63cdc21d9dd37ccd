/* Registry credentials from docker's and containers' auth files and credential helpers. */
#ifndef FP_CREDS_H
#define FP_CREDS_H

#include "fpull/error.h"

struct fp_creds {
  char *username;
  char *password;       /* never logged */
  char *identity_token; /* OAuth2 refresh token ("identitytoken"), or NULL */
  char *source;         /* where they came from, for messages ("/home/u/.docker/config.json") */
};

/* Credentials for registry ("docker.io", "host:port"), searched in
 * $DOCKER_CONFIG/config.json (else ~/.docker/config.json): credHelpers, auths, credsStore;
 * then $REGISTRY_AUTH_FILE, then $XDG_RUNTIME_DIR/containers/auth.json. No credentials is
 * not an error (*out stays empty). A malformed file is FPULL_EUSAGE; a helper that fails
 * other than "not found" is FPULL_EAUTH. As root, helpers named by a file owned by another
 * user are not run. */
int fp_creds_lookup(struct fp_creds *out, const char *registry, fpull_err *err);
/* Wipes and frees. */
void fp_creds_free(struct fp_creds *c);

/* Decodes base64 "user:password" (docker's `auth`); 0 or -1 when malformed. */
int fp_creds_decode_auth(const char *b64, char **user, char **password);
/* Base64 (standard alphabet, padded) of n bytes; caller frees. */
char *fp_base64_encode(const void *data, size_t n);

#endif
