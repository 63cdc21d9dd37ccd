/* Internal: the version check of the public options structs (see FPULL_PULL_OPTS_VERSION). */
#ifndef FP_OPTS_H
#define FP_OPTS_H

#include "fpull/error.h"

/* 0 when version is one this library knows (1 to known), else FPULL_EUSAGE naming the
 * struct: a caller that never set it (0) or was built against a newer fpull. */
int fp_opts_check(unsigned int version, unsigned int known, const char *type, fpull_err *err);

/* FP_OPTS_CHECK(struct fpull_pull_opts, FPULL_PULL_OPTS, opts, err) */
#define FP_OPTS_CHECK(o, MACRO, type, err) fp_opts_check((o)->version, MACRO##_VERSION, type, err)

#endif
