/* tileops: every instruction's facts (core/isa.h, core/isa.c) against its
 * scalar reference. For each instruction, random valid operands of its
 * class are made with every tile between canaries and every global view
 * in pages fenced by inaccessible ones; the reference runs twice, the
 * bytes of each view outside the part the table says it touches poisoned
 * differently each time, and:
 *  - it writes only the elements of its destinations the table's extent
 *    allows (the rest, the canaries and the sources keep their bytes);
 *  - it reads or writes a view only as the table's access says (a view it
 *    has none of sits on an inaccessible page; a read view keeps its
 *    bytes; a written one changes inside its part only), and within the
 *    part: its results do not depend on the poison;
 *  - the bytes column equals the part of each view it reads plus the bytes
 *    it was seen to write, and the flops column of a matmul 2 M N K of the
 *    shapes the test chose.
 * Also: the table's rows and classes agree (counts, roles, flags, global
 * access), each operand's dtypes are the ones the operand checks take (a
 * dtype outside them is refused with PTO_EDTYPE), the planner gives the
 * scratch the table declares, and the kernels with scratch (TMATMUL_GA,
 * TMATMUL_GB, TMATMUL_RELU_WSUM_G, TTOPK) work inside it on every table,
 * as the reference does, and fall back without it. A class without a
 * generator here fails the coverage test. */
#include <sys/mman.h>
#include <unistd.h>

#include "core/exe.h"
#include "tests/tileops_test.h"

#define GUARD 64     /* canary bytes on each side of a tile */
#define CANARY 0xc3  /* their value */
#define MAX_TILES 12 /* per instance, operands and the packing's inputs */

/* ---- an instance: an instruction's operands, guarded ------------------- */

typedef struct view {
  unsigned char *map; /* guard page, data pages, guard page */
  size_t map_bytes;
  unsigned char *data; /* the data pages */
  size_t data_bytes;
  unsigned char *mask; /* per data byte: in the part the table declares */
} view;

typedef struct inst {
  int op;
  pto_targs a;
  int n_tiles;
  pto_tile *tiles[MAX_TILES];
  unsigned char *buf[MAX_TILES]; /* each tile's bytes with its canaries */
  size_t bytes[MAX_TILES];
  view v[2];          /* a.g and a.g2 */
  uint64_t M, N, K;   /* a matmul's product, as made */
  int indices_unique; /* every index valid and distinct (bytes check) */
} inst;

static long page_size(void) {
  return sysconf(_SC_PAGESIZE);
}

/* A page nothing may touch: the base of the views an instruction has no
 * access to. */
