/* Progress reports: the download threads and the unpacker report here, and one report at a
 * time reaches the caller's callback, so a display needs no locking of its own. */
#include <string.h>

#include "progress.h"

static void report(struct fp_progress *p, int event, const struct fpull_descriptor *d,
                   uint64_t done)
{
  p->st.event = event;
  p->st.digest = d ? d->digest : NULL;
  p->st.total = d ? (uint64_t)d->size : 0;
  p->st.done = done;
  p->fn(p->ud, &p->st);
}

void fp_progress_begin(struct fp_progress *p, fpull_progress_fn fn, void *ud, const char *reference,
                       const struct fpull_manifest *m)
{
  memset(p, 0, sizeof *p);
  p->fn = fn;
  p->ud = ud;
  if (!fn)
    return;
  pthread_mutex_init(&p->lock, NULL);
  p->st.reference = reference;
  p->st.blobs_total = (unsigned)m->n_layers;
  for (size_t i = 0; i < m->n_layers; i++)
    p->st.bytes_total += (uint64_t)m->layers[i].size;
  report(p, FPULL_PROGRESS_START, NULL, 0);
}

void fp_progress_end(struct fp_progress *p, int ok)
{
  if (!p->fn)
    return;
  if (ok)
    report(p, FPULL_PROGRESS_FINISH, NULL, 0);
  pthread_mutex_destroy(&p->lock);
  p->fn = NULL;
}

void fp_progress_cached(struct fp_progress *p, const struct fpull_descriptor *d)
{
  if (!p || !p->fn)
    return;
  pthread_mutex_lock(&p->lock);
  p->st.blobs_done++;
  p->st.blobs_cached++;
  p->st.bytes_cached += (uint64_t)d->size;
  report(p, FPULL_PROGRESS_CACHED, d, (uint64_t)d->size);
  pthread_mutex_unlock(&p->lock);
}

void fp_progress_blob_done(struct fp_progress *p, const struct fpull_descriptor *d)
{
  if (!p || !p->fn)
    return;
  pthread_mutex_lock(&p->lock);
  p->st.blobs_done++;
  report(p, FPULL_PROGRESS_BLOB_DONE, d, (uint64_t)d->size);
  pthread_mutex_unlock(&p->lock);
}

void fp_progress_unpack(struct fp_progress *p, size_t layer)
{
  if (!p || !p->fn)
    return;
  pthread_mutex_lock(&p->lock);
  p->st.layer = (unsigned)layer;
  report(p, FPULL_PROGRESS_UNPACK, NULL, 0);
  pthread_mutex_unlock(&p->lock);
}

/* Bytes of this blob now held: moves the image's total by the difference, which is negative
 * when a server ignored a Range request and the sink starts over. */
static void moved_to(struct fp_progress_sink *ps, uint64_t pos)
{
  struct fp_progress *p = ps->p;
  pthread_mutex_lock(&p->lock);
  /* Starting over below what an earlier run left takes it out of the resumed bytes. */
  uint64_t old_run = ps->pos - ps->resumed;
  if (pos < ps->resumed) {
    p->st.bytes_resumed -= ps->resumed - pos;
    ps->resumed = pos;
  }
  p->st.bytes_done = p->st.bytes_done - old_run + (pos - ps->resumed);
  ps->pos = pos;
  report(p, FPULL_PROGRESS_BYTES, ps->d, pos);
  pthread_mutex_unlock(&p->lock);
}

static int sink_write(void *ud, const void *data, size_t len, fpull_err *err)
{
  struct fp_progress_sink *ps = ud;
  ps->started = 1;
  int rc = ps->inner->write(ps->inner->ud, data, len, err);
  if (rc == 0)
    moved_to(ps, ps->pos + len);
  return rc;
}

static int sink_restart(void *ud, uint64_t offset, fpull_err *err)
{
  struct fp_progress_sink *ps = ud;
  int rc = ps->inner->restart(ps->inner->ud, offset, err);
  if (rc == 0 && !ps->started && offset > 0) {
    /* The first request starts where an earlier run's partial download ends: those bytes
     * are resumed, not received now (a speed counting them would be absurd). */
    struct fp_progress *p = ps->p;
    pthread_mutex_lock(&p->lock);
    ps->resumed = ps->pos = offset;
    p->st.bytes_resumed += offset;
    report(p, FPULL_PROGRESS_BYTES, ps->d, offset);
    pthread_mutex_unlock(&p->lock);
  } else if (rc == 0 && offset != ps->pos) {
    moved_to(ps, offset);
  }
  ps->started = 1;
  return rc;
}

const struct fpull_blob_sink *fp_progress_sink_wrap(struct fp_progress_sink *ps,
                                                    struct fp_progress *p,
                                                    const struct fpull_descriptor *d,
                                                    const struct fpull_blob_sink *inner)
{
  if (!p || !p->fn)
    return inner;
  *ps = (struct fp_progress_sink){
      .sink = {.ud = ps, .write = sink_write, .restart = sink_restart},
      .inner = inner,
      .p = p,
      .d = d,
  };
  return &ps->sink;
}
