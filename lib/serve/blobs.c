/* Blobs: from the cache when they are there (verified first), else one download per digest
 * into the cache, however many clients ask, each client reading the partial file as the
 * bytes arrive (it need not wait for the whole blob). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache_writer.h"
#include "base/digest.h"
#include "serve_internal.h"
#include "base/util.h"

#define FLIGHT_FDS 4
/* How long a client's block waits to fill while the blob arrives. */
#define SV_COALESCE_NS (5 * 1000 * 1000L)

struct sv_flight {
  struct sv_flight *next; /* sv->flights, while the download runs */
  char digest[FP_DIGEST_MAX];
  char *registry, *repository;
  uint64_t size;
  int refs; /* under sv->mu: the download's and each reader's */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int fds[FLIGHT_FDS]; /* the files read so far; the last is current */
  int n_fds;
  uint64_t valid; /* bytes at the start of the current file that may be sent */
  int state;      /* 0 running, 1 done (the file is the verified blob), -1 failed */
  fpull_err err;
  struct fpull_server *sv;
  struct fpull_cache_writer *w;
};

static void flight_free(struct sv_flight *f)
{
  for (int i = 0; i < f->n_fds; i++)
    close(f->fds[i]);
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  free(f->registry);
  free(f->repository);
  free(f);
}

void sv_flight_unref(struct fpull_server *sv, struct sv_flight *f)
{
  if (!f)
    return;
  pthread_mutex_lock(&sv->mu);
  int last = --f->refs == 0;
  pthread_mutex_unlock(&sv->mu);
  if (last)
    flight_free(f);
}

/* The bytes of a new file (fd, of which valid bytes may be sent) replace the current. */
static void publish(struct sv_flight *f, int fd, uint64_t valid)
{
  pthread_mutex_lock(&f->mu);
  if (f->n_fds < FLIGHT_FDS) {
    f->fds[f->n_fds++] = fd;
  } else { /* never more than one restart: the oldest file is no reader's any more */
    close(fd);
  }
  f->valid = valid;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
}

static void set_valid(struct sv_flight *f, uint64_t valid)
{
  pthread_mutex_lock(&f->mu);
  f->valid = valid;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
}

/* The cache writer's sink, and the readers woken after each write. */
static int tee_write(void *ud, const void *data, size_t len, fpull_err *err)
{
  struct sv_flight *f = ud;
  const struct fpull_blob_sink *in = fpull_cache_writer_sink(f->w);
  int rc = in->write(in->ud, data, len, err);
  if (rc)
    return rc;
  if (__atomic_load_n(&f->sv->stopping, __ATOMIC_RELAXED))
    return fpull_err_set(err, FPULL_EFAIL, "fpull serve is stopping");
  set_valid(f, fpull_cache_writer_offset(f->w));
  return 0;
}

static int tee_restart(void *ud, uint64_t offset, fpull_err *err)
{
  struct sv_flight *f = ud;
  const struct fpull_blob_sink *in = fpull_cache_writer_sink(f->w);
  /* Bytes past offset are written again: readers behind it wait for them. */
  set_valid(f, offset < f->valid ? offset : f->valid);
  int rc = in->restart(in->ud, offset, err);
  if (rc == 0)
    set_valid(f, fpull_cache_writer_offset(f->w));
  return rc;
}

static int download(struct sv_flight *f, fpull_err *err)
{
  struct fpull_server *sv = f->sv;
  int down = 0;
  fpull_registry *reg = sv_registry_get(sv, f->registry, &down, err);
  if (!reg)
    return down ? fpull_err_set(err, FPULL_ENET, "registry %s is not answering", f->registry)
                : (err->code ? err->code : FPULL_EFAIL);
  for (int attempt = 0;; attempt++) {
    int done = 0;
    f->w = NULL;
    int rc = fpull_cache_writer_begin(&f->w, &done, sv->cache, f->digest, (int64_t)f->size, err);
    if (rc)
      return rc;
    if (done) { /* another process or an earlier download committed it */
      int fd = -1;
      rc = fpull_cache_open_verified(&fd, sv->cache, f->digest, (int64_t)f->size, err);
      if (rc == 0)
        publish(f, fd, f->size);
      return rc;
    }
    int rfd = fp_cache_writer_read_fd(f->w);
    if (rfd < 0) {
      fpull_cache_writer_abort(f->w);
      return fpull_err_set(err, FPULL_EFAIL, "blob %s: cannot read the partial download: %s",
                           f->digest, strerror(errno));
    }
    uint64_t from = fpull_cache_writer_offset(f->w);
    publish(f, rfd, from);
    struct fpull_blob_sink tee = {.ud = f, .write = tee_write, .restart = tee_restart};
    rc = fpull_registry_get_blob(reg, f->repository, f->digest, from, &tee, NULL, err);
    if (rc) {
      fpull_cache_writer_abort(f->w);
      f->w = NULL;
      if (rc == FPULL_ENET)
        sv_registry_down(sv, f->registry);
      return rc;
    }
    int vfd = -1;
    rc = fpull_cache_writer_commit_fd(f->w, &vfd, err);
    f->w = NULL;
    if (vfd >= 0)
      close(vfd); /* the read descriptor is the same file */
    if (rc == 0) {
      set_valid(f, f->size);
      return 0;
    }
    if (rc != FPULL_EINTEGRITY || from == 0 || attempt > 0)
      return rc;
    fp_warn("serve: blob %s resumed at byte %llu did not verify (%s); fetching it again", f->digest,
            (unsigned long long)from, err->msg);
    fpull_err_clear(err);
    set_valid(f, 0);
  }
}

