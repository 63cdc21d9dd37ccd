/* Internal helpers shared across lib/ (prefix fp_). Not installed. */
#ifndef FP_UTIL_H
#define FP_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fpull/error.h"
#include "fpull/log.h"

/* Cleanup attributes, as crun and bubblewrap use them. */
static inline void fp_freep(void *p)
{
  free(*(void **)p);
}
static inline void fp_closep(int *fd)
{
  if (*fd >= 0)
    close(*fd);
}
static inline void fp_fclosep(FILE **f)
{
  if (*f)
    fclose(*f);
}
static inline void fp_strvp(char ***v)
{
  extern void fpull_strv_free(char **v);
  fpull_strv_free(*v);
}
#define cleanup_free __attribute__((cleanup(fp_freep)))
#define cleanup_close __attribute__((cleanup(fp_closep)))
#define cleanup_fclose __attribute__((cleanup(fp_fclosep)))
#define cleanup_strv __attribute__((cleanup(fp_strvp)))

/* Hands ownership out of a cleanup variable. */
static inline void *fp_steal(void *pp)
{
  void **p = (void **)pp;
  void *v = *p;
  *p = NULL;
  return v;
}
#define steal_pointer(pp) fp_steal((void *)(pp))

/* Allocation that aborts on out-of-memory: a registry client has no sane way to go on. */
void *fp_xmalloc(size_t n);
void *fp_xcalloc(size_t n, size_t m);
void *fp_xrealloc(void *p, size_t n);
char *fp_xstrdup(const char *s); /* NULL stays NULL */
char *fp_xstrndup(const char *s, size_t n);
char *fp_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* NULL-terminated string vectors. */
char **fp_strv_push(char **v, const char *s); /* appends a copy; returns the new vector */
int fp_strv_contains(char *const *v, const char *s);
char **fp_strv_dup(char *const *v);

/* Growable byte buffer with a hard limit (every network body read is bounded). */
struct fp_buf {
  char *data;
  size_t len, cap, max;
};
/* Returns -1 when the limit would be exceeded. Keeps data NUL-terminated. */
int fp_buf_append(struct fp_buf *b, const void *p, size_t n);
void fp_buf_free(struct fp_buf *b);

/* Messages to the CLI's sink (see log.h). */
void fp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define fp_warn(...) fp_log(FPULL_LOG_WARN, __VA_ARGS__)
#define fp_info(...) fp_log(FPULL_LOG_INFO, __VA_ARGS__)
#define fp_debug(...) fp_log(FPULL_LOG_DEBUG, __VA_ARGS__)

/* Whole-file read with a size limit. Returns 0, or -1 with errno set (EFBIG over max). */
int fp_read_file(const char *path, size_t max, char **data, size_t *len);
/* The same from an open descriptor, read to its end. */
int fp_read_fd(int fd, size_t max, char **data, size_t *len);

/* "sha256:" + hex of a 32-byte digest into out (72 bytes). */
void fp_digest_format(char out[72], const unsigned char md[32]);
/* "sha256:HEX" for a 32-byte md, "sha512:HEX" for a 64-byte one; out holds 136 bytes. */
void fp_digest_format_len(char *out, const unsigned char *md, size_t len);
/* The encoded part of a digest (after its ':'), a file name in the cache. */
const char *fp_digest_hex(const char *digest);

/* Lower-case ASCII copy. */
char *fp_xstrdup_lower(const char *s);

/* mkdir -p with mode for new directories; 0 or -1 with errno. */
int fp_mkdir_p(const char *path, unsigned mode);

#endif
