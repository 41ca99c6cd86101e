/* tileops: the matmul family: the drivers of TMATMUL, TMATMUL_ACC,
 * TMATMUL_RELU_WSUM, TMATMUL_GA and TMATMUL_GB (rows of cases[] in
 * test_tileops.c), then packed operands and TMATMUL_ACC's row scale on every
 * table this CPU runs. */
#include "tests/tileops_test.h"

/* ---- drivers: matmul
 * --------------------------------------------------------- */

/* A matmul operand as the oracle reads it: logical element (r, c) of a
 * global view, or of a tile (stored transposed when trans). */
typedef struct mm_operand {
  const pto_gview *g;
  const pto_tile *t;
  int trans;
} mm_operand;

static double mm_value(const mm_operand *o, uint32_t r, uint32_t c) {
  if (o->g)
    return value_of(o->g->dtype, gat(o->g, r, c));
  return value_of(o->t->dtype, o->trans ? el(o->t, c, r) : el(o->t, r, c));
}

/* A matmul destination of capacity rows x cols, M x N valid: sentinel
 * bytes, and random values to accumulate onto when acc. */
static pto_tile *mm_dst(rng *r, int acc, uint32_t rows, uint32_t cols,
                        uint32_t M, uint32_t N) {
  pto_tile *d = dst_new(PTO_F32, rows, cols, M, N);
  if (acc)
    for (uint32_t i = 0; i < M; i++)
      for (uint32_t j = 0; j < N; j++)
        setf(d, i, j, (float)uniform(r, -4, 4));
  return d;
}

/* d (as it is before the run) + A x B in double, and the tolerance
 * 1e-5 * sqrt(K) * (sum_k |a_k b_k| + |acc|), per element of d. */
static void mm_oracle(const pto_tile *d, int acc, uint32_t K,
                      const mm_operand *A, const mm_operand *B, double *val,
                      double *tol) {
  for (uint32_t i = 0; i < d->valid_rows; i++)
    for (uint32_t j = 0; j < d->valid_cols; j++) {
      double sum = acc ? getf(d, i, j) : 0, mag = fabs(sum);
      for (uint32_t k = 0; k < K; k++) {
        double p = mm_value(A, i, k) * mm_value(B, k, j);
        sum += p;
        mag += fabs(p);
      }
      val[(size_t)i * d->stride + j] = sum;
      tol[(size_t)i * d->stride + j] = 1e-5 * sqrt((double)K) * mag;
    }
}

void drive_matmul(int op, const oracle_case *oc) {
  (void)oc;
  /* M N K valid, and the capacities they sit in */
  static const uint32_t dims[][6] = {{16, 48, 32, 16, 48, 32},
                                     {13, 37, 29, 16, 48, 32},
                                     {1, 1, 1, 1, 16, 16},
                                     {5, 3, 130, 8, 16, 144}};
  static const pto_dtype types[][2] = {{PTO_F32, PTO_F32},
                                       {PTO_BF16, PTO_BF16},
                                       {PTO_F16, PTO_F16},
                                       {PTO_BF16, PTO_F32}};
  int acc = op == PTO_OP_TMATMUL_ACC;
  for (int ti = 0; ti < 4; ti++)
    for (int di = 0; di < 4; di++)
      for (int fl = 0; fl < 4; fl++) {
        const uint32_t *D = dims[di];
        uint32_t M = D[0], N = D[1], K = D[2], Mc = D[3], Nc = D[4], Kc = D[5];
        int ta = fl & 1, tb = fl >> 1;
        rng r = rng_seed(seed_of(op, ti, di, fl));
        pto_tile *A = ta ? src_new(&r, types[ti][0], Kc, Mc, K, M, G_MM)
                         : src_new(&r, types[ti][0], Mc, Kc, M, K, G_MM);
        pto_tile *B = tb ? src_new(&r, types[ti][1], Nc, Kc, N, K, G_MM)
                         : src_new(&r, types[ti][1], Kc, Nc, K, N, G_MM);
        pto_tile *d = mm_dst(&r, acc, Mc, Nc, M, N);
        pto_tile *want = tile_clone(d);
        double *val = dbuf(d), *tol = dbuf(d);
        const mm_operand oa = {NULL, A, ta}, ob = {NULL, B, tb};
        mm_oracle(d, acc, K, &oa, &ob, val, tol);
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s %s x %s M=%u N=%u K=%u%s%s",
                 pto__insn_name(op), pto_dtype_name(types[ti][0]),
                 pto_dtype_name(types[ti][1]), M, N, K, ta ? " trans_a" : "",
                 tb ? " trans_b" : "");
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = A;
        a.src[1] = B;
        a.flags = (ta ? PTO_TF_TRANS_A : 0) | (tb ? PTO_TF_TRANS_B : 0);
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, val, tol);
      }
}

/* TMATMUL_RELU_WSUM's oracle: per dst element (r, n), the sum over the G
 * rows m of group r of w[m] * ReLU((A x B)[m][n]) in double, with tolerance
 * 1e-5 * sqrt(K) * sum_g |w| * sum_k |a_k b_k| (ReLU moves no value
 * farther than its argument moved); -inf past the causal diagonal. */