static void *forbidden(void) {
  static void *p;
  if (!p) {
    p = mmap(NULL, (size_t)page_size(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    cr_assert(p != MAP_FAILED);
  }
  return p;
}

/* A tile between canaries, its bytes `fill` (gen < 0) or its valid region
 * random data of generator gen (the rest 0x5a). */
static pto_tile *tile(inst *x, rng *r, pto_dtype dt, uint32_t rows,
                      uint32_t cols, uint32_t vr, uint32_t vc, int gen) {
  cr_assert_lt(x->n_tiles, MAX_TILES);
  pto_tile *t = keep(calloc(1, sizeof *t));
  const size_t bytes = pto_tile_bytes(dt, rows, cols);
  unsigned char *b = keep(aligned_alloc(PTO_TILE_ALIGN, bytes + 2 * GUARD));
  memset(b, CANARY, GUARD);
  memset(b + GUARD + bytes, CANARY, GUARD);
  memset(b + GUARD, 0x5a, bytes);
  t->data = b + GUARD;
  t->dtype = dt;
  t->rows = rows;
  t->cols = cols;
  t->stride = pto_tile_stride(dt, cols);
  t->valid_rows = vr;
  t->valid_cols = vc;
  if (gen >= 0)
    fill_valid(r, t, gen);
  x->tiles[x->n_tiles] = t;
  x->buf[x->n_tiles] = b;
  x->bytes[x->n_tiles++] = bytes + 2 * GUARD;
  return t;
}

/* A tile of valid vr x vc in a capacity a little larger. */
static pto_tile *src(inst *x, rng *r, pto_dtype dt, uint32_t vr, uint32_t vc,
                     int gen) {
  return tile(x, r, dt, vr + below(r, 3), vc + below(r, 5), vr, vc, gen);
}
static pto_tile *dst(inst *x, rng *r, pto_dtype dt, uint32_t vr, uint32_t vc) {
  return tile(x, r, dt, vr + below(r, 3), vc + below(r, 5), vr, vc, -1);
}

/* A global view `which` (0: a.g, 1: a.g2) of rows x cols, row-major with a
 * padded row stride, its last element the last byte before a guard page,
 * two rows of room before its first (where a wild index would read), all
 * of it random data. */
static void view_new(inst *x, rng *r, int which, pto_dtype dt, int64_t rows,
                     int64_t cols) {
  const size_t es = dsize(dt), ps = (size_t)page_size();
  const int64_t rs = cols + below(r, 3);
  const size_t span = ((size_t)(rows - 1) * (size_t)rs + (size_t)cols) * es;
  const size_t need = span + 2 * (size_t)rs * es;
  const size_t pages = (need + ps - 1) / ps;
  view *v = &x->v[which];
  v->map_bytes = (pages + 2) * ps;
  v->map = mmap(NULL, v->map_bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert(v->map != MAP_FAILED);
  cr_assert_eq(mprotect(v->map, ps, PROT_NONE), 0);
  cr_assert_eq(mprotect(v->map + (pages + 1) * ps, ps, PROT_NONE), 0);
  v->data = v->map + ps;
  v->data_bytes = pages * ps;
  v->mask = keep(calloc(v->data_bytes, 1));
  for (size_t i = 0; i < v->data_bytes; i += es) /* finite */
    if (dt == PTO_F32) {
      const float f = (float)uniform(r, -2, 2);
      memcpy(v->data + i, &f, sizeof f);
    } else {
      gen_elem(r, dt, G_MM, v->data + i);
    }
  pto_gview *g = which ? &x->a.g2 : &x->a.g;
  g->base = v->data + v->data_bytes - span;
  g->dtype = dt;
  g->rows = rows;
  g->cols = cols;
  g->row_stride = rs;
  g->col_stride = 1;
}

static void inst_free(inst *x) {
  for (int w = 0; w < 2; w++)
    if (x->v[w].map)
      munmap(x->v[w].map, x->v[w].map_bytes);
}

/* ---- operand makers ----------------------------------------------------- */

static const pto_dtype all_dtypes[] = {PTO_F32, PTO_I32, PTO_BF16, PTO_F16};
static const pto_dtype mm_dtypes[] = {PTO_F32, PTO_BF16, PTO_F16};

static pto_dtype any_dtype(rng *r) {
  return all_dtypes[below(r, 4)];
}
static pto_dtype mm_dtype(rng *r) {
  return below(r, 2) ? PTO_F32 : mm_dtypes[below(r, 3)];
}
/* f32, or i32 where the instruction takes it */
static pto_dtype num_dtype(rng *r, int op) {
  return (pto__insn_operand(op, 1, 0).dtypes & PTO_DT_I32) && below(r, 2)
             ? PTO_I32
             : PTO_F32;
}
static uint32_t dim(rng *r, uint32_t most) {
  return 1 + below(r, most);
}
static uint32_t up(uint32_t v, uint32_t m) {
  return (v + m - 1) / m * m;
}

/* A matmul operand of valid vr x vc packed as TLOAD packs it (pack_a:
 * PTO_TF_PACK_A, else PACK_B) in panels of w, by the reference's TLOAD. */
static pto_tile *packed(inst *x, rng *r, pto_dtype dt, uint32_t vr, uint32_t vc,
                        int pack_a, uint32_t w) {
  const uint32_t q = dsize(dt) == 2 ? 2 : 1;
  pto_tile *t = tile(x, r, dt, pack_a ? up(vr, w) : up(vr, q),
                     pack_a ? up(vc, q) : up(vc, w), vr, vc, -1);
  float *vals = keep(malloc((size_t)vr * vc * sizeof *vals));
  for (size_t i = 0; i < (size_t)vr * vc; i++)
    vals[i] = (float)uniform(r, -2, 2);
  pto_targs la = {0};
  la.dst[0] = t;
  la.g = (pto_gview){vals, PTO_F32, vr, vc, vc, 1};
  la.flags = pack_a ? PTO_TF_PACK_A : PTO_TF_PACK_B;
  la.imm[0] = (int32_t)w;
  cr_assert_eq(pto__isa_scalar.fn[PTO_OP_TLOAD](PTO_OP_TLOAD, &la), PTO_OK);
  return t;
}

/* n distinct indices in [0, rows) in a 1 x n or n x 1 tile (unique), or
 * some of them outside. */
static pto_tile *indices(inst *x, rng *r, uint32_t n, int64_t rows,
                         int unique) {
  const int wide = below(r, 2);
  pto_tile *t = src(x, r, PTO_I32, wide ? 1 : n, wide ? n : 1, G_F32);
  int32_t *used = keep(calloc((size_t)rows, sizeof *used));
  for (uint32_t i = 0; i < n; i++) {
    int32_t v;
    do
      v = (int32_t)below(r, (uint32_t)rows);
    while (used[v]);
    used[v] = 1;
    if (!unique && below(r, 4) == 0)
      v = below(r, 2) ? -1 - (int32_t)below(r, 2) : (int32_t)rows;
    seti(t, wide ? 0 : i, wide ? i : 0, v);
  }
  return t;
}

/* ---- generators, one per operand class ---------------------------------- */

typedef void (*gen_fn)(inst *x, rng *r);

static void g_load(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = any_dtype(r), q = dsize(dt) == 2 ? 2 : 1;
  const int mode = below(r, 3); /* plain, PACK_A, PACK_B */
  const uint32_t w = dim(r, 8);
  if (mode == 0)
    x->a.dst[0] = dst(x, r, dt, vr, vc);
  else
    x->a.dst[0] =
        tile(x, r, dt, mode == 1 ? up(vr, w) : up(vr, q) + below(r, 2),
             mode == 1 ? up(vc, q) : up(vc, w), vr, vc, -1);
  x->a.flags = mode == 1 ? PTO_TF_PACK_A : mode == 2 ? PTO_TF_PACK_B : 0;
  x->a.imm[0] = mode ? (int32_t)w : 0;
  view_new(x, r, 0, any_dtype(r), vr + below(r, 3), vc + below(r, 3));
}
/* adding into g (PTO_TF_ACC): f32 values that change every element, so
 * that what it writes is seen */
static void g_store(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const int acc = below(r, 2);
  x->a.src[0] = src(x, r, acc ? PTO_F32 : any_dtype(r), vr, vc, G_MM);
  x->a.flags = acc ? PTO_TF_ACC : 0;
  view_new(x, r, 0, acc ? PTO_F32 : any_dtype(r), vr + below(r, 3),
           vc + below(r, 3));
}
static void g_mulstore(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  x->a.src[0] = src(x, r, PTO_F32, vr, vc, G_MM);
  x->a.src[1] = src(x, r, PTO_F32, vr, 1, G_MM);
  view_new(x, r, 0, PTO_F32, vr + below(r, 3), vc + below(r, 3));
}
static void g_loadmax(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  x->a.dst[0] = dst(x, r, PTO_F32, vr, vc);
  x->a.dst[1] = dst(x, r, PTO_F32, vr, 1);
  view_new(x, r, 0, PTO_F32, vr + below(r, 3), vc + below(r, 3));
}
static void g_loadstore(inst *x, rng *r) {
  g_loadmax(x, r);
  const pto_tile *d = x->a.dst[0];
  view_new(x, r, 1, PTO_F32, d->valid_rows, d->valid_cols + below(r, 3));
}
static void g_gather(inst *x, rng *r) {
  const uint32_t n = dim(r, 12), vc = dim(r, 30);
  const int64_t rows = n + below(r, 6);
  x->indices_unique = below(r, 3) != 0;
  x->a.src[0] = indices(x, r, n, rows, x->indices_unique);
  x->a.dst[0] = dst(x, r, any_dtype(r), n, vc);
  view_new(x, r, 0, any_dtype(r), rows, vc + below(r, 4));
}
static void g_gatherelse(inst *x, rng *r) {
  g_gather(x, r);
  const pto_tile *d = x->a.dst[0];
  x->a.src[1] = src(x, r, d->dtype, d->valid_rows, d->valid_cols, G_F32);
}
static void g_binary(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, dt, vr, vc, G_F32);
  x->a.src[1] = src(x, r, dt, vr, vc, G_DIV);
  x->a.dst[0] = dst(x, r, dt, vr, vc);
}
static void g_unary(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, dt, vr, vc, G_F32);
  x->a.dst[0] = dst(x, r, dt, vr, vc);
  x->a.s = uniform(r, -4, 4);
  x->a.imm[0] = (int32_t)below(r, 9) - 4;
}
static void g_cmp(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, dt, vr, vc, G_SMALL);
  x->a.src[1] = src(x, r, dt, vr, vc, G_SMALL);
  x->a.dst[0] = dst(x, r, PTO_I32, vr, vc);
  x->a.imm[0] = (int32_t)below(r, PTO_CMP_MODE_COUNT);
}
static void g_sel(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, PTO_I32, vr, vc, G_MASK);
  x->a.src[1] = src(x, r, dt, vr, vc, G_F32);
  x->a.src[2] = src(x, r, dt, vr, vc, G_F32);
  x->a.dst[0] = dst(x, r, dt, vr, vc);
}
static void g_convert(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  x->a.src[0] = src(x, r, any_dtype(r), vr, vc, G_F32);
  x->a.dst[0] = dst(x, r, any_dtype(r), vr, vc);
  x->a.flags = below(r, 2) ? PTO_TF_RELU : 0;
}
static void g_fill(inst *x, rng *r) {
  x->a.dst[0] = dst(x, r, num_dtype(r, x->op), dim(r, 12), dim(r, 40));
  x->a.s = uniform(r, -4, 4);
  x->a.imm[0] = (int32_t)below(r, 9) - 4;
}
static void g_rowred(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, dt, vr, vc, G_RED);
  x->a.dst[0] = dst(x, r, dt, vr, 1);
}
static void g_colred(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, dt, vr, vc, G_RED);
  x->a.dst[0] = dst(x, r, dt, 1, vc);
}
static void g_rowexpand(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, dt, vr, 1, G_F32);
  x->a.dst[0] = dst(x, r, dt, vr, vc);
}
static void g_colexpand(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, dt, 1, vc, G_F32);
  x->a.dst[0] = dst(x, r, dt, vr, vc);
}
static void g_rowexpand2(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, dt, vr, vc, G_F32);
  x->a.src[1] = src(x, r, dt, vr, 1, G_DIV);
  x->a.dst[0] = dst(x, r, dt, vr, vc);
}
static void g_rowexpsum(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  x->a.src[0] = src(x, r, PTO_F32, vr, vc, G_EXP);
  x->a.src[1] = src(x, r, PTO_F32, vr, 1, G_EXP);
  x->a.dst[0] = dst(x, r, PTO_F32, vr, vc);
  x->a.dst[1] = dst(x, r, PTO_F32, vr, 1);
}
static void g_colexpand2(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = num_dtype(r, x->op);
  x->a.src[0] = src(x, r, dt, vr, vc, G_F32);
  x->a.src[1] = src(x, r, dt, 1, vc, G_DIV);
  x->a.dst[0] = dst(x, r, dt, vr, vc);
}

/* TMATMUL, TMATMUL_ACC (acc), TMATMUL_RELU_WSUM (wsum): A and B plain,
 * transposed or packed. */
