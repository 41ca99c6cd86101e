/* tileops: the tile instructions, through pto__tileop_run on the active table.
 *
 * Every instruction in core/isa.def gets a generated test (Test(tileops,
 * TADD) ...) that runs it on random operands (fixed seeds) over several
 * shapes, tail tiles included (13x37 valid in a 16x48 tile), for f32 and for
 * i32 where the instruction has PTO_IF_INT, and for bf16/f16 where it
 * converts (TLOAD TSTORE TGATHER TCVT TMOV TMATMUL*; moves also on bf16/f16),
 * and checks it against an independent plain-C oracle in this file (cases[]
 * below; nothing here calls tileops/ref.c or core/convert.h, except the tests
 * of convert.h itself). `coverage` fails when an instruction has no oracle.
 *
 * Destinations start filled with a sentinel byte and every element outside
 * the valid region (row padding included) must still hold it afterwards,
 * except for TFILLPAD, which writes the whole capacity. Sources hold poison
 * (huge values or NaN) outside their valid region, so reading it shows.
 *
 * Comparison:
 *  - PTO_IF_EXACT instructions, and every i32 result: bit-exact, except that
 *    any NaN matches any NaN (payloads are not part of the semantics).
 *  - TEXP TLOG TRSQRT TROWEXPANDEXPDIF(SUM): within 2 ulp (f32 ulp at the
 *    expected value) of the result computed in double (for EXPDIF: exp in
 *    double of the f32 difference, since the difference is an f32 op).
 *  - TROWEXPANDEXPDIFSUM's row sums: as TROWSUM's, of those exps.
 *    expf/logf are < 1 ulp; 1/sqrtf rounds twice, which stays < 2 ulp.
 *  - f32 TROWSUM TCOLSUM: |got - exact| <= 1e-5 * sqrt(n) * sum |x_i|.
 *  - TMATMUL(_ACC): |got - exact| <= 1e-5 * sqrt(K) * (sum_k |a_k b_k| +
 *    |acc|). An f32 sum in order has error <= n * 2^-24 * sum |terms|, so
 *    these bounds hold with a wide margin for the sizes used here.
 *  Infinite or NaN expected values must be matched exactly (NaN by NaN).
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/convert.h"
#include "core/custom.h"
#include "core/isa.h"
#include "core/prefetch.h"
#include "pto/pto.h"
#include "tileops/tileops.h"

/* ---- bookkeeping: everything a test allocates is freed by its .fini ---- */

#define MAX_ALLOCS 8192
static void *allocs[MAX_ALLOCS];
static int n_allocs;

static void *keep(void *p) {
  cr_assert_not_null(p, "out of memory");
  cr_assert_lt(n_allocs, MAX_ALLOCS, "too many allocations in one test");
  allocs[n_allocs++] = p;
  return p;
}

static void free_all(void) {
  while (n_allocs > 0)
    free(allocs[--n_allocs]);
}

/* ---- random numbers (splitmix64) ----------------------------------------- */

typedef struct rng {
  uint64_t s;
} rng;

static rng rng_seed(uint64_t seed) {
  rng r = {seed * 0x9e3779b97f4a7c15ull + 0x1234567ull};
  return r;
}

static uint64_t next(rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t below(rng *r, uint32_t n) {
  return (uint32_t)(next(r) % n);
}

static double uniform(rng *r, double lo, double hi) {
  return lo + (hi - lo) * ((double)(next(r) >> 11) * 0x1p-53);
}

/* ---- tiles --------------------------------------------------------------- */

#define SENTINEL 0xa5 /* every byte of a fresh destination */

static size_t dsize(pto_dtype dt) {
  return dt == PTO_BF16 || dt == PTO_F16 ? 2 : 4;
}

static pto_tile *tile_new(pto_dtype dt, uint32_t rows, uint32_t cols,
                          uint32_t vr, uint32_t vc, unsigned char fill) {
  pto_tile *t = keep(calloc(1, sizeof *t));
  size_t bytes = pto_tile_bytes(dt, rows, cols);
  t->data = keep(aligned_alloc(PTO_TILE_ALIGN, bytes));
  memset(t->data, fill, bytes);
  t->dtype = dt;
  t->rows = rows;
  t->cols = cols;
  t->stride = pto_tile_stride(dt, cols);
  t->valid_rows = vr;
  t->valid_cols = vc;
  return t;
}

static size_t tile_size(const pto_tile *t) {
  return pto_tile_bytes(t->dtype, t->rows, t->cols);
}

static pto_tile *tile_clone(const pto_tile *t) {
  pto_tile *c =
      tile_new(t->dtype, t->rows, t->cols, t->valid_rows, t->valid_cols, 0);
  memcpy(c->data, t->data, tile_size(t));
  return c;
}

static void *el(const pto_tile *t, uint32_t r, uint32_t c) {
  return (unsigned char *)t->data +
         ((size_t)r * t->stride + c) * dsize(t->dtype);
}

static float getf(const pto_tile *t, uint32_t r, uint32_t c) {
  float v;
  memcpy(&v, el(t, r, c), sizeof v);
  return v;
}
static void setf(pto_tile *t, uint32_t r, uint32_t c, float v) {
  memcpy(el(t, r, c), &v, sizeof v);
}
static int32_t geti(const pto_tile *t, uint32_t r, uint32_t c) {
  int32_t v;
  memcpy(&v, el(t, r, c), sizeof v);
  return v;
}
static void seti(pto_tile *t, uint32_t r, uint32_t c, int32_t v) {
  memcpy(el(t, r, c), &v, sizeof v);
}

/* ---- the oracle's number formats ----------------------------------------- */

/* bf16 is, by definition, the top half of an f32. */
static double bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* IEEE binary16, from its fields. */
static double f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 31  ? (m ? NAN : INFINITY)
             : e == 0 ? ldexp(m, -24)
                      : ldexp(m + 1024, e - 25);
  return h & 0x8000 ? -v : v;
}

/* Element p of dtype dt, as a double (exact for every dtype). */
static double value_of(pto_dtype dt, const void *p) {
  switch (dt) {
  case PTO_F32: {
    float f;
    memcpy(&f, p, sizeof f);
    return f;
  }
  case PTO_I32: {
    int32_t i;
    memcpy(&i, p, sizeof i);
    return i;
  }
  default: {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return dt == PTO_BF16 ? bf16_value(h) : f16_value(h);
  }
  }
}

/* Magnitudes of the non-negative codes 0..top in order, where top (the
 * infinity code) stands for the next power of two: the value a tie between
 * the largest finite number and infinity is decided against. */
static double bf16_mag[0x7f81], f16_mag[0x7c01];

static const double *mag_table(int f16) {
  static int built;
  if (!built) {
    for (uint32_t p = 0; p < 0x7f80; p++)
      bf16_mag[p] = bf16_value((uint16_t)p);
    bf16_mag[0x7f80] = ldexp(1, 128);
    for (uint32_t p = 0; p < 0x7c00; p++)
      f16_mag[p] = f16_value((uint16_t)p);
    f16_mag[0x7c00] = 65536;
    built = 1;
  }
  return f16 ? f16_mag : bf16_mag;
}

/* v rounded to the nearest bf16/f16 code, ties to the even code, found by
 * search over the table of every value. */
static uint16_t round_half(double v, int f16) {
  if (isnan(v))
    return f16 ? 0x7e00 : 0x7fc0;
  const double *tab = mag_table(f16);
  uint32_t top = f16 ? 0x7c00 : 0x7f80;
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  double m = fabs(v);
  if (m >= tab[top])
    return (uint16_t)(sign | top);
  uint32_t lo = 0, hi = top; /* tab[lo] <= m < tab[hi] */
  while (hi - lo > 1) {
    uint32_t mid = (lo + hi) / 2;
    if (tab[mid] <= m)
      lo = mid;
    else
      hi = mid;
  }
  double dl = m - tab[lo], dh = tab[hi] - m;
  uint32_t p = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
  return (uint16_t)(sign | p);
}

/* Nearest integer (rint: ties to even in the default mode), saturated. */
static int32_t round_i32(double v) {
  if (isnan(v))
    return 0;
  double r = rint(v);
  if (r >= 2147483648.0)
    return INT32_MAX;
  if (r < -2147483648.0)
    return INT32_MIN;
  return (int32_t)r;
}

/* v mod 2^32 as a two's-complement i32. */
static int32_t wrap32(int64_t v) {
  int64_t m = v % 4294967296LL;
  if (m < 0)
    m += 4294967296LL;
  if (m >= 2147483648LL)
    m -= 4294967296LL;
  return (int32_t)m;
}

/* The value v stored as dtype `to`. */
static void store_value(pto_dtype to, void *p, double v) {
  switch (to) {
  case PTO_F32: {
    float f = (float)v;
    memcpy(p, &f, sizeof f);
    break;
  }
  case PTO_I32: {
    int32_t i = round_i32(v);
    memcpy(p, &i, sizeof i);
    break;
  }
  default: {
    uint16_t h = round_half(v, to == PTO_F16);
    memcpy(p, &h, sizeof h);
    break;
  }
  }
}

/* A value of dtype `from` converted to `to` by the spec: i32 -> bf16/f16
 * goes through f32. */
static void convert_value(pto_dtype to, void *p, pto_dtype from, double v) {
  if (from == PTO_I32 && (to == PTO_BF16 || to == PTO_F16))
    v = (float)v;
  store_value(to, p, v);
}

/* One element converted; the same dtype copies the bits. */
static void o_convert(pto_dtype to, void *dst, pto_dtype from,
                      const void *src) {
  if (to == from)
    memcpy(dst, src, dsize(to));
  else
    convert_value(to, dst, from, value_of(from, src));
}

/* One f32 ulp at |v|. */
static double ulp_f32(double v) {
  v = fabs(v);
  if (v < 0x1p-126)
    return 0x1p-149;
  int e;
  frexp(v, &e);
  return ldexp(1, e - 24);
}

/* ---- comparing ------------------------------------------------------------
 */

static int elem_same(pto_dtype dt, const void *a, const void *b) {
  if (memcmp(a, b, dsize(dt)) == 0)
    return 1;
  return dt != PTO_I32 && isnan(value_of(dt, a)) && isnan(value_of(dt, b));
}

static const char *show(pto_dtype dt, const void *p, char *buf, size_t n) {
  uint32_t bits = 0;
  memcpy(&bits, p, dsize(dt)); /* little-endian: low bytes */
  snprintf(buf, n, "%.9g (0x%0*x)", value_of(dt, p), (int)dsize(dt) * 2,
           (unsigned)bits);
  return buf;
}

/* got against want over the whole buffer (row padding included). Inside
 * want's valid region, when val is not NULL, an f32 element must be within
 * tol[i] of val[i] (i = r * stride + c); everything else must match bits. */
static void expect_tile(const char *ctx, const pto_tile *got,
                        const pto_tile *want, const double *val,
                        const double *tol) {
  char b1[64], b2[64];
  for (uint32_t r = 0; r < got->rows; r++)
    for (uint32_t c = 0; c < got->stride; c++) {
      int in = r < want->valid_rows && c < want->valid_cols;
      size_t i = (size_t)r * got->stride + c;
      if (in && val) {
        double x = getf(got, r, c), v = val[i];
        int ok = isnan(v)   ? isnan(x)
                 : isinf(v) ? x == v
                            : fabs(x - v) <= tol[i];
        cr_assert(ok, "%s: (%u,%u) is %.9g, expected %.9g within %.3g", ctx, r,
                  c, x, v, tol[i]);
      } else {
        cr_assert(elem_same(got->dtype, el(got, r, c), el(want, r, c)),
                  "%s: (%u,%u) is %s, expected %s%s", ctx, r, c,
                  show(got->dtype, el(got, r, c), b1, sizeof b1),
                  show(got->dtype, el(want, r, c), b2, sizeof b2),
                  in ? "" : " (outside the valid region: must be untouched)");
      }
    }
}

/* Only the valid region of want (in-place runs, whose padding is poison). */
static void expect_valid(const char *ctx, const pto_tile *got,
                         const pto_tile *want) {
  char b1[64], b2[64];
  for (uint32_t r = 0; r < want->valid_rows; r++)
    for (uint32_t c = 0; c < want->valid_cols; c++)
      cr_assert(elem_same(got->dtype, el(got, r, c), el(want, r, c)),
                "%s: (%u,%u) is %s, expected %s", ctx, r, c,
                show(got->dtype, el(got, r, c), b1, sizeof b1),
                show(got->dtype, el(want, r, c), b2, sizeof b2));
}

static double *dbuf(const pto_tile *t) {
  return keep(calloc((size_t)t->rows * t->stride, sizeof(double)));
}

/* ---- operand data ---------------------------------------------------------
 */

enum gen {
  G_F32,   /* [-8, 8], 1/16 specials */
  G_RED,   /* [-8, 8], 1/128 specials (reductions) */
  G_SUM,   /* [-8, 8], sometimes +-0 */
  G_POS,   /* positive over many decades, some 0, negative, inf, NaN */
  G_EXP,   /* [-87, 88], some specials */
  G_SMALL, /* small integers, +-0, some NaN/inf: many ties */
  G_DIV,   /* divisors: often 0 or -1 */
  G_MASK,  /* i32 masks: 0, 1 or anything */
  G_CVT,   /* conversions: ties of every target, huge, tiny, specials */
  G_MM,    /* finite [-2, 2], rounded to the tile's dtype */
  G_SORT,  /* [-4, 4] with many duplicates, +-0, +-inf, NaN */
};

static const float specials[] = {
    0.0f,          -0.0f,       1.0f,      -1.0f,     0.5f,   2.5f,
    -2.5f,         INFINITY,    -INFINITY, NAN,       1e-40f, -1e-42f,
    3e38f,         -3e38f,      65504.0f,  65520.0f,  1e10f,  -2147483648.0f,
    2147483520.0f, 16777217.0f, -0x1p-24f, 0x1.8p-25f};
#define N_SPECIALS (sizeof specials / sizeof specials[0])

static float gen_f32(rng *r, int g) {
  switch (g) {
  case G_RED:
    return below(r, 128) == 0 ? specials[below(r, N_SPECIALS)]
                              : (float)uniform(r, -8, 8);
  case G_SUM:
    return below(r, 16) == 0 ? (below(r, 2) ? 0.0f : -0.0f)
                             : (float)uniform(r, -8, 8);
  case G_POS: {
    static const float s[] = {0.0f, -0.0f, -1.0f, INFINITY, NAN, 1.0f, 1e-40f};
    return below(r, 32) == 0 ? s[below(r, 7)] : (float)exp(uniform(r, -20, 20));
  }
  case G_EXP: {
    static const float s[] = {0.0f, -0.0f, -INFINITY, INFINITY, NAN, 1e-40f};
    return below(r, 32) == 0 ? s[below(r, 6)] : (float)uniform(r, -87, 88);
  }
  case G_SMALL: {
    uint32_t k = below(r, 20);
    return k < 7     ? (float)((int)k - 3)
           : k < 9   ? -0.0f
           : k == 9  ? NAN
           : k == 10 ? INFINITY
                     : (float)((int)below(r, 5) - 2);
  }
  case G_DIV:
    return below(r, 4) == 0 ? (below(r, 2) ? 0.0f : -0.0f)
                            : (float)uniform(r, -8, 8);
  case G_CVT: {
    switch (below(r, 8)) {
    case 0:
      return specials[below(r, N_SPECIALS)];
    case 1: /* halfway between integers, and around them */
      return (float)((int)below(r, 2001) - 1000) + 0.5f;
    case 2: { /* a bf16 tie: a bf16 code plus half its ulp */
      uint32_t u = ((uint32_t)below(r, 0x7f80) << 16) | 0x8000u |
                   (below(r, 2) ? 0x80000000u : 0);
      float f;
      memcpy(&f, &u, sizeof f);
      return f;
    }
    case 3: { /* an f16 tie: the midpoint of two neighbouring f16 values */
      uint16_t h = (uint16_t)below(r, 0x7bff);
      float f = (float)((f16_value(h) + f16_value((uint16_t)(h + 1))) / 2);
      return below(r, 2) ? f : -f;
    }
    case 4: /* f16 subnormal and overflow ranges */
      return (float)(below(r, 2) ? uniform(r, -1e-4, 1e-4)
                                 : uniform(r, 6e4, 7e4));
    case 5: /* around the i32 limits */
      return (float)uniform(r, -2.2e9, 2.2e9);
    default:
      return (float)(exp(uniform(r, -30, 30)) * (below(r, 2) ? 1 : -1));
    }
  }
  case G_SORT: {
    static const float s[] = {-2.0f, -1.0f,    0.0f,      -0.0f, 1.0f,
                              2.0f,  INFINITY, -INFINITY, NAN};
    return below(r, 2) ? s[below(r, 9)] : (float)uniform(r, -4, 4);
  }
  default: /* G_F32 */
    return below(r, 16) == 0 ? specials[below(r, N_SPECIALS)]
                             : (float)uniform(r, -8, 8);
  }
}

static int32_t gen_i32(rng *r, int g) {
  static const int32_t s[] = {0,         1,         -1,
                              INT32_MIN, INT32_MAX, INT32_MIN + 1,
                              16777217,  -16777217, (1 << 30) + (1 << 22) + 1};
  switch (g) {
  case G_SMALL:
    return below(r, 16) == 0 ? (below(r, 2) ? INT32_MIN : INT32_MAX)
                             : (int32_t)below(r, 7) - 3;
  case G_MASK:
    return below(r, 2) ? 0 : below(r, 2) ? 1 : (int32_t)next(r);
  case G_DIV:
    if (below(r, 4) == 0)
      return below(r, 2) ? 0 : -1;
    break;
  default:
    break;
  }
  uint32_t k = below(r, 8);
  return k == 0  ? s[below(r, sizeof s / sizeof s[0])]
         : k < 5 ? (int32_t)below(r, 2001) - 1000
                 : (int32_t)(uint32_t)next(r);
}

/* One element of dtype dt at p. */
static void gen_elem(rng *r, pto_dtype dt, int g, void *p) {
  if (dt == PTO_F32) {
    float f = gen_f32(r, g);
    memcpy(p, &f, sizeof f);
  } else if (dt == PTO_I32) {
    int32_t i = gen_i32(r, g);
    memcpy(p, &i, sizeof i);
  } else { /* bf16/f16: any code, or a finite matmul operand */
    uint16_t h = g == G_MM ? round_half(uniform(r, -2, 2), dt == PTO_F16)
                           : (uint16_t)next(r);
    memcpy(p, &h, sizeof h);
  }
}

static void fill_valid(rng *r, pto_tile *t, int g) {
  for (uint32_t i = 0; i < t->valid_rows; i++)
    for (uint32_t j = 0; j < t->valid_cols; j++)
      if (g == G_MM && t->dtype == PTO_F32)
        setf(t, i, j, (float)uniform(r, -2, 2));
      else
        gen_elem(r, t->dtype, g, el(t, i, j));
}

/* A source: random valid region, poison elsewhere (0x7f..: huge values;
 * 0xff..: NaN for floats, -1 for i32). */
static pto_tile *src_new(rng *r, pto_dtype dt, uint32_t rows, uint32_t cols,
                         uint32_t vr, uint32_t vc, int g) {
  pto_tile *t = tile_new(dt, rows, cols, vr, vc, below(r, 2) ? 0x7f : 0xff);
  fill_valid(r, t, g);
  return t;
}

static pto_tile *dst_new(pto_dtype dt, uint32_t rows, uint32_t cols,
                         uint32_t vr, uint32_t vc) {
  return tile_new(dt, rows, cols, vr, vc, SENTINEL);
}

/* ---- running ------------------------------------------------------------- */

static void run_ok(int op, const pto_targs *a, const char *ctx) {
  char msg[256];
  int st = pto__tileop_check(op, a, msg, sizeof msg);
  cr_assert_eq(st, 0, "%s: check refused good operands: %s: %s", ctx,
               pto_status_name(st), msg);
  st = pto__tileop_run(op, a);
  cr_assert_eq(st, 0, "%s: run returned %s", ctx, pto_status_name(st));
}

typedef struct shape {
  uint32_t rows, cols, vr, vc;
} shape;

static const shape shapes[] = {{16, 48, 16, 48}, /* full */
                               {16, 48, 13, 37}, /* tail tile */
                               {1, 1, 1, 1},
                               {8, 64, 8, 3},
                               {5, 130, 4, 129}};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static char ctxbuf[256];
static const char *ctx_of(int op, const char *what, pto_dtype dt,
                          const shape *s) {
  snprintf(ctxbuf, sizeof ctxbuf, "%s %s%s%s %ux%u in %ux%u",
           pto__insn_name(op), pto_dtype_name(dt), what[0] ? " " : "", what,
           s->vr, s->vc, s->rows, s->cols);
  return ctxbuf;
}

/* f32, and i32 when the instruction takes it. */
static int op_dtypes(int op, pto_dtype dts[2]) {
  dts[0] = PTO_F32;
  dts[1] = PTO_I32;
  return pto__insn_info(op)->flags & PTO_IF_INT ? 2 : 1;
}

static int op_exact(int op) {
  return (pto__insn_info(op)->flags & PTO_IF_EXACT) != 0;
}

static uint64_t seed_of(int op, int a, int b, int c) {
  return (uint64_t)op * 1000003u + (uint64_t)a * 10007u + (uint64_t)b * 101u +
         (uint64_t)c;
}

/* ---- oracle functions ------------------------------------------------------
 * f32 ops on f32 operands computed in double and rounded once to f32: exact
 * for + - * / sqrt (double has more than 2*24+2 bits). i32 ops in int64 and
 * wrapped. */

typedef double (*o_fbin)(double, double);
typedef int64_t (*o_ibin)(int64_t, int64_t);
typedef double (*o_fun)(double);
typedef int64_t (*o_iun)(int64_t);

static double o_add(double x, double y) {
  return x + y;
}
static double o_sub(double x, double y) {
  return x - y;
}
static double o_mul(double x, double y) {
  return x * y;
}
static double o_div(double x, double y) {
  return x / y;
}
/* IEEE 754-2019 maximum/minimum. */
static double o_max(double x, double y) {
  if (isnan(x) || isnan(y))
    return NAN;
  if (x == 0 && y == 0)
    return signbit(x) && signbit(y) ? -0.0 : 0.0;
  return x > y ? x : y;
}
static double o_min(double x, double y) {
  if (isnan(x) || isnan(y))
    return NAN;
  if (x == 0 && y == 0)
    return signbit(x) || signbit(y) ? -0.0 : 0.0;
  return x < y ? x : y;
}
static double o_expdif(double x, double y) {
  return exp((float)(x - y));
}

static int64_t oi_add(int64_t x, int64_t y) {
  return x + y;
}
static int64_t oi_sub(int64_t x, int64_t y) {
  return x - y;
}
static int64_t oi_mul(int64_t x, int64_t y) {
  return x * y;
}
static int64_t oi_div(int64_t x, int64_t y) {
  return y == 0 ? 0 : x / y;
}
static int64_t oi_max(int64_t x, int64_t y) {
  return x > y ? x : y;
}
static int64_t oi_min(int64_t x, int64_t y) {
  return x < y ? x : y;
}

static double o_exp(double x) {
  return exp(x);
}
static double o_log(double x) {
  return log(x);
}
static double o_sqrt(double x) {
  return sqrt(x);
}
static double o_rsqrt(double x) {
  return 1 / sqrt(x);
}
static double o_recip(double x) {
  return 1 / x;
}
static double o_relu(double x) {
  return isnan(x) ? x : x > 0 ? x : 0.0;
}
static double o_abs(double x) {
  return fabs(x);
}
static double o_neg(double x) {
  return -x;
}
static int64_t oi_relu(int64_t x) {
  return x > 0 ? x : 0;
}
static int64_t oi_abs(int64_t x) {
  return x < 0 ? -x : x;
}
static int64_t oi_neg(int64_t x) {
  return -x;
}

enum { R_SUM = 1, R_MAX, R_MIN };

