/* tileops/softmax_kernels.h (internal): the fused softmax row
 * instructions (TROWEXPANDMULSTORE, TLOADROWMAX, TROWEXPANDEXPDIFSUM,
 * TLOADEXPDIFSUM, TLOADSOFTMAXSTORE; core/isa.def) over the vector
 * primitives of tileops/vec_kernels.h and its vf_exp, row_maxmin and
 * fold_sum. Included by tileops/vec_avx2.c and tileops/vec_avx512.c right
 * after vec_kernels.h, so it is compiled only with that file's ISA flags;
 * nothing here names an intrinsic. Defines softmax_install(), which
 * overrides the five entries. Each gives what the instructions it fuses
 * give in this table, bit for bit, in fewer passes over the rows. */
#ifndef PTO_TILEOPS_SOFTMAX_KERNELS_H
#define PTO_TILEOPS_SOFTMAX_KERNELS_H

/* One row of TROWEXPANDMULSTORE: dp[c] = xp[c] * m, TROWEXPANDMUL's
 * products bit for bit. With stream, vector-aligned destination vectors go
 * around the caches as stream_row's do; the head up to the first aligned
 * element and the tail are plain (masked) stores. */
ALWAYS_INLINE void mulstore_row(float *restrict dp, const float *restrict xp,
                                uint32_t vc, vf m, int stream, pto_pf *pf) {
  uint32_t c = 0;
  if (stream) {
    uint32_t head = (uint32_t)(((0u - (uintptr_t)dp) % (VL * 4)) / 4);
    if (head > vc || ((uintptr_t)dp & 3))
      head = vc;
    for (; c < head; c += VL) { /* up to the first aligned vector */
      const uint32_t n = head - c >= VL ? VL : head - c;
      stf(dp + c, vf_mul(ldf(xp + c, n), m), n);
    }
    c = head;
    for (; c + VL <= vc; c += VL) { /* one vector per step, aligned stores */
      vi_stream((int32_t *)(dp + c), vf_bits(vf_mul(vf_ld(xp + c), m)));
      pto__pf_tick(pf);
    }
  }
  for (; c < vc; c += VL) {
    const uint32_t n = vc - c >= VL ? VL : vc - c;
    stf(dp + c, vf_mul(ldf(xp + c, n), m), n);
  }
}

/* g = src0 * src1[r] (TROWEXPANDMUL's products, bit for bit) straight to
 * global: one pass instead of a multiply into a tile and a copy of it
 * (mulstore_row, streamed with PTO_TF_STREAM). */
static int vec_TROWEXPANDMULSTORE(int op, const pto_targs *a) {
  const pto_gview *g = &a->g;
  if (g->col_stride != 1)
    return pto__isa_ref(op, a);
  const pto_tile *x = a->src[0], *v = a->src[1];
  const int stream = (a->flags & PTO_TF_STREAM) != 0;
  for (uint32_t r = 0; r < x->valid_rows; r++)
    mulstore_row(grow(g, r), row_of(x, r), x->valid_cols,
                 vf_set(((const float *)row_of(v, r))[0]), stream, a->pf);
  if (stream) /* order the streaming stores before the task ends */
    store_fence();
  return PTO_OK;
}

/* TLOAD of an f32 window with TROWMAX taken on the way: each row is read
 * once, stored to dst0 and folded by row_maxmin (the same max as TROWMAX
 * of dst0, bit for bit). */
static int vec_TLOADROWMAX(int op, const pto_targs *a) {
  const pto_gview *g = &a->g;
  if (g->col_stride != 1)
    return pto__isa_ref(op, a);
  pto_tile *d = a->dst[0], *m = a->dst[1];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    ((float *)row_of(m, r))[0] =
        row_maxmin(grow(g, r), d->valid_cols, B_MAX, a->pf, row_of(d, r));
  return PTO_OK;
}

