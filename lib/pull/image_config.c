/* fpull config: the image configuration of the entry pull would choose, as its verified
 * bytes (like crane config), so that scripts see exactly what the image says. */
#include "resolve.h"
#include "base/util.h"
#include "fpull/manifest.h"

int fpull_image_config_get(char **json, size_t *len, const char *image,
                           const struct fpull_pull_opts *o, fpull_err *err)
{
  *json = NULL;
  *len = 0;
  struct fp_session s;
  struct fp_resolved r = {0};
  int rc = fp_session_open(&s, image, o, err);
  if (rc == 0)
    rc = fp_resolve(&s, &r, 0, err);
  /* fp_resolve put the config into the cache (or found it there) and verified it. */
  if (rc == 0)
    rc = fpull_cache_get_bytes(s.cache, r.manifest->config.digest, FPULL_MANIFEST_MAX, json, len,
                               err);
  if (rc && s.reference)
    fpull_err_prefix(err, "%s", s.reference);
  fp_resolved_free(&r);
  fp_session_close(&s);
  return rc;
}