typedef struct oracle_case oracle_case;
struct oracle_case {
  void (*drive)(int op, const oracle_case *oc);
  o_fbin fb; /* binary, scalar and expand ops */
  o_ibin ib;
  o_fun fu; /* unary ops */
  o_iun iu;
  int gen0, gen1; /* data of src0 and src1 */
  int red;        /* reductions: R_SUM, R_MAX, R_MIN */
};

/* ---- drivers: element-wise ------------------------------------------------
 */

static void drive_binary(int op, const oracle_case *oc) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen0);
      pto_tile *y = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen1);
      pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t j = 0; j < s->vc; j++)
          if (dt == PTO_I32)
            seti(want, i, j, wrap32(oc->ib(geti(x, i, j), geti(y, i, j))));
          else
            setf(want, i, j, (float)oc->fb(getf(x, i, j), getf(y, i, j)));
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      a.src[1] = y;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
      /* in place: dst is src0 */
      pto_tile *xi = tile_clone(x);
      a.dst[0] = xi;
      a.src[0] = xi;
      run_ok(op, &a, ctx);
      expect_valid(ctx, xi, want);
    }
}

static void drive_unary(int op, const oracle_case *oc) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen0);
      pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
      pto_tile *want = tile_clone(d);
      double *val = op_exact(op) ? NULL : dbuf(d), *tol = val ? dbuf(d) : NULL;
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t j = 0; j < s->vc; j++)
          if (dt == PTO_I32) {
            seti(want, i, j, wrap32(oc->iu(geti(x, i, j))));
          } else if (val) {
            size_t k = (size_t)i * d->stride + j;
            val[k] = oc->fu(getf(x, i, j));
            tol[k] = 2 * ulp_f32(val[k]);
          } else {
            setf(want, i, j, (float)oc->fu(getf(x, i, j)));
          }
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, dt == PTO_I32 ? NULL : val, tol);
    }
}

static int o_compare(int mode, double x, double y) {
  if (isnan(x) || isnan(y))
    return mode == PTO_CMP_NE;
  switch (mode) {
  case PTO_CMP_EQ:
    return !(x < y) && !(y < x);
  case PTO_CMP_NE:
    return x < y || y < x;
  case PTO_CMP_LT:
    return x < y;
  case PTO_CMP_LE:
    return !(y < x);
  case PTO_CMP_GT:
    return y < x;
  default:
    return !(x < y);
  }
}

static void drive_cmp(int op, const oracle_case *oc) {
  (void)oc;
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++)
      for (int mode = 0; mode < PTO_CMP_MODE_COUNT; mode++) {
        const shape *s = &shapes[si];
        pto_dtype dt = dts[di];
        rng r = rng_seed(seed_of(op, di, si, mode));
        pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_SMALL);
        pto_tile *y = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_SMALL);
        pto_tile *d = dst_new(PTO_I32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *want = tile_clone(d);
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t j = 0; j < s->vc; j++)
            seti(want, i, j,
                 o_compare(mode, value_of(dt, el(x, i, j)),
                           value_of(dt, el(y, i, j))));
        char what[16];
        snprintf(what, sizeof what, "mode %d", mode);
        const char *ctx = ctx_of(op, what, dt, s);
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = x;
        a.src[1] = y;
        a.imm[0] = mode;
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, NULL, NULL);
      }
}

static void drive_sel(int op, const oracle_case *oc) {
  (void)oc;
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *m =
          src_new(&r, PTO_I32, s->rows, s->cols, s->vr, s->vc, G_MASK);
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_F32);
      pto_tile *y = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_F32);
      pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t j = 0; j < s->vc; j++)
          memcpy(el(want, i, j), el(geti(m, i, j) ? x : y, i, j), 4);
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = m;
      a.src[1] = x;
      a.src[2] = y;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
    }
}

static int gen_for(pto_dtype dt) {
  return dt == PTO_F32 ? G_CVT : G_F32; /* i32: general; halves: any code */
}

/* TCVT, and TMOV with and without PTO_TF_RELU. */
static void drive_convert(int op, const oracle_case *oc) {
  (void)oc;
  static const int shape_ix[] = {1, 4};
  int n_relu = op == PTO_OP_TMOV ? 2 : 1;
  for (int from = 0; from < PTO_DTYPE_COUNT; from++)
    for (int to = 0; to < PTO_DTYPE_COUNT; to++)
      for (int relu = 0; relu < n_relu; relu++)
        for (int k = 0; k < 2; k++) {
          const shape *s = &shapes[shape_ix[k]];
          rng r = rng_seed(seed_of(op, from * 4 + to, relu, k));
          pto_tile *x = src_new(&r, (pto_dtype)from, s->rows, s->cols, s->vr,
                                s->vc, gen_for((pto_dtype)from));
          pto_tile *d = dst_new((pto_dtype)to, s->rows, s->cols, s->vr, s->vc);
          pto_tile *want = tile_clone(d);
          for (uint32_t i = 0; i < s->vr; i++)
            for (uint32_t j = 0; j < s->vc; j++) {
              if (!relu) {
                o_convert((pto_dtype)to, el(want, i, j), (pto_dtype)from,
                          el(x, i, j));
                continue;
              }
              double v = value_of((pto_dtype)from, el(x, i, j));
              v = isnan(v) ? v : v > 0 ? v : 0.0;
              convert_value((pto_dtype)to, el(want, i, j), (pto_dtype)from, v);
            }
          char what[64];
          snprintf(what, sizeof what, "-> %s%s", pto_dtype_name((pto_dtype)to),
                   relu ? " relu" : "");
          const char *ctx = ctx_of(op, what, (pto_dtype)from, s);
          pto_targs a = {0};
          a.dst[0] = d;
          a.src[0] = x;
          a.flags = relu ? PTO_TF_RELU : 0;
          run_ok(op, &a, ctx);
          expect_tile(ctx, d, want, NULL, NULL);
        }
}

/* ---- drivers: tile-scalar and fills ----------------------------------------
 */

static const double scalars[] = {2.5, -3.25, 0.0, 1e10, 7.0, -0.5};
#define N_SCALARS (sizeof scalars / sizeof scalars[0])

static void drive_scalar(int op, const oracle_case *oc) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si += 2)
      for (int k = 0; k < (int)N_SCALARS; k++) {
        const shape *s = &shapes[si];
        pto_dtype dt = dts[di];
        double sc = scalars[k];
        rng r = rng_seed(seed_of(op, di, si, k));
        pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen0);
        pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
        pto_tile *want = tile_clone(d);
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t j = 0; j < s->vc; j++)
            if (dt == PTO_I32)
              seti(want, i, j, wrap32(oc->ib(geti(x, i, j), round_i32(sc))));
            else
              setf(want, i, j, (float)oc->fb(getf(x, i, j), (float)sc));
        char what[32];
        snprintf(what, sizeof what, "s=%g", sc);
        const char *ctx = ctx_of(op, what, dt, s);
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = x;
        a.s = sc;
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, NULL, NULL);
      }
}

/* TEXPANDS, TCI, TTRI: dst only. */
static void drive_fill(int op, const oracle_case *oc) {
  (void)oc;
  static const double ss[] = {2.5, -1e10, 3.5, NAN, -0.0};
  static const int32_t imms[] = {0, 5, -7, 2, INT32_MAX - 3, INT32_MIN};
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  int nk = op == PTO_OP_TEXPANDS ? 5 : 6;
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++)
      for (int k = 0; k < nk; k++) {
        const shape *s = &shapes[si];
        pto_dtype dt = dts[di];
        pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
        pto_tile *want = tile_clone(d);
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t j = 0; j < s->vc; j++) {
            double v;
            if (op == PTO_OP_TEXPANDS)
              v = dt == PTO_I32 ? round_i32(ss[k]) : (float)ss[k];
            else if (op == PTO_OP_TCI)
              v = (double)((int64_t)imms[k] + j);
            else
              v = (int64_t)j <= (int64_t)i + imms[k] ? 1 : 0;
            if (dt == PTO_I32)
              seti(want, i, j, wrap32((int64_t)v));
            else
              setf(want, i, j, (float)v);
          }
        char what[48];
        snprintf(what, sizeof what, "s=%g imm=%d", ss[k % 5], (int)imms[k]);
        const char *ctx = ctx_of(op, what, dt, s);
        pto_targs a = {0};
        a.dst[0] = d;
        a.s = ss[k % 5];
        a.imm[0] = imms[k];
        run_ok(op, &a, ctx);
        expect_tile(ctx, d, want, NULL, NULL);
      }
}

/* ---- drivers: axis ----------------------------------------------------------
 */

/* TROW* (row = 1) or TCOL* (row = 0) reductions. */
static void drive_reduce(int op, const oracle_case *oc, int row) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc,
                            oc->red == R_SUM ? G_SUM : G_RED);
      pto_tile *d = row ? dst_new(dt, s->rows, 1, s->vr, 1)
                        : dst_new(dt, 1, s->cols, 1, s->vc);
      pto_tile *want = tile_clone(d);
      int tolerant = dt == PTO_F32 && oc->red == R_SUM;
      double *val = tolerant ? dbuf(d) : NULL, *tol = tolerant ? dbuf(d) : NULL;
      uint32_t outer = row ? s->vr : s->vc, inner = row ? s->vc : s->vr;
      for (uint32_t o = 0; o < outer; o++) {
        double acc = 0, mag = 0;
        int64_t iacc = 0;
        for (uint32_t n = 0; n < inner; n++) {
          uint32_t i = row ? o : n, j = row ? n : o;
          double v = value_of(dt, el(x, i, j));
          if (dt == PTO_I32)
            iacc = n == 0             ? (int64_t)v
                   : oc->red == R_SUM ? iacc + (int64_t)v
                   : oc->red == R_MAX ? oi_max(iacc, (int64_t)v)
                                      : oi_min(iacc, (int64_t)v);
          else
            acc = n == 0             ? v
                  : oc->red == R_SUM ? acc + v
                  : oc->red == R_MAX ? o_max(acc, v)
                                     : o_min(acc, v);
          mag += fabs(v);
        }
        uint32_t wi = row ? o : 0, wj = row ? 0 : o;
        if (dt == PTO_I32) {
          seti(want, wi, wj, wrap32(iacc));
        } else if (tolerant) {
          size_t k = (size_t)wi * d->stride + wj;
          val[k] = acc;
          tol[k] = 1e-5 * sqrt((double)inner) * mag;
        } else {
          setf(want, wi, wj, (float)acc);
        }
      }
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, val, tol);
    }
}

static void drive_rowred(int op, const oracle_case *oc) {
  drive_reduce(op, oc, 1);
}
static void drive_colred(int op, const oracle_case *oc) {
  drive_reduce(op, oc, 0);
}

/* TROWEXPAND* (row = 1) and TCOLEXPAND* (row = 0); binary: src0 full and
 * src1 the vector, else src0 the vector. */
static void drive_expand(int op, const oracle_case *oc, int row, int binary) {
  pto_dtype dts[2];
  int nd = op_dtypes(op, dts);
  for (int di = 0; di < nd; di++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = dts[di];
      rng r = rng_seed(seed_of(op, di, si, 0));
      pto_tile *x =
          binary ? src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, oc->gen0)
                 : NULL;
      pto_tile *v = row ? src_new(&r, dt, s->rows, 1, s->vr, 1, oc->gen1)
                        : src_new(&r, dt, 1, s->cols, 1, s->vc, oc->gen1);
      pto_tile *d = dst_new(dt, s->rows, s->cols, s->vr, s->vc);
      pto_tile *want = tile_clone(d);
      int tolerant = !op_exact(op) && dt == PTO_F32;
      double *val = tolerant ? dbuf(d) : NULL, *tol = tolerant ? dbuf(d) : NULL;
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t j = 0; j < s->vc; j++) {
          uint32_t vi = row ? i : 0, vj = row ? 0 : j;
          size_t k = (size_t)i * d->stride + j;
          if (!binary)
            memcpy(el(want, i, j), el(v, vi, vj), 4);
          else if (dt == PTO_I32)
            seti(want, i, j, wrap32(oc->ib(geti(x, i, j), geti(v, vi, vj))));
          else if (tolerant) {
            val[k] = oc->fb(getf(x, i, j), getf(v, vi, vj));
            tol[k] = 2 * ulp_f32(val[k]);
          } else
            setf(want, i, j, (float)oc->fb(getf(x, i, j), getf(v, vi, vj)));
        }
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = binary ? x : v;
      a.src[1] = binary ? v : NULL;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, val, tol);
    }
}

static void drive_rowexpand(int op, const oracle_case *oc) {
  drive_expand(op, oc, 1, 0);
}
static void drive_colexpand(int op, const oracle_case *oc) {
  drive_expand(op, oc, 0, 0);
}
static void drive_rowexpand2(int op, const oracle_case *oc) {
  drive_expand(op, oc, 1, 1);
}
static void drive_colexpand2(int op, const oracle_case *oc) {
  drive_expand(op, oc, 0, 1);
}

/* TROWEXPANDEXPDIFSUM: dst0 within 2 ulp of exp of the f32 difference, as
 * TROWEXPANDEXPDIF; dst1 within the TROWSUM bound of the exact sum of those
 * exps, and equal bit for bit to what the same table's TROWSUM makes of
 * dst0 (the fusion changes no value). Then in place: dst0 = src0 and
 * dst1 = src1 (each row's max is read before the row is written). */
static void drive_rowexpsum(int op, const oracle_case *oc) {
  for (int si = 0; si < (int)N_SHAPES; si++) {
    const shape *s = &shapes[si];
    rng r = rng_seed(seed_of(op, 0, si, 0));
    pto_tile *x = src_new(&r, PTO_F32, s->rows, s->cols, s->vr, s->vc, oc->gen0);
    pto_tile *v = src_new(&r, PTO_F32, s->rows, 1, s->vr, 1, oc->gen1);
    pto_tile *d = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
    pto_tile *sum = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
    pto_tile *want = tile_clone(d), *wsum = tile_clone(sum);
    double *val = dbuf(d), *tol = dbuf(d), *sval = dbuf(sum), *stol = dbuf(sum);
    for (uint32_t i = 0; i < s->vr; i++) {
      double acc = 0, mag = 0;
      for (uint32_t j = 0; j < s->vc; j++) {
        size_t k = (size_t)i * d->stride + j;
        val[k] = oc->fb(getf(x, i, j), getf(v, i, 0));
        tol[k] = 2 * ulp_f32(val[k]);
        acc += val[k];
        mag += fabs(val[k]);
      }
      sval[(size_t)i * sum->stride] = acc;
      stol[(size_t)i * sum->stride] = 1e-5 * sqrt((double)s->vc) * mag;
    }
    const char *ctx = ctx_of(op, "", PTO_F32, s);
    pto_targs a = {0};
    a.dst[0] = d;
    a.dst[1] = sum;
    a.src[0] = x;
    a.src[1] = v;
    run_ok(op, &a, ctx);
    expect_tile(ctx, d, want, val, tol);
    expect_tile(ctx, sum, wsum, sval, stol);
    /* the same sum as TROWSUM of dst0 */
    pto_tile *rs = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
    pto_targs b = {0};
    b.dst[0] = rs;
    b.src[0] = d;
    run_ok(PTO_OP_TROWSUM, &b, ctx);
    expect_valid(ctx, sum, rs);
    /* in place */
    pto_tile *xi = tile_clone(x), *vi = tile_clone(v);
    a.dst[0] = xi;
    a.src[0] = xi;
    a.dst[1] = vi;
    a.src[1] = vi;
    run_ok(op, &a, ctx);
    expect_valid(ctx, xi, d);
    expect_valid(ctx, vi, sum);
  }
}

/* ---- drivers: matmul
 * --------------------------------------------------------- */

static void *gat(const pto_gview *g, int64_t r, int64_t c);

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

static void drive_matmul(int op, const oracle_case *oc) {
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

static void drive_wsum(int op, const oracle_case *oc) {
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

/* ---- drivers: move
 * ------------------------------------------------------------ */

static const pto_dtype move_dtypes[] = {PTO_F32, PTO_I32, PTO_BF16, PTO_F16};

static void drive_extract(int op, const oracle_case *oc) {
  (void)oc;
  /* imm0 imm1, dst valid, dst capacity; src is 13x37 valid in 16x48 */
  static const int32_t w[][6] = {{3, 20, 5, 7, 8, 16},
                                 {0, 0, 13, 37, 16, 48},
                                 {12, 36, 1, 1, 1, 1},
                                 {0, 5, 13, 1, 16, 1}};
  for (int ti = 0; ti < 4; ti++)
    for (int wi = 0; wi < 4; wi++) {
      pto_dtype dt = move_dtypes[ti];
      rng r = rng_seed(seed_of(op, ti, wi, 0));
      pto_tile *x = src_new(&r, dt, 16, 48, 13, 37, G_F32);
      const int32_t *W = w[wi];
      pto_tile *d = dst_new(dt, (uint32_t)W[4], (uint32_t)W[5], (uint32_t)W[2],
                            (uint32_t)W[3]);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < (uint32_t)W[2]; i++)
        for (uint32_t j = 0; j < (uint32_t)W[3]; j++)
          memcpy(el(want, i, j), el(x, i + (uint32_t)W[0], j + (uint32_t)W[1]),
                 dsize(dt));
      char ctx[96];
      snprintf(ctx, sizeof ctx, "TEXTRACT %s %dx%d at (%d, %d)",
               pto_dtype_name(dt), W[2], W[3], W[0], W[1]);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      a.imm[0] = W[0];
      a.imm[1] = W[1];
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
    }
}

static void drive_insert(int op, const oracle_case *oc) {
  (void)oc;
  /* imm0 imm1, src capacity, src valid; dst is 13x37 valid in 16x48 */
  static const int32_t w[][6] = {{3, 20, 8, 16, 5, 7},
                                 {0, 0, 16, 48, 13, 37},
                                 {12, 36, 1, 1, 1, 1},
                                 {5, 0, 8, 40, 8, 37}};
  for (int ti = 0; ti < 4; ti++)
    for (int wi = 0; wi < 4; wi++) {
      pto_dtype dt = move_dtypes[ti];
      rng r = rng_seed(seed_of(op, ti, wi, 0));
      const int32_t *W = w[wi];
      pto_tile *x = src_new(&r, dt, (uint32_t)W[2], (uint32_t)W[3],
                            (uint32_t)W[4], (uint32_t)W[5], G_F32);
      pto_tile *d = dst_new(dt, 16, 48, 13, 37);
      fill_valid(&r, d, G_F32);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < (uint32_t)W[4]; i++)
        for (uint32_t j = 0; j < (uint32_t)W[5]; j++)
          memcpy(el(want, i + (uint32_t)W[0], j + (uint32_t)W[1]), el(x, i, j),
                 dsize(dt));
      char ctx[96];
      snprintf(ctx, sizeof ctx, "TINSERT %s %dx%d at (%d, %d)",
               pto_dtype_name(dt), W[4], W[5], W[0], W[1]);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      a.imm[0] = W[0];
      a.imm[1] = W[1];
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
      cr_assert(d->valid_rows == 13 && d->valid_cols == 37,
                "%s: dst valid changed", ctx);
    }
}

