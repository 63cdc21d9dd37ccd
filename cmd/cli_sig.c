/* The signature options (--policy, --require-signatures, --signature-index) and how a
 * signature check is shown. */
#include <cjson/cJSON.h>
#include <string.h>

#include "cli.h"

static const char *const index_modes[] = {"instance", "either", "both", NULL};

int cli_sig_parse(const struct cli_cmd *cmd, enum cli_opt_id id, const char *arg,
                  struct cli_settings *s)
{
  if (id == OPT_POLICY) {
    s->policy = arg;
    return 0;
  }
  if (id == OPT_SIGN_KEY) {
    s->sign_key = arg;
    return 0;
  }
  if (id == OPT_SIGN_PASSPHRASE_FILE) {
    s->sign_passphrase_file = arg;
    return 0;
  }
  if (id == OPT_REQUIRE_SIGS) {
    s->require_signatures = 1;
    return 0;
  }
  for (size_t i = 0; index_modes[i]; i++)
    if (strcmp(arg, index_modes[i]) == 0) {
      s->signature_index = (int)i;
      return 0;
    }
  const char *near = fpull_suggest(arg, index_modes);
  fprintf(stderr, "fpull: %s: unknown --signature-index '%s'%s%s%s (instance, either or both)\n",
          cmd->name, arg, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
  return FPULL_EUSAGE;
}

void cli_sig_pull_opts(struct fpull_pull_opts *o, const struct cli_settings *s)
{
  o->policy = s->policy;
  o->require_signatures = s->require_signatures;
  o->signature_index = s->signature_index;
}

static void add(cJSON *o, const char *k, const char *v)
{
  if (v)
    cJSON_AddStringToObject(o, k, v);
  else
    cJSON_AddNullToObject(o, k);
}

void *cli_sig_json(const struct fpull_sig_check *c)
{
  if (!c)
    return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  add(o, "state", c->state);
  add(o, "scope", c->scope);
  add(o, "requirement", c->requirement);
  add(o, "key_fingerprint", c->key_fingerprint);
  add(o, "identity", c->identity);
  add(o, "digest", c->digest);
  add(o, "reason", c->reason);
  return o;
}

void cli_sig_say(const struct cli_settings *s, const char *what, const struct fpull_sig_check *c)
{
  /* A policy that accepts anything here says nothing worth a line. */
  if (!c || s->json || s->quiet || (!c->reason && strcmp(c->state, "accepted") == 0))
    return;
  if (c->key_fingerprint)
    fprintf(stderr, "%s: signature %s: %s, %s, key %s, identity %s, digest %s\n", what, c->state,
            c->scope, c->requirement, c->key_fingerprint, c->identity, c->digest);
  else
    fprintf(stderr, "%s: signature %s: %s, %s, digest %s\n", what, c->state, c->scope,
            c->requirement, c->digest);
}
