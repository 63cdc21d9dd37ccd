/* File data into SquashFS blocks (see sqfs_blocks.h).
 *
 * Blocks travel through a ring of slots numbered in the order they were handed over:
 * [written, taken) are being compressed, [taken, submitted) wait for a worker, and the
 * caller writes them out strictly in that order, so a file's blocks stay contiguous for
 * the block writer's deduplication and the image is the same whatever the thread count.
 * Each slot keeps its input buffer until written: a fragment block in flight can still be
 * compared with a new tail without reading it back. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <sqfs/block.h>
#include <sqfs/error.h>

#include "sqfs_blocks.h"

enum job_kind { JOB_DATA, JOB_END, JOB_FRAG };
enum job_state { JOB_FREE, JOB_QUEUED, JOB_DONE };

struct job {
  enum job_kind kind;
  int state;                  /* JOB_*, under the lock */
  sqfs_inode_generic_t **ino; /* DATA, END */
  sqfs_u32 index;             /* DATA: block number in the file; FRAG: fragment number */
  unsigned char *in, *out;    /* block-sized */
  size_t size, out_size;
  int compressed, sparse, error;
  sqfs_u32 checksum;
};

/* A tail already in a fragment block, to share with an equal one. */
struct tail {
  uint64_t hash; /* 0: an empty slot */
  sqfs_u32 size, index, offset;
};

struct worker {
  struct fp_sqfs_blocks *b;
  sqfs_compressor_t *cmp;
  pthread_t tid;
};

struct fp_sqfs_blocks {
  struct fp_sqfs_blocks_desc d;
  uint64_t seed;

  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  struct job *jobs;
  size_t n;
  uint64_t submitted, taken, written;
  int stop, main_waiting, idle;
  struct worker *workers;
  unsigned started; /* none: blocks are compressed on the caller's thread */

  /* The file being added (ino NULL between files). */
  sqfs_inode_generic_t **ino;
  unsigned char *fill;
  size_t fill_len;
  sqfs_u32 nblocks;

  /* The fragment block being filled, and the tails already placed. */
  unsigned char *frag;
  size_t frag_len;
  sqfs_u32 frag_index;
  struct tail *tails;
  size_t ntails, captails;

  /* The last fragment block read back from the image. */
  unsigned char *cache, *scratch;
  sqfs_u32 cache_index;
  size_t cache_len;
  int cache_valid;
};

/* ---- a seeded 64-bit hash: for finding equal blocks, never trusted without a compare ---- */

