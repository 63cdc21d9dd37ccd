/* AMD GPU detection from the KFD topology the amdgpu kernel driver publishes in sysfs:
 * no ROCm library is needed, so the same binary works on every node. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpull/detect.h"
#include "base/util.h"

/* 90010 -> "gfx90a", 90402 -> "gfx942", 110000 -> "gfx1100": LLVM writes the minor and the
 * stepping as one hex digit each. NULL when the value cannot be such a target. */
static char *target_name(unsigned long v)
{
  unsigned long major = v / 10000, minor = (v / 100) % 100, stepping = v % 100;
  if (major == 0 || minor > 15 || stepping > 15)
    return NULL;
  return fp_xasprintf("gfx%lu%lx%lx", major, minor, stepping);
}

/* The gfx_target_version line of a properties file; -1 when it has none. */
static long gfx_version(const char *text)
{
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, "gfx_target_version ", 19) != 0)
      continue;
    char *end;
    errno = 0;
    unsigned long v = strtoul(p + 19, &end, 10);
    if (errno || end == p + 19 || (*end && *end != '\n') || v > 999999)
      return -1;
    return (long)v;
  }
  return -1;
}

static int name_cmp(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int fpull_detect_amdgpu(struct fpull_amdgpu_info **out, fpull_err *err)
{
  (void)err;
  struct fpull_amdgpu_info *ai = fp_xcalloc(1, sizeof *ai);
  ai->targets = fp_xcalloc(1, sizeof *ai->targets);
  *out = ai;
  const char *root = getenv("FPULL_SYSFS_ROOT");
  cleanup_free char *dir =
      fp_xasprintf("%s/class/kfd/kfd/topology/nodes", root && *root ? root : "/sys");
  DIR *d = opendir(dir);
  if (!d) {
    ai->reason = fp_xasprintf("no KFD topology (%s: %s)", dir, strerror(errno));
    return 0;
  }
  /* Node directories in a stable order, so the first differing pair named is always the
   * same. */
  char **nodes = fp_xcalloc(1, sizeof *nodes);
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.' && strspn(e->d_name, "0123456789") == strlen(e->d_name))
      nodes = fp_strv_push(nodes, e->d_name);
  closedir(d);
  size_t n = fpull_strv_len(nodes);
  qsort(nodes, n, sizeof *nodes, name_cmp);

  char *common = NULL;
  int differ = 0;
  for (size_t i = 0; i < n; i++) {
    cleanup_free char *path = fp_xasprintf("%s/%s/properties", dir, nodes[i]);
    cleanup_free char *text = NULL;
    size_t len;
    if (fp_read_file(path, 64 * 1024, &text, &len) != 0) {
      fp_debug("%s: %s", path, strerror(errno));
      continue;
    }
    long v = gfx_version(text);
    if (v <= 0)
      continue; /* a CPU node (0) or one without the field */
    ai->n_gpus++;
    cleanup_free char *t = target_name((unsigned long)v);
    if (!t) {
      fp_debug("%s: gfx_target_version %ld is no LLVM target", path, v);
      differ = 1;
      continue;
    }
    if (!common) {
      common = steal_pointer(&t);
    } else if (strcmp(common, t) != 0 && !differ) {
      differ = 1;
      ai->reason = fp_xasprintf("AMD GPUs of different targets (%s, node %s: %s): no target "
                                "every GPU has",
                                common, nodes[i], t);
    }
  }
  fpull_strv_free(nodes);
  if (!ai->n_gpus && !ai->reason)
    ai->reason = fp_xasprintf("no AMD GPU in %s", dir);
  else if (differ && !ai->reason)
    ai->reason = fp_xstrdup("an AMD GPU reports a gfx_target_version that is no LLVM target");
  if (common && !differ)
    ai->targets = fp_strv_push(ai->targets, common);
  free(common);
  return 0;
}

void fpull_amdgpu_info_free(struct fpull_amdgpu_info *ai)
{
  if (!ai)
    return;
  fpull_strv_free(ai->targets);
  free(ai->reason);
  free(ai);
}
