/* Signing for authors (fpull manifest push --sign-key): the payload containers/image
 * writes, signed with SHA-256 (pure Ed25519), pushed as a sigstore attachment. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "sig/cosign_key.h"
#include "sig/sigstore.h"
#include "base/digest.h"
#include "base/util.h"
#include "fpull/policy.h"
#include "fpull/registry.h"
#include "fpull/version.h"

struct fpull_signer {
  EVP_PKEY *key;
  char *path;
};

void fpull_signer_free(fpull_signer *s)
{
  if (!s)
    return;
  EVP_PKEY_free(s->key);
  free(s->path);
  free(s);
}

int fpull_signer_load(fpull_signer **out, const char *key_path, fpull_err *err)
{
  return fpull_signer_load_key(out, key_path, NULL, err);
}

int fpull_signer_load_key(fpull_signer **out, const char *key_path, const char *passphrase,
                          fpull_err *err)
{
  *out = NULL;
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (fp_read_file(key_path, 1u << 20, &text, &len) < 0)
    return fpull_err_set(err, FPULL_EUSAGE, "signing key %s: %s", key_path, strerror(errno));
  EVP_PKEY *k = NULL;
  if (fp_cosign_key_is(text, len)) {
    if (!passphrase)
      return fpull_err_set(err, FPULL_EUSAGE,
                           "signing key %s is cosign's encrypted key: give its passphrase in "
                           "COSIGN_PASSWORD or with --sign-passphrase-file FILE",
                           key_path);
    int rc = fp_cosign_key_decrypt(&k, text, len, passphrase, key_path, err);
    if (rc)
      return rc;
  } else {
    /* Without a passphrase an empty one: an encrypted key fails here instead of prompting. */
    BIO *b = BIO_new_mem_buf(text, (int)len);
    k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, (void *)(passphrase ? passphrase : "")) : NULL;
    BIO_free(b);
    int encrypted = strstr(text, "ENCRYPTED") != NULL;
    if (!k && encrypted && !passphrase)
      return fpull_err_set(err, FPULL_EUSAGE,
                           "signing key %s is encrypted: give its passphrase in "
                           "COSIGN_PASSWORD or with --sign-passphrase-file FILE",
                           key_path);
    if (!k)
      return fpull_err_set(err, FPULL_EUSAGE,
                           encrypted ? "signing key %s: wrong passphrase, or not a PEM private key"
                                     : "signing key %s: not an unencrypted PEM private key "
                                       "(nor cosign's encrypted one)",
                           key_path);
  }
  int id = EVP_PKEY_get_base_id(k);
  if (id != EVP_PKEY_EC && id != EVP_PKEY_RSA && id != EVP_PKEY_ED25519) {
    EVP_PKEY_free(k);
    return fpull_err_set(err, FPULL_EUSAGE,
                         "signing key %s: ECDSA, RSA or Ed25519 keys are supported", key_path);
  }
  fpull_signer *s = fp_xcalloc(1, sizeof *s);
  s->key = k;
  s->path = fp_xstrdup(key_path);
  *out = s;
  return 0;
}

