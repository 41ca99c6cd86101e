/* tileops: pto__tileop_check rejects bad operands, naming the instruction
 * and what is wrong, and accepts good ones: tile geometry, element-wise,
 * compare/select and axis, move and sort immediates, top-k, memory and
 * aliasing (tileops/check.c). The matmul family's and the attention
 * instructions' rules are in test_tileops_check_matmul.c. */
#include "tests/tileops_test.h"

Test(tileops, check_element_operands, .fini = free_all) {
  pto_tile *d = dst_new(PTO_F32, 16, 48, 16, 33);
  pto_tile *x = dst_new(PTO_F32, 16, 48, 16, 33);
  pto_tile *y = dst_new(PTO_F32, 16, 48, 16, 32);
  pto_targs a = binop_args(d, x, y);
  expect_reject(PTO_OP_TADD, &a, PTO_ESHAPE, "16x32", "16x33");
  y->valid_cols = 33;
  expect_accept(PTO_OP_TADD, &a);

  a.src[1] = NULL;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "src1", NULL);
  a.src[1] = y;
  a.dst[0] = NULL;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "dst", NULL);
  a.dst[0] = d;

  pto_tile *yi = dst_new(PTO_I32, 16, 48, 16, 33);
  a.src[1] = yi;
  expect_reject(PTO_OP_TADD, &a, PTO_EDTYPE, "i32", "f32");
  a.src[1] = y;

  pto_tile *di = dst_new(PTO_I32, 16, 48, 16, 33),
           *xi = dst_new(PTO_I32, 16, 48, 16, 33);
  pto_targs e = {0};
  e.dst[0] = di;
  e.src[0] = xi;
  expect_reject(PTO_OP_TEXP, &e, PTO_EDTYPE, "i32", NULL);
  expect_accept(PTO_OP_TNEG, &e);
  pto_tile *db = dst_new(PTO_BF16, 16, 48, 16, 33),
           *xb = dst_new(PTO_BF16, 16, 48, 16, 33);
  e.dst[0] = db;
  e.src[0] = xb;
  expect_reject(PTO_OP_TNEG, &e, PTO_EDTYPE, "bf16", NULL);
  e.src[0] = x;
  expect_accept(PTO_OP_TCVT, &e); /* any dtype pair */

  /* valid region: beyond the capacity, empty */
  x->valid_rows = 17;
  expect_reject(PTO_OP_TADD, &a, PTO_ESHAPE, "17x33", "16x48");
  x->valid_rows = 0;
  expect_reject(PTO_OP_TADD, &a, PTO_ESHAPE, "0x33", NULL);
  x->valid_rows = 16;

  /* geometry: alignment, stride */
  void *data = x->data;
  x->data = (unsigned char *)data + 4;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "aligned", NULL);
  x->data = NULL;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "src0", NULL);
  x->data = data;
  x->stride = 40;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "stride", NULL);
  x->stride = 56;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "stride", NULL);
  x->stride = 48;
  x->dtype = PTO_DTYPE_COUNT;
  expect_reject(PTO_OP_TADD, &a, PTO_EDTYPE, "src0", NULL);
  x->dtype = PTO_F32;
  expect_accept(PTO_OP_TADD, &a);

  /* a message buffer that is too small, or none */
  char tiny[6];
  cr_expect_eq(
      pto__tileop_check(PTO_OP_TADD, &(pto_targs){0}, tiny, sizeof tiny),
      PTO_EINVAL);
  cr_expect_str_eq(tiny, "TADD:");
  cr_expect_eq(pto__tileop_check(PTO_OP_TADD, &(pto_targs){0}, NULL, 0),
               PTO_EINVAL);
}

