/* manifest-tool style specs: parsing, validation with positions, feature-name warnings,
 * and the index document built from resolved entries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/features.h"
#include "fpull/log.h"
#include "fpull/manifest.h"
#include "fpull/ref.h"
#include "fpull/spec.h"
#include "harness.h"
#include "base/util.h"

/* The eleven entries of the proposal's index (issue 3's table). */
static const char eleven[] =
    "image: 127.0.0.1:5000/qnib/cv-tf:1.12.0-rev9\n"
    "manifests:\n"
    "  - image: 127.0.0.1:5000/qnib/cv-tf-dev:1.12.0-rev11\n"
    "    platform: {os: linux, architecture: amd64}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-tf-dev:skylake_1.12.0-rev6\n"
    "    platform: {os: linux, architecture: amd64, features: [skylake]}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-nccl90-tf-dev:1.12.0-rev1\n"
    "    platform: {os: linux, architecture: amd64, features: [nvidia-390-30]}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-nccl92-tf-dev:1.12.0-rev11\n"
    "    platform: {os: linux, architecture: amd64, features: [nvidia-396-44]}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-nccl90-tf-dev:broadwell_1.12.0-rev2\n"
    "    platform: {os: linux, architecture: amd64, features: [broadwell, nvidia-390-30]}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-nccl92-tf-dev:broadwell_1.12.0-rev8\n"
    "    platform: {os: linux, architecture: amd64, features: [broadwell, nvidia-396-44]}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-nccl92-tf-dev:skylake_1.12.0-rev6\n"
    "    platform: {os: linux, architecture: amd64, features: [nvidia-396-44, skylake]}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-nccl92-tf-dev:skylake512_1.12.0-rev8\n"
    "    platform: {os: linux, architecture: amd64, features: [nvidia-396-44, skylake512]}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-nccl92-tf-dev:nvcap52_1.12.0-rev3\n"
    "    platform: {os: linux, architecture: amd64, features: [nv-compute-5-2, nvidia-396-44]}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-nccl92-tf-dev:nvcap37_1.12.0-rev4\n"
    "    platform: {os: linux, architecture: amd64, features: [nv-compute-3-7, nvidia-396-44]}\n"
    "  - image: 127.0.0.1:5000/qnib/cv-nccl92-tf-dev:broadwell_nvcap52_1.12.0-rev2\n"
    "    platform:\n"
    "      os: linux\n"
    "      architecture: amd64\n"
    "      features:\n"
    "        - broadwell\n"
    "        - nv-compute-5-2\n"
    "        - nvidia-396-44\n";

struct collected {
  int warnings;
  char all[8192];
};

static void collect(void *ud, int level, const char *msg)
{
  struct collected *c = ud;
  if (level != FPULL_LOG_WARN)
    return;
  c->warnings++;
  size_t used = strlen(c->all);
  snprintf(c->all + used, sizeof c->all - used, "%s\n", msg);
}

static struct fpull_spec *parse_ok(const char *text)
{
  struct fpull_spec *s = NULL;
  fpull_err err = {0};
  if (fpull_spec_parse(&s, text, strlen(text), "spec.yaml", &err))
    th_fail(__FILE__, __LINE__, "parse failed: %s", err.msg);
  CHECK(s != NULL);
  return s;
}

static const char *parse_fail(const char *text)
{
  static fpull_err err;
  struct fpull_spec *s = NULL;
  fpull_err_clear(&err);
  CHECK_INT_EQ(fpull_spec_parse(&s, text, strlen(text), "bad.yaml", &err), FPULL_EUSAGE);
  CHECK_NULL(s);
  return err.msg;
}

