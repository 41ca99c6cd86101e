/* Checking an instruction's operands before it runs (pto__tileop_check):
 * the rules per instruction class, from core/isa.def's semantics, each
 * failure a message naming the operand, its dtype and sizes. Here: the
 * entry point, tile geometry, the operand classes, aliasing, custom
 * instructions, and the rules of the memory, element-wise, axis, movement
 * and sort instructions; the matmul family and the attention instructions
 * around it are checked in tileops/check_matmul.c, and what both files
 * share is in tileops/check.h. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "core/custom.h"
#include "pto/isa.h"
#include "tileops/check.h"
#include "tileops/tileops.h"

static const char *const src_names[PTO_MAX_SRC] = {"src0", "src1", "src2",
                                                   "src3"};

static const char *dst_name(int n_dst, int i) {
  return n_dst == 1 ? "dst" : i == 0 ? "dst0" : "dst1";
}

static size_t esize(const pto_tile *t) {
  return pto__dtype_bytes(t->dtype);
}

/* Geometry of one tile; need_valid: its valid region is an operand. */
static int check_tile(const chk *k, const char *what, const pto_tile *t,
                      int need_valid) {
  if (!t)
    return fail(k, PTO_EINVAL, "%s is NULL", what);
  if ((unsigned)t->dtype >= PTO_DTYPE_COUNT)
    return fail(k, PTO_EDTYPE, "%s has dtype %d, which is not a PTO dtype",
                what, (int)t->dtype);
  if (!t->data)
    return fail(k, PTO_EINVAL, "%s has no data", what);
  if ((uintptr_t)t->data % PTO_TILE_ALIGN)
    return fail(k, PTO_EINVAL, "%s data %p is not %d-byte aligned", what,
                t->data, PTO_TILE_ALIGN);
  if (t->rows == 0 || t->cols == 0)
    return fail(k, PTO_ESHAPE, "%s capacity %" PRIu32 "x%" PRIu32 " is empty",
                what, t->rows, t->cols);
  if (t->stride < t->cols)
    return fail(k, PTO_EINVAL,
                "%s stride %" PRIu32 " is less than its %" PRIu32 " cols", what,
                t->stride, t->cols);
  if ((size_t)t->stride * esize(t) % PTO_TILE_ALIGN)
    return fail(k, PTO_EINVAL,
                "%s stride %" PRIu32 " (%s) leaves rows not %d-byte aligned",
                what, t->stride, pto_dtype_name(t->dtype), PTO_TILE_ALIGN);
  if (!need_valid)
    return PTO_OK;
  if (t->valid_rows == 0 || t->valid_cols == 0)
    return fail(k, PTO_ESHAPE, "%s valid %" PRIu32 "x%" PRIu32 " is empty",
                what, t->valid_rows, t->valid_cols);
  if (t->valid_rows > t->rows || t->valid_cols > t->cols)
    return fail(k, PTO_ESHAPE,
                "%s valid %" PRIu32 "x%" PRIu32 " exceeds its capacity %" PRIu32
                "x%" PRIu32,
                what, t->valid_rows, t->valid_cols, t->rows, t->cols);
  return PTO_OK;
}

/* f32, or i32 when the instruction accepts it. */
static int check_numeric(const chk *k, const char *what, const pto_tile *t) {
  int int_ok = (pto__insn_info(k->op)->flags & PTO_IF_INT) != 0;
  if (t->dtype == PTO_F32 || (int_ok && t->dtype == PTO_I32))
    return PTO_OK;
  return fail(k, PTO_EDTYPE, "%s dtype %s is not supported (%s)", what,
              pto_dtype_name(t->dtype), int_ok ? "f32 or i32" : "f32 only");
}

static int check_same_dtype(const chk *k, const char *what, const pto_tile *t,
                            const char *ref_name, const pto_tile *ref) {
  if (t->dtype == ref->dtype)
    return PTO_OK;
  return fail(k, PTO_EDTYPE, "%s dtype %s differs from %s dtype %s", what,
              pto_dtype_name(t->dtype), ref_name, pto_dtype_name(ref->dtype));
}

