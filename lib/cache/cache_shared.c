/* Shared caches (contract, "Caches shared between users and nodes"): read-only caches a
 * site fills with prefetch --all, searched after the own cache. Nothing is ever created,
 * written or removed in them; what is read from them goes through the same trust rules as
 * the own cache (content verified from the descriptor used, tag records only when the
 * caller or root wrote them and nobody else can change them). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"
#include "fpull/cache.h"
#include "fpull/config.h"
#include "base/util.h"

char **fpull_cache_shared_dirs(const struct fpull_config *config)
{
  /* Like FPULL_CACHE over cache-dir: the environment (a job's) replaces the config's list;
   * set and empty means none. */
  const char *env = getenv("FPULL_SHARED_CACHES");
  char **v = fp_xcalloc(1, sizeof *v);
  size_t n = 0;
  if (env) {
    cleanup_free char *copy = fp_xstrdup(env);
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
      v = fp_xrealloc(v, (n + 2) * sizeof *v);
      v[n++] = fp_xstrdup(d);
      v[n] = NULL;
    }
    return v;
  }
  for (size_t i = 0; config && config->shared_caches && config->shared_caches[i]; i++) {
    v = fp_xrealloc(v, (n + 2) * sizeof *v);
    v[n++] = fp_xstrdup(config->shared_caches[i]);
    v[n] = NULL;
  }
  return v;
}

static int open_dir_at(int parent, const char *name)
{
  return parent < 0 ? -1 : openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int fpull_cache_add_shared(fpull_cache *c, const char *dir, fpull_err *err)
{
  (void)err;
  if (!dir || !*dir || strcmp(dir, c->dir) == 0)
    return 0;
  fpull_cache *s = fp_xcalloc(1, sizeof *s);
  s->readonly = 1;
  s->blobs_fd = s->blobs512_fd = s->tmp_fd = s->priv_fd = s->locks_fd = s->tags_fd = -1;
  s->dir = fp_xstrdup(dir);
  s->root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (s->root_fd < 0 || fstat(s->root_fd, &st) < 0) {
    /* A node without the site's file system mounted still pulls (from the network). */
    if (errno == ENOENT)
      fp_debug("shared cache %s: not there; skipped", dir);
    else
      fp_warn("shared cache %s: %s; skipped", dir, strerror(errno));
    fpull_cache_free(s);
    return 0;
  }
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    fp_warn("shared cache %s: writable by every user; skipped", dir);
    fpull_cache_free(s);
    return 0;
  }
  int blobs = open_dir_at(s->root_fd, "blobs");
  s->blobs_fd = open_dir_at(blobs, "sha256");
  s->blobs512_fd = open_dir_at(blobs, "sha512");
  if (blobs >= 0)
    close(blobs);
  s->tags_fd = open_dir_at(s->root_fd, "tags");
  /* Another user's blob is hashed while it is copied into a file of ours: our own cache's
   * private directory holds that copy, never the shared cache. */
  s->priv_fd = c->priv_fd >= 0 ? fcntl(c->priv_fd, F_DUPFD_CLOEXEC, 0) : -1;
  s->no_records = c->no_records; /* distrusted before it was added: distrusted too */
  c->shared = fp_xrealloc(c->shared, (c->n_shared + 1) * sizeof *c->shared);
  c->shared[c->n_shared++] = s;
  fp_debug("shared cache %s: searched after %s", dir, c->dir);
  return 0;
}

int fpull_cache_open_with_shared(fpull_cache **out, const char *dir,
                                 const struct fpull_config *config, fpull_err *err)
{
  /* No directory given: the CLI's default (FPULL_CACHE, the config's cache-dir, XDG). */
  cleanup_free char *def = dir && *dir ? NULL : fpull_cache_resolve_dir(NULL, config);
  int rc = fpull_cache_open(out, def ? def : dir, err);
  if (rc)
    return rc;
  cleanup_strv char **shared = fpull_cache_shared_dirs(config);
  for (size_t i = 0; shared[i]; i++)
    fpull_cache_add_shared(*out, shared[i], err);
  return 0;
}
