/* The lightning indexer with top-k as a PTO program, and its plain-C
 * reference and checker (pto/indexer.h). */
#include "pto/indexer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pto/pto.h"
#include "dyn_dims.h"
#include "ref_values.h"

pto_indexer_params pto_indexer_params_default(void) {
  pto_indexer_params prm;
  memset(&prm, 0, sizeof prm);
  prm.topk = 2048;
  prm.mask = PTO_MASK_CAUSAL;
  return prm;
}

int64_t pto_indexer_visible(const pto_indexer_dims *d, pto_mask_mode mask,
                            int64_t i) {
  if (mask != PTO_MASK_CAUSAL)
    return d->s2;
  int64_t v = d->s2 - d->s1 + i + 1;
  return v < 0 ? 0 : v > d->s2 ? d->s2 : v;
}

double pto_indexer_gflop(const pto_indexer_dims *d,
                         const pto_indexer_params *prm) {
  double pairs = 0;
  for (int64_t i = 0; i < d->s1; i++)
    pairs += (double)pto_indexer_visible(d, prm->mask, i);
  return 2.0 * (double)d->b * pairs * (double)d->h * (double)d->d * 1e-9;
}

/* ---- the program ---------------------------------------------------------- */

#define OP "indexer"

/* The sizes of q, k and w, checked against each other. 0 or a status
 * recorded on p. */
static pto_status check_inputs(pto_program *p, pto_tensor *q, pto_tensor *k,
                               pto_tensor *w, const pto_indexer_params *prm,
                               pto_indexer_dims *d) {
  char bq[96], bk[96], bw[96];
  if (!prm)
    return pto_program_fail(p, PTO_EINVAL, OP, "params are NULL");
  if (!q || !k || !w)
    return pto_program_status(p) ? pto_program_status(p)
                                 : pto_program_fail(p, PTO_EINVAL, OP,
                                                    "q, k or w is NULL");
  pto_tensor_describe(q, bq, sizeof bq);
  pto_tensor_describe(k, bk, sizeof bk);
  pto_tensor_describe(w, bw, sizeof bw);
  if (pto_tensor_ndim(q) != 4 || pto_tensor_ndim(k) != 3 ||
      pto_tensor_ndim(w) != 3)
    return pto_program_fail(p, PTO_ESHAPE, OP,
                            "q %s must be [B,S1,H,D], k %s [B,S2,D] and w %s "
                            "[B,S1,H]",
                            bq, bk, bw);
  /* q and k: the cube's operands, f32 or bf16 (widened while packed) */
  const pto_dtype qt = pto_tensor_dtype(q), kt = pto_tensor_dtype(k);
  if (qt != PTO_F32 && qt != PTO_BF16)
    return pto_program_fail(p, PTO_EDTYPE, OP, "%s must be f32 or bf16", bq);
  if (kt != qt)
    return pto_program_fail(p, PTO_EDTYPE, OP,
                            "q %s and k %s must share one dtype (f32 or bf16)",
                            bq, bk);
  if (pto_tensor_dtype(w) != PTO_F32)
    return pto_program_fail(p, PTO_EDTYPE, OP, "%s must be f32", bw);
  d->b = pto_tensor_dim(q, 0);
  d->s1 = pto_tensor_dim(q, 1);
  d->h = pto_tensor_dim(q, 2);
  d->d = pto_tensor_dim(q, 3);
  d->s2 = pto_tensor_dim(k, 1);
  if (pto_tensor_dim(k, 0) != d->b || pto_tensor_dim(k, 2) != d->d)
    return pto_program_fail(p, PTO_ESHAPE, OP,
                            "k %s must be [B,S2,D] = [%" PRId64 ",S2,%" PRId64
                            "] for q %s",
                            bk, d->b, d->d, bq);
  if (pto_tensor_dim(w, 0) != d->b || pto_tensor_dim(w, 1) != d->s1 ||
      pto_tensor_dim(w, 2) != d->h)
    return pto_program_fail(p, PTO_ESHAPE, OP,
                            "w %s must be [B,S1,H] = [%" PRId64 ",%" PRId64
                            ",%" PRId64 "] for q %s",
                            bw, d->b, d->s1, d->h, bq);
  if (prm->topk < 1)
    return pto_program_fail(p, PTO_ERANGE, OP, "topk is %" PRId64
                            "; it must be at least 1", prm->topk);
  if ((unsigned)prm->mask >= PTO_MASK_MODE_COUNT)
    return pto_program_fail(p, PTO_EINVAL, OP,
                            "mask mode %d is unknown (none or causal)",
                            (int)prm->mask);
  if (prm->dynamic & ~PTO_INDEXER_DYN_ALL)
    return pto_program_fail(p, PTO_EINVAL, OP,
                            "dynamic is 0x%x; it takes PTO_INDEXER_DYN_B, "
                            "_S1 and _S2 (0x%x) only",
                            prm->dynamic, PTO_INDEXER_DYN_ALL);
  /* a flag asserts the axis is dynamic: here the inputs decide, and a
   * static axis under a flag means the caller expected another program */
  pto_tensor *const on[3] = {q, q, k}; /* PTO_INDEXER_DYN_B << f */
  const char *const dim[3] = {"B", "S1", "S2"}, *const desc[3] = {bq, bq, bk};
  for (int f = 0; f < 3; f++)
    if ((prm->dynamic & (1u << f)) &&
        pto_tensor_dim_dynamic(on[f], f ? 1 : 0) < 0)
      return pto_program_fail(
          p, PTO_EINVAL, OP,
          "params flag %s dynamic, but axis %d of %s %s is static "
          "(pto_indexer follows its inputs' dims: declare it with "
          "pto_dim_dynamic, or build with pto_indexer_program)",
          dim[f], f ? 1 : 0, f == 2 ? "k" : "q", desc[f]);
  return PTO_OK;
}

