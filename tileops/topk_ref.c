/* The scalar reference of the top-k instructions TTOPK and TMRGTOPK
 * (core/isa.def), part of pto__isa_scalar (tileops/ref.c installs them).
 * Written to be obviously right, not fast: TTOPK keeps the best entries
 * seen so far sorted in the destination and inserts each better one at its
 * place (no buffer; O(kk) per insertion), TMRGTOPK takes the best head of
 * its runs slot by slot. Compiled with -ffp-contract=off like the rest of
 * the reference. */
#include <math.h>
#include <stdint.h>

#include "tileops/tileops.h"

static float ldf(const pto_tile *t, uint32_t r, uint32_t c) {
  return ((const float *)t->data)[(size_t)r * t->stride + c];
}
static int32_t ldi(const pto_tile *t, uint32_t r, uint32_t c) {
  return ((const int32_t *)t->data)[(size_t)r * t->stride + c];
}
static void stf(pto_tile *t, uint32_t r, uint32_t c, float v) {
  ((float *)t->data)[(size_t)r * t->stride + c] = v;
}
static void sti(pto_tile *t, uint32_t r, uint32_t c, int32_t v) {
  ((int32_t *)t->data)[(size_t)r * t->stride + c] = v;
}

/* In the masked mode (imm[1] == 1) a -inf entry is excluded. */
static int excluded(const pto_targs *a, float v) {
  return a->imm[1] == 1 && v == -INFINITY;
}

/* Row r of dst0/dst1 holds the best n entries seen so far, in order: each
 * entry of the row that ranks before the last of them (or any, while fewer
 * than kk are held) is inserted at its place, the last one falling off. */
int pto__ref_ttopk(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *s = a->src[0];
  pto_tile *dv = a->dst[0], *di = a->dst[1];
  const uint32_t kk = dv->valid_cols;
  for (uint32_t r = 0; r < dv->valid_rows; r++) {
    uint32_t n = 0;
    for (uint32_t c = 0; c < s->valid_cols; c++) {
      const float v = ldf(s, r, c);
      const int32_t i = (int32_t)((int64_t)a->imm[0] + c);
      if (excluded(a, v) || (n == kk && !pto__sorts_before(v, i, ldf(dv, r, n - 1),
                                                      ldi(di, r, n - 1))))
        continue;
      uint32_t j = n < kk ? n++ : kk - 1; /* shift the worse ones up */
      for (; j > 0 && pto__sorts_before(v, i, ldf(dv, r, j - 1), ldi(di, r, j - 1));
           j--) {
        stf(dv, r, j, ldf(dv, r, j - 1));
        sti(di, r, j, ldi(di, r, j - 1));
      }
      stf(dv, r, j, v);
      sti(di, r, j, i);
    }
    for (; n < kk; n++) { /* masked mode: no entry left */
      stf(dv, r, n, -INFINITY);
      sti(di, r, n, -1);
    }
  }
  return PTO_OK;
}

/* The index of run k's entry at column c: src1's, plus k times the offset
 * per run (i32, wrapping). */
static int32_t run_index(const pto_tile *si, uint32_t r, uint32_t c, uint32_t k,
                         uint32_t off) {
  return (int32_t)((uint32_t)ldi(si, r, c) + k * off);
}

int pto__ref_tmrgtopk(int op, const pto_targs *a) {
  (void)op;
  const pto_tile *sv = a->src[0], *si = a->src[1];
  pto_tile *dv = a->dst[0], *di = a->dst[1];
  const uint64_t run = (uint64_t)a->imm[0], vc = sv->valid_cols;
  const uint32_t off = (uint32_t)a->s;
  for (uint32_t r = 0; r < dv->valid_rows; r++) {
    uint64_t head[4], end[4]; /* run k is [head[k], end[k]) */
    for (uint64_t k = 0; k < 4; k++) {
      head[k] = k * run < vc ? k * run : vc;
      end[k] = (k + 1) * run < vc ? (k + 1) * run : vc;
    }
    for (uint32_t j = 0; j < dv->valid_cols; j++) {
      int best = -1; /* the best head; on a tie the earlier run */
      for (int k = 0; k < 4; k++) {
        while (head[k] < end[k] && excluded(a, ldf(sv, r, (uint32_t)head[k])))
          head[k]++;
        if (head[k] == end[k])
          continue;
        const uint32_t c = (uint32_t)head[k];
        if (best >= 0) {
          const uint32_t b = (uint32_t)head[best];
          if (!pto__sorts_before(
                  ldf(sv, r, c), run_index(si, r, c, (uint32_t)k, off),
                  ldf(sv, r, b), run_index(si, r, b, (uint32_t)best, off)))
            continue;
        }
        best = k;
      }
      if (best < 0) { /* masked mode: every run is used up */
        stf(dv, r, j, -INFINITY);
        sti(di, r, j, -1);
        continue;
      }
      stf(dv, r, j, ldf(sv, r, (uint32_t)head[best]));
      sti(di, r, j,
          run_index(si, r, (uint32_t)head[best], (uint32_t)best, off));
      head[best]++;
    }
  }
  return PTO_OK;
}
