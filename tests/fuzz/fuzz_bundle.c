/* libFuzzer target: the runtime-spec config.json generated from an image config (Env,
 * Entrypoint, Cmd, User, WorkingDir, Labels), with the User looked up in the image's
 * /etc/passwd and /etc/group. The input is up to three parts separated by lines "---": the
 * image config, the rootfs's /etc/passwd, its /etc/group (a missing part: no such file). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/json_strict.h"
#include "sinks/bundle.h"
#include "base/util.h"

static int rootfs_fd = -1;
static char dir[] = "/tmp/fpull-fuzz-bundle-XXXXXX";

static void cleanup(void)
{
  unlinkat(rootfs_fd, "etc/passwd", 0);
  unlinkat(rootfs_fd, "etc/group", 0);
  unlinkat(rootfs_fd, "etc", AT_REMOVEDIR);
  rmdir(dir);
}

static void setup(void)
{
  if (!mkdtemp(dir))
    abort();
  rootfs_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rootfs_fd < 0 || mkdirat(rootfs_fd, "etc", 0755) < 0)
    abort();
  atexit(cleanup);
}

static void put(const char *name, const char *p, size_t len, int present)
{
  unlinkat(rootfs_fd, name, 0);
  if (!present)
    return;
  int fd = openat(rootfs_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || (len && write(fd, p, len) != (ssize_t)len))
    abort();
  close(fd);
}

/* The runtime trusts config.json: only org.opencontainers.image.* annotations, and Env
 * entries that are NAME=VALUE, each NAME once. */
static void check(const cJSON *spec)
{
  static const char keep[] = "org.opencontainers.image.";
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(spec, "annotations");
  for (const cJSON *l = a ? a->child : NULL; l; l = l->next)
    if (strncmp(l->string, keep, sizeof keep - 1) != 0 || !cJSON_IsString(l))
      abort();
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(spec, "process");
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(p, "env");
  for (const cJSON *e = env ? env->child : NULL; e; e = e->next) {
    const char *eq = cJSON_IsString(e) ? strchr(e->valuestring, '=') : NULL;
    if (!eq || eq == e->valuestring)
      abort();
    size_t kl = (size_t)(eq - e->valuestring);
    for (const cJSON *o = e->next; o; o = o->next)
      if (cJSON_IsString(o) && strncmp(o->valuestring, e->valuestring, kl + 1) == 0)
        abort();
  }
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(p, "args");
  for (const cJSON *e = args ? args->child : NULL; e; e = e->next)
    if (!cJSON_IsString(e))
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (rootfs_fd < 0)
    setup();
  const char *part[3] = {(const char *)data, NULL, NULL}, *end = (const char *)data + size;
  size_t len[3] = {size, 0, 0};
  for (int i = 0; i < 2; i++) {
    const char *sep = memmem(part[i], len[i], "\n---\n", 5);
    if (!sep)
      break;
    part[i + 1] = sep + 5;
    len[i + 1] = (size_t)(end - part[i + 1]);
    len[i] = (size_t)(sep - part[i]);
  }
  put("etc/passwd", part[1], len[1], part[1] != NULL);
  put("etc/group", part[2], len[2], part[2] != NULL);
  for (int rootless = 0; rootless < 2; rootless++) {
    char *out = NULL;
    fpull_err err = {0};
    if (fp_bundle_spec(&out, part[0], len[0], rootfs_fd, rootless, &err) == 0) {
      /* What the runtime is given is JSON whatever the image said. */
      cJSON *j = cJSON_Parse(out);
      if (!out || !j)
        abort();
      check(j);
      cJSON_Delete(j);
      free(out);
    } else if (out || !err.msg[0]) {
      abort();
    }
  }
  return 0;
}