/* The score's query blocks: B times S1 in tiles of `queries` queries. */
static int64_t query_blocks(const pto_indexer_dims *d, int64_t queries) {
  return (d->b > 1 ? d->b : 1) *
         (((d->s1 > 1 ? d->s1 : 1) + queries - 1) / queries);
}

pto_tile_shape pto_indexer_qk_tile(const pto_machine *m,
                                   const pto_indexer_dims *d) {
  pto_tile_shape t = {0, 0, 0, 0, 0};
  pto_machine host;
  if (!m && pto_machine_host(&host) == PTO_OK)
    m = &host;
  if (!m || !d || d->h < 1 || d->d < 1 || d->s1 < 1 || d->s2 < 1)
    return t;
  /* the compiler's choice for the score (pto_matmul_relu_wsum_tile) */
  if (pto_matmul_relu_wsum_tile(m, d->b > 1 ? d->b : 1, d->s1 * d->h, d->h,
                                d->d, d->s2, &t) != PTO_OK)
    memset(&t, 0, sizeof t);
  return t;
}

pto_tile_shape pto_indexer_topk_tile(const pto_machine *m,
                                     const pto_indexer_dims *d, int64_t topk) {
  pto_tile_shape t = {0, 0, 0, 0, 0};
  pto_machine host;
  if (!m && pto_machine_host(&host) == PTO_OK)
    m = &host;
  if (!d || d->s2 < 1 || topk < 1)
    return t;
  const uint64_t ub = m ? m->mem[PTO_MEM_UB] : 256u << 10;
  /* a unit holds its block of scores and the values and indices it keeps,
   * rows padded to 64 bytes */
  const uint64_t kk = (uint64_t)topk;
#define ROW_BYTES(cols)                                                        \
  (((uint64_t)(cols) + 15) / 16 * 64 + 2 * ((((cols) < kk ? (cols) : kk) + 15) / 16 * 64))
  /* whole rows when one fits: one selection per row and no merge; else
   * the widest power-of-two block that fits, merged by a tree */
  uint64_t cols = (uint64_t)d->s2;
  while (cols > 64 && ROW_BYTES(cols) > ub)
    cols = cols == (uint64_t)d->s2 ? (uint64_t)1 << (63 - __builtin_clzll(cols))
                                   : cols / 2;
  uint64_t rows = ub / ROW_BYTES(cols);
  rows = rows < 1 ? 1 : rows > 4 ? 4 : rows;
#undef ROW_BYTES
  t.vec_rows = (uint32_t)rows;
  t.vec_cols = cols == (uint64_t)d->s2 ? 0 : (uint32_t)cols;
  return t;
}

