/* Strict JSON for registry documents: cJSON plus the checks that keep fpull reading the
 * same document the registry and other Go clients read (security.md 4.4). */
#ifndef FP_JSON_STRICT_H
#define FP_JSON_STRICT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "fpull/error.h"

/* Deepest nesting of objects and arrays accepted in registry documents. */
#define FP_JSON_MAX_DEPTH 64

/* Parses exactly bytes[0..len): at most max bytes, one value with only whitespace after
 * it, no NUL bytes or \u0000 escapes (cJSON would cut the string there), nesting at most
 * FP_JSON_MAX_DEPTH, no object with the same key twice at any depth. what names the
 * document in messages. Errors: FPULL_EINTEGRITY. */
int fp_json_parse_strict(cJSON **out, const char *bytes, size_t len, size_t max, const char *what,
                         fpull_err *err);

/* Member key of object obj, or NULL. A member whose name differs from key only in case is
 * refused: Go's encoding/json would match it to the same field. Errors: FPULL_EINTEGRITY. */
int fp_json_member(const cJSON **out, const cJSON *obj, const char *key, const char *what,
                   fpull_err *err);

static inline void fp_json_deletep(cJSON **j)
{
  if (*j)
    cJSON_Delete(*j);
}
#define cleanup_json __attribute__((cleanup(fp_json_deletep)))

#endif
