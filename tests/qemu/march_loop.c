/* Built with -march=TAG for every CPU tag fpull reports under a qemu-user x86 model, and run
 * there (tests/qemu/x86_exec.py): a vectorisable loop and the bit-manipulation builtins, where
 * GCC uses what the tag allows (AVX2/FMA, POPCNT, BMI, ...). Prints a checksum. */
#include <stdio.h>

static float a[4096], b[4096];

int main(void)
{
  double s = 0;
  for (int i = 0; i < 4096; i++) {
    a[i] = (float)i * 0.5f;
    b[i] = (float)(4096 - i);
  }
  for (int r = 0; r < 50; r++)
    for (int i = 0; i < 4096; i++)
      a[i] = a[i] * 0.999f + b[i] * 0.001f;
  for (int i = 0; i < 4096; i++)
    s += a[i];
  volatile unsigned long long x = 0x1234567890abcdefULL;
  int bits = __builtin_popcountll(x) + __builtin_ctzll(x) + __builtin_clzll(x);
  printf("%.0f %d\n", s, bits);
  return 0;
}
