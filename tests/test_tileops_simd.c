/* tileops: every instruction table this CPU runs, called directly:
 * prefetch plans, the exp/log accuracy sweeps, and the SIMD stress of the
 * element, convert and memory instructions against the scalar table. */
#include "core/convert.h"
#include "core/prefetch.h"
#include "tests/tileops_test.h"

/* ---- every table, directly --------------------------------------------------
 * The generated tests (test_tileops.c) run the active table; ctest runs
 * them once per table (tileops-scalar/-avx2/-avx512). The tests below call
 * each table this CPU runs directly, on inputs the generic ones do not
 * reach. */

static void run_table(const pto_isa_table *t, int op, const pto_targs *a,
                      const char *ctx) {
  char msg[256];
  int st = pto__tileop_check(op, a, msg, sizeof msg);
  cr_assert_eq(st, 0, "%s: %s", ctx, msg);
  st = t->fn[op](op, a);
  cr_assert_eq(st, 0, "%s: %s returned %s", ctx, t->name, pto_status_name(st));
}

/* A prefetch plan (core/prefetch.h) handed to an instruction changes
 * nothing it computes; the SIMD tables draw lines from it as they loop over
 * long rows (the scalar reference ignores it), never beyond the plan. */
Test(tileops, instructions_draw_prefetch_lines, .fini = free_all) {
  const isa_list l = tables_here();
  static const unsigned char far[64 * 1024];
  const int ops[] = {PTO_OP_TROWMAX, PTO_OP_TROWSUM, PTO_OP_TROWEXPANDMUL,
                     PTO_OP_TEXP, PTO_OP_TROWEXPANDEXPDIFSUM};
  rng r = rng_seed(77);
  pto_tile *x = src_new(&r, PTO_F32, 8, 256, 7, 250, G_F32);
  pto_tile *v = src_new(&r, PTO_F32, 8, 1, 7, 1, G_F32);
  for (int t = 0; t < l.n; t++)
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
      const int op = ops[k];
      const int rowvec = op == PTO_OP_TROWMAX || op == PTO_OP_TROWSUM;
      pto_tile *d0 = dst_new(PTO_F32, 8, rowvec ? 1 : 256, 7, rowvec ? 1 : 250);
      pto_tile *d1 = dst_new(PTO_F32, 8, 1, 7, 1);
      pto_tile *e0 = tile_clone(d0), *e1 = tile_clone(d1);
      pto_targs a = {0};
      a.dst[0] = d0;
      a.dst[1] = op == PTO_OP_TROWEXPANDEXPDIFSUM ? d1 : NULL;
      a.src[0] = x;
      a.src[1] = rowvec || op == PTO_OP_TEXP ? NULL : v;
      char ctx[64];
      snprintf(ctx, sizeof ctx, "%s %s", l.t[t]->name, pto__insn_name(op));
      run_table(l.t[t], op, &a, ctx);
      pto_pf pf = {.n = 1, .lines = 1000};
      pf.w[0].p = far;
      pf.w[0].row_bytes = 1000 * PTO_PF_LINE;
      pf.w[0].rs_bytes = 0;
      pf.w[0].rows = 1;
      a.dst[0] = e0;
      a.dst[1] = a.dst[1] ? e1 : NULL;
      a.pf = &pf;
      run_table(l.t[t], op, &a, ctx);
      expect_valid(ctx, e0, d0);
      if (a.dst[1])
        expect_valid(ctx, e1, d1);
      if (l.t[t] == &pto__isa_scalar)
        cr_expect_eq(pf.done, 0, "%s: drew %lld lines", ctx,
                     (long long)pf.done);
      else
        cr_expect(pf.done > 0 && pf.done <= 1000, "%s: drew %lld lines", ctx,
                  (long long)pf.done);
      /* an exhausted plan stays exhausted */
      pf.lines = pf.done;
      const int64_t done = pf.done;
      run_table(l.t[t], op, &a, ctx);
      cr_expect_eq(pf.done, done, "%s", ctx);
    }
}

/* The error of got against exact, in f32 ulps at exact (below 2^-126 the
 * ulp is 2^-149; +-inf counts as +-2^128). -1 when got is wrong outright:
 * a NaN where a number is due, a number where a NaN or an infinity is. */