Test(tileops, check_rejects_missing_operands) {
  pto_targs a = {0};
  for (int op = 0; op < PTO_OP_COUNT; op++)
    expect_reject(op, &a, PTO_EINVAL, "NULL", NULL);
  char msg[128];
  cr_expect_eq(pto__tileop_check(PTO_OP_TADD, NULL, msg, sizeof msg),
               PTO_EINVAL);
  cr_expect(strstr(msg, "TADD") != NULL);
  cr_expect_eq(pto__tileop_check(-1, &a, msg, sizeof msg), PTO_EINVAL);
  cr_expect(strstr(msg, "unknown instruction -1") != NULL, "%s", msg);
  cr_expect_eq(pto__tileop_check(PTO_OP_COUNT + 200, &a, msg, sizeof msg),
               PTO_EINVAL);
  cr_expect_eq(pto__tileop_run(-1, &a), PTO_EINVAL);
  cr_expect_eq(pto__tileop_run(PTO_OP_COUNT + 200, &a), PTO_EINVAL);
  cr_expect_eq(pto__tileop_run(PTO_OP_TADD, NULL), PTO_EINVAL);
}

Test(tileops, check_compare_select_axis, .fini = free_all) {
  pto_tile *x = dst_new(PTO_F32, 16, 48, 13, 37),
           *y = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_tile *m = dst_new(PTO_I32, 16, 48, 13, 37),
           *f = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_targs a = binop_args(m, x, y);
  a.imm[0] = PTO_CMP_GE;
  expect_accept(PTO_OP_TCMP, &a);
  a.imm[0] = PTO_CMP_MODE_COUNT;
  expect_reject(PTO_OP_TCMP, &a, PTO_EINVAL, "mode", NULL);
  a.imm[0] = -1;
  expect_reject(PTO_OP_TCMP, &a, PTO_EINVAL, "mode", NULL);
  a.imm[0] = 0;
  a.dst[0] = f;
  expect_reject(PTO_OP_TCMP, &a, PTO_EDTYPE, "dst", NULL);

  pto_targs s = {0};
  s.dst[0] = f;
  s.src[0] = m;
  s.src[1] = x;
  s.src[2] = y;
  expect_accept(PTO_OP_TSEL, &s);
  s.src[0] = x;
  expect_reject(PTO_OP_TSEL, &s, PTO_EDTYPE, "src0", NULL);

  /* reductions and broadcasts: vector shapes */
  pto_tile *rv = dst_new(PTO_F32, 16, 1, 13, 1),
           *cv = dst_new(PTO_F32, 1, 48, 1, 37);
  pto_targs r = {0};
  r.dst[0] = rv;
  r.src[0] = x;
  expect_accept(PTO_OP_TROWSUM, &r);
  expect_reject(PTO_OP_TCOLSUM, &r, PTO_ESHAPE, "13x1", "1x37");
  rv->valid_rows = 12;
  expect_reject(PTO_OP_TROWMAX, &r, PTO_ESHAPE, "12x1", "13x1");
  rv->valid_rows = 13;
  r.dst[0] = cv;
  expect_accept(PTO_OP_TCOLMAX, &r);
  pto_targs e = binop_args(f, x, rv);
  expect_accept(PTO_OP_TROWEXPANDADD, &e);
  expect_reject(PTO_OP_TCOLEXPANDADD, &e, PTO_ESHAPE, "src1", NULL);
  e.src[1] = cv;
  expect_accept(PTO_OP_TCOLEXPANDDIV, &e);
  e.src[0] = cv;
  e.src[1] = NULL;
  expect_accept(PTO_OP_TCOLEXPAND, &e);
  expect_reject(PTO_OP_TROWEXPAND, &e, PTO_ESHAPE, "src0", NULL);
  pto_tile *xi = dst_new(PTO_I32, 16, 48, 13, 37),
           *ri = dst_new(PTO_I32, 16, 1, 13, 1);
  pto_targs ex = binop_args(xi, xi, ri);
  expect_accept(PTO_OP_TROWEXPANDMAX, &ex);
  expect_reject(PTO_OP_TROWEXPANDEXPDIF, &ex, PTO_EDTYPE, "i32", NULL);

  /* exp-dif with row sums: dst1 a rowvec of f32, apart from dst0 and src0 */
  pto_tile *sums = dst_new(PTO_F32, 16, 1, 13, 1);
  pto_targs es = binop_args(f, x, rv);
  es.dst[1] = sums;
  expect_accept(PTO_OP_TROWEXPANDEXPDIFSUM, &es);
  es.dst[1] = rv; /* the row maxima's own buffer */
  expect_accept(PTO_OP_TROWEXPANDEXPDIFSUM, &es);
  es.dst[1] = cv;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_ESHAPE, "dst1", "1x37");
  es.dst[1] = ri;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_EDTYPE, "dst1", "i32");
  es.dst[1] = sums;
  es.src[1] = ri;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_EDTYPE, "src1", "i32");
  es.src[1] = rv;
  sums->valid_rows = 12;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_ESHAPE, "dst1", "12x1");
  sums->valid_rows = 13;
  pto_tile in_x = *sums; /* a rowvec inside src0's buffer */
  in_x.data = x->data;
  es.dst[1] = &in_x;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_EINVAL, "dst1 overlaps",
                "src0");
}

