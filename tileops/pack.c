/* Packing matmul operands at TLOAD time (PTO_TF_PACK_A / PTO_TF_PACK_B,
 * layout: core/isa.def), shared by the SIMD tables: one panel at a time,
 * along whichever axis of the global view is contiguous. The scalar
 * reference (tileops/ref.c) packs element by element; this is the same
 * layout, fast for f32 and bf16 globals into f32 tiles and through the
 * reference for every other pair. Compiled without ISA flags: the 4x4
 * transposes are baseline SSE. */
#include <stdint.h>
#include <string.h>

#include "tileops/tileops.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define PREFETCH_ROWS 4 /* source rows fetched ahead when copying panels */

/* Source element types the fast paths read. */
typedef enum src_kind { SRC_F32, SRC_BF16 } src_kind;

static inline float src_at(const void *s, src_kind kind, int64_t i) {
  if (kind == SRC_F32)
    return ((const float *)s)[i];
  uint32_t u = (uint32_t)((const uint16_t *)s)[i] << 16; /* exact */
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#if defined(__SSE2__)
/* Four consecutive source elements from element i as f32 (bf16 exactly). */
static inline __m128 src_load4(const void *s, src_kind kind, int64_t i) {
  if (kind == SRC_F32)
    return _mm_loadu_ps((const float *)s + i);
  const __m128i h =
      _mm_loadl_epi64((const __m128i *)(const void *)((const uint16_t *)s + i));
  return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
}

#endif

void pto__widen_bf16(float *restrict d, const void *restrict s, uint32_t n) {
  uint32_t i = 0;
#if defined(__SSE2__)
  const __m128i z = _mm_setzero_si128();
  for (; i + 8 <= n; i += 8) { /* 8 at a time */
    const __m128i h = _mm_loadu_si128(
        (const __m128i *)(const void *)((const uint16_t *)s + i));
    _mm_storeu_ps(d + i, _mm_castsi128_ps(_mm_unpacklo_epi16(z, h)));
    _mm_storeu_ps(d + i + 4, _mm_castsi128_ps(_mm_unpackhi_epi16(z, h)));
  }
#endif
  for (; i < n; i++)
    d[i] = src_at(s, SRC_BF16, i);
}

/* Lanes contiguous in the source: source row k (lanes 0..P-1, the whole
 * width of the window) goes to row k of every panel, so the source is read
 * in order and each panel row written whole: d_p[k * w + i] =
 * s[k * ks + p * w + i], zeros past P in the last panel. */
static void copy_panels(float *restrict d, size_t panel, const void *restrict s,
                        src_kind kind, int64_t ks, uint32_t K, uint32_t P,
                        uint32_t w) {
  const size_t es = kind == SRC_F32 ? 4 : 2;
  for (uint32_t k = 0; k < K; k++) {
#if defined(__SSE2__)
    /* rows are pages apart: fetch a few rows ahead, line by line */
    if (k + PREFETCH_ROWS < K) {
      const char *ahead = (const char *)s + (k + PREFETCH_ROWS) * ks * (int64_t)es;
      for (size_t b = 0; b < P * es; b += 64)
        _mm_prefetch(ahead + b, _MM_HINT_T0);
    }
#endif
    for (uint32_t p0 = 0; p0 < P; p0 += w) {
      float *dk = d + (size_t)(p0 / w) * panel + (size_t)k * w;
      const uint32_t n = P - p0 < w ? P - p0 : w;
      uint32_t i = 0;
      if (kind == SRC_F32) { /* not memcpy: a call per 100-odd bytes */
        const float *sk = (const float *)s + k * ks + p0;
#if defined(__SSE2__)
        for (; i + 4 <= n; i += 4)
          _mm_storeu_ps(dk + i, _mm_loadu_ps(sk + i));
#endif
        for (; i < n; i++)
          dk[i] = sk[i];
      } else {
        pto__widen_bf16(dk, (const uint16_t *)s + k * ks + p0, n);
        i = n;
      }
      for (; i < w; i++)
        dk[i] = 0.0f;
    }
  }
}

/* A panel whose lanes are source rows contiguous along k: for k < K,
 * d[k * w + i] = s[i * is + k] for i < n, and 0 for n <= i < w. Four k at
 * a time over every lane, so the panel is written in order, whole lines
 * (k outside, lanes inside: with the lanes outside, each group of four
 * lanes wrote 16 bytes into every line of a panel larger than L1, and all
 * of them came back from L2 for the next group: attention's Q^T, 576 x
 * 128, took 31 us against 14.5 from L2, 40 against 23-28 from L3, on a
 * Xeon, best of 200); f32 through 4x4 transposes, the
 * source rows' lines used over four steps, each row prefetched a few lines
 * ahead every 16 k. */
static void transpose_panel(float *restrict d, const void *restrict s,
                            src_kind kind, int64_t is, uint32_t K,
                            uint32_t n, uint32_t w) {
  uint32_t k = 0;
#if defined(__SSE2__)
  const size_t es = kind == SRC_F32 ? 4 : 2;
  for (; k + 4 <= K; k += 4) {
    if ((k & 15) == 0) /* 64 elements ahead in each row */
      for (uint32_t i = 0; i < n; i++)
        _mm_prefetch((const char *)s + (i * is + k + 64) * (int64_t)es,
                     _MM_HINT_T0);
    float *dk = d + (size_t)k * w;
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
      const int64_t r = i * is + k; /* element offset of the 4 rows */
      __m128 r0 = src_load4(s, kind, r), r1 = src_load4(s, kind, r + is),
             r2 = src_load4(s, kind, r + 2 * is),
             r3 = src_load4(s, kind, r + 3 * is);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(dk + i, r0);
      _mm_storeu_ps(dk + w + i, r1);
      _mm_storeu_ps(dk + 2 * w + i, r2);
      _mm_storeu_ps(dk + 3 * w + i, r3);
    }
    for (; i < w; i++)
      for (uint32_t j = 0; j < 4; j++)
        dk[j * w + i] = i < n ? src_at(s, kind, i * is + k + j) : 0.0f;
  }
#endif
  for (; k < K; k++)
    for (uint32_t i = 0; i < w; i++)
      d[(size_t)k * w + i] = i < n ? src_at(s, kind, i * is + k) : 0.0f;
}

