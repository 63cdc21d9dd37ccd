/* What pulls leave behind for cache housekeeping (fpull cache prune|rm): pins on the blobs
 * they use, and last-use stamps of the references they pulled. */
#ifndef FP_CACHE_USE_H
#define FP_CACHE_USE_H

#include "fpull/cache.h"

struct fp_cache_pins;

/* A session that is going to use c (pull, prefetch, inspect, config) opens its pins:
 * CACHE/used/.pins, created when missing. Nothing for a cache opened read-only; a failure
 * only means that pins are not taken (debug message). */
void fp_cache_pins_open(fpull_cache *c);

/* Pins digest for the rest of the session: a shared lock on one byte of the pins file,
 * taken before the blob is looked up, written or unpacked and held until the cache is
 * freed, so that prune and rm leave it alone. Waits at most about two seconds for a prune
 * that is removing that very blob right now, then goes on unpinned; once such a wait ran
 * out, the session's later pins are tried once only. Thread-safe. */
void fp_cache_pin(fpull_cache *c, const char *digest);

/* Stamps the last use of reference (a normalised reference, with a tag or a digest):
 * CACHE/used/SHA256(REFERENCE) holds the reference, and its mtime is the time of the last
 * pull or prefetch that used it (atime is no use: noatime and relatime mounts). Failures
 * are ignored (debug message). */
void fp_cache_note_use(fpull_cache *c, const char *reference);

/* For housekeeping: whether a pull holds a pin on digest (1), none does (0). */
int fp_cache_pinned(fpull_cache *c, const char *digest);
/* Takes the exclusive lock of digest's pin without waiting: 0 taken, 1 a pull holds it,
 * -1 no pins file could be opened for writing (errno). */
int fp_cache_pin_hold(fpull_cache *c, const char *digest);
/* Gives back what fp_cache_pin_hold took. */
void fp_cache_pin_release(fpull_cache *c, const char *digest);

/* CACHE/used, where the stamps are; -1 when it is not there (or not opened). */
int fp_cache_used_fd(const fpull_cache *c);

/* Closes the pins (releasing them): called by fpull_cache_free. NULL is a no-op. */
void fp_cache_pins_free(struct fp_cache_pins *p);

#endif