static void mm_common(inst *x, rng *r, int acc, int wsum) {
  const uint32_t R = wsum ? dim(r, 4) : 0, G = wsum ? dim(r, 4) : 0;
  const uint32_t M = wsum ? R * G : dim(r, 16), N = dim(r, 20), K = dim(r, 20);
  const int mode = below(r, 4); /* plain, TRANS_A, TRANS_B, packed */
  const uint32_t wa = dim(r, 8), wb = dim(r, 8);
  const pto_dtype adt = mm_dtype(r), bdt = mm_dtype(r);
  x->a.src[0] = mode == 3   ? packed(x, r, adt, M, K, 1, wa)
                : mode == 1 ? src(x, r, adt, K, M, G_MM)
                            : src(x, r, adt, M, K, G_MM);
  x->a.src[1] = mode == 3   ? packed(x, r, bdt, K, N, 0, wb)
                : mode == 2 ? src(x, r, bdt, N, K, G_MM)
                            : src(x, r, bdt, K, N, G_MM);
  x->a.flags = mode == 1   ? PTO_TF_TRANS_A
               : mode == 2 ? PTO_TF_TRANS_B
               : mode == 3 ? PTO_TF_PACK_A | PTO_TF_PACK_B
                           : 0;
  x->a.imm[0] = (int32_t)wa;
  x->a.imm[1] = (int32_t)wb;
  x->a.dst[0] = acc ? src(x, r, PTO_F32, wsum ? R : M, N, G_MM)
                    : dst(x, r, PTO_F32, wsum ? R : M, N);
  if (acc && below(r, 2)) {
    x->a.flags |= PTO_TF_ROWSCALE;
    x->a.src[2] = src(x, r, PTO_F32, M, 1, G_MM);
  }
  if (wsum) {
    x->a.src[2] = src(x, r, PTO_F32, M, 1, G_MM);
    if (below(r, 2)) {
      x->a.flags |= PTO_TF_CAUSAL;
      x->a.s = (double)((int)below(r, 7) - 3);
    }
  }
  x->M = M;
  x->N = N;
  x->K = K;
}
static void g_matmul(inst *x, rng *r) {
  mm_common(x, r, 0, 0);
}
static void g_matmul_acc(inst *x, rng *r) {
  mm_common(x, r, 1, 0);
}
static void g_matmul_wsum(inst *x, rng *r) {
  mm_common(x, r, 0, 1);
}
static void g_matmul_wsum_g(inst *x, rng *r) {
  const uint32_t R = dim(r, 4), G = dim(r, 4), M = R * G, N = dim(r, 20),
                 K = dim(r, 16), w = dim(r, 8);
  const pto_dtype qdt = mm_dtype(r);
  if (below(r, 2)) {
    x->a.src[0] = packed(x, r, qdt, K, M, 0, w);
    x->a.flags = PTO_TF_PACK_B;
    x->a.imm[1] = (int32_t)w;
  } else {
    x->a.src[0] = src(x, r, qdt, K, M, G_MM);
  }
  x->a.src[1] = src(x, r, PTO_F32, M, 1, G_MM);
  x->a.dst[0] = dst(x, r, PTO_F32, R, N);
  if (below(r, 2)) {
    x->a.flags |= PTO_TF_CAUSAL;
    x->a.s = (double)((int)below(r, 7) - 3);
  }
  view_new(x, r, 0, mm_dtype(r), N, K);
  x->M = M;
  x->N = N;
  x->K = K;
}
static void g_matmul_ga(inst *x, rng *r) {
  const uint32_t n = dim(r, 12), N = dim(r, 20), K = dim(r, 16), w = dim(r, 8);
  const int64_t rows = n + below(r, 6);
  x->indices_unique = below(r, 3) != 0;
  x->a.src[0] = indices(x, r, n, rows, x->indices_unique);
  const pto_dtype bdt = mm_dtype(r);
  if (below(r, 2)) {
    x->a.src[1] = packed(x, r, bdt, K, N, 0, w);
    x->a.flags = PTO_TF_PACK_B;
    x->a.imm[1] = (int32_t)w;
  } else {
    x->a.src[1] = src(x, r, bdt, K, N, G_MM);
  }
  x->a.dst[0] = dst(x, r, PTO_F32, n, N);
  view_new(x, r, 0, mm_dtype(r), rows, K + below(r, 3));
  x->M = n;
  x->N = N;
  x->K = K;
}
static void g_matmul_gb(inst *x, rng *r) {
  const uint32_t M = dim(r, 12), n = dim(r, 16), N = dim(r, 20), w = dim(r, 8);
  const int64_t rows = n + below(r, 6);
  const pto_dtype adt = mm_dtype(r);
  if (below(r, 2)) {
    x->a.src[0] = packed(x, r, adt, M, n, 1, w);
    x->a.flags = PTO_TF_PACK_A;
    x->a.imm[0] = (int32_t)w;
  } else {
    x->a.src[0] = src(x, r, adt, M, n, G_MM);
  }
  x->indices_unique = below(r, 3) != 0;
  x->a.src[1] = indices(x, r, n, rows, x->indices_unique);
  const int acc = below(r, 2);
  x->a.dst[0] = acc ? src(x, r, PTO_F32, M, N, G_MM) : dst(x, r, PTO_F32, M, N);
  if (acc) {
    x->a.flags |= PTO_TF_ACC;
    if (below(r, 2)) {
      x->a.flags |= PTO_TF_ROWSCALE;
      x->a.src[2] = src(x, r, PTO_F32, M, 1, G_MM);
    }
  }
  view_new(x, r, 0, mm_dtype(r), rows, N + below(r, 3));
  x->M = M;
  x->N = N;
  x->K = n;
}
/* an online softmax's state: alpha, a finite running max, a sum >= 0 */
static pto_tile *state(inst *x, rng *r, uint32_t M, int some_empty) {
  pto_tile *t = src(x, r, PTO_F32, M, 3, G_MM);
  for (uint32_t i = 0; i < M; i++) {
    setf(t, i, 0, 1.0f);
    setf(t, i, 1, (float)uniform(r, -4, 4));
    setf(t, i, 2,
         some_empty && below(r, 4) == 0 ? 0.0f : (float)uniform(r, 0, 8));
  }
  return t;
}
static void g_smonline(inst *x, rng *r) {
  const uint32_t M = dim(r, 10), N = dim(r, 16), w = dim(r, 8),
                 rows = dim(r, 20);
  const int tr = below(r, 2);
  x->a.src[0] =
      tr ? src(x, r, PTO_F32, N, M, G_MM) : src(x, r, PTO_F32, M, N, G_MM);
  pto_tile *ix = src(x, r, PTO_I32, 1, N, G_F32);
  for (uint32_t c = 0; c < N; c++)
    seti(ix, 0, c, (int32_t)below(r, rows + 4) - 2);
  x->a.src[1] = ix;
  x->a.dst[0] = tile(x, r, PTO_F32, up(M, w), N, M, N, -1);
  x->a.dst[1] = dst(x, r, PTO_F32, M, 3);
  x->a.imm[0] = (int32_t)w;
  x->a.imm[1] = (int32_t)rows;
  x->a.s = uniform(r, 0.05, 1);
  x->a.flags = tr ? PTO_TF_TRANS_A : 0;
  if (below(r, 2)) {
    x->a.flags |= PTO_TF_ACC;
    x->a.src[2] = state(x, r, M, 0);
  }
}
static void g_smfinal(inst *x, rng *r) {
  const uint32_t M = dim(r, 10), D = dim(r, 30);
  x->a.src[0] = src(x, r, PTO_F32, M, D, G_MM);
  x->a.src[1] = state(x, r, M, 1);
  x->a.dst[0] = dst(x, r, PTO_F32, M, D);
  x->a.dst[1] = dst(x, r, PTO_F32, M, 1);
}
static void g_extract(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40), dr = dim(r, vr),
                 dc = dim(r, vc);
  const pto_dtype dt = any_dtype(r);
  x->a.src[0] = src(x, r, dt, vr, vc, G_F32);
  x->a.dst[0] = dst(x, r, dt, dr, dc);
  x->a.imm[0] = (int32_t)below(r, vr - dr + 1);
  x->a.imm[1] = (int32_t)below(r, vc - dc + 1);
}
static void g_insert(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40), sr = dim(r, vr),
                 sc = dim(r, vc);
  const pto_dtype dt = any_dtype(r);
  x->a.src[0] = src(x, r, dt, sr, sc, G_F32);
  x->a.dst[0] = src(x, r, dt, vr, vc, G_F32);
  x->a.imm[0] = (int32_t)below(r, vr - sr + 1);
  x->a.imm[1] = (int32_t)below(r, vc - sc + 1);
}
static void g_trans(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = any_dtype(r);
  x->a.src[0] = src(x, r, dt, vr, vc, G_F32);
  x->a.dst[0] = dst(x, r, dt, vc, vr);
}
static void g_fillpad(inst *x, rng *r) {
  const uint32_t vr = dim(r, 12), vc = dim(r, 40);
  const pto_dtype dt = any_dtype(r);
  x->a.src[0] = src(x, r, dt, vr, vc, G_F32);
  x->a.dst[0] = tile(x, r, dt, vr + below(r, 4), vc + below(r, 9), 1, 1, -1);
  x->a.s = uniform(r, -4, 4);
}
static void sort_common(inst *x, rng *r, int merge) {
  const uint32_t vr = dim(r, 6), vc = dim(r, 70);
  x->a.src[0] = src(x, r, PTO_F32, vr, vc, G_SORT);
  x->a.src[1] = src(x, r, PTO_I32, vr, vc, G_F32);
  x->a.dst[0] = dst(x, r, PTO_F32, vr, vc);
  x->a.dst[1] = dst(x, r, PTO_I32, vr, vc);
  if (merge) {
    x->a.imm[0] = (int32_t)dim(r, 16);
    x->a.imm[1] = 2 + (int32_t)below(r, 3);
  }
}
static void g_sort32(inst *x, rng *r) {
  sort_common(x, r, 0);
}
static void g_mrgsort(inst *x, rng *r) {
  sort_common(x, r, 1);
}
static void topk_common(inst *x, rng *r, int merge) {
  const uint32_t vr = dim(r, 6), vc = dim(r, 60);
  const int masked = below(r, 2);
  const uint32_t kk = masked ? dim(r, vc + 4) : dim(r, vc);
  x->a.src[0] = src(x, r, PTO_F32, vr, vc, G_SORT);
  if (merge) {
    x->a.src[1] = src(x, r, PTO_I32, vr, vc, G_F32);
    x->a.imm[0] = (int32_t)((vc + 3) / 4 + below(r, 4));
    x->a.s = (double)below(r, 50);
  } else {
    x->a.imm[0] = (int32_t)below(r, 100);
  }
  x->a.imm[1] = masked;
  x->a.dst[0] = dst(x, r, PTO_F32, vr, kk);
  x->a.dst[1] = dst(x, r, PTO_I32, vr, kk);
}
static void g_topk(inst *x, rng *r) {
  topk_common(x, r, 0);
}
static void g_mrgtopk(inst *x, rng *r) {
  topk_common(x, r, 1);
}