/* The score's tiles that share a query block: how many key tiles one task
 * computes, its q packed once for all of them (with D = 128, packing q for
 * every key tile cost ~5% of the score). Each block's key tiles are cut
 * into equal runs, enough that every worker of the host gets sixteen
 * tasks: a run ends with the workers finishing their last tasks at
 * different times, idle for half a task on average (whole blocks as tasks
 * left 19 of ~10 ms on two workers at medium, one worker idle for up to 7%
 * of the run). */
static int64_t qk_reuse(const pto_indexer_dims *d, const pto_tile_shape *qk) {
  pto_machine host;
  const int64_t workers = pto_machine_host(&host) == PTO_OK
                              ? (int64_t)host.workers[PTO_CORE_CUBE]
                              : 1;
  const int64_t per_tile = qk->cube_m / d->h > 0 ? qk->cube_m / d->h : 1;
  const int64_t key_tiles =
      qk->cube_n ? (d->s2 + qk->cube_n - 1) / qk->cube_n : 1;
  const int64_t blocks = query_blocks(d, per_tile);
  int64_t runs = (16 * workers + blocks - 1) / blocks; /* per block */
  runs = runs < 1 ? 1 : runs > key_tiles ? key_tiles : runs;
  const int64_t r = (key_tiles + runs - 1) / runs; /* equal runs */
  return r > 65536 ? 65536 : r;
}

static int tile_set(const pto_tile_shape *t) {
  return t->vec_rows || t->vec_cols || t->cube_m || t->cube_n || t->cube_k;
}

pto_tensor *pto_indexer(pto_program *p, pto_tensor *q, pto_tensor *k,
                        pto_tensor *w, const pto_indexer_params *prm,
                        pto_tensor **indices) {
  if (indices)
    *indices = NULL;
  if (!p)
    return NULL;
  if (!indices) {
    pto_program_fail(p, PTO_EINVAL, OP, "indices must not be NULL");
    return NULL;
  }
  pto_indexer_dims d = {0, 0, 0, 0, 0};
  if (check_inputs(p, q, k, w, prm, &d))
    return NULL;
  pto_program_push_label(p, "indexer");
  /* score[b,i,j] = sum_h w * ReLU(q k^T): one cube instruction per tile,
   * the heads of a query one group, masked keys -inf */
  /* the score's cube tile: the params', else the compiler's for the
   * machine it compiles for (the reuse knob is sized by the host's) */
  pto_tile_shape qk = prm->qk_tile;
  const int qk_given = tile_set(&qk);
  if (!qk_given)
    qk = pto_indexer_qk_tile(NULL, &d);
  pto_program_push_tile(p, qk_given ? &qk : NULL);
  if (!qk_given)
    pto_program_auto_cube_tile(p);
  pto_program_set_knob(p, PTO_KNOB_L1_REUSE,
                       prm->qk_reuse > 0 ? prm->qk_reuse : qk_reuse(&d, &qk));
  pto_program_push_label(p, "qk");
  const int64_t q3[3] = {d.b, d.s1 * d.h, d.d}, w3[3] = {d.b, d.s1 * d.h, 1};
  const int causal = prm->mask == PTO_MASK_CAUSAL;
  /* the mask is end-aligned: query i sees keys j <= S2 - S1 + i, at the
   * extents a run binds where S1 or S2 are dynamic */
  pto_tensor *s = pto_matmul_relu_wsum(
      p, pto_reshape(p, q, 3, q3), k, pto_reshape(p, w, 3, w3), d.h,
      PTO_MATMUL_TRANS_B | (causal ? PTO_MATMUL_CAUSAL_END : 0u), 0);
  pto_program_pop_label(p);
  pto_program_pop_tile(p);
  pto_tile_shape tk = prm->topk_tile;
  if (!tile_set(&tk))
    tk = pto_indexer_topk_tile(NULL, &d, prm->topk);
  pto_program_push_tile(p, &tk);
  pto_program_push_label(p, "topk");
  /* keys the mask hid (-inf, inside the score op) are never selected; the
   * slots past the visible keys (topk may exceed S2) are -inf / -1 */
  pto_tensor *idx = NULL;
  pto_tensor *v = pto_topk_masked(p, s, prm->topk, &idx);
  pto_program_pop_label(p);
  pto_program_pop_tile(p);
  pto_program_pop_label(p);
  if (pto_program_status(p))
    return NULL;
  *indices = idx;
  return v;
}