static double ulp_error(float got, double exact) {
  if (isnan(exact))
    return isnan(got) ? 0 : -1;
  if (isnan(got))
    return -1;
  if (isinf(exact) || fabs(exact) >= 0x1p128) /* must overflow */
    return isinf(got) && !signbit(got) == !signbit(exact) ? 0 : -1;
  double g = isinf(got) ? copysign(0x1p128, got) : got;
  return fabs(g - exact) / ulp_f32(exact);
}

/* The stated accuracy of the vector exp and log (tileops/vec_kernels.h);
 * libm's expf/logf (the scalar table) are within it too. */
#define EXP_LOG_MAX_ULP 1.0

typedef struct sweep_worst {
  double err;
  float x, got;
} sweep_worst;

/* Runs op (TEXP or TLOG) of every table on the n inputs in, as rows of a
 * tile with a tail (1021 of 1024 columns), and folds the worst error. */
static void sweep_chunk(int op, const float *in, uint32_t n,
                        sweep_worst *worst, const isa_list *l) {
  const uint32_t cols = 1024, vc = 1021, rows = (n + vc - 1) / vc;
  pto_tile *x = tile_new(PTO_F32, rows, cols, rows, vc, 0xff);
  for (uint32_t i = 0; i < rows * vc; i++)
    setf(x, i / vc, i % vc, in[i < n ? i : n - 1]);
  double *exact = keep(malloc(rows * vc * sizeof *exact));
  for (uint32_t i = 0; i < rows * vc; i++)
    exact[i] = op == PTO_OP_TEXP ? exp((double)getf(x, i / vc, i % vc))
                                 : log((double)getf(x, i / vc, i % vc));
  for (int k = 0; k < l->n; k++) {
    pto_tile *d = dst_new(PTO_F32, rows, cols, rows, vc);
    pto_targs a = {0};
    a.dst[0] = d;
    a.src[0] = x;
    run_table(l->t[k], op, &a, pto__insn_name(op));
    for (uint32_t i = 0; i < rows * vc; i++) {
      float got = getf(d, i / vc, i % vc);
      double e = ulp_error(got, exact[i]);
      sweep_worst *w = &worst[k];
      if (e < 0 || e > w->err) {
        w->err = e < 0 ? INFINITY : e;
        w->x = getf(x, i / vc, i % vc);
        w->got = got;
      }
    }
    for (uint32_t r = 0; r < rows; r++) /* the tail columns: untouched */
      for (uint32_t c = vc; c < d->stride; c++)
        cr_assert_eq(*(unsigned char *)el(d, r, c), SENTINEL);
  }
  free_all();
}

/* Bit patterns lo, lo + step, ... up to hi, in chunks. */
static void sweep_bits(int op, uint32_t lo, uint32_t hi, uint32_t step,
                       sweep_worst *worst, const isa_list *l) {
  enum { CHUNK = 1 << 16 };
  static float in[CHUNK];
  uint32_t n = 0;
  for (uint64_t u = lo; u <= hi; u += step) {
    in[n++] = pto__f32_from_bits((uint32_t)u);
    if (n == CHUNK) {
      sweep_chunk(op, in, n, worst, l);
      n = 0;
    }
  }
  if (n)
    sweep_chunk(op, in, n, worst, l);
}

static void expect_sweep(int op, const sweep_worst *worst, const isa_list *l) {
  for (int k = 0; k < l->n; k++) {
    cr_log_info("%s %s: max error %.3f ulp (x = %a, got %a)", l->t[k]->name,
                pto__insn_name(op), worst[k].err, worst[k].x, worst[k].got);
    cr_expect_leq(worst[k].err, EXP_LOG_MAX_ULP,
                  "%s %s: %.3f ulp at x = %a (%.9g): got %a, exact %.17g",
                  l->t[k]->name, pto__insn_name(op), worst[k].err, worst[k].x,
                  worst[k].x, worst[k].got,
                  op == PTO_OP_TEXP ? exp(worst[k].x) : log(worst[k].x));
  }
}

/* exp over every 37th f32 in [-105, 90] (subnormal results, underflow to 0
 * and overflow to +inf included), a sparse pass over every bit pattern
 * (NaNs, infinities, both zeros), and the edges one by one. */
