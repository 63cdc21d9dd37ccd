/* The config file: every key, type errors with line and column, unknown-key warnings,
 * the load order, and the mirror / insecure-registry lookups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fpull/config.h"
#include "fpull/log.h"
#include "harness.h"
#include "base/util.h"

struct collected {
  int warnings;
  char last[2048];
};

static void collect(void *ud, int level, const char *msg)
{
  struct collected *c = ud;
  if (level == FPULL_LOG_WARN) {
    c->warnings++;
    snprintf(c->last, sizeof c->last, "%s", msg);
  }
}

static struct fpull_config *parse_ok(const char *text)
{
  struct fpull_config *c = NULL;
  fpull_err err = {0};
  int r = fpull_config_parse(&c, text, strlen(text), "test.yaml", &err);
  if (r)
    th_fail(__FILE__, __LINE__, "parse failed: %s", err.msg);
  CHECK(c != NULL);
  return c;
}

/* Parses text expecting FPULL_EUSAGE; returns the message (static). */
static const char *parse_fail(const char *text)
{
  static fpull_err err;
  struct fpull_config *c = NULL;
  fpull_err_clear(&err);
  int r = fpull_config_parse(&c, text, strlen(text), "cfg.yaml", &err);
  CHECK_INT_EQ(r, FPULL_EUSAGE);
  CHECK_INT_EQ(err.code, FPULL_EUSAGE);
  CHECK_NULL(c);
  return err.msg;
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

TEST(empty_config_has_defaults)
{
  struct fpull_config *c = parse_ok("");
  CHECK_INT_EQ(c->detect, 1);
  CHECK_NULL(c->platform_features);
  CHECK_NULL(c->insecure_registries);
  CHECK_INT_EQ(c->n_mirrors, 0);
  CHECK_NULL(c->cache_dir);
  CHECK_NULL(c->certs_dir);
  CHECK_INT_EQ(c->n_cpu_tags, 0);
  CHECK_INT_EQ(c->retries, 0);
  CHECK_NULL(c->path);
  fpull_config_free(c);

  c = parse_ok("# only a comment\n---\n");
  CHECK_INT_EQ(c->detect, 1);
  fpull_config_free(c);
  fpull_config_free(NULL);
}

TEST(all_keys)
{
  struct fpull_config *c = parse_ok("platform-features: [infiniband, nvidia-396-44]\n"
                                    "detect: false\n"
                                    "insecure-registries: [\"myprivreg:5000\", 10.1.0.0/16]\n"
                                    "registry-mirrors:\n"
                                    "  docker.io: [\"https://mirror.example.org\",\n"
                                    "              \"http://127.0.0.1:5001\"]\n"
                                    "  quay.io: https://quay-mirror.example.org\n"
                                    "cache-dir: /scratch/fpull-cache\n"
                                    "certs-dir: /etc/fpull/certs.d\n"
                                    "cpu-tags:\n"
                                    "  mychip:\n"
                                    "    isa: [avx2, rdseed]\n"
                                    "    architecture: AMD64\n"
                                    "  OtherChip: [sse4_2, popcnt]\n"
                                    "  armthing: {isa: [sve], architecture: arm64}\n"
                                    "retries: 7\n");
  CHECK_INT_EQ(fpull_strv_len(c->platform_features), 2);
  CHECK_STR_EQ(c->platform_features[0], "infiniband");
  CHECK_STR_EQ(c->platform_features[1], "nvidia-396-44");
  CHECK_INT_EQ(c->detect, 0);
  CHECK_INT_EQ(fpull_strv_len(c->insecure_registries), 2);
  CHECK_STR_EQ(c->insecure_registries[0], "myprivreg:5000");
  CHECK_INT_EQ(c->n_mirrors, 2);
  CHECK_STR_EQ(c->mirrors[0].registry, "docker.io");
  CHECK_INT_EQ(fpull_strv_len(c->mirrors[0].urls), 2);
  CHECK_STR_EQ(c->mirrors[0].urls[0], "https://mirror.example.org");
  CHECK_STR_EQ(c->mirrors[0].urls[1], "http://127.0.0.1:5001");
  CHECK_STR_EQ(c->mirrors[1].registry, "quay.io");
  CHECK_INT_EQ(fpull_strv_len(c->mirrors[1].urls), 1);
  CHECK_STR_EQ(c->cache_dir, "/scratch/fpull-cache");
  CHECK_STR_EQ(c->certs_dir, "/etc/fpull/certs.d");
  CHECK_INT_EQ(c->n_cpu_tags, 3);
  CHECK_STR_EQ(c->cpu_tags[0].name, "mychip");
  CHECK_STR_EQ(c->cpu_tags[0].architecture, "amd64");
  CHECK_INT_EQ(fpull_strv_len(c->cpu_tags[0].isa), 2);
  CHECK_STR_EQ(c->cpu_tags[0].isa[1], "rdseed");
  CHECK_STR_EQ(c->cpu_tags[1].name, "otherchip");
  CHECK_STR_EQ(c->cpu_tags[1].architecture, "amd64");
  CHECK_STR_EQ(c->cpu_tags[1].isa[0], "sse4_2");
  CHECK_STR_EQ(c->cpu_tags[2].architecture, "arm64");
  CHECK_STR_EQ(c->cpu_tags[2].isa[0], "sve");
  CHECK_INT_EQ(c->retries, 7);
  fpull_config_free(c);
}

TEST(bool_spellings_and_scalar_lists)
{
  static const char *const t[] = {"true", "True", "yes", "on", "ON"};
  static const char *const f[] = {"false", "FALSE", "no", "off", "Off"};
  for (size_t i = 0; i < 5; i++) {
    char buf[64];
    snprintf(buf, sizeof buf, "detect: %s\n", t[i]);
    struct fpull_config *c = parse_ok(buf);
    CHECK_INT_EQ(c->detect, 1);
    fpull_config_free(c);
    snprintf(buf, sizeof buf, "detect: %s\n", f[i]);
    c = parse_ok(buf);
    CHECK_INT_EQ(c->detect, 0);
    fpull_config_free(c);
  }
  /* A single name stands for a one-item list; an empty value for an empty one. */
  struct fpull_config *c = parse_ok("platform-features: infiniband\ninsecure-registries:\n");
  CHECK_INT_EQ(fpull_strv_len(c->platform_features), 1);
  CHECK_STR_EQ(c->platform_features[0], "infiniband");
  CHECK(c->insecure_registries != NULL);
  CHECK_INT_EQ(fpull_strv_len(c->insecure_registries), 0);
  fpull_config_free(c);
}

TEST(home_is_expanded_in_paths)
{
  setenv("HOME", "/home/someone", 1);
  struct fpull_config *c = parse_ok("cache-dir: ~/cache\ncerts-dir: \"~other/x\"\n");
  CHECK_STR_EQ(c->cache_dir, "/home/someone/cache");
  CHECK_STR_EQ(c->certs_dir, "~other/x");
  fpull_config_free(c);
}

TEST(wrong_types_name_line_and_column)
{
  CHECK_CONTAINS(parse_fail("detect: maybe\n"), "cfg.yaml:1:9: detect must be true or false");
  CHECK_CONTAINS(parse_fail("detect: \"true\"\n"), "cfg.yaml:1:9:");
  CHECK_CONTAINS(parse_fail("detect: [true]\n"), "cfg.yaml:1:9: detect must be true or false, "
                                                 "not a list");
  CHECK_CONTAINS(parse_fail("retries: many\n"), "cfg.yaml:1:10: retries must be an integer");
  CHECK_CONTAINS(parse_fail("retries: 3.5\n"), "cfg.yaml:1:10:");
  CHECK_CONTAINS(parse_fail("retries: -1\n"), "must be between 0 and 100");
  CHECK_CONTAINS(parse_fail("retries: 99999999999999999999999\n"), "cfg.yaml:1:10:");
  CHECK_CONTAINS(parse_fail("cache-dir: [a, b]\n"), "cfg.yaml:1:12: cache-dir must be a "
                                                    "string, not a list");
  CHECK_CONTAINS(parse_fail("cache-dir:\n"), "cache-dir must be a string");
  CHECK_CONTAINS(parse_fail("certs-dir: {a: b}\n"), "not a mapping");
  CHECK_CONTAINS(parse_fail("platform-features: {a: b}\n"), "cfg.yaml:1:20: platform-features "
                                                            "must be a list");
  CHECK_CONTAINS(parse_fail("platform-features:\n  - ok\n  - [nested]\n"),
                 "cfg.yaml:3:5: platform-features: each item must be a string");
  CHECK_CONTAINS(parse_fail("insecure-registries:\n  - a\n  -\n"), "cfg.yaml:3:");
  CHECK_CONTAINS(parse_fail("registry-mirrors: [a]\n"), "cfg.yaml:1:19: registry-mirrors must "
                                                        "be a mapping");
  CHECK_CONTAINS(parse_fail("registry-mirrors:\n  docker.io: {a: b}\n"),
                 "cfg.yaml:2:14: registry-mirrors.docker.io must be a list");
  CHECK_CONTAINS(parse_fail("registry-mirrors:\n  docker.io: [\"https://a\", ftp://b]\n"),
                 "cfg.yaml:2:28: registry-mirrors.docker.io: \"ftp://b\" is not an http");
  CHECK_CONTAINS(parse_fail("registry-mirrors:\n  docker.io: https://a\n"
                            "  index.docker.io: https://b\n"),
                 "cfg.yaml:3:3: registry-mirrors: \"index.docker.io\" listed twice");
  CHECK_CONTAINS(parse_fail("cpu-tags: [a]\n"), "cfg.yaml:1:11: cpu-tags must be a mapping");
  CHECK_CONTAINS(parse_fail("cpu-tags:\n  x: {architecture: amd64}\n"),
                 "cfg.yaml:2:6: cpu-tags.x: isa: must list at least one extension");
  CHECK_CONTAINS(parse_fail("cpu-tags:\n  x: {isa: {a: b}}\n"), "cfg.yaml:2:12:");
  CHECK_CONTAINS(parse_fail("cpu-tags:\n  \"a,b\": [avx]\n"), "not a usable feature name");
  CHECK_CONTAINS(parse_fail("cpu-tags:\n  t: [avx2, \"fma sse\"]\n"),
                 "cfg.yaml:2:13: cpu-tags.t: \"fma sse\" is not an ISA extension name");
  CHECK_CONTAINS(parse_fail("cpu-tags:\n  t:\n    isa: [avx2, \"a:b\"]\n"), "cfg.yaml:3:17:");
  CHECK_CONTAINS(parse_fail("cpu-tags:\n  t: \"avx,fma\"\n"), "cfg.yaml:2:6:");
  CHECK_CONTAINS(parse_fail("cpu-tags:\n  Abc: [avx]\n  abc: [avx2]\n"),
                 "cfg.yaml:3:3: cpu-tags: \"abc\" defined twice");
  CHECK_CONTAINS(parse_fail("- a\n- b\n"), "cfg.yaml:1:1: the config must be a mapping");
  CHECK_CONTAINS(parse_fail("just text\n"), "cfg.yaml:1:1: the config must be a mapping");
}

TEST(malformed_yaml_names_line_and_column)
{
  const char *m = parse_fail("detect: true\nplatform-features: [a, b\ncache-dir: /x\n");
  CHECK_CONTAINS(m, "cfg.yaml:");
  /* libyaml reports where it found the problem: line 3, where the list should have
   * ended. */
  CHECK_CONTAINS(m, "cfg.yaml:3:");
  m = parse_fail("detect: true\n  bad: indent\n");
  CHECK_CONTAINS(m, "cfg.yaml:2:");
  m = parse_fail("a: \"unterminated\n");
  CHECK_CONTAINS(m, "cfg.yaml:");
  m = parse_fail("\tdetect: true\n");
  CHECK_CONTAINS(m, "cfg.yaml:1:");
  m = parse_fail("detect: true\ndetect: false\n");
  CHECK_CONTAINS(m, "cfg.yaml:2:1: duplicate key \"detect\" (first at line 1)");
  m = parse_fail("detect: true\n---\ndetect: false\n");
  CHECK_CONTAINS(m, "cfg.yaml:2:1: only one YAML document");
  m = parse_fail("a: &x [1]\nb: *x\n");
  CHECK_CONTAINS(m, "cfg.yaml:2:4: YAML aliases are not supported");
  m = parse_fail("? [a]\n: b\n");
  CHECK_CONTAINS(m, "a mapping key must be a scalar");
}

TEST(nesting_and_size_limits)
{
  char deep[512] = "x: ";
  for (int i = 0; i < 40; i++)
    strcat(deep, "[");
  for (int i = 0; i < 40; i++)
    strcat(deep, "]");
  strcat(deep, "\n");
  CHECK_CONTAINS(parse_fail(deep), "nested deeper than");

  size_t big = 2u * 1024 * 1024;
  char *text = malloc(big + 1);
  memset(text, '#', big);
  text[big] = '\0';
  struct fpull_config *c = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_config_parse(&c, text, big, "big.yaml", &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "big.yaml: larger than");
  free(text);
}

TEST(unknown_keys_warn_with_position)
{
  struct collected col = {0};
  fpull_log_set(collect, &col);
  unsigned before = fpull_log_warnings();
  struct fpull_config *c = parse_ok("detect: true\n"
                                    "platfrom-features: [a]\n"
                                    "cpu-tags:\n"
                                    "  x: {isa: [avx], colour: blue}\n");
  CHECK_INT_EQ(col.warnings, 2);
  CHECK_INT_EQ(fpull_log_warnings() - before, 2);
  CHECK_CONTAINS(col.last, "test.yaml:4:19: unknown key \"colour\"");
  CHECK_NULL(c->platform_features);
  CHECK_INT_EQ(c->n_cpu_tags, 1);
  fpull_config_free(c);

  col.warnings = 0;
  c = parse_ok("  extra:\n    deep: [1, 2]\n");
  CHECK_INT_EQ(col.warnings, 1);
  CHECK_CONTAINS(col.last, "test.yaml:1:3: unknown key \"extra\" ignored");
  fpull_config_free(c);
  fpull_log_set(NULL, NULL);
}

TEST(load_explicit_path)
{
  const char *dir = th_tmpdir();
  char path[4096];
  snprintf(path, sizeof path, "%s/my.yaml", dir);
  write_file(path, "retries: 3\n");
  struct fpull_config *c = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_config_load(&c, path, &err), 0);
  CHECK_STR_EQ(c->path, path);
  CHECK_INT_EQ(c->retries, 3);
  fpull_config_free(c);

  /* Malformed: the message names the file with line and column. */
  write_file(path, "retries: 3\nretries: [\n");
  c = NULL;
  CHECK_INT_EQ(fpull_config_load(&c, path, &err), FPULL_EUSAGE);
  CHECK_NULL(c);
  char want[4200];
  snprintf(want, sizeof want, "%s:", path);
  CHECK_CONTAINS(err.msg, want);

  /* A named file that is missing is a usage error, even with a valid $FPULL_CONFIG. */
  char missing[4096];
  snprintf(missing, sizeof missing, "%s/nope.yaml", dir);
  setenv("FPULL_CONFIG", path, 1);
  CHECK_INT_EQ(fpull_config_load(&c, missing, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, missing);
  CHECK_CONTAINS(err.msg, "cannot read config file");
}

/* Sets up HOME with a user config and clears the other variables. */
static const char *fake_home(const char *text)
{
  static char home[4096];
  char p[4200];
  snprintf(home, sizeof home, "%s/home", th_tmpdir());
  snprintf(p, sizeof p, "%s/.config/fpull", home);
  CHECK_INT_EQ(fp_mkdir_p(p, 0755), 0);
  snprintf(p, sizeof p, "%s/.config/fpull/config.yaml", home);
  write_file(p, text);
  setenv("HOME", home, 1);
  unsetenv("XDG_CONFIG_HOME");
  unsetenv("FPULL_CONFIG");
  return home;
}

TEST(load_order_env_then_home)
{
  const char *home = fake_home("retries: 11\n");
  char envfile[4096];
  snprintf(envfile, sizeof envfile, "%s/env.yaml", th_tmpdir());
  write_file(envfile, "retries: 22\n");

  struct fpull_config *c = NULL;
  fpull_err err = {0};
  /* $FPULL_CONFIG first. */
  setenv("FPULL_CONFIG", envfile, 1);
  CHECK_INT_EQ(fpull_config_load(&c, NULL, &err), 0);
  CHECK_INT_EQ(c->retries, 22);
  CHECK_STR_EQ(c->path, envfile);
  fpull_config_free(c);

  /* Then ~/.config/fpull/config.yaml. */
  unsetenv("FPULL_CONFIG");
  CHECK_INT_EQ(fpull_config_load(&c, NULL, &err), 0);
  CHECK_INT_EQ(c->retries, 11);
  char want[4200];
  snprintf(want, sizeof want, "%s/.config/fpull/config.yaml", home);
  CHECK_STR_EQ(c->path, want);
  fpull_config_free(c);

  /* An empty $FPULL_CONFIG counts as unset. */
  setenv("FPULL_CONFIG", "", 1);
  CHECK_INT_EQ(fpull_config_load(&c, NULL, &err), 0);
  CHECK_INT_EQ(c->retries, 11);
  fpull_config_free(c);
}

TEST(load_env_missing_file_is_no_config)
{
  fake_home("retries: 11\n");
  /* A set $FPULL_CONFIG naming a missing file means "no config": the user file is not
   * read either (the test suite relies on this to isolate runs). */
  setenv("FPULL_CONFIG", "/nonexistent/fpull-config.yaml", 1);
  struct fpull_config *c = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_config_load(&c, NULL, &err), 0);
  CHECK_INT_EQ(c->retries, 0);
  CHECK_INT_EQ(c->detect, 1);
  CHECK_NULL(c->path);
  fpull_config_free(c);
}

