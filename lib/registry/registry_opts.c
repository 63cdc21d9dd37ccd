/* Registry options from the config file and the command line, in one place for every
 * caller (pull, inspect, manifest push and inspect). */
#include <string.h>

#include "fpull/config.h"
#include "fpull/registry.h"

void fpull_registry_opts_init(struct fpull_registry_opts *o, const char *registry,
                              const struct fpull_config *c, int insecure, const char *certs_dir)
{
  memset(o, 0, sizeof *o);
  o->version = FPULL_REGISTRY_OPTS_VERSION;
  o->insecure = insecure || fpull_config_is_insecure(c, registry);
  o->certs_dir = certs_dir;
  o->config_certs_dir = c ? c->certs_dir : NULL;
  o->mirrors = fpull_config_mirrors(c, registry);
  o->max_tries = c ? c->retries : 0;
  o->config = c;
}
