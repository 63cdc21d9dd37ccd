#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/manifest.h"
#include "harness.h"

#define DA "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define DB "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define DC "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const char oci_index[] =
    "{\"schemaVersion\":2,\"mediaType\":\"" FPULL_MT_OCI_INDEX "\",\"manifests\":["
    "{\"mediaType\":\"" FPULL_MT_OCI_MANIFEST "\",\"digest\":\"" DA "\",\"size\":1234,"
    "\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\",\"variant\":\"v3\","
    "\"os.version\":\"10.0\",\"os.features\":[\"win32k\"],\"features\":[\"broadwell\","
    "\"nvidia-396-44\"]}},"
    "{\"mediaType\":\"" FPULL_MT_OCI_MANIFEST "\",\"digest\":\"" DB "\",\"size\":0,"
    "\"platform\":{\"architecture\":\"unknown\",\"os\":\"unknown\"},"
    "\"annotations\":{\"vnd.docker.reference.type\":\"attestation-manifest\","
    "\"vnd.docker.reference.digest\":\"" DA "\"}}]}";

static const char docker_list[] =
    "{\"schemaVersion\":2,\"mediaType\":\"" FPULL_MT_DOCKER_LIST "\",\"manifests\":["
    "{\"mediaType\":\"" FPULL_MT_DOCKER_MANIFEST "\",\"digest\":\"" DC "\",\"size\":528,"
    "\"platform\":{\"architecture\":\"arm\",\"os\":\"linux\",\"variant\":\"v7\"}}]}";

static const char oci_manifest[] =
    "{\"schemaVersion\":2,\"mediaType\":\"" FPULL_MT_OCI_MANIFEST "\","
    "\"config\":{\"mediaType\":\"" FPULL_MT_OCI_CONFIG "\",\"digest\":\"" DA "\",\"size\":7023},"
    "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"" DB
    "\",\"size\":32654},{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+zstd\","
    "\"digest\":\"" DC "\",\"size\":9007199254740991}],"
    "\"annotations\":{\"a\":\"b\"}}";

static const char docker_manifest[] =
    "{\n  \"schemaVersion\": 2,\n  \"mediaType\": \"" FPULL_MT_DOCKER_MANIFEST "\",\n"
    "  \"config\": {\"mediaType\": \"" FPULL_MT_DOCKER_CONFIG
    "\", \"size\": 1469, \"digest\": \"" DA
    "\"},\n  \"layers\": [{\"mediaType\": \"application/vnd.docker.image.rootfs.diff.tar.gzip\","
    " \"size\": 2811969, \"digest\": \"" DB "\"}]\n}\n";

static const char image_config[] =
    "{\"architecture\":\"arm64\",\"os\":\"linux\",\"variant\":\"v8\",\"config\":{\"Env\":[\"A=1\"],"
    "\"Labels\":{\"version\":\"1\",\"Version\":\"2\"}},\"rootfs\":{\"type\":\"layers\","
    "\"diff_ids\":[\"" DA "\",\"" DB "\"]},\"history\":[{\"created_by\":\"x\"}]}";

static int index_err(const char *doc, const char *ct, fpull_err *err)
{
  struct fpull_index *idx = NULL;
  int r = fpull_index_parse(&idx, doc, strlen(doc), ct, err);
  fpull_index_free(idx);
  return r;
}

static int manifest_err(const char *doc, const char *ct, fpull_err *err)
{
  struct fpull_manifest *m = NULL;
  int r = fpull_manifest_parse(&m, doc, strlen(doc), ct, err);
  CHECK(r == 0 || m == NULL);
  fpull_manifest_free(m);
  return r;
}

static int kind_of(const char *doc, const char *ct, int *kind, fpull_err *err)
{
  return fpull_doc_kind(kind, doc, strlen(doc), ct, err);
}

