/* Per-blob lock files for the shared cache: an exclusive lock on CACHE/locks/NAME that works
 * between processes, threads (one open file description each) and NFS clients. */
#ifndef FP_CACHE_LOCK_H
#define FP_CACHE_LOCK_H

/* Opens (creating) dirfd/name and locks it. wait: block until free. Returns 0 with *out the
 * locked fd, 1 when !wait and someone else holds it, -1 with errno. */
int fp_lock_take(int dirfd, const char *name, int wait, int *out);
/* Unlinks dirfd/name while still holding the lock, then unlocks by closing fd. */
void fp_lock_drop(int dirfd, const char *name, int fd);

#endif