Test(tileops, check_move_and_sort_immediates, .fini = free_all) {
  pto_tile *x = dst_new(PTO_F32, 16, 48, 13, 37),
           *d = dst_new(PTO_F32, 8, 16, 5, 7);
  pto_targs a = {0};
  a.dst[0] = d;
  a.src[0] = x;
  a.imm[0] = 8;
  a.imm[1] = 30;
  expect_accept(PTO_OP_TEXTRACT, &a);
  a.imm[0] = 9;
  expect_reject(PTO_OP_TEXTRACT, &a, PTO_ESHAPE, "5x7", "13x37");
  a.imm[0] = -1;
  expect_reject(PTO_OP_TEXTRACT, &a, PTO_ESHAPE, "(-1, 30)", NULL);
  pto_tile *xb = dst_new(PTO_BF16, 16, 48, 13, 37);
  a.src[0] = xb;
  a.imm[0] = 0;
  expect_reject(PTO_OP_TEXTRACT, &a, PTO_EDTYPE, "bf16", NULL);

  /* TINSERT: src d (5x7) into x (13x37) */
  pto_targs n = {0};
  n.dst[0] = x;
  n.src[0] = d;
  n.imm[0] = 8;
  n.imm[1] = 30;
  expect_accept(PTO_OP_TINSERT, &n);
  n.imm[1] = 31;
  expect_reject(PTO_OP_TINSERT, &n, PTO_ESHAPE, "5x7", "13x37");

  /* TTRANS and TFILLPAD shapes */
  pto_tile *t = dst_new(PTO_F32, 48, 16, 37, 13);
  pto_targs tr = {0};
  tr.dst[0] = t;
  tr.src[0] = x;
  expect_accept(PTO_OP_TTRANS, &tr);
  t->valid_rows = 13;
  expect_reject(PTO_OP_TTRANS, &tr, PTO_ESHAPE, "13x13", "37x13");
  pto_targs fp = {0};
  fp.dst[0] = d;
  fp.src[0] = x;
  d->valid_rows = 0; /* TFILLPAD ignores dst's valid region */
  expect_reject(PTO_OP_TFILLPAD, &fp, PTO_ESHAPE, "13x37", "8x16");
  fp.dst[0] = x;
  fp.src[0] = d;
  d->valid_rows = 5;
  x->valid_rows = 0;
  expect_accept(PTO_OP_TFILLPAD, &fp);
  x->valid_rows = 13;

  /* sorts */
  pto_tile *v = dst_new(PTO_F32, 4, 64, 3, 50),
           *ix = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_tile *dv = dst_new(PTO_F32, 4, 64, 3, 50),
           *di = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_targs s = {0};
  s.dst[0] = dv;
  s.dst[1] = di;
  s.src[0] = v;
  s.src[1] = ix;
  s.imm[0] = 4;
  s.imm[1] = 2;
  expect_accept(PTO_OP_TMRGSORT, &s);
  expect_accept(PTO_OP_TSORT32, &s);
  s.imm[1] = 1;
  expect_reject(PTO_OP_TMRGSORT, &s, PTO_EINVAL, "imm[1] = 1", NULL);
  s.imm[1] = 5;
  expect_reject(PTO_OP_TMRGSORT, &s, PTO_EINVAL, "imm[1] = 5", NULL);
  s.imm[1] = 4;
  s.imm[0] = 0;
  expect_reject(PTO_OP_TMRGSORT, &s, PTO_EINVAL, "imm[0] = 0", NULL);
  s.imm[0] = 32;
  expect_accept(PTO_OP_TMRGSORT, &s);
  s.src[1] = v;
  expect_reject(PTO_OP_TSORT32, &s, PTO_EDTYPE, "src1", NULL);
  s.src[1] = ix;
  di->valid_cols = 49;
  expect_reject(PTO_OP_TSORT32, &s, PTO_ESHAPE, "3x49", "3x50");
}