Test(tileops, vec_exp_sweep, .fini = free_all, .timeout = 600) {
  isa_list l = tables_here();
  sweep_worst worst[ISA_TABLES_MAX] = {{0}};
  sweep_bits(PTO_OP_TEXP, 0x00000000u, 0x42b40000u, 37, worst, &l); /* 90 */
  sweep_bits(PTO_OP_TEXP, 0x80000000u, 0xc2d20000u, 37, worst, &l); /* -105 */
  sweep_bits(PTO_OP_TEXP, 0x00000000u, 0xffffffffu, 4099, worst, &l);
  static const float edges[] = {
      0.0f,        -0.0f,       INFINITY,    -INFINITY,   NAN,
      -NAN,        88.7228f,    88.72283f,   88.722839f,  88.7228394f,
      89.0f,       1e30f,       -87.3365f,   -103.27893f, -103.97208f,
      -104.0f,     -1e30f,      0x1p-149f,   -0x1p-149f,  0x1p-126f,
      1e-8f,       -1e-8f,      0.34657359f, -0.34657359f};
  sweep_chunk(PTO_OP_TEXP, edges, sizeof edges / sizeof edges[0], worst, &l);
  /* a causal mask's vectors: results under 2^-150 (-inf, -104.5, ...)
   * beside normal ones and NaN, and no subnormal result, which the SIMD
   * tables take apart from the rest (a scaling that underflows costs an
   * Intel core a microcode assist per vector) */
  static const float masked[] = {
      -INFINITY, 1.5f,       -104.5f,   -85.9f,    NAN,       -1e30f,
      0.0f,      20.0f,      -INFINITY, -3.25f,    -200.0f,   -0x1p-149f,
      88.72f,    -104.0001f, -86.0f,    -INFINITY, -INFINITY, -0.5f,
      -INFINITY, -60.0f,     -1e30f,    -INFINITY, 7.0f,      -110.0f,
      -INFINITY, -INFINITY,  -INFINITY, -INFINITY, -INFINITY, -INFINITY,
      -INFINITY, -INFINITY,  -INFINITY, -1.0f};
  sweep_chunk(PTO_OP_TEXP, masked, sizeof masked / sizeof masked[0], worst, &l);
  expect_sweep(PTO_OP_TEXP, worst, &l);
}

/* log over every 17th f32 in (0, 4) and every 61st above (subnormal inputs
 * included), a sparse pass over every bit pattern (negatives -> NaN, +-0 ->
 * -inf, inf, NaN), and the edges one by one. */
Test(tileops, vec_log_sweep, .fini = free_all, .timeout = 600) {
  isa_list l = tables_here();
  sweep_worst worst[ISA_TABLES_MAX] = {{0}};
  sweep_bits(PTO_OP_TLOG, 0x00000001u, 0x40800000u, 17, worst, &l);
  sweep_bits(PTO_OP_TLOG, 0x40800000u, 0x7f800000u, 61, worst, &l);
  sweep_bits(PTO_OP_TLOG, 0x00000000u, 0xffffffffu, 4099, worst, &l);
  static const float edges[] = {
      0.0f,        -0.0f,       INFINITY,   -INFINITY,   NAN,
      -NAN,        1.0f,        -1.0f,      0x1p-149f,   0x1p-126f,
      0x1.fffffep-127f, 3.4028235e38f, 0.70710677f, 0.70710683f, 1.4142135f,
      1.4142137f,  0x1.fffffep-1f, 0x1.000002p+0f, 2.0f, 0.5f};
  sweep_chunk(PTO_OP_TLOG, edges, sizeof edges / sizeof edges[0], worst, &l);
  expect_sweep(PTO_OP_TLOG, worst, &l);
}

/* ---- SIMD stress: every table against the scalar reference -------------------
 * The scalar table is checked against the suite's oracle by the generated
 * tests; here every other table must reproduce it (bit for bit where the
 * instruction is exact and for i32, else within 2 ulp or a sum's
 * tolerance), padding included, at every width 1..70 (every tail of both
 * vector lengths, one and more vectors), on values chosen to break SIMD
 * code: NaN, +-0, +-inf, subnormals, bf16/f16 rounding ties, i32 extremes. */

