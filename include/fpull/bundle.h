/* fpull: OCI runtime bundles (pull --format bundle). */
#ifndef FPULL_BUNDLE_H
#define FPULL_BUNDLE_H

#include "error.h"
#include "pull.h"

/* Pulls image into an OCI runtime bundle dest (NULL: ./NAME): dest/rootfs as fpull_pull
 * unpacks it, and dest/config.json, a runtime-spec config generated from the image config
 * as `umoci unpack` does (process args = Entrypoint + Cmd, env, cwd, user resolved in the
 * rootfs's /etc/passwd and /etc/group; as non-root, umoci --rootless's mappings of the
 * caller's own uid and gid; only org.opencontainers.image.* Labels as annotations). The
 * bundle is built beside dest and renamed into place, so dest appears only complete;
 * opts->unpack.force replaces an existing dest. As root dest stays mode 0700 (its rootfs
 * keeps setuid files, capabilities and devices); rootless it is 0755. (*out)->rootfs is
 * the absolute dest/rootfs. Returns fpull(1)'s exit codes (EXIT STATUS). */
FPULL_API int fpull_pull_bundle(struct fpull_pull_result **out, const char *image, const char *dest,
                                const struct fpull_pull_opts *opts, fpull_err *err);

#endif
