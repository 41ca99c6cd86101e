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

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

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

/* A panel whose n lanes are contiguous in the source: for k < K,
 * d[k * w + i] = s[k * ks + i] for i < n, and 0 for n <= i < w. */
static void copy_panel(float *restrict d, const void *restrict s,
                       src_kind kind, int64_t ks, uint32_t K, uint32_t n,
                       uint32_t w) {
  for (uint32_t k = 0; k < K; k++) {
    float *dk = d + (size_t)k * w;
    if (kind == SRC_F32) {
      memcpy(dk, (const float *)s + k * ks, (size_t)n * sizeof(float));
    } else {
      for (uint32_t i = 0; i < n; i++)
        dk[i] = src_at(s, kind, k * ks + i);
    }
    for (uint32_t i = n; i < w; i++)
      dk[i] = 0.0f;
  }
}

/* A panel whose lanes are source rows contiguous along k: for k < K,
 * d[k * w + i] = s[i * is + k] for i < n, and 0 for n <= i < w. f32 goes
 * through 4x4 transposes: 4 lanes x 4 k per step, k outermost so each
 * step writes whole panel rows. */
static void transpose_panel(float *restrict d, const void *restrict s,
                            src_kind kind, int64_t is, uint32_t K,
                            uint32_t n, uint32_t w) {
  uint32_t k = 0;
#if defined(__SSE__)
  if (kind == SRC_F32) {
    const float *f = s;
    for (; k + 4 <= K; k += 4) {
      float *dk = d + (size_t)k * w;
      uint32_t i = 0;
      for (; i + 4 <= n; i += 4) {
        const float *r = f + i * is + k;
        __m128 r0 = _mm_loadu_ps(r), r1 = _mm_loadu_ps(r + is),
               r2 = _mm_loadu_ps(r + 2 * is), r3 = _mm_loadu_ps(r + 3 * is);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(dk + i, r0);
        _mm_storeu_ps(dk + w + i, r1);
        _mm_storeu_ps(dk + 2 * w + i, r2);
        _mm_storeu_ps(dk + 3 * w + i, r3);
      }
      for (; i < n; i++)
        for (uint32_t j = 0; j < 4; j++)
          dk[j * w + i] = f[i * is + k + j];
      for (; i < w; i++)
        for (uint32_t j = 0; j < 4; j++)
          dk[j * w + i] = 0.0f;
    }
  }
#endif
  for (; k < K; k++) {
    float *dk = d + (size_t)k * w;
    for (uint32_t i = 0; i < n; i++)
      dk[i] = src_at(s, kind, i * is + k);
    for (uint32_t i = n; i < w; i++)
      dk[i] = 0.0f;
  }
}

/* Neither axis contiguous: element by element. */
static void strided_panel(float *restrict d, const void *restrict s,
                          src_kind kind, int64_t is, int64_t ks, uint32_t K,
                          uint32_t n, uint32_t w) {
  for (uint32_t k = 0; k < K; k++)
    for (uint32_t i = 0; i < w; i++)
      d[(size_t)k * w + i] = i < n ? src_at(s, kind, i * is + k * ks) : 0.0f;
}

int pto__tload_pack(int op, const pto_targs *a) {
  pto_tile *d = a->dst[0];
  const pto_gview *g = &a->g;
  if (d->dtype != PTO_F32 || (g->dtype != PTO_F32 && g->dtype != PTO_BF16))
    return pto__isa_scalar.fn[PTO_OP_TLOAD](op, a);
  src_kind kind = g->dtype == PTO_F32 ? SRC_F32 : SRC_BF16;
  size_t es = pto_dtype_size(g->dtype);
  int pack_a = (a->flags & PTO_TF_PACK_A) != 0;
  uint32_t w = (uint32_t)a->imm[0];
  /* the panel axis (A: rows, B: cols) and the k axis, in the source */
  uint32_t P = pack_a ? d->valid_rows : d->valid_cols;
  uint32_t K = pack_a ? d->valid_cols : d->valid_rows;
  int64_t ps = pack_a ? g->row_stride : g->col_stride;
  int64_t ks = pack_a ? g->col_stride : g->row_stride;
  size_t panel = (size_t)w * (pack_a ? d->stride : d->rows);
  float *data = d->data;
  for (uint32_t p0 = 0; p0 < P; p0 += w) {
    uint32_t n = P - p0 < w ? P - p0 : w;
    float *dp = data + (size_t)(p0 / w) * panel;
    const void *sp = (const unsigned char *)g->base + p0 * ps * (int64_t)es;
    if (ps == 1)
      copy_panel(dp, sp, kind, ks, K, n, w);
    else if (ks == 1)
      transpose_panel(dp, sp, kind, ps, K, n, w);
    else
      strided_panel(dp, sp, kind, ps, ks, K, n, w);
  }
  return PTO_OK;
}