static char *b64(const unsigned char *data, size_t len)
{
  char *out = fp_xmalloc(4 * ((len + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *)out, data, (int)len);
  return out;
}

/* Uploads bytes as a blob of repo (through a private temporary file, the registry client's
 * upload reads files); *digest is the caller's. */
static int put_blob(fpull_registry *reg, const char *repo, const char *data, size_t len,
                    char **digest, fpull_err *err)
{
  *digest = fp_digest_of_like("sha256:", data, len);
  const char *tmpdir = getenv("TMPDIR");
  cleanup_free char *path =
      fp_xasprintf("%s/fpull-sig-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: %s", path, strerror(errno));
  int ok = write(fd, data, len) == (ssize_t)len;
  close(fd);
  int rc = ok ? fpull_registry_put_blob_file(reg, repo, *digest, path, err)
              : fpull_err_set(err, FPULL_EFAIL, "%s: write failed", path);
  unlink(path);
  return rc;
}

/* One simple-signing payload for identity, signed, uploaded: its digest, size and the
 * signature's base64. */
static int sign_one(const fpull_signer *s, fpull_registry *reg, const char *repo,
                    const char *digest, const char *identity, char **pdig, size_t *plen,
                    char **sig64, fpull_err *err)
{
  cleanup_free char *payload = fp_xasprintf(
      "{\"critical\":{\"identity\":{\"docker-reference\":\"%s\"},\"image\":{\"docker-manifest-"
      "digest\":\"%s\"},\"type\":\"cosign container image signature\"},\"optional\":{"
      "\"creator\":\"fpull %s\",\"timestamp\":%lld}}",
      identity, digest, fpull_version(), (long long)time(NULL));
  *plen = strlen(payload);
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  const EVP_MD *md = EVP_PKEY_get_base_id(s->key) == EVP_PKEY_ED25519 ? NULL : EVP_sha256();
  size_t sl = 0;
  unsigned char *sig = NULL;
  int ok = c && EVP_DigestSignInit(c, NULL, md, NULL, s->key) == 1 &&
           EVP_DigestSign(c, NULL, &sl, (const unsigned char *)payload, *plen) == 1 &&
           (sig = fp_xmalloc(sl)) != NULL &&
           EVP_DigestSign(c, sig, &sl, (const unsigned char *)payload, *plen) == 1;
  EVP_MD_CTX_free(c);
  if (!ok) {
    free(sig);
    return fpull_err_set(err, FPULL_EFAIL, "signing %s with %s failed", digest, s->path);
  }
  *sig64 = b64(sig, sl);
  free(sig);
  return put_blob(reg, repo, payload, *plen, pdig, err);
}

int fpull_signer_push(const fpull_signer *s, fpull_registry *reg, const char *repo,
                      const char *digest, const char *identity, fpull_err *err)
{
  char *const ids[] = {(char *)identity, NULL};
  return fpull_signer_push_identities(s, reg, repo, digest, ids, err);
}

int fpull_signer_push_identities(const fpull_signer *s, fpull_registry *reg, const char *repo,
                                 const char *digest, char *const *identities, fpull_err *err)
{
  size_t n = 0;
  while (identities && identities[n])
    n++;
  if (n == 0)
    return fpull_err_set(err, FPULL_EUSAGE, "signing %s: no identity to sign for", digest);
  struct fp_buf diff_ids = {0}, layers = {0};
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    cleanup_free char *pdig = NULL, *sig64 = NULL;
    size_t plen = 0;
    rc = sign_one(s, reg, repo, digest, identities[i], &pdig, &plen, &sig64, err);
    if (rc)
      break;
    cleanup_free char *id = fp_xasprintf("%s\"%s\"", i ? "," : "", pdig);
    cleanup_free char *layer =
        fp_xasprintf("%s{\"mediaType\":\"" FP_SIG_LAYER_TYPE "\",\"size\":%zu,\"digest\":\"%s\","
                     "\"annotations\":{\"" FP_SIG_ANNOTATION "\":\"%s\"}}",
                     i ? "," : "", plen, pdig, sig64);
    fp_buf_append(&diff_ids, id, strlen(id));
    fp_buf_append(&layers, layer, strlen(layer));
  }
  cleanup_free char *cdig = NULL;
  cleanup_free char *config =
      rc ? NULL
         : fp_xasprintf(
               "{\"architecture\":\"\",\"os\":\"\",\"config\":{},\"rootfs\":{\"type\":\"layers\","
               "\"diff_ids\":[%s]}}",
               diff_ids.data);
  if (rc == 0)
    rc = put_blob(reg, repo, config, strlen(config), &cdig, err);
  cleanup_free char *manifest =
      rc ? NULL
         : fp_xasprintf(
               "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
               "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
               "\"size\":%zu,\"digest\":\"%s\"},\"layers\":[%s]}",
               strlen(config), cdig, layers.data);
  fp_buf_free(&diff_ids);
  fp_buf_free(&layers);
  if (rc)
    return fpull_err_prefix(err, "signature of %s", digest);
  const char *colon = strchr(digest, ':');
  cleanup_free char *tag = fp_xasprintf("%.*s-%s.sig", (int)(colon - digest), digest, colon + 1);
  rc = fpull_registry_put_manifest(reg, repo, tag, "application/vnd.oci.image.manifest.v1+json",
                                   manifest, strlen(manifest), NULL, err);
  return rc ? fpull_err_prefix(err, "signature of %s", digest) : 0;
}
