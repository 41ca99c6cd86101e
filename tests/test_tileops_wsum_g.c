/* tileops: TMATMUL_RELU_WSUM_G, the lightning indexer's score with the keys
 * read where they lie: its driver (its row of cases[] in test_tileops.c),
 * run on the active table, then Q^T packed by TLOAD on every table this CPU
 * runs at the indexer's shapes. Both against the score in double,
 * dst[r][n] = sum over g < G of w[r G + g] * ReLU(sum_k Qt[k][r G + g] *
 * key_n[k]), -inf past the causal diagonal.
 *
 * The driver covers the SIMD tables' fast path (Q^T f32 packed at the
 * table's panel width NR, an f32 or bf16 window with contiguous rows; G a
 * multiple of NR or not, when panels of Q^T hold two queries' heads) and
 * every way out of it, which the reference must take: an odd panel width,
 * Q^T plain or bf16/f16, an f16 or column-major window. Whatever the
 * instruction must not read is NaN: Q^T's padding (a plain tile's outside its
 * valid region; a packed one's rows past K and the buffer past its panels, the
 * last panel's padding being zero as TLOAD leaves it), the weights' padding
 * (src_new's poison), and the window's buffer outside its N x K: its row
 * padding when the row stride is larger than K, two rows past N, and a
 * column-major view's two columns past K and rows past N; or, in every other
 * run, nothing past the window's last element but an unreadable page, so that a
 * read beyond it (whose value a kernel might drop) crashes. In half of the runs
 * the keys are positive and most heads' Q^T columns negative (every head of
 * query 0), so most dot products are negative: ReLU must zero them, and query 0
 * scores exactly 0. */
#include <inttypes.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/tileops_test.h"

static uint32_t round_up(uint32_t v, uint32_t w) {
  return (v + w - 1) / w * w;
}

/* The sign of head m of Q^T (G heads per query) when the heads are
 * signed: every head of query 0, and two of every three of the others,
 * negative. */
static double head_sign(uint32_t m, uint32_t G) {
  return m / G == 0 || (m % G) % 3 ? -1.0 : 1.0;
}

/* A guarded window's pages (one at a time), unmapped after each run. */
static void *wg_map;
static size_t wg_map_len;

static void wg_release(void) {
  if (wg_map)
    munmap(wg_map, wg_map_len);
  wg_map = NULL;
}

/* The window of N keys of K values of dtype dt: row-major with row stride
 * K + pad, or column-major (a transposed view) with column stride N + 2 +
 * pad, after 3 leading elements. Unguarded, two more rows (row-major) or
 * columns (column-major) follow it; guarded, its last element ends where
 * an unreadable page begins, so a read past it crashes. Every element
 * outside the window is NaN, the keys in [-2, 2], or [1/4, 2] when pos,
 * rounded to dt. */
static pto_gview wg_window(rng *r, pto_dtype dt, uint32_t N, uint32_t K,
                           uint32_t pad, int colmajor, int pos, int guard) {
  const int64_t lead = colmajor ? (int64_t)N + 2 + pad : (int64_t)K + pad,
                lines = colmajor ? (int64_t)K : (int64_t)N,
                last = colmajor ? (int64_t)N : (int64_t)K;
  const size_t es = dsize(dt),
               n = (size_t)(3 + lead * (lines - 1) + (guard ? last : 3 * lead));
  unsigned char *mem;
  if (guard) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE),
                 len = (n * es + page - 1) / page * page + page;
    wg_release();
    unsigned char *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(map != MAP_FAILED, "mmap of %zu bytes failed", len);
    wg_map = map;
    wg_map_len = len;
    cr_assert_eq(mprotect(map + len - page, page, PROT_NONE), 0);
    mem = map + len - page - n * es;
  } else {
    mem = keep(malloc(n * es));
  }
  for (size_t x = 0; x < n; x++)
    store_value(dt, mem + x * es, NAN);
  const pto_gview g = {.base = mem + 3 * es,
                       .dtype = dt,
                       .rows = N,
                       .cols = K,
                       .row_stride = colmajor ? 1 : lead,
                       .col_stride = colmajor ? lead : 1};
  for (uint32_t i = 0; i < N; i++)
    for (uint32_t k = 0; k < K; k++)
      store_value(dt, gat(&g, i, k),
                  pos ? uniform(r, 0.25, 2) : uniform(r, -2, 2));
  return g;
}

