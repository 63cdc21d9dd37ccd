/* Internal: who a bundle's process runs as (bundle_user.c). */
#ifndef FP_BUNDLE_USER_H
#define FP_BUNDLE_USER_H

#include "fpull/error.h"

struct fp_exec_user {
  unsigned uid, gid;
  unsigned groups[64]; /* additional gids, from /etc/group when no group was given */
  size_t n_groups;
  char *name; /* from /etc/passwd, or NULL when the uid is not listed */
  char *home; /* likewise */
};

/* Resolves spec (the image config's User; NULL or "" is root) inside the rootfs rootfs_fd.
 * FPULL_EFAIL naming what is missing when a user or group name is not there. */
int fp_exec_user_resolve(struct fp_exec_user *u, const char *spec, int rootfs_fd, fpull_err *err);
void fp_exec_user_free(struct fp_exec_user *u);

#endif
