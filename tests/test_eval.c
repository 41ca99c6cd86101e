/* core: the reference evaluator (pto_program_eval), element-wise: binary
 * ops with broadcasting, bf16/f16 operands, i32 arithmetic, scalar and
 * unary ops, NaN through max/min, casts between every pair of dtypes, and
 * compare and select; against expectations computed here in plain C on
 * random data with fixed seeds (tolerances: tests/eval_test.h). */
#include "tests/eval_test.h"

/* ---- element-wise ------------------------------------------------------- */

Test(core, eval_binary_f32_is_exact) {
  float a[R * C], b[R * C], out[6][R * C];
  fill(a, R * C, 1, -10, 10);
  fill(b, R * C, 2, -10, 10);
  b[3] = 0; /* x/0 = inf */
  pto_program *p = pto_program_new("binary");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C), *tb = in2(p, "b", PTO_F32, R, C);
  pto_output(p, pto_add(p, ta, tb), "add");
  pto_output(p, pto_sub(p, ta, tb), "sub");
  pto_output(p, pto_mul(p, ta, tb), "mul");
  pto_output(p, pto_div(p, ta, tb), "div");
  pto_output(p, pto_max(p, ta, tb), "max");
  pto_output(p, pto_min(p, ta, tb), "min");
  const void *ins[] = {a, b};
  void *outs[] = {out[0], out[1], out[2], out[3], out[4], out[5]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < R * C; i++) {
    EXPECT_F32(out[0][i], a[i] + b[i], "add %d", i);
    EXPECT_F32(out[1][i], a[i] - b[i], "sub %d", i);
    EXPECT_F32(out[2][i], a[i] * b[i], "mul %d", i);
    EXPECT_F32(out[3][i], a[i] / b[i], "div %d", i);
    EXPECT_F32(out[4][i], a[i] > b[i] ? a[i] : b[i], "max %d", i);
    EXPECT_F32(out[5][i], a[i] < b[i] ? a[i] : b[i], "min %d", i);
  }
  cr_expect(isinf(out[3][3]));
  pto_program_free(p);
}

/* Row [M,1], column [1,N], rank-differing [N] and two-sided [3,1,N]x[M,1]. */
Test(core, eval_binary_broadcasts) {
  float a[R * C], row[R], col[C], cube[3 * C];
  float o_row[R * C], o_col[R * C], o_rank[R * C], o_both[3 * R * C];
  fill(a, R * C, 3, -4, 4);
  fill(row, R, 4, -4, 4);
  fill(col, C, 5, -4, 4);
  fill(cube, 3 * C, 6, -4, 4);
  pto_program *p = pto_program_new("bcast");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C);
  pto_tensor *tr = in2(p, "row", PTO_F32, R, 1);
  pto_tensor *tc = in2(p, "col", PTO_F32, 1, C);
  int64_t s1[1] = {C}, s3[3] = {3, 1, C};
  pto_tensor *tv = pto_input(p, "vec", PTO_F32, 1, s1);
  pto_tensor *tq = pto_input(p, "cube", PTO_F32, 3, s3);
  pto_output(p, pto_sub(p, ta, tr), "row");
  pto_output(p, pto_div(p, tc, ta), "col");
  pto_output(p, pto_mul(p, ta, tv), "rank");
  pto_tensor *both = pto_add(p, tq, tr);
  pto_output(p, both, "both");
  BUILD_OK(p);
  cr_assert_eq(pto_tensor_ndim(both), 3);
  cr_assert_eq(pto_tensor_dim(both, 0), 3);
  cr_assert_eq(pto_tensor_dim(both, 1), R);
  cr_assert_eq(pto_tensor_dim(both, 2), C);
  const void *ins[] = {a, row, col, col, cube};
  void *outs[] = {o_row, o_col, o_rank, o_both};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      EXPECT_F32(o_row[r * C + c], a[r * C + c] - row[r], "row %d,%d", r, c);
      EXPECT_F32(o_col[r * C + c], col[c] / a[r * C + c], "col %d,%d", r, c);
      EXPECT_F32(o_rank[r * C + c], a[r * C + c] * col[c], "rank %d,%d", r, c);
      for (int q = 0; q < 3; q++)
        EXPECT_F32(o_both[(q * R + r) * C + c], cube[q * C + c] + row[r],
                   "both %d,%d,%d", q, r, c);
    }
  pto_program_free(p);
}

