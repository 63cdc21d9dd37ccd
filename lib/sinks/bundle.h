/* Internal: the runtime-spec config.json of an OCI bundle, generated from an image config
 * the way umoci unpack does, so that crun and runc run the image as it was built. */
#ifndef FP_BUNDLE_H
#define FP_BUNDLE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "fpull/error.h"

/* The config.json text (NUL-terminated, caller frees) for the image config json and the
 * rootfs rootfs_fd (an unpacked DEST/rootfs; user and group names of the config's User are
 * looked up in its /etc/passwd and /etc/group, resolved inside it). rootless: map only the
 * caller's own uid and gid, with a user namespace and no network namespace, as umoci
 * --rootless does. FPULL_EINTEGRITY for a config that is not JSON; FPULL_EFAIL for a User
 * naming a user or group the rootfs does not have. */
int fp_bundle_spec(char **out, const char *json, size_t len, int rootfs_fd, int rootless,
                   fpull_err *err);

/* A runtime-spec uidMappings/gidMappings array: HOST as the namespace's root, alone. */
cJSON *fp_bundle_id_map(unsigned host);

#endif
