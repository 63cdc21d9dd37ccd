/* libFuzzer target: a token server's answer and a Retry-After value, both from servers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *token = NULL;
  int rc = fp_token_answer((const char *)data, size, &token);
  if ((rc == 0) != (token != NULL))
    abort(); /* a token exactly when it says so */
  for (const char *t = token; t && *t; t++)
    if ((unsigned char)*t < 0x21 || (unsigned char)*t > 0x7e)
      abort(); /* nothing that could end a header line */
  free(token);

  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  long ms = fp_retry_after_ms(s, 60000);
  if (ms < -1 || ms > 60000)
    abort();
  free(s);
  return 0;
}
