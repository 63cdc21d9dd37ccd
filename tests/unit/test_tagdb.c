/* The CPU tag table and CUDA tables: the shipped data obeys the contract (psABI lists,
 * left-out extensions, aliases, names CPU detection can decode), and broken files are
 * refused naming line and column. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/cpuid.h"
#include "fpull/config.h"
#include "fpull/features.h"
#include "harness.h"
#include "select/tagdb.h"
#include "base/util.h"

static struct fpull_tagdb *load_shipped(void)
{
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  int r = fpull_tagdb_load(&db, NULL, NULL, &err);
  if (r)
    th_fail(__FILE__, __LINE__, "loading the shipped table: %s", err.msg);
  return db;
}

static size_t count(const char *const *v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

static int has(const char *const *v, const char *s)
{
  for (size_t i = 0; v && v[i]; i++)
    if (strcmp(v[i], s) == 0)
      return 1;
  return 0;
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

TEST(default_path_follows_data_dir)
{
  const char *dir = getenv("FPULL_DATA_DIR");
  CHECK(dir != NULL);
  char want[4096];
  snprintf(want, sizeof want, "%s/cputags.yaml", dir);
  CHECK_STR_EQ(fpull_tagdb_default_path(), want);
}

TEST(psabi_levels_are_exactly_the_psabi_lists)
{
  static const char *const v2[] = {"cx16",  "sahf",   "popcnt", "sse3",
                                   "ssse3", "sse4_1", "sse4_2", NULL};
  static const char *const v3_add[] = {"avx", "avx2",  "bmi",   "bmi2",    "f16c",
                                       "fma", "lzcnt", "movbe", "osxsave", NULL};
  static const char *const v4_add[] = {"avx512f",  "avx512bw", "avx512cd",
                                       "avx512dq", "avx512vl", NULL};
  struct fpull_tagdb *db = load_shipped();
  const char *const *l2 = fpull_tagdb_isa(db, "x86-64-v2");
  const char *const *l3 = fpull_tagdb_isa(db, "x86-64-v3");
  const char *const *l4 = fpull_tagdb_isa(db, "x86-64-v4");
  CHECK(l2 && l3 && l4);
  CHECK_INT_EQ(count(l2), 7);
  CHECK_INT_EQ(count(l3), 16);
  CHECK_INT_EQ(count(l4), 21);
  for (size_t i = 0; v2[i]; i++)
    CHECK(has(l2, v2[i]) && has(l3, v2[i]) && has(l4, v2[i]));
  for (size_t i = 0; v3_add[i]; i++)
    CHECK(!has(l2, v3_add[i]) && has(l3, v3_add[i]) && has(l4, v3_add[i]));
  for (size_t i = 0; v4_add[i]; i++)
    CHECK(!has(l3, v4_add[i]) && has(l4, v4_add[i]));
  fpull_tagdb_free(db);
}

TEST(gcc_facts_hold)
{
  static const struct {
    const char *tag, *isa;
    int present;
  } rows[] = {
      /* -march=haswell does not enable RDSEED; broadwell adds RDSEED, ADX, PREFETCHW. */
      {"haswell", "rdseed", 0},  {"haswell", "adx", 0},
      {"haswell", "avx2", 1},    {"haswell", "osxsave", 1},
      {"haswell", "xsave", 1},   {"broadwell", "rdseed", 1},
      {"broadwell", "adx", 1},   {"broadwell", "prfchw", 1},
      {"nehalem", "cx16", 1},    {"nehalem", "sahf", 1},
      {"nehalem", "avx", 0},     {"skylake", "aes", 1},
      {"skylake", "avx512f", 0}, {"skylake-avx512", "avx512f", 1},
      {"znver1", "sse4a", 1},    {"znver3", "vaes", 1},
      {"znver4", "avx512f", 1},  {"sapphirerapids", "amx_tile", 1},
      {"x86-64-v3", "mmx", 0},
  };
  struct fpull_tagdb *db = load_shipped();
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *const *isa = fpull_tagdb_isa(db, rows[i].tag);
    if (!isa)
      th_fail(__FILE__, __LINE__, "no tag %s", rows[i].tag);
    if (has(isa, rows[i].isa) != rows[i].present)
      th_fail(__FILE__, __LINE__, "%s %s %s", rows[i].tag, rows[i].present ? "lacks" : "has",
              rows[i].isa);
  }
  fpull_tagdb_free(db);
}

