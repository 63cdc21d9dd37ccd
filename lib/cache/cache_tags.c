/* tag -> digest records for --offline: CACHE/tags/SHA256(REFERENCE).uUID.json, one per
 * writer, holding the reference, the digest and when it was resolved (older fpull wrote
 * SHA256(REFERENCE).json, still read). Hashing the name keeps any reference a safe,
 * fixed-length file name; the reference inside guards against a mixed-up file. One name
 * per writer: in a sticky tags/ nobody may replace another's record, so each keeps its
 * own, and a reader takes the newest of those it trusts (its own, root's). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "cache_internal.h"
#include "cache_trust.h"
#include "fpull/cache.h"
#include "fpull/manifest.h"
#include "fpull/ref.h"
#include "registry/json_strict.h"
#include "base/util.h"

/* uid: the writer's; -1 for the name older fpull used for everyone. */
static char *record_name(const char *reference, long uid)
{
  cleanup_free char *d = fpull_digest_of(reference, strlen(reference));
  if (!d)
    return NULL;
  return uid < 0 ? fp_xasprintf("%s.json", d + 7) : fp_xasprintf("%s.u%ld.json", d + 7, uid);
}

int fpull_cache_tag_record(fpull_cache *c, const char *reference, const char *digest,
                           fpull_err *err)
{
  if (!reference || !*reference)
    return fpull_err_set(err, FPULL_EFAIL, "cache: empty reference for a tag record");
  if (!fpull_digest_valid(digest))
    return fpull_err_set(err, FPULL_EINTEGRITY, "cache: invalid digest for %s", reference);
  cleanup_free char *name = record_name(reference, (long)geteuid());
  if (!name)
    return fpull_err_set(err, FPULL_EFAIL, "cache: sha256 unavailable");
  cleanup_json cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "reference", reference);
  cJSON_AddStringToObject(j, "digest", digest);
  cJSON_AddNumberToObject(j, "time", (double)time(NULL));
  cleanup_free char *text = cJSON_PrintUnformatted(j);
  if (!text)
    abort();
  size_t len = strlen(text);

  /* Written in our private directory (nothing there can be swapped for a symlink or a
   * directory of someone else's) and renamed in: a reader sees the old or the new record. */
  if (c->priv_fd < 0)
    return fpull_err_set(err, FPULL_EFAIL,
                         "cache %s: tag record for %s: no private working "
                         "directory in tmp/",
                         c->dir, reference);
  char base[64];
  struct stat st;
  cleanup_close int fd = fp_trust_create_random(c->priv_fd, "tag", 0644, base, sizeof base, &st);
  if (fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: tag record: %s", c->dir, strerror(errno));
  /* Readable by the cache's other users, writable by nobody else whatever the umask. */
  int ok = fchmod(fd, 0644) == 0;
  for (size_t off = 0; ok && off < len;) {
    ssize_t n = write(fd, text + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    off += ok ? (size_t)n : 0;
  }
  if (!ok || write(fd, "\n", 1) != 1 || renameat(c->priv_fd, base, c->tags_fd, name) < 0) {
    int e = errno;
    unlinkat(c->priv_fd, base, 0);
    /* Someone else took our name in a sticky tags/: it is not ours to replace, and a record
     * of theirs there is never trusted; only --offline misses this tag. */
    if (ok && (e == EPERM || e == EACCES)) {
      fp_warn("cache %s: cannot record %s for --offline: tags/%s is someone else's", c->dir,
              reference, name);
      return 0;
    }
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: tag record for %s: %s", c->dir, reference,
                         strerror(e));
  }
  return 0;
}

int fp_tag_record_parse(const char *text, size_t len, char **reference, char **digest, double *when)
{
  *reference = *digest = NULL;
  cleanup_json cJSON *j = NULL;
  if (fp_json_parse_strict(&j, text, len, FP_TAG_RECORD_MAX, "tag record", NULL) != 0)
    return -1;
  const cJSON *ref = cJSON_GetObjectItemCaseSensitive(j, "reference");
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "digest");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "time");
  if (!cJSON_IsString(ref) || !cJSON_IsString(d) || !fpull_digest_valid(d->valuestring))
    return -1;
  *reference = fp_xstrdup(ref->valuestring);
  *digest = fp_xstrdup(d->valuestring);
  if (when)
    *when = cJSON_IsNumber(t) ? t->valuedouble : 0;
  return 0;
}

/* One record file, under the trust rule: 0 with *digest and *when, FPULL_ENOTFOUND when it
 * is not there or not trusted (with a warning), or another error. */
