/* libFuzzer target: the manifest-spec parser, the feature-name checks and the index
 * built from what it produced. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/log.h"
#include "fpull/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fpull_spec *s = NULL;
  fpull_err err = {0};
  if (fpull_spec_parse(&s, (const char *)data, size, "fuzz.yaml", &err) != 0) {
    if (s || err.code != FPULL_EUSAGE || !err.msg[0])
      abort();
    return 0;
  }
  if (!s->image || s->n_entries == 0)
    abort();
  (void)fpull_spec_check_features(s, NULL);
  struct fpull_descriptor *d = calloc(s->n_entries, sizeof *d);
  for (size_t i = 0; i < s->n_entries; i++) {
    if (!s->entries[i].image || !s->entries[i].platform.os || !s->entries[i].platform.architecture)
      abort();
    d[i].media_type = "application/vnd.oci.image.manifest.v1+json";
    d[i].digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    d[i].size = 1;
    d[i].platform = &s->entries[i].platform;
  }
  size_t len = 0;
  char *bytes = fpull_index_build(d, s->n_entries, FPULL_PUSH_OCI, &len);
  if (!bytes || strlen(bytes) != len)
    abort();
  free(bytes);
  free(d);
  fpull_spec_free(s);
  return 0;
}
