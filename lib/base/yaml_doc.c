#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "util.h"
#include "yaml_doc.h"

void fp_ynode_free(struct fp_ynode *n)
{
  if (!n)
    return;
  for (size_t i = 0; i < n->n; i++)
    fp_ynode_free(n->items[i]);
  free(n->items);
  free(n->value);
  free(n);
}

const char *fp_ynode_kind_name(int kind)
{
  switch (kind) {
  case FP_Y_SCALAR:
    return "a scalar";
  case FP_Y_SEQ:
    return "a list";
  default:
    return "a mapping";
  }
}

static int yaml_verr(fpull_err *err, const char *name, unsigned line, unsigned col, const char *fmt,
                     va_list ap)
{
  char msg[FPULL_ERR_MSG_MAX];
  vsnprintf(msg, sizeof msg, fmt, ap);
  return fpull_err_set(err, FPULL_EUSAGE, "%s:%u:%u: %s", name, line, col, msg);
}

int fp_yaml_err(fpull_err *err, const char *name, const struct fp_ynode *n, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int r = yaml_verr(err, name, n ? n->line : 1, n ? n->column : 1, fmt, ap);
  va_end(ap);
  return r;
}

static int mark_err(fpull_err *err, const char *name, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int mark_err(fpull_err *err, const char *name, yaml_mark_t m, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int r = yaml_verr(err, name, (unsigned)m.line + 1, (unsigned)m.column + 1, fmt, ap);
  va_end(ap);
  return r;
}

static void node_append(struct fp_ynode *parent, struct fp_ynode *child)
{
  if (parent->n == parent->cap) {
    parent->cap = parent->cap ? parent->cap * 2 : 8;
    parent->items = fp_xrealloc(parent->items, parent->cap * sizeof *parent->items);
  }
  parent->items[parent->n++] = child;
}

struct builder {
  const char *name;
  struct fp_ynode *root;
  struct fp_ynode *stack[FP_YAML_MAX_DEPTH];
  size_t depth;
  size_t nodes;
  int documents;
};

static void event_freep(yaml_event_t **e)
{
  if (*e)
    yaml_event_delete(*e);
}

static void parser_freep(yaml_parser_t **p)
{
  if (*p)
    yaml_parser_delete(*p);
}

static int parser_error(yaml_parser_t *p, const char *name, fpull_err *err)
{
  const char *problem = p->problem ? p->problem : "malformed YAML";
  if (p->context)
    return mark_err(err, name, p->problem_mark, "%s %s", p->problem ? problem : "error",
                    p->context);
  return mark_err(err, name, p->problem_mark, "%s", problem);
}

/* Attaches a new node to the open container (or makes it the root). A mapping key must
 * be a scalar not seen before in the same mapping. */
static int attach(struct builder *b, struct fp_ynode *node, fpull_err *err)
{
  if (++b->nodes > FP_YAML_MAX_NODES) {
    int r = fp_yaml_err(err, b->name, node, "more than %u nodes", FP_YAML_MAX_NODES);
    fp_ynode_free(node);
    return r;
  }
  if (b->depth == 0) {
    b->root = node;
    return 0;
  }
  struct fp_ynode *top = b->stack[b->depth - 1];
  if (top->kind == FP_Y_MAP && top->n % 2 == 0) {
    int r = 0;
    if (node->kind != FP_Y_SCALAR)
      r = fp_yaml_err(err, b->name, node, "a mapping key must be a scalar, not %s",
                      fp_ynode_kind_name(node->kind));
    else if (top->n / 2 >= FP_YAML_MAX_KEYS)
      r = fp_yaml_err(err, b->name, node, "more than %u keys in one mapping", FP_YAML_MAX_KEYS);
    for (size_t i = 0; r == 0 && i < top->n; i += 2)
      if (strcmp(top->items[i]->value, node->value) == 0)
        r = fp_yaml_err(err, b->name, node, "duplicate key \"%s\" (first at line %u)", node->value,
                        top->items[i]->line);
    if (r) {
      fp_ynode_free(node);
      return r;
    }
  }
  node_append(top, node);
  return 0;
}

static struct fp_ynode *node_new(int kind, yaml_mark_t m)
{
  struct fp_ynode *n = fp_xcalloc(1, sizeof *n);
  n->kind = kind;
  n->line = (unsigned)m.line + 1;
  n->column = (unsigned)m.column + 1;
  return n;
}

static int on_event(struct builder *b, const yaml_event_t *e, fpull_err *err)
{
  switch (e->type) {
  case YAML_DOCUMENT_START_EVENT:
    if (++b->documents > 1)
      return mark_err(err, b->name, e->start_mark, "only one YAML document is allowed");
    return 0;
  case YAML_ALIAS_EVENT:
    /* Aliases can make a tiny file expand to an enormous tree ("billion laughs"), and
     * nothing in a config or spec needs them. */
    return mark_err(err, b->name, e->start_mark, "YAML aliases are not supported");
  case YAML_SCALAR_EVENT: {
    const char *v = (const char *)e->data.scalar.value;
    size_t len = e->data.scalar.length;
    if (memchr(v, '\0', len))
      return mark_err(err, b->name, e->start_mark, "NUL character in a scalar");
    struct fp_ynode *n = node_new(FP_Y_SCALAR, e->start_mark);
    n->value = fp_xstrndup(v, len);
    n->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    return attach(b, n, err);
  }
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    if (b->depth >= FP_YAML_MAX_DEPTH)
      return mark_err(err, b->name, e->start_mark, "nested deeper than %u levels",
                      FP_YAML_MAX_DEPTH);
    int kind = e->type == YAML_SEQUENCE_START_EVENT ? FP_Y_SEQ : FP_Y_MAP;
    struct fp_ynode *n = node_new(kind, e->start_mark);
    int r = attach(b, n, err);
    if (r)
      return r;
    b->stack[b->depth++] = n;
    return 0;
  }
  case YAML_SEQUENCE_END_EVENT:
  case YAML_MAPPING_END_EVENT:
    if (b->depth > 0)
      b->depth--;
    return 0;
  default:
    return 0;
  }
}

