/* Sigstore attachments, keys and payloads (sigstore.h). The signature is checked over the
 * payload's raw bytes before any JSON of it is read: a parser never sees unsigned input. */
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "registry/json_strict.h"
#include "sig/sigstore.h"
#include "base/util.h"
#include "fpull/ref.h"

#define OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"

/* A JSON number that is a whole one (without libm, which -O0 would need). */
static int whole(double v)
{
  return v > -9.2e18 && v < 9.2e18 && (double)(long long)v == v;
}

void fp_sig_attachments_free(struct fp_sig_attachments *s)
{
  for (size_t i = 0; i < s->n; i++) {
    free(s->a[i].digest);
    free(s->a[i].signature);
  }
  free(s->a);
  memset(s, 0, sizeof *s);
}

int fp_sig_attachments_parse(struct fp_sig_attachments *out, const char *data, size_t len,
                             const char *content_type, fpull_err *err)
{
  memset(out, 0, sizeof *out);
  cleanup_json cJSON *j = NULL;
  fpull_err jerr = {0};
  if (fp_json_parse_strict(&j, data, len, FP_SIG_PAYLOAD_MAX, "signature manifest", &jerr))
    return fpull_err_set(err, FPULL_EPOLICY, "%s", jerr.msg);
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "mediaType");
  const char *type = cJSON_IsString(mt) ? mt->valuestring : content_type;
  if (!cJSON_IsObject(j) || !type || strcmp(type, OCI_MANIFEST) != 0)
    return fpull_err_set(err, FPULL_EPOLICY,
                         "the signature tag holds %s, not an OCI image manifest",
                         type ? type : "a document without a media type");
  const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
  if (!cJSON_IsArray(layers))
    return fpull_err_set(err, FPULL_EPOLICY, "signature manifest: no \"layers\" list");
  int n = cJSON_GetArraySize(layers);
  if (n > FP_SIG_MAX_ATTACHMENTS)
    return fpull_err_set(err, FPULL_EPOLICY,
                         "signature manifest lists %d attachments, more than %d", n,
                         FP_SIG_MAX_ATTACHMENTS);
  out->a = fp_xcalloc((size_t)n + 1, sizeof *out->a);
  for (const cJSON *l = layers->child; l; l = l->next) {
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(l, "mediaType");
    if (!cJSON_IsString(lt) || strcmp(lt->valuestring, FP_SIG_LAYER_TYPE) != 0) {
      out->ignored++;
      continue;
    }
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(l, "digest");
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(l, "size");
    const cJSON *an = cJSON_GetObjectItemCaseSensitive(l, "annotations");
    const cJSON *sig = an ? cJSON_GetObjectItemCaseSensitive(an, FP_SIG_ANNOTATION) : NULL;
    if (!cJSON_IsString(d) || !fpull_digest_valid(d->valuestring) || !cJSON_IsNumber(sz) ||
        sz->valuedouble < 0 || !whole(sz->valuedouble) || (an && !cJSON_IsObject(an))) {
      fp_sig_attachments_free(out);
      return fpull_err_set(err, FPULL_EPOLICY,
                           "signature manifest: an attachment without a valid digest and size");
    }
    if (sz->valuedouble > FP_SIG_PAYLOAD_MAX) {
      int rc = fpull_err_set(err, FPULL_EPOLICY,
                             "signature payload %s is %.0f bytes, more than %u (4 MiB)",
                             d->valuestring, sz->valuedouble, FP_SIG_PAYLOAD_MAX);
      fp_sig_attachments_free(out);
      return rc;
    }
    struct fp_sig_attachment *a = &out->a[out->n++];
    a->digest = fp_xstrdup(d->valuestring);
    a->size = (int64_t)sz->valuedouble;
    a->signature = cJSON_IsString(sig) ? fp_xstrdup(sig->valuestring) : NULL;
  }
  return 0;
}

/* ---- keys ---- */

struct fp_sig_keys {
  EVP_PKEY **k;
  char **fpr;
  size_t n;
};

void fp_sig_keys_free(struct fp_sig_keys *k)
{
  if (!k)
    return;
  for (size_t i = 0; i < k->n; i++) {
    EVP_PKEY_free(k->k[i]);
    free(k->fpr[i]);
  }
  free(k->k);
  free(k->fpr);
  free(k);
}

static int key_supported(EVP_PKEY *key, char *why, size_t whylen)
{
  int id = EVP_PKEY_get_base_id(key);
  if (id == EVP_PKEY_ED25519 || id == EVP_PKEY_RSA)
    return 1;
  if (id == EVP_PKEY_EC) {
    char group[64] = "";
    size_t gl = 0;
    EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &gl);
    if (strcmp(group, "prime256v1") == 0 || strcmp(group, "secp384r1") == 0 ||
        strcmp(group, "secp521r1") == 0)
      return 1;
    snprintf(why, whylen, "an ECDSA key on curve %s (P-256, P-384 and P-521 are supported)",
             group[0] ? group : "?");
    return 0;
  }
  snprintf(why, whylen, "a %s key (ECDSA, RSA and Ed25519 are supported)",
           OBJ_nid2sn(id) ? OBJ_nid2sn(id) : "unknown");
  return 0;
}

