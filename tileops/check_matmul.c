/* The operand rules of the matmul family (TMATMUL, TMATMUL_ACC,
 * TMATMUL_RELU_WSUM, TMATMUL_GA, TMATMUL_GB, TMATMUL_RELU_WSUM_G) and of
 * the attention instructions around it (TSOFTMAXONLINE, TSOFTMAXFINAL),
 * from core/isa.def's semantics: operand dtypes, K agreement, packed
 * panels, the table rows are read from and the row scale. One function per
 * operand class, called by tileops/check.c's rules. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>

#include "pto/isa.h"
#include "tileops/check.h"

static int check_matmul_operand(const chk *k, const char *what,
                                const pto_tile *t) {
  if (t->dtype == PTO_F32 || t->dtype == PTO_BF16 || t->dtype == PTO_F16)
    return PTO_OK;
  return fail(k, PTO_EDTYPE, "%s dtype %s is not supported (f32, bf16 or f16)",
              what, pto_dtype_name(t->dtype));
}

/* The operand rules every matmul shares (classes MATMUL and MATMUL_ACC): dst
 * f32, A (src0) and B (src1) f32/bf16/f16, packing and transposes that agree,
 * A's K = B's K; *M and *N receive the product's shape. */
static int check_matmul(const chk *k, const pto_targs *a, uint32_t *M,
                        uint32_t *N) {
  const pto_tile *d = a->dst[0], *s0 = a->src[0], *s1 = a->src[1];
  int ta = (a->flags & PTO_TF_TRANS_A) != 0;
  int tb = (a->flags & PTO_TF_TRANS_B) != 0;
  int pa = (a->flags & PTO_TF_PACK_A) != 0;
  int pb = (a->flags & PTO_TF_PACK_B) != 0;
  int st;
  if ((st = check_dtype_is(k, "dst", d, PTO_F32)) ||
      (st = check_matmul_operand(k, "src0", s0)) ||
      (st = check_matmul_operand(k, "src1", s1)))
    return st;
  if ((pa && ta) || (pb && tb))
    return fail(k, PTO_EINVAL,
                "%s with %s: a packed operand is never transposed (pack "
                "the transposed view instead)",
                pa && ta ? "PTO_TF_PACK_A" : "PTO_TF_PACK_B",
                pa && ta ? "PTO_TF_TRANS_A" : "PTO_TF_TRANS_B");
  if (pa && (st = check_packed(k, "src0", s0, 1, a->imm[0], 0)))
    return st;
  if (pb && (st = check_packed(k, "src1", s1, 0, a->imm[1], 1)))
    return st;
  *M = ta ? s0->valid_cols : s0->valid_rows;
  uint32_t K = ta ? s0->valid_rows : s0->valid_cols;
  uint32_t KB = tb ? s1->valid_cols : s1->valid_rows;
  *N = tb ? s1->valid_rows : s1->valid_cols;
  if (KB != K)
    return fail(k, PTO_ESHAPE,
                "K of src1 (valid %" PRIu32 "x%" PRIu32 "%s) is %" PRIu32
                ", K of src0 (valid %" PRIu32 "x%" PRIu32 "%s) is %" PRIu32,
                s1->valid_rows, s1->valid_cols, tb ? ", transposed" : "", KB,
                s0->valid_rows, s0->valid_cols, ta ? ", transposed" : "", K);
  return PTO_OK;
}

/* The table whose rows an instruction reads (TMATMUL_GA/GB by index,
 * TMATMUL_RELU_WSUM_G): a global view of f32, bf16 or f16. */
static int check_table(const chk *k, const pto_gview *g) {
  int st = check_gview_base(k, g, "global view");
  if (st)
    return st;
  if (g->dtype == PTO_I32)
    return fail(k, PTO_EDTYPE,
                "global view is i32; the table is f32, bf16 "
                "or f16");
  return PTO_OK;
}

