/* Internal view of the CPU tag table and the CUDA tables (lib/tagdb.c), shared by the
 * feature set, target and matching code. */
#ifndef FP_TAGDB_H
#define FP_TAGDB_H

#include <stddef.h>

#include "fpull/features.h"

struct fp_tag {
  char *name; /* canonical, lower case */
  char *arch; /* normalised architecture */
  char **aliases;
  char **isa; /* sorted, no duplicates */
  size_t n_isa;
  int user; /* from the config's cpu-tags: every extension gates */
};

/* A CUDA release or a driver version as numeric components ("550.54.14" -> 550,54,14). */
#define FP_VER_MAX 4
struct fp_version {
  unsigned v[FP_VER_MAX];
  size_t n;
};

struct fp_driver_min {
  struct fp_version cuda;   /* major.minor */
  struct fp_version driver; /* the oldest driver that supports it */
};

struct fpull_tagdb {
  struct fp_tag *tags;
  size_t n_tags;
  char **archs;      /* the architectures named by tags */
  char ***arch_tags; /* per archs[i]: canonical names in table order */
  size_t n_archs;
  struct fp_version *cuda; /* CUDA releases, oldest first */
  size_t n_cuda;
  struct fp_driver_min *drivers; /* sorted by driver version */
  size_t n_drivers;
  char **intrinsic_only; /* extensions that never gate a tag (cputags.yaml "intrinsic-only"):
                          * "ext" for every architecture, "arch:ext" for one */
};

/* The tag with this canonical name or alias (already lower case), or NULL. */
const struct fp_tag *fp_tagdb_find(const struct fpull_tagdb *db, const char *name);
/* 1 when every extension of a is in b. */
int fp_tag_subset(const struct fp_tag *a, const struct fp_tag *b);
/* 1 when isa gates the tags of arch (normalised) that list it, 0 when compilers reach it
 * only through intrinsics there (the table's "intrinsic-only"): a CPU without it keeps those
 * tags. arch NULL: 0 only where it is intrinsic-only on every architecture whose tags list it. */
int fp_tagdb_gates(const struct fpull_tagdb *db, const char *arch, const char *isa);
/* The same for one extension of tag t: a user's own tag gates on all of them. */
int fp_tag_gates(const struct fpull_tagdb *db, const struct fp_tag *t, const char *isa);
/* The highest x86-64 level (2..4) that one of features' amd64 CPU tags implies (its ISA set
 * holds the level's), or 0 for none. features: canonical names. */
int fp_tagdb_x86_level(const struct fpull_tagdb *db, char *const *features);
/* Parses "550.54.14" with separator sep into v; 0, or -1 when it is not such a version. */
int fp_version_parse(struct fp_version *v, const char *s, char sep);
/* <0, 0, >0 comparing component by component; a missing component counts as 0. */
int fp_version_cmp(const struct fp_version *a, const struct fp_version *b);
/* Restricts implication from ISA names to the tags of arch (normalised here); NULL lifts
 * the restriction. lib/featureset.c. */
void fp_featureset_set_arch(struct fpull_featureset *fs, const char *arch);
/* 1 when name matches [a-z0-9._-]+ (after folding to lower case). */
int fp_feature_name_valid(const char *name);

#endif
