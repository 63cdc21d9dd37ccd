/* The image's configuration as enroot's import writes it into a rootfs (sqfs_config.h),
 * byte for byte where enroot's own output is sound. Three departures, all where an image's
 * strings would otherwise escape their place in a file that enroot start reads or runs:
 *   - an Env entry holding a newline is left out (it would set a second variable); a value
 *     that looks quoted is quoted once more, since enroot start strips one pair of quotes;
 *   - WorkingDir goes inside double quotes with ", \, $ and ` escaped (enroot pastes it in
 *     as it is), and Label keys and values have every control character made a space
 *     (enroot only replaces newlines in values);
 *   - a Volume that is not an absolute path of plain characters is left out (enroot writes
 *     any key into its fstab line).
 * Entrypoint and Cmd are single-quoted word by word, as bash's ${x@Q} quotes them. */
#include <stdlib.h>
#include <string.h>

#include "registry/json_strict.h"
#include "sqfs_config.h"
#include "unpack/inroot.h"
#include "fpull/ref.h"

enum { ENVIRONMENT, RC, RC_LOCAL, FSTAB };

static const char *const paths[FP_SQFS_CONFIG_FILES] = {"etc/environment", "etc/rc", "etc/rc.local",
                                                        "etc/fstab"};

static const cJSON *member(const cJSON *o, const char *key)
{
  return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* v when it is an array (an object), else NULL: what cJSON_ArrayForEach walks. */
static const cJSON *array_of(const cJSON *v)
{
  return cJSON_IsArray(v) ? v : NULL;
}

static const cJSON *object_of(const cJSON *v)
{
  return cJSON_IsObject(v) ? v : NULL;
}

static void put(struct fp_buf *b, const char *s)
{
  fp_buf_append(b, s, strlen(s));
}

static int blank(char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* enroot start strips one pair of quotes around a value, blanks after the closing one
 * allowed (common::envfmt): such a value is written inside one more pair. */
static int looks_quoted(const char *v)
{
  size_t n = strlen(v);
  while (n && blank(v[n - 1]))
    n--;
  return n >= 2 && (v[0] == '"' || v[0] == '\'') && (v[n - 1] == '"' || v[n - 1] == '\'');
}

static void environment(struct fp_sqfs_config *c, const cJSON *env)
{
  struct fp_buf *b = &c->files[ENVIRONMENT].data;
  const cJSON *e;
  cJSON_ArrayForEach(e, array_of(env))
  {
    const char *kv = cJSON_GetStringValue(e);
    if (!kv)
      continue;
    if (strchr(kv, '\n')) {
      c->dropped++;
      continue;
    }
    const char *eq = strchr(kv, '=');
    if (eq && looks_quoted(eq + 1)) {
      fp_buf_append(b, kv, (size_t)(eq + 1 - kv));
      put(b, "\"");
      put(b, eq + 1);
      put(b, "\"");
    } else {
      put(b, kv);
    }
    put(b, "\n");
  }
}

static void sh_single(struct fp_buf *b, const char *s)
{
  put(b, "'");
  for (const char *p = s; *p; p++)
    fp_buf_append(b, *p == '\'' ? "'\\''" : p, *p == '\'' ? 4 : 1);
  put(b, "'");
}

static void sh_double(struct fp_buf *b, const char *s)
{
  put(b, "\"");
  for (const char *p = s; *p; p++) {
    if (strchr("\"\\$`", *p))
      put(b, "\\");
    fp_buf_append(b, p, 1);
  }
  put(b, "\"");
}

/* Each string of list, single-quoted, joined by spaces. */
static void sh_words(struct fp_buf *b, const cJSON *list)
{
  int first = 1;
  const cJSON *e;
  cJSON_ArrayForEach(e, array_of(list))
  {
    if (!cJSON_IsString(e))
      continue;
    if (!first)
      put(b, " ");
    sh_single(b, e->valuestring);
    first = 0;
  }
}

static int has_strings(const cJSON *list)
{
  const cJSON *e;
  cJSON_ArrayForEach(e, array_of(list))
  {
    if (cJSON_IsString(e))
      return 1;
  }
  return 0;
}

/* A comment line: control characters would end it early. */
static void comment_text(struct fp_buf *b, const char *s)
{
  for (const char *p = s; *p; p++)
    fp_buf_append(b, (unsigned char)*p < 0x20 || *p == 0x7f ? " " : p, 1);
}

static void rc_script(struct fp_sqfs_config *c, const cJSON *ic, const char *source)
{
  struct fp_buf *b = &c->files[RC].data;
  put(b, "# enroot-provenance: ");
  put(b, source ? source : "");
  put(b, "\n");
  const cJSON *l;
  cJSON_ArrayForEach(l, object_of(member(ic, "Labels")))
  {
    if (!cJSON_IsString(l))
      continue;
    put(b, "# ");
    comment_text(b, l->string);
    put(b, " ");
    comment_text(b, l->valuestring);
    put(b, "\n");
  }
  put(b, "\n");
  const char *wd = cJSON_GetStringValue(member(ic, "WorkingDir"));
  if (!wd || !*wd)
    wd = "/";
  const cJSON *entry = member(ic, "Entrypoint"), *cmd = member(ic, "Cmd");
  put(b, "mkdir -p ");
  sh_double(b, wd);
  put(b, " 2> /dev/null\ncd ");
  sh_double(b, wd);
  put(b, " && unset OLDPWD || exit 1\n\n"
         "if [ -s /etc/rc.local ]; then\n"
         "    . /etc/rc.local\n"
         "fi\n\n"
         "if [ $# -gt 0 ]; then\n"
         "    exec ");
  sh_words(b, entry);
  put(b, " \"$@\"\nelse\n    exec ");
  sh_words(b, entry);
  put(b, " ");
  /* enroot's default when the image names no command at all. */
  if (!has_strings(entry) && !has_strings(cmd))
    sh_single(b, "/bin/sh");
  else
    sh_words(b, cmd);
  put(b, "\nfi\n");
  char clean[FP_PATH_MAX + 1];
  const char *why;
  if (fp_path_clean(wd, clean, &why) == 0 && clean[0])
    c->workdir = fp_xstrdup(clean);
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* enroot start substitutes ${VAR} in its fstab and splits fields at blanks: a Volume is kept
 * only as an absolute path of characters that mean nothing there. */
static int plain_volume(const char *v)
{
  if (v[0] != '/')
    return 0;
  for (const char *p = v; *p; p++)
    if ((unsigned char)*p <= 0x20 || *p == 0x7f || strchr("$\\#", *p))
      return 0;
  return 1;
}

static void fstab(struct fp_sqfs_config *c, const cJSON *vols)
{
  size_t n = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, object_of(vols)) n++;
  cleanup_free const char **keys = fp_xcalloc(n ? n : 1, sizeof *keys);
  size_t k = 0;
  cJSON_ArrayForEach(v, object_of(vols))
  {
    if (plain_volume(v->string))
      keys[k++] = v->string;
    else
      c->dropped++;
  }
  /* jq's keys[], which enroot uses, sorts them. */
  qsort(keys, k, sizeof *keys, cmp_str);
  struct fp_buf *b = &c->files[FSTAB].data;
  for (size_t i = 0; i < k; i++) {
    put(b, "${ENROOT_ROOTFS}");
    put(b, keys[i]);
    put(b, " ");
    put(b, keys[i]);
    put(b, " none x-create=dir,bind,rw,nosuid,nodev\n");
  }
}

int fp_sqfs_config_make(struct fp_sqfs_config *out, const char *json, size_t len,
                        const char *source, fpull_err *err)
{
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < FP_SQFS_CONFIG_FILES; i++)
    out->files[i].path = paths[i];
  cleanup_json cJSON *cfg = NULL;
  int rc = fp_json_parse_strict(&cfg, json, len, len + 1, "image config", err);
  if (rc)
    return rc;
  const cJSON *ic = member(cfg, "config");
  environment(out, member(ic, "Env"));
  rc_script(out, ic, source);
  put(&out->files[RC_LOCAL].data,
      "# This file is sourced by /etc/rc when the container starts.\n"
      "# It can be used to manipulate the entrypoint or the command of the container.\n");
  fstab(out, member(ic, "Volumes"));
  return 0;
}

void fp_sqfs_config_free(struct fp_sqfs_config *c)
{
  for (size_t i = 0; i < FP_SQFS_CONFIG_FILES; i++)
    fp_buf_free(&c->files[i].data);
  free(c->workdir);
  c->workdir = NULL;
}

char *fp_sqfs_provenance(const char *reference, const char *digest)
{
  struct fpull_ref *ref = NULL;
  if (!reference || fpull_ref_parse(&ref, reference, NULL) != 0)
    return NULL;
  const char *d = digest ? digest : ref->digest;
  char *uri = fp_xasprintf("docker://%s#%s%s%s%s%s", ref->registry, ref->repository,
                           ref->tag ? ":" : "", ref->tag ? ref->tag : "", d ? "@" : "", d ? d : "");
  fpull_ref_free(ref);
  return uri;
}
