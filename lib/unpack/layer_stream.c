/* Layer blobs as uncompressed tar streams (see layer_stream.h). */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#ifdef FPULL_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "layer_stream.h"
#include "base/util.h"

#define IN_SIZE (256 * 1024)
#define OUT_SIZE (1024 * 1024)
/* Buffers between the decompressing thread, the hashing thread and libarchive: enough
 * for each to run ahead of the others (8 MiB). */
#define NSLOTS 8

struct fp_layer_stream {
  int fd;
  int comp;
  uint64_t max, total;
  unsigned char *in, *out;
  size_t in_len, in_pos;
  int in_eof, eof, failed;
  EVP_MD_CTX *md;
#ifdef FPULL_HAVE_ISAL
  struct inflate_state *inf;
#endif
  ZSTD_DStream *zd;
  size_t zret;
  fpull_err err;

  /* Reading and decompressing run in a thread of their own, hashing in another, ahead of
   * the tar parsing and file creation that the caller does: inflate and sha256 then run on
   * different cores and cost (almost) no wall time beside file creation. Buffers are
   * numbered in stream order: [min(consumed, hashed), produced) are in use; the one
   * numbered consumed is held by libarchive while held is set (it stays valid until its
   * next read call). */
  pthread_t thread, hasher;
  int threaded, hashing, hash_inline, unhashed;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned char *slot[NSLOTS];
  size_t slot_len[NSLOTS];
  uint64_t produced, consumed, hashed;
  int held, done, stop, hash_failed;
};

