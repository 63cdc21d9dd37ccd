/* Fuzz target: what a client of fpull serve sends besides what libmicrohttpd parses (the
 * path, containerd's ?ns=, the Range header) must never crash; a route accepted names a
 * registry and a repository the reference rule accepts, and a range lies within the blob.
 * Input: PATH \n NS \n RANGE (NS empty: none); the blob's size is the input's length
 * times 1000. */
#include <stdlib.h>
#include <string.h>

#include "serve/route.h"
#include "fpull/ref.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  char *path = s, *ns = NULL, *range = NULL;
  char *nl = strchr(path, '\n');
  if (nl) {
    *nl = '\0';
    ns = nl + 1;
    nl = strchr(ns, '\n');
    if (nl) {
      *nl = '\0';
      range = nl + 1;
    }
  }
  struct sv_route r;
  const char *code = NULL;
  char msg[256];
  int status = sv_route_parse(&r, path, ns && *ns ? ns : NULL, &code, msg, sizeof msg);
  if (status == 0 && r.kind != SV_BASE) {
    if (!r.registry || !*r.registry || !r.repository || strstr(r.repository, "..") ||
        strstr(r.repository, "//") || r.repository[0] == '/' || !r.image)
      abort();
    if ((r.kind == SV_BLOB || r.by_digest) && !fpull_digest_valid(r.reference))
      abort();
    struct fpull_ref *ref = NULL;
    if (fpull_ref_parse(&ref, r.image, NULL) != 0)
      abort();
    fpull_ref_free(ref);
  } else if (status != 0 && (status < 400 || status > 499 || !code)) {
    abort();
  }
  sv_route_free(&r);
  uint64_t blob = (uint64_t)size * 1000, start = 0, len = 0;
  int k = sv_range_parse(range, blob, &start, &len);
  if (k == 1 && (len == 0 || start >= blob || len > blob - start))
    abort();
  free(s);
  return 0;
}
