#include <string.h>
#include <strings.h>

#include "json_strict.h"
#include "base/util.h"

/* cJSON stops a string at an embedded NUL, Go keeps it: "mediaType\u0000x" would be a
 * different key for the registry than for us. */
static int has_nul(const char *bytes, size_t len)
{
  if (memchr(bytes, '\0', len))
    return 1;
  for (size_t i = 0; i + 1 < len; i++) {
    if (bytes[i] != '\\')
      continue;
    if (bytes[i + 1] == 'u' && i + 5 < len && memcmp(bytes + i + 2, "0000", 4) == 0)
      return 1;
    i++; /* skip the escaped character, so "\\u0000" is not taken for an escape */
  }
  return 0;
}

static int cmp_names(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_tree(const cJSON *j, int depth, const char *what, fpull_err *err)
{
  if (!cJSON_IsObject(j) && !cJSON_IsArray(j))
    return 0;
  if (depth > FP_JSON_MAX_DEPTH)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: JSON nested deeper than %d levels", what,
                         FP_JSON_MAX_DEPTH);
  size_t n = 0;
  for (const cJSON *c = j->child; c; c = c->next)
    n++;
  if (cJSON_IsObject(j) && n > 1) {
    /* Sorting keeps this O(n log n): a 4 MiB object can hold ~500k keys. */
    cleanup_free const char **names = fp_xcalloc(n, sizeof *names);
    size_t i = 0;
    for (const cJSON *c = j->child; c; c = c->next)
      names[i++] = c->string ? c->string : "";
    qsort(names, n, sizeof *names, cmp_names);
    for (i = 1; i < n; i++)
      if (strcmp(names[i - 1], names[i]) == 0)
        return fpull_err_set(err, FPULL_EINTEGRITY, "%s: duplicate JSON key \"%.64s\"", what,
                             names[i]);
  }
  for (const cJSON *c = j->child; c; c = c->next) {
    int r = check_tree(c, depth + 1, what, err);
    if (r)
      return r;
  }
  return 0;
}

int fp_json_parse_strict(cJSON **out, const char *bytes, size_t len, size_t max, const char *what,
                         fpull_err *err)
{
  *out = NULL;
  if (len > max)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: %zu bytes, more than the limit of %zu", what,
                         len, max);
  if (!bytes || len == 0)
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: empty document", what);
  if (has_nul(bytes, len))
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: NUL character in JSON", what);
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(bytes, len, &end, 0);
  if (!j) {
    size_t at = end && end >= bytes && end <= bytes + len ? (size_t)(end - bytes) : 0;
    return fpull_err_set(err, FPULL_EINTEGRITY, "%s: invalid JSON near byte %zu", what, at);
  }
  cleanup_json cJSON *owned = j;
  for (const char *p = end; p && p < bytes + len; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
      return fpull_err_set(err, FPULL_EINTEGRITY, "%s: data after the JSON value at byte %zu", what,
                           (size_t)(p - bytes));
  int r = check_tree(j, 1, what, err);
  if (r)
    return r;
  *out = steal_pointer(&owned);
  return 0;
}

int fp_json_member(const cJSON **out, const cJSON *obj, const char *key, const char *what,
                   fpull_err *err)
{
  *out = NULL;
  if (!cJSON_IsObject(obj))
    return 0;
  for (const cJSON *c = obj->child; c; c = c->next) {
    if (!c->string)
      continue;
    if (strcmp(c->string, key) == 0)
      *out = c;
    else if (strcasecmp(c->string, key) == 0)
      return fpull_err_set(err, FPULL_EINTEGRITY,
                           "%s: key \"%.64s\" differs from \"%s\" only in case", what, c->string,
                           key);
  }
  return 0;
}
