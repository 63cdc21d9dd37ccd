/* A small YAML document tree on top of libyaml, shared by the config file and the
 * manifest spec. Every node knows its line and column so that errors can point at it.
 * Internal (prefix fp_). */
#ifndef FP_YAML_DOC_H
#define FP_YAML_DOC_H

#include <stddef.h>

#include "fpull/error.h"

enum fp_ynode_kind {
  FP_Y_SCALAR = 0,
  FP_Y_SEQ = 1,
  FP_Y_MAP = 2,
};

struct fp_ynode {
  int kind;
  unsigned line, column; /* 1-based, where the node starts */
  char *value;           /* scalars: the text (NUL-terminated, may hold no NUL inside) */
  int plain;             /* scalars: 1 when unquoted (so "null", "true" may be keywords) */
  /* Sequences: n items. Maps: n pairs, items[2*i] the key (a scalar), items[2*i+1] the
   * value. */
  struct fp_ynode **items;
  size_t n, cap;
};

/* Limits on what a document may hold: configs and specs are small, and a hostile file
 * must not make the parser use unbounded memory or stack. */
#define FP_YAML_MAX_BYTES (1u * 1024 * 1024)
#define FP_YAML_MAX_DEPTH 32
#define FP_YAML_MAX_NODES 100000
#define FP_YAML_MAX_KEYS 1024 /* per mapping: duplicate detection is quadratic */

/* Parses one YAML document. *out is NULL for an empty document. Aliases, several
 * documents, non-scalar and duplicate map keys, and the limits above are refused.
 * Errors: FPULL_EUSAGE with "NAME:LINE:COLUMN: reason". */
int fp_yaml_parse(struct fp_ynode **out, const char *text, size_t len, const char *name,
                  fpull_err *err);
void fp_ynode_free(struct fp_ynode *n);

/* "a scalar", "a list", "a mapping". */
const char *fp_ynode_kind_name(int kind);
/* 1 for an unquoted null scalar ("", "~", "null", "Null", "NULL"). */
int fp_ynode_is_null(const struct fp_ynode *n);
/* The value of key in map n (a scalar key with exactly that text), or NULL. */
const struct fp_ynode *fp_ynode_get(const struct fp_ynode *n, const char *key);

/* Sets err to FPULL_EUSAGE "NAME:LINE:COLUMN: message" for node n. Returns FPULL_EUSAGE. */
int fp_yaml_err(fpull_err *err, const char *name, const struct fp_ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Typed readers; each refuses other node kinds with an fp_yaml_err naming what. */
int fp_yaml_string(char **out, const struct fp_ynode *n, const char *name, const char *what,
                   fpull_err *err);
/* A list of scalars (a single scalar is a one-item list). Empty strings are refused. */
int fp_yaml_strv(char ***out, const struct fp_ynode *n, const char *name, const char *what,
                 fpull_err *err);
/* YAML 1.1 booleans: true/false, yes/no, on/off (any case). */
int fp_yaml_bool(int *out, const struct fp_ynode *n, const char *name, const char *what,
                 fpull_err *err);
/* A decimal integer within [min, max]. */
int fp_yaml_int(long *out, const struct fp_ynode *n, long min, long max, const char *name,
                const char *what, fpull_err *err);

#endif
