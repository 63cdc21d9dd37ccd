#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fpull/cache.h"
#include "fpull/config.h"
#include "fpull/manifest.h"
#include "fpull/registry.h"
#include "harness.h"

#define HELLO "hello, cache world: some bytes to store"

static char *path_in(const char *dir, const char *rel)
{
  char *p = NULL;
  CHECK(asprintf(&p, "%s/%s", dir, rel) > 0);
  return p;
}

static fpull_cache *open_cache(const char *sub)
{
  char *dir = path_in(th_tmpdir(), sub);
  fpull_cache *c = NULL;
  fpull_err err = {0};
  if (fpull_cache_open(&c, dir, &err) != 0)
    th_fail(__FILE__, __LINE__, "open %s: %s", dir, err.msg);
  free(dir);
  return c;
}

/* Entries in CACHE/rel, not counting . and .. */
/* The caller's private working directory of the cache (partials, temporary records). */
static const char *priv(void)
{
  static char name[32];
  snprintf(name, sizeof name, "tmp/u%u", (unsigned)geteuid());
  return name;
}

static int count_entries(const fpull_cache *c, const char *rel)
{
  char *p = path_in(fpull_cache_dir(c), rel);
  int n = th_count_entries(p);
  /* The private directory keeps the verified records (cache_verified.h) in verified/ and
   * verified-shared/: not work files. */
  for (const char *const *d = (const char *const[]){"verified", "verified-shared", NULL}; *d; d++) {
    char *v = path_in(p, *d);
    struct stat st;
    if (strcmp(rel, priv()) == 0 && lstat(v, &st) == 0 && S_ISDIR(st.st_mode))
      n--;
    free(v);
  }
  free(p);
  return n;
}

static char *read_all(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = calloc(1, 1 << 20);
  *len = fread(buf, 1, (1 << 20) - 1, f);
  fclose(f);
  return buf;
}

static void write_file(const char *path, const char *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  CHECK_INT_EQ(fwrite(data, 1, len, f), len);
  fclose(f);
}

/* begin + write everything in two pieces + commit. */
static int store(fpull_cache *c, const char *digest, int64_t size, const char *data, size_t len,
                 fpull_err *err)
{
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  int r = fpull_cache_writer_begin(&w, &done, c, digest, size, err);
  if (r || done)
    return r;
  const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
  size_t off = (size_t)fpull_cache_writer_offset(w);
  size_t half = off + (len - off) / 2;
  if ((r = s->write(s->ud, data + off, half - off, err)) ||
      (r = s->write(s->ud, data + half, len - half, err))) {
    fpull_cache_writer_abort(w);
    return r;
  }
  return fpull_cache_writer_commit(w, err);
}

TEST(write_and_commit)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  char *digest = fpull_digest_of(HELLO, strlen(HELLO));
  CHECK(!fpull_cache_has_blob(c, digest, (int64_t)strlen(HELLO)));

  struct fpull_cache_writer *w = NULL;
  int done = -1;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)strlen(HELLO), &err), 0);
  CHECK_INT_EQ(done, 0);
  CHECK(w != NULL);
  CHECK_INT_EQ(fpull_cache_writer_offset(w), 0);
  const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
  CHECK_INT_EQ(s->restart(s->ud, 0, &err), 0);
  CHECK_INT_EQ(s->write(s->ud, HELLO, 10, &err), 0);
  CHECK_INT_EQ(s->write(s->ud, HELLO + 10, strlen(HELLO) - 10, &err), 0);
  /* Until the commit nothing is under blobs/. */
  CHECK_INT_EQ(count_entries(c, "blobs/sha256"), 0);
  CHECK_INT_EQ(count_entries(c, priv()), 1);
  CHECK_INT_EQ(fpull_cache_writer_commit(w, &err), 0);

  CHECK(fpull_cache_has_blob(c, digest, (int64_t)strlen(HELLO)));
  CHECK(!fpull_cache_has_blob(c, digest, 3));
  char *path = fpull_cache_blob_path(c, digest);
  CHECK_CONTAINS(path, "/blobs/sha256/");
  CHECK_CONTAINS(path, digest + 7);
  size_t len = 0;
  char *data = read_all(path, &len);
  CHECK_INT_EQ(len, strlen(HELLO));
  CHECK(memcmp(data, HELLO, len) == 0);
  struct stat st;
  CHECK_INT_EQ(stat(path, &st), 0);
  CHECK_INT_EQ(st.st_mode & 0777, 0644);
  free(data);
  free(path);
  /* No partial, no lock left behind. */
  CHECK_INT_EQ(count_entries(c, priv()), 0);
  CHECK_INT_EQ(count_entries(c, "locks"), 0);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)strlen(HELLO), &err), 0);

  /* A second writer finds it done. */
  w = (void *)1;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)strlen(HELLO), &err), 0);
  CHECK_INT_EQ(done, 1);
  CHECK_NULL(w);
  fpull_cache_writer_abort(NULL);
  free(digest);
  fpull_cache_free(c);
  fpull_cache_free(NULL);
}

TEST(cache_root_modes_and_checks)
{
  /* The default cache is the user's own: private. */
  char *xdg = path_in(th_tmpdir(), "xdg");
  setenv("XDG_CACHE_HOME", xdg, 1);
  char *def = fpull_cache_resolve_dir(NULL, NULL);
  fpull_cache *c = NULL;
  fpull_err e0 = {0};
  CHECK_INT_EQ(fpull_cache_open(&c, def, &e0), 0);
  struct stat st;
  CHECK_INT_EQ(stat(fpull_cache_dir(c), &st), 0);
  CHECK_INT_EQ(st.st_mode & 0777, 0700);
  fpull_cache_free(c);
  free(def);
  free(xdg);
  /* One named for others (a prolog's, an admin's) gets what the umask allows. */
  mode_t um = umask(022);
  c = open_cache("new/deeper/cache");
  umask(um);
  CHECK_INT_EQ(stat(fpull_cache_dir(c), &st), 0);
  CHECK_INT_EQ(st.st_mode & 0777, 0755);
  fpull_cache_free(c);
  /* A directory anyone can write to is refused. */
  char *dir = path_in(th_tmpdir(), "open");
  CHECK_INT_EQ(mkdir(dir, 0777), 0);
  CHECK_INT_EQ(chmod(dir, 0777), 0);
  fpull_err err = {0};
  c = NULL;
  CHECK_INT_EQ(fpull_cache_open(&c, dir, &err), FPULL_EFAIL);
  CHECK_CONTAINS(err.msg, "writable by every user");
  CHECK_NULL(c);
  /* With the sticky bit, like /tmp, it is fine. */
  CHECK_INT_EQ(chmod(dir, 01777), 0);
  CHECK_INT_EQ(fpull_cache_open(&c, dir, &err), 0);
  fpull_cache_free(c);
  free(dir);
  /* A subdirectory replaced by a symlink is not followed. */
  dir = path_in(th_tmpdir(), "evil");
  CHECK_INT_EQ(mkdir(dir, 0700), 0);
  char *outside = path_in(th_tmpdir(), "outside");
  CHECK_INT_EQ(mkdir(outside, 0700), 0);
  char *tmp = path_in(dir, "tmp");
  CHECK_INT_EQ(symlink(outside, tmp), 0);
  CHECK_INT_EQ(fpull_cache_open(&c, dir, &err), FPULL_EFAIL);
  CHECK_CONTAINS(err.msg, "tmp");
  free(tmp);
  free(outside);
  free(dir);
}