/* The scale of PTO_TF_ROWSCALE, s: f32 with a row per row of dst (M). */
static int check_rowscale(const chk *k, const pto_tile *s, uint32_t M) {
  int st = check_dtype_is(k, "src2", s, PTO_F32);
  if (st)
    return st;
  if (s->valid_rows != M)
    return fail(k, PTO_ESHAPE,
                "src2 valid %" PRIu32 "x%" PRIu32 ": PTO_TF_ROWSCALE "
                "needs a scale per row of dst, %" PRIu32,
                s->valid_rows, s->valid_cols, M);
  return PTO_OK;
}

/* TMATMUL_GA (ga) and TMATMUL_GB: dst f32; the indices (GA's src0,
 * GB's src1) i32, one per row of the table's operand; the other operand
 * f32/bf16/f16, packed or plain as TMATMUL's but never transposed; a table
 * wide enough for K (GA) or N (GB); PTO_TF_ROWSCALE only with PTO_TF_ACC,
 * on GB, with a scale per row of dst. */
int pto__check_tmatmul_gathered(const chk *k, const pto_targs *a, int ga) {
  const pto_tile *d = a->dst[0], *ix = a->src[ga ? 0 : 1],
                 *op = a->src[ga ? 1 : 0];
  const char *ixn = ga ? "src0" : "src1", *opn = ga ? "src1" : "src0";
  const uint32_t pack = ga ? PTO_TF_PACK_B : PTO_TF_PACK_A;
  int st;
  if ((st = check_dtype_is(k, "dst", d, PTO_F32)) ||
      (st = check_dtype_is(k, ixn, ix, PTO_I32)) ||
      (st = check_matmul_operand(k, opn, op)) || (st = check_table(k, &a->g)))
    return st;
  if (a->flags &
      (PTO_TF_TRANS_A | PTO_TF_TRANS_B | (ga ? PTO_TF_PACK_A : PTO_TF_PACK_B)))
    return fail(k, PTO_EINVAL,
                "%s: the table's operand is its rows and the other is never "
                "transposed",
                ga ? "TMATMUL_GA takes PTO_TF_PACK_B only"
                   : "TMATMUL_GB takes PTO_TF_PACK_A only");
  if ((a->flags & pack) &&
      (st = check_packed(k, opn, op, !ga, a->imm[ga ? 1 : 0], ga ? 1 : 0)))
    return st;
  const uint64_t n = (uint64_t)ix->valid_rows * ix->valid_cols;
  const uint32_t K = ga ? op->valid_rows : op->valid_cols;
  const uint32_t M = ga ? (uint32_t)n : op->valid_rows;
  const uint32_t N = ga ? op->valid_cols : d->valid_cols;
  if (!ga && n != K)
    return fail(k, PTO_ESHAPE,
                "src1 holds %" PRIu64 " indices, src0 valid %" PRIu32
                "x%" PRIu32 " has K = %" PRIu32,
                n, op->valid_rows, op->valid_cols, K);
  if (a->g.cols < (ga ? K : N))
    return fail(k, PTO_ESHAPE,
                "global view %" PRId64 "x%" PRId64 " has fewer cols than %s "
                "(%" PRIu32 ")",
                a->g.rows, a->g.cols, ga ? "K" : "dst's valid cols",
                ga ? K : N);
  if (a->flags & PTO_TF_ROWSCALE) {
    if (ga || !(a->flags & PTO_TF_ACC))
      return fail(k, PTO_EINVAL,
                  "PTO_TF_ROWSCALE scales an accumulator: "
                  "TMATMUL_GB with PTO_TF_ACC only");
    if ((st = check_rowscale(k, a->src[2], M)))
      return st;
  }
  return check_valid_is(k, "dst", d, M, N,
                        ga ? "n indices x N of src1" : "M of src0 x N");
}

#define TRY(x)                                                                 \
  do {                                                                         \
    if ((st = (x)) != PTO_OK)                                                  \
      return st;                                                               \
  } while (0)

