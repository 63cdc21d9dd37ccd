/* fpull serve's request routing (which registry a request means, the way each engine asks
 * a mirror) and its Range header. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "serve/route.h"

#define D64 "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int route(struct sv_route *r, const char *path, const char *ns)
{
  const char *code = NULL;
  char msg[256];
  return sv_route_parse(r, path, ns, &code, msg, sizeof msg);
}

TEST(containerd_ns_names_the_registry)
{
  struct sv_route r;
  CHECK_INT_EQ(route(&r, "/v2/qnib/cv-tf/manifests/1.12.0-rev9", "docker.io"), 0);
  CHECK_INT_EQ(r.kind, SV_MANIFEST);
  CHECK_STR_EQ(r.registry, "docker.io");
  CHECK_STR_EQ(r.repository, "qnib/cv-tf");
  CHECK_STR_EQ(r.image, "docker.io/qnib/cv-tf:1.12.0-rev9");
  sv_route_free(&r);
  CHECK_INT_EQ(route(&r, "/v2/hpc/app/blobs/" D64, "127.0.0.1:5000"), 0);
  CHECK_INT_EQ(r.kind, SV_BLOB);
  CHECK_STR_EQ(r.registry, "127.0.0.1:5000");
  CHECK_STR_EQ(r.reference, D64);
  sv_route_free(&r);
  /* A word that is no registry by the reference rule is refused, never guessed. */
  CHECK_INT_EQ(route(&r, "/v2/hpc/app/manifests/v1", "alpine"), 400);
  sv_route_free(&r);
}

TEST(podman_first_component_and_docker_default)
{
  struct sv_route r;
  CHECK_INT_EQ(route(&r, "/v2/quay.io/org/app/manifests/v1", NULL), 0);
  CHECK_STR_EQ(r.registry, "quay.io");
  CHECK_STR_EQ(r.repository, "org/app");
  sv_route_free(&r);
  CHECK_INT_EQ(route(&r, "/v2/localhost/app/manifests/v1", NULL), 0);
  CHECK_STR_EQ(r.registry, "localhost");
  sv_route_free(&r);
  CHECK_INT_EQ(route(&r, "/v2/alpine/manifests/3", NULL), 0);
  CHECK_STR_EQ(r.registry, "docker.io");
  CHECK_STR_EQ(r.repository, "library/alpine");
  sv_route_free(&r);
  CHECK_INT_EQ(route(&r, "/v2/qnib/cv-tf/manifests/" D64, NULL), 0);
  CHECK_STR_EQ(r.repository, "qnib/cv-tf");
  CHECK_INT_EQ(r.by_digest, 1);
  sv_route_free(&r);
  /* A repository may have a component called manifests; the last one separates. */
  CHECK_INT_EQ(route(&r, "/v2/a/manifests/b/manifests/v1", NULL), 0);
  CHECK_STR_EQ(r.repository, "a/manifests/b");
  sv_route_free(&r);
  CHECK_INT_EQ(route(&r, "/v2/", NULL), 0);
  CHECK_INT_EQ(r.kind, SV_BASE);
  sv_route_free(&r);
}

TEST(bad_paths_are_4xx)
{
  const char *bad[] = {"/v2/../etc/manifests/x", "/v2/a/blobs/sha256:abc",
                       "/v2/a/blobs/latest",     "/v2/A/manifests/x",
                       "/v2/_catalog",           "/etc/passwd",
                       "/v2/a/manifests/",       "/v2/a/manifests/x/y",
                       "/v2//manifests/x",       NULL};
  for (size_t i = 0; bad[i]; i++) {
    struct sv_route r;
    int st = route(&r, bad[i], NULL);
    CHECK(st >= 400 && st < 500);
    sv_route_free(&r);
  }
}

TEST(ranges)
{
  uint64_t start = 0, len = 0;
  CHECK_INT_EQ(sv_range_parse(NULL, 100, &start, &len), 0);
  CHECK_INT_EQ(sv_range_parse("bytes=10-19", 100, &start, &len), 1);
  CHECK_INT_EQ(start, 10);
  CHECK_INT_EQ(len, 10);
  CHECK_INT_EQ(sv_range_parse("bytes=90-", 100, &start, &len), 1);
  CHECK_INT_EQ(len, 10);
  CHECK_INT_EQ(sv_range_parse("bytes=-5", 100, &start, &len), 1);
  CHECK_INT_EQ(start, 95);
  CHECK_INT_EQ(sv_range_parse("bytes=50-500", 100, &start, &len), 1);
  CHECK_INT_EQ(len, 50);
  CHECK_INT_EQ(sv_range_parse("bytes=100-", 100, &start, &len), -1);
  CHECK_INT_EQ(sv_range_parse("bytes=-0", 100, &start, &len), -1);
  /* Several ranges, another unit, nonsense: the whole blob. */
  CHECK_INT_EQ(sv_range_parse("bytes=0-1,5-6", 100, &start, &len), 0);
  CHECK_INT_EQ(sv_range_parse("items=0-1", 100, &start, &len), 0);
  CHECK_INT_EQ(sv_range_parse("bytes=9-2", 100, &start, &len), 0);
  CHECK_INT_EQ(sv_range_parse("bytes=99999999999999999999-", 100, &start, &len), 0);
}
