/* Feature sets: names, aliases, where each feature came from, and what features imply
 * (contract, "Features and matching"). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tagdb.h"
#include "base/util.h"

struct fp_feature {
  char *name;
  int src;
  int direct; /* given or detected, not only implied */
};

struct fpull_featureset {
  struct fp_feature *v; /* sorted by name: printing order and binary search */
  size_t n;
  char *arch; /* the target's architecture; NULL: tags of every architecture count */
};

const char *fpull_feature_source_name(int src)
{
  switch (src) {
  case FPULL_SRC_CPU:
    return "cpu";
  case FPULL_SRC_NVIDIA:
    return "nvidia";
  case FPULL_SRC_CONFIG:
    return "config";
  case FPULL_SRC_CLI:
    return "cli";
  case FPULL_SRC_AMDGPU:
    return "amdgpu";
  }
  return "unknown";
}

struct fpull_featureset *fpull_featureset_new(void)
{
  return fp_xcalloc(1, sizeof(struct fpull_featureset));
}

void fpull_featureset_free(struct fpull_featureset *fs)
{
  if (!fs)
    return;
  for (size_t i = 0; i < fs->n; i++)
    free(fs->v[i].name);
  free(fs->v);
  free(fs->arch);
  free(fs);
}

void fp_featureset_set_arch(struct fpull_featureset *fs, const char *arch)
{
  free(fs->arch);
  fs->arch = arch ? fpull_arch_normalise(arch) : NULL;
}

/* Index of name, or where it would go (with *found 0). */
static size_t find(const struct fpull_featureset *fs, const char *name, int *found)
{
  size_t lo = 0, hi = fs->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(fs->v[mid].name, name);
    if (c == 0) {
      *found = 1;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = 0;
  return lo;
}

/* Records name (canonical, lower case). A direct feature beats an implied one; among
 * equals the lower source wins (cpu/nvidia before config). Returns 1 when anything
 * changed, so that implication can run to a fixed point. */
static int put(struct fpull_featureset *fs, const char *name, int src, int direct)
{
  int found;
  size_t i = find(fs, name, &found);
  if (!found) {
    fs->v = fp_xrealloc(fs->v, (fs->n + 1) * sizeof *fs->v);
    memmove(&fs->v[i + 1], &fs->v[i], (fs->n - i) * sizeof *fs->v);
    fs->v[i] = (struct fp_feature){fp_xstrdup(name), src, direct};
    fs->n++;
    return 1;
  }
  struct fp_feature *f = &fs->v[i];
  if (direct && !f->direct) {
    f->direct = 1;
    f->src = src;
    return 1;
  }
  if (direct == f->direct && src < f->src) {
    f->src = src;
    return 1;
  }
  return 0;
}

/* Lower case, validated, aliases made canonical. Caller frees. */
static char *canonical(const char *name, const struct fpull_tagdb *db)
{
  if (!fp_feature_name_valid(name))
    return NULL;
  char *low = fp_xstrdup_lower(name);
  const struct fp_tag *t = fp_tagdb_find(db, low);
  if (t && strcmp(t->name, low) != 0) {
    free(low);
    low = fp_xstrdup(t->name);
  }
  return low;
}

int fpull_featureset_add(struct fpull_featureset *fs, const char *name, int src,
                         const struct fpull_tagdb *db, fpull_err *err)
{
  cleanup_free char *c = canonical(name, db);
  if (!c)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "bad feature name \"%s\": expected letters, digits, '.', '_' or '-'",
                         name ? name : "");
  put(fs, c, src, 1);
  return 0;
}

int fpull_featureset_add_list(struct fpull_featureset *fs, const char *list, int src,
                              const struct fpull_tagdb *db, fpull_err *err)
{
  if (!list)
    return 0;
  const char *p = list;
  while (isspace((unsigned char)*p))
    p++;
  if (!*p) /* "--features ''": no features at all */
    return 0;
  for (;;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *s = p;
    while (len && isspace((unsigned char)*s))
      s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
      len--;
    cleanup_free char *item = fp_xstrndup(s, len);
    if (!*item)
      return fpull_err_set(err, FPULL_EUSAGE, "empty feature name in \"%s\"", list);
    int r = fpull_featureset_add(fs, item, src, db, err);
    if (r)
      return r;
    if (!end)
      return 0;
    p = end + 1;
  }
}

int fpull_featureset_has(const struct fpull_featureset *fs, const char *name,
                         const struct fpull_tagdb *db)
{
  cleanup_free char *c = canonical(name, db);
  int found = 0;
  if (c && fs)
    find(fs, c, &found);
  return found;
}

size_t fpull_featureset_count(const struct fpull_featureset *fs)
{
  return fs ? fs->n : 0;
}

const char *fpull_featureset_get(const struct fpull_featureset *fs, size_t i, int *src)
{
  if (!fs || i >= fs->n)
    return NULL;
  if (src)
    *src = fs->v[i].src;
  return fs->v[i].name;
}

/* ---- implications ---- */