static void wsum_oracle(const pto_tile *d, uint32_t G, uint32_t K,
                        const mm_operand *A, const mm_operand *B,
                        const pto_tile *W, int causal, double diag,
                        double *val, double *tol) {
  for (uint32_t r = 0; r < d->valid_rows; r++)
    for (uint32_t n = 0; n < d->valid_cols; n++) {
      size_t ix = (size_t)r * d->stride + n;
      double sum = 0, mag = 0;
      for (uint32_t g = 0; g < G; g++) {
        double dot = 0, dmag = 0;
        for (uint32_t k = 0; k < K; k++) {
          double p = mm_value(A, r * G + g, k) * mm_value(B, k, n);
          dot += p;
          dmag += fabs(p);
        }
        double w = getf(W, r * G + g, 0);
        sum += w * (dot < 0 ? 0 : dot);
        mag += fabs(w) * dmag;
      }
      val[ix] = causal && (double)n > (double)r + diag ? -INFINITY : sum;
      tol[ix] = 1e-5 * sqrt((double)K) * mag;
    }
}

void drive_wsum(int op, const oracle_case *oc) {
  (void)oc;
  /* R N K G valid, capacities of dst rows, cols, K */
  static const uint32_t dims[][7] = {{4, 48, 32, 4, 4, 48, 32},
                                     {3, 37, 29, 5, 4, 48, 32},
                                     {1, 1, 1, 1, 1, 16, 16},
                                     {2, 19, 130, 7, 3, 32, 144},
                                     {13, 5, 3, 1, 16, 16, 16}};
  static const pto_dtype types[] = {PTO_F32, PTO_BF16, PTO_F16};
  /* causal diagonals (s): none, through the tile, before it, past it */
  static const double diags[] = {NAN, 2, -3, 100};
  for (int ti = 0; ti < 3; ti++)
    for (int di = 0; di < 5; di++)
      for (int fl = 0; fl < 4 * 4; fl++) {
        const uint32_t *D = dims[di];
        uint32_t R = D[0], N = D[1], K = D[2], G = D[3], M = R * G;
        uint32_t Mc = D[4] * G, Nc = D[5], Kc = D[6];
        int ta = fl & 1, tb = (fl >> 1) & 1;
        double diag = diags[fl >> 2];
        int causal = !isnan(diag);
        rng r = rng_seed(seed_of(op, ti, di, fl));
        pto_tile *A = ta ? src_new(&r, types[ti], Kc, Mc, K, M, G_MM)
                         : src_new(&r, types[ti], Mc, Kc, M, K, G_MM);
        pto_tile *B = tb ? src_new(&r, types[ti], Nc, Kc, N, K, G_MM)
                         : src_new(&r, types[ti], Kc, Nc, K, N, G_MM);
        pto_tile *W = src_new(&r, PTO_F32, Mc, 1, M, 1, G_MM);
        pto_tile *d = dst_new(PTO_F32, D[4], Nc, R, N);
        pto_tile *want = tile_clone(d);
        double *val = dbuf(d), *tol = dbuf(d);
        const mm_operand oa = {NULL, A, ta}, ob = {NULL, B, tb};
        wsum_oracle(d, G, K, &oa, &ob, W, causal, diag, val, tol);
        char ctx[160];
        snprintf(ctx, sizeof ctx, "%s %s R=%u G=%u N=%u K=%u%s%s diag %g",
                 pto__insn_name(op), pto_dtype_name(types[ti]), R, G, N, K,
                 ta ? " trans_a" : "", tb ? " trans_b" : "", diag);
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = A;
        a.src[1] = B;
        a.src[2] = W;
        a.flags = (ta ? PTO_TF_TRANS_A : 0) | (tb ? PTO_TF_TRANS_B : 0) |
                  (causal ? PTO_TF_CAUSAL : 0);
        a.s = causal ? diag : 0;
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, val, tol);
      }
}

/* ---- drivers: matmuls with one operand's rows read from a table -------------
 * TMATMUL_GA (G x B, G's rows picked by src0's indices) and TMATMUL_GB (A x
 * V, V's rows picked by src1's) on the active table, against the product in
 * double with the matmul tolerance; a row of an invalid index (INT32_MIN,
 * -1, the table's rows, INT32_MAX, ...) contributes exactly nothing, so
 * GA's dst row of one is exactly zero. The other operand plain or packed
 * (written here with core/isa.def's layout, not by TLOAD) at the active
 * table's panel width (with an f32 operand and an f32 row-major table: its
 * fast path) and at an odd width; tables f32, bf16 or f16, row-major with
 * rows padded past their cols (row_stride > cols) or a column-major view;
 * index tiles 1 x n or 2-D (read row-major), slot 0 invalid or not, all
 * invalid or an invalid tail; GB's A NaN in an invalid slot's column; K past a
 * SIMD table's k slice (KC = 256) and past the SIMD TMATMUL_GB's 2048 slots.
 * Whatever the instruction must not read is NaN: the table's buffer outside its
 * window and its columns from K (GA) or N (GB) on, a plain operand's padding, a
 * packed operand's elements past its K extent; an index tile's padding holds 0,
 * a valid row. */