TEST(eleven_entries)
{
  struct fpull_spec *s = parse_ok(eleven);
  CHECK_STR_EQ(s->image, "127.0.0.1:5000/qnib/cv-tf:1.12.0-rev9");
  CHECK_STR_EQ(s->name, "spec.yaml");
  CHECK_NULL(s->tags);
  CHECK_INT_EQ(s->n_entries, 11);
  CHECK_STR_EQ(s->entries[0].image, "127.0.0.1:5000/qnib/cv-tf-dev:1.12.0-rev11");
  CHECK_STR_EQ(s->entries[0].platform.os, "linux");
  CHECK_STR_EQ(s->entries[0].platform.architecture, "amd64");
  CHECK_NULL(s->entries[0].platform.variant);
  CHECK_NULL(s->entries[0].platform.features);
  CHECK_INT_EQ(s->entries[0].line, 3);
  CHECK_INT_EQ(s->entries[0].column, 5);
  /* Features as written, in their order. */
  const struct fpull_spec_entry *e = &s->entries[6];
  CHECK_INT_EQ(fpull_strv_len(e->platform.features), 2);
  CHECK_STR_EQ(e->platform.features[0], "nvidia-396-44");
  CHECK_STR_EQ(e->platform.features[1], "skylake");
  e = &s->entries[7];
  CHECK_STR_EQ(e->platform.features[1], "skylake512");
  e = &s->entries[10];
  CHECK_INT_EQ(e->line, 23);
  CHECK_INT_EQ(fpull_strv_len(e->platform.features), 3);
  CHECK_STR_EQ(e->platform.features[0], "broadwell");
  CHECK_STR_EQ(e->platform.features[2], "nvidia-396-44");
  CHECK_INT_EQ(e->feature_lines[0], 28);
  CHECK_INT_EQ(e->feature_columns[0], 11);
  CHECK_INT_EQ(e->feature_lines[2], 30);
  fpull_spec_free(s);
  fpull_spec_free(NULL);
}

TEST(all_platform_fields_and_tags)
{
  struct fpull_spec *s =
      parse_ok("image: reg.example:5000/app:v1\n"
               "tags: [latest, \"v1.0\"]\n"
               "manifests:\n"
               "  - image: reg.example:5000/app@sha256:"
               "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
               "    platform:\n"
               "      architecture: arm64\n"
               "      os: linux\n"
               "      variant: v8\n"
               "  - image: app-win:1\n"
               "    platform:\n"
               "      os: windows\n"
               "      architecture: amd64\n"
               "      os.version: 10.0.17763.1879\n"
               "      os.features: [win32k]\n"
               "      features: [sse4]\n");
  CHECK_INT_EQ(fpull_strv_len(s->tags), 2);
  CHECK_STR_EQ(s->tags[1], "v1.0");
  CHECK_INT_EQ(s->n_entries, 2);
  CHECK_STR_EQ(s->entries[0].platform.variant, "v8");
  CHECK_STR_EQ(s->entries[1].platform.os_version, "10.0.17763.1879");
  CHECK_STR_EQ(s->entries[1].platform.os_features[0], "win32k");
  CHECK_STR_EQ(s->entries[1].platform.features[0], "sse4");
  fpull_spec_free(s);
}

TEST(unknown_keys_are_errors_with_position)
{
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifest:\n  - image: x\n"),
                 "bad.yaml:2:1: unknown key \"manifest\"");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - image: x/y:1\n    platfrom: {}\n"),
                 "bad.yaml:4:5: unknown key \"platfrom\" in a manifests entry");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - image: x/y:1\n"
                            "    platform: {os: linux, architecture: amd64, feature: [a]}\n"),
                 "bad.yaml:4:48: unknown key \"feature\" in platform");
}

