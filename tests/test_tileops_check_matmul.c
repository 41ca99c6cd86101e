/* tileops: pto__tileop_check on the matmul family (TMATMUL, TMATMUL_ACC
 * and its row scale, TMATMUL_RELU_WSUM, TMATMUL_GA, TMATMUL_GB,
 * TMATMUL_RELU_WSUM_G, packed operands) and on the attention instructions
 * around it (TSOFTMAXONLINE, TSOFTMAXFINAL): rejects bad
 * operands, naming the instruction and what is wrong, and accepts good ones
 * (tileops/check_matmul.c). */
#include "tests/tileops_test.h"

Test(tileops, check_matmul_operands, .fini = free_all) {
  pto_tile *A = dst_new(PTO_BF16, 16, 32, 16, 29),
           *B = dst_new(PTO_BF16, 32, 48, 29, 37);
  pto_tile *C = dst_new(PTO_F32, 16, 48, 16, 37);
  pto_targs a = binop_args(C, A, B);
  expect_accept(PTO_OP_TMATMUL, &a);
  B->valid_rows = 28;
  expect_reject(PTO_OP_TMATMUL, &a, PTO_ESHAPE, "28", "29");
  B->valid_rows = 29;
  C->valid_cols = 36;
  expect_reject(PTO_OP_TMATMUL_ACC, &a, PTO_ESHAPE, "16x36", "16x37");
  C->valid_cols = 37;
  a.flags = PTO_TF_TRANS_B;
  expect_reject(PTO_OP_TMATMUL, &a, PTO_ESHAPE, "transposed", NULL);
  pto_tile *Bt = dst_new(PTO_F16, 48, 32, 37, 29);
  a.src[1] = Bt;
  expect_accept(PTO_OP_TMATMUL, &a);
  pto_tile *At = dst_new(PTO_F32, 32, 16, 29, 16);
  a.src[0] = At;
  a.flags = PTO_TF_TRANS_A | PTO_TF_TRANS_B;
  expect_accept(PTO_OP_TMATMUL, &a);
  pto_tile *Ai = dst_new(PTO_I32, 32, 16, 29, 16);
  a.src[0] = Ai;
  expect_reject(PTO_OP_TMATMUL, &a, PTO_EDTYPE, "src0", "i32");
  a.src[0] = At;
  pto_tile *Cb = dst_new(PTO_BF16, 16, 48, 16, 37);
  a.dst[0] = Cb;
  expect_reject(PTO_OP_TMATMUL, &a, PTO_EDTYPE, "dst", "bf16");
}

Test(tileops, check_attention_operands, .fini = free_all) {
  /* TMATMUL_ACC's row scale */
  pto_tile *A = dst_new(PTO_F32, 16, 32, 16, 29),
           *B = dst_new(PTO_F32, 32, 48, 29, 37),
           *C = dst_new(PTO_F32, 16, 48, 16, 37),
           *f = dst_new(PTO_F32, 16, 4, 15, 3);
  pto_targs a = binop_args(C, A, B);
  a.src[2] = f;
  a.flags = PTO_TF_ROWSCALE;
  expect_reject(PTO_OP_TMATMUL_ACC, &a, PTO_ESHAPE, "src2", "15x3");
  f->valid_rows = 16;
  expect_accept(PTO_OP_TMATMUL_ACC, &a);
  expect_reject(PTO_OP_TMATMUL, &a, PTO_EINVAL, "TMATMUL_ACC only", NULL);
  a.src[2] = NULL;
  expect_reject(PTO_OP_TMATMUL_ACC, &a, PTO_EINVAL, "src2", NULL);
  pto_tile *ix = dst_new(PTO_I32, 1, 32, 1, 20);
  /* TSOFTMAXONLINE */
  pto_tile *S = dst_new(PTO_F32, 12, 32, 12, 20),
           *P = dst_new(PTO_F32, 12, 32, 12, 20),
           *st = dst_new(PTO_F32, 12, 4, 12, 3);
  ix->valid_cols = 20;
  pto_targs o = {0};
  o.src[0] = S;
  o.src[1] = ix;
  o.dst[0] = P;
  o.dst[1] = st;
  o.imm[0] = 6;
  o.imm[1] = 100;
  expect_accept(PTO_OP_TSOFTMAXONLINE, &o);
  o.flags = PTO_TF_ACC;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_EINVAL, "src2", NULL);
  o.src[2] = st;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_EINVAL, "overlaps", NULL);
  pto_tile *st0 = dst_new(PTO_F32, 12, 4, 11, 3);
  o.src[2] = st0;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "src2", "11x3");
  o.flags = 0;
  o.imm[0] = 7; /* 12 rows in panels of 7 need 14 */
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "14", NULL);
  o.imm[0] = 6;
  ix->valid_cols = 21;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "21 indices", NULL);
  /* TSOFTMAXFINAL */
  pto_tile *Y = dst_new(PTO_F32, 12, 32, 12, 20),
           *L = dst_new(PTO_F32, 12, 1, 12, 1);
  pto_targs fn = {0};
  fn.src[0] = S;
  fn.src[1] = st;
  fn.dst[0] = Y;
  fn.dst[1] = L;
  expect_accept(PTO_OP_TSOFTMAXFINAL, &fn);
  L->valid_rows = 11;
  expect_reject(PTO_OP_TSOFTMAXFINAL, &fn, PTO_ESHAPE, "dst1", "11x1");
}

