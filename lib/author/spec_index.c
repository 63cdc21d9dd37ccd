/* The index document that `manifest push` uploads, built from resolved entries. Kept
 * apart from push.c so that it can be tested without a registry. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/spec.h"
#include "base/util.h"

static cJSON *strv_json(char *const *v)
{
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; v && v[i]; i++)
    cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
  return a;
}

/* Field order follows the image-spec's examples; features keep the spec's order. */
static cJSON *platform_json(const struct fpull_platform *p)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "architecture", p->architecture ? p->architecture : "");
  cJSON_AddStringToObject(o, "os", p->os ? p->os : "");
  if (p->os_version)
    cJSON_AddStringToObject(o, "os.version", p->os_version);
  if (p->os_features)
    cJSON_AddItemToObject(o, "os.features", strv_json(p->os_features));
  if (p->variant)
    cJSON_AddStringToObject(o, "variant", p->variant);
  if (p->features)
    cJSON_AddItemToObject(o, "features", strv_json(p->features));
  return o;
}

char *fpull_index_build(const struct fpull_descriptor *entries, size_t n, int type, size_t *len)
{
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "schemaVersion", 2);
  cJSON_AddStringToObject(root, "mediaType",
                          type == FPULL_PUSH_DOCKER ? FPULL_MT_DOCKER_LIST : FPULL_MT_OCI_INDEX);
  cJSON *list = cJSON_AddArrayToObject(root, "manifests");
  for (size_t i = 0; i < n; i++) {
    const struct fpull_descriptor *d = &entries[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "mediaType", d->media_type);
    cJSON_AddStringToObject(o, "digest", d->digest);
    /* cJSON keeps numbers as doubles: exact up to 2^53 bytes, far beyond any manifest. */
    cJSON_AddNumberToObject(o, "size", (double)d->size);
    if (d->platform)
      cJSON_AddItemToObject(o, "platform", platform_json(d->platform));
    cJSON_AddItemToArray(list, o);
  }
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text)
    abort();
  *len = strlen(text);
  return text;
}