static void drive_trans(int op, const oracle_case *oc) {
  (void)oc;
  for (int ti = 0; ti < 4; ti++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      pto_dtype dt = move_dtypes[ti];
      rng r = rng_seed(seed_of(op, ti, si, 0));
      pto_tile *x = src_new(&r, dt, s->rows, s->cols, s->vr, s->vc, G_F32);
      pto_tile *d = dst_new(dt, s->cols, s->rows, s->vc, s->vr);
      pto_tile *want = tile_clone(d);
      for (uint32_t i = 0; i < s->vc; i++)
        for (uint32_t j = 0; j < s->vr; j++)
          memcpy(el(want, i, j), el(x, j, i), dsize(dt));
      const char *ctx = ctx_of(op, "", dt, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.src[0] = x;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
    }
}

static void drive_fillpad(int op, const oracle_case *oc) {
  (void)oc;
  static const double pads[] = {2.5, -1.0, 3.5};
  /* src capacity and valid; dst is 16x48 */
  static const uint32_t srcs[][4] = {
      {16, 48, 13, 37}, {8, 16, 5, 7}, {16, 48, 16, 48}};
  for (int ti = 0; ti < 4; ti++)
    for (int pi = 0; pi < 3; pi++)
      for (int si = 0; si < 4; si++) { /* si == 3: in place */
        pto_dtype dt = move_dtypes[ti];
        rng r = rng_seed(seed_of(op, ti, pi, si));
        const uint32_t *S = srcs[si == 3 ? 0 : si];
        pto_tile *x = src_new(&r, dt, S[0], S[1], S[2], S[3], G_F32);
        pto_tile *d = si == 3 ? x : dst_new(dt, 16, 48, 1, 1);
        pto_tile *want = tile_clone(si == 3 ? dst_new(dt, 16, 48, 1, 1) : d);
        unsigned char pad[4];
        if (dt == PTO_I32)
          store_value(dt, pad, round_i32(pads[pi]));
        else
          convert_value(dt, pad, PTO_F32, (float)pads[pi]);
        for (uint32_t i = 0; i < 16; i++)
          for (uint32_t j = 0; j < 48; j++)
            memcpy(el(want, i, j), i < S[2] && j < S[3] ? el(x, i, j) : pad,
                   dsize(dt));
        want->valid_rows = 16;
        want->valid_cols = 48;
        char ctx[96];
        snprintf(ctx, sizeof ctx, "TFILLPAD %s %ux%u in %ux%u pad %g%s",
                 pto_dtype_name(dt), S[2], S[3], S[0], S[1], pads[pi],
                 si == 3 ? " in place" : "");
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = x;
        a.s = pads[pi];
        run_ok(op, &a, ctx);
        cr_assert(d->valid_rows == 16 && d->valid_cols == 48,
                  "%s: dst valid %ux%u, expected its capacity", ctx,
                  d->valid_rows, d->valid_cols);
        if (si == 3)
          expect_valid(ctx, d, want);
        else
          expect_tile(ctx, d, want, NULL, NULL);
      }
}

/* ---- drivers: memory
 * ------------------------------------------------------------ */

/* A global tensor of dtype dt holding a rows x cols window: row-major with
 * padded rows, or column-major (a transposed view), after a few leading
 * elements. */
typedef struct gbuf {
  unsigned char *mem;
  size_t n; /* elements */
  pto_gview g;
} gbuf;

static gbuf gbuf_gen(rng *r, pto_dtype dt, int64_t rows, int64_t cols,
                     int colmajor, int gen) {
  gbuf b;
  int64_t lead = colmajor ? rows + 1 : cols + 5, lines = colmajor ? cols : rows;
  b.n = (size_t)(3 + lead * lines);
  b.mem = keep(malloc(b.n * dsize(dt)));
  for (size_t i = 0; i < b.n; i++)
    if (gen == G_MM && dt == PTO_F32) {
      float f = (float)uniform(r, -2, 2);
      memcpy(b.mem + i * dsize(dt), &f, sizeof f);
    } else {
      gen_elem(r, dt, gen, b.mem + i * dsize(dt));
    }
  b.g.base = b.mem + 3 * dsize(dt);
  b.g.dtype = dt;
  b.g.rows = rows;
  b.g.cols = cols;
  b.g.row_stride = colmajor ? 1 : lead;
  b.g.col_stride = colmajor ? lead : 1;
  return b;
}

static gbuf gbuf_new(rng *r, pto_dtype dt, int64_t rows, int64_t cols,
                     int colmajor) {
  return gbuf_gen(r, dt, rows, cols, colmajor, gen_for(dt));
}

static void *gat(const pto_gview *g, int64_t r, int64_t c) {
  return (unsigned char *)g->base +
         (r * g->row_stride + c * g->col_stride) * (int64_t)dsize(g->dtype);
}

static void drive_load(int op, const oracle_case *oc) {
  (void)oc;
  static const int shape_ix[] = {0, 1, 4};
  for (int gd = 0; gd < PTO_DTYPE_COUNT; gd++)
    for (int td = 0; td < PTO_DTYPE_COUNT; td++)
      for (int cm = 0; cm < 2; cm++)
        for (int k = 0; k < 3; k++) {
          const shape *s = &shapes[shape_ix[k]];
          rng r = rng_seed(seed_of(op, gd * 4 + td, cm, k));
          gbuf b = gbuf_new(&r, (pto_dtype)gd, s->vr + 2, s->vc + 3, cm);
          pto_tile *d = dst_new((pto_dtype)td, s->rows, s->cols, s->vr, s->vc);
          pto_tile *want = tile_clone(d);
          for (uint32_t i = 0; i < s->vr; i++)
            for (uint32_t j = 0; j < s->vc; j++)
              o_convert((pto_dtype)td, el(want, i, j), (pto_dtype)gd,
                        gat(&b.g, i, j));
          char what[48];
          snprintf(what, sizeof what, "<- %s%s", pto_dtype_name((pto_dtype)gd),
                   cm ? " column-major" : "");
          const char *ctx = ctx_of(op, what, (pto_dtype)td, s);
          pto_targs a = {0};
          a.dst[0] = d;
          a.g = b.g;
          run_ok(op, &a, ctx);
          expect_tile(ctx, d, want, NULL, NULL);
        }
}

static void drive_store(int op, const oracle_case *oc) {
  (void)oc;
  static const int shape_ix[] = {1, 2};
  for (int gd = 0; gd < PTO_DTYPE_COUNT; gd++)
    for (int td = 0; td < PTO_DTYPE_COUNT; td++)
      for (int acc = 0; acc < 2; acc++)
        for (int k = 0; k < 2; k++) {
          const shape *s = &shapes[shape_ix[k]];
          pto_dtype gdt = (pto_dtype)gd, tdt = (pto_dtype)td;
          rng r = rng_seed(seed_of(op, gd * 4 + td, acc, k));
          gbuf b = gbuf_new(&r, gdt, s->vr + 2, s->vc + 3, k);
          size_t bytes = b.n * dsize(gdt);
          unsigned char *want = keep(malloc(bytes));
          memcpy(want, b.mem, bytes);
          pto_tile *x =
              src_new(&r, tdt, s->rows, s->cols, s->vr, s->vc, gen_for(tdt));
          pto_gview wg = b.g;
          wg.base = want + 3 * dsize(gdt);
          for (uint32_t i = 0; i < s->vr; i++)
            for (uint32_t j = 0; j < s->vc; j++) {
              void *w = gat(&wg, i, j);
              if (!acc) {
                o_convert(gdt, w, tdt, el(x, i, j));
              } else if (gdt == PTO_I32 && tdt == PTO_I32) {
                int32_t v = wrap32((int64_t)value_of(gdt, w) +
                                   (int64_t)value_of(tdt, el(x, i, j)));
                memcpy(w, &v, sizeof v);
              } else {
                float gf = (float)value_of(gdt, w);
                float sf = (float)value_of(tdt, el(x, i, j));
                convert_value(gdt, w, PTO_F32, (float)((double)gf + sf));
              }
            }
          char what[48];
          snprintf(what, sizeof what, "-> %s%s", pto_dtype_name(gdt),
                   acc ? " acc" : "");
          const char *ctx = ctx_of(op, what, tdt, s);
          pto_targs a = {0};
          a.src[0] = x;
          a.g = b.g;
          a.flags = acc ? PTO_TF_ACC : 0;
          run_ok(op, &a, ctx);
          char b1[64], b2[64];
          for (size_t i = 0; i < b.n; i++) {
            const void *g = b.mem + i * dsize(gdt), *w = want + i * dsize(gdt);
            cr_assert(elem_same(gdt, g, w),
                      "%s: global element %zu is %s, expected %s", ctx, i,
                      show(gdt, g, b1, sizeof b1), show(gdt, w, b2, sizeof b2));
          }
        }
}

/* TROWEXPANDMULSTORE: every global element bit for bit: the f32 product
 * src0 * src1[r] inside the window, untouched outside it; row- and
 * column-major views, with and without streaming stores (the view starts
 * 3 elements into its buffer, so the streaming path has a head). */
static void drive_mulstore(int op, const oracle_case *oc) {
  (void)oc;
  static const int shape_ix[] = {0, 1, 2, 4};
  for (int stream = 0; stream < 2; stream++)
    for (int cm = 0; cm < 2; cm++)
      for (int k = 0; k < 4; k++) {
        const shape *s = &shapes[shape_ix[k]];
        rng r = rng_seed(seed_of(op, stream, cm, k));
        gbuf b = gbuf_new(&r, PTO_F32, s->vr + 2, s->vc + 3, cm);
        size_t bytes = b.n * sizeof(float);
        unsigned char *want = keep(malloc(bytes));
        memcpy(want, b.mem, bytes);
        pto_tile *x = src_new(&r, PTO_F32, s->rows, s->cols, s->vr, s->vc,
                              G_F32);
        pto_tile *v = src_new(&r, PTO_F32, s->rows, 1, s->vr, 1, G_F32);
        pto_gview wg = b.g;
        wg.base = want + 3 * sizeof(float);
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t j = 0; j < s->vc; j++) {
            float y = getf(x, i, j) * getf(v, i, 0);
            memcpy(gat(&wg, i, j), &y, sizeof y);
          }
        char what[48];
        snprintf(what, sizeof what, "->%s%s", cm ? " column-major" : "",
                 stream ? " streaming" : "");
        const char *ctx = ctx_of(op, what, PTO_F32, s);
        pto_targs a = {0};
        a.src[0] = x;
        a.src[1] = v;
        a.g = b.g;
        a.flags = stream ? PTO_TF_STREAM : 0;
        run_ok(op, &a, ctx);
        char b1[64], b2[64];
        for (size_t i = 0; i < b.n; i++) {
          const void *g = b.mem + i * 4, *w = want + i * 4;
          cr_assert(elem_same(PTO_F32, g, w),
                    "%s: global element %zu is %s, expected %s", ctx, i,
                    show(PTO_F32, g, b1, sizeof b1),
                    show(PTO_F32, w, b2, sizeof b2));
        }
      }
}

/* TLOADROWMAX: dst0 bit for bit the loaded window, dst1 the IEEE maximum
 * of each loaded row (NaN wins, +0 > -0, as TROWMAX's oracle), from row-
 * and column-major views of values rich in zeros, NaNs and infinities. */
static void drive_loadmax(int op, const oracle_case *oc) {
  (void)oc;
  for (int cm = 0; cm < 2; cm++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      rng r = rng_seed(seed_of(op, cm, si, 0));
      gbuf b = gbuf_gen(&r, PTO_F32, s->vr + 2, s->vc + 3, cm, G_RED);
      pto_tile *d = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *m = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
      pto_tile *want = tile_clone(d), *wantm = tile_clone(m);
      for (uint32_t i = 0; i < s->vr; i++) {
        double acc = 0;
        for (uint32_t j = 0; j < s->vc; j++) {
          memcpy(el(want, i, j), gat(&b.g, i, j), 4);
          double v = getf(want, i, j);
          acc = j == 0 ? v : o_max(acc, v);
        }
        setf(wantm, i, 0, (float)acc);
      }
      const char *ctx = ctx_of(op, cm ? "column-major" : "", PTO_F32, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.dst[1] = m;
      a.g = b.g;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, NULL, NULL);
      expect_tile(ctx, m, wantm, NULL, NULL);
    }
}

/* TLOADEXPDIFSUM: dst0 within 2 ulp of exp(g - m) with m each row's IEEE
 * maximum, dst1 within the TROWSUM bound of the exact sum of those exps,
 * and both bit for bit what the same table's TLOADROWMAX then
 * TROWEXPANDEXPDIFSUM make (the fusion changes no value), from row- and
 * column-major views with NaNs and infinities among the values. */
static void drive_loadexpsum(int op, const oracle_case *oc) {
  for (int cm = 0; cm < 2; cm++)
    for (int si = 0; si < (int)N_SHAPES; si++) {
      const shape *s = &shapes[si];
      rng r = rng_seed(seed_of(op, cm, si, 0));
      gbuf b = gbuf_gen(&r, PTO_F32, s->vr + 2, s->vc + 3, cm, G_F32);
      pto_tile *d = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *sum = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
      pto_tile *want = tile_clone(d), *wsum = tile_clone(sum);
      double *val = dbuf(d), *tol = dbuf(d), *sval = dbuf(sum),
             *stol = dbuf(sum);
      for (uint32_t i = 0; i < s->vr; i++) {
        double m = 0, acc = 0, mag = 0;
        for (uint32_t j = 0; j < s->vc; j++) {
          double v = value_of(PTO_F32, gat(&b.g, i, j));
          m = j == 0 ? v : o_max(m, v);
        }
        for (uint32_t j = 0; j < s->vc; j++) {
          size_t k = (size_t)i * d->stride + j;
          val[k] = oc->fb(value_of(PTO_F32, gat(&b.g, i, j)), (float)m);
          tol[k] = 2 * ulp_f32(val[k]);
          acc += val[k];
          mag += fabs(val[k]);
        }
        sval[(size_t)i * sum->stride] = acc;
        stol[(size_t)i * sum->stride] = 1e-5 * sqrt((double)s->vc) * mag;
      }
      const char *ctx = ctx_of(op, cm ? "column-major" : "", PTO_F32, s);
      pto_targs a = {0};
      a.dst[0] = d;
      a.dst[1] = sum;
      a.g = b.g;
      run_ok(op, &a, ctx);
      expect_tile(ctx, d, want, val, tol);
      expect_tile(ctx, sum, wsum, sval, stol);
      /* the two instructions it fuses, on the same table */
      pto_tile *x = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *mx = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
      pto_tile *u = tile_clone(d), *us = tile_clone(sum);
      pto_targs l = {0};
      l.dst[0] = x;
      l.dst[1] = mx;
      l.g = b.g;
      run_ok(PTO_OP_TLOADROWMAX, &l, ctx);
      pto_targs e = {0};
      e.dst[0] = u;
      e.dst[1] = us;
      e.src[0] = x;
      e.src[1] = mx;
      run_ok(PTO_OP_TROWEXPANDEXPDIFSUM, &e, ctx);
      expect_valid(ctx, d, u);
      expect_valid(ctx, sum, us);
    }
}

/* TLOADSOFTMAXSTORE: dst0 and dst1 bit for bit what the same table's
 * TLOADEXPDIFSUM makes, and every element of g2's buffer bit for bit what
 * TRECIP of dst1 then TROWEXPANDMULSTORE of dst0 write (the fusion changes
 * no value), untouched outside the window; rows of finite values within
 * the bounds of those instructions of the double-precision softmax. Row-
 * and column-major views of x and of y; with streaming stores, y's rows
 * also vector-aligned (the streamed, pipelined path). */
static void drive_loadsoftmax(int op, const oracle_case *oc) {
  (void)oc;
  for (int stream = 0; stream < 3; stream++) /* 2: streamed, aligned rows */
    for (int cm = 0; cm < 2; cm++)
      for (int si = 0; si < (int)N_SHAPES; si++) {
        const shape *s = &shapes[si];
        rng r = rng_seed(seed_of(op, stream, cm, si));
        gbuf x = gbuf_gen(&r, PTO_F32, s->vr + 2, s->vc + 3, cm, G_F32);
        gbuf y = gbuf_new(&r, PTO_F32, s->vr + 2, s->vc + 3, stream ? 0 : !cm);
        if (stream == 2) { /* rows 64-byte aligned */
          const int64_t lead = (s->vc + 3 + 15) / 16 * 16;
          y.n = (size_t)(lead * (s->vr + 2));
          y.mem = keep(aligned_alloc(64, y.n * sizeof(float)));
          for (size_t i = 0; i < y.n; i++)
            gen_elem(&r, PTO_F32, G_F32, y.mem + i * sizeof(float));
          y.g.base = y.mem;
          y.g.row_stride = lead;
        }
        const size_t bytes = y.n * sizeof(float);
        unsigned char *want = keep(malloc(bytes));
        memcpy(want, y.mem, bytes);
        pto_gview wg = y.g;
        wg.base = want + ((unsigned char *)y.g.base - y.mem);
        char what[64];
        snprintf(what, sizeof what, "%s->%s%s", cm ? "column-major" : "",
                 y.g.col_stride != 1 ? " column-major" : "",
                 stream == 2 ? " streaming aligned"
                 : stream    ? " streaming"
                             : "");
        const char *ctx = ctx_of(op, what, PTO_F32, s);
        /* the three instructions it fuses, on the same table */
        pto_tile *u = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *us = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
        pto_tile *q = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
        pto_targs l = {0};
        l.dst[0] = u;
        l.dst[1] = us;
        l.g = x.g;
        run_ok(PTO_OP_TLOADEXPDIFSUM, &l, ctx);
        pto_targs rc = {0};
        rc.dst[0] = q;
        rc.src[0] = us;
        run_ok(PTO_OP_TRECIP, &rc, ctx);
        pto_targs ms = {0};
        ms.src[0] = u;
        ms.src[1] = q;
        ms.g = wg;
        run_ok(PTO_OP_TROWEXPANDMULSTORE, &ms, ctx);
        /* the fused one */
        pto_tile *d = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *sum = dst_new(PTO_F32, s->rows, 1, s->vr, 1);
        pto_targs a = {0};
        a.dst[0] = d;
        a.dst[1] = sum;
        a.g = x.g;
        a.g2 = y.g;
        a.flags = stream ? PTO_TF_STREAM : 0;
        run_ok(op, &a, ctx);
        expect_valid(ctx, d, u);
        expect_valid(ctx, sum, us);
        char b1[64], b2[64];
        for (size_t i = 0; i < y.n; i++) {
          const void *g = y.mem + i * 4, *w = want + i * 4;
          cr_assert(elem_same(PTO_F32, g, w),
                    "%s: g2 element %zu is %s, the three instructions give %s",
                    ctx, i, show(PTO_F32, g, b1, sizeof b1),
                    show(PTO_F32, w, b2, sizeof b2));
        }
        /* the double-precision softmax of each row of finite values */
        for (uint32_t i = 0; i < s->vr; i++) {
          double m = -INFINITY, acc = 0;
          int finite = 1;
          for (uint32_t j = 0; j < s->vc; j++) {
            const double v = value_of(PTO_F32, gat(&x.g, i, j));
            finite &= isfinite(v) != 0;
            m = v > m ? v : m;
          }
          for (uint32_t j = 0; finite && j < s->vc; j++)
            acc += exp(value_of(PTO_F32, gat(&x.g, i, j)) - m);
          for (uint32_t j = 0; finite && j < s->vc; j++) {
            const double w = exp(value_of(PTO_F32, gat(&x.g, i, j)) - m) / acc;
            const double got = value_of(PTO_F32, gat(&y.g, i, j));
            /* exps 2 ulp, their sum as TROWSUM's bound, two roundings */
            const double tol = 4 * ulp_f32(w) + 1e-5 * sqrt((double)s->vc) * w;
            cr_assert(fabs(got - w) <= tol,
                      "%s: softmax row %u col %u is %.9g, double gives %.9g",
                      ctx, i, j, got, w);
          }
        }
      }
}

static void drive_gather(int op, const oracle_case *oc) {
  (void)oc;
  static const pto_dtype types[][2] = {{PTO_F32, PTO_F32}, {PTO_F32, PTO_BF16},
                                       {PTO_I32, PTO_I32}, {PTO_BF16, PTO_BF16},
                                       {PTO_F16, PTO_F32}, {PTO_I32, PTO_F32}};
  /* dst capacity/valid, index capacity/valid */
  static const uint32_t geo[][8] = {{16, 48, 13, 37, 1, 16, 1, 13},
                                    {16, 48, 13, 37, 16, 1, 13, 1},
                                    {8, 16, 6, 5, 4, 16, 2, 3},
                                    {1, 1, 1, 1, 1, 1, 1, 1}};
  const int64_t N = 11;
  for (int ti = 0; ti < 6; ti++)
    for (int gi = 0; gi < 4; gi++)
      for (int strict = 0; strict < 3; strict++) { /* 2: strict, bad index */
        pto_dtype dt = types[ti][0], gdt = types[ti][1];
        const uint32_t *G = geo[gi];
        rng r = rng_seed(seed_of(op, ti, gi, strict));
        gbuf b = gbuf_new(&r, gdt, N, 40, 0);
        pto_tile *ix = src_new(&r, PTO_I32, G[4], G[5], G[6], G[7], G_F32);
        for (uint32_t i = 0; i < G[6]; i++)
          for (uint32_t j = 0; j < G[7]; j++) /* some outside [0, N) */
            seti(ix, i, j,
                 strict == 1 ? (int32_t)below(&r, N)
                             : (int32_t)below(&r, N + 4) - 2);
        if (strict == 2) /* make sure one is out of range */
          seti(ix, G[6] - 1, G[7] - 1, below(&r, 2) ? -1 : (int32_t)N);
        pto_tile *d = dst_new(dt, G[0], G[1], G[2], G[3]);
        pto_tile *want = tile_clone(d);
        for (uint32_t i = 0; i < G[2] && strict != 2; i++) {
          int32_t row = geti(ix, i / G[7], i % G[7]);
          for (uint32_t j = 0; j < G[3]; j++)
            if (row < 0 || row >= N)
              memset(el(want, i, j), 0, dsize(dt));
            else
              o_convert(dt, el(want, i, j), gdt, gat(&b.g, row, j));
        }
        char ctx[96];
        snprintf(ctx, sizeof ctx, "TGATHER %s <- %s %ux%u, index %ux%u%s",
                 pto_dtype_name(dt), pto_dtype_name(gdt), G[2], G[3], G[6],
                 G[7],
                 strict == 2 ? " strict, out of range"
                 : strict    ? " strict"
                             : "");
        pto_targs a = {0};
        a.dst[0] = d;
        a.src[0] = ix;
        a.g = b.g;
        a.flags = strict ? PTO_TF_STRICT : 0;
        if (strict == 2) {
          char msg[256];
          int st = pto__tileop_check(op, &a, msg, sizeof msg);
          cr_assert_eq(st, 0, "%s: check: %s", ctx, msg);
          cr_assert_eq(pto__tileop_run(op, &a), PTO_ERANGE, "%s", ctx);
        } else {
          run_ok(op, &a, ctx);
        }
        expect_tile(ctx, d, want, NULL, NULL);
      }
}

/* ---- drivers: sorts
 * ---------------------------------------------------------------- */

typedef struct pair {
  float v;
  int32_t i;
} pair;

/* NaN last; larger value first (-0 == +0); then smaller index. */
static int o_sort_cmp(const void *pa, const void *pb) {
  const pair *a = pa, *b = pb;
  int an = isnan(a->v) != 0, bn = isnan(b->v) != 0;
  if (an != bn)
    return an ? 1 : -1;
  if (!an && a->v > b->v)
    return -1;
  if (!an && a->v < b->v)
    return 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Sorts columns [c0, c1) of row i of (v, ix) into (dv, dix). */
static void o_sort_range(const pto_tile *v, const pto_tile *ix, pto_tile *dv,
                         pto_tile *dix, uint32_t i, uint32_t c0, uint32_t c1) {
  pair p[512];
  cr_assert(c1 - c0 <= 512);
  for (uint32_t c = c0; c < c1; c++) {
    p[c - c0].v = getf(v, i, c);
    p[c - c0].i = geti(ix, i, c);
  }
  qsort(p, c1 - c0, sizeof p[0], o_sort_cmp);
  for (uint32_t c = c0; c < c1; c++) {
    setf(dv, i, c, p[c - c0].v);
    seti(dix, i, c, p[c - c0].i);
  }
}

/* Values with many ties, and distinct indices (a shuffled row of ids). */
static void sort_inputs(rng *r, const shape *s, pto_tile **v, pto_tile **ix) {
  *v = src_new(r, PTO_F32, s->rows, s->cols, s->vr, s->vc, G_SORT);
  *ix = src_new(r, PTO_I32, s->rows, s->cols, s->vr, s->vc, G_F32);
  for (uint32_t i = 0; i < s->vr; i++) {
    for (uint32_t j = 0; j < s->vc; j++)
      seti(*ix, i, j, (int32_t)(i * 1000 + j) - 500);
    for (uint32_t j = s->vc; j-- > 1;) {
      uint32_t k = below(r, j + 1);
      int32_t t = geti(*ix, i, j);
      seti(*ix, i, j, geti(*ix, i, k));
      seti(*ix, i, k, t);
    }
  }
}

static const shape sort_shapes[] = {{4, 100, 3, 77},
                                    {2, 64, 2, 64},
                                    {1, 16, 1, 5},
                                    {16, 48, 13, 37},
                                    {1, 1, 1, 1}};

static void drive_sort32(int op, const oracle_case *oc) {
  (void)oc;
  for (int si = 0; si < 5; si++)
    for (int inplace = 0; inplace < 2; inplace++) {
      const shape *s = &sort_shapes[si];
      rng r = rng_seed(seed_of(op, si, inplace, 0));
      pto_tile *v, *ix;
      sort_inputs(&r, s, &v, &ix);
      pto_tile *dv = inplace ? tile_clone(v)
                             : dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *di = inplace ? tile_clone(ix)
                             : dst_new(PTO_I32, s->rows, s->cols, s->vr, s->vc);
      pto_tile *wv = tile_clone(dv), *wi = tile_clone(di);
      for (uint32_t i = 0; i < s->vr; i++)
        for (uint32_t c = 0; c < s->vc; c += 32)
          o_sort_range(v, ix, wv, wi, i, c, c + 32 < s->vc ? c + 32 : s->vc);
      const char *ctx = ctx_of(op, inplace ? "in place" : "", PTO_F32, s);
      pto_targs a = {0};
      a.dst[0] = dv;
      a.dst[1] = di;
      a.src[0] = inplace ? dv : v;
      a.src[1] = inplace ? di : ix;
      run_ok(op, &a, ctx);
      expect_tile(ctx, dv, wv, NULL, NULL);
      expect_tile(ctx, di, wi, NULL, NULL);
    }
}

static void drive_mrgsort(int op, const oracle_case *oc) {
  (void)oc;
  static const int32_t runs[] = {1, 5, 32};
  for (int si = 0; si < 5; si++)
    for (int ri = 0; ri < 3; ri++)
      for (int ways = 2; ways <= 4; ways++) {
        const shape *s = &sort_shapes[si];
        int32_t run = runs[ri];
        rng r = rng_seed(seed_of(op, si, ri, ways));
        pto_tile *v, *ix;
        sort_inputs(&r, s, &v, &ix);
        /* make every run sorted (the instruction's precondition) */
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t c = 0; c < s->vc; c += (uint32_t)run)
            o_sort_range(v, ix, v, ix, i, c,
                         c + (uint32_t)run < s->vc ? c + (uint32_t)run : s->vc);
        pto_tile *dv = dst_new(PTO_F32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *di = dst_new(PTO_I32, s->rows, s->cols, s->vr, s->vc);
        pto_tile *wv = tile_clone(dv), *wi = tile_clone(di);
        /* merging sorted runs of distinct keys = sorting the group */
        uint32_t group = (uint32_t)run * (uint32_t)ways;
        for (uint32_t i = 0; i < s->vr; i++)
          for (uint32_t c = 0; c < s->vc; c += group)
            o_sort_range(v, ix, wv, wi, i, c,
                         c + group < s->vc ? c + group : s->vc);
        char what[48];
        snprintf(what, sizeof what, "runs of %d, %d-way", run, ways);
        const char *ctx = ctx_of(op, what, PTO_F32, s);
        pto_targs a = {0};
        a.dst[0] = dv;
        a.dst[1] = di;
        a.src[0] = v;
        a.src[1] = ix;
        a.imm[0] = run;
        a.imm[1] = ways;
        run_ok(op, &a, ctx);
        expect_tile(ctx, dv, wv, NULL, NULL);
        expect_tile(ctx, di, wi, NULL, NULL);
      }
}

/* ---- top-k: TTOPK and TMRGTOPK ---------------------------------------------
 * The oracle sorts every entry of a row with qsort (o_sort_cmp, or with the
 * masked mode's -inf entries left out) and keeps the first kk, padding with
 * (-inf, -1) in the masked mode. */

/* Sorts n pairs, the masked mode's -inf entries dropped first; returns how
 * many are left. */
static uint32_t o_rank(pair *p, uint32_t n, int masked) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!(masked && p[i].v == -INFINITY))
      p[m++] = p[i];
  qsort(p, m, sizeof *p, o_sort_cmp);
  return m;
}