/* TMATMUL_GA and TMATMUL_GB (pto__check_tmatmul_gathered), and
 * TSOFTMAXONLINE on transposed scores. */
Test(tileops, check_gathered_matmul_operands, .fini = free_all) {
  static float table[40 * 48];
  /* GA: 14 indices (2 x 7) pick rows of G (K = 29) for B (29 x 37) */
  pto_tile *ix = dst_new(PTO_I32, 2, 8, 2, 7),
           *B = dst_new(PTO_F32, 32, 48, 29, 37),
           *C = dst_new(PTO_F32, 16, 48, 14, 37);
  pto_targs a = {0};
  a.dst[0] = C;
  a.src[0] = ix;
  a.src[1] = B;
  a.g = (pto_gview){table, PTO_F32, 40, 29, 48, 1};
  const int ga = PTO_OP_TMATMUL_GA, gb = PTO_OP_TMATMUL_GB;
  expect_accept(ga, &a);
  pto_tile *ixf = dst_new(PTO_F32, 2, 8, 2, 7);
  a.src[0] = ixf;
  expect_reject(ga, &a, PTO_EDTYPE, "src0", "expected i32");
  a.src[0] = ix;
  a.g.cols = 28; /* narrower than K */
  expect_reject(ga, &a, PTO_ESHAPE, "40x28", "(29)");
  a.g.cols = 29;
  a.g.dtype = PTO_I32;
  expect_reject(ga, &a, PTO_EDTYPE, "global view", "i32");
  a.g.dtype = PTO_BF16;
  expect_accept(ga, &a);
  a.g.dtype = PTO_F32;
  C->valid_rows = 13; /* dst has a row per index */
  expect_reject(ga, &a, PTO_ESHAPE, "13x37", "14x37");
  C->valid_rows = 14;
  C->valid_cols = 36;
  expect_reject(ga, &a, PTO_ESHAPE, "14x36", "14x37");
  C->valid_cols = 37;
  pto_tile *Cb = dst_new(PTO_BF16, 16, 48, 14, 37);
  a.dst[0] = Cb;
  expect_reject(ga, &a, PTO_EDTYPE, "dst", "bf16");
  a.dst[0] = C;
  pto_tile *Bi = dst_new(PTO_I32, 32, 48, 29, 37);
  a.src[1] = Bi;
  expect_reject(ga, &a, PTO_EDTYPE, "src1", "i32");
  a.src[1] = B;
  a.flags = PTO_TF_PACK_B;
  a.imm[1] = 16; /* 37 cols in panels of 16: 48 = B's stride */
  expect_accept(ga, &a);
  a.imm[1] = 0;
  expect_reject(ga, &a, PTO_EINVAL, "PTO_TF_PACK_B", "imm[1]");
  a.imm[1] = 32; /* 37 cols pad to 64 > 48 */
  expect_reject(ga, &a, PTO_ESHAPE, "src1", "64 cols");
  a.imm[1] = 16;
  a.flags = PTO_TF_PACK_A;
  a.imm[0] = 6;
  expect_reject(ga, &a, PTO_EINVAL, "PTO_TF_PACK_B only", NULL);
  a.flags = PTO_TF_TRANS_B;
  expect_reject(ga, &a, PTO_EINVAL, "never transposed", NULL);
  a.flags = PTO_TF_TRANS_A;
  expect_reject(ga, &a, PTO_EINVAL, "never transposed", NULL);
  pto_tile *f14 = dst_new(PTO_F32, 16, 4, 14, 1);
  a.src[2] = f14;
  a.flags = PTO_TF_ROWSCALE;
  expect_reject(ga, &a, PTO_EINVAL, "PTO_TF_ROWSCALE", NULL);
  a.flags = PTO_TF_ACC | PTO_TF_ROWSCALE;
  expect_reject(ga, &a, PTO_EINVAL, "PTO_TF_ROWSCALE", "TMATMUL_GB");
  a.flags = 0;
  a.src[2] = NULL;
  pto_tile in_b = *C; /* dst inside B's buffer */
  in_b.data = B->data;
  a.dst[0] = &in_b;
  expect_reject(ga, &a, PTO_EINVAL, "overlaps", NULL);

  /* GB: A (13 x 20) times the 20 rows (4 x 5 indices) of V, N = 37 */
  pto_tile *A = dst_new(PTO_F32, 16, 32, 13, 20),
           *jx = dst_new(PTO_I32, 4, 8, 4, 5),
           *D = dst_new(PTO_F32, 16, 48, 13, 37),
           *f = dst_new(PTO_F32, 16, 4, 13, 3);
  pto_targs b = {0};
  b.dst[0] = D;
  b.src[0] = A;
  b.src[1] = jx;
  b.g = (pto_gview){table, PTO_F32, 40, 37, 48, 1};
  expect_accept(gb, &b);
  b.flags = PTO_TF_ACC;
  expect_accept(gb, &b);
  pto_tile *jxf = dst_new(PTO_F32, 4, 8, 4, 5);
  b.src[1] = jxf;
  expect_reject(gb, &b, PTO_EDTYPE, "src1", "expected i32");
  b.src[1] = jx;
  jx->valid_cols = 4; /* 16 indices for A's K of 20 */
  expect_reject(gb, &b, PTO_ESHAPE, "16 indices", "K = 20");
  jx->valid_cols = 6;
  expect_reject(gb, &b, PTO_ESHAPE, "24 indices", "K = 20");
  jx->valid_cols = 5;
  b.g.cols = 36; /* narrower than dst */
  expect_reject(gb, &b, PTO_ESHAPE, "40x36", "(37)");
  b.g.cols = 37;
  b.g.dtype = PTO_F16;
  expect_accept(gb, &b);
  b.g.dtype = PTO_F32;
  D->valid_rows = 12; /* M = A's rows */
  expect_reject(gb, &b, PTO_ESHAPE, "12x37", "13x37");
  D->valid_rows = 13;
  /* the row scale: with PTO_TF_ACC only, an f32 scale per row */
  b.src[2] = f;
  b.flags = PTO_TF_ACC | PTO_TF_ROWSCALE;
  expect_accept(gb, &b);
  b.flags = PTO_TF_ROWSCALE;
  expect_reject(gb, &b, PTO_EINVAL, "PTO_TF_ROWSCALE", "PTO_TF_ACC");
  b.flags = PTO_TF_ACC | PTO_TF_ROWSCALE;
  f->valid_rows = 12;
  expect_reject(gb, &b, PTO_ESHAPE, "src2", "12x3");
  f->valid_rows = 13;
  pto_tile *fi = dst_new(PTO_I32, 16, 4, 13, 3);
  b.src[2] = fi;
  expect_reject(gb, &b, PTO_EDTYPE, "src2", "i32");
  b.src[2] = NULL;
  expect_reject(gb, &b, PTO_EINVAL, "src2", NULL);
  b.src[2] = f;
  /* A packed (PTO_TF_PACK_A, panel imm[0]); PTO_TF_PACK_B is not GB's */
  b.flags = PTO_TF_PACK_A | PTO_TF_ACC;
  b.imm[0] = 8; /* 13 rows pad to 16 = A's rows */
  expect_accept(gb, &b);
  b.imm[0] = 6; /* 18 > 16 */
  expect_reject(gb, &b, PTO_ESHAPE, "src0", "18 rows");
  b.imm[0] = 0;
  expect_reject(gb, &b, PTO_EINVAL, "PTO_TF_PACK_A", "imm[0]");
  b.imm[0] = 8;
  b.flags = PTO_TF_PACK_B;
  b.imm[1] = 16;
  expect_reject(gb, &b, PTO_EINVAL, "PTO_TF_PACK_A only", NULL);
  b.flags = PTO_TF_TRANS_A;
  expect_reject(gb, &b, PTO_EINVAL, "never transposed", NULL);
  b.flags = 0;
  pto_tile *Ai = dst_new(PTO_I32, 16, 32, 13, 20);
  b.src[0] = Ai;
  expect_reject(gb, &b, PTO_EDTYPE, "src0", "i32");
  b.src[0] = A;
  pto_tile *Db = dst_new(PTO_F16, 16, 48, 13, 37);
  b.dst[0] = Db;
  expect_reject(gb, &b, PTO_EDTYPE, "dst", "f16");
  b.dst[0] = D;
  expect_accept(gb, &b);

  /* TSOFTMAXONLINE with PTO_TF_TRANS_A: 20 slots x 12 score rows */
  pto_tile *S = dst_new(PTO_F32, 24, 16, 20, 12),
           *ox = dst_new(PTO_I32, 1, 32, 1, 20),
           *P = dst_new(PTO_F32, 24, 32, 12, 20),
           *st = dst_new(PTO_F32, 24, 4, 12, 3),
           *st0 = dst_new(PTO_F32, 12, 4, 12, 3);
  pto_targs o = {0};
  o.src[0] = S;
  o.src[1] = ox;
  o.dst[0] = P;
  o.dst[1] = st;
  o.imm[0] = 6;
  o.imm[1] = 100;
  o.flags = PTO_TF_TRANS_A;
  expect_accept(PTO_OP_TSOFTMAXONLINE, &o);
  o.flags = 0; /* the same tiles read untransposed: 12 scores per row */
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "20 indices", NULL);
  o.flags = PTO_TF_TRANS_A;
  ox->valid_cols = 12; /* one per score row, not per slot */
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "12 indices",
                "(transposed)");
  ox->valid_cols = 21;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "21 indices", "20");
  ox->valid_cols = 20;
  P->valid_rows = 20; /* P is M x N: the scores' shape, untransposed */
  P->valid_cols = 12;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "dst0", "12x20");
  P->valid_rows = 12;
  P->valid_cols = 20;
  st->valid_rows = 20;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "dst1", "12x3");
  st->valid_rows = 12;
  o.imm[0] = 25; /* P's 12 rows in panels of 25 need 25 > 24 */
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "25 rows", "24");
  o.imm[0] = 6;
  o.flags = PTO_TF_TRANS_A | PTO_TF_ACC;
  o.src[2] = st0;
  expect_accept(PTO_OP_TSOFTMAXONLINE, &o);
  st0->valid_rows = 11;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "src2", "11x3");
}