/* bf16 and f16 operands are loaded exactly and computed as f32. */
Test(core, eval_bf16_f16_operands_compute_in_f32) {
  uint16_t hb[R * C], hh[R * C];
  uint64_t s = 7;
  for (int i = 0; i < R * C; i++) {
    hb[i] = (uint16_t)(0x3c00 + rng_next(&s) % 0x0800) ^
            (uint16_t)(i & 1 ? 0x8000 : 0); /* |x| in [2^-7, 2^9) */
    hh[i] = (uint16_t)(0x2000 + rng_next(&s) % 0x3000) ^
            (uint16_t)(i & 2 ? 0x8000 : 0);
  }
  float sum[R * C], prod[R * C];
  pto_program *p = pto_program_new("half");
  pto_tensor *a = in2(p, "a", PTO_BF16, R, C), *b = in2(p, "b", PTO_F16, R, C);
  pto_tensor *add = pto_add(p, a, b);
  pto_output(p, add, "sum");
  pto_output(p, pto_mul(p, a, b), "prod");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dtype(add), PTO_F32);
  const void *ins[] = {hb, hh};
  void *outs[] = {sum, prod};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < R * C; i++) {
    float x = (float)bf16_val(hb[i]), y = (float)f16_val(hh[i]);
    EXPECT_F32(sum[i], x + y, "sum %d", i);
    EXPECT_F32(prod[i], x * y, "prod %d", i);
  }
  pto_program_free(p);
}

#define NI 12
Test(core, eval_i32_arithmetic_wraps_and_divides_safely) {
  int32_t a[NI] = {INT32_MIN, INT32_MAX, INT32_MIN, -7,     7,  -7,
                   0,         5,         INT32_MAX, 123456, -1, 100000};
  int32_t b[NI] = {-1, 1, 0,         2,      -2,        0,
                   0,  3, INT32_MAX, 654321, INT32_MIN, -100000};
  int32_t out[8][NI];
  pto_program *p = pto_program_new("i32");
  int64_t s[1] = {NI};
  pto_tensor *ta = pto_input(p, "a", PTO_I32, 1, s);
  pto_tensor *tb = pto_input(p, "b", PTO_I32, 1, s);
  pto_output(p, pto_add(p, ta, tb), "add");
  pto_output(p, pto_sub(p, ta, tb), "sub");
  pto_output(p, pto_mul(p, ta, tb), "mul");
  pto_output(p, pto_div(p, ta, tb), "div");
  pto_output(p, pto_max(p, ta, tb), "max");
  pto_output(p, pto_min(p, ta, tb), "min");
  pto_output(p, pto_neg(p, ta), "neg");
  pto_output(p, pto_abs(p, ta), "abs");
  const void *ins[] = {a, b};
  void *outs[8];
  for (int i = 0; i < 8; i++)
    outs[i] = out[i];
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < NI; i++) {
    int64_t x = a[i], y = b[i];
    cr_expect_eq(out[0][i], wrap(x + y), "add %d", i);
    cr_expect_eq(out[1][i], wrap(x - y), "sub %d", i);
    cr_expect_eq(out[2][i], wrap(x * y), "mul %d", i);
    cr_expect_eq(out[3][i], y == 0 ? 0 : wrap(x / y), "div %d", i);
    cr_expect_eq(out[4][i], x > y ? x : y, "max %d", i);
    cr_expect_eq(out[5][i], x < y ? x : y, "min %d", i);
    cr_expect_eq(out[6][i], wrap(-x), "neg %d", i);
    cr_expect_eq(out[7][i], wrap(x < 0 ? -x : x), "abs %d", i);
  }
  /* the edge cases spelled out */
  cr_expect_eq(out[3][0], INT32_MIN); /* INT32_MIN / -1 wraps */
  cr_expect_eq(out[3][2], 0);         /* x / 0 */
  cr_expect_eq(out[3][3], -3);        /* truncation toward zero */
  cr_expect_eq(out[0][1], INT32_MIN); /* INT32_MAX + 1 */
  cr_expect_eq(out[7][0], INT32_MIN); /* abs(INT32_MIN) */
  pto_program_free(p);
}

