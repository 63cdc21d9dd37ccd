#include <string.h>

#include "base/util.h"
#include "wwwauth.h"

#define WWWAUTH_MAX 16384
#define WWWAUTH_MAX_PARAMS 64

static int is_tchar(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int is_token68_char(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr("-._~+/", c));
}

static void skip_ws(const char **p)
{
  while (**p == ' ' || **p == '\t')
    (*p)++;
}

static char *read_token(const char **p)
{
  const char *s = *p;
  while (is_tchar(**p))
    (*p)++;
  if (*p == s)
    return NULL;
  cleanup_free char *raw = fp_xstrndup(s, (size_t)(*p - s));
  return fp_xstrdup_lower(raw);
}

/* Whether p starts "token BWS =" but not a token68 ending in '=' padding. */
static int at_param(const char *p)
{
  if (!is_tchar(*p))
    return 0;
  while (is_tchar(*p))
    p++;
  skip_ws(&p);
  if (*p != '=')
    return 0;
  p++;
  skip_ws(&p);
  /* "abc==" or "abc=" then end/comma is token68 padding, not a parameter. */
  return *p && *p != ',' && *p != '=';
}

static int at_token68(const char *p)
{
  const char *s = p;
  while (is_token68_char(*p))
    p++;
  if (p == s)
    return 0;
  while (*p == '=')
    p++;
  skip_ws(&p);
  return *p == '\0' || *p == ',';
}

static char *read_quoted(const char **p, fpull_err *err)
{
  struct fp_buf b = {.max = WWWAUTH_MAX};
  (*p)++;
  for (;;) {
    char c = **p;
    if (c == '\0') {
      fp_buf_free(&b);
      fpull_err_set(err, FPULL_ENET, "unterminated quoted string");
      return NULL;
    }
    (*p)++;
    if (c == '"')
      break;
    if (c == '\\') {
      c = **p;
      if (c == '\0')
        continue;
      (*p)++;
    }
    if ((unsigned char)c < 0x20 && c != '\t') {
      fp_buf_free(&b);
      fpull_err_set(err, FPULL_ENET, "control character in quoted string");
      return NULL;
    }
    fp_buf_append(&b, &c, 1);
  }
  if (!b.data)
    return fp_xstrdup("");
  return b.data;
}

static void challenge_free(struct fp_challenge *c)
{
  free(c->scheme);
  fpull_strv_free(c->params);
  free(c->token68);
}

void fp_challenges_free(struct fp_challenges *c)
{
  for (size_t i = 0; i < c->n; i++)
    challenge_free(&c->v[i]);
  free(c->v);
  c->v = NULL;
  c->n = 0;
}

static int parse_params(const char **p, struct fp_challenge *ch, fpull_err *err)
{
  size_t count = 0;
  while (at_param(*p)) {
    cleanup_free char *key = read_token(p);
    skip_ws(p);
    (*p)++; /* '=' */
    skip_ws(p);
    cleanup_free char *val = NULL;
    if (**p == '"') {
      val = read_quoted(p, err);
      if (!val)
        return err ? err->code : FPULL_ENET;
    } else {
      const char *s = *p;
      while (is_tchar(**p))
        (*p)++;
      if (*p == s)
        return fpull_err_set(err, FPULL_ENET, "parameter %s has no value", key);
      val = fp_xstrndup(s, (size_t)(*p - s));
    }
    if (fp_challenge_param(ch, key))
      return fpull_err_set(err, FPULL_ENET, "parameter %s given twice", key);
    if (++count > WWWAUTH_MAX_PARAMS)
      return fpull_err_set(err, FPULL_ENET, "too many parameters");
    ch->params = fp_strv_push(ch->params, key);
    ch->params = fp_strv_push(ch->params, val);
    skip_ws(p);
    if (**p == '\0')
      break;
    if (**p != ',')
      return fpull_err_set(err, FPULL_ENET, "unexpected '%c' after parameter %s", **p, key);
    /* A comma ends this parameter; what follows is a parameter or the next challenge. */
    while (**p == ',' || **p == ' ' || **p == '\t')
      (*p)++;
  }
  return 0;
}

int fp_wwwauth_parse(const char *header, struct fp_challenges *out, fpull_err *err)
{
  out->v = NULL;
  out->n = 0;
  if (!header || strlen(header) > WWWAUTH_MAX)
    return fpull_err_set(err, FPULL_ENET, "malformed WWW-Authenticate: missing or too long");
  for (const char *q = header; *q; q++)
    if ((unsigned char)*q < 0x20 && *q != '\t')
      return fpull_err_set(err, FPULL_ENET,
                           "malformed WWW-Authenticate: control character in header");
  const char *p = header;
  for (;;) {
    while (*p == ',' || *p == ' ' || *p == '\t')
      p++;
    if (*p == '\0')
      break;
    struct fp_challenge ch = {0};
    ch.scheme = read_token(&p);
    if (!ch.scheme) {
      fp_challenges_free(out);
      return fpull_err_set(err, FPULL_ENET,
                           "malformed WWW-Authenticate: expected an auth scheme at \"%.40s\"", p);
    }
    if (*p != '\0' && *p != ' ' && *p != '\t' && *p != ',') {
      challenge_free(&ch);
      fp_challenges_free(out);
      return fpull_err_set(err, FPULL_ENET,
                           "malformed WWW-Authenticate: unexpected '%c' after scheme", *p);
    }
    skip_ws(&p);
    int rc = 0;
    if (at_param(p)) {
      rc = parse_params(&p, &ch, err);
    } else if (at_token68(p)) {
      const char *s = p;
      while (is_token68_char(*p) || *p == '=')
        p++;
      ch.token68 = fp_xstrndup(s, (size_t)(p - s));
    } else if (*p != '\0' && *p != ',') {
      rc = fpull_err_set(err, FPULL_ENET, "unexpected \"%.20s\"", p);
    }
    if (rc) {
      challenge_free(&ch);
      fp_challenges_free(out);
      return fpull_err_prefix(err, "malformed WWW-Authenticate");
    }
    out->v = fp_xrealloc(out->v, (out->n + 1) * sizeof *out->v);
    out->v[out->n++] = ch;
  }
  if (out->n == 0)
    return fpull_err_set(err, FPULL_ENET, "malformed WWW-Authenticate: no challenge");
  return 0;
}

const char *fp_challenge_param(const struct fp_challenge *c, const char *key)
{
  for (size_t i = 0; c->params && c->params[i] && c->params[i + 1]; i += 2)
    if (strcmp(c->params[i], key) == 0)
      return c->params[i + 1];
  return NULL;
}

const struct fp_challenge *fp_challenges_find(const struct fp_challenges *c, const char *scheme)
{
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->v[i].scheme, scheme) == 0)
      return &c->v[i];
  return NULL;
}
