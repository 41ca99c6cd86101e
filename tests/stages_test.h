/* tests/stages_test.h (internal to the tests): a program of four labelled
 * parts and an unlabelled one for the stage-barrier tests of the
 * partitioner and scheduler suites, its plain-C reference, and the stage
 * of a task's label. Static: each file includes it once. */
#ifndef PTO_TESTS_STAGES_TEST_H
#define PTO_TESTS_STAGES_TEST_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"

/* "staged": x [R,C], w [C,C]; a = 2x (label "a"), b = x + 1 (label "b", no
 * data edge to a), c = a·w (label "c"), d = b·w + c (label "d"), and
 * u = exp(x) under no label. Outputs c, d, u. vec tile {vr, vc}, cube tile
 * 16x16x16. */
enum { ST_R = 64, ST_C = 64 };
static const char *const st_stages[] = {"a", "b", "c", "d"};

static inline pto_program *staged(uint32_t vr, uint32_t vc) {
  pto_program *p = pto_program_new("staged");
  const int64_t sx[2] = {ST_R, ST_C}, sw[2] = {ST_C, ST_C};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, sx);
  pto_tensor *w = pto_input(p, "w", PTO_F32, 2, sw);
  pto_program_set_vec_tile(p, vr, vc);
  pto_program_set_cube_tile(p, 16, 16, 16);
  pto_program_push_label(p, "a");
  pto_tensor *a = pto_muls(p, x, 2.0);
  pto_program_pop_label(p);
  pto_program_push_label(p, "b");
  pto_tensor *b = pto_adds(p, x, 1.0);
  pto_program_pop_label(p);
  pto_program_push_label(p, "c.mm");
  pto_tensor *c = pto_matmul(p, a, w, 0);
  pto_program_pop_label(p);
  pto_program_push_label(p, "d");
  pto_tensor *d = pto_add(p, pto_matmul(p, b, w, 0), c);
  pto_program_pop_label(p);
  pto_tensor *u = pto_exp(p, x);
  pto_output(p, c, "c");
  pto_output(p, d, "d");
  pto_output(p, u, "u");
  return p;
}

/* Inputs of small dyadic values, and the reference in double. */
static inline void staged_inputs(float *x, float *w) {
  for (int i = 0; i < ST_R * ST_C; i++)
    x[i] = (float)((i * 7 % 13) - 6) / 8.0f;
  for (int i = 0; i < ST_C * ST_C; i++)
    w[i] = (float)((i * 5 % 11) - 5) / 16.0f;
}

static inline void staged_reference(const float *x, const float *w, double *c,
                                    double *d, double *u) {
  for (int i = 0; i < ST_R; i++)
    for (int j = 0; j < ST_C; j++) {
      double sc = 0, sd = 0;
      for (int k = 0; k < ST_C; k++) {
        sc += 2.0 * x[i * ST_C + k] * w[k * ST_C + j];
        sd += ((double)x[i * ST_C + k] + 1.0) * w[k * ST_C + j];
      }
      c[i * ST_C + j] = sc;
      d[i * ST_C + j] = sd + sc;
      u[i * ST_C + j] = exp(x[i * ST_C + j]);
    }
}

/* The stage of a label under st_stages ("c.mm" is in "c"), -1 for none. */
static inline int staged_stage(const char *label) {
  for (int k = 0; k < 4; k++) {
    size_t n = strlen(st_stages[k]);
    if (!strncmp(label, st_stages[k], n) && (!label[n] || label[n] == '.'))
      return k;
  }
  return -1;
}

#endif /* PTO_TESTS_STAGES_TEST_H */
