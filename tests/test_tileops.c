/* tileops: the tile instructions, through pto__tileop_run on the active table.
 *
 * Every instruction in core/isa.def gets a generated test (Test(tileops,
 * TADD) ...) that runs it on random operands (fixed seeds) over several
 * shapes, tail tiles included (13x37 valid in a 16x48 tile), for f32 and for
 * i32 where the instruction has PTO_IF_INT, and for bf16/f16 where it
 * converts (TLOAD TSTORE TGATHER TCVT TMOV TMATMUL*; moves also on bf16/f16),
 * and checks it against an independent plain-C oracle (cases[] below, one
 * driver per row in the file of its concern; nothing in the suite calls
 * tileops/ref.c or core/convert.h, except the tests of convert.h itself).
 * `coverage` fails when an instruction has no oracle.
 *
 * The suite's files (one executable, tests/tileops_test.h shares helpers):
 *  test_tileops.c            the oracle table, the generated tests, custom
 *                            instructions, the instruction tables
 *  test_tileops_element.c    element-wise, tile-scalar, fill and axis
 *                            drivers; core/convert.h against the oracle
 *  test_tileops_matmul.c     TMATMUL, TMATMUL_ACC (row scale),
 *                            TMATMUL_RELU_WSUM, TMATMUL_GA, TMATMUL_GB,
 *                            packed operands
 *  test_tileops_wsum_g.c     TMATMUL_RELU_WSUM_G (the keys read in place),
 *                            and with Q^T packed on every table
 *  test_tileops_memory.c     move and memory drivers
 *  test_tileops_sort.c       TSORT32 TMRGSORT TTOPK TMRGTOPK, their stress
 *  test_tileops_attention.c  TSOFTMAXONLINE (also on transposed scores)
 *                            TSOFTMAXFINAL; a sparse attention step
 *                            chaining them with TMATMUL_GA and TMATMUL_GB
 *  test_tileops_check.c      pto__tileop_check's operand rules: geometry,
 *                            element-wise, axis, memory, movement, sort,
 *                            aliasing
 *  test_tileops_check_matmul.c  ... of the matmul family,
 *                            TSOFTMAXONLINE, TSOFTMAXFINAL, packed operands
 *  test_tileops_simd.c       every table directly: prefetch, the exp/log
 *                            sweeps, SIMD stress against the scalar table
 *
 * Destinations start filled with a sentinel byte and every element outside
 * the valid region (row padding included) must still hold it afterwards,
 * except for TFILLPAD, which writes the whole capacity. Sources hold poison
 * (huge values or NaN) outside their valid region, so reading it shows.
 *
 * Comparison:
 *  - PTO_IF_EXACT instructions, and every i32 result: bit-exact, except that
 *    any NaN matches any NaN (payloads are not part of the semantics).
 *  - TEXP TLOG TRSQRT TROWEXPANDEXPDIF(SUM): within 2 ulp (f32 ulp at the
 *    expected value) of the result computed in double (for EXPDIF: exp in
 *    double of the f32 difference, since the difference is an f32 op).
 *  - TROWEXPANDEXPDIFSUM's row sums: as TROWSUM's, of those exps.
 *    expf/logf are < 1 ulp; 1/sqrtf rounds twice, which stays < 2 ulp.
 *  - f32 TROWSUM TCOLSUM: |got - exact| <= 1e-5 * sqrt(n) * sum |x_i|.
 *  - TMATMUL(_ACC): |got - exact| <= 1e-5 * sqrt(K) * (sum_k |a_k b_k| +
 *    |acc|). An f32 sum in order has error <= n * 2^-24 * sum |terms|, so
 *    these bounds hold with a wide margin for the sizes used here. The
 *    same bound holds for bf16 and f16 operands: the oracle reads their
 *    exact values, and a product of two bf16 (8 significant bits each) or
 *    two f16 (11) is exact in f32, so only the f32 sum's order differs
 *    (the bf16 matmul is defined as exact products summed in f32).
 *  Infinite or NaN expected values must be matched exactly (NaN by NaN).
 */
#include "core/custom.h"
#include "tests/tileops_test.h"

/* ---- oracle functions ------------------------------------------------------
 * f32 ops on f32 operands computed in double and rounded once to f32: exact
 * for + - * / sqrt (double has more than 2*24+2 bits). i32 ops in int64 and
 * wrapped. */