TEST(missing_pieces)
{
  CHECK_CONTAINS(parse_fail(""), "bad.yaml:1:1: empty spec");
  CHECK_CONTAINS(parse_fail("manifests:\n  - image: x/y:1\n"),
                 "bad.yaml:1:1: the spec has no image:");
  CHECK_CONTAINS(parse_fail("image: a/b:c\n"), "has no manifests");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests: []\n"),
                 "bad.yaml:2:12: manifests must list at least one entry");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests: x\n"), "bad.yaml:2:12: manifests must be "
                                                             "a list");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - platform: {os: linux, "
                            "architecture: amd64}\n"),
                 "bad.yaml:3:5: manifests entry without image");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - image:\n    platform: {}\n"),
                 "bad.yaml:3:11: image must be a string");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - image: x/y:1\n"),
                 "bad.yaml:3:5: manifests entry for x/y:1 without platform");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - image: x/y:1\n    platform:\n"
                            "      os: linux\n"),
                 "bad.yaml:5:7: platform needs both os and architecture");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - image: x/y:1\n    platform: [linux]\n"),
                 "bad.yaml:4:15: platform must be a mapping");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - x/y:1\n"),
                 "bad.yaml:3:5: each entry of manifests must be a mapping");
  CHECK_CONTAINS(parse_fail("[a]\n"), "bad.yaml:1:1: the spec must be a mapping");
}

TEST(bad_references_and_tags)
{
  CHECK_CONTAINS(parse_fail("image: Bad/Upper:c\nmanifests:\n  - image: x/y:1\n"
                            "    platform: {os: linux, architecture: amd64}\n"),
                 "bad.yaml:1:8: image \"Bad/Upper:c\":");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - image: \"x//y\"\n"
                            "    platform: {os: linux, architecture: amd64}\n"),
                 "bad.yaml:3:12: image \"x//y\":");
  CHECK_CONTAINS(parse_fail("image: a/b@sha256:"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
                            "manifests:\n  - image: x/y:1\n"
                            "    platform: {os: linux, architecture: amd64}\n"),
                 "must name a tag, not a digest");
  CHECK_CONTAINS(parse_fail("image: a/b:c\ntags: [ok, \"-bad\"]\nmanifests:\n  - image: x/y:1\n"
                            "    platform: {os: linux, architecture: amd64}\n"),
                 "bad.yaml:2:12: tags: \"-bad\" is not a valid tag");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - image: x/y:1\n"
                            "    platform: {os: linux, architecture: amd64, features: [a, [b]]}\n"),
                 "bad.yaml:4:62: features: each item must be a string");
}

TEST(duplicate_platforms)
{
  const char *m = parse_fail("image: a/b:c\nmanifests:\n"
                             "  - image: x/y:1\n"
                             "    platform: {os: linux, architecture: amd64, features: [a, B]}\n"
                             "  - image: x/y:2\n"
                             "    platform: {os: linux, architecture: arm64}\n"
                             "  - image: x/y:3\n"
                             "    platform: {os: Linux, architecture: x86_64, features: [b, a, "
                             "a]}\n");
  CHECK_CONTAINS(m, "bad.yaml:7:5: duplicate platform: x/y:3 has the same platform as x/y:1 "
                    "(line 3)");
  m = parse_fail("image: a/b:c\nmanifests:\n"
                 "  - image: x/y:1\n"
                 "    platform: {os: linux, architecture: amd64}\n"
                 "  - image: x/y:2\n"
                 "    platform: {os: linux, architecture: amd64, features: []}\n");
  CHECK_CONTAINS(m, "bad.yaml:5:5: duplicate platform");

  /* Different variant, os.version or features: distinct. */
  struct fpull_spec *s = parse_ok("image: a/b:c\nmanifests:\n"
                                  "  - image: x/y:1\n"
                                  "    platform: {os: linux, architecture: amd64}\n"
                                  "  - image: x/y:2\n"
                                  "    platform: {os: linux, architecture: amd64, variant: v3}\n"
                                  "  - image: x/y:3\n"
                                  "    platform: {os: linux, architecture: amd64, features: [a]}\n"
                                  "  - image: x/y:4\n"
                                  "    platform: {os: windows, architecture: amd64, "
                                  "os.version: 10.0.1}\n"
                                  "  - image: x/y:5\n"
                                  "    platform: {os: windows, architecture: amd64, "
                                  "os.version: 10.0.2}\n");
  CHECK_INT_EQ(s->n_entries, 5);
  fpull_spec_free(s);
}