Test(tileops, check_matmul_relu_wsum_operands, .fini = free_all) {
  const int op = PTO_OP_TMATMUL_RELU_WSUM;
  pto_tile *A = dst_new(PTO_F32, 12, 32, 12, 29),
           *B = dst_new(PTO_BF16, 32, 48, 29, 37),
           *W = dst_new(PTO_F32, 12, 1, 12, 1),
           *C = dst_new(PTO_F32, 8, 48, 3, 37);
  pto_targs a = binop_args(C, A, B);
  a.src[2] = W;
  expect_accept(op, &a); /* 3 groups of 4 rows */
  C->valid_rows = 5;
  expect_reject(op, &a, PTO_ESHAPE, "5x37", "M = 12");
  C->valid_rows = 3;
  C->valid_cols = 36;
  expect_reject(op, &a, PTO_ESHAPE, "3x36", NULL);
  C->valid_cols = 37;
  W->valid_rows = 11;
  expect_reject(op, &a, PTO_ESHAPE, "src2", "11x1");
  W->valid_rows = 12;
  pto_tile *Wi = dst_new(PTO_I32, 12, 1, 12, 1);
  a.src[2] = Wi;
  expect_reject(op, &a, PTO_EDTYPE, "src2", "i32");
  a.src[2] = W;
  B->valid_rows = 28;
  expect_reject(op, &a, PTO_ESHAPE, "28", "29");
  B->valid_rows = 29;
  a.flags = PTO_TF_CAUSAL;
  a.s = 2.5;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_CAUSAL", "2.5");
  a.s = -7;
  expect_accept(op, &a);
  pto_tile in_a = *C; /* dst inside A's buffer */
  in_a.data = A->data;
  a.dst[0] = &in_a;
  expect_reject(op, &a, PTO_EINVAL, "overlaps", NULL);
}

