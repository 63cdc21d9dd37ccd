/* Fuzz target: reference parsing must never crash, and what it accepts must round-trip. */
#include <stdlib.h>
#include <string.h>

#include "fpull/ref.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  struct fpull_ref *r = NULL;
  if (fpull_ref_parse(&r, s, NULL) == 0) {
    char *n = fpull_ref_format(r);
    struct fpull_ref *r2 = NULL;
    /* The normalised form parses to the same reference. */
    if (fpull_ref_parse(&r2, n, NULL) != 0 || strcmp(r2->registry, r->registry) != 0 ||
        strcmp(r2->repository, r->repository) != 0)
      abort();
    fpull_ref_free(r2);
    free(n);
    (void)fpull_ref_host_is_loopback(r->registry);
  }
  fpull_ref_free(r);
  free(s);
  return 0;
}
