/* The registry client: ping, auth, retries, mirrors, manifests and blobs (pull side). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/digest.h"
#include "base/opts.h"
#include "fpull/config.h"
#include "fpull/manifest.h"
#include "fpull/ref.h"
#include "registry_internal.h"

/* Interruptions a download may survive when each one made progress. */
#define FP_MAX_RESUMES 100

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void)
{
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
  fpull_registry *r = ud;
  pthread_mutex_lock(&r->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
  fpull_registry *r = ud;
  pthread_mutex_unlock(&r->share_locks[data]);
}

static void endpoint_free(struct fp_endpoint *ep)
{
  free(ep->hostport);
  free(ep->https_base);
  free(ep->http_base);
  free(ep->base);
  free(ep->realm);
  free(ep->service);
  fp_tls_free(&ep->tls);
  fp_creds_free(&ep->creds);
  for (struct fp_token *t = ep->tokens, *n; t; t = n) {
    n = t->next;
    explicit_bzero(t->token, strlen(t->token));
    free(t->token);
    free(t->scope);
    free(t);
  }
}

void fpull_registry_free(fpull_registry *r)
{
  if (!r)
    return;
  for (size_t i = 0; i < r->neps; i++)
    endpoint_free(&r->eps[i]);
  free(r->eps);
  for (size_t i = 0; i < r->npool; i++)
    curl_easy_cleanup(r->pool[i]);
  free(r->pool);
  if (r->share)
    curl_share_cleanup(r->share);
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_destroy(&r->share_locks[i]);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->pool_mu);
  free(r->name);
  free(r->host);
  free(r->certs_dir);
  free(r->config_certs_dir);
  free(r->cert_dir);
  free(r);
}

static int endpoint_init(struct fp_endpoint *ep, const char *hostport, const char *scheme,
                         const char *prefix, int insecure, const struct fpull_registry_opts *opts,
                         fpull_err *err)
{
  ep->hostport = fp_xstrdup(hostport);
  int loopback = fpull_ref_host_is_loopback(hostport);
  int lax = insecure || loopback;
  if (!scheme || strcmp(scheme, "https") == 0)
    ep->https_base = fp_xasprintf("https://%s%s", hostport, prefix);
  /* Insecure and loopback registries: HTTPS unverified first, then HTTP. */
  if ((!scheme && lax) || (scheme && strcmp(scheme, "http") == 0))
    ep->http_base = fp_xasprintf("http://%s%s", hostport, prefix);
  ep->verify_tls = !lax;
  /* --cert-dir is the registry's own folder, not a mirror's. */
  const char *cert_dir = !ep->is_mirror && opts && opts->version >= 2 ? opts->cert_dir : NULL;
  int rc = fp_tls_find(&ep->tls, hostport, cert_dir, opts ? opts->certs_dir : NULL,
                       opts ? opts->config_certs_dir : NULL, err);
  if (rc)
    return rc;
  /* --creds: the registry's own, given on the command line; never a mirror's. */
  const char *given = !ep->is_mirror && opts && opts->version >= 2 ? opts->creds : NULL;
  if (given) {
    const char *colon = strchr(given, ':');
    if (!colon || colon == given)
      return fpull_err_set(err, FPULL_EUSAGE, "--creds takes USER:PASSWORD");
    memset(&ep->creds, 0, sizeof ep->creds);
    ep->creds.username = fp_xstrndup(given, (size_t)(colon - given));
    ep->creds.password = fp_xstrdup(colon + 1);
    ep->creds.source = fp_xstrdup("--creds");
    return 0;
  }
  return fp_creds_lookup(&ep->creds, hostport, err);
}

/* "https://mirror.example.org/prefix/" -> scheme, host[:port], "/prefix". */
static int mirror_init(struct fp_endpoint *ep, const char *url, int insecure,
                       const struct fpull_registry_opts *opts, fpull_err *err)
{
  const char *scheme = "https", *rest = url;
  if (strncasecmp(url, "https://", 8) == 0)
    rest = url + 8;
  else if (strncasecmp(url, "http://", 7) == 0)
    scheme = "http", rest = url + 7;
  else if (strstr(url, "://"))
    return fpull_err_set(err, FPULL_EUSAGE, "registry mirror %s: only http(s) mirrors", url);
  size_t hl = strcspn(rest, "/?#");
  cleanup_free char *hostport = fp_xstrndup(rest, hl);
  cleanup_free char *prefix = fp_xstrndup(rest + hl, strcspn(rest + hl, "?#"));
  size_t pl = strlen(prefix);
  while (pl && prefix[pl - 1] == '/')
    prefix[--pl] = '\0';
  if (!*hostport)
    return fpull_err_set(err, FPULL_EUSAGE, "registry mirror %s: no host", url);
  /* An http:// mirror only where plain HTTP is acceptable for that host. */
  if (strcmp(scheme, "http") == 0 && !insecure && !fpull_ref_host_is_loopback(hostport))
    return fpull_err_set(err, FPULL_EUSAGE,
                         "registry mirror %s: plain HTTP for a host that is not insecure", url);
  ep->is_mirror = 1;
  return endpoint_init(ep, hostport, scheme, prefix, insecure, opts, err);
}

