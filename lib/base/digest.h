/* Streaming sha256 (and sha512, for digests that name it) over OpenSSL EVP, for blob
 * verification while bytes arrive. */
#ifndef FP_DIGEST_H
#define FP_DIGEST_H

#include <stddef.h>
#include <stdint.h>

struct evp_md_ctx_st;

/* "sha512:" and 128 hex digits, and the NUL: room for either algorithm's digest. */
#define FP_DIGEST_MAX 136

struct fp_sha256 {
  struct evp_md_ctx_st *ctx;
  uint64_t n; /* bytes hashed since the last init/reset */
  int sha512; /* hashes sha512 (fp_hash_init of a sha512 digest) */
};

/* 0, or -1 when OpenSSL cannot give a sha256 context (out of memory, FIPS policy). */
int fp_sha256_init(struct fp_sha256 *h);
/* Starts over with no bytes hashed. 0 or -1. */
int fp_sha256_reset(struct fp_sha256 *h);
int fp_sha256_update(struct fp_sha256 *h, const void *data, size_t len);
/* Writes "sha256:HEX" into out. The context must be reset before it is used again. */
int fp_sha256_final(struct fp_sha256 *h, char out[72]);
/* The same with the algorithm of digest (sha512 for "sha512:...", sha256 otherwise), and
 * its final "ALGORITHM:HEX". */
int fp_hash_init(struct fp_sha256 *h, const char *digest);
int fp_hash_final(struct fp_sha256 *h, char out[FP_DIGEST_MAX]);
/* The digest of bytes with like's algorithm. Caller frees; NULL only if OpenSSL fails. */
char *fp_digest_of_like(const char *like, const void *bytes, size_t len);
void fp_sha256_free(struct fp_sha256 *h);

/* Hashes the first len bytes of fd from offset 0 (pread, the file offset is untouched) into
 * h, which is reset first. 0, or -1 with errno (EIO-like, or ENODATA when the file is shorter). */
int fp_sha256_fd(struct fp_sha256 *h, int fd, uint64_t len);

static inline void fp_sha256_freep(struct fp_sha256 *h)
{
  fp_sha256_free(h);
}
#define cleanup_sha256 __attribute__((cleanup(fp_sha256_freep)))

#endif