TEST(load_env_malformed_is_error)
{
  fake_home("retries: 11\n");
  char envfile[4096];
  snprintf(envfile, sizeof envfile, "%s/env.yaml", th_tmpdir());
  write_file(envfile, "detect: true\nretries: x\n");
  setenv("FPULL_CONFIG", envfile, 1);
  struct fpull_config *c = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_config_load(&c, NULL, &err), FPULL_EUSAGE);
  char want[4200];
  snprintf(want, sizeof want, "%s:2:10: retries must be an integer", envfile);
  CHECK_CONTAINS(err.msg, want);
}

TEST(load_xdg_config_home)
{
  fake_home("retries: 11\n");
  char xdg[4096], p[4200];
  snprintf(xdg, sizeof xdg, "%s/xdg", th_tmpdir());
  snprintf(p, sizeof p, "%s/fpull", xdg);
  CHECK_INT_EQ(fp_mkdir_p(p, 0755), 0);
  snprintf(p, sizeof p, "%s/fpull/config.yaml", xdg);
  write_file(p, "retries: 33\n");
  setenv("XDG_CONFIG_HOME", xdg, 1);
  struct fpull_config *c = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_config_load(&c, NULL, &err), 0);
  CHECK_INT_EQ(c->retries, 33);
  fpull_config_free(c);
}