Test(core, eval_scalar_ops_f32_round_the_scalar_to_f32) {
  float a[R * C], out[6][R * C];
  fill(a, R * C, 8, -3, 3);
  pto_program *p = pto_program_new("scalar");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C);
  pto_output(p, pto_adds(p, ta, 0.1), "adds");
  pto_output(p, pto_subs(p, ta, 0.1), "subs");
  pto_output(p, pto_muls(p, ta, 0.3), "muls");
  pto_output(p, pto_divs(p, ta, 0.7), "divs");
  pto_output(p, pto_maxs(p, ta, 0.5), "maxs");
  pto_output(p, pto_mins(p, ta, -0.5), "mins");
  const void *ins[] = {a};
  void *outs[] = {out[0], out[1], out[2], out[3], out[4], out[5]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < R * C; i++) {
    EXPECT_F32(out[0][i], a[i] + 0.1f, "adds %d", i);
    EXPECT_F32(out[1][i], a[i] - 0.1f, "subs %d", i);
    EXPECT_F32(out[2][i], a[i] * 0.3f, "muls %d", i);
    EXPECT_F32(out[3][i], a[i] / 0.7f, "divs %d", i);
    EXPECT_F32(out[4][i], a[i] > 0.5f ? a[i] : 0.5f, "maxs %d", i);
    EXPECT_F32(out[5][i], a[i] < -0.5f ? a[i] : -0.5f, "mins %d", i);
  }
  pto_program_free(p);
}

Test(core, eval_scalar_ops_i32) {
  int32_t a[NI], out[6][NI];
  fill_i32(a, NI, 9, -1000, 1000);
  a[0] = INT32_MAX;
  a[1] = INT32_MIN;
  pto_program *p = pto_program_new("scalar_i32");
  int64_t s[1] = {NI};
  pto_tensor *ta = pto_input(p, "a", PTO_I32, 1, s);
  pto_output(p, pto_adds(p, ta, 2.6), "adds"); /* scalar rounds to 3 */
  pto_output(p, pto_subs(p, ta, 5), "subs");
  pto_output(p, pto_muls(p, ta, -3), "muls");
  pto_output(p, pto_divs(p, ta, 7), "divs");
  pto_output(p, pto_divs(p, ta, 0), "div0");
  pto_output(p, pto_maxs(p, ta, 10), "maxs");
  const void *ins[] = {a};
  void *outs[] = {out[0], out[1], out[2], out[3], out[4], out[5]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < NI; i++) {
    int64_t x = a[i];
    cr_expect_eq(out[0][i], wrap(x + 3), "adds %d", i);
    cr_expect_eq(out[1][i], wrap(x - 5), "subs %d", i);
    cr_expect_eq(out[2][i], wrap(x * -3), "muls %d", i);
    cr_expect_eq(out[3][i], x / 7, "divs %d", i);
    cr_expect_eq(out[4][i], 0, "div0 %d", i);
    cr_expect_eq(out[5][i], x > 10 ? x : 10, "maxs %d", i);
  }
  pto_program_free(p);
}