/* Writes the first kk of n ranked pairs (then padding) to row i. */
static void o_emit(pto_tile *dv, pto_tile *di, uint32_t i, const pair *p,
                   uint32_t n, uint32_t kk) {
  for (uint32_t j = 0; j < kk; j++) {
    setf(dv, i, j, j < n ? p[j].v : -INFINITY);
    seti(di, i, j, j < n ? p[j].i : -1);
  }
}

/* Top-k inputs: sort values (ties, +-0, +-inf, NaN), and in the masked
 * tests about a third -inf (excluded), some rows wholly. */
static pto_tile *topk_values(rng *r, uint32_t rows, uint32_t cols,
                             uint32_t vr, uint32_t vc, int masked) {
  pto_tile *v = src_new(r, PTO_F32, rows, cols, vr, vc, G_SORT);
  for (uint32_t i = 0; masked && i < vr; i++)
    for (uint32_t j = 0; j < vc; j++)
      if (i == 1 || below(r, 3) == 0)
        setf(v, i, j, -INFINITY);
  return v;
}

static void drive_topk(int op, const oracle_case *oc) {
  (void)oc;
  static const int32_t bases[] = {0, 1000, -7, INT32_MAX};
  for (int si = 0; si < 5; si++)
    for (int masked = 0; masked < 2; masked++)
      for (int ki = 0; ki < 4; ki++) {
        const shape *s = &sort_shapes[si];
        const uint32_t kks[4] = {1, (s->vc + 1) / 2, s->vc, s->vc + 5};
        const uint32_t kk = kks[ki];
        if (!masked && kk > s->vc)
          continue;
        rng r = rng_seed(seed_of(op, si, masked, ki));
        pto_tile *v = topk_values(&r, s->rows, s->cols, s->vr, s->vc, masked);
        int32_t base = bases[(si + ki) % 4];
        if (base == INT32_MAX) /* the largest index is INT32_MAX */
          base = INT32_MAX - (int32_t)s->vc + 1;
        const uint32_t cap = kk + 3;
        pto_tile *dv = dst_new(PTO_F32, s->rows, cap, s->vr, kk);
        pto_tile *di = dst_new(PTO_I32, s->rows, cap, s->vr, kk);
        pto_tile *wv = tile_clone(dv), *wi = tile_clone(di);
        pair *p = keep(malloc(s->vc * sizeof *p));
        for (uint32_t i = 0; i < s->vr; i++) {
          for (uint32_t c = 0; c < s->vc; c++) {
            p[c].v = getf(v, i, c);
            p[c].i = (int32_t)((int64_t)base + c);
          }
          o_emit(wv, wi, i, p, o_rank(p, s->vc, masked), kk);
        }
        char what[64];
        snprintf(what, sizeof what, "k %u of %u, base %d%s", kk, s->vc, base,
                 masked ? ", masked" : "");
        const char *ctx = ctx_of(op, what, PTO_F32, s);
        pto_targs a = {0};
        a.dst[0] = dv;
        a.dst[1] = di;
        a.src[0] = v;
        a.imm[0] = base;
        a.imm[1] = masked;
        run_ok(op, &a, ctx);
        expect_tile(ctx, dv, wv, NULL, NULL);
        expect_tile(ctx, di, wi, NULL, NULL);
      }
}

/* masked: -inf entries rank after NaN, where the masked mode wants them. */
static int o_mask_cmp(const void *pa, const void *pb) {
  const pair *a = pa, *b = pb;
  int ax = a->v == -INFINITY, bx = b->v == -INFINITY;
  if (ax != bx)
    return ax - bx;
  return o_sort_cmp(pa, pb);
}

/* Each run of `run` columns of row i sorted in the mode's order. */
static void topk_sort_runs(pto_tile *v, pto_tile *ix, uint32_t run,
                           int masked) {
  pair *p = keep(malloc(run * sizeof *p));
  for (uint32_t i = 0; i < v->valid_rows; i++)
    for (uint32_t c0 = 0; c0 < v->valid_cols; c0 += run) {
      uint32_t n = v->valid_cols - c0 < run ? v->valid_cols - c0 : run;
      for (uint32_t c = 0; c < n; c++) {
        p[c].v = getf(v, i, c0 + c);
        p[c].i = geti(ix, i, c0 + c);
      }
      qsort(p, n, sizeof *p, masked ? o_mask_cmp : o_sort_cmp);
      for (uint32_t c = 0; c < n; c++) {
        setf(v, i, c0 + c, p[c].v);
        seti(ix, i, c0 + c, p[c].i);
      }
    }
}

static void drive_mrgtopk(int op, const oracle_case *oc) {
  (void)oc;
  static const uint32_t runs[] = {1, 5, 32, 200};
  for (int si = 0; si < 5; si++)
    for (int ri = 0; ri < 4; ri++)
      for (int masked = 0; masked < 2; masked++)
        for (int ki = 0; ki < 4; ki++) {
          const shape *s = &sort_shapes[si];
          const uint32_t run = runs[ri];
          if ((s->vc + run - 1) / run > 4) /* at most 4 runs */
            continue;
          const uint32_t kks[4] = {1, run < s->vc ? run : s->vc, s->vc,
                                   s->vc + 9};
          const uint32_t kk = kks[ki];
          if (!masked && kk > s->vc)
            continue;
          rng r = rng_seed(seed_of(op, si, ri, masked * 4 + ki));
          pto_tile *v, *ix;
          sort_inputs(&r, s, &v, &ix);
          for (uint32_t i = 0; masked && i < s->vr; i++)
            for (uint32_t j = 0; j < s->vc; j++)
              if (i == 1 || below(&r, 3) == 0)
                setf(v, i, j, -INFINITY);
          topk_sort_runs(v, ix, run, masked);
          const uint32_t cap = kk + 2;
          pto_tile *dv = dst_new(PTO_F32, s->rows, cap, s->vr, kk);
          pto_tile *di = dst_new(PTO_I32, s->rows, cap, s->vr, kk);
          pto_tile *wv = tile_clone(dv), *wi = tile_clone(di);
          /* run j's indices + j * off; merging sorted runs of distinct
           * indices = ranking the row (off 3000 keeps them distinct) */
          const uint32_t off = ki % 2 ? 3000 : 0;
          pair *p = keep(malloc(s->vc * sizeof *p));
          for (uint32_t i = 0; i < s->vr; i++) {
            for (uint32_t c = 0; c < s->vc; c++) {
              p[c].v = getf(v, i, c);
              p[c].i = geti(ix, i, c) + (int32_t)(c / run * off);
            }
            o_emit(wv, wi, i, p, o_rank(p, s->vc, masked), kk);
          }
          char what[64];
          snprintf(what, sizeof what, "k %u, runs of %u, offset %u%s", kk, run,
                   off, masked ? ", masked" : "");
          const char *ctx = ctx_of(op, what, PTO_F32, s);
          pto_targs a = {0};
          a.dst[0] = dv;
          a.dst[1] = di;
          a.src[0] = v;
          a.src[1] = ix;
          a.imm[0] = (int32_t)run;
          a.imm[1] = masked;
          a.s = off;
          run_ok(op, &a, ctx);
          expect_tile(ctx, dv, wv, NULL, NULL);
          expect_tile(ctx, di, wi, NULL, NULL);
        }
}

/* ---- the oracle table: one row per instruction ------------------------------
 */

#define BIN(f, i, g1)                                                          \
  { .drive = drive_binary, .fb = f, .ib = i, .gen0 = G_F32, .gen1 = g1 }
#define UN(f, i, g)                                                            \
  { .drive = drive_unary, .fu = f, .iu = i, .gen0 = g }
#define SCAL(f, i)                                                             \
  { .drive = drive_scalar, .fb = f, .ib = i, .gen0 = G_F32 }
#define REXP(f, i, g1)                                                         \
  { .drive = drive_rowexpand2, .fb = f, .ib = i, .gen0 = G_F32, .gen1 = g1 }
#define CEXP(f, i, g1)                                                         \
  { .drive = drive_colexpand2, .fb = f, .ib = i, .gen0 = G_F32, .gen1 = g1 }

/* ---- drivers: attention's instructions ------------------------------------
 * TGATHERPACK is exact: its whole buffers are compared with the layouts
 * written out here (core/isa.def); TSOFTMAXONLINE and TSOFTMAXFINAL take
 * exps, logs and sums: each value within a relative 4e-6 (a few ulp of
 * vf_exp plus a sum of up to 40 positive terms in another order) of the
 * double-precision result, every untouched byte still the sentinel. */

/* An index tile of n slots (1 x n valid in 1 x cap), every fifth invalid
 * (-1, rows, INT32_MIN, or rows + 3 in turn), the rest rows apart. */
static pto_tile *index_tile(rng *r, uint32_t n, uint32_t cap, int32_t rows) {
  pto_tile *t = tile_new(PTO_I32, 1, cap, 1, n, 0x11);
  static const int32_t bad[] = {-1, 0, INT32_MIN, 3};
  for (uint32_t c = 0; c < n; c++) {
    int32_t v = (int32_t)below(r, (uint32_t)rows);
    if (c % 5 == 4)
      v = bad[(c / 5) % 4] + (bad[(c / 5) % 4] >= 0 ? rows : 0);
    seti(t, 0, c, v);
  }
  return t;
}

static int index_ok(const pto_tile *ix, uint32_t c, int64_t rows) {
  int32_t v = geti(ix, 0, c);
  return v >= 0 && v < rows;
}

static void drive_gatherpack(int op, const oracle_case *oc) {
  (void)oc;
  /* slots n, D, dv, panel width, table rows */
  static const uint32_t dims[][5] = {
      {16, 24, 16, 16, 50}, {13, 37, 20, 16, 9}, {7, 5, 5, 5, 30},
      {1, 1, 1, 1, 2},      {33, 64, 48, 8, 100}, {10, 22, 18, 8, 40}};
  static const pto_dtype gdts[] = {PTO_F32, PTO_BF16, PTO_F16};
  for (int gi = 0; gi < 3; gi++)
    for (int di = 0; di < 6; di++)
      for (int cm = 0; cm < 2; cm++) { /* table row- or column-major */
        const uint32_t *D = dims[di];
        const uint32_t n = D[0], K = D[1], dv = D[2], w = D[3];
        rng r = rng_seed(seed_of(op, gi, di, cm));
        gbuf tb = gbuf_gen(&r, gdts[gi], D[4], K + 2, cm, G_MM);
        pto_tile *ix = index_tile(&r, n, n + 3, (int32_t)D[4]);
        const uint32_t np = (n + w - 1) / w * w, vp = (dv + w - 1) / w * w;
        pto_tile *gt = dst_new(PTO_F32, K + 1, np + 2, K, n);
        pto_tile *v = dst_new(PTO_F32, n + 2, vp, n, dv);
        pto_tile *wg = tile_clone(gt), *wv = tile_clone(v);
        for (uint32_t t = 0; t < np; t++) {
          const int ok = t < n && index_ok(ix, t, D[4]);
          const int32_t j = ok ? geti(ix, 0, t) : 0;
          for (uint32_t d = 0; d < K; d++) /* G^T: (d, t) */
            ((float *)wg->data)[pto__pack_b_index(wg, w, d, t)] =
                ok ? (float)value_of(tb.g.dtype, gat(&tb.g, j, d)) : 0.0f;
          for (uint32_t c = 0; t < n && c < vp; c++) /* V: (t, c) */
            ((float *)wv->data)[pto__pack_b_index(wv, w, t, c)] =
                ok && c < dv ? (float)value_of(tb.g.dtype, gat(&tb.g, j, c))
                             : 0.0f;
        }
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s %s table%s n=%u D=%u dv=%u w=%u",
                 pto__insn_name(op), pto_dtype_name(gdts[gi]),
                 cm ? " (col-major)" : "", n, K, dv, w);
        pto_targs a = {0};
        a.dst[0] = gt;
        a.dst[1] = v;
        a.src[0] = ix;
        a.g = tb.g;
        a.imm[0] = (int32_t)w;
        run_ok(op, &a, ctx);
        cr_assert(memcmp(gt->data, wg->data, tile_size(gt)) == 0,
                  "%s: G^T differs from the packed layout", ctx);
        cr_assert(memcmp(v->data, wv->data, tile_size(v)) == 0,
                  "%s: V differs from the packed layout", ctx);
      }
}

/* within 4e-6 relative, or both the same infinity or zero */
static void expect_close(const char *ctx, const char *what, uint32_t r,
                         uint32_t c, double got, double want) {
  int ok = isinf(want) ? got == want
                       : fabs(got - want) <= 4e-6 * fabs(want) + 1e-37;
  cr_assert(ok, "%s: %s (%u,%u) is %.9g, expected %.9g", ctx, what, r, c, got,
            want);
}

static void drive_smonline(int op, const oracle_case *oc) {
  (void)oc;
  /* M, N, panel width */
  static const uint32_t dims[][3] = {
      {8, 16, 6}, {13, 37, 6}, {1, 1, 1}, {5, 40, 4}, {12, 9, 12}};
  static const double scales[] = {0.125, 1.0};
  for (int di = 0; di < 5; di++)
    for (int fl = 0; fl < 4; fl++) { /* continue a state; scale */
      const uint32_t M = dims[di][0], N = dims[di][1], w = dims[di][2];
      const int cont = fl & 1;
      const double scale = scales[fl >> 1];
      const int32_t rows = 40;
      rng r = rng_seed(seed_of(op, di, fl, 0));
      pto_tile *S = src_new(&r, PTO_F32, M + 1, N + 3, M, N, G_MM);
      pto_tile *ix = index_tile(&r, N, N + 1, rows);
      if (di == 4) /* a block with nothing valid */
        for (uint32_t c = 0; c < N; c++)
          seti(ix, 0, c, -7);
      pto_tile *prev = tile_new(PTO_F32, M, 8, M, 3, 0x5b);
      for (uint32_t i = 0; i < M; i++) { /* some rows start empty */
        const int empty = i % 4 == 3;
        setf(prev, i, 0, 1.0f);
        setf(prev, i, 1, empty ? -INFINITY : (float)uniform(&r, -3, 3));
        setf(prev, i, 2, empty ? 0.0f : (float)uniform(&r, 0.5, 20));
      }
      const uint32_t mp = (M + w - 1) / w * w;
      pto_tile *P = dst_new(PTO_F32, mp + 1, N + 2, M, N);
      pto_tile *st = dst_new(PTO_F32, M + 2, 4, M, 3);
      pto_tile *sentinel = tile_clone(P), *st_want = tile_clone(st);
      char ctx[128];
      snprintf(ctx, sizeof ctx, "%s M=%u N=%u w=%u scale %g%s",
               pto__insn_name(op), M, N, w, scale, cont ? " continued" : "");
      pto_targs a = {0};
      a.dst[0] = P;
      a.dst[1] = st;
      a.src[0] = S;
      a.src[1] = ix;
      a.src[2] = cont ? prev : NULL;
      a.flags = cont ? PTO_TF_ACC : 0;
      a.s = scale;
      a.imm[0] = (int32_t)w;
      a.imm[1] = rows;
      run_ok(op, &a, ctx);
      unsigned char *touched = keep(calloc((size_t)P->rows * P->stride, 1));
      for (uint32_t i = 0; i < mp; i++) {
        double m = cont ? getf(prev, i % M, 1) : -INFINITY;
        double l = cont ? getf(prev, i % M, 2) : 0.0;
        double mx = m, sum = 0;
        for (uint32_t c = 0; i < M && c < N; c++)
          if (index_ok(ix, c, rows)) {
            double x = (double)(getf(S, i, c) * (float)scale);
            mx = x > mx ? x : mx;
          }
        for (uint32_t c = 0; c < N; c++) {
          size_t at = pto__pack_a_index(P, w, i, c);
          double e = 0;
          if (i < M && mx != -INFINITY && index_ok(ix, c, rows))
            e = exp((double)(getf(S, i, c) * (float)scale) - mx);
          sum += e;
          touched[at] = 1;
          expect_close(ctx, "P", i, c, ((float *)P->data)[at], e);
        }
        if (i >= M)
          continue;
        const double alpha = mx == -INFINITY ? 1.0 : exp(m - mx);
        expect_close(ctx, "alpha", i, 0, getf(st, i, 0), alpha);
        expect_close(ctx, "max", i, 1, getf(st, i, 1), mx);
        expect_close(ctx, "sum", i, 2,
                     getf(st, i, 2), mx == -INFINITY ? l : l * alpha + sum);
      }
      for (size_t x = 0; x < (size_t)P->rows * P->stride; x++)
        cr_assert(touched[x] || ((uint32_t *)P->data)[x] ==
                                    ((uint32_t *)sentinel->data)[x],
                  "%s: P element %zu outside the panels was written", ctx, x);
      for (uint32_t i = 0; i < st->rows; i++) /* beyond (alpha, m, l) */
        for (uint32_t c = i < M ? 3 : 0; c < st->stride; c++)
          cr_assert(elem_same(PTO_F32, el(st, i, c), el(st_want, i, c)),
                    "%s: state (%u,%u) outside the valid region written", ctx,
                    i, c);
    }
}

static void drive_smfinal(int op, const oracle_case *oc) {
  (void)oc;
  static const uint32_t dims[][2] = {{8, 16}, {13, 37}, {1, 1}, {5, 70}};
  for (int di = 0; di < 4; di++) {
    const uint32_t M = dims[di][0], N = dims[di][1];
    rng r = rng_seed(seed_of(op, di, 0, 0));
    pto_tile *O = src_new(&r, PTO_F32, M + 1, N + 1, M, N, G_MM);
    pto_tile *st = tile_new(PTO_F32, M, 4, M, 3, 0x33);
    for (uint32_t i = 0; i < M; i++) {
      const int empty = i % 3 == 2;
      setf(st, i, 0, 0.5f);
      setf(st, i, 1, empty ? -INFINITY : (float)uniform(&r, -5, 5));
      setf(st, i, 2, empty ? 0.0f : (float)uniform(&r, 1, 600));
    }
    pto_tile *Y = dst_new(PTO_F32, M + 2, N + 4, M, N);
    pto_tile *L = dst_new(PTO_F32, M + 1, 2, M, 1);
    pto_tile *wy = tile_clone(Y), *wl = tile_clone(L);
    double *vy = dbuf(Y), *ty = dbuf(Y), *vl = dbuf(L), *tl = dbuf(L);
    for (uint32_t i = 0; i < M; i++) {
      const double m = getf(st, i, 1), l = getf(st, i, 2);
      for (uint32_t c = 0; c < N; c++) {
        size_t at = (size_t)i * Y->stride + c;
        vy[at] = l > 0 ? getf(O, i, c) / l : 0.0;
        ty[at] = 4e-7 * fabs(vy[at]);
      }
      /* logf's error is relative to ln(l), m's exact: cancellation in the
       * sum makes the bound relative to both terms */
      vl[(size_t)i * L->stride] = l > 0 ? m + log(l) : INFINITY;
      tl[(size_t)i * L->stride] = l > 0 ? 2e-7 * (fabs(m) + fabs(log(l))) : 0;
    }
    char ctx[96];
    snprintf(ctx, sizeof ctx, "%s M=%u N=%u", pto__insn_name(op), M, N);
    pto_targs a = {0};
    a.dst[0] = Y;
    a.dst[1] = L;
    a.src[0] = O;
    a.src[1] = st;
    run_ok(op, &a, ctx);
    expect_tile(ctx, Y, wy, vy, ty);
    expect_tile(ctx, L, wl, vl, tl);
  }
}

static const oracle_case cases[PTO_OP_COUNT] = {
    [PTO_OP_TLOAD] = {.drive = drive_load},
    [PTO_OP_TSTORE] = {.drive = drive_store},
    [PTO_OP_TGATHER] = {.drive = drive_gather},
    [PTO_OP_TADD] = BIN(o_add, oi_add, G_F32),
    [PTO_OP_TSUB] = BIN(o_sub, oi_sub, G_F32),
    [PTO_OP_TMUL] = BIN(o_mul, oi_mul, G_F32),
    [PTO_OP_TDIV] = BIN(o_div, oi_div, G_DIV),
    [PTO_OP_TMAX] = BIN(o_max, oi_max, G_SMALL),
    [PTO_OP_TMIN] = BIN(o_min, oi_min, G_SMALL),
    [PTO_OP_TEXP] = UN(o_exp, NULL, G_EXP),
    [PTO_OP_TLOG] = UN(o_log, NULL, G_POS),
    [PTO_OP_TSQRT] = UN(o_sqrt, NULL, G_POS),
    [PTO_OP_TRSQRT] = UN(o_rsqrt, NULL, G_POS),
    [PTO_OP_TRECIP] = UN(o_recip, NULL, G_F32),
    [PTO_OP_TRELU] = UN(o_relu, oi_relu, G_SMALL),
    [PTO_OP_TABS] = UN(o_abs, oi_abs, G_F32),
    [PTO_OP_TNEG] = UN(o_neg, oi_neg, G_F32),
    [PTO_OP_TCMP] = {.drive = drive_cmp},
    [PTO_OP_TSEL] = {.drive = drive_sel},
    [PTO_OP_TCVT] = {.drive = drive_convert},
    [PTO_OP_TADDS] = SCAL(o_add, oi_add),
    [PTO_OP_TSUBS] = SCAL(o_sub, oi_sub),
    [PTO_OP_TMULS] = SCAL(o_mul, oi_mul),
    [PTO_OP_TDIVS] = SCAL(o_div, oi_div),
    [PTO_OP_TMAXS] = SCAL(o_max, oi_max),
    [PTO_OP_TMINS] = SCAL(o_min, oi_min),
    [PTO_OP_TEXPANDS] = {.drive = drive_fill},
    [PTO_OP_TROWSUM] = {.drive = drive_rowred, .red = R_SUM},
    [PTO_OP_TROWMAX] = {.drive = drive_rowred, .red = R_MAX},
    [PTO_OP_TROWMIN] = {.drive = drive_rowred, .red = R_MIN},
    [PTO_OP_TCOLSUM] = {.drive = drive_colred, .red = R_SUM},
    [PTO_OP_TCOLMAX] = {.drive = drive_colred, .red = R_MAX},
    [PTO_OP_TCOLMIN] = {.drive = drive_colred, .red = R_MIN},
    [PTO_OP_TROWEXPAND] = {.drive = drive_rowexpand, .gen1 = G_F32},
    [PTO_OP_TROWEXPANDADD] = REXP(o_add, oi_add, G_F32),
    [PTO_OP_TROWEXPANDSUB] = REXP(o_sub, oi_sub, G_F32),
    [PTO_OP_TROWEXPANDMUL] = REXP(o_mul, oi_mul, G_F32),
    [PTO_OP_TROWEXPANDDIV] = REXP(o_div, oi_div, G_DIV),
    [PTO_OP_TROWEXPANDMAX] = REXP(o_max, oi_max, G_SMALL),
    [PTO_OP_TROWEXPANDEXPDIF] = REXP(o_expdif, NULL, G_F32),
    [PTO_OP_TCOLEXPAND] = {.drive = drive_colexpand, .gen1 = G_F32},
    [PTO_OP_TCOLEXPANDADD] = CEXP(o_add, oi_add, G_F32),
    [PTO_OP_TCOLEXPANDSUB] = CEXP(o_sub, oi_sub, G_F32),
    [PTO_OP_TCOLEXPANDMUL] = CEXP(o_mul, oi_mul, G_F32),
    [PTO_OP_TCOLEXPANDDIV] = CEXP(o_div, oi_div, G_DIV),
    [PTO_OP_TMATMUL] = {.drive = drive_matmul},
    [PTO_OP_TMATMUL_ACC] = {.drive = drive_matmul},
    [PTO_OP_TMATMUL_RELU_WSUM] = {.drive = drive_wsum},
    [PTO_OP_TMOV] = {.drive = drive_convert},
    [PTO_OP_TEXTRACT] = {.drive = drive_extract},
    [PTO_OP_TINSERT] = {.drive = drive_insert},
    [PTO_OP_TTRANS] = {.drive = drive_trans},
    [PTO_OP_TFILLPAD] = {.drive = drive_fillpad},
    [PTO_OP_TSORT32] = {.drive = drive_sort32},
    [PTO_OP_TMRGSORT] = {.drive = drive_mrgsort},
    [PTO_OP_TCI] = {.drive = drive_fill},
    [PTO_OP_TTRI] = {.drive = drive_fill},
    [PTO_OP_TROWEXPANDEXPDIFSUM] = {.drive = drive_rowexpsum, .fb = o_expdif,
                                    .gen0 = G_F32, .gen1 = G_F32},
    [PTO_OP_TROWEXPANDMULSTORE] = {.drive = drive_mulstore},
    [PTO_OP_TLOADROWMAX] = {.drive = drive_loadmax},
    [PTO_OP_TLOADEXPDIFSUM] = {.drive = drive_loadexpsum, .fb = o_expdif},
    [PTO_OP_TLOADSOFTMAXSTORE] = {.drive = drive_loadsoftmax},
    [PTO_OP_TGATHERPACK] = {.drive = drive_gatherpack},
    [PTO_OP_TSOFTMAXONLINE] = {.drive = drive_smonline},
    [PTO_OP_TSOFTMAXFINAL] = {.drive = drive_smfinal},
    [PTO_OP_TTOPK] = {.drive = drive_topk},
    [PTO_OP_TMRGTOPK] = {.drive = drive_mrgtopk},
};