TEST(load_nothing_found)
{
  struct stat st;
  if (stat("/etc/fpull/config.yaml", &st) == 0)
    return; /* a system config on this machine: nothing to check */
  char home[4096];
  snprintf(home, sizeof home, "%s/emptyhome", th_tmpdir());
  CHECK_INT_EQ(fp_mkdir_p(home, 0755), 0);
  setenv("HOME", home, 1);
  unsetenv("XDG_CONFIG_HOME");
  unsetenv("FPULL_CONFIG");
  struct fpull_config *c = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_config_load(&c, NULL, &err), 0);
  CHECK_NULL(c->path);
  CHECK_INT_EQ(c->detect, 1);
  fpull_config_free(c);
}

TEST(mirrors_lookup)
{
  struct fpull_config *c = parse_ok("registry-mirrors:\n"
                                    "  Docker.IO: [\"https://m1\", \"https://m2\"]\n"
                                    "  127.0.0.1:5000: [\"http://127.0.0.1:5001\"]\n");
  char *const *m = fpull_config_mirrors(c, "docker.io");
  CHECK(m != NULL);
  CHECK_INT_EQ(fpull_strv_len(m), 2);
  CHECK_STR_EQ(m[0], "https://m1");
  CHECK_STR_EQ(m[1], "https://m2");
  CHECK(fpull_config_mirrors(c, "registry-1.docker.io") == m);
  CHECK(fpull_config_mirrors(c, "index.docker.io") == m);
  m = fpull_config_mirrors(c, "127.0.0.1:5000");
  CHECK(m != NULL);
  CHECK_STR_EQ(m[0], "http://127.0.0.1:5001");
  CHECK_NULL(fpull_config_mirrors(c, "127.0.0.1:5001"));
  CHECK_NULL(fpull_config_mirrors(c, "quay.io"));
  CHECK_NULL(fpull_config_mirrors(NULL, "docker.io"));
  CHECK_NULL(fpull_config_mirrors(c, NULL));
  fpull_config_free(c);
}