TEST(mismatch_leaves_nothing)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  char *digest = fpull_digest_of(HELLO, strlen(HELLO));
  char evil[sizeof HELLO];
  memcpy(evil, HELLO, sizeof evil);
  evil[3] ^= 1;
  CHECK_INT_EQ(store(c, digest, (int64_t)strlen(HELLO), evil, strlen(evil), &err),
               FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, digest);
  CHECK_CONTAINS(err.msg, "expected");
  CHECK_CONTAINS(err.msg, "got sha256:");
  CHECK_INT_EQ(count_entries(c, "blobs/sha256"), 0);
  CHECK_INT_EQ(count_entries(c, priv()), 0);
  CHECK_INT_EQ(count_entries(c, "locks"), 0);

  /* Too short: a size mismatch, same cleanliness. */
  CHECK_INT_EQ(store(c, digest, (int64_t)strlen(HELLO) + 5, HELLO, strlen(HELLO), &err),
               FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "size mismatch");
  CHECK_INT_EQ(count_entries(c, "blobs/sha256"), 0);
  CHECK_INT_EQ(count_entries(c, priv()), 0);
  free(digest);
  fpull_cache_free(c);
}

TEST(write_beyond_declared_size_fails_early)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  char *digest = fpull_digest_of(HELLO, strlen(HELLO));
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, 8, &err), 0);
  const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
  CHECK_INT_EQ(s->write(s->ud, HELLO, 5, &err), 0);
  CHECK_INT_EQ(s->write(s->ud, HELLO + 5, 4, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "declared size 8");
  /* Nothing past the limit reached the disk. */
  char *p = path_in(fpull_cache_dir(c), priv());
  char *partial = NULL;
  CHECK(asprintf(&partial, "%s/%s.partial", p, digest + 7) > 0);
  struct stat st;
  CHECK_INT_EQ(stat(partial, &st), 0);
  CHECK_INT_EQ(st.st_size, 5);
  fpull_cache_writer_abort(w);
  free(partial);
  free(p);
  /* Bad digests and sizes never reach a path. */
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, "sha256:../../etc/passwd", 1, &err),
               FPULL_EINTEGRITY);
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, -1, &err), FPULL_EINTEGRITY);
  CHECK_NULL(fpull_cache_blob_path(c, "sha256:../x"));
  CHECK(!fpull_cache_has_blob(c, "sha256:..", -1));
  free(digest);
  fpull_cache_free(c);
}

TEST(resume_from_partial)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  size_t len = strlen(HELLO), half = len / 2;
  char *digest = fpull_digest_of(HELLO, len);
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)len, &err), 0);
  const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
  CHECK_INT_EQ(s->write(s->ud, HELLO, half, &err), 0);
  fpull_cache_writer_abort(w);
  fpull_cache_free(c);

  /* A later run (a fresh cache handle) continues where the first one stopped. */
  c = open_cache("c");
  CHECK_INT_EQ(count_entries(c, priv()), 1);
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)len, &err), 0);
  CHECK_INT_EQ(done, 0);
  CHECK_INT_EQ(fpull_cache_writer_offset(w), half);
  s = fpull_cache_writer_sink(w);
  CHECK_INT_EQ(s->restart(s->ud, half, &err), 0);
  CHECK_INT_EQ(s->write(s->ud, HELLO + half, len - half, &err), 0);
  CHECK_INT_EQ(fpull_cache_writer_commit(w, &err), 0);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), 0);
  free(digest);
  fpull_cache_free(c);
}

TEST(complete_partial_is_committed_at_begin)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  size_t len = strlen(HELLO);
  char *digest = fpull_digest_of(HELLO, len);
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)len, &err), 0);
  const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
  CHECK_INT_EQ(s->write(s->ud, HELLO, len, &err), 0);
  fpull_cache_writer_abort(w); /* killed right before the rename */
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)len, &err), 0);
  CHECK_INT_EQ(done, 1);
  CHECK_NULL(w);
  CHECK(fpull_cache_has_blob(c, digest, (int64_t)len));
  CHECK_INT_EQ(count_entries(c, priv()), 0);

  /* A complete-sized partial with wrong bytes starts over instead. */
  char *d2 = fpull_digest_of("0123456789", 10);
  char *tmp = path_in(fpull_cache_dir(c), priv());
  char *partial = NULL;
  CHECK(asprintf(&partial, "%s/%s.partial", tmp, d2 + 7) > 0);
  write_file(partial, "9876543210", 10);
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, d2, 10, &err), 0);
  CHECK_INT_EQ(done, 0);
  CHECK_INT_EQ(fpull_cache_writer_offset(w), 0);
  fpull_cache_writer_abort(w);
  free(partial);
  free(tmp);
  free(d2);
  free(digest);
  fpull_cache_free(c);
}