static uint32_t round_up(uint32_t v, uint32_t w) {
  return (v + w - 1) / w * w;
}

/* The index of slot t: the index tile's valid region, row-major. */
static int32_t slot_index(const pto_tile *ix, uint32_t t) {
  return geti(ix, t / ix->valid_cols, t % ix->valid_cols);
}

/* vr x vc indices into a table of `rows` rows (valid ones random, repeats
 * included), in a tile with a spare row and spare cols holding 0. Slot t is
 * invalid where (t + phase) % 4 == 0, every slot when phase is -1, the
 * last third when it is -2 (the padding the indexer leaves), through
 * INT32_MIN, -1, rows, INT32_MAX, rows + 1000 and -rows in turn. */
static pto_tile *gm_indices(rng *r, uint32_t vr, uint32_t vc, int32_t rows,
                            int phase) {
  const int32_t bad[] = {INT32_MIN, -1, rows, INT32_MAX, rows + 1000, -rows};
  pto_tile *t = tile_new(PTO_I32, vr + 1, vc + 3, vr, vc, 0);
  uint32_t nbad = 0;
  for (uint32_t s = 0; s < vr * vc; s++) {
    int32_t v = (int32_t)below(r, (uint32_t)rows);
    if (phase == -1 || (phase == -2 && 3 * s >= 2 * vr * vc) ||
        (phase >= 0 && (s + (uint32_t)phase) % 4 == 0))
      v = bad[nbad++ % 6];
    seti(t, s / vc, s % vc, v);
  }
  return t;
}

/* A rows x cols table in gbuf_gen's layout, G_MM values in its columns
 * below `used`, NaN in every other element of its buffer. */
static gbuf gm_table(rng *r, pto_dtype dt, int64_t rows, int64_t cols,
                     int64_t used, int colmajor) {
  gbuf b = gbuf_gen(r, dt, rows, cols, colmajor, G_MM);
  unsigned char *live = keep(calloc(b.n, 1));
  const size_t es = dsize(dt);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t c = 0; c < used; c++)
      live[(size_t)((unsigned char *)gat(&b.g, i, c) - b.mem) / es] = 1;
  for (size_t x = 0; x < b.n; x++)
    if (!live[x])
      store_value(dt, b.mem + x * es, NAN);
  return b;
}

/* A matmul operand of rows x cols values in [-2, 2] of dtype dt, their
 * exact values in *v (row-major): plain (NaN outside the valid region), or
 * packed as TLOAD packs A (pack 'A', panels of w rows) or B ('B', panels of
 * w cols) with the last panel's padding zero and every other element NaN. */
static pto_tile *gm_operand(rng *r, pto_dtype dt, uint32_t rows, uint32_t cols,
                            char pack, uint32_t w, double **v) {
  pto_tile *t =
      pack == 'A'
          ? tile_new(dt, round_up(rows, w) + 1, cols + 2, rows, cols, 0xff)
      : pack == 'B'
          ? tile_new(dt, rows + 1, round_up(cols, w), rows, cols, 0xff)
          : tile_new(dt, rows + 2, cols + 3, rows, cols, 0xff);
  double *vals = keep(malloc(sizeof(double) * rows * cols));
  /* packed: k padded to whole pairs in a 2-byte tile (core/isa.def) */
  const uint32_t q = pack ? pto__pack_kgroup(dt) : 1;
  const uint32_t pr = pack == 'A' ? round_up(rows, w) : round_up(rows, q),
                 pc = pack == 'B' ? round_up(cols, w) : round_up(cols, q);
  for (uint32_t i = 0; i < pr; i++)
    for (uint32_t j = 0; j < pc; j++) {
      const size_t at = pack == 'A'   ? pto__pack_a_index(t, w, i, j)
                        : pack == 'B' ? pto__pack_b_index(t, w, i, j)
                                      : (size_t)i * t->stride + j;
      unsigned char *p = (unsigned char *)t->data + at * dsize(dt);
      if (i >= rows || j >= cols) {
        store_value(dt, p, 0.0);
        continue;
      }
      if (dt == PTO_F32)
        store_value(dt, p, (float)uniform(r, -2, 2));
      else
        gen_elem(r, dt, G_MM, p);
      vals[(size_t)i * cols + j] = value_of(dt, p);
    }
  *v = vals;
  return t;
}

/* operand dtype, table dtype, table column-major */
static const struct gm_types {
  pto_dtype op, g;
  int colmajor;
} gm_types[] = {{PTO_F32, PTO_F32, 0},
                {PTO_F32, PTO_F32, 1},
                {PTO_BF16, PTO_BF16, 0},
                {PTO_F32, PTO_F16, 0},
                {PTO_F16, PTO_F32, 1}};
#define N_GM_TYPES (sizeof gm_types / sizeof gm_types[0])