static int add_pem(struct fp_sig_keys *k, const char *pem, size_t len, const char *what,
                   fpull_err *err)
{
  BIO *b = BIO_new_mem_buf(pem, (int)len);
  EVP_PKEY *key = b ? PEM_read_bio_PUBKEY(b, NULL, NULL, NULL) : NULL;
  BIO_free(b);
  if (!key)
    return fpull_err_set(err, FPULL_EPOLICY, "%s holds no PEM public key", what);
  char why[160];
  if (!key_supported(key, why, sizeof why)) {
    EVP_PKEY_free(key);
    return fpull_err_set(err, FPULL_EPOLICY, "%s is %s", what, why);
  }
  unsigned char *der = NULL;
  int dl = i2d_PUBKEY(key, &der);
  unsigned char md[32];
  unsigned int ml = 0;
  if (dl <= 0 || !EVP_Digest(der, (size_t)dl, md, &ml, EVP_sha256(), NULL)) {
    OPENSSL_free(der);
    EVP_PKEY_free(key);
    return fpull_err_set(err, FPULL_EPOLICY, "%s: cannot encode the key", what);
  }
  OPENSSL_free(der);
  k->k = fp_xrealloc(k->k, (k->n + 1) * sizeof *k->k);
  k->fpr = fp_xrealloc(k->fpr, (k->n + 1) * sizeof *k->fpr);
  k->k[k->n] = key;
  char hex[72];
  fp_digest_format(hex, md);
  k->fpr[k->n++] = fp_xstrdup(hex);
  return 0;
}

int fp_sig_keys_from_pem(struct fp_sig_keys **out, const char *pem, size_t len, const char *what,
                         fpull_err *err)
{
  struct fp_sig_keys *k = fp_xcalloc(1, sizeof *k);
  int rc = add_pem(k, pem, len, what, err);
  if (rc)
    fp_sig_keys_free(k);
  else
    *out = k;
  return rc;
}

int fp_sig_keys_load(struct fp_sig_keys **out, char *const *paths, char *const *datas,
                     fpull_err *err)
{
  *out = NULL;
  struct fp_sig_keys *k = fp_xcalloc(1, sizeof *k);
  int rc = 0;
  for (size_t i = 0; rc == 0 && paths && paths[i]; i++) {
    cleanup_free char *pem = NULL;
    size_t len = 0;
    cleanup_free char *what = fp_xasprintf("key file %s", paths[i]);
    /* A relative path would depend on the directory each job starts in. */
    if (paths[i][0] != '/')
      rc = fpull_err_set(err, FPULL_EPOLICY, "key file %s is not an absolute path", paths[i]);
    else if (fp_read_file(paths[i], 1u << 20, &pem, &len) != 0)
      rc = fpull_err_set(err, FPULL_EPOLICY, "key file %s cannot be read", paths[i]);
    else
      rc = add_pem(k, pem, len, what, err);
  }
  for (size_t i = 0; rc == 0 && datas && datas[i]; i++) {
    cleanup_free unsigned char *pem = NULL;
    size_t len = 0;
    if (fp_base64_decode(&pem, &len, datas[i]) != 0)
      rc = fpull_err_set(err, FPULL_EPOLICY, "keyData %zu is not base64", i + 1);
    else
      rc = add_pem(k, (const char *)pem, len, "keyData", err);
  }
  if (rc) {
    fp_sig_keys_free(k);
    return rc;
  }
  *out = k;
  return 0;
}

