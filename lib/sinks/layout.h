/* Internal: the OCI layout and image archive sink (layout.c), under fpull_pull_layout. */
#ifndef FP_SINKS_LAYOUT_H
#define FP_SINKS_LAYOUT_H

#include "fpull/error.h"
#include "fpull/layout.h"
#include "fpull/pull.h"

/* Before the network: kind and dest are valid, and what is at dest may take the image (a
 * new path, an existing OCI layout without an image of that name, or anything with
 * opts->unpack.force). *tagname: the name the image gets (caller frees; NULL: none). */
int fp_layout_precheck(const char *image, enum fpull_layout_kind kind, const char *dest,
                       const char *name, const struct fpull_pull_opts *opts, char **tagname,
                       fpull_err *err);

/* Writes r's chosen entry, from the cache, to dest as kind says (fpull_pull_layout). */
int fp_layout_write(const struct fpull_pull_result *r, enum fpull_layout_kind kind,
                    const char *dest, const char *tagname, const struct fpull_pull_opts *opts,
                    fpull_err *err);

#endif
