/* Progress reports (lib/pull/progress.c): byte counts as the blob sink sees them, a restart that
 * discards what a server sent before ignoring a Range request, cached layers counted apart
 * from downloaded ones. And fpull_match_why over ranks that the GPU preflight renumbered. */
#include <stdlib.h>
#include <string.h>

#include "fpull/features.h"
#include "fpull/match.h"
#include "harness.h"
#include "pull/progress.h"
#include "base/util.h"

struct seen {
  int events[64];
  struct fpull_progress last[64];
  size_t n;
};

static void record(void *ud, const struct fpull_progress *p)
{
  struct seen *s = ud;
  if (s->n < 64) {
    s->events[s->n] = p->event;
    s->last[s->n++] = *p;
  }
}

static uint64_t held;
static int inner_write(void *ud, const void *data, size_t len, fpull_err *err)
{
  held += len;
  return 0;
}
static int inner_restart(void *ud, uint64_t offset, fpull_err *err)
{
  held = offset;
  return 0;
}

TEST(bytes_restart_cached_and_finish)
{
  struct fpull_descriptor layers[2] = {{.digest = "sha256:aa", .size = 1000},
                                       {.digest = "sha256:bb", .size = 500}};
  struct fpull_manifest m = {.layers = layers, .n_layers = 2};
  struct seen s = {0};
  struct fp_progress p;
  fp_progress_begin(&p, record, &s, "r/x:1", &m);
  CHECK_INT_EQ(s.events[0], FPULL_PROGRESS_START);
  CHECK_INT_EQ(s.last[0].bytes_total, 1500);
  CHECK_INT_EQ(s.last[0].blobs_total, 2);
  CHECK_STR_EQ(s.last[0].reference, "r/x:1");

  const struct fpull_blob_sink inner = {.write = inner_write, .restart = inner_restart};
  struct fp_progress_sink ps;
  const struct fpull_blob_sink *k = fp_progress_sink_wrap(&ps, &p, &layers[0], &inner);
  fpull_err err = {0};
  char buf[400] = {0};
  CHECK_INT_EQ(k->restart(k->ud, 0, &err), 0);
  CHECK_INT_EQ(s.n, 1); /* nothing moved: no report */
  CHECK_INT_EQ(k->write(k->ud, buf, 300, &err), 0);
  CHECK_INT_EQ(k->write(k->ud, buf, 400, &err), 0);
  CHECK_INT_EQ(s.last[s.n - 1].event, FPULL_PROGRESS_BYTES);
  CHECK_INT_EQ(s.last[s.n - 1].done, 700);
  CHECK_INT_EQ(s.last[s.n - 1].total, 1000);
  CHECK_INT_EQ(s.last[s.n - 1].bytes_done, 700);
  /* The server ignored a Range request: the sink starts over, and so does the count. */
  CHECK_INT_EQ(k->restart(k->ud, 0, &err), 0);
  CHECK_INT_EQ(s.last[s.n - 1].bytes_done, 0);
  CHECK_INT_EQ(k->write(k->ud, buf, 400, &err), 0);
  CHECK_INT_EQ(k->write(k->ud, buf, 400, &err), 0);
  CHECK_INT_EQ(k->write(k->ud, buf, 200, &err), 0);
  CHECK_INT_EQ(held, 1000);
  CHECK_INT_EQ(s.last[s.n - 1].bytes_done, 1000);
  fp_progress_blob_done(&p, &layers[0]);
  CHECK_INT_EQ(s.last[s.n - 1].event, FPULL_PROGRESS_BLOB_DONE);
  CHECK_INT_EQ(s.last[s.n - 1].blobs_done, 1);

  fp_progress_cached(&p, &layers[1]);
  const struct fpull_progress *c = &s.last[s.n - 1];
  CHECK_INT_EQ(c->event, FPULL_PROGRESS_CACHED);
  CHECK_STR_EQ(c->digest, "sha256:bb");
  CHECK_INT_EQ(c->blobs_done, 2);
  CHECK_INT_EQ(c->blobs_cached, 1);
  CHECK_INT_EQ(c->bytes_cached, 500);
  CHECK_INT_EQ(c->bytes_done, 1000); /* cached bytes are not downloaded bytes */

  fp_progress_unpack(&p, 1);
  CHECK_INT_EQ(s.last[s.n - 1].event, FPULL_PROGRESS_UNPACK);
  CHECK_INT_EQ(s.last[s.n - 1].layer, 1);
  fp_progress_end(&p, 1);
  CHECK_INT_EQ(s.last[s.n - 1].event, FPULL_PROGRESS_FINISH);
}

