/* Internal: the reader of an image-spec platform object, one for every document that holds
 * one: an index entry's "platform" (manifest.c) and the record of a SquashFS output
 * (sinks/sqfs_platform.h). */
#ifndef FP_REGISTRY_PLATFORM_H
#define FP_REGISTRY_PLATFORM_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "fpull/error.h"
#include "fpull/manifest.h"

/* Reads platform object j into *out: os, architecture, variant and os.version (strings),
 * os.features and features (lists of strings, at most most_features each; SIZE_MAX for no
 * bound). A missing os or architecture reads as "" (as Go reads it); unknown members are
 * ignored. Errors (FPULL_EINTEGRITY, *out left empty, what names the document): j not an
 * object, a member of the wrong type (null included), a list too long, a member named
 * like one of these but in another case (fp_json_member). The caller frees *out with
 * fp_platform_clear. */
int fp_platform_read(struct fpull_platform *out, const cJSON *j, const char *what,
                     size_t most_features, fpull_err *err);

/* Frees what *p holds and empties it: a platform held by value (the SquashFS record, a
 * spec's entry); fpull_platform_free frees one allocated. */
void fp_platform_clear(struct fpull_platform *p);

#endif