TEST(restart_discards)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  size_t len = strlen(HELLO);
  char *digest = fpull_digest_of(HELLO, len);
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)len, &err), 0);
  const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
  CHECK_INT_EQ(s->write(s->ud, "garbage garbage", 15, &err), 0);
  /* The server ignored the Range: everything so far goes. */
  CHECK_INT_EQ(s->restart(s->ud, 0, &err), 0);
  CHECK_INT_EQ(fpull_cache_writer_offset(w), 0);
  CHECK_INT_EQ(s->write(s->ud, HELLO, len - 4, &err), 0);
  /* Back to the middle: the hash must cover exactly what stays. */
  CHECK_INT_EQ(s->restart(s->ud, 7, &err), 0);
  CHECK_INT_EQ(fpull_cache_writer_offset(w), 7);
  CHECK_INT_EQ(s->restart(s->ud, 9, &err), FPULL_EFAIL);
  CHECK_INT_EQ(s->write(s->ud, HELLO + 7, len - 7, &err), 0);
  CHECK_INT_EQ(fpull_cache_writer_commit(w, &err), 0);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), 0);
  free(digest);
  fpull_cache_free(c);
}

TEST(empty_blob)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  char *digest = fpull_digest_of("", 0);
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, 0, &err), 0);
  CHECK_INT_EQ(done, 1);
  CHECK(fpull_cache_has_blob(c, digest, 0));
  free(digest);
  fpull_cache_free(c);
}

/* One child per process: each tries to store the same blob; the counter file gets one byte
 * per actual download. */
static void concurrent_child(const char *dir, const char *digest, const char *data, size_t len,
                             const char *counter)
{
  fpull_cache *c = NULL;
  fpull_err err = {0};
  if (fpull_cache_open(&c, dir, &err) != 0)
    _exit(10);
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  if (fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)len, &err) != 0)
    _exit(11);
  if (!done) {
    int fd = open(counter, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0 || write(fd, "x", 1) != 1)
      _exit(12);
    close(fd);
    const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
    for (size_t off = 0; off < len; off += 4096) {
      size_t n = len - off < 4096 ? len - off : 4096;
      if (s->write(s->ud, data + off, n, &err) != 0)
        _exit(13);
      usleep(500); /* keep the others waiting on the lock for a while */
    }
    if (fpull_cache_writer_commit(w, &err) != 0)
      _exit(14);
  }
  if (!fpull_cache_has_blob(c, digest, (int64_t)len) ||
      fpull_cache_verify_blob(c, digest, (int64_t)len, &err) != 0)
    _exit(15);
  fpull_cache_free(c);
  _exit(0); /* not exit(): the harness would remove the test directory */
}

TEST(concurrent_processes_fetch_once)
{
  fpull_cache *c = open_cache("shared");
  const char *dir = fpull_cache_dir(c);
  size_t len = 200 * 1024;
  char *data = malloc(len);
  for (size_t i = 0; i < len; i++)
    data[i] = (char)(i * 7 + i / 251);
  char *digest = fpull_digest_of(data, len);
  char *counter = path_in(th_tmpdir(), "counter");
  int go[2];
  CHECK_INT_EQ(pipe(go), 0);
  pid_t pids[8];
  for (int i = 0; i < 8; i++) {
    pids[i] = fork();
    CHECK(pids[i] >= 0);
    if (pids[i] == 0) {
      char b;
      close(go[1]);
      if (read(go[0], &b, 1) != 0) /* start together when the parent closes the pipe */
        _exit(9);
      concurrent_child(dir, digest, data, len, counter);
    }
  }
  close(go[0]);
  close(go[1]);
  for (int i = 0; i < 8; i++) {
    int status = 0;
    CHECK_INT_EQ(waitpid(pids[i], &status, 0), pids[i]);
    CHECK(WIFEXITED(status));
    CHECK_INT_EQ(WEXITSTATUS(status), 0);
  }
  struct stat st;
  CHECK_INT_EQ(stat(counter, &st), 0);
  CHECK_INT_EQ(st.st_size, 1);
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), 0);
  CHECK_INT_EQ(count_entries(c, "blobs/sha256"), 1);
  CHECK_INT_EQ(count_entries(c, priv()), 0);
  CHECK_INT_EQ(count_entries(c, "locks"), 0);
  free(counter);
  free(digest);
  free(data);
  fpull_cache_free(c);
}

struct thread_arg {
  fpull_cache *c;
  const char *digest;
  const char *data;
  size_t len;
  int wrote, ok;
};

static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;
static int writes_started;

static void *thread_store(void *p)
{
  struct thread_arg *a = p;
  fpull_err err = {0};
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  if (fpull_cache_writer_begin(&w, &done, a->c, a->digest, (int64_t)a->len, &err) != 0)
    return NULL;
  if (!done) {
    pthread_mutex_lock(&count_mu);
    writes_started++;
    pthread_mutex_unlock(&count_mu);
    a->wrote = 1;
    const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
    usleep(20000);
    if (s->write(s->ud, a->data, a->len, &err) != 0 || fpull_cache_writer_commit(w, &err) != 0)
      return NULL;
  }
  a->ok = fpull_cache_has_blob(a->c, a->digest, (int64_t)a->len);
  return NULL;
}

TEST(concurrent_threads_fetch_once)
{
  /* Parallel downloads of one process share a cache handle; the lock must hold between
   * threads too. */
  fpull_cache *c = open_cache("c");
  char *digest = fpull_digest_of(HELLO, strlen(HELLO));
  struct thread_arg args[6];
  pthread_t t[6];
  for (int i = 0; i < 6; i++) {
    args[i] = (struct thread_arg){c, digest, HELLO, strlen(HELLO), 0, 0};
    CHECK_INT_EQ(pthread_create(&t[i], NULL, thread_store, &args[i]), 0);
  }
  for (int i = 0; i < 6; i++)
    pthread_join(t[i], NULL);
  CHECK_INT_EQ(writes_started, 1);
  for (int i = 0; i < 6; i++)
    CHECK_INT_EQ(args[i].ok, 1);
  free(digest);
  fpull_cache_free(c);
}

