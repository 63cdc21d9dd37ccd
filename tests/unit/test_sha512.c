/* sha512 digests wherever sha256 ones go (issue 23.6): hashing, the cache's blobs/sha512,
 * verification of what is stored there. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "fpull/cache.h"
#include "fpull/ref.h"
#include "harness.h"
#include "base/util.h"

/* FIPS 180-2's "abc". */
#define SHA512_ABC                                                                                 \
  "sha512:ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a8"        \
  "36ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"

TEST(sha512_known_answer_streamed_and_one_shot)
{
  CHECK(fpull_digest_valid(SHA512_ABC));
  char *d = fp_digest_of_like(SHA512_ABC, "abc", 3);
  CHECK_STR_EQ(d, SHA512_ABC);
  free(d);
  cleanup_sha256 struct fp_sha256 h = {0};
  CHECK_INT_EQ(fp_hash_init(&h, SHA512_ABC), 0);
  CHECK_INT_EQ(fp_sha256_update(&h, "a", 1), 0);
  CHECK_INT_EQ(fp_sha256_update(&h, "bc", 2), 0);
  char out[FP_DIGEST_MAX];
  CHECK_INT_EQ(fp_hash_final(&h, out), 0);
  CHECK_STR_EQ(out, SHA512_ABC);
  /* A reset keeps the algorithm; the sha256-only final refuses it. */
  CHECK_INT_EQ(fp_sha256_reset(&h), 0);
  CHECK_INT_EQ(fp_sha256_update(&h, "abc", 3), 0);
  char small[72];
  CHECK_INT_EQ(fp_sha256_final(&h, small), -1);
}

static fpull_cache *open_cache(const char *sub)
{
  char *dir = fp_xasprintf("%s/%s", th_tmpdir(), sub);
  fpull_cache *c = NULL;
  fpull_err err = {0};
  if (fpull_cache_open(&c, dir, &err) != 0)
    th_fail(__FILE__, __LINE__, "open %s: %s", dir, err.msg);
  free(dir);
  return c;
}

TEST(cache_keeps_sha512_blobs_apart_and_verifies_them)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_cache_put_bytes(c, SHA512_ABC, "abc", 3, &err), 0);
  CHECK(fpull_cache_has_blob(c, SHA512_ABC, 3));
  char *path = fpull_cache_blob_path(c, SHA512_ABC);
  CHECK_CONTAINS(path, "/blobs/sha512/");
  CHECK_CONTAINS(path, SHA512_ABC + 7);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, SHA512_ABC, 3, &err), 0);
  char *data = NULL;
  size_t len = 0;
  CHECK_INT_EQ(fpull_cache_get_bytes(c, SHA512_ABC, 100, &data, &len, &err), 0);
  CHECK_INT_EQ(len, 3);
  free(data);
  int fd = -1;
  CHECK_INT_EQ(fpull_cache_open_verified(&fd, c, SHA512_ABC, 3, &err), 0);
  close(fd);
  /* Bytes that are not the digest's are refused on the way in... */
  char wrong[200];
  snprintf(wrong, sizeof wrong, "sha512:%0128d", 0);
  CHECK(fpull_cache_put_bytes(c, wrong, "abc", 3, &err) == FPULL_EINTEGRITY);
  CHECK(!fpull_cache_has_blob(c, wrong, 3));
  /* ... and a stored blob changed afterwards is found out and dropped. */
  chmod(path, 0600);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs("abd", f);
  fclose(f);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, SHA512_ABC, 3, &err), FPULL_EINTEGRITY);
  CHECK(!fpull_cache_has_blob(c, SHA512_ABC, 3));
  free(path);
  fpull_cache_free(c);
}
