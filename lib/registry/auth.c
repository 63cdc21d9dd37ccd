/* Registry authentication: the 401 challenge, Bearer tokens from the realm, Basic. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <string.h>
#include <strings.h>

#include "fpull/ref.h"
#include "registry_internal.h"
#include "wwwauth.h"

int fp_auth_challenge(struct fp_endpoint *ep, const char *www_authenticate, fpull_err *err)
{
  struct fp_challenges cs;
  if (!www_authenticate)
    return fpull_err_set(err, FPULL_EAUTH, "%s answered 401 without a WWW-Authenticate header",
                         ep->hostport);
  int rc = fp_wwwauth_parse(www_authenticate, &cs, err);
  if (rc)
    return fpull_err_prefix(err, "%s", ep->hostport);
  const struct fp_challenge *bearer = fp_challenges_find(&cs, "bearer");
  const struct fp_challenge *basic = fp_challenges_find(&cs, "basic");
  if (bearer) {
    const char *realm = fp_challenge_param(bearer, "realm");
    if (!realm || !*realm) {
      fp_challenges_free(&cs);
      return fpull_err_set(err, FPULL_ENET, "%s: Bearer challenge without a realm", ep->hostport);
    }
    free(ep->realm);
    free(ep->service);
    ep->realm = fp_xstrdup(realm);
    ep->service = fp_xstrdup(fp_challenge_param(bearer, "service"));
    ep->auth = FP_AUTH_BEARER;
  } else if (basic) {
    ep->auth = FP_AUTH_BASIC;
  } else {
    fpull_err_set(err, FPULL_EAUTH, "%s asks for an unsupported authentication scheme \"%s\"",
                  ep->hostport, cs.v[0].scheme);
    fp_challenges_free(&cs);
    return FPULL_EAUTH;
  }
  fp_challenges_free(&cs);
  return 0;
}

static char *basic_value(const struct fp_creds *c)
{
  cleanup_free char *up = fp_xasprintf("%s:%s", c->username ? c->username : "", c->password);
  char *b64 = fp_base64_encode(up, strlen(up));
  char *out = fp_xasprintf("Basic %s", b64);
  explicit_bzero(up, strlen(up));
  explicit_bzero(b64, strlen(b64));
  free(b64);
  return out;
}

/* A token goes into a header line: anything outside visible ASCII could inject one. */
static int token_ok(const char *t)
{
  if (!*t)
    return 0;
  for (; *t; t++)
    if ((unsigned char)*t < 0x21 || (unsigned char)*t > 0x7e)
      return 0;
  return 1;
}

static int realm_check(struct fp_endpoint *ep, const char *realm, int *https, fpull_err *err)
{
  CURLU *u = curl_url();
  char *scheme = NULL, *user = NULL;
  int rc = 0;
  if (curl_url_set(u, CURLUPART_URL, realm, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
    rc = fpull_err_set(err, FPULL_EAUTH, "%s: token realm is not a URL", ep->hostport);
  } else if (strcasecmp(scheme, "https") != 0 && strcasecmp(scheme, "http") != 0) {
    rc = fpull_err_set(err, FPULL_EAUTH, "%s: token realm scheme %s refused", ep->hostport, scheme);
  } else if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK && user) {
    rc = fpull_err_set(err, FPULL_EAUTH, "%s: token realm with user information refused",
                       ep->hostport);
  }
  if (!rc)
    *https = strcasecmp(scheme, "https") == 0;
  curl_free(scheme);
  curl_free(user);
  curl_url_cleanup(u);
  return rc;
}

/* 1 when host (no port, no brackets) is an IP literal in loopback, link-local or private
 * space: a realm there from a public registry is an SSRF or credential-theft attempt. */
static int internal_ip(const char *host)
{
  unsigned char a[16];
  if (inet_pton(AF_INET, host, a) == 1)
    return a[0] == 127 || a[0] == 10 || (a[0] == 169 && a[1] == 254) ||
           (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168) || a[0] == 0;
  if (inet_pton(AF_INET6, host, a) == 1) {
    static const unsigned char lo[16] = {[15] = 1};
    return memcmp(a, lo, 16) == 0 || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) ||
           (a[0] & 0xfe) == 0xfc;
  }
  return 0;
}

static char *url_host(const char *url)
{
  CURLU *u = curl_url();
  char *h = NULL, *out = NULL;
  if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK) {
    size_t n = strlen(h);
    out = h[0] == '[' && n > 1 ? fp_xstrndup(h + 1, n - 2) : fp_xstrdup(h);
  }
  curl_free(h);
  curl_url_cleanup(u);
  return out;
}