static int read_record(fpull_cache *c, const char *name, const char *reference, char **digest,
                       double *when, fpull_err *err)
{
  *digest = NULL;
  struct stat st;
  cleanup_close int fd = fp_trust_open_file(c->tags_fd, name, O_RDONLY, 0, &st);
  if (fd < 0 && errno == ENOENT)
    return fpull_err_set(err, FPULL_ENOTFOUND,
                         "%s: not in the cache %s (no earlier pull recorded it)", reference,
                         c->dir);
  if (fd < 0 && (errno == ELOOP || errno == EINVAL)) {
    fp_warn("cache %s: the tag record for %s is not a regular file; ignored", c->dir, reference);
    return fpull_err_set(err, FPULL_ENOTFOUND, "%s: no trusted tag record in the cache %s",
                         reference, c->dir);
  }
  if (fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: tag record for %s: %s", c->dir, reference,
                         strerror(errno));
  /* A record says which content a name means: only one the caller or root wrote and nobody
   * else can change counts (another user of a shared cache could name anything). */
  if (!fp_trust_file_is_safe(&st)) {
    char why[64];
    fp_warn("cache %s: ignoring the tag record for %s: %s", c->dir, reference,
            fp_trust_file_why(&st, why, sizeof why));
    return fpull_err_set(err, FPULL_ENOTFOUND, "%s: no trusted tag record in the cache %s",
                         reference, c->dir);
  }
  struct fp_buf b = {.max = FP_TAG_RECORD_MAX};
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || fp_buf_append(&b, chunk, (size_t)n) < 0) {
      if (n == 0)
        break;
      fp_buf_free(&b);
      return fpull_err_set(err, FPULL_EFAIL, "cache %s: tag record for %s unreadable", c->dir,
                           reference);
    }
  }
  cleanup_free char *ref = NULL;
  int r = fp_tag_record_parse(b.data ? b.data : "", b.len, &ref, digest, when);
  fp_buf_free(&b);
  if (r != 0 || strcmp(ref, reference) != 0) {
    free(*digest);
    *digest = NULL;
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: tag record for %s is corrupt", c->dir,
                         reference);
  }
  return 0;
}

static int tag_lookup_one(fpull_cache *c, const char *reference, char **digest, fpull_err *err)
{
  *digest = NULL;
  if (!reference || !*reference)
    return fpull_err_set(err, FPULL_ENOTFOUND, "cache: empty reference");
  if (c->tags_fd < 0)
    return fpull_err_set(err, FPULL_ENOTFOUND,
                         "%s: not in the cache %s (no earlier pull recorded it)", reference,
                         c->dir);
  /* The caller's own record, root's, and the one name older fpull used: the newest of those
   * trusted wins (the latest resolution by anyone whose word counts). */
  long uids[] = {(long)geteuid(), 0, -1};
  double best_when = 0;
  int rc = FPULL_ENOTFOUND;
  for (size_t i = 0; i < sizeof uids / sizeof *uids; i++) {
    if (i == 1 && uids[0] == 0)
      continue;
    cleanup_free char *name = record_name(reference, uids[i]);
    if (!name)
      return fpull_err_set(err, FPULL_EFAIL, "cache: sha256 unavailable");
    char *d = NULL;
    double when = 0;
    fpull_err e = {0};
    int r = read_record(c, name, reference, &d, &when, &e);
    if (r == 0 && (!*digest || when > best_when)) {
      free(*digest);
      *digest = d;
      best_when = when;
      rc = 0;
      continue;
    }
    free(d);
    if (r == 0)
      continue;
    /* What is wrong with the first name stands when nothing is found; a real error (a
     * corrupt record of a trusted writer) at once. */
    if (r != FPULL_ENOTFOUND) {
      free(*digest);
      *digest = NULL;
      if (err)
        *err = e;
      return r;
    }
    if (err && rc != 0 && (i == 0 || strstr(e.msg, "no trusted")))
      *err = e;
  }
  if (rc != 0)
    return rc;
  /* Records count only in a tags/ of a cache root where nobody else can rename them, or
   * tags/ itself, away and back: an old record of root's put back after root wrote a newer
   * one is still root's, with one link and the right reference (issue 20.5). */
  struct stat dir = {0};
  const char *where = NULL;
  if (fstat(c->root_fd, &dir) < 0 || !fp_trust_dir_is_safe(&dir))
    where = "the cache root";
  else if (fstat(c->tags_fd, &dir) < 0 || !fp_trust_dir_is_safe(&dir))
    where = "tags/";
  if (where) {
    char why[96];
    fp_warn("cache %s: ignoring the tag records for %s: %s is %s", c->dir, reference, where,
            fp_trust_dir_why(&dir, why, sizeof why));
    free(*digest);
    *digest = NULL;
    return fpull_err_set(err, FPULL_ENOTFOUND, "%s: no trusted tag record in the cache %s",
                         reference, c->dir);
  }
  fpull_err_clear(err);
  return 0;
}

int fpull_cache_tag_lookup(fpull_cache *c, const char *reference, char **digest, fpull_err *err)
{
  /* The own cache's record first (the user's latest resolution), then the shared caches'
   * in order, each under the same trust rule. */
  int rc = tag_lookup_one(c, reference, digest, err);
  for (size_t i = 0; rc != 0 && i < c->n_shared; i++) {
    fpull_err e = {0};
    if (tag_lookup_one(c->shared[i], reference, digest, &e) == 0) {
      fpull_err_clear(err);
      return 0;
    }
  }
  return rc;
}
