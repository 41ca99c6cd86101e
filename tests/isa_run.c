/* isa_run ISA PROGRAM [ARGS...]: runs PROGRAM with PTO_ISA=ISA when this
 * CPU and OS run that instruction set, else exits 77, which ctest reports
 * as skipped (SKIP_RETURN_CODE). Lets ctest run a suite once per ISA. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pto/isa.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: isa_run ISA PROGRAM [ARGS...]\n");
    return 2;
  }
  if (!pto_isa_supported(argv[1])) {
    printf("skipped: this CPU/OS does not run %s\n", argv[1]);
    return 77;
  }
  if (setenv("PTO_ISA", argv[1], 1)) {
    perror("isa_run: setenv");
    return 2;
  }
  execv(argv[2], argv + 2);
  perror("isa_run: exec");
  return 2;
}