/* Q^T, K x M valid, of dtype dt (G heads per query): plain (w == 0; NaN
 * outside the valid region), or packed as TLOAD PACK_B packs it in panels
 * of w cols with a spare row past K: the last panel's padding zero, every
 * other element NaN. Values in [-2, 2], or when signed, magnitudes in
 * [1/4, 2] with head_sign's sign; their exact values in *v, K x M
 * row-major. */
static pto_tile *wg_qt(rng *r, pto_dtype dt, uint32_t K, uint32_t M, uint32_t G,
                       uint32_t w, int sign, double **v) {
  pto_tile *t = w ? tile_new(dt, K + 1, round_up(M, w), K, M, 0xff)
                  : tile_new(dt, K + 2, M + 3, K, M, 0xff);
  double *vals = keep(malloc(sizeof(double) * K * M));
  const uint32_t pc = w ? round_up(M, w) : M;
  for (uint32_t k = 0; k < K; k++)
    for (uint32_t m = 0; m < pc; m++) {
      const size_t at =
          w ? pto__pack_b_index(t, w, k, m) : (size_t)k * t->stride + m;
      unsigned char *p = (unsigned char *)t->data + at * dsize(dt);
      if (m >= M) {
        store_value(dt, p, 0.0);
        continue;
      }
      store_value(dt, p,
                  sign ? head_sign(m, G) * uniform(r, 0.25, 2)
                       : uniform(r, -2, 2));
      vals[(size_t)k * M + m] = value_of(dt, p);
    }
  *v = vals;
  return t;
}

/* The score in double per dst element (r, n), with TMATMUL_RELU_WSUM's
 * tolerance 1e-5 * sqrt(K) * sum_g |w| * sum_k |q_k key_k| (ReLU moves no
 * value farther than its argument moved), but for a head whose exact dot
 * lies below minus its own share of that bound, 1e-5 sqrt(K) sum_k
 * |q_k key_k| (above an f32 sum's error, about K 2^-24 sum_k |q_k key_k|,
 * at every K here): negative however it is summed, ReLU makes it exactly
 * 0 and it adds nothing to the bound, so a query whose heads are all such
 * scores exactly 0. -inf past the causal diagonal. qv: Q^T's values, K x M
 * row-major; W the weights. */
static void wg_oracle(const pto_tile *d, uint32_t G, uint32_t K,
                      const double *qv, const pto_gview *keys,
                      const pto_tile *W, int causal, double diag, double *val,
                      double *tol) {
  const uint32_t N = d->valid_cols, M = d->valid_rows * G;
  double *kv = keep(malloc(sizeof(double) * N * K));
  for (uint32_t n = 0; n < N; n++)
    for (uint32_t k = 0; k < K; k++)
      kv[(size_t)n * K + k] = value_of(keys->dtype, gat(keys, n, k));
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t n = 0; n < N; n++) {
      const size_t ix = (size_t)r * d->stride + n;
      double sum = 0, mag = 0;
      for (uint32_t g = 0; g < G; g++) {
        const uint32_t m = r * G + g;
        double dot = 0, dmag = 0;
        for (uint32_t k = 0; k < K; k++) {
          const double p = qv[(size_t)k * M + m] * kv[(size_t)n * K + k];
          dot += p;
          dmag += fabs(p);
        }
        if (dot < -1e-5 * sqrt((double)K) * dmag)
          continue; /* ReLU: exactly 0 */
        const double w = getf(W, m, 0);
        sum += w * (dot < 0 ? 0 : dot);
        mag += fabs(w) * dmag;
      }
      val[ix] = causal && (double)n > (double)r + diag ? -INFINITY : sum;
      tol[ix] = 1e-5 * sqrt((double)K) * mag;
    }
}

