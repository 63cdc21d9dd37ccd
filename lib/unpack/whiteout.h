/* Whiteouts (image-spec "Whiteouts"): ".wh.NAME" deletes NAME of the lower layers, and
 * ".wh..wh..opq" hides the lower layers' content of its directory. Both are applied to the
 * rootfs being built, through the in-root resolver, and never materialised. */
#ifndef FP_WHITEOUT_H
#define FP_WHITEOUT_H

#include <stddef.h>
#include <stdint.h>

#include <sys/stat.h>

#include "inroot.h"

#define FP_WH_PREFIX ".wh."
#define FP_WH_OPAQUE ".wh..wh..opq"

enum fp_wh_kind {
  FP_WH_NONE = 0, /* an ordinary name */
  FP_WH_FILE = 1, /* .wh.NAME: *target is NAME */
  FP_WH_OPAQUE_DIR = 2,
  FP_WH_META = 3,    /* other .wh..wh.* (aufs bookkeeping): skipped */
  FP_WH_INVALID = -1 /* .wh. with an empty name, ".", ".." or a "/" */
};

/* Classifies a last path component. */
int fp_whiteout_kind(const char *base, const char **target);

/* A set of 64-bit hashes (0 is never stored). */
struct fp_hashset {
  uint64_t *slots; /* 0: empty */
  size_t n, cap;
};

/* What one layer wrote, so its own whiteouts spare it: whiteouts apply to lower layers
 * only, whatever the order inside the layer's tar. Keyed by what things are, not by how
 * the layer spelled them (symlinks give one directory any number of spellings, and memory
 * must not grow with them): each name the layer wrote, as (directory dev, ino, name), and
 * each directory it wrote into, as (dev, ino), with every directory above it. */
struct fp_layerset {
  struct fp_hashset names, dirs;
};

void fp_layerset_clear(struct fp_layerset *s);
void fp_layerset_free(struct fp_layerset *s);
/* Records that the layer wrote name in the directory dir. */
void fp_layerset_add_name(struct fp_layerset *s, const struct stat *dir, const char *name);
/* Records that the layer wrote into the directory dir; 1 when it was new. */
int fp_layerset_add_dir(struct fp_layerset *s, const struct stat *dir);
int fp_layerset_has_name(const struct fp_layerset *s, const struct stat *dir, const char *name);
int fp_layerset_has_dir(const struct fp_layerset *s, const struct stat *dir);

/* Applies ".wh.NAME" found at cleaned path "DIR/.wh.NAME" (dir may be ""): removes DIR/NAME
 * unless this layer wrote it; a directory this layer wrote into only loses the lower
 * content. A symlink is removed itself, never followed. 0, or -1 with errno. */
int fp_whiteout_apply(const struct fp_root *r, const struct fp_layerset *layer, const char *dir,
                      const char *name);
/* Applies ".wh..wh..opq" in cleaned directory dir: removes what lower layers put there. */
int fp_opaque_apply(const struct fp_root *r, const struct fp_layerset *layer, const char *dir);

#endif
