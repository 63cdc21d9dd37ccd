/* The run-time version (see fpull/version.h). */
#include "fpull/version.h"

const char *fpull_version(void)
{
  return FPULL_VERSION;
}
