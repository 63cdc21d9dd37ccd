/* Internal: cosign's encrypted private key file (cosign generate-key-pair, skopeo 1.18's
 * --sign-by-sigstore-private-key): PEM "ENCRYPTED SIGSTORE PRIVATE KEY" (or the older
 * "ENCRYPTED COSIGN PRIVATE KEY") around the JSON of go-securesystemslib's encrypted
 * package: scrypt over the passphrase, then NaCl's secretbox (XSalsa20-Poly1305) over the
 * PKCS#8 DER of the key. */
#ifndef FP_SIG_COSIGN_KEY_H
#define FP_SIG_COSIGN_KEY_H

#include <stddef.h>

#include <openssl/evp.h>

#include "fpull/error.h"

/* 1 when text (a key file's bytes) holds a cosign encrypted key. */
int fp_cosign_key_is(const char *text, size_t len);

/* Decrypts the cosign key in text with passphrase; name is the file in messages. Errors:
 * FPULL_EUSAGE (not a cosign key, unsupported KDF or cipher, wrong passphrase). */
int fp_cosign_key_decrypt(EVP_PKEY **out, const char *text, size_t len, const char *passphrase,
                          const char *name, fpull_err *err);

/* NaCl's crypto_secretbox_open as Go's secretbox.Open lays it out (the 16-byte tag, then
 * the ciphertext): 0 and clen - 16 bytes in m, or -1 when the tag does not verify. */
int fp_secretbox_open(unsigned char *m, const unsigned char *box, size_t blen,
                      const unsigned char nonce[24], const unsigned char key[32]);

#endif
