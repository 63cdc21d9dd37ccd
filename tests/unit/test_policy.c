/* containers-policy.json scopes and identities, sigstore payloads, keys and base64
 * (lib/sig/). */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "harness.h"
#include "sig/policy.h"
#include "sig/sigstore.h"
#include "base/util.h"

#define D64 "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static fpull_policy *parse(const char *text)
{
  fpull_policy *p = NULL;
  fpull_err err = {0};
  if (fpull_policy_parse(&p, text, strlen(text), "t.json", &err) != 0)
    th_fail(__FILE__, __LINE__, "%s", err.msg);
  return p;
}

static const char *scope_for(const fpull_policy *p, const char *ref)
{
  struct fp_dref d;
  if (fp_dref_parse(&d, ref) != 0)
    th_fail(__FILE__, __LINE__, "%s does not parse", ref);
  const struct fp_reqlist *l = fp_policy_for(p, &d);
  fp_dref_clear(&d);
  return l->scope;
}

TEST(scope_order)
{
  fpull_policy *p = parse("{\"default\":[{\"type\":\"reject\"}],\"transports\":{\"docker\":{"
                          "\"r.example.com:5000/ns/app:v1\":[{\"type\":\"reject\"}],"
                          "\"r.example.com:5000/ns/app@" D64 "\":[{\"type\":\"reject\"}],"
                          "\"r.example.com:5000/ns\":[{\"type\":\"reject\"}],"
                          "\"r.example.com:5000\":[{\"type\":\"reject\"}],"
                          "\"*.example.com\":[{\"type\":\"reject\"}],"
                          "\"docker.io/library/busybox\":[{\"type\":\"reject\"}],"
                          "\"\":[{\"type\":\"insecureAcceptAnything\"}]},"
                          "\"atomic\":{\"whatever:x\":[{\"type\":\"reject\"}]}}}");
  CHECK_CONTAINS(scope_for(p, "r.example.com:5000/ns/app:v1"), "\"r.example.com:5000/ns/app:v1\"");
  CHECK_CONTAINS(scope_for(p, "r.example.com:5000/ns/app:v2"), "\"r.example.com:5000/ns\"");
  CHECK_CONTAINS(scope_for(p, "r.example.com:5000/ns/app@" D64),
                 "\"r.example.com:5000/ns/app@" D64 "\"");
  CHECK_CONTAINS(scope_for(p, "r.example.com:5000/other:v1"), "\"r.example.com:5000\"");
  /* Wildcards drop the port and one label at a time. */
  CHECK_CONTAINS(scope_for(p, "a.b.example.com:5000/x:1"), "\"*.example.com\"");
  CHECK_CONTAINS(scope_for(p, "r.example.com:6000/ns/app:v1"), "\"*.example.com\"");
  /* Docker Hub names are expanded before matching. */
  CHECK_CONTAINS(scope_for(p, "busybox"), "\"docker.io/library/busybox\"");
  CHECK_CONTAINS(scope_for(p, "example.com/x:1"), "scope \"\"");
  fpull_policy_free(p);
  p = parse("{\"default\":[{\"type\":\"reject\"}]}");
  CHECK_STR_EQ(scope_for(p, "example.com/x:1"), "default");
  fpull_policy_free(p);
}

static int accepts(const char *identity_json, const char *image, const char *sig)
{
  char *text =
      fp_xasprintf("{\"default\":[{\"type\":\"sigstoreSigned\",\"keyData\":\"eA==\"%s%s}]}",
                   identity_json ? ",\"signedIdentity\":" : "", identity_json ? identity_json : "");
  fpull_policy *p = parse(text);
  free(text);
  struct fp_dref im, sg;
  CHECK(fp_dref_parse(&im, image) == 0);
  CHECK(fp_dref_parse(&sg, sig) == 0);
  const struct fp_reqlist *l = fp_policy_for(p, &im);
  int ok = fp_identity_accepts(&l->r[0].id, &im, &sg);
  fp_dref_clear(&im);
  fp_dref_clear(&sg);
  fpull_policy_free(p);
  return ok;
}

