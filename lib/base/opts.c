/* Options structs carry their layout's version, as libgit2's do, so that fields can be
 * added without breaking programs built against an older fpull (see opts.h). */
#include "opts.h"

int fp_opts_check(unsigned int version, unsigned int known, const char *type, fpull_err *err)
{
  if (version >= 1 && version <= known)
    return 0;
  if (version == 0)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "struct %s has no version: initialise it with its _INIT macro", type);
  return fpull_err_set(err, FPULL_EUSAGE,
                       "struct %s version %u is newer than this libfpull knows (%u): the "
                       "program was built against a newer fpull",
                       type, version, known);
}