pto_program *pto_indexer_program(const pto_indexer_dims *d,
                                 const pto_indexer_params *prm) {
  pto_program *p = pto_program_new("indexer");
  if (!p)
    return NULL;
  if (!d) {
    pto_program_fail(p, PTO_EINVAL, OP, "dims are NULL");
    return p;
  }
  /* B, S1 and S2: static extents, or dynamic dims with those maxima */
  int64_t ext[3] = {d->b, d->s1, d->s2};
  if (!pto__dyn_bs1s2(p, OP, "PTO_INDEXER_DYN", prm ? prm->dynamic : 0u, ext))
    return p;
  const int64_t B = ext[0], S1 = ext[1], S2 = ext[2];
  const int64_t qs[4] = {B, S1, d->h, d->d}, ks[3] = {B, S2, d->d},
                ws[3] = {B, S1, d->h};
  const pto_dtype dt = prm ? prm->dtype : PTO_F32;
  pto_tensor *q = pto_input(p, "q", dt, 4, qs);
  pto_tensor *k = pto_input(p, "k", dt, 3, ks);
  pto_tensor *w = pto_input(p, "w", PTO_F32, 3, ws);
  pto_tensor *idx = NULL;
  pto_tensor *v = pto_indexer(p, q, k, w, prm, &idx);
  pto_output(p, idx, "indices");
  pto_output(p, v, "values");
  return p;
}

/* ---- plain-C reference ------------------------------------------------------ */

static int dims_ok(const pto_indexer_dims *d, const pto_indexer_params *prm) {
  return d && prm && d->b >= 1 && d->s1 >= 1 && d->s2 >= 1 && d->h >= 1 &&
         d->d >= 1 && prm->topk >= 1 &&
         (unsigned)prm->mask < PTO_MASK_MODE_COUNT &&
         (prm->dtype == PTO_F32 || prm->dtype == PTO_BF16);
}

/* Sizes d inside buffers laid out for m: m valid, d's b, s1, s2 in [0,
 * m's], h and d equal. 1, or 0 with why ("bad arguments: ..."). */
static int bound_ok(const pto_indexer_dims *d, const pto_indexer_dims *m,
                    const pto_indexer_params *prm, char *why, size_t n) {
  if (!d || !m || !dims_ok(m, prm)) {
    snprintf(why, n, "bad arguments: %s",
             !d ? "dims are NULL"
                : "the layout's dims or the params are not valid sizes");
    return 0;
  }
  if (d->b < 0 || d->b > m->b || d->s1 < 0 || d->s1 > m->s1 || d->s2 < 0 ||
      d->s2 > m->s2 || d->h != m->h || d->d != m->d) {
    snprintf(why, n,
             "bad arguments: dims {b %" PRId64 ", s1 %" PRId64 ", s2 %" PRId64
             ", h %" PRId64 ", d %" PRId64 "} do not fit buffers laid out "
             "for {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
             "} (b, s1, s2 at most those, h and d equal)",
             d->b, d->s1, d->s2, d->h, d->d, m->b, m->s1, m->s2, m->h, m->d);
    return 0;
  }
  return 1;
}

