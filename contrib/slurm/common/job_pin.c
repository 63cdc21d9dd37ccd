/* fpull Slurm plugin: one resolution per job (see job_pin.h). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fpull/ref.h>

#include "job_pin.h"
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

/* "sha256:HEX" of the bytes in b into d, by coreutils' sha256sum over a file of our own
 * (OpenSSL's digests are not at hand in every process that loads the plugin: salloc's
 * failed them); d stays "" when it cannot. */
static void sha256_of(const struct fp_buf *b, char *d, size_t len)
{
  char sum[PATH_MAX];
  const char *tmp = getenv("TMPDIR");
  cleanup_free char *path = fp_xasprintf("%s/fpull-pin-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
  int fd = fp_slurm_find_program("sha256sum", sum, sizeof sum) ? mkstemp(path) : -1;
  if (fd < 0)
    return;
  int ok = write(fd, b->data, b->len) == (ssize_t)b->len;
  close(fd);
  const char *argv[] = {sum, "--", path, NULL};
  struct fp_buf out = {0};
  if (ok && fp_slurm_run_to((char *const *)argv, environ, &out, 1, NULL, NULL) == 0 &&
      out.len >= 64 && strspn(out.data, "0123456789abcdef") == 64)
    snprintf(d, len, "sha256:%.64s", out.data);
  fp_buf_free(&out);
  unlink(path);
}

int fp_slurm_pin_resolve(const struct fp_slurm_settings *s, const char *image, char *digest,
                         size_t len)
{
  char timeout[PATH_MAX], secs[16];
  if (!fp_slurm_find_program("timeout", timeout, sizeof timeout))
    return FPULL_EFAIL;
  snprintf(secs, sizeof secs, "%d", s->check_timeout ? s->check_timeout : 3600);
  /* The tag's document as the registry serves it (fpull manifest inspect: verified, not
   * cached): one request, no blob, and the user's cache untouched, so that the tag's
   * record there stays what the nodes last ran, the image a node falls back on when the
   * registry fails it. Its digest is the index's (or the single manifest's). */
  const char *argv[16];
  size_t n = 0;
  argv[n++] = timeout;
  argv[n++] = "-k";
  argv[n++] = "1";
  argv[n++] = secs;
  argv[n++] = s->fpull;
  argv[n++] = "manifest";
  argv[n++] = "inspect";
  if (s->config) {
    argv[n++] = "--config";
    argv[n++] = s->config;
  }
  argv[n++] = "--";
  argv[n++] = image;
  argv[n] = NULL;
  struct fp_buf out = {0};
  int rc = fp_slurm_run_to((char *const *)argv, environ, &out, 1, NULL, NULL);
  char d[80] = "";
  if (rc == 0 && out.len)
    sha256_of(&out, d, sizeof d);
  if (rc == 0 && fpull_digest_valid(d) && strlen(d) < len)
    snprintf(digest, len, "%s", d);
  else if (rc == 0)
    rc = FPULL_EFAIL;
  else if (rc == 124 || rc == 128 + 9) /* timeout(1): the deadline passed */
    rc = -1;
  fp_buf_free(&out);
  return rc;
}
