/* tileops/check.h (internal): what the operand checks share
 * (tileops/check.c: pto__tileop_check, its tile, dtype, shape, memory,
 * movement and sort rules; tileops/check_matmul.c: the rules of the matmul
 * family and of the attention instructions around it). Included by those
 * two files only: the check's context, its failure message, and the rules
 * both apply (dtype, valid shape, packed panels, global view), static
 * inline; then the per-class rules check_matmul.c gives check.c. */
#ifndef PTO_TILEOPS_CHECK_H
#define PTO_TILEOPS_CHECK_H

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pto/isa.h"
#include "tileops/tileops.h"

typedef struct chk {
  int op;
  const char *name; /* the instruction's */
  char *msg;
  size_t size;
} chk;

/* Writes "<INSN>: <message>" to k->msg and returns status. */
__attribute__((format(printf, 3, 4))) static inline int
fail(const chk *k, int status, const char *fmt, ...) {
  if (k->msg && k->size) {
    int n = snprintf(k->msg, k->size, "%s: ", k->name);
    if (n >= 0 && (size_t)n < k->size) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(k->msg + n, k->size - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return status;
}

static inline int check_dtype_is(const chk *k, const char *what,
                                 const pto_tile *t, pto_dtype dt) {
  if (t->dtype == dt)
    return PTO_OK;
  return fail(k, PTO_EDTYPE, "%s dtype %s, expected %s", what,
              pto_dtype_name(t->dtype), pto_dtype_name(dt));
}

static inline int check_same_valid(const chk *k, const char *what,
                                   const pto_tile *t, const char *ref_name,
                                   const pto_tile *ref) {
  if (t->valid_rows == ref->valid_rows && t->valid_cols == ref->valid_cols)
    return PTO_OK;
  return fail(k, PTO_ESHAPE,
              "%s valid %" PRIu32 "x%" PRIu32 " differs from %s valid %" PRIu32
              "x%" PRIu32,
              what, t->valid_rows, t->valid_cols, ref_name, ref->valid_rows,
              ref->valid_cols);
}

/* t's valid region must be rows x cols, for the reason given. */
static inline int check_valid_is(const chk *k, const char *what,
                                 const pto_tile *t, uint32_t rows,
                                 uint32_t cols, const char *why) {
  if (t->valid_rows == rows && t->valid_cols == cols)
    return PTO_OK;
  return fail(k, PTO_ESHAPE,
              "%s valid %" PRIu32 "x%" PRIu32 ", expected %" PRIu32 "x%" PRIu32
              " (%s)",
              what, t->valid_rows, t->valid_cols, rows, cols, why);
}

/* A packed matmul operand: panel width w (from imm[which]) in range, and
 * the padded panels inside t (layout: core/isa.def, TLOAD). */
static inline int check_packed(const chk *k, const char *what,
                               const pto_tile *t, int pack_a, int32_t w,
                               int which) {
  const char *flag = pack_a ? "PTO_TF_PACK_A" : "PTO_TF_PACK_B";
  if (w < 1 || w > PTO_MM_PANEL_MAX)
    return fail(k, PTO_EINVAL,
                "%s panel width imm[%d] = %" PRId32 " is outside 1..%d", flag,
                which, w, PTO_MM_PANEL_MAX);
  uint32_t v = pack_a ? t->valid_rows : t->valid_cols;
  uint64_t padded = ((uint64_t)v + (uint32_t)w - 1) / (uint32_t)w * (uint32_t)w;
  uint32_t room = pack_a ? t->rows : t->stride;
  if (padded > room)
    return fail(k, PTO_ESHAPE,
                "%s valid %" PRIu32 "x%" PRIu32 " packed in panels of %" PRId32
                " %s needs %" PRIu64 " %s, it has %" PRIu32,
                what, t->valid_rows, t->valid_cols, w, pack_a ? "rows" : "cols",
                padded, pack_a ? "rows" : "cols (stride)", room);
  /* a 2-byte tile holds k in pairs: K rounds up to even */
  const uint32_t kg = pto__pack_kgroup(t->dtype);
  uint32_t kv = pack_a ? t->valid_cols : t->valid_rows;
  uint32_t kroom = pack_a ? t->stride : t->rows;
  if (((uint64_t)kv + kg - 1) / kg * kg > kroom)
    return fail(k, PTO_ESHAPE,
                "%s %s valid %" PRIu32 "x%" PRIu32 " packed holds k in pairs: "
                "%" PRIu32 " k need %" PRIu32 " %s, it has %" PRIu32,
                what, pto_dtype_name(t->dtype), t->valid_rows, t->valid_cols,
                kv, (kv + kg - 1) / kg * kg, pack_a ? "cols (stride)" : "rows",
                kroom);
  return PTO_OK;
}

/* The global view of a memory instruction: gn names it ("global view", or
 * "second global view (g2)"). */
static inline int check_gview_base(const chk *k, const pto_gview *g,
                                   const char *gn) {
  if (!g->base)
    return fail(k, PTO_EINVAL, "%s has no base", gn);
  if ((unsigned)g->dtype >= PTO_DTYPE_COUNT)
    return fail(k, PTO_EDTYPE, "%s has dtype %d, not a PTO dtype", gn,
                (int)g->dtype);
  if (g->rows < 0 || g->cols < 0)
    return fail(k, PTO_EINVAL, "%s %" PRId64 "x%" PRId64 " has a negative size",
                gn, g->rows, g->cols);
  return PTO_OK;
}

/* tileops/check_matmul.c: the rules of one operand class each, for
 * check.c's rule_<CLASS> (its tiles present and well-formed). */
int pto__check_tmatmul(const chk *k, const pto_targs *a); /* TMATMUL(_ACC) */
int pto__check_tmatmul_relu_wsum(const chk *k, const pto_targs *a);
/* TMATMUL_GA (ga 1) and TMATMUL_GB (ga 0) */
int pto__check_tmatmul_gathered(const chk *k, const pto_targs *a, int ga);
int pto__check_tmatmul_relu_wsum_g(const chk *k, const pto_targs *a);
int pto__check_tsoftmaxonline(const chk *k, const pto_targs *a);
int pto__check_tsoftmaxfinal(const chk *k, const pto_targs *a);

#endif /* PTO_TILEOPS_CHECK_H */