int fpull_registry_open(fpull_registry **out, const char *registry,
                        const struct fpull_registry_opts *opts, fpull_err *err)
{
  *out = NULL;
  if (!registry || !*registry || strpbrk(registry, "/?#@ \t\r\n"))
    return fpull_err_set(err, FPULL_EUSAGE, "bad registry name \"%s\"", registry ? registry : "");
  if (opts && FP_OPTS_CHECK(opts, FPULL_REGISTRY_OPTS, "fpull_registry_opts", err))
    return FPULL_EUSAGE;
  pthread_once(&curl_once, curl_init);
  fpull_registry *r = fp_xcalloc(1, sizeof *r);
  r->name = fp_xstrdup(registry);
  struct fpull_ref ref = {.registry = r->name};
  r->host = fp_xstrdup(fpull_ref_api_host(&ref));
  r->max_tries = opts && opts->max_tries > 0 ? opts->max_tries : 5;
  r->certs_dir = fp_xstrdup(opts ? opts->certs_dir : NULL);
  r->config_certs_dir = fp_xstrdup(opts ? opts->config_certs_dir : NULL);
  r->cert_dir = fp_xstrdup(opts && opts->version >= 2 ? opts->cert_dir : NULL);
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_init(&r->share_locks[i], NULL);
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->pool_mu, NULL);
  /* DNS and TLS sessions are shared between threads; connections stay with the pooled
   * easy handles (libcurl's shared connection cache is not meant for concurrent threads). */
  r->share = curl_share_init();
  curl_share_setopt(r->share, CURLSHOPT_LOCKFUNC, share_lock);
  curl_share_setopt(r->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
  curl_share_setopt(r->share, CURLSHOPT_USERDATA, r);
  curl_share_setopt(r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  size_t nm = opts ? fpull_strv_len(opts->mirrors) : 0;
  r->eps = fp_xcalloc(nm + 1, sizeof *r->eps);
  int insecure = opts && opts->insecure;
  for (size_t i = 0; i < nm; i++) {
    fpull_err merr = {0};
    const char *m = opts->mirrors[i], *h = strstr(m, "://");
    h = h ? h + 3 : m;
    cleanup_free char *mhost = fp_xstrndup(h, strcspn(h, "/?#"));
    /* --insecure names IMAGE's registry only (contract v3): a mirror is insecure only when
     * the config says so of the mirror itself (or it is a loopback literal). */
    int minsecure = opts->config && fpull_config_is_insecure(opts->config, mhost);
    if (mirror_init(&r->eps[r->neps], m, minsecure, opts, &merr)) {
      fp_warn("%s", merr.msg);
      endpoint_free(&r->eps[r->neps]);
      memset(&r->eps[r->neps], 0, sizeof *r->eps);
      continue;
    }
    r->neps++;
  }
  int rc = endpoint_init(&r->eps[r->neps++], r->host, NULL, "", insecure, opts, err);
  if (rc) {
    fpull_registry_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* ---- retries ---- */

static long env_ms(const char *name, long def)
{
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : def;
}

static void sleep_ms(long ms)
{
  if (ms <= 0)
    return;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0)
    ;
}

long fp_retry_after_ms(const char *value, long max)
{
  long long s = -1;
  if (isdigit((unsigned char)value[0])) {
    char *end;
    errno = 0;
    s = strtoll(value, &end, 10);
    if (errno == ERANGE)
      s = LLONG_MAX;
  } else if (*value) {
    time_t when = curl_getdate(value, NULL);
    time_t now = time(NULL);
    /* A date gone by says nothing: the usual backoff then, not a retry at once. */
    if (when > now)
      s = (long long)(when - now);
  }
  if (s < 0)
    return -1;
  /* In seconds first: a server's huge number must not overflow on its way to ms. */
  return s > max / 1000 ? max : (long)s * 1000;
}

/* Exponential backoff with jitter; a Retry-After from the server wins (bounded). */
static long backoff_ms(int attempt, const char *retry_after)
{
  if (retry_after && *retry_after) {
    long ms = fp_retry_after_ms(retry_after, env_ms("FPULL_RETRY_AFTER_MAX_MS", 60000));
    if (ms >= 0)
      return ms;
  }
  long base = env_ms("FPULL_RETRY_BASE_MS", 500);
  long d = base;
  for (int i = 1; i < attempt && d < 30000; i++)
    d *= 2;
  if (d > 30000)
    d = 30000;
  unsigned seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&d ^ (unsigned)attempt;
  return d / 2 + (d > 1 ? (long)(rand_r(&seed) % (d / 2 + 1)) : 0);
}

static int status_retryable(long s)
{
  return s == 429 || (s >= 500 && s != 501 && s != 505);
}

/* ---- ping ---- */

/* A TLS handshake that got an answer that is not TLS at all: OpenSSL reads the first bytes
 * of "HTTP/1.1 400" as a record of a version it does not know. Retrying cannot help. */
static int not_tls(const struct fp_http_resp *resp)
{
  static const char *const marks[] = {"wrong version number", "unknown protocol",
                                      "packet length too long",
                                      "An unexpected TLS packet was received", NULL};
  if (resp->status || resp->curl != CURLE_SSL_CONNECT_ERROR)
    return 0;
  const char *d = fp_curl_describe(resp);
  for (size_t i = 0; marks[i]; i++)
    if (strstr(d, marks[i]))
      return 1;
  return 0;
}

/* The server at https_base answered the handshake with something that is not TLS: one
 * plain-HTTP GET of /v2/ (no credentials, no retries) tells whether it speaks plain HTTP,
 * the lab registry without --insecure (issue 43.1). That is no outage but a setting
 * missing: exit 2 with the two ways to allow it, as skopeo says it in one line. */
static int plain_http_error(fpull_registry *r, struct fp_endpoint *ep, const char *detail,
                            fpull_err *err)
{
  cleanup_free char *url = fp_xasprintf("http://%s/v2/", ep->https_base + strlen("https://"));
  struct fp_http_req req = {.method = "GET", .url = url, .max_body = FP_ERRBODY_MAX};
  struct fp_http_resp resp = {0};
  int http = fp_http_perform(r, &req, &resp) == 0 && resp.status > 0;
  fp_http_resp_free(&resp);
  if (!http)
    return fpull_err_set(err, FPULL_ENET, "%s does not speak TLS (%s)", ep->hostport, detail);
  if (ep->is_mirror)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "registry mirror %s speaks plain HTTP, not HTTPS: give it as http://%s "
                         "and list %s under insecure-registries: in the config",
                         ep->hostport, ep->hostport, ep->hostport);
  return fpull_err_set(err, FPULL_EUSAGE,
                       "%s speaks plain HTTP, not HTTPS: to allow it, use --insecure or list %s "
                       "under insecure-registries: in the config",
                       ep->hostport, ep->hostport);
}

static int ensure_ready(fpull_registry *r, struct fp_endpoint *ep, fpull_err *err)
{
  pthread_mutex_lock(&r->mu);
  if (ep->pinged) {
    pthread_mutex_unlock(&r->mu);
    return 0;
  }
  const char *bases[] = {ep->https_base, ep->http_base};
  struct fp_http_resp resp = {0};
  int rc = FPULL_ENET;
  char last[CURL_ERROR_SIZE + 128] = "";
  int transient = 0, tries = 0, unresolved = 0;
  char cert_detail[CURL_ERROR_SIZE] = "", plain_detail[CURL_ERROR_SIZE] = "";
  for (int attempt = 1; attempt <= r->max_tries; attempt++) {
    transient = 0;
    tries = attempt;
    for (size_t i = 0; i < 2; i++) {
      if (!bases[i])
        continue;
      cleanup_free char *url = fp_xasprintf("%s/v2/", bases[i]);
      cleanup_free char *origin = fp_url_origin(url);
      struct fp_http_req req = {.method = "GET",
                                .url = url,
                                .origin = origin,
                                .max_body = FP_ERRBODY_MAX,
                                .tls = &ep->tls,
                                .verify_tls = ep->verify_tls};
      if (fp_http_perform(r, &req, &resp) == 0 && !status_retryable(resp.status)) {
        free(ep->base);
        ep->base = fp_xstrdup(bases[i]);
        if (resp.status == 401)
          rc = fp_auth_challenge(ep, resp.www_authenticate, err);
        else
          rc = 0;
        ep->pinged = rc == 0;
        fp_http_resp_free(&resp);
        pthread_mutex_unlock(&r->mu);
        return rc;
      }
      unresolved = !resp.status && resp.curl == CURLE_COULDNT_RESOLVE_HOST;
      if (!resp.status && fp_tls_is_cert_error(resp.curl))
        snprintf(cert_detail, sizeof cert_detail, "%s", fp_curl_describe(&resp));
      /* HTTPS answered by a server that does not speak TLS: without an http_base to try
       * next, no retry will change that. */
      if (i == 0 && !bases[1] && not_tls(&resp)) {
        snprintf(plain_detail, sizeof plain_detail, "%s", fp_curl_describe(&resp));
        fp_http_resp_free(&resp);
        break;
      }
      if (resp.status)
        snprintf(last, sizeof last, "%s answered HTTP %ld", url, resp.status), transient = 1;
      else if (unresolved) /* the message names the host and is the whole story */
        snprintf(last, sizeof last, "%s", fp_curl_describe(&resp));
      else
        snprintf(last, sizeof last, "%s: %s", url, fp_curl_describe(&resp)),
            transient = transient || fp_http_retryable(&resp);
      fp_http_resp_free(&resp);
    }
    if (!transient || plain_detail[0] || attempt == r->max_tries)
      break;
    sleep_ms(backoff_ms(attempt, NULL));
  }
  if (plain_detail[0]) {
    rc = plain_http_error(r, ep, plain_detail, err);
    pthread_mutex_unlock(&r->mu);
    return rc;
  }
  pthread_mutex_unlock(&r->mu);
  /* Trust is not an outage: say what failed and where the CA could go. */
  if (cert_detail[0])
    return fp_tls_cert_error(err, r, ep->hostport, cert_detail);
  if (unresolved)
    return fpull_err_set(err, rc, "%s", last);
  char note[32];
  return fpull_err_set(err, rc, "cannot reach registry %s: %s%s", ep->hostport, last,
                       fp_tries_note(note, tries));
}

/* ---- one request with auth and retries ---- */

/* 0 with resp filled when an HTTP answer came that retrying would not change; else the
 * error. The caller maps resp->status. */
int fp_reg_call(fpull_registry *r, struct fp_endpoint *ep, const struct fp_call *c,
                struct fp_http_resp *resp, fpull_err *err)
{
  memset(resp, 0, sizeof *resp);
  int rc = ensure_ready(r, ep, err);
  if (rc)
    return rc;
  cleanup_free char *url = strncmp(c->path, "http", 4) == 0
                               ? fp_xstrdup(c->path)
                               : fp_xasprintf("%s%s", ep->base, c->path);
  cleanup_free char *origin = fp_url_origin(ep->base);
  int refresh = 0, reauthed = 0, resumes = 0, tries = 0;
  for (int attempt = 1;; attempt++) {
    cleanup_free char *authz = NULL;
    pthread_mutex_lock(&r->mu);
    rc = fp_auth_header(r, ep, c->scope, refresh, &authz, err);
    pthread_mutex_unlock(&r->mu);
    if (rc == FPULL_EAUTH)
      return fpull_err_prefix(err, "authentication refused by %s for %s", ep->hostport, c->repo);
    if (rc)
      return rc;
    refresh = 0;
    struct fp_http_req req = {.method = c->method,
                              .url = url,
                              .headers = c->headers,
                              .authorization = authz,
                              .origin = origin,
                              .allow_http_redirect = ep->http_base != NULL,
                              .body = c->body,
                              .body_len = c->body_len,
                              .upload = c->upload,
                              .upload_len = c->upload_len,
                              .max_body = c->max_body,
                              .sink = c->sink,
                              .sink_ud = c->sink_ud,
                              .tls = &ep->tls,
                              .verify_tls = ep->verify_tls};
    if (c->before && (rc = c->before(c->before_ud, attempt, &req, err)))
      return rc;
    uint64_t kept = c->progress ? *c->progress : 0;
    int prc = fp_http_perform(r, &req, resp);
    resp->tries = ++tries;
    if (authz)
      explicit_bzero(authz, strlen(authz));
    if (prc) {
      if (resp->sink_rc) {
        rc = resp->sink_rc;
        if (err)
          *err = resp->sink_err;
        fp_http_resp_free(resp);
        return rc;
      }
      if (resp->too_large) {
        fp_http_resp_free(resp);
        return fpull_err_set(err, FPULL_EFAIL, "%s: answer for %s over %zu bytes refused",
                             ep->hostport, c->path, c->max_body);
      }
      if (!resp->redirect_refused && fp_tls_is_cert_error(resp->curl)) {
        rc = fp_tls_cert_error(err, r, ep->hostport, fp_curl_describe(resp));
        fp_http_resp_free(resp);
        return rc;
      }
      int transient = !resp->redirect_refused && fp_http_retryable(resp);
      if (transient && c->progress && *c->progress > kept && resumes < FP_MAX_RESUMES) {
        resumes++;
        attempt = 0;
      }
      if (transient && attempt < r->max_tries) {
        fp_debug("%s: %s; retrying", ep->hostport, fp_curl_describe(resp));
        fp_http_resp_free(resp);
        sleep_ms(backoff_ms(attempt ? attempt : 1, NULL));
        continue;
      }
      char note[32];
      rc = fpull_err_set(err, FPULL_ENET, "%s: %s%s", ep->hostport, fp_curl_describe(resp),
                         fp_tries_note(note, tries));
      fp_http_resp_free(resp);
      return rc;
    }
    if (resp->status == 401 && !reauthed) {
      /* A first 401, or an expired token: take the challenge and get a fresh token. */
      pthread_mutex_lock(&r->mu);
      rc = fp_auth_challenge(ep, resp->www_authenticate, err);
      pthread_mutex_unlock(&r->mu);
      if (rc) {
        fp_http_resp_free(resp);
        return rc;
      }
      reauthed = 1;
      refresh = 1;
      fp_http_resp_free(resp);
      attempt--;
      continue;
    }
    if (status_retryable(resp->status) && attempt < r->max_tries) {
      long ms = backoff_ms(attempt, resp->retry_after);
      fp_debug("%s: HTTP %ld; retrying in %ld ms", ep->hostport, resp->status, ms);
      fp_http_resp_free(resp);
      sleep_ms(ms);
      continue;
    }
    return 0;
  }
}

/* The registry's error code from an error body ("MANIFEST_UNKNOWN"), or NULL. */
static char *error_code(const struct fp_http_resp *resp)
{
  if (!resp->body.data)
    return NULL;
  cJSON *j = cJSON_ParseWithLength(resp->body.data, resp->body.len);
  const cJSON *errs = cJSON_GetObjectItemCaseSensitive(j, "errors");
  const cJSON *first = cJSON_IsArray(errs) ? cJSON_GetArrayItem(errs, 0) : NULL;
  const cJSON *code = first ? cJSON_GetObjectItemCaseSensitive(first, "code") : NULL;
  char *out = NULL;
  if (cJSON_IsString(code)) {
    out = fp_xstrndup(code->valuestring, 64);
    for (char *p = out; *p; p++)
      if (!isalnum((unsigned char)*p) && *p != '_')
        *p = '?';
  }
  cJSON_Delete(j);
  return out;
}

int fp_reg_map_status(const struct fp_endpoint *ep, const struct fp_http_resp *resp,
                      const char *repo, const char *what, fpull_err *err)
{
  long s = resp->status;
  cleanup_free char *code = error_code(resp);
  if ((s == 401 || s == 403) && (ep->creds.password || ep->creds.identity_token))
    return fpull_err_set(err, FPULL_EAUTH,
                         "authentication refused by %s for %s (HTTP %ld%s%s); the credentials "
                         "of %s came from %s",
                         ep->hostport, repo, s, code ? " " : "", code ? code : "",
                         ep->creds.username ? ep->creds.username : "(token)",
                         ep->creds.source ? ep->creds.source : "?");
  if (s == 401 || s == 403)
    return fpull_err_set(err, FPULL_EAUTH, "authentication refused by %s for %s (HTTP %ld%s%s)%s",
                         ep->hostport, repo, s, code ? " " : "", code ? code : "",
                         "; no credentials found for it (docker/fpull login)");
  if (s == 404)
    return fpull_err_set(err, FPULL_ENOTFOUND, "%s not found in %s/%s%s%s%s", what, ep->hostport,
                         repo, code ? " (" : "", code ? code : "", code ? ")" : "");
  char note[32];
  if (status_retryable(s))
    return fpull_err_set(err, FPULL_ENET, "%s answered HTTP %ld for %s of %s%s", ep->hostport, s,
                         what, repo, fp_tries_note(note, resp->tries));
  return fpull_err_set(err, FPULL_EFAIL, "%s answered HTTP %ld for %s of %s%s%s%s", ep->hostport, s,
                       what, repo, code ? " (" : "", code ? code : "", code ? ")" : "");
}

/* Names that end up in URLs are checked first (CVE-2024-3727). */
int fp_reg_repo_ok(const char *repo)
{
  if (!repo || !*repo || strlen(repo) > 255 || repo[0] == '/' || strstr(repo, "..") ||
      strstr(repo, "//"))
    return 0;
  for (const char *p = repo; *p; p++)
    if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || strchr("._-/", *p)))
      return 0;
  return 1;
}

