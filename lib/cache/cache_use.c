/* Pins and last-use stamps (see cache_use.h), in CACHE/used/.
 *
 * Pins: one file, CACHE/used/.pins, and one byte of it per blob (at an offset taken from
 * the digest). A pull holds a shared lock on the byte of every blob it uses; prune and rm
 * remove a blob only while they hold the exclusive lock of its byte, taken without waiting.
 * Byte ranges of open-file-description locks keep this at one descriptor per pull whatever
 * the number of blobs, work between threads and processes and reach NFS servers (as the
 * per-blob download locks do). Two digests on one byte only make prune keep a blob more.
 * The name starts with a dot so that the clean-up of stale lock files never removes it,
 * and it lives outside locks/ for the same reason. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_internal.h"
#include "cache_trust.h"
#include "cache_use.h"
#include "fpull/manifest.h"
#include "base/util.h"

#define FP_PINS_NAME ".pins"
/* How long a pull waits for a prune that holds the byte of a blob it is removing. */
#define FP_PIN_TRIES 200
#define FP_PIN_SLEEP_NS (10 * 1000 * 1000)

struct fp_cache_pins {
  int used_fd; /* CACHE/used */
  int fd;      /* CACHE/used/.pins */
  int writable;
  int impatient; /* a wait for a pin ran out: the next ones try once (atomic) */
};

void fp_cache_pins_free(struct fp_cache_pins *p)
{
  if (!p)
    return;
  if (p->fd >= 0)
    close(p->fd);
  if (p->used_fd >= 0)
    close(p->used_fd);
  free(p);
}

int fp_cache_used_fd(const fpull_cache *c)
{
  return c && c->pins ? c->pins->used_fd : -1;
}

/* 28 bits of the digest's hex: the byte of its pin. -1 for what is no digest. */
static off_t pin_offset(const char *digest)
{
  const char *hex = digest ? strchr(digest, ':') : NULL;
  if (!hex)
    return -1;
  off_t off = 0;
  for (int i = 1; i <= 7; i++) {
    char ch = hex[i];
    int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (v < 0)
      return -1;
    off = off * 16 + v;
  }
  return off;
}

void fp_cache_pins_open(fpull_cache *c)
{
  if (!c || c->pins || c->root_fd < 0)
    return;
  struct stat st;
  if (fstat(c->root_fd, &st) < 0)
    return;
  /* As shared as the cache root, like the other subdirectories (cache.c). */
  if (!c->readonly)
    (void)mkdirat(c->root_fd, "used", st.st_mode & (S_IRWXU | S_IRWXG | S_IRWXO | S_ISVTX));
  int used = openat(c->root_fd, "used", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (used < 0) {
    if (!c->readonly)
      fp_debug("cache %s: used/: %s; no pins", c->dir, strerror(errno));
    return;
  }
  struct fp_cache_pins *p = fp_xcalloc(1, sizeof *p);
  p->used_fd = used;
  /* Another user's pins file (a group cache) may be open to us for reading only: shared
   * locks need no more, and prune then only tests for them. */
  p->fd = c->readonly ? -1 : fp_trust_open_file(used, FP_PINS_NAME, O_RDWR | O_CREAT, 0664, &st);
  p->writable = p->fd >= 0;
  if (p->fd < 0)
    p->fd = fp_trust_open_file(used, FP_PINS_NAME, O_RDONLY, 0, &st);
  if (p->fd < 0 && errno != ENOENT)
    fp_debug("cache %s: used/%s: %s; no pins", c->dir, FP_PINS_NAME, strerror(errno));
  c->pins = p;
}

static int lock_byte(int fd, short type, off_t off, int cmd)
{
  struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = off, .l_len = 1};
  int r;
  do
    r = fcntl(fd, cmd, &fl);
  while (r < 0 && errno == EINTR);
  return r;
}