static char *token_url(const char *realm, const char *service, const char *scope)
{
  CURLU *u = curl_url();
  char *s = NULL, *out = NULL;
  if (curl_url_set(u, CURLUPART_URL, realm, 0) == CURLUE_OK) {
    if (service && *service) {
      cleanup_free char *q = fp_xasprintf("service=%s", service);
      curl_url_set(u, CURLUPART_QUERY, q, CURLU_APPENDQUERY | CURLU_URLENCODE);
    }
    /* Several scopes (a cross-repository mount) are separate scope parameters. */
    cleanup_free char *scopes = fp_xstrdup(scope);
    char *save = NULL;
    for (char *t = strtok_r(scopes, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
      cleanup_free char *q = fp_xasprintf("scope=%s", t);
      curl_url_set(u, CURLUPART_QUERY, q, CURLU_APPENDQUERY | CURLU_URLENCODE);
    }
    if (curl_url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK)
      out = fp_xstrdup(s);
  }
  curl_free(s);
  curl_url_cleanup(u);
  return out;
}

static char *form_escape(const char *s)
{
  char *e = curl_easy_escape(NULL, s, 0);
  char *out = fp_xstrdup(e);
  curl_free(e);
  return out;
}

static int fetch_token(fpull_registry *r, struct fp_endpoint *ep, const char *scope, char **token,
                       fpull_err *err)
{
  int realm_https = 0;
  int rc = realm_check(ep, ep->realm, &realm_https, err);
  if (rc)
    return rc;
  int have_creds = ep->creds.password || ep->creds.identity_token;
  int registry_https = ep->base && strncmp(ep->base, "https://", 8) == 0;
  int send_creds = have_creds && (realm_https || !registry_https);
  if (have_creds && !send_creds)
    fp_warn("%s: not sending credentials to the plain-HTTP token realm of an HTTPS registry",
            ep->hostport);
  cleanup_free char *rhost = url_host(ep->realm);
  cleanup_free char *ehost = url_host(ep->base ? ep->base : ep->https_base);
  if (send_creds && rhost && internal_ip(rhost) && !(ehost && internal_ip(ehost)) &&
      !fpull_ref_host_is_loopback(ep->hostport)) {
    fp_warn("%s: not sending credentials to the token realm at internal address %s", ep->hostport,
            rhost);
    send_creds = 0;
  }
  cleanup_free char *url = token_url(ep->realm, ep->service, scope);
  if (!url)
    return fpull_err_set(err, FPULL_EAUTH, "%s: bad token realm", ep->hostport);
  cleanup_free char *origin = fp_url_origin(url);
  cleanup_free char *realm_host = NULL;
  {
    const char *h = strstr(url, "://") + 3;
    realm_host = fp_xstrndup(h, strcspn(h, "/?#"));
  }
  struct fp_tls tls;
  rc = fp_tls_find(&tls, realm_host, NULL, r->certs_dir, r->config_certs_dir, err);
  if (rc)
    return rc;
  int same_host = strcmp(realm_host, ep->hostport) == 0;
  struct fp_http_req req = {.method = "GET",
                            .url = url,
                            .origin = origin,
                            .max_body = FP_TOKEN_MAX,
                            .tls = same_host ? &ep->tls : &tls};
  req.verify_tls = same_host ? ep->verify_tls : !fpull_ref_host_is_loopback(realm_host);
  cleanup_free char *authz = NULL;
  cleanup_free char *form = NULL;
  struct curl_slist *hdrs = NULL;
  if (send_creds && ep->creds.identity_token) {
    /* docker's identity token: the OAuth2 refresh-token grant (POST). */
    cleanup_free char *t = form_escape(ep->creds.identity_token);
    cleanup_free char *sv = form_escape(ep->service ? ep->service : "");
    cleanup_free char *sc = form_escape(scope);
    form = fp_xasprintf("grant_type=refresh_token&client_id=fpull&service=%s&scope=%s&"
                        "refresh_token=%s",
                        sv, sc, t);
    explicit_bzero(t, strlen(t));
    req.method = "POST";
    req.url = ep->realm;
    req.body = form;
    req.body_len = strlen(form);
    hdrs = curl_slist_append(hdrs, "Content-Type: application/x-www-form-urlencoded");
    req.headers = hdrs;
    free(origin);
    origin = fp_url_origin(ep->realm);
    req.origin = origin;
  } else if (send_creds) {
    authz = basic_value(&ep->creds);
    req.authorization = authz;
  }
  struct fp_http_resp resp;
  int tries = r->max_tries, attempts = 0;
  for (int attempt = 1;; attempt++) {
    attempts = attempt;
    rc = fp_http_perform(r, &req, &resp);
    if (rc == 0 && resp.status < 500)
      break;
    if (attempt >= tries || (rc && !fp_http_retryable(&resp)))
      break;
    fp_http_resp_free(&resp);
  }
  curl_slist_free_all(hdrs);
  if (form)
    explicit_bzero(form, strlen(form));
  if (authz)
    explicit_bzero(authz, strlen(authz));
  fp_tls_free(&tls);
  char note[32];
  if (rc) {
    rc = fpull_err_set(err, resp.too_large ? FPULL_EAUTH : FPULL_ENET, "token server %s: %s%s",
                       realm_host,
                       resp.too_large ? "token response over 1 MiB" : fp_curl_describe(&resp),
                       fp_tries_note(note, attempts));
    fp_http_resp_free(&resp);
    return rc;
  }
  if (resp.status == 401 || resp.status == 403) {
    fp_http_resp_free(&resp);
    /* Which credentials: the user may have several sources and not know which won. */
    if (send_creds)
      return fpull_err_set(err, FPULL_EAUTH,
                           "token server %s refused the credentials of %s from %s (HTTP %ld)",
                           realm_host, ep->creds.username ? ep->creds.username : "(token)",
                           ep->creds.source ? ep->creds.source : "?", resp.status);
    return fpull_err_set(err, FPULL_EAUTH, "token server %s refused an anonymous token (HTTP %ld)",
                         realm_host, resp.status);
  }
  if (resp.status != 200) {
    long st = resp.status;
    fp_http_resp_free(&resp);
    return fpull_err_set(err, st >= 500 ? FPULL_ENET : FPULL_EAUTH,
                         "token server %s answered HTTP %ld%s", realm_host, st,
                         fp_tries_note(note, st >= 500 ? attempts : 1));
  }
  rc = fp_token_answer(resp.body.data ? resp.body.data : "", resp.body.len, token);
  fp_http_resp_free(&resp);
  if (rc == FP_TOKEN_NONE)
    return fpull_err_set(err, FPULL_EAUTH, "token server %s: no token in the answer", realm_host);
  if (rc == FP_TOKEN_UNSAFE)
    return fpull_err_set(err, FPULL_EAUTH, "token server %s: token with control characters refused",
                         realm_host);
  return 0;
}

int fp_token_answer(const char *body, size_t len, char **token)
{
  *token = NULL;
  cJSON *j = cJSON_ParseWithLength(body, len);
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "token");
  if (!cJSON_IsString(t) || !t->valuestring[0])
    t = cJSON_GetObjectItemCaseSensitive(j, "access_token");
  int rc = !cJSON_IsString(t) || !t->valuestring[0] ? FP_TOKEN_NONE
           : !token_ok(t->valuestring)              ? FP_TOKEN_UNSAFE
                                                    : 0;
  if (rc == 0)
    *token = fp_xstrdup(t->valuestring);
  cJSON_Delete(j);
  return rc;
}

