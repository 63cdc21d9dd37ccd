/* The limits of fpull cache prune, as people write them: sizes ("10G", "500M") and durations
 * ("7d", "12h"). A value that is not clearly one of them is refused, never guessed at: a
 * typo in a limit would remove what was meant to stay. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "fpull/cache.h"

/* Digits with an optional fraction, read without the locale (whose decimal point may be a
 * comma). Returns the characters read, 0 when there is no number. */
static size_t read_number(const char *p, long double *v)
{
  size_t n = strspn(p, "0123456789");
  if (n == 0)
    return 0;
  long double x = 0;
  for (size_t i = 0; i < n; i++)
    x = x * 10 + (p[i] - '0');
  if (p[n] == '.' && isdigit((unsigned char)p[n + 1])) {
    long double scale = 1;
    size_t k = n + 1;
    for (; isdigit((unsigned char)p[k]); k++) {
      scale /= 10;
      x += (p[k] - '0') * scale;
    }
    n = k;
  }
  *v = x;
  return n;
}

static int lower_eq(const char *a, const char *b)
{
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != *b)
      return 0;
  return *a == *b;
}

int fpull_cache_parse_size(int64_t *out, const char *text, fpull_err *err)
{
  static const char units[] = "bkmgtp";
  const char *expect = "a size such as 10G, 500M or 1.5T (K, M, G, T, P: powers of 1024)";
  *out = 0;
  const char *p = text ? text : "";
  long double v = 0;
  size_t n = read_number(p, &v);
  if (n == 0)
    return fpull_err_set(err, FPULL_EUSAGE, "'%s' is not %s", p, expect);
  const char *u = p + n;
  if (!*u && v == 0)
    return 0;
  if (!*u)
    return fpull_err_set(err, FPULL_EUSAGE, "'%s' has no unit (did you mean '%.*sM' or '%.*sG'?)",
                         p, (int)n, p, (int)n, p);
  const char *k = strchr(units, tolower((unsigned char)*u));
  if (!k)
    return fpull_err_set(err, FPULL_EUSAGE, "'%s' is not %s", p, expect);
  const char *rest = u + 1;
  if (!(*rest == '\0' || (*k != 'b' && (lower_eq(rest, "b") || lower_eq(rest, "ib")))))
    return fpull_err_set(err, FPULL_EUSAGE, "'%s' is not %s (did you mean '%.*s%c'?)", p, expect,
                         (int)n, p, toupper((unsigned char)*u));
  long double bytes = v;
  for (const char *s = units; s < k; s++)
    bytes *= 1024;
  if (bytes >= (long double)INT64_MAX)
    return fpull_err_set(err, FPULL_EUSAGE, "'%s' is too large a size", p);
  *out = (int64_t)bytes;
  return 0;
}

/* The unit a word means ("days" -> 'd'), 0 when none. */
static char unit_of_word(const char *w, size_t n)
{
  static const struct {
    const char *word;
    char unit;
  } words[] = {{"s", 's'},    {"sec", 's'},  {"secs", 's'}, {"second", 's'}, {"seconds", 's'},
               {"m", 'm'},    {"min", 'm'},  {"mins", 'm'}, {"minute", 'm'}, {"minutes", 'm'},
               {"h", 'h'},    {"hr", 'h'},   {"hrs", 'h'},  {"hour", 'h'},   {"hours", 'h'},
               {"d", 'd'},    {"day", 'd'},  {"days", 'd'}, {"w", 'w'},      {"wk", 'w'},
               {"week", 'w'}, {"weeks", 'w'}};
  char low[16];
  if (n >= sizeof low)
    return 0;
  for (size_t i = 0; i < n; i++)
    low[i] = (char)tolower((unsigned char)w[i]);
  low[n] = '\0';
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcmp(low, words[i].word) == 0)
      return words[i].unit;
  return 0;
}

int fpull_cache_parse_duration(int64_t *out, const char *text, fpull_err *err)
{
  const char *expect = "a duration such as 7d, 12h or 30m (s, m, h, d, w; 1d12h)";
  *out = 0;
  const char *p = text ? text : "";
  if (!*p)
    return fpull_err_set(err, FPULL_EUSAGE, "'' is not %s", expect);
  long double total = 0;
  for (const char *q = p; *q;) {
    size_t n = strspn(q, "0123456789");
    if (n == 0)
      return fpull_err_set(err, FPULL_EUSAGE, "'%s' is not %s", p, expect);
    const char *u = q + n;
    size_t w = 0;
    while (isalpha((unsigned char)u[w]))
      w++;
    if (w == 0 && !*u)
      return fpull_err_set(err, FPULL_EUSAGE, "'%s' has no unit (did you mean '%.*sd'?)", p,
                           (int)(u - p), p);
    char unit = unit_of_word(u, w);
    if (w != 1 || unit != *u) {
      /* "7days", "12H": clear enough to name, never to accept. Months are not a unit. */
      if (unit)
        return fpull_err_set(err, FPULL_EUSAGE, "'%s' is not %s (did you mean '%.*s%c'?)", p,
                             expect, (int)(u - p), p, unit);
      return fpull_err_set(err, FPULL_EUSAGE, "'%s' is not %s", p, expect);
    }
    long double v = 0;
    for (size_t i = 0; i < n; i++)
      v = v * 10 + (q[i] - '0');
    static const char units[] = "smhdw";
    static const long double secs[] = {1, 60, 3600, 86400, 604800};
    total += v * secs[strchr(units, unit) - units];
    q = u + 1;
  }
  if (total >= (long double)INT64_MAX / 2)
    return fpull_err_set(err, FPULL_EUSAGE, "'%s' is too long a duration", p);
  *out = (int64_t)total;
  return 0;
}
