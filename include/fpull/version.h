/* fpull: the version of the headers (compile time) and of the library (run time). */
#ifndef FPULL_VERSION_H
#define FPULL_VERSION_H

#include "common.h"

/* CMakeLists.txt refuses to configure when these disagree with project(VERSION): the
 * headers, fpull.pc and fpullConfigVersion.cmake always name one version. */
#define FPULL_VERSION_MAJOR 0
#define FPULL_VERSION_MINOR 1
#define FPULL_VERSION_PATCH 0
#define FPULL_VERSION "0.1.0"
/* 0xMMmmpp, for #if comparisons: FPULL_VERSION_NUM >= 0x000100 means 0.1.0 or later. */
#define FPULL_VERSION_NUM                                                                          \
  ((FPULL_VERSION_MAJOR << 16) | (FPULL_VERSION_MINOR << 8) | FPULL_VERSION_PATCH)

/* The version of the library actually loaded ("0.1.0"), which may be newer than the
 * FPULL_VERSION a program was compiled against when libfpull.so was upgraded under it.
 * A static string; never fails. */
FPULL_API const char *fpull_version(void);

#endif