/* Neither axis contiguous: element by element. */
static void strided_panel(float *restrict d, const void *restrict s,
                          src_kind kind, int64_t is, int64_t ks, uint32_t K,
                          uint32_t n, uint32_t w) {
  for (uint32_t k = 0; k < K; k++)
    for (uint32_t i = 0; i < w; i++)
      d[(size_t)k * w + i] = i < n ? src_at(s, kind, i * is + k * ks) : 0.0f;
}

/* ---- bf16 tiles: k in pairs (a native bf16 engine's operands) --------- */

/* One 32-bit unit of a pair-packed panel: bf16 elements lo (the even k)
 * and hi (the odd k), lo at the lower address. */
static inline uint32_t pair_of(uint16_t lo, uint16_t hi) {
  return (uint32_t)lo | (uint32_t)hi << 16;
}

/* Lanes contiguous in the source (ps == 1): for each pair of source rows
 * 2p, 2p + 1 (ks apart), unit (p, i) of every panel interleaves their
 * elements i; an odd K's last pair ends in a zero, lanes past P are zero.
 * d holds the tile's units, panel units apart. */
static void interleave_panels(uint32_t *restrict d, size_t panel,
                              const uint16_t *restrict s, int64_t ks,
                              uint32_t K, uint32_t P, uint32_t w) {
  for (uint32_t k = 0; k < K; k += 2) {
    const uint16_t *r0 = s + k * ks, *r1 = k + 1 < K ? r0 + ks : NULL;
    for (uint32_t p0 = 0; p0 < P; p0 += w) {
      uint32_t *dk = d + (size_t)(p0 / w) * panel + (size_t)(k / 2) * w;
      const uint32_t n = P - p0 < w ? P - p0 : w;
      uint32_t i = 0;
#if defined(__SSE2__)
      for (; r1 && i + 8 <= n; i += 8) {
        const __m128i x = _mm_loadu_si128((const void *)(r0 + p0 + i)),
                      y = _mm_loadu_si128((const void *)(r1 + p0 + i));
        _mm_storeu_si128((void *)(dk + i), _mm_unpacklo_epi16(x, y));
        _mm_storeu_si128((void *)(dk + i + 4), _mm_unpackhi_epi16(x, y));
      }
#endif
      for (; i < n; i++)
        dk[i] = pair_of(r0[p0 + i], r1 ? r1[p0 + i] : 0);
      for (; i < w; i++)
        dk[i] = 0;
    }
  }
}

/* TLOAD of a bf16 global into a bf16 tile packed in k pairs (layout:
 * core/isa.def): lanes contiguous along k with an even lane stride from a
 * 4-byte aligned base, whose pairs are the source's own 32-bit units,
 * through transpose_panel's bit copies; lanes contiguous, by interleaving
 * row pairs; any other view by the reference. */
