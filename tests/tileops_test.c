/* tests/tileops_test.c (internal to the tileops suite): the helpers
 * tests/tileops_test.h declares: allocation bookkeeping, random numbers,
 * tiles, the oracle's number formats, comparisons, operand data. */
#include "tests/tileops_test.h"

/* ---- bookkeeping: everything a test allocates is freed by its .fini ---- */

#define MAX_ALLOCS 8192
static void *allocs[MAX_ALLOCS];
static int n_allocs;

void *keep(void *p) {
  cr_assert_not_null(p, "out of memory");
  cr_assert_lt(n_allocs, MAX_ALLOCS, "too many allocations in one test");
  allocs[n_allocs++] = p;
  return p;
}

void free_all(void) {
  while (n_allocs > 0)
    free(allocs[--n_allocs]);
}

/* ---- random numbers (splitmix64) ----------------------------------------- */

rng rng_seed(uint64_t seed) {
  rng r = {seed * 0x9e3779b97f4a7c15ull + 0x1234567ull};
  return r;
}

uint64_t next(rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint32_t below(rng *r, uint32_t n) {
  return (uint32_t)(next(r) % n);
}

double uniform(rng *r, double lo, double hi) {
  return lo + (hi - lo) * ((double)(next(r) >> 11) * 0x1p-53);
}

/* ---- tiles --------------------------------------------------------------- */

size_t dsize(pto_dtype dt) {
  return dt == PTO_BF16 || dt == PTO_F16 ? 2 : 4;
}

pto_tile *tile_new(pto_dtype dt, uint32_t rows, uint32_t cols, uint32_t vr,
                   uint32_t vc, unsigned char fill) {
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

size_t tile_size(const pto_tile *t) {
  return pto_tile_bytes(t->dtype, t->rows, t->cols);
}

pto_tile *tile_clone(const pto_tile *t) {
  pto_tile *c =
      tile_new(t->dtype, t->rows, t->cols, t->valid_rows, t->valid_cols, 0);
  memcpy(c->data, t->data, tile_size(t));
  return c;
}

void *el(const pto_tile *t, uint32_t r, uint32_t c) {
  return (unsigned char *)t->data +
         ((size_t)r * t->stride + c) * dsize(t->dtype);
}

float getf(const pto_tile *t, uint32_t r, uint32_t c) {
  float v;
  memcpy(&v, el(t, r, c), sizeof v);
  return v;
}
void setf(pto_tile *t, uint32_t r, uint32_t c, float v) {
  memcpy(el(t, r, c), &v, sizeof v);
}
int32_t geti(const pto_tile *t, uint32_t r, uint32_t c) {
  int32_t v;
  memcpy(&v, el(t, r, c), sizeof v);
  return v;
}
void seti(pto_tile *t, uint32_t r, uint32_t c, int32_t v) {
  memcpy(el(t, r, c), &v, sizeof v);
}

/* ---- the oracle's number formats ----------------------------------------- */

/* bf16 is, by definition, the top half of an f32. */
double bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* IEEE binary16, from its fields. */
double f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 31  ? (m ? NAN : INFINITY)
             : e == 0 ? ldexp(m, -24)
                      : ldexp(m + 1024, e - 25);
  return h & 0x8000 ? -v : v;
}

/* Element p of dtype dt, as a double (exact for every dtype). */
double value_of(pto_dtype dt, const void *p) {
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
uint16_t round_half(double v, int f16) {
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
int32_t round_i32(double v) {
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
int32_t wrap32(int64_t v) {
  int64_t m = v % 4294967296LL;
  if (m < 0)
    m += 4294967296LL;
  if (m >= 2147483648LL)
    m -= 4294967296LL;
  return (int32_t)m;
}

/* The value v stored as dtype `to`. */
void store_value(pto_dtype to, void *p, double v) {
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
void convert_value(pto_dtype to, void *p, pto_dtype from, double v) {
  if (from == PTO_I32 && (to == PTO_BF16 || to == PTO_F16))
    v = (float)v;
  store_value(to, p, v);
}

/* One element converted; the same dtype copies the bits. */
void o_convert(pto_dtype to, void *dst, pto_dtype from, const void *src) {
  if (to == from)
    memcpy(dst, src, dsize(to));
  else
    convert_value(to, dst, from, value_of(from, src));
}

/* One f32 ulp at |v|. */
double ulp_f32(double v) {
  v = fabs(v);
  if (v < 0x1p-126)
    return 0x1p-149;
  int e;
  frexp(v, &e);
  return ldexp(1, e - 24);
}

/* ---- comparing ------------------------------------------------------------
 */

int elem_same(pto_dtype dt, const void *a, const void *b) {
  if (memcmp(a, b, dsize(dt)) == 0)
    return 1;
  return dt != PTO_I32 && isnan(value_of(dt, a)) && isnan(value_of(dt, b));
}

const char *show(pto_dtype dt, const void *p, char *buf, size_t n) {
  uint32_t bits = 0;
  memcpy(&bits, p, dsize(dt)); /* little-endian: low bytes */
  snprintf(buf, n, "%.9g (0x%0*x)", value_of(dt, p), (int)dsize(dt) * 2,
           (unsigned)bits);
  return buf;
}

/* got against want over the whole buffer (row padding included). Inside
 * want's valid region, when val is not NULL, an f32 element must be within
 * tol[i] of val[i] (i = r * stride + c); everything else must match bits. */
void expect_tile(const char *ctx, const pto_tile *got, const pto_tile *want,
                 const double *val, const double *tol) {
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
void expect_valid(const char *ctx, const pto_tile *got, const pto_tile *want) {
  char b1[64], b2[64];
  for (uint32_t r = 0; r < want->valid_rows; r++)
    for (uint32_t c = 0; c < want->valid_cols; c++)
      cr_assert(elem_same(got->dtype, el(got, r, c), el(want, r, c)),
                "%s: (%u,%u) is %s, expected %s", ctx, r, c,
                show(got->dtype, el(got, r, c), b1, sizeof b1),
                show(got->dtype, el(want, r, c), b2, sizeof b2));
}

double *dbuf(const pto_tile *t) {
  return keep(calloc((size_t)t->rows * t->stride, sizeof(double)));
}

/* ---- operand data ---------------------------------------------------------
 */

const float specials[] = {
    0.0f,          -0.0f,       1.0f,      -1.0f,     0.5f,   2.5f,
    -2.5f,         INFINITY,    -INFINITY, NAN,       1e-40f, -1e-42f,
    3e38f,         -3e38f,      65504.0f,  65520.0f,  1e10f,  -2147483648.0f,
    2147483520.0f, 16777217.0f, -0x1p-24f, 0x1.8p-25f};

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
void gen_elem(rng *r, pto_dtype dt, int g, void *p) {
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

void fill_valid(rng *r, pto_tile *t, int g) {
  for (uint32_t i = 0; i < t->valid_rows; i++)
    for (uint32_t j = 0; j < t->valid_cols; j++)
      if (g == G_MM && t->dtype == PTO_F32)
        setf(t, i, j, (float)uniform(r, -2, 2));
      else
        gen_elem(r, t->dtype, g, el(t, i, j));
}

/* A source: random valid region, poison elsewhere (0x7f..: huge values;
 * 0xff..: NaN for floats, -1 for i32). */
pto_tile *src_new(rng *r, pto_dtype dt, uint32_t rows, uint32_t cols,
                  uint32_t vr, uint32_t vc, int g) {
  pto_tile *t = tile_new(dt, rows, cols, vr, vc, below(r, 2) ? 0x7f : 0xff);
  fill_valid(r, t, g);
  return t;
}

pto_tile *dst_new(pto_dtype dt, uint32_t rows, uint32_t cols, uint32_t vr,
                  uint32_t vc) {
  return tile_new(dt, rows, cols, vr, vc, SENTINEL);
}

int gen_for(pto_dtype dt) {
  return dt == PTO_F32 ? G_CVT : G_F32; /* i32: general; halves: any code */
}

/* ---- running ------------------------------------------------------------- */

void run_ok(int op, const pto_targs *a, const char *ctx) {
  char msg[256];
  int st = pto__tileop_check(op, a, msg, sizeof msg);
  cr_assert_eq(st, 0, "%s: check refused good operands: %s: %s", ctx,
               pto_status_name(st), msg);
  st = pto__tileop_run(op, a);
  cr_assert_eq(st, 0, "%s: run returned %s", ctx, pto_status_name(st));
}

const shape shapes[] = {{16, 48, 16, 48}, /* full */
                        {16, 48, 13, 37}, /* tail tile */
                        {1, 1, 1, 1},
                        {8, 64, 8, 3},
                        {5, 130, 4, 129}};

static char ctxbuf[256];
const char *ctx_of(int op, const char *what, pto_dtype dt, const shape *s) {
  snprintf(ctxbuf, sizeof ctxbuf, "%s %s%s%s %ux%u in %ux%u",
           pto__insn_name(op), pto_dtype_name(dt), what[0] ? " " : "", what,
           s->vr, s->vc, s->rows, s->cols);
  return ctxbuf;
}

/* f32, and i32 when the instruction takes it. */
int op_dtypes(int op, pto_dtype dts[2]) {
  dts[0] = PTO_F32;
  dts[1] = PTO_I32;
  return pto__insn_info(op)->flags & PTO_IF_INT ? 2 : 1;
}

int op_exact(int op) {
  return (pto__insn_info(op)->flags & PTO_IF_EXACT) != 0;
}

uint64_t seed_of(int op, int a, int b, int c) {
  return (uint64_t)op * 1000003u + (uint64_t)a * 10007u + (uint64_t)b * 101u +
         (uint64_t)c;
}

/* ---- global tensors ------------------------------------------------------ */

gbuf gbuf_gen(rng *r, pto_dtype dt, int64_t rows, int64_t cols, int colmajor,
              int gen) {
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

void *gat(const pto_gview *g, int64_t r, int64_t c) {
  return (unsigned char *)g->base +
         (r * g->row_stride + c * g->col_stride) * (int64_t)dsize(g->dtype);
}

/* ---- every table this CPU runs ------------------------------------------- */

isa_list tables_here(void) {
  isa_list l = {{&pto__isa_scalar}, 1};
  if (pto_isa_supported("avx2"))
    l.t[l.n++] = pto__isa_avx2();
  if (pto_isa_supported("avx512"))
    l.t[l.n++] = pto__isa_avx512();
  if (pto_isa_supported("avx512bf16"))
    l.t[l.n++] = pto__isa_avx512bf16();
  return l;
}

/* ---- operand checks ------------------------------------------------------ */

/* Expects check to return status with a message naming the instruction and
 * containing each of the (up to two) needles. */
void expect_reject(int op, const pto_targs *a, int status, const char *needle1,
                   const char *needle2) {
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

void expect_accept(int op, const pto_targs *a) {
  char msg[256];
  int st = pto__tileop_check(op, a, msg, sizeof msg);
  cr_assert_eq(st, 0, "%s: check returned %s: %s", pto__insn_name(op),
               pto_status_name(st), msg);
}

pto_targs binop_args(pto_tile *d, pto_tile *x, pto_tile *y) {
  pto_targs a = {0};
  a.dst[0] = d;
  a.src[0] = x;
  a.src[1] = y;
  return a;
}

