/* cosign's encrypted key (lib/sig/cosign_key.c): NaCl's secretbox (XSalsa20-Poly1305)
 * written on OpenSSL's Poly1305, against boxes libsodium's crypto_secretbox_easy made
 * (key 00..1f, nonce 64..7b), and the file's refusals. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sig/cosign_key.h"

/* 200 bytes (i * 7) & 255: the keystream crosses three Salsa20 blocks. */
static const char long_box[] =
    "260ba21fa90ff43213ee034af33bf96002be97dc2695e4d888c265d963dfc1714edd46226835d1ba0ea3f4"
    "29ce401b5148881aedb33491f5ed09314f34289f2c91c7f07d7ef543de8b6ec5997f192cdd834c82b814df"
    "a27b417019ff54d8cfba64a0b342ebac2163faf4ff5afc6d775f5a6e47ce531af016dba4996648a7973168"
    "38886ffb187a4808c358fe807aa4453e87838dab6db7b8f59cedf5091202bc93dc081a2134683d8326914f"
    "22739ba9e118455da15259f60a7f458bed03202e2c7528f81512dd1b4d743a9e60722c79f02acc1893cd46"
    "a5";
static const char short_box[] = "760989bd495aa73605c5207637b6006f6ad0"; /* "hi" */

static size_t unhex(unsigned char *out, const char *hex)
{
  size_t n = strlen(hex) / 2;
  for (size_t i = 0; i < n; i++) {
    char b[3] = {hex[2 * i], hex[2 * i + 1], 0};
    out[i] = (unsigned char)strtoul(b, NULL, 16);
  }
  return n;
}

static void key_nonce(unsigned char key[32], unsigned char nonce[24])
{
  for (int i = 0; i < 32; i++)
    key[i] = (unsigned char)i;
  for (int i = 0; i < 24; i++)
    nonce[i] = (unsigned char)(100 + i);
}

TEST(secretbox_opens_libsodiums_boxes)
{
  unsigned char key[32], nonce[24], box[256], m[256];
  key_nonce(key, nonce);
  size_t n = unhex(box, long_box);
  CHECK_INT_EQ(n, 216);
  CHECK_INT_EQ(fp_secretbox_open(m, box, n, nonce, key), 0);
  for (size_t i = 0; i < 200; i++)
    CHECK_INT_EQ(m[i], (i * 7) & 255);
  n = unhex(box, short_box);
  CHECK_INT_EQ(fp_secretbox_open(m, box, n, nonce, key), 0);
  CHECK(memcmp(m, "hi", 2) == 0);
}

TEST(secretbox_refuses_a_changed_box_key_or_nonce)
{
  unsigned char key[32], nonce[24], box[256], m[256];
  key_nonce(key, nonce);
  size_t n = unhex(box, long_box);
  box[100] ^= 1;
  CHECK_INT_EQ(fp_secretbox_open(m, box, n, nonce, key), -1);
  box[100] ^= 1;
  box[3] ^= 0x80; /* the tag */
  CHECK_INT_EQ(fp_secretbox_open(m, box, n, nonce, key), -1);
  box[3] ^= 0x80;
  key[31] ^= 1;
  CHECK_INT_EQ(fp_secretbox_open(m, box, n, nonce, key), -1);
  key[31] ^= 1;
  nonce[23] ^= 1;
  CHECK_INT_EQ(fp_secretbox_open(m, box, n, nonce, key), -1);
  CHECK_INT_EQ(fp_secretbox_open(m, box, 15, nonce, key), -1);
}

TEST(key_file_refusals_name_the_file)
{
  static const char hdr[] = "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n";
  CHECK(fp_cosign_key_is(hdr, strlen(hdr)));
  CHECK(!fp_cosign_key_is("-----BEGIN PRIVATE KEY-----\n", 28));
  EVP_PKEY *k = NULL;
  fpull_err err = {0};
  /* {"kdf":{"name":"pbkdf2"}} */
  const char *other = "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"
                      "eyJrZGYiOnsibmFtZSI6InBia2RmMiJ9fQ==\n"
                      "-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n";
  CHECK_INT_EQ(fp_cosign_key_decrypt(&k, other, strlen(other), "x", "k.key", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "k.key");
  CHECK_CONTAINS(err.msg, "pbkdf2");
  CHECK_NULL(k);
  const char *broken = "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n!!\n-----END x";
  CHECK_INT_EQ(fp_cosign_key_decrypt(&k, broken, strlen(broken), "x", "k.key", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "base64");
}