TEST(left_out_extensions_are_in_no_tag)
{
  static const char *const left_out[] = {"sgx",   "xsaves", "pconfig", "wbnoinvd", "fsgsbase",
                                         "pku",   "hle",    "rtm",     "kl",       "widekl",
                                         "uintr", "enqcmd", "hreset",  "tsxldtrk", NULL};
  struct fpull_tagdb *db = load_shipped();
  const char *const *tags = fpull_tagdb_tags(db, "amd64");
  CHECK(count(tags) >= 20);
  for (size_t i = 0; tags[i]; i++)
    for (size_t k = 0; left_out[k]; k++)
      if (has(fpull_tagdb_isa(db, tags[i]), left_out[k]))
        th_fail(__FILE__, __LINE__, "%s lists %s", tags[i], left_out[k]);
  fpull_tagdb_free(db);
}

TEST(every_isa_name_is_decodable)
{
  const char *const *known = fp_cpuid_known_isa();
  struct fpull_tagdb *db = load_shipped();
  const char *const *tags = fpull_tagdb_tags(db, "amd64");
  for (size_t i = 0; tags[i]; i++) {
    const char *const *isa = fpull_tagdb_isa(db, tags[i]);
    for (size_t k = 0; isa[k]; k++)
      if (!has(known, isa[k]))
        th_fail(__FILE__, __LINE__, "%s: CPU detection cannot decode %s", tags[i], isa[k]);
  }
  fpull_tagdb_free(db);
}

TEST(aliases_and_case)
{
  static const struct {
    const char *in, *canonical;
  } rows[] = {
      {"skylake512", "skylake-avx512"},
      {"SKYLAKE_AVX512", "skylake-avx512"},
      {"Skylake-AVX512", "skylake-avx512"},
      {"corei7", "nehalem"},
      {"corei7-avx", "sandybridge"},
      {"core-avx-i", "ivybridge"},
      {"core-avx2", "haswell"},
      {"zen", "znver1"},
      {"zen2", "znver2"},
      {"ZEN3", "znver3"},
      {"zen4", "znver4"},
      {"icelake", "icelake-client"},
      {"mic_knl", "knl"},
      {"x86_64_v3", "x86-64-v3"},
      {"X86-64-V2", "x86-64-v2"},
      {"broadwell", "broadwell"},
      {"avx2", NULL},
      {"nvidia-396-44", NULL},
      {"", NULL},
  };
  struct fpull_tagdb *db = load_shipped();
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *c = fpull_tagdb_canonical(db, rows[i].in);
    if (rows[i].canonical)
      CHECK_STR_EQ(c, rows[i].canonical);
    else
      CHECK_NULL(c);
  }
  /* An alias is not listed as a tag of its own. */
  CHECK(!has(fpull_tagdb_tags(db, "amd64"), "skylake512"));
  CHECK(!has(fpull_tagdb_tags(db, "amd64"), "corei7"));
  fpull_tagdb_free(db);
}

TEST(tags_by_architecture)
{
  struct fpull_tagdb *db = load_shipped();
  const char *const *a = fpull_tagdb_tags(db, "amd64");
  const char *const *x = fpull_tagdb_tags(db, "x86_64");
  CHECK(a == x);
  CHECK_STR_EQ(a[0], "x86-64-v2");
  CHECK(has(a, "haswell") && has(a, "znver4") && has(a, "sapphirerapids"));
  CHECK_INT_EQ(count(fpull_tagdb_tags(db, "riscv64")), 0);
  CHECK_NULL(fpull_tagdb_isa(db, "no-such-tag"));
  fpull_tagdb_free(db);
}

TEST(cuda_tables_loaded_in_order)
{
  struct fpull_tagdb *db = load_shipped();
  CHECK(db->n_cuda >= 40);
  CHECK_INT_EQ(db->cuda[0].v[0], 1);
  for (size_t i = 1; i < db->n_cuda; i++)
    CHECK(fp_version_cmp(&db->cuda[i - 1], &db->cuda[i]) < 0);
  CHECK(db->n_drivers >= 20);
  for (size_t i = 1; i < db->n_drivers; i++) {
    CHECK(fp_version_cmp(&db->drivers[i - 1].driver, &db->drivers[i].driver) <= 0);
    /* A newer driver never supports less. */
    CHECK(fp_version_cmp(&db->drivers[i - 1].cuda, &db->drivers[i].cuda) < 0);
  }
  fpull_tagdb_free(db);
}