int fp_auth_token(fpull_registry *r, struct fp_endpoint *ep, const char *scope, int refresh,
                  const char **token, fpull_err *err)
{
  struct fp_token **pp = &ep->tokens;
  for (; *pp; pp = &(*pp)->next)
    if (strcmp((*pp)->scope, scope) == 0)
      break;
  if (*pp && !refresh) {
    *token = (*pp)->token;
    return 0;
  }
  char *t = NULL;
  int rc = fetch_token(r, ep, scope, &t, err);
  if (rc)
    return rc;
  if (!*pp) {
    *pp = fp_xcalloc(1, sizeof **pp);
    (*pp)->scope = fp_xstrdup(scope);
  } else {
    explicit_bzero((*pp)->token, strlen((*pp)->token));
    free((*pp)->token);
  }
  (*pp)->token = t;
  *token = t;
  return 0;
}

int fp_auth_header(fpull_registry *r, struct fp_endpoint *ep, const char *scope, int refresh,
                   char **out, fpull_err *err)
{
  *out = NULL;
  if (ep->auth == FP_AUTH_BASIC) {
    if (ep->creds.password)
      *out = basic_value(&ep->creds);
    return 0;
  }
  if (ep->auth != FP_AUTH_BEARER || !scope)
    return 0;
  const char *t = NULL;
  int rc = fp_auth_token(r, ep, scope, refresh, &t, err);
  if (rc)
    return rc;
  *out = fp_xasprintf("Bearer %s", t);
  return 0;
}
