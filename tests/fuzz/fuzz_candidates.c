/* libFuzzer target: an index flattened into candidates (nested indexes, entries without a
 * platform given their config's) and the ranking over them. The input is documents
 * separated by lines "---": the first is the top index; a nested index entry or a
 * platform-less manifest entry is served document 1 + (the last hex digit of its digest)
 * modulo the number of others, read as an index or as an image config. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select/candidates.h"
#include "fpull/features.h"
#include "fpull/manifest.h"
#include "base/util.h"

#define MAX_DOCS 16

struct docs {
  const char *p[MAX_DOCS];
  size_t len[MAX_DOCS];
  size_t n;
};

static struct fpull_target *target;
static struct fpull_tagdb *db;

static void setup(void)
{
  fpull_err err = {0};
  if (fpull_tagdb_load(&db, NULL, NULL, &err)) {
    /* ctest sets FPULL_DATA_DIR; a manual run needs it too (the source tree's data/). */
    fprintf(stderr, "tag table: %s\n", err.msg);
    abort();
  }
  struct fpull_target_opts o = FPULL_TARGET_OPTS_INIT;
  o.tagdb = db;
  o.platform = "linux/amd64/v3";
  o.no_detect = 1;
  if (fpull_target_build(&target, &o, &err))
    abort();
}

static const char *child(const struct docs *ds, const struct fpull_descriptor *d, size_t *len)
{
  if (ds->n < 2)
    return NULL;
  size_t dl = strlen(d->digest);
  char c = dl ? d->digest[dl - 1] : '0';
  unsigned v = c >= 'a' ? (unsigned)(c - 'a' + 10) : (unsigned)(c - '0');
  size_t k = 1 + v % (ds->n - 1);
  *len = ds->len[k];
  return ds->p[k];
}

static int fetch_index(void *ud, const struct fpull_descriptor *d, struct fpull_index **out,
                       fpull_err *err)
{
  size_t len = 0;
  const char *p = child(ud, d, &len);
  if (!p)
    return fpull_err_set(err, FPULL_ENOTFOUND, "%s: not in the input", d->digest);
  return fpull_index_parse(out, p, len, d->media_type, err);
}

static int platform(void *ud, const struct fpull_descriptor *d, struct fpull_platform **out,
                    char **why, fpull_err *err)
{
  (void)err;
  *out = NULL;
  size_t len = 0;
  const char *p = child(ud, d, &len);
  struct fpull_image_config *c = NULL;
  fpull_err cerr = {0};
  if (!p || fpull_image_config_parse(&c, p, len, &cerr)) {
    *why = fp_xstrdup("not a container image");
    return 0;
  }
  *out = fp_cand_platform_of(c);
  fpull_image_config_free(c);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!target)
    setup();
  struct docs ds = {.n = 0};
  const char *p = (const char *)data, *end = p + size;
  while (ds.n < MAX_DOCS) {
    const char *sep = memmem(p, (size_t)(end - p), "\n---\n", 5);
    ds.p[ds.n] = p;
    ds.len[ds.n++] = sep ? (size_t)(sep - p) : (size_t)(end - p);
    if (!sep)
      break;
    p = sep + 5;
  }
  struct fpull_index *top = NULL;
  fpull_err err = {0};
  if (fpull_index_parse(&top, ds.p[0], ds.len[0], NULL, &err))
    return 0;
  struct fp_cand_io io = {.ud = &ds, .fetch_index = fetch_index, .platform = platform};
  struct fp_cands c;
  err = (fpull_err){0};
  if (fp_cands_build(&c, top,
                     "sha256:0000000000000000000000000000000000000000000000000000000000000000", &io,
                     &err) == 0) {
    for (size_t i = 0; i < c.n; i++)
      /* Children follow the nested index that listed them, which was followed; a candidate
       * image has a platform, its own or its config's. */
      if (c.c[i].parent >= (long)i || c.c[i].depth < 1 || c.c[i].depth > FP_INDEX_DEPTH_MAX ||
          (c.c[i].parent >= 0 &&
           (!c.c[c.c[i].parent].followed || c.c[i].depth != c.c[c.c[i].parent].depth + 1)) ||
          (!c.c[i].skip && fpull_media_type_kind(c.d[i].media_type) == 1 && !c.d[i].platform))
        abort();
    struct fpull_match *m = NULL;
    fpull_err merr = {0};
    if (fpull_match_entries(&m, target, c.d, c.n, db, &merr) == 0)
      fpull_match_free(m);
    fp_cands_free(&c);
  } else if (!err.msg[0]) {
    abort();
  }
  fpull_index_free(top);
  return 0;
}
