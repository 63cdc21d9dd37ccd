/* fpull: the one error type threaded through every call that can fail. */
#ifndef FPULL_ERROR_H
#define FPULL_ERROR_H

#include "common.h"

/* The codes are the command line's exit codes (fpull(1), EXIT STATUS). */
enum fpull_code {
  FPULL_OK = 0,
  FPULL_EFAIL = 1,      /* any other failure */
  FPULL_EUSAGE = 2,     /* bad option, reference, spec or config file */
  FPULL_ENOMATCH = 3,   /* no entry fits the target platform */
  FPULL_EAUTH = 4,      /* authentication or authorization refused */
  FPULL_ENOTFOUND = 5,  /* repository, tag or digest not found */
  FPULL_ENET = 6,       /* network or registry failure after retries, TLS failure */
  FPULL_EINTEGRITY = 7, /* digest or size mismatch */
  FPULL_EUNSAFE = 8,    /* unsafe or invalid layer content */
  FPULL_EPOLICY = 9     /* the signature policy rejects the image */
};

#define FPULL_ERR_MSG_MAX 1024

/* Reporting never allocates: the message lives in a fixed buffer. */
typedef struct fpull_err {
  int code;
  char msg[FPULL_ERR_MSG_MAX];
} fpull_err;

/* Sets code and message; returns code. err may be NULL. */
FPULL_API int fpull_err_set(fpull_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepends "CONTEXT: " to the message, keeps the code; returns the code. A context whose
 * last word (12 characters or more: a digest, a reference) the message names already is
 * not prepended. */
FPULL_API int fpull_err_prefix(fpull_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Back to FPULL_OK with an empty message. */
FPULL_API void fpull_err_clear(fpull_err *err);

#endif
