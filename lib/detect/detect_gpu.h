/* Internal: what the NVIDIA detection modules share (detect_nvidia.c: NVML and /proc;
 * detect_cuda.c: the libcuda.so.1 fallback). */
#ifndef FP_DETECT_GPU_H
#define FP_DETECT_GPU_H

#include "fpull/detect.h"

/* Adds a line to ni->reason; the first also becomes ni->note ("why nothing was found"). */
void fp_nvidia_note(struct fpull_nvidia_info *ni, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The first of the names the library exports (newer versions first), or NULL. */
void *fp_dlsym2(void *dl, const char *a, const char *b);
/* The CUDA version and the GPUs' compute capabilities from the CUDA driver library lib
 * (for containers that have libcuda.so.1 but no NVML). */
void fp_query_cuda(struct fpull_nvidia_info *ni, const char *lib);

#endif