static uint64_t mix(uint64_t a, uint64_t b)
{
  unsigned __int128 r = (unsigned __int128)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static uint64_t rd64(const unsigned char *p)
{
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint64_t hash(const unsigned char *p, size_t n, uint64_t seed)
{
  const uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull,
                 k3 = 0x589965cc75374cc3ull;
  uint64_t a = seed ^ k0, b = seed ^ k1, c = seed ^ k2, d = seed ^ k3;
  size_t len = n;
  for (; n >= 32; p += 32, n -= 32) {
    a = mix(a ^ rd64(p), k1);
    b = mix(b ^ rd64(p + 8), k2);
    c = mix(c ^ rd64(p + 16), k3);
    d = mix(d ^ rd64(p + 24), k0);
  }
  uint64_t t = 0;
  for (size_t i = 0; i < n; i++)
    t = (t << 8 | p[i]) ^ (t >> 56);
  uint64_t h = mix(a ^ c ^ len, k2) ^ mix(b ^ d ^ t, k3);
  return h ? h : 1;
}

static int all_zero(const unsigned char *p, size_t n)
{
  return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* ---- the workers ---- */

static void process(struct job *j, sqfs_compressor_t *cmp, size_t block, uint64_t seed)
{
  if (j->kind == JOB_END)
    return;
  if (j->kind == JOB_DATA) {
    if (all_zero(j->in, j->size)) {
      j->sparse = 1;
      return;
    }
    uint64_t h = hash(j->in, j->size, seed);
    j->checksum = (sqfs_u32)(h ^ (h >> 32));
  }
  sqfs_s32 r = cmp->do_block(cmp, j->in, (sqfs_u32)j->size, j->out, (sqfs_u32)block);
  if (r < 0)
    j->error = r;
  else if (r > 0) {
    j->compressed = 1;
    j->out_size = (size_t)r;
  }
}

static void *worker_main(void *arg)
{
  struct worker *w = arg;
  struct fp_sqfs_blocks *b = w->b;
  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (!b->stop && b->taken == b->submitted) {
      b->idle++;
      pthread_cond_wait(&b->work_cv, &b->mu);
      b->idle--;
    }
    if (b->stop)
      break;
    struct job *j = &b->jobs[b->taken++ % b->n];
    pthread_mutex_unlock(&b->mu);
    process(j, w->cmp, b->d.block, b->seed);
    pthread_mutex_lock(&b->mu);
    j->state = JOB_DONE;
    if (b->main_waiting)
      pthread_cond_signal(&b->done_cv);
  }
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

/* ---- writing, in order, on the caller's thread ---- */

/* Records block number index of *ino as on-disk size (the uncompressed bit included). */
static int set_block_size(sqfs_inode_generic_t **ino, sqfs_u32 index, sqfs_u32 size)
{
  size_t need = ((size_t)index + 1) * sizeof(sqfs_u32);
  if ((*ino)->payload_bytes_available < need) {
    size_t cap = (*ino)->payload_bytes_available ? (*ino)->payload_bytes_available : 16;
    while (cap < need)
      cap *= 2;
    if (cap > UINT32_MAX)
      return SQFS_ERROR_OVERFLOW;
    sqfs_inode_generic_t *grown = realloc(*ino, sizeof **ino + cap);
    if (!grown)
      return SQFS_ERROR_ALLOC;
    *ino = grown;
    (*ino)->payload_bytes_available = (sqfs_u32)cap;
  }
  (*ino)->extra[index] = size;
  if (need > (*ino)->payload_bytes_used)
    (*ino)->payload_bytes_used = (sqfs_u32)need;
  return 0;
}

static void mark_sparse(sqfs_inode_generic_t **ino, size_t bytes)
{
  sqfs_inode_make_extended(*ino);
  (*ino)->data.file_ext.sparse += bytes;
}

static int write_job(struct fp_sqfs_blocks *b, struct job *j)
{
  if (j->error)
    return j->error;
  const unsigned char *data = j->compressed ? j->out : j->in;
  sqfs_u32 size = (sqfs_u32)(j->compressed ? j->out_size : j->size);
  sqfs_u32 disk = size | (j->compressed ? 0 : (1u << 24));
  sqfs_u32 flags = j->compressed ? SQFS_BLK_IS_COMPRESSED : 0;
  sqfs_u64 loc;
  int ret;
  switch (j->kind) {
  case JOB_DATA:
    flags |= j->index == 0 ? SQFS_BLK_FIRST_BLOCK : 0;
    if (j->sparse) {
      flags |= SQFS_BLK_IS_SPARSE;
      size = 0;
    }
    if ((ret = b->d.bw->write_data_block(b->d.bw, NULL, size, j->checksum, flags, data, &loc)))
      return ret;
    if (j->sparse) {
      mark_sparse(j->ino, j->size);
      return set_block_size(j->ino, j->index, 0);
    }
    return set_block_size(j->ino, j->index, disk);
  case JOB_END:
    if ((ret = b->d.bw->write_data_block(b->d.bw, NULL, 0, 0, SQFS_BLK_LAST_BLOCK, NULL, &loc)))
      return ret;
    return sqfs_inode_set_file_block_start(*j->ino, loc);
  case JOB_FRAG:
    flags |= SQFS_BLK_FRAGMENT_BLOCK;
    if ((ret = b->d.bw->write_data_block(b->d.bw, NULL, size, 0, flags, data, &loc)))
      return ret;
    return sqfs_frag_table_set(b->d.frags, j->index, loc, disk);
  }
  return SQFS_ERROR_INTERNAL;
}

/* Writes the oldest block handed over; wait: until it is done, else only if it is. 1: none
 * was ready. */
static int write_next(struct fp_sqfs_blocks *b, int wait)
{
  struct job *j = &b->jobs[b->written % b->n];
  pthread_mutex_lock(&b->mu);
  while (j->state != JOB_DONE && wait) {
    b->main_waiting = 1;
    pthread_cond_wait(&b->done_cv, &b->mu);
  }
  b->main_waiting = 0;
  int ready = j->state == JOB_DONE;
  pthread_mutex_unlock(&b->mu);
  if (!ready)
    return 1;
  int ret = write_job(b, j);
  j->state = JOB_FREE;
  b->written++;
  return ret;
}

/* A free slot for the next job, its buffers allocated. */
static int slot(struct fp_sqfs_blocks *b, struct job **out)
{
  int ret;
  while (b->submitted - b->written >= b->n)
    if ((ret = write_next(b, 1)))
      return ret;
  struct job *j = &b->jobs[b->submitted % b->n];
  if (!j->in && (!(j->in = malloc(b->d.block)) || !(j->out = malloc(b->d.block))))
    return SQFS_ERROR_ALLOC;
  unsigned char *in = j->in, *outb = j->out;
  memset(j, 0, sizeof *j);
  j->in = in;
  j->out = outb;
  *out = j;
  return 0;
}

static int submit(struct fp_sqfs_blocks *b, struct job *j)
{
  if (!b->started) {
    process(j, b->workers[0].cmp, b->d.block, b->seed);
    j->state = JOB_DONE;
    b->submitted++;
  } else {
    pthread_mutex_lock(&b->mu);
    j->state = JOB_QUEUED;
    b->submitted++;
    if (b->idle)
      pthread_cond_signal(&b->work_cv);
    pthread_mutex_unlock(&b->mu);
  }
  /* What is done goes out now: the image grows as it is made. */
  int ret;
  while (b->written < b->submitted)
    if ((ret = write_next(b, 0)))
      return ret < 0 ? ret : 0;
  return 0;
}

/* Hands the caller's filled buffer *buf (len bytes) over as the input of a new job of this
 * kind and index; the slot's free buffer becomes *buf, empty. */
static int submit_buffer(struct fp_sqfs_blocks *b, enum job_kind kind, sqfs_u32 index,
                         unsigned char **buf, size_t *len)
{
  struct job *j;
  int ret = slot(b, &j);
  if (ret)
    return ret;
  unsigned char *t = j->in;
  j->in = *buf;
  *buf = t;
  j->kind = kind;
  j->ino = kind == JOB_DATA ? b->ino : NULL;
  j->index = index;
  j->size = *len;
  *len = 0;
  return submit(b, j);
}

static int submit_fill(struct fp_sqfs_blocks *b)
{
  return submit_buffer(b, JOB_DATA, b->nblocks++, &b->fill, &b->fill_len);
}

static int submit_frag(struct fp_sqfs_blocks *b)
{
  return submit_buffer(b, JOB_FRAG, b->frag_index, &b->frag, &b->frag_len);
}

/* ---- tails ---- */

/* The uncompressed data of fragment block index: the one being filled, one in flight, or
 * read back from the image. NULL with *ret set (0: it cannot be read: no sharing). */
static const unsigned char *frag_data(struct fp_sqfs_blocks *b, sqfs_u32 index, size_t *len,
                                      int *ret)
{
  *ret = 0;
  if (b->frag_len && index == b->frag_index) {
    *len = b->frag_len;
    return b->frag;
  }
  for (uint64_t s = b->written; s < b->submitted; s++) {
    struct job *j = &b->jobs[s % b->n];
    if (j->kind == JOB_FRAG && j->index == index) {
      *len = j->size;
      return j->in;
    }
  }
  if (b->cache_valid && b->cache_index == index) {
    *len = b->cache_len;
    return b->cache;
  }
  sqfs_fragment_t fr;
  if (!b->d.file || sqfs_frag_table_lookup(b->d.frags, index, &fr))
    return NULL;
  size_t disk = SQFS_ON_DISK_BLOCK_SIZE(fr.size);
  int raw = !SQFS_IS_BLOCK_COMPRESSED(fr.size);
  if (disk > b->d.block || (!raw && !b->d.uncmp))
    return NULL;
  if ((!b->cache && !(b->cache = malloc(b->d.block))) ||
      (!b->scratch && !(b->scratch = malloc(b->d.block)))) {
    *ret = SQFS_ERROR_ALLOC;
    return NULL;
  }
  b->cache_valid = 0;
  if ((*ret = b->d.file->read_at(b->d.file, fr.start_offset, raw ? b->cache : b->scratch, disk)))
    return NULL;
  if (raw) {
    b->cache_len = disk;
  } else {
    sqfs_s32 r = b->d.uncmp->do_block(b->d.uncmp, b->scratch, (sqfs_u32)disk, b->cache,
                                      (sqfs_u32)b->d.block);
    if (r <= 0) {
      *ret = r < 0 ? r : SQFS_ERROR_CORRUPTED;
      return NULL;
    }
    b->cache_len = (size_t)r;
  }
  b->cache_index = index;
  b->cache_valid = 1;
  *len = b->cache_len;
  return b->cache;
}

static int tails_grow(struct fp_sqfs_blocks *b)
{
  size_t cap = b->captails ? b->captails * 2 : 1024;
  struct tail *t = calloc(cap, sizeof *t);
  if (!t)
    return SQFS_ERROR_ALLOC;
  for (size_t k = 0; k < b->captails; k++) {
    if (!b->tails[k].hash)
      continue;
    size_t i = b->tails[k].hash & (cap - 1);
    while (t[i].hash)
      i = (i + 1) & (cap - 1);
    t[i] = b->tails[k];
  }
  free(b->tails);
  b->tails = t;
  b->captails = cap;
  return 0;
}

/* Where an equal tail already is: 1 with *index and *offset, 0 if none, < 0 an error.
 * At most 8 candidates are compared: tails made to collide cost no more than that. */
static int tail_find(struct fp_sqfs_blocks *b, uint64_t h, const unsigned char *p, size_t n,
                     sqfs_u32 *index, sqfs_u32 *offset)
{
  if (!b->captails)
    return 0;
  int tries = 0;
  for (size_t i = h & (b->captails - 1); b->tails[i].hash && tries < 8;
       i = (i + 1) & (b->captails - 1)) {
    const struct tail *t = &b->tails[i];
    if (t->hash != h || t->size != n)
      continue;
    tries++;
    size_t len;
    int ret;
    const unsigned char *data = frag_data(b, t->index, &len, &ret);
    if (ret)
      return ret;
    if (data && t->offset <= len && len - t->offset >= n && memcmp(data + t->offset, p, n) == 0) {
      *index = t->index;
      *offset = t->offset;
      return 1;
    }
  }
  return 0;
}

static int tail_add(struct fp_sqfs_blocks *b, uint64_t h, sqfs_u32 n, sqfs_u32 index,
                    sqfs_u32 offset)
{
  int ret;
  if ((b->ntails + 1) * 2 > b->captails && (ret = tails_grow(b)))
    return ret;
  size_t i = h & (b->captails - 1);
  while (b->tails[i].hash)
    i = (i + 1) & (b->captails - 1);
  b->tails[i] = (struct tail){h, n, index, offset};
  b->ntails++;
  return 0;
}

/* The file's last bytes (fewer than a block): a sparse block when all zeros, else a place
 * in a fragment block, shared with an equal earlier tail. */
static int place_tail(struct fp_sqfs_blocks *b)
{
  const unsigned char *p = b->fill;
  size_t n = b->fill_len;
  b->fill_len = 0;
  if (all_zero(p, n)) {
    mark_sparse(b->ino, n);
    return set_block_size(b->ino, b->nblocks, 0);
  }
  uint64_t h = hash(p, n, b->seed);
  sqfs_u32 index = 0, offset = 0;
  int ret = tail_find(b, h, p, n, &index, &offset);
  if (ret < 0)
    return ret;
  if (ret == 0) {
    if (b->frag_len + n > b->d.block && (ret = submit_frag(b)))
      return ret;
    if (b->frag_len == 0 && (ret = sqfs_frag_table_append(b->d.frags, 0, 0, &b->frag_index)))
      return ret;
    /* submit_frag swapped buffers: p (the fill buffer) is unchanged. */
    index = b->frag_index;
    offset = (sqfs_u32)b->frag_len;
    memcpy(b->frag + b->frag_len, p, n);
    b->frag_len += n;
    if ((ret = tail_add(b, h, (sqfs_u32)n, index, offset)))
      return ret;
  }
  return sqfs_inode_set_frag_location(*b->ino, index, offset);
}

/* ---- the interface ---- */

int fp_sqfs_blocks_begin(struct fp_sqfs_blocks *b, sqfs_inode_generic_t **ino)
{
  if (b->ino)
    return SQFS_ERROR_SEQUENCE;
  *ino = calloc(1, sizeof **ino);
  if (!*ino)
    return SQFS_ERROR_ALLOC;
  (*ino)->base.type = SQFS_INODE_FILE;
  sqfs_inode_set_frag_location(*ino, 0xFFFFFFFF, 0xFFFFFFFF);
  b->ino = ino;
  b->nblocks = 0;
  b->fill_len = 0;
  return 0;
}

int fp_sqfs_blocks_append(struct fp_sqfs_blocks *b, const void *data, size_t size)
{
  if (!b->ino)
    return SQFS_ERROR_SEQUENCE;
  sqfs_u64 was;
  sqfs_inode_get_file_size(*b->ino, &was);
  int ret = sqfs_inode_set_file_size(*b->ino, was + size);
  const unsigned char *p = data;
  while (!ret && size) {
    if (b->fill_len == b->d.block && (ret = submit_fill(b)))
      break;
    size_t k = b->d.block - b->fill_len < size ? b->d.block - b->fill_len : size;
    memcpy(b->fill + b->fill_len, p, k);
    b->fill_len += k;
    p += k;
    size -= k;
  }
  return ret;
}

int fp_sqfs_blocks_end(struct fp_sqfs_blocks *b)
{
  if (!b->ino)
    return SQFS_ERROR_SEQUENCE;
  int ret = 0;
  if (b->fill_len == b->d.block)
    ret = submit_fill(b);
  /* The file's blocks end before any fragment block its tail may push out: the block
   * writer compares whole runs of a file's blocks with earlier ones. */
  if (!ret && b->nblocks) {
    struct job *j;
    if (!(ret = slot(b, &j))) {
      j->kind = JOB_END;
      j->ino = b->ino;
      ret = submit(b, j);
    }
  }
  if (!ret && b->fill_len)
    ret = place_tail(b);
  b->ino = NULL;
  return ret;
}

int fp_sqfs_blocks_sync(struct fp_sqfs_blocks *b)
{
  int ret;
  while (b->written < b->submitted)
    if ((ret = write_next(b, 1)))
      return ret;
  return 0;
}

int fp_sqfs_blocks_finish(struct fp_sqfs_blocks *b)
{
  int ret;
  if (b->frag_len && (ret = submit_frag(b)))
    return ret;
  return fp_sqfs_blocks_sync(b);
}

void fp_sqfs_blocks_free(struct fp_sqfs_blocks *b)
{
  if (!b)
    return;
  pthread_mutex_lock(&b->mu);
  b->stop = 1;
  pthread_cond_broadcast(&b->work_cv);
  pthread_mutex_unlock(&b->mu);
  for (unsigned i = 0; i < b->started; i++)
    pthread_join(b->workers[i].tid, NULL);
  for (unsigned i = 0; b->workers && i < b->d.workers; i++)
    sqfs_destroy(b->workers[i].cmp);
  for (size_t i = 0; b->jobs && i < b->n; i++) {
    free(b->jobs[i].in);
    free(b->jobs[i].out);
  }
  pthread_cond_destroy(&b->work_cv);
  pthread_cond_destroy(&b->done_cv);
  pthread_mutex_destroy(&b->mu);
  free(b->workers);
  free(b->jobs);
  free(b->fill);
  free(b->frag);
  free(b->tails);
  free(b->cache);
  free(b->scratch);
  free(b);
}

int fp_sqfs_blocks_new(struct fp_sqfs_blocks **out, const struct fp_sqfs_blocks_desc *d)
{
  *out = NULL;
  struct fp_sqfs_blocks *b = calloc(1, sizeof *b);
  if (!b)
    return SQFS_ERROR_ALLOC;
  b->d = *d;
  if (b->d.workers < 1)
    b->d.workers = 1;
  b->n = d->backlog > b->d.workers ? d->backlog : b->d.workers + 1;
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->work_cv, NULL);
  pthread_cond_init(&b->done_cv, NULL);
  if (getrandom(&b->seed, sizeof b->seed, GRND_NONBLOCK) != sizeof b->seed)
    b->seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
  b->jobs = calloc(b->n, sizeof *b->jobs);
  b->workers = calloc(b->d.workers, sizeof *b->workers);
  b->fill = malloc(d->block);
  b->frag = malloc(d->block);
  if (!b->jobs || !b->workers || !b->fill || !b->frag) {
    fp_sqfs_blocks_free(b);
    return SQFS_ERROR_ALLOC;
  }
  for (unsigned i = 0; i < b->d.workers; i++) {
    b->workers[i].b = b;
    if (!(b->workers[i].cmp = sqfs_copy(d->cmp))) {
      fp_sqfs_blocks_free(b);
      return SQFS_ERROR_ALLOC;
    }
  }
  for (; b->started < b->d.workers; b->started++)
    if (pthread_create(&b->workers[b->started].tid, NULL, worker_main, &b->workers[b->started]))
      break;
  *out = b;
  return 0;
}
