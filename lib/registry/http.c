/* libcurl plumbing: one request, manual redirects, bounded bodies, no secrets in logs. */
#include <ctype.h>
#include <errno.h>
#include <strings.h>
#include <string.h>

#include "registry_internal.h"

void fp_http_resp_free(struct fp_http_resp *resp)
{
  free(resp->www_authenticate);
  free(resp->content_type);
  free(resp->docker_content_digest);
  free(resp->location);
  free(resp->retry_after);
  free(resp->content_range);
  free(resp->link);
  free(resp->final_url);
  fp_buf_free(&resp->body);
  memset(resp, 0, sizeof *resp);
}

static void clear_headers(struct fp_http_resp *resp)
{
  char **fields[] = {&resp->www_authenticate,
                     &resp->content_type,
                     &resp->docker_content_digest,
                     &resp->location,
                     &resp->retry_after,
                     &resp->content_range,
                     &resp->link};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
    free(*fields[i]);
    *fields[i] = NULL;
  }
  fp_buf_free(&resp->body);
}

/* How much of an unwanted body is drained to keep the connection usable. */
#define FP_SKIP_MAX (1u << 20)

struct xfer {
  const struct fp_http_req *req;
  struct fp_http_resp *resp;
  size_t skipped;
  int cut;
};

static int header_is(const char *line, size_t n, const char *name, const char **val, size_t *vlen)
{
  size_t k = strlen(name);
  if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
    return 0;
  const char *v = line + k + 1, *e = line + n;
  while (v < e && (*v == ' ' || *v == '\t'))
    v++;
  while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
    e--;
  *val = v;
  *vlen = (size_t)(e - v);
  return 1;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
  struct xfer *x = ud;
  size_t n = size * nmemb;
  if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
    /* A new status line (after a 100 Continue, say): forget the previous block. */
    clear_headers(x->resp);
    const char *sp = memchr(data, ' ', n);
    x->resp->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    return n;
  }
  static const struct {
    const char *name;
    size_t off;
  } wanted[] = {
      {"WWW-Authenticate", offsetof(struct fp_http_resp, www_authenticate)},
      {"Content-Type", offsetof(struct fp_http_resp, content_type)},
      {"Docker-Content-Digest", offsetof(struct fp_http_resp, docker_content_digest)},
      {"Location", offsetof(struct fp_http_resp, location)},
      {"Retry-After", offsetof(struct fp_http_resp, retry_after)},
      {"Content-Range", offsetof(struct fp_http_resp, content_range)},
      {"Link", offsetof(struct fp_http_resp, link)},
  };
  for (size_t i = 0; i < sizeof wanted / sizeof *wanted; i++) {
    const char *v;
    size_t vlen;
    if (header_is(data, n, wanted[i].name, &v, &vlen)) {
      char **slot = (char **)((char *)x->resp + wanted[i].off);
      if (*slot && strcasecmp(wanted[i].name, "WWW-Authenticate") == 0) {
        /* Several WWW-Authenticate fields are one comma-separated list. */
        char *joined = fp_xasprintf("%s, %.*s", *slot, (int)vlen, v);
        free(*slot);
        *slot = joined;
      } else {
        free(*slot);
        *slot = fp_xstrndup(v, vlen);
      }
    }
  }
  return n;
}

static int is_redirect(long s)
{
  return s == 301 || s == 302 || s == 303 || s == 307 || s == 308;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
  struct xfer *x = ud;
  size_t n = size * nmemb;
  long s = x->resp->status;
  if (is_redirect(s) && x->resp->location)
    return n; /* the body of a redirect is not interesting */
  if (s >= 200 && s < 300 && x->req->sink) {
    int rc = x->req->sink(x->req->sink_ud, x->resp, data, n, &x->resp->sink_err);
    if (rc) {
      x->resp->sink_rc = rc;
      return 0;
    }
    return n;
  }
  /* fp_buf's max 0 means unbounded: every body here gets a real bound. */
  int wanted = s >= 200 && s < 300 && x->req->max_body;
  if (!x->resp->body.max)
    x->resp->body.max = wanted ? x->req->max_body : FP_ERRBODY_MAX;
  if (fp_buf_append(&x->resp->body, data, n) < 0) {
    /* Bodies nobody asked for (errors, upload answers) are read for their first bytes;
     * one that goes on and on is cut off. */
    if (wanted) {
      x->resp->too_large = 1;
      return 0;
    }
    x->skipped += n;
    if (x->skipped <= FP_SKIP_MAX)
      return n;
    x->cut = 1; /* the status is known: the answer stands, the connection goes */
    return 0;
  }
  return n;
}

struct upload {
  const struct fp_http_req *req;
  size_t off;
};

static size_t on_read(char *buf, size_t size, size_t nmemb, void *ud)
{
  struct upload *u = ud;
  size_t n = size * nmemb;
  if (u->req->upload)
    return fread(buf, 1, n, u->req->upload);
  size_t left = u->req->body_len - u->off;
  if (n > left)
    n = left;
  memcpy(buf, (const char *)u->req->body + u->off, n);
  u->off += n;
  return n;
}

