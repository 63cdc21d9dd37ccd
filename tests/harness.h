/* A tiny unit-test harness: TEST(name) registers a test; ctest runs one per process.
 * A failed check prints both sides and ends the test with exit status 1. */
#ifndef FPULL_TEST_HARNESS_H
#define FPULL_TEST_HARNESS_H

#include <stdint.h>
#include <string.h>

typedef void (*th_fn)(void);
void th_register(const char *name, th_fn fn);
void th_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
/* A fresh empty directory under $TMPDIR for this test (removed at exit). */
const char *th_tmpdir(void);
/* 1 when built with AddressSanitizer, whose quarantine and shadow pages make peak RSS
 * measure the sanitizer rather than the code under test. */
int th_asan(void);
/* Path of a file under the source tree (FPULL_SRC_DIR). Static buffer. */
const char *th_src(const char *rel);
/* The entries of directory dir, "." and ".." not counted. */
int th_count_entries(const char *dir);
/* Runs fn(ud) in a child process, which must exit 0 (fn's return value is its status), and
 * checks its peak RSS is under max_kib (printed; not checked under AddressSanitizer, where
 * the peak is its quarantine and shadow memory: the plain build's run checks it). */
void th_child_peak_rss(int (*fn)(void *), void *ud, long max_kib);

#define TEST(name)                                                                                 \
  static void test_##name(void);                                                                   \
  __attribute__((constructor)) static void th_reg_##name(void)                                     \
  {                                                                                                \
    th_register(#name, test_##name);                                                               \
  }                                                                                                \
  static void test_##name(void)

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      th_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);                                      \
  } while (0)

#define CHECK_INT_EQ(a, b)                                                                         \
  do {                                                                                             \
    long long th_a = (long long)(a), th_b = (long long)(b);                                        \
    if (th_a != th_b)                                                                              \
      th_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, th_a, th_b);                   \
  } while (0)

#define CHECK_STR_EQ(a, b)                                                                         \
  do {                                                                                             \
    const char *th_a = (a), *th_b = (b);                                                           \
    if (!th_a || !th_b || strcmp(th_a, th_b) != 0)                                                 \
      th_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, th_a ? th_a : "(null)",    \
              th_b ? th_b : "(null)");                                                             \
  } while (0)

#define CHECK_NULL(a)                                                                              \
  do {                                                                                             \
    const void *th_a = (a);                                                                        \
    if (th_a)                                                                                      \
      th_fail(__FILE__, __LINE__, "%s is not NULL", #a);                                           \
  } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
  do {                                                                                             \
    const char *th_h = (hay), *th_n = (needle);                                                    \
    if (!th_h || !strstr(th_h, th_n))                                                              \
      th_fail(__FILE__, __LINE__, "\"%s\" does not contain \"%s\"", th_h ? th_h : "(null)", th_n); \
  } while (0)

#endif