TEST(oci_index_with_features)
{
  fpull_err err = {0};
  struct fpull_index *idx = NULL;
  CHECK_INT_EQ(fpull_index_parse(&idx, oci_index, strlen(oci_index), FPULL_MT_OCI_INDEX, &err), 0);
  CHECK_STR_EQ(idx->media_type, FPULL_MT_OCI_INDEX);
  CHECK_INT_EQ(idx->n_manifests, 2);
  struct fpull_descriptor *d = &idx->manifests[0];
  CHECK_STR_EQ(d->media_type, FPULL_MT_OCI_MANIFEST);
  CHECK_STR_EQ(d->digest, DA);
  CHECK_INT_EQ(d->size, 1234);
  CHECK_NULL(d->ref_type);
  CHECK_STR_EQ(d->platform->os, "linux");
  CHECK_STR_EQ(d->platform->architecture, "amd64");
  CHECK_STR_EQ(d->platform->variant, "v3");
  CHECK_STR_EQ(d->platform->os_version, "10.0");
  CHECK_INT_EQ(fpull_strv_len(d->platform->os_features), 1);
  CHECK_STR_EQ(d->platform->os_features[0], "win32k");
  CHECK_INT_EQ(fpull_strv_len(d->platform->features), 2);
  CHECK_STR_EQ(d->platform->features[0], "broadwell");
  CHECK_STR_EQ(d->platform->features[1], "nvidia-396-44");
  d = &idx->manifests[1];
  CHECK_INT_EQ(d->size, 0);
  CHECK_STR_EQ(d->ref_type, "attestation-manifest");
  CHECK_STR_EQ(d->platform->os, "unknown");
  CHECK_NULL(d->platform->variant);
  CHECK_NULL(d->platform->features);

  struct fpull_platform *p = fpull_platform_dup(idx->manifests[0].platform);
  CHECK(p != idx->manifests[0].platform);
  CHECK_STR_EQ(p->features[1], "nvidia-396-44");
  CHECK_STR_EQ(p->os_version, "10.0");
  fpull_platform_free(p);
  fpull_platform_free(NULL);
  fpull_index_free(idx);
  fpull_index_free(NULL);
}

TEST(docker_list)
{
  fpull_err err = {0};
  struct fpull_index *idx = NULL;
  /* Content-Type parameters and case do not matter. */
  CHECK_INT_EQ(fpull_index_parse(&idx, docker_list, strlen(docker_list),
                                 "Application/vnd.docker.distribution.manifest.list.v2+json; "
                                 "charset=utf-8",
                                 &err),
               0);
  CHECK_STR_EQ(idx->media_type, FPULL_MT_DOCKER_LIST);
  CHECK_INT_EQ(idx->n_manifests, 1);
  CHECK_STR_EQ(idx->manifests[0].media_type, FPULL_MT_DOCKER_MANIFEST);
  CHECK_STR_EQ(idx->manifests[0].platform->variant, "v7");
  CHECK_STR_EQ(idx->manifests[0].platform->architecture, "arm");
  fpull_index_free(idx);
}

TEST(oci_manifest)
{
  fpull_err err = {0};
  struct fpull_manifest *m = NULL;
  CHECK_INT_EQ(fpull_manifest_parse(&m, oci_manifest, strlen(oci_manifest), NULL, &err), 0);
  CHECK_STR_EQ(m->media_type, FPULL_MT_OCI_MANIFEST);
  CHECK_STR_EQ(m->config.media_type, FPULL_MT_OCI_CONFIG);
  CHECK_STR_EQ(m->config.digest, DA);
  CHECK_INT_EQ(m->config.size, 7023);
  CHECK_NULL(m->config.platform);
  CHECK_INT_EQ(m->n_layers, 2);
  CHECK_STR_EQ(m->layers[0].digest, DB);
  CHECK_INT_EQ(m->layers[0].size, 32654);
  CHECK_INT_EQ(fpull_layer_compression(m->layers[0].media_type), 1);
  /* 2^53 - 1 is the largest size a JSON number carries exactly. */
  CHECK_INT_EQ(m->layers[1].size, 9007199254740991LL);
  CHECK_INT_EQ(fpull_layer_compression(m->layers[1].media_type), 2);
  fpull_manifest_free(m);
  fpull_manifest_free(NULL);
}

TEST(docker_v2s2_manifest)
{
  fpull_err err = {0};
  struct fpull_manifest *m = NULL;
  CHECK_INT_EQ(fpull_manifest_parse(&m, docker_manifest, strlen(docker_manifest),
                                    FPULL_MT_DOCKER_MANIFEST, &err),
               0);
  CHECK_STR_EQ(m->media_type, FPULL_MT_DOCKER_MANIFEST);
  CHECK_STR_EQ(m->config.media_type, FPULL_MT_DOCKER_CONFIG);
  CHECK_INT_EQ(m->config.size, 1469);
  CHECK_INT_EQ(m->n_layers, 1);
  CHECK_INT_EQ(m->layers[0].size, 2811969);
  CHECK_INT_EQ(fpull_layer_compression(m->layers[0].media_type), 1);
  fpull_manifest_free(m);
}

