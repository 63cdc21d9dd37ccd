/* Whiteouts (image-spec "Whiteouts"): ".wh.NAME" deletes NAME of the lower layers, and
 * ".wh..wh..opq" hides the lower layers' content of its directory. Both are applied to the
 * rootfs being built, through the in-root resolver, and never materialised. */
#ifndef FP_WHITEOUT_H
#define FP_WHITEOUT_H

#include <stddef.h>
#include <stdint.h>

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

/* The paths one layer wrote (and their ancestors), so its own whiteouts spare them:
 * whiteouts apply to lower layers only, whatever the order inside the layer's tar.
 * Stored as 64-bit hashes: a few bytes per entry, whatever the path lengths. */
struct fp_pathset {
  uint64_t *slots; /* 0: empty */
  size_t n, cap;
};

void fp_pathset_clear(struct fp_pathset *s);
void fp_pathset_free(struct fp_pathset *s);
/* Adds path and every ancestor of it. */
void fp_pathset_add(struct fp_pathset *s, const char *path);
int fp_pathset_has(const struct fp_pathset *s, const char *path, size_t len);

/* Applies ".wh.NAME" found at cleaned path "DIR/.wh.NAME" (dir may be ""): removes DIR/NAME
 * unless this layer wrote it; a directory this layer wrote into only loses the lower
 * content. A symlink is removed itself, never followed. 0, or -1 with errno. */
int fp_whiteout_apply(const struct fp_root *r, const struct fp_pathset *layer, const char *dir,
                      const char *name);
/* Applies ".wh..wh..opq" in cleaned directory dir: removes what lower layers put there. */
int fp_opaque_apply(const struct fp_root *r, const struct fp_pathset *layer, const char *dir);

#endif