char *fp_url_origin(const char *url)
{
  CURLU *u = curl_url();
  char *scheme = NULL, *host = NULL, *port = NULL, *out = NULL;
  if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
    cleanup_free char *lhost = fp_xstrdup_lower(host);
    cleanup_free char *lscheme = fp_xstrdup_lower(scheme);
    out = fp_xasprintf("%s://%s:%s", lscheme, lhost, port);
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(u);
  return out;
}

char *fp_url_resolve(const char *base, const char *ref)
{
  CURLU *u = curl_url();
  char *s = NULL, *out = NULL;
  if (curl_url_set(u, CURLUPART_URL, base, 0) == CURLUE_OK &&
      curl_url_set(u, CURLUPART_URL, ref, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK)
    out = fp_xstrdup(s);
  curl_free(s);
  curl_url_cleanup(u);
  return out;
}

int fp_curl_transient(CURLcode c)
{
  switch (c) {
  /* Not CURLE_COULDNT_RESOLVE_HOST: a name that does not resolve (no network, a typo)
   * does not start resolving within a few seconds of backoff, and five tries of it only
   * kept a user without network waiting for one line (issue 12.4). */
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
  case CURLE_SSL_CONNECT_ERROR:
    return 1;
  default:
    return 0;
  }
}

int fp_http_retryable(const struct fp_http_resp *resp)
{
  /* A refused connection is a host with nothing listening on the port (a registry that is
   * down, a wrong port): it answers at once and the same way after a few seconds of
   * backoff, which only delayed the cached image of a step (issue 41). A connection that
   * times out or is reset still is retried. */
  return fp_curl_transient(resp->curl) && !resp->refused;
}

const char *fp_curl_describe(const struct fp_http_resp *resp)
{
  return resp->errbuf[0] ? resp->errbuf : curl_easy_strerror(resp->curl);
}

const char *fp_tries_note(char buf[32], int tries)
{
  if (tries <= 1)
    return "";
  snprintf(buf, 32, " (%d tries)", tries);
  return buf;
}

static CURL *pool_get(fpull_registry *r)
{
  CURL *h = NULL;
  pthread_mutex_lock(&r->pool_mu);
  if (r->npool)
    h = r->pool[--r->npool];
  pthread_mutex_unlock(&r->pool_mu);
  if (h)
    curl_easy_reset(h);
  else
    h = curl_easy_init();
  return h;
}

static void pool_put(fpull_registry *r, CURL *h)
{
  pthread_mutex_lock(&r->pool_mu);
  r->pool = fp_xrealloc(r->pool, (r->npool + 1) * sizeof *r->pool);
  r->pool[r->npool++] = h;
  pthread_mutex_unlock(&r->pool_mu);
}

static long env_long(const char *name, long def)
{
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : def;
}

/* FPULL_RESOLVE="HOST:PORT:ADDR[,...]" pins names like curl --resolve: the tests use it to
 * give a loopback server a name that is not literally loopback (so TLS is verified). */
static struct curl_slist *resolve_list(void)
{
  const char *v = getenv("FPULL_RESOLVE");
  if (!v || !*v)
    return NULL;
  struct curl_slist *l = NULL;
  cleanup_free char *copy = fp_xstrdup(v);
  char *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
    l = curl_slist_append(l, t);
  return l;
}

static void setup(CURL *h, const struct fp_http_req *req, const char *url,
                  struct curl_slist *headers, struct xfer *x, struct upload *up, fpull_registry *r)
{
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "fpull/" FPULL_VERSION);
  /* Digests are over the bytes as served: no transparent decoding. */
  curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  curl_easy_setopt(h, CURLOPT_HTTP_TRANSFER_DECODING, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, env_long("FPULL_CONNECT_TIMEOUT", 30));
  /* A stalled transfer is an error after a while, so the retry logic can take over. */
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, env_long("FPULL_STALL_TIMEOUT", 60));
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->resp->errbuf);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_SHARE, r->share);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, req->verify_tls ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, req->verify_tls ? 2L : 0L);
  if (req->tls && req->tls->ca_blob) {
    struct curl_blob blob = {req->tls->ca_blob, req->tls->ca_len, CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
  } else if (getenv("SSL_CERT_FILE") && *getenv("SSL_CERT_FILE")) {
    curl_easy_setopt(h, CURLOPT_CAINFO, fp_tls_system_ca_file());
  }
  if (fp_tls_system_ca_dir())
    curl_easy_setopt(h, CURLOPT_CAPATH, fp_tls_system_ca_dir());
  if (req->tls && req->tls->client_cert) {
    curl_easy_setopt(h, CURLOPT_SSLCERT, req->tls->client_cert);
    curl_easy_setopt(h, CURLOPT_SSLKEY, req->tls->client_key);
  }
  if (strcmp(req->method, "HEAD") == 0) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (strcmp(req->method, "PUT") == 0 || strcmp(req->method, "POST") == 0) {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(h, CURLOPT_READDATA, up);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
                     (curl_off_t)(req->upload ? req->upload_len : req->body_len));
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
  }
}

