/* Internals of the registry client, shared by registry.c, http.c, auth.c and tls.c. */
#ifndef FP_REGISTRY_INTERNAL_H
#define FP_REGISTRY_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>

#include "creds.h"
#include "fpull/registry.h"
#include "base/util.h"

#define FP_MANIFEST_MAX (4u << 20)
#define FP_TOKEN_MAX (1u << 20)
#define FP_ERRBODY_MAX (64u << 10)
#define FP_MAX_REDIRECTS 10

/* CA and client certificates for one host from the certs.d directories. */
struct fp_tls {
  char *ca_blob; /* system CAs + every *.crt found (PEM), or NULL: the defaults */
  size_t ca_len;
  char *client_cert, *client_key; /* from the first directory that has both */
};
/* cert_dir: skopeo's --cert-dir, the host's own folder, first; may be NULL. */
int fp_tls_find(struct fp_tls *out, const char *hostport, const char *cert_dir,
                const char *certs_dir, const char *config_certs_dir, fpull_err *err);
/* Whether a transport failure is the peer's certificate not verifying. */
int fp_tls_is_cert_error(CURLcode c);
/* The message of a certificate failure of hostport: what failed (detail, curl's words),
 * where fpull looked for CAs, and --insecure last. */
int fp_tls_cert_error(fpull_err *err, const fpull_registry *r, const char *hostport,
                      const char *detail);
/* SSL_CERT_FILE's bundle when set, else the system's (what libcurl uses by default). */
const char *fp_tls_system_ca_file(void);
/* SSL_CERT_DIR when set: a hashed directory of CAs, used beside the bundle. */
const char *fp_tls_system_ca_dir(void);
void fp_tls_free(struct fp_tls *t);

struct fp_token {
  char *scope;
  char *token;
  struct fp_token *next;
};

enum { FP_AUTH_NONE, FP_AUTH_BASIC, FP_AUTH_BEARER };

/* One place blobs and manifests come from: a mirror or the registry itself. */
struct fp_endpoint {
  char *hostport;   /* what credentials and certs.d are looked up by */
  char *https_base; /* "https://host:port[/prefix]" */
  char *http_base;  /* NULL unless plain HTTP is allowed */
  char *base;       /* the one that answered the ping */
  int verify_tls;
  int pinged;
  int is_mirror;
  struct fp_tls tls;
  struct fp_creds creds;
  int auth; /* FP_AUTH_* from the ping's challenge */
  char *realm, *service;
  struct fp_token *tokens;
};

struct fpull_registry {
  char *name; /* as given: "docker.io" */
  char *host; /* API host: "registry-1.docker.io" */
  int max_tries;
  char *certs_dir, *config_certs_dir; /* for token realms on other hosts */
  char *cert_dir;                     /* --cert-dir, the registry's own */
  struct fp_endpoint *eps;            /* mirrors first, the registry last */
  size_t neps;
  CURLSH *share;
  pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
  pthread_mutex_t mu; /* endpoint state: ping, tokens */
  pthread_mutex_t pool_mu;
  CURL **pool; /* idle easy handles: each keeps its own connections alive */
  size_t npool;
};

struct fp_http_resp;
/* Streams a 2xx body; returning nonzero aborts the transfer (code kept in resp). */
typedef int (*fp_http_sink)(void *ud, const struct fp_http_resp *resp, const void *data, size_t len,
                            fpull_err *err);

struct fp_http_req {
  const char *method; /* "GET", "HEAD", "POST", "PUT" */
  const char *url;
  struct curl_slist *headers; /* sent on every hop (Accept, Range, Content-Type) */
  const char *authorization;  /* "Bearer ..." / "Basic ...": only to `origin` */
  const char *origin;         /* "scheme://host:port" that may see authorization */
  int allow_http_redirect;    /* an https origin may redirect to http (insecure registries) */
  const void *body;           /* request body (PUT/POST) or NULL */
  size_t body_len;
  FILE *upload; /* or a file as the body */
  uint64_t upload_len;
  size_t max_body; /* bound for `out` */
  fp_http_sink sink;
  void *sink_ud;
  const struct fp_tls *tls;
  int verify_tls;
};

struct fp_http_resp {
  long status;
  char *www_authenticate, *content_type, *docker_content_digest, *location, *retry_after,
      *content_range;
  char *link;         /* tags/list's next page */
  struct fp_buf body; /* 2xx body when no sink; error bodies (bounded) otherwise */
  char *final_url;    /* after redirects */
  CURLcode curl;      /* transport error, CURLE_OK when an HTTP answer came */
  char errbuf[CURL_ERROR_SIZE];
  int sink_rc; /* what the sink returned */
  fpull_err sink_err;
  int too_large;
  int redirect_refused; /* message in errbuf */
  int tries;            /* fp_reg_call: requests it made for this answer, retries included */
  int refused;          /* the connection was refused (ECONNREFUSED) */
};
void fp_http_resp_free(struct fp_http_resp *resp);