TEST(malformed_yaml)
{
  CHECK_CONTAINS(parse_fail("image: a/b:c\nmanifests:\n  - image: x\n   platform: {\n"),
                 "bad.yaml:4:");
  CHECK_CONTAINS(parse_fail("image: a/b:c\nimage: d/e:f\n"), "bad.yaml:2:1: duplicate key");
  CHECK_CONTAINS(parse_fail("image: &t a/b:c\nmanifests:\n  - image: *t\n"),
                 "bad.yaml:3:12: YAML aliases are not supported");
}

TEST(load_from_file)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/s.yaml", th_tmpdir());
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(eleven, f);
  fclose(f);
  struct fpull_spec *s = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_spec_load(&s, path, &err), 0);
  CHECK_INT_EQ(s->n_entries, 11);
  CHECK_STR_EQ(s->name, path);
  fpull_spec_free(s);

  char missing[4200];
  snprintf(missing, sizeof missing, "%s/none.yaml", th_tmpdir());
  s = NULL;
  CHECK_INT_EQ(fpull_spec_load(&s, missing, &err), FPULL_EUSAGE);
  CHECK_NULL(s);
  CHECK_CONTAINS(err.msg, missing);
  CHECK_CONTAINS(err.msg, "cannot read spec");
}

static struct fpull_tagdb *load_tagdb(void)
{
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  if (fpull_tagdb_load(&db, NULL, NULL, &err))
    th_fail(__FILE__, __LINE__, "tagdb: %s", err.msg);
  return db;
}

TEST(known_features_do_not_warn)
{
  struct fpull_tagdb *db = load_tagdb();
  struct collected col = {0};
  fpull_log_set(collect, &col);
  struct fpull_spec *s = parse_ok(eleven);
  CHECK_INT_EQ(fpull_spec_check_features(s, db), 0);
  CHECK_INT_EQ(col.warnings, 0);
  fpull_spec_free(s);

  s = parse_ok("image: a/b:c\nmanifests:\n"
               "  - image: x/y:1\n"
               "    platform: {os: linux, architecture: amd64, features: [AVX2, x86-64-v3, "
               "Skylake_AVX512, cuda-12-4, nvidia-580-159-04, zen3]}\n");
  CHECK_INT_EQ(fpull_spec_check_features(s, db), 0);
  CHECK_INT_EQ(col.warnings, 0);
  fpull_spec_free(s);
  fpull_log_set(NULL, NULL);
  fpull_tagdb_free(db);
}

TEST(unknown_features_warn_with_position)
{
  struct fpull_tagdb *db = load_tagdb();
  struct collected col = {0};
  fpull_log_set(collect, &col);
  struct fpull_spec *s = parse_ok("image: a/b:c\nmanifests:\n"
                                  "  - image: x/y:1\n"
                                  "    platform:\n"
                                  "      os: linux\n"
                                  "      architecture: amd64\n"
                                  "      features:\n"
                                  "        - broadwell\n"
                                  "        - frobnicator\n"
                                  "        - nvidia-396-xx\n"
                                  "        - nv-compute-5\n"
                                  "        - \"a,b\"\n"
                                  "        - cuda-12-4\n");
  CHECK_INT_EQ(fpull_spec_check_features(s, db), 4);
  CHECK_INT_EQ(col.warnings, 4);
  CHECK_CONTAINS(col.all, "spec.yaml:9:11: feature \"frobnicator\" of x/y:1 is not a feature "
                          "fpull knows");
  CHECK_CONTAINS(col.all, "spec.yaml:10:11: feature \"nvidia-396-xx\" of x/y:1 is not a "
                          "well-formed NVIDIA feature");
  CHECK_CONTAINS(col.all, "spec.yaml:11:11: feature \"nv-compute-5\"");
  CHECK_CONTAINS(col.all, "spec.yaml:12:11: feature \"a,b\" of x/y:1 cannot be given");
  CHECK(strstr(col.all, "\"broadwell\"") == NULL);
  CHECK(strstr(col.all, "\"cuda-12-4\"") == NULL);

  /* Without a tag table only NVIDIA names and syntax are checked. */
  col.warnings = 0;
  CHECK_INT_EQ(fpull_spec_check_features(s, NULL), 3);
  CHECK_INT_EQ(col.warnings, 3);
  fpull_spec_free(s);
  fpull_log_set(NULL, NULL);
  fpull_tagdb_free(db);
}

