/* libFuzzer target: the reader of a .sqsh image's /.fpull/platform.json
 * (lib/sinks/sqfs_platform.c), the record of the entry the file was made from, which the
 * Slurm plugin reads from the user's file. Whatever the text, the result is all or nothing:
 * a parsed record has a valid manifest digest, an os and an architecture, and writes back
 * to a record that parses to the same; a refused one keeps nothing and says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/ref.h"
#include "sinks/sqfs_platform.h"

static int same(const char *a, const char *b)
{
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fp_sqfs_platform rec;
  fpull_err err = {0};
  if (fp_sqfs_platform_parse(&rec, (const char *)data, size, &err) != 0) {
    if (rec.manifest_digest || rec.platform.os || err.code != FPULL_EINTEGRITY || !err.msg[0])
      abort();
    return 0;
  }
  if (!fpull_digest_valid(rec.manifest_digest) || !rec.platform.os || !rec.platform.os[0] ||
      !rec.platform.architecture || !rec.platform.architecture[0])
    abort();
  char *json =
      fp_sqfs_platform_json(rec.reference, rec.index_digest, rec.manifest_digest, &rec.platform);
  struct fp_sqfs_platform again;
  if (fp_sqfs_platform_parse(&again, json, strlen(json), &err) != 0 ||
      !same(again.manifest_digest, rec.manifest_digest) ||
      !same(again.index_digest, rec.index_digest) || !same(again.reference, rec.reference) ||
      !same(again.platform.variant, rec.platform.variant))
    abort();
  fp_sqfs_platform_free(&again);
  free(json);
  fp_sqfs_platform_free(&rec);
  return 0;
}