int fp_reg_tag_ok(const char *t)
{
  if (!t || !*t || strlen(t) > 128 || !(isalnum((unsigned char)t[0]) || t[0] == '_'))
    return 0;
  for (const char *p = t; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("._-", *p)))
      return 0;
  return 1;
}

void fp_reg_sha256(const void *data, size_t len, char out[72])
{
  unsigned char md[32];
  unsigned int mdlen = 0;
  EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
  fp_digest_format(out, md);
}

/* The EVP digest of a "sha256:" or "sha512:" digest string. */
static const EVP_MD *md_for(const char *digest)
{
  return strncmp(digest, "sha512:", 7) == 0 ? EVP_sha512() : EVP_sha256();
}

/* ---- manifests ---- */

static const char *const manifest_accept =
    "Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.docker.distribution.manifest.v2+json";

void fpull_fetched_free(struct fpull_fetched *f)
{
  if (!f)
    return;
  free(f->data);
  free(f->content_type);
  free(f->digest);
  free(f);
}

/* ct: lower case, without parameters. Both schema 1 types, or a body of schemaVersion 1
 * whatever its Content-Type. */
static int is_schema1(const char *ct, const char *data, size_t len)
{
  if (ct &&
      (strcmp(ct, FPULL_MT_DOCKER_SCHEMA1) == 0 || strcmp(ct, FPULL_MT_DOCKER_SCHEMA1_SIGNED) == 0))
    return 1;
  cJSON *j = cJSON_ParseWithLength(data, len);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "schemaVersion");
  int one = cJSON_IsNumber(v) && v->valuedouble == 1;
  cJSON_Delete(j);
  return one;
}

