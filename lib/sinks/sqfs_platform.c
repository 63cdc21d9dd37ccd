/* /.fpull/platform.json of a SquashFS output (sqfs_platform.h). */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "fpull/ref.h"
#include "registry/json_strict.h"
#include "registry/platform.h"
#include "sqfs_platform.h"

static const cJSON *mem(const cJSON *o, const char *key)
{
  return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static void add_strv(cJSON *o, const char *key, char *const *v)
{
  if (!v)
    return;
  cJSON *a = cJSON_AddArrayToObject(o, key);
  for (size_t i = 0; v[i]; i++)
    cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
}

char *fp_sqfs_platform_json(const char *reference, const char *index_digest,
                            const char *manifest_digest, const struct fpull_platform *p)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "mediaType", FP_SQFS_PLATFORM_TYPE);
  if (reference)
    cJSON_AddStringToObject(j, "reference", reference);
  if (index_digest)
    cJSON_AddStringToObject(j, "index", index_digest);
  cJSON_AddStringToObject(j, "manifest", manifest_digest ? manifest_digest : "");
  cJSON *pl = cJSON_AddObjectToObject(j, "platform");
  cJSON_AddStringToObject(pl, "os", p && p->os ? p->os : "");
  cJSON_AddStringToObject(pl, "architecture", p && p->architecture ? p->architecture : "");
  if (p && p->variant)
    cJSON_AddStringToObject(pl, "variant", p->variant);
  if (p && p->os_version)
    cJSON_AddStringToObject(pl, "os.version", p->os_version);
  if (p)
    add_strv(pl, "os.features", p->os_features);
  if (p)
    add_strv(pl, "features", p->features);
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  if (!text)
    abort();
  char *line = fp_xasprintf("%s\n", text);
  cJSON_free(text);
  return line;
}

static int bad(fpull_err *err, const char *what)
{
  return fpull_err_set(err, FPULL_EINTEGRITY, "%s: %s", FP_SQFS_PLATFORM_PATH, what);
}

int fp_sqfs_platform_parse(struct fp_sqfs_platform *out, const char *text, size_t len,
                           fpull_err *err)
{
  memset(out, 0, sizeof *out);
  if (len > FP_SQFS_PLATFORM_MAX)
    return bad(err, "larger than 64 KiB");
  cleanup_json cJSON *j = NULL;
  int rc = fp_json_parse_strict(&j, text, len, FP_SQFS_PLATFORM_MAX, FP_SQFS_PLATFORM_PATH, err);
  if (rc)
    return rc;
  if (!cJSON_IsObject(j))
    return bad(err, "not a JSON object");
  const char *type = cJSON_GetStringValue(mem(j, "mediaType"));
  if (!type || strcmp(type, FP_SQFS_PLATFORM_TYPE) != 0)
    return bad(err, "mediaType is not " FP_SQFS_PLATFORM_TYPE);
  const char *manifest = cJSON_GetStringValue(mem(j, "manifest"));
  if (!manifest || !fpull_digest_valid(manifest))
    return bad(err, "\"manifest\" is not a digest");
  const cJSON *index = mem(j, "index");
  if (index && (!cJSON_IsString(index) || !fpull_digest_valid(index->valuestring)))
    return bad(err, "\"index\" is not a digest");
  const cJSON *pl = mem(j, "platform");
  const char *os = cJSON_GetStringValue(mem(pl, "os"));
  const char *arch = cJSON_GetStringValue(mem(pl, "architecture"));
  if (!cJSON_IsObject(pl) || !os || !*os || !arch || !*arch)
    return bad(err, "no platform with os and architecture");
  /* The platform through the registry's reader (index entries use it), bounded; one
   * message here for every member that it or the reference refuses. */
  const cJSON *reference = mem(j, "reference");
  struct fp_sqfs_platform p = {0};
  fpull_err perr = {0};
  if ((reference && !cJSON_IsString(reference)) ||
      fp_platform_read(&p.platform, pl, FP_SQFS_PLATFORM_PATH, FP_SQFS_PLATFORM_FEATURES_MAX,
                       &perr))
    return bad(err, "a member of the wrong type or a list too long");
  p.manifest_digest = fp_xstrdup(manifest);
  p.index_digest = index ? fp_xstrdup(index->valuestring) : NULL;
  p.reference = reference ? fp_xstrdup(reference->valuestring) : NULL;
  *out = p;
  return 0;
}

void fp_sqfs_platform_free(struct fp_sqfs_platform *p)
{
  free(p->reference);
  free(p->index_digest);
  free(p->manifest_digest);
  fp_platform_clear(&p->platform);
  memset(p, 0, sizeof *p);
}
