/* Request paths and Range headers of fpull serve (route.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "route.h"
#include "base/util.h"
#include "fpull/ref.h"

void sv_route_free(struct sv_route *r)
{
  free(r->registry);
  free(r->repository);
  free(r->reference);
  free(r->image);
  memset(r, 0, sizeof *r);
}

static int fail(const char **code, const char *c, char *msg, size_t msglen, int status,
                const char *what)
{
  *code = c;
  snprintf(msg, msglen, "%s", what);
  return status;
}

/* A first component that names a registry: what the reference rule reads as one. */
static int is_registry(const char *c, size_t n)
{
  return memchr(c, '.', n) || memchr(c, ':', n) || (n == 9 && memcmp(c, "localhost", 9) == 0);
}

/* The last "/manifests/" or "/blobs/" of s, whichever is later (a repository may have a
 * component of either name; the reference after it has no '/'). */
static const char *last_of(const char *s, const char *word)
{
  const char *found = NULL;
  for (const char *p = strstr(s, word); p; p = strstr(p + 1, word))
    found = p;
  return found;
}

int sv_route_parse(struct sv_route *r, const char *path, const char *ns, const char **code,
                   char *msg, size_t msglen)
{
  memset(r, 0, sizeof *r);
  if (strlen(path) > SV_PATH_MAX)
    return fail(code, "NAME_INVALID", msg, msglen, 400, "path too long");
  if (strcmp(path, "/v2") == 0 || strcmp(path, "/v2/") == 0) {
    r->kind = SV_BASE;
    return 0;
  }
  if (strncmp(path, "/v2/", 4) != 0)
    return fail(code, "UNSUPPORTED", msg, msglen, 404, "not a registry API path");
  const char *name = path + 4;
  const char *m = last_of(name, "/manifests/"), *b = last_of(name, "/blobs/");
  const char *sep = m > b ? m : b;
  if (!sep || sep == name)
    return fail(code, "UNSUPPORTED", msg, msglen, 404,
                "only /v2/, manifests and blobs are served (pull only)");
  r->kind = sep == m ? SV_MANIFEST : SV_BLOB;
  const char *ref = sep + (r->kind == SV_MANIFEST ? 11 : 7);
  if (!*ref || strchr(ref, '/'))
    return fail(code, "UNSUPPORTED", msg, msglen, 404,
                "only /v2/, manifests and blobs are served (pull only)");
  r->by_digest = strchr(ref, ':') != NULL;
  if (r->kind == SV_BLOB && !fpull_digest_valid(ref))
    return fail(code, "DIGEST_INVALID", msg, msglen, 400,
                "not a digest fpull verifies (sha256:64 hex, sha512:128 hex)");
  if (r->by_digest && !fpull_digest_valid(ref))
    return fail(code, "DIGEST_INVALID", msg, msglen, 400,
                "not a digest fpull verifies (sha256:64 hex, sha512:128 hex)");
  size_t name_len = (size_t)(sep - name);
  const char *repo = name;
  size_t repo_len = name_len;
  cleanup_free char *registry = NULL;
  if (ns && *ns) {
    if (strlen(ns) > 255)
      return fail(code, "NAME_INVALID", msg, msglen, 400, "not a registry name (ns)");
    registry = fp_xstrdup(ns);
  } else {
    const char *slash = memchr(name, '/', name_len);
    if (slash && is_registry(name, (size_t)(slash - name))) {
      registry = fp_xstrndup(name, (size_t)(slash - name));
      repo = slash + 1;
      repo_len = name_len - (size_t)(slash - name) - 1;
    } else {
      registry = fp_xstrdup("docker.io");
    }
  }
  if (strpbrk(registry, "/@ ") || !*registry)
    return fail(code, "NAME_INVALID", msg, msglen, 400, "not a registry name (ns)");
  /* The reference rule decides what is a repository name: no "..", no upper case, no empty
   * component, at most 255 characters (fpull_ref_parse). */
  cleanup_free char *text =
      fp_xasprintf("%s/%.*s%s%s", registry, (int)repo_len, repo, r->by_digest ? "@" : ":", ref);
  struct fpull_ref *parsed = NULL;
  fpull_err e = {0};
  if (fpull_ref_parse(&parsed, text, &e) != 0)
    return fail(code, "NAME_INVALID", msg, msglen, 400, e.msg);
  /* A registry name the rule does not read as one ("alpine" as ns) would have become part
   * of the repository: refused, never guessed. */
  if (strcmp(parsed->registry, registry) != 0 && strcmp(registry, "docker.io") != 0 &&
      !(strcmp(parsed->registry, "docker.io") == 0 &&
        (strcmp(registry, "index.docker.io") == 0 ||
         strcmp(registry, "registry-1.docker.io") == 0))) {
    fpull_ref_free(parsed);
    return fail(code, "NAME_INVALID", msg, msglen, 400, "not a registry name (ns)");
  }
  r->registry = fp_xstrdup(parsed->registry);
  r->repository = fp_xstrdup(parsed->repository);
  r->reference = fp_xstrdup(ref);
  r->image = fpull_ref_format(parsed);
  fpull_ref_free(parsed);
  if (!r->image) {
    sv_route_free(r);
    return fail(code, "NAME_INVALID", msg, msglen, 400, "bad reference");
  }
  return 0;
}

static int parse_u64(const char *s, const char *end, uint64_t *out)
{
  if (s == end || end - s > 19)
    return -1;
  uint64_t v = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  *out = v;
  return 0;
}

int sv_range_parse(const char *h, uint64_t size, uint64_t *start, uint64_t *len)
{
  if (!h)
    return 0;
  while (*h == ' ')
    h++;
  if (strncmp(h, "bytes=", 6) != 0)
    return 0; /* another unit: ignored (RFC 9110, 14.2) */
  h += 6;
  while (*h == ' ')
    h++;
  if (strchr(h, ','))
    return 0; /* several ranges: the whole blob instead, as the RFC allows */
  const char *dash = strchr(h, '-');
  if (!dash)
    return 0;
  const char *end = h + strlen(h);
  while (end > dash + 1 && end[-1] == ' ')
    end--;
  uint64_t a = 0, b = 0;
  if (dash == h) { /* bytes=-N: the last N bytes */
    if (parse_u64(dash + 1, end, &b) < 0)
      return 0;
    if (b == 0 || size == 0)
      return -1;
    if (b > size)
      b = size;
    *start = size - b;
    *len = b;
    return 1;
  }
  if (parse_u64(h, dash, &a) < 0)
    return 0;
  if (dash + 1 == end) {
    b = size ? size - 1 : 0;
  } else {
    if (parse_u64(dash + 1, end, &b) < 0 || b < a)
      return 0;
    if (b >= size)
      b = size - 1;
  }
  if (a >= size)
    return -1;
  *start = a;
  *len = b - a + 1;
  return 1;
}