static void *flight_run(void *arg)
{
  struct sv_flight *f = arg;
  struct fpull_server *sv = f->sv;
  fpull_err e = {0};
  int rc = download(f, &e);
  if (rc)
    fp_warn("serve: blob %s from %s/%s: %s", f->digest, f->registry, f->repository, e.msg);
  else
    fp_debug("serve: blob %s from %s/%s is in the cache", f->digest, f->registry, f->repository);
  pthread_mutex_lock(&f->mu);
  f->state = rc ? -1 : 1;
  f->err = e;
  if (!e.code && rc)
    f->err.code = rc;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  pthread_mutex_lock(&sv->mu);
  for (struct sv_flight **p = &sv->flights; *p; p = &(*p)->next)
    if (*p == f) {
      *p = f->next;
      break;
    }
  if (--sv->n_flights == 0)
    pthread_cond_broadcast(&sv->flights_done);
  pthread_mutex_unlock(&sv->mu);
  sv_flight_unref(sv, f);
  return NULL;
}

/* The download of digest in flight (a reference for the caller), started when none is. */
static struct sv_flight *flight_get(struct fpull_server *sv, const struct sv_route *rt,
                                    uint64_t size, fpull_err *err)
{
  pthread_mutex_lock(&sv->mu);
  for (struct sv_flight *f = sv->flights; f; f = f->next)
    if (strcmp(f->digest, rt->reference) == 0) {
      f->refs++;
      pthread_mutex_unlock(&sv->mu);
      return f;
    }
  if (sv->stopping) {
    pthread_mutex_unlock(&sv->mu);
    fpull_err_set(err, FPULL_EFAIL, "fpull serve is stopping");
    return NULL;
  }
  struct sv_flight *f = fp_xcalloc(1, sizeof *f);
  snprintf(f->digest, sizeof f->digest, "%s", rt->reference);
  f->registry = fp_xstrdup(rt->registry);
  f->repository = fp_xstrdup(rt->repository);
  f->size = size;
  f->sv = sv;
  f->refs = 2; /* the download's and the caller's */
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  f->next = sv->flights;
  sv->flights = f;
  sv->n_flights++;
  if (pthread_create(&t, &attr, flight_run, f) != 0) {
    sv->flights = f->next;
    sv->n_flights--;
    pthread_mutex_unlock(&sv->mu);
    pthread_attr_destroy(&attr);
    flight_free(f);
    fpull_err_set(err, FPULL_EFAIL, "cannot start a download thread");
    return NULL;
  }
  pthread_attr_destroy(&attr);
  pthread_mutex_unlock(&sv->mu);
  return f;
}

ssize_t sv_flight_read(struct fpull_server *sv, struct sv_flight *f, uint64_t pos, char *buf,
                       size_t max)
{
  pthread_mutex_lock(&f->mu);
  /* While the blob arrives, a block is sent once it is full or a few milliseconds after its
   * first byte came: not every small write of the download wakes every client. */
  struct timespec until = {0};
  while (f->state == 0 && !__atomic_load_n(&sv->stopping, __ATOMIC_RELAXED)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (f->valid > pos &&
        (f->valid - pos >= max ||
         (until.tv_sec && (ts.tv_sec > until.tv_sec ||
                           (ts.tv_sec == until.tv_sec && ts.tv_nsec >= until.tv_nsec)))))
      break;
    if (f->valid > pos && !until.tv_sec) {
      until = ts;
      until.tv_nsec += SV_COALESCE_NS;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
    }
    if (f->valid <= pos) {
      ts.tv_sec += 1;
      pthread_cond_timedwait(&f->cv, &f->mu, &ts);
    } else {
      pthread_cond_timedwait(&f->cv, &f->mu, &until);
    }
  }
  int fd = -1;
  uint64_t avail = 0;
  if (f->valid > pos && f->n_fds > 0 && f->state >= 0) {
    fd = f->fds[f->n_fds - 1];
    avail = f->valid - pos;
  }
  pthread_mutex_unlock(&f->mu);
  if (fd < 0)
    return -1;
  size_t want = avail < max ? (size_t)avail : max;
  ssize_t n;
  do
    n = pread(fd, buf, want, (off_t)pos);
  while (n < 0 && errno == EINTR);
  return n > 0 ? n : -1;
}

