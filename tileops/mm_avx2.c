/* avx2 overrides of TMATMUL and TMATMUL_ACC (and of TLOAD for packed
 * operands, through the shared packer). The only file of its kind compiled
 * with the avx2 flags (tileops/CMakeLists.txt).
 *
 * Same structure as tileops/mm_avx512.c with 16 ymm registers: on packed
 * f32 operands with panels MR x NR, a 6x16 block of C stays in registers
 * over the k loop; partial panels are zero-padded by the packing, so only
 * the C loads and stores are masked. Everything else runs the scalar
 * reference. */
#include <immintrin.h>
#include <stdint.h>

#include "core/prefetch.h"
#include "tileops/tileops.h"

#define MR 6   /* rows of C per block: A panel width */
#define NR 16  /* cols of C per block: B panel width, two ymm */
#define KC 256 /* k steps per pass over a B panel: 16 KiB of it in L1 */

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

/* ymm lane masks for the first n (0..8) lanes. */
static __m256i lanes(uint32_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), idx);
}

/* One k step of the 6x16 block: two B vectors, a broadcast of A per row,
 * 12 FMAs into the accumulators c<i>a, c<i>b. */
#define FMA_ROW(i)                                                             \
  {                                                                            \
    const __m256 ai = _mm256_broadcast_ss(Ap + (i));                           \
    c##i##a = _mm256_fmadd_ps(ai, b0, c##i##a);                                \
    c##i##b = _mm256_fmadd_ps(ai, b1, c##i##b);                                \
  }
/* The k loop over K steps, in branch-free stretches between the prefetch
 * plan's ticks; advances Ap and Bp. */
#define K_LOOP(K, Ap, Bp, pf, npf)                                             \
  do {                                                                         \
    pf_spread spread_ = pf_start(pf, npf, K);                                  \
    uint32_t k_ = 0;                                                           \
    for (;;) {                                                                 \
      const uint32_t stop_ = pf_next(&spread_, K);                             \
      _Pragma("GCC unroll 4") for (; k_ < stop_; k_++) {                       \
        const __m256 b0 = _mm256_load_ps(Bp), b1 = _mm256_load_ps(Bp + 8);     \
        ROWS(FMA_ROW)                                                          \
        Ap += MR;                                                              \
        Bp += NR;                                                              \
      }                                                                        \
      if (k_ >= K)                                                             \
        break;                                                                 \
      pf_fire(&spread_);                                                       \
    }                                                                          \
  } while (0)

