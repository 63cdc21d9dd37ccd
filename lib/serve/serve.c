/* fpull serve: the HTTP side, on libmicrohttpd (Debian's libmicrohttpd12: a small, well-kept
 * C server that parses HTTP/1.1 itself, bounds each connection's memory, and serves a body
 * from a callback or a file). One thread per connection, so that a client waiting for a
 * blob still arriving blocks only its own thread. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/digest.h"
#include "cache/cache_use.h"
#include "base/opts.h"
#include "serve_internal.h"
#include "base/util.h"

/* Per connection: headers up to this size (and the request line): more is refused. */
#define SV_CONNECTION_MEMORY (64 * 1024)
#define SV_IDLE_SECONDS 120
#define SV_READ_BLOCK (256 * 1024)

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
  char buf[512];
  vsnprintf(buf, sizeof buf, fmt, ap);
  size_t l = strlen(buf);
  while (l && buf[l - 1] == '\n')
    buf[--l] = '\0';
  fp_debug("serve: %s", buf);
}

struct reader {
  struct fpull_server *sv;
  struct sv_flight *flight;
  uint64_t offset;
};

static ssize_t read_flight(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct reader *r = cls;
  ssize_t n = sv_flight_read(r->sv, r->flight, r->offset + pos, buf, max);
  return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void free_reader(void *cls)
{
  struct reader *r = cls;
  sv_flight_unref(r->sv, r->flight);
  free(r);
}

static ssize_t read_nothing(void *cls, uint64_t pos, char *buf, size_t max)
{
  return MHD_CONTENT_READER_END_WITH_ERROR;
}

/* One GET or HEAD, from its headers to the last byte sent: the trace line of -v. */
struct request {
  struct timespec start, wall;
  double answered; /* seconds from the headers to the queued answer */
  int status;
  uint64_t bytes; /* the body queued */
  char what[8];   /* where the body comes from: file, flight, buffer, none */
  char method[8];
  char *url;
};

static double since(const struct timespec *t0)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  struct request *rq = *con_cls;
  *con_cls = NULL;
  if (!rq)
    return;
  if (rq->status) {
    struct tm tm;
    gmtime_r(&rq->wall.tv_sec, &tm);
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    fp_debug("serve: %s %s -> %d, %" PRIu64 " bytes from %s, answered in %.1f ms, done in %.1f ms "
             "(connection %d, began %02d:%02d:%02d.%03ld)%s",
             rq->method, rq->url, rq->status, rq->bytes, rq->what, rq->answered * 1e3,
             since(&rq->start) * 1e3, fd ? (int)fd->connect_fd : -1, tm.tm_hour, tm.tm_min,
             tm.tm_sec, rq->wall.tv_nsec / 1000000,
             toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : ", not completed");
  }
  free(rq->url);
  free(rq);
}

static enum MHD_Result queue(struct fpull_server *sv, struct MHD_Connection *c, struct sv_answer *a,
                             struct request *rq)
{
  struct MHD_Response *resp = NULL;
  rq->status = a->status;
  rq->answered = since(&rq->start);
  rq->bytes = a->body ? a->len : (a->fd >= 0 || a->flight) ? a->length : 0;
  snprintf(rq->what, sizeof rq->what, "%s",
           a->body      ? "buffer"
           : a->fd >= 0 ? "file"
           : a->flight  ? "flight"
                        : "none");
  if (a->body) {
    resp = MHD_create_response_from_buffer(a->len, a->body, MHD_RESPMEM_MUST_COPY);
  } else if (a->fd >= 0) {
    resp = MHD_create_response_from_fd_at_offset64(a->length, a->fd, (uint64_t)a->offset);
    if (resp)
      a->fd = -1; /* the response closes it */
  } else if (a->flight) {
    struct reader *r = fp_xcalloc(1, sizeof *r);
    r->sv = sv;
    r->flight = a->flight;
    r->offset = a->offset;
    resp = MHD_create_response_from_callback(a->length, SV_READ_BLOCK, read_flight, r, free_reader);
    if (resp)
      a->flight = NULL;
    else
      free(r);
  } else { /* HEAD of a blob: its size, no body */
    resp = MHD_create_response_from_callback(a->length, SV_READ_BLOCK, read_nothing, NULL, NULL);
  }
  if (!resp) {
    sv_flight_unref(sv, a->flight);
    a->flight = NULL;
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Docker-Distribution-API-Version", "registry/2.0");
  if (a->content_type)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
  if (a->digest)
    MHD_add_response_header(resp, "Docker-Content-Digest", a->digest);
  if (a->digest && a->status < 300) {
    char etag[FP_DIGEST_MAX + 8];
    snprintf(etag, sizeof etag, "\"%s\"", a->digest);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
  }
  if (a->partial) {
    char cr[96];
    snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, a->offset,
             a->offset + a->length - 1, a->total);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
  } else if (a->status == 416) {
    char cr[64];
    snprintf(cr, sizeof cr, "bytes */%" PRIu64, a->total);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
  }
  if (!a->body || a->status < 300)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)a->status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
  struct fpull_server *sv = cls;
  int head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
  int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
  /* GET and HEAD are answered once the request is complete (the connection is then kept
   * alive); the first call has the headers only, and a body of theirs is read and dropped.
   * Any other method is refused at once, its body never read (the connection closes). */
  if ((head || get) && *con_cls == NULL) {
    struct request *rq = fp_xcalloc(1, sizeof *rq);
    clock_gettime(CLOCK_MONOTONIC, &rq->start);
    clock_gettime(CLOCK_REALTIME, &rq->wall);
    snprintf(rq->method, sizeof rq->method, "%s", method);
    rq->url = fp_xstrndup(url, 512);
    *con_cls = rq;
    return MHD_YES;
  }
  if ((head || get) && *upload_data_size) {
    *upload_data_size = 0;
    return MHD_YES;
  }
  struct sv_answer a = {.fd = -1};
  if (!head && !get) {
    sv_answer_error(&a, 405, "UNSUPPORTED", "fpull serve is pull-only: %s is not served", method);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(a.len, a.body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    MHD_add_response_header(resp, "Docker-Distribution-API-Version", "registry/2.0");
    enum MHD_Result ret = MHD_queue_response(c, 405, resp);
    MHD_destroy_response(resp);
    sv_answer_free(&a);
    return ret;
  }
  const char *ns = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "ns");
  struct sv_route rt;
  const char *code = NULL;
  char msg[512];
  int status = sv_route_parse(&rt, url, ns, &code, msg, sizeof msg);
  if (status) {
    sv_answer_error(&a, status, code, "%s", msg);
  } else if (rt.kind == SV_BASE) {
    a.status = 200;
    a.body = fp_xstrdup("{}");
    a.len = 2;
    a.content_type = fp_xstrdup("application/json");
  } else if (rt.kind == SV_MANIFEST) {
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    sv_manifest(sv, &rt, head, accept, &a);
  } else {
    const char *range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE);
    sv_blob(sv, &rt, head, range, &a);
  }
  sv_route_free(&rt);
  __atomic_add_fetch(&sv->requests, 1, __ATOMIC_RELAXED);
  enum MHD_Result ret = queue(sv, c, &a, *con_cls);
  sv_answer_free(&a);
  return ret;
}

