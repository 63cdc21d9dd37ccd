/* A bump allocator over a temporary file (see arena.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "unpack/dest.h"
#include "base/util.h"

/* Address space only: 64 GiB of tree is far past the 10 million entries a layer may hold. */
#define ARENA_RESERVE (64ull << 30)
#define ARENA_CHUNK (8u << 20)

static int tmp_file(int dirfd)
{
  int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
    return fd;
  /* File systems without O_TMPFILE: a random name, unlinked before anything is in it. */
  char name[64];
  fd = fp_dest_create_random(dirfd, ".fpull-tree-", 0600, name, sizeof name);
  if (fd >= 0)
    (void)unlinkat(dirfd, name, 0);
  return fd;
}

int fp_arena_open(struct fp_arena *a, int dirfd, const char *dirname, fpull_err *err)
{
  memset(a, 0, sizeof *a);
  a->fd = tmp_file(dirfd);
  if (a->fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot create a temporary file in %s: %s", dirname,
                         strerror(errno));
  void *p =
      mmap(NULL, ARENA_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    int saved = errno;
    close(a->fd);
    a->fd = -1;
    return fpull_err_set(err, FPULL_EFAIL, "cannot reserve address space: %s", strerror(saved));
  }
  a->base = p;
  a->reserved = ARENA_RESERVE;
  return 0;
}

static int grow(struct fp_arena *a, size_t need)
{
  size_t n = a->mapped;
  while (n < need)
    n += ARENA_CHUNK;
  if (n > a->reserved)
    return errno = ENOMEM, -1;
  /* posix_fallocate: a full disk says so here, not as SIGBUS on a later store. */
  int e = posix_fallocate(a->fd, (off_t)a->mapped, (off_t)(n - a->mapped));
  if (e)
    return errno = e, -1;
  void *p = mmap(a->base + a->mapped, n - a->mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                 a->fd, (off_t)a->mapped);
  if (p == MAP_FAILED)
    return -1;
  /* Lookups land anywhere in the tree: pages that went to disk come back one by one. */
  (void)madvise(p, n - a->mapped, MADV_RANDOM);
  a->mapped = n;
  return 0;
}

void *fp_arena_alloc(struct fp_arena *a, size_t size)
{
  size_t at = (a->used + 15) & ~(size_t)15;
  if (size > a->reserved - at)
    return errno = ENOMEM, NULL;
  if (at + size > a->mapped && grow(a, at + size) < 0)
    return NULL;
  a->used = at + size;
  return a->base + at;
}

uint64_t fp_resident_bytes(void)
{
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0)
    close(fd);
  unsigned long long size, resident;
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
    return 0;
  return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

void fp_arena_release(struct fp_arena *a)
{
  if (a->mapped)
    (void)madvise(a->base, a->mapped, MADV_DONTNEED);
}

void fp_arena_close(struct fp_arena *a)
{
  /* An arena that was never opened (zeroed) holds no descriptor, fd 0 included. */
  if (a->base) {
    munmap(a->base, a->reserved);
    close(a->fd);
  }
  memset(a, 0, sizeof *a);
  a->fd = -1;
}