/* The buffers' layout: laid out for m (the maxima), read at d's sizes.
 * Row r of d's B*S1 rows is row `buf` of q, w and the outputs; batch b's
 * keys start at row b * s2 of k. With m = d, buf = r. */
typedef struct at_row {
  int64_t b, i, buf, s2; /* batch, query, buffer row, k's rows per batch */
} at_row;

static at_row row_at(const pto_indexer_dims *d, const pto_indexer_dims *m,
                     int64_t r) {
  const at_row a = {r / d->s1, r % d->s1, r / d->s1 * m->s1 + r % d->s1, m->s2};
  return a;
}

/* Row a's q ([H][D]) in double, for row_scores. */
static void row_q(const pto_indexer_dims *d, pto_dtype dt, const void *q,
                  at_row a, double *qd) {
  for (int64_t i = 0; i < d->h * d->d; i++)
    qd[i] = pto__ref_val(q, dt, a.buf * d->h * d->d + i);
}

/* Scores of row `row`'s first n keys in double, from qd (row_q) and k of dt;
 * *scale (when not NULL) gets the largest sum_h |w| |q.k| over them. kd
 * holds D doubles of scratch. */
static void row_scores(const pto_indexer_dims *d, pto_dtype dt,
                       const double *qd, const void *k, const float *w,
                       at_row row, int64_t n, double *kd, double *out,
                       double *scale) {
  const int64_t H = d->h, D = d->d;
  const float *wr = w + row.buf * H;
  double big = 0;
  for (int64_t j = 0; j < n; j++) {
    for (int64_t c = 0; c < D; c++)
      kd[c] = pto__ref_val(k, dt, (row.b * row.s2 + j) * D + c);
    double s = 0, a = 0;
    for (int64_t h = 0; h < H; h++) {
      const double *qh = qd + h * D;
      double dot = 0;
      for (int64_t c = 0; c < D; c++)
        dot += qh[c] * kd[c];
      s += (double)wr[h] * (dot > 0 ? dot : 0);
      a += fabs((double)wr[h]) * fabs(dot);
    }
    out[j] = s;
    big = a > big ? a : big;
  }
  if (scale)
    *scale = big;
}

typedef struct ranked {
  float v;
  int32_t j;
} ranked;

static int by_rank(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  if (a->v != b->v)
    return a->v > b->v ? -1 : 1;
  return (a->j > b->j) - (a->j < b->j);
}

/* pto_indexer_ref_bound's work, its arguments checked. */
static pto_status ref_rows(const pto_indexer_dims *d, const pto_indexer_dims *m,
                           const pto_indexer_params *prm, const void *q,
                           const void *k, const float *w, int64_t r0,
                           int64_t r1, int32_t *indices, float *values) {
  const size_t n2 = (size_t)(d->s2 > 0 ? d->s2 : 1); /* S2 bound to 0 */
  double *s = malloc(n2 * sizeof *s);
  ranked *rk = malloc(n2 * sizeof *rk);
  double *qd = malloc((size_t)(d->h * d->d) * sizeof *qd);
  double *kd = malloc((size_t)d->d * sizeof *kd);
  if (!s || !rk || !qd || !kd) {
    free(s);
    free(rk);
    free(qd);
    free(kd);
    return PTO_ENOMEM;
  }
  const int64_t T = prm->topk;
  for (int64_t r = r0; r < r1; r++) {
    const at_row a = row_at(d, m, r);
    int64_t n = pto_indexer_visible(d, prm->mask, a.i);
    row_q(d, prm->dtype, q, a, qd);
    row_scores(d, prm->dtype, qd, k, w, a, n, kd, s, NULL);
    for (int64_t j = 0; j < n; j++) {
      rk[j].v = (float)s[j];
      rk[j].j = (int32_t)j;
    }
    qsort(rk, (size_t)n, sizeof *rk, by_rank);
    for (int64_t t = 0; t < T; t++) {
      indices[a.buf * T + t] = t < n ? rk[t].j : -1;
      values[a.buf * T + t] = t < n ? rk[t].v : -INFINITY;
    }
  }
  free(s);
  free(rk);
  free(qd);
  free(kd);
  return PTO_OK;
}