static inline float mm_hsum_avx2(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

#define VW 8 /* f32 lanes of a vector */
#define MM_ENGINE "avx2-f32"
#define KERNEL kernel_6x16
#define KERNEL_WSUM kernel_6x16_wsum
#define PACK_LANES pack_lanes
/* the vector primitives of mm_gather.h's gathered-row kernels */
#define MM_V __m256
#define MM_LOAD(p) _mm256_loadu_ps(p)
#define MM_BCAST(p) _mm256_broadcast_ss(p)
#define MM_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define MM_ZERO() _mm256_setzero_ps()
#define MM_STORE(p, x) _mm256_storeu_ps(p, x)
#define MM_MUL(a, b) _mm256_mul_ps(a, b)
#define MM_SET1(x) _mm256_set1_ps(x)
/* x < 0: 0, else x (-0 and NaN stay: max returns its second operand
 * when either is NaN or both are zero) */
#define MM_RELU(x) _mm256_max_ps(_mm256_setzero_ps(), x)
#define MM_AND(a, b) _mm256_and_ps(a, b)
#define MM_HSUM(x) mm_hsum_avx2(x) /* the sum of the lanes */
/* TMATMUL_GB packs V's slices (mm_gather.h). On Zen 3 (32 KiB L1, 512
 * KiB L2), one block of attention medium (64 heads x 112 slots x 512
 * columns, right after TMATMUL_GA on the same rows, in-place and packed
 * in turns, best of 20): 31-46 GFLOP/s read in place when a neighbour
 * slows the caches, 66-74 packed; 69 against 79-85 when quiet. In a
 * traced medium run: 48 to 70 GFLOP/s per worker */
#define GB_PACK 1
/* No prefetching of the next loads during the packed matmul's last
 * quarter (ahead_plan): on Zen 3 (512 KiB of L2) the next slices do not
 * fit beside the current ones and push them out. pto-bench gemm, PTO /
 * OpenBLAS with and without, in turns, 1024 and 2048 on 1 and 2 threads:
 * 0.88-0.96 against 0.93-1.07, better in 19 of 20 pairs; 512 and
 * 128x8192x576 better in 11 of 12 */
#define MM_AHEAD 0
/* 4 k steps unrolled, not 16: with 16 GCC spilled three of the 12
 * accumulators once a line (16 ymm registers hold 12 accumulators, two B
 * vectors and a broadcast), and the spills' store-to-load forwarding sat
 * in 8% of TMATMUL_GA's samples (perf, attention medium on Zen 3). Both
 * in turns, best of 40: TMATMUL_GA 78 against 77 GFLOP/s, the indexer's
 * TMATMUL_RELU_WSUM_G 83 against 81 */
#define GA_UNROLL "GCC unroll 4"
/* TLOAD packs B eight source rows at a time, panel by panel, with no
 * software prefetch (mm_loops.h). A 256 x 512 window of a row-major B,
 * in turns with the row-at-a-time packer that fetches 4 rows ahead
 * (median of 400 on Zen 3): 20.8 against 31.3 us with the sources in L2
 * and L3 (a 2048-wide B, 8 windows in turn), 34.0 against 53.9 with 64
 * windows (16 MiB); the row-at-a-time packer without the prefetch was no
 * faster than with it */
#define PACK_B_GROUP 8
#define PACK_B_AHEAD 0
#define WSUM_KEY_PANELS wsum_key_panels
#include "tileops/mm_loops.h"

/* C[0..rows)[0..cols) = (acc ? C : 0) + Ap x Bp over K steps (layout as in
 * mm_avx512.c). 6x16 block: 12 ymm accumulators (6 rows x 2 vectors), two
 * B vectors and one broadcast of A per row each k: 12 FMAs for 8 loads. */
static void kernel_6x16(uint32_t K, const float *restrict Ap,
                        const float *restrict Bp, float *restrict C, size_t ldc,
                        uint32_t rows, uint32_t cols, int acc, pto_pf *pf,
                        uint32_t npf, const float *nc, uint32_t nrows,
                        uint32_t ncols) {
  const __m256i m0 = lanes(cols >= 8 ? 8 : cols);
  const __m256i m1 = lanes(cols >= 16 ? 8 : cols <= 8 ? 0 : cols - 8);
#define DECL(i) __m256 c##i##a, c##i##b;
  ROWS(DECL)
#undef DECL
#define INIT(i)                                                                \
  if (acc && (i) < rows) {                                                     \
    c##i##a = _mm256_maskload_ps(C + (size_t)(i)*ldc, m0);                     \
    c##i##b = _mm256_maskload_ps(C + (size_t)(i)*ldc + 8, m1);                 \
  } else {                                                                     \
    c##i##a = _mm256_setzero_ps();                                             \
    c##i##b = _mm256_setzero_ps();                                             \
  }
  ROWS(INIT)
#undef INIT
  /* the next block's C at once, as tuned on Zen (AMD's miss queues took
   * the burst) */
  c_spread next = c_start(nc, ldc, nrows, ncols, K);
  c_rest(&next);
  K_LOOP(K, Ap, Bp, pf, npf);
  /* masked stores only for a partial block: AMD microcodes vmaskmovps
   * stores (tens of cycles each, a third of a 128-deep block's time) */
  if (cols == NR) {
#define STORE(i)                                                               \
  if ((i) < rows) {                                                            \
    _mm256_storeu_ps(C + (size_t)(i)*ldc, c##i##a);                            \
    _mm256_storeu_ps(C + (size_t)(i)*ldc + 8, c##i##b);                        \
  }
    ROWS(STORE)
#undef STORE
  } else {
#define STORE(i)                                                               \
  if ((i) < rows) {                                                            \
    _mm256_maskstore_ps(C + (size_t)(i)*ldc, m0, c##i##a);                     \
    _mm256_maskstore_ps(C + (size_t)(i)*ldc + 8, m1, c##i##b);                 \
  }
    ROWS(STORE)
#undef STORE
  }
}

/* TMATMUL_RELU_WSUM's block (mm_loops.h): the 6x16 block of A x B over K
 * as kernel_6x16 computes it, then on its way out of the registers each
 * row's ReLU (x & ~(x < 0): -0 and NaN stay, as the reference's) times its
 * weight w[i * ws], summed: rows [0, split) into sums[0..16), rows [split,
 * rows) into sums[16..32) (a block meets at most two groups). The block
 * never leaves the registers. */
static void kernel_6x16_wsum(uint32_t K, const float *restrict Ap,
                             const float *restrict Bp, const float *w,
                             size_t ws, uint32_t rows, uint32_t split,
                             float *restrict sums, pto_pf *pf, uint32_t npf) {
#define DECL(i) __m256 c##i##a = _mm256_setzero_ps(), c##i##b = c##i##a;
  ROWS(DECL)
#undef DECL
  K_LOOP(K, Ap, Bp, pf, npf);
  const __m256 z = _mm256_setzero_ps();
  __m256 s0a = z, s0b = z, s1a = z, s1b = z;
#define FOLD(i)                                                                \
  if ((i) < rows) {                                                            \
    const __m256 wi = _mm256_set1_ps(w[(size_t)(i)*ws]);                       \
    const __m256 xa =                                                          \
        _mm256_andnot_ps(_mm256_cmp_ps(c##i##a, z, _CMP_LT_OQ), c##i##a);      \
    const __m256 xb =                                                          \
        _mm256_andnot_ps(_mm256_cmp_ps(c##i##b, z, _CMP_LT_OQ), c##i##b);      \
    if ((i) < split) {                                                         \
      s0a = _mm256_add_ps(s0a, _mm256_mul_ps(wi, xa));                         \
      s0b = _mm256_add_ps(s0b, _mm256_mul_ps(wi, xb));                         \
    } else {                                                                   \
      s1a = _mm256_add_ps(s1a, _mm256_mul_ps(wi, xa));                         \
      s1b = _mm256_add_ps(s1b, _mm256_mul_ps(wi, xb));                         \
    }                                                                          \
  }
  ROWS(FOLD)
#undef FOLD
  _mm256_storeu_ps(sums, s0a);
  _mm256_storeu_ps(sums + 8, s0b);
  _mm256_storeu_ps(sums + 16, s1a);
  _mm256_storeu_ps(sums + 24, s1b);
}

#include "tileops/pack_lanes.h"

/* ---- TMATMUL_RELU_WSUM_G on packed panels of keys ----------------------
 * mm_gather.h's kernel broadcasts MR keys' values against Q^T's panels of NR
 * heads: 8 loads per 12 FMAs, and every query's Q^T (32 KiB at the indexer's 64
 * heads of 128) streams from L2 once per 6 keys. Here the keys are packed
 * instead by lanes_panel, WSK_KEYS at a time (12 KiB at K = 128, in L1 until
 * every query is done with them), and 4 heads' values broadcast from Q^T's
 * panel against 3 vectors of keys: 7 loads per 12 FMAs, and a panel of Q^T (8
 * KiB) read from L2 once per 24 keys, then from L1 for its other 3 groups of
 * heads. Each head's ReLU times its weight is added to the key's score as the
 * block leaves the registers, in the order of the heads. The next panel's key
 * rows are prefetched, a few lines per block. The last panel of a window whose
 * keys are not a multiple of 24 runs 16 keys against 4 heads, or 8 against 8.
 * Under the causal flag a query skips the panels that start past its diagonal
 * (wsg_causal fills them with -inf), and a panel no query sees ends the tile.
 * Measured on Zen 3 (7 queries of 64 heads x 16 windows of 528 keys at K = 128,
 * in turns with mm_gather.h's kernel, one thread, median of 40): 87-91 against
 * 79-87 GFLOP/s, two threads at once alike; pto-bench indexer medium, the two
 * builds in turns (6 pairs): 98-115 against 107-126 ms, 77-86% of the FMA peak
 * against 68-78%. */
#define WSK_KEYS 24   /* keys per packed panel: three vectors */
#define WSK_K_MAX 512 /* K of a panel on the stack (48 KiB) */
/* Fewest queries a panel of keys is packed for. Against mm_gather.h's
 * kernel on the same bench (512 keys a window, in turns): with one query
 * (the decode case: 16 blocks per panel) it was 0-7% faster; with two
 * 4-6% slower, with three 3-6% slower */
#define WSK_QUERIES_MIN 2

/* s[0..KV * 8) += sum over heads i < HR of w[i ws] * ReLU(sum_k A[k NR +
 * i] kp[k WSK_KEYS + ...]): HR x KV accumulators over K steps, then folded
 * head by head. */
static inline __attribute__((always_inline)) void
wsk_block(const int HR, const int KV, uint32_t K, const float *A,
          const float *restrict kp, const float *w, size_t ws,
          float *restrict s) {
  __m256 c[8][3];
  MM_UNROLL for (int i = 0; i < HR; i++) MM_UNROLL for (int v = 0; v < KV; v++)
      c[i][v] = _mm256_setzero_ps();
  _Pragma("GCC unroll 4") for (uint32_t k = 0; k < K; k++) {
    __m256 b[3];
    MM_UNROLL for (int v = 0; v < KV; v++) b[v] = _mm256_load_ps(kp + 8 * v);
    MM_UNROLL for (int i = 0; i < HR; i++) {
      const __m256 ai = _mm256_broadcast_ss(A + i);
      MM_UNROLL for (int v = 0; v < KV; v++) c[i][v] =
          _mm256_fmadd_ps(ai, b[v], c[i][v]);
    }
    A += NR;
    kp += WSK_KEYS;
  }
  __m256 t[3];
  MM_UNROLL for (int v = 0; v < KV; v++) t[v] = _mm256_load_ps(s + 8 * v);
  MM_UNROLL for (int i = 0; i < HR; i++) {
    const __m256 wi = _mm256_broadcast_ss(w + (size_t)i * ws);
    MM_UNROLL for (int v = 0; v < KV; v++) t[v] =
        _mm256_fmadd_ps(wi, MM_RELU(c[i][v]), t[v]);
  }
  MM_UNROLL for (int v = 0; v < KV; v++) _mm256_store_ps(s + 8 * v, t[v]);
}

/* wsk_block for a panel of cols keys and hr heads: up to 4 heads against 3
 * vectors of keys, 2 for 16 or fewer, up to 8 heads against one for 8 or
 * fewer (fewer heads where a query's heads, or a panel of Q^T, end). Not
 * inlined: in the caller's frame GCC spilled one of the 12 accumulators. */
static __attribute__((noinline)) void wsk_kernel(uint32_t cols, uint32_t hr,
                                                 uint32_t K, const float *A,
                                                 const float *restrict kp,
                                                 const float *w, size_t ws,
                                                 float *restrict s) {
  /* the block for h heads against kv vectors */
#define WSK_CASE(h, kv)                                                        \
  case h:                                                                      \
    wsk_block(h, kv, K, A, kp, w, ws, s);                                      \
    return;
  if (cols > 16 && hr == 4) { /* nearly every block */
    wsk_block(4, 3, K, A, kp, w, ws, s);
    return;
  }
  /* clang-format off */
  if (cols > 16)
    switch (hr) { WSK_CASE(1, 3) WSK_CASE(2, 3) WSK_CASE(3, 3) WSK_CASE(4, 3) }
  else if (cols > 8)
    switch (hr) { WSK_CASE(1, 2) WSK_CASE(2, 2) WSK_CASE(3, 2) WSK_CASE(4, 2) }
  else
    switch (hr) {
      WSK_CASE(1, 1) WSK_CASE(2, 1) WSK_CASE(3, 1) WSK_CASE(4, 1)
      WSK_CASE(5, 1) WSK_CASE(6, 1) WSK_CASE(7, 1) WSK_CASE(8, 1)
    }
    /* clang-format on */
#undef WSK_CASE
}

/* TMATMUL_RELU_WSUM_G's scores on mm_gather.h's fast path (Q^T packed in
 * NR panels, any G, an f32 or bf16 window with contiguous rows), per panel of
 * WSK_KEYS keys, per query, per group of heads (see above); 0 when K >
 * WSK_K_MAX or for fewer than WSK_QUERIES_MIN queries. The causal fill is the
 * caller's. */
static int wsum_key_panels(const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_tile *Qt = a->src[0], *W = a->src[1];
  const pto_gview *g = &a->g;
  const uint32_t K = Qt->valid_rows, R = d->valid_rows, N = d->valid_cols,
                 G = Qt->valid_cols / R;
  if (K > WSK_K_MAX || R < WSK_QUERIES_MIN)
    return 0;
  _Alignas(64) float kp[WSK_K_MAX * WSK_KEYS];
  _Alignas(64) float s[WSK_KEYS];
  const int bf = g->dtype == PTO_BF16;
  const size_t es = pto__dtype_bytes(g->dtype),
               row_step = (size_t)g->row_stride * es,
               lines = ((size_t)K * es + 63) / 64,
               b_panel = (size_t)NR * Qt->rows;
  const unsigned char *base = g->base;
  const float *Q = Qt->data, *Wd = W->data;
  const int causal = (a->flags & PTO_TF_CAUSAL) != 0;
  for (uint32_t n0 = 0; n0 < N; n0 += WSK_KEYS) {
    /* causal: the first query that sees key n0 (n0 <= q + s); none, and
     * none sees the panels after it either */
    const double first = causal ? ceil((double)n0 - a->s) : 0.0;
    const uint32_t q0 = first > 0 ? (first < R ? (uint32_t)first : R) : 0;
    if (q0 == R)
      break;
    const uint32_t cols = N - n0 < WSK_KEYS ? N - n0 : WSK_KEYS, n1 = n0 + cols,
                   next = N - n1 < WSK_KEYS ? N - n1 : WSK_KEYS,
                   hr = cols > 8 ? 4 : 8; /* heads per block, at most */
    lanes_panel(kp, base + (size_t)n0 * row_step, (int64_t)row_step, bf, K,
                cols, WSK_KEYS, NULL, 0);
    /* the next panel's lines, spread over this panel's blocks */
    const size_t npf = (size_t)next * lines,
                 blocks = (size_t)(R - q0) * ((G + hr - 1) / hr),
                 per = (npf + blocks - 1) / blocks;
    size_t pfi = 0;
    for (uint32_t q = q0; q < R; q++) {
      memset(s, 0, sizeof s);
      /* blocks of hr heads, shorter where the query's heads or a panel of
       * Q^T end (G not a multiple of 4 or of NR) */
      for (uint32_t m0 = q * G, h; m0 < (q + 1) * G; m0 += h) {
        h = hr;
        if (h > (q + 1) * G - m0)
          h = (q + 1) * G - m0;
        if (h > NR - m0 % NR)
          h = NR - m0 % NR;
        for (size_t t = 0; t < per && pfi < npf; t++, pfi++)
          _mm_prefetch((const char *)base +
                           (size_t)(n1 + pfi / lines) * row_step +
                           64 * (pfi % lines),
                       _MM_HINT_T0);
        const float *A = Q + (size_t)(m0 / NR) * b_panel + m0 % NR,
                    *w = Wd + (size_t)m0 * W->stride;
        wsk_kernel(cols, h, K, A, kp, w, W->stride, s);
      }
      memcpy((float *)d->data + (size_t)q * d->stride + n0, s,
             cols * sizeof(float));
    }
  }
  return 1;
}

void pto__mm_avx2(pto_isa_table *t) {
  mm_install(t);
}
