/* Parallel blob downloads: -j workers take the layers in manifest order, so the first
 * layers (which the unpacker needs first) arrive first. */
#include <pthread.h>
#include <string.h>

#include "resolve.h"
#include "util.h"

struct fetch_pool {
  struct fp_session *s;
  const struct fpull_manifest *m;
  pthread_mutex_t lock;
  size_t next;
  unsigned done;
  int failed;
  fpull_err err; /* the first failure */
};

static void *fetch_worker(void *arg)
{
  struct fetch_pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->lock);
    size_t i = p->next++;
    int stop = p->failed || i >= p->m->n_layers;
    pthread_mutex_unlock(&p->lock);
    if (stop)
      return NULL;
    const struct fpull_descriptor *d = &p->m->layers[i];
    fpull_err e = {0};
    int rc = fp_fetch_blob(p->s, d, &e);
    pthread_mutex_lock(&p->lock);
    if (rc && !p->failed) {
      p->failed = rc;
      p->err = e;
      fpull_err_prefix(&p->err, "layer %s", d->digest);
    }
    if (!rc) {
      p->done++;
      if (p->s->opts->progress) {
        struct fpull_progress pr = {.digest = d->digest,
                                    .done = (uint64_t)d->size,
                                    .total = (uint64_t)d->size,
                                    .blobs_done = p->done,
                                    .blobs_total = (unsigned)p->m->n_layers};
        p->s->opts->progress(p->s->opts->progress_ud, &pr);
      }
    }
    pthread_mutex_unlock(&p->lock);
  }
}

int fp_fetch_layers(struct fp_session *s, const struct fp_resolved *r, fpull_err *err)
{
  struct fetch_pool p = {.s = s, .m = r->manifest};
  pthread_mutex_init(&p.lock, NULL);
  size_t jobs = s->opts->jobs > 0 ? (size_t)s->opts->jobs : 4;
  if (jobs > r->manifest->n_layers)
    jobs = r->manifest->n_layers;
  pthread_t tids[64];
  size_t started = 0;
  for (; started < jobs && started < 64; started++)
    if (pthread_create(&tids[started], NULL, fetch_worker, &p) != 0)
      break;
  if (started == 0 && r->manifest->n_layers > 0)
    fetch_worker(&p);
  for (size_t i = 0; i < started; i++)
    pthread_join(tids[i], NULL);
  pthread_mutex_destroy(&p.lock);
  if (p.failed) {
    if (err)
      *err = p.err;
    return p.failed;
  }
  return 0;
}