static int pack_pairs(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_gview *g = &a->g;
  const int pack_a = (a->flags & PTO_TF_PACK_A) != 0;
  const uint32_t w = (uint32_t)a->imm[0];
  const uint32_t P = pack_a ? d->valid_rows : d->valid_cols;
  const uint32_t K = pack_a ? d->valid_cols : d->valid_rows;
  const int64_t ps = pack_a ? g->row_stride : g->col_stride;
  const int64_t ks = pack_a ? g->col_stride : g->row_stride;
  /* a panel in units: w lanes by (stride or rows) / 2 pairs; panels
   * that do not start on a whole unit by the reference */
  const size_t panel_elems = (size_t)w * (pack_a ? d->stride : d->rows);
  if (panel_elems % 2 || (uintptr_t)d->data % 4)
    return pto__isa_ref(op, a);
  const size_t panel = panel_elems / 2;
  uint32_t *units = d->data;
  if (ps == 1) {
    interleave_panels(units, panel, g->base, ks, K, P, w);
    return PTO_OK;
  }
  if (ks != 1 || ps % 2 || (uintptr_t)g->base % 4)
    return pto__isa_ref(op, a);
  const uint16_t *s = g->base;
  for (uint32_t p0 = 0; p0 < P; p0 += w) {
    const uint32_t n = P - p0 < w ? P - p0 : w;
    uint32_t *dp = units + (size_t)(p0 / w) * panel;
    /* whole pairs as f32 bit patterns: moved, never computed on */
    transpose_panel((float *)dp, s + p0 * ps, SRC_F32, ps / 2, K / 2, n, w);
    if (K % 2) /* the last pair: the odd k and a zero */
      for (uint32_t i = 0; i < w; i++)
        dp[(size_t)(K / 2) * w + i] =
            i < n ? pair_of(s[(p0 + i) * ps + K - 1], 0) : 0;
  }
  return PTO_OK;
}

int pto__tload_pack(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_gview *g = &a->g;
  if (d->dtype == PTO_BF16 && g->dtype == PTO_BF16)
    return pack_pairs(op, a);
  if (d->dtype != PTO_F32 || (g->dtype != PTO_F32 && g->dtype != PTO_BF16))
    return pto__isa_ref(op, a);
  src_kind kind = g->dtype == PTO_F32 ? SRC_F32 : SRC_BF16;
  size_t es = pto__dtype_bytes(g->dtype);
  int pack_a = (a->flags & PTO_TF_PACK_A) != 0;
  uint32_t w = (uint32_t)a->imm[0];
  /* the panel axis (A: rows, B: cols) and the k axis, in the source */
  uint32_t P = pack_a ? d->valid_rows : d->valid_cols;
  uint32_t K = pack_a ? d->valid_cols : d->valid_rows;
  int64_t ps = pack_a ? g->row_stride : g->col_stride;
  int64_t ks = pack_a ? g->col_stride : g->row_stride;
  size_t panel = (size_t)w * (pack_a ? d->stride : d->rows);
  float *data = d->data;
  if (ps == 1) {
    copy_panels(data, panel, g->base, kind, ks, K, P, w);
    return PTO_OK;
  }
  for (uint32_t p0 = 0; p0 < P; p0 += w) {
    uint32_t n = P - p0 < w ? P - p0 : w;
    float *dp = data + (size_t)(p0 / w) * panel;
    const void *sp = (const unsigned char *)g->base + p0 * ps * (int64_t)es;
    if (ks == 1)
      transpose_panel(dp, sp, kind, ps, K, n, w);
    else
      strided_panel(dp, sp, kind, ps, ks, K, n, w);
  }
  return PTO_OK;
}

int pto__tstore_f32(int op, const pto_targs *a) {
  const pto_tile *s = a->src[0];
  const pto_gview *g = &a->g;
  if (s->dtype != PTO_F32 || g->dtype != PTO_F32 ||
      !pto__gview_rows_whole(g, s->valid_cols))
    return pto__isa_ref(op, a);
  const int acc = (a->flags & PTO_TF_ACC) != 0;
  const uint32_t rows = s->valid_rows, cols = s->valid_cols;
  for (uint32_t r = 0; r < rows; r++) {
    const float *restrict src = (const float *)s->data + (size_t)r * s->stride;
    float *restrict dst = (float *)g->base + r * g->row_stride;
    if (acc)
      for (uint32_t c = 0; c < cols; c++)
        dst[c] += src[c]; /* the reference's f32 sum, bit for bit */
    else
      for (uint32_t c = 0; c < cols; c++)
        dst[c] = src[c];
  }
  return PTO_OK;
}
