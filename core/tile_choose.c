/* Tile shapes the compiler chooses for ops whose tile nobody set: the cube
 * tile of a matmul from the machine's L0A/L0B/L0C, the micro-kernel's
 * panel widths and the workers that will run it. */
#include "core/tile_choose.h"

#define F32 4u           /* bytes per element (bf16 operands take less) */
#define K_SLICE_MAX 256u /* k per slice: a 32-wide B panel of it fills L1 */
#define ROW_ALIGN 16u    /* f32 elements per 64-byte tile row alignment */
/* Work below which a matmul is not worth another task: about 40 us of one
 * core's FMAs, against a few us of dispatch and packing per task. */
#define MIN_TASK_FLOPS (4.0 * 1024 * 1024)

static uint64_t min_u64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}

static uint64_t div_up(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

static uint64_t round_up(uint64_t a, uint64_t w) {
  return div_up(a, w) * w;
}

/* The tile of extent n split into `count` balanced tiles, in whole panels
 * of w (clamped to n, as the tiler clamps it). */
static uint64_t balanced(int64_t n, uint64_t count, uint32_t w) {
  return min_u64(round_up(div_up((uint64_t)n, count), w), (uint64_t)n);
}

pto_status pto__matmul_tile(const pto_machine *mach, int64_t batch, int64_t M,
                            int64_t N, int64_t K, uint32_t workers, uint32_t mr,
                            uint32_t nr, pto_tile_shape *tile) {
  if (!mach || !tile || batch < 1 || M < 1 || N < 1 || K < 1 || workers < 1 ||
      mr < 1 || nr < 1)
    return PTO_EINVAL;
  const uint64_t l0a = mach->mem[PTO_MEM_L0A] / F32,
                 l0b = mach->mem[PTO_MEM_L0B] / F32,
                 l0c = mach->mem[PTO_MEM_L0C] / F32;
  /* tasks the work is worth: a small matmul stays one tile (where one
   * fits: the second pass drops the limit) */
  const double flops = 2.0 * (double)batch * (double)M * (double)N * (double)K;
  const double worth = flops / MIN_TASK_FLOPS < 1 ? 1 : flops / MIN_TASK_FLOPS;
  uint64_t best_m = 0, best_n = 0, best_k = 0;
  double best = 0;
  for (int pass = 0; pass < 2 && !best_m; pass++)
    /* every balanced split of M by every balanced split of N whose
     * accumulator fits L0C (a wide n may leave room for too little k) */
    for (uint64_t cm = 1; cm <= div_up((uint64_t)M, mr); cm++) {
      uint64_t m = balanced(M, cm, mr);
      if (cm > 1 && m == balanced(M, cm - 1, mr))
        continue;
      for (uint64_t cn = 1; cn <= div_up((uint64_t)N, nr); cn++) {
        uint64_t n = balanced(N, cn, nr);
        if (cn > 1 && n == balanced(N, cn - 1, nr))
          continue;
        /* tile rows are padded to ROW_ALIGN elements (pto_tile_stride) */
        if (m * round_up(n, ROW_ALIGN) > l0c ||
            round_up(round_up(n, nr), ROW_ALIGN) * ROW_ALIGN > l0b)
          continue;
        /* packed operands: A pads to whole row panels, B to whole col
         * panels; k is a multiple of ROW_ALIGN (A's rows) unless all of K
         * fits */
        uint64_t k_max = min_u64(l0a / round_up(m, mr) / ROW_ALIGN * ROW_ALIGN,
                                 l0b / round_up(round_up(n, nr), ROW_ALIGN));
        k_max = min_u64(k_max, K_SLICE_MAX) / ROW_ALIGN * ROW_ALIGN;
        if (k_max < ROW_ALIGN)
          continue;
        uint64_t slices = div_up((uint64_t)K, k_max);
        uint64_t k = div_up((uint64_t)K, slices);
        if (slices > 1)
          k = round_up(k, ROW_ALIGN); /* <= k_max, a multiple of it */
        uint64_t count =
            (uint64_t)batch * div_up((uint64_t)M, m) * div_up((uint64_t)N, n);
        if (!pass && count > 1 && (double)count > worth)
          continue;
        /* reuse (flops per element packed) x useful fraction of the padded
         * work x the cost of a slice beyond its FMAs (C in and out of the
         * registers and through the caches, the kernel's set-up: measured
         * on 128 x 8192 x 576, 128 x 1024 x 128 tiles run 7% slower than
         * 128 x 512 x 192 ones, which pack 10% more) x a penalty below 2
         * tiles per worker x the workers busy in the last round */
        double score = (double)m * (double)n / (double)(m + n);
        score *= (double)M * (double)N /
                 ((double)div_up((uint64_t)M, m) * (double)round_up(m, mr) *
                  (double)div_up((uint64_t)N, n) * (double)round_up(n, nr));
        score *= (double)k / (double)(k + 4 * ROW_ALIGN);
        if (count < 2ull * workers)
          score *= (double)count / (double)(2ull * workers);
        /* the last round of tasks leaves workers idle unless count is a
         * multiple of them (9 tiles of 2048^2 on two: one idles a ninth) */
        score *= (double)count / (double)round_up(count, workers);
        if (score > best) {
          best = score;
          best_m = m;
          best_n = n;
          best_k = k;
        }
      }
    }
  if (!best_m)
    return PTO_ECAPACITY;
  tile->vec_rows = tile->vec_cols = 0;
  tile->cube_m = (uint32_t)best_m;
  tile->cube_n = (uint32_t)best_n;
  tile->cube_k = (uint32_t)best_k;
  return PTO_OK;
}