static int manifest_from(fpull_registry *r, struct fp_endpoint *ep, const char *repo,
                         const char *ref, struct fpull_fetched **out, fpull_err *err)
{
  cleanup_free char *path = fp_xasprintf("/v2/%s/manifests/%s", repo, ref);
  cleanup_free char *scope = fp_xasprintf("repository:%s:pull", repo);
  struct curl_slist *hdrs = curl_slist_append(NULL, manifest_accept);
  struct fp_call c = {.method = "GET",
                      .path = path,
                      .repo = repo,
                      .scope = scope,
                      .headers = hdrs,
                      .max_body = FP_MANIFEST_MAX};
  struct fp_http_resp resp;
  int rc = fp_reg_call(r, ep, &c, &resp, err);
  curl_slist_free_all(hdrs);
  if (rc == FPULL_EFAIL && err && strstr(err->msg, "over "))
    return fpull_err_set(err, FPULL_EFAIL, "manifest %s from %s is over 4 MiB: refused", ref,
                         ep->hostport);
  if (rc)
    return rc;
  if (resp.status != 200) {
    cleanup_free char *what = fp_xasprintf("manifest %s", ref);
    rc = fp_reg_map_status(ep, &resp, repo, what, err);
    fp_http_resp_free(&resp);
    return rc;
  }
  const char *data = resp.body.data ? resp.body.data : "";
  size_t len = resp.body.len;
  /* By digest, the bytes are hashed with the digest's algorithm; by tag, sha256. */
  char got[FP_DIGEST_MAX];
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  EVP_Digest(data, len, md, &mdlen, fpull_digest_valid(ref) ? md_for(ref) : EVP_sha256(), NULL);
  fp_digest_format_len(got, md, mdlen);
  if (fpull_digest_valid(ref) && strcmp(got, ref) != 0) {
    fp_http_resp_free(&resp);
    return fpull_err_set(err, FPULL_EINTEGRITY, "manifest %s from %s has digest %s", ref,
                         ep->hostport, got);
  }
  /* The registry's Docker-Content-Digest, in either algorithm fpull verifies, must be the
   * bytes' (a sha512 one on a tag fetch is hashed for: it used to pass unchecked). */
  const char *dcd = resp.docker_content_digest;
  char dgot[FP_DIGEST_MAX];
  strcpy(dgot, got);
  if (dcd && strncmp(dcd, got, 7) != 0 &&
      (strncmp(dcd, "sha256:", 7) == 0 || strncmp(dcd, "sha512:", 7) == 0)) {
    EVP_Digest(data, len, md, &mdlen, md_for(dcd), NULL);
    fp_digest_format_len(dgot, md, mdlen);
  }
  if (dcd && strncmp(dcd, dgot, 7) == 0 && strcmp(dcd, dgot) != 0) {
    rc = fpull_err_set(err, FPULL_EINTEGRITY,
                       "manifest %s from %s: Docker-Content-Digest %.80s but the bytes hash to %s",
                       ref, ep->hostport, dcd, dgot);
    fp_http_resp_free(&resp);
    return rc;
  }
  cleanup_free char *ct = NULL;
  if (resp.content_type) {
    ct = fp_xstrndup(resp.content_type, strcspn(resp.content_type, "; \t"));
    for (char *p = ct; *p; p++)
      *p = (char)tolower((unsigned char)*p);
  }
  if (is_schema1(ct, data, len)) {
    fp_http_resp_free(&resp);
    return fpull_err_set(err, FPULL_EUNSAFE, FPULL_SCHEMA1_MESSAGE);
  }
  struct fpull_fetched *f = fp_xcalloc(1, sizeof *f);
  f->data = resp.body.data ? steal_pointer(&resp.body.data) : fp_xstrdup("");
  f->len = len;
  f->content_type = steal_pointer(&ct);
  f->digest = fp_xstrdup(got);
  fp_http_resp_free(&resp);
  *out = f;
  return 0;
}