TEST(identity_rules)
{
  /* matchRepoDigestOrExact, the default */
  CHECK(accepts(NULL, "r.io/a:v1", "r.io/a:v1"));
  CHECK(!accepts(NULL, "r.io/a:v1", "r.io/a:v2"));
  CHECK(!accepts(NULL, "r.io/a:v1", "r.io/a"));
  CHECK(!accepts(NULL, "r.io/a:v1", "r.io/b:v1"));
  CHECK(accepts(NULL, "r.io/a@" D64, "r.io/a:anything"));
  CHECK(!accepts(NULL, "r.io/a@" D64, "r.io/a"));
  CHECK(accepts(NULL, "busybox:1", "docker.io/library/busybox:1"));
  /* matchExact */
  CHECK(accepts("{\"type\":\"matchExact\"}", "r.io/a:v1", "r.io/a:v1"));
  CHECK(!accepts("{\"type\":\"matchExact\"}", "r.io/a@" D64, "r.io/a:v1"));
  /* matchRepository */
  CHECK(accepts("{\"type\":\"matchRepository\"}", "r.io/a:v1", "r.io/a"));
  CHECK(!accepts("{\"type\":\"matchRepository\"}", "r.io/a:v1", "r.io/ab:v1"));
  /* exactReference, exactRepository */
  CHECK(accepts("{\"type\":\"exactReference\",\"dockerReference\":\"s.io/x:1\"}", "r.io/a:v1",
                "s.io/x:1"));
  CHECK(!accepts("{\"type\":\"exactReference\",\"dockerReference\":\"s.io/x:1\"}", "r.io/a:v1",
                 "s.io/x:2"));
  CHECK(accepts("{\"type\":\"exactRepository\",\"dockerRepository\":\"s.io/x\"}", "r.io/a:v1",
                "s.io/x:9"));
  /* remapIdentity: on component boundaries only, then matchRepoDigestOrExact */
  const char *remap = "{\"type\":\"remapIdentity\",\"prefix\":\"m.io/mirror\","
                      "\"signedPrefix\":\"r.io/ns\"}";
  CHECK(accepts(remap, "m.io/mirror/app:v1", "r.io/ns/app:v1"));
  CHECK(!accepts(remap, "m.io/mirror/app:v1", "m.io/mirror/app:v2"));
  CHECK(!accepts(remap, "m.io/mirror/app:v1", "m.io/mirror/app:v1")); /* only the remapped name */
  CHECK(accepts(remap, "o.io/app:v1", "o.io/app:v1")); /* no prefix: as the default */
  CHECK(!accepts(remap, "m.io/mirrorx/app:v1", "r.io/nsx/app:v1"));
}

TEST(policy_refusals)
{
  static const char *const bad[] = {
      "[]",
      "{\"default\":[{\"type\":\"reject\"}],\"Default\":1}",
      "{\"default\":[{\"type\":\"reject\",\"x\":1}]}",
      "{\"default\":[{\"type\":\"sigstoreSigned\"}]}",
      "{\"default\":[{\"type\":\"sigstoreSigned\",\"keyPaths\":[]}]}",
      "{\"default\":[{\"type\":\"sigstoreSigned\",\"keyPath\":\"/k\",\"signedIdentity\":"
      "{\"type\":\"exactReference\",\"dockerReference\":\"r.io/x\"}}]}",
      "{\"default\":[{\"type\":\"reject\"}],\"transports\":{\"docker\":{\"r.io/x\":"
      "{\"type\":\"reject\"}}}}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    fpull_policy *p = NULL;
    fpull_err err = {0};
    if (fpull_policy_parse(&p, bad[i], strlen(bad[i]), "t.json", &err) != FPULL_EUSAGE)
      th_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
    CHECK_CONTAINS(err.msg, "policy t.json: ");
    CHECK_NULL(p);
  }
}

#define PAYLOAD(crit, opt) "{\"critical\":{" crit "},\"optional\":" opt "}"
#define CRIT                                                                                       \
  "\"identity\":{\"docker-reference\":\"r.io/a:v1\"},\"image\":{\"docker-manifest-digest\":\"" D64 \
  "\"},\"type\":\"cosign container image signature\""