float nasty_f32(rng *r) {
  switch (below(r, 8)) {
  case 0:
    return specials[below(r, N_SPECIALS)];
  case 1: { /* a bf16 tie */
    uint32_t u = ((uint32_t)below(r, 0x7f80) << 16) | 0x8000u |
                 (below(r, 2) ? 0x80000000u : 0);
    return pto__f32_from_bits(u);
  }
  case 2: { /* an f16 tie */
    uint16_t h = (uint16_t)below(r, 0x7bff);
    float f = (float)((f16_value(h) + f16_value((uint16_t)(h + 1))) / 2);
    return below(r, 2) ? f : -f;
  }
  case 3: /* any bit pattern */
    return pto__f32_from_bits((uint32_t)next(r));
  case 4:
    return (float)((int)below(r, 9) - 4) * (below(r, 2) ? 1.0f : 0.5f);
  default:
    return (float)uniform(r, -100, 100);
  }
}

static int32_t nasty_i32(rng *r) {
  static const int32_t s[] = {0, 1, -1, INT32_MIN, INT32_MAX, INT32_MIN + 1,
                              INT32_MAX - 1, 16777217, -16777217};
  switch (below(r, 4)) {
  case 0:
    return s[below(r, sizeof s / sizeof s[0])];
  case 1:
    return (int32_t)below(r, 21) - 10;
  default:
    return (int32_t)(uint32_t)next(r);
  }
}

static void nasty_fill(rng *r, pto_tile *t) {
  for (uint32_t i = 0; i < t->valid_rows; i++)
    for (uint32_t j = 0; j < t->valid_cols; j++) {
      if (t->dtype == PTO_F32) {
        setf(t, i, j, nasty_f32(r));
      } else if (t->dtype == PTO_I32) {
        seti(t, i, j, nasty_i32(r));
      } else {
        uint16_t h = (uint16_t)next(r);
        memcpy(el(t, i, j), &h, 2);
      }
    }
}

/* rows x cols valid, capacity a little larger, poison around it. */
static pto_tile *nasty_src(rng *r, pto_dtype dt, uint32_t rows,
                           uint32_t cols) {
  pto_tile *t = tile_new(dt, rows + 1, cols + 3, rows, cols,
                         below(r, 2) ? 0x7f : 0xff);
  nasty_fill(r, t);
  return t;
}

/* Compares a table's dst with the scalar one over the whole buffer. */
static void expect_same_tile(const char *ctx, const char *isa, int op,
                             const pto_tile *got, const pto_tile *want) {
  int exact = op_exact(op) || got->dtype != PTO_F32;
  int sum = op == PTO_OP_TROWSUM || op == PTO_OP_TCOLSUM;
  char b1[64], b2[64];
  for (uint32_t r = 0; r < got->rows; r++)
    for (uint32_t c = 0; c < got->stride; c++) {
      const void *g = el(got, r, c), *w = el(want, r, c);
      int in = r < want->valid_rows && c < want->valid_cols;
      if (elem_same(got->dtype, g, w))
        continue;
      if (in && !exact) {
        double x = getf(got, r, c), v = getf(want, r, c);
        /* sums of <= 70 terms in [-8, 8] in another order: each partial
         * sum rounds by <= 2^-24 * 560 */
        double tol = sum ? 70 * 0x1p-24 * 560 : 2 * ulp_f32(v);
        if (!isnan(x) && !isnan(v) && !isinf(v) && fabs(x - v) <= tol)
          continue;
      }
      cr_assert_fail("%s on %s: (%u,%u) is %s, scalar gives %s%s", ctx, isa, r,
                     c, show(got->dtype, g, b1, sizeof b1),
                     show(got->dtype, w, b2, sizeof b2),
                     in ? "" : " (outside the valid region)");
    }
}

/* Runs a (built for the scalar table, whose dsts are fresh) on every table,
 * each into fresh copies of the dsts; in_place: dst[0] is src[0]. */
