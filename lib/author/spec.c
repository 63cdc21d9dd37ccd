/* manifest-tool style YAML specs: parsing and validation. Pushing is in push.c. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fpull/features.h"
#include "fpull/ref.h"
#include "fpull/spec.h"
#include "registry/platform.h"
#include "select/names.h"
#include "select/tagdb.h"
#include "base/util.h"
#include "base/yaml_doc.h"

/* More entries than any real hardware matrix; bounds the duplicate check too. */
#define SPEC_MAX_ENTRIES 1024
#define SPEC_MAX_FEATURES 64

static void entry_clear(struct fpull_spec_entry *e)
{
  free(e->image);
  fp_platform_clear(&e->platform);
  free(e->feature_lines);
  free(e->feature_columns);
}

void fpull_spec_free(struct fpull_spec *s)
{
  if (!s)
    return;
  for (size_t i = 0; i < s->n_entries; i++)
    entry_clear(&s->entries[i]);
  free(s->entries);
  free(s->image);
  fpull_strv_free(s->tags);
  free(s->name);
  free(s);
}

static void spec_freep(struct fpull_spec **s)
{
  fpull_spec_free(*s);
}

static void ynode_freep(struct fp_ynode **n)
{
  fp_ynode_free(*n);
}

struct ctx {
  const char *name;
  fpull_err *err;
};

static int check_ref(const struct ctx *c, const struct fp_ynode *n, const char *image, int target)
{
  struct fpull_ref *ref = NULL;
  fpull_err rerr = {0};
  if (fpull_ref_parse(&ref, image, &rerr))
    return fp_yaml_err(c->err, c->name, n, "image \"%s\": %s", image, rerr.msg);
  int has_digest = ref->digest != NULL;
  fpull_ref_free(ref);
  if (target && has_digest)
    return fp_yaml_err(c->err, c->name, n, "the target image \"%s\" must name a tag, not a digest",
                       image);
  return 0;
}

/* Docker's tag grammar: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. */
static int tag_valid(const char *t)
{
  size_t n = strlen(t);
  if (n == 0 || n > 128 || t[0] == '.' || t[0] == '-')
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)t[i]) && t[i] != '_' && t[i] != '.' && t[i] != '-')
      return 0;
  return 1;
}

static int parse_features(const struct ctx *c, struct fpull_spec_entry *e, const struct fp_ynode *v)
{
  int r = fp_yaml_strv(&e->platform.features, v, c->name, "features", c->err);
  if (r)
    return r;
  size_t n = fpull_strv_len(e->platform.features);
  if (n > SPEC_MAX_FEATURES)
    return fp_yaml_err(c->err, c->name, v, "more than %d features", SPEC_MAX_FEATURES);
  e->feature_lines = fp_xcalloc(n + 1, sizeof *e->feature_lines);
  e->feature_columns = fp_xcalloc(n + 1, sizeof *e->feature_columns);
  for (size_t i = 0; i < n; i++) {
    const struct fp_ynode *at = v->kind == FP_Y_SEQ ? v->items[i] : v;
    e->feature_lines[i] = at->line;
    e->feature_columns[i] = at->column;
  }
  return 0;
}

static int parse_platform(const struct ctx *c, struct fpull_spec_entry *e, const struct fp_ynode *p)
{
  if (p->kind != FP_Y_MAP)
    return fp_yaml_err(c->err, c->name, p, "platform must be a mapping, not %s",
                       fp_ynode_kind_name(p->kind));
  struct fpull_platform *pl = &e->platform;
  for (size_t i = 0; i + 1 < p->n; i += 2) {
    const struct fp_ynode *k = p->items[i], *v = p->items[i + 1];
    const char *key = k->value;
    int r;
    if (strcmp(key, "architecture") == 0)
      r = fp_yaml_string(&pl->architecture, v, c->name, "architecture", c->err);
    else if (strcmp(key, "os") == 0)
      r = fp_yaml_string(&pl->os, v, c->name, "os", c->err);
    else if (strcmp(key, "variant") == 0)
      r = fp_yaml_string(&pl->variant, v, c->name, "variant", c->err);
    else if (strcmp(key, "os.version") == 0)
      r = fp_yaml_string(&pl->os_version, v, c->name, "os.version", c->err);
    else if (strcmp(key, "os.features") == 0)
      r = fp_yaml_strv(&pl->os_features, v, c->name, "os.features", c->err);
    else if (strcmp(key, "features") == 0)
      r = parse_features(c, e, v);
    else
      r = fp_yaml_err(c->err, c->name, k,
                      "unknown key \"%s\" in platform (known: architecture, os, variant, "
                      "os.version, os.features, features)",
                      key);
    if (r)
      return r;
  }
  if (!pl->os || !pl->architecture)
    return fp_yaml_err(c->err, c->name, p, "platform needs both os and architecture");
  return 0;
}