void drive_wsum_g(int op, const oracle_case *oc) {
  (void)oc;
  /* R G N K: G a multiple of the SIMD tables' NR (16, 32) or not (a
   * query's heads starting and ending inside panels of Q^T; AVX2's blocks
   * of up to 4 or 8 heads cut short there); N with tails of both SIMD row
   * groups (MR = 6, 12) and of AVX2's panels of 24 keys (up to 8, 16 and
   * 23 keys); K of one step, with a tail of the kernels' 16 steps, the
   * indexer's 128, past it, past the 512 of a panel of keys on AVX2's
   * stack; one query (AVX2 packs no keys for it); more heads than the
   * 1024 weights the SIMD tables keep on the stack */
  static const uint32_t dims[][4] = {
      {1, 16, 1, 1},   {3, 16, 37, 29},  {7, 64, 13, 128}, {2, 32, 70, 130},
      {4, 32, 5, 300}, {6, 16, 7, 130},  {1, 64, 37, 300}, {5, 5, 6, 300},
      {7, 5, 70, 29},  {2, 1, 13, 1},    {2, 16, 30, 520}, {3, 24, 30, 128},
      {4, 60, 32, 64}, {1, 40, 30, 130}, {2, 24, 30, 520}, {3, 20, 13, 16},
      {2, 36, 50, 33}, {2, 1100, 13, 8}, {1, 1030, 7, 16}};
  /* keys' dtype, Q^T's, window column-major, row stride past K */
  static const struct {
    pto_dtype key, q;
    int colmajor;
    uint32_t pad;
  } types[] = {{PTO_F32, PTO_F32, 0, 0},  {PTO_F32, PTO_F32, 0, 3},
               {PTO_BF16, PTO_F32, 0, 0}, {PTO_BF16, PTO_F32, 0, 5},
               {PTO_F16, PTO_F32, 0, 2},  {PTO_F32, PTO_F32, 1, 1},
               {PTO_F32, PTO_BF16, 0, 1}, {PTO_F16, PTO_F16, 0, 0}};
  /* causal diagonals (s): none, through the tile, before it, past it */
  static const double diags[] = {NAN, 2, -3, 100};
  const pto_isa_table *T = pto__isa_active();
  const uint32_t widths[] = {0, T->mm_nr, 5};
  for (int ti = 0; ti < (int)(sizeof types / sizeof types[0]); ti++)
    for (int di = 0; di < (int)(sizeof dims / sizeof dims[0]); di++)
      for (int pk = 0; pk < 3; pk++)
        for (int fl = 0; fl < 8; fl++) { /* diagonal, signed heads */
          const uint32_t R = dims[di][0], G = dims[di][1], N = dims[di][2],
                         K = dims[di][3], M = R * G, w = widths[pk];
          const double diag = diags[fl >> 1];
          const int causal = !isnan(diag), sign = fl & 1,
                    guard = ((fl >> 1) + di + pk) & 1;
          const int64_t stride =
              types[ti].colmajor ? N + 2 + types[ti].pad : K + types[ti].pad;
          char ctx[240];
          snprintf(ctx, sizeof ctx,
                   "%s on %s: keys %s %s (stride %" PRId64 "), Q^T %s "
                   "%s%.0u, R=%u G=%u N=%u K=%u, diag %g%s%s",
                   pto__insn_name(op), T->name, pto_dtype_name(types[ti].key),
                   types[ti].colmajor ? "col-major" : "row-major", stride,
                   pto_dtype_name(types[ti].q),
                   w ? "packed in panels of " : "plain", w, R, G, N, K, diag,
                   sign ? ", signed heads" : "", guard ? ", guarded" : "");
          rng r = rng_seed(seed_of(op, ti, di, pk * 8 + fl));
          pto_gview keys = wg_window(&r, types[ti].key, N, K, types[ti].pad,
                                     types[ti].colmajor, sign, guard);
          double *qv;
          pto_tile *Qt = wg_qt(&r, types[ti].q, K, M, G, w, sign, &qv);
          pto_tile *W = src_new(&r, PTO_F32, M + 3, 1, M, 1, G_MM);
          pto_tile *d = dst_new(PTO_F32, R + 1, N + 5, R, N);
          pto_tile *want = tile_clone(d);
          double *val = dbuf(d), *tol = dbuf(d);
          wg_oracle(d, G, K, qv, &keys, W, causal, diag, val, tol);
          pto_targs a = {0};
          a.dst[0] = d;
          a.src[0] = Qt;
          a.src[1] = W;
          a.g = keys;
          a.flags = (w ? PTO_TF_PACK_B : 0) | (causal ? PTO_TF_CAUSAL : 0);
          a.imm[1] = (int32_t)w;
          a.s = causal ? diag : 0;
          run_ok(op, &a, ctx);
          expect_tile(ctx, d, want, val, tol);
          free_all();
          wg_release();
        }
}