static const gen_fn gens[PTO_CLASS_COUNT] = {
    [PTO_CLASS_LOAD] = g_load,
    [PTO_CLASS_STORE] = g_store,
    [PTO_CLASS_MULSTORE] = g_mulstore,
    [PTO_CLASS_LOADMAX] = g_loadmax,
    [PTO_CLASS_LOADEXPSUM] = g_loadmax,
    [PTO_CLASS_LOADSTORE] = g_loadstore,
    [PTO_CLASS_GATHER] = g_gather,
    [PTO_CLASS_GATHERELSE] = g_gatherelse,
    [PTO_CLASS_BINARY] = g_binary,
    [PTO_CLASS_UNARY] = g_unary,
    [PTO_CLASS_CMP] = g_cmp,
    [PTO_CLASS_SEL] = g_sel,
    [PTO_CLASS_CONVERT] = g_convert,
    [PTO_CLASS_SCALAR] = g_unary,
    [PTO_CLASS_FILL] = g_fill,
    [PTO_CLASS_ROWRED] = g_rowred,
    [PTO_CLASS_COLRED] = g_colred,
    [PTO_CLASS_ROWEXPAND] = g_rowexpand,
    [PTO_CLASS_ROWEXPAND2] = g_rowexpand2,
    [PTO_CLASS_ROWEXPDIF] = g_rowexpand2,
    [PTO_CLASS_ROWEXPSUM] = g_rowexpsum,
    [PTO_CLASS_COLEXPAND] = g_colexpand,
    [PTO_CLASS_COLEXPAND2] = g_colexpand2,
    [PTO_CLASS_MATMUL] = g_matmul,
    [PTO_CLASS_MATMUL_ACC] = g_matmul_acc,
    [PTO_CLASS_MATMUL_WSUM] = g_matmul_wsum,
    [PTO_CLASS_MATMUL_WSUM_G] = g_matmul_wsum_g,
    [PTO_CLASS_MATMUL_GA] = g_matmul_ga,
    [PTO_CLASS_MATMUL_GB] = g_matmul_gb,
    [PTO_CLASS_SMONLINE] = g_smonline,
    [PTO_CLASS_SMFINAL] = g_smfinal,
    [PTO_CLASS_EXTRACT] = g_extract,
    [PTO_CLASS_INSERT] = g_insert,
    [PTO_CLASS_TRANS] = g_trans,
    [PTO_CLASS_FILLPAD] = g_fillpad,
    [PTO_CLASS_SORT32] = g_sort32,
    [PTO_CLASS_MRGSORT] = g_mrgsort,
    [PTO_CLASS_TOPK] = g_topk,
    [PTO_CLASS_MRGTOPK] = g_mrgtopk,
};

/* A valid instance of op from seed; the views it has no access to on the
 * forbidden page. */
static void inst_make(inst *x, int op, uint64_t seed) {
  memset(x, 0, sizeof *x);
  x->op = op;
  rng r = rng_seed(seed);
  gens[pto__insn_info(op)->cls](x, &r);
  const pto_insn_facts *f = pto__insn_facts(op);
  if (f->g == PTO_GA_NONE)
    x->a.g = (pto_gview){forbidden(), PTO_F32, 1, 1, 1, 1};
  if (f->g2 == PTO_GA_NONE)
    x->a.g2 = (pto_gview){forbidden(), PTO_F32, 1, 1, 1, 1};
  char msg[256];
  int st = pto__tileop_check(op, &x->a, msg, sizeof msg);
  cr_assert_eq(st, PTO_OK,
               "%s (seed %llu): the generator made operands the "
               "check refuses: %s",
               pto__insn_name(op), (unsigned long long)seed, msg);
}

/* ---- the part of a view the table declares ------------------------------ */

static int picked(const inst *x, int64_t row) {
  for (int s = 0; s < pto__insn_n_src(x->op, x->a.flags); s++) {
    if (pto__insn_operand(x->op, 0, s).role != PTO_ROLE_INDEX)
      continue;
    const pto_tile *t = x->a.src[s];
    for (uint32_t i = 0; i < t->valid_rows * t->valid_cols; i++)
      if (pto__index_at(t, i) == row)
        return 1;
  }
  return 0;
}

/* Marks the bytes of the part of view w that op touches (core/isa.h
 * pto_gpart); returns their number. */
static size_t mark_part(inst *x, int w, const pto_insn_shape *sh) {
  const pto_insn_facts *f = pto__insn_facts(x->op);
  const int part = w ? f->g2part : f->gpart;
  const pto_gview *g = w ? &x->a.g2 : &x->a.g;
  view *v = &x->v[w];
  const size_t es = dsize(g->dtype);
  const uint64_t gc = pto__insn_gcols_of(sh);
  size_t n = 0;
  for (int64_t r = 0; r < g->rows; r++)
    for (int64_t c = 0; c < g->cols; c++) {
      int in = 0;
      switch (part) {
      case PTO_GP_DST0:
        in = r < sh->dst[0][0] && c < sh->dst[0][1];
        break;
      case PTO_GP_SRC0:
        in = r < sh->src[0][0] && c < sh->src[0][1];
        break;
      case PTO_GP_ROWS:
        in = (uint64_t)c < gc && picked(x, r);
        break;
      case PTO_GP_ALL:
        in = 1;
        break;
      default:
        break;
      }
      if (!in)
        continue;
      unsigned char *p = gat(g, r, c);
      cr_assert(p >= v->data && p + es <= v->data + v->data_bytes);
      memset(v->mask + (p - v->data), 1, es);
      n += es;
    }
  return n;
}

/* ---- running an instance and checking its facts ------------------------- */

static int is_src(const inst *x, const pto_tile *t) {
  for (int s = 0; s < PTO_MAX_SRC; s++)
    if (x->a.src[s] == t)
      return 1;
  return 0;
}