TEST(symlinked_entries_refused)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  size_t len = strlen(HELLO);
  char *digest = fpull_digest_of(HELLO, len);
  /* A symlink with the right name pointing at a file with the right bytes. */
  char *victim = path_in(th_tmpdir(), "victim");
  write_file(victim, HELLO, len);
  char *path = fpull_cache_blob_path(c, digest);
  CHECK_INT_EQ(symlink(victim, path), 0);
  CHECK(!fpull_cache_has_blob(c, digest, (int64_t)len));
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "not a regular file");
  struct stat st;
  CHECK(lstat(path, &st) < 0 && errno == ENOENT);
  CHECK_INT_EQ(stat(victim, &st), 0);

  /* get_bytes: removed and reported absent, so the caller fetches it again. */
  CHECK_INT_EQ(symlink(victim, path), 0);
  char *data = NULL;
  size_t n = 0;
  CHECK_INT_EQ(fpull_cache_get_bytes(c, digest, 1024, &data, &n, &err), FPULL_ENOTFOUND);
  CHECK_NULL(data);
  CHECK(lstat(path, &st) < 0);

  /* The writer replaces it with a real, verified file. */
  CHECK_INT_EQ(symlink(victim, path), 0);
  CHECK_INT_EQ(store(c, digest, (int64_t)len, HELLO, len, &err), 0);
  CHECK_INT_EQ(lstat(path, &st), 0);
  CHECK(S_ISREG(st.st_mode));

  /* A symlink planted as the partial file is not written through. */
  char *d2 = fpull_digest_of("0123456789", 10);
  char *tmp = path_in(fpull_cache_dir(c), priv());
  char *partial = NULL;
  CHECK(asprintf(&partial, "%s/%s.partial", tmp, d2 + 7) > 0);
  CHECK_INT_EQ(symlink(victim, partial), 0);
  CHECK_INT_EQ(store(c, d2, 10, "0123456789", 10, &err), 0);
  size_t vlen = 0;
  char *vdata = read_all(victim, &vlen);
  CHECK_INT_EQ(vlen, len);
  CHECK(memcmp(vdata, HELLO, len) == 0);
  free(vdata);
  free(partial);
  free(tmp);
  free(d2);
  free(path);
  free(victim);
  free(digest);
  fpull_cache_free(c);
}

TEST(verify_detects_corruption)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  size_t len = strlen(HELLO);
  char *digest = fpull_digest_of(HELLO, len);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), FPULL_ENOTFOUND);
  CHECK_INT_EQ(store(c, digest, (int64_t)len, HELLO, len, &err), 0);
  char *path = fpull_cache_blob_path(c, digest);
  /* Same size, one byte flipped: only a re-hash can tell. */
  char bad[sizeof HELLO];
  memcpy(bad, HELLO, sizeof bad);
  bad[0] = 'J';
  write_file(path, bad, len);
  CHECK(fpull_cache_has_blob(c, digest, (int64_t)len));
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "corrupt");
  CHECK(!fpull_cache_has_blob(c, digest, -1));

  /* Wrong size: removed too, and a writer is no longer told it is done. */
  write_file(path, HELLO, len - 1);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), FPULL_EINTEGRITY);
  CHECK(!fpull_cache_has_blob(c, digest, -1));
  write_file(path, HELLO, len - 1);
  CHECK_INT_EQ(store(c, digest, (int64_t)len, HELLO, len, &err), 0);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), 0);

  /* get_bytes re-verifies: a corrupt entry is dropped and reported absent. */
  write_file(path, bad, len);
  char *data = NULL;
  size_t n = 0;
  CHECK_INT_EQ(fpull_cache_get_bytes(c, digest, 1024, &data, &n, &err), FPULL_ENOTFOUND);
  CHECK(!fpull_cache_has_blob(c, digest, -1));
  free(path);
  free(digest);
  fpull_cache_free(c);
}

/* The verified record (cache_verified.c) that names the blob file as it is now. */
static void record_for(char *want, size_t cap, const char *digest, const char *blob)
{
  struct stat st;
  CHECK_INT_EQ(stat(blob, &st), 0);
  snprintf(want, cap, "%s %llu %llu %lld %lld %ld -\n", digest, (unsigned long long)st.st_dev,
           (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_ctim.tv_sec,
           (long)st.st_ctim.tv_nsec);
}

/* The record is the caller's 0600 file naming the blob as it is now. */
static void check_record(const char *record, const char *digest, const char *blob)
{
  struct stat rst;
  CHECK_INT_EQ(lstat(record, &rst), 0);
  CHECK_INT_EQ(rst.st_mode & 0777, 0600);
  size_t rlen = 0;
  char *text = read_all(record, &rlen);
  char want[512];
  record_for(want, sizeof want, digest, blob);
  CHECK_STR_EQ(text, want);
  free(text);
}

/* Same size, the first byte changed in place (the ctime moves). */
static void flip_first_byte(const char *blob)
{
  FILE *f = fopen(blob, "r+b");
  CHECK(f != NULL);
  CHECK_INT_EQ(fputc('J', f), 'J');
  fclose(f);
}

/* The record a commit leaves (CACHE/tmp/uUID/verified/HEX, cache_verified.h) spares the
 * hash only while the blob is the same file: flipping a byte in place (the ctime moves) is
 * caught, and a record made to match the changed file is what would let it through. */
TEST(verified_record_spares_the_hash_only_for_the_same_file)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  size_t len = strlen(HELLO);
  char *digest = fpull_digest_of(HELLO, len);
  CHECK_INT_EQ(store(c, digest, (int64_t)len, HELLO, len, &err), 0);
  char *path = fpull_cache_blob_path(c, digest);
  char *rel = NULL, *record = NULL;
  CHECK(asprintf(&rel, "%s/verified/%s", priv(), digest + 7) > 0);
  record = path_in(fpull_cache_dir(c), rel);
  struct stat rst;
  check_record(record, digest, path);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), 0);

  /* Same size, one byte flipped in place: the record no longer matches. */
  flip_first_byte(path);
  /* A record that names the changed file as it is now is trusted (so only the caller may
   * write one): the corrupt bytes pass. */
  char want[512];
  size_t rlen = 0;
  record_for(want, sizeof want, digest, path);
  char *saved = read_all(record, &rlen);
  write_file(record, want, strlen(want));
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), 0);
  /* The record of before the change: hashed, corrupt, removed. */
  write_file(record, saved, rlen);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), FPULL_EINTEGRITY);
  CHECK_CONTAINS(err.msg, "corrupt");
  CHECK(!fpull_cache_has_blob(c, digest, -1));
  /* Its record goes when a cache is next opened. */
  fpull_cache_free(c);
  c = open_cache("c");
  CHECK(lstat(record, &rst) < 0 && errno == ENOENT);
  free(saved);
  free(record);
  free(rel);
  free(path);
  free(digest);
  fpull_cache_free(c);
}

