#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/digest.h"
#include "fpull/manifest.h"
#include "harness.h"

/* Known answers: FIPS 180-2 "abc" and the empty string. */
#define SHA_ABC "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA_EMPTY "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

TEST(digest_of_known_answers)
{
  char *d = fpull_digest_of("abc", 3);
  CHECK_STR_EQ(d, SHA_ABC);
  free(d);
  d = fpull_digest_of("", 0);
  CHECK_STR_EQ(d, SHA_EMPTY);
  free(d);
}

TEST(streaming_equals_one_shot)
{
  cleanup_sha256 struct fp_sha256 h = {0};
  CHECK_INT_EQ(fp_sha256_init(&h), 0);
  CHECK_INT_EQ(fp_sha256_update(&h, "a", 1), 0);
  CHECK_INT_EQ(fp_sha256_update(&h, "", 0), 0);
  CHECK_INT_EQ(fp_sha256_update(&h, "bc", 2), 0);
  CHECK_INT_EQ(h.n, 3);
  char out[72];
  CHECK_INT_EQ(fp_sha256_final(&h, out), 0);
  CHECK_STR_EQ(out, SHA_ABC);
  /* Reset starts from nothing again. */
  CHECK_INT_EQ(fp_sha256_reset(&h), 0);
  CHECK_INT_EQ(fp_sha256_final(&h, out), 0);
  CHECK_STR_EQ(out, SHA_EMPTY);
}

TEST(hash_file_prefix)
{
  char path[4200];
  snprintf(path, sizeof path, "%s/f", th_tmpdir());
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  CHECK(fd >= 0);
  CHECK_INT_EQ(write(fd, "abcdef", 6), 6);
  cleanup_sha256 struct fp_sha256 h = {0};
  CHECK_INT_EQ(fp_sha256_init(&h), 0);
  CHECK_INT_EQ(fp_sha256_fd(&h, fd, 3), 0);
  char out[72];
  CHECK_INT_EQ(fp_sha256_final(&h, out), 0);
  CHECK_STR_EQ(out, SHA_ABC);
  /* Asking for more than the file has is an error, not a silent short hash. */
  CHECK_INT_EQ(fp_sha256_fd(&h, fd, 100), -1);
  close(fd);
}