static double o_add(double x, double y) {
  return x + y;
}
static double o_sub(double x, double y) {
  return x - y;
}
static double o_mul(double x, double y) {
  return x * y;
}
static double o_div(double x, double y) {
  return x / y;
}
/* IEEE 754-2019 maximum/minimum. */
double o_max(double x, double y) {
  if (isnan(x) || isnan(y))
    return NAN;
  if (x == 0 && y == 0)
    return signbit(x) && signbit(y) ? -0.0 : 0.0;
  return x > y ? x : y;
}
double o_min(double x, double y) {
  if (isnan(x) || isnan(y))
    return NAN;
  if (x == 0 && y == 0)
    return signbit(x) || signbit(y) ? -0.0 : 0.0;
  return x < y ? x : y;
}
static double o_expdif(double x, double y) {
  return exp((float)(x - y));
}

static int64_t oi_add(int64_t x, int64_t y) {
  return x + y;
}
static int64_t oi_sub(int64_t x, int64_t y) {
  return x - y;
}
static int64_t oi_mul(int64_t x, int64_t y) {
  return x * y;
}
static int64_t oi_div(int64_t x, int64_t y) {
  return y == 0 ? 0 : x / y;
}
int64_t oi_max(int64_t x, int64_t y) {
  return x > y ? x : y;
}
int64_t oi_min(int64_t x, int64_t y) {
  return x < y ? x : y;
}

static double o_exp(double x) {
  return exp(x);
}
static double o_log(double x) {
  return log(x);
}
static double o_sqrt(double x) {
  return sqrt(x);
}
static double o_rsqrt(double x) {
  return 1 / sqrt(x);
}
static double o_recip(double x) {
  return 1 / x;
}
static double o_relu(double x) {
  return isnan(x) ? x : x > 0 ? x : 0.0;
}
static double o_abs(double x) {
  return fabs(x);
}
static double o_neg(double x) {
  return -x;
}
static int64_t oi_relu(int64_t x) {
  return x > 0 ? x : 0;
}
static int64_t oi_abs(int64_t x) {
  return x < 0 ? -x : x;
}
static int64_t oi_neg(int64_t x) {
  return -x;
}

/* ---- the oracle table: one row per instruction ------------------------------
 */

#define BIN(f, i, g1)                                                          \
  { .drive = drive_binary, .fb = f, .ib = i, .gen0 = G_F32, .gen1 = g1 }
#define UN(f, i, g)                                                            \
  { .drive = drive_unary, .fu = f, .iu = i, .gen0 = g }
#define SCAL(f, i)                                                             \
  { .drive = drive_scalar, .fb = f, .ib = i, .gen0 = G_F32 }
#define REXP(f, i, g1)                                                         \
  { .drive = drive_rowexpand2, .fb = f, .ib = i, .gen0 = G_F32, .gen1 = g1 }
#define CEXP(f, i, g1)                                                         \
  { .drive = drive_colexpand2, .fb = f, .ib = i, .gen0 = G_F32, .gen1 = g1 }