TEST(put_and_get_bytes)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  const char *doc = "{\"schemaVersion\":2}";
  char *digest = fpull_digest_of(doc, strlen(doc));
  char *data = NULL;
  size_t n = 0;
  CHECK_INT_EQ(fpull_cache_get_bytes(c, digest, 1024, &data, &n, &err), FPULL_ENOTFOUND);
  CHECK_INT_EQ(fpull_cache_put_bytes(c, digest, doc, strlen(doc), &err), 0);
  CHECK_INT_EQ(fpull_cache_put_bytes(c, digest, doc, strlen(doc), &err), 0);
  CHECK_INT_EQ(fpull_cache_get_bytes(c, digest, 1024, &data, &n, &err), 0);
  CHECK_INT_EQ(n, strlen(doc));
  CHECK_STR_EQ(data, doc);
  free(data);
  data = NULL;
  CHECK(fpull_cache_get_bytes(c, digest, 5, &data, &n, &err) != 0);
  CHECK_NULL(data);
  /* Bytes that do not match the digest never enter. */
  CHECK_INT_EQ(fpull_cache_put_bytes(c, digest, "{\"schemaVersion\":3}", strlen(doc), &err),
               0); /* already there: nothing written */
  char *other = fpull_digest_of("x", 1);
  CHECK_INT_EQ(fpull_cache_put_bytes(c, other, "y", 1, &err), FPULL_EINTEGRITY);
  CHECK(!fpull_cache_has_blob(c, other, -1));
  free(other);
  free(digest);
  fpull_cache_free(c);
}

/* Lock files are the downloader's (0600 in a cache its group cannot write): nobody else
 * can open one to hold a lock on it (issue 20.4). */
TEST(lock_files_closed_to_others)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  char *digest = fpull_digest_of(HELLO, strlen(HELLO));
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)strlen(HELLO), &err), 0);
  char rel[100];
  snprintf(rel, sizeof rel, "locks/%s.lock", digest + 7);
  char *lock = path_in(fpull_cache_dir(c), rel);
  struct stat st;
  CHECK_INT_EQ(stat(lock, &st), 0);
  CHECK_INT_EQ(st.st_mode & 0777, 0600);
  fpull_cache_writer_abort(w);
  CHECK_INT_EQ(count_entries(c, "locks"), 0);
  free(lock);
  free(digest);
  fpull_cache_free(c);
}

/* A lock held by someone else, even a mere reader's read lock on a leftover lock file, is
 * waited for FPULL_LOCK_WAIT seconds at most; then the blob goes into a spare partial of
 * the writer's own, committed like any other, removed when aborted (issue 20.4). */
TEST(held_lock_is_waited_for_boundedly_then_a_spare_partial_is_used)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  char *digest = fpull_digest_of(HELLO, strlen(HELLO));
  char rel[100];
  snprintf(rel, sizeof rel, "locks/%s.lock", digest + 7);
  char *lock = path_in(fpull_cache_dir(c), rel);
  int lfd = open(lock, O_RDWR | O_CREAT, 0644);
  CHECK(lfd >= 0);
  int rfd = open(lock, O_RDONLY);
  CHECK(rfd >= 0);
  struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
  CHECK_INT_EQ(fcntl(rfd, F_OFD_SETLK, &fl), 0);
  CHECK_INT_EQ(setenv("FPULL_LOCK_WAIT", "0.2", 1), 0);

  /* Aborted: its spare partial is gone, nothing resumable is left. */
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)strlen(HELLO), &err), 0);
  CHECK_INT_EQ(done, 0);
  CHECK(w != NULL);
  const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
  CHECK_INT_EQ(s->write(s->ud, HELLO, 5, &err), 0);
  CHECK_INT_EQ(count_entries(c, priv()), 1);
  fpull_cache_writer_abort(w);
  CHECK_INT_EQ(count_entries(c, priv()), 0);

  /* Committed: the blob is there and verifies; the reader's lock file is left alone. */
  CHECK_INT_EQ(store(c, digest, (int64_t)strlen(HELLO), HELLO, strlen(HELLO), &err), 0);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)strlen(HELLO), &err), 0);
  CHECK_INT_EQ(count_entries(c, priv()), 0);
  CHECK_INT_EQ(count_entries(c, "locks"), 1);
  CHECK_INT_EQ(unsetenv("FPULL_LOCK_WAIT"), 0);
  close(rfd);
  close(lfd);
  free(lock);
  free(digest);
  fpull_cache_free(c);
}

TEST(stale_partials_cleaned_at_open)
{
  fpull_cache *c = open_cache("c");
  char *tmp = path_in(fpull_cache_dir(c), priv());
  char *locks = path_in(fpull_cache_dir(c), "locks");
  const char *hex_old = "1111111111111111111111111111111111111111111111111111111111111111";
  const char *hex_young = "2222222222222222222222222222222222222222222222222222222222222222";
  const char *hex_busy = "3333333333333333333333333333333333333333333333333333333333333333";
  char p_old[4200], p_young[4200], p_busy[4200], p_junk[4200], l_busy[4200];
  snprintf(p_old, sizeof p_old, "%s/%s.partial", tmp, hex_old);
  snprintf(p_young, sizeof p_young, "%s/%s.partial", tmp, hex_young);
  snprintf(p_busy, sizeof p_busy, "%s/%s.partial", tmp, hex_busy);
  snprintf(p_junk, sizeof p_junk, "%s/tag-abcdef", tmp);
  snprintf(l_busy, sizeof l_busy, "%s/%s.lock", locks, hex_busy);
  write_file(p_old, "old", 3);
  write_file(p_young, "young", 5);
  write_file(p_busy, "busy", 4);
  write_file(p_junk, "{}", 2);
  struct timespec two_days[2] = {{time(NULL) - 2 * 86400, 0}, {time(NULL) - 2 * 86400, 0}};
  CHECK_INT_EQ(utimensat(AT_FDCWD, p_old, two_days, 0), 0);
  CHECK_INT_EQ(utimensat(AT_FDCWD, p_busy, two_days, 0), 0);
  CHECK_INT_EQ(utimensat(AT_FDCWD, p_junk, two_days, 0), 0);
  /* Someone is resuming the busy one right now: holds its lock. */
  int lfd = open(l_busy, O_RDWR | O_CREAT, 0644);
  CHECK(lfd >= 0);
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  CHECK_INT_EQ(fcntl(lfd, F_OFD_SETLK, &fl), 0);
  fpull_cache_free(c);

  c = open_cache("c");
  struct stat st;
  CHECK(stat(p_old, &st) < 0 && errno == ENOENT);
  CHECK(stat(p_junk, &st) < 0 && errno == ENOENT);
  CHECK_INT_EQ(stat(p_young, &st), 0);
  CHECK_INT_EQ(stat(p_busy, &st), 0);
  CHECK_INT_EQ(stat(l_busy, &st), 0);
  close(lfd);
  fpull_cache_free(c);
  free(tmp);
  free(locks);
}

