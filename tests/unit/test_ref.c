#include <stdlib.h>

#include "harness.h"
#include "fpull/ref.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct {
  const char *in, *registry, *repository, *tag, *digest, *normalised;
} good[] = {
    {"ubuntu", "docker.io", "library/ubuntu", "latest", NULL, "docker.io/library/ubuntu:latest"},
    {"ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", NULL,
     "docker.io/library/ubuntu:22.04"},
    {"qnib/cv-tf:1.12.0-rev9", "docker.io", "qnib/cv-tf", "1.12.0-rev9", NULL,
     "docker.io/qnib/cv-tf:1.12.0-rev9"},
    {"docker.io/ubuntu", "docker.io", "library/ubuntu", "latest", NULL,
     "docker.io/library/ubuntu:latest"},
    {"index.docker.io/qnib/x", "docker.io", "qnib/x", "latest", NULL, "docker.io/qnib/x:latest"},
    {"localhost/foo", "localhost", "foo", "latest", NULL, "localhost/foo:latest"},
    {"localhost:5000/a/b/c:t", "localhost:5000", "a/b/c", "t", NULL, "localhost:5000/a/b/c:t"},
    {"127.0.0.1:5000/x/y:tag", "127.0.0.1:5000", "x/y", "tag", NULL, "127.0.0.1:5000/x/y:tag"},
    {"[::1]:5000/x:1", "[::1]:5000", "x", "1", NULL, "[::1]:5000/x:1"},
    {"Quay.IO/org/img", "quay.io", "org/img", "latest", NULL, "quay.io/org/img:latest"},
    {"ubuntu@sha256:" D64, "docker.io", "library/ubuntu", NULL, "sha256:" D64,
     "docker.io/library/ubuntu@sha256:" D64},
    {"r.io/a:v1@sha256:" D64, "r.io", "a", "v1", "sha256:" D64, "r.io/a:v1@sha256:" D64},
    {"a__b/c-d---e/f.g_h", "docker.io", "a__b/c-d---e/f.g_h", "latest", NULL,
     "docker.io/a__b/c-d---e/f.g_h:latest"},
    {"foo:_Tag.-x", "docker.io", "library/foo", "_Tag.-x", NULL, "docker.io/library/foo:_Tag.-x"},
    /* skopeo's and Apptainer's transport prefix */
    {"docker://localhost:5000/a/b:t", "localhost:5000", "a/b", "t", NULL, "localhost:5000/a/b:t"},
    {"docker://ubuntu", "docker.io", "library/ubuntu", "latest", NULL,
     "docker.io/library/ubuntu:latest"},
    /* enroot's and pyxis's REGISTRY#IMAGE: the registry, even without a dot */
    {"nvcr.io#nvidia/pytorch:23.10-py3", "nvcr.io", "nvidia/pytorch", "23.10-py3", NULL,
     "nvcr.io/nvidia/pytorch:23.10-py3"},
    {"myregistry#team/app", "myregistry", "team/app", "latest", NULL, "myregistry/team/app:latest"},
    {"127.0.0.1:5000#x", "127.0.0.1:5000", "x", "latest", NULL, "127.0.0.1:5000/x:latest"},
};

TEST(parse_normalises)
{
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    struct fpull_ref *r = NULL;
    fpull_err err = {0};
    int rc = fpull_ref_parse(&r, good[i].in, &err);
    if (rc != 0)
      th_fail(__FILE__, __LINE__, "%s: %s", good[i].in, err.msg);
    CHECK_STR_EQ(r->registry, good[i].registry);
    CHECK_STR_EQ(r->repository, good[i].repository);
    if (good[i].tag)
      CHECK_STR_EQ(r->tag, good[i].tag);
    else
      CHECK_NULL(r->tag);
    if (good[i].digest)
      CHECK_STR_EQ(r->digest, good[i].digest);
    else
      CHECK_NULL(r->digest);
    char *n = fpull_ref_format(r);
    CHECK_STR_EQ(n, good[i].normalised);
    free(n);
    fpull_ref_free(r);
  }
}