static void run_case(int op) {
  const oracle_case *oc = &cases[op];
  cr_assert_not_null(oc->drive, "%s has no oracle in cases[]",
                     pto__insn_name(op));
  oc->drive(op, oc);
}

/* One test per instruction, generated from the list. */
#define PTO_INSN(name, fam, core, nsrc, ndst, flags)                           \
  Test(tileops, name, .fini = free_all) {                                      \
    run_case(PTO_OP_##name);                                                   \
  }
#include "core/isa.def"
#undef PTO_INSN

Test(tileops, coverage) {
  int missing = 0;
  for (int op = 0; op < PTO_OP_COUNT; op++)
    if (!cases[op].drive) {
      cr_log_error("%s has no oracle in cases[]", pto__insn_name(op));
      missing++;
    }
  cr_expect_eq(missing, 0, "%d instructions have no oracle", missing);
  for (int op = 0; op < PTO_OP_COUNT; op++)
    cr_expect_not_null(pto__isa_scalar.fn[op], "scalar table lacks %s",
                       pto__insn_name(op));
}

/* ---- every table, directly --------------------------------------------------
 * The generated tests above run the active table; ctest runs them once per
 * table (tileops-scalar/-avx2/-avx512). The tests below call each table
 * this CPU runs directly, on inputs the generic ones do not reach. */

typedef struct isa_list {
  const pto_isa_table *t[3];
  int n;
} isa_list;

static isa_list tables_here(void) {
  isa_list l = {{&pto__isa_scalar}, 1};
  if (pto_isa_supported("avx2"))
    l.t[l.n++] = pto__isa_avx2();
  if (pto_isa_supported("avx512"))
    l.t[l.n++] = pto__isa_avx512();
  return l;
}

static void run_table(const pto_isa_table *t, int op, const pto_targs *a,
                      const char *ctx) {
  char msg[256];
  int st = pto__tileop_check(op, a, msg, sizeof msg);
  cr_assert_eq(st, 0, "%s: %s", ctx, msg);
  st = t->fn[op](op, a);
  cr_assert_eq(st, 0, "%s: %s returned %s", ctx, t->name, pto_status_name(st));
}

/* A prefetch plan (core/prefetch.h) handed to an instruction changes
 * nothing it computes; the SIMD tables draw lines from it as they loop over
 * long rows (the scalar reference ignores it), never beyond the plan. */
Test(tileops, instructions_draw_prefetch_lines, .fini = free_all) {
  const isa_list l = tables_here();
  static const unsigned char far[64 * 1024];
  const int ops[] = {PTO_OP_TROWMAX, PTO_OP_TROWSUM, PTO_OP_TROWEXPANDMUL,
                     PTO_OP_TEXP, PTO_OP_TROWEXPANDEXPDIFSUM};
  rng r = rng_seed(77);
  pto_tile *x = src_new(&r, PTO_F32, 8, 256, 7, 250, G_F32);
  pto_tile *v = src_new(&r, PTO_F32, 8, 1, 7, 1, G_F32);
  for (int t = 0; t < l.n; t++)
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
      const int op = ops[k];
      const int rowvec = op == PTO_OP_TROWMAX || op == PTO_OP_TROWSUM;
      pto_tile *d0 = dst_new(PTO_F32, 8, rowvec ? 1 : 256, 7, rowvec ? 1 : 250);
      pto_tile *d1 = dst_new(PTO_F32, 8, 1, 7, 1);
      pto_tile *e0 = tile_clone(d0), *e1 = tile_clone(d1);
      pto_targs a = {0};
      a.dst[0] = d0;
      a.dst[1] = op == PTO_OP_TROWEXPANDEXPDIFSUM ? d1 : NULL;
      a.src[0] = x;
      a.src[1] = rowvec || op == PTO_OP_TEXP ? NULL : v;
      char ctx[64];
      snprintf(ctx, sizeof ctx, "%s %s", l.t[t]->name, pto__insn_name(op));
      run_table(l.t[t], op, &a, ctx);
      pto_pf pf = {.n = 1, .lines = 1000};
      pf.w[0].p = far;
      pf.w[0].row_bytes = 1000 * PTO_PF_LINE;
      pf.w[0].rs_bytes = 0;
      pf.w[0].rows = 1;
      a.dst[0] = e0;
      a.dst[1] = a.dst[1] ? e1 : NULL;
      a.pf = &pf;
      run_table(l.t[t], op, &a, ctx);
      expect_valid(ctx, e0, d0);
      if (a.dst[1])
        expect_valid(ctx, e1, d1);
      if (l.t[t] == &pto__isa_scalar)
        cr_expect_eq(pf.done, 0, "%s: drew %lld lines", ctx,
                     (long long)pf.done);
      else
        cr_expect(pf.done > 0 && pf.done <= 1000, "%s: drew %lld lines", ctx,
                  (long long)pf.done);
      /* an exhausted plan stays exhausted */
      pf.lines = pf.done;
      const int64_t done = pf.done;
      run_table(l.t[t], op, &a, ctx);
      cr_expect_eq(pf.done, done, "%s", ctx);
    }
}

/* The error of got against exact, in f32 ulps at exact (below 2^-126 the
 * ulp is 2^-149; +-inf counts as +-2^128). -1 when got is wrong outright:
 * a NaN where a number is due, a number where a NaN or an infinity is. */
static double ulp_error(float got, double exact) {
  if (isnan(exact))
    return isnan(got) ? 0 : -1;
  if (isnan(got))
    return -1;
  if (isinf(exact) || fabs(exact) >= 0x1p128) /* must overflow */
    return isinf(got) && !signbit(got) == !signbit(exact) ? 0 : -1;
  double g = isinf(got) ? copysign(0x1p128, got) : got;
  return fabs(g - exact) / ulp_f32(exact);
}

/* The stated accuracy of the vector exp and log (tileops/vec_kernels.h);
 * libm's expf/logf (the scalar table) are within it too. */
#define EXP_LOG_MAX_ULP 1.0

typedef struct sweep_worst {
  double err;
  float x, got;
} sweep_worst;

/* Runs op (TEXP or TLOG) of every table on the n inputs in, as rows of a
 * tile with a tail (1021 of 1024 columns), and folds the worst error. */
static void sweep_chunk(int op, const float *in, uint32_t n,
                        sweep_worst *worst, const isa_list *l) {
  const uint32_t cols = 1024, vc = 1021, rows = (n + vc - 1) / vc;
  pto_tile *x = tile_new(PTO_F32, rows, cols, rows, vc, 0xff);
  for (uint32_t i = 0; i < rows * vc; i++)
    setf(x, i / vc, i % vc, in[i < n ? i : n - 1]);
  double *exact = keep(malloc(rows * vc * sizeof *exact));
  for (uint32_t i = 0; i < rows * vc; i++)
    exact[i] = op == PTO_OP_TEXP ? exp((double)getf(x, i / vc, i % vc))
                                 : log((double)getf(x, i / vc, i % vc));
  for (int k = 0; k < l->n; k++) {
    pto_tile *d = dst_new(PTO_F32, rows, cols, rows, vc);
    pto_targs a = {0};
    a.dst[0] = d;
    a.src[0] = x;
    run_table(l->t[k], op, &a, pto__insn_name(op));
    for (uint32_t i = 0; i < rows * vc; i++) {
      float got = getf(d, i / vc, i % vc);
      double e = ulp_error(got, exact[i]);
      sweep_worst *w = &worst[k];
      if (e < 0 || e > w->err) {
        w->err = e < 0 ? INFINITY : e;
        w->x = getf(x, i / vc, i % vc);
        w->got = got;
      }
    }
    for (uint32_t r = 0; r < rows; r++) /* the tail columns: untouched */
      for (uint32_t c = vc; c < d->stride; c++)
        cr_assert_eq(*(unsigned char *)el(d, r, c), SENTINEL);
  }
  free_all();
}

/* Bit patterns lo, lo + step, ... up to hi, in chunks. */
static void sweep_bits(int op, uint32_t lo, uint32_t hi, uint32_t step,
                       sweep_worst *worst, const isa_list *l) {
  enum { CHUNK = 1 << 16 };
  static float in[CHUNK];
  uint32_t n = 0;
  for (uint64_t u = lo; u <= hi; u += step) {
    in[n++] = pto__f32_from_bits((uint32_t)u);
    if (n == CHUNK) {
      sweep_chunk(op, in, n, worst, l);
      n = 0;
    }
  }
  if (n)
    sweep_chunk(op, in, n, worst, l);
}

static void expect_sweep(int op, const sweep_worst *worst, const isa_list *l) {
  for (int k = 0; k < l->n; k++) {
    cr_log_info("%s %s: max error %.3f ulp (x = %a, got %a)", l->t[k]->name,
                pto__insn_name(op), worst[k].err, worst[k].x, worst[k].got);
    cr_expect_leq(worst[k].err, EXP_LOG_MAX_ULP,
                  "%s %s: %.3f ulp at x = %a (%.9g): got %a, exact %.17g",
                  l->t[k]->name, pto__insn_name(op), worst[k].err, worst[k].x,
                  worst[k].x, worst[k].got,
                  op == PTO_OP_TEXP ? exp(worst[k].x) : log(worst[k].x));
  }
}

/* exp over every 37th f32 in [-105, 90] (subnormal results, underflow to 0
 * and overflow to +inf included), a sparse pass over every bit pattern
 * (NaNs, infinities, both zeros), and the edges one by one. */
Test(tileops, vec_exp_sweep, .fini = free_all, .timeout = 600) {
  isa_list l = tables_here();
  sweep_worst worst[3] = {{0}};
  sweep_bits(PTO_OP_TEXP, 0x00000000u, 0x42b40000u, 37, worst, &l); /* 90 */
  sweep_bits(PTO_OP_TEXP, 0x80000000u, 0xc2d20000u, 37, worst, &l); /* -105 */
  sweep_bits(PTO_OP_TEXP, 0x00000000u, 0xffffffffu, 4099, worst, &l);
  static const float edges[] = {
      0.0f,        -0.0f,       INFINITY,    -INFINITY,   NAN,
      -NAN,        88.7228f,    88.72283f,   88.722839f,  88.7228394f,
      89.0f,       1e30f,       -87.3365f,   -103.27893f, -103.97208f,
      -104.0f,     -1e30f,      0x1p-149f,   -0x1p-149f,  0x1p-126f,
      1e-8f,       -1e-8f,      0.34657359f, -0.34657359f};
  sweep_chunk(PTO_OP_TEXP, edges, sizeof edges / sizeof edges[0], worst, &l);
  expect_sweep(PTO_OP_TEXP, worst, &l);
}

/* log over every 17th f32 in (0, 4) and every 61st above (subnormal inputs
 * included), a sparse pass over every bit pattern (negatives -> NaN, +-0 ->
 * -inf, inf, NaN), and the edges one by one. */
Test(tileops, vec_log_sweep, .fini = free_all, .timeout = 600) {
  isa_list l = tables_here();
  sweep_worst worst[3] = {{0}};
  sweep_bits(PTO_OP_TLOG, 0x00000001u, 0x40800000u, 17, worst, &l);
  sweep_bits(PTO_OP_TLOG, 0x40800000u, 0x7f800000u, 61, worst, &l);
  sweep_bits(PTO_OP_TLOG, 0x00000000u, 0xffffffffu, 4099, worst, &l);
  static const float edges[] = {
      0.0f,        -0.0f,       INFINITY,   -INFINITY,   NAN,
      -NAN,        1.0f,        -1.0f,      0x1p-149f,   0x1p-126f,
      0x1.fffffep-127f, 3.4028235e38f, 0.70710677f, 0.70710683f, 1.4142135f,
      1.4142137f,  0x1.fffffep-1f, 0x1.000002p+0f, 2.0f, 0.5f};
  sweep_chunk(PTO_OP_TLOG, edges, sizeof edges / sizeof edges[0], worst, &l);
  expect_sweep(PTO_OP_TLOG, worst, &l);
}

/* ---- SIMD stress: every table against the scalar reference -------------------
 * The scalar table is checked against this file's oracle by the generated
 * tests; here every other table must reproduce it (bit for bit where the
 * instruction is exact and for i32, else within 2 ulp or a sum's
 * tolerance), padding included, at every width 1..70 (every tail of both
 * vector lengths, one and more vectors), on values chosen to break SIMD
 * code: NaN, +-0, +-inf, subnormals, bf16/f16 rounding ties, i32 extremes. */

static float nasty_f32(rng *r) {
  switch (below(r, 8)) {
  case 0:
    return specials[below(r, N_SPECIALS)];
  case 1: { /* a bf16 tie */
    uint32_t u = ((uint32_t)below(r, 0x7f80) << 16) | 0x8000u |
                 (below(r, 2) ? 0x80000000u : 0);
    return pto__f32_from_bits(u);
  }
  case 2: { /* an f16 tie */
    uint16_t h = (uint16_t)below(r, 0x7bff);
    float f = (float)((f16_value(h) + f16_value((uint16_t)(h + 1))) / 2);
    return below(r, 2) ? f : -f;
  }
  case 3: /* any bit pattern */
    return pto__f32_from_bits((uint32_t)next(r));
  case 4:
    return (float)((int)below(r, 9) - 4) * (below(r, 2) ? 1.0f : 0.5f);
  default:
    return (float)uniform(r, -100, 100);
  }
}

static int32_t nasty_i32(rng *r) {
  static const int32_t s[] = {0, 1, -1, INT32_MIN, INT32_MAX, INT32_MIN + 1,
                              INT32_MAX - 1, 16777217, -16777217};
  switch (below(r, 4)) {
  case 0:
    return s[below(r, sizeof s / sizeof s[0])];
  case 1:
    return (int32_t)below(r, 21) - 10;
  default:
    return (int32_t)(uint32_t)next(r);
  }
}

static void nasty_fill(rng *r, pto_tile *t) {
  for (uint32_t i = 0; i < t->valid_rows; i++)
    for (uint32_t j = 0; j < t->valid_cols; j++) {
      if (t->dtype == PTO_F32) {
        setf(t, i, j, nasty_f32(r));
      } else if (t->dtype == PTO_I32) {
        seti(t, i, j, nasty_i32(r));
      } else {
        uint16_t h = (uint16_t)next(r);
        memcpy(el(t, i, j), &h, 2);
      }
    }
}

/* rows x cols valid, capacity a little larger, poison around it. */
static pto_tile *nasty_src(rng *r, pto_dtype dt, uint32_t rows,
                           uint32_t cols) {
  pto_tile *t = tile_new(dt, rows + 1, cols + 3, rows, cols,
                         below(r, 2) ? 0x7f : 0xff);
  nasty_fill(r, t);
  return t;
}

/* Compares a table's dst with the scalar one over the whole buffer. */
static void expect_same_tile(const char *ctx, const char *isa, int op,
                             const pto_tile *got, const pto_tile *want) {
  int exact = op_exact(op) || got->dtype != PTO_F32;
  int sum = op == PTO_OP_TROWSUM || op == PTO_OP_TCOLSUM;
  char b1[64], b2[64];
  for (uint32_t r = 0; r < got->rows; r++)
    for (uint32_t c = 0; c < got->stride; c++) {
      const void *g = el(got, r, c), *w = el(want, r, c);
      int in = r < want->valid_rows && c < want->valid_cols;
      if (elem_same(got->dtype, g, w))
        continue;
      if (in && !exact) {
        double x = getf(got, r, c), v = getf(want, r, c);
        /* sums of <= 70 terms in [-8, 8] in another order: each partial
         * sum rounds by <= 2^-24 * 560 */
        double tol = sum ? 70 * 0x1p-24 * 560 : 2 * ulp_f32(v);
        if (!isnan(x) && !isnan(v) && !isinf(v) && fabs(x - v) <= tol)
          continue;
      }
      cr_assert_fail("%s on %s: (%u,%u) is %s, scalar gives %s%s", ctx, isa, r,
                     c, show(got->dtype, g, b1, sizeof b1),
                     show(got->dtype, w, b2, sizeof b2),
                     in ? "" : " (outside the valid region)");
    }
}

/* Runs a (built for the scalar table, whose dsts are fresh) on every table,
 * each into fresh copies of the dsts; in_place: dst[0] is src[0]. */
static void stress_run(int op, pto_targs *a, int in_place, const char *ctx) {
  isa_list l = tables_here();
  const pto_tile *src0 = a->src[0];
  pto_tile *want[2] = {a->dst[0], a->dst[1]};
  for (int k = 0; k < l.n; k++) {
    pto_targs b = *a;
    for (int i = 0; i < 2; i++)
      if (want[i])
        b.dst[i] = tile_clone(want[i]);
    if (in_place) { /* dst[0] starts as a copy of src0 */
      b.dst[0] = tile_clone(src0);
      b.src[0] = b.dst[0];
    }
    run_table(l.t[k], op, &b, ctx);
    if (k == 0) { /* the scalar table: its results are the expectation */
      for (int i = 0; i < 2; i++)
        want[i] = b.dst[i];
      continue;
    }
    for (int i = 0; i < 2; i++)
      if (want[i])
        expect_same_tile(ctx, l.t[k]->name, op, b.dst[i], want[i]);
  }
}

static const int stress_ops_binary[] = {
    PTO_OP_TADD,          PTO_OP_TSUB,          PTO_OP_TMUL,
    PTO_OP_TDIV,          PTO_OP_TMAX,          PTO_OP_TMIN,
    PTO_OP_TROWEXPANDADD, PTO_OP_TROWEXPANDSUB, PTO_OP_TROWEXPANDMUL,
    PTO_OP_TROWEXPANDDIV, PTO_OP_TROWEXPANDMAX, PTO_OP_TROWEXPANDEXPDIF,
    PTO_OP_TCOLEXPANDADD, PTO_OP_TCOLEXPANDSUB, PTO_OP_TCOLEXPANDMUL,
    PTO_OP_TCOLEXPANDDIV};
static const int stress_ops_unary[] = {
    PTO_OP_TEXP,    PTO_OP_TLOG,    PTO_OP_TSQRT,   PTO_OP_TRSQRT,
    PTO_OP_TRECIP,  PTO_OP_TRELU,   PTO_OP_TABS,    PTO_OP_TNEG,
    PTO_OP_TADDS,   PTO_OP_TSUBS,   PTO_OP_TMULS,   PTO_OP_TDIVS,
    PTO_OP_TMAXS,   PTO_OP_TMINS,   PTO_OP_TEXPANDS, PTO_OP_TROWSUM,
    PTO_OP_TROWMAX, PTO_OP_TROWMIN, PTO_OP_TCOLSUM, PTO_OP_TCOLMAX,
    PTO_OP_TCOLMIN, PTO_OP_TROWEXPAND, PTO_OP_TCOLEXPAND};

static int takes_i32(int op) {
  return (pto__insn_info(op)->flags & PTO_IF_INT) != 0;
}

Test(tileops, simd_stress_element_scalar_axis, .fini = free_all,
     .timeout = 600) {
  static const double scal[] = {2.5, -0.0, 0.0, INFINITY, -INFINITY, NAN,
                                -7.0, 3e9, -1e-40};
  char ctx[128];
  for (uint32_t w = 1; w <= 70; w++)
    for (uint32_t rows = 1; rows <= 3; rows += 2)
      for (int di = 0; di < 2; di++) {
        pto_dtype dt = di ? PTO_I32 : PTO_F32;
        rng r = rng_seed(seed_of(w, rows, di, 77));
        for (size_t k = 0; k < sizeof stress_ops_binary / sizeof(int); k++) {
          int op = stress_ops_binary[k];
          if (dt == PTO_I32 && !takes_i32(op))
            continue;
          int rowv = op >= PTO_OP_TROWEXPANDADD && op <= PTO_OP_TROWEXPANDEXPDIF;
          int colv = op >= PTO_OP_TCOLEXPANDADD && op <= PTO_OP_TCOLEXPANDDIV;
          pto_tile *x = nasty_src(&r, dt, rows, w);
          pto_tile *y = nasty_src(&r, dt, rowv ? rows : colv ? 1 : rows,
                                  rowv ? 1 : w);
          pto_targs a = {0};
          a.dst[0] = dst_new(dt, rows + 1, w + 3, rows, w);
          a.src[0] = x;
          a.src[1] = y;
          snprintf(ctx, sizeof ctx, "%s %s %ux%u", pto__insn_name(op),
                   pto_dtype_name(dt), rows, w);
          stress_run(op, &a, 0, ctx);
          stress_run(op, &a, 1, ctx);
          free_all();
        }
        for (size_t k = 0; k < sizeof stress_ops_unary / sizeof(int); k++) {
          int op = stress_ops_unary[k];
          if (dt == PTO_I32 && !takes_i32(op))
            continue;
          const pto_insn_info *info = pto__insn_info(op);
          int rowred = op >= PTO_OP_TROWSUM && op <= PTO_OP_TROWMIN;
          int colred = op >= PTO_OP_TCOLSUM && op <= PTO_OP_TCOLMIN;
          int rowexp = op == PTO_OP_TROWEXPAND, colexp = op == PTO_OP_TCOLEXPAND;
          pto_tile *x = nasty_src(&r, dt, rowexp ? rows : colexp ? 1 : rows,
                                  rowexp ? 1 : w);
          if (dt == PTO_F32 && (op == PTO_OP_TROWSUM || op == PTO_OP_TCOLSUM))
            fill_valid(&r, x, G_SUM); /* f32 sums: any order, a tolerance */
          pto_targs a = {0};
          a.dst[0] = rowred ? dst_new(dt, rows + 1, 1, rows, 1)
                     : colred ? dst_new(dt, 1, w + 3, 1, w)
                              : dst_new(dt, rows + 1, w + 3, rows, w);
          a.src[0] = info->n_src ? x : NULL;
          a.s = scal[below(&r, sizeof scal / sizeof scal[0])];
          snprintf(ctx, sizeof ctx, "%s %s %ux%u s=%g", pto__insn_name(op),
                   pto_dtype_name(dt), rows, w, a.s);
          stress_run(op, &a, 0, ctx);
          if (info->family == PTO_FAMILY_ELEMENT ||
              (info->family == PTO_FAMILY_SCALAR && info->n_src))
            stress_run(op, &a, 1, ctx);
          free_all();
        }
        /* compare (every mode) and select */
        for (int mode = 0; mode < PTO_CMP_MODE_COUNT; mode++) {
          pto_targs a = {0};
          a.dst[0] = dst_new(PTO_I32, rows + 1, w + 3, rows, w);
          a.src[0] = nasty_src(&r, dt, rows, w);
          a.src[1] = below(&r, 2) ? a.src[0] : nasty_src(&r, dt, rows, w);
          a.imm[0] = mode;
          snprintf(ctx, sizeof ctx, "TCMP %s mode %d %ux%u", pto_dtype_name(dt),
                   mode, rows, w);
          stress_run(PTO_OP_TCMP, &a, 0, ctx);
        }
        pto_targs sel = {0};
        sel.dst[0] = dst_new(dt, rows + 1, w + 3, rows, w);
        sel.src[0] = nasty_src(&r, PTO_I32, rows, w);
        sel.src[1] = nasty_src(&r, dt, rows, w);
        sel.src[2] = nasty_src(&r, dt, rows, w);
        snprintf(ctx, sizeof ctx, "TSEL %s %ux%u", pto_dtype_name(dt), rows, w);
        stress_run(PTO_OP_TSEL, &sel, 0, ctx);
        free_all();
      }
}