void stress_run(int op, pto_targs *a, int in_place, const char *ctx) {
  isa_list l = tables_here();
  const pto_tile *src0 = a->src[0];
  pto_tile *want[2] = {a->dst[0], a->dst[1]};
  for (int k = 0; k < l.n; k++) {
    pto_targs b = *a;
    for (int i = 0; i < 2; i++)
      if (want[i])
        b.dst[i] = tile_clone(want[i]);
    if (in_place) { /* dst[0] starts as a copy of src0 */
      b.dst[0] = tile_clone(src0);
      b.src[0] = b.dst[0];
    }
    run_table(l.t[k], op, &b, ctx);
    if (k == 0) { /* the scalar table: its results are the expectation */
      for (int i = 0; i < 2; i++)
        want[i] = b.dst[i];
      continue;
    }
    for (int i = 0; i < 2; i++)
      if (want[i])
        expect_same_tile(ctx, l.t[k]->name, op, b.dst[i], want[i]);
  }
}

static const int stress_ops_binary[] = {
    PTO_OP_TADD,          PTO_OP_TSUB,          PTO_OP_TMUL,
    PTO_OP_TDIV,          PTO_OP_TMAX,          PTO_OP_TMIN,
    PTO_OP_TROWEXPANDADD, PTO_OP_TROWEXPANDSUB, PTO_OP_TROWEXPANDMUL,
    PTO_OP_TROWEXPANDDIV, PTO_OP_TROWEXPANDMAX, PTO_OP_TROWEXPANDEXPDIF,
    PTO_OP_TCOLEXPANDADD, PTO_OP_TCOLEXPANDSUB, PTO_OP_TCOLEXPANDMUL,
    PTO_OP_TCOLEXPANDDIV};
static const int stress_ops_unary[] = {
    PTO_OP_TEXP,    PTO_OP_TLOG,    PTO_OP_TSQRT,   PTO_OP_TRSQRT,
    PTO_OP_TRECIP,  PTO_OP_TRELU,   PTO_OP_TABS,    PTO_OP_TNEG,
    PTO_OP_TADDS,   PTO_OP_TSUBS,   PTO_OP_TMULS,   PTO_OP_TDIVS,
    PTO_OP_TMAXS,   PTO_OP_TMINS,   PTO_OP_TEXPANDS, PTO_OP_TROWSUM,
    PTO_OP_TROWMAX, PTO_OP_TROWMIN, PTO_OP_TCOLSUM, PTO_OP_TCOLMAX,
    PTO_OP_TCOLMIN, PTO_OP_TROWEXPAND, PTO_OP_TCOLEXPAND};

static int takes_i32(int op) {
  return (pto__insn_info(op)->flags & PTO_IF_INT) != 0;
}