static int parse_entry(const struct ctx *c, struct fpull_spec_entry *e, const struct fp_ynode *n)
{
  e->line = n->line;
  e->column = n->column;
  if (n->kind != FP_Y_MAP)
    return fp_yaml_err(c->err, c->name, n,
                       "each entry of manifests must be a mapping with image and platform, "
                       "not %s",
                       fp_ynode_kind_name(n->kind));
  const struct fp_ynode *platform = NULL, *image = NULL;
  for (size_t i = 0; i + 1 < n->n; i += 2) {
    const struct fp_ynode *k = n->items[i], *v = n->items[i + 1];
    if (strcmp(k->value, "image") == 0) {
      int r = fp_yaml_string(&e->image, v, c->name, "image", c->err);
      if (r)
        return r;
      image = v;
    } else if (strcmp(k->value, "platform") == 0) {
      platform = v;
    } else {
      return fp_yaml_err(c->err, c->name, k,
                         "unknown key \"%s\" in a manifests entry (known: image, platform)",
                         k->value);
    }
  }
  if (!image)
    return fp_yaml_err(c->err, c->name, n, "manifests entry without image");
  int r = check_ref(c, image, e->image, 0);
  if (r)
    return r;
  if (!platform)
    return fp_yaml_err(c->err, c->name, n, "manifests entry for %s without platform", e->image);
  return parse_platform(c, e, platform);
}