static void check_instance(inst *x, const char *ctx) {
  const int op = x->op;
  const pto_insn_facts *f = pto__insn_facts(op);
  const pto_insn_info *info = pto__insn_info(op);
  pto_insn_shape sh;
  pto__shape_of(op, &x->a, 0, &sh);
  const int acc = pto__facts_acc(f, x->a.flags);
  const int access[2] = {f->g, f->g2};
  size_t part[2] = {0, 0};
  for (int w = 0; w < 2; w++)
    if (access[w] != PTO_GA_NONE)
      part[w] = mark_part(x, w, &sh);
  /* what the first run starts from, and what it leaves */
  unsigned char *snap[MAX_TILES], *out[MAX_TILES], *vsnap[2] = {NULL, NULL},
                                                   *vout[2] = {NULL, NULL},
                                                   *vbefore[2] = {NULL, NULL};
  pto_tile tsnap[MAX_TILES];
  size_t written[2] = {0, 0};
  unsigned char *wmask[2] = {NULL, NULL};
  for (int i = 0; i < x->n_tiles; i++) {
    snap[i] = keep(malloc(x->bytes[i]));
    out[i] = keep(malloc(x->bytes[i]));
    memcpy(snap[i], x->buf[i], x->bytes[i]);
    tsnap[i] = *x->tiles[i];
  }
  for (int w = 0; w < 2; w++)
    if (x->v[w].map) {
      vsnap[w] = keep(malloc(x->v[w].data_bytes));
      vout[w] = keep(malloc(x->v[w].data_bytes));
      vbefore[w] = keep(malloc(x->v[w].data_bytes));
      wmask[w] = keep(calloc(x->v[w].data_bytes, 1));
      memcpy(vsnap[w], x->v[w].data, x->v[w].data_bytes);
    }
  /* outside the parts, poison of another value in each run; a part only
   * written (not added into), poisoned too, so that what is written shows
   * in one run or the other */
  static const unsigned char poison[2] = {0xa5, 0x3c};
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < x->n_tiles; i++) {
      memcpy(x->buf[i], snap[i], x->bytes[i]);
      *x->tiles[i] = tsnap[i];
    }
    for (int w = 0; w < 2; w++) {
      view *v = &x->v[w];
      if (!v->map)
        continue;
      const int fresh = access[w] == PTO_GA_WRITE && !(acc && !w);
      for (size_t b = 0; b < v->data_bytes; b++)
        v->data[b] = v->mask[b] && !fresh ? vsnap[w][b] : poison[pass];
      memcpy(vbefore[w], v->data, v->data_bytes);
    }
    const int rc = pto__isa_scalar.fn[op](op, &x->a);
    cr_assert_eq(rc, PTO_OK, "%s: the reference failed: %d", ctx, rc);
    for (int i = 0; i < x->n_tiles; i++) {
      const unsigned char *b = x->buf[i];
      const size_t n = x->bytes[i];
      for (size_t k = 0; k < GUARD; k++)
        cr_assert(b[k] == CANARY && b[n - 1 - k] == CANARY,
                  "%s: it wrote past a tile (tile %d, %zu bytes from an "
                  "edge)",
                  ctx, i, k);
    }
    /* the extents are the arguments' before the run (TFILLPAD sets its
     * destination's valid region) */
    pto_targs pre = x->a;
    for (int i = 0; i < x->n_tiles; i++)
      for (int k = 0; k < PTO_MAX_DST; k++)
        if (x->a.dst[k] == x->tiles[i])
          pre.dst[k] = &tsnap[i];
    for (int i = 0; i < x->n_tiles; i++) {
      const pto_tile *t = x->tiles[i];
      int d = -1;
      for (int k = 0; k < info->n_dst; k++)
        if (x->a.dst[k] == t)
          d = k;
      if (d < 0 && is_src(x, t)) {
        cr_assert(!memcmp(x->buf[i], snap[i], x->bytes[i]),
                  "%s: it wrote a source", ctx);
        continue;
      }
      if (d < 0)
        continue; /* a packing's input */
      const size_t es = dsize(t->dtype), n = (size_t)t->rows * t->stride;
      for (size_t e = 0; e < n; e++)
        if (!pto__insn_may_write(op, d, &pre, e))
          cr_assert(
              !memcmp(x->buf[i] + GUARD + e * es, snap[i] + GUARD + e * es, es),
              "%s: dst%d element (%zu, %zu) is outside the extent the "
              "table declares (%d) but was written",
              ctx, d, e / t->stride, e % t->stride,
              pto__insn_operand(op, 1, d).writes);
    }
    for (int w = 0; w < 2; w++) { /* written: an element any byte of */
      view *v = &x->v[w];
      if (!v->map)
        continue;
      const size_t es = dsize(w ? x->a.g2.dtype : x->a.g.dtype);
      for (size_t b = 0; b < v->data_bytes; b += es) {
        if (!memcmp(v->data + b, vbefore[w] + b, es))
          continue;
        cr_assert(access[w] == PTO_GA_WRITE,
                  "%s: it wrote view %d, which the table says it only reads",
                  ctx, w);
        cr_assert(v->mask[b],
                  "%s: it wrote byte %zu of view %d, outside the part the "
                  "table declares",
                  ctx, b, w);
        memset(wmask[w] + b, 1, es);
      }
    }
    /* the results, the same whatever lies outside the parts */
    for (int i = 0; i < x->n_tiles; i++) {
      if (pass == 0)
        memcpy(out[i], x->buf[i], x->bytes[i]);
      else
        cr_assert(!memcmp(out[i], x->buf[i], x->bytes[i]),
                  "%s: a result depends on memory outside the parts the "
                  "table declares (tile %d)",
                  ctx, i);
    }
    for (int w = 0; w < 2; w++) {
      view *v = &x->v[w];
      for (size_t b = 0; v->map && b < v->data_bytes; b++) {
        if (!v->mask[b])
          continue;
        if (pass == 0)
          vout[w][b] = v->data[b];
        else
          cr_assert_eq(vout[w][b], v->data[b],
                       "%s: what it wrote to view %d depends on memory "
                       "outside the parts the table declares",
                       ctx, w);
      }
    }
  }
  for (int w = 0; w < 2; w++)
    for (size_t b = 0; wmask[w] && b < x->v[w].data_bytes; b++)
      written[w] += wmask[w][b];
  /* bytes: the parts read, and what was seen written */
  uint64_t want = 0;
  for (int w = 0; w < 2; w++) {
    if (access[w] == PTO_GA_READ || (access[w] == PTO_GA_WRITE && acc && !w))
      want += part[w];
    if (access[w] == PTO_GA_WRITE) {
      want += written[w];
      cr_assert_eq(written[w], part[w],
                   "%s: it wrote %zu bytes of view %d, its part is %zu", ctx,
                   written[w], w, part[w]);
    }
  }
  if (x->indices_unique || f->gpart != PTO_GP_ROWS)
    cr_assert_eq(pto__insn_bytes_of(&sh), want,
                 "%s: the bytes column says %llu, it touched %llu", ctx,
                 (unsigned long long)pto__insn_bytes_of(&sh),
                 (unsigned long long)want);
  /* the local footprint: its tiles' bytes (and its scratch), all in UB
   * on a vector core, in the levels the table gives them on a cube */
  uint32_t rc[PTO_MAX_SRC + PTO_MAX_DST][2] = {{0, 0}};
  uint64_t total = pto__insn_scratch_of(&sh);
  for (int k = 0; k < sh.n_src + sh.n_dst; k++) {
    const int is_dst = k >= sh.n_src, j = is_dst ? k - sh.n_src : k;
    const pto_tile *t = is_dst ? x->a.dst[j] : x->a.src[j];
    rc[is_dst ? PTO_MAX_SRC + j : j][0] = t->rows;
    rc[is_dst ? PTO_MAX_SRC + j : j][1] = t->cols;
    total += pto_tile_bytes(t->dtype, t->rows, t->cols);
  }
  for (int c = 0; c < 2; c++) {
    uint64_t lv[PTO_MEM_LEVEL_COUNT] = {0}, sum = 0;
    pto__insn_footprint(&sh, c ? PTO_CORE_CUBE : PTO_CORE_VECTOR, &rc[0][0],
                        lv);
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
      sum += lv[l];
    cr_assert_eq(sum, total, "%s: footprint %llu bytes, its tiles %llu", ctx,
                 (unsigned long long)sum, (unsigned long long)total);
    cr_assert(c || lv[PTO_MEM_UB] == total,
              "%s: a vector core's footprint outside UB", ctx);
  }
  if (info->family == PTO_FAMILY_MATMUL)
    cr_assert_eq(pto__insn_flops_of(&sh), 2 * x->M * x->N * x->K,
                 "%s: the flops column says %llu, 2 M N K = 2 x %llu x %llu "
                 "x %llu",
                 ctx, (unsigned long long)pto__insn_flops_of(&sh),
                 (unsigned long long)x->M, (unsigned long long)x->N,
                 (unsigned long long)x->K);
}

