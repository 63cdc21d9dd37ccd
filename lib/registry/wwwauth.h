/* WWW-Authenticate parsing (RFC 7235 challenges), for the registry's 401 answers. */
#ifndef FP_WWWAUTH_H
#define FP_WWWAUTH_H

#include <stddef.h>

#include "fpull/error.h"

struct fp_challenge {
  char *scheme;  /* lower case: "bearer", "basic", ... */
  char **params; /* key, value, key, value, ..., NULL; keys lower case */
  char *token68; /* the token68 form ("Negotiate abc=="), or NULL */
};

struct fp_challenges {
  struct fp_challenge *v;
  size_t n;
};

/* Parses every challenge of one header value. Malformed input (unterminated quote,
 * missing '=', duplicate parameter, control characters, over 16 KiB) is FPULL_ENET with
 * the reason; *out is then empty. */
int fp_wwwauth_parse(const char *header, struct fp_challenges *out, fpull_err *err);
void fp_challenges_free(struct fp_challenges *c);

/* The value of parameter key (lower case) or NULL. */
const char *fp_challenge_param(const struct fp_challenge *c, const char *key);
/* The first challenge with that scheme (lower case) or NULL. */
const struct fp_challenge *fp_challenges_find(const struct fp_challenges *c, const char *scheme);

#endif