/* TCVT and TMOV (with and without ReLU) between every dtype pair. */
Test(tileops, simd_stress_convert, .fini = free_all, .timeout = 600) {
  char ctx[128];
  for (uint32_t w = 1; w <= 70; w++)
    for (int from = 0; from < PTO_DTYPE_COUNT; from++)
      for (int to = 0; to < PTO_DTYPE_COUNT; to++)
        for (int k = 0; k < 3; k++) { /* TCVT, TMOV, TMOV relu */
          rng r = rng_seed(seed_of(w, from, to, k));
          int op = k ? PTO_OP_TMOV : PTO_OP_TCVT;
          uint32_t rows = 1 + w % 3;
          pto_targs a = {0};
          a.src[0] = nasty_src(&r, (pto_dtype)from, rows, w);
          a.dst[0] = dst_new((pto_dtype)to, rows + 1, w + 3, rows, w);
          a.flags = k == 2 ? PTO_TF_RELU : 0;
          snprintf(ctx, sizeof ctx, "%s %s -> %s%s %ux%u", pto__insn_name(op),
                   pto_dtype_name((pto_dtype)from), pto_dtype_name((pto_dtype)to),
                   k == 2 ? " relu" : "", rows, w);
          stress_run(op, &a, 0, ctx);
          if (dsize((pto_dtype)from) == dsize((pto_dtype)to)) {
            pto_tile *same = tile_clone(a.src[0]); /* in place, dst retyped */
            a.src[0] = same;
            a.dst[0] = tile_clone(same);
            a.dst[0]->dtype = (pto_dtype)to;
            stress_run(op, &a, 0, ctx);
          }
          free_all();
        }
}

/* TLOAD, TSTORE (plain and accumulating) and TGATHER between every tile
 * and global dtype, row-major globals with padded rows. */
Test(tileops, simd_stress_memory, .fini = free_all, .timeout = 600) {
  char ctx[128];
  isa_list l = tables_here();
  for (uint32_t w = 1; w <= 70; w++)
    for (int gd = 0; gd < PTO_DTYPE_COUNT; gd++)
      for (int td = 0; td < PTO_DTYPE_COUNT; td++) {
        pto_dtype gdt = (pto_dtype)gd, tdt = (pto_dtype)td;
        rng r = rng_seed(seed_of(w, gd, td, 5));
        uint32_t rows = 1 + w % 4;
        /* a global rows+2 x w+1 window, nasty contents */
        pto_tile *gt = nasty_src(&r, gdt, rows + 2, w + 1);
        pto_gview g = {gt->data, gdt, rows + 2, w + 1, gt->stride, 1};
        pto_targs ld = {0};
        ld.dst[0] = dst_new(tdt, rows + 1, w + 3, rows, w);
        ld.g = g;
        snprintf(ctx, sizeof ctx, "TLOAD %s <- %s %ux%u", pto_dtype_name(tdt),
                 pto_dtype_name(gdt), rows, w);
        stress_run(PTO_OP_TLOAD, &ld, 0, ctx);

        pto_targs ga = {0};
        ga.dst[0] = dst_new(tdt, rows + 1, w + 3, rows, w);
        ga.src[0] = tile_new(PTO_I32, 1, rows, 1, rows, 0);
        for (uint32_t i = 0; i < rows; i++)
          seti((pto_tile *)ga.src[0], 0, i, (int32_t)below(&r, rows + 5) - 2);
        ga.g = g;
        snprintf(ctx, sizeof ctx, "TGATHER %s <- %s %ux%u",
                 pto_dtype_name(tdt), pto_dtype_name(gdt), rows, w);
        stress_run(PTO_OP_TGATHER, &ga, 0, ctx);

        pto_tile *x = nasty_src(&r, tdt, rows, w);
        /* plain, accumulating, streaming (same results; the window starts
         * 0..2 elements past an aligned address, so streaming stores get an
         * unaligned head) */
        for (int acc = 0; acc < 3; acc++) {
          pto_tile *want = NULL;
          for (int k = 0; k < l.n; k++) {
            pto_tile *gk = tile_clone(gt);
            pto_targs st = {0};
            st.src[0] = x;
            st.g = g;
            st.g.base = (unsigned char *)gk->data + (w % 3) * dsize(gdt);
            st.flags = acc == 1 ? PTO_TF_ACC : acc == 2 ? PTO_TF_STREAM : 0;
            snprintf(ctx, sizeof ctx, "TSTORE %s -> %s%s %ux%u",
                     pto_dtype_name(tdt), pto_dtype_name(gdt),
                     acc == 1 ? " acc" : acc == 2 ? " stream" : "", rows, w);
            run_table(l.t[k], PTO_OP_TSTORE, &st, ctx);
            if (k == 0)
              want = gk;
            else
              expect_same_tile(ctx, l.t[k]->name, PTO_OP_TSTORE, gk, want);
          }
        }
        free_all();
      }
}

/* Sort inputs: values with many ties, +-0, +-inf, NaN; indices distinct,
 * or (dups) from a small range so equal (value, index) pairs occur. */
static void sort_fill(rng *r, pto_tile *v, pto_tile *ix, int dups) {
  static const float s[] = {-1.0f, 0.0f,     -0.0f,     1.0f, 2.0f,
                            NAN,   INFINITY, -INFINITY, -NAN};
  for (uint32_t i = 0; i < v->valid_rows; i++)
    for (uint32_t j = 0; j < v->valid_cols; j++) {
      setf(v, i, j,
           below(r, 3) ? s[below(r, 9)] : (float)(int)below(r, 9) - 4.0f);
      seti(ix, i, j,
           dups ? (int32_t)below(r, 4) - 2 : (int32_t)(j * 7919u % 100003u) - 99);
    }
}

/* Each run of `run` columns sorted as TSORT32 sorts (by the oracle). */
static void sort_runs(pto_tile *v, pto_tile *ix, uint32_t run) {
  for (uint32_t i = 0; i < v->valid_rows; i++)
    for (uint32_t c = 0; c < v->valid_cols; c += run)
      o_sort_range(v, ix, v, ix, i, c,
                   c + run < v->valid_cols ? c + run : v->valid_cols);
}

Test(tileops, simd_stress_sort, .fini = free_all, .timeout = 600) {
  char ctx[128];
  static const uint32_t runs[] = {1, 2, 3, 5, 8, 16, 32};
  for (uint32_t w = 1; w <= 70; w++)
    for (int dups = 0; dups < 2; dups++) {
      rng r = rng_seed(seed_of(w, dups, 0, 9));
      uint32_t rows = 1 + w % 3;
      pto_tile *v = tile_new(PTO_F32, rows, w + 3, rows, w, 0xff);
      pto_tile *ix = tile_new(PTO_I32, rows, w + 3, rows, w, 0x7f);
      sort_fill(&r, v, ix, dups);
      pto_targs a = {0};
      a.src[0] = v;
      a.src[1] = ix;
      a.dst[0] = dst_new(PTO_F32, rows, w + 3, rows, w);
      a.dst[1] = dst_new(PTO_I32, rows, w + 3, rows, w);
      snprintf(ctx, sizeof ctx, "TSORT32 %ux%u%s", rows, w,
               dups ? " dup indices" : "");
      stress_run(PTO_OP_TSORT32, &a, 0, ctx);
      for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++)
        for (int ways = 2; ways <= 4; ways++) {
          pto_tile *sv = tile_clone(v), *si = tile_clone(ix);
          sort_runs(sv, si, runs[k]);
          pto_targs m = a;
          m.src[0] = sv;
          m.src[1] = si;
          m.imm[0] = (int32_t)runs[k];
          m.imm[1] = ways;
          snprintf(ctx, sizeof ctx, "TMRGSORT %ux%u runs of %u, %d-way%s", rows,
                   w, runs[k], ways, dups ? " dup indices" : "");
          stress_run(PTO_OP_TMRGSORT, &m, 0, ctx);
        }
      free_all();
    }
  /* long rows: many groups, and long runs through the streaming mergers */
  static const uint32_t long_runs[][2] = {
      {7, 4}, {64, 2}, {100, 3}, {256, 4}, {1000, 3}, {1500, 2}};
  for (size_t k = 0; k < sizeof long_runs / sizeof long_runs[0]; k++)
    for (int dups = 0; dups < 2; dups++) {
      rng r = rng_seed(seed_of((int)k, dups, 1, 9));
      const uint32_t w = 3001, rows = 2;
      pto_tile *v = tile_new(PTO_F32, rows, w + 7, rows, w, 0xff);
      pto_tile *ix = tile_new(PTO_I32, rows, w + 7, rows, w, 0x7f);
      sort_fill(&r, v, ix, dups);
      for (uint32_t i = 0; i < rows; i++) /* distinct values too */
        for (uint32_t j = 0; j < w; j += 3)
          setf(v, i, j, (float)uniform(&r, -1e6, 1e6));
      pto_targs m = {0};
      if (long_runs[k][0] > 512) { /* o_sort_range sorts at most 512 */
        for (uint32_t i = 0; i < rows; i++)
          for (uint32_t j = 0; j < w; j++)
            setf(v, i, j, -(float)(j % long_runs[k][0]) - (float)(i * 0.5));
      } else {
        sort_runs(v, ix, long_runs[k][0]);
      }
      m.src[0] = v;
      m.src[1] = ix;
      m.dst[0] = dst_new(PTO_F32, rows, w + 7, rows, w);
      m.dst[1] = dst_new(PTO_I32, rows, w + 7, rows, w);
      m.imm[0] = (int32_t)long_runs[k][0];
      m.imm[1] = (int32_t)long_runs[k][1];
      snprintf(ctx, sizeof ctx, "TMRGSORT %ux%u runs of %u, %u-way%s", rows, w,
               long_runs[k][0], long_runs[k][1], dups ? " dup indices" : "");
      stress_run(PTO_OP_TMRGSORT, &m, 0, ctx);
      free_all();
    }
}

/* Top-k values for the stress: sort_fill's ties and specials, any bit
 * pattern, and (masked) many -inf; `spread` values over a narrow range (one
 * top byte, so the radix select refines through every byte). */
static void topk_fill(rng *r, pto_tile *v, int masked, int spread) {
  pto_tile *ix = tile_new(PTO_I32, v->rows, v->cols, v->valid_rows,
                          v->valid_cols, 0);
  sort_fill(r, v, ix, 0);
  for (uint32_t i = 0; i < v->valid_rows; i++)
    for (uint32_t j = 0; j < v->valid_cols; j++) {
      uint32_t k = below(r, 8);
      if (spread && k < 6)
        setf(v, i, j, 1.0f + (float)below(r, 1u << 20) * 0x1p-23f);
      else if (k == 6)
        setf(v, i, j, nasty_f32(r));
      if (masked && below(r, 3) == 0)
        setf(v, i, j, -INFINITY);
    }
}

Test(tileops, simd_stress_topk, .fini = free_all, .timeout = 600) {
  char ctx[160];
  for (uint32_t w = 1; w <= 70; w++)
    for (int masked = 0; masked < 2; masked++) {
      rng r = rng_seed(seed_of(w, masked, 2, 9));
      const uint32_t rows = 1 + w % 3;
      pto_tile *v = tile_new(PTO_F32, rows, w + 3, rows, w, 0xff);
      topk_fill(&r, v, masked, (int)(w % 2));
      const uint32_t kks[] = {1, w / 3 + 1, w, w + 4};
      for (size_t ki = 0; ki < 4; ki++) {
        const uint32_t kk = kks[ki];
        if (!masked && kk > w)
          continue;
        pto_targs a = {0};
        a.src[0] = v;
        a.dst[0] = dst_new(PTO_F32, rows, kk + 5, rows, kk);
        a.dst[1] = dst_new(PTO_I32, rows, kk + 5, rows, kk);
        a.imm[0] = (int32_t)(w * 3) - 50;
        a.imm[1] = masked;
        snprintf(ctx, sizeof ctx, "TTOPK %ux%u k %u%s", rows, w, kk,
                 masked ? " masked" : "");
        stress_run(PTO_OP_TTOPK, &a, 0, ctx);
        /* the selection, as runs, merged back */
        for (uint32_t run = 1; run <= w; run = run * 2 + 1) {
          if ((w + run - 1) / run > 4)
            continue;
          pto_tile *sv = tile_clone(v);
          pto_tile *si = tile_new(PTO_I32, rows, w + 3, rows, w, 0x7f);
          for (uint32_t i = 0; i < rows; i++)
            for (uint32_t j = 0; j < w; j++)
              seti(si, i, j, (int32_t)below(&r, 2 * w) - 3); /* some equal */
          topk_sort_runs(sv, si, run, masked);
          pto_targs m = a;
          m.src[0] = sv;
          m.src[1] = si;
          m.imm[0] = (int32_t)run;
          m.s = run % 3 ? (double)run : 0; /* sometimes ties across runs */
          snprintf(ctx, sizeof ctx, "TMRGTOPK %ux%u runs of %u k %u%s", rows,
                   w, run, kk, masked ? " masked" : "");
          stress_run(PTO_OP_TMRGTOPK, &m, 0, ctx);
        }
      }
      free_all();
    }
  /* long rows: sampled thresholds, samples that collect too much (ties),
   * whole short rows, exact selections byte by byte, more kept than the
   * stack buffer holds */
  static const uint32_t longs[][2] = {{1024, 512},  {3001, 100}, {5000, 4500},
                                      {8192, 2048}, {700, 700},  {5000, 3000},
                                      {6000, 1000}, {9000, 4200}};
  for (size_t k = 0; k < sizeof longs / sizeof longs[0]; k++)
    for (int masked = 0; masked < 2; masked++)
      for (int spread = 0; spread < 2; spread++) {
        rng r = rng_seed(seed_of((int)k, masked, spread, 19));
        const uint32_t w = longs[k][0], kk = longs[k][1], rows = 2;
        pto_tile *v = tile_new(PTO_F32, rows, w + 7, rows, w, 0xff);
        topk_fill(&r, v, masked, spread);
        pto_targs a = {0};
        a.src[0] = v;
        a.dst[0] = dst_new(PTO_F32, rows, kk + 1, rows, kk);
        a.dst[1] = dst_new(PTO_I32, rows, kk + 1, rows, kk);
        a.imm[0] = 7;
        a.imm[1] = masked;
        snprintf(ctx, sizeof ctx, "TTOPK %ux%u k %u%s%s", rows, w, kk,
                 masked ? " masked" : "", spread ? " narrow" : "");
        stress_run(PTO_OP_TTOPK, &a, 0, ctx);
        free_all();
      }
  /* a row of one value with a few above it: a sampled threshold at that
   * value collects the whole row, more than the buffer, and the exact
   * selection takes over */
  for (int masked = 0; masked < 2; masked++) {
    rng r = rng_seed(seed_of(masked, 0, 3, 29));
    const uint32_t w = 6000, kk = 100;
    pto_tile *v = tile_new(PTO_F32, 1, w, 1, w, 0xff);
    for (uint32_t j = 0; j < w; j++)
      setf(v, 0, j, below(&r, 100) ? 1.0f : below(&r, 2) ? 2.0f : NAN);
    pto_targs a = {0};
    a.src[0] = v;
    a.dst[0] = dst_new(PTO_F32, 1, kk, 1, kk);
    a.dst[1] = dst_new(PTO_I32, 1, kk, 1, kk);
    a.imm[1] = masked;
    snprintf(ctx, sizeof ctx, "TTOPK 1x%u k %u, one value%s", w, kk,
             masked ? " masked" : "");
    stress_run(PTO_OP_TTOPK, &a, 0, ctx);
    free_all();
  }
}

/* ---- pto__tileop_check rejects bad operands ---------------------------------
 */

/* Expects check to return status with a message naming the instruction and
 * containing each of the (up to two) needles. */
static void expect_reject(int op, const pto_targs *a, int status,
                          const char *needle1, const char *needle2) {
  char msg[256];
  memset(msg, 'x', sizeof msg);
  int st = pto__tileop_check(op, a, msg, sizeof msg);
  cr_assert_eq(st, status, "%s: check returned %s, expected %s (%s)",
               pto__insn_name(op), pto_status_name(st), pto_status_name(status),
               st ? msg : "");
  cr_expect(memchr(msg, '\0', sizeof msg) != NULL, "message not terminated");
  cr_expect(strstr(msg, pto__insn_name(op)) != NULL,
            "message '%s' does not name %s", msg, pto__insn_name(op));
  if (needle1)
    cr_expect(strstr(msg, needle1) != NULL, "message '%s' lacks '%s'", msg,
              needle1);
  if (needle2)
    cr_expect(strstr(msg, needle2) != NULL, "message '%s' lacks '%s'", msg,
              needle2);
}

static void expect_accept(int op, const pto_targs *a) {
  char msg[256];
  int st = pto__tileop_check(op, a, msg, sizeof msg);
  cr_assert_eq(st, 0, "%s: check returned %s: %s", pto__insn_name(op),
               pto_status_name(st), msg);
}

static pto_targs binop_args(pto_tile *d, pto_tile *x, pto_tile *y) {
  pto_targs a = {0};
  a.dst[0] = d;
  a.src[0] = x;
  a.src[1] = y;
  return a;
}

Test(tileops, check_element_operands, .fini = free_all) {
  pto_tile *d = dst_new(PTO_F32, 16, 48, 16, 33);
  pto_tile *x = dst_new(PTO_F32, 16, 48, 16, 33);
  pto_tile *y = dst_new(PTO_F32, 16, 48, 16, 32);
  pto_targs a = binop_args(d, x, y);
  expect_reject(PTO_OP_TADD, &a, PTO_ESHAPE, "16x32", "16x33");
  y->valid_cols = 33;
  expect_accept(PTO_OP_TADD, &a);

  a.src[1] = NULL;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "src1", NULL);
  a.src[1] = y;
  a.dst[0] = NULL;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "dst", NULL);
  a.dst[0] = d;

  pto_tile *yi = dst_new(PTO_I32, 16, 48, 16, 33);
  a.src[1] = yi;
  expect_reject(PTO_OP_TADD, &a, PTO_EDTYPE, "i32", "f32");
  a.src[1] = y;

  pto_tile *di = dst_new(PTO_I32, 16, 48, 16, 33),
           *xi = dst_new(PTO_I32, 16, 48, 16, 33);
  pto_targs e = {0};
  e.dst[0] = di;
  e.src[0] = xi;
  expect_reject(PTO_OP_TEXP, &e, PTO_EDTYPE, "i32", NULL);
  expect_accept(PTO_OP_TNEG, &e);
  pto_tile *db = dst_new(PTO_BF16, 16, 48, 16, 33),
           *xb = dst_new(PTO_BF16, 16, 48, 16, 33);
  e.dst[0] = db;
  e.src[0] = xb;
  expect_reject(PTO_OP_TNEG, &e, PTO_EDTYPE, "bf16", NULL);
  e.src[0] = x;
  expect_accept(PTO_OP_TCVT, &e); /* any dtype pair */

  /* valid region: beyond the capacity, empty */
  x->valid_rows = 17;
  expect_reject(PTO_OP_TADD, &a, PTO_ESHAPE, "17x33", "16x48");
  x->valid_rows = 0;
  expect_reject(PTO_OP_TADD, &a, PTO_ESHAPE, "0x33", NULL);
  x->valid_rows = 16;

  /* geometry: alignment, stride */
  void *data = x->data;
  x->data = (unsigned char *)data + 4;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "aligned", NULL);
  x->data = NULL;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "src0", NULL);
  x->data = data;
  x->stride = 40;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "stride", NULL);
  x->stride = 56;
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "stride", NULL);
  x->stride = 48;
  x->dtype = PTO_DTYPE_COUNT;
  expect_reject(PTO_OP_TADD, &a, PTO_EDTYPE, "src0", NULL);
  x->dtype = PTO_F32;
  expect_accept(PTO_OP_TADD, &a);

  /* a message buffer that is too small, or none */
  char tiny[6];
  cr_expect_eq(
      pto__tileop_check(PTO_OP_TADD, &(pto_targs){0}, tiny, sizeof tiny),
      PTO_EINVAL);
  cr_expect_str_eq(tiny, "TADD:");
  cr_expect_eq(pto__tileop_check(PTO_OP_TADD, &(pto_targs){0}, NULL, 0),
               PTO_EINVAL);
}

Test(tileops, check_rejects_missing_operands) {
  pto_targs a = {0};
  for (int op = 0; op < PTO_OP_COUNT; op++)
    expect_reject(op, &a, PTO_EINVAL, "NULL", NULL);
  char msg[128];
  cr_expect_eq(pto__tileop_check(PTO_OP_TADD, NULL, msg, sizeof msg),
               PTO_EINVAL);
  cr_expect(strstr(msg, "TADD") != NULL);
  cr_expect_eq(pto__tileop_check(-1, &a, msg, sizeof msg), PTO_EINVAL);
  cr_expect(strstr(msg, "unknown instruction -1") != NULL, "%s", msg);
  cr_expect_eq(pto__tileop_check(PTO_OP_COUNT + 200, &a, msg, sizeof msg),
               PTO_EINVAL);
  cr_expect_eq(pto__tileop_run(-1, &a), PTO_EINVAL);
  cr_expect_eq(pto__tileop_run(PTO_OP_COUNT + 200, &a), PTO_EINVAL);
  cr_expect_eq(pto__tileop_run(PTO_OP_TADD, NULL), PTO_EINVAL);
}

