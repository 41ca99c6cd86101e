/* tileops/calibrate.h (internal): what the calibration (tileops/
 * calibrate.c, pto_profile_calibrate) tells its tests. */
#ifndef PTO_TILEOPS_CALIBRATE_H
#define PTO_TILEOPS_CALIBRATE_H

#include <stddef.h>

/* 1 when the calibration has a microbenchmark (an operand maker for its
 * class) for instruction op, else 0: every built-in one must. */
int pto__calibrate_covers(int op);

/* This CPU as a calibration names it (tileops/calibrate_host.c): its
 * model name with family, model and stepping, from /proc/cpuinfo
 * ("unknown" where there is none). */
void pto__host_cpu(char *buf, size_t n);

#endif /* PTO_TILEOPS_CALIBRATE_H */