/* ---- the listening socket ---- */

static int listen_unix(struct fpull_server *sv, const char *path, fpull_err *err)
{
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path || !*path)
    return fpull_err_set(err, FPULL_EUSAGE, "--listen unix:%s: path too long or empty", path);
  strcpy(sa.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  /* A socket left by an earlier server goes; any other file is not ours to remove. */
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(path);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0) {
    int e = errno;
    close(fd);
    return -fpull_err_set(err, FPULL_EFAIL, "--listen unix:%s: %s", path, strerror(e));
  }
  sv->unix_path = fp_xstrdup(path);
  snprintf(sv->address, sizeof sv->address, "unix:%s", path);
  return fd;
}

static int listen_tcp(struct fpull_server *sv, const char *spec, fpull_err *err)
{
  cleanup_free char *host = NULL;
  const char *port;
  if (spec[0] == '[') {
    const char *close_b = strchr(spec, ']');
    if (!close_b || close_b[1] != ':')
      return -fpull_err_set(err, FPULL_EUSAGE, "--listen %s: expected [ADDR]:PORT", spec);
    host = fp_xstrndup(spec + 1, (size_t)(close_b - spec - 1));
    port = close_b + 2;
  } else {
    const char *colon = strrchr(spec, ':');
    if (!colon)
      return -fpull_err_set(err, FPULL_EUSAGE,
                            "--listen %s: expected ADDR:PORT or unix:PATH (say 127.0.0.1:5050)",
                            spec);
    host = fp_xstrndup(spec, (size_t)(colon - spec));
    port = colon + 1;
  }
  char *end = NULL;
  long p = strtol(port, &end, 10);
  if (!*port || *end || p < 0 || p > 65535)
    return -fpull_err_set(err, FPULL_EUSAGE, "--listen %s: bad port", spec);
  if (!*host || strcmp(host, "localhost") == 0) {
    free(host);
    host = fp_xstrdup("127.0.0.1");
  }
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)p);
    len = sizeof *s4;
  } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)p);
    len = sizeof *s6;
  } else {
    return -fpull_err_set(err, FPULL_EUSAGE,
                          "--listen %s: %s is no IP address (names are not resolved)", spec, host);
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -fpull_err_set(err, FPULL_EFAIL, "--listen %s: %s", spec, strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ss.ss_family == AF_INET6)
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 512) < 0) {
    int e = errno;
    close(fd);
    return -fpull_err_set(err, FPULL_EFAIL, "--listen %s: %s", spec, strerror(e));
  }
  getsockname(fd, (struct sockaddr *)&ss, &len);
  char a[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET)
    snprintf(sv->address, sizeof sv->address, "%s:%u",
             inet_ntop(AF_INET, &s4->sin_addr, a, sizeof a), ntohs(s4->sin_port));
  else
    snprintf(sv->address, sizeof sv->address, "[%s]:%u",
             inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof a), ntohs(s6->sin6_port));
  return fd;
}

