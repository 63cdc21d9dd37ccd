/* fpull Slurm plugin: enroot's /etc/environment and /etc/rc of a SquashFS image read back
 * (sqsh_config.h). enroot start reads the first with awk, sed and getline and runs the
 * second with sh; here both are parsed, never run, to the rules of those readers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqsh_config.h"
#include "unpack/inroot.h"
#include "base/util.h"

/* sed's [[:space:]], and sh's blanks between words. */
static int is_space(char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int is_blank(char c)
{
  return c == ' ' || c == '\t';
}

static int name_start(char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int name_char(char c)
{
  return name_start(c) || (c >= '0' && c <= '9');
}

static int check_text(const char *text, size_t len, fpull_err *err)
{
  if (len > FP_SLURM_SQSH_FILE_MAX)
    return fpull_err_set(err, FPULL_EUNSAFE, "over 256 KiB");
  const char *nul = memchr(text, '\0', len);
  if (nul)
    return fpull_err_set(err, FPULL_EUNSAFE, "not text (a NUL byte at offset %zu)",
                         (size_t)(nul - text));
  return 0;
}

static const char *line_end(const char *p, const char *end)
{
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  return nl ? nl : end;
}

/* ---- /etc/environment ---- */

static ssize_t env_find(char *const *env, const char *name, size_t nlen)
{
  for (size_t i = 0; env && env[i]; i++)
    if (strncmp(env[i], name, nlen) == 0 && env[i][nlen] == '=')
      return (ssize_t)i;
  return -1;
}

/* NAME=VALUE into *env, in place of an earlier NAME (enroot-switchroot's setenv). */
static void env_put(char ***env, const char *name, size_t nlen, const char *v, size_t vlen)
{
  char *kv = fp_xasprintf("%.*s=%.*s", (int)nlen, name, (int)vlen, v);
  ssize_t i = env_find(*env, name, nlen);
  if (i >= 0) {
    free((*env)[i]);
    (*env)[i] = kv;
    return;
  }
  *env = fp_strv_push(*env, kv);
  free(kv);
}

static void env_unset(char **env, const char *name, size_t nlen)
{
  ssize_t i = env_find(env, name, nlen);
  if (i < 0)
    return;
  free(env[i]);
  memmove(env + i, env + i + 1, (fpull_strv_len(env) - (size_t)i) * sizeof *env);
}

/* The first ${NAME} in s (n bytes), which common::envsubst replaces by the host's value. */
static const char *host_ref(const char *s, size_t n, size_t *rlen)
{
  for (const char *p = s; p + 3 < s + n; p++) {
    if (p[0] != '$' || p[1] != '{' || !name_start(p[2]))
      continue;
    const char *q = p + 3;
    while (q < s + n && name_char(*q))
      q++;
    if (q < s + n && *q == '}') {
      *rlen = (size_t)(q + 1 - p);
      return p;
    }
  }
  return NULL;
}

static void env_line(struct fp_slurm_sqsh_config *c, const char *p, const char *le)
{
  while (p < le && is_space(*p))
    p++;
  const char *name = p;
  if (p == le || !name_start(*p))
    return;
  while (p < le && name_char(*p))
    p++;
  if (p == le || *p != '=' || strncmp(name, "ENROOT_", 7) == 0)
    return;
  size_t nlen = (size_t)(p - name), vlen = (size_t)(le - p - 1), rlen;
  const char *v = p + 1;
  if (host_ref(v, vlen, &rlen)) {
    env_unset(c->env, name, nlen);
    /* NAME=${NAME} keeps the job's NAME, as not setting it here does. */
    int same = rlen == vlen && vlen == nlen + 3 && memcmp(v + 2, name, nlen) == 0;
    cleanup_free char *n = fp_xstrndup(name, nlen);
    if (!same && !fp_strv_contains(c->host_refs, n))
      c->host_refs = fp_strv_push(c->host_refs, n);
    return;
  }
  /* One pair of quotes, blanks after the closing one allowed (common::envfmt). */
  size_t e = vlen;
  while (e && is_space(v[e - 1]))
    e--;
  if (e >= 2 && (v[0] == '"' || v[0] == '\'') && (v[e - 1] == '"' || v[e - 1] == '\'')) {
    v++;
    vlen = e - 2;
  }
  env_put(&c->env, name, nlen, v, vlen);
}

int fp_slurm_sqsh_env_parse(struct fp_slurm_sqsh_config *c, const char *text, size_t len,
                            fpull_err *err)
{
  int rc = check_text(text, len, err);
  if (rc)
    return rc;
  for (const char *p = text, *end = text + len; p < end;) {
    const char *le = line_end(p, end);
    env_line(c, p, le);
    p = le + 1;
  }
  return 0;
}

/* ---- /etc/rc ---- */

struct lex {
  const char *text, *p, *end;
  fpull_err *err;
};

/* why, at the line of at; -1. */
static int fail(const struct lex *l, const char *at, const char *why)
{
  size_t line = 1;
  for (const char *p = l->text; p < at && p < l->end; p++)
    line += *p == '\n';
  fpull_err_set(l->err, FPULL_EUNSAFE, "line %zu: %s", line, why);
  return -1;
}

static int plain(char c)
{
  return name_char(c) || (c & 0x80) || (c && strchr("/.,:=+@%^-", c));
}

static int push_char(struct lex *l, struct fp_buf *w, char c)
{
  if (c == '\0')
    return fail(l, l->p, "a NUL character in a $'...' quote");
  fp_buf_append(w, &c, 1);
  return 0;
}

/* Up to max digits of base at l->p, as a number. */
static unsigned digits(struct lex *l, unsigned base, int max)
{
  unsigned v = 0;
  for (int i = 0; i < max && l->p < l->end; i++, l->p++) {
    char c = *l->p;
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                        : 99;
    if (d >= base)
      break;
    v = v * base + d;
  }
  return v;
}

/* The inside of $'...' (bash's quoting of strings with control characters, ${x@Q}). */
static int ansi_c(struct lex *l, struct fp_buf *w)
{
  static const char from[] = "abeEfnrtv\\'\"?", to[] = "\a\b\033\033\f\n\r\t\v\\'\"?";
  int rc = 0;
  while (rc == 0 && l->p < l->end && *l->p != '\'') {
    char c = *l->p++;
    if (c != '\\' || l->p == l->end) {
      rc = push_char(l, w, c);
      continue;
    }
    c = *l->p;
    const char *f = strchr(from, c);
    if (c && f) {
      l->p++;
      rc = push_char(l, w, to[f - from]);
    } else if (c == 'x') {
      const char *hex = ++l->p;
      unsigned v = digits(l, 16, 2);
      rc = l->p == hex ? push_char(l, w, '\\') || push_char(l, w, 'x') : push_char(l, w, (char)v);
    } else if (c >= '0' && c <= '7') {
      rc = push_char(l, w, (char)digits(l, 8, 3));
    } else {
      rc = push_char(l, w, '\\'); /* bash keeps what it does not know */
    }
  }
  if (rc)
    return -1;
  if (l->p == l->end)
    return fail(l, l->p, "a $'...' quote without its end");
  l->p++;
  return 0;
}

static int dquote(struct lex *l, struct fp_buf *w)
{
  const char *start = l->p - 1;
  while (l->p < l->end && *l->p != '"') {
    char c = *l->p++;
    if (c == '\\' && l->p < l->end && strchr("$`\"\\\n", *l->p)) {
      if (*l->p != '\n')
        fp_buf_append(w, l->p, 1);
      l->p++;
    } else if (c == '$' || c == '`') {
      return fail(l, l->p - 1, "a $ or ` expansion, which only a shell can do");
    } else {
      fp_buf_append(w, &c, 1);
    }
  }
  if (l->p == l->end)
    return fail(l, start, "a double quote without its end");
  l->p++;
  return 0;
}

/* One word of a statement into w (*marker: it is "$@"). 1 a word, 0 the statement's end
 * (a newline, left there, or the text's end), or an error. */
static int word(struct lex *l, struct fp_buf *w, int *marker)
{
  w->len = 0;
  fp_buf_append(w, "", 0);
  *marker = 0;
  for (;;) {
    while (l->p < l->end && is_blank(*l->p))
      l->p++;
    if (l->p + 1 < l->end && l->p[0] == '\\' && l->p[1] == '\n')
      l->p += 2;
    else
      break;
  }
  if (l->p < l->end && *l->p == '#')
    l->p = line_end(l->p, l->end);
  if (l->p == l->end || *l->p == '\n')
    return 0;
  if ((size_t)(l->end - l->p) >= 4 && memcmp(l->p, "\"$@\"", 4) == 0 &&
      (l->p + 4 == l->end || is_blank(l->p[4]) || l->p[4] == '\n')) {
    l->p += 4;
    *marker = 1;
    return 1;
  }
  while (l->p < l->end && !is_blank(*l->p) && *l->p != '\n') {
    const char *at = l->p;
    char c = *l->p++;
    int rc = 0;
    if (c == '\'') {
      const char *q = memchr(l->p, '\'', (size_t)(l->end - l->p));
      if (!q)
        return fail(l, at, "a single quote without its end");
      fp_buf_append(w, l->p, (size_t)(q - l->p));
      l->p = q + 1;
    } else if (c == '$' && l->p < l->end && *l->p == '\'') {
      l->p++;
      rc = ansi_c(l, w);
    } else if (c == '"') {
      rc = dquote(l, w);
    } else if (c == '\\') {
      if (l->p == l->end)
        return fail(l, at, "a backslash at the end");
      if (*l->p != '\n')
        fp_buf_append(w, l->p, 1);
      l->p++;
    } else if (plain(c)) {
      fp_buf_append(w, &c, 1);
    } else {
      return fail(l, at, "shell syntax that enroot does not write (only quoted words)");
    }
    if (rc)
      return -1;
  }
  return 1;
}

/* `cd DIR` and `mkdir -p DIR` after their keyword: DIR, then one of tails, the rest of its
 * line. */
static int dir_statement(struct lex *l, const char *const *tails, char **dir)
{
  struct fp_buf w = {0};
  int marker, r = word(l, &w, &marker);
  if (r == 0 || (r > 0 && marker))
    r = fail(l, l->p, "no directory where enroot writes one");
  if (r < 0) {
    fp_buf_free(&w);
    return -1;
  }
  r = 0;
  const char *le = line_end(l->p, l->end), *s = l->p, *e = le;
  while (s < e && is_blank(*s))
    s++;
  while (e > s && is_space(e[-1]))
    e--;
  int known = 0;
  for (size_t i = 0; r == 0 && tails[i]; i++)
    known |= strlen(tails[i]) == (size_t)(e - s) && memcmp(s, tails[i], (size_t)(e - s)) == 0;
  if (r == 0 && !known)
    r = fail(l, s, "not a line of enroot's command script");
  if (r == 0 && dir) {
    free(*dir);
    *dir = steal_pointer(&w.data);
  }
  fp_buf_free(&w);
  l->p = le;
  return r;
}

/* `exec WORDS ["$@"]` after its keyword. */
static int exec_statement(struct lex *l, int with_args, char ***words)
{
  struct fp_buf w = {0};
  int marker = 0, saw = 0, r;
  size_t n = 0;
  while ((r = word(l, &w, &marker)) > 0) {
    if (saw)
      r = fail(l, l->p, "words after \"$@\"");
    else if (marker && !with_args)
      r = fail(l, l->p, "\"$@\" where enroot execs the image's Cmd");
    else if (++n > FP_SLURM_SQSH_WORDS_MAX)
      r = fail(l, l->p, "too many words");
    if (r <= 0)
      break;
    saw = marker;
    if (!marker)
      *words = fp_strv_push(*words, w.data);
  }
  fp_buf_free(&w);
  if (r == 0 && with_args && !saw)
    r = fail(l, l->p, "an exec without \"$@\" where enroot passes the command");
  if (r == 0 && !*words)
    *words = fp_xcalloc(1, sizeof **words);
  return r < 0 ? -1 : r;
}

/* The line [s, e) with its blanks trimmed is want; or (prefix) starts with want and then a
 * blank. */
static int line_is(const char *s, const char *e, const char *want, int prefix)
{
  size_t n = strlen(want);
  if ((size_t)(e - s) < n || memcmp(s, want, n) != 0)
    return 0;
  return prefix ? (size_t)(e - s) > n && is_blank(s[n]) : (size_t)(e - s) == n;
}

/* Past the `if [ -s /etc/rc.local ]` block whose first line ends at le (its content differs
 * between enroot's versions: only its end matters). */
static int skip_block(struct lex *l, const char *le)
{
  const char *start = l->p;
  int depth = 1;
  for (const char *p = le; p < l->end && depth;) {
    const char *s = p + 1, *e = line_end(s, l->end);
    p = e;
    while (s < e && is_blank(*s))
      s++;
    while (e > s && is_space(e[-1]))
      e--;
    if (line_is(s, e, "if", 1) && e - s >= 4 && memcmp(e - 4, "then", 4) == 0)
      depth++;
    else if (line_is(s, e, "fi", 0))
      depth--;
    l->p = p;
  }
  return depth ? fail(l, start, "an if without its fi") : 0;
}

enum rc_state { HEAD, BODY, EXEC_ARGS, ELSE, EXEC_CMD, FI, DONE };

static const char *const cd_tails[] = {"&& unset OLDPWD || exit 1", "|| exit 1", NULL};
static const char *const mkdir_tails[] = {"2> /dev/null", NULL};

struct rc_parse {
  enum rc_state st;
  char *workdir, *provenance;
  char **entrypoint, **full;
};

/* One statement or line, starting at l->p (its first non-blank at s, its trimmed end e, its
 * line's end le). */
static int rc_line(struct lex *l, struct rc_parse *ps, const char *s, const char *e, const char *le)
{
  static const char prov[] = "# enroot-provenance: ";
  if (s == e || *s == '#') {
    if (ps->st == HEAD && !ps->provenance && (size_t)(e - s) >= sizeof prov - 1 &&
        memcmp(s, prov, sizeof prov - 1) == 0)
      ps->provenance = fp_xstrndup(s + sizeof prov - 1, (size_t)(e - s) - (sizeof prov - 1));
    l->p = le;
    return 0;
  }
  switch (ps->st) {
  case HEAD:
    /* The Labels' comments come first: old enroot versions let a label's later lines out
     * of their comment, so lines before the cd line are passed over. */
    if (line_is(s, e, "mkdir -p", 1)) {
      l->p = s + 8;
      return dir_statement(l, mkdir_tails, NULL);
    }
    if (line_is(s, e, "cd", 1)) {
      l->p = s + 2;
      ps->st = BODY;
      return dir_statement(l, cd_tails, &ps->workdir);
    }
    l->p = le;
    return 0;
  case BODY:
    if (line_is(s, e, "if [ -s /etc/rc.local ]; then", 0))
      return skip_block(l, le);
    if (!line_is(s, e, "if [ $# -gt 0 ]; then", 0))
      break;
    ps->st = EXEC_ARGS;
    l->p = le;
    return 0;
  case EXEC_ARGS:
  case EXEC_CMD:
    if (!line_is(s, e, "exec", 1))
      break;
    l->p = s + 4;
    ps->st = ps->st == EXEC_ARGS ? ELSE : FI;
    return exec_statement(l, ps->st == ELSE, ps->st == ELSE ? &ps->entrypoint : &ps->full);
  case ELSE:
  case FI:
    if (!line_is(s, e, ps->st == ELSE ? "else" : "fi", 0))
      break;
    ps->st = ps->st == ELSE ? EXEC_CMD : DONE;
    l->p = le;
    return 0;
  case DONE:
    return fail(l, s, "more after the end of enroot's command script");
  }
  return fail(l, s, "not a line of enroot's command script");
}

static void rc_parse_free(struct rc_parse *ps)
{
  free(ps->workdir);
  free(ps->provenance);
  fpull_strv_free(ps->entrypoint);
  fpull_strv_free(ps->full);
}

int fp_slurm_sqsh_rc_parse(struct fp_slurm_sqsh_config *c, const char *text, size_t len,
                           fpull_err *err)
{
  int rc = check_text(text, len, err);
  if (rc)
    return rc;
  struct lex l = {text, text, text + len, err};
  struct rc_parse ps = {HEAD, NULL, NULL, NULL, NULL};
  while (rc == 0 && l.p < l.end) {
    const char *le = line_end(l.p, l.end), *s = l.p, *e = le;
    while (s < e && is_blank(*s))
      s++;
    while (e > s && is_space(e[-1]))
      e--;
    rc = rc_line(&l, &ps, s, e, le);
    if (l.p < l.end)
      l.p++; /* the newline */
  }
  size_t ne = fpull_strv_len(ps.entrypoint);
  int same = fpull_strv_len(ps.full) >= ne;
  for (size_t i = 0; same && i < ne; i++)
    same = strcmp(ps.full[i], ps.entrypoint[i]) == 0;
  if (rc == 0 && ps.st != DONE)
    rc = fail(&l, l.end,
              ps.st == HEAD ? "no `cd DIR` line: not enroot's command script"
                            : "the end comes before that of enroot's command script");
  else if (rc == 0 && !same)
    rc = fail(&l, l.end, "its two exec lines name different Entrypoints");
  if (rc) {
    rc_parse_free(&ps);
    return FPULL_EUNSAFE;
  }
  free(c->workdir);
  const char *wd = ps.workdir;
  c->workdir = fp_xasprintf("%s%s", wd[0] == '/' ? "" : "/", wd);
  fpull_strv_free(c->entrypoint);
  c->entrypoint = steal_pointer(&ps.entrypoint);
  fpull_strv_free(c->cmd);
  c->cmd = fp_strv_dup(ps.full + ne);
  free(c->provenance);
  c->provenance = steal_pointer(&ps.provenance);
  c->has_rc = 1;
  rc_parse_free(&ps);
  return 0;
}

/* ---- reading them inside the image ---- */

_Static_assert(FP_SLURM_SQSH_FILE_MAX == 256u << 10, "the messages below say 256 KiB");

static int read_fail(fpull_err *err, const char *why)
{
  fpull_err_set(err, FPULL_EUNSAFE, "%s", why);
  return -1;
}

/* path below the root rootfs_fd into *data: 1, 0 when there is no such file, or -1. */
static int read_in_root(int rootfs_fd, const char *path, char **data, size_t *len, fpull_err *err)
{
  struct fp_root r;
  fp_root_init(&r, rootfs_fd, 0);
  cleanup_close int pfd = fp_inroot_open(&r, path, 0);
  struct stat st;
  if (pfd < 0) {
    int e = errno;
    char target[256];
    cleanup_close int link = fp_inroot_open(&r, path, 1);
    ssize_t n = link >= 0 ? readlinkat(link, "", target, sizeof target - 1) : -1;
    if (n >= 0) {
      target[n] = '\0';
      for (char *p = target; *p; p++)
        *p = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
      fpull_err_set(err, FPULL_EUNSAFE, "a symbolic link to %s, which is nothing in the image: %s",
                    target, strerror(e));
      return -1;
    }
    return e == ENOENT || e == ENOTDIR ? 0 : read_fail(err, strerror(e));
  }
  if (fstat(pfd, &st) < 0)
    return read_fail(err, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return read_fail(err, "not a regular file");
  if ((uint64_t)st.st_size > FP_SLURM_SQSH_FILE_MAX)
    return read_fail(err, "over 256 KiB");
  /* Opened by the descriptor the lookup inside the root gave, never by its path again;
   * a regular file: the read cannot block. */
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
  cleanup_close int fd = open(proc, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 || fp_read_fd(fd, FP_SLURM_SQSH_FILE_MAX, data, len) != 0)
    return read_fail(err, errno == EFBIG ? "over 256 KiB" : strerror(errno));
  return 1;
}

void fp_slurm_sqsh_config_read(struct fp_slurm_sqsh_config *c, int rootfs_fd, fpull_err *env_err,
                               fpull_err *rc_err)
{
  static const char *const paths[] = {"etc/environment", "etc/rc"};
  fpull_err *errs[] = {env_err, rc_err};
  memset(c, 0, sizeof *c);
  for (size_t i = 0; i < 2 && rootfs_fd >= 0; i++) {
    cleanup_free char *data = NULL;
    size_t len = 0;
    int r = read_in_root(rootfs_fd, paths[i], &data, &len, errs[i]);
    if (r == 1)
      r = (i == 0 ? fp_slurm_sqsh_env_parse(c, data, len, errs[i])
                  : fp_slurm_sqsh_rc_parse(c, data, len, errs[i])) != 0
              ? -1
              : 0;
    if (r < 0)
      fpull_err_prefix(errs[i], "/%s", paths[i]);
  }
}

void fp_slurm_sqsh_config_free(struct fp_slurm_sqsh_config *c)
{
  fpull_strv_free(c->env);
  fpull_strv_free(c->host_refs);
  free(c->workdir);
  fpull_strv_free(c->entrypoint);
  fpull_strv_free(c->cmd);
  free(c->provenance);
  memset(c, 0, sizeof *c);
}

int fp_slurm_sqsh_platform_read(struct fp_sqfs_platform *rec, int rootfs_fd, fpull_err *err)
{
  memset(rec, 0, sizeof *rec);
  cleanup_free char *data = NULL;
  size_t len = 0;
  fpull_err e = {0};
  int rc = rootfs_fd >= 0 ? read_in_root(rootfs_fd, FP_SQFS_PLATFORM_PATH, &data, &len, &e) : 0;
  if (rc == 1 && len > FP_SQFS_PLATFORM_MAX)
    rc = read_fail(&e, "over 64 KiB");
  if (rc < 0)
    return fpull_err_set(err, FPULL_EUNSAFE, "/%s: %s", FP_SQFS_PLATFORM_PATH, e.msg), -1;
  /* The parser's messages name the file already. */
  if (rc == 1 && fp_sqfs_platform_parse(rec, data, len, &e) != 0)
    return fpull_err_set(err, FPULL_EUNSAFE, "/%s", e.msg), -1;
  return rc;
}