void fp_cache_pin(fpull_cache *c, const char *digest)
{
  off_t off = pin_offset(digest);
  if (!c || !c->pins || c->pins->fd < 0 || off < 0)
    return;
  int tries = __atomic_load_n(&c->pins->impatient, __ATOMIC_RELAXED) ? 1 : FP_PIN_TRIES;
  for (int i = 0; i < tries; i++) {
    if (lock_byte(c->pins->fd, F_RDLCK, off, F_OFD_SETLK) == 0)
      return;
    if (errno != EAGAIN && errno != EACCES)
      break;
    /* Someone holds pins for longer than a removal takes: never wait that long again, so
     * that a pull of many blobs is delayed by two seconds at most, not two per blob. */
    if (i + 1 == tries) {
      __atomic_store_n(&c->pins->impatient, 1, __ATOMIC_RELAXED);
      break;
    }
    /* A prune holds the byte for the time it takes to unlink the blob: bounded by the
     * tries, so that nobody who can write the cache can stop pulls by holding it. */
    struct timespec ts = {0, FP_PIN_SLEEP_NS};
    nanosleep(&ts, NULL);
  }
  fp_debug("cache %s: could not pin %s: %s", c->dir, digest, strerror(errno));
}

int fp_cache_pinned(fpull_cache *c, const char *digest)
{
  off_t off = pin_offset(digest);
  if (!c || !c->pins || c->pins->fd < 0 || off < 0)
    return 0;
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = off, .l_len = 1};
  if (fcntl(c->pins->fd, F_OFD_GETLK, &fl) < 0)
    return 0;
  return fl.l_type != F_UNLCK;
}

int fp_cache_pin_hold(fpull_cache *c, const char *digest)
{
  off_t off = pin_offset(digest);
  if (!c || !c->pins || c->pins->fd < 0 || off < 0) {
    errno = ENOENT;
    return -1;
  }
  if (!c->pins->writable) {
    /* Only a test is possible on another user's pins file: a pull that pins between the
     * test and the removal finds the blob gone and fetches it again. */
    return fp_cache_pinned(c, digest);
  }
  if (lock_byte(c->pins->fd, F_WRLCK, off, F_OFD_SETLK) == 0)
    return 0;
  return errno == EAGAIN || errno == EACCES ? 1 : -1;
}

void fp_cache_pin_release(fpull_cache *c, const char *digest)
{
  off_t off = pin_offset(digest);
  if (c && c->pins && c->pins->fd >= 0 && c->pins->writable && off >= 0)
    lock_byte(c->pins->fd, F_UNLCK, off, F_OFD_SETLK);
}

/* Writes the reference into a stamp we just created or truncated. */
static int write_stamp(int fd, const char *reference)
{
  size_t len = strlen(reference);
  return pwrite(fd, reference, len, 0) == (ssize_t)len ? 0 : -1;
}

void fp_cache_note_use(fpull_cache *c, const char *reference)
{
  if (!c || c->readonly || !reference || !*reference)
    return;
  fp_cache_pins_open(c);
  if (!c->pins)
    return;
  cleanup_free char *d = fpull_digest_of(reference, strlen(reference));
  if (!d)
    return;
  const char *name = d + 7;
  int dir = c->pins->used_fd;
  struct stat st;
  cleanup_close int fd = fp_trust_open_file(dir, name, O_RDWR, 0, &st);
  if (fd >= 0 && fp_trust_file_is_safe(&st)) {
    char buf[2048];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    /* The same stamp: only its time changes. Another (or a torn one): rewritten. */
    if ((size_t)n == strlen(reference) && strcmp(buf, reference) == 0) {
      if (futimens(fd, NULL) == 0)
        return;
    } else if (ftruncate(fd, 0) == 0 && write_stamp(fd, reference) == 0) {
      return;
    }
  }
  /* Missing, or one we may not write (another user's in a group cache): our own. */
  if (fd >= 0 || errno != ENOENT)
    fp_cache_remove_if_same(dir, name, NULL);
  if (fd >= 0)
    close(fd);
  fd = fp_trust_open_file(dir, name, O_RDWR | O_CREAT | O_EXCL, 0644, &st);
  if (fd < 0 || fchmod(fd, 0644) < 0 || write_stamp(fd, reference) < 0)
    fp_debug("cache %s: last-use stamp of %s: %s", c->dir, reference, strerror(errno));
}