static int imply_tag(struct fpull_featureset *fs, const struct fpull_tagdb *db,
                     const struct fp_tag *t, int src)
{
  int changed = 0;
  for (size_t i = 0; i < db->n_tags; i++) {
    const struct fp_tag *u = &db->tags[i];
    if (u != t && strcmp(u->arch, t->arch) == 0 && fp_tag_subset(u, t))
      changed |= put(fs, u->name, src, 0);
  }
  /* Code built for the tag may use any of its extensions: the raw flags hold too, except
   * the intrinsic-only ones, which a CPU with the tag may lack. */
  for (size_t i = 0; i < t->n_isa; i++)
    if (fp_tag_gates(db, t, t->isa[i]))
      changed |= put(fs, t->isa[i], src, 0);
  return changed;
}

/* A tag whose whole ISA set is present holds, with the weakest source among them (the
 * tag stands only as long as each of its extensions does). */
static int imply_from_isa(struct fpull_featureset *fs, const struct fpull_tagdb *db)
{
  int changed = 0;
  for (size_t i = 0; i < db->n_tags; i++) {
    const struct fp_tag *t = &db->tags[i];
    /* ISA names repeat across architectures (crc32, fma, aes on x86 and arm64): only the
     * target's own table may turn them into tags. */
    if (fs->arch && strcmp(t->arch, fs->arch) != 0)
      continue;
    int src = FPULL_SRC_CPU, found = 0;
    size_t k;
    for (k = 0; k < t->n_isa; k++) {
      if (!fp_tag_gates(db, t, t->isa[k]))
        continue;
      size_t j = find(fs, t->isa[k], &found);
      if (!found)
        break;
      if (fs->v[j].src > src)
        src = fs->v[j].src;
    }
    if (k == t->n_isa)
      changed |= put(fs, t->name, src, 0);
  }
  return changed;
}

static int imply_cuda_below(struct fpull_featureset *fs, const struct fpull_tagdb *db,
                            const struct fp_version *v, int src)
{
  int changed = 0;
  for (size_t i = 0; i < db->n_cuda; i++) {
    if (fp_version_cmp(&db->cuda[i], v) < 0) {
      char name[64];
      snprintf(name, sizeof name, "cuda-%u-%u", db->cuda[i].v[0], db->cuda[i].v[1]);
      changed |= put(fs, name, src, 0);
    }
  }
  return changed;
}

static int imply_one(struct fpull_featureset *fs, const struct fpull_tagdb *db, const char *name,
                     int src)
{
  struct fp_version v;
  int changed = 0;
  char buf[128];
  const struct fp_tag *t = fp_tagdb_find(db, name);
  if (t)
    return imply_tag(fs, db, t, src);
  if (strncmp(name, "nvidia-", 7) == 0 && fp_version_parse(&v, name + 7, '-') == 0) {
    /* nvidia-A-B-C implies nvidia-A-B and nvidia-A. */
    for (size_t n = 1; n < v.n; n++) {
      size_t len = (size_t)snprintf(buf, sizeof buf, "nvidia");
      for (size_t k = 0; k < n; k++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "-%u", v.v[k]);
      changed |= put(fs, buf, src, 0);
    }
    /* The driver supports the newest CUDA release whose minimum driver it reaches. */
    const struct fp_driver_min *best = NULL;
    for (size_t i = 0; i < db->n_drivers; i++)
      if (fp_version_cmp(&db->drivers[i].driver, &v) <= 0 &&
          (!best || fp_version_cmp(&db->drivers[i].cuda, &best->cuda) > 0))
        best = &db->drivers[i];
    if (best) {
      snprintf(buf, sizeof buf, "cuda-%u-%u", best->cuda.v[0], best->cuda.v[1]);
      changed |= put(fs, buf, src, 0);
    }
    return changed;
  }
  if (strncmp(name, "nv-compute-", 11) == 0 && fp_version_parse(&v, name + 11, '-') == 0 &&
      v.n == 2) {
    for (unsigned m = 0; m < v.v[1]; m++) {
      snprintf(buf, sizeof buf, "nv-compute-%u-%u", v.v[0], m);
      changed |= put(fs, buf, src, 0);
    }
    return changed;
  }
  if (strncmp(name, "cuda-", 5) == 0 && fp_version_parse(&v, name + 5, '-') == 0 && v.n == 2)
    return imply_cuda_below(fs, db, &v, src);
  return 0;
}

int fpull_featureset_imply(struct fpull_featureset *fs, const struct fpull_tagdb *db,
                           fpull_err *err)
{
  if (!fs || !db)
    return 0;
  /* Sources only move towards the more direct, and names come from finite tables, so
   * this reaches a fixed point. */
  for (int changed = 1; changed;) {
    changed = 0;
    size_t n = fs->n;
    struct fp_feature *snap = fp_xcalloc(n, sizeof *snap);
    for (size_t i = 0; i < n; i++)
      snap[i] = (struct fp_feature){fp_xstrdup(fs->v[i].name), fs->v[i].src, fs->v[i].direct};
    for (size_t i = 0; i < n; i++) {
      changed |= imply_one(fs, db, snap[i].name, snap[i].src);
      free(snap[i].name);
    }
    free(snap);
    changed |= imply_from_isa(fs, db);
  }
  return 0;
}