int fpull_registry_get_manifest(struct fpull_fetched **out, fpull_registry *r, const char *repo,
                                const char *ref, fpull_err *err)
{
  *out = NULL;
  if (!fp_reg_repo_ok(repo))
    return fpull_err_set(err, FPULL_EUSAGE, "bad repository name \"%s\"", repo ? repo : "");
  if (!ref || (strchr(ref, ':') ? !fpull_digest_valid(ref) : !fp_reg_tag_ok(ref)))
    return fpull_err_set(err, FPULL_EUSAGE, "bad tag or digest \"%s\"", ref ? ref : "");
  int rc = 0;
  for (size_t i = 0; i < r->neps; i++) {
    struct fp_endpoint *ep = &r->eps[i];
    fpull_err e = {0};
    rc = manifest_from(r, ep, repo, ref, out, &e);
    if (rc == 0)
      return 0;
    if (ep->is_mirror && rc != FPULL_EUNSAFE) {
      fp_debug("mirror %s: %s; trying the next source", ep->hostport, e.msg);
      continue;
    }
    if (err)
      *err = e;
    return rc;
  }
  return rc;
}

/* ---- blobs ---- */

struct blob_xfer {
  const struct fpull_blob_sink *sink;
  const char *digest;
  uint64_t pos; /* bytes the sink holds */
  uint64_t *received;
  int first;      /* no body byte yet in this attempt */
  int restarted;  /* the server ignored the Range */
  EVP_MD_CTX *md; /* over the whole body, when it started at 0 (mirrors) */
  int md_valid;
  struct curl_slist *hdrs; /* this attempt's Range */
};