/* ... which must cover the valid region of `what`. */
static int check_gview(const chk *k, const pto_gview *g, const char *gn,
                       const char *what, const pto_tile *t) {
  int st = check_gview_base(k, g, gn);
  if (st)
    return st;
  uint32_t rows = t->valid_rows, cols = t->valid_cols;
  if (g->rows < rows || g->cols < cols)
    return fail(k, PTO_ESHAPE,
                "%s %" PRId64 "x%" PRId64 " is smaller than %s valid "
                "%" PRIu32 "x%" PRIu32,
                gn, g->rows, g->cols, what, rows, cols);
  return PTO_OK;
}

/* Bytes [lo, hi) that a rows x cols window of g spans (rows, cols > 0). */
static void gview_span(const pto_gview *g, int64_t rows, int64_t cols,
                       uintptr_t *lo, uintptr_t *hi) {
  const int64_t es = (int64_t)pto__dtype_bytes(g->dtype);
  const int64_t r = (rows - 1) * g->row_stride, c = (cols - 1) * g->col_stride;
  const int64_t first = (r < 0 ? r : 0) + (c < 0 ? c : 0);
  const int64_t last = (r > 0 ? r : 0) + (c > 0 ? c : 0);
  *lo = (uintptr_t)g->base + (uintptr_t)(first * es);
  *hi = (uintptr_t)g->base + (uintptr_t)((last + 1) * es);
}

/* Checks a rows x cols window at (r0, c0) inside a within x valid region. */
static int check_window(const chk *k, int32_t r0, int32_t c0, uint32_t rows,
                        uint32_t cols, const char *within, const pto_tile *w) {
  if (r0 < 0 || c0 < 0 || (uint64_t)r0 + rows > w->valid_rows ||
      (uint64_t)c0 + cols > w->valid_cols)
    return fail(k, PTO_ESHAPE,
                "window %" PRIu32 "x%" PRIu32 " at (%" PRId32 ", %" PRId32
                ") is outside %s valid %" PRIu32 "x%" PRIu32,
                rows, cols, r0, c0, within, w->valid_rows, w->valid_cols);
  return PTO_OK;
}

/* The operand classes: instructions that take the same operands. */
typedef enum op_class {
  K_LOAD,
  K_STORE,
  K_MULSTORE,
  K_LOADMAX,
  K_LOADSTORE, /* K_LOADMAX's operands, and a second view it writes */
  K_GATHER,
  K_BINARY, /* dst = f(src0, src1), all one dtype */
  K_UNARY,  /* dst = f(src0) */
  K_CMP,
  K_SEL,
  K_CONVERT, /* TCVT TMOV */
  K_SCALAR,  /* dst = src0 op s */
  K_FILL,    /* dst only: TEXPANDS TCI TTRI */
  K_ROWRED,
  K_COLRED,
  K_ROWEXPAND,  /* dst = rowvec src0 */
  K_ROWEXPAND2, /* dst = src0 op rowvec src1 */
  K_ROWEXPSUM,  /* dst0 = src0 op rowvec src1, rowvec dst1 = row sums */
  K_COLEXPAND,
  K_COLEXPAND2,
  K_MATMUL,
  K_MATMUL_WSUM, /* K_MATMUL's operands, a rowvec of weights, R x N dst */
  K_MATMUL_WSUM_G, /* Q^T, a rowvec of weights, the keys' window */
  K_GATHERPACK,  /* indices, a table, two packed destinations */
  K_GMATMUL,     /* a matmul with one operand's rows read from a table */
  K_SMONLINE,    /* scores, indices (and a state) -> packed P, state */
  K_SMFINAL,     /* accumulator, state -> output, rowvec lse */
  K_EXTRACT,
  K_INSERT,
  K_TRANS,
  K_FILLPAD,
  K_SORT32,
  K_MRGSORT,
  K_TOPK,    /* TTOPK: src0 -> dst0, dst1 */
  K_MRGTOPK, /* TMRGTOPK: src0, src1 -> dst0, dst1 */
  K_NONE
} op_class;