/* On every table this CPU runs, Q^T packed as the indexer packs it: TLOAD
 * PACK_B of the transposed view of q (M x K row-major), f32 or bf16
 * widened into an f32 tile, or bf16 kept in k pairs (a bf16 engine's
 * operand), at the table's panel width (its fast path) and at an odd one;
 * the keys an f32 or bf16 window (contiguous rows, or a stride past K).
 * Shapes of the lightning indexer: 7 queries of 64 heads of 128 over a
 * block of 512 keys, a short block, one query; and of 24 or 40 heads; an
 * odd K (rows on any 2 bytes, a last pair of one k); causal or not. */
Test(tileops, packed_TMATMUL_RELU_WSUM_G, .fini = free_all) {
  /* R G N K; 24 and 40 heads (panels holding two queries' heads) */
  static const uint32_t dims[][4] = {{7, 64, 512, 128}, {7, 64, 13, 128},
                                     {1, 64, 70, 128},  {5, 24, 70, 128},
                                     {1, 40, 13, 128},  {3, 64, 40, 127}};
  /* q and the keys' dtype, the keys' row padding, Q^T's tile dtype (bf16:
   * k in pairs, a bf16 engine's operand) */
  static const struct {
    pto_dtype dt;
    uint32_t pad;
    pto_dtype tdt;
  } types[] = {{PTO_F32, 0, PTO_F32},   {PTO_BF16, 0, PTO_F32},
               {PTO_BF16, 8, PTO_F32},  {PTO_F32, 16, PTO_F32},
               {PTO_BF16, 0, PTO_BF16}, {PTO_BF16, 8, PTO_BF16}};
  const int n_types = (int)(sizeof types / sizeof types[0]);
  isa_list tables = tables_here();
  const int op = PTO_OP_TMATMUL_RELU_WSUM_G;
  for (int ti = 0; ti < tables.n; ti++) {
    const pto_isa_table *T = tables.t[ti];
    const uint32_t widths[] = {T->mm_nr, 5};
    for (int wi = 0; wi < 2; wi++)
      for (int di = 0; di < (int)(sizeof dims / sizeof dims[0]); di++)
        for (int ty = 0; ty < n_types; ty++)
          for (int ci = 0; ci < 2; ci++) {
            if (wi == 1 && di == 0 && ty > 1)
              continue; /* the big block at the odd width: once per dtype */
            const uint32_t R = dims[di][0], G = dims[di][1], N = dims[di][2],
                           K = dims[di][3], M = R * G, w = widths[wi];
            /* the indexer's last block: keys past n = r + N - 10 masked */
            const double diag = ci ? (double)N - 10 : NAN;
            const pto_dtype dt = types[ty].dt;
            const int guard = (ty + ci) & 1;
            char ctx[200];
            snprintf(ctx, sizeof ctx,
                     "%s on %s: q and keys %s (row stride %u), Q^T %s, "
                     "R=%u G=%u N=%u K=%u panels of %u, diag %g%s",
                     pto__insn_name(op), T->name, pto_dtype_name(dt),
                     K + types[ty].pad, pto_dtype_name(types[ty].tdt), R, G, N,
                     K, w, diag, guard ? ", guarded" : "");
            rng r = rng_seed(seed_of(op, ti * 10 + wi, di * 8 + ty, ci));
            pto_gview gq;
            pto_tile *Qt = operand_tile(T, &r, dt, types[ty].tdt, K, M, 1, 'B',
                                        0, w, &gq, ctx);
            double *qv = keep(malloc(sizeof(double) * K * M));
            for (uint32_t k = 0; k < K; k++)
              for (uint32_t m = 0; m < M; m++)
                qv[(size_t)k * M + m] = value_of(dt, gat(&gq, k, m));
            pto_gview keys =
                wg_window(&r, dt, N, K, types[ty].pad, 0, 0, guard);
            pto_tile *W = src_new(&r, PTO_F32, M + 3, 1, M, 1, G_MM);
            pto_tile *d = dst_new(PTO_F32, R + 1, N + 5, R, N);
            pto_tile *want = tile_clone(d);
            double *val = dbuf(d), *tol = dbuf(d);
            wg_oracle(d, G, K, qv, &keys, W, ci, diag, val, tol);
            pto_targs a = {0};
            a.dst[0] = d;
            a.src[0] = Qt;
            a.src[1] = W;
            a.g = keys;
            a.flags = PTO_TF_PACK_B | (ci ? PTO_TF_CAUSAL : 0);
            a.imm[1] = (int32_t)w;
            a.s = ci ? diag : 0;
            run_on(T, op, &a, ctx);
            expect_tile(ctx, d, want, val, tol);
            free_all();
            wg_release();
          }
  }
}