static struct fpull_platform plat(const char *os, const char *arch, const char *variant,
                                  char **features)
{
  struct fpull_platform p = {0};
  p.os = (char *)os;
  p.architecture = (char *)arch;
  p.variant = (char *)variant;
  p.features = features;
  return p;
}

TEST(index_build_round_trip)
{
  char *f1[] = {"nvidia-396-44", "Skylake", NULL};
  char *f2[] = {"broadwell", "nv-compute-5-2", "nvidia-396-44", NULL};
  char *osf[] = {"win32k", NULL};
  struct fpull_platform p[3] = {plat("linux", "amd64", NULL, f1), plat("linux", "amd64", "v3", f2),
                                plat("windows", "amd64", NULL, NULL)};
  p[2].os_version = "10.0.17763";
  p[2].os_features = osf;
  struct fpull_descriptor d[3] = {
      {.media_type = FPULL_MT_OCI_MANIFEST,
       .digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111",
       .size = 123,
       .platform = &p[0]},
      {.media_type = FPULL_MT_OCI_MANIFEST,
       .digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222",
       .size = 5000000000LL,
       .platform = &p[1]},
      {.media_type = FPULL_MT_DOCKER_MANIFEST,
       .digest = "sha256:3333333333333333333333333333333333333333333333333333333333333333",
       .size = 7,
       .platform = &p[2]},
  };
  for (int type = FPULL_PUSH_OCI; type <= FPULL_PUSH_DOCKER; type++) {
    size_t len = 0;
    char *bytes = fpull_index_build(d, 3, type, &len);
    CHECK_INT_EQ(len, strlen(bytes));
    /* Features byte-exact, in the spec's order and case. */
    CHECK_CONTAINS(bytes, "\"features\":[\"nvidia-396-44\",\"Skylake\"]");
    CHECK_CONTAINS(bytes, "\"size\":5000000000,");
    const char *mt = type == FPULL_PUSH_OCI ? FPULL_MT_OCI_INDEX : FPULL_MT_DOCKER_LIST;
    struct fpull_index *idx = NULL;
    fpull_err err = {0};
    int r = fpull_index_parse(&idx, bytes, len, mt, &err);
    if (r)
      th_fail(__FILE__, __LINE__, "index_parse: %s\n%s", err.msg, bytes);
    CHECK_STR_EQ(idx->media_type, mt);
    CHECK_INT_EQ(idx->n_manifests, 3);
    for (size_t i = 0; i < 3; i++) {
      CHECK_STR_EQ(idx->manifests[i].digest, d[i].digest);
      CHECK_INT_EQ(idx->manifests[i].size, d[i].size);
      CHECK_STR_EQ(idx->manifests[i].media_type, d[i].media_type);
      CHECK_STR_EQ(idx->manifests[i].platform->os, p[i].os);
    }
    CHECK_NULL(idx->manifests[0].platform->variant);
    CHECK_STR_EQ(idx->manifests[1].platform->variant, "v3");
    CHECK_INT_EQ(fpull_strv_len(idx->manifests[1].platform->features), 3);
    CHECK_STR_EQ(idx->manifests[1].platform->features[1], "nv-compute-5-2");
    CHECK_NULL(idx->manifests[2].platform->features);
    CHECK_STR_EQ(idx->manifests[2].platform->os_version, "10.0.17763");
    CHECK_STR_EQ(idx->manifests[2].platform->os_features[0], "win32k");
    fpull_index_free(idx);
    char *digest = fpull_digest_of(bytes, len);
    CHECK(fpull_digest_valid(digest));
    free(digest);
    free(bytes);
  }
}
