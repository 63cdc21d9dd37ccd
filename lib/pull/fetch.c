/* Parallel blob downloads: -j workers take the layers in manifest order, so the first
 * layers (which the unpacker needs first) arrive first, and the unpacker can wait for
 * layer i while later ones are still downloading. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "resolve.h"
#include "base/util.h"

#define FETCH_MAX_JOBS 64

struct fp_fetch {
  struct fp_session *s;
  const struct fpull_manifest *m;
  pthread_mutex_t lock;
  pthread_cond_t changed;
  size_t next;
  unsigned char *done; /* per layer */
  int *fds;            /* per layer, with want_fds: the verified blob, until taken */
  unsigned n_done;
  int failed;    /* the first failure's code, or -1 when cancelled */
  fpull_err err; /* the first failure */
  struct fp_progress progress;
  pthread_t tids[FETCH_MAX_JOBS];
  size_t started;
};

static void *fetch_worker(void *arg)
{
  struct fp_fetch *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->lock);
    size_t i = p->next++;
    int stop = p->failed || i >= p->m->n_layers;
    pthread_mutex_unlock(&p->lock);
    if (stop)
      return NULL;
    const struct fpull_descriptor *d = &p->m->layers[i];
    fpull_err e = {0};
    int fd = -1;
    int rc = fp_fetch_blob(p->s, d, p->fds ? &fd : NULL, &p->progress, &e);
    pthread_mutex_lock(&p->lock);
    if (p->fds)
      p->fds[i] = fd;
    if (rc && !p->failed) {
      p->failed = rc;
      p->err = e;
      fpull_err_prefix(&p->err, "layer %s", d->digest);
    }
    if (!rc) {
      p->done[i] = 1;
      p->n_done++;
    }
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
  }
}

struct fp_fetch *fp_fetch_start(struct fp_session *s, const struct fp_resolved *r, int want_fds)
{
  struct fp_fetch *p = fp_xcalloc(1, sizeof *p);
  p->s = s;
  p->m = r->manifest;
  p->done = fp_xcalloc(r->manifest->n_layers + 1, 1);
  if (want_fds) {
    p->fds = fp_xcalloc(r->manifest->n_layers + 1, sizeof *p->fds);
    for (size_t i = 0; i <= r->manifest->n_layers; i++)
      p->fds[i] = -1;
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->changed, NULL);
  fp_progress_begin(&p->progress, s->opts->progress, s->opts->progress_ud, s->reference,
                    r->manifest);
  size_t jobs = s->opts->jobs > 0 ? (size_t)s->opts->jobs : 4;
  if (jobs > FETCH_MAX_JOBS)
    jobs = FETCH_MAX_JOBS;
  if (jobs > r->manifest->n_layers)
    jobs = r->manifest->n_layers;
  for (; p->started < jobs; p->started++)
    if (pthread_create(&p->tids[p->started], NULL, fetch_worker, p) != 0)
      break;
  return p;
}

int fp_fetch_wait(struct fp_fetch *p, size_t i, fpull_err *err)
{
  if (p->started == 0) /* no thread could be started: fetch in the caller */
    fetch_worker(p);
  pthread_mutex_lock(&p->lock);
  while (!p->done[i] && !p->failed)
    pthread_cond_wait(&p->changed, &p->lock);
  int rc = p->done[i] ? 0 : p->failed;
  if (rc && err)
    *err = p->err;
  pthread_mutex_unlock(&p->lock);
  return rc;
}

int fp_fetch_take_fd(struct fp_fetch *p, size_t i)
{
  pthread_mutex_lock(&p->lock);
  int fd = p->fds && i < p->m->n_layers ? p->fds[i] : -1;
  if (p->fds && i < p->m->n_layers)
    p->fds[i] = -1;
  pthread_mutex_unlock(&p->lock);
  return fd;
}

void fp_fetch_note_unpack(struct fp_fetch *p, size_t i)
{
  fp_progress_unpack(&p->progress, i);
}

int fp_fetch_finish(struct fp_fetch *p, int cancel, fpull_err *err)
{
  if (cancel) {
    /* Layers not started yet are not fetched; downloads in flight complete into the cache. */
    pthread_mutex_lock(&p->lock);
    if (!p->failed)
      p->failed = -1;
    pthread_mutex_unlock(&p->lock);
  } else if (p->started == 0) {
    fetch_worker(p);
  }
  for (size_t i = 0; i < p->started; i++)
    pthread_join(p->tids[i], NULL);
  int rc = p->failed > 0 ? p->failed : 0;
  if (rc && err)
    *err = p->err;
  fp_progress_end(&p->progress, !cancel && !rc);
  pthread_cond_destroy(&p->changed);
  pthread_mutex_destroy(&p->lock);
  for (size_t i = 0; p->fds && i < p->m->n_layers; i++)
    if (p->fds[i] >= 0)
      close(p->fds[i]);
  free(p->fds);
  free(p->done);
  free(p);
  return rc;
}