void drive_matmul_ga(int op, const oracle_case *oc) {
  (void)oc;
  /* index tile valid vr x vc (n = vr * vc rows of dst), K, N, table rows,
   * invalid phase (-1: every index, -2: the last third) */
  static const int32_t dims[][6] = {
      {1, 13, 29, 37, 50, 0}, {4, 4, 32, 48, 20, 1},   {1, 1, 1, 1, 1, 2},
      {2, 3, 64, 16, 100, 3}, {5, 5, 130, 70, 9, 0},   {7, 1, 16, 20, 30, -1},
      {1, 1, 5, 3, 4, -1},    {3, 7, 8, 33, 1000, 2},  {1, 13, 300, 37, 60, 1},
      {2, 4, 520, 16, 33, 0}, {1, 40, 24, 32, 90, -2}, {3, 5, 17, 48, 25, -2}};
  const pto_isa_table *T = pto__isa_active();
  const uint32_t widths[] = {0, T->mm_nr, 7};
  for (int ti = 0; ti < (int)N_GM_TYPES; ti++)
    for (int di = 0; di < (int)(sizeof dims / sizeof dims[0]); di++)
      for (int pk = 0; pk < 3; pk++) {
        const struct gm_types *ty = &gm_types[ti];
        const int32_t *D = dims[di];
        const uint32_t n = (uint32_t)(D[0] * D[1]), K = (uint32_t)D[2],
                       N = (uint32_t)D[3], w = widths[pk];
        const int32_t rows = D[4];
        char ctx[200];
        snprintf(ctx, sizeof ctx,
                 "%s on %s: %s%s table %dx%u, %ux%u indices%s, %s B K=%u "
                 "N=%u %s%.0u",
                 pto__insn_name(op), T->name, pto_dtype_name(ty->g),
                 ty->colmajor ? " col-major" : "", rows, K + (di & 1 ? 0 : 3),
                 D[0], D[1],
                 D[5] == -1   ? " (all invalid)"
                 : D[5] == -2 ? " (invalid tail)"
                              : "",
                 pto_dtype_name(ty->op), K, N,
                 pk ? "packed in panels of " : "plain", w);
        rng r = rng_seed(seed_of(op, ti, di, pk));
        /* as wide as K, or wider (and NaN past K) */
        gbuf tb =
            gm_table(&r, ty->g, rows, K + (di & 1 ? 0 : 3), K, ty->colmajor);
        pto_tile *ix =
            gm_indices(&r, (uint32_t)D[0], (uint32_t)D[1], rows, D[5]);
        double *bv;
        pto_tile *B = gm_operand(&r, ty->op, K, N, pk ? 'B' : 0, w, &bv);
        pto_tile *d = dst_new(PTO_F32, n + 2, N + 5, n, N);
        pto_tile *want = tile_clone(d);
        double *val = dbuf(d), *tol = dbuf(d);
        for (uint32_t t = 0; t < n; t++) {
          const int32_t i = slot_index(ix, t);
          const int ok = i >= 0 && i < rows;
          for (uint32_t j = 0; j < N; j++) {
            double sum = 0, mag = 0;
            for (uint32_t k = 0; ok && k < K; k++) {
              double p = value_of(ty->g, gat(&tb.g, i, k)) * bv[k * N + j];
              sum += p;
              mag += fabs(p);
            }
            val[(size_t)t * d->stride + j] = sum;
            tol[(size_t)t * d->stride + j] = 1e-5 * sqrt((double)K) * mag;
          }
        }
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = ix;
        a.src[1] = B;
        a.g = tb.g;
        a.flags = pk ? PTO_TF_PACK_B : 0;
        a.imm[1] = (int32_t)w;
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, val, tol);
        free_all();
      }
}