TEST(versions_parse_and_compare)
{
  static const struct {
    const char *a, *b;
    int cmp;
  } rows[] = {
      {"550.54.14", "550.54.14", 0}, {"550.54", "550.54.0", 0}, {"396.44", "396.26", 1},
      {"390.30", "390.46", -1},      {"12.4", "12.10", -1},     {"580", "580.65.06", -1},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct fp_version a, b;
    CHECK_INT_EQ(fp_version_parse(&a, rows[i].a, '.'), 0);
    CHECK_INT_EQ(fp_version_parse(&b, rows[i].b, '.'), 0);
    int c = fp_version_cmp(&a, &b);
    CHECK_INT_EQ(c < 0 ? -1 : c > 0, rows[i].cmp);
  }
  static const char *const bad[] = {"", "1..2", "1.", ".1", "a.1", "1.2.3.4.5", "-1", NULL};
  for (size_t i = 0; bad[i]; i++) {
    struct fp_version v;
    if (fp_version_parse(&v, bad[i], '.') == 0)
      th_fail(__FILE__, __LINE__, "\"%s\" parsed as a version", bad[i]);
  }
}

/* Each broken table is refused with FPULL_EUSAGE and a message naming file:line:col. */
TEST(broken_tables_name_line_and_column)
{
  static const struct {
    const char *text, *want;
  } rows[] = {
      {"tags:\n  - name: a\n    isa: [x\n", "t.yaml:4:1"},
      {"tags:\n  - name: a\n    isa: [x]\n    colour: red\n", "t.yaml:4:5: unknown key colour"},
      {"tags:\n  - name: a\n    isa: [x]\n  - name: A\n    isa: [y]\n",
       "t.yaml:4:11: duplicate tag a"},
      {"tags:\n  - name: a\n    isa: []\n", "t.yaml:2:5: tag has an empty isa list: a"},
      {"tags:\n  - name: a\n    isa: [\"bad name\"]\n", "t.yaml:3:11: isa entry"},
      {"tags:\n  - name: \"a b\"\n    isa: [x]\n", "t.yaml:2:11: tag name"},
      {"tags:\n  - name: a\n    isa: x\n", "t.yaml:3:10: isa must be a list"},
      {"tags: 3\n", "t.yaml:1:7: \"tags\" must be a list"},
      {"- a\n", "t.yaml:1:1: expected a mapping"},
      {"flags: []\n", "t.yaml:1:1: unknown key flags"},
  };
  char path[4096];
  snprintf(path, sizeof path, "%s/t.yaml", th_tmpdir());
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    write_file(path, rows[i].text);
    struct fpull_tagdb *db = NULL;
    fpull_err err = {0};
    CHECK_INT_EQ(fpull_tagdb_load(&db, path, NULL, &err), FPULL_EUSAGE);
    CHECK_NULL(db);
    CHECK_CONTAINS(err.msg, rows[i].want);
  }
}

TEST(missing_table_is_a_usage_error)
{
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_tagdb_load(&db, "/nonexistent/cputags.yaml", NULL, &err), FPULL_EUSAGE);
  CHECK_CONTAINS(err.msg, "/nonexistent/cputags.yaml");
}

TEST(broken_cuda_table_is_refused)
{
  static const struct {
    const char *text, *want;
  } rows[] = {
      {"releases: [\"1.0\", \"2.0\", \"1.1\"]\ndrivers: []\n", "cuda.yaml:1:26: releases must"},
      {"releases: [\"1\"]\ndrivers: []\n", "cuda.yaml:1:12: not a version"},
      {"releases: []\ndrivers:\n  - {cuda: \"9.2\", driver: \"x\"}\n",
       "cuda.yaml:3:27: not a version"},
      {"releases: []\n", "\"drivers\" must be a list"},
  };
  char tags[4096], cuda[4096];
  snprintf(tags, sizeof tags, "%s/cputags.yaml", th_tmpdir());
  snprintf(cuda, sizeof cuda, "%s/cuda.yaml", th_tmpdir());
  write_file(tags, "tags:\n  - name: a\n    isa: [x]\n");
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    write_file(cuda, rows[i].text);
    struct fpull_tagdb *db = NULL;
    fpull_err err = {0};
    CHECK_INT_EQ(fpull_tagdb_load(&db, tags, NULL, &err), FPULL_EUSAGE);
    CHECK_CONTAINS(err.msg, rows[i].want);
  }
}