Test(core, eval_unary_ops) {
  float a[R * C], pos[R * C], out[8][R * C];
  fill(a, R * C, 10, -5, 5);
  fill(pos, R * C, 11, 0.01f, 50);
  pto_program *p = pto_program_new("unary");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C),
             *tp = in2(p, "pos", PTO_F32, R, C);
  pto_output(p, pto_exp(p, ta), "exp");
  pto_output(p, pto_log(p, tp), "log");
  pto_output(p, pto_sqrt(p, tp), "sqrt");
  pto_output(p, pto_rsqrt(p, tp), "rsqrt");
  pto_output(p, pto_recip(p, ta), "recip");
  pto_output(p, pto_relu(p, ta), "relu");
  pto_output(p, pto_abs(p, ta), "abs");
  pto_output(p, pto_neg(p, ta), "neg");
  const void *ins[] = {a, pos};
  void *outs[8];
  for (int i = 0; i < 8; i++)
    outs[i] = out[i];
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < R * C; i++) {
    double e = exp((double)a[i]), l = log((double)pos[i]);
    double rs = 1 / sqrt((double)pos[i]);
    EXPECT_CLOSE(out[0][i], e, fabs(e), 1e-6, "exp %d", i);
    EXPECT_CLOSE(out[1][i], l, fabs(l), 1e-6, "log %d", i);
    EXPECT_F32(out[2][i], sqrtf(pos[i]), "sqrt %d", i);
    EXPECT_CLOSE(out[3][i], rs, rs, 1e-6, "rsqrt %d", i);
    EXPECT_F32(out[4][i], 1.0f / a[i], "recip %d", i);
    EXPECT_F32(out[5][i], a[i] > 0 ? a[i] : 0.0f, "relu %d", i);
    EXPECT_F32(out[6][i], fabsf(a[i]), "abs %d", i);
    EXPECT_F32(out[7][i], -a[i], "neg %d", i);
  }
  pto_program_free(p);
}

Test(core, eval_unary_i32) {
  int32_t a[NI], out[3][NI];
  fill_i32(a, NI, 12, -50, 50);
  a[0] = INT32_MIN;
  a[1] = INT32_MAX;
  pto_program *p = pto_program_new("unary_i32");
  int64_t s[1] = {NI};
  pto_tensor *ta = pto_input(p, "a", PTO_I32, 1, s);
  pto_output(p, pto_relu(p, ta), "relu");
  pto_output(p, pto_abs(p, ta), "abs");
  pto_output(p, pto_neg(p, ta), "neg");
  const void *ins[] = {a};
  void *outs[] = {out[0], out[1], out[2]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < NI; i++) {
    int64_t x = a[i];
    cr_expect_eq(out[0][i], x > 0 ? x : 0, "relu %d", i);
    cr_expect_eq(out[1][i], wrap(x < 0 ? -x : x), "abs %d", i);
    cr_expect_eq(out[2][i], wrap(-x), "neg %d", i);
  }
  pto_program_free(p);
}

/* NaN propagates through max/min (IEEE 754-2019 maximum/minimum). */
Test(core, eval_max_min_propagate_nan) {
  float a[4] = {NAN, 1, NAN, -2}, b[4] = {1, NAN, NAN, 3}, out[3][4];
  pto_program *p = pto_program_new("nan");
  int64_t s[1] = {4};
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 1, s);
  pto_tensor *tb = pto_input(p, "b", PTO_F32, 1, s);
  pto_output(p, pto_max(p, ta, tb), "max");
  pto_output(p, pto_min(p, ta, tb), "min");
  pto_output(p, pto_relu(p, ta), "relu");
  const void *ins[] = {a, b};
  void *outs[] = {out[0], out[1], out[2]};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < 3; i++) {
    cr_expect(isnan(out[0][i]), "max %d", i);
    cr_expect(isnan(out[1][i]), "min %d", i);
  }
  EXPECT_F32(out[0][3], 3.0f, "max(-2, 3)");
  EXPECT_F32(out[1][3], -2.0f, "min(-2, 3)");
  cr_expect(isnan(out[2][0]));
  EXPECT_F32(out[2][1], 1.0f, "relu(1)");
  EXPECT_F32(out[2][3], 0.0f, "relu(-2)");
  pto_program_free(p);
}

