/* Shapes of feature names shared by the name checks (names.c) and the manifest-spec
 * warnings (spec.c). */
#ifndef FP_NAMES_H
#define FP_NAMES_H

#include "fpull/error.h"

/* 1 when lower (lower case) is nvidia-N[-N[-N]], nv-compute-N-N or cuda-N-N. */
int fp_nvidia_feature_name(const char *lower);

struct fpull_tagdb;
struct fpull_config;

/* Every feature name the tables, the detectors and the config's site-features know, built
 * once (sorted) for checking many names: fpull_feature_name_check rebuilt it for each. */
struct fp_feature_names;
struct fp_feature_names *fp_feature_names_new(const struct fpull_tagdb *db,
                                              const struct fpull_config *config);
/* fpull_feature_name_check against k: 0, or FPULL_EUSAGE with a "did you mean". */
int fp_feature_names_check(const struct fp_feature_names *k, const char *name, fpull_err *err);
void fp_feature_names_free(struct fp_feature_names *k);

#endif
