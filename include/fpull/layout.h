/* fpull: the chosen entry as an OCI image layout or an image archive, for the tools that
 * read those (skopeo, umoci, podman load, docker load, Apptainer's oci-archive:). */
#ifndef FPULL_LAYOUT_H
#define FPULL_LAYOUT_H

#include "error.h"
#include "pull.h"

enum fpull_layout_kind {
  FPULL_LAYOUT_OCI = 1,        /* an OCI image layout directory (oci:DIR) */
  FPULL_LAYOUT_OCI_ARCHIVE,    /* the same as one tar file (oci-archive:FILE) */
  FPULL_LAYOUT_DOCKER_ARCHIVE, /* a tar that docker load reads (docker-archive:FILE) */
};

/* Pulls image's chosen entry into the cache, as fpull_prefetch does, and writes its
 * manifest, config and layers (as the registry serves them, copied from the cache through
 * descriptors that verified them) to dest as kind says. name (NULL: the tag of image, none
 * for a digest reference) becomes the layout's org.opencontainers.image.ref.name, or for
 * docker-archive the archive's RepoTags entry (a reference, normalised). The directory or
 * file is written beside dest and renamed into place; an existing dest is replaced only
 * with opts->unpack.force. (*out)->rootfs is dest's absolute path. Returns fpull(1)'s
 * exit codes (FPULL_EUSAGE for a bad name). */
FPULL_API int fpull_pull_layout(struct fpull_pull_result **out, const char *image,
                                enum fpull_layout_kind kind, const char *dest, const char *name,
                                const struct fpull_pull_opts *opts, fpull_err *err);

#endif
