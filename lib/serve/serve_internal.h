/* What the files of fpull serve share: the server, its registries, the blob sizes the
 * manifests it served declared, and the downloads in flight. */
#ifndef FP_SERVE_INTERNAL_H
#define FP_SERVE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fpull/cache.h"
#include "fpull/pull.h"
#include "fpull/registry.h"
#include "fpull/serve.h"
#include "route.h"

/* Registries one server talks to at once (a client names them: containerd's ?ns=). */
#define SV_REGISTRIES_MAX 64
/* Blob sizes remembered from the manifests served (oldest forgotten first). */
#define SV_SIZES_MAX 16384
/* Seconds a registry that did not answer is left alone: tags come from the cache meanwhile. */
#define SV_DOWN_SECONDS 30

struct sv_registry {
  char *name;
  fpull_registry *reg;
  time_t down_until;
};

struct sv_size {
  char *key; /* REGISTRY/REPO@DIGEST */
  int64_t size;
};

struct sv_flight;

struct fpull_server {
  const struct fpull_pull_opts *opts;
  fpull_cache *cache;
  /* The same cache again, for last-use stamps only (cache/cache_use.h): stamping opens the
   * cache's pins, and a pin is held until its cache handle is freed, so that pins taken
   * through this long-lived server's own handle would keep every blob from prune forever. */
  fpull_cache *stamps;
  struct MHD_Daemon *daemon;
  char address[300];
  char *unix_path; /* removed when the server stops */
  pthread_mutex_t mu;
  struct sv_registry regs[SV_REGISTRIES_MAX];
  size_t n_regs;
  struct sv_size *sizes; /* a ring of SV_SIZES_MAX */
  size_t n_sizes, next_size;
  struct sv_flight *flights; /* downloads in flight, a list */
  size_t n_flights;
  pthread_cond_t flights_done;
  int stopping;
  uint64_t requests;
};

/* The registry handle for name (opened on first use), or NULL with *down set when it did not
 * answer lately (or cannot be had: err says why). Never NULL with opts->offline unset... */
fpull_registry *sv_registry_get(struct fpull_server *sv, const char *name, int *down,
                                fpull_err *err);
/* A request to name failed with FPULL_ENET: it is down for SV_DOWN_SECONDS. */
void sv_registry_down(struct fpull_server *sv, const char *name);

void sv_size_note(struct fpull_server *sv, const char *registry, const char *repo,
                  const char *digest, int64_t size);
/* The size a served manifest declared for digest in registry/repo, or -1. */
int64_t sv_size_find(struct fpull_server *sv, const char *registry, const char *repo,
                     const char *digest);

/* Stamps the last use of reference (tag or digest) in the cache, as pull does: fpull cache
 * prune keeps what serve answered as it keeps what pulls used. */
void sv_note_use(struct fpull_server *sv, const char *reference);

/* An answer: status, body (owned) and the headers a registry sends. */
struct sv_answer {
  int status;
  char *body;
  size_t len;
  char *content_type;
  char *digest;             /* Docker-Content-Digest */
  int fd;                   /* a blob to send from instead of body: from offset, length bytes */
  uint64_t offset, length;  /* with fd, or with flight */
  uint64_t total;           /* the blob's size, for Content-Range */
  int partial;              /* 206 with Content-Range */
  struct sv_flight *flight; /* a blob still arriving (a reference held) */
};
void sv_answer_free(struct sv_answer *a);
/* An OCI error body: {"errors":[{"code":CODE,"message":MSG}]}. Returns status. */
int sv_answer_error(struct sv_answer *a, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* GET or HEAD of /v2/NAME/manifests/REF (answer.c). accept: the request's Accept header or
 * NULL. */
void sv_manifest(struct fpull_server *sv, const struct sv_route *rt, int head, const char *accept,
                 struct sv_answer *a);
/* GET or HEAD of /v2/NAME/blobs/DIGEST (blobs.c), range: the Range header or NULL. */
void sv_blob(struct fpull_server *sv, const struct sv_route *rt, int head, const char *range,
             struct sv_answer *a);

/* The streaming side of a flight (blobs.c), for the HTTP reader: copies up to max bytes
 * at offset pos of the blob into buf, waiting while they have not arrived. Returns the
 * count, 0 never, -1 when the download failed or the server stops. */
ssize_t sv_flight_read(struct fpull_server *sv, struct sv_flight *f, uint64_t pos, char *buf,
                       size_t max);
void sv_flight_unref(struct fpull_server *sv, struct sv_flight *f);
/* Wakes every reader (the server stops). */
void sv_flights_wake(struct fpull_server *sv);
/* Waits until no download runs (they stop at their next bytes once sv->stopping), at most
 * seconds; returns how many still run. */
int sv_flights_wait(struct fpull_server *sv, int seconds);

#endif
