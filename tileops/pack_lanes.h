/* tileops/pack_lanes.h (internal): TLOAD packing an f32 (or bf16) window
 * into matmul panels whose lanes are the window's rows contiguous along k,
 * through 8 x 8 transposes of ymm registers. Included by tileops/mm_avx2.c
 * and tileops/mm_avx512.h (both compiled with AVX2 at least), after
 * tileops/mm_loops.h and their MR and NR: it defines pack_lanes, their
 * PACK_LANES. */
#ifndef PTO_TILEOPS_PACK_LANES_H
#define PTO_TILEOPS_PACK_LANES_H

#include <immintrin.h>
#include <stdint.h>

#include "tileops/tileops.h"

/* r[0..7] transposed in place: r[j][i] = the old r[i][j]. */
static inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; i++) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int j = 0; j < 4; j++) {
    r[j] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x20);
    r[j + 4] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x31);
  }
}

/* Eight values k..k+7 of a row at p, f32 or bf16 (bf; widened exactly). */
static inline __m256 row8(const unsigned char *p, uint32_t k, int bf) {
  if (!bf)
    return _mm256_loadu_ps((const float *)(const void *)p + k);
  const __m128i h =
      _mm_loadu_si128((const __m128i *)(const void *)(p + 2 * (size_t)k));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* A panel of w lanes that are source rows contiguous along k, row i at s + i is
 * (bytes), f32 or bf16 (bf; widened exactly): d[k * w + i] = row i's value k
 * for k < K, i < n, and 0 for n <= i < w (pto__tload_pack's layout), 8 lanes
 * and 8 k at a time through an 8 x 8 transpose; nothing of a row past its K
 * values is read. Past 8 lanes, a last group of w % 8 (avx512's A panels
 * of 12 rows) is stored with masks. With w < 8 (A's 6 rows) each k's w
 * values are stored as a vector of 8 whose last 8 - w the next k
 * overwrites; the panel's last k stores exactly w. Against the shared packer's
 * 4 x 4 transposes, on Zen 3: an A panel's rows 4 and 5 were left to scalar
 * code there (342 x 256 of a 1024-wide A, best of 200: 16-18 us against 46-48;
 * GEMM 1024 and 2048 on 1 and 2 threads, PTO / OpenBLAS in turns with and
 * without: 0.997 against 0.969 on average over 20 pairs); B's panels of 16 from
 * a transposed view (attention's Q^T, 576 x 128, and the indexer's, 128 x 448),
 * in turns, median of 1000 with the sources in L2 or L3: 9.5-13.3 against 18-24
 * us. A 6-row-only version of this packer was 2-5% faster on A's panels than
 * this one; one packer for both kept. With nx, the nn rows of the next panel
 * (at nx, is apart) are fetched a line per row every 64 bytes of k, so they
 * arrive while this panel is transposed: their rows are pages apart and too
 * short for the hardware prefetcher. On Zen 3, in turns with the packer without
 * it (median of 1000, the sources cycling through 64 windows, L3 or DRAM):
 * GEMM's A windows 342 x 256 and 414 x 256 40-41 against 50-51 us, the
 * indexer's Q^T 448 x 128 19 against 32, attention's 128 x 576 19 against 23;
 * from L2, alike but for the last (11 against 9). In traced runs of the indexer
 * medium, TLOAD 1.8-2.2 against 2.7-2.9 ms of worker time */
#define LANES_MAX 32 /* the widest panel packed here (avx512's B panels) */
static inline __attribute__((always_inline)) void
lanes_panel(float *restrict d, const unsigned char *s, int64_t is, int bf,
            uint32_t K, uint32_t n, uint32_t w, const unsigned char *nx,
            uint32_t nn) {
  const __m256 z = _mm256_setzero_ps();
  const size_t es = bf ? 2 : sizeof(float);
  const unsigned char *src[LANES_MAX];
  for (uint32_t i = 0; i < w; i++)
    src[i] = s + (int64_t)(i < n ? i : 0) * is;
  uint32_t k = 0;
  for (; k + 8 <= K; k += 8) {
    float *dk = d + (size_t)k * w;
    if (nx && (k * es) % 64 == 0)
      for (uint32_t i = 0; i < nn; i++)
        _mm_prefetch((const char *)nx + i * is + k * es, _MM_HINT_T0);
    for (uint32_t l0 = 0; l0 < w; l0 += 8) {
      __m256 r[8];
      for (uint32_t i = 0; i < 8; i++)
        r[i] = l0 + i < w && l0 + i < n ? row8(src[l0 + i], k, bf) : z;
      transpose8(r);
      if (w >= l0 + 8) {
        for (uint32_t j = 0; j < 8; j++)
          _mm256_storeu_ps(dk + j * w + l0, r[j]);
        continue;
      }
      if (w > 8) { /* the last w % 8 lanes of a wide panel, exactly */
        const __m256i m =
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(w - l0)),
                               _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        for (uint32_t j = 0; j < 8; j++)
          _mm256_maskstore_ps(dk + j * w + l0, m, r[j]);
        continue;
      }
      for (uint32_t j = 0; j < 7; j++)
        _mm256_storeu_ps(dk + j * w, r[j]);
      if (k + 8 < K) {
        _mm256_storeu_ps(dk + 7 * w, r[7]);
      } else { /* the panel's last k: nothing past its w values */
        _Alignas(32) float last[8];
        _mm256_store_ps(last, r[7]);
        for (uint32_t i = 0; i < w; i++)
          dk[7 * w + i] = last[i];
      }
    }
  }
  for (; k < K; k++)
    for (uint32_t i = 0; i < w; i++)
      d[(size_t)k * w + i] =
          i < n ? pto__to_f32(bf ? PTO_BF16 : PTO_F32, src[i] + k * es) : 0.0f;
}

/* TLOAD packing an f32 window in panels whose lanes are its rows
 * contiguous along k (A's rows from a row-major window, B's columns from
 * a transposed view: a matmul by k^T), up to LANES_MAX lanes:
 * lanes_panel per panel. 0 for any other window or width (the shared
 * packer's). */
static int pack_lanes(const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_gview *g = &a->g;
  const int pa = (a->flags & PTO_TF_PACK_A) != 0;
  const uint32_t w = (uint32_t)a->imm[0];
  if (!(a->flags & (PTO_TF_PACK_A | PTO_TF_PACK_B)) || d->dtype != PTO_F32 ||
      g->dtype != PTO_F32 || (pa ? g->col_stride : g->row_stride) != 1 ||
      w < 1 || w > LANES_MAX)
    return 0;
  const uint32_t P = pa ? d->valid_rows : d->valid_cols,
                 K = pa ? d->valid_cols : d->valid_rows;
  const int64_t is = pa ? g->row_stride : g->col_stride;
  const size_t panel = (size_t)w * (pa ? d->stride : d->rows);
  for (uint32_t p0 = 0; p0 < P; p0 += w) {
    float *dp = (float *)d->data + (size_t)(p0 / w) * panel;
    const unsigned char *sp =
        (const unsigned char *)g->base + p0 * is * (int64_t)sizeof(float);
    const int64_t ib = is * (int64_t)sizeof(float);
    const uint32_t n = P - p0 < w ? P - p0 : w,
                   nn = P - p0 - n < w ? P - p0 - n : w;
    const unsigned char *nx = nn ? sp + w * ib : NULL;
    if (w == MR) /* the micro-kernel's widths as constants */
      lanes_panel(dp, sp, ib, 0, K, n, MR, nx, nn);
    else if (w == NR)
      lanes_panel(dp, sp, ib, 0, K, n, NR, nx, nn);
    else
      lanes_panel(dp, sp, ib, 0, K, n, w, nx, nn);
  }
  return 1;
}

#endif /* PTO_TILEOPS_PACK_LANES_H */