Test(tileops, check_compare_select_axis, .fini = free_all) {
  pto_tile *x = dst_new(PTO_F32, 16, 48, 13, 37),
           *y = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_tile *m = dst_new(PTO_I32, 16, 48, 13, 37),
           *f = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_targs a = binop_args(m, x, y);
  a.imm[0] = PTO_CMP_GE;
  expect_accept(PTO_OP_TCMP, &a);
  a.imm[0] = PTO_CMP_MODE_COUNT;
  expect_reject(PTO_OP_TCMP, &a, PTO_EINVAL, "mode", NULL);
  a.imm[0] = -1;
  expect_reject(PTO_OP_TCMP, &a, PTO_EINVAL, "mode", NULL);
  a.imm[0] = 0;
  a.dst[0] = f;
  expect_reject(PTO_OP_TCMP, &a, PTO_EDTYPE, "dst", NULL);

  pto_targs s = {0};
  s.dst[0] = f;
  s.src[0] = m;
  s.src[1] = x;
  s.src[2] = y;
  expect_accept(PTO_OP_TSEL, &s);
  s.src[0] = x;
  expect_reject(PTO_OP_TSEL, &s, PTO_EDTYPE, "src0", NULL);

  /* reductions and broadcasts: vector shapes */
  pto_tile *rv = dst_new(PTO_F32, 16, 1, 13, 1),
           *cv = dst_new(PTO_F32, 1, 48, 1, 37);
  pto_targs r = {0};
  r.dst[0] = rv;
  r.src[0] = x;
  expect_accept(PTO_OP_TROWSUM, &r);
  expect_reject(PTO_OP_TCOLSUM, &r, PTO_ESHAPE, "13x1", "1x37");
  rv->valid_rows = 12;
  expect_reject(PTO_OP_TROWMAX, &r, PTO_ESHAPE, "12x1", "13x1");
  rv->valid_rows = 13;
  r.dst[0] = cv;
  expect_accept(PTO_OP_TCOLMAX, &r);
  pto_targs e = binop_args(f, x, rv);
  expect_accept(PTO_OP_TROWEXPANDADD, &e);
  expect_reject(PTO_OP_TCOLEXPANDADD, &e, PTO_ESHAPE, "src1", NULL);
  e.src[1] = cv;
  expect_accept(PTO_OP_TCOLEXPANDDIV, &e);
  e.src[0] = cv;
  e.src[1] = NULL;
  expect_accept(PTO_OP_TCOLEXPAND, &e);
  expect_reject(PTO_OP_TROWEXPAND, &e, PTO_ESHAPE, "src0", NULL);
  pto_tile *xi = dst_new(PTO_I32, 16, 48, 13, 37),
           *ri = dst_new(PTO_I32, 16, 1, 13, 1);
  pto_targs ex = binop_args(xi, xi, ri);
  expect_accept(PTO_OP_TROWEXPANDMAX, &ex);
  expect_reject(PTO_OP_TROWEXPANDEXPDIF, &ex, PTO_EDTYPE, "i32", NULL);

  /* exp-dif with row sums: dst1 a rowvec of f32, apart from dst0 and src0 */
  pto_tile *sums = dst_new(PTO_F32, 16, 1, 13, 1);
  pto_targs es = binop_args(f, x, rv);
  es.dst[1] = sums;
  expect_accept(PTO_OP_TROWEXPANDEXPDIFSUM, &es);
  es.dst[1] = rv; /* the row maxima's own buffer */
  expect_accept(PTO_OP_TROWEXPANDEXPDIFSUM, &es);
  es.dst[1] = cv;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_ESHAPE, "dst1", "1x37");
  es.dst[1] = ri;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_EDTYPE, "dst1", "i32");
  es.dst[1] = sums;
  es.src[1] = ri;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_EDTYPE, "src1", "i32");
  es.src[1] = rv;
  sums->valid_rows = 12;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_ESHAPE, "dst1", "12x1");
  sums->valid_rows = 13;
  pto_tile in_x = *sums; /* a rowvec inside src0's buffer */
  in_x.data = x->data;
  es.dst[1] = &in_x;
  expect_reject(PTO_OP_TROWEXPANDEXPDIFSUM, &es, PTO_EINVAL, "dst1 overlaps",
                "src0");
}

Test(tileops, check_matmul_operands, .fini = free_all) {
  pto_tile *A = dst_new(PTO_BF16, 16, 32, 16, 29),
           *B = dst_new(PTO_BF16, 32, 48, 29, 37);
  pto_tile *C = dst_new(PTO_F32, 16, 48, 16, 37);
  pto_targs a = binop_args(C, A, B);
  expect_accept(PTO_OP_TMATMUL, &a);
  B->valid_rows = 28;
  expect_reject(PTO_OP_TMATMUL, &a, PTO_ESHAPE, "28", "29");
  B->valid_rows = 29;
  C->valid_cols = 36;
  expect_reject(PTO_OP_TMATMUL_ACC, &a, PTO_ESHAPE, "16x36", "16x37");
  C->valid_cols = 37;
  a.flags = PTO_TF_TRANS_B;
  expect_reject(PTO_OP_TMATMUL, &a, PTO_ESHAPE, "transposed", NULL);
  pto_tile *Bt = dst_new(PTO_F16, 48, 32, 37, 29);
  a.src[1] = Bt;
  expect_accept(PTO_OP_TMATMUL, &a);
  pto_tile *At = dst_new(PTO_F32, 32, 16, 29, 16);
  a.src[0] = At;
  a.flags = PTO_TF_TRANS_A | PTO_TF_TRANS_B;
  expect_accept(PTO_OP_TMATMUL, &a);
  pto_tile *Ai = dst_new(PTO_I32, 32, 16, 29, 16);
  a.src[0] = Ai;
  expect_reject(PTO_OP_TMATMUL, &a, PTO_EDTYPE, "src0", "i32");
  a.src[0] = At;
  pto_tile *Cb = dst_new(PTO_BF16, 16, 48, 16, 37);
  a.dst[0] = Cb;
  expect_reject(PTO_OP_TMATMUL, &a, PTO_EDTYPE, "dst", "bf16");
}

/* ---- packed matmul operands (PTO_TF_PACK_A / PTO_TF_PACK_B) -----------------
 * On every table this CPU runs: TLOAD packs a global window (row-major or a
 * transposed view) and its layout is checked element by element against
 * core/isa.def's formula written out here (padding zero, the rest of the
 * buffer untouched); then TMATMUL / TMATMUL_ACC on every combination of
 * packed and unpacked (plain or TRANS_*) operands is checked against the
 * double-precision product with the matmul tolerance. Panel widths: the
 * table's own (its micro-kernel) and odd ones (5 x 7) that it must also
 * run. */

static uint32_t round_up(uint32_t v, uint32_t w) {
  return (v + w - 1) / w * w;
}

static void run_on(const pto_isa_table *T, int op, const pto_targs *a,
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
static pto_tile *operand_tile(const pto_isa_table *T, rng *r, pto_dtype gdt,
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
  uint32_t pr = pack == 'A' ? round_up(rows, w) : rows;
  uint32_t pc = pack == 'A' ? cols : round_up(cols, w);
  for (uint32_t i = 0; i < pr; i++)
    for (uint32_t j = 0; j < pc; j++) {
      size_t ix = pack == 'A' ? (size_t)(i / w) * w * t->stride +
                                    (size_t)j * w + i % w
                              : (size_t)(j / w) * w * t->rows +
                                    (size_t)i * w + j % w;
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
  static const uint32_t dims[][3] = {
      {13, 37, 29}, {1, 1, 1}, {24, 64, 1}, {25, 70, 130}, {12, 32, 300}};
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
      for (int di = 0; di < 5; di++)
        for (int ty = 0; ty < 4; ty++)
          for (int fl = 0; fl < 16; fl++) {
            /* pack A, pack B, A transposed, B transposed: a packed operand
             * comes from a transposed view, an unpacked one is stored
             * transposed (TRANS_*) */
            int pa = fl & 1, pb = (fl >> 1) & 1, ta = (fl >> 2) & 1,
                tb = (fl >> 3) & 1;
            if (ty > 0 && di != 0)
              continue; /* every dtype on one shape */
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
          for (int tr = 0; tr < 2; tr++) { /* B from k^T, as the indexer */
            uint32_t R = dims[di][0], N = dims[di][1], K = dims[di][2],
                     G = dims[di][3], M = R * G;
            uint32_t mr = widths[wi][0], nr = widths[wi][1];
            double diag = diags[ci];
            int causal = !isnan(diag);
            char ctx[200];
            snprintf(ctx, sizeof ctx,
                     "%s on %s: R=%u G=%u N=%u K=%u panels %ux%u diag %g%s",
                     pto__insn_name(op), T->name, R, G, N, K, mr, nr, diag,
                     tr ? ", B from a transposed view" : "");
            rng r = rng_seed(seed_of(op, ti * 10 + wi, di * 4 + ci, tr));
            pto_gview ga, gb;
            pto_tile *A = operand_tile(T, &r, PTO_F32, PTO_F32, M, K, 0, 'A',
                                       0, mr, &ga, ctx);
            pto_tile *B = operand_tile(T, &r, PTO_F32, PTO_F32, K, N, tr, 'B',
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

Test(tileops, check_attention_operands, .fini = free_all) {
  /* TMATMUL_ACC's row scale */
  pto_tile *A = dst_new(PTO_F32, 16, 32, 16, 29),
           *B = dst_new(PTO_F32, 32, 48, 29, 37),
           *C = dst_new(PTO_F32, 16, 48, 16, 37),
           *f = dst_new(PTO_F32, 16, 4, 15, 3);
  pto_targs a = binop_args(C, A, B);
  a.src[2] = f;
  a.flags = PTO_TF_ROWSCALE;
  expect_reject(PTO_OP_TMATMUL_ACC, &a, PTO_ESHAPE, "src2", "15x3");
  f->valid_rows = 16;
  expect_accept(PTO_OP_TMATMUL_ACC, &a);
  expect_reject(PTO_OP_TMATMUL, &a, PTO_EINVAL, "TMATMUL_ACC only", NULL);
  a.src[2] = NULL;
  expect_reject(PTO_OP_TMATMUL_ACC, &a, PTO_EINVAL, "src2", NULL);
  /* TGATHERPACK */
  pto_tile *ix = dst_new(PTO_I32, 1, 32, 1, 20),
           *gt = dst_new(PTO_F32, 24, 30, 24, 20),
           *v = dst_new(PTO_F32, 32, 25, 20, 16);
  float table[10 * 24];
  pto_targs g = {0};
  g.src[0] = ix;
  g.dst[0] = gt;
  g.dst[1] = v;
  g.g = (pto_gview){table, PTO_F32, 10, 24, 24, 1};
  g.imm[0] = 16;
  expect_accept(PTO_OP_TGATHERPACK, &g);
  g.imm[0] = 0;
  expect_reject(PTO_OP_TGATHERPACK, &g, PTO_EINVAL, "imm[0]", NULL);
  g.imm[0] = 16;
  ix->valid_cols = 19;
  expect_reject(PTO_OP_TGATHERPACK, &g, PTO_ESHAPE, "19 indices", "20");
  ix->valid_cols = 20;
  g.g.cols = 23;
  expect_reject(PTO_OP_TGATHERPACK, &g, PTO_ESHAPE, "10x23", "24");
  g.g.cols = 24;
  g.g.dtype = PTO_I32;
  expect_reject(PTO_OP_TGATHERPACK, &g, PTO_EDTYPE, "i32", NULL);
  g.g.dtype = PTO_F32;
  g.imm[0] = 25; /* 20 slots in panels of 25 need 25 cols: dst0 has 32 */
  expect_accept(PTO_OP_TGATHERPACK, &g);
  gt->valid_cols = ix->valid_cols = v->valid_rows = 30; /* 50 > 32 */
  expect_reject(PTO_OP_TGATHERPACK, &g, PTO_ESHAPE, "panels of 25", "50");
  /* TSOFTMAXONLINE */
  pto_tile *S = dst_new(PTO_F32, 12, 32, 12, 20),
           *P = dst_new(PTO_F32, 12, 32, 12, 20),
           *st = dst_new(PTO_F32, 12, 4, 12, 3);
  ix->valid_cols = 20;
  pto_targs o = {0};
  o.src[0] = S;
  o.src[1] = ix;
  o.dst[0] = P;
  o.dst[1] = st;
  o.imm[0] = 6;
  o.imm[1] = 100;
  expect_accept(PTO_OP_TSOFTMAXONLINE, &o);
  o.flags = PTO_TF_ACC;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_EINVAL, "src2", NULL);
  o.src[2] = st;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_EINVAL, "overlaps", NULL);
  pto_tile *st0 = dst_new(PTO_F32, 12, 4, 11, 3);
  o.src[2] = st0;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "src2", "11x3");
  o.flags = 0;
  o.imm[0] = 7; /* 12 rows in panels of 7 need 14 */
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "14", NULL);
  o.imm[0] = 6;
  ix->valid_cols = 21;
  expect_reject(PTO_OP_TSOFTMAXONLINE, &o, PTO_ESHAPE, "21 indices", NULL);
  /* TSOFTMAXFINAL */
  pto_tile *Y = dst_new(PTO_F32, 12, 32, 12, 20),
           *L = dst_new(PTO_F32, 12, 1, 12, 1);
  pto_targs fn = {0};
  fn.src[0] = S;
  fn.src[1] = st;
  fn.dst[0] = Y;
  fn.dst[1] = L;
  expect_accept(PTO_OP_TSOFTMAXFINAL, &fn);
  L->valid_rows = 11;
  expect_reject(PTO_OP_TSOFTMAXFINAL, &fn, PTO_ESHAPE, "dst1", "11x1");
}

Test(tileops, check_matmul_relu_wsum_operands, .fini = free_all) {
  const int op = PTO_OP_TMATMUL_RELU_WSUM;
  pto_tile *A = dst_new(PTO_F32, 12, 32, 12, 29),
           *B = dst_new(PTO_BF16, 32, 48, 29, 37),
           *W = dst_new(PTO_F32, 12, 1, 12, 1),
           *C = dst_new(PTO_F32, 8, 48, 3, 37);
  pto_targs a = binop_args(C, A, B);
  a.src[2] = W;
  expect_accept(op, &a); /* 3 groups of 4 rows */
  C->valid_rows = 5;
  expect_reject(op, &a, PTO_ESHAPE, "5x37", "M = 12");
  C->valid_rows = 3;
  C->valid_cols = 36;
  expect_reject(op, &a, PTO_ESHAPE, "3x36", NULL);
  C->valid_cols = 37;
  W->valid_rows = 11;
  expect_reject(op, &a, PTO_ESHAPE, "src2", "11x1");
  W->valid_rows = 12;
  pto_tile *Wi = dst_new(PTO_I32, 12, 1, 12, 1);
  a.src[2] = Wi;
  expect_reject(op, &a, PTO_EDTYPE, "src2", "i32");
  a.src[2] = W;
  B->valid_rows = 28;
  expect_reject(op, &a, PTO_ESHAPE, "28", "29");
  B->valid_rows = 29;
  a.flags = PTO_TF_CAUSAL;
  a.s = 2.5;
  expect_reject(op, &a, PTO_EINVAL, "PTO_TF_CAUSAL", "2.5");
  a.s = -7;
  expect_accept(op, &a);
  pto_tile in_a = *C; /* dst inside A's buffer */
  in_a.data = A->data;
  a.dst[0] = &in_a;
  expect_reject(op, &a, PTO_EINVAL, "overlaps", NULL);
}

Test(tileops, check_packed_operands, .fini = free_all) {
  float g[64 * 64] = {0};
  pto_targs a = {0};
  a.g = (pto_gview){g, PTO_F32, 64, 64, 64, 1};
  a.dst[0] = dst_new(PTO_F32, 24, 32, 13, 29);
  a.flags = PTO_TF_PACK_A;
  a.imm[0] = 12;
  expect_accept(PTO_OP_TLOAD, &a);
  a.imm[0] = 0;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EINVAL, "PTO_TF_PACK_A", "imm[0] = 0");
  a.imm[0] = PTO_MM_PANEL_MAX + 1;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EINVAL, "PTO_TF_PACK_A", "65");
  a.imm[0] = 25; /* 13 rows pad to 25 > 24 */
  expect_reject(PTO_OP_TLOAD, &a, PTO_ESHAPE, "25 rows", "24");
  a.flags = PTO_TF_PACK_A | PTO_TF_PACK_B;
  a.imm[0] = 4;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EINVAL, "together", NULL);
  a.flags = PTO_TF_PACK_B;
  a.imm[0] = 32; /* 29 cols pad to 32 = stride */
  expect_accept(PTO_OP_TLOAD, &a);
  a.imm[0] = 48;
  expect_reject(PTO_OP_TLOAD, &a, PTO_ESHAPE, "48 cols", "32");

  pto_tile *A = dst_new(PTO_F32, 24, 32, 13, 29),
           *B = dst_new(PTO_F32, 32, 32, 29, 30),
           *C = dst_new(PTO_F32, 16, 32, 13, 30);
  pto_targs m = binop_args(C, A, B);
  m.flags = PTO_TF_PACK_A | PTO_TF_PACK_B;
  m.imm[0] = 12;
  m.imm[1] = 16;
  expect_accept(PTO_OP_TMATMUL, &m);
  m.imm[1] = 0;
  expect_reject(PTO_OP_TMATMUL_ACC, &m, PTO_EINVAL, "PTO_TF_PACK_B", "imm[1]");
  m.imm[1] = 16;
  m.imm[0] = 25;
  expect_reject(PTO_OP_TMATMUL, &m, PTO_ESHAPE, "src0", "25 rows");
  m.imm[0] = 12;
  m.flags |= PTO_TF_TRANS_A;
  expect_reject(PTO_OP_TMATMUL, &m, PTO_EINVAL, "never transposed", NULL);
  m.flags = PTO_TF_PACK_B | PTO_TF_TRANS_B;
  expect_reject(PTO_OP_TMATMUL, &m, PTO_EINVAL, "PTO_TF_TRANS_B", NULL);
  m.flags = PTO_TF_PACK_B | PTO_TF_TRANS_A; /* A unpacked, transposed */
  m.src[0] = dst_new(PTO_F32, 32, 16, 29, 13);
  expect_accept(PTO_OP_TMATMUL, &m);
}

Test(tileops, check_move_and_sort_immediates, .fini = free_all) {
  pto_tile *x = dst_new(PTO_F32, 16, 48, 13, 37),
           *d = dst_new(PTO_F32, 8, 16, 5, 7);
  pto_targs a = {0};
  a.dst[0] = d;
  a.src[0] = x;
  a.imm[0] = 8;
  a.imm[1] = 30;
  expect_accept(PTO_OP_TEXTRACT, &a);
  a.imm[0] = 9;
  expect_reject(PTO_OP_TEXTRACT, &a, PTO_ESHAPE, "5x7", "13x37");
  a.imm[0] = -1;
  expect_reject(PTO_OP_TEXTRACT, &a, PTO_ESHAPE, "(-1, 30)", NULL);
  pto_tile *xb = dst_new(PTO_BF16, 16, 48, 13, 37);
  a.src[0] = xb;
  a.imm[0] = 0;
  expect_reject(PTO_OP_TEXTRACT, &a, PTO_EDTYPE, "bf16", NULL);

  /* TINSERT: src d (5x7) into x (13x37) */
  pto_targs n = {0};
  n.dst[0] = x;
  n.src[0] = d;
  n.imm[0] = 8;
  n.imm[1] = 30;
  expect_accept(PTO_OP_TINSERT, &n);
  n.imm[1] = 31;
  expect_reject(PTO_OP_TINSERT, &n, PTO_ESHAPE, "5x7", "13x37");

  /* TTRANS and TFILLPAD shapes */
  pto_tile *t = dst_new(PTO_F32, 48, 16, 37, 13);
  pto_targs tr = {0};
  tr.dst[0] = t;
  tr.src[0] = x;
  expect_accept(PTO_OP_TTRANS, &tr);
  t->valid_rows = 13;
  expect_reject(PTO_OP_TTRANS, &tr, PTO_ESHAPE, "13x13", "37x13");
  pto_targs fp = {0};
  fp.dst[0] = d;
  fp.src[0] = x;
  d->valid_rows = 0; /* TFILLPAD ignores dst's valid region */
  expect_reject(PTO_OP_TFILLPAD, &fp, PTO_ESHAPE, "13x37", "8x16");
  fp.dst[0] = x;
  fp.src[0] = d;
  d->valid_rows = 5;
  x->valid_rows = 0;
  expect_accept(PTO_OP_TFILLPAD, &fp);
  x->valid_rows = 13;

  /* sorts */
  pto_tile *v = dst_new(PTO_F32, 4, 64, 3, 50),
           *ix = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_tile *dv = dst_new(PTO_F32, 4, 64, 3, 50),
           *di = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_targs s = {0};
  s.dst[0] = dv;
  s.dst[1] = di;
  s.src[0] = v;
  s.src[1] = ix;
  s.imm[0] = 4;
  s.imm[1] = 2;
  expect_accept(PTO_OP_TMRGSORT, &s);
  expect_accept(PTO_OP_TSORT32, &s);
  s.imm[1] = 1;
  expect_reject(PTO_OP_TMRGSORT, &s, PTO_EINVAL, "imm[1] = 1", NULL);
  s.imm[1] = 5;
  expect_reject(PTO_OP_TMRGSORT, &s, PTO_EINVAL, "imm[1] = 5", NULL);
  s.imm[1] = 4;
  s.imm[0] = 0;
  expect_reject(PTO_OP_TMRGSORT, &s, PTO_EINVAL, "imm[0] = 0", NULL);
  s.imm[0] = 32;
  expect_accept(PTO_OP_TMRGSORT, &s);
  s.src[1] = v;
  expect_reject(PTO_OP_TSORT32, &s, PTO_EDTYPE, "src1", NULL);
  s.src[1] = ix;
  di->valid_cols = 49;
  expect_reject(PTO_OP_TSORT32, &s, PTO_ESHAPE, "3x49", "3x50");
}

Test(tileops, check_topk_operands, .fini = free_all) {
  pto_tile *v = dst_new(PTO_F32, 4, 64, 3, 50),
           *ix = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_tile *dv = dst_new(PTO_F32, 4, 64, 3, 20),
           *di = dst_new(PTO_I32, 4, 64, 3, 20);
  pto_targs s = {0};
  s.dst[0] = dv;
  s.dst[1] = di;
  s.src[0] = v;
  s.src[1] = ix;
  s.imm[0] = 13;
  expect_accept(PTO_OP_TTOPK, &s);
  expect_accept(PTO_OP_TMRGTOPK, &s);
  s.imm[1] = 2;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EINVAL, "mode imm[1] = 2", NULL);
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "mode imm[1] = 2", NULL);
  s.imm[1] = 0;
  /* more than 4 runs; a run length below 1 */
  s.imm[0] = 12;
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "50", "runs of 12");
  s.imm[0] = 0;
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "imm[0] = 0", NULL);
  s.imm[0] = 13;
  s.s = 2.5; /* the index offset per run: an integer >= 0 */
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "s = 2.5", NULL);
  s.s = -1;
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EINVAL, "s = -1", NULL);
  s.s = 50;
  expect_accept(PTO_OP_TMRGTOPK, &s);
  s.s = 0;
  /* indices past INT32_MAX */
  s.imm[0] = INT32_MAX - 49;
  expect_accept(PTO_OP_TTOPK, &s);
  s.imm[0] = INT32_MAX - 48;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EINVAL, "overflows i32", NULL);
  s.imm[0] = 13;
  /* keeping more than the entries pads: the masked mode only */
  dv->valid_cols = di->valid_cols = 60;
  expect_reject(PTO_OP_TTOPK, &s, PTO_ESHAPE, "3x60", "mode 1");
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_ESHAPE, "3x60", "3x50");
  s.imm[1] = 1;
  expect_accept(PTO_OP_TTOPK, &s);
  expect_accept(PTO_OP_TMRGTOPK, &s);
  /* dtypes and shapes */
  di->valid_cols = 59;
  expect_reject(PTO_OP_TTOPK, &s, PTO_ESHAPE, "dst1 valid 3x59", NULL);
  di->valid_cols = 60;
  dv->valid_rows = di->valid_rows = 2;
  expect_reject(PTO_OP_TTOPK, &s, PTO_ESHAPE, "2x60", "3 rows");
  dv->valid_rows = di->valid_rows = 3;
  s.src[0] = ix;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EDTYPE, "src0 dtype i32", NULL);
  s.src[0] = v;
  s.src[1] = v;
  expect_reject(PTO_OP_TMRGTOPK, &s, PTO_EDTYPE, "src1 dtype f32", NULL);
  s.src[1] = ix;
  s.dst[1] = dv;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EDTYPE, "dst1 dtype f32", NULL);
  /* dst and src never share a buffer */
  s.dst[1] = di;
  s.dst[0] = v;
  v->valid_cols = 60;
  expect_reject(PTO_OP_TTOPK, &s, PTO_EINVAL, "overlaps", NULL);
}