static const oracle_case cases[PTO_OP_COUNT] = {
    [PTO_OP_TLOAD] = {.drive = drive_load},
    [PTO_OP_TSTORE] = {.drive = drive_store},
    [PTO_OP_TGATHER] = {.drive = drive_gather},
    [PTO_OP_TGATHERELSE] = {.drive = drive_gather},
    [PTO_OP_TADD] = BIN(o_add, oi_add, G_F32),
    [PTO_OP_TSUB] = BIN(o_sub, oi_sub, G_F32),
    [PTO_OP_TMUL] = BIN(o_mul, oi_mul, G_F32),
    [PTO_OP_TDIV] = BIN(o_div, oi_div, G_DIV),
    [PTO_OP_TMAX] = BIN(o_max, oi_max, G_SMALL),
    [PTO_OP_TMIN] = BIN(o_min, oi_min, G_SMALL),
    [PTO_OP_TEXP] = UN(o_exp, NULL, G_EXP),
    [PTO_OP_TLOG] = UN(o_log, NULL, G_POS),
    [PTO_OP_TSQRT] = UN(o_sqrt, NULL, G_POS),
    [PTO_OP_TRSQRT] = UN(o_rsqrt, NULL, G_POS),
    [PTO_OP_TRECIP] = UN(o_recip, NULL, G_F32),
    [PTO_OP_TRELU] = UN(o_relu, oi_relu, G_SMALL),
    [PTO_OP_TABS] = UN(o_abs, oi_abs, G_F32),
    [PTO_OP_TNEG] = UN(o_neg, oi_neg, G_F32),
    [PTO_OP_TCMP] = {.drive = drive_cmp},
    [PTO_OP_TSEL] = {.drive = drive_sel},
    [PTO_OP_TCVT] = {.drive = drive_convert},
    [PTO_OP_TADDS] = SCAL(o_add, oi_add),
    [PTO_OP_TSUBS] = SCAL(o_sub, oi_sub),
    [PTO_OP_TMULS] = SCAL(o_mul, oi_mul),
    [PTO_OP_TDIVS] = SCAL(o_div, oi_div),
    [PTO_OP_TMAXS] = SCAL(o_max, oi_max),
    [PTO_OP_TMINS] = SCAL(o_min, oi_min),
    [PTO_OP_TEXPANDS] = {.drive = drive_fill},
    [PTO_OP_TROWSUM] = {.drive = drive_rowred, .red = R_SUM},
    [PTO_OP_TROWMAX] = {.drive = drive_rowred, .red = R_MAX},
    [PTO_OP_TROWMIN] = {.drive = drive_rowred, .red = R_MIN},
    [PTO_OP_TCOLSUM] = {.drive = drive_colred, .red = R_SUM},
    [PTO_OP_TCOLMAX] = {.drive = drive_colred, .red = R_MAX},
    [PTO_OP_TCOLMIN] = {.drive = drive_colred, .red = R_MIN},
    [PTO_OP_TROWEXPAND] = {.drive = drive_rowexpand, .gen1 = G_F32},
    [PTO_OP_TROWEXPANDADD] = REXP(o_add, oi_add, G_F32),
    [PTO_OP_TROWEXPANDSUB] = REXP(o_sub, oi_sub, G_F32),
    [PTO_OP_TROWEXPANDMUL] = REXP(o_mul, oi_mul, G_F32),
    [PTO_OP_TROWEXPANDDIV] = REXP(o_div, oi_div, G_DIV),
    [PTO_OP_TROWEXPANDMAX] = REXP(o_max, oi_max, G_SMALL),
    [PTO_OP_TROWEXPANDEXPDIF] = REXP(o_expdif, NULL, G_F32),
    [PTO_OP_TCOLEXPAND] = {.drive = drive_colexpand, .gen1 = G_F32},
    [PTO_OP_TCOLEXPANDADD] = CEXP(o_add, oi_add, G_F32),
    [PTO_OP_TCOLEXPANDSUB] = CEXP(o_sub, oi_sub, G_F32),
    [PTO_OP_TCOLEXPANDMUL] = CEXP(o_mul, oi_mul, G_F32),
    [PTO_OP_TCOLEXPANDDIV] = CEXP(o_div, oi_div, G_DIV),
    [PTO_OP_TMATMUL] = {.drive = drive_matmul},
    [PTO_OP_TMATMUL_ACC] = {.drive = drive_matmul},
    [PTO_OP_TMATMUL_RELU_WSUM] = {.drive = drive_wsum},
    [PTO_OP_TMOV] = {.drive = drive_convert},
    [PTO_OP_TEXTRACT] = {.drive = drive_extract},
    [PTO_OP_TINSERT] = {.drive = drive_insert},
    [PTO_OP_TTRANS] = {.drive = drive_trans},
    [PTO_OP_TFILLPAD] = {.drive = drive_fillpad},
    [PTO_OP_TSORT32] = {.drive = drive_sort32},
    [PTO_OP_TMRGSORT] = {.drive = drive_mrgsort},
    [PTO_OP_TCI] = {.drive = drive_fill},
    [PTO_OP_TTRI] = {.drive = drive_fill},
    [PTO_OP_TROWEXPANDEXPDIFSUM] = {.drive = drive_rowexpsum, .fb = o_expdif,
                                    .gen0 = G_F32, .gen1 = G_F32},
    [PTO_OP_TROWEXPANDMULSTORE] = {.drive = drive_mulstore},
    [PTO_OP_TLOADROWMAX] = {.drive = drive_loadmax},
    [PTO_OP_TLOADEXPDIFSUM] = {.drive = drive_loadexpsum, .fb = o_expdif},
    [PTO_OP_TLOADSOFTMAXSTORE] = {.drive = drive_loadsoftmax},
    [PTO_OP_TSOFTMAXONLINE] = {.drive = drive_smonline},
    [PTO_OP_TSOFTMAXFINAL] = {.drive = drive_smfinal},
    [PTO_OP_TTOPK] = {.drive = drive_topk},
    [PTO_OP_TMRGTOPK] = {.drive = drive_mrgtopk},
    [PTO_OP_TMATMUL_GA] = {.drive = drive_matmul_ga},
    [PTO_OP_TMATMUL_GB] = {.drive = drive_matmul_gb},
    [PTO_OP_TMATMUL_RELU_WSUM_G] = {.drive = drive_wsum_g},
    [PTO_OP_TTRIFILL] = {.drive = drive_trifill},
};