void sv_flights_wake(struct fpull_server *sv)
{
  pthread_mutex_lock(&sv->mu);
  for (struct sv_flight *f = sv->flights; f; f = f->next) {
    pthread_mutex_lock(&f->mu);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
  }
  pthread_mutex_unlock(&sv->mu);
}

int sv_flights_wait(struct fpull_server *sv, int seconds)
{
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += seconds;
  pthread_mutex_lock(&sv->mu);
  while (sv->n_flights > 0)
    if (pthread_cond_timedwait(&sv->flights_done, &sv->mu, &until) != 0)
      break;
  int left = (int)sv->n_flights;
  pthread_mutex_unlock(&sv->mu);
  return left;
}

/* The whole blob, or the range asked, of a blob of size bytes; 416 when unsatisfiable. */
static int apply_range(struct sv_answer *a, const char *range, uint64_t size)
{
  uint64_t start = 0, len = size;
  int r = sv_range_parse(range, size, &start, &len);
  a->total = size;
  if (r < 0) {
    sv_answer_error(a, 416, "BLOB_UNKNOWN", "range %s is outside the blob's %llu bytes", range,
                    (unsigned long long)size);
    return -1;
  }
  a->offset = start;
  a->length = len;
  a->partial = r > 0;
  a->status = r > 0 ? 206 : 200;
  return 0;
}

void sv_blob(struct fpull_server *sv, const struct sv_route *rt, int head, const char *range,
             struct sv_answer *a)
{
  const char *digest = rt->reference;
  a->digest = fp_xstrdup(digest);
  a->content_type = fp_xstrdup("application/octet-stream");
  fpull_err e = {0};
  if (fpull_cache_has_blob(sv->cache, digest, -1)) {
    int fd = -1;
    int rc = fpull_cache_open_verified(&fd, sv->cache, digest, -1, &e);
    struct stat st;
    if (rc == 0 && fstat(fd, &st) == 0) {
      if (apply_range(a, range, (uint64_t)st.st_size) < 0 || head) {
        close(fd);
        return;
      }
      a->fd = fd;
      return;
    }
    if (fd >= 0)
      close(fd);
    fp_warn("serve: cached blob %s: %s; fetching it again", digest, e.msg);
    fpull_err_clear(&e);
  }
  int64_t size = sv_size_find(sv, rt->registry, rt->repository, digest);
  if (size < 0) {
    sv_answer_error(a, 404, "BLOB_UNKNOWN",
                    "blob %s is not in the cache and no manifest served by fpull serve "
                    "names it in %s/%s",
                    digest, rt->registry, rt->repository);
    return;
  }
  if (apply_range(a, range, (uint64_t)size) < 0 || head)
    return;
  int down = 0;
  if (!sv->opts->offline) {
    sv_registry_get(sv, rt->registry, &down, &e);
    fpull_err_clear(&e);
  }
  if (sv->opts->offline || down) {
    sv_answer_error(a, 404, "BLOB_UNKNOWN", "blob %s is not in the cache and %s", digest,
                    sv->opts->offline ? "fpull serve is --offline"
                                      : "the registry is not answering");
    return;
  }
  struct sv_flight *f = flight_get(sv, rt, (uint64_t)size, &e);
  if (!f) {
    sv_answer_error(a, 503, "UNAVAILABLE", "%s", e.msg);
    return;
  }
  /* The status waits for the first byte asked for (or the failure), so that a blob the
   * registry does not have is a 404, not a broken 200. */
  pthread_mutex_lock(&f->mu);
  while (f->valid <= a->offset && f->state == 0 &&
         !__atomic_load_n(&sv->stopping, __ATOMIC_RELAXED)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&f->cv, &f->mu, &ts);
  }
  int state = f->state;
  int none = f->valid <= a->offset && a->length > 0;
  fpull_err fe = f->err;
  pthread_mutex_unlock(&f->mu);
  if (state < 0 || (state == 0 && none)) {
    sv_flight_unref(sv, f);
    if (fe.code == FPULL_ENOTFOUND)
      sv_answer_error(a, 404, "BLOB_UNKNOWN", "%s", fe.msg);
    else
      sv_answer_error(a, 502, "UNKNOWN", "%s", fe.code ? fe.msg : "fpull serve is stopping");
    return;
  }
  a->flight = f;
}
