#include "fpull/login.h"
#include "registry/creds.h"
#include "base/util.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *path, const char *text, int mode)
{
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
  chmod(path, (mode_t)mode);
}

/* A private environment: nothing from the real HOME leaks in. */
static const char *setup_env(void)
{
  const char *dir = th_tmpdir();
  static char home[4096];
  snprintf(home, sizeof home, "%s/home", dir);
  mkdir(home, 0700);
  setenv("HOME", home, 1);
  unsetenv("DOCKER_CONFIG");
  unsetenv("REGISTRY_AUTH_FILE");
  unsetenv("XDG_RUNTIME_DIR");
  return dir;
}

TEST(base64_roundtrip)
{
  char *e = fp_base64_encode("user:p@ss:word", 14);
  CHECK_STR_EQ(e, "dXNlcjpwQHNzOndvcmQ=");
  char *u = NULL, *p = NULL;
  CHECK_INT_EQ(fp_creds_decode_auth(e, &u, &p), 0);
  CHECK_STR_EQ(u, "user");
  CHECK_STR_EQ(p, "p@ss:word");
  free(e), free(u), free(p);
  e = fp_base64_encode("ab", 2);
  CHECK_STR_EQ(e, "YWI=");
  free(e);
  e = fp_base64_encode("", 0);
  CHECK_STR_EQ(e, "");
  free(e);
}

TEST(decode_auth_malformed)
{
  char *u = NULL, *p = NULL;
  CHECK_INT_EQ(fp_creds_decode_auth("bm9jb2xvbg==", &u, &p), -1); /* "nocolon" */
  CHECK_INT_EQ(fp_creds_decode_auth("!!!!", &u, &p), -1);
  CHECK_INT_EQ(fp_creds_decode_auth("OnB3", &u, &p), -1); /* ":pw": empty user */
  CHECK_NULL(u);
}

TEST(docker_config_auths)
{
  const char *dir = setup_env();
  char cfgdir[4096], path[4200];
  snprintf(cfgdir, sizeof cfgdir, "%s/docker", dir);
  mkdir(cfgdir, 0700);
  snprintf(path, sizeof path, "%s/config.json", cfgdir);
  /* alice:s3cret for 127.0.0.1:5000 (bare key) and bob:pw for Docker Hub (v1 URL key) */
  write_file(path,
             "{\"auths\":{\"127.0.0.1:5000\":{\"auth\":\"YWxpY2U6czNjcmV0\"},"
             "\"https://index.docker.io/v1/\":{\"auth\":\"Ym9iOnB3\"},"
             "\"http://other:1/v2/\":{\"username\":\"carol\",\"password\":\"x\"}}}",
             0600);
  setenv("DOCKER_CONFIG", cfgdir, 1);
  struct fp_creds c;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_creds_lookup(&c, "127.0.0.1:5000", &err), 0);
  CHECK_STR_EQ(c.username, "alice");
  CHECK_STR_EQ(c.password, "s3cret");
  CHECK_STR_EQ(c.source, path);
  fp_creds_free(&c);
  CHECK_INT_EQ(fp_creds_lookup(&c, "docker.io", &err), 0);
  CHECK_STR_EQ(c.username, "bob");
  fp_creds_free(&c);
  CHECK_INT_EQ(fp_creds_lookup(&c, "registry-1.docker.io", &err), 0);
  CHECK_STR_EQ(c.username, "bob");
  fp_creds_free(&c);
  CHECK_INT_EQ(fp_creds_lookup(&c, "other:1", &err), 0);
  CHECK_STR_EQ(c.username, "carol");
  CHECK_STR_EQ(c.password, "x");
  fp_creds_free(&c);
  /* Another port is another registry. */
  CHECK_INT_EQ(fp_creds_lookup(&c, "127.0.0.1:5001", &err), 0);
  CHECK_NULL(c.username);
  CHECK_NULL(c.password);
  fp_creds_free(&c);
}

