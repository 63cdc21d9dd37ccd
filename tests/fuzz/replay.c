/* Without libFuzzer (gcc builds): feed every file of the corpus directories to the target,
 * so ctest exercises each fuzz target everywhere. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + len, 1, cap - len, f)) > 0) {
    len += r;
    if (len == cap)
      buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf)
    return -1;
  /* An exact-size copy so ASan catches reads past the end. */
  uint8_t *exact = malloc(len ? len : 1);
  memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

int main(int argc, char **argv)
{
  int n = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) < 0) {
      perror(argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (run_file(argv[i]) < 0)
        return 1;
      n++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (e->d_name[0] == '.')
        continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
      if (run_file(p) < 0) {
        perror(p);
        return 1;
      }
      n++;
    }
    if (d)
      closedir(d);
  }
  printf("replayed %d inputs\n", n);
  return n > 0 ? 0 : 1;
}
