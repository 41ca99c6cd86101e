/* Checking an instruction's operands before it runs (pto__tileop_check):
 * what the table declares (core/isa.h: operand counts, the flags that add
 * a source, which destination's valid region the instruction sets, which
 * classes may work in place), then the rules of the instruction's operand
 * class (rule_<CLASS>, one per class of PTO_CLASS_MAP, from core/isa.def's
 * semantics), each failure a message naming the operand, its dtype and
 * sizes. Here: the entry point, tile geometry, aliasing, custom
 * instructions, and the rules of the memory, element-wise, axis, movement
 * and sort classes; the matmul family and the attention instructions
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

/* f32, or i32 when the instruction accepts it (its destination's dtypes
 * in the table: PTO_DT_NUM resolved). */
static int check_numeric(const chk *k, const char *what, const pto_tile *t) {
  int int_ok = (pto__insn_operand(k->op, 1, 0).dtypes & PTO_DT_I32) != 0;
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

static int overlap(const pto_tile *x, const pto_tile *y) {
  uintptr_t x0 = (uintptr_t)x->data, y0 = (uintptr_t)y->data;
  uintptr_t x1 = x0 + (uintptr_t)x->rows * x->stride * esize(x);
  uintptr_t y1 = y0 + (uintptr_t)y->rows * y->stride * esize(y);
  return x0 < y1 && y0 < x1;
}

/* Destinations overlap nothing, except (for a class that may work in
 * place) the very buffer of a source of their valid shape, or of any shape
 * when the instruction sets the destination's valid region. */
static int check_aliasing(const chk *k, const pto_targs *a, int n_src,
                          int n_dst) {
  const int inplace = pto__insn_facts(k->op)->inplace;
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
      int same_shape =
          (pto__insn_operand(k->op, 1, i).attr & PTO_OA_SETS_VALID) ||
          (d->valid_rows == s->valid_rows && d->valid_cols == s->valid_cols);
      if (!(inplace && same_buffer && same_shape))
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
    return fail(
        k, PTO_ESHAPE,
        "dst0 valid %" PRIu32 "x%" PRIu32 " keeps more than the %" PRIu32
        " entries of src0 valid %" PRIu32 "x%" PRIu32 " (only mode 1 pads)",
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

/* ---- the rules of each operand class ----------------------------------- */

/* Dtype, shape and immediate rules of a built-in instruction whose tiles
 * are present and well-formed, one function per class of PTO_CLASS_MAP
 * (rule_CUSTOM below). */
#define TRY(x)                                                                 \
  do {                                                                         \
    if ((st = (x)) != PTO_OK)                                                  \
      return st;                                                               \
  } while (0)

static int rule_LOAD(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  int st;
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

static int rule_STORE(const chk *k, const pto_targs *a) {
  const pto_tile *s0 = a->src[0];
  return check_gview(k, &a->g, "global view", "src0", s0);
}

static int rule_LOADMAX(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  return check_f32_rows(k, &a->g, "dst0", d, "dst1", a->dst[1]);
}

static int rule_LOADEXPSUM(const chk *k, const pto_targs *a) {
  return rule_LOADMAX(k, a);
}

static int rule_MULSTORE(const chk *k, const pto_targs *a) {
  const pto_tile *s0 = a->src[0], *s1 = a->src[1];
  return check_f32_rows(k, &a->g, "src0", s0, "src1", s1);
}

static int rule_LOADSTORE(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  int st;
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

static int rule_GATHER(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
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
}

static int rule_GATHERELSE(const chk *k, const pto_targs *a) {
  int st;
  TRY(rule_GATHER(k, a));
  TRY(check_same_dtype(k, "src1", a->src[1], "dst", a->dst[0]));
  return check_same_valid(k, "src1", a->src[1], "dst", a->dst[0]);
}

static int rule_BINARY(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0], *s1 = a->src[1];
  int st;
  TRY(check_numeric(k, "dst", d));
  TRY(check_same_dtype(k, "src0", s0, "dst", d));
  TRY(check_same_dtype(k, "src1", s1, "dst", d));
  TRY(check_same_valid(k, "src0", s0, "dst", d));
  return check_same_valid(k, "src1", s1, "dst", d);
}

static int rule_UNARY(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
  TRY(check_numeric(k, "dst", d));
  TRY(check_same_dtype(k, "src0", s0, "dst", d));
  return check_same_valid(k, "src0", s0, "dst", d);
}

static int rule_SCALAR(const chk *k, const pto_targs *a) {
  return rule_UNARY(k, a);
}

static int rule_CMP(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0], *s1 = a->src[1];
  int st;
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
}

static int rule_SEL(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0], *s1 = a->src[1], *s2 = a->src[2];
  int st;
  TRY(check_dtype_is(k, "src0", s0, PTO_I32));
  TRY(check_numeric(k, "dst", d));
  TRY(check_same_dtype(k, "src1", s1, "dst", d));
  TRY(check_same_dtype(k, "src2", s2, "dst", d));
  TRY(check_same_valid(k, "src0", s0, "dst", d));
  TRY(check_same_valid(k, "src1", s1, "dst", d));
  return check_same_valid(k, "src2", s2, "dst", d);
}

static int rule_CONVERT(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  return check_same_valid(k, "src0", s0, "dst", d);
}

static int rule_FILL(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  return check_numeric(k, "dst", d);
}

static int rule_ROWRED(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
  TRY(check_numeric(k, "dst", d));
  TRY(check_same_dtype(k, "src0", s0, "dst", d));
  return check_valid_is(k, "dst", d, s0->valid_rows, 1,
                        "a rowvec of src0's rows");
}

static int rule_COLRED(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
  TRY(check_numeric(k, "dst", d));
  TRY(check_same_dtype(k, "src0", s0, "dst", d));
  return check_valid_is(k, "dst", d, 1, s0->valid_cols,
                        "a colvec of src0's cols");
}

static int rule_ROWEXPAND(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
  TRY(check_numeric(k, "dst", d));
  TRY(check_same_dtype(k, "src0", s0, "dst", d));
  return check_valid_is(k, "src0", s0, d->valid_rows, 1,
                        "a rowvec of dst's rows");
}

static int rule_COLEXPAND(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
  TRY(check_numeric(k, "dst", d));
  TRY(check_same_dtype(k, "src0", s0, "dst", d));
  return check_valid_is(k, "src0", s0, 1, d->valid_cols,
                        "a colvec of dst's cols");
}

static int rule_ROWEXPAND2(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0], *s1 = a->src[1];
  int st;
  TRY(check_numeric(k, "dst", d));
  TRY(check_same_dtype(k, "src0", s0, "dst", d));
  TRY(check_same_dtype(k, "src1", s1, "dst", d));
  TRY(check_same_valid(k, "src0", s0, "dst", d));
  return check_valid_is(k, "src1", s1, d->valid_rows, 1,
                        "a rowvec of dst's rows");
}

static int rule_ROWEXPDIF(const chk *k, const pto_targs *a) {
  return rule_ROWEXPAND2(k, a);
}

static int rule_ROWEXPSUM(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0], *s1 = a->src[1];
  int st;
  TRY(check_dtype_is(k, "dst0", d, PTO_F32));
  TRY(check_dtype_is(k, "dst1", a->dst[1], PTO_F32));
  TRY(check_dtype_is(k, "src0", s0, PTO_F32));
  TRY(check_dtype_is(k, "src1", s1, PTO_F32));
  TRY(check_same_valid(k, "src0", s0, "dst0", d));
  TRY(check_valid_is(k, "src1", s1, d->valid_rows, 1,
                     "a rowvec of dst0's rows"));
  return check_valid_is(k, "dst1", a->dst[1], d->valid_rows, 1,
                        "a rowvec of dst0's rows");
}

