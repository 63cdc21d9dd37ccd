/* libFuzzer target: the config file parser, plus the lookups on what it produced. */
#include <stdint.h>
#include <stdlib.h>

#include "fpull/config.h"
#include "fpull/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fpull_config *c = NULL;
  fpull_err err = {0};
  if (fpull_config_parse(&c, (const char *)data, size, "fuzz.yaml", &err) == 0) {
    (void)fpull_config_mirrors(c, "docker.io");
    (void)fpull_config_is_insecure(c, "127.0.0.1:5000");
    (void)fpull_config_is_insecure(c, "[::1]:5000");
    for (size_t i = 0; i < c->n_cpu_tags; i++)
      if (!c->cpu_tags[i].name || !c->cpu_tags[i].architecture || !c->cpu_tags[i].isa)
        abort();
    fpull_config_free(c);
  } else if (c || err.code != FPULL_EUSAGE || !err.msg[0]) {
    abort();
  }
  return 0;
}