TEST(tag_records)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  const char *d1 = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  const char *d2 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  char *got = NULL;
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, "docker.io/library/ubuntu:latest", &got, &err),
               FPULL_ENOTFOUND);
  CHECK_CONTAINS(err.msg, "docker.io/library/ubuntu:latest");
  CHECK_NULL(got);
  CHECK_INT_EQ(fpull_cache_tag_record(c, "docker.io/library/ubuntu:latest", d1, &err), 0);
  CHECK_INT_EQ(fpull_cache_tag_record(c, "127.0.0.1:5000/a/b:v1", d2, &err), 0);
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, "docker.io/library/ubuntu:latest", &got, &err), 0);
  CHECK_STR_EQ(got, d1);
  free(got);
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, "127.0.0.1:5000/a/b:v1", &got, &err), 0);
  CHECK_STR_EQ(got, d2);
  free(got);
  /* A newer resolution replaces the old one. */
  CHECK_INT_EQ(fpull_cache_tag_record(c, "docker.io/library/ubuntu:latest", d2, &err), 0);
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, "docker.io/library/ubuntu:latest", &got, &err), 0);
  CHECK_STR_EQ(got, d2);
  free(got);
  CHECK_INT_EQ(count_entries(c, "tags"), 2);
  CHECK_INT_EQ(count_entries(c, priv()), 0);
  /* Names with path characters stay inside tags/. */
  CHECK_INT_EQ(fpull_cache_tag_record(c, "../../../../etc/passwd", d1, &err), 0);
  CHECK_INT_EQ(count_entries(c, "tags"), 3);
  CHECK_INT_EQ(fpull_cache_tag_record(c, "x/y:z", "sha256:../../x", &err), FPULL_EINTEGRITY);
  fpull_cache_free(c);

  /* The records survive a new handle (another run). */
  c = open_cache("c");
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, "127.0.0.1:5000/a/b:v1", &got, &err), 0);
  CHECK_STR_EQ(got, d2);
  free(got);
  fpull_cache_free(c);
}

/* Records are per writer (HEX.uUID.json); older fpull's HEX.json is still read, and the
 * newest trusted record wins. They count only in a tags/ nobody else can rename them in:
 * one others may write without the sticky bit is not trusted, and gets the bit when its
 * owner opens the cache (issue 20.5). */
TEST(tag_records_per_writer_and_only_where_nobody_else_can_replace_them)
{
  fpull_cache *c = open_cache("t");
  fpull_err err = {0};
  const char *ref = "r.example/a:v1";
  const char *d1 = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  const char *d2 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  CHECK_INT_EQ(fpull_cache_tag_record(c, ref, d1, &err), 0);
  char *hex = fpull_digest_of(ref, strlen(ref));
  char rel[120];
  snprintf(rel, sizeof rel, "tags/%s.u%u.json", hex + 7, (unsigned)geteuid());
  char *own = path_in(fpull_cache_dir(c), rel);
  struct stat st;
  CHECK_INT_EQ(stat(own, &st), 0);
  snprintf(rel, sizeof rel, "tags/%s.json", hex + 7);
  char *legacy = path_in(fpull_cache_dir(c), rel);
  char text[400];
  /* A newer record under the old name wins; an older one does not. */
  snprintf(text, sizeof text, "{\"reference\":\"%s\",\"digest\":\"%s\",\"time\":%lld}", ref, d2,
           (long long)time(NULL) + 100);
  write_file(legacy, text, strlen(text));
  CHECK_INT_EQ(chmod(legacy, 0644), 0);
  char *got = NULL;
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, ref, &got, &err), 0);
  CHECK_STR_EQ(got, d2);
  free(got);
  snprintf(text, sizeof text, "{\"reference\":\"%s\",\"digest\":\"%s\",\"time\":0}", ref, d2);
  write_file(legacy, text, strlen(text));
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, ref, &got, &err), 0);
  CHECK_STR_EQ(got, d1);
  free(got);
  got = NULL;
  /* tags/ open to others without the sticky bit: nothing in it counts. */
  char *tags = path_in(fpull_cache_dir(c), "tags");
  CHECK_INT_EQ(chmod(tags, 0777), 0);
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, ref, &got, &err), FPULL_ENOTFOUND);
  CHECK_NULL(got);
  CHECK_CONTAINS(err.msg, "no trusted tag record");
  fpull_cache_free(c);
  /* Its owner's next open gives it the sticky bit: trusted again. */
  c = open_cache("t");
  CHECK_INT_EQ(stat(tags, &st), 0);
  CHECK((st.st_mode & 07777) == 01777);
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, ref, &got, &err), 0);
  CHECK_STR_EQ(got, d1);
  free(got);
  free(tags);
  free(legacy);
  free(own);
  free(hex);
  fpull_cache_free(c);
}