static int blob_before(void *ud, int attempt, struct fp_http_req *req, fpull_err *err)
{
  struct blob_xfer *b = ud;
  b->first = 1;
  int rc = b->sink->restart(b->sink->ud, b->pos, err);
  if (rc)
    return rc;
  if (b->md && b->pos == 0) {
    EVP_DigestInit_ex(b->md, md_for(b->digest), NULL);
    b->md_valid = 1;
  } else {
    b->md_valid = 0;
  }
  curl_slist_free_all(b->hdrs);
  b->hdrs = NULL;
  if (b->pos > 0) {
    char range[64];
    snprintf(range, sizeof range, "Range: bytes=%llu-", (unsigned long long)b->pos);
    b->hdrs = curl_slist_append(b->hdrs, range);
  }
  req->headers = b->hdrs;
  return 0;
}

static int blob_write(void *ud, const struct fp_http_resp *resp, const void *data, size_t len,
                      fpull_err *err)
{
  struct blob_xfer *b = ud;
  if (b->first) {
    b->first = 0;
    if (b->pos > 0 && resp->status == 200) {
      /* The server ignored the Range: start over from the first byte. */
      fp_debug("blob %s: the server ignored the Range request; starting over", b->digest);
      int rc = b->sink->restart(b->sink->ud, 0, err);
      if (rc)
        return rc;
      b->pos = 0;
      b->restarted = 1;
      if (b->md) {
        EVP_DigestInit_ex(b->md, md_for(b->digest), NULL);
        b->md_valid = 1;
      }
    } else if (b->pos > 0) {
      unsigned long long start = 0;
      const char *cr = resp->content_range;
      if (!cr || sscanf(cr, "bytes %llu-", &start) != 1 || start != b->pos)
        return fpull_err_set(err, FPULL_ENET,
                             "blob %s: answer to a Range request from %llu starts elsewhere (%s)",
                             b->digest, (unsigned long long)b->pos, cr ? cr : "no Content-Range");
    }
  }
  int rc = b->sink->write(b->sink->ud, data, len, err);
  if (rc)
    return rc;
  if (b->md_valid)
    EVP_DigestUpdate(b->md, data, len);
  b->pos += len;
  if (b->received)
    __atomic_add_fetch(b->received, len, __ATOMIC_RELAXED);
  return 0;
}

