/* Pins, last-use stamps and housekeeping's removals (lib/cache/cache_use.c, cache_scan.c),
 * and the limits of cache prune (lib/cache/cache_limits.c). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache_scan.h"
#include "cache/cache_use.h"
#include "fpull/cache.h"
#include "fpull/manifest.h"
#include "harness.h"

static char *cache_dir(const char *sub)
{
  char *p = NULL;
  CHECK(asprintf(&p, "%s/%s", th_tmpdir(), sub) > 0);
  return p;
}

static char *put(fpull_cache *c, const char *text)
{
  char *d = fpull_digest_of(text, strlen(text));
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_cache_put_bytes(c, d, text, strlen(text), &err), 0);
  return d;
}

TEST(a_pin_keeps_a_blob_from_removal_until_the_session_ends)
{
  char *dir = cache_dir("pins");
  fpull_err err = {0};
  fpull_cache *pull = NULL, *admin = NULL;
  CHECK_INT_EQ(fpull_cache_open(&pull, dir, &err), 0);
  fp_cache_pins_open(pull);
  char *used = put(pull, "a layer a pull uses");
  char *idle = put(pull, "a layer nobody uses");
  fp_cache_pin(pull, used);
  CHECK_INT_EQ(fp_cache_admin_open(&admin, dir, 1, &err), 0);
  CHECK_INT_EQ(fp_cache_pinned(admin, used), 1);
  CHECK_INT_EQ(fp_cache_pinned(admin, idle), 0);
  CHECK_INT_EQ(fp_cache_remove_blob(admin, used), 1);
  CHECK_INT_EQ(fpull_cache_has_blob(pull, used, -1), 1);
  CHECK_INT_EQ(fp_cache_remove_blob(admin, idle), 0);
  CHECK_INT_EQ(fpull_cache_has_blob(pull, idle, -1), 0);
  /* Held by housekeeping, the byte is taken for everyone else until it is given back. */
  CHECK_INT_EQ(fp_cache_pin_hold(admin, idle), 0);
  CHECK_INT_EQ(fp_cache_pinned(pull, idle), 1);
  /* A pull does not wait for it for ever: it goes on unpinned (bounded, see cache_use.h). */
  fp_cache_pin(pull, idle);
  fp_cache_pin_release(admin, idle);
  CHECK_INT_EQ(fp_cache_pinned(pull, idle), 0);
  CHECK_INT_EQ(fp_cache_pinned(admin, idle), 0);
  fpull_cache_free(pull);
  CHECK_INT_EQ(fp_cache_pinned(admin, used), 0);
  CHECK_INT_EQ(fp_cache_remove_blob(admin, used), 0);
  fpull_cache_free(admin);
  free(used);
  free(idle);
  free(dir);
}

TEST(stamps_record_the_last_use)
{
  char *dir = cache_dir("stamps");
  fpull_err err = {0};
  fpull_cache *c = NULL;
  CHECK_INT_EQ(fpull_cache_open(&c, dir, &err), 0);
  const char *tagref = "127.0.0.1:5000/team/a:1.0";
  char *d = put(c, "{\"a manifest\": 1}");
  CHECK_INT_EQ(fpull_cache_tag_record(c, tagref, d, &err), 0);
  char *byref = NULL;
  CHECK(asprintf(&byref, "127.0.0.1:5000/team/b@%s", d) > 0);
  fp_cache_note_use(c, tagref);
  fp_cache_note_use(c, byref);
  /* Both stamps a long time ago, then the tag used again: only its time moves. */
  char *h = fpull_digest_of(tagref, strlen(tagref));
  char *path = NULL;
  CHECK(asprintf(&path, "%s/used/%s", dir, h + 7) > 0);
  struct timespec old[2] = {{1000, 0}, {1000, 0}};
  CHECK_INT_EQ(utimensat(AT_FDCWD, path, old, 0), 0);
  char *tagpath = NULL;
  CHECK(asprintf(&tagpath, "%s/tags/%s.u%ld.json", dir, h + 7, (long)geteuid()) > 0);
  CHECK_INT_EQ(utimensat(AT_FDCWD, tagpath, old, 0), 0);
  fpull_cache *admin = NULL;
  CHECK_INT_EQ(fp_cache_admin_open(&admin, dir, 0, &err), 0);
  struct fp_cache_root *roots = NULL;
  size_t n = 0;
  fp_cache_scan_roots(admin, &roots, &n);
  CHECK_INT_EQ(n, 2);
  for (size_t i = 0; i < n; i++) {
    CHECK_STR_EQ(roots[i].digest, d);
    if (strcmp(roots[i].reference, tagref) == 0)
      CHECK_INT_EQ(roots[i].last_use, 1000);
    else
      CHECK_STR_EQ(roots[i].reference, byref);
  }
  fp_cache_roots_free(roots, n);
  fp_cache_note_use(c, tagref);
  struct stat st;
  CHECK_INT_EQ(stat(path, &st), 0);
  CHECK(st.st_mtime > 1000);
  fpull_cache_free(admin);
  fpull_cache_free(c);
  free(tagpath);
  free(path);
  free(h);
  free(byref);
  free(d);
  free(dir);
}