static void run_case(int op) {
  const oracle_case *oc = &cases[op];
  cr_assert_not_null(oc->drive, "%s has no oracle in cases[]",
                     pto__insn_name(op));
  oc->drive(op, oc);
}

/* One test per instruction, generated from the list. */
#define PTO_INSN(name, fam, core, nsrc, ndst, cls, flags)                      \
  Test(tileops, name, .fini = free_all) {                                      \
    run_case(PTO_OP_##name);                                                   \
  }
#include "core/isa.def"
#undef PTO_INSN

Test(tileops, coverage) {
  int missing = 0;
  for (int op = 0; op < PTO_OP_COUNT; op++)
    if (!cases[op].drive) {
      cr_log_error("%s has no oracle in cases[]", pto__insn_name(op));
      missing++;
    }
  cr_expect_eq(missing, 0, "%d instructions have no oracle", missing);
  for (int op = 0; op < PTO_OP_COUNT; op++)
    cr_expect_not_null(pto__isa_scalar.fn[op], "scalar table lacks %s",
                       pto__insn_name(op));
}

/* ---- custom instructions
 * ------------------------------------------------------ */

/* dst = k * src0 (+ src1), k = *user. */
static int custom_axpy(pto_tile *dst, const pto_tile *const *src, int n_src,
                       void *user) {
  float k = *(const float *)user;
  for (uint32_t r = 0; r < dst->valid_rows; r++)
    for (uint32_t c = 0; c < dst->valid_cols; c++)
      setf(dst, r, c,
           k * getf(src[0], r, c) + (n_src > 1 ? getf(src[1], r, c) : 0));
  return 0;
}

static int custom_fails(pto_tile *dst, const pto_tile *const *src, int n_src,
                        void *user) {
  (void)dst, (void)src, (void)n_src, (void)user;
  return PTO_ERANGE;
}

Test(tileops, custom_instruction_runs_through_dispatch, .fini = free_all) {
  static float k = 3.0f;
  pto_custom_op_desc desc = {
      "tileops_test.axpy", PTO_CORE_VECTOR, 2, PTO_F32, 0, custom_axpy, &k};
  int id = -1;
  cr_assert_eq(pto_custom_op_register(&desc, &id), PTO_OK);
  cr_assert_geq(id, PTO_OP_COUNT);
  cr_expect_eq(pto_custom_op_find("tileops_test.axpy"), id);

  rng r = rng_seed(42);
  pto_tile *x = src_new(&r, PTO_F32, 16, 48, 13, 37, G_SUM);
  pto_tile *y = src_new(&r, PTO_F32, 16, 48, 13, 37, G_SUM);
  pto_tile *d = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_tile *want = tile_clone(d);
  for (uint32_t i = 0; i < 13; i++)
    for (uint32_t j = 0; j < 37; j++)
      setf(want, i, j, 3.0f * getf(x, i, j) + getf(y, i, j));
  pto_targs a = binop_args(d, x, y);
  run_ok(id, &a, "custom axpy");
  expect_tile("custom axpy", d, want, NULL, NULL);

  /* its operand rules: the registered out dtype, sources of dst's shape */
  pto_tile *di = dst_new(PTO_I32, 16, 48, 13, 37);
  a.dst[0] = di;
  expect_reject(id, &a, PTO_EDTYPE, "i32", NULL);
  a.dst[0] = d;
  y->valid_cols = 36;
  expect_reject(id, &a, PTO_ESHAPE, "13x36", "13x37");
  a.src[1] = NULL;
  expect_reject(id, &a, PTO_EINVAL, "src1", NULL);

  /* its status comes back from run */
  pto_custom_op_desc bad = {"tileops_test.fails", PTO_CORE_CUBE, 1, PTO_F32, 0,
                            custom_fails,         NULL};
  int id2 = -1;
  cr_assert_eq(pto_custom_op_register(&bad, &id2), PTO_OK);
  cr_expect_neq(id2, id);
  cr_expect_eq(pto__tileop_run(id2, &a), PTO_ERANGE);
}

Test(tileops, custom_instruction_registration_errors) {
  pto_custom_op_desc desc = {
      "tileops_test.dup", PTO_CORE_VECTOR, 1, PTO_F32, 0, custom_axpy, NULL};
  int id = -1, id2 = -1;
  pto_custom_op_desc d = desc;
  d.fn = NULL;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "NULL fn");
  d = desc;
  d.n_src = 0;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "n_src 0");
  d.n_src = 5;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "n_src 5");
  d = desc;
  d.name = NULL;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "NULL name");
  d = desc;
  d.core = PTO_CORE_MEMORY;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "memory core");
  cr_expect_eq(id, -1, "a failed registration wrote an id");
  cr_expect_eq(pto_custom_op_find("tileops_test.dup"), -1);
  cr_assert_eq(pto_custom_op_register(&desc, &id), PTO_OK);
  cr_expect_eq(pto_custom_op_register(&desc, &id2), PTO_EINVAL,
               "duplicate name");
  cr_expect_eq(id2, -1);
  cr_expect_eq(pto_custom_op_find("tileops_test.dup"), id);
  cr_expect_str_eq(pto__insn_name(id), "tileops_test.dup");
}