/* TMATMUL_RELU_WSUM_G (pto__check_tmatmul_relu_wsum_g): Q^T (K x M),
 * the weights (a rowvec of M), the window of the N keys (N x K exactly),
 * dst R x N with R dividing M. */
Test(tileops, check_matmul_relu_wsum_g_operands, .fini = free_all) {
  static float table[40 * 48];
  const int op = PTO_OP_TMATMUL_RELU_WSUM_G;
  /* 3 queries of 4 heads (M = 12), K = 29, 37 keys */
  pto_tile *Qt = dst_new(PTO_F32, 32, 16, 29, 12),
           *W = dst_new(PTO_F32, 16, 1, 12, 1),
           *C = dst_new(PTO_F32, 8, 48, 3, 37);
  pto_targs a = {0};
  a.dst[0] = C;
  a.src[0] = Qt;
  a.src[1] = W;
  a.g = (pto_gview){table, PTO_F32, 37, 29, 48, 1};
  expect_accept(op, &a);
  /* dtypes: dst f32; Q^T f32, bf16 or f16; weights f32; keys f32, bf16
   * or f16 */
  pto_tile *Cb = dst_new(PTO_BF16, 8, 48, 3, 37);
  a.dst[0] = Cb;
  expect_reject(op, &a, PTO_EDTYPE, "dst", "bf16");
  a.dst[0] = C;
  pto_tile *Qi = dst_new(PTO_I32, 32, 16, 29, 12),
           *Qb = dst_new(PTO_BF16, 32, 16, 29, 12),
           *Qh = dst_new(PTO_F16, 32, 16, 29, 12);
  a.src[0] = Qi;
  expect_reject(op, &a, PTO_EDTYPE, "src0", "i32");
  a.src[0] = Qb;
  expect_accept(op, &a);
  a.src[0] = Qh;
  expect_accept(op, &a);
  a.src[0] = Qt;
  pto_tile *Wi = dst_new(PTO_I32, 16, 1, 12, 1),
           *Wb = dst_new(PTO_BF16, 16, 1, 12, 1);
  a.src[1] = Wi;
  expect_reject(op, &a, PTO_EDTYPE, "src1", "i32");
  a.src[1] = Wb;
  expect_reject(op, &a, PTO_EDTYPE, "src1", "bf16");
  a.src[1] = W;
  a.g.dtype = PTO_I32;
  expect_reject(op, &a, PTO_EDTYPE, "global view", "i32");
  a.g.dtype = PTO_DTYPE_COUNT; /* an f64, say: no PTO dtype */
  expect_reject(op, &a, PTO_EDTYPE, "global view", "not a PTO dtype");
  a.g.dtype = (pto_dtype)-1;
  expect_reject(op, &a, PTO_EDTYPE, "global view", "-1");
  a.g.dtype = PTO_BF16;
  expect_accept(op, &a);
  a.g.dtype = PTO_F16;
  expect_accept(op, &a);
  a.g.dtype = PTO_F32;
  a.g.base = NULL;
  expect_reject(op, &a, PTO_EINVAL, "global view", "no base");
  a.g.base = table;
  /* the weights: a rowvec of Q^T's M cols */
  W->valid_rows = 11;
  expect_reject(op, &a, PTO_ESHAPE, "src1 valid 11x1", "12x1");
  W->valid_rows = 13;
  expect_reject(op, &a, PTO_ESHAPE, "src1 valid 13x1", "12x1");
  W->valid_rows = 12;
  pto_tile *W2 = dst_new(PTO_F32, 16, 4, 12, 2);
  a.src[1] = W2;
  expect_reject(op, &a, PTO_ESHAPE, "src1 valid 12x2", "12x1");
  a.src[1] = W;
  /* the window: exactly the N keys of dst's cols, K of Q^T's rows */
  a.g.rows = 36;
  expect_reject(op, &a, PTO_ESHAPE, "global view 36x29", "37 keys");
  a.g.rows = 38;
  expect_reject(op, &a, PTO_ESHAPE, "global view 38x29", "37 keys");
  a.g.rows = 37;
  a.g.cols = 28;
  expect_reject(op, &a, PTO_ESHAPE, "global view 37x28", "K = 29");
  a.g.cols = 30; /* wider than K: the keys' rows are K long */
  expect_reject(op, &a, PTO_ESHAPE, "global view 37x30", "K = 29");
  a.g.cols = 29;
  a.g.rows = -1;
  expect_reject(op, &a, PTO_EINVAL, "global view", "negative");
  a.g.rows = 37;
  C->valid_cols = 36; /* dst's cols are the keys */
  expect_reject(op, &a, PTO_ESHAPE, "global view 37x29", "36 keys");
  C->valid_cols = 37;
  Qt->valid_rows = 28; /* K is Q^T's rows */
  expect_reject(op, &a, PTO_ESHAPE, "K = 28", "28x12");
  Qt->valid_rows = 29;
  /* R divides M into whole groups */
  C->valid_rows = 5;
  expect_reject(op, &a, PTO_ESHAPE, "dst valid 5x37", "M = 12");
  C->valid_rows = 8;
  expect_reject(op, &a, PTO_ESHAPE, "dst valid 8x37", "M = 12");
  C->valid_rows = 1; /* one query of 12 heads */
  expect_accept(op, &a);
  pto_tile *C12 = dst_new(PTO_F32, 16, 48, 12, 37); /* 12 of one head */
  a.dst[0] = C12;
  expect_accept(op, &a);
  a.dst[0] = C;
  C->valid_rows = 3;
  /* flags: PTO_TF_PACK_B (Q^T packed, panel imm[1]) and PTO_TF_CAUSAL */
  static const struct {
    uint32_t flag;
    const char *name;
  } bad[] = {{PTO_TF_TRANS_A, "TRANS_A"},
             {PTO_TF_TRANS_B, "TRANS_B"},
             {PTO_TF_PACK_A, "PACK_A"},
             {PTO_TF_ACC, "ACC"},
             {PTO_TF_ROWSCALE, "ROWSCALE"},
             {PTO_TF_ACC | PTO_TF_ROWSCALE, "ACC | ROWSCALE"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_log_info("TMATMUL_RELU_WSUM_G with PTO_TF_%s", bad[i].name);
    a.flags = bad[i].flag;
    a.imm[0] = 4;
    expect_reject(op, &a, PTO_EINVAL, "PTO_TF_PACK_B and PTO_TF_CAUSAL only",
                  NULL);
    a.flags = bad[i].flag | PTO_TF_PACK_B | PTO_TF_CAUSAL;
    a.imm[1] = 16;
    expect_reject(op, &a, PTO_EINVAL, "PTO_TF_PACK_B and PTO_TF_CAUSAL only",
                  NULL);
  }
  a.imm[0] = 0;
  a.flags = PTO_TF_PACK_B;
  a.imm[1] = 16; /* 12 cols in a panel of 16 = Q^T's stride */
  expect_accept(op, &a);
  a.imm[1] = 5; /* 15 cols */
  expect_accept(op, &a);
  a.imm[1] = 0;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_PACK_B", "imm[1] = 0");
  a.imm[1] = -16;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_PACK_B", "imm[1] = -16");
  a.imm[1] = PTO_MM_PANEL_MAX + 1;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_PACK_B", "65");
  a.imm[1] = 32; /* 12 cols pad to 32 > 16 */
  expect_reject(op, &a, PTO_ESHAPE, "src0 valid 29x12", "32 cols");
  a.imm[1] = 16;
  /* the causal diagonal: an integer */
  a.flags = PTO_TF_PACK_B | PTO_TF_CAUSAL;
  a.s = -7;
  expect_accept(op, &a);
  a.s = 2.5;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_CAUSAL", "2.5");
  a.s = -0.25;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_CAUSAL", "-0.25");
  a.s = NAN;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_CAUSAL", "nan");
  a.s = INFINITY;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_CAUSAL", "inf");
  a.s = 0x1p60;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_CAUSAL", "not an integer");
  a.flags = PTO_TF_PACK_B; /* s is no diagonal without PTO_TF_CAUSAL */
  expect_accept(op, &a);
  a.s = 0;
  /* dst inside Q^T's or the weights' buffer */
  pto_tile in_q = *C;
  in_q.data = Qt->data;
  a.dst[0] = &in_q;
  expect_reject(op, &a, PTO_EINVAL, "dst overlaps src0", NULL);
  pto_tile in_w = *C;
  in_w.data = W->data;
  a.dst[0] = &in_w;
  expect_reject(op, &a, PTO_EINVAL, "dst overlaps src1", NULL);
  a.dst[0] = C;
  expect_accept(op, &a);
}

Test(tileops, check_packed_operands, .fini = free_all) {
  float g[64 * 64] = {0};
  pto_targs a = {0};
  a.g = (pto_gview){g, PTO_F32, 64, 64, 64, 1};
  a.dst[0] = dst_new(PTO_F32, 24, 32, 13, 29);
  a.flags = PTO_TF_PACK_A;
  a.imm[0] = 12;
  expect_accept(PTO_OP_TLOAD, &a);
  a.imm[0] = 0;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EINVAL, "PTO_TF_PACK_A", "imm[0] = 0");
  a.imm[0] = PTO_MM_PANEL_MAX + 1;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EINVAL, "PTO_TF_PACK_A", "65");
  a.imm[0] = 25; /* 13 rows pad to 25 > 24 */
  expect_reject(PTO_OP_TLOAD, &a, PTO_ESHAPE, "25 rows", "24");
  a.flags = PTO_TF_PACK_A | PTO_TF_PACK_B;
  a.imm[0] = 4;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EINVAL, "together", NULL);
  a.flags = PTO_TF_PACK_B;
  a.imm[0] = 32; /* 29 cols pad to 32 = stride */
  expect_accept(PTO_OP_TLOAD, &a);
  a.imm[0] = 48;
  expect_reject(PTO_OP_TLOAD, &a, PTO_ESHAPE, "48 cols", "32");

  /* a bf16 tile packs k in pairs: an odd K needs room for its last pair,
   * for B a row more (A's k runs along a row, whose 64-byte stride always
   * holds an even number of bf16) */
  uint16_t gh[64 * 64] = {0};
  a.g = (pto_gview){gh, PTO_BF16, 64, 64, 64, 1};
  a.flags = PTO_TF_PACK_B;
  a.imm[0] = 32;
  a.dst[0] = dst_new(PTO_BF16, 29, 32, 29, 30);
  expect_reject(PTO_OP_TLOAD, &a, PTO_ESHAPE, "bf16 valid 29x30",
                "29 k need 30 rows, it has 29");
  a.dst[0] = dst_new(PTO_BF16, 30, 32, 29, 30);
  expect_accept(PTO_OP_TLOAD, &a);

  pto_tile *A = dst_new(PTO_F32, 24, 32, 13, 29),
           *B = dst_new(PTO_F32, 32, 32, 29, 30),
           *C = dst_new(PTO_F32, 16, 32, 13, 30);
  pto_targs m = binop_args(C, A, B);
  m.flags = PTO_TF_PACK_A | PTO_TF_PACK_B;
  m.imm[0] = 12;
  m.imm[1] = 16;
  expect_accept(PTO_OP_TMATMUL, &m);
  m.imm[1] = 0;
  expect_reject(PTO_OP_TMATMUL_ACC, &m, PTO_EINVAL, "PTO_TF_PACK_B", "imm[1]");
  m.imm[1] = 16;
  m.imm[0] = 25;
  expect_reject(PTO_OP_TMATMUL, &m, PTO_ESHAPE, "src0", "25 rows");
  m.imm[0] = 12;
  m.flags |= PTO_TF_TRANS_A;
  expect_reject(PTO_OP_TMATMUL, &m, PTO_EINVAL, "never transposed", NULL);
  m.flags = PTO_TF_PACK_B | PTO_TF_TRANS_B;
  expect_reject(PTO_OP_TMATMUL, &m, PTO_EINVAL, "PTO_TF_TRANS_B", NULL);
  m.flags = PTO_TF_PACK_B | PTO_TF_TRANS_A; /* A unpacked, transposed */
  m.src[0] = dst_new(PTO_F32, 32, 16, 29, 13);
  expect_accept(PTO_OP_TMATMUL, &m);
}
