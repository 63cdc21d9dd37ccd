/* Internal: an index flattened into the entries that may be chosen (contract, "Which index
 * entries are candidates"), shared by pull, inspect and prefetch --all. */
#ifndef FP_CANDIDATES_H
#define FP_CANDIDATES_H

#include "fpull/manifest.h"

/* Levels of index, the top one included. */
#define FP_INDEX_DEPTH_MAX 4
/* Rows of one flattened index, nested ones included: bounds what a hostile index can make
 * fpull hold or fetch (an index of 4 MiB lists some 25,000 entries). */
#define FP_CANDIDATES_MAX 16384

struct fp_cand {
  long parent;     /* row of the nested index that listed this entry; -1: the top index */
  int depth;       /* 1 for the top index's entries */
  int from_config; /* the platform was taken from the entry's image config */
  int followed;    /* a nested index: its entries are the rows that name this one as parent */
  int asked;       /* its platform was asked of its config (from_config or skip says what) */
  char *skip;      /* why the entry is passed over; NULL for a candidate */
};

struct fp_cands {
  struct fpull_descriptor *d; /* n descriptors, in document order (contiguous, for
                                 fpull_match_entries); platforms filled from configs */
  struct fp_cand *c;          /* n */
  size_t n;
};

/* What building needs from the network or the cache. */
struct fp_cand_io {
  void *ud;
  /* The index entry d names: fetched, checked against d (size, digest, kind) and parsed. */
  int (*fetch_index)(void *ud, const struct fpull_descriptor *d, struct fpull_index **out,
                     fpull_err *err);
  /* The platform of manifest entry d (which has none) from its image config. When the
   * entry cannot be a candidate (not an image, not in the cache), returns 0 with *why set
   * and *out NULL. */
  int (*platform)(void *ud, const struct fpull_descriptor *d, struct fpull_platform **out,
                  char **why, fpull_err *err);
};

/* Flattens top (whose digest is top_digest): entries in document order; a nested index
 * is followed where it is listed (its own row stays, with followed set), filtered by its
 * descriptor's platform when it has one, to FP_INDEX_DEPTH_MAX levels. Entries that are
 * not image manifests or indexes, artifacts and attestations are rows with skip set.
 * FPULL_EUNSAFE for an index that contains itself or more than FP_CANDIDATES_MAX rows;
 * fetch errors as io gives them. */
int fp_cands_build(struct fp_cands *out, const struct fpull_index *top, const char *top_digest,
                   const struct fp_cand_io *io, fpull_err *err);
void fp_cands_free(struct fp_cands *c);

struct fpull_fetched;
/* The document f that index entry d named (its digest was checked as it was fetched): of
 * d's size and of the kind want (FPULL_DOC_INDEX or FPULL_DOC_MANIFEST), else
 * FPULL_EINTEGRITY (an entry typed as an index that holds a manifest, and the reverse). */
int fp_cand_check_doc(const struct fpull_descriptor *d, const struct fpull_fetched *f, int want,
                      fpull_err *err);
/* The same for an index, parsed into *out, whose own mediaType must be d's. */
int fp_cand_read_index(const struct fpull_descriptor *d, const struct fpull_fetched *f,
                       struct fpull_index **out, fpull_err *err);
/* A manifest's mediaType (its body's, else its Content-Type's) must be of entry d's kind
 * (image manifest or index; Docker v2 and OCI types stand for each other). */
int fp_cand_check_media_type(const struct fpull_descriptor *d, const char *got, fpull_err *err);
/* The platform an image config gives an entry that has none (os, architecture, variant,
 * os.features). */
struct fpull_platform *fp_cand_platform_of(const struct fpull_image_config *c);

#endif
