/* The candidates of an index (lib/select/candidates.c): nested indexes, their bounds and loops,
 * entries without platform, and the entries passed over, over documents held in memory
 * (a loop cannot be served by a registry: its digests would not verify). */
#include <stdio.h>
#include <string.h>

#include "select/candidates.h"
#include "harness.h"
#include "base/util.h"

#define MT_M "application/vnd.oci.image.manifest.v1+json"
#define MT_I "application/vnd.oci.image.index.v1+json"

/* Documents by a short name; the digest of name N is sha256:N padded with zeros. */
struct doc {
  char digest[80];
  char *json;
};
static struct doc docs[16];
static size_t n_docs;
static int index_fetches, config_fetches;

static const char *digest_of(int n)
{
  static char buf[8][80];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "sha256:%064x", n);
  return buf[k];
}

/* One descriptor: "m N" a manifest, "i N" an index, "x N TYPE" another type; a platform
 * "os/arch" follows after a blank unless it is "-". */
static char *entry(const char *kind, int n, const char *plat)
{
  const char *mt = kind[0] == 'm' ? MT_M : kind[0] == 'i' ? MT_I : kind + 2;
  char p[128] = "";
  if (plat && strcmp(plat, "-") != 0) {
    char os[32], arch[32];
    sscanf(plat, "%31[^/]/%31s", os, arch);
    snprintf(p, sizeof p, ",\"platform\":{\"os\":\"%s\",\"architecture\":\"%s\"}", os, arch);
  }
  return fp_xasprintf("{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":1%s}", mt, digest_of(n), p);
}

static void add_index(int n, char **entries, size_t k)
{
  struct fp_buf b = {0};
  fp_buf_append(&b, "{\"schemaVersion\":2,\"manifests\":[", 32);
  for (size_t i = 0; i < k; i++) {
    if (i)
      fp_buf_append(&b, ",", 1);
    fp_buf_append(&b, entries[i], strlen(entries[i]));
    free(entries[i]);
  }
  fp_buf_append(&b, "]}", 3);
  snprintf(docs[n_docs].digest, sizeof docs[n_docs].digest, "%s", digest_of(n));
  docs[n_docs++].json = b.data;
}

static int fetch_index(void *ud, const struct fpull_descriptor *d, struct fpull_index **out,
                       fpull_err *err)
{
  (void)ud;
  index_fetches++;
  for (size_t i = 0; i < n_docs; i++)
    if (strcmp(docs[i].digest, d->digest) == 0)
      return fpull_index_parse(out, docs[i].json, strlen(docs[i].json), NULL, err);
  return fpull_err_set(err, FPULL_ENOTFOUND, "no document %s", d->digest);
}

/* Every config says linux/amd64, but manifest 9's is an artifact. */
static int platform(void *ud, const struct fpull_descriptor *d, struct fpull_platform **out,
                    char **why, fpull_err *err)
{
  (void)ud;
  (void)err;
  config_fetches++;
  if (strcmp(d->digest, digest_of(9)) == 0) {
    *why = fp_xstrdup("not a container image: an artifact");
    return 0;
  }
  struct fpull_platform *p = fp_xcalloc(1, sizeof *p);
  p->os = fp_xstrdup("linux");
  p->architecture = fp_xstrdup("amd64");
  *out = p;
  return 0;
}

static const struct fp_cand_io io = {.fetch_index = fetch_index, .platform = platform};

static void reset(void)
{
  for (size_t i = 0; i < n_docs; i++)
    free(docs[i].json);
  n_docs = 0;
  index_fetches = config_fetches = 0;
}

static int build(struct fp_cands *c, int top, fpull_err *err)
{
  struct fpull_index *idx = NULL;
  struct fpull_descriptor d = {.digest = (char *)digest_of(top)};
  int rc = fetch_index(NULL, &d, &idx, err);
  index_fetches = 0;
  if (rc == 0)
    rc = fp_cands_build(c, idx, digest_of(top), &io, err);
  fpull_index_free(idx);
  return rc;
}

TEST(nested_rows_in_document_order_with_parents)
{
  reset();
  add_index(
      1, (char *[]){entry("m", 2, "linux/arm64"), entry("i", 3, "-"), entry("m", 4, "linux/amd64")},
      3);
  add_index(3, (char *[]){entry("m", 5, "linux/amd64"), entry("m", 6, "linux/ppc64le")}, 2);
  struct fp_cands c;
  fpull_err err = {0};
  CHECK_INT_EQ(build(&c, 1, &err), 0);
  CHECK_INT_EQ((int)c.n, 5);
  const int digests[] = {2, 3, 5, 6, 4};
  const long parents[] = {-1, -1, 1, 1, -1};
  for (size_t i = 0; i < c.n; i++) {
    CHECK_STR_EQ(c.d[i].digest, digest_of(digests[i]));
    CHECK_INT_EQ((int)c.c[i].parent, (int)parents[i]);
  }
  CHECK(c.c[1].followed);
  CHECK_CONTAINS(c.c[1].skip, "nested index with 2 entries");
  CHECK_INT_EQ(c.c[2].depth, 2);
  CHECK_NULL(c.c[2].skip);
  CHECK_INT_EQ(config_fetches, 0);
  fp_cands_free(&c);
  reset();
}