static ssize_t fail(struct fp_layer_stream *s, int code, const char *msg, const char *detail)
{
  if (!s->failed)
    fpull_err_set(&s->err, code, "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
  s->failed = 1;
  return -1;
}

/* 1 when input is available, 0 at the end of the blob, -1 on error. */
static int fill_in(struct fp_layer_stream *s)
{
  if (s->in_pos < s->in_len)
    return 1;
  if (s->in_eof)
    return 0;
  for (;;) {
    ssize_t r = read(s->fd, s->in, IN_SIZE);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return (int)fail(s, FPULL_EFAIL, "cannot read layer blob", strerror(errno));
    s->in_len = (size_t)r;
    s->in_pos = 0;
    if (!r)
      s->in_eof = 1;
    return r > 0;
  }
}

#ifdef FPULL_HAVE_ISAL
static ssize_t produce_gzip(struct fp_layer_stream *s)
{
  for (;;) {
    if (s->inf->block_state == ISAL_BLOCK_FINISH) {
      /* gzip allows several members one after the other; anything else after a member
       * (padding, junk) is refused, as Go's gzip reader does. */
      int more = fill_in(s);
      if (more <= 0)
        return more;
      isal_inflate_reset(s->inf);
      s->inf->crc_flag = ISAL_GZIP;
    }
    if (fill_in(s) < 0)
      return -1;
    s->inf->next_in = s->in + s->in_pos;
    s->inf->avail_in = (uint32_t)(s->in_len - s->in_pos);
    s->inf->next_out = s->out;
    s->inf->avail_out = OUT_SIZE;
    int r = isal_inflate(s->inf);
    s->in_pos = s->in_len - s->inf->avail_in;
    if (r < 0)
      return fail(s, FPULL_EUNSAFE, "corrupt gzip layer",
                  r == ISAL_INCORRECT_CHECKSUM ? "bad checksum" : "invalid data");
    size_t n = OUT_SIZE - s->inf->avail_out;
    if (n)
      return (ssize_t)n;
    if (s->inf->block_state != ISAL_BLOCK_FINISH && s->in_pos == s->in_len && s->in_eof)
      return fail(s, FPULL_EUNSAFE, "corrupt gzip layer", "truncated");
  }
}
#endif

static ssize_t produce_zstd(struct fp_layer_stream *s)
{
  for (;;) {
    if (fill_in(s) < 0)
      return -1;
    ZSTD_inBuffer ib = {s->in, s->in_len, s->in_pos};
    ZSTD_outBuffer ob = {s->out, OUT_SIZE, 0};
    size_t r = ZSTD_decompressStream(s->zd, &ob, &ib);
    int progress = ib.pos != s->in_pos || ob.pos;
    s->in_pos = ib.pos;
    if (ZSTD_isError(r))
      return fail(s, FPULL_EUNSAFE, "corrupt zstd layer", ZSTD_getErrorName(r));
    /* Without progress, r is only the hint for a next frame: keep the previous answer,
     * 0 when the last frame was complete. */
    if (progress)
      s->zret = r;
    if (ob.pos)
      return (ssize_t)ob.pos;
    if (!progress && s->in_pos == s->in_len && s->in_eof) {
      if (s->zret)
        return fail(s, FPULL_EUNSAFE, "corrupt zstd layer", "truncated");
      return 0;
    }
  }
}

static ssize_t produce_plain(struct fp_layer_stream *s)
{
  for (;;) {
    ssize_t r = read(s->fd, s->out, OUT_SIZE);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return fail(s, FPULL_EFAIL, "cannot read layer blob", strerror(errno));
    return r;
  }
}

/* Next piece of the uncompressed stream in s->out: its length, 0 at the end, -1 on error. */
static ssize_t produce(struct fp_layer_stream *s)
{
  if (s->failed)
    return -1;
  if (s->eof)
    return 0;
  ssize_t n;
  switch (s->comp) {
#ifdef FPULL_HAVE_ISAL
  case FP_COMP_GZIP:
    n = produce_gzip(s);
    break;
#endif
  case FP_COMP_ZSTD:
    n = produce_zstd(s);
    break;
  default:
    n = produce_plain(s);
    break;
  }
  if (n == 0)
    s->eof = 1;
  if (n <= 0)
    return n;
  s->total += (uint64_t)n;
  if (s->total > s->max) {
    char lim[64];
    snprintf(lim, sizeof lim, "%llu bytes", (unsigned long long)s->max);
    return fail(s, FPULL_EUNSAFE, "layer exceeds the limit on uncompressed size", lim);
  }
  if (s->hash_inline && EVP_DigestUpdate(s->md, s->out, (size_t)n) != 1)
    return fail(s, FPULL_EFAIL, "sha256 failed", NULL);
  return n;
}

static void *producer(void *arg);
static void *hasher(void *arg);

int fp_layer_stream_open(struct fp_layer_stream **out, const char *path, int given_fd,
                         int compression, uint64_t max_bytes, const char *diff_id, fpull_err *err)
{
#ifndef FPULL_HAVE_ISAL
  if (compression == FP_COMP_GZIP)
    return fpull_err_set(err, FPULL_EUNSAFE, "gzip layers need ISA-L, not built in");
#endif
  /* From the verified descriptor: re-opening by path would read whatever is at that name
   * by now (another user of a shared cache may have swapped it). */
  int fd = given_fd > 0 ? fcntl(given_fd, F_DUPFD_CLOEXEC, 0)
                        : open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot open layer blob %s: %s", path, strerror(errno));
  struct fp_layer_stream *s = fp_xcalloc(1, sizeof *s);
  s->fd = fd;
  s->comp = compression;
  s->max = max_bytes;
  for (int i = 0; i < NSLOTS; i++)
    s->slot[i] = fp_xmalloc(OUT_SIZE);
  s->out = s->slot[0];
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (compression != FP_COMP_NONE)
    s->in = fp_xmalloc(IN_SIZE);
  /* Without a DiffID to check there is nothing to hash for (a warm pull whose blob's
   * record vouches for it: lib/cache/cache_verified.c). */
  s->unhashed = diff_id == NULL;
  if (!s->unhashed) {
    s->md = EVP_MD_CTX_new();
    int sha512 = strncmp(diff_id, "sha512:", 7) == 0;
    if (!s->md || EVP_DigestInit_ex(s->md, sha512 ? EVP_sha512() : EVP_sha256(), NULL) != 1)
      abort();
  }
#ifdef FPULL_HAVE_ISAL
  if (compression == FP_COMP_GZIP) {
    s->inf = fp_xcalloc(1, sizeof *s->inf);
    isal_inflate_init(s->inf);
    s->inf->crc_flag = ISAL_GZIP;
  }
#endif
  if (compression == FP_COMP_ZSTD) {
    s->zret = 1;
    s->zd = ZSTD_createDStream();
    if (!s->zd)
      abort();
    ZSTD_initDStream(s->zd);
  }
  /* Without threads (none could be made) the same work happens inline. */
  s->hashing = !s->unhashed && pthread_create(&s->hasher, NULL, hasher, s) == 0;
  s->hash_inline = !s->unhashed && !s->hashing;
  s->threaded = pthread_create(&s->thread, NULL, producer, s) == 0;
  if (!s->threaded && s->hashing) {
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->hasher, NULL);
    s->hashing = 0;
    s->hash_inline = 1;
  }
  *out = s;
  return 0;
}

/* The oldest buffer still in use: libarchive's or the hasher's, whichever lags. */
static uint64_t oldest(const struct fp_layer_stream *s)
{
  return s->hashing && s->hashed < s->consumed ? s->hashed : s->consumed;
}

static void *producer(void *arg)
{
  struct fp_layer_stream *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->stop && s->produced - oldest(s) >= NSLOTS)
      pthread_cond_wait(&s->cv, &s->mu);
    if (s->stop)
      break;
    size_t i = s->produced % NSLOTS;
    pthread_mutex_unlock(&s->mu);
    s->out = s->slot[i];
    ssize_t n = produce(s);
    pthread_mutex_lock(&s->mu);
    if (n <= 0) {
      s->done = 1;
      pthread_cond_broadcast(&s->cv);
      break;
    }
    s->slot_len[i] = (size_t)n;
    s->produced++;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* The DiffID: every buffer in stream order, while libarchive reads the same buffers. */
