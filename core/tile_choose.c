/* Tile shapes the compiler chooses for ops whose tile nobody set: the cube
 * tile of a matmul from the machine's L0A/L0B/L0C, the micro-kernel's
 * panel widths and the workers that will run it. */
#include "core/tile_choose.h"

#include <stdlib.h>
#include <string.h>

#include "core/custom.h"
#include "core/program.h"

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

/* Bytes of an f32 tile of rows x cols, its rows padded to ROW_ALIGN. */
static uint64_t f32_bytes(uint64_t rows, uint64_t cols) {
  return rows * round_up(cols, ROW_ALIGN) * F32;
}

/* Key blocks tried, largest first, each rounded up to whole A panels (the
 * keys are the rows of the transposed scores, S^T = K Q^T): a block's
 * scores are one matmul's output and one online-softmax step. Measured on
 * Zen 3 (H=8, S=2048, D=128, causal, 126 query rows, scores not yet
 * transposed): 128 keys ran 4 % faster than 256 and 15 % faster than
 * 512, the diagonal's blocks computing fewer hidden scores and the step's
 * rows staying in L1; on a Xeon (avx512, 12-row panels, 128 query rows)
 * 132 keys 36-38 ms, 120 keys 40, 264 keys 42. */
static const uint32_t flash_kb[] = {128, 64, 32, 16};

pto_status pto__flash_tile(const pto_machine *mach, int64_t batch, int64_t M,
                           int64_t N, int64_t D, int64_t Dv, uint32_t workers,
                           uint32_t mr, uint32_t nr, pto_tile_shape *tile) {
  if (!mach || !tile || batch < 1 || M < 1 || N < 1 || D < 1 || Dv < 1 ||
      workers < 1 || mr < 1 || nr < 1)
    return PTO_EINVAL;
  const uint64_t l0a = mach->mem[PTO_MEM_L0A], l0b = mach->mem[PTO_MEM_L0B],
                 l0c = mach->mem[PTO_MEM_L0C];
  /* query rows: whole B panels of Q^T, as many as leave four blocks a
   * worker to balance the causal blocks' unequal work, at most 128 (past
   * it the scores' block outgrows the caches the step reads them from; on
   * a Xeon 160 rows ran 13 % slower than 128, 64 rows 14 %) */
  uint64_t tq =
      round_up(div_up((uint64_t)M * (uint64_t)batch, 4ull * workers), nr);
  const uint64_t most = 128 >= nr ? 128 / nr * nr : nr;
  tq = min_u64(min_u64(tq, most), round_up((uint64_t)M, nr));
  for (; tq >= 1; tq = tq > nr ? tq - nr : 0) {
    for (size_t i = 0; i < sizeof flash_kb / sizeof *flash_kb; i++) {
      const uint64_t kb = min_u64(round_up(flash_kb[i], mr), (uint64_t)N);
      /* L0A: a block of K and the packed P; L0B: Q^T and a block of V;
       * L0C: the scores (transposed) and the output */
      if (f32_bytes(round_up(kb, mr), (uint64_t)D) +
                  f32_bytes(round_up(tq, mr), kb) <=
              l0a &&
          f32_bytes((uint64_t)D, round_up(tq, nr)) +
                  f32_bytes(kb, round_up(Dv, nr)) <=
              l0b &&
          f32_bytes(kb, tq) + f32_bytes(tq, (uint64_t)Dv) <= l0c) {
        tile->vec_rows = tile->vec_cols = 0;
        tile->cube_m = (uint32_t)min_u64(tq, (uint64_t)M);
        tile->cube_n = (uint32_t)Dv;
        tile->cube_k = (uint32_t)kb;
        return PTO_OK;
      }
    }
    if (tq <= nr)
      break;
  }
  return PTO_ECAPACITY;
}