/* A socket handed over (systemd): what it is bound to. */
static void describe_fd(struct fpull_server *sv, int fd)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  char a[INET6_ADDRSTRLEN] = "";
  snprintf(sv->address, sizeof sv->address, "fd:%d", fd);
  if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
    return;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    snprintf(sv->address, sizeof sv->address, "%s:%u",
             inet_ntop(AF_INET, &s4->sin_addr, a, sizeof a), ntohs(s4->sin_port));
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    snprintf(sv->address, sizeof sv->address, "[%s]:%u",
             inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof a), ntohs(s6->sin6_port));
  } else if (ss.ss_family == AF_UNIX) {
    struct sockaddr_un *su = (struct sockaddr_un *)&ss;
    snprintf(sv->address, sizeof sv->address, "unix:%s", su->sun_path);
  }
}

static void server_free(struct fpull_server *sv)
{
  for (size_t i = 0; i < sv->n_regs; i++) {
    fpull_registry_free(sv->regs[i].reg);
    free(sv->regs[i].name);
  }
  for (size_t i = 0; sv->sizes && i < SV_SIZES_MAX; i++)
    free(sv->sizes[i].key);
  free(sv->sizes);
  fpull_cache_free(sv->cache);
  fpull_cache_free(sv->stamps);
  if (sv->unix_path)
    unlink(sv->unix_path);
  free(sv->unix_path);
  pthread_cond_destroy(&sv->flights_done);
  pthread_mutex_destroy(&sv->mu);
  free(sv);
}

int fpull_serve_start(fpull_server **out, const struct fpull_serve_opts *o, fpull_err *err)
{
  *out = NULL;
  int rc = FP_OPTS_CHECK(o, FPULL_SERVE_OPTS, "fpull_serve_opts", err);
  if (rc)
    return rc;
  if (!o->pull || !o->pull->target || !o->pull->tagdb)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "fpull_serve_opts: pull options with a target and "
                         "a tag table are required");
  rc = FP_OPTS_CHECK(o->pull, FPULL_PULL_OPTS, "fpull_pull_opts", err);
  if (rc)
    return rc;
  struct fpull_server *sv = fp_xcalloc(1, sizeof *sv);
  sv->opts = o->pull;
  pthread_mutex_init(&sv->mu, NULL);
  pthread_cond_init(&sv->flights_done, NULL);
  rc = fpull_cache_open_with_shared(&sv->cache, o->pull->cache_dir, o->pull->config, err);
  if (rc) {
    server_free(sv);
    return rc;
  }
  fpull_err se = {0};
  if (fpull_cache_open(&sv->stamps, fpull_cache_dir(sv->cache), &se) == 0)
    fp_cache_pins_open(sv->stamps); /* now, before any request thread stamps */
  else
    fp_debug("serve: no last-use stamps: %s", se.msg);
  int fd = o->listen_fd;
  if (fd >= 0) {
    describe_fd(sv, fd);
  } else {
    const char *l = o->listen ? o->listen : FPULL_SERVE_DEFAULT_LISTEN;
    fd = strncmp(l, "unix:", 5) == 0 ? listen_unix(sv, l + 5, err) : listen_tcp(sv, l, err);
    if (fd < 0) {
      server_free(sv);
      return err->code ? err->code : FPULL_EFAIL;
    }
  }
  unsigned max = o->max_clients ? o->max_clients : 512;
  sv->daemon = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ITC |
          MHD_USE_ERROR_LOG,
      0, NULL, NULL, on_request, sv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_LIMIT, max, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SV_IDLE_SECONDS,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SV_CONNECTION_MEMORY, MHD_OPTION_END);
  if (!sv->daemon) {
    close(fd);
    server_free(sv);
    return fpull_err_set(err, FPULL_EFAIL, "cannot start the HTTP server on %s", sv->address);
  }
  fp_info("serve: listening on %s; cache %s", sv->address, fpull_cache_dir(sv->cache));
  *out = sv;
  return 0;
}

void sv_note_use(struct fpull_server *sv, const char *reference)
{
  if (sv->stamps)
    fp_cache_note_use(sv->stamps, reference);
}

const char *fpull_server_address(const fpull_server *s)
{
  return s ? s->address : NULL;
}

void fpull_serve_stop(fpull_server *sv)
{
  if (!sv)
    return;
  __atomic_store_n(&sv->stopping, 1, __ATOMIC_RELAXED);
  sv_flights_wake(sv);
  MHD_socket lfd = MHD_quiesce_daemon(sv->daemon);
  MHD_stop_daemon(sv->daemon);
  if (lfd != MHD_INVALID_SOCKET)
    close(lfd);
  /* A download stops at its next bytes; one whose registry went silent ends with curl's
   * stall timeout. The server is not freed under a download still running: the process is
   * about to end anyway. */
  int left = sv_flights_wait(sv, 15);
  if (left) {
    fp_warn("serve: %d download(s) still waiting for their registry; not waiting longer", left);
    return;
  }
  server_free(sv);
}