/* ---- casts -------------------------------------------------------------- */

#define NC 40
Test(core, eval_cast_float_to_i32_rounds_even_and_saturates) {
  float a[NC] = {0.5f,      1.5f,          2.5f,           -0.5f, -1.5f,
                 -2.5f,     0.49999997f,   3.7f,           -3.7f, 3e9f,
                 -3e9f,     2147483520.0f, -2147483648.0f, NAN,   INFINITY,
                 -INFINITY, 16777215.0f,   1e-30f,         -0.0f, 100.5f};
  uint64_t s = 13;
  for (int i = 20; i < NC; i++)
    a[i] = rnd(&s, -1e6f, 1e6f);
  int32_t out[NC];
  pto_program *p = pto_program_new("cast_i32");
  int64_t sh[1] = {NC};
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 1, sh);
  pto_tensor *c = pto_cast(p, ta, PTO_I32);
  pto_output(p, c, "c");
  BUILD_OK(p);
  cr_expect_eq(pto_tensor_dtype(c), PTO_I32);
  const void *ins[] = {a};
  void *outs[] = {out};
  EVAL_OK(p, ins, outs);
  int32_t want[20] = {0,         2,          2,         0,  -2,
                      -2,        0,          4,         -4, INT32_MAX,
                      INT32_MIN, 2147483520, INT32_MIN, 0,  INT32_MAX,
                      INT32_MIN, 16777215,   0,         0,  100};
  for (int i = 0; i < 20; i++)
    cr_expect_eq(out[i], want[i], "a[%d] = %.9g: got %d want %d", i,
                 (double)a[i], out[i], want[i]);
  for (int i = 20; i < NC; i++) { /* nearest, ties to even */
    double f = floor((double)a[i]), d = (double)a[i] - f;
    double r = d > 0.5 ? f + 1 : d < 0.5 ? f : (fmod(f, 2) == 0 ? f : f + 1);
    cr_expect_eq(out[i], (int32_t)r, "a[%d] = %.9g", i, (double)a[i]);
  }
  pto_program_free(p);
}

Test(core, eval_cast_i32_to_f32_rounds_even) {
  int32_t a[6] = {16777217, 16777219, -16777217, INT32_MAX, INT32_MIN, 12345};
  float out[6];
  pto_program *p = pto_program_new("cast_f32");
  int64_t sh[1] = {6};
  pto_output(p, pto_cast(p, pto_input(p, "a", PTO_I32, 1, sh), PTO_F32), "c");
  const void *ins[] = {a};
  void *outs[] = {out};
  EVAL_OK(p, ins, outs);
  float want[6] = {16777216.0f,   16777220.0f,    -16777216.0f,
                   2147483648.0f, -2147483648.0f, 12345.0f};
  for (int i = 0; i < 6; i++)
    EXPECT_F32(out[i], want[i], "%d", i);
  pto_program_free(p);
}

/* f32 -> bf16 and f16 round to nearest even, checked against a search over
 * the codes (not a bit trick); and back to f32 exactly. */