Test(tileops, check_topk_operands, .fini = free_all) {
  pto_tile *v = dst_new(PTO_F32, 4, 64, 3, 50),
           *ix = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_tile *dv = dst_new(PTO_F32, 4, 64, 3, 20),
           *di = dst_new(PTO_I32, 4, 64, 3, 20);
  pto_targs s = {0};
  s.dst[0] = dv;
  s.dst[1] = di;
  s.src[0] = v;
  s.src[1] = ix;
  s.imm[0] = 13;
  expect_accept(PTO_OP_TTOPK, &s);
  expect_accept(PTO_OP_TMRGTOPK, &s);
  s.imm[1] = 2;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EINVAL, "mode imm[1] = 2", NULL);
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "mode imm[1] = 2", NULL);
  s.imm[1] = 0;
  /* more than 4 runs; a run length below 1 */
  s.imm[0] = 12;
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "50", "runs of 12");
  s.imm[0] = 0;
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "imm[0] = 0", NULL);
  s.imm[0] = 13;
  s.s = 2.5; /* the index offset per run: an integer >= 0 */
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "s = 2.5", NULL);
  s.s = -1;
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "s = -1", NULL);
  s.s = 50;
  expect_accept(PTO_OP_TMRGTOPK, &s);
  s.s = 0;
  /* indices past INT32_MAX */
  s.imm[0] = INT32_MAX - 49;
  expect_accept(PTO_OP_TTOPK, &s);
  s.imm[0] = INT32_MAX - 48;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EINVAL, "overflows i32", NULL);
  s.imm[0] = 13;
  /* keeping more than the entries pads: the masked mode only */
  dv->valid_cols = di->valid_cols = 60;
  expect_reject(PTO_OP_TTOPK, &s, PTO_ESHAPE, "3x60", "mode 1");
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_ESHAPE, "3x60", "3x50");
  s.imm[1] = 1;
  expect_accept(PTO_OP_TTOPK, &s);
  expect_accept(PTO_OP_TMRGTOPK, &s);
  /* dtypes and shapes */
  di->valid_cols = 59;
  expect_reject(PTO_OP_TTOPK, &s, PTO_ESHAPE, "dst1 valid 3x59", NULL);
  di->valid_cols = 60;
  dv->valid_rows = di->valid_rows = 2;
  expect_reject(PTO_OP_TTOPK, &s, PTO_ESHAPE, "2x60", "3 rows");
  dv->valid_rows = di->valid_rows = 3;
  s.src[0] = ix;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EDTYPE, "src0 dtype i32", NULL);
  s.src[0] = v;
  s.src[1] = v;
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EDTYPE, "src1 dtype f32", NULL);
  s.src[1] = ix;
  s.dst[1] = dv;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EDTYPE, "dst1 dtype f32", NULL);
  /* dst and src never share a buffer */
  s.dst[1] = di;
  s.dst[0] = v;
  v->valid_cols = 60;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EINVAL, "overlaps", NULL);
}