TEST(resolve_dir_order)
{
  struct fpull_config cfg = {0};
  cfg.cache_dir = "/from/config";
  setenv("FPULL_CACHE", "/from/env", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  char *d = fpull_cache_resolve_dir("/from/cli", &cfg);
  CHECK_STR_EQ(d, "/from/cli");
  free(d);
  d = fpull_cache_resolve_dir(NULL, &cfg);
  CHECK_STR_EQ(d, "/from/env");
  free(d);
  setenv("FPULL_CACHE", "", 1);
  d = fpull_cache_resolve_dir("", &cfg);
  CHECK_STR_EQ(d, "/from/config");
  free(d);
  cfg.cache_dir = "~/scratch/cache";
  d = fpull_cache_resolve_dir(NULL, &cfg);
  CHECK_STR_EQ(d, "/home/u/scratch/cache");
  free(d);
  unsetenv("FPULL_CACHE");
  d = fpull_cache_resolve_dir(NULL, NULL);
  CHECK_STR_EQ(d, "/xdg/fpull");
  free(d);
  /* Relative XDG values are ignored, as the XDG spec says. */
  setenv("XDG_CACHE_HOME", "relative", 1);
  d = fpull_cache_resolve_dir(NULL, NULL);
  CHECK_STR_EQ(d, "/home/u/.cache/fpull");
  free(d);
  unsetenv("XDG_CACHE_HOME");
  d = fpull_cache_resolve_dir(NULL, NULL);
  CHECK_STR_EQ(d, "/home/u/.cache/fpull");
  free(d);
}

TEST(killed_writer_is_resumed_by_next_run)
{
  /* A prefetch SIGKILLed mid-blob: the kernel drops its lock, the partial stays, and the
   * next run re-hashes it and continues from there. */
  fpull_cache *c = open_cache("c");
  const char *dir = fpull_cache_dir(c);
  size_t len = 64 * 1024, part = 40 * 1024;
  char *data = malloc(len);
  for (size_t i = 0; i < len; i++)
    data[i] = (char)(i % 253);
  char *digest = fpull_digest_of(data, len);
  int ready[2];
  CHECK_INT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    fpull_cache *cc = NULL;
    fpull_err e = {0};
    struct fpull_cache_writer *w = NULL;
    int done = 0;
    if (fpull_cache_open(&cc, dir, &e) ||
        fpull_cache_writer_begin(&w, &done, cc, digest, (int64_t)len, &e))
      _exit(1);
    const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
    if (s->write(s->ud, data, part, &e))
      _exit(2);
    if (write(ready[1], "r", 1) != 1)
      _exit(3);
    for (;;)
      pause();
  }
  close(ready[1]);
  char b;
  CHECK_INT_EQ(read(ready[0], &b, 1), 1);
  close(ready[0]);
  CHECK_INT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  CHECK_INT_EQ(waitpid(pid, &status, 0), pid);
  CHECK(WIFSIGNALED(status));

  fpull_err err = {0};
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  CHECK_INT_EQ(fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)len, &err), 0);
  CHECK_INT_EQ(done, 0);
  CHECK_INT_EQ(fpull_cache_writer_offset(w), part);
  const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
  CHECK_INT_EQ(s->write(s->ud, data + part, len - part, &err), 0);
  CHECK_INT_EQ(fpull_cache_writer_commit(w, &err), 0);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, (int64_t)len, &err), 0);
  CHECK_INT_EQ(count_entries(c, "locks"), 0);
  free(digest);
  free(data);
  fpull_cache_free(c);
}

TEST(open_blob_checks_the_entry_it_returns)
{
  fpull_cache *c = open_cache("c");
  fpull_err err = {0};
  size_t len = strlen(HELLO);
  char *digest = fpull_digest_of(HELLO, len);
  int fd = -2;
  CHECK_INT_EQ(fpull_cache_open_blob(&fd, c, digest, (int64_t)len, &err), FPULL_ENOTFOUND);
  CHECK_INT_EQ(fd, -1);
  CHECK_INT_EQ(store(c, digest, (int64_t)len, HELLO, len, &err), 0);
  CHECK_INT_EQ(fpull_cache_open_blob(&fd, c, digest, (int64_t)len, &err), 0);
  char buf[128] = {0};
  CHECK_INT_EQ(read(fd, buf, sizeof buf), len);
  CHECK_STR_EQ(buf, HELLO);
  close(fd);
  /* Wrong size: removed, reported absent. */
  CHECK_INT_EQ(fpull_cache_open_blob(&fd, c, digest, (int64_t)len + 1, &err), FPULL_ENOTFOUND);
  CHECK(!fpull_cache_has_blob(c, digest, -1));
  /* A symlink or a FIFO planted under the name is never opened through. */
  char *path = fpull_cache_blob_path(c, digest);
  char *victim = path_in(th_tmpdir(), "victim");
  write_file(victim, HELLO, len);
  CHECK_INT_EQ(symlink(victim, path), 0);
  CHECK_INT_EQ(fpull_cache_open_blob(&fd, c, digest, (int64_t)len, &err), FPULL_ENOTFOUND);
  struct stat st;
  CHECK(lstat(path, &st) < 0);
  CHECK_INT_EQ(mkfifo(path, 0600), 0);
  CHECK_INT_EQ(fpull_cache_open_blob(&fd, c, digest, -1, &err), FPULL_ENOTFOUND);
  CHECK(lstat(path, &st) < 0);
  CHECK_INT_EQ(fpull_cache_open_blob(&fd, c, "sha256:../../x", -1, &err), FPULL_EINTEGRITY);
  free(victim);
  free(path);
  free(digest);
  fpull_cache_free(c);
}

TEST(shared_cache_is_searched_after_the_own_and_never_changed)
{
  fpull_cache *shared = open_cache("site");
  fpull_err err = {0};
  char *digest = fpull_digest_of(HELLO, strlen(HELLO));
  CHECK_INT_EQ(fpull_cache_put_bytes(shared, digest, HELLO, strlen(HELLO), &err), 0);
  CHECK_INT_EQ(fpull_cache_tag_record(shared, "r.example/a:v1", digest, &err), 0);
  char *site = strdup(fpull_cache_dir(shared));
  fpull_cache_free(shared);

  fpull_cache *c = open_cache("own");
  CHECK_INT_EQ(fpull_cache_has_blob(c, digest, -1), 0);
  CHECK_INT_EQ(fpull_cache_add_shared(c, "/nonexistent/cache", &err), 0); /* skipped */
  CHECK_INT_EQ(fpull_cache_add_shared(c, site, &err), 0);
  CHECK_INT_EQ(fpull_cache_has_blob(c, digest, (int64_t)strlen(HELLO)), 1);
  char *data = NULL, *tagged = NULL;
  size_t len = 0;
  CHECK_INT_EQ(fpull_cache_get_bytes(c, digest, 1 << 20, &data, &len, &err), 0);
  CHECK_STR_EQ(data, HELLO);
  free(data);
  CHECK_INT_EQ(fpull_cache_tag_lookup(c, "r.example/a:v1", &tagged, &err), 0);
  CHECK_STR_EQ(tagged, digest);
  free(tagged);
  int fd = -1;
  CHECK_INT_EQ(fpull_cache_open_verified(&fd, c, digest, -1, &err), 0);
  close(fd);
  CHECK_INT_EQ(count_entries(c, "blobs/sha256"), 0); /* nothing copied into the own cache */

  /* A corrupt copy there is passed over, not removed: the site repairs its cache. */
  char *blob = path_in(site, "blobs/sha256");
  char *file = path_in(blob, digest + 7);
  FILE *f = fopen(file, "r+b");
  CHECK(f != NULL);
  fputc('X', f);
  fclose(f);
  CHECK_INT_EQ(fpull_cache_get_bytes(c, digest, 1 << 20, &data, &len, &err), FPULL_ENOTFOUND);
  CHECK_INT_EQ(fpull_cache_verify_blob(c, digest, -1, &err), FPULL_ENOTFOUND);
  struct stat st;
  CHECK_INT_EQ(stat(file, &st), 0);
  fpull_cache_free(c);
  free(file);
  free(blob);
  free(site);
  free(digest);
}

