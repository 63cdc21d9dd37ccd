/* The CPU tag table (data/cputags.yaml) and the CUDA tables (data/cuda.yaml beside it),
 * read with libyaml's document API so that every error names its line and column. */
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#include "fpull/config.h"
#include "tagdb.h"
#include "base/util.h"

#define FP_DATA_FILE_MAX (4u * 1024 * 1024)

static int readable(const char *p)
{
  return access(p, R_OK) == 0;
}

/* Where the data files are when FPULL_DATA_DIR does not say: beside the executable
 * (PREFIX/bin/fpull -> PREFIX/share/fpull, wherever PREFIX was installed or unpacked), the
 * source tree's data/ for a binary run from its build tree, then the configured prefix. */
const char *fpull_tagdb_default_path(void)
{
  static char path[PATH_MAX];
  const char *dir = getenv("FPULL_DATA_DIR");
  if (dir && *dir) {
    snprintf(path, sizeof path, "%s/cputags.yaml", dir);
    return path;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      if ((size_t)snprintf(path, sizeof path, "%s/../share/fpull/cputags.yaml", exe) <
              sizeof path &&
          readable(path))
        return path;
      /* The build directory as configured may be spelt through a symlink. */
      cleanup_free char *build = realpath(FPULL_BUILD_DIR, NULL);
      if (build && strcmp(exe, build) == 0 &&
          (size_t)snprintf(path, sizeof path, "%s/cputags.yaml", FPULL_SOURCE_DATADIR) <
              sizeof path &&
          readable(path))
        return path;
    }
  }
  snprintf(path, sizeof path, "%s/cputags.yaml", FPULL_DATADIR);
  return path;
}