int fp_yaml_parse(struct fp_ynode **out, const char *text, size_t len, const char *name,
                  fpull_err *err)
{
  *out = NULL;
  if (len > FP_YAML_MAX_BYTES)
    return fpull_err_set(err, FPULL_EUSAGE, "%s: larger than %u bytes", name, FP_YAML_MAX_BYTES);
  yaml_parser_t parser;
  __attribute__((cleanup(parser_freep))) yaml_parser_t *pp = NULL;
  if (!yaml_parser_initialize(&parser))
    abort();
  pp = &parser;
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

  struct builder b = {.name = name};
  for (;;) {
    yaml_event_t ev;
    __attribute__((cleanup(event_freep))) yaml_event_t *evp = NULL;
    if (!yaml_parser_parse(&parser, &ev)) {
      fp_ynode_free(b.root);
      return parser_error(&parser, name, err);
    }
    evp = &ev;
    int r = on_event(&b, &ev, err);
    if (r) {
      fp_ynode_free(b.root);
      return r;
    }
    if (ev.type == YAML_STREAM_END_EVENT)
      break;
  }
  *out = b.root;
  return 0;
}

int fp_ynode_is_null(const struct fp_ynode *n)
{
  if (!n || n->kind != FP_Y_SCALAR || !n->plain)
    return 0;
  const char *v = n->value;
  return !*v || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
         strcmp(v, "NULL") == 0;
}

const struct fp_ynode *fp_ynode_get(const struct fp_ynode *n, const char *key)
{
  if (!n || n->kind != FP_Y_MAP)
    return NULL;
  for (size_t i = 0; i + 1 < n->n; i += 2)
    if (strcmp(n->items[i]->value, key) == 0)
      return n->items[i + 1];
  return NULL;
}

int fp_yaml_string(char **out, const struct fp_ynode *n, const char *name, const char *what,
                   fpull_err *err)
{
  if (n->kind != FP_Y_SCALAR || fp_ynode_is_null(n))
    return fp_yaml_err(err, name, n, "%s must be a string, not %s", what,
                       n->kind == FP_Y_SCALAR ? "empty" : fp_ynode_kind_name(n->kind));
  free(*out);
  *out = fp_xstrdup(n->value);
  return 0;
}

int fp_yaml_strv(char ***out, const struct fp_ynode *n, const char *name, const char *what,
                 fpull_err *err)
{
  cleanup_strv char **v = fp_xcalloc(1, sizeof *v);
  if (n->kind == FP_Y_SCALAR && fp_ynode_is_null(n)) {
    /* "key:" with nothing after it: an empty list. */
  } else if (n->kind == FP_Y_SCALAR) {
    if (!*n->value)
      return fp_yaml_err(err, name, n, "%s: empty string", what);
    v = fp_strv_push(v, n->value);
  } else if (n->kind == FP_Y_SEQ) {
    /* Filled in place: pushing one by one walks the list each time (site-features may
     * hold tens of thousands of names). */
    v = fp_xrealloc(v, (n->n + 1) * sizeof *v);
    for (size_t i = 0; i < n->n; i++) {
      const struct fp_ynode *it = n->items[i];
      v[i] = NULL;
      if (it->kind != FP_Y_SCALAR || fp_ynode_is_null(it))
        return fp_yaml_err(err, name, it, "%s: each item must be a string, not %s", what,
                           it->kind == FP_Y_SCALAR ? "empty" : fp_ynode_kind_name(it->kind));
      v[i] = fp_xstrdup(it->value);
    }
    v[n->n] = NULL;
  } else {
    return fp_yaml_err(err, name, n, "%s must be a list, not %s", what,
                       fp_ynode_kind_name(n->kind));
  }
  fpull_strv_free(*out);
  *out = steal_pointer(&v);
  return 0;
}

int fp_yaml_bool(int *out, const struct fp_ynode *n, const char *name, const char *what,
                 fpull_err *err)
{
  static const char *const yes[] = {"true", "yes", "on"};
  static const char *const no[] = {"false", "no", "off"};
  if (n->kind == FP_Y_SCALAR && n->plain) {
    for (size_t i = 0; i < 3; i++) {
      if (strcasecmp(n->value, yes[i]) == 0) {
        *out = 1;
        return 0;
      }
      if (strcasecmp(n->value, no[i]) == 0) {
        *out = 0;
        return 0;
      }
    }
  }
  if (n->kind != FP_Y_SCALAR)
    return fp_yaml_err(err, name, n, "%s must be true or false, not %s", what,
                       fp_ynode_kind_name(n->kind));
  return fp_yaml_err(err, name, n, "%s must be true or false, not \"%s\"", what, n->value);
}

int fp_yaml_int(long *out, const struct fp_ynode *n, long min, long max, const char *name,
                const char *what, fpull_err *err)
{
  if (n->kind != FP_Y_SCALAR)
    return fp_yaml_err(err, name, n, "%s must be an integer, not %s", what,
                       fp_ynode_kind_name(n->kind));
  const char *v = n->value;
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (!*v || *end || errno || !n->plain)
    return fp_yaml_err(err, name, n, "%s must be an integer, not \"%s\"", what, v);
  if (x < min || x > max)
    return fp_yaml_err(err, name, n, "%s must be between %ld and %ld, not %ld", what, min, max, x);
  *out = x;
  return 0;
}
