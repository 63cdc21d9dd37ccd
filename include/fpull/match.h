/* fpull: why the ranking of index entries came out as it did (fpull inspect). The
 * eligibility and ranking themselves are fpull_match_entries in features.h. */
#ifndef FPULL_MATCH_H
#define FPULL_MATCH_H

#include "features.h"

/* Why entry i (eligible, rank r) ranks above the entry ranked r + 1, naming the first of
 * fpull(1)'s ranking rules (MATCHING) that tells them apart: "more features than rank 2 (3 vs 2;
 * rule 1)", "higher variant ... (rule 2)", "more demanding CPU tag ... (rule 3)", "higher
 * compute capability ... (rule 4)", "earlier in the index ... (rule 5)". m, entries and db
 * are those fpull_match_entries was given; the ranks are read as they are now. Returns a
 * string the caller frees, or NULL when entry i is not eligible or is ranked last. */
FPULL_API char *fpull_match_why(const struct fpull_match *m, const struct fpull_descriptor *entries,
                                size_t i, const struct fpull_tagdb *db);

/* The error when nothing fits (m->chosen < 0), the same for pull and inspect: for an index,
 * the closest entry for the target's os/architecture and the features it needs, or the
 * entry the GPU preflight refused; for a single manifest (single != 0, one entry), the
 * platform it is for. Sets FPULL_ENOMATCH in err and returns it. */
FPULL_API int fpull_match_no_fit(const struct fpull_match *m,
                                 const struct fpull_descriptor *entries, int single,
                                 const struct fpull_target *t, fpull_err *err);

#endif
