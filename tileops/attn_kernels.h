/* tileops/attn_kernels.h (internal): the SIMD versions of the online
 * softmax's instructions (TSOFTMAXONLINE, TSOFTMAXFINAL; core/isa.def) and
 * of the causal mask before them (TTRIFILL),
 * over tileops/vec_kernels.h's primitives and its vf_exp. Included by
 * tileops/vec_avx2.c and tileops/vec_avx512.c right after vec_kernels.h;
 * attn_install() overrides their entries. Same values as the reference but
 * for the exps (vf_exp, within 1 ulp of expf) and the order of the row
 * sums. */
#ifndef PTO_TILEOPS_ATTN_KERNELS_H
#define PTO_TILEOPS_ATTN_KERNELS_H

#define ATTN_BLOCK_MAX 2048 /* scores per row a block may hold here */

/* ok[c] = all ones where slot c's index (of the n in idx) lies in [0, rows),
 * else 0: the block's mask, once per call. */
static void slot_mask(const pto_tile *idx, uint32_t n, int32_t rows,
                      int32_t *ok) {
  for (uint32_t c = 0; c < n; c++) {
    const int32_t i = pto__index_at(idx, c);
    ok[c] = i >= 0 && i < rows ? -1 : 0;
  }
}

/* TSOFTMAXONLINE on scores stored transposed (PTO_TF_TRANS_A: a slot per
 * row, a score row per column, as TMATMUL_GA leaves them): the score rows
 * are the vector lanes, so the maxima, exps and sums run down the slots
 * with no horizontal step, each row's sum in slot order as the
 * reference's; each slot's P values go to the A panels w at a time. */
static int smonline_trans(int op, const pto_targs *a) {
  pto_tile *p = a->dst[0], *st = a->dst[1];
  const pto_tile *s = a->src[0], *idx = a->src[1], *prev = a->src[2];
  const uint32_t w = (uint32_t)a->imm[0], M = s->valid_cols, N = s->valid_rows;
  if (M > ATTN_BLOCK_MAX || N > ATTN_BLOCK_MAX)
    return pto__isa_ref(op, a);
  const int cont = (a->flags & PTO_TF_ACC) != 0;
  _Alignas(64) float m0[ATTN_BLOCK_MAX], mx[ATTN_BLOCK_MAX],
      sum[ATTN_BLOCK_MAX], e[ATTN_BLOCK_MAX + PTO_MM_PANEL_MAX + VL];
  _Alignas(64) int32_t live[ATTN_BLOCK_MAX]; /* all ones where mx > -inf */
  _Alignas(64) int32_t ok[ATTN_BLOCK_MAX];   /* all ones where slot valid */
  slot_mask(idx, N, a->imm[1], ok);
  for (uint32_t r = 0; r < M; r++) {
    m0[r] = cont ? ((const float *)row_of(prev, r))[1] : -INFINITY;
    mx[r] = m0[r];
    sum[r] = 0.0f;
  }
  const vf scale = vf_set((float)a->s), zero = vf_set(0.0f);
  for (uint32_t c = 0; c < N; c++) { /* the maxima over valid slots */
    if (!ok[c])
      continue;
    const float *sr = row_of(s, c);
    /* maxr(x, m): m where x is NaN, as the reference's x > m ? x : m */
#define MAX_STEP(r, n)                                                         \
  stf(mx + (r), vf_maxr(vf_mul(ldf(sr + (r), n), scale), ldf(mx + (r), n)), n)
    FOR_COLS(M, MAX_STEP);
#undef MAX_STEP
  }
  for (uint32_t r = 0; r < M; r++)
    live[r] = mx[r] != -INFINITY ? -1 : 0;
  for (uint32_t r = M; r < (M + w - 1) / w * w; r++)
    e[r] = 0.0f; /* the padding rows of the last panel */
  float *pd = p->data;
  const size_t panel = (size_t)w * p->stride;
  for (uint32_t c = 0; c < N; c++) {
    if (ok[c]) {
      const float *sr = row_of(s, c);
#define EXP_STEP(r, n)                                                         \
  {                                                                            \
    const vf x =                                                               \
        vf_exp(vf_sub(vf_mul(ldf(sr + (r), n), scale), ldf(mx + (r), n)));     \
    const vf y = vf_blend(vi_eq(ldi(live + (r), n), vi_set(0)), x, zero);      \
    stf(e + (r), y, n);                                                        \
    stf(sum + (r), vf_add(ldf(sum + (r), n), y), n);                           \
  }
      FOR_COLS(M, EXP_STEP);
#undef EXP_STEP
    } else {
      for (uint32_t r = 0; r < M; r++)
        e[r] = 0.0f;
    }
    /* (r, c) at panel r / w, c * w: a vector store spills VL - w values
     * into slot c + 1's place, written after, except past the last slot */
    const int spill = w <= VL && 2 * w >= VL && c + 1 < N;
    float *dst = pd + (size_t)c * w; /* no division by w per panel */
    for (uint32_t r0 = 0; r0 < M; r0 += w, dst += panel) {
      if (spill)
        vf_st(dst, vf_ld(e + r0));
      else
        for (uint32_t j = 0; j < w; j++)
          dst[j] = e[r0 + j];
    }
  }
  for (uint32_t r = 0; r < M; r++) {
    float *o = row_of(st, r);
    const float l = cont ? ((const float *)row_of(prev, r))[2] : 0.0f;
    if (!live[r]) { /* nothing valid yet: P = 0 */
      o[0] = 1.0f;
      o[1] = mx[r];
      o[2] = l;
      continue;
    }
    const float alpha = expf(m0[r] - mx[r]);
    o[0] = alpha;
    o[1] = mx[r];
    o[2] = l * alpha + sum[r];
  }
  return PTO_OK;
}