/* A table of one's own without cuda.yaml beside it uses the shipped CUDA tables. */
TEST(own_table_uses_shipped_cuda_tables)
{
  char tags[4096];
  snprintf(tags, sizeof tags, "%s/cputags.yaml", th_tmpdir());
  write_file(tags, "tags:\n  - name: Mine\n    architecture: aarch64\n    aliases: [me]\n"
                   "    isa: [b, a, b]\n");
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_tagdb_load(&db, tags, NULL, &err), 0);
  CHECK(db->n_cuda > 0);
  CHECK_STR_EQ(fpull_tagdb_canonical(db, "ME"), "mine");
  const char *const *isa = fpull_tagdb_isa(db, "mine");
  CHECK_INT_EQ(count(isa), 2);
  CHECK_STR_EQ(isa[0], "a");
  CHECK_STR_EQ(isa[1], "b");
  CHECK_STR_EQ(fpull_tagdb_tags(db, "arm64")[0], "mine");
  CHECK_INT_EQ(count(fpull_tagdb_tags(db, "amd64")), 0);
  fpull_tagdb_free(db);
}

TEST(user_tags_from_config)
{
  char *isa_a[] = {"AVX2", "fma", "avx2", NULL};
  char *isa_b[] = {"avx2", NULL};
  struct fpull_user_tag user[] = {
      {.name = "MyNode", .architecture = NULL, .isa = isa_a},
      {.name = "haswell", .architecture = "x86_64", .isa = isa_b},
  };
  struct fpull_config cfg = {.detect = 1, .cpu_tags = user, .n_cpu_tags = 2};
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_tagdb_load(&db, NULL, &cfg, &err), 0);
  CHECK_STR_EQ(fpull_tagdb_canonical(db, "mynode"), "mynode");
  const char *const *isa = fpull_tagdb_isa(db, "MYNODE");
  CHECK_INT_EQ(count(isa), 2);
  CHECK_STR_EQ(isa[0], "avx2");
  CHECK_STR_EQ(isa[1], "fma");
  /* A user tag replaces the shipped one of that name; its aliases go with it. */
  CHECK_INT_EQ(count(fpull_tagdb_isa(db, "haswell")), 1);
  CHECK_NULL(fpull_tagdb_canonical(db, "core-avx2"));
  const char *const *tags = fpull_tagdb_tags(db, "amd64");
  CHECK(has(tags, "mynode"));
  size_t n_haswell = 0;
  for (size_t i = 0; tags[i]; i++)
    n_haswell += strcmp(tags[i], "haswell") == 0;
  CHECK_INT_EQ(n_haswell, 1);
  fpull_tagdb_free(db);
}

TEST(bad_user_tags_are_refused)
{
  char *good[] = {"avx2", NULL};
  char *bad_isa[] = {"avx2", "no good", NULL};
  char *none[] = {NULL};
  static const char *const want[] = {"bad tag name", "bad ISA name \"no good\"",
                                     "has no ISA extensions"};
  struct fpull_user_tag rows[] = {
      {.name = "a/b", .isa = good},
      {.name = "ok", .isa = bad_isa},
      {.name = "empty", .isa = none},
  };
  for (size_t i = 0; i < 3; i++) {
    struct fpull_config cfg = {
        .path = "my.yaml", .detect = 1, .cpu_tags = &rows[i], .n_cpu_tags = 1};
    struct fpull_tagdb *db = NULL;
    fpull_err err = {0};
    CHECK_INT_EQ(fpull_tagdb_load(&db, NULL, &cfg, &err), FPULL_EUSAGE);
    CHECK_NULL(db);
    CHECK_CONTAINS(err.msg, "my.yaml: cpu-tags");
    CHECK_CONTAINS(err.msg, want[i]);
  }
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f)
    th_fail(__FILE__, __LINE__, "cannot read %s", path);
  struct fp_buf b = {.max = 1u << 22};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    CHECK_INT_EQ(fp_buf_append(&b, chunk, n), 0);
  fclose(f);
  return b.data;
}