/* The tiles of a chain nobody tiled: the budget of one tile is an eighth
 * of UB (a fused chain keeps a few tiles live at once; measured on Zen 5,
 * an RMS norm of [8192, 4096] runs 4 x 4096 tiles (64 KiB) at 31 GB/s,
 * 8 x 4096 at 25, and the 32 x 128 default split into 7 passes at 6). */
#define VEC_BUDGET_DIV 8u
#define WIDE_ROWS 32u /* rows of a column-blocked tile (the old default's) */
#define WIDE_COLS_MIN 128u
#define MIN_TASK_ELEMS 4096u /* 32 x 128 */

pto_status pto__vector_tile(const pto_machine *mach, int64_t batch, int64_t R,
                            int64_t C, uint32_t workers, unsigned shrink,
                            pto_tile_shape *tile) {
  if (!mach || !tile || batch < 1 || R < 1 || C < 1 || workers < 1)
    return PTO_EINVAL;
  uint64_t elems = mach->mem[PTO_MEM_UB] / VEC_BUDGET_DIV / F32;
  elems >>= shrink < 16 ? shrink : 16;
  if (elems < WIDE_COLS_MIN)
    elems = WIDE_COLS_MIN;
  const uint64_t rows = (uint64_t)R, cols = round_up((uint64_t)C, ROW_ALIGN);
  uint64_t r, c;
  if (cols <= elems) { /* whole rows */
    r = min_u64(elems / cols, rows);
    /* two tasks per worker where the rows allow, but no task of less
     * than the old default's 32 x 128 (a few us of work: less is not
     * worth its dispatch) */
    const uint64_t want = 2ull * workers;
    if ((uint64_t)batch * div_up(rows, r) < want) {
      uint64_t fewer = div_up(rows, div_up(want, (uint64_t)batch));
      uint64_t least = div_up(MIN_TASK_ELEMS, cols);
      r = fewer > least ? fewer : least < r ? least : r;
    }
    r = r < 1 ? 1 : r;
    c = (uint64_t)C;
  } else { /* column blocks of a few rows each */
    r = min_u64(WIDE_ROWS, rows);
    c = elems / r / ROW_ALIGN * ROW_ALIGN;
    if (c < WIDE_COLS_MIN)
      c = WIDE_COLS_MIN;
  }
  tile->vec_rows = (uint32_t)r;
  tile->vec_cols = (uint32_t)c;
  tile->cube_m = tile->cube_n = tile->cube_k = 0;
  return PTO_OK;
}

/* Whether op n is tiled by a vector tile of rows and cols. */
static int vector_tiled(const pto_node *n) {
  switch (pto__top_class(n->op)) {
  case PTO_TC_BINARY:
  case PTO_TC_SCALAR:
  case PTO_TC_UNARY:
  case PTO_TC_CAST:
  case PTO_TC_CMP:
  case PTO_TC_SELECT:
  case PTO_TC_REDUCE:
  case PTO_TC_GATHER:
  case PTO_TC_CONCAT:
  case PTO_TC_FILL:
  case PTO_TC_IOTA:
  case PTO_TC_ASSEMBLE:
    return 1;
  case PTO_TC_CUSTOM:
    return pto__custom_get((int)n->ival)->desc.core == PTO_CORE_VECTOR;
  default:
    return 0;
  }
}

/* The rows a tile of n spans: the planes, rows and row length of the
 * tensor its tile grid covers (a reduction's input, else its output). */
typedef struct grid_key {
  int64_t batch, rows, cols;
} grid_key;

static grid_key key_of(const pto_node *n) {
  const pto_tensor *t =
      pto__top_class(n->op) == PTO_TC_REDUCE ? n->in[0] : n->out[0];
  grid_key k = {1, 1, 1};
  const int nd = t->ndim;
  if (nd >= 1)
    k.cols = t->shape[nd - 1];
  if (nd >= 2)
    k.rows = t->shape[nd - 2];
  for (int d = 0; d + 2 < nd; d++)
    k.batch *= t->shape[d];
  return k;
}

