/* Prints what lib/hwcap.c makes of this process's AT_HWCAP, AT_HWCAP2 and AT_PLATFORM.
 * Cross-built statically with lib/hwcap.c alone and run under qemu-user's CPU models by
 * tests/qemu/run.py, which derives the tags with fpull and the shipped table. */
#include <stdio.h>
#include <sys/auxv.h>

#include "detect/hwcap.h"

int main(void)
{
  const char *names[FP_HWCAP_MAX];
  unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  const char *plat = (const char *)getauxval(AT_PLATFORM);
#if defined(__aarch64__)
  size_t n = fp_hwcap_arm64(hw, hw2, names, FP_HWCAP_MAX);
#elif defined(__powerpc64__)
  size_t n = fp_hwcap_ppc64(hw, hw2, names, FP_HWCAP_MAX);
  const char *level = fp_hwcap_ppc64_level(plat, hw2);
  printf("level %s\n", level ? level : "-");
#else
#error "hwcap_probe is for arm64 and ppc64le"
#endif
  printf("platform %s\nhwcap %#lx\nhwcap2 %#lx\n", plat ? plat : "-", hw, hw2);
  for (size_t i = 0; i < n; i++)
    printf("isa %s\n", names[i]);
  return 0;
}