/* No default: a new instruction in isa.def is a -Wswitch error here until it
 * gets operand rules. */
static op_class class_of(pto_opcode op) {
  switch (op) {
  case PTO_OP_TLOAD:
    return K_LOAD;
  case PTO_OP_TSTORE:
    return K_STORE;
  case PTO_OP_TROWEXPANDMULSTORE:
    return K_MULSTORE;
  case PTO_OP_TLOADROWMAX:
  case PTO_OP_TLOADEXPDIFSUM:
    return K_LOADMAX;
  case PTO_OP_TLOADSOFTMAXSTORE:
    return K_LOADSTORE;
  case PTO_OP_TGATHER:
    return K_GATHER;
  case PTO_OP_TADD:
  case PTO_OP_TSUB:
  case PTO_OP_TMUL:
  case PTO_OP_TDIV:
  case PTO_OP_TMAX:
  case PTO_OP_TMIN:
    return K_BINARY;
  case PTO_OP_TEXP:
  case PTO_OP_TLOG:
  case PTO_OP_TSQRT:
  case PTO_OP_TRSQRT:
  case PTO_OP_TRECIP:
  case PTO_OP_TRELU:
  case PTO_OP_TABS:
  case PTO_OP_TNEG:
    return K_UNARY;
  case PTO_OP_TCMP:
    return K_CMP;
  case PTO_OP_TSEL:
    return K_SEL;
  case PTO_OP_TCVT:
  case PTO_OP_TMOV:
    return K_CONVERT;
  case PTO_OP_TADDS:
  case PTO_OP_TSUBS:
  case PTO_OP_TMULS:
  case PTO_OP_TDIVS:
  case PTO_OP_TMAXS:
  case PTO_OP_TMINS:
  case PTO_OP_TTRIFILL:
    return K_SCALAR;
  case PTO_OP_TEXPANDS:
  case PTO_OP_TCI:
  case PTO_OP_TTRI:
    return K_FILL;
  case PTO_OP_TROWSUM:
  case PTO_OP_TROWMAX:
  case PTO_OP_TROWMIN:
    return K_ROWRED;
  case PTO_OP_TCOLSUM:
  case PTO_OP_TCOLMAX:
  case PTO_OP_TCOLMIN:
    return K_COLRED;
  case PTO_OP_TROWEXPAND:
    return K_ROWEXPAND;
  case PTO_OP_TROWEXPANDADD:
  case PTO_OP_TROWEXPANDSUB:
  case PTO_OP_TROWEXPANDMUL:
  case PTO_OP_TROWEXPANDDIV:
  case PTO_OP_TROWEXPANDMAX:
  case PTO_OP_TROWEXPANDEXPDIF:
    return K_ROWEXPAND2;
  case PTO_OP_TROWEXPANDEXPDIFSUM:
    return K_ROWEXPSUM;
  case PTO_OP_TCOLEXPAND:
    return K_COLEXPAND;
  case PTO_OP_TCOLEXPANDADD:
  case PTO_OP_TCOLEXPANDSUB:
  case PTO_OP_TCOLEXPANDMUL:
  case PTO_OP_TCOLEXPANDDIV:
    return K_COLEXPAND2;
  case PTO_OP_TMATMUL:
  case PTO_OP_TMATMUL_ACC:
    return K_MATMUL;
  case PTO_OP_TMATMUL_RELU_WSUM:
    return K_MATMUL_WSUM;
  case PTO_OP_TMATMUL_RELU_WSUM_G:
    return K_MATMUL_WSUM_G;
  case PTO_OP_TGATHERPACK:
    return K_GATHERPACK;
  case PTO_OP_TMATMUL_GA:
  case PTO_OP_TMATMUL_GB:
    return K_GMATMUL;
  case PTO_OP_TSOFTMAXONLINE:
    return K_SMONLINE;
  case PTO_OP_TSOFTMAXFINAL:
    return K_SMFINAL;
  case PTO_OP_TEXTRACT:
    return K_EXTRACT;
  case PTO_OP_TINSERT:
    return K_INSERT;
  case PTO_OP_TTRANS:
    return K_TRANS;
  case PTO_OP_TFILLPAD:
    return K_FILLPAD;
  case PTO_OP_TSORT32:
    return K_SORT32;
  case PTO_OP_TMRGSORT:
    return K_MRGSORT;
  case PTO_OP_TTOPK:
    return K_TOPK;
  case PTO_OP_TMRGTOPK:
    return K_MRGTOPK;
  case PTO_OP_COUNT:
    break;
  }
  return K_NONE;
}