TEST(image_config)
{
  fpull_err err = {0};
  struct fpull_image_config *c = NULL;
  /* Labels differing only in case are legitimate: only the fields fpull reads are checked. */
  CHECK_INT_EQ(fpull_image_config_parse(&c, image_config, strlen(image_config), &err), 0);
  CHECK_STR_EQ(c->os, "linux");
  CHECK_STR_EQ(c->architecture, "arm64");
  CHECK_STR_EQ(c->variant, "v8");
  CHECK_INT_EQ(fpull_strv_len(c->diff_ids), 2);
  CHECK_STR_EQ(c->diff_ids[0], DA);
  CHECK_STR_EQ(c->diff_ids[1], DB);
  fpull_image_config_free(c);
  fpull_image_config_free(NULL);

  /* No rootfs: an empty list, not NULL. */
  const char *bare = "{\"os\":\"linux\",\"architecture\":\"amd64\"}";
  CHECK_INT_EQ(fpull_image_config_parse(&c, bare, strlen(bare), &err), 0);
  CHECK(c->diff_ids != NULL);
  CHECK_INT_EQ(fpull_strv_len(c->diff_ids), 0);
  CHECK_NULL(c->variant);
  fpull_image_config_free(c);
}

TEST(image_config_bad_diff_ids)
{
  fpull_err err = {0};
  struct fpull_image_config *c = NULL;
  const char *bad[] = {
      "{\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:../../x\"]}}",
      "{\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" DA "\",7]}}",
      "{\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\"}}",
      "{\"os\":\"linux\",\"rootfs\":{\"type\":\"other\",\"diff_ids\":[]}}",
      "{\"os\":\"linux\",\"rootfs\":[]}",
      "{\"os\":1}",
      "[\"os\"]",
      "{\"os\":\"linux\",\"os\":\"windows\"}",
      "{\"os\":\"linux\",\"OS\":\"windows\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_INT_EQ(fpull_image_config_parse(&c, bad[i], strlen(bad[i]), &err), FPULL_EINTEGRITY);
    CHECK_NULL(c);
  }
}