/* TSOFTMAXONLINE: per row, the masked, scaled scores' max in one pass,
 * their exps and sum in a second, each row's P scattered into its A panel
 * (w floats apart: a panel is k-major). The mask per column is computed
 * once per call. */
static int vec_TSOFTMAXONLINE(int op, const pto_targs *a) {
  pto_tile *p = a->dst[0], *st = a->dst[1];
  const pto_tile *s = a->src[0], *idx = a->src[1], *prev = a->src[2];
  if (a->flags & PTO_TF_TRANS_A)
    return smonline_trans(op, a);
  const uint32_t w = (uint32_t)a->imm[0], M = s->valid_rows, N = s->valid_cols;
  if (N > ATTN_BLOCK_MAX)
    return pto__isa_ref(op, a);
  const int cont = (a->flags & PTO_TF_ACC) != 0;
  _Alignas(64) int32_t ok[ATTN_BLOCK_MAX]; /* all ones where valid */
  _Alignas(64) float e[ATTN_BLOCK_MAX];
  slot_mask(idx, N, a->imm[1], ok);
  const vf scale = vf_set((float)a->s), ninf = vf_set(-INFINITY);
  float *pd = p->data;
  for (uint32_t r = M; r < (M + w - 1) / w * w; r++) { /* padding rows */
    float *pr = pd + pto__pack_a_index(p, w, r, 0);
    for (uint32_t c = 0; c < N; c++)
      pr[(size_t)c * w] = 0.0f;
  }
  for (uint32_t r = 0; r < M; r++) {
    const float *sr = row_of(s, r);
    const float m = cont ? ((const float *)row_of(prev, r))[1] : -INFINITY;
    const float l = cont ? ((const float *)row_of(prev, r))[2] : 0.0f;
    vf vmx = ninf;
#define MAX_STEP(c, n)                                                         \
  {                                                                            \
    const vf x = vf_blend(vi_eq(ldi(ok + (c), n), vi_set(0)),                  \
                          vf_mul(ldf(sr + (c), n), scale), ninf);              \
    vmx = vf_maxr(vmx, x); /* lanes past n load ok = 0: -inf */                \
  }
    FOR_COLS(N, MAX_STEP);
#undef MAX_STEP
    _Alignas(64) float lanes[VL];
    vf_st(lanes, vmx);
    float mx = m;
    for (int q = 0; q < VL; q++)
      mx = lanes[q] > mx ? lanes[q] : mx;
    float *o = row_of(st, r);
    if (mx == -INFINITY) { /* nothing valid yet: P = 0 */
      float *pr = pd + pto__pack_a_index(p, w, r, 0);
      for (uint32_t c = 0; c < N; c++)
        pr[(size_t)c * w] = 0.0f;
      o[0] = 1.0f;
      o[1] = mx;
      o[2] = l;
      continue;
    }
    const vf vm = vf_set(mx), zero = vf_set(0.0f);
    vf vsum = zero;
#define EXP_STEP(c, n)                                                         \
  {                                                                            \
    const vf x = vf_exp(vf_sub(vf_mul(ldf(sr + (c), n), scale), vm));          \
    const vf y = vf_blend(vi_eq(ldi(ok + (c), n), vi_set(0)), x, zero);        \
    stf(e + (c), y, n);                                                        \
    vsum = vf_add(vsum, y);                                                    \
  }
    FOR_COLS(N, EXP_STEP);
#undef EXP_STEP
    vf_st(lanes, vsum);
    float sum = 0.0f;
    for (int q = 0; q < VL; q++)
      sum += lanes[q];
    float *pr = pd + pto__pack_a_index(p, w, r, 0); /* (r, c): pr[c * w] */
    for (uint32_t c = 0; c < N; c++)
      pr[(size_t)c * w] = e[c];
    const float alpha = expf(m - mx);
    o[0] = alpha;
    o[1] = mx;
    o[2] = l * alpha + sum;
  }
  return PTO_OK;
}