Test(tileops, simd_stress_element_scalar_axis, .fini = free_all,
     .timeout = 600) {
  static const double scal[] = {2.5, -0.0, 0.0, INFINITY, -INFINITY, NAN,
                                -7.0, 3e9, -1e-40};
  char ctx[128];
  for (uint32_t w = 1; w <= 70; w++)
    for (uint32_t rows = 1; rows <= 3; rows += 2)
      for (int di = 0; di < 2; di++) {
        pto_dtype dt = di ? PTO_I32 : PTO_F32;
        rng r = rng_seed(seed_of(w, rows, di, 77));
        for (size_t k = 0; k < sizeof stress_ops_binary / sizeof(int); k++) {
          int op = stress_ops_binary[k];
          if (dt == PTO_I32 && !takes_i32(op))
            continue;
          int rowv = op >= PTO_OP_TROWEXPANDADD && op <= PTO_OP_TROWEXPANDEXPDIF;
          int colv = op >= PTO_OP_TCOLEXPANDADD && op <= PTO_OP_TCOLEXPANDDIV;
          pto_tile *x = nasty_src(&r, dt, rows, w);
          pto_tile *y = nasty_src(&r, dt, rowv ? rows : colv ? 1 : rows,
                                  rowv ? 1 : w);
          pto_targs a = {0};
          a.dst[0] = dst_new(dt, rows + 1, w + 3, rows, w);
          a.src[0] = x;
          a.src[1] = y;
          snprintf(ctx, sizeof ctx, "%s %s %ux%u", pto__insn_name(op),
                   pto_dtype_name(dt), rows, w);
          stress_run(op, &a, 0, ctx);
          stress_run(op, &a, 1, ctx);
          free_all();
        }
        for (size_t k = 0; k < sizeof stress_ops_unary / sizeof(int); k++) {
          int op = stress_ops_unary[k];
          if (dt == PTO_I32 && !takes_i32(op))
            continue;
          const pto_insn_info *info = pto__insn_info(op);
          int rowred = op >= PTO_OP_TROWSUM && op <= PTO_OP_TROWMIN;
          int colred = op >= PTO_OP_TCOLSUM && op <= PTO_OP_TCOLMIN;
          int rowexp = op == PTO_OP_TROWEXPAND, colexp = op == PTO_OP_TCOLEXPAND;
          pto_tile *x = nasty_src(&r, dt, rowexp ? rows : colexp ? 1 : rows,
                                  rowexp ? 1 : w);
          if (dt == PTO_F32 && (op == PTO_OP_TROWSUM || op == PTO_OP_TCOLSUM))
            fill_valid(&r, x, G_SUM); /* f32 sums: any order, a tolerance */
          pto_targs a = {0};
          a.dst[0] = rowred ? dst_new(dt, rows + 1, 1, rows, 1)
                     : colred ? dst_new(dt, 1, w + 3, 1, w)
                              : dst_new(dt, rows + 1, w + 3, rows, w);
          a.src[0] = info->n_src ? x : NULL;
          a.s = scal[below(&r, sizeof scal / sizeof scal[0])];
          snprintf(ctx, sizeof ctx, "%s %s %ux%u s=%g", pto__insn_name(op),
                   pto_dtype_name(dt), rows, w, a.s);
          stress_run(op, &a, 0, ctx);
          if (info->family == PTO_FAMILY_ELEMENT ||
              (info->family == PTO_FAMILY_SCALAR && info->n_src))
            stress_run(op, &a, 1, ctx);
          free_all();
        }
        /* compare (every mode) and select */
        for (int mode = 0; mode < PTO_CMP_MODE_COUNT; mode++) {
          pto_targs a = {0};
          a.dst[0] = dst_new(PTO_I32, rows + 1, w + 3, rows, w);
          a.src[0] = nasty_src(&r, dt, rows, w);
          a.src[1] = below(&r, 2) ? a.src[0] : nasty_src(&r, dt, rows, w);
          a.imm[0] = mode;
          snprintf(ctx, sizeof ctx, "TCMP %s mode %d %ux%u", pto_dtype_name(dt),
                   mode, rows, w);
          stress_run(PTO_OP_TCMP, &a, 0, ctx);
        }
        pto_targs sel = {0};
        sel.dst[0] = dst_new(dt, rows + 1, w + 3, rows, w);
        sel.src[0] = nasty_src(&r, PTO_I32, rows, w);
        sel.src[1] = nasty_src(&r, dt, rows, w);
        sel.src[2] = nasty_src(&r, dt, rows, w);
        snprintf(ctx, sizeof ctx, "TSEL %s %ux%u", pto_dtype_name(dt), rows, w);
        stress_run(PTO_OP_TSEL, &sel, 0, ctx);
        free_all();
      }
}

/* TCVT and TMOV (with and without ReLU) between every dtype pair. */
Test(tileops, simd_stress_convert, .fini = free_all, .timeout = 600) {
  char ctx[128];
  for (uint32_t w = 1; w <= 70; w++)
    for (int from = 0; from < PTO_DTYPE_COUNT; from++)
      for (int to = 0; to < PTO_DTYPE_COUNT; to++)
        for (int k = 0; k < 3; k++) { /* TCVT, TMOV, TMOV relu */
          rng r = rng_seed(seed_of(w, from, to, k));
          int op = k ? PTO_OP_TMOV : PTO_OP_TCVT;
          uint32_t rows = 1 + w % 3;
          pto_targs a = {0};
          a.src[0] = nasty_src(&r, (pto_dtype)from, rows, w);
          a.dst[0] = dst_new((pto_dtype)to, rows + 1, w + 3, rows, w);
          a.flags = k == 2 ? PTO_TF_RELU : 0;
          snprintf(ctx, sizeof ctx, "%s %s -> %s%s %ux%u", pto__insn_name(op),
                   pto_dtype_name((pto_dtype)from), pto_dtype_name((pto_dtype)to),
                   k == 2 ? " relu" : "", rows, w);
          stress_run(op, &a, 0, ctx);
          if (dsize((pto_dtype)from) == dsize((pto_dtype)to)) {
            pto_tile *same = tile_clone(a.src[0]); /* in place, dst retyped */
            a.src[0] = same;
            a.dst[0] = tile_clone(same);
            a.dst[0]->dtype = (pto_dtype)to;
            stress_run(op, &a, 0, ctx);
          }
          free_all();
        }
}

