/* A blob into memory, verified before anyone sees it (see blob_memory.h). */
#include <string.h>

#include "blob_memory.h"
#include "base/digest.h"
#include "base/util.h"

struct mem_sink {
  struct fp_buf buf;
  size_t limit; /* the descriptor's size: a byte more is refused while it arrives */
};

static int mem_write(void *ud, const void *data, size_t len, fpull_err *err)
{
  struct mem_sink *m = ud;
  if (len > m->limit - m->buf.len)
    return fpull_err_set(err, FPULL_EINTEGRITY, "more bytes than the descriptor's %zu", m->limit);
  fp_buf_append(&m->buf, data, len);
  return 0;
}

/* A resumed request starts where the kept bytes end; 0 (a server that ignored Range)
 * starts over. */
static int mem_restart(void *ud, uint64_t offset, fpull_err *err)
{
  struct mem_sink *m = ud;
  if (offset > m->buf.len)
    return fpull_err_set(err, FPULL_EFAIL, "resume offset %llu past the %zu bytes kept",
                         (unsigned long long)offset, m->buf.len);
  m->buf.len = (size_t)offset;
  if (m->buf.data)
    m->buf.data[m->buf.len] = '\0';
  return 0;
}

int fp_blob_fetch_memory(fpull_registry *reg, const char *repo, const struct fpull_descriptor *d,
                         char **data, size_t *len, uint64_t *received, fpull_err *err)
{
  *data = NULL;
  *len = 0;
  if (d->size < 0)
    return fpull_err_set(err, FPULL_EINTEGRITY, "blob %s: negative size", d->digest);
  struct mem_sink m = {.limit = (size_t)d->size};
  struct fpull_blob_sink sink = {.ud = &m, .write = mem_write, .restart = mem_restart};
  int rc = fpull_registry_get_blob(reg, repo, d->digest, 0, &sink, received, err);
  char got[FP_DIGEST_MAX] = "";
  cleanup_sha256 struct fp_sha256 h = {0};
  if (rc == 0 && (fp_hash_init(&h, d->digest) < 0 ||
                  fp_sha256_update(&h, m.buf.data ? m.buf.data : "", m.buf.len) < 0 ||
                  fp_hash_final(&h, got) < 0))
    rc = fpull_err_set(err, FPULL_EFAIL, "blob %s: cannot compute sha256", d->digest);
  if (rc == 0 && (m.buf.len != m.limit || strcmp(got, d->digest) != 0))
    rc = fpull_err_set(err, FPULL_EINTEGRITY, "blob %s: got %zu bytes with digest %s", d->digest,
                       m.buf.len, got);
  if (rc) {
    fp_buf_free(&m.buf);
    return rc;
  }
  *data = m.buf.data ? m.buf.data : fp_xstrdup("");
  *len = m.buf.len;
  return 0;
}