TEST(home_docker_config_and_malformed)
{
  const char *dir = setup_env();
  char p[4200];
  snprintf(p, sizeof p, "%s/home/.docker", dir);
  mkdir(p, 0700);
  snprintf(p, sizeof p, "%s/home/.docker/config.json", dir);
  write_file(p, "{\"auths\":{\"reg:1\":{\"auth\":\"not base64!\"}}}", 0600);
  struct fp_creds c;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_creds_lookup(&c, "reg:1", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "malformed \"auth\"");
  write_file(p, "[1,2", 0600);
  CHECK_INT_EQ(fp_creds_lookup(&c, "reg:1", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "not a JSON object");
}

TEST(registry_auth_file_and_xdg)
{
  const char *dir = setup_env();
  char a[4200], x[4200], xd[4200];
  snprintf(a, sizeof a, "%s/auth.json", dir);
  write_file(a, "{\"auths\":{\"one:1\":{\"auth\":\"dTE6cDE=\"}}}", 0600); /* u1:p1 */
  snprintf(xd, sizeof xd, "%s/run/containers", dir);
  snprintf(x, sizeof x, "%s/run", dir);
  mkdir(x, 0700);
  mkdir(xd, 0700);
  snprintf(x, sizeof x, "%s/run/containers/auth.json", dir);
  write_file(x, "{\"auths\":{\"two:2\":{\"auth\":\"dTI6cDI=\"},\"one:1\":{\"auth\":\"eDp5\"}}}",
             0600);
  setenv("REGISTRY_AUTH_FILE", a, 1);
  snprintf(xd, sizeof xd, "%s/run", dir);
  setenv("XDG_RUNTIME_DIR", xd, 1);
  struct fp_creds c;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_creds_lookup(&c, "one:1", &err), 0);
  CHECK_STR_EQ(c.username, "u1"); /* REGISTRY_AUTH_FILE comes before XDG_RUNTIME_DIR */
  fp_creds_free(&c);
  CHECK_INT_EQ(fp_creds_lookup(&c, "two:2", &err), 0);
  CHECK_STR_EQ(c.username, "u2");
  CHECK_STR_EQ(c.password, "p2");
  CHECK_STR_EQ(c.source, x);
  fp_creds_free(&c);
}

static char cfg_path[4300];

static void helper_setup(const char *json_fmt)
{
  const char *dir = setup_env();
  char bin[4200], helper[4300], cfgdir[4100];
  snprintf(bin, sizeof bin, "%s/bin", dir);
  mkdir(bin, 0755);
  snprintf(helper, sizeof helper, "%s/docker-credential-fpulltest", bin);
  /* The stand-in helper answers for one server and records what it was asked. */
  char script[8192];
  snprintf(script, sizeof script,
           "#!/bin/sh\n[ \"$1\" = get ] || exit 3\nread server\necho \"$server\" > %s/asked\n"
           "case \"$server\" in\n  helped:5000) echo '{\"ServerURL\":\"helped:5000\","
           "\"Username\":\"hu\",\"Secret\":\"hs\"}';;\n"
           "  tok:1) echo '{\"Username\":\"<token>\",\"Secret\":\"idtok\"}';;\n"
           "  broken:1) echo boom >&2; exit 2;;\n"
           "  *) echo 'credentials not found in native keychain'; exit 1;;\nesac\n",
           dir);
  write_file(helper, script, 0755);
  char path[8192];
  snprintf(path, sizeof path, "%s:/usr/bin:/bin", bin);
  setenv("PATH", path, 1);
  snprintf(cfgdir, sizeof cfgdir, "%s/docker", dir);
  mkdir(cfgdir, 0700);
  setenv("DOCKER_CONFIG", cfgdir, 1);
  snprintf(cfg_path, sizeof cfg_path, "%s/config.json", cfgdir);
  write_file(cfg_path, json_fmt, 0600);
}