TEST(no_callback_reports_nothing)
{
  struct fpull_descriptor layer = {.digest = "sha256:aa", .size = 10};
  struct fpull_manifest m = {.layers = &layer, .n_layers = 1};
  struct fp_progress p;
  fp_progress_begin(&p, NULL, NULL, "r/x:1", &m);
  const struct fpull_blob_sink inner = {.write = inner_write, .restart = inner_restart};
  struct fp_progress_sink ps;
  CHECK(fp_progress_sink_wrap(&ps, &p, &layer, &inner) == &inner);
  CHECK(fp_progress_sink_wrap(&ps, NULL, &layer, &inner) == &inner);
  fp_progress_cached(NULL, &layer);
  fp_progress_cached(&p, &layer);
  fp_progress_end(&p, 1);
}

static struct fpull_descriptor entry(const char *variant, const char *f1, const char *f2)
{
  struct fpull_platform *p = fp_xcalloc(1, sizeof *p);
  p->os = fp_xstrdup("linux");
  p->architecture = fp_xstrdup("amd64");
  p->variant = fp_xstrdup(variant);
  p->features = fp_xcalloc(1, sizeof *p->features);
  if (f1)
    p->features = fp_strv_push(p->features, f1);
  if (f2)
    p->features = fp_strv_push(p->features, f2);
  return (struct fpull_descriptor){.digest = "sha256:00", .platform = p};
}

/* After the preflight refuses rank 1, the explanations follow the new ranks. */
TEST(why_follows_renumbered_ranks)
{
  struct fpull_tagdb *db = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_tagdb_load(&db, NULL, NULL, &err), 0);
  struct fpull_target_opts o = {.version = FPULL_TARGET_OPTS_VERSION,
                                .platform = "linux/amd64:skylake-avx512:nv-compute-5-2",
                                .tagdb = db,
                                .no_detect = 1};
  struct fpull_target *t = NULL;
  CHECK_INT_EQ(fpull_target_build(&t, &o, &err), 0);
  struct fpull_descriptor d[3] = {entry(NULL, "broadwell", "nv-compute-5-2"),
                                  entry(NULL, "skylake-avx512", NULL), entry("v2", NULL, NULL)};
  struct fpull_match *m = NULL;
  CHECK_INT_EQ(fpull_match_entries(&m, t, d, 3, db, &err), 0);
  char *w = fpull_match_why(m, d, 0, db);
  CHECK_STR_EQ(w, "more features than rank 2 (2 vs 1; rule 1)");
  free(w);
  w = fpull_match_why(m, d, 1, db);
  CHECK_STR_EQ(w, "more features than rank 3 (1 vs 0; rule 1)");
  free(w);
  CHECK_NULL(fpull_match_why(m, d, 2, db)); /* last: beats nobody */
  /* As lib/pull/resolve.c's reject_entry does after a failed GPU preflight. */
  m->entries[0].eligible = 0;
  m->entries[0].rank = 0;
  m->entries[1].rank = 1;
  m->entries[2].rank = 2;
  CHECK_NULL(fpull_match_why(m, d, 0, db));
  w = fpull_match_why(m, d, 1, db);
  CHECK_STR_EQ(w, "more features than rank 2 (1 vs 0; rule 1)");
  free(w);
  fpull_match_free(m);
  for (size_t i = 0; i < 3; i++)
    fpull_platform_free(d[i].platform);
  fpull_target_free(t);
  fpull_tagdb_free(db);
}