/* TMATMUL and TMATMUL_ACC (classes MATMUL and MATMUL_ACC): dst M x N;
 * PTO_TF_ROWSCALE on TMATMUL_ACC only. */
int pto__check_tmatmul(const chk *k, const pto_targs *a) {
  const pto_tile *d = a->dst[0], *s2 = a->src[2];
  uint32_t M = 0, N = 0; /* set by check_matmul when it passes */
  int st;
  TRY(check_matmul(k, a, &M, &N));
  if (a->flags & PTO_TF_ROWSCALE) {
    /* the instructions whose flags add the scale's source (the table's
     * src_if) */
    if (!(pto__insn_facts(k->op)->src_if & PTO_TF_ROWSCALE))
      return fail(k, PTO_EINVAL,
                  "PTO_TF_ROWSCALE scales an accumulator: TMATMUL_ACC only");
    TRY(check_rowscale(k, s2, M));
  }
  return check_valid_is(k, "dst", d, M, N, "M x N of src0 x src1");
}

/* The weighted sums' groups: dst's rows divide the M rows (of whose, and
 * what they are: "" or " cols") into whole groups, and PTO_TF_CAUSAL's
 * diagonal is an integer. */
static int check_groups(const chk *k, const pto_targs *a, uint32_t M,
                        const char *whose, const char *what) {
  const pto_tile *d = a->dst[0];
  if (d->valid_rows == 0 || M % d->valid_rows)
    return fail(k, PTO_ESHAPE,
                "dst valid %" PRIu32 "x%" PRIu32 ": its rows must divide "
                "%s M = %" PRIu32 "%s into whole groups",
                d->valid_rows, d->valid_cols, whose, M, what);
  if ((a->flags & PTO_TF_CAUSAL) &&
      !(fabs(a->s) < 0x1p52 && a->s == floor(a->s)))
    return fail(k, PTO_EINVAL,
                "PTO_TF_CAUSAL's diagonal s = %g is not an integer", a->s);
  return PTO_OK;
}

/* TMATMUL_RELU_WSUM: K_MATMUL's operands, a rowvec of
 * weights, R x N dst. */
int pto__check_tmatmul_relu_wsum(const chk *k, const pto_targs *a) {
  const pto_tile *d = a->dst[0], *s2 = a->src[2];
  uint32_t M = 0, N = 0; /* set by check_matmul when it passes */
  int st;
  TRY(check_matmul(k, a, &M, &N));
  TRY(check_dtype_is(k, "src2", s2, PTO_F32));
  TRY(check_valid_is(k, "src2", s2, M, 1, "a rowvec of A's M rows"));
  TRY(check_groups(k, a, M, "A's", ""));
  return check_valid_is(k, "dst", d, d->valid_rows, N,
                        "N cols, as src0 x src1");
}

/* TMATMUL_RELU_WSUM_G: Q^T (src0, K x M, f32/bf16/f16,
 * plain or PTO_TF_PACK_B, never transposed), a rowvec of M weights (src1),
 * the N keys' window (N x K exactly), R x N dst with R dividing M. */
int pto__check_tmatmul_relu_wsum_g(const chk *k, const pto_targs *a) {
  const pto_tile *d = a->dst[0], *qt = a->src[0], *w = a->src[1];
  int st;
  TRY(check_dtype_is(k, "dst", d, PTO_F32));
  TRY(check_matmul_operand(k, "src0", qt));
  TRY(check_dtype_is(k, "src1", w, PTO_F32));
  TRY(check_table(k, &a->g));
  if (a->flags & ~(uint32_t)(PTO_TF_PACK_B | PTO_TF_CAUSAL | PTO_TF_SCRATCH))
    return fail(k, PTO_EINVAL,
                "TMATMUL_RELU_WSUM_G takes PTO_TF_PACK_B and PTO_TF_CAUSAL "
                "only: the keys are the window's rows, Q^T is never "
                "transposed, and nothing accumulates");
  if ((a->flags & PTO_TF_PACK_B) &&
      (st = check_packed(k, "src0", qt, 0, a->imm[1], 1)))
    return st;
  const uint32_t K = qt->valid_rows, M = qt->valid_cols, N = d->valid_cols;
  TRY(check_valid_is(k, "src1", w, M, 1, "a rowvec of src0's M cols"));
  if (a->g.rows != N || a->g.cols != K)
    return fail(k, PTO_ESHAPE,
                "global view %" PRId64 "x%" PRId64 ", expected the %" PRIu32
                " keys of dst's valid cols x K = %" PRIu32
                " (src0 valid %" PRIu32 "x%" PRIu32 ")",
                a->g.rows, a->g.cols, N, K, qt->valid_rows, qt->valid_cols);
  return check_groups(k, a, M, "src0's", " cols");
}