/* A panel of Q^T that holds two queries' heads (24 per query, panels of
 * 16) is computed once per query: the other query's heads must add
 * nothing, not even when one of them is +inf (a weight of zero times its
 * ReLU would be NaN). Query 0's head 20, in the panel it shares with query
 * 1, is made +inf for every k; query 1's scores must be those of the run
 * without it, bit for bit. K of a panel of keys and past it (AVX2's two
 * paths), one and two threads' worth of keys. */
Test(tileops, TMATMUL_RELU_WSUM_G_shared_panel, .fini = free_all) {
  static const uint32_t dims[][2] = {{30, 128}, {30, 520}, {70, 64}};
  const pto_isa_table *T = pto__isa_active();
  const int op = PTO_OP_TMATMUL_RELU_WSUM_G;
  const uint32_t R = 2, G = 24, M = R * G, w = T->mm_nr;
  for (int di = 0; di < 3; di++) {
    const uint32_t N = dims[di][0], K = dims[di][1];
    char ctx[160];
    snprintf(ctx, sizeof ctx, "%s on %s: R=%u G=%u N=%u K=%u, +inf in head 20",
             pto__insn_name(op), T->name, R, G, N, K);
    rng r = rng_seed(seed_of(op, 77, di, 0));
    pto_gview keys = wg_window(&r, PTO_F32, N, K, 0, 0, 0, 0);
    double *qv;
    pto_tile *Qt = wg_qt(&r, PTO_F32, K, M, G, w, 0, &qv);
    pto_tile *W = src_new(&r, PTO_F32, M + 3, 1, M, 1, G_MM);
    pto_tile *d0 = dst_new(PTO_F32, R, N, R, N), *d1 = tile_clone(d0);
    pto_targs a = {0};
    a.dst[0] = d0;
    a.src[0] = Qt;
    a.src[1] = W;
    a.g = keys;
    a.flags = PTO_TF_PACK_B;
    a.imm[1] = (int32_t)w;
    run_ok(op, &a, ctx);
    for (uint32_t k = 0; k < K; k++)
      ((float *)Qt->data)[pto__pack_b_index(Qt, w, k, 20)] = INFINITY;
    a.dst[0] = d1;
    run_ok(op, &a, ctx);
    for (uint32_t n = 0; n < N; n++) {
      const float x = ((const float *)d0->data)[d0->stride + n],
                  y = ((const float *)d1->data)[d1->stride + n];
      cr_expect(memcmp(&x, &y, sizeof x) == 0,
                "%s: query 1's score %u is %.9g, %.9g without the inf", ctx, n,
                (double)y, (double)x);
    }
    free_all();
  }
}