/* Instructions whose dst element (r, c) depends only on source elements at
 * (r, c) (or on a block it reads whole first), so dst may be a source. */
static int pointwise(op_class cl) {
  switch (cl) {
  case K_BINARY:
  case K_UNARY:
  case K_CMP:
  case K_SEL:
  case K_CONVERT:
  case K_SCALAR:
  case K_ROWRED:
  case K_COLRED:
  case K_ROWEXPAND:
  case K_ROWEXPAND2:
  case K_ROWEXPSUM:
  case K_COLEXPAND:
  case K_COLEXPAND2:
  case K_FILLPAD:
  case K_SORT32:
    return 1;
  default:
    return 0;
  }
}

static int overlap(const pto_tile *x, const pto_tile *y) {
  uintptr_t x0 = (uintptr_t)x->data, y0 = (uintptr_t)y->data;
  uintptr_t x1 = x0 + (uintptr_t)x->rows * x->stride * esize(x);
  uintptr_t y1 = y0 + (uintptr_t)y->rows * y->stride * esize(y);
  return x0 < y1 && y0 < x1;
}

static int check_aliasing(const chk *k, op_class cl, const pto_targs *a,
                          int n_src, int n_dst) {
  for (int i = 0; i < n_dst; i++) {
    const pto_tile *d = a->dst[i];
    for (int j = i + 1; j < n_dst; j++)
      if (overlap(d, a->dst[j]))
        return fail(k, PTO_EINVAL, "%s overlaps %s", dst_name(n_dst, i),
                    dst_name(n_dst, j));
    for (int j = 0; j < n_src; j++) {
      const pto_tile *s = a->src[j];
      if (!overlap(d, s))
        continue;
      int same_buffer =
          d->data == s->data && d->stride == s->stride && esize(d) == esize(s);
      int same_shape = cl == K_FILLPAD || (d->valid_rows == s->valid_rows &&
                                           d->valid_cols == s->valid_cols);
      if (!(pointwise(cl) && same_buffer && same_shape))
        return fail(k, PTO_EINVAL,
                    "%s overlaps %s (only the same buffer and shape, for an "
                    "element-wise instruction, may be shared)",
                    dst_name(n_dst, i), src_names[j]);
    }
  }
  return PTO_OK;
}

/* Rules of the fused loads and stores: an f32 tile t moved through an f32
 * global view, with v an f32 rowvec of t's rows. */
static int check_f32_rows(const chk *k, const pto_gview *g, const char *tn,
                          const pto_tile *t, const char *vn,
                          const pto_tile *v) {
  char why[48];
  snprintf(why, sizeof why, "a rowvec of %s's rows", tn);
  int st;
  if ((st = check_dtype_is(k, tn, t, PTO_F32)) ||
      (st = check_dtype_is(k, vn, v, PTO_F32)) ||
      (st = check_valid_is(k, vn, v, t->valid_rows, 1, why)) ||
      (st = check_gview(k, g, "global view", tn, t)))
    return st;
  if (g->dtype != PTO_F32)
    return fail(k, PTO_EDTYPE, "global view dtype %s, expected f32",
                pto_dtype_name(g->dtype));
  return PTO_OK;
}

/* TTOPK (src0 values) and TMRGTOPK (merge: src0 values, src1 indices in
 * runs of imm[0]): dst0 f32 and dst1 i32 of one valid shape, src0's rows;
 * mode imm[1] 0 or 1; in mode 0 at most src0's valid cols kept. */
