#include "fpull/config.h"
#include "harness.h"
#include "registry/registry_internal.h"

#include <stdlib.h>

TEST(origin_fills_default_ports_and_lowercases)
{
  char *o = fp_url_origin("https://Registry.Example.ORG/v2/x");
  CHECK_STR_EQ(o, "https://registry.example.org:443");
  free(o);
  o = fp_url_origin("HTTP://127.0.0.1/v2/");
  CHECK_STR_EQ(o, "http://127.0.0.1:80");
  free(o);
  o = fp_url_origin("http://127.0.0.1:5000/v2/?a=b");
  CHECK_STR_EQ(o, "http://127.0.0.1:5000");
  free(o);
  o = fp_url_origin("https://[::1]:8443/x");
  CHECK_STR_EQ(o, "https://[::1]:8443");
  free(o);
}

TEST(origins_differ_by_scheme_host_or_port)
{
  char *a = fp_url_origin("https://r.example:443/v2/");
  char *b = fp_url_origin("https://r.example/v2/blobs/x");
  char *c = fp_url_origin("http://r.example:443/v2/");
  char *d = fp_url_origin("https://r.example:8443/v2/");
  char *e = fp_url_origin("https://r.example.evil/v2/");
  CHECK_STR_EQ(a, b);
  CHECK(strcmp(a, c) != 0);
  CHECK(strcmp(a, d) != 0);
  CHECK(strcmp(a, e) != 0);
  free(a), free(b), free(c), free(d), free(e);
}

TEST(origin_of_garbage_is_null)
{
  CHECK_NULL(fp_url_origin("not a url"));
  CHECK_NULL(fp_url_origin(""));
}

TEST(resolve_relative_and_absolute_locations)
{
  char *u = fp_url_resolve("http://h:1/v2/r/blobs/sha256:x", "/storage/abc?sig=1");
  CHECK_STR_EQ(u, "http://h:1/storage/abc?sig=1");
  free(u);
  u = fp_url_resolve("http://h:1/v2/r/blobs/uploads/", "uuid?_state=z");
  CHECK_STR_EQ(u, "http://h:1/v2/r/blobs/uploads/uuid?_state=z");
  free(u);
  u = fp_url_resolve("https://h/v2/", "https://cdn.example/x");
  CHECK_STR_EQ(u, "https://cdn.example/x");
  free(u);
  u = fp_url_resolve("https://h/v2/", "//other:99/y");
  CHECK_STR_EQ(u, "https://other:99/y");
  free(u);
}

TEST(transient_curl_errors)
{
  CHECK(fp_curl_transient(CURLE_COULDNT_CONNECT));
  CHECK(fp_curl_transient(CURLE_RECV_ERROR));
  CHECK(fp_curl_transient(CURLE_PARTIAL_FILE));
  CHECK(fp_curl_transient(CURLE_OPERATION_TIMEDOUT));
  CHECK(!fp_curl_transient(CURLE_PEER_FAILED_VERIFICATION));
  CHECK(!fp_curl_transient(CURLE_WRITE_ERROR));
  CHECK(!fp_curl_transient(CURLE_UNSUPPORTED_PROTOCOL));
}

TEST(open_rejects_bad_names_and_maps_docker_hub)
{
  fpull_registry *r = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_registry_open(&r, "bad/name", NULL, &err), FPULL_EUSAGE);
  CHECK_NULL(r);
  CHECK_INT_EQ(fpull_registry_open(&r, "", NULL, &err), FPULL_EUSAGE);
  setenv("HOME", th_tmpdir(), 1);
  unsetenv("DOCKER_CONFIG");
  CHECK_INT_EQ(fpull_registry_open(&r, "docker.io", NULL, &err), 0);
  CHECK_STR_EQ(r->host, "registry-1.docker.io");
  CHECK_INT_EQ(r->neps, 1);
  CHECK_STR_EQ(r->eps[0].https_base, "https://registry-1.docker.io");
  CHECK_NULL(r->eps[0].http_base); /* never plain HTTP for a normal registry */
  CHECK_INT_EQ(r->eps[0].verify_tls, 1);
  fpull_registry_free(r);
}

TEST(loopback_and_insecure_allow_http_after_https)
{
  fpull_registry *r = NULL;
  fpull_err err = {0};
  setenv("HOME", th_tmpdir(), 1);
  CHECK_INT_EQ(fpull_registry_open(&r, "127.0.0.1:5000", NULL, &err), 0);
  CHECK_STR_EQ(r->eps[0].https_base, "https://127.0.0.1:5000");
  CHECK_STR_EQ(r->eps[0].http_base, "http://127.0.0.1:5000");
  CHECK_INT_EQ(r->eps[0].verify_tls, 0);
  fpull_registry_free(r);
  struct fpull_registry_opts o = {.version = FPULL_REGISTRY_OPTS_VERSION, .insecure = 1};
  CHECK_INT_EQ(fpull_registry_open(&r, "myreg.example:5000", &o, &err), 0);
  CHECK_STR_EQ(r->eps[0].http_base, "http://myreg.example:5000");
  fpull_registry_free(r);
  /* A name that merely resolves to loopback is not loopback. */
  CHECK_INT_EQ(fpull_registry_open(&r, "localhost.example", NULL, &err), 0);
  CHECK_NULL(r->eps[0].http_base);
  fpull_registry_free(r);
}

TEST(mirrors_in_order_then_registry)
{
  setenv("HOME", th_tmpdir(), 1);
  char *mirrors[] = {"https://m1.example/prefix/", "http://127.0.0.1:7000", "http://plain.example",
                     "m3.example:444", NULL};
  struct fpull_registry_opts o = {.version = FPULL_REGISTRY_OPTS_VERSION, .mirrors = mirrors};
  fpull_registry *r = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_registry_open(&r, "docker.io", &o, &err), 0);
  /* http://plain.example is dropped: plain HTTP only for insecure or loopback hosts. */
  CHECK_INT_EQ(r->neps, 4);
  CHECK_STR_EQ(r->eps[0].https_base, "https://m1.example/prefix");
  CHECK(r->eps[0].is_mirror);
  CHECK_NULL(r->eps[1].https_base);
  CHECK_STR_EQ(r->eps[1].http_base, "http://127.0.0.1:7000");
  CHECK_STR_EQ(r->eps[2].https_base, "https://m3.example:444");
  CHECK_STR_EQ(r->eps[3].https_base, "https://registry-1.docker.io");
  CHECK(!r->eps[3].is_mirror);
  fpull_registry_free(r);
}

TEST(http_mirror_allowed_when_its_host_is_insecure_in_the_config)
{
  setenv("HOME", th_tmpdir(), 1);
  char *mirrors[] = {"http://plain.example", NULL};
  char *insecure[] = {"plain.example", NULL};
  struct fpull_config cfg = {0};
  cfg.insecure_registries = insecure;
  struct fpull_registry_opts o = {
      .version = FPULL_REGISTRY_OPTS_VERSION, .mirrors = mirrors, .config = &cfg};
  fpull_registry *r = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_registry_open(&r, "docker.io", &o, &err), 0);
  CHECK_INT_EQ(r->neps, 2);
  CHECK_STR_EQ(r->eps[0].http_base, "http://plain.example");
  CHECK_INT_EQ(r->eps[0].verify_tls, 0);
  /* The registry itself stays secure: the mirror's entry is about the mirror. */
  CHECK_NULL(r->eps[1].http_base);
  fpull_registry_free(r);
}
