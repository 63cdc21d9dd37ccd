#include "harness.h"
#include "registry/wwwauth.h"

#include <stdlib.h>

static struct fp_challenges parse_ok(const char *h)
{
  struct fp_challenges cs;
  fpull_err err = {0};
  int rc = fp_wwwauth_parse(h, &cs, &err);
  if (rc)
    th_fail(__FILE__, __LINE__, "parse of [%s] failed: %s", h, err.msg);
  return cs;
}

static void parse_bad(const char *h, const char *why)
{
  struct fp_challenges cs;
  fpull_err err = {0};
  int rc = fp_wwwauth_parse(h, &cs, &err);
  if (rc != FPULL_ENET)
    th_fail(__FILE__, __LINE__, "parse of [%s] gave %d, expected FPULL_ENET", h, rc);
  CHECK_INT_EQ(cs.n, 0);
  CHECK_CONTAINS(err.msg, "malformed WWW-Authenticate");
  CHECK_CONTAINS(err.msg, why);
}

TEST(bearer_docker_hub)
{
  struct fp_challenges cs =
      parse_ok("Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
               "scope=\"repository:library/ubuntu:pull\"");
  CHECK_INT_EQ(cs.n, 1);
  CHECK_STR_EQ(cs.v[0].scheme, "bearer");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "realm"), "https://auth.docker.io/token");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "service"), "registry.docker.io");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "scope"), "repository:library/ubuntu:pull");
  CHECK_NULL(fp_challenge_param(&cs.v[0], "error"));
  fp_challenges_free(&cs);
}

TEST(scheme_and_keys_case_insensitive_values_kept)
{
  struct fp_challenges cs = parse_ok("BEARER Realm=\"https://H/Token\" , SERVICE=Svc");
  CHECK_STR_EQ(cs.v[0].scheme, "bearer");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "realm"), "https://H/Token");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "service"), "Svc");
  fp_challenges_free(&cs);
}

TEST(basic_realm)
{
  struct fp_challenges cs = parse_ok("Basic realm=\"fpull-test\"");
  CHECK_INT_EQ(cs.n, 1);
  CHECK_STR_EQ(cs.v[0].scheme, "basic");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "realm"), "fpull-test");
  fp_challenges_free(&cs);
}

TEST(bare_scheme)
{
  struct fp_challenges cs = parse_ok("Basic");
  CHECK_INT_EQ(cs.n, 1);
  CHECK_STR_EQ(cs.v[0].scheme, "basic");
  CHECK_NULL(cs.v[0].params);
  fp_challenges_free(&cs);
}

TEST(several_challenges)
{
  struct fp_challenges cs =
      parse_ok("Newauth realm=\"apps\", type=1, title=\"Login to \\\"apps\\\"\", Basic "
               "realm=\"simple\", Bearer realm=\"https://t/x\",service=\"s\"");
  CHECK_INT_EQ(cs.n, 3);
  CHECK_STR_EQ(cs.v[0].scheme, "newauth");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "type"), "1");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "title"), "Login to \"apps\"");
  CHECK_STR_EQ(cs.v[1].scheme, "basic");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[1], "realm"), "simple");
  const struct fp_challenge *b = fp_challenges_find(&cs, "bearer");
  CHECK(b != NULL);
  CHECK_STR_EQ(fp_challenge_param(b, "service"), "s");
  CHECK(fp_challenges_find(&cs, "digest") == NULL);
  fp_challenges_free(&cs);
}

TEST(quoted_escapes_and_commas)
{
  struct fp_challenges cs =
      parse_ok("Bearer realm=\"https://t/a,b\",scope=\"repository:a/b:pull,push\",x=\"\\\\\"");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "realm"), "https://t/a,b");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "scope"), "repository:a/b:pull,push");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "x"), "\\");
  fp_challenges_free(&cs);
}

TEST(empty_quoted_value)
{
  struct fp_challenges cs = parse_ok("Bearer realm=\"\"");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "realm"), "");
  fp_challenges_free(&cs);
}

TEST(token68)
{
  struct fp_challenges cs = parse_ok("Negotiate abc+/x==, Basic realm=r");
  CHECK_INT_EQ(cs.n, 2);
  CHECK_STR_EQ(cs.v[0].token68, "abc+/x==");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[1], "realm"), "r");
  fp_challenges_free(&cs);
}

TEST(error_param_from_expired_token)
{
  struct fp_challenges cs = parse_ok("Bearer realm=\"https://t/token\",service=\"s\","
                                     "scope=\"repository:x:pull\",error=\"invalid_token\"");
  CHECK_STR_EQ(fp_challenge_param(&cs.v[0], "error"), "invalid_token");
  fp_challenges_free(&cs);
}

TEST(malformed_unterminated_quote)
{
  parse_bad("Bearer realm=\"https://t/token", "unterminated");
}

TEST(malformed_duplicate_parameter)
{
  parse_bad("Bearer realm=\"https://a/\",realm=\"https://b/\"", "twice");
}

TEST(malformed_missing_value)
{
  parse_bad("Bearer realm=,service=x", "unexpected");
}

TEST(malformed_no_scheme)
{
  parse_bad("=\"x\"", "scheme");
  parse_bad("", "no challenge");
  parse_bad(" , ,", "no challenge");
}

TEST(malformed_control_characters)
{
  parse_bad("Bearer realm=\"a\r\nX-Evil: 1\"", "control character");
  parse_bad("Bearer realm=\"a\001\"", "control character");
}

TEST(malformed_garbage_after_parameter)
{
  parse_bad("Bearer realm=\"x\" junk", "unexpected 'j' after parameter realm");
}

TEST(too_long)
{
  size_t n = 20000;
  char *h = malloc(n + 1);
  memcpy(h, "Bearer realm=\"", 14);
  memset(h + 14, 'a', n - 15);
  h[n - 1] = '"';
  h[n] = '\0';
  parse_bad(h, "too long");
  free(h);
}
