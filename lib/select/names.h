/* Shapes of feature names shared by the name checks (names.c) and the manifest-spec
 * warnings (spec.c). */
#ifndef FP_NAMES_H
#define FP_NAMES_H

/* 1 when lower (lower case) is nvidia-N[-N[-N]], nv-compute-N-N or cuda-N-N. */
int fp_nvidia_feature_name(const char *lower);

#endif
