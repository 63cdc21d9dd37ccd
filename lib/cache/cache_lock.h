/* Per-blob lock files for the shared cache: an exclusive lock on CACHE/locks/NAME that works
 * between processes, threads (one open file description each) and NFS clients. */
#ifndef FP_CACHE_LOCK_H
#define FP_CACHE_LOCK_H

#include <sys/types.h>

/* Opens (creating with mode: the umask applies) dirfd/name and locks it. wait_s: how long
 * to wait while someone else holds it (0: not at all); the wait starts over whenever the
 * holder touches the file (fp_lock_touch: its download makes progress), but never lasts
 * more than ten times wait_s in all, so that nobody who can merely open the file (a reader
 * holding a read lock on it) stops others for long. Returns 0 with *out the locked fd, 1
 * when it is still held or cannot be opened by us (EACCES: another user's), -1 with errno. */
int fp_lock_take(int dirfd, const char *name, mode_t mode, double wait_s, int *out);
/* Tells waiters that the holder of fd is still at work (at most once a second). */
void fp_lock_touch(int fd);
/* Unlinks dirfd/name while still holding the lock, then unlocks by closing fd. */
void fp_lock_drop(int dirfd, const char *name, int fd);

#endif
