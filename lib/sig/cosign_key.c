/* cosign's encrypted private key (cosign_key.h). OpenSSL has scrypt and Poly1305 but not
 * Salsa20: XSalsa20 is written out here from its specification (Bernstein, "Extending the
 * Salsa20 nonce"), and checked against libsodium by tests/unit/test_cosign_key.c's vectors
 * and the integration test's key files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "registry/json_strict.h"
#include "sig/cosign_key.h"
#include "base/util.h"

static const char *const begin_lines[] = {"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----",
                                          "-----BEGIN ENCRYPTED COSIGN PRIVATE KEY-----", NULL};

/* The scrypt cost cosign uses is N=32768, r=8, p=1 (32 MiB); a file may not ask for more
 * than this memory. */
#define SCRYPT_MAXMEM (256u << 20)
#define KEY_FILE_MAX (64u << 10)

/* ---- XSalsa20-Poly1305 (NaCl's secretbox) ---- */

static uint32_t ld32(const unsigned char *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void st32(unsigned char *p, uint32_t v)
{
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

#define ROTL(a, b) (((a) << (b)) | ((a) >> (32 - (b))))

static void salsa_rounds(uint32_t x[16])
{
  for (int i = 0; i < 20; i += 2) {
    x[4] ^= ROTL(x[0] + x[12], 7);
    x[8] ^= ROTL(x[4] + x[0], 9);
    x[12] ^= ROTL(x[8] + x[4], 13);
    x[0] ^= ROTL(x[12] + x[8], 18);
    x[9] ^= ROTL(x[5] + x[1], 7);
    x[13] ^= ROTL(x[9] + x[5], 9);
    x[1] ^= ROTL(x[13] + x[9], 13);
    x[5] ^= ROTL(x[1] + x[13], 18);
    x[14] ^= ROTL(x[10] + x[6], 7);
    x[2] ^= ROTL(x[14] + x[10], 9);
    x[6] ^= ROTL(x[2] + x[14], 13);
    x[10] ^= ROTL(x[6] + x[2], 18);
    x[3] ^= ROTL(x[15] + x[11], 7);
    x[7] ^= ROTL(x[3] + x[15], 9);
    x[11] ^= ROTL(x[7] + x[3], 13);
    x[15] ^= ROTL(x[11] + x[7], 18);
    x[1] ^= ROTL(x[0] + x[3], 7);
    x[2] ^= ROTL(x[1] + x[0], 9);
    x[3] ^= ROTL(x[2] + x[1], 13);
    x[0] ^= ROTL(x[3] + x[2], 18);
    x[6] ^= ROTL(x[5] + x[4], 7);
    x[7] ^= ROTL(x[6] + x[5], 9);
    x[4] ^= ROTL(x[7] + x[6], 13);
    x[5] ^= ROTL(x[4] + x[7], 18);
    x[11] ^= ROTL(x[10] + x[9], 7);
    x[8] ^= ROTL(x[11] + x[10], 9);
    x[9] ^= ROTL(x[8] + x[11], 13);
    x[10] ^= ROTL(x[9] + x[8], 18);
    x[12] ^= ROTL(x[15] + x[14], 7);
    x[13] ^= ROTL(x[12] + x[15], 9);
    x[14] ^= ROTL(x[13] + x[12], 13);
    x[15] ^= ROTL(x[14] + x[13], 18);
  }
}

/* The state for key and the 16 bytes in (nonce and counter for Salsa20, the nonce's first
 * half for HSalsa20). */
static void salsa_setup(uint32_t x[16], const unsigned char key[32], const unsigned char in[16])
{
  static const unsigned char sigma[16] = "expand 32-byte k";
  x[0] = ld32(sigma);
  x[5] = ld32(sigma + 4);
  x[10] = ld32(sigma + 8);
  x[15] = ld32(sigma + 12);
  for (int i = 0; i < 4; i++) {
    x[1 + i] = ld32(key + 4 * i);
    x[11 + i] = ld32(key + 16 + 4 * i);
    x[6 + i] = ld32(in + 4 * i);
  }
}

static void hsalsa20(unsigned char out[32], const unsigned char key[32], const unsigned char in[16])
{
  uint32_t x[16];
  salsa_setup(x, key, in);
  salsa_rounds(x);
  static const int pick[8] = {0, 5, 10, 15, 6, 7, 8, 9};
  for (int i = 0; i < 8; i++)
    st32(out + 4 * i, x[pick[i]]);
  OPENSSL_cleanse(x, sizeof x);
}

/* Salsa20's 64-byte block counter of key and the 8-byte nonce. */
static void salsa20_block(unsigned char out[64], const unsigned char key[32],
                          const unsigned char nonce[8], uint64_t counter)
{
  unsigned char in[16];
  memcpy(in, nonce, 8);
  for (int i = 0; i < 8; i++)
    in[8 + i] = (unsigned char)(counter >> (8 * i));
  uint32_t x[16], y[16];
  salsa_setup(x, key, in);
  memcpy(y, x, sizeof y);
  salsa_rounds(x);
  for (int i = 0; i < 16; i++)
    st32(out + 4 * i, x[i] + y[i]);
  OPENSSL_cleanse(x, sizeof x);
  OPENSSL_cleanse(y, sizeof y);
}

static int poly1305(unsigned char tag[16], const unsigned char key[32], const unsigned char *m,
                    size_t len)
{
  EVP_MAC *mac = EVP_MAC_fetch(NULL, "POLY1305", NULL);
  EVP_MAC_CTX *c = mac ? EVP_MAC_CTX_new(mac) : NULL;
  size_t out = 0;
  int ok = c && EVP_MAC_init(c, key, 32, NULL) == 1 && EVP_MAC_update(c, m, len) == 1 &&
           EVP_MAC_final(c, tag, &out, 16) == 1 && out == 16;
  EVP_MAC_CTX_free(c);
  EVP_MAC_free(mac);
  return ok ? 0 : -1;
}

int fp_secretbox_open(unsigned char *m, const unsigned char *box, size_t blen,
                      const unsigned char nonce[24], const unsigned char key[32])
{
  if (blen < 16)
    return -1;
  unsigned char subkey[32], block[64], tag[16];
  hsalsa20(subkey, key, nonce);
  const unsigned char *n2 = nonce + 16;
  salsa20_block(block, subkey, n2, 0);
  const unsigned char *c = box + 16;
  size_t clen = blen - 16;
  int rc = poly1305(tag, block, c, clen) == 0 && CRYPTO_memcmp(tag, box, 16) == 0 ? 0 : -1;
  /* The message's keystream starts after the Poly1305 key, at byte 32 of block 0. */
  for (size_t i = 0; rc == 0 && i < clen; i++) {
    size_t at = i + 32;
    if (at % 64 == 0)
      salsa20_block(block, subkey, n2, at / 64);
    m[i] = c[i] ^ block[at % 64];
  }
  OPENSSL_cleanse(subkey, sizeof subkey);
  OPENSSL_cleanse(block, sizeof block);
  return rc;
}

/* ---- the file ---- */

/* The base64 between the BEGIN line and the next -----END, decoded; NULL when absent. */
static unsigned char *pem_body(const char *text, size_t len, size_t *out_len)
{
  const char *start = NULL;
  for (size_t i = 0; begin_lines[i] && !start; i++) {
    const char *b = memmem(text, len, begin_lines[i], strlen(begin_lines[i]));
    if (b)
      start = b + strlen(begin_lines[i]);
  }
  if (!start)
    return NULL;
  const char *end = memmem(start, len - (size_t)(start - text), "-----END", 8);
  if (!end)
    return NULL;
  cleanup_free char *b64 = fp_xmalloc((size_t)(end - start) + 1);
  size_t n = 0;
  for (const char *p = start; p < end; p++)
    if (*p != '\n' && *p != '\r' && *p != ' ' && *p != '\t')
      b64[n++] = *p;
  b64[n] = '\0';
  if (n == 0 || n % 4)
    return NULL;
  unsigned char *out = fp_xmalloc(n / 4 * 3 + 1);
  int got = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n);
  if (got < 0) {
    free(out);
    return NULL;
  }
  size_t pad = (b64[n - 1] == '=') + (b64[n - 2] == '=');
  *out_len = (size_t)got - pad;
  return out;
}

int fp_cosign_key_is(const char *text, size_t len)
{
  for (size_t i = 0; begin_lines[i]; i++)
    if (memmem(text, len, begin_lines[i], strlen(begin_lines[i])))
      return 1;
  return 0;
}

/* A JSON string member holding standard base64 (Go's []byte), decoded; NULL if not. */
static unsigned char *b64_member(const cJSON *obj, const char *key, size_t *len)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!cJSON_IsString(v))
    return NULL;
  size_t n = strlen(v->valuestring);
  if (n == 0 || n % 4)
    return NULL;
  unsigned char *out = fp_xmalloc(n / 4 * 3 + 1);
  int got = EVP_DecodeBlock(out, (const unsigned char *)v->valuestring, (int)n);
  if (got < 0) {
    free(out);
    return NULL;
  }
  *len = (size_t)got - (v->valuestring[n - 1] == '=') - (v->valuestring[n - 2] == '=');
  return out;
}