/* A shared cache's blob that only the caller or root can write is hashed once: the record
 * goes to the own cache's verified-shared/ (the shared cache is never written), and spares
 * the hash only while the blob is the same file. */
TEST(shared_cache_blob_is_recorded_in_the_own_private_directory)
{
  fpull_cache *shared = open_cache("site2");
  fpull_err err = {0};
  size_t len = strlen(HELLO);
  char *digest = fpull_digest_of(HELLO, len);
  CHECK_INT_EQ(fpull_cache_put_bytes(shared, digest, HELLO, len, &err), 0);
  char *site = strdup(fpull_cache_dir(shared));
  char *file = fpull_cache_blob_path(shared, digest);
  fpull_cache_free(shared);

  fpull_cache *c = open_cache("own2");
  CHECK_INT_EQ(fpull_cache_add_shared(c, site, &err), 0);
  char *rel = NULL;
  CHECK(asprintf(&rel, "%s/verified-shared/%s", priv(), digest + 7) > 0);
  char *record = path_in(fpull_cache_dir(c), rel);
  int fd = -1;
  struct stat st, rst;
  CHECK(lstat(record, &rst) < 0 && errno == ENOENT);
  CHECK_INT_EQ(fpull_cache_open_verified(&fd, c, digest, (int64_t)len, &err), 0);
  close(fd);
  check_record(record, digest, file);
  CHECK_INT_EQ(count_entries(c, "blobs/sha256"), 0);

  /* One byte flipped there: a record forged to name the changed file is what would let it
   * through (so the record is used), the record of before does not match: passed over. */
  flip_first_byte(file);
  size_t rlen = 0;
  char *saved = read_all(record, &rlen);
  char want[512];
  record_for(want, sizeof want, digest, file);
  write_file(record, want, strlen(want));
  CHECK_INT_EQ(fpull_cache_open_verified(&fd, c, digest, (int64_t)len, &err), 0);
  close(fd);
  write_file(record, saved, rlen);
  CHECK_INT_EQ(fpull_cache_open_verified(&fd, c, digest, (int64_t)len, &err), FPULL_ENOTFOUND);
  CHECK_INT_EQ(stat(file, &st), 0); /* the site's file, left alone */
  fpull_cache_free(c);

  /* A record older than a week goes when the own cache is next opened. */
  struct timespec old[2] = {{.tv_sec = time(NULL) - 8 * 24 * 3600}, {0}};
  old[1] = old[0];
  CHECK_INT_EQ(utimensat(AT_FDCWD, record, old, AT_SYMLINK_NOFOLLOW), 0);
  c = open_cache("own2");
  CHECK(lstat(record, &rst) < 0 && errno == ENOENT);
  fpull_cache_free(c);
  free(saved);
  free(record);
  free(rel);
  free(file);
  free(site);
  free(digest);
}

TEST(shared_cache_dirs_env_replaces_config)
{
  struct fpull_config conf = {0};
  char *list[] = {"/sw/a", "/sw/b", NULL};
  conf.shared_caches = list;
  unsetenv("FPULL_SHARED_CACHES");
  char **v = fpull_cache_shared_dirs(&conf);
  CHECK_INT_EQ(fpull_strv_len(v), 2);
  CHECK_STR_EQ(v[1], "/sw/b");
  fpull_strv_free(v);
  setenv("FPULL_SHARED_CACHES", "/x::/y", 1);
  v = fpull_cache_shared_dirs(&conf);
  CHECK_INT_EQ(fpull_strv_len(v), 2);
  CHECK_STR_EQ(v[0], "/x");
  CHECK_STR_EQ(v[1], "/y");
  fpull_strv_free(v);
  setenv("FPULL_SHARED_CACHES", "", 1); /* set and empty: none */
  v = fpull_cache_shared_dirs(&conf);
  CHECK_INT_EQ(fpull_strv_len(v), 0);
  fpull_strv_free(v);
  unsetenv("FPULL_SHARED_CACHES");
}

/* A library caller that leaves cache_dir unset gets the CLI's default, not an error
 * (issue 34.8): FPULL_CACHE, else $XDG_CACHE_HOME/fpull, else ~/.cache/fpull. */
TEST(unset_dir_is_the_clis_default)
{
  char home[] = "/tmp/fpull-unit-home-XXXXXX";
  CHECK(mkdtemp(home) != NULL);
  char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  char *saved_cache = getenv("FPULL_CACHE") ? strdup(getenv("FPULL_CACHE")) : NULL;
  char *saved_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
  setenv("HOME", home, 1);
  unsetenv("FPULL_CACHE");
  unsetenv("XDG_CACHE_HOME");
  fpull_cache *c = NULL;
  fpull_err err = {0};
  CHECK_INT_EQ(fpull_cache_open(&c, NULL, &err), 0);
  char want[256];
  snprintf(want, sizeof want, "%s/.cache/fpull", home);
  CHECK_STR_EQ(fpull_cache_dir(c), want);
  fpull_cache_free(c);
  c = NULL;
  CHECK_INT_EQ(fpull_cache_open_with_shared(&c, "", NULL, &err), 0);
  CHECK_STR_EQ(fpull_cache_dir(c), want);
  fpull_cache_free(c);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
  CHECK(system(cmd) == 0);
  if (saved_home)
    setenv("HOME", saved_home, 1);
  if (saved_cache)
    setenv("FPULL_CACHE", saved_cache, 1);
  if (saved_xdg)
    setenv("XDG_CACHE_HOME", saved_xdg, 1);
  free(saved_home);
  free(saved_cache);
  free(saved_xdg);
}