static void *hasher(void *arg)
{
  struct fp_layer_stream *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->stop && !s->done && s->hashed == s->produced)
      pthread_cond_wait(&s->cv, &s->mu);
    if (s->stop || s->hashed == s->produced)
      break;
    size_t i = s->hashed % NSLOTS;
    pthread_mutex_unlock(&s->mu);
    /* A failure is reported by finish; the buffers keep moving meanwhile. */
    int ok = s->hash_failed || EVP_DigestUpdate(s->md, s->slot[i], s->slot_len[i]) == 1;
    pthread_mutex_lock(&s->mu);
    s->hash_failed |= !ok;
    s->hashed++;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* The next filled buffer (releasing the one handed out before): its length, 0 at the end
 * of the stream, -1 on error. */
static ssize_t next_slot(struct fp_layer_stream *s, const void **buf)
{
  if (!s->threaded) {
    ssize_t n = produce(s);
    *buf = s->out;
    return n;
  }
  pthread_mutex_lock(&s->mu);
  if (s->held) {
    s->held = 0;
    s->consumed++;
    pthread_cond_broadcast(&s->cv);
  }
  while (s->consumed == s->produced && !s->done)
    pthread_cond_wait(&s->cv, &s->mu);
  ssize_t n;
  if (s->consumed < s->produced) {
    size_t i = s->consumed % NSLOTS;
    s->held = 1;
    *buf = s->slot[i];
    n = (ssize_t)s->slot_len[i];
  } else {
    n = s->failed ? -1 : 0;
  }
  pthread_mutex_unlock(&s->mu);
  return n;
}

static void stop_threads(struct fp_layer_stream *s)
{
  if (!s->threaded)
    return;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  if (s->hashing)
    pthread_join(s->hasher, NULL);
  s->threaded = 0;
}

void fp_layer_stream_close(struct fp_layer_stream *s)
{
  if (!s)
    return;
  stop_threads(s);
  close(s->fd);
  free(s->in);
  for (int i = 0; i < NSLOTS; i++)
    free(s->slot[i]);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  EVP_MD_CTX_free(s->md);
#ifdef FPULL_HAVE_ISAL
  free(s->inf);
#endif
  ZSTD_freeDStream(s->zd);
  free(s);
}

static la_ssize_t read_cb(struct archive *a, void *ud, const void **buf)
{
  struct fp_layer_stream *s = ud;
  ssize_t n = next_slot(s, buf);
  if (n < 0) {
    archive_set_error(a, EIO, "%s", s->err.msg);
    return -1;
  }
  return n;
}

struct archive *fp_layer_stream_archive(struct fp_layer_stream *s, fpull_err *err)
{
  struct archive *a = archive_read_new();
  if (!a)
    abort();
  /* Tar only (ustar, pax, GNU): the other readers carry a steady stream of CVEs. */
  if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
      archive_read_support_format_gnutar(a) != ARCHIVE_OK ||
      archive_read_open(a, s, NULL, read_cb, NULL) != ARCHIVE_OK) {
    const fpull_err *se = fp_layer_stream_error(s);
    if (se)
      fpull_err_set(err, se->code, "%s", se->msg);
    else
      fpull_err_set(err, FPULL_EUNSAFE, "corrupt layer: %s", archive_error_string(a));
    archive_read_free(a);
    return NULL;
  }
  return a;
}

const fpull_err *fp_layer_stream_error(const struct fp_layer_stream *s)
{
  struct fp_layer_stream *m = (struct fp_layer_stream *)s;
  pthread_mutex_lock(&m->mu);
  /* With the thread running, its error is final (and visible here) once it is done. */
  int failed = s->failed && (s->done || !s->threaded);
  pthread_mutex_unlock(&m->mu);
  return failed ? &s->err : NULL;
}

int fp_layer_stream_finish(struct fp_layer_stream *s, char diff_id[FP_DIGEST_MAX], fpull_err *err)
{
  const void *buf;
  ssize_t n;
  while ((n = next_slot(s, &buf)) > 0)
    ;
  if (n == 0 && s->threaded) {
    /* Drained: the hasher stops by itself once it has caught up with the producer. */
    if (s->hashing)
      pthread_join(s->hasher, NULL);
    s->hashing = 0;
    pthread_join(s->thread, NULL);
    s->threaded = 0;
  }
  stop_threads(s);
  if (n < 0 || s->failed)
    return fpull_err_set(err, s->err.code, "%s", s->err.msg);
  if (s->hash_failed)
    return fpull_err_set(err, FPULL_EFAIL, "sha256 failed");
  if (s->unhashed) {
    diff_id[0] = '\0';
    return 0;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(s->md, md, &len) != 1 || (len != 32 && len != 64))
    return fpull_err_set(err, FPULL_EFAIL, "sha256 failed");
  fp_digest_format_len(diff_id, md, len);
  return 0;
}

uint64_t fp_layer_stream_bytes(const struct fp_layer_stream *s)
{
  return s->total;
}
