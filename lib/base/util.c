#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

void *fp_xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (!p)
    abort();
  return p;
}

void *fp_xcalloc(size_t n, size_t m)
{
  void *p = calloc(n ? n : 1, m ? m : 1);
  if (!p)
    abort();
  return p;
}

void *fp_xrealloc(void *p, size_t n)
{
  p = realloc(p, n ? n : 1);
  if (!p)
    abort();
  return p;
}

char *fp_xstrdup(const char *s)
{
  if (!s)
    return NULL;
  char *d = strdup(s);
  if (!d)
    abort();
  return d;
}

char *fp_xstrndup(const char *s, size_t n)
{
  char *d = strndup(s, n);
  if (!d)
    abort();
  return d;
}

char *fp_xasprintf(const char *fmt, ...)
{
  va_list ap;
  char *s = NULL;
  va_start(ap, fmt);
  int r = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (r < 0)
    abort();
  return s;
}

char *fp_xstrdup_lower(const char *s)
{
  char *d = fp_xstrdup(s);
  for (char *p = d; p && *p; p++)
    *p = (char)tolower((unsigned char)*p);
  return d;
}

void fpull_strv_free(char **v)
{
  if (!v)
    return;
  for (char **p = v; *p; p++)
    free(*p);
  free(v);
}

size_t fpull_strv_len(char *const *v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

char **fp_strv_push(char **v, const char *s)
{
  size_t n = fpull_strv_len(v);
  v = fp_xrealloc(v, (n + 2) * sizeof *v);
  v[n] = fp_xstrdup(s);
  v[n + 1] = NULL;
  return v;
}

int fp_strv_contains(char *const *v, const char *s)
{
  for (size_t i = 0; v && v[i]; i++)
    if (strcmp(v[i], s) == 0)
      return 1;
  return 0;
}

char **fp_strv_dup(char *const *v)
{
  if (!v)
    return NULL;
  char **d = fp_xcalloc(fpull_strv_len(v) + 1, sizeof *d);
  for (size_t i = 0; v[i]; i++)
    d[i] = fp_xstrdup(v[i]);
  return d;
}

int fp_buf_append(struct fp_buf *b, const void *p, size_t n)
{
  if (b->max && (b->len + n > b->max || b->len + n < b->len))
    return -1;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1)
      cap *= 2;
    b->data = fp_xrealloc(b->data, cap);
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

void fp_buf_free(struct fp_buf *b)
{
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

int fp_read_file(const char *path, size_t max, char **data, size_t *len)
{
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  return fp_read_fd(fd, max, data, len);
}

int fp_read_fd(int fd, size_t max, char **data, size_t *len)
{
  struct fp_buf b = {.max = max};
  char chunk[65536];
  for (;;) {
    ssize_t r = read(fd, chunk, sizeof chunk);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      fp_buf_free(&b);
      return -1;
    }
    if (r == 0)
      break;
    if (fp_buf_append(&b, chunk, (size_t)r) < 0) {
      fp_buf_free(&b);
      errno = EFBIG;
      return -1;
    }
  }
  if (!b.data)
    b.data = fp_xcalloc(1, 1);
  *data = b.data;
  *len = b.len;
  return 0;
}

void fp_digest_format_len(char *out, const unsigned char *md, size_t len)
{
  static const char hex[] = "0123456789abcdef";
  memcpy(out, len == 64 ? "sha512:" : "sha256:", 7);
  for (size_t i = 0; i < len; i++) {
    out[7 + 2 * i] = hex[md[i] >> 4];
    out[8 + 2 * i] = hex[md[i] & 15];
  }
  out[7 + 2 * len] = '\0';
}

void fp_digest_format(char out[72], const unsigned char md[32])
{
  fp_digest_format_len(out, md, 32);
}

const char *fp_digest_hex(const char *digest)
{
  const char *c = strchr(digest, ':');
  return c ? c + 1 : digest;
}

int fp_mkdir_p(const char *path, unsigned mode)
{
  cleanup_free char *p = fp_xstrdup(path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/')
      continue;
    *s = '\0';
    if (mkdir(p, mode) < 0 && errno != EEXIST)
      return -1;
    *s = '/';
  }
  if (mkdir(p, mode) < 0 && errno != EEXIST)
    return -1;
  return 0;
}
