#include <stdio.h>

#include "util.h"

static fpull_log_fn log_fn;
static void *log_ud;
static unsigned log_warnings;

void fpull_log_set(fpull_log_fn fn, void *ud)
{
  log_fn = fn;
  log_ud = ud;
}

unsigned fpull_log_warnings(void)
{
  return __atomic_load_n(&log_warnings, __ATOMIC_RELAXED);
}

void fp_log(int level, const char *fmt, ...)
{
  if (level == FPULL_LOG_WARN)
    __atomic_add_fetch(&log_warnings, 1, __ATOMIC_RELAXED);
  if (!log_fn)
    return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  log_fn(log_ud, level, msg);
}