static int check_topk(const chk *k, int merge, const pto_targs *a) {
  const pto_tile *s0 = a->src[0], *d0 = a->dst[0], *d1 = a->dst[1];
  const uint32_t vc = s0->valid_cols;
  int st;
  if ((st = check_dtype_is(k, "src0", s0, PTO_F32)) ||
      (merge && (st = check_dtype_is(k, "src1", a->src[1], PTO_I32))) ||
      (merge && (st = check_same_valid(k, "src1", a->src[1], "src0", s0))) ||
      (st = check_dtype_is(k, "dst0", d0, PTO_F32)) ||
      (st = check_dtype_is(k, "dst1", d1, PTO_I32)) ||
      (st = check_same_valid(k, "dst1", d1, "dst0", d0)))
    return st;
  if (d0->valid_rows != s0->valid_rows)
    return fail(k, PTO_ESHAPE,
                "dst0 valid %" PRIu32 "x%" PRIu32 ", expected the %" PRIu32
                " rows of src0 valid %" PRIu32 "x%" PRIu32,
                d0->valid_rows, d0->valid_cols, s0->valid_rows, s0->valid_rows,
                vc);
  if (a->imm[1] != 0 && a->imm[1] != 1)
    return fail(k, PTO_EINVAL,
                "mode imm[1] = %" PRId32 " is neither 0 (plain) nor 1 (masked)",
                a->imm[1]);
  if (a->imm[1] == 0 && d0->valid_cols > vc)
    return fail(k, PTO_ESHAPE,
                "dst0 valid %" PRIu32 "x%" PRIu32
                " keeps more than the %" PRIu32 " entries of src0 valid %" PRIu32
                "x%" PRIu32 " (only mode 1 pads)",
                d0->valid_rows, d0->valid_cols, vc, s0->valid_rows, vc);
  if (!merge) {
    if ((int64_t)a->imm[0] + vc - 1 > INT32_MAX)
      return fail(k, PTO_EINVAL,
                  "index base imm[0] = %" PRId32 " + %" PRIu32
                  " columns overflows i32",
                  a->imm[0], vc);
    return PTO_OK;
  }
  if (a->imm[0] < 1)
    return fail(k, PTO_EINVAL, "run length imm[0] = %" PRId32 " is < 1",
                a->imm[0]);
  if ((vc + (uint64_t)a->imm[0] - 1) / (uint64_t)a->imm[0] > 4)
    return fail(k, PTO_EINVAL,
                "src0 valid cols %" PRIu32 " in runs of %" PRId32
                " are more than 4 runs",
                vc, a->imm[0]);
  if (!(a->s >= 0 && a->s <= INT32_MAX && a->s == (double)(int64_t)a->s))
    return fail(k, PTO_EINVAL,
                "index offset per run s = %g is not an integer in [0, %d]",
                a->s, INT32_MAX);
  return PTO_OK;
}

/* Dtype, shape and immediate rules of a built-in instruction whose tiles
 * are present and well-formed. */
static int check_rules(const chk *k, op_class cl, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0], *s1 = a->src[1], *s2 = a->src[2];
  int st;
