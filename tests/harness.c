#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define TH_MAX 512
static struct {
  const char *name;
  th_fn fn;
} tests[TH_MAX];
static int n_tests;
static char tmpdir[4096];

void th_register(const char *name, th_fn fn)
{
  if (n_tests == TH_MAX) {
    fprintf(stderr, "harness: too many tests\n");
    exit(2);
  }
  tests[n_tests].name = name;
  tests[n_tests].fn = fn;
  n_tests++;
}

void th_fail(const char *file, int line, const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "%s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void rm_tmpdir(void)
{
  if (!tmpdir[0])
    return;
  char cmd[8400];
  /* chmod first: tests make unwritable directories on purpose. */
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", tmpdir, tmpdir);
  if (system(cmd) != 0)
    fprintf(stderr, "harness: could not remove %s\n", tmpdir);
}

const char *th_tmpdir(void)
{
  if (tmpdir[0])
    return tmpdir;
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/fpull-unit-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    exit(2);
  }
  atexit(rm_tmpdir);
  return tmpdir;
}

const char *th_src(const char *rel)
{
  static char buf[4096];
  const char *src = getenv("FPULL_SRC_DIR");
  snprintf(buf, sizeof buf, "%s/%s", src ? src : ".", rel);
  return buf;
}

int th_count_entries(const char *dir)
{
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

void th_child_peak_rss(int (*fn)(void *), void *ud, long max_kib)
{
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0)
    _exit(fn(ud));
  int status;
  struct rusage ru;
  CHECK(wait4(pid, &status, 0, &ru) == pid);
  CHECK(WIFEXITED(status));
  CHECK_INT_EQ(WEXITSTATUS(status), 0);
  fprintf(stderr, "peak RSS of the child: %ld KiB\n", ru.ru_maxrss);
  if (!th_asan())
    CHECK(ru.ru_maxrss < max_kib);
}

int main(int argc, char **argv)
{
  int ran = 0;
  for (int i = 0; i < n_tests; i++) {
    if (argc > 1 && strcmp(argv[1], tests[i].name) != 0)
      continue;
    tests[i].fn();
    printf("ok %s\n", tests[i].name);
    ran++;
  }
  if (ran == 0) {
    fprintf(stderr, "harness: no test named %s\n", argc > 1 ? argv[1] : "(any)");
    return 2;
  }
  return 0;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TH_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TH_ASAN 1
#endif

int th_asan(void)
{
#ifdef TH_ASAN
  return 1;
#else
  return 0;
#endif
}
