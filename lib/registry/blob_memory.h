/* Internal: a small blob (an image config) fetched into memory and verified there, for
 * inspect without a cache. */
#ifndef FP_BLOB_MEMORY_H
#define FP_BLOB_MEMORY_H

#include "fpull/manifest.h"
#include "fpull/registry.h"

/* GET the blob d names into *data (NUL-terminated, *len bytes; the caller frees), refusing
 * more than d->size bytes and any bytes whose sha256 is not d->digest (FPULL_EINTEGRITY).
 * *received (may be NULL) grows by the bytes received. Errors as fpull_registry_get_blob. */
int fp_blob_fetch_memory(fpull_registry *reg, const char *repo, const struct fpull_descriptor *d,
                         char **data, size_t *len, uint64_t *received, fpull_err *err);

#endif