void drive_matmul_gb(int op, const oracle_case *oc) {
  (void)oc;
  /* M, index tile valid vr x vc (n = vr * vc = A's K), N, table rows,
   * invalid phase (-1: every index, -2: the last third) */
  static const int32_t dims[][6] = {
      {13, 1, 29, 37, 50, 0},   {12, 4, 6, 48, 20, 1},   {1, 1, 1, 1, 1, 2},
      {6, 1, 40, 16, 100, 3},   {25, 10, 13, 70, 9, 0},  {5, 1, 17, 15, 30, 2},
      {8, 3, 11, 64, 40, -1},   {7, 1, 3, 33, 1000, 0},  {9, 20, 15, 40, 70, 3},
      {3, 3, 700, 20, 2500, 1}, {14, 1, 40, 32, 90, -2}, {6, 2, 9, 48, 25, -2}};
  const pto_isa_table *T = pto__isa_active();
  const uint32_t widths[] = {0, T->mm_mr, 5};
  static const char *const how[] = {"", " acc", " acc rowscale"};
  for (int ti = 0; ti < (int)N_GM_TYPES; ti++)
    for (int di = 0; di < (int)(sizeof dims / sizeof dims[0]); di++)
      for (int pk = 0; pk < 3; pk++)
        for (int fl = 0; fl < 3; fl++) { /* plain, PTO_TF_ACC, ROWSCALE */
          const struct gm_types *ty = &gm_types[ti];
          const int32_t *D = dims[di];
          const uint32_t M = (uint32_t)D[0], n = (uint32_t)(D[1] * D[2]),
                         N = (uint32_t)D[3], w = widths[pk];
          const int32_t rows = D[4];
          const int acc = fl >= 1, scaled = fl == 2;
          char ctx[200];
          snprintf(ctx, sizeof ctx,
                   "%s on %s: %s%s table %dx%u, %ux%u indices%s, %s A M=%u "
                   "N=%u%s %s%.0u",
                   pto__insn_name(op), T->name, pto_dtype_name(ty->g),
                   ty->colmajor ? " col-major" : "", rows, N + (di & 1 ? 0 : 3),
                   D[1], D[2],
                   D[5] == -1   ? " (all invalid)"
                   : D[5] == -2 ? " (invalid tail)"
                                : "",
                   pto_dtype_name(ty->op), M, N, how[fl],
                   pk ? "packed in panels of " : "plain", w);
          rng r = rng_seed(seed_of(op, ti, di, pk * 3 + fl));
          /* as wide as N, or wider (and NaN past N) */
          gbuf tb =
              gm_table(&r, ty->g, rows, N + (di & 1 ? 0 : 3), N, ty->colmajor);
          pto_tile *ix =
              gm_indices(&r, (uint32_t)D[1], (uint32_t)D[2], rows, D[5]);
          double *av;
          pto_tile *A = gm_operand(&r, ty->op, M, n, pk ? 'A' : 0, w, &av);
          for (uint32_t t = 0; t < n; t++) { /* never read: NaN */
            const int32_t x = slot_index(ix, t);
            for (uint32_t i = 0; (x < 0 || x >= rows) && i < M; i++)
              store_value(ty->op,
                          (unsigned char *)A->data +
                              (pk ? pto__pack_a_index(A, w, i, t)
                                  : (size_t)i * A->stride + t) *
                                  dsize(ty->op),
                          NAN);
          }
          /* row scales in column 0 of a rowvec, or of an (alpha, m, l)
           * state as TSOFTMAXONLINE leaves it; some 0 */
          pto_tile *f = src_new(&r, PTO_F32, M + 1, 4, M, di & 1 ? 1 : 3, G_MM);
          for (uint32_t i = 2; i < M; i += 5)
            setf(f, i, 0, 0.0f);
          pto_tile *d = mm_dst(&r, acc, M + 2, N + 5, M, N);
          pto_tile *want = tile_clone(d);
          double *val = dbuf(d), *tol = dbuf(d);
          for (uint32_t i = 0; i < M; i++)
            for (uint32_t j = 0; j < N; j++) {
              double sum = acc ? (double)getf(d, i, j) *
                                     (scaled ? getf(f, i, 0) : 1.0f)
                               : 0,
                     mag = fabs(sum);
              for (uint32_t t = 0; t < n; t++) {
                const int32_t x = slot_index(ix, t);
                if (x < 0 || x >= rows)
                  continue;
                double p =
                    av[(size_t)i * n + t] * value_of(ty->g, gat(&tb.g, x, j));
                sum += p;
                mag += fabs(p);
              }
              val[(size_t)i * d->stride + j] = sum;
              tol[(size_t)i * d->stride + j] = 1e-5 * sqrt((double)n) * mag;
            }
          pto_targs a = {0};
          a.dst[0] = d;
          a.src[0] = A;
          a.src[1] = ix;
          a.src[2] = scaled ? f : NULL;
          a.g = tb.g;
          a.flags = (pk ? PTO_TF_PACK_A : 0) | (acc ? PTO_TF_ACC : 0) |
                    (scaled ? PTO_TF_ROWSCALE : 0);
          a.imm[0] = (int32_t)w;
          run_ok(op, &a, ctx);
          expect_tile(ctx, d, want, val, tol);
          free_all();
        }
}

/* ---- packed matmul operands (PTO_TF_PACK_A / PTO_TF_PACK_B) -----------------
 * On every table this CPU runs: TLOAD packs a global window (row-major or a
 * transposed view) and its layout is checked element by element against
 * core/isa.def's formula written out here (padding zero, the rest of the
 * buffer untouched); then TMATMUL / TMATMUL_ACC on every combination of
 * packed and unpacked (plain or TRANS_*) operands is checked against the
 * double-precision product with the matmul tolerance. Panel widths: the
 * table's own (its micro-kernel) and odd ones (5 x 7) that it must also
 * run. run_on and operand_tile serve test_tileops_wsum_g.c too
 * (tests/tileops_test.h). */

void run_on(const pto_isa_table *T, int op, const pto_targs *a,
            const char *ctx) {
  char msg[256];
  int st = pto__tileop_check(op, a, msg, sizeof msg);
  cr_assert_eq(st, 0, "%s: check refused good operands: %s: %s", ctx,
               pto_status_name(st), msg);
  st = T->fn[op](op, a);
  cr_assert_eq(st, 0, "%s: %s returned %s", ctx, T->name, pto_status_name(st));
}