Test(tileops, check_memory_operands, .fini = free_all) {
  float buf[64 * 64];
  pto_tile *d = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_targs a = {0};
  a.dst[0] = d;
  a.g.base = buf;
  a.g.dtype = PTO_F32;
  a.g.rows = 13;
  a.g.cols = 37;
  a.g.row_stride = 64;
  a.g.col_stride = 1;
  expect_accept(PTO_OP_TLOAD, &a);
  a.g.cols = 36;
  expect_reject(PTO_OP_TLOAD, &a, PTO_ESHAPE, "13x36", "13x37");
  a.g.cols = 37;
  a.g.base = NULL;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EINVAL, "base", NULL);
  a.g.base = buf;
  a.g.dtype = PTO_DTYPE_COUNT;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EDTYPE, "global", NULL);
  a.g.dtype = PTO_BF16;
  expect_accept(PTO_OP_TLOAD, &a);

  pto_targs s = {0};
  s.src[0] = d;
  s.g = a.g;
  expect_accept(PTO_OP_TSTORE, &s);
  s.g.rows = 12;
  expect_reject(PTO_OP_TSTORE, &s, PTO_ESHAPE, "12x37", "13x37");

  /* TROWEXPANDMULSTORE: f32 tiles, a rowvec of src0's rows, an f32 view */
  pto_tile *mx = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_tile *mv = dst_new(PTO_F32, 16, 1, 13, 1);
  float mbuf[16 * 48];
  pto_targs ms = {0};
  ms.src[0] = mx;
  ms.src[1] = mv;
  ms.g = (pto_gview){.base = mbuf, .dtype = PTO_F32, .rows = 13, .cols = 37,
                     .row_stride = 48, .col_stride = 1};
  expect_accept(PTO_OP_TROWEXPANDMULSTORE, &ms);
  ms.g.rows = 12;
  expect_reject(PTO_OP_TROWEXPANDMULSTORE, &ms, PTO_ESHAPE, "12x37", "13x37");
  ms.g.rows = 13;
  ms.g.dtype = PTO_BF16;
  expect_reject(PTO_OP_TROWEXPANDMULSTORE, &ms, PTO_EDTYPE, "global", "bf16");
  ms.g.dtype = PTO_F32;
  ms.src[1] = dst_new(PTO_F32, 16, 1, 12, 1);
  expect_reject(PTO_OP_TROWEXPANDMULSTORE, &ms, PTO_ESHAPE, "src1", "12x1");
  ms.src[1] = mv;
  ms.src[0] = dst_new(PTO_I32, 16, 48, 13, 37);
  expect_reject(PTO_OP_TROWEXPANDMULSTORE, &ms, PTO_EDTYPE, "src0", "i32");

  /* TLOADROWMAX, TLOADEXPDIFSUM and TLOADSOFTMAXSTORE: f32 tiles, dst1 a
   * rowvec of dst0's rows (maxima, or sums), an f32 view (and for
   * TLOADSOFTMAXSTORE an f32 second view, clear of the first) */
  float ybuf[16 * 48];
  pto_gview y = ms.g;
  y.base = ybuf;
  static const int loads_rows[] = {PTO_OP_TLOADROWMAX, PTO_OP_TLOADEXPDIFSUM,
                                   PTO_OP_TLOADSOFTMAXSTORE};
  for (int i = 0; i < 3; i++) {
    const int op = loads_rows[i];
    pto_targs lm = {0};
    lm.dst[0] = mx;
    lm.dst[1] = mv;
    lm.g = ms.g;
    lm.g2 = y;
    expect_accept(op, &lm);
    lm.g.cols = 36;
    expect_reject(op, &lm, PTO_ESHAPE, "13x36", "13x37");
    lm.g.cols = 37;
    lm.g.dtype = PTO_I32;
    expect_reject(op, &lm, PTO_EDTYPE, "global", "i32");
    lm.g.dtype = PTO_F32;
    lm.dst[1] = dst_new(PTO_F32, 16, 1, 12, 1);
    expect_reject(op, &lm, PTO_ESHAPE, "dst1", "12x1");
    lm.dst[1] = dst_new(PTO_I32, 16, 1, 13, 1);
    expect_reject(op, &lm, PTO_EDTYPE, "dst1", "i32");
    pto_tile inside = *mv; /* dst1 written over dst0's rows */
    inside.data = mx->data;
    lm.dst[1] = &inside;
    expect_reject(op, &lm, PTO_EINVAL, "overlaps", NULL);
  }
  pto_targs sm = {0}; /* the second view's own rules */
  sm.dst[0] = mx;
  sm.dst[1] = mv;
  sm.g = ms.g;
  sm.g2 = y;
  sm.g2.rows = 12;
  expect_reject(PTO_OP_TLOADSOFTMAXSTORE, &sm, PTO_ESHAPE, "second global view",
                "12x37");
  sm.g2.rows = 13;
  sm.g2.dtype = PTO_BF16;
  expect_reject(PTO_OP_TLOADSOFTMAXSTORE, &sm, PTO_EDTYPE, "second global view",
                "bf16");
  sm.g2.dtype = PTO_F32;
  sm.g2.base = NULL;
  expect_reject(PTO_OP_TLOADSOFTMAXSTORE, &sm, PTO_EINVAL, "second global view",
                "no base");
  sm.g2.base = (float *)ms.g.base + 40; /* one row and a bit into g */
  expect_reject(PTO_OP_TLOADSOFTMAXSTORE, &sm, PTO_EINVAL, "overlaps", "13x37");

  pto_tile *ix = dst_new(PTO_I32, 1, 16, 1, 13);
  pto_targs g = {0};
  g.dst[0] = d;
  g.src[0] = ix;
  g.g = a.g;
  g.g.rows = 5; /* any table height */
  expect_accept(PTO_OP_TGATHER, &g);
  ix->valid_cols = 12;
  expect_reject(PTO_OP_TGATHER, &g, PTO_ESHAPE, "1x12", "13");
  ix->valid_cols = 13;
  g.g.cols = 30;
  expect_reject(PTO_OP_TGATHER, &g, PTO_ESHAPE, "5x30", "37");
  g.g.cols = 37;
  pto_tile *fx = dst_new(PTO_F32, 1, 16, 1, 13);
  g.src[0] = fx;
  expect_reject(PTO_OP_TGATHER, &g, PTO_EDTYPE, "src0", NULL);
}