static int int_member(const cJSON *obj, const char *key, uint64_t *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 4294967295.0 ||
      v->valuedouble != (double)(uint64_t)v->valuedouble)
    return -1;
  *out = (uint64_t)v->valuedouble;
  return 0;
}

static const char *str_member(const cJSON *obj, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

int fp_cosign_key_decrypt(EVP_PKEY **out, const char *text, size_t len, const char *passphrase,
                          const char *name, fpull_err *err)
{
  *out = NULL;
  if (len > KEY_FILE_MAX)
    return fpull_err_set(err, FPULL_EUSAGE, "signing key %s: larger than a key file", name);
  size_t jlen = 0;
  cleanup_free unsigned char *json = pem_body(text, len, &jlen);
  if (!json)
    return fpull_err_set(err, FPULL_EUSAGE, "signing key %s: a cosign key whose base64 is broken",
                         name);
  cleanup_json cJSON *doc = NULL;
  if (fp_json_parse_strict(&doc, (const char *)json, jlen, KEY_FILE_MAX, name, err)) {
    char msg[FPULL_ERR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return fpull_err_set(err, FPULL_EUSAGE,
                         "signing key %s: a cosign key whose JSON is broken (%s)", name, msg);
  }
  const cJSON *kdf = cJSON_GetObjectItemCaseSensitive(doc, "kdf");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(kdf, "params");
  const cJSON *cipher = cJSON_GetObjectItemCaseSensitive(doc, "cipher");
  if (strcmp(str_member(kdf, "name"), "scrypt") != 0 ||
      strcmp(str_member(cipher, "name"), "nacl/secretbox") != 0)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "signing key %s: kdf \"%.40s\" and cipher \"%.40s\" (fpull reads cosign's "
                         "scrypt and nacl/secretbox)",
                         name, str_member(kdf, "name"), str_member(cipher, "name"));
  uint64_t N = 0, r = 0, p = 0;
  size_t salt_len = 0, nonce_len = 0, box_len = 0;
  cleanup_free unsigned char *salt = b64_member(kdf, "salt", &salt_len);
  cleanup_free unsigned char *nonce = b64_member(cipher, "nonce", &nonce_len);
  cleanup_free unsigned char *box = b64_member(doc, "ciphertext", &box_len);
  if (int_member(params, "N", &N) || int_member(params, "r", &r) || int_member(params, "p", &p) ||
      !salt || !nonce || nonce_len != 24 || !box || box_len < 16)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "signing key %s: a cosign key without its scrypt parameters, salt, nonce "
                         "or ciphertext",
                         name);
  unsigned char key[32];
  if (EVP_PBE_scrypt(passphrase, strlen(passphrase), salt, salt_len, N, r, p, SCRYPT_MAXMEM, key,
                     sizeof key) != 1)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "signing key %s: scrypt with N=%llu r=%llu p=%llu failed (more than "
                         "%u MiB, or not a power of two)",
                         name, (unsigned long long)N, (unsigned long long)r, (unsigned long long)p,
                         SCRYPT_MAXMEM >> 20);
  size_t der_len = box_len - 16;
  unsigned char *der = fp_xmalloc(der_len + 1);
  int opened = fp_secretbox_open(der, box, box_len, nonce, key);
  OPENSSL_cleanse(key, sizeof key);
  EVP_PKEY *k = NULL;
  if (opened == 0) {
    const unsigned char *q = der;
    k = d2i_AutoPrivateKey(NULL, &q, (long)der_len);
  }
  OPENSSL_cleanse(der, der_len);
  free(der);
  if (opened != 0)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "signing key %s: wrong passphrase (COSIGN_PASSWORD or "
                         "--sign-passphrase-file)",
                         name);
  if (!k)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "signing key %s: the decrypted key is not a PKCS#8 private key", name);
  *out = k;
  return 0;
}