static char *arch_key(const char *arch)
{
  if (strcasecmp(arch, "x86_64") == 0 || strcasecmp(arch, "x86-64") == 0)
    return fp_xstrdup("amd64");
  if (strcasecmp(arch, "aarch64") == 0)
    return fp_xstrdup("arm64");
  return fp_xstrdup_lower(arch);
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A platform's identity for duplicate detection: os/arch/variant/os.version and the
 * features as a set (case folded, order and repetition ignored), since a client cannot
 * tell such entries apart. */
static char *platform_key(const struct fpull_platform *p)
{
  size_t n = fpull_strv_len(p->features);
  char **f = fp_xcalloc(n + 1, sizeof *f);
  for (size_t i = 0; i < n; i++)
    f[i] = fp_xstrdup_lower(p->features[i]);
  qsort(f, n, sizeof *f, cmp_str);
  struct fp_buf b = {0};
  cleanup_free char *os = fp_xstrdup_lower(p->os);
  cleanup_free char *arch = arch_key(p->architecture);
  cleanup_free char *variant = fp_xstrdup_lower(p->variant ? p->variant : "");
  cleanup_free char *head =
      fp_xasprintf("%s/%s/%s/%s|", os, arch, variant, p->os_version ? p->os_version : "");
  fp_buf_append(&b, head, strlen(head));
  for (size_t i = 0; i < n; i++) {
    if (i && strcmp(f[i], f[i - 1]) == 0)
      continue;
    fp_buf_append(&b, f[i], strlen(f[i]));
    fp_buf_append(&b, ",", 1);
  }
  fpull_strv_free(f);
  return b.data ? b.data : fp_xstrdup("");
}

static int check_duplicates(const struct ctx *c, const struct fpull_spec *s,
                            const struct fp_ynode *list)
{
  cleanup_strv char **keys = fp_xcalloc(s->n_entries + 1, sizeof *keys);
  for (size_t i = 0; i < s->n_entries; i++) {
    keys[i] = platform_key(&s->entries[i].platform);
    for (size_t j = 0; j < i; j++)
      if (strcmp(keys[i], keys[j]) == 0)
        return fp_yaml_err(c->err, c->name, list->items[i],
                           "duplicate platform: %s has the same platform as %s (line %u)",
                           s->entries[i].image, s->entries[j].image, s->entries[j].line);
  }
  return 0;
}

static int parse_manifests(const struct ctx *c, struct fpull_spec *s, const struct fp_ynode *v)
{
  if (v->kind != FP_Y_SEQ)
    return fp_yaml_err(c->err, c->name, v, "manifests must be a list, not %s",
                       v->kind == FP_Y_SCALAR ? "a scalar" : fp_ynode_kind_name(v->kind));
  if (v->n == 0)
    return fp_yaml_err(c->err, c->name, v, "manifests must list at least one entry");
  if (v->n > SPEC_MAX_ENTRIES)
    return fp_yaml_err(c->err, c->name, v, "more than %d manifests", SPEC_MAX_ENTRIES);
  s->entries = fp_xcalloc(v->n, sizeof *s->entries);
  for (size_t i = 0; i < v->n; i++) {
    s->n_entries++; /* counted first so that a half-filled entry is freed */
    int r = parse_entry(c, &s->entries[i], v->items[i]);
    if (r)
      return r;
  }
  return check_duplicates(c, s, v);
}

int fpull_spec_parse(struct fpull_spec **out, const char *text, size_t len, const char *name,
                     fpull_err *err)
{
  *out = NULL;
  struct ctx c = {.name = name, .err = err};
  __attribute__((cleanup(ynode_freep))) struct fp_ynode *root = NULL;
  int r = fp_yaml_parse(&root, text, len, name, err);
  if (r)
    return r;
  if (!root || fp_ynode_is_null(root))
    return fpull_err_set(err, FPULL_EUSAGE, "%s:1:1: empty spec: it needs image and manifests",
                         name);
  if (root->kind != FP_Y_MAP)
    return fp_yaml_err(err, name, root,
                       "the spec must be a mapping with image and manifests, "
                       "not %s",
                       fp_ynode_kind_name(root->kind));
  __attribute__((cleanup(spec_freep))) struct fpull_spec *s = fp_xcalloc(1, sizeof *s);
  s->name = fp_xstrdup(name);
  const struct fp_ynode *image = NULL, *manifests = NULL;
  for (size_t i = 0; i + 1 < root->n; i += 2) {
    const struct fp_ynode *k = root->items[i], *v = root->items[i + 1];
    if (strcmp(k->value, "image") == 0) {
      r = fp_yaml_string(&s->image, v, name, "image", err);
      image = v;
    } else if (strcmp(k->value, "manifests") == 0) {
      manifests = v;
      r = 0;
    } else if (strcmp(k->value, "tags") == 0) {
      r = fp_yaml_strv(&s->tags, v, name, "tags", err);
      for (size_t j = 0; r == 0 && s->tags[j]; j++)
        if (!tag_valid(s->tags[j]))
          r = fp_yaml_err(err, name, v->kind == FP_Y_SEQ ? v->items[j] : v,
                          "tags: \"%s\" is not a valid tag", s->tags[j]);
    } else {
      r = fp_yaml_err(err, name, k, "unknown key \"%s\" (known: image, tags, manifests)", k->value);
    }
    if (r)
      return r;
  }
  if (!image)
    return fp_yaml_err(err, name, root, "the spec has no image: (the target to push to)");
  r = check_ref(&c, image, s->image, 1);
  if (r)
    return r;
  if (!manifests)
    return fp_yaml_err(err, name, root, "the spec has no manifests: list");
  r = parse_manifests(&c, s, manifests);
  if (r)
    return r;
  *out = steal_pointer(&s);
  return 0;
}

int fpull_spec_load(struct fpull_spec **out, const char *path, fpull_err *err)
{
  *out = NULL;
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (fp_read_file(path, FP_YAML_MAX_BYTES, &text, &len) < 0) {
    if (errno == EFBIG)
      return fpull_err_set(err, FPULL_EUSAGE, "%s: spec larger than %u bytes", path,
                           FP_YAML_MAX_BYTES);
    return fpull_err_set(err, FPULL_EUSAGE, "%s: cannot read spec: %s", path, strerror(errno));
  }
  return fpull_spec_parse(out, text, len, path, err);
}

/* ---- feature names ---- */

static int isa_known(const struct fpull_tagdb *db, const char *arch, const char *name)
{
  const char *const *tags = fpull_tagdb_tags(db, arch);
  for (size_t i = 0; tags && tags[i]; i++) {
    const char *const *isa = fpull_tagdb_isa(db, tags[i]);
    for (size_t j = 0; isa && isa[j]; j++)
      if (strcasecmp(isa[j], name) == 0)
        return 1;
  }
  return 0;
}

/* NULL when fpull knows NAME, else why not. */
static const char *feature_problem(const char *name, const char *arch, const struct fpull_tagdb *db)
{
  if (!*name || strpbrk(name, ",: \t/"))
    return "cannot be given with --features or --platform";
  cleanup_free char *lower = fp_xstrdup_lower(name);
  if (fp_nvidia_feature_name(lower))
    return NULL;
  if (strncmp(lower, "nvidia-", 7) == 0 || strncmp(lower, "nv-compute-", 11) == 0 ||
      strncmp(lower, "cuda-", 5) == 0)
    return "is not a well-formed NVIDIA feature (nvidia-396-44, nv-compute-5-2, cuda-12-4)";
  if (!db)
    return NULL;
  cleanup_free char *a = arch_key(arch);
  if (fpull_tagdb_canonical(db, lower) || isa_known(db, a, lower))
    return NULL;
  return "is not a feature fpull knows (CPU tag, ISA extension, NVIDIA or CUDA name)";
}

unsigned fpull_spec_check_features(const struct fpull_spec *s, const struct fpull_tagdb *db)
{
  unsigned n = 0;
  for (size_t i = 0; s && i < s->n_entries; i++) {
    const struct fpull_spec_entry *e = &s->entries[i];
    for (size_t j = 0; e->platform.features && e->platform.features[j]; j++) {
      const char *why = feature_problem(e->platform.features[j], e->platform.architecture, db);
      if (!why)
        continue;
      fp_warn("%s:%u:%u: feature \"%s\" of %s %s", s->name, e->feature_lines[j],
              e->feature_columns[j], e->platform.features[j], e->image, why);
      n++;
    }
  }
  return n;
}

/* An amd64 entry whose CPU tag implies a higher x86-64 level than the variant it declares
 * (icelake-server without v4): fpull ranks it at that level, other clients by the variant. */
static void warn_implied_variant(const struct fpull_spec *s, const struct fpull_spec_entry *e,
                                 const struct fpull_tagdb *db)
{
  const char *arch = e->platform.architecture, *v = e->platform.variant;
  cleanup_free char *norm = fpull_arch_normalise(arch ? arch : "");
  if (strcmp(norm, "amd64") != 0)
    return;
  int level = fp_tagdb_x86_level(db, e->platform.features);
  int declared = v && strlen(v) == 2 && (v[0] == 'v' || v[0] == 'V') && isdigit((unsigned char)v[1])
                     ? v[1] - '0'
                     : 1;
  if (level > declared)
    fp_warn("%s:%u:%u: %s: its features imply variant v%d, which it does not declare%s%s "
            "(fpull ranks it as v%d; other clients go by the variant)",
            s->name, e->line, e->column, e->image, level, v ? "; it says " : "", v ? v : "", level);
}

int fpull_spec_check_names(const struct fpull_spec *s, const struct fpull_tagdb *db,
                           const struct fpull_config *config, fpull_err *err)
{
  struct fp_feature_names *names = NULL; /* built once, at the first name to look up */
  int r = 0;
  for (size_t i = 0; r == 0 && s && i < s->n_entries; i++) {
    const struct fpull_spec_entry *e = &s->entries[i];
    if (fpull_platform_name_check(e->platform.os, e->platform.architecture, e->platform.variant,
                                  err)) {
      r = fpull_err_prefix(err, "%s:%u:%u: %s", s->name, e->line, e->column, e->image);
      break;
    }
    for (size_t j = 0; r == 0 && e->platform.features && e->platform.features[j]; j++) {
      if (!names)
        names = fp_feature_names_new(db, config);
      if (fp_feature_names_check(names, e->platform.features[j], err))
        r = fpull_err_prefix(err, "%s:%u:%u: %s", s->name, e->feature_lines[j],
                             e->feature_columns[j], e->image);
    }
  }
  fp_feature_names_free(names);
  for (size_t i = 0; r == 0 && s && i < s->n_entries; i++)
    warn_implied_variant(s, &s->entries[i], db);
  return r;
}