Test(tileops, check_aliasing, .fini = free_all) {
  pto_tile *x = dst_new(PTO_F32, 16, 48, 13, 37),
           *y = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_targs a = binop_args(x, x, y); /* in place: allowed */
  expect_accept(PTO_OP_TADD, &a);
  a = binop_args(y, x, y);
  expect_accept(PTO_OP_TMUL, &a);

  /* a shifted view of the same buffer overlaps without being the same */
  pto_tile shifted = *x;
  shifted.data = (unsigned char *)x->data + 64 * 3;
  a = binop_args(&shifted, x, y);
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "overlaps", "src0");

  pto_tile *sq = dst_new(PTO_F32, 16, 16, 16, 16);
  pto_targs t = {0};
  t.dst[0] = sq;
  t.src[0] = sq;
  expect_reject(PTO_OP_TTRANS, &t, PTO_EINVAL, "overlaps", NULL);

  /* a conversion in place must keep the element size */
  pto_tile half = *x;
  half.dtype = PTO_BF16;
  half.stride = 64 * 3;
  t.dst[0] = &half;
  t.src[0] = x;
  expect_reject(PTO_OP_TCVT, &t, PTO_EINVAL, "overlaps", NULL);
  pto_tile asint = *x;
  asint.dtype = PTO_I32;
  t.dst[0] = &asint;
  expect_accept(PTO_OP_TCVT, &t);

  pto_tile *v = dst_new(PTO_F32, 4, 64, 3, 50),
           *ix = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_tile *dv = dst_new(PTO_F32, 4, 64, 3, 50),
           *di = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_targs s = {0};
  s.dst[0] = v;
  s.dst[1] = ix;
  s.src[0] = v;
  s.src[1] = ix;
  s.imm[0] = 8;
  s.imm[1] = 2;
  expect_accept(PTO_OP_TSORT32, &s);
  expect_reject(PTO_OP_TMRGSORT, &s, PTO_EINVAL, "overlaps", NULL);
  s.dst[0] = dv;
  s.dst[1] = dv;
  pto_tile dvi = *dv;
  dvi.dtype = PTO_I32;
  s.dst[1] = &dvi;
  s.src[0] = v;
  s.src[1] = ix;
  expect_reject(PTO_OP_TSORT32, &s, PTO_EINVAL, "dst0 overlaps dst1", NULL);
  s.dst[1] = di;
  expect_accept(PTO_OP_TMRGSORT, &s);

  pto_tile *A = dst_new(PTO_F32, 16, 16, 16, 16);
  pto_targs m = binop_args(A, A, A);
  expect_reject(PTO_OP_TMATMUL, &m, PTO_EINVAL, "overlaps", NULL);
}