/* One test per instruction, generated from the list. */
#define ROUNDS 24
static void facts_of(int op) {
  for (int k = 0; k < ROUNDS; k++) {
    inst x;
    const uint64_t seed = seed_of(op, k, 0xfac7, 0);
    inst_make(&x, op, seed);
    char ctx[96];
    snprintf(ctx, sizeof ctx, "%s (seed %llu)", pto__insn_name(op),
             (unsigned long long)seed);
    check_instance(&x, ctx);
    inst_free(&x);
    free_all();
  }
}

#define PTO_INSN(name, fam, core, nsrc, ndst, cls, flags)                      \
  Test(tileops, facts_##name, .fini = free_all) {                              \
    facts_of(PTO_OP_##name);                                                   \
  }
#include "core/isa.def"
#undef PTO_INSN

/* ---- the table's own agreement ------------------------------------------ */

/* Every instruction has a class with facts that fit its row, and a
 * generator here. */
Test(tileops, facts_coverage) {
  int bad = 0;
  for (int op = 0; op < PTO_OP_COUNT; op++) {
    const pto_insn_info *i = pto__insn_info(op);
    const pto_insn_facts *f = pto__insn_facts(op);
    const char *n = i->name;
#define BAD(...)                                                               \
  do {                                                                         \
    cr_log_error(__VA_ARGS__);                                                 \
    bad++;                                                                     \
  } while (0)
    if (i->cls == PTO_CLASS_CUSTOM || i->cls >= PTO_CLASS_COUNT) {
      BAD("%s has no class of facts", n);
      continue;
    }
    if (!gens[i->cls])
      BAD("%s: class %s has no generator in tests/test_tileops_facts.c", n,
          pto__class_name(i->cls));
    const int opt = f->src_if != 0;
    for (int r = 0; r < PTO_MAX_SRC; r++) {
      const pto_operand o = pto__insn_operand(op, 0, r);
      const int want = r < i->n_src + opt;
      if ((o.role != PTO_ROLE_NONE) != want || (want && !o.dtypes))
        BAD("%s: source %d %s in its class %s", n, r,
            want ? "has no role or no dtype" : "is declared",
            pto__class_name(i->cls));
    }
    for (int d = 0; d < PTO_MAX_DST; d++) {
      const pto_operand o = pto__insn_operand(op, 1, d);
      const int want = d < i->n_dst;
      if ((o.role != PTO_ROLE_NONE) != want || (want && !o.dtypes))
        BAD("%s: destination %d %s in its class %s", n, d,
            want ? "has no role or no dtype" : "is declared",
            pto__class_name(i->cls));
    }
    if (((i->flags & PTO_IF_GLOBAL) != 0) != (f->g != PTO_GA_NONE))
      BAD("%s: PTO_IF_GLOBAL and its global access disagree", n);
    if (((i->flags & PTO_IF_STORE2) != 0) != (f->g2 == PTO_GA_WRITE))
      BAD("%s: PTO_IF_STORE2 and its second view's access disagree", n);
    if ((f->g != PTO_GA_NONE) != (f->gpart != PTO_GP_NONE) ||
        (f->g != PTO_GA_NONE && !f->gdtypes))
      BAD("%s: its global view has no part or no dtypes", n);
    if (f->gpart == PTO_GP_ROWS) {
      int ix = 0;
      for (int r = 0; r < i->n_src; r++)
        ix |= pto__insn_operand(op, 0, r).role == PTO_ROLE_INDEX;
      if (!ix || !f->gcols)
        BAD("%s reads rows by index without an index or columns", n);
    }
    if (i->family == PTO_FAMILY_MATMUL && !f->flops)
      BAD("%s is a matmul without flops", n);
    if (f->acc_if && f->acc_if != PTO_ACC_ALWAYS &&
        f->dst[0].role != PTO_ROLE_MM_C && f->g != PTO_GA_WRITE)
      BAD("%s accumulates into neither a matmul result nor its view", n);
#undef BAD
  }
  cr_expect_eq(bad, 0, "%d facts missing or inconsistent", bad);
  cr_expect_geq(pto__insn_copy(), 0, "no instruction copies a tile");
}

/* Each operand's dtypes are the operand checks': a dtype outside them is
 * refused. */
Test(tileops, facts_dtypes, .fini = free_all) {
  for (int op = 0; op < PTO_OP_COUNT; op++)
    for (int k = 0; k < 4; k++) {
      const uint64_t seed = seed_of(op, k, 0xd7, 0);
      inst x;
      inst_make(&x, op, seed);
      const int n_src = pto__insn_n_src(op, x.a.flags);
      const pto_insn_facts *f = pto__insn_facts(op);
      for (int s = 0; s < n_src + pto__insn_info(op)->n_dst; s++) {
        const int is_dst = s >= n_src, j = is_dst ? s - n_src : s;
        const pto_operand o = pto__insn_operand(op, is_dst, j);
        const pto_tile *t = is_dst ? x.a.dst[j] : x.a.src[j];
        for (int dt = 0; dt < PTO_DTYPE_COUNT; dt++) {
          if (o.dtypes & PTO_DT(dt))
            continue;
          pto_targs a = x.a;
          rng r = rng_seed(seed);
          pto_tile *u = tile(&x, &r, (pto_dtype)dt, t->rows, t->cols,
                             t->valid_rows, t->valid_cols, -1);
          x.n_tiles--; /* not an operand of x's runs */
          if (is_dst)
            a.dst[j] = u;
          else
            a.src[j] = u;
          char msg[256];
          int st = pto__tileop_check(op, &a, msg, sizeof msg);
          cr_expect_eq(st, PTO_EDTYPE,
                       "%s (seed %llu): %s %d as %s: the table refuses it, "
                       "the check says %d (%s)",
                       pto__insn_name(op), (unsigned long long)seed,
                       is_dst ? "dst" : "src", j, pto_dtype_name(dt), st, msg);
        }
      }
      for (int w = 0; w < 2; w++) {
        const int acc = w ? f->g2 : f->g;
        const uint16_t ok = w ? f->g2dtypes : f->gdtypes;
        for (int dt = 0; acc != PTO_GA_NONE && dt < PTO_DTYPE_COUNT; dt++) {
          if ((ok & PTO_DT(dt)) ||
              dsize(dt) != dsize(w ? x.a.g2.dtype : x.a.g.dtype))
            continue; /* same element size: the same window */
          pto_targs a = x.a;
          (w ? &a.g2 : &a.g)->dtype = (pto_dtype)dt;
          char msg[256];
          int st = pto__tileop_check(op, &a, msg, sizeof msg);
          cr_expect_eq(st, PTO_EDTYPE,
                       "%s (seed %llu): view %d as %s: the table refuses "
                       "it, the check says %d (%s)",
                       pto__insn_name(op), (unsigned long long)seed, w,
                       pto_dtype_name(dt), st, msg);
        }
      }
      inst_free(&x);
    }
}

/* ---- scratch ------------------------------------------------------------ */

/* Runs op's table entry with a scratch tile of exactly the bytes the table
 * declares, between canaries, and checks the kernel kept to it and took
 * its fast path (no fallback to the reference); then without scratch,
 * where it must fall back (when falls_back) and still agree. Results match
 * the reference's within tol (0: bit for bit). */
static void scratch_run(const pto_isa_table *T, int op, pto_targs *a, int n_res,
                        float tol, int falls_back, const char *what) {
  const pto_insn_info *info = pto__insn_info(op);
  pto_insn_shape sh;
  pto__shape_of(op, a, T->mm_mr, &sh);
  const uint64_t need = pto__insn_scratch_of(&sh);
  cr_assert_gt(need, 0, "%s: the table declares no scratch for this case",
               what);
  /* the reference's results */
  pto_tile *want[2];
  for (int d = 0; d < n_res; d++) {
    want[d] = tile_clone(a->dst[d]);
  }
  pto_targs ra = *a;
  for (int d = 0; d < n_res; d++)
    ra.dst[d] = want[d];
  cr_assert_eq(pto__isa_scalar.fn[op](op, &ra), PTO_OK);
  pto_tile *keep0[2];
  for (int d = 0; d < n_res; d++)
    keep0[d] = tile_clone(a->dst[d]);
  for (int with = 1; with >= 0; with--) {
    pto_targs sa = *a;
    for (int d = 0; d < n_res; d++) {
      sa.dst[d] = tile_clone(keep0[d]);
    }
    inst holder = {0};
    rng r = rng_seed(1);
    pto_tile *s = NULL;
    if (with) {
      const uint32_t rows = (uint32_t)((need + 63) / 64);
      s = tile(&holder, &r, PTO_I32, rows, 16, rows, 16, -1);
      sa.dst[info->n_dst] = s;
      sa.flags |= PTO_TF_SCRATCH;
      cr_assert_eq(pto__tileop_check(op, &sa, NULL, 0), PTO_OK);
    }
    const uint64_t refs = pto__ref_calls;
    cr_assert_eq(T->fn[op](op, &sa), PTO_OK);
    const uint64_t fell = pto__ref_calls - refs;
    if (with) {
      cr_expect_eq(fell, 0,
                   "%s on %s: given its scratch, it still ran the "
                   "reference",
                   what, T->name);
      const unsigned char *b = holder.buf[0];
      for (size_t k = 0; k < GUARD; k++)
        cr_assert(b[k] == CANARY && b[holder.bytes[0] - 1 - k] == CANARY,
                  "%s on %s: it wrote past its scratch", what, T->name);
    } else if (falls_back) {
      cr_expect_gt(fell, 0, "%s on %s: without scratch it did not fall back",
                   what, T->name);
    }
    for (int d = 0; d < n_res; d++) {
      const pto_tile *g = sa.dst[d], *w = want[d];
      for (uint32_t i = 0; i < w->valid_rows; i++)
        for (uint32_t j = 0; j < w->valid_cols; j++) {
          if (w->dtype == PTO_I32) {
            cr_assert_eq(geti(g, i, j), geti(w, i, j),
                         "%s on %s (%s scratch): dst%d (%u, %u)", what, T->name,
                         with ? "with" : "without", d, i, j);
            continue;
          }
          const float x = getf(g, i, j), y = getf(w, i, j);
          if (tol == 0 || isnan(y) || isinf(y))
            cr_assert(!memcmp(el(g, i, j), el(w, i, j), 4),
                      "%s on %s (%s scratch): dst%d (%u, %u) = %g, the "
                      "reference's %g",
                      what, T->name, with ? "with" : "without", d, i, j, x, y);
          else
            cr_assert(fabsf(x - y) <= tol * (1 + fabsf(y)),
                      "%s on %s (%s scratch): dst%d (%u, %u) = %g, the "
                      "reference's %g",
                      what, T->name, with ? "with" : "without", d, i, j, x, y);
        }
    }
  }
}

/* A plain f32 global of rows x cols of values in [-2, 2]. */
static pto_gview table_f32(rng *r, int64_t rows, int64_t cols) {
  float *v = keep(malloc((size_t)(rows * cols) * sizeof *v));
  for (int64_t i = 0; i < rows * cols; i++)
    v[i] = (float)uniform(r, -2, 2);
  return (pto_gview){v, PTO_F32, rows, cols, cols, 1};
}
static pto_gview table_bf16(rng *r, int64_t rows, int64_t cols) {
  uint16_t *v = keep(malloc((size_t)(rows * cols) * sizeof *v));
  for (int64_t i = 0; i < rows * cols; i++)
    v[i] = round_half(uniform(r, -2, 2), 0);
  return (pto_gview){v, PTO_BF16, rows, cols, cols, 1};
}

static const pto_isa_table *simd_table(int k) {
  isa_list l = tables_here();
  return k + 1 < l.n ? l.t[k + 1] : NULL;
}

Test(tileops, scratch_ttopk, .fini = free_all) {
  for (int k = 0; simd_table(k); k++) {
    const pto_isa_table *T = simd_table(k);
    if (T->fn[PTO_OP_TTOPK] == pto__isa_scalar.fn[PTO_OP_TTOPK])
      continue;
    rng r = rng_seed(77);
    inst x = {0};
    const uint32_t vc = 6000, kk = 4500; /* more than PTO_TOPK_BUF kept */
    pto_targs a = {0};
    a.src[0] = src(&x, &r, PTO_F32, 2, vc, G_F32);
    a.dst[0] = tile(&x, &r, PTO_F32, 2, kk, 2, kk, -1);
    a.dst[1] = tile(&x, &r, PTO_I32, 2, kk, 2, kk, -1);
    a.imm[0] = 11;
    scratch_run(T, PTO_OP_TTOPK, &a, 2, 0, 0, "TTOPK 2 x 6000, 4500 kept");
  }
}

Test(tileops, scratch_tmatmul_gb, .fini = free_all) {
  for (int k = 0; simd_table(k); k++) {
    const pto_isa_table *T = simd_table(k);
    rng r = rng_seed(78);
    inst x = {0};
    const uint32_t M = 2 * T->mm_mr + 1, n = 40, N = 2 * T->mm_nr + 3;
    pto_targs a = {0};
    a.src[0] = packed(&x, &r, PTO_F32, M, n, 1, T->mm_mr);
    pto_tile *ix = src(&x, &r, PTO_I32, 1, n, G_F32);
    for (uint32_t t = 0; t < n; t++) /* an invalid slot in the middle */
      seti(ix, 0, t, t == 7 ? -1 : (int32_t)(3 * t));
    a.src[1] = ix;
    a.dst[0] = dst(&x, &r, PTO_F32, M, N);
    a.g = table_f32(&r, 3 * n, N + 5);
    a.flags = PTO_TF_PACK_A;
    a.imm[0] = (int32_t)T->mm_mr;
    scratch_run(T, PTO_OP_TMATMUL_GB, &a, 1, 1e-5f, 1,
                "TMATMUL_GB with an invalid slot inside");
  }
}

/* TMATMUL and TMATMUL_ACC on operands the plan left unpacked (tiles a
 * tile program computed): packed by the kernel into the scratch the table
 * declares, plain or transposed, one operand packed already, with a row
 * scale; the reference without it. */
Test(tileops, scratch_tmatmul_unpacked, .fini = free_all) {
  for (int k = 0; simd_table(k); k++) {
    const pto_isa_table *T = simd_table(k);
    for (int v = 0; v < 6; v++) {
      rng r = rng_seed(90 + (uint64_t)v);
      inst x = {0};
      const uint32_t M = 2 * T->mm_mr + 3, N = T->mm_nr + 5, K = 37;
      const int op = v >= 3 ? PTO_OP_TMATMUL_ACC : PTO_OP_TMATMUL;
      const int ta = v == 1, tb = v == 2 || v == 5;
      pto_targs a = {0};
      if (v == 4) { /* A packed by its load, B computed */
        a.src[0] = packed(&x, &r, PTO_F32, M, K, 1, T->mm_mr);
        a.flags |= PTO_TF_PACK_A;
        a.imm[0] = (int32_t)T->mm_mr;
      } else {
        a.src[0] = ta ? src(&x, &r, PTO_F32, K, M, G_MM)
                      : src(&x, &r, PTO_F32, M, K, G_MM);
      }
      a.src[1] = tb ? src(&x, &r, PTO_F32, N, K, G_MM)
                    : src(&x, &r, PTO_F32, K, N, G_MM);
      a.dst[0] = dst(&x, &r, PTO_F32, M, N);
      for (uint32_t i = 0; i < M; i++)
        for (uint32_t j = 0; j < N; j++)
          setf(a.dst[0], i, j, (float)uniform(&r, -2, 2));
      if (v == 5) { /* the online softmax's rescale */
        a.src[2] = src(&x, &r, PTO_F32, M, 1, G_MM);
        a.flags |= PTO_TF_ROWSCALE;
      }
      a.flags |= (ta ? PTO_TF_TRANS_A : 0) | (tb ? PTO_TF_TRANS_B : 0);
      char what[96];
      snprintf(what, sizeof what, "%s M=%u N=%u K=%u%s%s%s%s",
               pto__insn_name(op), M, N, K, ta ? " trans_a" : "",
               tb ? " trans_b" : "", v == 4 ? " A packed" : "",
               v == 5 ? " rowscale" : "");
      scratch_run(T, op, &a, 1, 1e-4f, 1, what);
    }
  }
}

Test(tileops, scratch_tmatmul_ga, .fini = free_all) {
  for (int k = 0; simd_table(k); k++) {
    const pto_isa_table *T = simd_table(k);
    for (int bf = 0; bf < 2; bf++) {
      rng r = rng_seed(79 + (uint64_t)bf);
      inst x = {0};
      /* past PTO_GA_SLOTS_STACK slots, or a bf16 table of K past
       * PTO_WIDEN_K_STACK */
      const uint32_t n = bf ? 20 : PTO_GA_SLOTS_STACK + 60,
                     K = bf ? PTO_WIDEN_K_STACK + 8 : 8, N = T->mm_nr + 3;
      pto_targs a = {0};
      a.src[0] = indices(&x, &r, n, n + 10, 1);
      a.src[1] = packed(&x, &r, PTO_F32, K, N, 0, T->mm_nr);
      a.dst[0] = dst(&x, &r, PTO_F32, n, N);
      a.g = bf ? table_bf16(&r, n + 10, K) : table_f32(&r, n + 10, K);
      a.flags = PTO_TF_PACK_B;
      a.imm[1] = (int32_t)T->mm_nr;
      /* a bf16 engine multiplies bf16 by bf16 only: this B is f32 */
      scratch_run(T, PTO_OP_TMATMUL_GA, &a, 1, 2e-3f, 1,
                  bf ? "TMATMUL_GA widening a bf16 table, K 520"
                     : "TMATMUL_GA, 2108 slots");
    }
  }
}

Test(tileops, scratch_tmatmul_relu_wsum_g, .fini = free_all) {
  for (int k = 0; simd_table(k); k++) {
    const pto_isa_table *T = simd_table(k);
    for (int bf = 0; bf < 2; bf++) {
      rng r = rng_seed(81 + (uint64_t)bf);
      inst x = {0};
      /* past PTO_WSG_WEIGHTS heads, or bf16 keys of K past
       * PTO_WIDEN_K_STACK */
      const uint32_t R = bf ? 2 : 1, G = bf ? 3 : PTO_WSG_WEIGHTS + 40,
                     M = R * G, K = bf ? PTO_WIDEN_K_STACK + 8 : 6, N = 9;
      pto_targs a = {0};
      a.src[0] = packed(&x, &r, PTO_F32, K, M, 0, T->mm_nr);
      a.src[1] = src(&x, &r, PTO_F32, M, 1, G_MM);
      a.dst[0] = dst(&x, &r, PTO_F32, R, N);
      a.g = bf ? table_bf16(&r, N, K) : table_f32(&r, N, K);
      a.flags = PTO_TF_PACK_B;
      a.imm[1] = (int32_t)T->mm_nr;
      scratch_run(T, PTO_OP_TMATMUL_RELU_WSUM_G, &a, 1, 2e-3f, 1,
                  bf ? "TMATMUL_RELU_WSUM_G, bf16 keys of K 520"
                     : "TMATMUL_RELU_WSUM_G, 1064 heads");
    }
  }
}

/* ---- the planner's side of the scratch ---------------------------------- */

/* In every program of p compiled for the host: the built-in instructions
 * the table declares scratch for (on the active table's panels) are given
 * it, the tile after their destinations, at least that large, in their
 * program's level above every other tile; the rest are given none.
 * Returns how many were given scratch. */
static int plan_scratch(pto_program *p) {
  cr_assert_not_null(p);
  pto_executable *e = NULL;
  cr_assert_eq(pto_compile(p, NULL, &e), PTO_OK, "%s", pto_program_error(p));
  uint32_t mr, nr;
  pto_matmul_panel(&mr, &nr);
  int given = 0;
  for (uint32_t q = 0; q < e->n_progs; q++) {
    const pto_cprog *pr = &e->progs[q];
    const pto_mem_level home =
        pr->core == PTO_CORE_CUBE ? PTO_MEM_L1 : PTO_MEM_UB;
    for (uint32_t k = 0; k < pr->n_insts; k++) {
      const pto_pinst *pi = &pr->insts[k];
      const int has = (pi->flags & PTO_TF_SCRATCH) != 0;
      pto_insn_shape sh = {.op = pi->op,
                           .n_src = pi->n_src,
                           .n_dst = (uint8_t)(pi->n_dst - has),
                           .flags = pi->flags,
                           .imm = {pi->imm[0], pi->imm[1]},
                           .mr = mr};
      for (int r = 0; r < pi->n_src; r++) {
        const pto_ptile *t = &pr->tiles[pi->src[r]];
        sh.src[r][0] = t->vrows;
        sh.src[r][1] = t->vcols;
        sh.sdt[r] = t->dtype;
      }
      for (int d = 0; d < sh.n_dst; d++) {
        const pto_ptile *t = &pr->tiles[pi->dst[d]];
        sh.dst[d][0] = t->vrows;
        sh.dst[d][1] = t->vcols;
        sh.ddt[d] = t->dtype;
      }
      if (pi->slot >= 0) {
        sh.g[0] = pr->slots[pi->slot].rows;
        sh.g[1] = pr->slots[pi->slot].cols;
        sh.gdt = pr->slots[pi->slot].dtype;
      }
      const uint64_t need = pto__insn_scratch_of(&sh);
      cr_expect_eq(has, need > 0,
                   "%s instruction %u %s: the table declares %llu bytes of "
                   "scratch, the plan %s",
                   pr->name, k, pto__insn_name(pi->op),
                   (unsigned long long)need, has ? "gave some" : "gave none");
      if (!has || !need)
        continue;
      given++;
      const pto_ptile *s = &pr->tiles[pi->dst[pi->n_dst - 1]];
      const uint64_t end =
          s->offset + pto_tile_bytes(s->dtype, s->rows, s->cols);
      cr_expect_geq(pto_tile_bytes(s->dtype, s->rows, s->cols), need);
      cr_expect_eq(s->level, home, "%s: its scratch is not in %s", pr->name,
                   pto_mem_level_name(home));
      cr_expect_leq(end, pr->mem[home]);
      for (uint32_t t = 0; t < pr->n_tiles; t++) {
        const pto_ptile *o = &pr->tiles[t];
        if (o == s || o->level != s->level)
          continue;
        cr_expect_leq(o->offset + pto_tile_bytes(o->dtype, o->rows, o->cols),
                      s->offset, "%s: tile %u overlaps the scratch", pr->name,
                      t);
      }
    }
  }
  pto_executable_free(e);
  pto_program_free(p);
  return given;
}

Test(tileops, plan_scratch, .fini = free_all) {
  pto_attention_dims ad = {1, 16, 1024, 16, 576, 512, 256};
  pto_attention_params ap = pto_attention_params_default();
  const int gb = plan_scratch(pto_attention_program(&ad, &ap));
  cr_expect_gt(gb, 0, "no attention instruction was given scratch");
  pto_indexer_dims id = {1, 32, 2048, 16, 64};
  pto_indexer_params ip = pto_indexer_params_default();
  ip.topk = 5000; /* more than PTO_TOPK_BUF kept by one top-k */
  ip.mask = PTO_MASK_NONE;
  cr_expect_gt(plan_scratch(pto_indexer_program(&id, &ip)), 0,
               "no top-k keeping more than %u was given scratch", PTO_TOPK_BUF);
  plan_scratch(pto_gemm_program(200, 130, 70, NULL));
}