#define TRY(x)                                                                 \
  do {                                                                         \
    if ((st = (x)) != PTO_OK)                                                  \
      return st;                                                               \
  } while (0)
  switch (cl) {
  case K_LOAD: {
    int pa = (a->flags & PTO_TF_PACK_A) != 0,
        pb = (a->flags & PTO_TF_PACK_B) != 0;
    if (pa && pb)
      return fail(k, PTO_EINVAL,
                  "PTO_TF_PACK_A and PTO_TF_PACK_B together (a tile packs "
                  "one way)");
    if (pa || pb)
      TRY(check_packed(k, "dst", d, pa, a->imm[0], 0));
    return check_gview(k, &a->g, "global view", "dst", d);
  }
  case K_STORE:
    return check_gview(k, &a->g, "global view", "src0", s0);
  case K_LOADMAX:
    return check_f32_rows(k, &a->g, "dst0", d, "dst1", a->dst[1]);
  case K_MULSTORE:
    return check_f32_rows(k, &a->g, "src0", s0, "src1", s1);
  case K_LOADSTORE: {
    const char *g2n = "second global view (g2)";
    TRY(check_f32_rows(k, &a->g, "dst0", d, "dst1", a->dst[1]));
    TRY(check_gview(k, &a->g2, g2n, "dst0", d));
    if (a->g2.dtype != PTO_F32)
      return fail(k, PTO_EDTYPE, "%s dtype %s, expected f32", g2n,
                  pto_dtype_name(a->g2.dtype));
    uintptr_t lo, hi, lo2, hi2;
    if (!d->valid_rows || !d->valid_cols)
      return PTO_OK;
    gview_span(&a->g, d->valid_rows, d->valid_cols, &lo, &hi);
    gview_span(&a->g2, d->valid_rows, d->valid_cols, &lo2, &hi2);
    if (lo < hi2 && lo2 < hi)
      return fail(k, PTO_EINVAL,
                  "%s (%" PRIu32 "x%" PRIu32 " at %p) overlaps the global "
                  "view it reads (at %p)",
                  g2n, d->valid_rows, d->valid_cols, a->g2.base, a->g.base);
    return PTO_OK;
  }
  case K_GATHER:
    TRY(check_dtype_is(k, "src0", s0, PTO_I32));
    TRY(check_gview_base(k, &a->g, "global view"));
    if (a->g.cols < d->valid_cols) /* any number of table rows */
      return fail(k, PTO_ESHAPE,
                  "global view %" PRId64 "x%" PRId64
                  " has fewer cols than dst valid %" PRIu32 "x%" PRIu32,
                  a->g.rows, a->g.cols, d->valid_rows, d->valid_cols);
    if ((uint64_t)s0->valid_rows * s0->valid_cols != d->valid_rows)
      return fail(k, PTO_ESHAPE,
                  "src0 valid %" PRIu32 "x%" PRIu32 " holds %" PRIu64
                  " indices, dst valid %" PRIu32 "x%" PRIu32 " needs %" PRIu32,
                  s0->valid_rows, s0->valid_cols,
                  (uint64_t)s0->valid_rows * s0->valid_cols, d->valid_rows,
                  d->valid_cols, d->valid_rows);
    return PTO_OK;
  case K_BINARY:
    TRY(check_numeric(k, "dst", d));
    TRY(check_same_dtype(k, "src0", s0, "dst", d));
    TRY(check_same_dtype(k, "src1", s1, "dst", d));
    TRY(check_same_valid(k, "src0", s0, "dst", d));
    return check_same_valid(k, "src1", s1, "dst", d);
  case K_UNARY:
  case K_SCALAR:
    TRY(check_numeric(k, "dst", d));
    TRY(check_same_dtype(k, "src0", s0, "dst", d));
    return check_same_valid(k, "src0", s0, "dst", d);
  case K_CMP:
    TRY(check_numeric(k, "src0", s0));
    TRY(check_same_dtype(k, "src1", s1, "src0", s0));
    TRY(check_dtype_is(k, "dst", d, PTO_I32));
    TRY(check_same_valid(k, "src0", s0, "dst", d));
    TRY(check_same_valid(k, "src1", s1, "dst", d));
    if (a->imm[0] < 0 || a->imm[0] >= PTO_CMP_MODE_COUNT)
      return fail(k, PTO_EINVAL,
                  "compare mode imm[0] = %" PRId32
                  " is not a pto_cmp_mode (0..%d)",
                  a->imm[0], PTO_CMP_MODE_COUNT - 1);
    return PTO_OK;
  case K_SEL:
    TRY(check_dtype_is(k, "src0", s0, PTO_I32));
    TRY(check_numeric(k, "dst", d));
    TRY(check_same_dtype(k, "src1", s1, "dst", d));
    TRY(check_same_dtype(k, "src2", s2, "dst", d));
    TRY(check_same_valid(k, "src0", s0, "dst", d));
    TRY(check_same_valid(k, "src1", s1, "dst", d));
    return check_same_valid(k, "src2", s2, "dst", d);
  case K_CONVERT:
    return check_same_valid(k, "src0", s0, "dst", d);
  case K_FILL:
    return check_numeric(k, "dst", d);
  case K_ROWRED:
    TRY(check_numeric(k, "dst", d));
    TRY(check_same_dtype(k, "src0", s0, "dst", d));
    return check_valid_is(k, "dst", d, s0->valid_rows, 1,
                          "a rowvec of src0's rows");
  case K_COLRED:
    TRY(check_numeric(k, "dst", d));
    TRY(check_same_dtype(k, "src0", s0, "dst", d));
    return check_valid_is(k, "dst", d, 1, s0->valid_cols,
                          "a colvec of src0's cols");
  case K_ROWEXPAND:
    TRY(check_numeric(k, "dst", d));
    TRY(check_same_dtype(k, "src0", s0, "dst", d));
    return check_valid_is(k, "src0", s0, d->valid_rows, 1,
                          "a rowvec of dst's rows");
  case K_COLEXPAND:
    TRY(check_numeric(k, "dst", d));
    TRY(check_same_dtype(k, "src0", s0, "dst", d));
    return check_valid_is(k, "src0", s0, 1, d->valid_cols,
                          "a colvec of dst's cols");
  case K_ROWEXPAND2:
    TRY(check_numeric(k, "dst", d));
    TRY(check_same_dtype(k, "src0", s0, "dst", d));
    TRY(check_same_dtype(k, "src1", s1, "dst", d));
    TRY(check_same_valid(k, "src0", s0, "dst", d));
    return check_valid_is(k, "src1", s1, d->valid_rows, 1,
                          "a rowvec of dst's rows");
  case K_ROWEXPSUM:
    TRY(check_dtype_is(k, "dst0", d, PTO_F32));
    TRY(check_dtype_is(k, "dst1", a->dst[1], PTO_F32));
    TRY(check_dtype_is(k, "src0", s0, PTO_F32));
    TRY(check_dtype_is(k, "src1", s1, PTO_F32));
    TRY(check_same_valid(k, "src0", s0, "dst0", d));
    TRY(check_valid_is(k, "src1", s1, d->valid_rows, 1,
                       "a rowvec of dst0's rows"));
    return check_valid_is(k, "dst1", a->dst[1], d->valid_rows, 1,
                          "a rowvec of dst0's rows");
  case K_COLEXPAND2:
    TRY(check_numeric(k, "dst", d));
    TRY(check_same_dtype(k, "src0", s0, "dst", d));
    TRY(check_same_dtype(k, "src1", s1, "dst", d));
    TRY(check_same_valid(k, "src0", s0, "dst", d));
    return check_valid_is(k, "src1", s1, 1, d->valid_cols,
                          "a colvec of dst's cols");
  case K_MATMUL:
    return pto__check_tmatmul(k, a);
  case K_GATHERPACK:
    return pto__check_tgatherpack(k, a);
  case K_GMATMUL:
    return pto__check_tmatmul_gathered(k, a);
  case K_SMONLINE:
    return pto__check_tsoftmaxonline(k, a);
  case K_SMFINAL:
    return pto__check_tsoftmaxfinal(k, a);
  case K_MATMUL_WSUM:
    return pto__check_tmatmul_relu_wsum(k, a);
  case K_MATMUL_WSUM_G:
    return pto__check_tmatmul_relu_wsum_g(k, a);
  case K_EXTRACT:
    TRY(check_same_dtype(k, "dst", d, "src0", s0));
    return check_window(k, a->imm[0], a->imm[1], d->valid_rows, d->valid_cols,
                        "src0", s0);
  case K_INSERT:
    TRY(check_same_dtype(k, "src0", s0, "dst", d));
    return check_window(k, a->imm[0], a->imm[1], s0->valid_rows, s0->valid_cols,
                        "dst", d);
  case K_TRANS:
    TRY(check_same_dtype(k, "dst", d, "src0", s0));
    return check_valid_is(k, "dst", d, s0->valid_cols, s0->valid_rows,
                          "src0 transposed");
  case K_FILLPAD:
    TRY(check_same_dtype(k, "dst", d, "src0", s0));
    if (s0->valid_rows > d->rows || s0->valid_cols > d->cols)
      return fail(k, PTO_ESHAPE,
                  "src0 valid %" PRIu32 "x%" PRIu32
                  " exceeds dst capacity %" PRIu32 "x%" PRIu32,
                  s0->valid_rows, s0->valid_cols, d->rows, d->cols);
    return PTO_OK;
  case K_SORT32:
  case K_MRGSORT:
    TRY(check_dtype_is(k, "src0", s0, PTO_F32));
    TRY(check_dtype_is(k, "src1", s1, PTO_I32));
    TRY(check_dtype_is(k, "dst0", d, PTO_F32));
    TRY(check_dtype_is(k, "dst1", a->dst[1], PTO_I32));
    TRY(check_same_valid(k, "src0", s0, "dst0", d));
    TRY(check_same_valid(k, "src1", s1, "dst0", d));
    TRY(check_same_valid(k, "dst1", a->dst[1], "dst0", d));
    if (cl == K_MRGSORT && a->imm[0] < 1)
      return fail(k, PTO_EINVAL, "run length imm[0] = %" PRId32 " is < 1",
                  a->imm[0]);
    if (cl == K_MRGSORT && (a->imm[1] < 2 || a->imm[1] > 4))
      return fail(k, PTO_EINVAL,
                  "merge ways imm[1] = %" PRId32 " is outside 2..4", a->imm[1]);
    return PTO_OK;
  case K_TOPK:
  case K_MRGTOPK:
    return check_topk(k, cl == K_MRGTOPK, a);
  case K_NONE:
    break;
  }