/* Names the host (of this hop: a redirect may lead to another) and the likely cause. */
static void describe_unresolved(struct fp_http_resp *resp, const char *url)
{
  CURLU *u = curl_url();
  char *host = NULL;
  if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK)
    curl_url_get(u, CURLUPART_HOST, &host, 0);
  snprintf(resp->errbuf, sizeof resp->errbuf, "could not resolve %s (no network?)",
           host ? host : url);
  curl_free(host);
  curl_url_cleanup(u);
}

static int redirect_check(const struct fp_http_req *req, const char *from, const char *to,
                          struct fp_http_resp *resp)
{
  if (strncasecmp(to, "https://", 8) != 0 && strncasecmp(to, "http://", 7) != 0) {
    snprintf(resp->errbuf, sizeof resp->errbuf, "redirect to a non-HTTP URL refused");
    return -1;
  }
  if (strncasecmp(from, "https://", 8) == 0 && strncasecmp(to, "http://", 7) == 0 &&
      !req->allow_http_redirect) {
    snprintf(resp->errbuf, sizeof resp->errbuf, "redirect from HTTPS to plain HTTP refused");
    return -1;
  }
  return 0;
}

int fp_http_perform(fpull_registry *r, const struct fp_http_req *req, struct fp_http_resp *resp)
{
  memset(resp, 0, sizeof *resp);
  CURL *h = pool_get(r);
  if (!h) {
    snprintf(resp->errbuf, sizeof resp->errbuf, "cannot create a libcurl handle");
    resp->curl = CURLE_OUT_OF_MEMORY;
    return -1;
  }
  cleanup_free char *url = fp_xstrdup(req->url);
  cleanup_free char *auth_line =
      req->authorization ? fp_xasprintf("Authorization: %s", req->authorization) : NULL;
  struct fp_http_req hop = *req;
  int rc = -1;
  for (int hops = 0;; hops++) {
    cleanup_free char *origin = fp_url_origin(url);
    if (!origin) {
      snprintf(resp->errbuf, sizeof resp->errbuf, "bad URL");
      break;
    }
    /* The registry's credentials go to its own scheme, host and port only (curl's own
     * check compares the host alone). */
    int send_auth = auth_line && req->origin && strcmp(origin, req->origin) == 0;
    struct curl_slist *headers = NULL;
    for (struct curl_slist *s = req->headers; s; s = s->next)
      headers = curl_slist_append(headers, s->data);
    if (send_auth)
      headers = curl_slist_append(headers, auth_line);
    /* No "Expect: 100-continue" round trip on uploads. */
    headers = curl_slist_append(headers, "Expect:");
    struct xfer x = {&hop, resp, 0, 0};
    struct upload up = {&hop, 0};
    if (hop.upload)
      rewind(hop.upload);
    curl_easy_reset(h);
    setup(h, &hop, url, headers, &x, &up, r);
    struct curl_slist *resolve = resolve_list();
    if (resolve)
      curl_easy_setopt(h, CURLOPT_RESOLVE, resolve);
    resp->status = 0;
    resp->refused = 0;
    resp->errbuf[0] = '\0';
    /* Query strings of redirect targets can be signatures (pre-signed storage URLs):
     * debug output shows the URL up to the '?'. */
    int shown = (int)strcspn(url, "?");
    fp_debug("%s %.*s%s%s", hop.method, shown, url, url[shown] ? "?..." : "",
             send_auth ? " (with authorization)" : "");
    CURLcode c = curl_easy_perform(h);
    curl_slist_free_all(headers);
    curl_slist_free_all(resolve);
    if (c == CURLE_WRITE_ERROR && x.cut)
      c = CURLE_OK;
    resp->curl = c;
    if (c != CURLE_OK) {
      if (resp->sink_rc || resp->too_large)
        resp->curl = CURLE_WRITE_ERROR;
      if (c == CURLE_COULDNT_RESOLVE_HOST)
        describe_unresolved(resp, url);
      long os_err = 0;
      if (c == CURLE_COULDNT_CONNECT &&
          curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_err) == CURLE_OK)
        resp->refused = os_err == ECONNREFUSED;
      fp_debug("%s %.*s: %s", hop.method, shown, url, fp_curl_describe(resp));
      break;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    fp_debug("%s %.*s -> %ld", hop.method, shown, url, resp->status);
    if (!is_redirect(resp->status) || !resp->location ||
        (strcmp(hop.method, "GET") != 0 && strcmp(hop.method, "HEAD") != 0)) {
      resp->final_url = steal_pointer(&url);
      rc = 0;
      break;
    }
    if (hops >= FP_MAX_REDIRECTS) {
      snprintf(resp->errbuf, sizeof resp->errbuf, "more than %d redirects", FP_MAX_REDIRECTS);
      resp->redirect_refused = 1;
      break;
    }
    char *next = fp_url_resolve(url, resp->location);
    if (!next || redirect_check(req, url, next, resp) < 0) {
      if (!next)
        snprintf(resp->errbuf, sizeof resp->errbuf, "unparsable redirect Location");
      free(next);
      resp->redirect_refused = 1;
      break;
    }
    free(url);
    url = next;
  }
  pool_put(r, h);
  return rc;
}