/* One row of TROWEXPANDEXPDIFSUM: dp[c] = exp(xp[c] - mv), returning the
 * row sum of dp accumulated exactly as row_reduce's TROWSUM accumulates it
 * (same accumulators, same order), so it equals TROWSUM of the row bit for
 * bit. Each step of two vectors prefetches the matching lines of `next`
 * (the row to come), or, without one, takes a line of the plan pf. With
 * yp, each step also stores the row before's products yp[c] = bp[c] * iv
 * (mulstore_row's values; streamed when `stream` and yp is vector-aligned),
 * so those stores drain while the exps compute (TLOADSOFTMAXSTORE). */
ALWAYS_INLINE float expdif_sum_row(float *restrict dp, const float *restrict xp,
                                   uint32_t vc, float mv, const char *next,
                                   pto_pf *pf, float *restrict yp,
                                   const float *restrict bp, vf iv,
                                   int stream) {
  const vf m = vf_set(mv);
  vf acc0 = vf_set(-0.0f), acc1 = acc0;
  const int ys = yp && stream && (uintptr_t)yp % (VL * 4) == 0;
  uint32_t c = 0;
  for (; c + 2 * VL <= vc; c += 2 * VL) { /* 2 accumulators, as TROWSUM */
    const vf e0 = vf_exp(vf_sub(vf_ld(xp + c), m));
    const vf e1 = vf_exp(vf_sub(vf_ld(xp + c + VL), m));
    vf_st(dp + c, e0);
    vf_st(dp + c + VL, e1);
    acc0 = vf_add(acc0, e0);
    acc1 = vf_add(acc1, e1);
    if (ys) {
      vi_stream((int32_t *)(yp + c), vf_bits(vf_mul(vf_ld(bp + c), iv)));
      vi_stream((int32_t *)(yp + c + VL),
                vf_bits(vf_mul(vf_ld(bp + c + VL), iv)));
    } else if (yp) {
      stf(yp + c, vf_mul(vf_ld(bp + c), iv), VL);
      stf(yp + c + VL, vf_mul(vf_ld(bp + c + VL), iv), VL);
    }
    if (next)
      for (uint32_t b = 0; b < 2 * VL * 4; b += 64)
        __builtin_prefetch(next + (size_t)c * 4 + b, 0, 2);
    else
      pto__pf_tick(pf);
  }
  if (yp) /* the row before's tail */
    for (uint32_t t = c; t < vc; t += VL) {
      const uint32_t n = vc - t >= VL ? VL : vc - t;
      stf(yp + t, vf_mul(ldf(bp + t, n), iv), n);
    }
  for (; c < vc; c += VL) {
    const uint32_t n = vc - c >= VL ? VL : vc - c;
    const vf e = vf_exp(vf_sub(ldf(xp + c, n), m));
    stf(dp + c, e, n);
    /* a short tail as TROWSUM reads it: -0 beyond the valid columns */
    acc0 = vf_add(acc0, n == VL ? e : vf_ldn(dp + c, n, vf_set(-0.0f)));
  }
  return fold_sum(acc0, acc1);
}

/* dst0 = exp(src0 - src1[r]) and dst1[r] = the row sum of dst0, in one
 * pass (expdif_sum_row), so the fusion changes no value. src1[r] is read
 * before row r is written (dst1 may be src1's buffer). */
static int vec_TROWEXPANDEXPDIFSUM(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0], *s = a->dst[1];
  const pto_tile *x = a->src[0], *v = a->src[1];
  for (uint32_t r = 0; r < d->valid_rows; r++)
    ((float *)row_of(s, r))[0] =
        expdif_sum_row(row_of(d, r), row_of(x, r), d->valid_cols,
                       ((const float *)row_of(v, r))[0], NULL, a->pf, NULL,
                       NULL, vf_set(0.0f), 0);
  return PTO_OK;
}

/* The rows of TLOADEXPDIFSUM from a row-contiguous g: row by row, the max
 * straight from global (row_maxmin, as TLOADROWMAX takes it), then the
 * exps and their sum from the same row while it is still in cache
 * (expdif_sum_row), the next row's lines fetched meanwhile, so DRAM
 * streams while the exps run (the executor's plan brings only the first
 * row: scheduler/exec.c). With y (TLOADSOFTMAXSTORE's g2, row-contiguous),
 * also TRECIP of each sum and TROWEXPANDMULSTORE of the row by it into y,
 * software-pipelined a row apart: row r - 1's products are stored in the
 * loop that takes row r's exps, so those stores drain while the exps
 * compute; the last row's after the loop (mulstore_row). */