#undef TRY
  return fail(k, PTO_EINVAL, "no operand rules for this instruction");
}

static int check_custom(const chk *k, const pto_custom_op *c,
                        const pto_targs *a) {
  int st = check_tile(k, "dst", a->dst[0], 1);
  if (st)
    return st;
  if (a->dst[0]->dtype != c->desc.out_dtype)
    return fail(k, PTO_EDTYPE, "dst dtype %s, expected the registered %s",
                pto_dtype_name(a->dst[0]->dtype),
                pto_dtype_name(c->desc.out_dtype));
  for (int i = 0; i < c->desc.n_src; i++) {
    if ((st = check_tile(k, src_names[i], a->src[i], 1)) ||
        (st = check_same_valid(k, src_names[i], a->src[i], "dst", a->dst[0])))
      return st;
  }
  return PTO_OK;
}

int pto__tileop_check(int op, const pto_targs *a, char *msg, size_t msg_size) {
  chk k = {op, pto__insn_name(op), msg, msg_size};
  if (msg && msg_size)
    msg[0] = '\0';
  const pto_insn_info *info = pto__insn_info(op);
  if (!info) {
    k.name = "tileop";
    return fail(&k, PTO_EINVAL, "unknown instruction %d", op);
  }
  if (!a)
    return fail(&k, PTO_EINVAL, "no arguments");
  if (op >= PTO_OP_COUNT)
    return check_custom(&k, pto__custom_get(op), a);

  op_class cl = class_of((pto_opcode)op);
  int n_src = info->n_src, n_dst = info->n_dst, st;
  /* a source the flags add: a row scale, a softmax state to continue */
  if (((op == PTO_OP_TMATMUL_ACC || op == PTO_OP_TMATMUL_GB) &&
       (a->flags & PTO_TF_ROWSCALE)) ||
      (op == PTO_OP_TSOFTMAXONLINE && (a->flags & PTO_TF_ACC)))
    n_src++;
  for (int i = 0; i < n_dst; i++)
    /* TFILLPAD sets dst's valid region: what it held does not matter. */
    if ((st = check_tile(&k, dst_name(n_dst, i), a->dst[i], cl != K_FILLPAD)))
      return st;
  for (int i = 0; i < n_src; i++)
    if ((st = check_tile(&k, src_names[i], a->src[i], 1)))
      return st;
  if ((st = check_rules(&k, cl, a)))
    return st;
  return check_aliasing(&k, cl, a, n_src, n_dst);
}
