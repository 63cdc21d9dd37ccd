/* libFuzzer target: tag records read from a cache's tags/ (in a shared cache another user
 * may have written them). The input is the caller's own record, optionally followed by a
 * line "---" and the record under the name older fpull used; the lookup takes the newest
 * valid one and must hand back a valid digest or an error. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fpull/cache.h"
#include "fpull/manifest.h"
#include "fpull/ref.h"
#include "unpack/inroot.h"
#include "base/util.h"

#define REFERENCE "127.0.0.1:5000/fuzz/image:latest"

static fpull_cache *cache;
static int tags_fd = -1;
static char dir[] = "/tmp/fpull-fuzz-cachetags-XXXXXX";
static char own[128], legacy[128];

static void cleanup(void)
{
  fpull_cache_free(cache);
  unlinkat(tags_fd, own, 0);
  unlinkat(tags_fd, legacy, 0);
  close(tags_fd);
  if (fp_rm_rf_at(AT_FDCWD, dir) < 0)
    fprintf(stderr, "fuzz_cachetags: could not remove %s\n", dir);
}

static void setup(void)
{
  fpull_err err = {0};
  if (!mkdtemp(dir) || fpull_cache_open(&cache, dir, &err))
    abort();
  char tags[160];
  snprintf(tags, sizeof tags, "%s/tags", dir);
  tags_fd = open(tags, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char *d = fpull_digest_of(REFERENCE, strlen(REFERENCE));
  if (tags_fd < 0 || !d)
    abort();
  snprintf(own, sizeof own, "%s.u%ld.json", d + 7, (long)geteuid());
  snprintf(legacy, sizeof legacy, "%s.json", d + 7);
  free(d);
  atexit(cleanup);
}

static void put(const char *name, const char *p, size_t len, int present)
{
  unlinkat(tags_fd, name, 0);
  if (!present)
    return;
  int fd = openat(tags_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || fchmod(fd, 0644) < 0 || (len && write(fd, p, len) != (ssize_t)len))
    abort();
  close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (!cache)
    setup();
  const char *p = (const char *)data;
  const char *sep = memmem(p, size, "\n---\n", 5);
  put(own, p, sep ? (size_t)(sep - p) : size, 1);
  put(legacy, sep ? sep + 5 : NULL, sep ? size - (size_t)(sep + 5 - p) : 0, sep != NULL);
  char *digest = NULL;
  fpull_err err = {0};
  if (fpull_cache_tag_lookup(cache, REFERENCE, &digest, &err) == 0) {
    if (!fpull_digest_valid(digest))
      abort();
  } else if (digest || !err.msg[0]) {
    abort();
  }
  free(digest);
  return 0;
}