TEST(no_cache_is_an_empty_one_and_nothing_is_created)
{
  char *dir = cache_dir("none");
  fpull_err err = {0};
  struct fpull_cache_listing *l = NULL;
  CHECK_INT_EQ(fpull_cache_list(&l, dir, &err), 0);
  CHECK_INT_EQ(l->n_images, 0);
  fpull_cache_listing_free(l);
  struct fpull_cache_usage u;
  CHECK_INT_EQ(fpull_cache_du(&u, dir, &err), 0);
  CHECK_INT_EQ(u.total, 0);
  struct fpull_cache_prune_opts o = FPULL_CACHE_PRUNE_OPTS_INIT;
  struct fpull_cache_prune_result *r = NULL;
  CHECK_INT_EQ(fpull_cache_prune(&r, dir, &o, &err), 0);
  CHECK_NULL(r->removed[0]);
  fpull_cache_prune_result_free(r);
  CHECK_INT_EQ(fpull_cache_rm(&r, dir, "ubuntu", &err), FPULL_ENOTFOUND);
  CHECK_CONTAINS(err.msg, "docker.io/library/ubuntu:latest");
  CHECK(access(dir, F_OK) != 0);
  o.version = 0;
  CHECK_INT_EQ(fpull_cache_prune(&r, dir, &o, &err), FPULL_EUSAGE);
  o = (struct fpull_cache_prune_opts)FPULL_CACHE_PRUNE_OPTS_INIT;
  o.all = 1;
  o.max_size = 10;
  CHECK_INT_EQ(fpull_cache_prune(&r, dir, &o, &err), FPULL_EUSAGE);
  fpull_cache_prune_result_free(NULL);
  fpull_cache_listing_free(NULL);
  free(dir);
}

TEST(sizes)
{
  static const struct {
    const char *text;
    int64_t bytes;
  } good[] = {{"10G", 10LL << 30}, {"500M", 500LL << 20}, {"1.5T", 3LL << 39}, {"0", 0},
              {"100KiB", 102400},  {"2gb", 2LL << 30},    {"7B", 7},           {"1P", 1LL << 50},
              {"0.5k", 512}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int64_t v = -1;
    fpull_err err = {0};
    CHECK_INT_EQ(fpull_cache_parse_size(&v, good[i].text, &err), 0);
    CHECK_INT_EQ(v, good[i].bytes);
  }
  static const struct {
    const char *text, *says;
  } bad[] = {{"500", "did you mean '500M' or '500G'"},
             {"10gig", "did you mean '10G'"},
             {"10X", "such as 10G"},
             {"-1G", "such as 10G"},
             {"", "such as 10G"},
             {"G", "such as 10G"},
             {"1.G", "such as 10G"},
             {"10Bb", "did you mean '10B'"},
             {"99999999P", "too large"},
             {"0x10M", "such as 10G"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t v = -1;
    fpull_err err = {0};
    CHECK_INT_EQ(fpull_cache_parse_size(&v, bad[i].text, &err), FPULL_EUSAGE);
    CHECK_CONTAINS(err.msg, bad[i].says);
  }
}

TEST(durations)
{
  static const struct {
    const char *text;
    int64_t secs;
  } good[] = {{"7d", 7 * 86400}, {"12h", 12 * 3600}, {"30m", 1800},
              {"45s", 45},       {"2w", 14 * 86400}, {"1d12h", 36 * 3600}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int64_t v = -1;
    fpull_err err = {0};
    CHECK_INT_EQ(fpull_cache_parse_duration(&v, good[i].text, &err), 0);
    CHECK_INT_EQ(v, good[i].secs);
  }
  static const struct {
    const char *text, *says;
  } bad[] = {{"7", "did you mean '7d'"},
             {"7days", "did you mean '7d'"},
             {"12H", "did you mean '12h'"},
             {"3 hours", "such as 7d"},
             {"1d12hours", "did you mean '1d12h'"},
             {"soon", "such as 7d"},
             {"", "such as 7d"},
             {"2months", "such as 7d"},
             {"-1d", "such as 7d"},
             {"1.5d", "such as 7d"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t v = -1;
    fpull_err err = {0};
    CHECK_INT_EQ(fpull_cache_parse_duration(&v, bad[i].text, &err), FPULL_EUSAGE);
    CHECK_CONTAINS(err.msg, bad[i].says);
  }
}
