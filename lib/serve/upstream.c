/* The registries fpull serve asks, and what the manifests it served declared of their blobs:
 * shared by every request, under the server's lock. */
#include <string.h>

#include "serve_internal.h"
#include "base/util.h"
#include "fpull/config.h"

fpull_registry *sv_registry_get(struct fpull_server *sv, const char *name, int *down,
                                fpull_err *err)
{
  *down = 0;
  if (sv->opts->offline) {
    *down = 1;
    return NULL;
  }
  pthread_mutex_lock(&sv->mu);
  struct sv_registry *r = NULL;
  for (size_t i = 0; i < sv->n_regs && !r; i++)
    if (strcmp(sv->regs[i].name, name) == 0)
      r = &sv->regs[i];
  if (!r && sv->n_regs < SV_REGISTRIES_MAX) {
    struct fpull_registry_opts ro;
    const struct fpull_pull_opts *o = sv->opts;
    fpull_registry_opts_init(&ro, name, o->config, o->insecure, o->certs_dir);
    ro.cert_dir = o->version >= 2 ? o->cert_dir : NULL;
    fpull_registry *reg = NULL;
    if (fpull_registry_open(&reg, name, &ro, err) == 0) {
      r = &sv->regs[sv->n_regs++];
      r->name = fp_xstrdup(name);
      r->reg = reg;
      r->down_until = 0;
    }
  } else if (!r) {
    fpull_err_set(err, FPULL_EFAIL, "fpull serve talks to at most %d registries",
                  SV_REGISTRIES_MAX);
  }
  fpull_registry *reg = NULL;
  if (r && r->down_until > time(NULL))
    *down = 1;
  else if (r)
    reg = r->reg;
  pthread_mutex_unlock(&sv->mu);
  return reg;
}

void sv_registry_down(struct fpull_server *sv, const char *name)
{
  pthread_mutex_lock(&sv->mu);
  for (size_t i = 0; i < sv->n_regs; i++)
    if (strcmp(sv->regs[i].name, name) == 0)
      sv->regs[i].down_until = time(NULL) + SV_DOWN_SECONDS;
  pthread_mutex_unlock(&sv->mu);
}

void sv_size_note(struct fpull_server *sv, const char *registry, const char *repo,
                  const char *digest, int64_t size)
{
  char *key = fp_xasprintf("%s/%s@%s", registry, repo, digest);
  pthread_mutex_lock(&sv->mu);
  for (size_t i = 0; i < sv->n_sizes; i++)
    if (strcmp(sv->sizes[i].key, key) == 0) {
      sv->sizes[i].size = size;
      pthread_mutex_unlock(&sv->mu);
      free(key);
      return;
    }
  if (!sv->sizes)
    sv->sizes = fp_xcalloc(SV_SIZES_MAX, sizeof *sv->sizes);
  struct sv_size *slot = &sv->sizes[sv->next_size];
  free(slot->key);
  slot->key = key;
  slot->size = size;
  sv->next_size = (sv->next_size + 1) % SV_SIZES_MAX;
  if (sv->n_sizes < SV_SIZES_MAX)
    sv->n_sizes++;
  pthread_mutex_unlock(&sv->mu);
}

int64_t sv_size_find(struct fpull_server *sv, const char *registry, const char *repo,
                     const char *digest)
{
  cleanup_free char *key = fp_xasprintf("%s/%s@%s", registry, repo, digest);
  int64_t size = -1;
  pthread_mutex_lock(&sv->mu);
  for (size_t i = 0; i < sv->n_sizes && size < 0; i++)
    if (strcmp(sv->sizes[i].key, key) == 0)
      size = sv->sizes[i].size;
  pthread_mutex_unlock(&sv->mu);
  return size;
}