TEST(cred_helpers)
{
  helper_setup("{\"credHelpers\":{\"helped:5000\":\"fpulltest\",\"tok:1\":\"fpulltest\","
               "\"broken:1\":\"fpulltest\",\"none:1\":\"fpulltest\",\"missing:1\":\"nohelper\"},"
               "\"auths\":{\"helped:5000\":{\"auth\":\"eDp5\"}}}");
  struct fp_creds c;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_creds_lookup(&c, "helped:5000", &err), 0);
  CHECK_STR_EQ(c.username, "hu"); /* credHelpers win over auths */
  CHECK_STR_EQ(c.password, "hs");
  CHECK_CONTAINS(c.source, "docker-credential-fpulltest");
  fp_creds_free(&c);
  CHECK_INT_EQ(fp_creds_lookup(&c, "tok:1", &err), 0);
  CHECK_STR_EQ(c.identity_token, "idtok");
  CHECK_NULL(c.password);
  fp_creds_free(&c);
  CHECK_INT_EQ(fp_creds_lookup(&c, "none:1", &err), 0);
  CHECK_NULL(c.password);
  fp_creds_free(&c);
  CHECK_INT_EQ(fp_creds_lookup(&c, "broken:1", &err), FPULL_EAUTH);
  CHECK_CONTAINS(err.msg, "docker-credential-fpulltest failed for broken:1");
  CHECK_INT_EQ(fp_creds_lookup(&c, "missing:1", &err), FPULL_EAUTH);
  CHECK_CONTAINS(err.msg, "docker-credential-nohelper");
  CHECK_CONTAINS(err.msg, "not found");
}

TEST(creds_store_and_hub_server_url)
{
  helper_setup("{\"credsStore\":\"fpulltest\",\"auths\":{\"helped:5000\":{}}}");
  struct fp_creds c;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_creds_lookup(&c, "helped:5000", &err), 0);
  CHECK_STR_EQ(c.username, "hu");
  fp_creds_free(&c);
  /* Docker Hub is asked for by its v1 URL, as docker does. */
  CHECK_INT_EQ(fp_creds_lookup(&c, "docker.io", &err), 0);
  CHECK_NULL(c.password);
  char asked[4300];
  snprintf(asked, sizeof asked, "%s/asked", th_tmpdir());
  FILE *f = fopen(asked, "r");
  CHECK(f != NULL);
  char line[256] = "";
  CHECK(fgets(line, sizeof line, f) != NULL);
  fclose(f);
  CHECK_STR_EQ(line, "https://index.docker.io/v1/\n");
}

TEST(helper_name_must_be_plain)
{
  helper_setup("{\"credHelpers\":{\"x:1\":\"../../bin/sh\"}}");
  struct fp_creds c;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_creds_lookup(&c, "x:1", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "bad credential helper name");
}

TEST(root_skips_helpers_of_other_users)
{
  if (geteuid() != 0)
    return; /* the rule is about root; as another user chown is not possible */
  helper_setup("{\"credHelpers\":{\"helped:5000\":\"fpulltest\"}}");
  CHECK_INT_EQ(chown(cfg_path, 65534, 65534), 0);
  struct fp_creds c;
  fpull_err err = {0};
  CHECK_INT_EQ(fp_creds_lookup(&c, "helped:5000", &err), 0);
  CHECK_NULL(c.password);
  char asked[4300];
  snprintf(asked, sizeof asked, "%s/asked", th_tmpdir());
  CHECK(access(asked, F_OK) != 0); /* the helper never ran */
  /* Owned by root again: it runs. */
  CHECK_INT_EQ(chown(cfg_path, 0, 0), 0);
  CHECK_INT_EQ(fp_creds_lookup(&c, "helped:5000", &err), 0);
  CHECK_STR_EQ(c.password, "hs");
  fp_creds_free(&c);
}

/* Docker Hub is stored under docker's key, and found again under each of its names. (The
 * CLI's login asks the registry first, so this is checked here, without docker.io.) */
TEST(login_save_docker_hub_key)
{
  const char *dir = setup_env();
  char p[4200];
  snprintf(p, sizeof p, "%s/dc", dir);
  setenv("DOCKER_CONFIG", p, 1);
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_login_save("docker.io", "bob", "pw", &err), 0);
  snprintf(p, sizeof p, "%s/dc/config.json", dir);
  char *text = NULL;
  size_t len = 0;
  CHECK(fp_read_file(p, 1 << 20, &text, &len) >= 0);
  CHECK_CONTAINS(text, "\"https://index.docker.io/v1/\"");
  free(text);
  struct fp_creds c;
  CHECK_INT_EQ(fp_creds_lookup(&c, "registry-1.docker.io", &err), 0);
  CHECK_STR_EQ(c.username, "bob");
  CHECK_STR_EQ(c.password, "pw");
  fp_creds_free(&c);
  unsetenv("DOCKER_CONFIG");
}