/* One request with manual redirects (at most 10, http(s) only, Authorization only to the
 * same origin). Returns 0 when an HTTP answer came (any status), -1 on a transport error
 * (resp->curl, resp->errbuf), a refused redirect, a sink error or a body over the bound. */
int fp_http_perform(fpull_registry *r, const struct fp_http_req *req, struct fp_http_resp *resp);
/* "scheme://host:port" of url (default ports filled in); NULL when unparsable. */
char *fp_url_origin(const char *url);
/* Resolves ref against base (RFC 3986); NULL when unparsable. */
char *fp_url_resolve(const char *base, const char *ref);
/* Whether a transport error is worth retrying (connection, timeouts, resets). */
int fp_curl_transient(CURLcode c);
/* Whether a failed request is worth retrying: a transient transport error, but not a
 * refused connection. */
int fp_http_retryable(const struct fp_http_resp *resp);
/* "TLS: certificate problem: ..." style text for a transport failure. */
const char *fp_curl_describe(const struct fp_http_resp *resp);
/* " (N tries)" when a failure came after retries (tries > 1), else "": the end of the
 * message, so the user knows waiting happened and need not retry at once. */
const char *fp_tries_note(char buf[32], int tries);

/* A token server's answer (JSON): its "token", else its "access_token", into *token.
 * 0, FP_TOKEN_NONE when there is none, FP_TOKEN_UNSAFE when it has bytes outside visible
 * ASCII (it goes into a header line). */
enum { FP_TOKEN_NONE = 1, FP_TOKEN_UNSAFE };
int fp_token_answer(const char *body, size_t len, char **token);

/* A Retry-After value (delta-seconds or an HTTP date, RFC 9110) as milliseconds from
 * now, at most max; -1 when it is neither, or a date gone by. */
long fp_retry_after_ms(const char *value, long max);

/* Bearer: a token for scope ("repository:x/y:pull") from ep's realm, cached. Caller
 * holds r->mu. Errors FPULL_EAUTH, FPULL_ENET. */
int fp_auth_token(fpull_registry *r, struct fp_endpoint *ep, const char *scope, int refresh,
                  const char **token, fpull_err *err);
/* Parses a 401's challenge into ep (realm, service, scheme). Caller holds r->mu. */
int fp_auth_challenge(struct fp_endpoint *ep, const char *www_authenticate, fpull_err *err);
/* The Authorization header value for ep and scope, or NULL when none is needed. Caller
 * holds r->mu; the result is a copy. */
int fp_auth_header(fpull_registry *r, struct fp_endpoint *ep, const char *scope, int refresh,
                   char **out, fpull_err *err);

typedef int (*fp_before_fn)(void *ud, int attempt, struct fp_http_req *req, fpull_err *err);

/* One registry request: auth, the 401 dance and retries around fp_http_perform. */
struct fp_call {
  const char *method;
  const char *path; /* "/v2/..." under the endpoint's base, or an absolute URL */
  const char *repo;
  const char *scope;
  struct curl_slist *headers;
  size_t max_body;
  fp_http_sink sink;
  void *sink_ud;
  fp_before_fn before;
  void *before_ud;
  const void *body;
  size_t body_len;
  FILE *upload;
  uint64_t upload_len;
  /* Bytes kept so far (blobs): an attempt that moved it forward does not count as one of
   * the tries, so a long download survives many separate interruptions. */
  const uint64_t *progress;
};

/* 0 with resp filled when an HTTP answer came that retrying would not change (the caller
 * maps resp->status with fp_reg_map_status); else the error code. */
int fp_reg_call(fpull_registry *r, struct fp_endpoint *ep, const struct fp_call *c,
                struct fp_http_resp *resp, fpull_err *err);
/* The error for a final status: 401/403 FPULL_EAUTH, 404 FPULL_ENOTFOUND, 5xx/429
 * FPULL_ENET, else FPULL_EFAIL; names the host, repo, `what` and the registry's code. */
int fp_reg_map_status(const struct fp_endpoint *ep, const struct fp_http_resp *resp,
                      const char *repo, const char *what, fpull_err *err);
int fp_reg_repo_ok(const char *repo);
int fp_reg_tag_ok(const char *tag);
void fp_reg_sha256(const void *data, size_t len, char out[72]);

#endif