TEST(doc_kinds)
{
  fpull_err err = {0};
  int k = -1;
  CHECK_INT_EQ(kind_of(oci_index, NULL, &k, &err), 0);
  CHECK_INT_EQ(k, FPULL_DOC_INDEX);
  CHECK_INT_EQ(kind_of(docker_list, FPULL_MT_DOCKER_LIST, &k, &err), 0);
  CHECK_INT_EQ(k, FPULL_DOC_INDEX);
  CHECK_INT_EQ(kind_of(oci_manifest, "application/json", &k, &err), 0);
  CHECK_INT_EQ(k, FPULL_DOC_MANIFEST);
  CHECK_INT_EQ(kind_of(docker_manifest, FPULL_MT_DOCKER_MANIFEST, &k, &err), 0);
  CHECK_INT_EQ(k, FPULL_DOC_MANIFEST);
  /* No mediaType in the body: the Content-Type decides, else the structure. */
  const char *bare_index = "{\"schemaVersion\":2,\"manifests\":[]}";
  CHECK_INT_EQ(kind_of(bare_index, NULL, &k, &err), 0);
  CHECK_INT_EQ(k, FPULL_DOC_INDEX);
  struct fpull_index *idx = NULL;
  CHECK_INT_EQ(fpull_index_parse(&idx, bare_index, strlen(bare_index), FPULL_MT_DOCKER_LIST, &err),
               0);
  CHECK_STR_EQ(idx->media_type, FPULL_MT_DOCKER_LIST);
  CHECK_INT_EQ(idx->n_manifests, 0);
  fpull_index_free(idx);
  CHECK_INT_EQ(fpull_index_parse(&idx, bare_index, strlen(bare_index), NULL, &err), 0);
  CHECK_STR_EQ(idx->media_type, FPULL_MT_OCI_INDEX);
  fpull_index_free(idx);
  /* But a Content-Type naming a manifest contradicts a document that is an index. */
  CHECK_INT_EQ(kind_of(bare_index, FPULL_MT_OCI_MANIFEST, &k, &err), FPULL_EINTEGRITY);
  /* An index is not a manifest and vice versa. */
  CHECK_INT_EQ(manifest_err(oci_index, NULL, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "expected a manifest");
  CHECK_INT_EQ(index_err(oci_manifest, NULL, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "expected an index");
}

TEST(schema1_detected)
{
  fpull_err err = {0};
  int k = -1;
  const char *s1 = "{\"schemaVersion\":1,\"name\":\"x/y\",\"tag\":\"latest\",\"fsLayers\":[]}";
  CHECK_INT_EQ(kind_of(s1, NULL, &k, &err), 0);
  CHECK_INT_EQ(k, FPULL_DOC_SCHEMA1);
  k = -1;
  CHECK_INT_EQ(kind_of("not even json", FPULL_MT_DOCKER_SCHEMA1_SIGNED, &k, &err), 0);
  CHECK_INT_EQ(k, FPULL_DOC_SCHEMA1);
  CHECK_INT_EQ(manifest_err(s1, NULL, &err), FPULL_EUNSAFE);
  CHECK_CONTAINS(err.msg, "schema 1");
  const char *s3 = "{\"schemaVersion\":3,\"layers\":[]}";
  CHECK_INT_EQ(kind_of(s3, NULL, &k, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "schemaVersion");
  CHECK_INT_EQ(kind_of("{\"layers\":[]}", NULL, &k, &err), FPULL_EINTEGRITY);
  CHECK_INT_EQ(kind_of("{\"schemaVersion\":\"2\",\"layers\":[]}", NULL, &k, &err),
               FPULL_EINTEGRITY);
}

TEST(ambiguous_document_refused)
{
  /* CVE-2021-41190: one blob readable both as an index and as a manifest. */
  fpull_err err = {0};
  int k = -1;
  const char *both = "{\"schemaVersion\":2,\"manifests\":[],\"layers\":[]}";
  CHECK_INT_EQ(kind_of(both, FPULL_MT_OCI_INDEX, &k, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "ambiguous");
  CHECK_INT_EQ(index_err(both, NULL, &err), FPULL_EINTEGRITY);
  CHECK_INT_EQ(manifest_err(both, NULL, &err), FPULL_EINTEGRITY);
  const char *cfg = "{\"schemaVersion\":2,\"manifests\":[],\"config\":{}}";
  CHECK_INT_EQ(kind_of(cfg, NULL, &k, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "config");
  /* An index media type on a document with layers. */
  const char *lying =
      "{\"schemaVersion\":2,\"mediaType\":\"" FPULL_MT_OCI_INDEX "\",\"layers\":[]}";
  CHECK_INT_EQ(kind_of(lying, NULL, &k, &err), FPULL_EINTEGRITY);
  const char *lying2 =
      "{\"schemaVersion\":2,\"mediaType\":\"" FPULL_MT_DOCKER_MANIFEST "\",\"manifests\":[]}";
  CHECK_INT_EQ(kind_of(lying2, NULL, &k, &err), FPULL_EINTEGRITY);
}

TEST(content_type_disagreement)
{
  fpull_err err = {0};
  int k = -1;
  CHECK_INT_EQ(kind_of(oci_manifest, FPULL_MT_DOCKER_MANIFEST, &k, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "disagrees with Content-Type");
  CHECK_INT_EQ(kind_of(oci_index, FPULL_MT_OCI_MANIFEST, &k, &err), FPULL_EINTEGRITY);
  CHECK_INT_EQ(manifest_err(docker_manifest, FPULL_MT_OCI_MANIFEST, &err), FPULL_EINTEGRITY);
  CHECK_INT_EQ(index_err(docker_list, FPULL_MT_OCI_INDEX, &err), FPULL_EINTEGRITY);
  /* Unknown manifest types are refused, not guessed. */
  const char *art = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.artifact.manifest.v1+"
                    "json\",\"blobs\":[]}";
  CHECK_INT_EQ(kind_of(art, NULL, &k, &err), FPULL_EUNSAFE);
  CHECK_CONTAINS(err.msg, "unsupported media type");
  const char *mt_num = "{\"schemaVersion\":2,\"mediaType\":5,\"layers\":[]}";
  CHECK_INT_EQ(kind_of(mt_num, NULL, &k, &err), FPULL_EINTEGRITY);
}

TEST(duplicate_keys_refused)
{
  fpull_err err = {0};
  int k = -1;
  /* cJSON would take the first, Go registries the last: a parser differential. */
  const char *top = "{\"schemaVersion\":2,\"mediaType\":\"" FPULL_MT_OCI_MANIFEST
                    "\",\"mediaType\":\"" FPULL_MT_OCI_INDEX "\",\"manifests\":[]}";
  CHECK_INT_EQ(kind_of(top, NULL, &k, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "duplicate JSON key \"mediaType\"");
  char deep[2048];
  snprintf(deep, sizeof deep,
           "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"%s\",\"digest\":\"%s\","
           "\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\","
           "\"architecture\":\"arm64\"}}]}",
           FPULL_MT_OCI_MANIFEST, DA);
  CHECK_INT_EQ(index_err(deep, NULL, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "architecture");
  /* Even in parts fpull does not read. */
  const char *ann =
      "{\"schemaVersion\":2,\"manifests\":[],\"annotations\":{\"x\":{\"y\":1,\"y\":2}}}";
  CHECK_INT_EQ(index_err(ann, NULL, &err), FPULL_EINTEGRITY);
  /* Go matches struct fields case-insensitively: "Digest" would be read as the digest. */
  snprintf(deep, sizeof deep,
           "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"%s\",\"digest\":\"%s\","
           "\"Digest\":\"%s\",\"size\":1}]}",
           FPULL_MT_OCI_MANIFEST, DA, DB);
  CHECK_INT_EQ(index_err(deep, NULL, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "only in case");
}

/* digest in a manifest's config and in an index entry: refused with code; the manifest's
 * error says what (and the index's too, when index_what is given). */
static void check_digest_refused(const char *digest, int code, const char *what,
                                 const char *index_what)
{
  fpull_err err = {0};
  char doc[4096];
  snprintf(doc, sizeof doc,
           "{\"schemaVersion\":2,\"mediaType\":\"%s\",\"config\":{\"mediaType\":\"%s\","
           "\"digest\":\"%s\",\"size\":3},\"layers\":[]}",
           FPULL_MT_OCI_MANIFEST, FPULL_MT_OCI_CONFIG, digest);
  if (manifest_err(doc, NULL, &err) != code)
    th_fail(__FILE__, __LINE__, "digest \"%s\" not refused with %d", digest, code);
  CHECK_CONTAINS(err.msg, what);
  snprintf(doc, sizeof doc,
           "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"%s\",\"digest\":\"%s\","
           "\"size\":3}]}",
           FPULL_MT_OCI_MANIFEST, digest);
  if (index_err(doc, NULL, &err) != code)
    th_fail(__FILE__, __LINE__, "index digest \"%s\" not refused with %d", digest, code);
  if (index_what)
    CHECK_CONTAINS(err.msg, index_what);
}

static void check_bad_digest(const char *digest)
{
  check_digest_refused(digest, FPULL_EINTEGRITY, "not a sha256 digest", NULL);
}

/* Well-formed digests of an algorithm fpull does not verify: invalid content (exit 8),
 * not corrupt bytes (exit 7). */
static void check_unsupported_digest(const char *digest)
{
  check_digest_refused(digest, FPULL_EUNSAFE, "unsupported digest algorithm",
                       "unsupported digest algorithm");
}

TEST(unsupported_digest_algorithms_are_invalid_content)
{
  check_unsupported_digest("md5:900150983cd24fb0d6963f7d28e17f72");
  check_unsupported_digest(
      "sha384:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  check_unsupported_digest("multihash+base58:QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8");
}

TEST(bad_digests_refused)
{
  check_bad_digest("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
  check_bad_digest("sha256:ba7816bf");
  check_bad_digest("sha256:../../x");
  check_bad_digest("sha256:../../../../../../../../../../../../../../../../etc/passwd");
  check_bad_digest("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  check_bad_digest("");
  check_bad_digest("sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad0");
  check_bad_digest("sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a\\n");
}

TEST(bad_sizes_refused)
{
  const char *sizes[] = {
      "-1", "-9007199254740993", "9007199254740992", "1e300", "1.5", "\"12\"", "null", "true"};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    fpull_err err = {0};
    char doc[1024];
    snprintf(doc, sizeof doc,
             "{\"schemaVersion\":2,\"layers\":[{\"mediaType\":\"x\",\"digest\":\"%s\","
             "\"size\":%s}],\"config\":{\"mediaType\":\"x\",\"digest\":\"%s\",\"size\":1}}",
             DA, sizes[i], DB);
    if (manifest_err(doc, NULL, &err) != FPULL_EINTEGRITY)
      th_fail(__FILE__, __LINE__, "size %s accepted", sizes[i]);
    CHECK_CONTAINS(err.msg, "size");
  }
  fpull_err err = {0};
  CHECK_INT_EQ(manifest_err("{\"schemaVersion\":2,\"layers\":[],\"config\":{\"mediaType\":\"x\","
                            "\"digest\":\"" DA "\",\"size\":-5}}",
                            NULL, &err),
               FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "negative size");
}

TEST(depth_bomb_refused)
{
  fpull_err err = {0};
  int k = -1;
  /* Under cJSON's own limit but over fpull's. */
  size_t n = 200;
  char *doc = malloc(2 * n + 64);
  size_t len = (size_t)sprintf(doc, "{\"schemaVersion\":2,\"manifests\":[],\"x\":");
  for (size_t i = 0; i < n; i++)
    doc[len++] = '[';
  for (size_t i = 0; i < n; i++)
    doc[len++] = ']';
  doc[len++] = '}';
  CHECK_INT_EQ(fpull_doc_kind(&k, doc, len, NULL, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "nested deeper");
  free(doc);
  /* Far over it: refused without running out of stack. */
  n = 1000000;
  doc = malloc(n);
  memset(doc, '[', n);
  CHECK_INT_EQ(fpull_doc_kind(&k, doc, n, NULL, &err), FPULL_EINTEGRITY);
  free(doc);
  /* 60 levels are fine. */
  doc = malloc(256);
  len = (size_t)sprintf(doc, "{\"schemaVersion\":2,\"manifests\":[],\"x\":");
  for (size_t i = 0; i < 60; i++)
    doc[len++] = '[';
  for (size_t i = 0; i < 60; i++)
    doc[len++] = ']';
  doc[len++] = '}';
  CHECK_INT_EQ(fpull_doc_kind(&k, doc, len, NULL, &err), 0);
  free(doc);
}

TEST(missing_fields_refused)
{
  const char *docs[] = {
      /* manifest without config, without layers, layers not an array */
      "{\"schemaVersion\":2,\"mediaType\":\"" FPULL_MT_OCI_MANIFEST "\",\"layers\":[]}",
      "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"x\",\"digest\":\"" DA "\",\"size\":1}}",
      "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"x\",\"digest\":\"" DA
      "\",\"size\":1},\"layers\":{}}",
      /* descriptor without digest, size, mediaType */
      "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"x\",\"size\":1},\"layers\":[]}",
      "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"x\",\"digest\":\"" DA "\"},\"layers\":[]}",
      "{\"schemaVersion\":2,\"config\":{\"digest\":\"" DA "\",\"size\":1},\"layers\":[]}",
      "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"x\",\"digest\":\"" DA
      "\",\"size\":1},\"layers\":[7]}",
      "{\"schemaVersion\":2,\"config\":\"x\",\"layers\":[]}",
  };
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    fpull_err err = {0};
    if (manifest_err(docs[i], NULL, &err) != FPULL_EINTEGRITY)
      th_fail(__FILE__, __LINE__, "document %zu accepted", i);
  }
  const char *idocs[] = {
      "{\"schemaVersion\":2,\"mediaType\":\"" FPULL_MT_OCI_INDEX "\"}",
      "{\"schemaVersion\":2,\"manifests\":{}}",
      "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"x\",\"digest\":\"" DA
      "\",\"size\":1,\"platform\":\"linux\"}]}",
      "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"x\",\"digest\":\"" DA
      "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"features\":\"avx2\"}}]}",
      "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"x\",\"digest\":\"" DA
      "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"features\":[1]}}]}",
      "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"x\",\"digest\":\"" DA
      "\",\"size\":1,\"annotations\":{\"vnd.docker.reference.type\":1}}]}",
  };
  for (size_t i = 0; i < sizeof idocs / sizeof idocs[0]; i++) {
    fpull_err err = {0};
    if (index_err(idocs[i], NULL, &err) != FPULL_EINTEGRITY)
      th_fail(__FILE__, __LINE__, "index document %zu accepted", i);
  }
  /* A platform without os/architecture reads as empty strings (fits nothing), as in Go. */
  const char *noarch = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"x\",\"digest\":\"" DA
                       "\",\"size\":1,\"platform\":{}}]}";
  fpull_err err = {0};
  struct fpull_index *idx = NULL;
  CHECK_INT_EQ(fpull_index_parse(&idx, noarch, strlen(noarch), NULL, &err), 0);
  CHECK_STR_EQ(idx->manifests[0].platform->os, "");
  CHECK_STR_EQ(idx->manifests[0].platform->architecture, "");
  fpull_index_free(idx);
}

TEST(malformed_json_refused)
{
  fpull_err err = {0};
  int k = -1;
  const char *bad[] = {"",
                       "{",
                       "{\"schemaVersion\":2,\"manifests\":[]} trailing",
                       "{\"schemaVersion\":2,\"manifests\":[]}{}",
                       "[]",
                       "null",
                       "2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (kind_of(bad[i], NULL, &k, &err) != FPULL_EINTEGRITY)
      th_fail(__FILE__, __LINE__, "\"%s\" accepted", bad[i]);
  /* Trailing whitespace is fine. */
  CHECK_INT_EQ(kind_of("{\"schemaVersion\":2,\"manifests\":[]}\n\n", NULL, &k, &err), 0);
  /* A NUL, raw or escaped, would cut cJSON's string where Go's goes on. */
  const char nul[] = "{\"schemaVersion\":2,\"manifests\":[],\"x\":\"a\0b\"}";
  CHECK_INT_EQ(fpull_doc_kind(&k, nul, sizeof nul - 1, NULL, &err), FPULL_EINTEGRITY);
  const char *esc = "{\"schemaVersion\":2,\"mediaType\\u0000x\":\"y\",\"manifests\":[]}";
  CHECK_INT_EQ(kind_of(esc, NULL, &k, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "NUL");
  /* An escaped backslash followed by u0000 is an ordinary string. */
  const char *lit = "{\"schemaVersion\":2,\"x\":\"\\\\u0000\",\"manifests\":[]}";
  CHECK_INT_EQ(kind_of(lit, NULL, &k, &err), 0);
}

TEST(size_limit)
{
  fpull_err err = {0};
  size_t n = FPULL_MANIFEST_MAX + 1;
  char *doc = malloc(n);
  memset(doc, ' ', n);
  memcpy(doc, "{\"schemaVersion\":2,\"manifests\":[]}", 34);
  struct fpull_index *idx = NULL;
  CHECK_INT_EQ(fpull_index_parse(&idx, doc, n, NULL, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "limit");
  CHECK_INT_EQ(fpull_index_parse(&idx, doc, n - 1, NULL, &err), 0);
  fpull_index_free(idx);
  free(doc);
}

TEST(layer_compression)
{
  CHECK_INT_EQ(fpull_layer_compression("application/vnd.oci.image.layer.v1.tar"), 0);
  CHECK_INT_EQ(fpull_layer_compression("application/vnd.oci.image.layer.v1.tar+gzip"), 1);
  CHECK_INT_EQ(fpull_layer_compression("application/vnd.oci.image.layer.v1.tar+zstd"), 2);
  CHECK_INT_EQ(fpull_layer_compression("application/vnd.docker.image.rootfs.diff.tar.gzip"), 1);
  CHECK_INT_EQ(fpull_layer_compression("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"),
               -1);
  CHECK_INT_EQ(
      fpull_layer_compression("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"), -1);
  CHECK_INT_EQ(fpull_layer_compression("application/vnd.oci.image.layer.v1.tar+gzip+encrypted"),
               -1);
  CHECK_INT_EQ(fpull_layer_compression(FPULL_MT_OCI_CONFIG), -1);
  CHECK_INT_EQ(fpull_layer_compression(""), -1);
  CHECK_INT_EQ(fpull_layer_compression(NULL), -1);
}
