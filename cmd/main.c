#include <stdio.h>
#include <string.h>

#include "fpull/fpull.h"

int main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "version") == 0) {
    printf("fpull %s\n", FPULL_VERSION);
    return 0;
  }
  fprintf(stderr, "fpull: not yet\n");
  return 1;
}
