/* tileops/calibrate.h (internal): what the calibration (tileops/
 * calibrate.c, pto_profile_calibrate) tells its tests. */
#ifndef PTO_TILEOPS_CALIBRATE_H
#define PTO_TILEOPS_CALIBRATE_H

/* 1 when the calibration has a microbenchmark (an operand maker for its
 * class) for instruction op, else 0: every built-in one must. */
int pto__calibrate_covers(int op);

#endif /* PTO_TILEOPS_CALIBRATE_H */