/* TSOFTMAXONLINE: scores M x N, or N x M with
 * PTO_TF_TRANS_A, indices (and a state) -> packed P, state. */
int pto__check_tsoftmaxonline(const chk *k, const pto_targs *a) {
  const pto_tile *d = a->dst[0], *d1 = a->dst[1], *s0 = a->src[0],
                 *s1 = a->src[1], *s2 = a->src[2];
  int st;
  const int tr = (a->flags & PTO_TF_TRANS_A) != 0;
  const uint32_t M = tr ? s0->valid_cols : s0->valid_rows,
                 N = tr ? s0->valid_rows : s0->valid_cols;
  TRY(check_dtype_is(k, "src0", s0, PTO_F32));
  TRY(check_dtype_is(k, "src1", s1, PTO_I32));
  TRY(check_dtype_is(k, "dst0", d, PTO_F32));
  TRY(check_dtype_is(k, "dst1", d1, PTO_F32));
  if ((uint64_t)s1->valid_rows * s1->valid_cols != N)
    return fail(k, PTO_ESHAPE,
                "src1 valid %" PRIu32 "x%" PRIu32 " holds %" PRIu64
                " indices, src0 valid %" PRIu32 "x%" PRIu32 "%s has %" PRIu32
                " scores per row",
                s1->valid_rows, s1->valid_cols,
                (uint64_t)s1->valid_rows * s1->valid_cols, s0->valid_rows,
                s0->valid_cols, tr ? " (transposed)" : "", N);
  TRY(check_valid_is(k, "dst0", d, M, N, "the scores' M x N"));
  TRY(check_packed(k, "dst0", d, 1, a->imm[0], 0));
  if (a->imm[1] < 0)
    return fail(k, PTO_EINVAL, "table rows imm[1] = %" PRId32 " < 0",
                a->imm[1]);
  TRY(check_valid_is(k, "dst1", d1, M, 3, "(alpha, m, l) per score row"));
  if (!(a->flags & PTO_TF_ACC))
    return PTO_OK;
  TRY(check_dtype_is(k, "src2", s2, PTO_F32));
  return check_valid_is(k, "src2", s2, M, 3,
                        "the state (alpha, m, l) per score row");
}

/* TSOFTMAXFINAL: accumulator, state -> output, rowvec lse. */
int pto__check_tsoftmaxfinal(const chk *k, const pto_targs *a) {
  const pto_tile *d = a->dst[0], *s0 = a->src[0], *s1 = a->src[1];
  int st;
  TRY(check_dtype_is(k, "src0", s0, PTO_F32));
  TRY(check_dtype_is(k, "src1", s1, PTO_F32));
  TRY(check_dtype_is(k, "dst0", d, PTO_F32));
  TRY(check_dtype_is(k, "dst1", a->dst[1], PTO_F32));
  TRY(check_valid_is(k, "src1", s1, s0->valid_rows, 3,
                     "the state (alpha, m, l) per row of src0"));
  TRY(check_same_valid(k, "dst0", d, "src0", s0));
  return check_valid_is(k, "dst1", a->dst[1], s0->valid_rows, 1,
                        "a rowvec of src0's rows");
}
#undef TRY
