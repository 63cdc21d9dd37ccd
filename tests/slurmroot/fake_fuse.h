/* A FUSE file system for the Slurm plugin's root-side tests, mounted as fusermount3 mounts
 * one for a user where users may open /dev/fuse: root opens /dev/fuse and mounts it
 * (fd=N,rootmode=40000,user_id=UID,group_id=GID, nosuid, nodev, allow_other only when
 * asked), and the daemon that answers runs as the user. Whatever it answers is the user's
 * word: here, every directory and file is reported as owned by `reported` (root, another
 * user), and the tree is what a job directory holds, STEP/info naming `victim` as the
 * step's holder (the P and Q records). A silent daemon answers INIT and nothing else, as one
 * that hangs. */
#ifndef FPULL_TEST_FAKE_FUSE_H
#define FPULL_TEST_FAKE_FUSE_H

#include <sys/types.h>

struct fake_fuse {
  uid_t user;       /* the daemon's uid (and the mount's user_id) */
  uid_t reported;   /* the owner it reports for every file */
  pid_t victim;     /* the pid STEP/info names; 0: none */
  const char *step; /* the step directory's name ("1") */
  int allow_other;
  int silent;
};

/* Mounts the file system on point; the daemon's pid (fake_fuse_stop ends it). Fails the
 * test when it cannot. */
pid_t fake_fuse_mount(const char *point, const struct fake_fuse *how);

/* Ends the daemon (its requests are aborted: the kernel answers them with an error). */
void fake_fuse_stop(pid_t daemon);

/* Whether point is a mount point in this process's mount namespace (mountinfo). */
int fake_fuse_is_mounted(const char *point);

#endif