/* A matmul operand: logical rows x cols (A: M x K, B: K x N) in a global
 * buffer, row-major or as a transposed view (col_major), loaded by T's
 * TLOAD into a tile: packed in panels of w along rows (pack 'A') or cols
 * (pack 'B'), else plain, or stored transposed when trans. */
pto_tile *operand_tile(const pto_isa_table *T, rng *r, pto_dtype gdt,
                       pto_dtype tdt, uint32_t rows, uint32_t cols,
                       int col_major, char pack, int trans, uint32_t w,
                       pto_gview *gv, const char *ctx) {
  gbuf b = gbuf_gen(r, gdt, rows, cols, col_major, G_MM);
  *gv = b.g;
  pto_targs a = {0};
  a.g = b.g;
  pto_tile *t;
  if (pack == 'A') {
    t = dst_new(tdt, round_up(rows, w) + (w > 1), cols + 3, rows, cols);
    a.flags = PTO_TF_PACK_A;
    a.imm[0] = (int32_t)w;
  } else if (pack == 'B') {
    t = dst_new(tdt, rows + 1, round_up(cols, w), rows, cols);
    a.flags = PTO_TF_PACK_B;
    a.imm[0] = (int32_t)w;
  } else if (trans) { /* the tile holds the transpose: load that view */
    t = dst_new(tdt, cols + 2, rows + 3, cols, rows);
    a.g.rows = cols;
    a.g.cols = rows;
    a.g.row_stride = b.g.col_stride;
    a.g.col_stride = b.g.row_stride;
  } else {
    t = dst_new(tdt, rows + 2, cols + 3, rows, cols);
  }
  a.dst[0] = t;
  run_on(T, PTO_OP_TLOAD, &a, ctx);
  if (!pack)
    return t;
  /* the layout, from core/isa.def */
  pto_tile *want = dst_new(tdt, t->rows, t->cols, rows, cols);
  /* q consecutive k per lane: 2 in a 2-byte tile, k padded to pairs */
  const uint32_t q = dsize(tdt) == 2 ? 2 : 1;
  uint32_t pr = pack == 'A' ? round_up(rows, w) : round_up(rows, q);
  uint32_t pc = pack == 'A' ? round_up(cols, q) : round_up(cols, w);
  for (uint32_t i = 0; i < pr; i++)
    for (uint32_t j = 0; j < pc; j++) {
      size_t ix = pack == 'A'
                      ? (size_t)(i / w) * w * t->stride +
                            (size_t)(j / q) * q * w + (i % w) * q + j % q
                      : (size_t)(j / w) * w * t->rows +
                            (size_t)(i / q) * q * w + (j % w) * q + i % q;
      unsigned char *p = (unsigned char *)want->data + ix * dsize(tdt);
      if (i < rows && j < cols)
        o_convert(tdt, p, gdt, gat(&b.g, i, j));
      else
        memset(p, 0, dsize(tdt));
    }
  char b1[64], b2[64];
  size_t n = (size_t)t->rows * t->stride;
  for (size_t ix = 0; ix < n; ix++) {
    const unsigned char *g = (unsigned char *)t->data + ix * dsize(tdt),
                        *e = (unsigned char *)want->data + ix * dsize(tdt);
    cr_assert(elem_same(tdt, g, e),
              "%s: packed %c element %zu is %s, expected %s", ctx, pack, ix,
              show(tdt, g, b1, sizeof b1), show(tdt, e, b2, sizeof b2));
  }
  return t;
}