Test(tileops, check_memory_operands, .fini = free_all) {
  float buf[64 * 64];
  pto_tile *d = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_targs a = {0};
  a.dst[0] = d;
  a.g.base = buf;
  a.g.dtype = PTO_F32;
  a.g.rows = 13;
  a.g.cols = 37;
  a.g.row_stride = 64;
  a.g.col_stride = 1;
  expect_accept(PTO_OP_TLOAD, &a);
  a.g.cols = 36;
  expect_reject(PTO_OP_TLOAD, &a, PTO_ESHAPE, "13x36", "13x37");
  a.g.cols = 37;
  a.g.base = NULL;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EINVAL, "base", NULL);
  a.g.base = buf;
  a.g.dtype = PTO_DTYPE_COUNT;
  expect_reject(PTO_OP_TLOAD, &a, PTO_EDTYPE, "global", NULL);
  a.g.dtype = PTO_BF16;
  expect_accept(PTO_OP_TLOAD, &a);

  pto_targs s = {0};
  s.src[0] = d;
  s.g = a.g;
  expect_accept(PTO_OP_TSTORE, &s);
  s.g.rows = 12;
  expect_reject(PTO_OP_TSTORE, &s, PTO_ESHAPE, "12x37", "13x37");

  /* TROWEXPANDMULSTORE: f32 tiles, a rowvec of src0's rows, an f32 view */
  pto_tile *mx = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_tile *mv = dst_new(PTO_F32, 16, 1, 13, 1);
  float mbuf[16 * 48];
  pto_targs ms = {0};
  ms.src[0] = mx;
  ms.src[1] = mv;
  ms.g = (pto_gview){.base = mbuf, .dtype = PTO_F32, .rows = 13, .cols = 37,
                     .row_stride = 48, .col_stride = 1};
  expect_accept(PTO_OP_TROWEXPANDMULSTORE, &ms);
  ms.g.rows = 12;
  expect_reject(PTO_OP_TROWEXPANDMULSTORE, &ms, PTO_ESHAPE, "12x37", "13x37");
  ms.g.rows = 13;
  ms.g.dtype = PTO_BF16;
  expect_reject(PTO_OP_TROWEXPANDMULSTORE, &ms, PTO_EDTYPE, "global", "bf16");
  ms.g.dtype = PTO_F32;
  ms.src[1] = dst_new(PTO_F32, 16, 1, 12, 1);
  expect_reject(PTO_OP_TROWEXPANDMULSTORE, &ms, PTO_ESHAPE, "src1", "12x1");
  ms.src[1] = mv;
  ms.src[0] = dst_new(PTO_I32, 16, 48, 13, 37);
  expect_reject(PTO_OP_TROWEXPANDMULSTORE, &ms, PTO_EDTYPE, "src0", "i32");

  /* TLOADROWMAX, TLOADEXPDIFSUM and TLOADSOFTMAXSTORE: f32 tiles, dst1 a
   * rowvec of dst0's rows (maxima, or sums), an f32 view (and for
   * TLOADSOFTMAXSTORE an f32 second view, clear of the first) */
  float ybuf[16 * 48];
  pto_gview y = ms.g;
  y.base = ybuf;
  static const int loads_rows[] = {PTO_OP_TLOADROWMAX, PTO_OP_TLOADEXPDIFSUM,
                                   PTO_OP_TLOADSOFTMAXSTORE};
  for (int i = 0; i < 3; i++) {
    const int op = loads_rows[i];
    pto_targs lm = {0};
    lm.dst[0] = mx;
    lm.dst[1] = mv;
    lm.g = ms.g;
    lm.g2 = y;
    expect_accept(op, &lm);
    lm.g.cols = 36;
    expect_reject(op, &lm, PTO_ESHAPE, "13x36", "13x37");
    lm.g.cols = 37;
    lm.g.dtype = PTO_I32;
    expect_reject(op, &lm, PTO_EDTYPE, "global", "i32");
    lm.g.dtype = PTO_F32;
    lm.dst[1] = dst_new(PTO_F32, 16, 1, 12, 1);
    expect_reject(op, &lm, PTO_ESHAPE, "dst1", "12x1");
    lm.dst[1] = dst_new(PTO_I32, 16, 1, 13, 1);
    expect_reject(op, &lm, PTO_EDTYPE, "dst1", "i32");
    pto_tile inside = *mv; /* dst1 written over dst0's rows */
    inside.data = mx->data;
    lm.dst[1] = &inside;
    expect_reject(op, &lm, PTO_EINVAL, "overlaps", NULL);
  }
  pto_targs sm = {0}; /* the second view's own rules */
  sm.dst[0] = mx;
  sm.dst[1] = mv;
  sm.g = ms.g;
  sm.g2 = y;
  sm.g2.rows = 12;
  expect_reject(PTO_OP_TLOADSOFTMAXSTORE, &sm, PTO_ESHAPE, "second global view",
                "12x37");
  sm.g2.rows = 13;
  sm.g2.dtype = PTO_BF16;
  expect_reject(PTO_OP_TLOADSOFTMAXSTORE, &sm, PTO_EDTYPE, "second global view",
                "bf16");
  sm.g2.dtype = PTO_F32;
  sm.g2.base = NULL;
  expect_reject(PTO_OP_TLOADSOFTMAXSTORE, &sm, PTO_EINVAL, "second global view",
                "no base");
  sm.g2.base = (float *)ms.g.base + 40; /* one row and a bit into g */
  expect_reject(PTO_OP_TLOADSOFTMAXSTORE, &sm, PTO_EINVAL, "overlaps", "13x37");

  pto_tile *ix = dst_new(PTO_I32, 1, 16, 1, 13);
  pto_targs g = {0};
  g.dst[0] = d;
  g.src[0] = ix;
  g.g = a.g;
  g.g.rows = 5; /* any table height */
  expect_accept(PTO_OP_TGATHER, &g);
  ix->valid_cols = 12;
  expect_reject(PTO_OP_TGATHER, &g, PTO_ESHAPE, "1x12", "13");
  ix->valid_cols = 13;
  g.g.cols = 30;
  expect_reject(PTO_OP_TGATHER, &g, PTO_ESHAPE, "5x30", "37");
  g.g.cols = 37;
  pto_tile *fx = dst_new(PTO_F32, 1, 16, 1, 13);
  g.src[0] = fx;
  expect_reject(PTO_OP_TGATHER, &g, PTO_EDTYPE, "src0", NULL);
}

Test(tileops, check_aliasing, .fini = free_all) {
  pto_tile *x = dst_new(PTO_F32, 16, 48, 13, 37),
           *y = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_targs a = binop_args(x, x, y); /* in place: allowed */
  expect_accept(PTO_OP_TADD, &a);
  a = binop_args(y, x, y);
  expect_accept(PTO_OP_TMUL, &a);

  /* a shifted view of the same buffer overlaps without being the same */
  pto_tile shifted = *x;
  shifted.data = (unsigned char *)x->data + 64 * 3;
  a = binop_args(&shifted, x, y);
  expect_reject(PTO_OP_TADD, &a, PTO_EINVAL, "overlaps", "src0");

  pto_tile *sq = dst_new(PTO_F32, 16, 16, 16, 16);
  pto_targs t = {0};
  t.dst[0] = sq;
  t.src[0] = sq;
  expect_reject(PTO_OP_TTRANS, &t, PTO_EINVAL, "overlaps", NULL);

  /* a conversion in place must keep the element size */
  pto_tile half = *x;
  half.dtype = PTO_BF16;
  half.stride = 64 * 3;
  t.dst[0] = &half;
  t.src[0] = x;
  expect_reject(PTO_OP_TCVT, &t, PTO_EINVAL, "overlaps", NULL);
  pto_tile asint = *x;
  asint.dtype = PTO_I32;
  t.dst[0] = &asint;
  expect_accept(PTO_OP_TCVT, &t);

  pto_tile *v = dst_new(PTO_F32, 4, 64, 3, 50),
           *ix = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_tile *dv = dst_new(PTO_F32, 4, 64, 3, 50),
           *di = dst_new(PTO_I32, 4, 64, 3, 50);
  pto_targs s = {0};
  s.dst[0] = v;
  s.dst[1] = ix;
  s.src[0] = v;
  s.src[1] = ix;
  s.imm[0] = 8;
  s.imm[1] = 2;
  expect_accept(PTO_OP_TSORT32, &s);
  expect_reject(PTO_OP_TMRGSORT, &s, PTO_EINVAL, "overlaps", NULL);
  s.dst[0] = dv;
  s.dst[1] = dv;
  pto_tile dvi = *dv;
  dvi.dtype = PTO_I32;
  s.dst[1] = &dvi;
  s.src[0] = v;
  s.src[1] = ix;
  expect_reject(PTO_OP_TSORT32, &s, PTO_EINVAL, "dst0 overlaps dst1", NULL);
  s.dst[1] = di;
  expect_accept(PTO_OP_TMRGSORT, &s);

  pto_tile *A = dst_new(PTO_F32, 16, 16, 16, 16);
  pto_targs m = binop_args(A, A, A);
  expect_reject(PTO_OP_TMATMUL, &m, PTO_EINVAL, "overlaps", NULL);
}

/* ---- custom instructions
 * ------------------------------------------------------ */

/* dst = k * src0 (+ src1), k = *user. */
static int custom_axpy(pto_tile *dst, const pto_tile *const *src, int n_src,
                       void *user) {
  float k = *(const float *)user;
  for (uint32_t r = 0; r < dst->valid_rows; r++)
    for (uint32_t c = 0; c < dst->valid_cols; c++)
      setf(dst, r, c,
           k * getf(src[0], r, c) + (n_src > 1 ? getf(src[1], r, c) : 0));
  return 0;
}

static int custom_fails(pto_tile *dst, const pto_tile *const *src, int n_src,
                        void *user) {
  (void)dst, (void)src, (void)n_src, (void)user;
  return PTO_ERANGE;
}

Test(tileops, custom_instruction_runs_through_dispatch, .fini = free_all) {
  static float k = 3.0f;
  pto_custom_op_desc desc = {
      "tileops_test.axpy", PTO_CORE_VECTOR, 2, PTO_F32, 0, custom_axpy, &k};
  int id = -1;
  cr_assert_eq(pto_custom_op_register(&desc, &id), PTO_OK);
  cr_assert_geq(id, PTO_OP_COUNT);
  cr_expect_eq(pto_custom_op_find("tileops_test.axpy"), id);

  rng r = rng_seed(42);
  pto_tile *x = src_new(&r, PTO_F32, 16, 48, 13, 37, G_SUM);
  pto_tile *y = src_new(&r, PTO_F32, 16, 48, 13, 37, G_SUM);
  pto_tile *d = dst_new(PTO_F32, 16, 48, 13, 37);
  pto_tile *want = tile_clone(d);
  for (uint32_t i = 0; i < 13; i++)
    for (uint32_t j = 0; j < 37; j++)
      setf(want, i, j, 3.0f * getf(x, i, j) + getf(y, i, j));
  pto_targs a = binop_args(d, x, y);
  run_ok(id, &a, "custom axpy");
  expect_tile("custom axpy", d, want, NULL, NULL);

  /* its operand rules: the registered out dtype, sources of dst's shape */
  pto_tile *di = dst_new(PTO_I32, 16, 48, 13, 37);
  a.dst[0] = di;
  expect_reject(id, &a, PTO_EDTYPE, "i32", NULL);
  a.dst[0] = d;
  y->valid_cols = 36;
  expect_reject(id, &a, PTO_ESHAPE, "13x36", "13x37");
  a.src[1] = NULL;
  expect_reject(id, &a, PTO_EINVAL, "src1", NULL);

  /* its status comes back from run */
  pto_custom_op_desc bad = {"tileops_test.fails", PTO_CORE_CUBE, 1, PTO_F32, 0,
                            custom_fails,         NULL};
  int id2 = -1;
  cr_assert_eq(pto_custom_op_register(&bad, &id2), PTO_OK);
  cr_expect_neq(id2, id);
  cr_expect_eq(pto__tileop_run(id2, &a), PTO_ERANGE);
}

Test(tileops, custom_instruction_registration_errors) {
  pto_custom_op_desc desc = {
      "tileops_test.dup", PTO_CORE_VECTOR, 1, PTO_F32, 0, custom_axpy, NULL};
  int id = -1, id2 = -1;
  pto_custom_op_desc d = desc;
  d.fn = NULL;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "NULL fn");
  d = desc;
  d.n_src = 0;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "n_src 0");
  d.n_src = 5;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "n_src 5");
  d = desc;
  d.name = NULL;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "NULL name");
  d = desc;
  d.core = PTO_CORE_MEMORY;
  cr_expect_eq(pto_custom_op_register(&d, &id), PTO_EINVAL, "memory core");
  cr_expect_eq(id, -1, "a failed registration wrote an id");
  cr_expect_eq(pto_custom_op_find("tileops_test.dup"), -1);
  cr_assert_eq(pto_custom_op_register(&desc, &id), PTO_OK);
  cr_expect_eq(pto_custom_op_register(&desc, &id2), PTO_EINVAL,
               "duplicate name");
  cr_expect_eq(id2, -1);
  cr_expect_eq(pto_custom_op_find("tileops_test.dup"), id);
  cr_expect_str_eq(pto__insn_name(id), "tileops_test.dup");
}

/* ---- instruction tables
 * ---------------------------------------------------------- */

Test(tileops, isa_default_is_one_of_the_tables) {
  const pto_isa_table *t = pto__isa_active();
  cr_assert_not_null(t);
  cr_expect(!strcmp(t->name, "scalar") || !strcmp(t->name, "avx2") ||
                !strcmp(t->name, "avx512"),
            "table %s", t->name);
  cr_expect_eq(t, pto__isa_active(), "chosen once");
}

Test(tileops, isa_env_forces_scalar) {
  setenv("PTO_ISA", "scalar", 1);
  cr_expect_eq(pto__isa_active(), &pto__isa_scalar);
  cr_expect_str_eq(pto_isa_name(), "scalar");
  cr_expect_eq(pto__isa_check(NULL, 0), PTO_OK);
}

/* ctest runs this suite once per ISA this CPU runs, with PTO_ISA set
 * (tests/CMakeLists.txt): the forced table must be the one in use. */
Test(tileops, isa_env_is_honoured) {
  const char *want = getenv("PTO_ISA");
  const char *best = pto_isa_supported("avx512") ? "avx512"
                     : pto_isa_supported("avx2") ? "avx2"
                                                 : "scalar";
  cr_assert_not_null(pto_isa_name(), "PTO_ISA=%s", want ? want : "");
  cr_expect_str_eq(pto_isa_name(), want && want[0] ? want : best);
  cr_expect_str_eq(pto__isa_active()->name, pto_isa_name());
  int overridden = 0;
  for (int op = 0; op < PTO_OP_COUNT; op++)
    overridden += pto__isa_active()->fn[op] != pto__isa_scalar.fn[op];
  if (strcmp(pto_isa_name(), "scalar"))
    cr_expect_geq(overridden, 40, "%s overrides only %d instructions",
                  pto_isa_name(), overridden);
  else
    cr_expect_eq(overridden, 0);
  cr_expect(pto_isa_supported("scalar"));
  cr_expect(!pto_isa_supported("avx9000"));
  cr_expect(!pto_isa_supported(NULL));
}

/* An unknown PTO_ISA is refused where instructions get resolved, with a
 * message naming the variable, the value and what this machine runs. */
Test(tileops, isa_env_unknown_fails_clearly) {
  setenv("PTO_ISA", "avx9000", 1);
  char msg[256];
  cr_assert_eq(pto__isa_check(msg, sizeof msg), PTO_EISA);
  cr_expect(strstr(msg, "PTO_ISA=avx9000") != NULL, "%s", msg);
  cr_expect(strstr(msg, "unknown") != NULL, "%s", msg);
  cr_expect(strstr(msg, "scalar") != NULL, "%s", msg);
  cr_expect_null(pto_isa_name());
  cr_assert_not_null(pto__isa_active(), "internal users still get a table");

  pto_program *p = pto_program_new("isa");
  int64_t dims[2] = {4, 8};
  pto_tensor *x = pto_input(p, "x", PTO_F32, 2, dims);
  pto_output(p, pto_exp(p, x), "y");
  pto_executable *e = (pto_executable *)p; /* must be reset */
  cr_expect_eq(pto_compile(p, NULL, &e), PTO_EISA);
  cr_expect_null(e);
  cr_expect(strstr(pto_program_error(p), "PTO_ISA=avx9000") != NULL, "%s",
            pto_program_error(p));
  pto_program_free(p);

  pto_runtime *rt = (pto_runtime *)msg;
  cr_expect_eq(pto_runtime_new(NULL, &rt), PTO_EISA);
  cr_expect_null(rt);
  cr_expect(strstr(pto_runtime_error(NULL), "PTO_ISA=avx9000") != NULL, "%s",
            pto_runtime_error(NULL));
}

/* The choice without the CPU: a machine that lacks avx512. */
Test(tileops, isa_resolve_unsupported_and_default) {
  const char *runs[] = {"avx2", "scalar", NULL};
  const char *got = "x";
  char msg[256];
  cr_expect_eq(pto__isa_resolve("avx512", runs, &got, msg, sizeof msg),
               PTO_EISA);
  cr_expect_null(got);
  cr_expect(strstr(msg, "PTO_ISA=avx512") != NULL, "%s", msg);
  cr_expect(strstr(msg, "does not run avx512") != NULL, "%s", msg);
  cr_expect(strstr(msg, "avx2, scalar") != NULL, "%s", msg);
  cr_expect_eq(pto__isa_resolve(NULL, runs, &got, msg, sizeof msg), PTO_OK);
  cr_expect_str_eq(got, "avx2");
  cr_expect_str_eq(msg, "");
  cr_expect_eq(pto__isa_resolve("", runs, &got, NULL, 0), PTO_OK);
  cr_expect_str_eq(got, "avx2");
  cr_expect_eq(pto__isa_resolve("scalar", runs, &got, NULL, 0), PTO_OK);
  cr_expect_str_eq(got, "scalar");
  const char *only_scalar[] = {"scalar", NULL};
  cr_expect_eq(pto__isa_resolve("avx2", only_scalar, &got, msg, sizeof msg),
               PTO_EISA);
  cr_expect(strstr(msg, "it runs: scalar)") != NULL, "%s", msg);
  cr_expect_eq(pto__isa_resolve("AVX2", runs, &got, msg, sizeof msg),
               PTO_EISA, "names are exact");
  cr_expect(strstr(msg, "unknown") != NULL, "%s", msg);
  char tiny[8];
  cr_expect_eq(pto__isa_resolve("avx9000", runs, &got, tiny, sizeof tiny),
               PTO_EISA);
  cr_expect_eq(strlen(tiny), sizeof tiny - 1);
}

static int fake_add(int op, const pto_targs *a) {
  (void)op, (void)a;
  return PTO_ENOTSUP;
}

Test(tileops, isa_derived_table_overrides_entries) {
  static pto_isa_table t;
  pto__isa_table_derive(&t, "test", &pto__isa_scalar);
  cr_expect_str_eq(t.name, "test");
  for (int op = 0; op < PTO_OP_COUNT; op++)
    cr_expect_eq(t.fn[op], pto__isa_scalar.fn[op]);
  t.fn[PTO_OP_TADD] = fake_add;
  cr_expect_eq(t.fn[PTO_OP_TADD](PTO_OP_TADD, NULL), PTO_ENOTSUP);
  cr_expect_neq(pto__isa_scalar.fn[PTO_OP_TADD], fake_add);
}

/* ---- core/convert.h against the oracle
 * -------------------------------------------- */

Test(tileops, convert_widening_is_exact_for_every_code) {
  for (uint32_t h = 0; h < 65536; h++) {
    double b = bf16_value((uint16_t)h), f = f16_value((uint16_t)h);
    float gb = pto__bf16_to_f32((uint16_t)h), gf = pto__f16_to_f32((uint16_t)h);
    if (isnan(b))
      cr_assert(isnan(gb), "bf16 0x%04x", h);
    else
      cr_assert(gb == b && !signbit(gb) == !signbit(b), "bf16 0x%04x: %g vs %g",
                h, gb, b);
    if (isnan(f))
      cr_assert(isnan(gf), "f16 0x%04x", h);
    else
      cr_assert(gf == f && !signbit(gf) == !signbit(f), "f16 0x%04x: %g vs %g",
                h, gf, f);
    /* and back: every non-NaN code round-trips; NaN stays NaN */
    uint16_t rb = pto__f32_to_bf16(gb), rf = pto__f32_to_f16(gf);
    if (isnan(b))
      cr_assert(isnan(bf16_value(rb)) && (rb & 0x8000) == (h & 0x8000),
                "bf16 NaN 0x%04x -> 0x%04x", h, rb);
    else
      cr_assert_eq(rb, h, "bf16 0x%04x -> 0x%04x", h, rb);
    if (isnan(f))
      cr_assert(isnan(f16_value(rf)) && (rf & 0x8000) == (h & 0x8000),
                "f16 NaN 0x%04x -> 0x%04x", h, rf);
    else
      cr_assert_eq(rf, h, "f16 0x%04x -> 0x%04x", h, rf);
  }
}

static void check_narrowing(float x) {
  uint16_t b = pto__f32_to_bf16(x), f = pto__f32_to_f16(x);
  if (isnan(x)) {
    cr_assert(isnan(bf16_value(b)) && isnan(f16_value(f)), "NaN %a", x);
    return;
  }
  cr_assert_eq(b, round_half(x, 0), "bf16(%a): 0x%04x, expected 0x%04x", x, b,
               round_half(x, 0));
  cr_assert_eq(f, round_half(x, 1), "f16(%a): 0x%04x, expected 0x%04x", x, f,
               round_half(x, 1));
  cr_assert_eq(pto__f32_to_i32_sat(x), round_i32(x), "i32(%a)", x);
}

Test(tileops, convert_narrowing_rounds_to_nearest_even) {
  /* every midpoint between neighbouring codes (the ties), and its
   * neighbours on both sides */
  for (uint32_t h = 0; h < 0x7f80; h++) {
    double m =
        (bf16_value((uint16_t)h) +
         (h + 1 < 0x7f80 ? bf16_value((uint16_t)(h + 1)) : ldexp(1, 128))) /
        2;
    float mf = (float)m;
    for (int s = 0; s < 2; s++) {
      float v = s ? -mf : mf;
      check_narrowing(v);
      check_narrowing(nextafterf(v, INFINITY));
      check_narrowing(nextafterf(v, -INFINITY));
    }
  }
  for (uint32_t h = 0; h < 0x7c00; h++) {
    double m = (f16_value((uint16_t)h) +
                (h + 1 < 0x7c00 ? f16_value((uint16_t)(h + 1)) : 65536.0)) /
               2;
    float mf = (float)m;
    for (int s = 0; s < 2; s++) {
      float v = s ? -mf : mf;
      check_narrowing(v);
      check_narrowing(nextafterf(v, INFINITY));
      check_narrowing(nextafterf(v, -INFINITY));
    }
  }
  /* random bit patterns: every exponent, NaN and infinity included */
  rng r = rng_seed(7);
  for (int i = 0; i < (1 << 20); i++) {
    uint32_t u = (uint32_t)next(&r);
    float x;
    memcpy(&x, &u, sizeof x);
    check_narrowing(x);
  }
}

Test(tileops, convert_to_i32_ties_and_saturation) {
  static const struct {
    double in;
    int32_t out;
  } t[] = {{0.5, 0},
           {1.5, 2},
           {2.5, 2},
           {-0.5, 0},
           {-1.5, -2},
           {-2.5, -2},
           {3.49999, 3},
           {-0.0, 0},
           {2147483520.0, 2147483520},
           {2147483647.0, INT32_MAX},
           {2147483647.5, INT32_MAX},
           {2147483646.5, 2147483646},
           {2147483648.0, INT32_MAX},
           {1e300, INT32_MAX},
           {-2147483648.0, INT32_MIN},
           {-2147483648.5, INT32_MIN},
           {-2147483647.5, -2147483648.0},
           {-1e300, INT32_MIN},
           {INFINITY, INT32_MAX},
           {-INFINITY, INT32_MIN},
           {NAN, 0}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    cr_expect_eq(pto__f64_to_i32_sat(t[i].in), t[i].out, "%.17g", t[i].in);
    cr_expect_eq(pto__f64_to_i32_sat(t[i].in), round_i32(t[i].in), "%.17g",
                 t[i].in);
  }
  cr_expect_eq(pto__f32_to_i32_sat(2147483648.0f), INT32_MAX);
  cr_expect_eq(pto__f32_to_i32_sat(-2147483648.0f), INT32_MIN);
  cr_expect_eq(pto__f32_to_i32_sat(2147483520.0f), 2147483520);
}
