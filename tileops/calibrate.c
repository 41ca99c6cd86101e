/* Calibration (pto_profile_calibrate, pto/sim.h): every instruction of the
 * table timed at several tile shapes through the active instruction table,
 * its operands made per operand class (valid ones: pto__tileop_check
 * passes them) and hot in the core's cache; each instruction's cost terms
 * (core/cost.h: the class's column) fitted by non-negative least squares
 * on relative error; then the memory system: what a core streams from the
 * last-level cache and from DRAM, alone and with every worker streaming,
 * and how large the last-level cache is in effect. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "core/cost.h"
#include "tileops/calibrate.h"
#include "tileops/tileops.h"

static int cmp_double(const void *x, const void *y);

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- operands ------------------------------------------------------------- */

#define POOL_BYTES ((size_t)24 << 20) /* tiles of one instruction call */
#define GBUF_BYTES ((size_t)16 << 20) /* each global view */

typedef struct cal {
  unsigned char *pool;
  size_t used;
  unsigned char *gbuf[2]; /* a.g, a.g2 */
  uint64_t rng;
  uint32_t mr, nr;
  char msg[256];
} cal;

static uint64_t rnd(cal *c) { /* splitmix64 */
  uint64_t z = (c->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static float unif(cal *c, float lo, float hi) {
  return lo + (hi - lo) * (float)((rnd(c) >> 40) * (1.0 / 16777216.0));
}
static uint32_t up(uint32_t v, uint32_t m) {
  return m ? (v + m - 1) / m * m : v;
}

/* Fills n elements of dtype dt at p: floats in [lo, hi), small integers. */
static void fill(cal *c, pto_dtype dt, void *p, size_t n, float lo,
                 float hi) {
  for (size_t i = 0; i < n; i++) {
    const float v = unif(c, lo, hi);
    switch (dt) {
    case PTO_F32:
      ((float *)p)[i] = v;
      break;
    case PTO_I32:
      ((int32_t *)p)[i] = (int32_t)(rnd(c) % 64);
      break;
    default: { /* bf16, f16: the top half of an f32 will do for timing */
      uint32_t u;
      memcpy(&u, &v, sizeof u);
      ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
    }
    }
  }
}

/* A tile of capacity rows x cols, valid vr x vc, from the pool, its bytes
 * random in [lo, hi) (i32: small integers). */
static pto_tile *tile_r(cal *c, pto_dtype dt, uint32_t rows, uint32_t cols,
                        uint32_t vr, uint32_t vc, float lo, float hi) {
  static pto_tile tiles[16];
  static int next;
  pto_tile *t = &tiles[next++ & 15];
  const size_t bytes = pto_tile_bytes(dt, rows, cols);
  const size_t at = (c->used + 63) & ~(size_t)63;
  if (at + bytes > POOL_BYTES)
    return NULL;
  c->used = at + bytes;
  t->data = c->pool + at;
  t->dtype = dt;
  t->rows = rows;
  t->cols = cols;
  t->stride = pto_tile_stride(dt, cols);
  t->valid_rows = vr;
  t->valid_cols = vc;
  fill(c, dt, t->data, bytes / pto_dtype_size(dt), lo, hi);
  return t;
}
static pto_tile *tile(cal *c, pto_dtype dt, uint32_t vr, uint32_t vc) {
  return tile_r(c, dt, vr, vc, vr, vc, -2, 2);
}

/* A global view `which` of rows x cols, rows ld elements apart (ld 0:
 * dense), random data. */
static int view_ld(cal *c, pto_targs *a, int which, pto_dtype dt, int64_t rows,
                   int64_t cols, int64_t ld) {
  const size_t es = pto_dtype_size(dt);
  if (ld < cols)
    ld = cols;
  if ((size_t)(rows * ld) * es > GBUF_BYTES)
    return -1;
  pto_gview *g = which ? &a->g2 : &a->g;
  g->base = c->gbuf[which];
  g->dtype = dt;
  g->rows = rows;
  g->cols = cols;
  g->row_stride = ld;
  g->col_stride = 1;
  fill(c, dt, g->base, (size_t)(rows * ld), -2, 2);
  return 0;
}
static int view(cal *c, pto_targs *a, int which, pto_dtype dt, int64_t rows,
                int64_t cols) {
  return view_ld(c, a, which, dt, rows, cols, 0);
}

/* n indices in [0, rows) in a 1 x n tile */
static pto_tile *indices(cal *c, uint32_t n, int64_t rows) {
  pto_tile *t = tile(c, PTO_I32, 1, n);
  if (t)
    for (uint32_t i = 0; i < n; i++)
      ((int32_t *)t->data)[i] = (int32_t)(rnd(c) % (uint64_t)rows);
  return t;
}

/* A matmul operand of valid vr x vc packed (pack_a: as A, panels of w rows;
 * else as B, panels of w cols) by the reference's TLOAD. */
static pto_tile *packed(cal *c, pto_dtype dt, uint32_t vr, uint32_t vc,
                        int pack_a, uint32_t w) {
  const uint32_t q = pto_dtype_size(dt) == 2 ? 2 : 1;
  pto_tile *t = tile_r(c, dt, pack_a ? up(vr, w) : up(vr, q),
                       pack_a ? up(vc, q) : up(vc, w), vr, vc, 0, 0);
  if (!t)
    return NULL;
  /* the values to pack, past the tiles made so far (64-byte aligned) */
  const size_t at = (c->used + 63) & ~(size_t)63;
  if (at + (size_t)vr * vc * 4 > POOL_BYTES)
    return NULL;
  void *vals = c->pool + at;
  fill(c, PTO_F32, vals, (size_t)vr * vc, -2, 2);
  pto_targs la;
  memset(&la, 0, sizeof la);
  la.dst[0] = t;
  la.g = (pto_gview){vals, PTO_F32, vr, vc, vc, 1};
  la.flags = pack_a ? PTO_TF_PACK_A : PTO_TF_PACK_B;
  la.imm[0] = (int32_t)w;
  return pto__isa_scalar.fn[PTO_OP_TLOAD](PTO_OP_TLOAD, &la) ? NULL : t;
}

/* Sorts each run of w columns of every row of (v, ix) as TSORT32 orders
 * them: value descending, then index ascending (insertion sort: runs are
 * short or few). */
static void sort_runs(pto_tile *v, pto_tile *ix, uint32_t w) {
  for (uint32_t r = 0; r < v->valid_rows; r++) {
    float *x = (float *)v->data + (size_t)r * v->stride;
    int32_t *y = (int32_t *)ix->data + (size_t)r * ix->stride;
    for (uint32_t c0 = 0; c0 < v->valid_cols; c0 += w) {
      const uint32_t n = v->valid_cols - c0 < w ? v->valid_cols - c0 : w;
      for (uint32_t i = 0; i < n; i++)
        y[c0 + i] = (int32_t)i;
      for (uint32_t i = 1; i < n; i++) {
        float kv = x[c0 + i];
        int32_t ki = y[c0 + i];
        uint32_t j = i;
        while (j > 0 && pto__sorts_before(kv, ki, x[c0 + j - 1], y[c0 + j - 1])) {
          x[c0 + j] = x[c0 + j - 1];
          y[c0 + j] = y[c0 + j - 1];
          j--;
        }
        x[c0 + j] = kv;
        y[c0 + j] = ki;
      }
    }
  }
}

/* The dtype an operand of op takes: f32 where it may, else i32, else the
 * first it accepts. */
static pto_dtype dt_of(int op, int is_dst, int r) {
  const uint16_t d = pto__insn_operand(op, is_dst, r).dtypes;
  if (d & PTO_DT_F32)
    return PTO_F32;
  if (d & PTO_DT_I32)
    return PTO_I32;
  for (int k = 0; k < PTO_DTYPE_COUNT; k++)
    if (d & PTO_DT(k))
      return (pto_dtype)k;
  return PTO_F32;
}

/* ---- the makers: one per operand class ------------------------------------- */

/* Makes the operands of op's call number k (its shape) of variant v into a;
 * 0 made, 1 no such shape, -1 out of room. */
typedef int (*maker)(cal *c, int op, int k, int v, pto_targs *a);

/* vector tiles: valid rows x cols, from 2 KiB to 256 KiB of f32 */
static const uint32_t vshape[][2] = {{1, 64},   {4, 256},  {16, 64},
                                     {8, 1024}, {32, 256}, {64, 128},
                                     {16, 2048}, {128, 512}, {4, 8192},
                                     {256, 256}};
#define N_VSHAPE (int)(sizeof vshape / sizeof vshape[0])

#define VSHAPE(k)                                                              \
  if ((k) >= N_VSHAPE)                                                         \
    return 1;                                                                  \
  const uint32_t R = vshape[k][0], C = vshape[k][1]

#define NEED(x)                                                                \
  do {                                                                         \
    if (!(x))                                                                  \
      return -1;                                                               \
  } while (0)

/* Operand values: positive where the instruction wants them (a log, a
 * square root), away from 0 for a divisor. */
static pto_tile *src_for(cal *c, int op, int r, uint32_t vr, uint32_t vc) {
  const pto_dtype dt = dt_of(op, 0, r);
  const char *n = pto__insn_name(op);
  const int pos = !strcmp(n, "TLOG") || !strcmp(n, "TSQRT") ||
                  !strcmp(n, "TRSQRT") || !strcmp(n, "TRECIP") ||
                  (r == 1 && strstr(n, "DIV"));
  return tile_r(c, dt, vr, vc, vr, vc, pos ? 0.5f : -2, 2);
}

static int m_elementwise(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  VSHAPE(k);
  const pto_insn_info *i = pto__insn_info(op);
  for (int r = 0; r < i->n_src; r++)
    NEED(a->src[r] = src_for(c, op, r, R, C));
  for (int d = 0; d < i->n_dst; d++)
    NEED(a->dst[d] = tile(c, dt_of(op, 1, d), R, C));
  a->s = 1.5;
  return 0;
}

/* sources of the class's roles: a tile R x C, a rowvec R x 1, a colvec
 * 1 x C; destinations likewise */
static int m_roles(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  VSHAPE(k);
  const pto_insn_info *i = pto__insn_info(op);
  for (int x = 0; x < i->n_src + i->n_dst; x++) {
    const int is_dst = x >= i->n_src, r = is_dst ? x - i->n_src : x;
    const pto_operand o = pto__insn_operand(op, is_dst, r);
    const uint32_t vr = o.role == PTO_ROLE_COLVEC ? 1 : R,
                   vc = o.role == PTO_ROLE_ROWVEC ? 1 : C;
    pto_tile *t = is_dst ? tile(c, dt_of(op, 1, r), vr, vc)
                         : src_for(c, op, r, vr, vc);
    NEED(t);
    if (is_dst)
      a->dst[r] = t;
    else
      a->src[r] = t;
  }
  a->s = 1.5;
  return 0;
}

static int m_fill(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  VSHAPE(k);
  NEED(a->dst[0] = tile(c, dt_of(op, 1, 0), R, C));
  a->s = 1.5;
  return 0;
}

/* TLOAD: plain (v 0), packed as A (v 1: M x K windows) or as B (v 2:
 * K x N windows). */
static const uint32_t pack_shape[][2] = {{12, 64},   {48, 128}, {96, 256},
                                         {192, 256}, {516, 256}, {24, 576},
                                         {256, 512}, {128, 1792}};
#define N_PACK (int)(sizeof pack_shape / sizeof pack_shape[0])

static int m_load(cal *c, int op, int k, int v, pto_targs *a) {
  uint32_t R, C;
  if (v == 0) {
    if (k >= N_VSHAPE)
      return 1;
    R = vshape[k][0];
    C = vshape[k][1];
  } else {
    if (k >= N_PACK)
      return 1;
    R = pack_shape[k][v == 1 ? 0 : 1];
    C = pack_shape[k][v == 1 ? 1 : 0];
  }
  const pto_insn_info *i = pto__insn_info(op);
  const pto_insn_facts *f = pto__insn_facts(op);
  if (v == 0) {
    for (int d = 0; d < i->n_dst; d++) {
      const pto_operand o = pto__insn_operand(op, 1, d);
      NEED(a->dst[d] = tile(c, dt_of(op, 1, d), R,
                            o.role == PTO_ROLE_ROWVEC ? 1 : C));
    }
  } else {
    const uint32_t w = v == 1 ? c->mr : c->nr;
    NEED(a->dst[0] = tile_r(c, PTO_F32, v == 1 ? up(R, w) : R,
                            v == 1 ? C : up(C, w), R, C, 0, 0));
    a->flags |= v == 1 ? PTO_TF_PACK_A : PTO_TF_PACK_B;
    a->imm[0] = (int32_t)w;
  }
  /* a packed operand is a block of a larger matrix, its rows a page or
   * more apart (a window of a weight or of a row of tokens: 28 to 96 KiB
   * in DeepSeek's): from DRAM every row restarts the prefetcher, which
   * rows 2C apart did not show (a 256 x 1024 window of a weight 96 KiB
   * wide streamed at 7.3 GB/s where the profile said 12.4) */
  const int64_t page = 4096 / 4;
  NEED(!view_ld(c, a, 0, PTO_F32, R, C,
                v ? (C + page > 2 * (int64_t)C ? C + page : 2 * (int64_t)C)
                  : 0));
  if (f->g2 != PTO_GA_NONE)
    NEED(!view(c, a, 1, PTO_F32, R, C));
  return 0;
}

/* stores: sources R x C (rowvecs R x 1), the view R x C */
static int m_store(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  VSHAPE(k);
  const pto_insn_info *i = pto__insn_info(op);
  for (int r = 0; r < i->n_src; r++) {
    const pto_operand o = pto__insn_operand(op, 0, r);
    NEED(a->src[r] = tile(c, dt_of(op, 0, r), R,
                          o.role == PTO_ROLE_ROWVEC ? 1 : C));
  }
  NEED(!view(c, a, 0, PTO_F32, R, C));
  return 0;
}

/* TGATHER (and TGATHERELSE): n rows of C columns picked from a table of T
 * rows */
static const uint32_t gather_shape[][2] = {{16, 64},   {64, 256}, {256, 128},
                                           {512, 512}, {128, 576}, {32, 2048}};
#define N_GATHER (int)(sizeof gather_shape / sizeof gather_shape[0])

static int m_gather(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  if (k >= N_GATHER)
    return 1;
  const uint32_t n = gather_shape[k][0], C = gather_shape[k][1];
  const int64_t T = (int64_t)(GBUF_BYTES / 4 / C) < 4 * (int64_t)n
                        ? (int64_t)(GBUF_BYTES / 4 / C)
                        : 4 * (int64_t)n;
  NEED(a->src[0] = indices(c, n, T));
  NEED(a->dst[0] = tile(c, dt_of(op, 1, 0), n, C));
  if (pto__insn_info(op)->n_src > 1) /* TGATHERELSE's rows of -1 */
    NEED(a->src[1] = tile(c, dt_of(op, 1, 0), n, C));
  NEED(!view(c, a, 0, PTO_F32, T, C));
  return 0;
}

/* matmuls: M x N x K, both operands packed (as the compiler packs them),
 * up to accumulators beyond the L2 (GEMM tiles of 1024 x 512) */
static const uint32_t mm_shape[][3] = {
    {12, 32, 64},     {24, 64, 128},    {48, 128, 128},  {96, 128, 256},
    {192, 256, 256},  {384, 512, 256},  {516, 512, 256}, {12, 512, 576},
    {128, 128, 448},  {64, 1024, 64},   {1024, 512, 208}, {684, 704, 256},
    {128, 1184, 192}};
#define N_MM (int)(sizeof mm_shape / sizeof mm_shape[0])

static int m_matmul(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  (void)op;
  if (k >= N_MM)
    return 1;
  const uint32_t M = mm_shape[k][0], N = mm_shape[k][1], K = mm_shape[k][2];
  NEED(a->src[0] = packed(c, PTO_F32, M, K, 1, c->mr));
  NEED(a->src[1] = packed(c, PTO_F32, K, N, 0, c->nr));
  NEED(a->dst[0] = tile_r(c, PTO_F32, M, N, M, N, 0, 0));
  a->flags = PTO_TF_PACK_A | PTO_TF_PACK_B;
  a->imm[0] = (int32_t)c->mr;
  a->imm[1] = (int32_t)c->nr;
  return 0;
}

/* the indexer's weighted sum: R queries of G heads (M = R G rows), N keys,
 * K the head dim */
static const uint32_t wsum_shape[][4] = {{1, 64, 256, 128}, {4, 64, 512, 128},
                                         {8, 64, 1024, 128}, {28, 64, 2048, 128},
                                         {2, 16, 2048, 64}, {16, 8, 512, 128},
                                         {4, 32, 4096, 128}};
#define N_WSUM (int)(sizeof wsum_shape / sizeof wsum_shape[0])

static int m_wsum(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  (void)op;
  if (k >= N_WSUM)
    return 1;
  const uint32_t R = wsum_shape[k][0], G = wsum_shape[k][1],
                 N = wsum_shape[k][2], K = wsum_shape[k][3], M = R * G;
  NEED(a->src[0] = packed(c, PTO_F32, M, K, 1, c->mr));
  NEED(a->src[1] = packed(c, PTO_F32, K, N, 0, c->nr));
  NEED(a->src[2] = tile_r(c, PTO_F32, M, 1, M, 1, 0, 1));
  NEED(a->dst[0] = tile_r(c, PTO_F32, R, N, R, N, 0, 0));
  a->flags = PTO_TF_PACK_A | PTO_TF_PACK_B;
  a->imm[0] = (int32_t)c->mr;
  a->imm[1] = (int32_t)c->nr;
  return 0;
}

/* ... with the keys read from global memory where they lie: src0 = Q^T
 * (K x M, packed as B), src1 the weights, g the N x K keys */
static int m_wsum_g(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  (void)op;
  if (k >= N_WSUM)
    return 1;
  const uint32_t R = wsum_shape[k][0], G = wsum_shape[k][1],
                 N = wsum_shape[k][2], K = wsum_shape[k][3], M = R * G;
  NEED(a->src[0] = packed(c, PTO_F32, K, M, 0, c->nr));
  NEED(a->src[1] = tile_r(c, PTO_F32, M, 1, M, 1, 0, 1));
  NEED(a->dst[0] = tile_r(c, PTO_F32, R, N, R, N, 0, 0));
  NEED(!view(c, a, 0, PTO_F32, N, K));
  a->flags = PTO_TF_PACK_B;
  a->imm[1] = (int32_t)c->nr;
  return 0;
}

/* attention's S^T = G Q^T: n gathered rows of a table of K+ columns by
 * B (K x N, packed as B) */
static const uint32_t ga_shape[][3] = {{64, 576, 128},  {128, 576, 128},
                                       {448, 576, 128}, {256, 128, 64},
                                       {448, 576, 32},  {32, 576, 128},
                                       {512, 192, 128}};
#define N_GA (int)(sizeof ga_shape / sizeof ga_shape[0])

static int m_ga(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  (void)op;
  if (k >= N_GA)
    return 1;
  const uint32_t n = ga_shape[k][0], K = ga_shape[k][1], N = ga_shape[k][2];
  const int64_t T = 512;
  NEED(a->src[0] = indices(c, n, T));
  NEED(a->src[1] = packed(c, PTO_F32, K, N, 0, c->nr));
  NEED(a->dst[0] = tile_r(c, PTO_F32, n, N, n, N, 0, 0));
  NEED(!view(c, a, 0, PTO_F32, T, K));
  a->flags = PTO_TF_PACK_B;
  a->imm[1] = (int32_t)c->nr;
  return 0;
}

/* attention's O = P V: A (M x n, packed as A) by n gathered rows, N of
 * their columns */
static const uint32_t gb_shape[][3] = {{128, 64, 512},  {128, 448, 512},
                                       {32, 256, 512},  {128, 128, 128},
                                       {16, 448, 512},  {64, 448, 64},
                                       {128, 256, 512}};
#define N_GB (int)(sizeof gb_shape / sizeof gb_shape[0])

static int m_gb(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  (void)op;
  if (k >= N_GB)
    return 1;
  const uint32_t M = gb_shape[k][0], n = gb_shape[k][1], N = gb_shape[k][2];
  const int64_t T = 512;
  NEED(a->src[0] = packed(c, PTO_F32, M, n, 1, c->mr));
  NEED(a->src[1] = indices(c, n, T));
  NEED(a->dst[0] = tile_r(c, PTO_F32, M, N, M, N, 0, 0));
  NEED(!view(c, a, 0, PTO_F32, T, N));
  a->flags = PTO_TF_PACK_A;
  a->imm[0] = (int32_t)c->mr;
  return 0;
}

/* the online softmax's step on M rows of n scores, the scores transposed
 * (n x M) as TMATMUL_GA leaves them */
static const uint32_t sm_shape[][2] = {{128, 64}, {128, 448}, {32, 256},
                                       {128, 128}, {16, 448}, {64, 512},
                                       {128, 256}};
#define N_SM (int)(sizeof sm_shape / sizeof sm_shape[0])

static int m_smonline(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  (void)op;
  if (k >= N_SM)
    return 1;
  const uint32_t M = sm_shape[k][0], n = sm_shape[k][1];
  NEED(a->src[0] = tile(c, PTO_F32, n, M));
  NEED(a->src[1] = indices(c, n, 8192));
  NEED(a->dst[0] = tile_r(c, PTO_F32, up(M, c->mr), n, M, n, 0, 0));
  NEED(a->dst[1] = tile_r(c, PTO_F32, M, 3, M, 3, 0, 0));
  a->flags = PTO_TF_TRANS_A;
  a->imm[0] = (int32_t)c->mr;
  a->imm[1] = 8192;
  a->s = 0.125;
  return 0;
}

static int m_smfinal(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  (void)op;
  VSHAPE(k);
  NEED(a->src[0] = tile(c, PTO_F32, R, C));
  NEED(a->src[1] = tile_r(c, PTO_F32, R, 3, R, 3, 1, 2)); /* l > 0 */
  NEED(a->dst[0] = tile(c, PTO_F32, R, C));
  NEED(a->dst[1] = tile(c, PTO_F32, R, 1));
  return 0;
}

static int m_extract(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  VSHAPE(k);
  const pto_dtype dt = dt_of(op, 0, 0);
  const int insert = pto__insn_operand(op, 1, 0).writes == PTO_EXT_WINDOW;
  const uint32_t r = R > 1 ? R / 2 : 1, q = C / 2;
  NEED(a->src[0] = insert ? tile(c, dt, r, q) : tile(c, dt, R, C));
  NEED(a->dst[0] = insert ? tile(c, dt, R, C) : tile(c, dt, r, q));
  a->imm[0] = (int32_t)(R - r);
  a->imm[1] = (int32_t)(C - q);
  return 0;
}

static int m_trans(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  VSHAPE(k);
  NEED(a->src[0] = tile(c, dt_of(op, 0, 0), R, C));
  NEED(a->dst[0] = tile(c, dt_of(op, 1, 0), C, R));
  return 0;
}

static int m_fillpad(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  VSHAPE(k);
  NEED(a->src[0] = tile_r(c, dt_of(op, 0, 0), R, C, R > 1 ? R - 1 : 1,
                          C > 16 ? C - 16 : C, -2, 2));
  NEED(a->dst[0] = tile(c, dt_of(op, 1, 0), R, C));
  return 0;
}

static int m_sort(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  VSHAPE(k);
  pto_tile *sv, *si;
  NEED(sv = tile(c, PTO_F32, R, C));
  NEED(si = tile(c, PTO_I32, R, C));
  a->src[0] = sv;
  a->src[1] = si;
  NEED(a->dst[0] = tile(c, PTO_F32, R, C));
  NEED(a->dst[1] = tile(c, PTO_I32, R, C));
  if (strcmp(pto__insn_name(op), "TSORT32")) { /* merges sorted runs */
    sort_runs(sv, si, 32);
    a->imm[0] = 32;
    a->imm[1] = 4;
  }
  return 0;
}

/* TTOPK: the k largest of N per row */
static const uint32_t topk_shape[][3] = {{1, 1024, 64},   {4, 8192, 512},
                                         {8, 2048, 128},  {4, 8192, 2048},
                                         {16, 4096, 256}, {2, 32768, 2048},
                                         {1, 8192, 2048}};
#define N_TOPK (int)(sizeof topk_shape / sizeof topk_shape[0])

static int m_topk(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  (void)op;
  if (k >= N_TOPK)
    return 1;
  const uint32_t R = topk_shape[k][0], N = topk_shape[k][1],
                 K = topk_shape[k][2];
  NEED(a->src[0] = tile(c, PTO_F32, R, N));
  NEED(a->dst[0] = tile(c, PTO_F32, R, K));
  NEED(a->dst[1] = tile(c, PTO_I32, R, K));
  a->imm[0] = 0;
  a->imm[1] = 1;
  return 0;
}

/* TMRGTOPK: four sorted runs of kk per row merged, the first kk kept */
static const uint32_t mrg_shape[][2] = {{1, 64},   {4, 512},  {8, 128},
                                        {4, 2048}, {16, 256}, {1, 2048}};
#define N_MRG (int)(sizeof mrg_shape / sizeof mrg_shape[0])

static int m_mrgtopk(cal *c, int op, int k, int v, pto_targs *a) {
  (void)v;
  (void)op;
  if (k >= N_MRG)
    return 1;
  const uint32_t R = mrg_shape[k][0], K = mrg_shape[k][1];
  pto_tile *sv, *si;
  NEED(sv = tile(c, PTO_F32, R, 4 * K));
  NEED(si = tile(c, PTO_I32, R, 4 * K));
  sort_runs(sv, si, K);
  a->src[0] = sv;
  a->src[1] = si;
  NEED(a->dst[0] = tile(c, PTO_F32, R, K));
  NEED(a->dst[1] = tile(c, PTO_I32, R, K));
  a->imm[0] = (int32_t)K;
  a->imm[1] = 1;
  a->s = K;
  return 0;
}

/* The maker of each operand class (by name: the classes change with the
 * table; a class missing here fails the calibration, and its test). */
typedef struct class_maker {
  const char *cls;
  maker fn;
  int variants; /* 1: the base only; LOAD: plain, pack_a, pack_b */
} class_maker;

static const class_maker makers[] = {
    {"LOAD", m_load, 3},           {"LOADMAX", m_load, 1},
    {"LOADEXPSUM", m_load, 1},     {"LOADSTORE", m_load, 1},
    {"STORE", m_store, 1},         {"MULSTORE", m_store, 1},
    {"GATHER", m_gather, 1},       {"GATHERELSE", m_gather, 1},
    {"BINARY", m_elementwise, 1},  {"UNARY", m_elementwise, 1},
    {"CMP", m_elementwise, 1},     {"SEL", m_elementwise, 1},
    {"CONVERT", m_elementwise, 1}, {"SCALAR", m_elementwise, 1},
    {"FILL", m_fill, 1},           {"ROWRED", m_roles, 1},
    {"COLRED", m_roles, 1},        {"ROWEXPAND", m_roles, 1},
    {"ROWEXPAND2", m_roles, 1},    {"ROWEXPDIF", m_roles, 1},
    {"ROWEXPSUM", m_roles, 1},     {"COLEXPAND", m_roles, 1},
    {"COLEXPAND2", m_roles, 1},    {"MATMUL", m_matmul, 1},
    {"MATMUL_ACC", m_matmul, 1},   {"MATMUL_WSUM", m_wsum, 1},
    {"MATMUL_WSUM_G", m_wsum_g, 1}, {"MATMUL_GA", m_ga, 1},
    {"MATMUL_GB", m_gb, 1},        {"SMONLINE", m_smonline, 1},
    {"SMFINAL", m_smfinal, 1},     {"EXTRACT", m_extract, 1},
    {"INSERT", m_extract, 1},      {"TRANS", m_trans, 1},
    {"FILLPAD", m_fillpad, 1},     {"SORT32", m_sort, 1},
    {"MRGSORT", m_sort, 1},        {"TOPK", m_topk, 1},
    {"MRGTOPK", m_mrgtopk, 1},
};
#define N_MAKERS (sizeof makers / sizeof makers[0])

static const class_maker *maker_of(int op) {
  const char *cls = pto__class_name(pto__insn_info(op)->cls);
  for (size_t i = 0; i < N_MAKERS; i++)
    if (!strcmp(makers[i].cls, cls))
      return &makers[i];
  return NULL;
}

int pto__calibrate_covers(int op) {
  return maker_of(op) != NULL;
}

/* ---- timing ------------------------------------------------------------------ */

/* ns per call of fn on a: the median of 5 batches, each long enough
 * (about 20 us) for the clock, after two calls that warm the caches. */
static double time_call(pto_tileop_fn fn, int op, const pto_targs *a) {
  fn(op, a);
  double t0 = now_ns();
  fn(op, a);
  const double one = now_ns() - t0;
  if (one > 5e6) /* 5 ms and more (a reference kernel's big shape): */
    return one;  /* one call's time says it, to far below the noise */
  uint32_t reps = one > 0 ? (uint32_t)(20000.0 / one) + 1 : 1000;
  if (reps > 4096)
    reps = 4096;
  const int batches = one > 2e6 ? 3 : 5; /* a slow call: 3 of one each */
  double v[5];
  for (int b = 0; b < batches; b++) {
    t0 = now_ns();
    for (uint32_t r = 0; r < reps; r++)
      fn(op, a);
    v[b] = (now_ns() - t0) / reps;
  }
  for (int i = 1; i < batches; i++) /* sorted: the median */
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[batches / 2];
}

/* The bytes a view's window spans (rows * row_stride, the last row's cols). */
static size_t view_span(const pto_gview *g) {
  if (!g->base || g->rows <= 0 || g->cols <= 0)
    return 0;
  const size_t es = pto_dtype_size(g->dtype);
  return ((size_t)(g->rows - 1) * (size_t)g->row_stride +
          (size_t)(g->cols - 1) * (size_t)g->col_stride + 1) *
         es;
}

#define COLD_BYTES ((size_t)16 << 20) /* beyond the L2, within the LLC */
#define DRAM_BYTES ((size_t)384 << 20) /* beyond most LLCs: from DRAM */

/* ns per call of fn on a with its global windows cold: each call reads
 * (writes) them at the next of the places a region of COLD_BYTES holds
 * (cold[0] for a.g, cold[1] for a.g2), after one round over them all: the
 * median call. 0 when a window does not fit the region twice. */
static double time_cold(pto_tileop_fn fn, int op, const pto_targs *a0,
                        unsigned char *const cold[2], size_t region) {
  pto_targs a = *a0;
  pto_gview *g[2] = {&a.g, &a.g2};
  size_t step[2] = {0, 0}, slots = SIZE_MAX;
  for (int v = 0; v < 2; v++) {
    const size_t span = view_span(g[v]);
    if (!span)
      continue;
    step[v] = (span + 4095) & ~(size_t)4095;
    const size_t k = region / step[v];
    slots = k < slots ? k : slots;
  }
  if (slots == SIZE_MAX || slots < 2)
    return 0;
  double t[64];
  int n = 0;
  /* a region larger than the samples: strided through once, untimed
   * rounds skipped (the region is far out of every cache) */
  const size_t calls = region > COLD_BYTES ? (slots > 64 ? 64 : slots)
                       : slots * 2 > 48     ? slots + 24
                                            : slots * 2;
  const size_t skip = region > COLD_BYTES ? 0 : slots;
  for (size_t i = 0; i < calls && n < 64; i++) {
    /* far out of every cache: every slot of the region in turn, spread */
    const size_t at = region > COLD_BYTES ? (i * (slots / calls)) % slots
                                          : i % slots;
    for (int v = 0; v < 2; v++)
      if (step[v])
        g[v]->base = cold[v] + at * step[v];
    const double t0 = now_ns();
    fn(op, &a);
    if (i >= skip) /* the first round brought the region into the LLC */
      t[n++] = now_ns() - t0;
  }
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return n ? t[n / 2] : 0;
}

/* ---- the fit ------------------------------------------------------------------ */

#define MAX_SAMPLES 16

/* Least squares of y against the terms in mask, each sample weighted by
 * 1 / y (relative error), coefficients >= 0: every subset of the terms
 * solved by its normal equations, the best one with no negative
 * coefficient kept (five terms: 32 subsets). With floor (NULL: none),
 * coefficient k is at least floor[k]: the fit is of what is left above
 * the floors. The mean relative error into *err. */
static void nnls_fit(const double (*x)[PTO_COST_TERMS], const double *y,
                     int n, uint32_t mask, const double *floor,
                     double out[PTO_COST_TERMS], double *err) {
  double fixed[MAX_SAMPLES] = {0}; /* each sample's time at the floors */
  for (int s = 0; floor && s < n; s++)
    for (int k = 0; k < PTO_COST_TERMS; k++)
      fixed[s] += floor[k] * x[s][k];
  double best = INFINITY;
  memset(out, 0, sizeof(double) * PTO_COST_TERMS);
  for (uint32_t sub = 1; sub < (1u << PTO_COST_TERMS); sub++) {
    if ((sub & mask) != sub)
      continue;
    int idx[PTO_COST_TERMS], m = 0;
    for (int k = 0; k < PTO_COST_TERMS; k++)
      if (sub & (1u << k))
        idx[m++] = k;
    if (m > n)
      continue;
    double A[PTO_COST_TERMS][PTO_COST_TERMS + 1];
    memset(A, 0, sizeof A);
    for (int s = 0; s < n; s++) {
      const double w = 1.0 / (y[s] * y[s]);
      for (int i = 0; i < m; i++) {
        for (int j = 0; j < m; j++)
          A[i][j] += w * x[s][idx[i]] * x[s][idx[j]];
        A[i][m] += w * x[s][idx[i]] * (y[s] - fixed[s]);
      }
    }
    /* Gaussian elimination with partial pivoting */
    int ok = 1;
    for (int i = 0; i < m && ok; i++) {
      int piv = i;
      for (int r = i + 1; r < m; r++)
        if (fabs(A[r][i]) > fabs(A[piv][i]))
          piv = r;
      if (fabs(A[piv][i]) < 1e-300) {
        ok = 0;
        break;
      }
      for (int j = 0; j <= m; j++) {
        double t = A[i][j];
        A[i][j] = A[piv][j];
        A[piv][j] = t;
      }
      for (int r = 0; r < m; r++) {
        if (r == i)
          continue;
        const double f = A[r][i] / A[i][i];
        for (int j = i; j <= m; j++)
          A[r][j] -= f * A[i][j];
      }
    }
    if (!ok)
      continue;
    double coef[PTO_COST_TERMS] = {0};
    for (int i = 0; i < m; i++) {
      coef[idx[i]] = A[i][m] / A[i][i];
      if (!(coef[idx[i]] >= 0) || !isfinite(coef[idx[i]]))
        ok = 0;
    }
    if (!ok)
      continue;
    double e = 0;
    for (int s = 0; s < n; s++) {
      double p = fixed[s];
      for (int k = 0; k < PTO_COST_TERMS; k++)
        p += coef[k] * x[s][k];
      e += (p - y[s]) * (p - y[s]) / (y[s] * y[s]);
    }
    if (e < best - 1e-12) {
      best = e;
      memcpy(out, coef, sizeof coef);
    }
  }
  for (int k = 0; floor && k < PTO_COST_TERMS; k++)
    out[k] += floor[k];
  double rel = 0;
  for (int s = 0; s < n; s++) {
    double p = 0;
    for (int k = 0; k < PTO_COST_TERMS; k++)
      p += out[k] * x[s][k];
    rel += fabs(p - y[s]) / y[s];
  }
  *err = n ? rel / n : 0;
}

/* ---- the memory probes --------------------------------------------------------- */

typedef struct probe {
  const pto_isa_table *tab;
  unsigned char *buf;
  size_t bytes;      /* the region this thread sweeps */
  unsigned char *tl; /* its tile */
  int passes;
  double gbps;
  /* 0: dense windows read; cols (< PROBE_COLS): windows of that many
   * columns of rows PROBE_STRIDE floats apart, read; -1: dense windows
   * stored around the caches (PTO_TF_STREAM) */
  int mode;
  double window_ns; /* the median window's */
} probe;

#define PROBE_ROWS 64
#define PROBE_COLS 1024   /* 256 KiB windows */
#define PROBE_STRIDE 4096 /* floats between a strided window's rows */

/* Sweeps the region with TLOAD of 64 x 1024 f32 windows `passes` times
 * after one untimed pass, each window timed alone: GB/s at the median
 * window's time (a neighbour that takes the core for a while slows a few
 * windows, not the figure). */
static int cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static void probe_main(void *arg) {
  probe *p = arg;
  pto_tile t = {p->tl, PTO_F32, PROBE_ROWS, PROBE_COLS,
                PROBE_COLS, PROBE_ROWS, PROBE_COLS};
  pto_targs a;
  memset(&a, 0, sizeof a);
  const int store = p->mode < 0;
  const uint32_t cols = p->mode > 0 ? (uint32_t)p->mode : PROBE_COLS;
  t.cols = t.stride = t.valid_cols = cols;
  if (store) {
    a.src[0] = &t;
    a.flags = PTO_TF_STREAM;
  } else {
    a.dst[0] = &t;
  }
  const int op = store ? PTO_OP_TSTORE : PTO_OP_TLOAD;
  /* dense: windows one after another; strided: bands of PROBE_ROWS rows
   * PROBE_STRIDE floats apart, each cut into windows of cols columns */
  const size_t row = p->mode > 0 ? (size_t)PROBE_STRIDE * 4 : (size_t)cols * 4;
  const size_t band = (size_t)PROBE_ROWS * row;
  const size_t per_band = p->mode > 0 ? PROBE_STRIDE / cols : 1;
  const size_t n = p->bytes / band * per_band;
  double *dt = malloc((n * (size_t)p->passes + 1) * sizeof *dt);
  size_t m = 0;
  for (int pass = -1; pass < p->passes; pass++)
    for (size_t i = 0; i < n; i++) {
      unsigned char *base =
          p->buf + (i / per_band) * band + (i % per_band) * (size_t)cols * 4;
      a.g = (pto_gview){base, PTO_F32, PROBE_ROWS, cols,
                        (int64_t)(row / 4), 1};
      const double t0 = now_ns();
      p->tab->fn[op](op, &a);
      if (pass >= 0 && dt)
        dt[m++] = now_ns() - t0;
    }
  if (!dt || !m) {
    free(dt);
    p->gbps = p->window_ns = 0;
    return;
  }
  qsort(dt, m, sizeof *dt, cmp_double);
  p->window_ns = dt[m / 2];
  p->gbps = (double)PROBE_ROWS * cols * 4 / dt[m / 2];
  free(dt);
}

/* GB/s per thread and in total, `threads` threads each sweeping its own
 * `bytes` of buf. */
static double sweep_mode(const pto_isa_table *tab, unsigned char *buf,
                         size_t bytes, uint32_t threads, unsigned char *tiles,
                         int passes, int mode, double *total,
                         double *window_ns) {
  probe p[64];
  uv_thread_t th[64];
  if (threads > 64)
    threads = 64;
  for (uint32_t i = 0; i < threads; i++) {
    p[i] = (probe){tab,    buf + i * bytes,
                   bytes,  tiles + i * (size_t)PROBE_ROWS * PROBE_COLS * 4,
                   passes, 0,
                   mode,   0};
  }
  if (threads == 1) {
    probe_main(&p[0]);
  } else {
    uint32_t started = 0;
    for (; started < threads; started++)
      if (uv_thread_create(&th[started], probe_main, &p[started]))
        break;
    for (uint32_t i = 0; i < started; i++)
      uv_thread_join(&th[i]);
    threads = started;
  }
  double sum = 0, least = INFINITY;
  for (uint32_t i = 0; i < threads; i++) {
    sum += p[i].gbps;
    least = p[i].gbps < least ? p[i].gbps : least;
  }
  *total = sum;
  if (window_ns)
    *window_ns = threads ? p[0].window_ns : 0;
  return threads ? sum / threads : 0;
}

static double sweep(const pto_isa_table *tab, unsigned char *buf, size_t bytes,
                    uint32_t threads, unsigned char *tiles, int passes,
                    double *total) {
  return sweep_mode(tab, buf, bytes, threads, tiles, passes, 0, total, NULL);
}

typedef struct memfig {
  double l2_bytes, llc_bytes, llc_core, llc_total, dram_core, dram_total;
  double llc_row_ns, dram_row_ns, dram_store;
  double curve[8][2]; /* bytes, GB/s of one core */
  int n_curve;
} memfig;

static void log_line(FILE *log, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void log_line(FILE *log, const char *fmt, ...) {
  if (!log)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(log, "calibrate: ");
  vfprintf(log, fmt, ap);
  fputc('\n', log);
  va_end(ap);
}

/* The bandwidth a core gets from regions of growing size, from its L2 up
 * to DRAM: the last-level cache's effective size is where it falls toward
 * DRAM's; then every worker at once from each level. */
static int probe_memory(const pto_isa_table *tab, uint32_t workers,
                        FILE *log, memfig *m) {
  static const size_t mib = (size_t)1 << 20;
  static const size_t sizes[] = {8, 32, 64, 128, 512, 1536};
  const size_t n_sizes = sizeof sizes / sizeof sizes[0];
  const size_t big = sizes[n_sizes - 1] * mib;
  if (workers > 64)
    workers = 64;
  unsigned char *buf = malloc(big + 64);
  unsigned char *tiles = aligned_alloc(64, (size_t)64 * PROBE_ROWS *
                                               PROBE_COLS * 4);
  if (!buf || !tiles) {
    free(buf);
    free(tiles);
    return -1;
  }
  memset(buf, 1, big); /* faulted in once */
  double bw[8];
  for (size_t i = 0; i < n_sizes; i++) {
    double tot;
    const int passes = sizes[i] <= 32 ? 4 : 1;
    bw[i] = sweep(tab, buf, sizes[i] * mib, 1, tiles, passes, &tot);
    m->curve[i][0] = (double)sizes[i] * mib;
    m->curve[i][1] = bw[i];
    log_line(log, "one core streams %4zu MiB at %6.1f GB/s", sizes[i], bw[i]);
  }
  m->n_curve = (int)n_sizes;
  m->llc_core = bw[1];
  m->dram_core = bw[n_sizes - 1] < bw[1] ? bw[n_sizes - 1] : bw[1];
  /* the largest size still clearly above DRAM's rate; where a core
   * streams the cache no faster than DRAM (a single core's reads bound by
   * its latency), its size as the CPU reports it */
  m->llc_bytes = (double)sizes[0] * mib;
  for (size_t i = 0; i < n_sizes; i++)
    if (bw[i] > m->dram_core + 0.5 * (m->llc_core - m->dram_core))
      m->llc_bytes = (double)sizes[i] * mib;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (m->dram_core > 0.9 * m->llc_core)
    m->llc_bytes = l3 > 0 ? (double)l3 : (double)sizes[1] * mib;
  /* every worker at once: from the cache (regions that fit it together)
   * and from DRAM */
  size_t each = (size_t)(m->llc_bytes / 2 / workers);
  each = each / ((size_t)PROBE_ROWS * PROBE_COLS * 4) *
         ((size_t)PROBE_ROWS * PROBE_COLS * 4);
  double tot = 0;
  if (workers > 1 && each >= 4 * mib) {
    sweep(tab, buf, each, workers, tiles, 4, &tot);
    m->llc_total = tot > m->llc_core ? tot : m->llc_core;
  } else {
    m->llc_total = m->llc_core * workers;
  }
  each = big / workers;
  each = each / ((size_t)PROBE_ROWS * PROBE_COLS * 4) *
         ((size_t)PROBE_ROWS * PROBE_COLS * 4);
  if (workers > 1) {
    sweep(tab, buf, each, workers, tiles, 1, &tot);
    m->dram_total = tot > m->dram_core ? tot : m->dram_core;
  } else {
    m->dram_total = m->dram_core;
  }
  /* strided windows' rows (832-byte runs 16 KiB apart, as a packing
   * TLOAD reads a K slice of a row-major matrix): what each row costs
   * beyond its bytes; and stores around the caches */
  double wns, tot2;
  const size_t llc_region = (size_t)(m->llc_bytes / 2) > 4 * mib
                                ? (size_t)(m->llc_bytes / 2)
                                : 4 * mib;
  sweep_mode(tab, buf, llc_region, 1, tiles, 2, 208, &tot2, &wns);
  m->llc_row_ns = fmax(0, (wns - PROBE_ROWS * 208 * 4 / m->llc_core) /
                              PROBE_ROWS);
  sweep_mode(tab, buf, big, 1, tiles, 1, 208, &tot2, &wns);
  m->dram_row_ns = fmax(0, (wns - PROBE_ROWS * 208 * 4 / m->dram_core) /
                               PROBE_ROWS);
  m->dram_store = sweep_mode(tab, buf, big / 2, 1, tiles, 1, -1, &tot2, NULL);
  if (!(m->dram_store > 0))
    m->dram_store = m->dram_core;
  log_line(log,
           "last-level cache ~%.0f MiB: %.1f GB/s a core, %.1f GB/s for %u "
           "workers, %.1f ns a strided row; DRAM %.1f GB/s a core, %.1f GB/s "
           "for %u, %.1f ns a strided row, streaming stores %.1f GB/s a core",
           m->llc_bytes / mib, m->llc_core, m->llc_total, workers,
           m->llc_row_ns, m->dram_core, m->dram_total, workers, m->dram_row_ns,
           m->dram_store);
  free(buf);
  free(tiles);
  return 0;
}

/* ---- the call --------------------------------------------------------------------- */

pto_calibrate_params pto_calibrate_params_default(void) {
  pto_calibrate_params p;
  memset(&p, 0, sizeof p);
  p.seconds = 4;
  return p;
}

/* A memory-time multiplier (mem_x, dram_x) as the profile keeps it: within
 * [1/4, 16] of the probe's rate (a copy may stream faster than the probe's
 * loads, a packing load slower), to three decimals */
static json_t *multiplier(double x) {
  x = x < 0.25 ? 0.25 : x > 16 ? 16 : x;
  return json_real(round(x * 1000) / 1000);
}

static json_t *terms_json(const double ns[PTO_COST_TERMS]) {
  json_t *o = json_object();
  for (int k = 0; o && k < PTO_COST_TERMS; k++)
    if (ns[k] > 0 || k == PTO_COST_CALL)
      json_object_set_new(o, pto__cost_term_key[k],
                          json_real(ns[k] < 1e-9 && k ? 0 : ns[k]));
  return o;
}

pto_status pto_profile_calibrate(const pto_calibrate_params *prm,
                                 pto_profile **out) {
  if (!out)
    return pto__last_error(PTO_EINVAL, "calibrate: out is NULL");
  *out = NULL;
  pto_calibrate_params p = prm ? *prm : pto_calibrate_params_default();
  char isa_msg[256];
  if (pto__isa_check(isa_msg, sizeof isa_msg))
    return pto__last_error(PTO_EISA, "calibrate: %s", isa_msg);
  const pto_isa_table *tab = pto__isa_active();
  pto_machine host;
  if (pto_machine_host(&host)) {
    memset(&host, 0, sizeof host);
    snprintf(host.name, sizeof host.name, "host");
    host.workers[0] = host.workers[1] = 1;
    host.shared = 1;
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
      host.mem[l] = (size_t)1 << 20;
  }
  if (p.workers) {
    host.workers[0] = host.workers[1] = p.workers;
  }
  const uint32_t workers = host.workers[0];
  const double budget = (p.seconds > 0 ? p.seconds : 4) * 1e9;
  const double t_start = now_ns();
  cal c;
  memset(&c, 0, sizeof c);
  c.rng = 0x5eed;
  c.pool = aligned_alloc(64, POOL_BYTES);
  c.gbuf[0] = aligned_alloc(64, GBUF_BYTES);
  c.gbuf[1] = aligned_alloc(64, GBUF_BYTES);
  json_t *insns = json_object(), *fit = json_object();
  unsigned char *cold[2] = {NULL, NULL}, *dcold[2] = {NULL, NULL};
  pto_status st = PTO_OK;
  if (!c.pool || !c.gbuf[0] || !c.gbuf[1] || !insns || !fit) {
    st = pto__last_error(PTO_ENOMEM, "calibrate: out of memory");
    goto done;
  }
  c.mr = tab->mm_mr;
  c.nr = tab->mm_nr;
  /* the core's L1 data cache (glibc's view of CPUID; 32 KiB unknown) */
  long l1_sys = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  const double l1 = l1_sys > 0 ? (double)l1_sys : 32768.0;
  /* the host's per-core L2: its scratchpads are half of it
   * (pto_machine_host) */
  const double l2_bytes = 2.0 * (double)host.mem[PTO_MEM_UB];
  memfig mf;
  memset(&mf, 0, sizeof mf);
  /* the memory system first: the instructions' cold runs are read
   * against its streaming rates. It is the machine's, not the table's:
   * probed through the best table this CPU runs (a slow table's loads,
   * the scalar reference's, would time themselves, not the memory) */
  if (probe_memory(pto__isa_best(), workers, p.log, &mf)) {
    st = pto__last_error(PTO_ENOMEM, "calibrate: out of memory for the "
                                     "memory probes");
    goto done;
  }
  cold[0] = aligned_alloc(4096, COLD_BYTES);
  cold[1] = aligned_alloc(4096, COLD_BYTES);
  dcold[0] = aligned_alloc(4096, DRAM_BYTES);
  dcold[1] = aligned_alloc(4096, DRAM_BYTES);
  if (!cold[0] || !cold[1] || !dcold[0] || !dcold[1]) {
    st = pto__last_error(PTO_ENOMEM, "calibrate: out of memory");
    goto done;
  }
  for (size_t i = 0; i < COLD_BYTES / 4; i++) /* finite values: 1.0f */
    ((float *)(void *)cold[0])[i] = ((float *)(void *)cold[1])[i] = 1.0f;
  for (size_t i = 0; i < DRAM_BYTES / 4; i++)
    ((float *)(void *)dcold[0])[i] = ((float *)(void *)dcold[1])[i] = 1.0f;
  const int dump = p.verbose && p.log; /* every timed shape */
  /* about a third of the budget for the instructions, shared evenly */
  const double per_insn = budget * 0.35 / PTO_OP_COUNT;
  /* No instruction does its flops faster than the plain matmul's engine:
   * TMATMUL is timed first and its ns per flop is every other flop term's
   * floor. (The fused matmuls' small calibration shapes cannot tell their
   * flops from their fixed costs; fitted freely, TMATMUL_GB's came out at
   * 1.5 times the FMA peak and the simulated attention 20 % fast.) */
  double floor[PTO_COST_TERMS] = {0};
  for (int oi = 0; oi < PTO_OP_COUNT; oi++) {
    const int op = oi == 0                ? PTO_OP_TMATMUL
                   : oi <= PTO_OP_TMATMUL ? oi - 1
                                          : oi;
    const class_maker *mk = maker_of(op);
    const char *name = pto__insn_name(op);
    if (!mk) {
      st = pto__last_error(PTO_ENOTSUP,
                           "calibrate: no microbenchmark for %s (class %s): "
                           "tileops/calibrate.c has no maker for the class",
                           name, pto__class_name(pto__insn_info(op)->cls));
      goto done;
    }
    const uint32_t mask = pto__class_cost(pto__insn_info(op)->cls);
    const pto_insn_facts *fa = pto__insn_facts(op);
    for (int v = 0; v < mk->variants; v++) {
      double x[MAX_SAMPLES][PTO_COST_TERMS], y[MAX_SAMPLES];
      /* with the global windows cold: the bytes' time from the LLC and
       * its multiplier (pto_cost_terms.mem_x) per shape */
      double mx_t[MAX_SAMPLES], mx_runs[MAX_SAMPLES], mx_stream[MAX_SAMPLES],
          mx_dram[MAX_SAMPLES], mx_dbytes[MAX_SAMPLES], mx_walk[MAX_SAMPLES];
      int n = 0, nmx = 0;
      const double t_op = now_ns();
      for (int k = 0; k < MAX_SAMPLES; k++) {
        pto_targs a;
        memset(&a, 0, sizeof a);
        c.used = 0;
        const int made = mk->fn(&c, op, k, v, &a);
        if (made == 1)
          break;
        if (made < 0) {
          st = pto__last_error(PTO_ENOMEM,
                               "calibrate: %s shape %d does not fit the "
                               "calibration's buffers",
                               name, k);
          goto done;
        }
        char why[256];
        if (pto__tileop_check(op, &a, why, sizeof why)) {
          st = pto__last_error(PTO_EINVAL,
                               "calibrate: the operands made for %s shape %d "
                               "are refused: %s",
                               name, k, why);
          goto done;
        }
        pto_insn_shape sh;
        pto__shape_of(op, &a, c.mr, &sh);
        pto_cost_feat f;
        pto__cost_features(&sh, l1, l2_bytes, &f);
        y[n] = time_call(tab->fn[op], op, &a);
        if (!(y[n] > 0))
          y[n] = 0.5;
        memcpy(x[n], f.x, sizeof f.x);
        const double gb = f.gbytes[0] + f.gbytes[1];
        /* cold calls time what the memory adds: nothing to see where the
         * hot call outlasts its bytes' time from DRAM tenfold (a slow
         * table's big shapes), whose cold rounds would take minutes */
        if (fa->g != PTO_GA_NONE && gb > 0 &&
            y[n] < 10 * gb / (mf.dram_core > 0 ? mf.dram_core : 1)) {
          const double tc = time_cold(tab->fn[op], op, &a, cold, COLD_BYTES);
          /* from DRAM; a second view it writes (TLOADSOFTMAXSTORE's)
           * stored around the caches, as the compiler issues it, its
           * stores then at DRAM's store rate, the rest the instruction's */
          pto_targs ad = a;
          double nt = 0;
          if (fa->g2 == PTO_GA_WRITE) {
            ad.flags |= PTO_TF_STREAM;
            nt = f.gbytes[1];
          }
          double td = time_cold(tab->fn[op], op, &ad, dcold, DRAM_BYTES);
          td -= nt / mf.dram_store;
          /* the runs a window's rows make (as the simulator counts them) */
          double runs = 0;
          const pto_gview *gv[2] = {&a.g, &a.g2};
          const uint8_t part[2] = {fa->gpart, fa->g2part};
          for (int w = 0; w < 2; w++) {
            if (!gv[w]->base || f.gbytes[w] <= 0)
              continue;
            const double gc = (double)pto__insn_gcols_of(&sh),
                         es = (double)pto_dtype_size(gv[w]->dtype);
            runs += part[w] == PTO_GP_ROWS
                        ? (gc > 0 ? f.gbytes[w] / (gc * es) : 1)
                        : (gv[w]->rows <= 1 ||
                           gv[w]->row_stride == gv[w]->cols)
                              ? 1
                              : (double)gv[w]->rows;
          }
          const double stream = gb / mf.llc_core;
          /* where the memory shows at all: beyond the hot call's time */
          if (tc > 1.1 * y[n] && stream > 0) {
            mx_t[nmx] = tc;
            mx_runs[nmx] = runs;
            mx_stream[nmx] = stream;
            mx_dram[nmx] = td > 1.1 * y[n] ? td : 0; /* its loads' ns */
            mx_walk[nmx] = f.x[PTO_COST_ROW];
            mx_dbytes[nmx++] = gb - nt;
          }
          if (dump)
            log_line(p.log, "  %s shape %d cold: %.1f ns (hot %.1f), %g runs, "
                            "%.0f bytes streamed in %.1f ns",
                     name, k, tc, y[n], runs, gb, stream);
        }
        if (dump)
          log_line(p.log, "  %s%s shape %d: rows %g in %g out %g spill %g "
                          "flops %g: %.1f ns",
                   name, v == 1 ? ".pack_a" : v == 2 ? ".pack_b" : "", k,
                   f.x[PTO_COST_ROW], f.x[PTO_COST_IN], f.x[PTO_COST_OUT],
                   f.x[PTO_COST_SPILL], f.x[PTO_COST_FLOP], y[n]);
        n++;
        /* a slow instruction: enough shapes; a very slow one (a
         * reference kernel standing in): two */
        const double spent = now_ns() - t_op;
        if ((spent > per_insn * 3 && n >= 4) ||
            (spent > per_insn * 30 && n >= 2))
          break;
      }
      double coef[PTO_COST_TERMS], err;
      nnls_fit((const double(*)[PTO_COST_TERMS])x, y, n, mask,
               (mask & (1u << PTO_COST_FLOP)) &&
                       !(op == PTO_OP_TMATMUL && v == 0)
                   ? floor
                   : NULL,
               coef, &err);
      if (op == PTO_OP_TMATMUL && v == 0)
        floor[PTO_COST_FLOP] = coef[PTO_COST_FLOP];
      char key[64];
      snprintf(key, sizeof key, "%s%s", name,
               v == 1 ? ".pack_a" : v == 2 ? ".pack_b" : "");
      json_t *terms = terms_json(coef);
      /* the memory side from the cold calls: time = call + mrow * runs +
       * mem_x * streaming time, both >= 0 (mem_x at least 1), fitted as
       * the hot terms are */
      if (nmx >= 2 && terms) {
        double cx[MAX_SAMPLES][PTO_COST_TERMS], cy[MAX_SAMPLES], cc[PTO_COST_TERMS],
            cerr;
        memset(cx, 0, sizeof cx);
        for (int i = 0; i < nmx; i++) {
          cx[i][0] = mx_runs[i];
          cx[i][1] = mx_stream[i];
          cy[i] = mx_t[i] - coef[PTO_COST_CALL];
          if (!(cy[i] > 0))
            cy[i] = 1;
        }
        nnls_fit((const double(*)[PTO_COST_TERMS])cx, cy, nmx, 3u, NULL, cc,
                 &cerr);
        const double mrow = cc[0], mx = cc[1];
        json_object_set_new(terms, "mem_x", multiplier(mx));
        json_object_set_new(terms, "mrow_ns", json_real(round(mrow * 100) / 100));
        /* from DRAM, stores at their own rate: each shape's load time
         * less its call and runs, fitted as its rows walked (drow_ns)
         * plus a multiple of its bytes' streaming time (dram_x): the
         * ratio grows with the rows of a window of the same bytes (0.9
         * for 4 rows of a TLOADSOFTMAXSTORE, 2 for 256), which one
         * multiplier cannot say */
        double dxx[MAX_SAMPLES][PTO_COST_TERMS], dy[MAX_SAMPLES],
            dc[PTO_COST_TERMS], derr;
        memset(dxx, 0, sizeof dxx);
        int nd = 0;
        for (int i = 0; i < nmx; i++)
          if (mx_dram[i] > 0 && mx_dbytes[i] > 0) {
            const double rest =
                mx_dram[i] - coef[PTO_COST_CALL] - mrow * mx_runs[i];
            if (rest < 0.25 * mx_dram[i])
              continue; /* its fixed costs all but the whole: noise */
            dxx[nd][0] = mx_walk[i];
            dxx[nd][1] = mx_dbytes[i] / mf.dram_core;
            dy[nd++] = rest;
          }
        if (nd >= 2) {
          nnls_fit((const double(*)[PTO_COST_TERMS])dxx, dy, nd, 3u, NULL, dc,
                   &derr);
          json_object_set_new(terms, "dram_x", multiplier(dc[1]));
          if (dc[0] > 0)
            json_object_set_new(terms, "drow_ns",
                                json_real(round(dc[0] * 100) / 100));
        } else if (nd == 1) { /* one shape: its ratio */
          json_object_set_new(terms, "dram_x", multiplier(dy[0] / dxx[0][1]));
        }
      }
      json_object_set_new(insns, key, terms);
      json_object_set_new(fit, key, json_real(round(err * 1e4) / 1e4));
      log_line(p.log, "%-22s %2d shapes, mean fit error %4.1f%%", key, n,
               100 * err);
    }
  }
  char cpu[256];
  pto__host_cpu(cpu, sizeof cpu);
  json_t *curve = json_array();
  for (int i = 0; curve && i < mf.n_curve; i++)
    json_array_append_new(curve, json_pack("[f,f]", mf.curve[i][0],
                                           mf.curve[i][1]));
  const double l2 = l2_bytes;
  json_t *doc = json_object();
  json_t *mach = json_pack("{ss si si sb}", "name", "host", "cube_workers",
                           (int)workers, "vector_workers", (int)workers,
                           "shared", 1);
  /* the runtime's costs: estimates until a run measures them */
  json_t *rt = json_pack("{sf sf sf sf sf}", "dispatch_ns", 300.0,
                         "handoff_ns", 600.0, "task_ns", 200.0, "instance_ns",
                         30.0, "call_ns", 15.0);
  json_t *mem = json_pack(
      "{s{sf} s{sf} s{sf sf sf sf} s{sf sf sf sf}}", "l1", "bytes", l1, "l2",
      "bytes", l2, "llc", "bytes", mf.llc_bytes, "core_gbps", mf.llc_core,
      "total_gbps", mf.llc_total, "row_ns", mf.llc_row_ns, "dram", "core_gbps",
      mf.dram_core, "total_gbps", mf.dram_total, "row_ns", mf.dram_row_ns,
      "store_gbps", mf.dram_store);
  json_t *costs = json_pack("{s{sO}}", "any", "insns", insns);
  /* when, for pto_profile_age_s: a VM's host can change under it */
  const time_t when = time(NULL);
  char date[32] = "";
  struct tm tmv;
  if (gmtime_r(&when, &tmv))
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  json_t *about =
      json_pack("{ss ss sf sO sO sI ss}", "cpu", cpu, "isa", tab->name,
                "seconds", (now_ns() - t_start) / 1e9, "fit_error", fit,
                "stream_curve", curve, "time", (json_int_t)when, "date", date);
  json_decref(curve);
  if (!doc || !mach || !rt || !mem || !costs || !about) {
    json_decref(doc);
    json_decref(mach);
    json_decref(rt);
    json_decref(mem);
    json_decref(costs);
    json_decref(about);
    st = pto__last_error(PTO_ENOMEM, "calibrate: out of memory");
    goto done;
  }
  json_object_set_new(doc, "format", json_string("pto-profile"));
  json_object_set_new(doc, "version", json_integer(1));
  json_object_set_new(doc, "name", json_string(p.name ? p.name : "host"));
  json_object_set_new(
      doc, "about",
      json_string("calibrated on this CPU by pto_profile_calibrate "
                  "(pto-bench calibrate): each instruction timed at several "
                  "tile shapes through the active instruction table, its "
                  "operands hot in the core's cache, its cost terms fitted; "
                  "the memory system probed with TLOAD sweeps of growing "
                  "regions, one core and every worker at once"));
  json_object_set_new(doc, "machine", mach);
  json_object_set_new(doc, "runtime", rt);
  json_object_set_new(doc, "memory", mem);
  json_object_set_new(doc, "costs", costs);
  json_object_set_new(doc, "calibration", about);
  pto_error err;
  pto__error_clear(&err);
  if ((st = pto__profile_from_json(doc, NULL, out, &err)))
    pto__last_error(st, "calibrate: the profile it made is refused: %s",
                    err.msg);
done:
  free(cold[0]);
  free(cold[1]);
  free(dcold[0]);
  free(dcold[1]);
  json_decref(insns);
  json_decref(fit);
  free(c.pool);
  free(c.gbuf[0]);
  free(c.gbuf[1]);
  return st;
}