int fp_feature_name_valid(const char *name)
{
  if (!name || !*name)
    return 0;
  for (const char *p = name; *p; p++) {
    int c = tolower((unsigned char)*p);
    if (!(isdigit(c) || (c >= 'a' && c <= 'z') || c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

int fp_version_parse(struct fp_version *v, const char *s, char sep)
{
  memset(v, 0, sizeof *v);
  if (!s || !*s)
    return -1;
  while (*s) {
    if (!isdigit((unsigned char)*s) || v->n == FP_VER_MAX)
      return -1;
    errno = 0;
    char *end;
    unsigned long n = strtoul(s, &end, 10);
    if (errno || n > 1000000)
      return -1;
    v->v[v->n++] = (unsigned)n;
    if (*end == sep && end[1])
      end++;
    else if (*end)
      return -1;
    s = end;
  }
  return 0;
}

int fp_version_cmp(const struct fp_version *a, const struct fp_version *b)
{
  for (size_t i = 0; i < FP_VER_MAX; i++) {
    unsigned x = i < a->n ? a->v[i] : 0, y = i < b->n ? b->v[i] : 0;
    if (x != y)
      return x < y ? -1 : 1;
  }
  return 0;
}

const struct fp_tag *fp_tagdb_find(const struct fpull_tagdb *db, const char *name)
{
  if (!db || !name)
    return NULL;
  for (size_t i = 0; i < db->n_tags; i++)
    if (strcmp(db->tags[i].name, name) == 0)
      return &db->tags[i];
  for (size_t i = 0; i < db->n_tags; i++)
    if (fp_strv_contains(db->tags[i].aliases, name))
      return &db->tags[i];
  return NULL;
}

int fp_tag_subset(const struct fp_tag *a, const struct fp_tag *b)
{
  /* Both lists are sorted: one merge pass. */
  size_t j = 0;
  for (size_t i = 0; i < a->n_isa; i++) {
    while (j < b->n_isa && strcmp(b->isa[j], a->isa[i]) < 0)
      j++;
    if (j == b->n_isa || strcmp(b->isa[j], a->isa[i]) != 0)
      return 0;
  }
  return 1;
}

int fp_tagdb_gates(const struct fpull_tagdb *db, const char *arch, const char *isa)
{
  if (!db || !db->intrinsic_only)
    return 1;
  if (fp_strv_contains(db->intrinsic_only, isa))
    return 0; /* a plain list: every architecture */
  if (arch) {
    cleanup_free char *q = fp_xasprintf("%s:%s", arch, isa);
    return !fp_strv_contains(db->intrinsic_only, q);
  }
  /* No architecture: it gates unless intrinsic-only on every architecture whose tags list it
   * (the same name can name different extensions: arm64's aes is not amd64's). */
  int listed = 0;
  for (size_t i = 0; i < db->n_tags; i++) {
    const struct fp_tag *t = &db->tags[i];
    if (!t->user && fp_strv_contains(t->isa, isa)) {
      if (fp_tagdb_gates(db, t->arch, isa))
        return 1;
      listed = 1;
    }
  }
  if (listed)
    return 0;
  size_t l = strlen(isa);
  for (char **e = db->intrinsic_only; *e; e++) {
    const char *c = strchr(*e, ':');
    if (c && strlen(c + 1) == l && strcmp(c + 1, isa) == 0)
      return 0;
  }
  return 1;
}

int fp_tag_gates(const struct fpull_tagdb *db, const struct fp_tag *t, const char *isa)
{
  return t->user || fp_tagdb_gates(db, t->arch, isa);
}

int fpull_tagdb_isa_gates(const struct fpull_tagdb *db, const char *isa)
{
  cleanup_free char *low = fp_xstrdup_lower(isa);
  return fp_tagdb_gates(db, NULL, low);
}

int fpull_tagdb_tag_isa_gates(const struct fpull_tagdb *db, const char *tag, const char *isa)
{
  cleanup_free char *low = fp_xstrdup_lower(isa);
  cleanup_free char *ltag = tag ? fp_xstrdup_lower(tag) : NULL;
  const struct fp_tag *t = ltag ? fp_tagdb_find(db, ltag) : NULL;
  return t ? fp_tag_gates(db, t, low) : fp_tagdb_gates(db, NULL, low);
}

int fp_tagdb_x86_level(const struct fpull_tagdb *db, char *const *features)
{
  int best = 0;
  for (size_t i = 0; db && features && features[i]; i++) {
    cleanup_free char *low = fp_xstrdup_lower(features[i]);
    const struct fp_tag *t = fp_tagdb_find(db, low);
    if (!t || strcmp(t->arch, "amd64") != 0)
      continue;
    for (int level = 4; level > best; level--) {
      char name[32];
      snprintf(name, sizeof name, "x86-64-v%d", level);
      const struct fp_tag *l = fp_tagdb_find(db, name);
      if (l && fp_tag_subset(l, t)) {
        best = level;
        break;
      }
    }
  }
  return best;
}

const char *fpull_tagdb_canonical(const struct fpull_tagdb *db, const char *name)
{
  cleanup_free char *low = fp_xstrdup_lower(name);
  const struct fp_tag *t = fp_tagdb_find(db, low);
  return t ? t->name : NULL;
}

const char *const *fpull_tagdb_isa(const struct fpull_tagdb *db, const char *tag)
{
  cleanup_free char *low = fp_xstrdup_lower(tag);
  const struct fp_tag *t = fp_tagdb_find(db, low);
  return t ? (const char *const *)t->isa : NULL;
}

const char *const *fpull_tagdb_tags(const struct fpull_tagdb *db, const char *arch)
{
  static const char *const none[] = {NULL};
  if (!db || !arch)
    return none;
  cleanup_free char *norm = fpull_arch_normalise(arch);
  for (size_t i = 0; i < db->n_archs; i++)
    if (strcmp(db->archs[i], norm) == 0)
      return (const char *const *)db->arch_tags[i];
  return none;
}

static void tag_clear(struct fp_tag *t)
{
  free(t->name);
  free(t->arch);
  fpull_strv_free(t->aliases);
  fpull_strv_free(t->isa);
  memset(t, 0, sizeof *t);
}

void fpull_tagdb_free(struct fpull_tagdb *db)
{
  if (!db)
    return;
  for (size_t i = 0; i < db->n_tags; i++)
    tag_clear(&db->tags[i]);
  free(db->tags);
  for (size_t i = 0; i < db->n_archs; i++) {
    free(db->archs[i]);
    free(db->arch_tags[i]); /* the names belong to the tags */
  }
  free(db->archs);
  free(db->arch_tags);
  free(db->cuda);
  free(db->drivers);
  fpull_strv_free(db->intrinsic_only);
  free(db);
}

/* ---- YAML helpers ---- */

struct ydoc {
  const char *file;
  yaml_document_t doc;
  int loaded;
};

static void ydoc_fini(struct ydoc *y)
{
  if (y->loaded)
    yaml_document_delete(&y->doc);
}

static int yerr(const struct ydoc *y, const yaml_node_t *n, fpull_err *err, const char *what,
                const char *detail)
{
  return fpull_err_set(err, FPULL_EUSAGE, "%s:%zu:%zu: %s%s%s", y->file,
                       n ? n->start_mark.line + 1 : 0, n ? n->start_mark.column + 1 : 0, what,
                       detail ? " " : "", detail ? detail : "");
}

static int ydoc_load(struct ydoc *y, const char *path, fpull_err *err)
{
  cleanup_free char *text = NULL;
  size_t len = 0;
  y->file = path;
  if (fp_read_file(path, FP_DATA_FILE_MAX, &text, &len) < 0)
    return fpull_err_set(err, FPULL_EUSAGE, "%s: %s", path, strerror(errno));
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    abort();
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int ok = yaml_parser_load(&parser, &y->doc);
  if (!ok) {
    int r = fpull_err_set(err, FPULL_EUSAGE, "%s:%zu:%zu: %s", path, parser.problem_mark.line + 1,
                          parser.problem_mark.column + 1,
                          parser.problem ? parser.problem : "malformed YAML");
    yaml_parser_delete(&parser);
    return r;
  }
  yaml_parser_delete(&parser);
  y->loaded = 1;
  yaml_node_t *root = yaml_document_get_root_node(&y->doc);
  if (!root || root->type != YAML_MAPPING_NODE)
    return yerr(y, root, err, "expected a mapping at the top", NULL);
  return 0;
}

static yaml_node_t *ynode(struct ydoc *y, int id)
{
  return yaml_document_get_node(&y->doc, id);
}

static const char *yscalar(const yaml_node_t *n)
{
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of KEY in mapping m, or NULL. */
static yaml_node_t *yget(struct ydoc *y, yaml_node_t *m, const char *key)
{
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
    const char *k = yscalar(ynode(y, p->key));
    if (k && strcmp(k, key) == 0)
      return ynode(y, p->value);
  }
  return NULL;
}

/* Refuses keys outside allowed: a misspelt key in a data file is a bug to report. */
static int ycheck_keys(struct ydoc *y, yaml_node_t *m, const char *const *allowed, fpull_err *err)
{
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *kn = ynode(y, p->key);
    const char *k = yscalar(kn);
    int found = 0;
    for (size_t i = 0; k && allowed[i]; i++)
      found |= strcmp(k, allowed[i]) == 0;
    if (!found)
      return yerr(y, kn, err, "unknown key", k ? k : "(not a string)");
  }
  return 0;
}

/* A sequence of feature-like names, folded to lower case and validated. */
static int yseq_names(char ***out, struct ydoc *y, yaml_node_t *n, const char *what, fpull_err *err)
{
  cleanup_strv char **v = fp_xcalloc(1, sizeof *v);
  if (!n || n->type != YAML_SEQUENCE_NODE)
    return yerr(y, n, err, what, "must be a list");
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
    yaml_node_t *e = ynode(y, *it);
    const char *s = yscalar(e);
    if (!fp_feature_name_valid(s))
      return yerr(y, e, err, what, "entry is not a name of [a-z0-9._-]");
    cleanup_free char *low = fp_xstrdup_lower(s);
    if (!fp_strv_contains(v, low))
      v = fp_strv_push(v, low);
  }
  *out = steal_pointer(&v);
  return 0;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void tag_sort_isa(struct fp_tag *t)
{
  t->n_isa = fpull_strv_len(t->isa);
  qsort(t->isa, t->n_isa, sizeof *t->isa, cmp_str);
}

/* ---- loading ---- */

static struct fp_tag *db_slot(struct fpull_tagdb *db, const char *name)
{
  for (size_t i = 0; i < db->n_tags; i++)
    if (strcmp(db->tags[i].name, name) == 0)
      return &db->tags[i];
  return NULL;
}

static struct fp_tag *db_append(struct fpull_tagdb *db)
{
  db->tags = fp_xrealloc(db->tags, (db->n_tags + 1) * sizeof *db->tags);
  struct fp_tag *t = &db->tags[db->n_tags++];
  memset(t, 0, sizeof *t);
  return t;
}

static int load_tag(struct fpull_tagdb *db, struct ydoc *y, yaml_node_t *n, fpull_err *err)
{
  static const char *const keys[] = {"name", "architecture", "aliases", "source", "isa", NULL};
  if (n->type != YAML_MAPPING_NODE)
    return yerr(y, n, err, "a tag must be a mapping", NULL);
  int r = ycheck_keys(y, n, keys, err);
  if (r)
    return r;
  yaml_node_t *nn = yget(y, n, "name");
  const char *name = yscalar(nn);
  if (!fp_feature_name_valid(name))
    return yerr(y, nn ? nn : n, err, "tag name missing or not a name of [a-z0-9._-]", NULL);
  cleanup_free char *low = fp_xstrdup_lower(name);
  if (db_slot(db, low))
    return yerr(y, nn, err, "duplicate tag", low);
  struct fp_tag t = {0};
  yaml_node_t *an = yget(y, n, "architecture");
  const char *arch = an ? yscalar(an) : "amd64";
  if (!fp_feature_name_valid(arch)) {
    return yerr(y, an, err, "architecture must be a name", NULL);
  }
  yaml_node_t *al = yget(y, n, "aliases");
  if (al && (r = yseq_names(&t.aliases, y, al, "aliases", err)))
    return r;
  if ((r = yseq_names(&t.isa, y, yget(y, n, "isa") ? yget(y, n, "isa") : n, "isa", err))) {
    tag_clear(&t);
    return r;
  }
  if (!t.isa[0]) {
    tag_clear(&t);
    return yerr(y, n, err, "tag has an empty isa list:", low);
  }
  if (!t.aliases)
    t.aliases = fp_xcalloc(1, sizeof *t.aliases);
  t.name = steal_pointer(&low);
  t.arch = fpull_arch_normalise(arch);
  tag_sort_isa(&t);
  *db_append(db) = t;
  return 0;
}

static int load_tags(struct fpull_tagdb *db, const char *path, fpull_err *err)
{
  static const char *const keys[] = {"intrinsic-only", "tags", NULL};
  __attribute__((cleanup(ydoc_fini))) struct ydoc y = {0};
  int r = ydoc_load(&y, path, err);
  if (r)
    return r;
  yaml_node_t *root = yaml_document_get_root_node(&y.doc);
  if ((r = ycheck_keys(&y, root, keys, err)))
    return r;
  /* Optional: a site's own table without it gates on every extension. A list holds for
   * every architecture; a mapping of architecture to list for that architecture only (kept
   * as "arch:ext", which no feature name can spell). */
  yaml_node_t *io = yget(&y, root, "intrinsic-only");
  if (io && io->type == YAML_MAPPING_NODE) {
    db->intrinsic_only = fp_xcalloc(1, sizeof *db->intrinsic_only);
    for (yaml_node_pair_t *p = io->data.mapping.pairs.start; p < io->data.mapping.pairs.top; p++) {
      yaml_node_t *kn = ynode(&y, p->key);
      const char *k = yscalar(kn);
      if (!k || !*k)
        return yerr(&y, kn, err, "intrinsic-only", "key is not an architecture");
      cleanup_free char *arch = fpull_arch_normalise(k);
      cleanup_strv char **v = NULL;
      if ((r = yseq_names(&v, &y, ynode(&y, p->value), "intrinsic-only", err)))
        return r;
      for (char **e = v; *e; e++) {
        cleanup_free char *q = fp_xasprintf("%s:%s", arch, *e);
        if (!fp_strv_contains(db->intrinsic_only, q))
          db->intrinsic_only = fp_strv_push(db->intrinsic_only, q);
      }
    }
  } else if (io && (r = yseq_names(&db->intrinsic_only, &y, io, "intrinsic-only", err))) {
    return r;
  }
  yaml_node_t *tags = yget(&y, root, "tags");
  if (!tags || tags->type != YAML_SEQUENCE_NODE)
    return yerr(&y, tags ? tags : root, err, "\"tags\" must be a list", NULL);
  for (yaml_node_item_t *it = tags->data.sequence.items.start; it < tags->data.sequence.items.top;
       it++)
    if ((r = load_tag(db, &y, ynode(&y, *it), err)))
      return r;
  return 0;
}

static int yversion(struct fp_version *v, struct ydoc *y, yaml_node_t *n, size_t min_parts,
                    fpull_err *err)
{
  if (fp_version_parse(v, yscalar(n), '.') < 0 || v->n < min_parts)
    return yerr(y, n, err, "not a version such as 12.4 or 550.54.14:",
                yscalar(n) ? yscalar(n) : "(not a string)");
  return 0;
}

static int cmp_driver(const void *a, const void *b)
{
  const struct fp_driver_min *x = a, *y = b;
  return fp_version_cmp(&x->driver, &y->driver);
}

static int load_cuda(struct fpull_tagdb *db, const char *path, fpull_err *err)
{
  static const char *const keys[] = {"releases", "drivers", NULL};
  static const char *const dkeys[] = {"cuda", "driver", NULL};
  __attribute__((cleanup(ydoc_fini))) struct ydoc y = {0};
  int r = ydoc_load(&y, path, err);
  if (r)
    return r;
  yaml_node_t *root = yaml_document_get_root_node(&y.doc);
  if ((r = ycheck_keys(&y, root, keys, err)))
    return r;
  yaml_node_t *rel = yget(&y, root, "releases"), *drv = yget(&y, root, "drivers");
  if (!rel || rel->type != YAML_SEQUENCE_NODE)
    return yerr(&y, rel ? rel : root, err, "\"releases\" must be a list", NULL);
  if (!drv || drv->type != YAML_SEQUENCE_NODE)
    return yerr(&y, drv ? drv : root, err, "\"drivers\" must be a list", NULL);
  size_t n = (size_t)(rel->data.sequence.items.top - rel->data.sequence.items.start);
  db->cuda = fp_xcalloc(n, sizeof *db->cuda);
  for (yaml_node_item_t *it = rel->data.sequence.items.start; it < rel->data.sequence.items.top;
       it++) {
    struct fp_version *v = &db->cuda[db->n_cuda];
    yaml_node_t *e = ynode(&y, *it);
    if ((r = yversion(v, &y, e, 2, err)))
      return r;
    /* Implication walks "every lower release": the list must be in order. */
    if (db->n_cuda && fp_version_cmp(&db->cuda[db->n_cuda - 1], v) >= 0)
      return yerr(&y, e, err, "releases must be listed oldest first", NULL);
    db->n_cuda++;
  }
  n = (size_t)(drv->data.sequence.items.top - drv->data.sequence.items.start);
  db->drivers = fp_xcalloc(n, sizeof *db->drivers);
  for (yaml_node_item_t *it = drv->data.sequence.items.start; it < drv->data.sequence.items.top;
       it++) {
    yaml_node_t *e = ynode(&y, *it);
    if (e->type != YAML_MAPPING_NODE)
      return yerr(&y, e, err, "a driver entry must be a mapping", NULL);
    if ((r = ycheck_keys(&y, e, dkeys, err)))
      return r;
    struct fp_driver_min *d = &db->drivers[db->n_drivers];
    yaml_node_t *c = yget(&y, e, "cuda"), *dv = yget(&y, e, "driver");
    if ((r = yversion(&d->cuda, &y, c ? c : e, 2, err)) ||
        (r = yversion(&d->driver, &y, dv ? dv : e, 1, err)))
      return r;
    db->n_drivers++;
  }
  qsort(db->drivers, db->n_drivers, sizeof *db->drivers, cmp_driver);
  return 0;
}

/* User tags from the config's "cpu-tags:" replace a shipped tag of the same name. */
static int add_user_tags(struct fpull_tagdb *db, const struct fpull_config *config, fpull_err *err)
{
  for (size_t i = 0; config && i < config->n_cpu_tags; i++) {
    const struct fpull_user_tag *u = &config->cpu_tags[i];
    const char *arch = u->architecture ? u->architecture : "amd64";
    if (!fp_feature_name_valid(u->name) || !fp_feature_name_valid(arch))
      return fpull_err_set(err, FPULL_EUSAGE, "%s: cpu-tags: bad tag name \"%s\"",
                           config->path ? config->path : "config", u->name ? u->name : "");
    struct fp_tag t = {0};
    t.name = fp_xstrdup_lower(u->name);
    t.arch = fpull_arch_normalise(arch);
    t.user = 1;
    t.aliases = fp_xcalloc(1, sizeof *t.aliases);
    t.isa = fp_xcalloc(1, sizeof *t.isa);
    for (size_t k = 0; u->isa && u->isa[k]; k++) {
      if (!fp_feature_name_valid(u->isa[k])) {
        int r = fpull_err_set(err, FPULL_EUSAGE, "%s: cpu-tags: %s: bad ISA name \"%s\"",
                              config->path ? config->path : "config", t.name, u->isa[k]);
        tag_clear(&t);
        return r;
      }
      cleanup_free char *low = fp_xstrdup_lower(u->isa[k]);
      if (!fp_strv_contains(t.isa, low))
        t.isa = fp_strv_push(t.isa, low);
    }
    if (!t.isa[0]) {
      int r = fpull_err_set(err, FPULL_EUSAGE, "%s: cpu-tags: %s has no ISA extensions",
                            config->path ? config->path : "config", t.name);
      tag_clear(&t);
      return r;
    }
    tag_sort_isa(&t);
    struct fp_tag *old = db_slot(db, t.name);
    if (old)
      tag_clear(old);
    *(old ? old : db_append(db)) = t;
  }
  return 0;
}

static void index_archs(struct fpull_tagdb *db)
{
  for (size_t i = 0; i < db->n_tags; i++) {
    size_t a = 0;
    while (a < db->n_archs && strcmp(db->archs[a], db->tags[i].arch) != 0)
      a++;
    if (a == db->n_archs) {
      db->archs = fp_xrealloc(db->archs, (a + 1) * sizeof *db->archs);
      db->arch_tags = fp_xrealloc(db->arch_tags, (a + 1) * sizeof *db->arch_tags);
      db->archs[a] = fp_xstrdup(db->tags[i].arch);
      db->arch_tags[a] = fp_xcalloc(1, sizeof **db->arch_tags);
      db->n_archs++;
    }
    size_t n = fpull_strv_len(db->arch_tags[a]);
    db->arch_tags[a] = fp_xrealloc(db->arch_tags[a], (n + 2) * sizeof **db->arch_tags);
    db->arch_tags[a][n] = db->tags[i].name;
    db->arch_tags[a][n + 1] = NULL;
  }
}

/* cuda.yaml lives beside the tag table; a table elsewhere (tests, a site's own) without
 * one beside it uses the shipped one. */
static char *cuda_path(const char *tags_path)
{
  cleanup_free char *copy = fp_xstrdup(tags_path);
  char *p = fp_xasprintf("%s/cuda.yaml", dirname(copy));
  if (access(p, F_OK) == 0)
    return p;
  free(p);
  cleanup_free char *def = fp_xstrdup(fpull_tagdb_default_path());
  return fp_xasprintf("%s/cuda.yaml", dirname(def));
}

int fpull_tagdb_load(struct fpull_tagdb **out, const char *path, const struct fpull_config *config,
                     fpull_err *err)
{
  *out = NULL;
  if (!path) {
    path = fpull_tagdb_default_path();
    /* Not a usage error: the installation is incomplete. Say what to set. */
    if (!readable(path))
      return fpull_err_set(err, FPULL_EFAIL,
                           "cannot find fpull's data file %s (%s); set FPULL_DATA_DIR to the "
                           "directory holding cputags.yaml and cuda.yaml (data/ in the sources)",
                           path, strerror(errno));
  }
  struct fpull_tagdb *db = fp_xcalloc(1, sizeof *db);
  cleanup_free char *cpath = cuda_path(path);
  int r = load_tags(db, path, err);
  if (!r)
    r = load_cuda(db, cpath, err);
  if (!r)
    r = add_user_tags(db, config, err);
  if (r) {
    fpull_tagdb_free(db);
    return r;
  }
  index_archs(db);
  *out = db;
  return 0;
}
