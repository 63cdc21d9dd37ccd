/* fpull Slurm plugin: least recently used first (see lru.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lru.h"
#include "base/util.h"

void fp_lru_scan(struct fp_lru *l, int dfd, int kind,
                 int (*measure)(void *ctx, int dfd, const char *key, uint64_t *bytes), void *ctx)
{
  int fd = dfd < 0 ? -1 : fcntl(dfd, F_DUPFD_CLOEXEC, 0);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (!d) {
    if (fd >= 0)
      close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    struct stat st;
    if (len < 6 || len > 70 || strcmp(de->d_name + len - 5, ".lock") != 0 ||
        fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      continue;
    struct fp_lru_item it = {.kind = kind, .used = st.st_mtime};
    snprintf(it.key, sizeof it.key, "%.*s", (int)(len - 5), de->d_name);
    if (measure(ctx, dfd, it.key, &it.bytes) != 0)
      continue;
    l->v = fp_xrealloc(l->v, (l->n + 1) * sizeof *l->v);
    l->v[l->n++] = it;
    l->total += it.bytes;
  }
  closedir(d);
}

static int older(const void *a, const void *b)
{
  const struct fp_lru_item *x = a, *y = b;
  return x->used < y->used ? -1 : x->used > y->used;
}

void fp_lru_trim(struct fp_lru *l, uint64_t max,
                 int (*drop)(void *ctx, const struct fp_lru_item *item), void *ctx)
{
  if (l->n > 1)
    qsort(l->v, l->n, sizeof *l->v, older);
  for (size_t i = 0; i < l->n && l->total > max; i++)
    if (drop(ctx, &l->v[i]))
      l->total -= l->v[i].bytes;
}

void fp_lru_free(struct fp_lru *l)
{
  free(l->v);
  l->v = NULL;
  l->n = 0;
  l->total = 0;
}