TEST(nested_descriptor_platform_filters_its_entries)
{
  reset();
  add_index(1, (char *[]){entry("i", 3, "linux/arm64")}, 1);
  add_index(3, (char *[]){entry("m", 5, "linux/amd64"), entry("m", 6, "linux/arm64")}, 2);
  struct fp_cands c;
  fpull_err err = {0};
  CHECK_INT_EQ(build(&c, 1, &err), 0);
  CHECK_INT_EQ((int)c.n, 3);
  CHECK_CONTAINS(c.c[1].skip, "outside the platform linux/arm64");
  CHECK_NULL(c.c[2].skip);
  fp_cands_free(&c);
  reset();
}

TEST(index_that_contains_itself_is_refused)
{
  reset();
  add_index(1, (char *[]){entry("m", 2, "linux/amd64"), entry("i", 3, "-")}, 2);
  add_index(3, (char *[]){entry("i", 1, "-")}, 1);
  struct fp_cands c;
  fpull_err err = {0};
  CHECK_INT_EQ(build(&c, 1, &err), FPULL_EUNSAFE);
  CHECK_CONTAINS(err.msg, "contains itself");
  CHECK_NULL(c.d);
  /* Directly, too. */
  reset();
  add_index(1, (char *[]){entry("i", 1, "-")}, 1);
  CHECK_INT_EQ(build(&c, 1, &err), FPULL_EUNSAFE);
  CHECK_CONTAINS(err.msg, "contains itself");
  reset();
}

TEST(fifth_level_is_passed_over)
{
  reset();
  for (int n = 1; n <= 5; n++)
    add_index(n, (char *[]){entry("m", 100 + n, "linux/amd64"), entry("i", n + 1, "-")}, 2);
  add_index(6, (char *[]){entry("m", 200, "linux/amd64")}, 1);
  struct fp_cands c;
  fpull_err err = {0};
  CHECK_INT_EQ(build(&c, 1, &err), 0);
  /* Levels 1..4 each list a manifest and an index; the index listed at level 4 is not
   * read. */
  CHECK_INT_EQ((int)c.n, 8);
  CHECK_INT_EQ(c.c[7].depth, FP_INDEX_DEPTH_MAX);
  CHECK_CONTAINS(c.c[7].skip, "deeper than 4 levels");
  CHECK_INT_EQ(index_fetches, 3);
  fp_cands_free(&c);
  reset();
}

TEST(repeated_nested_index_fetched_once_and_rows_bounded)
{
  reset();
  char **many = fp_xcalloc(9000, sizeof *many);
  for (int i = 0; i < 9000; i++)
    many[i] = entry("m", 5, "linux/amd64");
  add_index(3, many, 9000);
  free(many);
  add_index(1, (char *[]){entry("i", 3, "-"), entry("i", 3, "-")}, 2);
  struct fp_cands c;
  fpull_err err = {0};
  /* 2 x (1 + 9000) rows: over the bound, refused instead of held. */
  CHECK_INT_EQ(build(&c, 1, &err), FPULL_EUNSAFE);
  CHECK_CONTAINS(err.msg, "more than 16384 entries");
  CHECK_INT_EQ(index_fetches, 1);
  reset();
  add_index(1, (char *[]){entry("i", 3, "-"), entry("i", 3, "-")}, 2);
  add_index(3, (char *[]){entry("m", 5, "linux/amd64")}, 1);
  CHECK_INT_EQ(build(&c, 1, &err), 0);
  CHECK_INT_EQ((int)c.n, 4);
  CHECK_INT_EQ(index_fetches, 1);
  fp_cands_free(&c);
  reset();
}

TEST(entries_without_platform_ask_their_config_once_per_digest)
{
  reset();
  add_index(1,
            (char *[]){entry("m", 5, "-"), entry("m", 5, "-"), entry("m", 9, "-"),
                       entry("x application/octet-stream", 7, "-"), entry("m", 8, "linux/amd64"),
                       entry("m", 9, "-")},
            6);
  struct fp_cands c;
  fpull_err err = {0};
  CHECK_INT_EQ(build(&c, 1, &err), 0);
  CHECK_INT_EQ((int)c.n, 6);
  CHECK(c.c[0].from_config && c.c[1].from_config);
  CHECK_CONTAINS(c.c[5].skip, "not a container image");
  CHECK_STR_EQ(c.d[1].platform->architecture, "amd64");
  CHECK_CONTAINS(c.c[2].skip, "not a container image");
  CHECK_CONTAINS(c.c[3].skip, "neither an image manifest nor an index");
  CHECK(!c.c[4].from_config);
  /* 5 once (the second entry reuses it), 9 once (passed over twice); never for the
   * octet-stream entry. */
  CHECK_INT_EQ(config_fetches, 2);
  fp_cands_free(&c);
  reset();
}
