/* fpull Slurm plugin: one resolution per job (see job_pin.h). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <fpull/ref.h>

#include "job_pin.h"
#include "unpack/inroot.h"
#include "run.h"

extern char **environ;

int fp_slurm_pin_wanted(const char *image)
{
  return image && image[0] && image[0] != '/' && !strchr(image, '@') &&
         !fp_slurm_is_sqsh_name(image) && !fp_slurm_image_is_none(image) &&
         !strpbrk(image, " \t\n");
}

int fp_slurm_pin_find(const char *pins, const char *image, char *digest, size_t len)
{
  size_t n = strlen(image);
  for (const char *p = pins; p && *p;) {
    p += strspn(p, " ");
    size_t w = strcspn(p, " ");
    if (w > n + 1 && strncmp(p, image, n) == 0 && p[n] == '@' && w - n - 1 < len) {
      snprintf(digest, len, "%.*s", (int)(w - n - 1), p + n + 1);
      if (fpull_digest_valid(digest) || strcmp(digest, FP_SLURM_PIN_UNANSWERED) == 0)
        return 1;
    }
    p += w;
  }
  return 0;
}

char *fp_slurm_pin_set(const char *pins, const char *image, const char *digest)
{
  struct fp_buf b = {0};
  size_t n = strlen(image);
  for (const char *p = pins; p && *p;) {
    p += strspn(p, " ");
    size_t w = strcspn(p, " ");
    if (w && !(w > n && strncmp(p, image, n) == 0 && p[n] == '@')) {
      fp_buf_append(&b, p, w);
      fp_buf_append(&b, " ", 1);
    }
    p += w;
  }
  if (digest) {
    fp_buf_append(&b, image, n);
    fp_buf_append(&b, "@", 1);
    fp_buf_append(&b, digest, strlen(digest));
  } else if (b.len) {
    b.len--; /* the last blank */
  }
  fp_buf_append(&b, "", 1);
  return b.data;
}

int fp_slurm_pin_resolve(const struct fp_slurm_settings *s, const char *image, char *digest,
                         size_t len)
{
  char timeout[PATH_MAX], secs[16];
  if (!fp_slurm_find_program("timeout", timeout, sizeof timeout))
    return FPULL_EFAIL;
  snprintf(secs, sizeof secs, "%d", s->check_timeout ? s->check_timeout : 3600);
  const char *argv[24];
  size_t n = 0;
  argv[n++] = timeout;
  argv[n++] = "-k";
  argv[n++] = "1";
  argv[n++] = secs;
  argv[n++] = s->fpull;
  argv[n++] = "digest";
  argv[n++] = "--index";
  argv[n++] = "--json";
  if (s->config) {
    argv[n++] = "--config";
    argv[n++] = s->config;
  }
  /* A cache of its own, gone after: the tag's record in the user's cache stays what the
   * nodes last ran, the image a node falls back on when the registry fails it. */
  const char *tmp = getenv("TMPDIR");
  cleanup_free char *cache = fp_xasprintf("%s/fpull-pin-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(cache))
    return FPULL_EFAIL;
  argv[n++] = "--cache-dir";
  argv[n++] = cache;
  argv[n++] = "--";
  argv[n++] = image;
  argv[n] = NULL;
  /* The user's own cache read beside it (what the user pulled before: a single
   * manifest's config is not fetched again for the check). */
  char own[PATH_MAX] = "";
  const char *fc = getenv("FPULL_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (fc && *fc)
    snprintf(own, sizeof own, "%s", fc);
  else if (s->shared_cache)
    snprintf(own, sizeof own, "%s/%u", s->shared_cache, (unsigned)getuid());
  else if (xdg && *xdg == '/')
    snprintf(own, sizeof own, "%s/fpull", xdg);
  else if (home && *home == '/')
    snprintf(own, sizeof own, "%s/.cache/fpull", home);
  const char *shared = getenv("FPULL_SHARED_CACHES");
  cleanup_free char *caches =
      fp_xasprintf("FPULL_SHARED_CACHES=%s%s%s", own, shared && *shared ? ":" : "",
                   shared && *shared ? shared : "");
  cleanup_strv char **envp = NULL;
  for (char **e = environ; e && *e; e++)
    if (strncmp(*e, "FPULL_SHARED_CACHES=", 20) != 0)
      envp = fp_strv_push(envp, *e);
  /* A user without a cache of their own (no home to write: the nodes keep one per job)
   * is not pinned: the check would fetch what no cache keeps, at every submit. */
  if (!own[0] || access(own, R_OK | X_OK) != 0) {
    fp_rm_rf_at(AT_FDCWD, cache);
    return FPULL_EFAIL;
  }
  envp = fp_strv_push(envp, caches);
  struct fp_buf out = {0};
  int rc = fp_slurm_run_to((char *const *)argv, envp, &out, 1, NULL, NULL);
  cJSON *j = rc == 0 ? cJSON_ParseWithLength(out.data ? out.data : "", out.len) : NULL;
  const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(j, "digest"));
  if (rc == 0 && d && fpull_digest_valid(d) && strlen(d) < len)
    snprintf(digest, len, "%s", d);
  else if (rc == 0)
    rc = FPULL_EFAIL;
  else if (rc == 124 || rc == 128 + 9) /* timeout(1): the deadline passed */
    rc = -1;
  cleanup_close int tfd = open(tmp && *tmp ? tmp : "/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (tfd >= 0)
    fp_rm_rf_at(tfd, strrchr(cache, '/') + 1);
  cJSON_Delete(j);
  fp_buf_free(&out);
  return rc;
}
