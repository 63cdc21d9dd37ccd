/* fpull Slurm plugin: least recently used first, for the two stores a user's files are kept
 * in within a bound (the node store, store.c; the SquashFS store, sqsh_store.c).
 *
 * Both keep KEY.lock beside what they keep: its mtime is the last use, and a step holds
 * its KEY by a shared flock on it. A scan lists the KEY.lock of a directory with what each
 * KEY takes; a trim removes, oldest first, until the total is within the bound, through
 * the store's own function, which passes over what it must keep or another step holds.
 */
#ifndef FPULL_SLURM_LRU_H
#define FPULL_SLURM_LRU_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct fp_lru_item {
  char key[72];   /* KEY of KEY.lock: a digest's hex, or a name */
  int kind;       /* the scan's: which directory, for the store's drop */
  time_t used;    /* KEY.lock's mtime */
  uint64_t bytes; /* what KEY takes, as the store's measure said */
};

struct fp_lru {
  struct fp_lru_item *v;
  size_t n;
  uint64_t total;
};

/* Adds every KEY.lock of the directory dfd (KEY of 1 to 65 characters) for which
 * measure(ctx, dfd, KEY, &bytes) returns 0; -1 passes KEY over. */
void fp_lru_scan(struct fp_lru *l, int dfd, int kind,
                 int (*measure)(void *ctx, int dfd, const char *key, uint64_t *bytes), void *ctx);

/* Oldest first while the total is above max: drop(ctx, item) returns 1 when it removed
 * the item (its bytes leave the total), 0 when it kept it (the step's own, or held). */
void fp_lru_trim(struct fp_lru *l, uint64_t max,
                 int (*drop)(void *ctx, const struct fp_lru_item *item), void *ctx);

void fp_lru_free(struct fp_lru *l);

#endif
