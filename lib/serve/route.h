/* Which registry, repository and document a request to fpull serve means, the way each
 * engine asks a mirror (man fpull, SERVE), and the Range header: the parsers of what a
 * client sends besides what libmicrohttpd parses itself. */
#ifndef FP_SERVE_ROUTE_H
#define FP_SERVE_ROUTE_H

#include <stddef.h>
#include <stdint.h>

/* Longest path accepted (the reference rule bounds a repository to 255 characters). */
#define SV_PATH_MAX 1024

enum sv_kind {
  SV_BASE = 1, /* /v2/ */
  SV_MANIFEST,
  SV_BLOB,
};

struct sv_route {
  int kind;
  char *registry;   /* "docker.io", "127.0.0.1:5000" */
  char *repository; /* "library/alpine" */
  char *reference;  /* a tag or a digest */
  int by_digest;
  char *image; /* REGISTRY/REPO:TAG or REGISTRY/REPO@DIGEST, normalised */
};

/* Parses path (as the server decoded it, without the query) and ns (containerd's ?ns=,
 * NULL when absent): the registry is ns; else the first component of the name when it is
 * a registry by the reference rule (a '.' or ':' in it, or "localhost"), which podman sends
 * for a mirror location HOST:PORT/REGISTRY; else docker.io (library/ for a one-component
 * name). Returns 0, or the HTTP status to answer (400 or 404) with *code (an OCI error code)
 * and msg set. */
int sv_route_parse(struct sv_route *r, const char *path, const char *ns, const char **code,
                   char *msg, size_t msglen);
void sv_route_free(struct sv_route *r);

/* A Range header ("bytes=A-B", "bytes=A-", "bytes=-N") over a blob of size bytes: 0 for the
 * whole blob (no header, or one the server may ignore: several ranges, another unit), 1 with
 * *start and *len set, -1 when unsatisfiable (416). */
int sv_range_parse(const char *header, uint64_t size, uint64_t *start, uint64_t *len);

#endif
