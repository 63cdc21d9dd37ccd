/* libFuzzer target: the WWW-Authenticate parser (a registry's 401 is attacker-controlled). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry/wwwauth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  struct fp_challenges cs;
  fpull_err err = {0};
  if (fp_wwwauth_parse(s, &cs, &err) == 0) {
    for (size_t i = 0; i < cs.n; i++) {
      (void)fp_challenge_param(&cs.v[i], "realm");
      (void)fp_challenge_param(&cs.v[i], "service");
    }
    (void)fp_challenges_find(&cs, "bearer");
    fp_challenges_free(&cs);
  } else if (cs.n != 0 || err.msg[0] == '\0') {
    abort(); /* a failure must leave nothing behind and say why */
  }
  free(s);
  return 0;
}