/* The shipped table is what scripts/gen-cputags makes of the gcc it names; with another
 * gcc installed there is nothing to compare against. */
TEST(table_is_what_the_script_generates)
{
  cleanup_free char *shipped = slurp(th_src("data/cputags.yaml"));
  char want_ver[64] = "";
  char *at = strstr(shipped, "from gcc ");
  if (at && sscanf(at + 9, "%63[0-9.]", want_ver) != 1)
    want_ver[0] = '\0';
  CHECK(want_ver[0] != '\0');
  FILE *p = popen("gcc -dumpfullversion 2>/dev/null", "r");
  CHECK(p != NULL);
  char have_ver[64] = "";
  if (!fgets(have_ver, sizeof have_ver, p))
    have_ver[0] = '\0';
  pclose(p);
  have_ver[strcspn(have_ver, "\n")] = '\0';
  if (strcmp(have_ver, want_ver) != 0) {
    fprintf(stderr, "gcc %s installed, table from gcc %s: not compared\n", have_ver, want_ver);
    return;
  }
  /* The arm64 and ppc64le parts come from Debian's cross compilers (scripts/deps.sh). */
  if (system("command -v aarch64-linux-gnu-gcc >/dev/null && "
             "command -v powerpc64le-linux-gnu-gcc >/dev/null") != 0) {
    fprintf(stderr, "cross compilers not installed: not compared\n");
    return;
  }
  char cmd[8192], out[4096];
  snprintf(out, sizeof out, "%s/gen.yaml", th_tmpdir());
  snprintf(cmd, sizeof cmd, "python3 '%s' -o '%s'", th_src("scripts/gen-cputags"), out);
  CHECK_INT_EQ(system(cmd), 0);
  cleanup_free char *generated = slurp(out);
  CHECK_STR_EQ(generated, shipped);
}

/* The CUDA 13 rows (release notes of 13.1, 13.2, 13.3): each driver minimum gives exactly
 * its release, one patch level below gives the release before. */
TEST(cuda_13_driver_rows)
{
  struct fpull_tagdb *db = load_shipped();
  static const struct {
    const char *driver, *has, *lacks;
  } rows[] = {
      {"nvidia-590-44-01", "cuda-13-1", "cuda-13-2"},
      {"nvidia-590-44", "cuda-13-0", "cuda-13-1"},
      {"nvidia-595-45-04", "cuda-13-2", "cuda-13-3"},
      {"nvidia-595-45-03", "cuda-13-1", "cuda-13-2"},
      {"nvidia-610-43-02", "cuda-13-3", "cuda-13-4"},
      {"nvidia-610-43-01", "cuda-13-2", "cuda-13-3"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    struct fpull_featureset *fs = fpull_featureset_new();
    fpull_err err = {0};
    CHECK_INT_EQ(fpull_featureset_add(fs, rows[i].driver, FPULL_SRC_CLI, db, &err), 0);
    CHECK_INT_EQ(fpull_featureset_imply(fs, db, &err), 0);
    if (!fpull_featureset_has(fs, rows[i].has, db))
      th_fail(__FILE__, __LINE__, "%s lacks %s", rows[i].driver, rows[i].has);
    if (fpull_featureset_has(fs, rows[i].lacks, db))
      th_fail(__FILE__, __LINE__, "%s has %s", rows[i].driver, rows[i].lacks);
    fpull_featureset_free(fs);
  }
  /* cuda-13-4 is a release (documented) and implies the ones before it. */
  struct fpull_featureset *fs = fpull_featureset_new();
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_featureset_add(fs, "cuda-13-4", FPULL_SRC_CLI, db, &err), 0);
  CHECK_INT_EQ(fpull_featureset_imply(fs, db, &err), 0);
  CHECK(fpull_featureset_has(fs, "cuda-13-3", db));
  CHECK(fpull_featureset_has(fs, "cuda-13-1", db));
  fpull_featureset_free(fs);
  fpull_tagdb_free(db);
}

/* Names in text (whitespace-separated words after '#' comments are dropped) that the table has
 * neither as a tag nor as an alias, counted; each one named. */