pto_status pto_indexer_ref(const pto_indexer_dims *d,
                           const pto_indexer_params *prm, const void *q,
                           const void *k, const float *w, int64_t r0,
                           int64_t r1, int32_t *indices, float *values) {
  if (!dims_ok(d, prm) || !q || !k || !w || !indices || !values || r0 < 0 ||
      r1 > d->b * d->s1 || r0 > r1)
    return PTO_EINVAL;
  return ref_rows(d, d, prm, q, k, w, r0, r1, indices, values);
}

pto_status pto_indexer_ref_bound(const pto_indexer_dims *d,
                                 const pto_indexer_dims *m,
                                 const pto_indexer_params *prm, const void *q,
                                 const void *k, const float *w, int64_t r0,
                                 int64_t r1, int32_t *indices, float *values) {
  char why[512];
  if (!m)
    m = d;
  if (!bound_ok(d, m, prm, why, sizeof why) || !q || !k || !w || !indices ||
      !values || r0 < 0 || r1 > d->b * d->s1 || r0 > r1)
    return PTO_EINVAL;
  return ref_rows(d, m, prm, q, k, w, r0, r1, indices, values);
}

static int by_desc(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a < b) - (a > b);
}

/* pto_indexer_check_bound's work, its arguments checked (msg not NULL). */
static int check_rows(const pto_indexer_dims *d, const pto_indexer_dims *m,
                      const pto_indexer_params *prm, const void *q,
                      const void *k, const float *w, const int32_t *indices,
                      const float *values, int64_t r0, int64_t r1, double rtol,
                      char *msg, size_t msg_size) {
  if (rtol <= 0)
    rtol = 1e-5;
  const int64_t S2 = d->s2, T = prm->topk;
  const size_t n2 = (size_t)(S2 > 0 ? S2 : 1); /* S2 bound to 0 */
  double *s = malloc(n2 * sizeof *s);
  double *sorted = malloc(n2 * sizeof *sorted);
  unsigned char *sel = malloc(n2);
  double *qd = malloc((size_t)(d->h * d->d) * sizeof *qd);
  double *kd = malloc((size_t)d->d * sizeof *kd);
  int bad = !s || !sorted || !sel || !qd || !kd;
  if (bad)
    snprintf(msg, msg_size, "out of memory");
  for (int64_t r = r0; r < r1 && !bad; r++) {
    const at_row a = row_at(d, m, r);
    const int64_t i = a.i, n = pto_indexer_visible(d, prm->mask, i);
    const int64_t kept = n < T ? n : T;
    const int32_t *ir = indices + a.buf * T;
    const float *vr = values + a.buf * T;
    double scale;
    row_q(d, prm->dtype, q, a, qd);
    row_scores(d, prm->dtype, qd, k, w, a, n, kd, s, &scale);
    const double eps = rtol * scale;
    memset(sel, 0, (size_t)S2);
#define FAIL(...)                                                              \
  do {                                                                         \
    int o_ = snprintf(msg, msg_size, "row %" PRId64 " (b %" PRId64             \
                      ", i %" PRId64 "): ", r, r / d->s1, i);                  \
    if (o_ >= 0 && (size_t)o_ < msg_size)                                      \
      snprintf(msg + o_, msg_size - (size_t)o_, __VA_ARGS__);                  \
    bad = 1;                                                                   \
  } while (0)
    for (int64_t t = 0; t < T && !bad; t++) {
      int32_t j = ir[t];
      if (t >= kept) {
        if (j != -1 || !(isinf(vr[t]) && vr[t] < 0))
          FAIL("slot %" PRId64 " holds (%d, %g); with %" PRId64
               " visible keys it must be padding (-1, -inf)",
               t, j, (double)vr[t], n);
        continue;
      }
      if (j < 0 || j >= n)
        FAIL("slot %" PRId64 " holds key %d, not one of the %" PRId64
             " visible keys",
             t, j, n);
      else if (sel[j])
        FAIL("key %d is selected twice", j);
      else if (t && !(vr[t] <= vr[t - 1]))
        FAIL("values do not descend: slot %" PRId64 " %g after %g", t,
             (double)vr[t], (double)vr[t - 1]);
      else if (!(fabs((double)vr[t] - s[j]) <= eps + 1e-30))
        FAIL("slot %" PRId64 ": key %d has value %.9g, its score is %.9g "
             "(tolerance %.3g)",
             t, j, (double)vr[t], s[j], eps);
      else
        sel[j] = 1;
    }
    if (bad || !kept)
      continue;
    memcpy(sorted, s, (size_t)n * sizeof *s);
    qsort(sorted, (size_t)n, sizeof *sorted, by_desc);
    const double kth = sorted[kept - 1];
    for (int64_t j = 0; j < n && !bad; j++) {
      if (sel[j] && s[j] < kth - eps)
        FAIL("key %" PRId64 " is selected with score %.9g, below the "
             "%" PRId64 "-th largest %.9g (tolerance %.3g)",
             j, s[j], kept, kth, eps);
      else if (!sel[j] && s[j] > kth + eps)
        FAIL("key %" PRId64 " with score %.9g is not selected, above the "
             "%" PRId64 "-th largest %.9g (tolerance %.3g)",
             j, s[j], kept, kth, eps);
    }
#undef FAIL
  }
  free(s);
  free(sorted);
  free(sel);
  free(qd);
  free(kd);
  return bad ? -1 : 0;
}

