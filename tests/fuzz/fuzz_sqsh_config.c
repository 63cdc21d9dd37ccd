/* libFuzzer target: the Slurm plugin's readers of a .sqsh image's /etc/environment and
 * /etc/rc (contrib/slurm/runner/sqsh_config.c), which are the user's files. The first byte picks
 * the reader; whatever the text, the result is all or nothing: a parsed rc has an absolute
 * working directory and vectors, a refused one leaves nothing and says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sqsh_config.h"
#include "base/util.h"

static void check_vector(char **v)
{
  for (size_t i = 0; v && v[i]; i++)
    if (strlen(v[i]) > FP_SLURM_SQSH_FILE_MAX)
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  struct fp_slurm_sqsh_config c = {0};
  fpull_err err = {0};
  if (data[0] & 1) {
    int rc = fp_slurm_sqsh_env_parse(&c, text, len, &err);
    if (rc ? (c.env || err.code != FPULL_EUNSAFE || !err.msg[0]) : err.code != 0)
      abort();
    for (size_t i = 0; c.env && c.env[i]; i++)
      if (!strchr(c.env[i], '=') || strchr(c.env[i], '\n'))
        abort();
    check_vector(c.host_refs);
  } else {
    int rc = fp_slurm_sqsh_rc_parse(&c, text, len, &err);
    if (rc && (c.has_rc || c.workdir || c.entrypoint || err.code != FPULL_EUNSAFE || !err.msg[0]))
      abort();
    if (!rc && (!c.has_rc || !c.workdir || c.workdir[0] != '/' || !c.entrypoint || !c.cmd))
      abort();
    check_vector(c.entrypoint);
    check_vector(c.cmd);
  }
  fp_slurm_sqsh_config_free(&c);
  return 0;
}