static void packed_matmul(int op) {
  /* M N K; K = 64 ends A's panels on a whole step of AVX2's 8-k packer */
  static const uint32_t dims[][3] = {{13, 37, 29},  {1, 1, 1},     {24, 64, 1},
                                     {25, 70, 130}, {12, 32, 300}, {20, 24, 64},
                                     {26, 40, 601}};
  static const pto_dtype types[][2] = {/* global, tile */
                                       {PTO_F32, PTO_F32},
                                       {PTO_BF16, PTO_F32},
                                       {PTO_BF16, PTO_BF16},
                                       {PTO_F16, PTO_F32}};
  isa_list tables = tables_here();
  int acc = op == PTO_OP_TMATMUL_ACC;
  for (int ti = 0; ti < tables.n; ti++) {
    const pto_isa_table *T = tables.t[ti];
    cr_log_info("%s: table %s, panels %ux%u", pto__insn_name(op), T->name,
                T->mm_mr, T->mm_nr);
    const uint32_t widths[][2] = {{T->mm_mr, T->mm_nr}, {5, 7}};
    for (int wi = 0; wi < 2; wi++)
      for (int di = 0; di < 7; di++)
        for (int ty = 0; ty < 4; ty++)
          for (int fl = 0; fl < 16; fl++) {
            /* pack A, pack B, A transposed, B transposed: a packed operand
             * comes from a transposed view, an unpacked one is stored
             * transposed (TRANS_*) */
            int pa = fl & 1, pb = (fl >> 1) & 1, ta = (fl >> 2) & 1,
                tb = (fl >> 3) & 1;
            /* every dtype on one shape; bf16 into f32 tiles (the f32
             * engines' bf16 path) also on a larger one, past the SIMD
             * packers' 4- and 8-wide steps and their tails; bf16 tiles
             * (k in pairs: a bf16 engine's operands) on the larger ones,
             * odd K and K past one pass of the engine's k loop among them */
            if (ty > 0 && di != 0 && !(ty == 1 && di == 3) &&
                !(ty == 2 && di >= 3))
              continue;
            uint32_t M = dims[di][0], N = dims[di][1], K = dims[di][2];
            uint32_t mr = widths[wi][0], nr = widths[wi][1];
            char ctx[200];
            snprintf(ctx, sizeof ctx,
                     "%s on %s: %s<-%s M=%u N=%u K=%u A %s%s B %s%s panels "
                     "%ux%u",
                     pto__insn_name(op), T->name,
                     pto_dtype_name(types[ty][1]), pto_dtype_name(types[ty][0]),
                     M, N, K, pa ? "packed" : "plain",
                     ta ? (pa ? " from a transposed view" : " transposed") : "",
                     pb ? "packed" : "plain",
                     tb ? (pb ? " from a transposed view" : " transposed") : "",
                     mr, nr);
            rng r = rng_seed(seed_of(op, ti * 10 + wi, di * 4 + ty, fl));
            pto_gview ga, gb;
            pto_tile *A = operand_tile(T, &r, types[ty][0], types[ty][1], M, K,
                                       ta, pa ? 'A' : 0, ta, mr, &ga, ctx);
            pto_tile *B = operand_tile(T, &r, types[ty][0], types[ty][1], K, N,
                                       tb, pb ? 'B' : 0, tb, nr, &gb, ctx);
            pto_tile *d = mm_dst(&r, acc, M + 2, N + 5, M, N);
            pto_tile *want = tile_clone(d);
            /* every tile dtype holds the global values exactly */
            double *val = dbuf(d), *tol = dbuf(d);
            const mm_operand oa = {&ga, NULL, 0}, ob = {&gb, NULL, 0};
            mm_oracle(d, acc, K, &oa, &ob, val, tol);
            pto_targs a = {0};
            a.dst[0] = d;
            a.src[0] = A;
            a.src[1] = B;
            a.flags = (pa ? PTO_TF_PACK_A : ta ? PTO_TF_TRANS_A : 0) |
                      (pb ? PTO_TF_PACK_B : tb ? PTO_TF_TRANS_B : 0);
            a.imm[0] = pa ? (int32_t)mr : 0;
            a.imm[1] = pb ? (int32_t)nr : 0;
            /* windows to prefetch (pto_targs.ahead): the operands again,
             * one empty and one contiguous along neither axis; a hint the
             * result must not depend on */
            pto_gview ahead[4] = {ga, gb, ga, ga};
            ahead[2].rows = 0;
            ahead[3].row_stride = ahead[3].col_stride = 2;
            ahead[3].rows = ahead[3].cols = 1;
            a.ahead = ahead;
            a.n_ahead = di & 1 ? 0 : 4;
            run_on(T, op, &a, ctx);
            expect_tile(ctx, d, want, val, tol);
            free_all();
          }
  }
}

Test(tileops, packed_TMATMUL, .fini = free_all) {
  packed_matmul(PTO_OP_TMATMUL);
}

Test(tileops, packed_TMATMUL_ACC, .fini = free_all) {
  packed_matmul(PTO_OP_TMATMUL_ACC);
}

/* TMATMUL_RELU_WSUM on packed operands, on every table this CPU runs: the
 * tables' fast path (their own panel widths) and odd widths, groups that
 * straddle micro-kernel blocks (G not a multiple of the panel), partial
 * panels, and the causal mask. */