static size_t missing_names(const struct fpull_tagdb *db, const char *text, const char *whose)
{
  size_t missing = 0, n = 0;
  for (const char *p = text; *p;) {
    if (*p == '#') {
      p += strcspn(p, "\n");
      continue;
    }
    size_t len = strcspn(p, " \t\n");
    if (len == 0) {
      p++;
      continue;
    }
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)len, p);
    p += len;
    n++;
    if (strcmp(name, "native") == 0)
      continue;
    if (!fpull_tagdb_canonical(db, name)) {
      th_fail(__FILE__, __LINE__, "%s knows -march=%s, the table does not", whose, name);
      missing++;
    }
  }
  CHECK(n > 40);
  return missing;
}

/* Every 64-bit -march name of the installed gcc (its own list, as an invalid name makes it
 * print), and of the newest gcc and clang read (their lists in tests/fixtures/march, named
 * by commit), is a tag or an alias (issue 42: amdfam10, k8-sse3, nocona, nano, arrowlake, the
 * Zhaoxin names were missing). */
TEST(every_march_name_of_the_compilers_is_known)
{
  struct fpull_tagdb *db = load_shipped();
  FILE *p = popen("LC_ALL=C gcc -m64 -march=fpull-no-such-cpu -E -x c /dev/null 2>&1 | "
                  "sed -n 's/.*valid arguments to .-march=. switch are: //p'",
                  "r");
  CHECK(p != NULL);
  char line[8192] = "";
  if (!fgets(line, sizeof line, p))
    line[0] = '\0';
  pclose(p);
  if (line[0])
    CHECK_INT_EQ(missing_names(db, line, "the installed gcc"), 0);
  else
    fprintf(stderr, "no gcc to ask for its -march names\n");
  static const char *const lists[] = {"tests/fixtures/march/gcc15-x86-64.txt",
                                      "tests/fixtures/march/clang18-x86-64.txt"};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
    cleanup_free char *text = slurp(th_src(lists[i]));
    CHECK_INT_EQ(missing_names(db, text, lists[i]), 0);
  }
  /* And --features takes them as tags: */
  CHECK_STR_EQ(fpull_tagdb_canonical(db, "amdfam10"), "amdfam10");
  CHECK_STR_EQ(fpull_tagdb_canonical(db, "barcelona"), "amdfam10");
  CHECK_STR_EQ(fpull_tagdb_canonical(db, "znver5"), "znver5");
  CHECK_STR_EQ(fpull_tagdb_canonical(db, "raptorlake"), "alderlake");
  fpull_tagdb_free(db);
}

/* Where compilers give a name different sets, the table's source says so. */
TEST(compiler_differences_are_stated)
{
  cleanup_free char *shipped = slurp(th_src("data/cputags.yaml"));
  CHECK(strstr(shipped, "-march=sapphirerapids without avx512vp2intersect") != NULL);
  CHECK(strstr(shipped, "-march=tremont; clang 18 without cldemote, movdiri, movdir64b, "
                        "waitpkg") != NULL);
  CHECK(strstr(shipped, "-march=knl; gcc 15 no longer knows it") != NULL);
}

/* The table's intrinsic-only key is the evidence's verdict, architecture by architecture
 * (tests/evidence/verdicts.txt for amd64, verdicts-arm64.txt, verdicts-ppc64le.txt, written
 * by tests/evidence/decide), extension for extension: every tag of the architecture that
 * lists the extension gates on it exactly when the verdict says "gates". */
static void check_verdicts(struct fpull_tagdb *db, const char *arch, const char *file, size_t min_n,
                           size_t min_io)
{
  cleanup_free char *v = slurp(th_src(file));
  cleanup_free char *all = slurp(th_src(file));
  const char *const *tags = fpull_tagdb_tags(db, arch);
  size_t n = 0, io = 0;
  CHECK(v != NULL);
  for (char *line = v; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    char ext[64], verdict[32];
    if (line[0] != '#' && sscanf(line, "%63s %31s", ext, verdict) == 2) {
      n++;
      int only = strcmp(verdict, "intrinsic-only") == 0;
      io += only;
      for (size_t i = 0; tags[i]; i++)
        for (const char *const *isa = fpull_tagdb_isa(db, tags[i]); *isa; isa++)
          if (strcmp(*isa, ext) == 0 && fpull_tagdb_tag_isa_gates(db, tags[i], ext) == only)
            th_fail(__FILE__, __LINE__, "%s %s (of %s): verdict %s, the table %s", arch, ext,
                    tags[i], verdict, only ? "gates on it" : "does not");
    }
    line = nl ? nl + 1 : NULL;
  }
  /* Every extension of the architecture's tags has a verdict. */
  for (size_t i = 0; tags[i]; i++)
    for (const char *const *isa = fpull_tagdb_isa(db, tags[i]); *isa; isa++) {
      char pat[80];
      snprintf(pat, sizeof pat, "\n%s ", *isa);
      if (!strstr(all, pat))
        th_fail(__FILE__, __LINE__, "%s %s (of %s) has no verdict", arch, *isa, tags[i]);
    }
  CHECK(n >= min_n);
  CHECK(io >= min_io);
}