static int payload(const char *text, char **msg)
{
  char *id = NULL, *dig = NULL;
  fpull_err err = {0};
  int rc = fp_sig_payload_parse(&id, &dig, text, strlen(text), &err);
  if (rc == 0) {
    CHECK_STR_EQ(id, "r.io/a:v1");
    CHECK_STR_EQ(dig, D64);
  }
  free(id);
  free(dig);
  *msg = fp_xstrdup(err.msg);
  return rc;
}

TEST(payload_strict)
{
  char *m = NULL;
  CHECK_INT_EQ(payload(PAYLOAD(CRIT, "null"), &m), 0);
  free(m);
  CHECK_INT_EQ(payload(PAYLOAD(CRIT, "{\"creator\":\"x\",\"timestamp\":17}"), &m), 0);
  free(m);
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {PAYLOAD(CRIT ",\"type\":\"x\"", "null"), "duplicate JSON key \"type\""},
      {PAYLOAD(CRIT ",\"extra\":1", "null"), "unknown key \"extra\" in critical"},
      {PAYLOAD(CRIT, "null") "", NULL},
      {"{\"critical\":{" CRIT "}}", "the top level has no \"optional\""},
      {PAYLOAD(CRIT, "{\"timestamp\":1.5}"), "optional.timestamp is not an integer"},
      {PAYLOAD(CRIT, "{\"creator\":1}"), "optional.creator is not a string"},
      {PAYLOAD(CRIT, "[]"), "optional is not an object"},
      {"{\"critical\":{\"identity\":{\"docker-reference\":\"r.io/a:v1\"},\"image\":{\"docker-"
       "manifest-digest\":\"sha256:12\"},\"type\":\"cosign container image signature\"},"
       "\"optional\":null}",
       "is not a digest"},
      {"{\"critical\":{\"identity\":{\"docker-reference\":\"r.io/a:v1\",\"x\":1},\"image\":{"
       "\"docker-manifest-digest\":\"" D64 "\"},\"type\":\"cosign container image "
       "signature\"},\"optional\":null}",
       "unknown key \"x\" in critical.identity"},
      {"{\"critical\":{\"identity\":{\"docker-reference\":\"r.io/a:v1\"},\"image\":{\"docker-"
       "manifest-digest\":\"" D64 "\"},\"type\":\"atomic container signature\"},\"optional\":"
       "null}",
       "critical.type"},
      {PAYLOAD(CRIT, "null") " x", "JSON"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (!bad[i].msg)
      continue;
    if (payload(bad[i].text, &m) != FPULL_EPOLICY)
      th_fail(__FILE__, __LINE__, "accepted: %s", bad[i].text);
    CHECK_CONTAINS(m, bad[i].msg);
    free(m);
  }
}

TEST(base64_strict)
{
  unsigned char *out = NULL;
  size_t len = 0;
  CHECK_INT_EQ(fp_base64_decode(&out, &len, "aGVsbG8="), 0);
  CHECK_INT_EQ(len, 5);
  CHECK(memcmp(out, "hello", 5) == 0);
  free(out);
  CHECK_INT_EQ(fp_base64_decode(&out, &len, "aGk="), 0);
  CHECK_INT_EQ(len, 2);
  free(out);
  CHECK_INT_EQ(fp_base64_decode(&out, &len, "aA=="), 0);
  CHECK_INT_EQ(len, 1);
  free(out);
  static const char *const bad[] = {"aGVsbG8", "aGV sbG8=", "a===", "=aGk", "aG=k", "aGk=aGk="};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (fp_base64_decode(&out, &len, bad[i]) == 0)
      th_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
    CHECK_NULL(out);
  }
}

