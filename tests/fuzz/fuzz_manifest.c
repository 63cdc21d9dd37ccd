/* libFuzzer target: every parser of registry documents on the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/manifest.h"

static void walk_platform(const struct fpull_platform *p)
{
  struct fpull_platform *d = fpull_platform_dup(p);
  if (d && (!d->os || !d->architecture))
    abort(); /* platforms always carry os and architecture, empty at worst */
  fpull_platform_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *bytes = (const char *)data;
  static const char *const types[] = {NULL, FPULL_MT_OCI_INDEX, FPULL_MT_DOCKER_MANIFEST,
                                      "application/json"};
  fpull_err err = {0};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    int kind = -1;
    int r = fpull_doc_kind(&kind, bytes, size, types[t], &err);
    if (r == 0 && (kind < FPULL_DOC_UNKNOWN || kind > FPULL_DOC_SCHEMA1))
      abort();

    struct fpull_index *idx = NULL;
    if (fpull_index_parse(&idx, bytes, size, types[t], &err) == 0) {
      if (r != 0 || kind != FPULL_DOC_INDEX)
        abort(); /* the parser must agree with the classifier */
      for (size_t i = 0; i < idx->n_manifests; i++) {
        if (!idx->manifests[i].digest || strlen(idx->manifests[i].digest) != 71 ||
            idx->manifests[i].size < 0)
          abort();
        walk_platform(idx->manifests[i].platform);
      }
    }
    fpull_index_free(idx);

    struct fpull_manifest *m = NULL;
    if (fpull_manifest_parse(&m, bytes, size, types[t], &err) == 0) {
      if (r != 0 || kind != FPULL_DOC_MANIFEST)
        abort();
      for (size_t i = 0; i < m->n_layers; i++)
        (void)fpull_layer_compression(m->layers[i].media_type);
    }
    fpull_manifest_free(m);
  }

  struct fpull_image_config *c = NULL;
  if (fpull_image_config_parse(&c, bytes, size, &err) == 0 && !c->diff_ids)
    abort();
  fpull_image_config_free(c);

  char *d = fpull_digest_of(data, size);
  free(d);
  return 0;
}