static int b64val(char c)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int fp_base64_decode(unsigned char **out, size_t *len, const char *text)
{
  size_t n = strlen(text);
  *out = NULL;
  *len = 0;
  if (n % 4)
    return -1;
  unsigned char *b = fp_xmalloc(n / 4 * 3 + 1);
  size_t o = 0;
  for (size_t i = 0; i < n; i += 4) {
    int v[4], pad = 0;
    for (int j = 0; j < 4; j++) {
      char c = text[i + j];
      if (c == '=' && i + 4 == n && j >= 2 && (j == 3 || text[i + 3] == '=')) {
        v[j] = 0;
        pad++;
        continue;
      }
      v[j] = pad ? -1 : b64val(c);
      if (v[j] < 0) {
        free(b);
        return -1;
      }
    }
    unsigned int w =
        (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
    b[o++] = (unsigned char)(w >> 16);
    if (pad < 2)
      b[o++] = (unsigned char)(w >> 8);
    if (pad < 1)
      b[o++] = (unsigned char)w;
  }
  b[o] = 0;
  *out = b;
  *len = o;
  return 0;
}

int fp_sig_verify(const struct fp_sig_keys *k, const char *signature_b64, const char *payload,
                  size_t len, char **fingerprint, fpull_err *err)
{
  *fingerprint = NULL;
  if (!signature_b64)
    return fpull_err_set(err, FPULL_EPOLICY, "a signature attachment has no %s annotation",
                         FP_SIG_ANNOTATION);
  cleanup_free unsigned char *sig = NULL;
  size_t sl = 0;
  if (fp_base64_decode(&sig, &sl, signature_b64) != 0 || sl == 0)
    return fpull_err_set(err, FPULL_EPOLICY, "a signature annotation is not base64");
  for (size_t i = 0; i < k->n; i++) {
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    const EVP_MD *md = EVP_PKEY_get_base_id(k->k[i]) == EVP_PKEY_ED25519 ? NULL : EVP_sha256();
    int ok = c && EVP_DigestVerifyInit(c, NULL, md, NULL, k->k[i]) == 1 &&
             EVP_DigestVerify(c, sig, sl, (const unsigned char *)payload, len) == 1;
    EVP_MD_CTX_free(c);
    if (ok) {
      *fingerprint = fp_xstrdup(k->fpr[i]);
      return 0;
    }
  }
  return fpull_err_set(err, FPULL_EPOLICY, "the signature does not verify with the policy's %s",
                       k->n == 1 ? "key" : "keys");
}

/* Exactly the members named (NULL-terminated), each once (duplicates were refused by the
 * strict parser). */
static int exact_keys(const cJSON *o, const char *const *want, const char *what, fpull_err *err)
{
  if (!cJSON_IsObject(o))
    return fpull_err_set(err, FPULL_EPOLICY, "signature payload: %s is not an object", what);
  for (const cJSON *c = o->child; c; c = c->next) {
    size_t i = 0;
    while (want[i] && strcmp(want[i], c->string) != 0)
      i++;
    if (!want[i])
      return fpull_err_set(err, FPULL_EPOLICY, "signature payload: unknown key \"%.64s\" in %s",
                           c->string, what);
  }
  for (size_t i = 0; want[i]; i++)
    if (!cJSON_GetObjectItemCaseSensitive(o, want[i]))
      return fpull_err_set(err, FPULL_EPOLICY, "signature payload: %s has no \"%s\"", what,
                           want[i]);
  return 0;
}

static const char *one_string(const cJSON *o, const char *key, const char *what, fpull_err *err)
{
  const char *const want[] = {key, NULL};
  if (exact_keys(o, want, what, err) != 0)
    return NULL;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v)) {
    fpull_err_set(err, FPULL_EPOLICY, "signature payload: %s.%s is not a string", what, key);
    return NULL;
  }
  return v->valuestring;
}

int fp_sig_payload_parse(char **identity, char **digest, const char *payload, size_t len,
                         fpull_err *err)
{
  *identity = *digest = NULL;
  cleanup_json cJSON *j = NULL;
  fpull_err jerr = {0};
  if (fp_json_parse_strict(&j, payload, len, FP_SIG_PAYLOAD_MAX, "signature payload", &jerr))
    return fpull_err_set(err, FPULL_EPOLICY, "%s", jerr.msg);
  static const char *const top[] = {"critical", "optional", NULL};
  static const char *const crit[] = {"type", "image", "identity", NULL};
  int rc = exact_keys(j, top, "the top level", err);
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "critical");
  if (rc == 0)
    rc = exact_keys(c, crit, "critical", err);
  if (rc)
    return rc;
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
  if (!cJSON_IsString(type) || strcmp(type->valuestring, "cosign container image signature") != 0)
    return fpull_err_set(err, FPULL_EPOLICY,
                         "signature payload: critical.type is not \"cosign container image "
                         "signature\"");
  const char *dig = one_string(cJSON_GetObjectItemCaseSensitive(c, "image"),
                               "docker-manifest-digest", "critical.image", err);
  if (!dig)
    return FPULL_EPOLICY;
  const char *ident = one_string(cJSON_GetObjectItemCaseSensitive(c, "identity"),
                                 "docker-reference", "critical.identity", err);
  if (!ident)
    return FPULL_EPOLICY;
  const cJSON *opt = cJSON_GetObjectItemCaseSensitive(j, "optional");
  if (!cJSON_IsNull(opt)) {
    if (!cJSON_IsObject(opt))
      return fpull_err_set(err, FPULL_EPOLICY, "signature payload: optional is not an object");
    const cJSON *cr = cJSON_GetObjectItemCaseSensitive(opt, "creator");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(opt, "timestamp");
    if (cr && !cJSON_IsString(cr))
      return fpull_err_set(err, FPULL_EPOLICY,
                           "signature payload: optional.creator is not a string");
    if (ts && (!cJSON_IsNumber(ts) || !whole(ts->valuedouble)))
      return fpull_err_set(err, FPULL_EPOLICY,
                           "signature payload: optional.timestamp is not an integer");
  }
  if (!fpull_digest_valid(dig))
    return fpull_err_set(err, FPULL_EPOLICY,
                         "signature payload: \"%.80s\" is not a digest fpull verifies", dig);
  *identity = fp_xstrdup(ident);
  *digest = fp_xstrdup(dig);
  return 0;
}