static int rule_COLEXPAND2(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0], *s1 = a->src[1];
  int st;
  TRY(check_numeric(k, "dst", d));
  TRY(check_same_dtype(k, "src0", s0, "dst", d));
  TRY(check_same_dtype(k, "src1", s1, "dst", d));
  TRY(check_same_valid(k, "src0", s0, "dst", d));
  return check_valid_is(k, "src1", s1, 1, d->valid_cols,
                        "a colvec of dst's cols");
}

static int rule_MATMUL(const chk *k, const pto_targs *a) {
  return pto__check_tmatmul(k, a);
}

static int rule_MATMUL_ACC(const chk *k, const pto_targs *a) {
  return rule_MATMUL(k, a);
}

static int rule_MATMUL_GA(const chk *k, const pto_targs *a) {
  return pto__check_tmatmul_gathered(k, a, 1);
}

static int rule_MATMUL_GB(const chk *k, const pto_targs *a) {
  return pto__check_tmatmul_gathered(k, a, 0);
}

static int rule_SMONLINE(const chk *k, const pto_targs *a) {
  return pto__check_tsoftmaxonline(k, a);
}

static int rule_SMFINAL(const chk *k, const pto_targs *a) {
  return pto__check_tsoftmaxfinal(k, a);
}

static int rule_MATMUL_WSUM(const chk *k, const pto_targs *a) {
  return pto__check_tmatmul_relu_wsum(k, a);
}

