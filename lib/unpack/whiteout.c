/* Whiteouts (see whiteout.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "whiteout.h"

int fp_whiteout_kind(const char *base, const char **target)
{
  if (strncmp(base, FP_WH_PREFIX, 4) != 0)
    return FP_WH_NONE;
  if (strcmp(base, FP_WH_OPAQUE) == 0)
    return FP_WH_OPAQUE_DIR;
  if (strncmp(base, ".wh..wh.", 8) == 0)
    return FP_WH_META;
  const char *t = base + 4;
  /* ".wh." would delete the directory itself, ".wh.." and ".wh..." its parent. */
  if (!*t || strcmp(t, ".") == 0 || strcmp(t, "..") == 0 || strchr(t, '/'))
    return FP_WH_INVALID;
  if (target)
    *target = t;
  return FP_WH_FILE;
}

static uint64_t mix(uint64_t h)
{
  /* splitmix64 finaliser: FNV alone clusters badly in a power-of-two table. */
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h ? h : 1;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static uint64_t dir_key(const struct stat *st)
{
  uint64_t h = 0xcbf29ce484222325ull;
  uint64_t dev = (uint64_t)st->st_dev, ino = (uint64_t)st->st_ino;
  h = fnv(h, &dev, sizeof dev);
  return mix(fnv(h, &ino, sizeof ino));
}

static uint64_t name_key(const struct stat *dir, const char *name)
{
  uint64_t h = dir_key(dir);
  return mix(fnv(h, name, strlen(name)));
}

static void hs_clear(struct fp_hashset *s)
{
  if (s->slots && s->n)
    memset(s->slots, 0, s->cap * sizeof *s->slots);
  s->n = 0;
}

static void hs_free(struct fp_hashset *s)
{
  free(s->slots);
  s->slots = NULL;
  s->n = s->cap = 0;
}

/* Returns 1 when h was new. */
static int hs_insert(struct fp_hashset *s, uint64_t h)
{
  if ((s->n + 1) * 2 > s->cap) {
    size_t ncap = s->cap ? s->cap * 2 : 1024;
    uint64_t *ns = fp_xcalloc(ncap, sizeof *ns);
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->slots[i])
        continue;
      size_t j = s->slots[i] & (ncap - 1);
      while (ns[j])
        j = (j + 1) & (ncap - 1);
      ns[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = ns;
    s->cap = ncap;
  }
  size_t j = h & (s->cap - 1);
  while (s->slots[j]) {
    if (s->slots[j] == h)
      return 0;
    j = (j + 1) & (s->cap - 1);
  }
  s->slots[j] = h;
  s->n++;
  return 1;
}

static int hs_has(const struct fp_hashset *s, uint64_t h)
{
  if (!s->cap)
    return 0;
  for (size_t j = h & (s->cap - 1); s->slots[j]; j = (j + 1) & (s->cap - 1))
    if (s->slots[j] == h)
      return 1;
  return 0;
}

void fp_layerset_clear(struct fp_layerset *s)
{
  hs_clear(&s->names);
  hs_clear(&s->dirs);
}

void fp_layerset_free(struct fp_layerset *s)
{
  hs_free(&s->names);
  hs_free(&s->dirs);
}

void fp_layerset_add_name(struct fp_layerset *s, const struct stat *dir, const char *name)
{
  hs_insert(&s->names, name_key(dir, name));
}

int fp_layerset_add_dir(struct fp_layerset *s, const struct stat *dir)
{
  return hs_insert(&s->dirs, dir_key(dir));
}

int fp_layerset_has_name(const struct fp_layerset *s, const struct stat *dir, const char *name)
{
  return hs_has(&s->names, name_key(dir, name));
}

int fp_layerset_has_dir(const struct fp_layerset *s, const struct stat *dir)
{
  return hs_has(&s->dirs, dir_key(dir));
}

/* Did the layer write name (in dfd, which is dst), or write into it? */
static int layer_wrote(const struct fp_layerset *l, int dfd, const struct stat *dst,
                       const char *name)
{
  if (hs_has(&l->names, name_key(dst, name)))
    return 1;
  struct stat st;
  return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
         hs_has(&l->dirs, dir_key(&st));
}

/* Removes from directory dfd everything this layer did not write, descending into the
 * directories it wrote into. */
static int prune(const struct fp_layerset *layer, int dfd)
{
  struct stat dst;
  if (fstat(dfd, &dst) < 0)
    return -1;
  int rfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
  if (!d) {
    if (rfd >= 0)
      close(rfd);
    return -1;
  }
  /* Collect first: removing while reading a directory may skip entries. */
  cleanup_strv char **names = NULL;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      names = fp_strv_push(names, de->d_name);
  closedir(d);

  for (size_t i = 0; names && names[i]; i++) {
    if (!layer_wrote(layer, dfd, &dst, names[i])) {
      if (fp_rm_rf_at(dfd, names[i]) < 0)
        return -1;
      continue;
    }
    struct stat st;
    if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
      continue;
    cleanup_close int cfd = openat(dfd, names[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cfd < 0 || prune(layer, cfd) < 0)
      return -1;
  }
  return 0;
}

int fp_whiteout_apply(const struct fp_root *r, const struct fp_layerset *layer, const char *dir,
                      const char *name)
{
  char path[FP_PATH_MAX + 1];
  int n = snprintf(path, sizeof path, "%s%s%s", dir, *dir ? "/" : "", name);
  if (n < 0 || (size_t)n >= sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  const char *base;
  cleanup_close int dfd = fp_inroot_parent(r, path, 0, &base);
  if (dfd < 0)
    /* No parent, nothing to delete. */
    return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
  struct stat dst, st;
  if (fstat(dfd, &dst) < 0)
    return -1;
  if (!layer_wrote(layer, dfd, &dst, base))
    return fp_rm_rf_at(dfd, base);
  if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
    return 0;
  cleanup_close int cfd = openat(dfd, base, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return cfd < 0 ? -1 : prune(layer, cfd);
}

int fp_opaque_apply(const struct fp_root *r, const struct fp_layerset *layer, const char *dir)
{
  cleanup_close int dfd = fp_inroot_open(r, dir, 0);
  if (dfd < 0)
    return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
  struct stat st;
  if (fstat(dfd, &st) < 0)
    return -1;
  if (!S_ISDIR(st.st_mode))
    return 0;
  return prune(layer, dfd);
}