/* ---- instruction tables
 * ---------------------------------------------------------- */

Test(tileops, isa_default_is_one_of_the_tables) {
  const pto_isa_table *t = pto__isa_active();
  cr_assert_not_null(t);
  cr_expect(!strcmp(t->name, "scalar") || !strcmp(t->name, "avx2") ||
                !strcmp(t->name, "avx512") || !strcmp(t->name, "avx512bf16"),
            "table %s", t->name);
  /* the bf16 engine's table runs bf16 operands as they are, the others
   * widen them to f32 */
  const int native = !strcmp(t->name, "avx512bf16");
  cr_expect_eq(t->mm_native[PTO_BF16], native, "table %s", t->name);
  cr_expect_str_eq(t->mm_engine[PTO_BF16],
                   native ? "avx512-bf16" : t->mm_engine[PTO_F32]);
  cr_expect_eq(t->mm_native[PTO_F32], 0, "f32 runs on the f32 engine");
  cr_expect_eq(t, pto__isa_active(), "chosen once");
}

Test(tileops, isa_env_forces_scalar) {
  setenv("PTO_ISA", "scalar", 1);
  cr_expect_eq(pto__isa_active(), &pto__isa_scalar);
  cr_expect_str_eq(pto_isa_name(), "scalar");
  cr_expect_eq(pto__isa_check(NULL, 0), PTO_OK);
}

/* ctest runs this suite once per ISA this CPU runs, with PTO_ISA set
 * (tests/CMakeLists.txt): the forced table must be the one in use. */
Test(tileops, isa_env_is_honoured) {
  const char *want = getenv("PTO_ISA");
  /* avx512bf16 is the default only where its probe finds vdpbf16ps
   * faster than f32 FMAs (tileops/dispatch.c), else avx512 */
  const char *best = pto_isa_supported("avx512") ? "avx512"
                     : pto_isa_supported("avx2") ? "avx2"
                                                 : "scalar";
  cr_assert_not_null(pto_isa_name(), "PTO_ISA=%s", want ? want : "");
  if (want && want[0])
    cr_expect_str_eq(pto_isa_name(), want);
  else if (!pto_isa_supported("avx512bf16") ||
           strcmp(pto_isa_name(), "avx512bf16"))
    cr_expect_str_eq(pto_isa_name(), best);
  cr_expect_str_eq(pto__isa_active()->name, pto_isa_name());
  int overridden = 0;
  for (int op = 0; op < PTO_OP_COUNT; op++)
    overridden += pto__isa_active()->fn[op] != pto__isa_scalar.fn[op];
  if (strcmp(pto_isa_name(), "scalar"))
    cr_expect_geq(overridden, 40, "%s overrides only %d instructions",
                  pto_isa_name(), overridden);
  else
    cr_expect_eq(overridden, 0);
  cr_expect(pto_isa_supported("scalar"));
  cr_expect(!pto_isa_supported("avx9000"));
  cr_expect(!pto_isa_supported(NULL));
}

