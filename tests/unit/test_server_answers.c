/* What servers send that the registry client reads outside the protocol's JSON documents:
 * a token server's answer and Retry-After. */
#include "harness.h"
#include "registry/registry_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int answer(const char *body, char **token)
{
  return fp_token_answer(body, strlen(body), token);
}

TEST(token_or_access_token)
{
  char *t = NULL;
  CHECK_INT_EQ(answer("{\"token\":\"abc.def\",\"access_token\":\"other\"}", &t), 0);
  CHECK_STR_EQ(t, "abc.def");
  free(t);
  /* An empty token is none: access_token is the next place (docker does the same). */
  CHECK_INT_EQ(answer("{\"token\":\"\",\"access_token\":\"x-y\"}", &t), 0);
  CHECK_STR_EQ(t, "x-y");
  free(t);
}

TEST(no_token_or_a_header_breaking_one_is_refused)
{
  static const char *const none[] = {
      "", "{}", "[]", "not json", "{\"token\":3}", "{\"token\":\"\"}", "{\"access_token\":null}"};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
    char *t = (char *)"left";
    CHECK_INT_EQ(answer(none[i], &t), FP_TOKEN_NONE);
    CHECK_NULL(t);
  }
  static const char *const unsafe[] = {"{\"token\":\"a\\r\\nX-Evil: 1\"}", "{\"token\":\"a b\"}",
                                       "{\"token\":\"\\u00e9\"}", "{\"token\":\"a\\u0000b\"}"};
  for (size_t i = 0; i < sizeof unsafe / sizeof unsafe[0]; i++) {
    char *t = (char *)"left";
    int rc = answer(unsafe[i], &t);
    /* cJSON ends a string at an escaped NUL: "a" is then the whole token, which is safe. */
    if (strstr(unsafe[i], "u0000")) {
      CHECK_INT_EQ(rc, 0);
      CHECK_STR_EQ(t, "a");
      free(t);
      continue;
    }
    CHECK_INT_EQ(rc, FP_TOKEN_UNSAFE);
    CHECK_NULL(t);
  }
}

TEST(retry_after_seconds_are_bounded_without_overflow)
{
  CHECK_INT_EQ(fp_retry_after_ms("2", 60000), 2000);
  CHECK_INT_EQ(fp_retry_after_ms("0", 60000), 0);
  CHECK_INT_EQ(fp_retry_after_ms("120", 60000), 60000);
  /* Before: strtol's LONG_MAX times 1000, a signed overflow (UBSan), then any value. */
  CHECK_INT_EQ(fp_retry_after_ms("99999999999999999999", 60000), 60000);
  CHECK_INT_EQ(fp_retry_after_ms("9223372036854775", 60000), 60000);
  CHECK_INT_EQ(fp_retry_after_ms("", 60000), -1);
  CHECK_INT_EQ(fp_retry_after_ms("soon", 60000), -1);
  CHECK_INT_EQ(fp_retry_after_ms("-5", 60000), -1);
}

TEST(retry_after_dates)
{
  char when[64];
  time_t t = time(NULL) + 30;
  strftime(when, sizeof when, "%a, %d %b %Y %H:%M:%S GMT", gmtime(&t));
  long ms = fp_retry_after_ms(when, 60000);
  CHECK(ms > 25000 && ms <= 30000);
  CHECK_INT_EQ(fp_retry_after_ms("Wed, 21 Oct 2099 07:28:00 GMT", 60000), 60000);
  /* A date gone by: the usual backoff, not a retry at once. */
  CHECK_INT_EQ(fp_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT", 60000), -1);
}