TEST(insecure_lookup)
{
  struct fpull_config *c = parse_ok("insecure-registries:\n"
                                    "  - myprivreg:5000\n"
                                    "  - PlainHost\n"
                                    "  - http://urlform:6000/\n"
                                    "  - 10.20.0.0/16\n"
                                    "  - \"[fd00::1]:5000\"\n");
  CHECK_INT_EQ(fpull_config_is_insecure(c, "myprivreg:5000"), 1);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "MYPRIVREG:5000"), 1);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "myprivreg:5001"), 0);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "myprivreg"), 0);
  /* A host without a port covers all its ports. */
  CHECK_INT_EQ(fpull_config_is_insecure(c, "plainhost"), 1);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "plainhost:443"), 1);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "plainhost.example:443"), 0);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "urlform:6000"), 1);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "10.20.3.4:5000"), 1);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "10.20.3.4"), 1);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "10.21.3.4:5000"), 0);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "[fd00::1]:5000"), 1);
  CHECK_INT_EQ(fpull_config_is_insecure(c, "[fd00::2]:5000"), 0);
  /* Loopback is the registry client's rule, not the config's. */
  CHECK_INT_EQ(fpull_config_is_insecure(c, "127.0.0.1:5000"), 0);
  CHECK_INT_EQ(fpull_config_is_insecure(NULL, "myprivreg:5000"), 0);
  fpull_config_free(c);

  c = parse_ok("detect: true\n");
  CHECK_INT_EQ(fpull_config_is_insecure(c, "myprivreg:5000"), 0);
  fpull_config_free(c);
}