int pto_indexer_check(const pto_indexer_dims *d, const pto_indexer_params *prm,
                      const void *q, const void *k, const float *w,
                      const int32_t *indices, const float *values, int64_t r0,
                      int64_t r1, double rtol, char *msg, size_t msg_size) {
  char dummy[1];
  if (!msg || !msg_size) {
    msg = dummy;
    msg_size = sizeof dummy;
  }
  msg[0] = 0;
  if (!dims_ok(d, prm) || !q || !k || !w || !indices || !values || r0 < 0 ||
      r1 > d->b * d->s1 || r0 > r1) {
    snprintf(msg, msg_size, "bad arguments");
    return -1;
  }
  return check_rows(d, d, prm, q, k, w, indices, values, r0, r1, rtol, msg,
                    msg_size);
}

int pto_indexer_check_bound(const pto_indexer_dims *d,
                            const pto_indexer_dims *m,
                            const pto_indexer_params *prm, const void *q,
                            const void *k, const float *w,
                            const int32_t *indices, const float *values,
                            int64_t r0, int64_t r1, double rtol, char *msg,
                            size_t msg_size) {
  char dummy[1];
  if (!msg || !msg_size) {
    msg = dummy;
    msg_size = sizeof dummy;
  }
  msg[0] = 0;
  if (!m)
    m = d;
  if (!bound_ok(d, m, prm, msg, msg_size))
    return -1;
  if (!q || !k || !w || !indices || !values || r0 < 0 || r1 > d->b * d->s1 ||
      r0 > r1) {
    snprintf(msg, msg_size,
             "bad arguments: a NULL buffer, or rows [%" PRId64 ", %" PRId64
             ") not inside the %" PRId64 " of B*S1",
             r0, r1, d->b * d->s1);
    return -1;
  }
  return check_rows(d, m, prm, q, k, w, indices, values, r0, r1, rtol, msg,
                    msg_size);
}
