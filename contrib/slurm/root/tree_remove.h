/* fpull Slurm plugin: removing a tree a job's user could change meanwhile, without ever
 * entering a mount point (not even to look at it: a FUSE mount whose daemon never answers
 * would hang whoever stats it). */
#ifndef FPULL_SLURM_TREE_REMOVE_H
#define FPULL_SLURM_TREE_REMOVE_H

#include <stddef.h>

/* Removes name in dirfd and everything under it that is on dirfd's own mount, never
 * following a symlink and never entering a mount point: what is mounted, and the
 * directories above it, are left and counted in *left. Directories of ours without u+rwx
 * are opened up first. Iterative (depth costs memory, not stack or descriptors); never
 * climbs out of the tree (a directory moved away meanwhile stops it with EXDEV). 0 when
 * all is gone (or nothing was there), else -1 with errno (EBUSY: *left entries stay). */
int fp_slurm_remove_tree(int dirfd, const char *name, size_t *left);

/* The mount ID of what fd refers to (from /proc/self/fdinfo: no file system is asked),
 * or -1. */
int fp_slurm_mount_id(int fd);

#endif