static int rule_MATMUL_WSUM_G(const chk *k, const pto_targs *a) {
  return pto__check_tmatmul_relu_wsum_g(k, a);
}

static int rule_EXTRACT(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
  TRY(check_same_dtype(k, "dst", d, "src0", s0));
  return check_window(k, a->imm[0], a->imm[1], d->valid_rows, d->valid_cols,
                      "src0", s0);
}

static int rule_INSERT(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
  TRY(check_same_dtype(k, "src0", s0, "dst", d));
  return check_window(k, a->imm[0], a->imm[1], s0->valid_rows, s0->valid_cols,
                      "dst", d);
}

static int rule_TRANS(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
  TRY(check_same_dtype(k, "dst", d, "src0", s0));
  return check_valid_is(k, "dst", d, s0->valid_cols, s0->valid_rows,
                        "src0 transposed");
}

static int rule_FILLPAD(const chk *k, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0];
  int st;
  TRY(check_same_dtype(k, "dst", d, "src0", s0));
  if (s0->valid_rows > d->rows || s0->valid_cols > d->cols)
    return fail(k, PTO_ESHAPE,
                "src0 valid %" PRIu32 "x%" PRIu32
                " exceeds dst capacity %" PRIu32 "x%" PRIu32,
                s0->valid_rows, s0->valid_cols, d->rows, d->cols);
  return PTO_OK;
}

/* TSORT32 and TMRGSORT (merge): the same operands. */
static int check_sorts(const chk *k, const pto_targs *a, int merge) {
  pto_tile *d = a->dst[0];
  const pto_tile *s0 = a->src[0], *s1 = a->src[1];
  int st;
  TRY(check_dtype_is(k, "src0", s0, PTO_F32));
  TRY(check_dtype_is(k, "src1", s1, PTO_I32));
  TRY(check_dtype_is(k, "dst0", d, PTO_F32));
  TRY(check_dtype_is(k, "dst1", a->dst[1], PTO_I32));
  TRY(check_same_valid(k, "src0", s0, "dst0", d));
  TRY(check_same_valid(k, "src1", s1, "dst0", d));
  TRY(check_same_valid(k, "dst1", a->dst[1], "dst0", d));
  if (merge && a->imm[0] < 1)
    return fail(k, PTO_EINVAL, "run length imm[0] = %" PRId32 " is < 1",
                a->imm[0]);
  if (merge && (a->imm[1] < 2 || a->imm[1] > 4))
    return fail(k, PTO_EINVAL,
                "merge ways imm[1] = %" PRId32 " is outside 2..4", a->imm[1]);
  return PTO_OK;
}

static int rule_SORT32(const chk *k, const pto_targs *a) {
  return check_sorts(k, a, 0);
}

static int rule_MRGSORT(const chk *k, const pto_targs *a) {
  return check_sorts(k, a, 1);
}

static int rule_TOPK(const chk *k, const pto_targs *a) {
  return check_topk(k, 0, a);
}

static int rule_MRGTOPK(const chk *k, const pto_targs *a) {
  return check_topk(k, 1, a);
}

#undef TRY

/* A custom instruction: dst[0] of the registered dtype, n_src sources of
 * its valid shape. */
static int rule_CUSTOM(const chk *k, const pto_targs *a) {
  const pto_custom_op *c = pto__custom_get(k->op);
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

/* Generated from the class list: a class without a rule_<CLASS> function
 * does not compile. */
typedef int (*rule_fn)(const chk *k, const pto_targs *a);
static const rule_fn rules[PTO_CLASS_COUNT] = {
#define RULE(name) [PTO_CLASS_##name] = rule_##name,
    PTO_CLASS_MAP(RULE)
#undef RULE
};

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
  if (info->cls == PTO_CLASS_CUSTOM) /* its tiles are its rules' */
    return rule_CUSTOM(&k, a);
  /* with the source its flags add: a row scale, a softmax state */
  const int n_src = pto__insn_n_src(op, a->flags), n_dst = info->n_dst;
  int st;
  for (int i = 0; i < n_dst; i++) {
    /* a destination whose valid region the instruction sets (TFILLPAD's):
     * what it held does not matter */
    const int sets = pto__insn_operand(op, 1, i).attr & PTO_OA_SETS_VALID;
    if ((st = check_tile(&k, dst_name(n_dst, i), a->dst[i], !sets)))
      return st;
  }
  for (int i = 0; i < n_src; i++)
    if ((st = check_tile(&k, src_names[i], a->src[i], 1)))
      return st;
  if ((st = rules[info->cls](&k, a)))
    return st;
  return check_aliasing(&k, a, n_src, n_dst);
}