static uint32_t uf_root(uint32_t *up, uint32_t x) {
  while (up[x] != x)
    x = up[x] = up[up[x]];
  return x;
}

pto_status pto__choose_vector_tiles(const pto_program *p, const uint8_t *live,
                                    const uint8_t *vec_set,
                                    const pto_tile_ctx *ctx,
                                    pto_tile_shape *tile, uint8_t *chosen) {
  const uint32_t nn = p->n_nodes;
  if (!ctx || !ctx->machine || !nn)
    return PTO_OK;
  uint32_t *up = malloc(nn * sizeof *up);
  int64_t *widest = malloc(nn * sizeof *widest);
  grid_key *key = malloc(nn * sizeof *key);
  if (!up || !widest || !key) {
    free(up);
    free(widest);
    free(key);
    return PTO_ENOMEM;
  }
  for (uint32_t i = 0; i < nn; i++) {
    const pto_node *n = p->nodes[i];
    up[i] = i;
    chosen[i] = live[i] && !vec_set[i] && vector_tiled(n);
    if (chosen[i])
      key[i] = key_of(n);
  }
  /* a chain: a producer and a consumer that both choose, over the same
   * planes and rows (a row reduction's result is read back by rows) */
  for (uint32_t i = 0; i < nn; i++) {
    const pto_node *n = p->nodes[i];
    for (int k = 0; chosen[i] && k < n->n_in; k++) {
      const pto_node *q = n->in[k] ? n->in[k]->root->producer : NULL;
      if (!q || !chosen[q->id] || key[q->id].batch != key[i].batch ||
          key[q->id].rows != key[i].rows)
        continue;
      uint32_t a = uf_root(up, i), b = uf_root(up, q->id);
      if (a != b)
        up[a < b ? b : a] = a < b ? a : b;
    }
  }
  for (uint32_t i = 0; i < nn; i++)
    widest[i] = 0;
  for (uint32_t i = 0; i < nn; i++)
    if (chosen[i]) {
      uint32_t r = uf_root(up, i);
      if (key[i].cols > widest[r])
        widest[r] = key[i].cols;
    }
  const uint32_t workers = ctx->machine->workers[PTO_CORE_VECTOR]
                               ? ctx->machine->workers[PTO_CORE_VECTOR]
                               : 1;
  for (uint32_t i = 0; i < nn; i++) {
    if (!chosen[i])
      continue;
    pto_tile_shape t;
    if (pto__vector_tile(ctx->machine, key[i].batch < 1 ? 1 : key[i].batch,
                         key[i].rows < 1 ? 1 : key[i].rows,
                         widest[uf_root(up, i)] < 1 ? 1
                                                    : widest[uf_root(up, i)],
                         workers, ctx->vec_shrink, &t) != PTO_OK) {
      chosen[i] = 0;
      continue;
    }
    tile[i].vec_rows = t.vec_rows;
    tile[i].vec_cols = t.vec_cols;
  }
  free(up);
  free(widest);
  free(key);
  return PTO_OK;
}

/* Bytes of an f32 tile of rows x cols (rows 64-byte aligned). */
static uint64_t f32_tile(uint64_t rows, uint64_t cols) {
  return rows * ((cols + 15) / 16 * 16) * 4;
}
static uint64_t up_to(uint64_t v, uint64_t w) {
  return (v + w - 1) / w * w;
}