TEST(intrinsic_only_is_the_evidence)
{
  struct fpull_tagdb *db = load_shipped();
  check_verdicts(db, "amd64", "tests/evidence/verdicts.txt", 80, 20);
  check_verdicts(db, "arm64", "tests/evidence/verdicts-arm64.txt", 30, 3);
  check_verdicts(db, "ppc64le", "tests/evidence/verdicts-ppc64le.txt", 8, 1);
  /* RNDR is reached only through __rndr: a Neoverse N2 without rng keeps its tag. On POWER,
   * MMA only through its builtins. */
  CHECK(!fpull_tagdb_tag_isa_gates(db, "neoverse-n2", "rng"));
  CHECK(!fpull_tagdb_tag_isa_gates(db, "power10", "mma"));
  /* Pointer authentication gates: -mbranch-protection=standard code built for an armv8.3+
   * core returns with RETAA, which faults on a core without it. */
  CHECK(fpull_tagdb_tag_isa_gates(db, "neoverse-n2", "pauth"));
  fpull_tagdb_free(db);
}

/* The table's intrinsic-only key is per architecture: one name, two extensions. A list holds
 * for every architecture (a site's own table may use one). */
TEST(intrinsic_only_per_architecture)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/cputags.yaml", th_tmpdir());
  write_file(path, "intrinsic-only:\n  amd64: [foo]\n  aarch64: [bar]\n"
                   "tags:\n"
                   "  - name: xa\n    architecture: amd64\n    isa: [foo, bar, both]\n"
                   "  - name: xb\n    architecture: arm64\n    isa: [foo, bar, both]\n");
  fpull_err err = {0};
  struct fpull_tagdb *db = NULL;
  CHECK_INT_EQ(fpull_tagdb_load(&db, path, NULL, &err), 0);
  CHECK(!fpull_tagdb_tag_isa_gates(db, "xa", "foo"));
  CHECK(fpull_tagdb_tag_isa_gates(db, "xa", "bar"));
  CHECK(fpull_tagdb_tag_isa_gates(db, "xb", "foo"));
  CHECK(!fpull_tagdb_tag_isa_gates(db, "XB", "BAR")); /* aarch64 is arm64 */
  CHECK(fpull_tagdb_tag_isa_gates(db, "xb", "both"));
  /* Naming no tag: intrinsic-only only where every architecture listing it says so. */
  CHECK(fpull_tagdb_isa_gates(db, "foo"));
  CHECK(fpull_tagdb_isa_gates(db, "bar"));
  fpull_tagdb_free(db);
  db = NULL;
  write_file(path, "intrinsic-only: [foo]\n"
                   "tags:\n"
                   "  - name: xa\n    architecture: amd64\n    isa: [foo, both]\n"
                   "  - name: xb\n    architecture: arm64\n    isa: [foo, both]\n");
  CHECK_INT_EQ(fpull_tagdb_load(&db, path, NULL, &err), 0);
  CHECK(!fpull_tagdb_tag_isa_gates(db, "xa", "foo"));
  CHECK(!fpull_tagdb_tag_isa_gates(db, "xb", "foo"));
  CHECK(!fpull_tagdb_isa_gates(db, "foo"));
  CHECK(fpull_tagdb_isa_gates(db, "both"));
  fpull_tagdb_free(db);
  /* A mapping's key must name an architecture, its value must be a list. */
  write_file(path, "intrinsic-only:\n  amd64: foo\ntags:\n"
                   "  - name: xa\n    architecture: amd64\n    isa: [foo]\n");
  db = NULL;
  CHECK(fpull_tagdb_load(&db, path, NULL, &err) != 0);
  fpull_err_clear(&err);
}