ALWAYS_INLINE void load_expdif_sum_rows(const pto_targs *a,
                                        const pto_gview *y) {
  const pto_gview *g = &a->g;
  pto_tile *d = a->dst[0], *s = a->dst[1];
  const uint32_t vr = d->valid_rows, vc = d->valid_cols;
  const int stream = y && (a->flags & PTO_TF_STREAM) != 0;
  float inv = 0.0f;
  for (uint32_t r = 0; r < vr; r++) {
    const float *xp = grow(g, r);
    const float m = row_maxmin(xp, vc, B_MAX, NULL, NULL);
    const char *next = r + 1 < vr ? (const char *)grow(g, r + 1) : NULL;
    const int behind = y && r;
    const float sum = expdif_sum_row(
        row_of(d, r), xp, vc, m, next, a->pf, behind ? grow(y, r - 1) : NULL,
        behind ? row_of(d, r - 1) : NULL, vf_set(inv), stream);
    ((float *)row_of(s, r))[0] = sum;
    inv = 1.0f / sum;
  }
  if (y && vr)
    mulstore_row(grow(y, vr - 1), row_of(d, vr - 1), vc, vf_set(inv), stream,
                 a->pf);
  if (stream) /* order the streaming stores before the task ends */
    store_fence();
}

/* TLOADROWMAX then TROWEXPANDEXPDIFSUM of its results, without the loaded
 * tile (load_expdif_sum_rows); the same values as the two instructions. */
static int vec_TLOADEXPDIFSUM(int op, const pto_targs *a) {
  if (a->g.col_stride != 1) { /* the two instructions, in place */
    int st = vec_TLOADROWMAX(PTO_OP_TLOADROWMAX, a);
    if (st)
      return st;
    pto_targs e = *a;
    e.src[0] = a->dst[0];
    e.src[1] = a->dst[1];
    return vec_TROWEXPANDEXPDIFSUM(op, &e);
  }
  load_expdif_sum_rows(a, NULL);
  return PTO_OK;
}

/* TLOADEXPDIFSUM, TRECIP of the sums and TROWEXPANDMULSTORE of the exps by
 * the quotients into g2, pipelined (load_expdif_sum_rows). The same values
 * as the three instructions: vf_exp's exps, TROWSUM's sums, IEEE 1 / sum
 * (TRECIP) and f32 products. Views read along columns take the
 * instructions one by one. */
static int vec_TLOADSOFTMAXSTORE(int op, const pto_targs *a) {
  (void)op;
  const pto_gview *g2 = &a->g2;
  if (a->g.col_stride != 1 || g2->col_stride != 1) {
    const pto_tile *d = a->dst[0], *s = a->dst[1];
    int st = vec_TLOADEXPDIFSUM(PTO_OP_TLOADEXPDIFSUM, a);
    for (uint32_t r = 0; !st && r < d->valid_rows; r++) {
      const float inv = 1.0f / ((const float *)row_of(s, r))[0];
      const float *up = row_of(d, r);
      float *yp = grow(g2, r);
      for (uint32_t c = 0; c < d->valid_cols; c++)
        yp[c * g2->col_stride] = up[c] * inv;
    }
    return st;
  }
  load_expdif_sum_rows(a, g2);
  return PTO_OK;
}

static void softmax_install(pto_isa_table *t) {
  t->fn[PTO_OP_TROWEXPANDMULSTORE] = vec_TROWEXPANDMULSTORE;
  t->fn[PTO_OP_TLOADROWMAX] = vec_TLOADROWMAX;
  t->fn[PTO_OP_TROWEXPANDEXPDIFSUM] = vec_TROWEXPANDEXPDIFSUM;
  t->fn[PTO_OP_TLOADEXPDIFSUM] = vec_TLOADEXPDIFSUM;
  t->fn[PTO_OP_TLOADSOFTMAXSTORE] = vec_TLOADSOFTMAXSTORE;
}

#endif /* PTO_TILEOPS_SOFTMAX_KERNELS_H */