pto_status pto__attention_tile(const pto_machine *m, int64_t heads, int64_t D,
                               int64_t Dv, int64_t topk, uint32_t mr,
                               uint32_t nr, pto_tile_shape *tile) {
  if (!m || !tile || heads < 1 || D < 1 || Dv < 1 || topk < 1 || !mr || !nr)
    return PTO_EINVAL;
  const uint64_t l0a = m->mem[PTO_MEM_L0A], l0b = m->mem[PTO_MEM_L0B],
                 l1 = m->mem[PTO_MEM_L1];
  const uint64_t T = (uint64_t)topk, H = (uint64_t)heads;
  /* slots per block: as many as a block of gathered rows would fit (G^T,
   * D x kb, in L0B and V, kb x dv, in L1). The rows are read in place and
   * need no room, but such blocks measured as fast as any other (medium:
   * 64 to 256 slots within 3%) */
  uint64_t kb = 0;
  for (uint64_t k = nr; k <= up_to(T, nr) && k <= 512; k += nr)
    if (f32_tile((uint64_t)D, k) <= l0b &&
        f32_tile(k, up_to((uint64_t)Dv, nr)) <= l1)
      kb = k;
  if (!kb)
    kb = nr;
  kb = kb > T ? T : kb;
  /* heads per task: as few balanced head tiles as fit Q^T (D x th) and P
   * (th x kb) packed, in whole panels of nr (the heads are the N of S^T =
   * G Q^T) */
  uint64_t th = H;
  for (uint64_t parts = 1; parts <= H; parts++) {
    th = up_to((H + parts - 1) / parts, nr);
    th = th > H ? H : th;
    const uint64_t rows = up_to(th, mr);
    if (f32_tile(rows, (uint64_t)D) + f32_tile(rows, kb) <= l0a)
      break;
  }
  /* L1 after the last block: the final output (th x dv) takes the room of
   * the block's indices and V, below the softmax state (th x 3) placed
   * after them, when that room is big enough (kb >= th); else all four sit
   * side by side (e.g. one block of 64 slots for 66 heads needs 270 KB of a
   * 256 KiB L1): fewer slots per block, then, until they fit */
  while (kb > nr && kb < th &&
         f32_tile(1, kb) + f32_tile(kb, (uint64_t)Dv) + f32_tile(th, 3) +
                 f32_tile(th, (uint64_t)Dv) + 4 * 64 >
             l1)
    kb = (kb - 1) / nr * nr; /* the next multiple of nr down */
  memset(tile, 0, sizeof *tile);
  tile->cube_m = (uint32_t)th;
  tile->cube_n = (uint32_t)kb;
  return PTO_OK;
}

pto_status pto__relu_wsum_tile(const pto_machine *m, int64_t batch,
                               int64_t rows, int64_t group, int64_t K,
                               int64_t N, uint32_t mr, uint32_t nr,
                               pto_tile_shape *tile) {
  (void)mr; /* the groups ride in the B panels */
  if (!m || !tile || batch < 1 || rows < 1 || group < 1 || K < 1 || N < 1 ||
      !nr)
    return PTO_EINVAL;
  const uint64_t l0a = m->mem[PTO_MEM_L0A], l0b = m->mem[PTO_MEM_L0B];
  const int64_t queries_all = rows / group > 0 ? rows / group : 1;
  const uint64_t query = up_to((uint64_t)group, nr) *
                         ((uint64_t)K * 4 + PTO_TILE_ALIGN);
  int64_t queries = (int64_t)(l0b / query);
  queries = queries < 1 ? 1 : queries > queries_all ? queries_all : queries;
  int64_t keys = (int64_t)(l0a / ((uint64_t)K * 4)) / nr * nr;
  keys = keys < (int64_t)nr ? (int64_t)nr : keys > N ? N : keys;
  /* at least two tiles per cube worker (a short case was one tile, one
   * task on one of two workers: smoke 2.0-2.2 ms, in four tiles 1.4-1.7) */
  const int64_t blocks = batch * ((queries_all + queries - 1) / queries),
                want = 2 * (int64_t)(m->workers[PTO_CORE_CUBE]
                                         ? m->workers[PTO_CORE_CUBE]
                                         : 1);
  while (keys >= 8 * (int64_t)nr && blocks * ((N + keys - 1) / keys) < want)
    keys = keys / 2 / nr * nr;
  memset(tile, 0, sizeof *tile);
  tile->cube_m = (uint32_t)(queries * group);
  tile->cube_n = (uint32_t)keys;
  return PTO_OK;
}
