/* Fuzzes the whole unpack path with layers described in text, so the fuzzer plays with
 * names, link targets and their order rather than with tar checksums:
 *   first byte: bit 0 forces the O_NOFOLLOW walk, bit 1 the non-root semantics
 *   lines: "f NAME [DATA]", "d NAME", "l NAME TARGET" (symlink), "h NAME TARGET" (hardlink),
 *          "p NAME" (fifo), "c NAME" (device 1:3), "---" starts the next layer;
 *   "@V" in a name or target stands for the absolute path of the victim directory.
 * Whatever the input, the victim directory beside DEST must stay as it was: abort()
 * otherwise, so the fuzzer reports it. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fpull/unpack.h"
#include "unpack/inroot.h"

#define MAX_LAYERS 4
#define VICTIM_DATA "victim"

static char base[256], victim[300];

static void cleanup(void)
{
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", base);
}

static void setup(void)
{
  if (base[0])
    return;
  const char *t = getenv("TMPDIR");
  snprintf(base, sizeof base, "%s/fpull-fuzz-tarpath-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(base))
    abort();
  atexit(cleanup);
  snprintf(victim, sizeof victim, "%s/victim", base);
  if (mkdir(victim, 0755) < 0)
    abort();
  char p[400];
  snprintf(p, sizeof p, "%s/hello", victim);
  FILE *f = fopen(p, "w");
  if (!f)
    abort();
  fputs(VICTIM_DATA, f);
  fclose(f);
}

static void check_victim(void)
{
  DIR *d = opendir(victim);
  if (!d)
    abort();
  struct dirent *de;
  int n = 0;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      n += strcmp(de->d_name, "hello") == 0 ? 1 : 100;
  closedir(d);
  char p[400], buf[64] = {0};
  snprintf(p, sizeof p, "%s/hello", victim);
  FILE *f = fopen(p, "r");
  if (n != 1 || !f || fread(buf, 1, sizeof buf - 1, f) == 0 || strcmp(buf, VICTIM_DATA) != 0)
    abort();
  fclose(f);
}

/* Copies s (length n) into out, expanding @V. */
static void expand(char *out, size_t cap, const char *s, size_t n)
{
  size_t o = 0;
  for (size_t i = 0; i < n && o + 1 < cap; i++) {
    if (s[i] == '@' && i + 1 < n && s[i + 1] == 'V') {
      size_t vl = strlen(victim);
      if (o + vl + 1 >= cap)
        break;
      memcpy(out + o, victim, vl);
      o += vl;
      i++;
      continue;
    }
    out[o++] = s[i];
  }
  out[o] = '\0';
}

static void add_entry(struct archive *w, const char *line, size_t len)
{
  if (len < 3 || line[1] != ' ')
    return;
  const char *name = line + 2, *sp = memchr(name, ' ', len - 2);
  size_t nlen = sp ? (size_t)(sp - name) : len - 2;
  char n[FP_PATH_MAX + 1], arg[FP_PATH_MAX + 1] = "";
  expand(n, sizeof n, name, nlen);
  if (sp)
    expand(arg, sizeof arg, sp + 1, len - 2 - nlen - 1);
  struct archive_entry *e = archive_entry_new();
  archive_entry_set_pathname(e, n);
  archive_entry_set_mode(e, 0644);
  archive_entry_set_mtime(e, 1700000000, 0);
  switch (line[0]) {
  case 'd':
    archive_entry_set_filetype(e, AE_IFDIR);
    archive_entry_set_perm(e, 0755);
    break;
  case 'l':
    archive_entry_set_filetype(e, AE_IFLNK);
    archive_entry_set_symlink(e, arg);
    break;
  case 'h':
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_hardlink(e, arg);
    break;
  case 'p':
    archive_entry_set_filetype(e, AE_IFIFO);
    break;
  case 'c':
    archive_entry_set_filetype(e, AE_IFCHR);
    archive_entry_set_rdevmajor(e, 1);
    archive_entry_set_rdevminor(e, 3);
    break;
  default:
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_size(e, (la_int64_t)strlen(arg));
    break;
  }
  archive_write_header(w, e);
  if (line[0] == 'f')
    archive_write_data(w, arg, strlen(arg));
  archive_entry_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  setup();
  if (size < 1 || size > 64 * 1024)
    return 0;
  int flags = data[0];
  const char *text = (const char *)data + 1;
  size_t tlen = size - 1;

  struct fpull_layer layers[MAX_LAYERS];
  char paths[MAX_LAYERS][320];
  size_t n = 0, pos = 0;
  while (n < MAX_LAYERS && pos <= tlen) {
    snprintf(paths[n], sizeof paths[n], "%s/layer%zu.tar", base, n);
    struct archive *w = archive_write_new();
    archive_write_set_format_pax_restricted(w);
    if (archive_write_open_filename(w, paths[n]) != ARCHIVE_OK)
      abort();
    while (pos < tlen) {
      const char *nl = memchr(text + pos, '\n', tlen - pos);
      size_t len = nl ? (size_t)(nl - (text + pos)) : tlen - pos;
      const char *line = text + pos;
      pos += len + 1;
      if (len == 3 && memcmp(line, "---", 3) == 0)
        break;
      add_entry(w, line, len);
    }
    archive_write_close(w);
    archive_write_free(w);
    layers[n] = (struct fpull_layer){paths[n], "application/vnd.oci.image.layer.v1.tar",
                                     "sha256:fuzz", NULL, 0};
    n++;
    if (pos >= tlen)
      break;
  }
  char dest[320];
  snprintf(dest, sizeof dest, "%s/dest", base);
  struct fpull_unpack_opts o = {.version = FPULL_UNPACK_OPTS_VERSION,
                                .resolve_fallback = flags & 1,
                                .unprivileged = (flags >> 1) & 1,
                                .max_entries = 1000,
                                .max_bytes = 1 << 20};
  fpull_err err;
  (void)fpull_unpack_rootfs(dest, layers, n, &o, NULL, &err);
  check_victim();
  int bfd = open(base, O_PATH | O_DIRECTORY);
  if (bfd < 0 || fp_rm_rf_at(bfd, "dest") < 0)
    abort();
  close(bfd);
  return 0;
}