Test(tileops, packed_TMATMUL_RELU_WSUM, .fini = free_all) {
  /* R N K G */
  static const uint32_t dims[][4] = {
      {4, 48, 32, 4}, {3, 37, 29, 5}, {1, 1, 1, 1}, {8, 70, 128, 64},
      {2, 33, 300, 13}, {12, 16, 16, 1}};
  static const double diags[] = {NAN, 5, -2, 1000};
  isa_list tables = tables_here();
  const int op = PTO_OP_TMATMUL_RELU_WSUM;
  for (int ti = 0; ti < tables.n; ti++) {
    const pto_isa_table *T = tables.t[ti];
    const uint32_t widths[][2] = {{T->mm_mr, T->mm_nr}, {5, 7}};
    for (int wi = 0; wi < 2; wi++)
      for (int di = 0; di < 6; di++)
        for (int ci = 0; ci < 4; ci++)
          for (int tr = 0; tr < 4; tr++) { /* B from k^T, as the indexer */
            /* tr 2, 3: bf16 q and k, widened while packing (the f32
             * engines' bf16 path), on the shapes with whole SIMD steps */
            const pto_dtype gdt = tr < 2 ? PTO_F32 : PTO_BF16;
            if (gdt == PTO_BF16 && di != 1 && di != 3)
              continue;
            uint32_t R = dims[di][0], N = dims[di][1], K = dims[di][2],
                     G = dims[di][3], M = R * G;
            uint32_t mr = widths[wi][0], nr = widths[wi][1];
            double diag = diags[ci];
            int causal = !isnan(diag);
            char ctx[200];
            snprintf(ctx, sizeof ctx,
                     "%s on %s: %s R=%u G=%u N=%u K=%u panels %ux%u diag "
                     "%g%s",
                     pto__insn_name(op), T->name, pto_dtype_name(gdt), R, G, N,
                     K, mr, nr, diag,
                     tr & 1 ? ", B from a transposed view" : "");
            rng r = rng_seed(seed_of(op, ti * 10 + wi, di * 4 + ci, tr));
            pto_gview ga, gb;
            pto_tile *A = operand_tile(T, &r, gdt, PTO_F32, M, K, 0, 'A', 0, mr,
                                       &ga, ctx);
            pto_tile *B = operand_tile(T, &r, gdt, PTO_F32, K, N, tr & 1, 'B',
                                       0, nr, &gb, ctx);
            pto_tile *W = src_new(&r, PTO_F32, M + 3, 1, M, 1, G_MM);
            pto_tile *d = dst_new(PTO_F32, R + 1, N + 5, R, N);
            pto_tile *want = tile_clone(d);
            double *val = dbuf(d), *tol = dbuf(d);
            const mm_operand oa = {&ga, NULL, 0}, ob = {&gb, NULL, 0};
            wsum_oracle(d, G, K, &oa, &ob, W, causal, diag, val, tol);
            pto_targs a = {0};
            a.dst[0] = d;
            a.src[0] = A;
            a.src[1] = B;
            a.src[2] = W;
            a.flags = PTO_TF_PACK_A | PTO_TF_PACK_B |
                      (causal ? PTO_TF_CAUSAL : 0);
            a.imm[0] = (int32_t)mr;
            a.imm[1] = (int32_t)nr;
            a.s = causal ? diag : 0;
            run_on(T, op, &a, ctx);
            expect_tile(ctx, d, want, val, tol);
            free_all();
          }
  }
}

/* TMATMUL_ACC with PTO_TF_ROWSCALE (the online softmax's rescale of its
 * accumulator) on every table, packed (the tables' fast path) and plain:
 * dst * src2[r][0] + A x B. */
Test(tileops, rowscale_TMATMUL_ACC, .fini = free_all) {
  static const uint32_t dims[][3] = {{13, 37, 29}, {1, 1, 1}, {24, 64, 48}};
  isa_list tables = tables_here();
  const int op = PTO_OP_TMATMUL_ACC;
  for (int ti = 0; ti < tables.n; ti++) {
    const pto_isa_table *T = tables.t[ti];
    for (int di = 0; di < 3; di++)
      for (int pk = 0; pk < 2; pk++) {
        const uint32_t M = dims[di][0], N = dims[di][1], K = dims[di][2];
        char ctx[160];
        snprintf(ctx, sizeof ctx, "rowscale on %s: M=%u N=%u K=%u %s",
                 T->name, M, N, K, pk ? "packed" : "plain");
        rng r = rng_seed(seed_of(op, ti, di, pk));
        pto_gview ga, gb;
        pto_tile *A = operand_tile(T, &r, PTO_F32, PTO_F32, M, K, 0,
                                   pk ? 'A' : 0, 0, T->mm_mr, &ga, ctx);
        pto_tile *B = operand_tile(T, &r, PTO_F32, PTO_F32, K, N, 0,
                                   pk ? 'B' : 0, 0, T->mm_nr, &gb, ctx);
        pto_tile *f = src_new(&r, PTO_F32, M + 1, 3, M, 3, G_MM);
        pto_tile *d = mm_dst(&r, 1, M + 2, N + 5, M, N);
        pto_tile *want = tile_clone(d);
        double *val = dbuf(d), *tol = dbuf(d);
        const mm_operand oa = {&ga, NULL, 0}, ob = {&gb, NULL, 0};
        mm_oracle(d, 1, K, &oa, &ob, val, tol);
        for (uint32_t i = 0; i < M; i++) /* the oracle added d unscaled */
          for (uint32_t j = 0; j < N; j++) {
            size_t at = (size_t)i * d->stride + j;
            double c0 = getf(d, i, j), s0 = getf(f, i, 0);
            val[at] += c0 * s0 - c0;
            tol[at] += 1e-6 * fabs(c0 * s0);
          }
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = A;
        a.src[1] = B;
        a.src[2] = f;
        a.flags = PTO_TF_ROWSCALE | (pk ? PTO_TF_PACK_A | PTO_TF_PACK_B : 0);
        a.imm[0] = pk ? (int32_t)T->mm_mr : 0;
        a.imm[1] = pk ? (int32_t)T->mm_nr : 0;
        run_on(T, op, &a, ctx);
        expect_tile(ctx, d, want, val, tol);
        free_all();
      }
  }
}