static const struct {
  const char *in, *why;
} badrefs[] = {
    {"", "empty"},
    {"Ubuntu", "lower case"},
    {"qnib/CV-tf:1", "lower case"},
    {"a//b", "empty path component"},
    {"/a", "empty path component"},
    {"a/", "empty path component"},
    {"ubuntu:", "empty tag"},
    {"ubuntu:-x", "invalid character in tag"},
    {"ubuntu@", "ALGORITHM:HEX"},
    {"ubuntu@sha256:abc", "64 lower-case hex"},
    {"ubuntu@sha256:" D64 "00", "64 lower-case hex"},
    {"ubuntu@sha512:" D64, "128 lower-case hex"},
    {"ubuntu@md5:900150983cd24fb0d6963f7d28e17f72", "unsupported digest algorithm"},
    {"ubuntu@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
     "64 lower-case hex"},
    {"a..b", "separator must be followed"},
    {"a-", "separator must be followed"},
    {"-a", "invalid"},
    {"reg.io:port/x", "port must be numeric"},
    {"reg.io:/x", "malformed registry port"},
    {"-reg.io/x", "starts with '-'"},
    {"a b", "space"},
    {"ubuntu:../../etc", "registry port must be numeric"},
    {"ubuntu:..x", "invalid character in tag"},
    {"user@reg.io/img", "a user name goes to 'fpull login'"},
    {"bob@localhost:5000/x:1", "a user name goes to 'fpull login'"},
    {"oci:/tmp/layout:tag", "registries only"},
    {"docker-archive:x.tar", "registries only"},
    {"oras://reg.io/x", "registries only"},
    {"podman://reg.io/x", "unknown transport"},
    {"docker://", "empty"},
    {"docker://docker://x", "unknown transport"},
    {"a#b#c", "'#' separates a registry from its image"},
    {"#img", "'#' separates a registry from its image"},
    {"reg/x#img", "'#' separates a registry from its image"},
    {"reg#", "'#' separates a registry from its image"},
};

TEST(parse_refuses_bad_references)
{
  for (size_t i = 0; i < sizeof badrefs / sizeof badrefs[0]; i++) {
    struct fpull_ref *r = (struct fpull_ref *)1;
    fpull_err err = {0};
    int rc = fpull_ref_parse(&r, badrefs[i].in, &err);
    if (rc != FPULL_EUSAGE)
      th_fail(__FILE__, __LINE__, "\"%s\" gave %d, want usage error", badrefs[i].in, rc);
    CHECK_NULL(r);
    CHECK_CONTAINS(err.msg, badrefs[i].why);
    CHECK_CONTAINS(err.msg, "invalid reference");
  }
}

TEST(parse_limits_length)
{
  char name[300];
  memset(name, 'a', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  struct fpull_ref *r = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_ref_parse(&r, name, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "255");
  char tag[200] = "x:";
  memset(tag + 2, 't', 150);
  tag[152] = '\0';
  CHECK_INT_EQ(fpull_ref_parse(&r, tag, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "128");
}

TEST(api_host_and_basename)
{
  struct fpull_ref *r = NULL;
  CHECK_INT_EQ(fpull_ref_parse(&r, "qnib/cv-tf:1", NULL), 0);
  CHECK_STR_EQ(fpull_ref_api_host(r), "registry-1.docker.io");
  CHECK_STR_EQ(fpull_ref_basename(r), "cv-tf");
  fpull_ref_free(r);
  CHECK_INT_EQ(fpull_ref_parse(&r, "127.0.0.1:5000/x/y/zed", NULL), 0);
  CHECK_STR_EQ(fpull_ref_api_host(r), "127.0.0.1:5000");
  CHECK_STR_EQ(fpull_ref_basename(r), "zed");
  fpull_ref_free(r);
  fpull_ref_free(NULL);
}

TEST(loopback_rule_is_literal)
{
  const char *yes[] = {"localhost", "localhost:5000", "LOCALHOST:1",
                       "127.0.0.1", "127.0.0.1:5000", "127.255.3.4:80",
                       "::1",       "[::1]",          "[::1]:5000"};
  const char *no[] = {"localhost.example.org",
                      "mylocalhost",
                      "128.0.0.1",
                      "127.0.0",
                      "127.0.0.1.",
                      "127.0.0.256",
                      "127.0.0.1.5",
                      "[::2]:5000",
                      "10.0.0.1",
                      "registry-1.docker.io",
                      "",
                      "127.000x.0.1"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
    if (!fpull_ref_host_is_loopback(yes[i]))
      th_fail(__FILE__, __LINE__, "%s should be loopback", yes[i]);
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    if (fpull_ref_host_is_loopback(no[i]))
      th_fail(__FILE__, __LINE__, "%s should not be loopback", no[i]);
}

TEST(digest_grammar)
{
  CHECK(fpull_digest_valid("sha256:" D64));
  CHECK(!fpull_digest_valid("sha256:" D64 "a"));
  CHECK(!fpull_digest_valid("sha256:../../../../etc/passwd"));
  CHECK(!fpull_digest_valid("sha512:" D64));
  CHECK(fpull_digest_valid("sha512:" D64 D64));
  CHECK(!fpull_digest_valid("sha512:" D64 D64 "0"));
  CHECK(!fpull_digest_valid("sha384:" D64));
  CHECK(!fpull_digest_valid("SHA256:" D64));
  CHECK(!fpull_digest_valid(NULL));
  CHECK(!fpull_digest_valid("sha256:"));
}