static int blob_from(fpull_registry *r, struct fp_endpoint *ep, const char *repo,
                     const char *digest, struct blob_xfer *b, fpull_err *err)
{
  cleanup_free char *path = fp_xasprintf("/v2/%s/blobs/%s", repo, digest);
  cleanup_free char *scope = fp_xasprintf("repository:%s:pull", repo);
  struct fp_call c = {.method = "GET",
                      .path = path,
                      .repo = repo,
                      .scope = scope,
                      .sink = blob_write,
                      .sink_ud = b,
                      .before = blob_before,
                      .before_ud = b,
                      .progress = &b->pos};
  struct fp_http_resp resp;
  for (int range_retry = 0;; range_retry++) {
    int rc = fp_reg_call(r, ep, &c, &resp, err);
    if (rc)
      return fpull_err_prefix(err, "blob %s", digest);
    if (resp.status == 416 && b->pos > 0 && !range_retry) {
      /* What we hold is not a prefix the server agrees with: fetch it all. */
      fp_http_resp_free(&resp);
      b->pos = 0;
      continue;
    }
    break;
  }
  if (resp.status != 200 && resp.status != 206) {
    cleanup_free char *what = fp_xasprintf("blob %s", digest);
    int rc = fp_reg_map_status(ep, &resp, repo, what, err);
    fp_http_resp_free(&resp);
    return rc;
  }
  fp_http_resp_free(&resp);
  if (b->md && b->md_valid) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char got[FP_DIGEST_MAX];
    EVP_DigestFinal_ex(b->md, md, &n);
    fp_digest_format_len(got, md, n);
    if (strcmp(got, digest) != 0)
      return fpull_err_set(err, FPULL_EINTEGRITY, "blob %s from %s has digest %s", digest,
                           ep->hostport, got);
  }
  return 0;
}

