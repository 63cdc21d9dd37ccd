#include <errno.h>
#include <openssl/evp.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"
#include "fpull/manifest.h"
#include "util.h"

static const EVP_MD *md_of(const struct fp_sha256 *h)
{
  return h->sha512 ? EVP_sha512() : EVP_sha256();
}

int fp_sha256_init(struct fp_sha256 *h)
{
  h->n = 0;
  h->ctx = EVP_MD_CTX_new();
  if (!h->ctx)
    return -1;
  if (EVP_DigestInit_ex(h->ctx, md_of(h), NULL) != 1) {
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
    return -1;
  }
  return 0;
}

int fp_hash_init(struct fp_sha256 *h, const char *digest)
{
  h->sha512 = digest && strncmp(digest, "sha512:", 7) == 0;
  return fp_sha256_init(h);
}

int fp_sha256_reset(struct fp_sha256 *h)
{
  h->n = 0;
  if (!h->ctx)
    return fp_sha256_init(h);
  return EVP_DigestInit_ex(h->ctx, md_of(h), NULL) == 1 ? 0 : -1;
}

int fp_sha256_update(struct fp_sha256 *h, const void *data, size_t len)
{
  if (!h->ctx)
    return -1;
  if (len == 0)
    return 0;
  if (EVP_DigestUpdate(h->ctx, data, len) != 1)
    return -1;
  h->n += len;
  return 0;
}

int fp_sha256_final(struct fp_sha256 *h, char out[72])
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (h->sha512 || !h->ctx || EVP_DigestFinal_ex(h->ctx, md, &mdlen) != 1 || mdlen != 32)
    return -1;
  fp_digest_format(out, md);
  return 0;
}

int fp_hash_final(struct fp_sha256 *h, char out[FP_DIGEST_MAX])
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (!h->ctx || EVP_DigestFinal_ex(h->ctx, md, &mdlen) != 1 || mdlen != (h->sha512 ? 64u : 32u))
    return -1;
  fp_digest_format_len(out, md, mdlen);
  return 0;
}

char *fp_digest_of_like(const char *like, const void *bytes, size_t len)
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  int sha512 = like && strncmp(like, "sha512:", 7) == 0;
  if (EVP_Digest(bytes, len, md, &mdlen, sha512 ? EVP_sha512() : EVP_sha256(), NULL) != 1)
    return NULL;
  char out[FP_DIGEST_MAX];
  fp_digest_format_len(out, md, mdlen);
  return fp_xstrdup(out);
}

void fp_sha256_free(struct fp_sha256 *h)
{
  if (h && h->ctx) {
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
  }
}

int fp_sha256_fd(struct fp_sha256 *h, int fd, uint64_t len)
{
  if (fp_sha256_reset(h) < 0) {
    errno = ENOMEM;
    return -1;
  }
  static const size_t chunk = 1 << 20;
  cleanup_free char *buf = fp_xmalloc(chunk);
  uint64_t off = 0;
  while (off < len) {
    size_t want = len - off < chunk ? (size_t)(len - off) : chunk;
    ssize_t r = pread(fd, buf, want, (off_t)off);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (r == 0) {
      errno = ENODATA;
      return -1;
    }
    if (fp_sha256_update(h, buf, (size_t)r) < 0) {
      errno = ENOMEM;
      return -1;
    }
    off += (uint64_t)r;
  }
  return 0;
}

char *fpull_digest_of(const void *bytes, size_t len)
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_Digest(bytes, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
    return NULL;
  char out[72];
  fp_digest_format(out, md);
  return fp_xstrdup(out);
}
