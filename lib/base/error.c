#include <stdio.h>
#include <string.h>

#include "util.h"

int fpull_err_set(fpull_err *err, int code, const char *fmt, ...)
{
  if (!err)
    return code;
  va_list ap;
  va_start(ap, fmt);
  err->code = code;
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return code;
}

int fpull_err_prefix(fpull_err *err, const char *fmt, ...)
{
  if (!err)
    return FPULL_EFAIL;
  char ctx[FPULL_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx, sizeof ctx, fmt, ap);
  va_end(ap);
  /* A context that names what the message names already ("layer X" before "blob X: digest
   * mismatch", "REF" before "REF is ...") would say it twice. */
  const char *name = strrchr(ctx, ' ');
  name = name ? name + 1 : ctx;
  if (strlen(name) >= 12 && strstr(err->msg, name)) {
    if (err->code == FPULL_OK)
      err->code = FPULL_EFAIL;
    return err->code;
  }
  /* Shift the old message right and put "CTX: " in front, truncating at the end. */
  size_t clen = strlen(ctx), olen = strlen(err->msg), cap = sizeof err->msg - 1;
  size_t sep = olen ? 2 : 0;
  if (clen + sep > cap)
    clen = cap - sep;
  size_t keep = olen;
  if (clen + sep + keep > cap)
    keep = cap - clen - sep;
  memmove(err->msg + clen + sep, err->msg, keep);
  memcpy(err->msg, ctx, clen);
  if (sep)
    memcpy(err->msg + clen, ": ", 2);
  err->msg[clen + sep + keep] = '\0';
  if (err->code == FPULL_OK)
    err->code = FPULL_EFAIL;
  return err->code;
}

void fpull_err_clear(fpull_err *err)
{
  if (!err)
    return;
  err->code = FPULL_OK;
  err->msg[0] = '\0';
}