Test(core, eval_cast_to_and_from_bf16_f16) {
  float a[NC] = {1.0f + 0x1p-8f,  1.0f + 0x3p-8f,
                 1.0f + 0x1p-11f, 1.0f + 0x3p-11f,
                 65519.0f,        65520.0f,
                 0x1p-25f,        0x3p-25f,
                 -0x1p-26f,       NAN,
                 INFINITY,        -0.0f,
                 1e-40f,          3.0e38f};
  uint64_t s = 14;
  for (int i = 14; i < NC; i++)
    a[i] = rnd(&s, -70000, 70000) * (i % 3 == 0 ? 1e-4f : 1.0f);
  uint16_t ob[NC], oh[NC];
  float back_b[NC], back_h[NC];
  pto_program *p = pto_program_new("cast_half");
  int64_t sh[1] = {NC};
  pto_tensor *ta = pto_input(p, "a", PTO_F32, 1, sh);
  pto_tensor *b = pto_cast(p, ta, PTO_BF16), *h = pto_cast(p, ta, PTO_F16);
  pto_output(p, b, "bf16");
  pto_output(p, h, "f16");
  pto_output(p, pto_cast(p, b, PTO_F32), "bf16_back");
  pto_output(p, pto_cast(p, h, PTO_F32), "f16_back");
  const void *ins[] = {a};
  void *outs[] = {ob, oh, back_b, back_h};
  EVAL_OK(p, ins, outs);
  for (int i = 0; i < NC; i++) {
    uint16_t wb = bf16_enc(a[i]), wh = f16_enc(a[i]);
    if (isnan(a[i])) {
      cr_expect(isnan(bf16_val(ob[i])) && isnan(f16_val(oh[i])), "NaN %d", i);
      cr_expect(isnan(back_b[i]) && isnan(back_h[i]));
      continue;
    }
    cr_expect_eq(ob[i], wb, "bf16 of %.9g: got 0x%04x want 0x%04x",
                 (double)a[i], ob[i], wb);
    cr_expect_eq(oh[i], wh, "f16 of %.9g: got 0x%04x want 0x%04x", (double)a[i],
                 oh[i], wh);
    EXPECT_F32(back_b[i], (float)bf16_val(wb), "bf16 back %d", i);
    EXPECT_F32(back_h[i], (float)f16_val(wh), "f16 back %d", i);
  }
  /* the tie cases spelled out */
  cr_expect_eq(ob[0], 0x3f80);  /* 1 + 2^-8: tie, to even 1.0 */
  cr_expect_eq(ob[1], 0x3f82);  /* 1 + 3*2^-8: tie, to even */
  cr_expect_eq(oh[2], 0x3c00);  /* 1 + 2^-11 */
  cr_expect_eq(oh[3], 0x3c02);  /* 1 + 3*2^-11 */
  cr_expect_eq(oh[4], 0x7bff);  /* 65519 -> 65504 */
  cr_expect_eq(oh[5], 0x7c00);  /* 65520 -> inf */
  cr_expect_eq(oh[6], 0x0000);  /* 2^-25: tie, to 0 */
  cr_expect_eq(oh[7], 0x0002);  /* 3*2^-25: tie, to 2^-23 */
  cr_expect_eq(oh[11], 0x8000); /* -0 */
  pto_program_free(p);
}

Test(core, eval_cast_half_inputs_to_i32_and_between_halves) {
  uint16_t hb[4] = {0x3fc0 /* 1.5 */, 0x4020 /* 2.5 */, 0xbfc0, 0x7fc0};
  uint16_t hh[4] = {0x3e00 /* 1.5 */, 0x4100 /* 2.5 */, 0x3555, 0xfc00};
  int32_t ib[4], ih[4];
  uint16_t b2h[4];
  pto_program *p = pto_program_new("half_cast");
  int64_t sh[1] = {4};
  pto_tensor *b = pto_input(p, "b", PTO_BF16, 1, sh);
  pto_tensor *h = pto_input(p, "h", PTO_F16, 1, sh);
  pto_output(p, pto_cast(p, b, PTO_I32), "bi");
  pto_output(p, pto_cast(p, h, PTO_I32), "hi");
  pto_output(p, pto_cast(p, b, PTO_F16), "b2h");
  const void *ins[] = {hb, hh};
  void *outs[] = {ib, ih, b2h};
  EVAL_OK(p, ins, outs);
  int32_t wb[4] = {2, 2, -2, 0}, wh[4] = {2, 2, 0, INT32_MIN};
  for (int i = 0; i < 4; i++) {
    cr_expect_eq(ib[i], wb[i], "bf16 %d", i);
    cr_expect_eq(ih[i], wh[i], "f16 %d", i);
  }
  cr_expect_eq(b2h[0], 0x3e00);
  cr_expect_eq(b2h[1], 0x4100);
  cr_expect_eq(b2h[2], 0xbe00);
  cr_expect(isnan(f16_val(b2h[3])));
  pto_program_free(p);
}