TEST(shared_caches_key)
{
  setenv("HOME", "/home/someone", 1);
  struct fpull_config *c = parse_ok("shared-caches: [/sw/fpull-cache, ~/team-cache]\n");
  CHECK_INT_EQ(fpull_strv_len(c->shared_caches), 2);
  CHECK_STR_EQ(c->shared_caches[0], "/sw/fpull-cache");
  CHECK_STR_EQ(c->shared_caches[1], "/home/someone/team-cache");
  fpull_config_free(c);
  c = parse_ok("shared-caches: /sw/one\n"); /* a scalar is a list of one */
  CHECK_STR_EQ(c->shared_caches[0], "/sw/one");
  fpull_config_free(c);
  CHECK_CONTAINS(parse_fail("shared-caches:\n  - /ok\n  - relative/cache\n"),
                 "cfg.yaml:3:5: shared-caches: \"relative/cache\" is not an absolute directory");
  CHECK_CONTAINS(parse_fail("shared-caches: {a: b}\n"), "shared-caches must be a list");
}

TEST(max_unpacked_key)
{
  struct fpull_config *c = parse_ok("max-unpacked: 50M\n");
  CHECK_INT_EQ(c->max_unpacked, 50ull << 20);
  fpull_config_free(c);
  c = parse_ok("max-unpacked: 1.5GiB\n");
  CHECK_INT_EQ(c->max_unpacked, 3ull << 29);
  fpull_config_free(c);
  c = parse_ok("max-unpacked: 0\n");
  CHECK_INT_EQ(c->max_unpacked, 0);
  fpull_config_free(c);
  c = parse_ok("");
  CHECK_INT_EQ(c->max_unpacked, 0);
  fpull_config_free(c);
  /* A size is never guessed at: a bare number or an unknown unit names the key's place. */
  CHECK_CONTAINS(parse_fail("max-unpacked: 500\n"),
                 "cfg.yaml:1:15: max-unpacked: '500' has no unit (did you mean '500M' or '500G'?)");
  CHECK_CONTAINS(parse_fail("detect: true\nmax-unpacked: 5X\n"),
                 "cfg.yaml:2:15: max-unpacked: '5X' is not a size such as 10G");
  CHECK_CONTAINS(parse_fail("max-unpacked: [1G]\n"), "cfg.yaml:1:15: max-unpacked must be a "
                                                     "string, not a list");
}
