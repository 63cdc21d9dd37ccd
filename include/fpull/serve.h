/* fpull: a pull-only OCI distribution endpoint (fpull serve) that answers a tag with the
 * entry this node would pull, so that docker, podman and containerd pull through it as a
 * registry mirror (man fpull, SERVE). */
#ifndef FPULL_SERVE_H
#define FPULL_SERVE_H

#include "error.h"
#include "pull.h"

/* Options structs grow at the end: start from FPULL_SERVE_OPTS_INIT, then set fields. */
#define FPULL_SERVE_OPTS_VERSION 1
struct fpull_serve_opts {
  unsigned int version; /* FPULL_SERVE_OPTS_VERSION */
  /* What a pull on this node would use: target (its features choose a tag's entry), tagdb,
   * config, cache_dir, policy, insecure, offline (never ask a registry), jobs unused.
   * Required; it must outlive the server. */
  const struct fpull_pull_opts *pull;
  /* "ADDR:PORT" ("127.0.0.1:5050", "[::1]:5050", port 0: any free one) or "unix:PATH";
   * NULL: FPULL_SERVE_DEFAULT_LISTEN. Ignored when listen_fd >= 0. */
  const char *listen;
  /* A listening socket already bound (systemd's socket activation), or -1. The server
   * takes it over and closes it when it stops. */
  int listen_fd;
  /* Clients served at once; more are refused (the connection is closed). 0: 512. */
  unsigned int max_clients;
};
#define FPULL_SERVE_OPTS_INIT                                                                      \
  {                                                                                                \
    .version = FPULL_SERVE_OPTS_VERSION, .listen_fd = -1                                           \
  }
#define FPULL_SERVE_DEFAULT_LISTEN "127.0.0.1:5050"

typedef struct fpull_server fpull_server;

/* Starts serving on its own threads and returns; messages (one per request, the choice of
 * an entry and why) go to the log sink (log.h). Errors: FPULL_EUSAGE for a bad listen
 * address or options, FPULL_EFAIL when the address cannot be bound or the cache opened. */
FPULL_API int fpull_serve_start(fpull_server **out, const struct fpull_serve_opts *opts,
                                fpull_err *err);
/* Where it listens: "127.0.0.1:5050" (the port chosen when 0 was asked) or "unix:PATH". */
FPULL_API const char *fpull_server_address(const fpull_server *s);
/* Stops accepting, ends the connections and the downloads (a download in flight stays in
 * the cache as a partial, resumed later), and frees s. NULL is a no-op. */
FPULL_API void fpull_serve_stop(fpull_server *s);

#endif