/* TLOAD, TSTORE (plain and accumulating), TGATHER and TGATHERELSE between
 * every tile and global dtype, row-major globals with padded rows. */
Test(tileops, simd_stress_memory, .fini = free_all, .timeout = 600) {
  char ctx[128];
  isa_list l = tables_here();
  for (uint32_t w = 1; w <= 70; w++)
    for (int gd = 0; gd < PTO_DTYPE_COUNT; gd++)
      for (int td = 0; td < PTO_DTYPE_COUNT; td++) {
        pto_dtype gdt = (pto_dtype)gd, tdt = (pto_dtype)td;
        rng r = rng_seed(seed_of(w, gd, td, 5));
        uint32_t rows = 1 + w % 4;
        /* a global rows+2 x w+1 window, nasty contents */
        pto_tile *gt = nasty_src(&r, gdt, rows + 2, w + 1);
        pto_gview g = {gt->data, gdt, rows + 2, w + 1, gt->stride, 1};
        pto_targs ld = {0};
        ld.dst[0] = dst_new(tdt, rows + 1, w + 3, rows, w);
        ld.g = g;
        snprintf(ctx, sizeof ctx, "TLOAD %s <- %s %ux%u", pto_dtype_name(tdt),
                 pto_dtype_name(gdt), rows, w);
        stress_run(PTO_OP_TLOAD, &ld, 0, ctx);

        pto_targs ga = {0};
        ga.dst[0] = dst_new(tdt, rows + 1, w + 3, rows, w);
        ga.src[0] = tile_new(PTO_I32, 1, rows, 1, rows, 0);
        for (uint32_t i = 0; i < rows; i++)
          seti((pto_tile *)ga.src[0], 0, i, (int32_t)below(&r, rows + 5) - 2);
        ga.g = g;
        snprintf(ctx, sizeof ctx, "TGATHER %s <- %s %ux%u",
                 pto_dtype_name(tdt), pto_dtype_name(gdt), rows, w);
        stress_run(PTO_OP_TGATHER, &ga, 0, ctx);
        /* the rows of -1 (some of the indices) from a tile of dst's shape */
        ga.src[1] = nasty_src(&r, tdt, rows, w);
        ga.dst[0] = dst_new(tdt, rows + 1, w + 3, rows, w);
        snprintf(ctx, sizeof ctx, "TGATHERELSE %s <- %s %ux%u",
                 pto_dtype_name(tdt), pto_dtype_name(gdt), rows, w);
        stress_run(PTO_OP_TGATHERELSE, &ga, 0, ctx);

        pto_tile *x = nasty_src(&r, tdt, rows, w);
        /* plain, accumulating, streaming (same results; the window starts
         * 0..2 elements past an aligned address, so streaming stores get an
         * unaligned head) */
        for (int acc = 0; acc < 3; acc++) {
          pto_tile *want = NULL;
          for (int k = 0; k < l.n; k++) {
            pto_tile *gk = tile_clone(gt);
            pto_targs st = {0};
            st.src[0] = x;
            st.g = g;
            st.g.base = (unsigned char *)gk->data + (w % 3) * dsize(gdt);
            st.flags = acc == 1 ? PTO_TF_ACC : acc == 2 ? PTO_TF_STREAM : 0;
            snprintf(ctx, sizeof ctx, "TSTORE %s -> %s%s %ux%u",
                     pto_dtype_name(tdt), pto_dtype_name(gdt),
                     acc == 1 ? " acc" : acc == 2 ? " stream" : "", rows, w);
            run_table(l.t[k], PTO_OP_TSTORE, &st, ctx);
            if (k == 0)
              want = gk;
            else
              expect_same_tile(ctx, l.t[k]->name, PTO_OP_TSTORE, gk, want);
          }
        }
        free_all();
      }
}