/* A key made here, a signature made with it, and what fp_sig_verify says. */
static void sign_and_verify(const char *alg, const char *curve)
{
  EVP_PKEY *k = curve                     ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve)
                : strcmp(alg, "RSA") == 0 ? EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048)
                                          : EVP_PKEY_Q_keygen(NULL, NULL, alg);
  CHECK(k != NULL);
  BIO *b = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(b, k);
  char *pem = NULL;
  long pl = BIO_get_mem_data(b, &pem);
  struct fp_sig_keys *keys = NULL;
  fpull_err err = {0};
  if (fp_sig_keys_from_pem(&keys, pem, (size_t)pl, "test key", &err) != 0)
    th_fail(__FILE__, __LINE__, "%s %s: %s", alg, curve ? curve : "", err.msg);
  BIO_free(b);
  const char *msg = "payload bytes";
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  size_t sl = 0;
  const EVP_MD *md = strcmp(alg, "ED25519") == 0 ? NULL : EVP_sha256();
  CHECK(EVP_DigestSignInit(c, NULL, md, NULL, k) == 1);
  CHECK(EVP_DigestSign(c, NULL, &sl, (const unsigned char *)msg, strlen(msg)) == 1);
  unsigned char *sig = malloc(sl);
  CHECK(EVP_DigestSign(c, sig, &sl, (const unsigned char *)msg, strlen(msg)) == 1);
  EVP_MD_CTX_free(c);
  char *b64 = malloc(4 * ((sl + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *)b64, sig, (int)sl);
  char *fpr = NULL;
  CHECK_INT_EQ(fp_sig_verify(keys, b64, msg, strlen(msg), &fpr, &err), 0);
  CHECK_CONTAINS(fpr, "sha256:");
  free(fpr);
  CHECK_INT_EQ(fp_sig_verify(keys, b64, "payload bytez", strlen(msg), &fpr, &err), FPULL_EPOLICY);
  CHECK_CONTAINS(err.msg, "does not verify");
  CHECK_NULL(fpr);
  free(b64);
  free(sig);
  fp_sig_keys_free(keys);
  EVP_PKEY_free(k);
}

TEST(key_types)
{
  sign_and_verify("EC", "P-256");
  sign_and_verify("EC", "P-384");
  sign_and_verify("EC", "P-521");
  sign_and_verify("RSA", NULL);
  sign_and_verify("ED25519", NULL);
  /* Another curve is refused by name. */
  EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "secp256k1");
  BIO *b = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(b, k);
  char *pem = NULL;
  long pl = BIO_get_mem_data(b, &pem);
  struct fp_sig_keys *keys = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_sig_keys_from_pem(&keys, pem, (size_t)pl, "k", &err), FPULL_EPOLICY);
  CHECK_CONTAINS(err.msg, "secp256k1");
  BIO_free(b);
  EVP_PKEY_free(k);
}

TEST(attachments_capped)
{
  struct fp_sig_attachments a;
  fpull_err err = {0};
  struct fp_buf b = {0};
  const char *head = "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"layers\":[";
  fp_buf_append(&b, head, strlen(head));
  for (int i = 0; i < 65; i++) {
    char l[300];
    snprintf(l, sizeof l,
             "%s{\"mediaType\":\"" FP_SIG_LAYER_TYPE "\",\"digest\":\"" D64 "\",\"size\":10}",
             i ? "," : "");
    fp_buf_append(&b, l, strlen(l));
  }
  fp_buf_append(&b, "]}", 2);
  CHECK_INT_EQ(fp_sig_attachments_parse(&a, b.data, b.len, NULL, &err), FPULL_EPOLICY);
  CHECK_CONTAINS(err.msg, "65 attachments, more than 64");
  fp_buf_free(&b);
  const char *big =
      "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"layers\":["
      "{\"mediaType\":\"" FP_SIG_LAYER_TYPE "\",\"digest\":\"" D64 "\",\"size\":4194305}]}";
  CHECK_INT_EQ(fp_sig_attachments_parse(&a, big, strlen(big), NULL, &err), FPULL_EPOLICY);
  CHECK_CONTAINS(err.msg, "more than 4194304");
  const char *other = "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"layers\":["
                      "{\"mediaType\":\"text/plain\",\"digest\":\"" D64 "\",\"size\":1}]}";
  CHECK_INT_EQ(fp_sig_attachments_parse(&a, other, strlen(other), NULL, &err), 0);
  CHECK_INT_EQ(a.n, 0);
  CHECK_INT_EQ(a.ignored, 1);
  fp_sig_attachments_free(&a);
}