/* ---- compare and select ------------------------------------------------- */

Test(core, eval_cmp_all_modes_with_nan_and_broadcast) {
  float a[R * C], b[C];
  fill(a, R * C, 15, -2, 2);
  fill(b, C, 16, -2, 2);
  a[3] = b[3]; /* equal values */
  a[C + 3] = b[3];
  a[5] = NAN;
  b[6] = NAN;
  int32_t out[PTO_CMP_MODE_COUNT][R * C];
  pto_program *p = pto_program_new("cmp");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C), *tb = in2(p, "b", PTO_F32, 1, C);
  void *outs[PTO_CMP_MODE_COUNT];
  for (int m = 0; m < PTO_CMP_MODE_COUNT; m++) {
    char name[8] = {'m', (char)('0' + m), 0};
    pto_tensor *t = pto_cmp(p, ta, tb, (pto_cmp_mode)m);
    pto_output(p, t, name);
    outs[m] = out[m];
  }
  const void *ins[] = {a, b};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      float x = a[r * C + c], y = b[c];
      int want[PTO_CMP_MODE_COUNT] = {x == y, x != y, x<y, x <= y, x> y,
                                      x >= y};
      for (int m = 0; m < PTO_CMP_MODE_COUNT; m++)
        cr_expect_eq(out[m][r * C + c], want[m], "mode %d at %d,%d", m, r, c);
    }
  cr_expect_eq(out[PTO_CMP_NE][5], 1); /* NaN != y */
  cr_expect_eq(out[PTO_CMP_EQ][5], 0);
  cr_expect_eq(out[PTO_CMP_GE][6], 0);
  cr_expect_eq(out[PTO_CMP_EQ][3], 1);
  pto_program_free(p);
}

Test(core, eval_select_with_broadcast_mask_and_i32) {
  float a[R * C], b[R * C], thr[R], o[R * C];
  int32_t ia[R * C], ib[C], oi[R * C];
  fill(a, R * C, 17, -1, 1);
  fill(b, R * C, 18, -1, 1);
  fill(thr, R, 19, -1, 1);
  fill_i32(ia, R * C, 20, -100, 100);
  fill_i32(ib, C, 21, -100, 100);
  pto_program *p = pto_program_new("select");
  pto_tensor *ta = in2(p, "a", PTO_F32, R, C), *tb = in2(p, "b", PTO_F32, R, C);
  pto_tensor *tt = in2(p, "thr", PTO_F32, R, 1);
  pto_tensor *tia = in2(p, "ia", PTO_I32, R, C),
             *tib = in2(p, "ib", PTO_I32, 1, C);
  pto_tensor *mask = pto_cmp(p, ta, tt, PTO_CMP_GT); /* [R,C] */
  pto_tensor *rowmask =
      pto_cmp(p, tt, pto_full(p, PTO_F32, 2, (int64_t[]){1, 1}, 0.0),
              PTO_CMP_LT); /* [R,1] */
  pto_output(p, pto_select(p, mask, ta, tb), "sel");
  pto_output(p, pto_select(p, rowmask, tia, tib), "seli");
  const void *ins[] = {a, b, thr, ia, ib};
  void *outs[] = {o, oi};
  EVAL_OK(p, ins, outs);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      int i = r * C + c;
      EXPECT_F32(o[i], a[i] > thr[r] ? a[i] : b[i], "%d,%d", r, c);
      cr_expect_eq(oi[i], thr[r] < 0 ? ia[i] : ib[c], "i32 %d,%d", r, c);
    }
  pto_program_free(p);
}