/* TSOFTMAXFINAL: each row times the reciprocal of its sum, the
 * log-sum-exp beside it. */
static int vec_TSOFTMAXFINAL(int op, const pto_targs *a) {
  (void)op;
  pto_tile *out = a->dst[0], *lse = a->dst[1];
  const pto_tile *o = a->src[0], *st = a->src[1];
  for (uint32_t r = 0; r < o->valid_rows; r++) {
    const float *sr = row_of(st, r);
    const float m = sr[1], l = sr[2];
    const vf inv = vf_set(l > 0 ? 1.0f / l : 0.0f);
    const float *x = row_of(o, r);
    float *y = row_of(out, r);
#define SCALE_STEP(c, n) stf(y + (c), vf_mul(ldf(x + (c), n), inv), n)
    FOR_COLS(o->valid_cols, SCALE_STEP);
#undef SCALE_STEP
    *(float *)row_of(lse, r) = l > 0 ? m + logf(l) : INFINITY;
  }
  return PTO_OK;
}

/* TTRIFILL: per row, src0 where the column is on the kept side of the
 * diagonal's column t, s elsewhere, as a blend against an iota (in place
 * too: each vector is read before it is written). */
static int vec_TTRIFILL(int op, const pto_targs *a) {
  (void)op;
  pto_tile *d = a->dst[0];
  const pto_tile *x = a->src[0];
  const int trans = (a->flags & PTO_TF_TRANS_A) != 0;
  const vi iota = vi_iota();
  const vf fill = vf_set((float)a->s);
  const int64_t vc = d->valid_cols;
  for (uint32_t r = 0; r < d->valid_rows; r++) {
    const float *xp = row_of(x, r);
    float *dp = row_of(d, r);
    /* kept: c <= t (t = r + imm), or transposed c > t (t = r - imm - 1,
     * as r <= c + imm); t clamped to [-1, vc] */
    int64_t t = trans ? (int64_t)r - a->imm[0] - 1 : (int64_t)r + a->imm[0];
    t = t < -1 ? -1 : t > vc ? vc : t;
    const vi tv = vi_set((int32_t)t);
#define STEP(c, n)                                                             \
  {                                                                            \
    const vb past = vi_gt(vi_add(iota, vi_set((int32_t)(c))), tv);             \
    const vf v = ldf(xp + (c), n);                                             \
    stf(dp + (c), trans ? vf_blend(past, fill, v) : vf_blend(past, v, fill),   \
        n);                                                                    \
  }
    FOR_COLS(d->valid_cols, STEP);
#undef STEP
  }
  return PTO_OK;
}

static void attn_install(pto_isa_table *t) {
  t->fn[PTO_OP_TSOFTMAXONLINE] = vec_TSOFTMAXONLINE;
  t->fn[PTO_OP_TSOFTMAXFINAL] = vec_TSOFTMAXFINAL;
  t->fn[PTO_OP_TTRIFILL] = vec_TTRIFILL;
}

#endif /* PTO_TILEOPS_ATTN_KERNELS_H */