/* An unknown PTO_ISA is refused where instructions get resolved, with a
 * message naming the variable, the value and what this machine runs. */
Test(tileops, isa_env_unknown_fails_clearly) {
  setenv("PTO_ISA", "avx9000", 1);
  char msg[256];
  cr_assert_eq(pto__isa_check(msg, sizeof msg), PTO_EISA);
  cr_expect(strstr(msg, "PTO_ISA=avx9000") != NULL, "%s", msg);
  cr_expect(strstr(msg, "unknown") != NULL, "%s", msg);
  cr_expect(strstr(msg, "scalar") != NULL, "%s", msg);
  cr_expect_null(pto_isa_name());
  cr_assert_not_null(pto__isa_active(), "internal users still get a table");

  pto_program *p = pto_program_new("isa");
  int64_t dims[2] = {4, 8};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, dims);
  pto_output(p, pto_exp(p, x), "y");
  pto_executable *e = (pto_executable *)p; /* must be reset */
  cr_expect_eq(pto_compile(p, NULL, &e), PTO_EISA);
  cr_expect_null(e);
  cr_expect(strstr(pto_program_error(p), "PTO_ISA=avx9000") != NULL, "%s",
            pto_program_error(p));
  pto_program_free(p);

  pto_runtime *rt = (pto_runtime *)msg;
  cr_expect_eq(pto_runtime_new(NULL, &rt), PTO_EISA);
  cr_expect_null(rt);
  cr_expect(strstr(pto_runtime_error(NULL), "PTO_ISA=avx9000") != NULL, "%s",
            pto_runtime_error(NULL));
}

/* The choice without the CPU: a machine that lacks avx512. */
Test(tileops, isa_resolve_unsupported_and_default) {
  const char *runs[] = {"avx2", "scalar", NULL};
  const char *got = "x";
  char msg[256];
  cr_expect_eq(pto__isa_resolve("avx512", runs, &got, msg, sizeof msg),
               PTO_EISA);
  cr_expect_null(got);
  cr_expect(strstr(msg, "PTO_ISA=avx512") != NULL, "%s", msg);
  cr_expect(strstr(msg, "does not run avx512") != NULL, "%s", msg);
  cr_expect(strstr(msg, "avx2, scalar") != NULL, "%s", msg);
  cr_expect_eq(pto__isa_resolve(NULL, runs, &got, msg, sizeof msg), PTO_OK);
  cr_expect_str_eq(got, "avx2");
  cr_expect_str_eq(msg, "");
  cr_expect_eq(pto__isa_resolve("", runs, &got, NULL, 0), PTO_OK);
  cr_expect_str_eq(got, "avx2");
  cr_expect_eq(pto__isa_resolve("scalar", runs, &got, NULL, 0), PTO_OK);
  cr_expect_str_eq(got, "scalar");
  const char *only_scalar[] = {"scalar", NULL};
  cr_expect_eq(pto__isa_resolve("avx2", only_scalar, &got, msg, sizeof msg),
               PTO_EISA);
  cr_expect(strstr(msg, "it runs: scalar)") != NULL, "%s", msg);
  cr_expect_eq(pto__isa_resolve("AVX2", runs, &got, msg, sizeof msg),
               PTO_EISA, "names are exact");
  cr_expect(strstr(msg, "unknown") != NULL, "%s", msg);
  char tiny[8];
  cr_expect_eq(pto__isa_resolve("avx9000", runs, &got, tiny, sizeof tiny),
               PTO_EISA);
  cr_expect_eq(strlen(tiny), sizeof tiny - 1);
}

static int fake_add(int op, const pto_targs *a) {
  (void)op, (void)a;
  return PTO_ENOTSUP;
}

Test(tileops, isa_derived_table_overrides_entries) {
  static pto_isa_table t;
  pto__isa_table_derive(&t, "test", &pto__isa_scalar);
  cr_expect_str_eq(t.name, "test");
  for (int op = 0; op < PTO_OP_COUNT; op++)
    cr_expect_eq(t.fn[op], pto__isa_scalar.fn[op]);
  t.fn[PTO_OP_TADD] = fake_add;
  cr_expect_eq(t.fn[PTO_OP_TADD](PTO_OP_TADD, NULL), PTO_ENOTSUP);
  cr_expect_neq(pto__isa_scalar.fn[PTO_OP_TADD], fake_add);
}