int fpull_registry_get_blob(fpull_registry *r, const char *repo, const char *digest,
                            uint64_t offset, const struct fpull_blob_sink *sink, uint64_t *received,
                            fpull_err *err)
{
  if (!fp_reg_repo_ok(repo))
    return fpull_err_set(err, FPULL_EUSAGE, "bad repository name \"%s\"", repo ? repo : "");
  if (!fpull_digest_valid(digest))
    return fpull_err_set(err, FPULL_EUSAGE, "bad blob digest \"%.80s\"", digest ? digest : "");
  int rc = 0;
  for (size_t i = 0; i < r->neps; i++) {
    struct fp_endpoint *ep = &r->eps[i];
    /* A mirror's bytes are checked here so that a lying mirror only costs a retry from the
     * registry; that needs the whole body, so mirrors start at 0. */
    struct blob_xfer b = {
        .sink = sink, .digest = digest, .pos = ep->is_mirror ? 0 : offset, .received = received};
    if (ep->is_mirror)
      b.md = EVP_MD_CTX_new();
    fpull_err e = {0};
    rc = blob_from(r, ep, repo, digest, &b, &e);
    EVP_MD_CTX_free(b.md);
    curl_slist_free_all(b.hdrs);
    if (rc == 0)
      return 0;
    if (ep->is_mirror) {
      fp_debug("mirror %s: %s; trying the next source", ep->hostport, e.msg);
      continue;
    }
    if (err)
      *err = e;
    return rc;
  }
  return rc;
}
