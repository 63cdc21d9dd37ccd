/* Internal: the record of what a SquashFS output was made from, /.fpull/platform.json in the
 * image beside enroot's files (sqfs_config.h): the chosen entry's platform (os,
 * architecture, variant, os.version, os.features, features), its manifest digest, and the
 * index digest and reference it was chosen from. fpull's Slurm plugin reads it back before
 * it runs the file (contrib/slurm/runner/runner_image.c): a node whose features do not
 * cover the entry refuses it, as a pull would refuse the entry. The file is the user's:
 * parsed with the strict JSON reader, bounded, never trusted for more than that refusal. */
#ifndef FP_SQFS_PLATFORM_H
#define FP_SQFS_PLATFORM_H

#include <stddef.h>

#include "fpull/error.h"
#include "fpull/manifest.h"

/* Where it is, cleaned, below the image's root. */
#define FP_SQFS_PLATFORM_PATH ".fpull/platform.json"
/* Its "mediaType": a document of another type (or version) is not this record. */
#define FP_SQFS_PLATFORM_TYPE "application/vnd.fpull.sqsh.platform.v1+json"
/* Most bytes of the file, and most features in each list: more is not used. */
#define FP_SQFS_PLATFORM_MAX (64u << 10)
#define FP_SQFS_PLATFORM_FEATURES_MAX 256

struct fp_sqfs_platform {
  char *reference;       /* the reference pulled, fpull's normal form; NULL when unknown */
  char *index_digest;    /* the index the entry was chosen from; NULL for a single manifest */
  char *manifest_digest; /* the entry's manifest */
  struct fpull_platform platform; /* os and architecture always set; the rest may be NULL */
};

/* The record's JSON text (one line and a newline). Caller frees. */
char *fp_sqfs_platform_json(const char *reference, const char *index_digest,
                            const char *manifest_digest, const struct fpull_platform *p);

/* Parses the record's text (len bytes). Errors (FPULL_EINTEGRITY, *out left empty): over
 * FP_SQFS_PLATFORM_MAX, not strict JSON, another mediaType, a manifest or index that is no
 * valid digest, no os or architecture, a member of the wrong type (null included) or named
 * like a known one in another case, a feature list longer than
 * FP_SQFS_PLATFORM_FEATURES_MAX. The platform is read by the registry's reader
 * (registry/platform.h), as an index entry's is. Unknown members are ignored. */
int fp_sqfs_platform_parse(struct fp_sqfs_platform *out, const char *text, size_t len,
                           fpull_err *err);
void fp_sqfs_platform_free(struct fp_sqfs_platform *p);

#endif
