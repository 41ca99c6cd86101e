/* randprog_inc.h (internal to the tests): input filling and output
 * comparison, shared by the random differential test (tests/randprog.c)
 * and the stand-alone C programs it prints for a failing seed, which embed
 * this file's text verbatim. So it uses only the public API and the C
 * library, and every function is static. */
#include <math.h>
#include <pto/pto.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* splitmix64: one input's values come from its own seed. */
static uint64_t rp_next(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static uint32_t rp_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float rp_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* f32 -> bf16 and f16, round to nearest even (NaN stays a quiet NaN). */
static uint16_t rp_f32_to_bf16(float f) {
  uint32_t u = rp_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float rp_bf16_to_f32(uint16_t h) {
  return rp_bits_f32((uint32_t)h << 16);
}
static uint16_t rp_f32_to_f16(float f) {
  uint32_t u = rp_f32_bits(f), sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u) /* rounds to 65520 or more: infinity */
    return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) { /* below 2^-14: subnormal, in units of 2^-24 */
    float m = rp_bits_f32(a) * 16777216.0f; /* exact scaling */
    return (uint16_t)(sign | (uint32_t)nearbyintf(m));
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}
static float rp_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu,
           m = h & 0x3ffu;
  if (e == 0) {
    float v = (float)m / 16777216.0f;
    return sign ? -v : v;
  }
  if (e == 31)
    return rp_bits_f32(sign | 0x7f800000u | (m << 13));
  return rp_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* Kinds of input data. GRID: multiples of 2^-q in [lo, hi], exact in the
 * dtype and in every sum the test lets them reach; FINE: any f32 in
 * [lo, hi]; INT: integers in [lo, hi]; WILD: any i32 bit pattern; SPECIAL:
 * GRID values mixed with NaN, infinities, signed zeros, subnormals and
 * huge values; INDEX: i32 rows of lo slots for sparse attention over hi
 * keys, in pattern q (rp_fill_index). */
enum {
  RP_FILL_GRID,
  RP_FILL_FINE,
  RP_FILL_INT,
  RP_FILL_WILD,
  RP_FILL_SPECIAL,
  RP_FILL_INDEX
};

/* Rows of T slots of keys below S2, the valid keys distinct within a row
 * (pto_sparse_attention's precondition), mixed with invalid ones by
 * pattern: 0 none (but -1 past S2 slots: a row holds at most S2 keys), 1
 * scattered (INT32_MIN, -1, S2, S2 + 5, INT32_MAX), 2 a tail of -1 (as the
 * indexer pads), 3 all invalid, 4 each row one of those at random. */
static void rp_fill_index(int32_t *ix, int64_t n, uint64_t seed, int pattern,
                          int64_t T, int64_t S2) {
  uint64_t s = seed;
  const int32_t bad[5] = {INT32_MIN, -1, (int32_t)S2, (int32_t)(S2 + 5),
                          INT32_MAX};
  for (int64_t r0 = 0; r0 < n; r0 += T) {
    const int pat = pattern < 4 ? pattern : (int)(rp_next(&s) % 4);
    const int64_t tail = T - (int64_t)(rp_next(&s) % (uint64_t)(T + 1));
    int64_t nv = 0;
    for (int64_t t = 0; t < T && r0 + t < n; t++) {
      const uint64_t r = rp_next(&s);
      if (pat == 3 || (pat == 1 && r % 4 == 0) || (pat == 2 && t >= tail) ||
          nv == S2) {
        ix[r0 + t] = pat == 0 || pat == 2 ? -1 : bad[(r >> 8) % 5];
        continue;
      }
      /* a key not in the row yet: the first free one from a random start */
      int64_t j = (int64_t)((r >> 16) % (uint64_t)S2);
      for (int used = 1; used;) {
        used = 0;
        for (int64_t u = 0; u < t && !used; u++)
          used = ix[r0 + u] == j;
        if (used)
          j = (j + 1) % S2;
      }
      ix[r0 + t] = (int32_t)j;
      nv++;
    }
  }
}

static float rp_special(uint64_t r) {
  static const uint32_t bits[] = {
      0x7fc00000u, 0xffc00000u, 0x7f800000u, 0xff800000u, 0x00000000u,
      0x80000000u, 0x00000001u, 0x80400000u, 0x7f7fffffu, 0xff7fffffu,
      0x00800000u, 0x3f800000u, 0x7fa00000u /* signalling NaN */};
  return rp_bits_f32(bits[r % (sizeof bits / sizeof bits[0])]);
}

static void rp_fill(void *buf, pto_dtype dt, int64_t n, uint64_t seed, int kind,
                    int q, double lo, double hi) {
  if (kind == RP_FILL_INDEX) {
    rp_fill_index((int32_t *)buf, n, seed, q, (int64_t)lo, (int64_t)hi);
    return;
  }
  uint64_t s = seed;
  double scale = ldexp(1.0, q);
  int64_t klo = (int64_t)ceil(lo * scale), khi = (int64_t)floor(hi * scale);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = rp_next(&s);
    float f;
    if (dt == PTO_I32) {
      int32_t v;
      if (kind == RP_FILL_WILD) {
        uint32_t w = (uint32_t)(r >> 32);
        if (r % 8 == 0) /* the edges, often */
          w = (uint32_t)(r % 16 < 8 ? 0x80000000u : 0x7fffffffu);
        memcpy(&v, &w, 4);
      } else {
        v = (int32_t)((int64_t)lo + (int64_t)(r % (uint64_t)(hi - lo + 1)));
      }
      ((int32_t *)buf)[i] = v;
      continue;
    }
    if (kind == RP_FILL_FINE)
      f = (float)(lo + (hi - lo) * (double)(r >> 40) / 16777216.0);
    else if (kind == RP_FILL_SPECIAL && r % 4 == 0)
      f = rp_special(r >> 8);
    else
      f = (float)((double)(klo +
                           (int64_t)((r >> 8) % (uint64_t)(khi - klo + 1))) /
                  scale);
    if (dt == PTO_F32)
      ((float *)buf)[i] = f;
    else if (dt == PTO_BF16)
      ((uint16_t *)buf)[i] = rp_f32_to_bf16(f);
    else
      ((uint16_t *)buf)[i] = rp_f32_to_f16(f);
  }
}

static double rp_value(const void *buf, pto_dtype dt, int64_t i) {
  switch (dt) {
  case PTO_F32:
    return ((const float *)buf)[i];
  case PTO_I32:
    return ((const int32_t *)buf)[i];
  case PTO_BF16:
    return rp_bf16_to_f32(((const uint16_t *)buf)[i]);
  default:
    return rp_f16_to_f32(((const uint16_t *)buf)[i]);
  }
}

/* Compares n elements of got with want. tol < 0: bit-exact, except that
 * any NaN equals any NaN (payloads are not specified), and with tol <= -2
 * +0 equals -0 (the sign of a sum of zeros is not specified); tol >= 0:
 * |got - want| <= tol, where a NaN or an infinity must be matched exactly.
 * Returns the index of the first mismatch (and a message) or -1. */
static int64_t rp_compare(const void *got, const void *want, pto_dtype dt,
                          int64_t n, double tol, char *msg, size_t size) {
  size_t es = dt == PTO_BF16 || dt == PTO_F16 ? 2 : 4;
  for (int64_t i = 0; i < n; i++) {
    double g = rp_value(got, dt, i), w = rp_value(want, dt, i);
    int ok;
    if (isnan(g) || isnan(w))
      ok = isnan(g) && isnan(w);
    else if (tol < 0 || isinf(g) || isinf(w))
      ok = memcmp((const char *)got + (size_t)i * es,
                  (const char *)want + (size_t)i * es, es) == 0 ||
           (tol <= -2 && g == 0 && w == 0);
    else
      ok = fabs(g - w) <= tol;
    if (!ok) {
      int64_t bad = 0;
      for (int64_t j = i; j < n; j++) {
        double x = rp_value(got, dt, j), y = rp_value(want, dt, j);
        if (isnan(x) || isnan(y) ? !(isnan(x) && isnan(y))
            : tol < 0 || isinf(x) || isinf(y)
                ? memcmp((const char *)got + (size_t)j * es,
                         (const char *)want + (size_t)j * es, es) != 0 &&
                      !(tol <= -2 && x == 0 && y == 0)
                : fabs(x - y) > tol)
          bad++;
      }
      snprintf(msg, size,
               "element %lld: got %.9g, want %.9g (%s, tolerance %g); "
               "%lld of %lld elements differ",
               (long long)i, g, w, pto_dtype_name(dt), tol, (long long)bad,
               (long long)n);
      return i;
    }
  }
  return -1;
}

/* ---- tile programs (pto/tileprog.h) --------------------------------------
 * A tile program on a 2-D tensor x [R, C] that spec chooses (rp_tp_decode):
 * kind 0 maps each rb x cb block through 1-3 of adds, muls, maxs (by s),
 * neg, abs; kind 1 sums, into block (i, j), blocks (i, 0..j) of its row of
 * blocks (a loop whose trip is the block's index); kind 2 transposes (a
 * transposed load), [C, R]; kind 3 is x x^T, [R, R], a TMATMUL then
 * TMATMUL_ACC over the column blocks of the two row blocks. */
typedef struct rp_tp {
  int kind, n_ops, ops[3];
  int64_t rb, cb;
  double s[3];
} rp_tp;

/* One of the three largest divisors of n up to 64. */
static int64_t rp_tp_divisor(int64_t n, uint64_t *s) {
  int64_t d[3] = {1, 1, 1};
  int k = 0;
  for (int64_t x = n < 64 ? n : 64; x >= 1 && k < 3; x--)
    if (n % x == 0)
      d[k++] = x;
  return d[rp_next(s) % (uint64_t)k];
}

static void rp_tp_decode(uint64_t spec, int64_t R, int64_t C, rp_tp *t) {
  uint64_t s = spec;
  t->kind = (int)(rp_next(&s) % 4);
  t->rb = rp_tp_divisor(R, &s);
  t->cb = rp_tp_divisor(C, &s);
  t->n_ops = 1 + (int)(rp_next(&s) % 3);
  for (int i = 0; i < 3; i++) {
    t->ops[i] = (int)(rp_next(&s) % 5);
    t->s[i] = ((double)(rp_next(&s) % 33) - 16) / 8;
  }
}

#ifdef __GNUC__
__attribute__((unused)) /* a printed program may have no tile program */
#endif
static pto_tensor *rp_tprog(pto_program *p, pto_tensor *x, uint64_t spec) {
  if (!x)
    return NULL;
  const int64_t R = pto_tensor_dim(x, 0), C = pto_tensor_dim(x, 1);
  rp_tp t;
  rp_tp_decode(spec, R, C, &t);
  const int64_t rb = t.rb, cb = t.cb, xs[2] = {R, C};
  const int64_t os[2] = {t.kind == 2 ? C : R, t.kind == 2 ? R : t.kind == 3 ? R : C};
  const int64_t grid[2] = {t.kind == 2 ? C / cb : R / rb,
                           t.kind == 2 ? R / rb : t.kind == 3 ? R / rb : C / cb};
  pto_tprog *tp = pto_tprog_new("rp", 2, grid);
  const int in = pto_tprog_input(tp, "x", pto_tensor_dtype(x), 2, xs),
            out = pto_tprog_output(tp, "y", PTO_F32, 2, os);
  const int bi = pto_tprog_block(tp, 0), bj = pto_tprog_block(tp, 1);
  const uint32_t ur = (uint32_t)rb, uc = (uint32_t)cb;
  if (t.kind == 0 || t.kind == 1) {
    const int a = pto_tprog_tile(tp, "a", PTO_MEM_UB, PTO_F32, ur, uc, 1),
              b = pto_tprog_tile(tp, "b", PTO_MEM_UB, PTO_F32, ur, uc, 1);
    const pto_tp_expr at[2] = {pto_tp_var(bi, rb), pto_tp_var(bj, cb)};
    if (t.kind == 0) {
      static const char *const names[] = {"TADDS", "TMULS", "TMAXS", "TNEG",
                                          "TABS"};
      pto_tprog_load(tp, a, in, at);
      for (int i = 0; i < t.n_ops; i++) {
        pto_tp_opargs o;
        memset(&o, 0, sizeof o);
        o.s = t.s[i];
        pto_tprog_op(tp, names[t.ops[i]], 1, &a, 1, &a, &o);
      }
    } else {
      const pto_tp_expr at0[2] = {pto_tp_var(bi, rb), pto_tp_const(0)};
      pto_tprog_load(tp, a, in, at0);
      const int j = pto_tprog_for(tp, pto_tp_var(bj, 1));
      const pto_tp_expr atj[2] = {pto_tp_var(bi, rb), pto_tp_axpb(j, cb, cb)};
      pto_tprog_load(tp, b, in, atj);
      const int ab[2] = {a, b};
      pto_tprog_op(tp, "TADD", 1, &a, 2, ab, NULL);
      pto_tprog_end(tp);
    }
    pto_tprog_store(tp, a, out, at);
  } else if (t.kind == 2) {
    const int a = pto_tprog_tile(tp, "a", PTO_MEM_UB, PTO_F32, uc, ur, 1);
    const pto_tp_expr from[2] = {pto_tp_var(bj, rb), pto_tp_var(bi, cb)},
                      to[2] = {pto_tp_var(bi, cb), pto_tp_var(bj, rb)};
    pto_tprog_load_t(tp, a, in, from, PTO_TP_TRANS);
    pto_tprog_store(tp, a, out, to);
  } else {
    const int a = pto_tprog_tile(tp, "a", PTO_MEM_L0A, PTO_F32, ur, uc, 1),
              b = pto_tprog_tile(tp, "b", PTO_MEM_L0B, PTO_F32, uc, ur, 1),
              c = pto_tprog_tile(tp, "c", PTO_MEM_L0C, PTO_F32, ur, ur, 1);
    const int ab[2] = {a, b};
    pto_tprog_load(tp, a, in, (pto_tp_expr[]){pto_tp_var(bi, rb), pto_tp_const(0)});
    pto_tprog_load_t(tp, b, in, (pto_tp_expr[]){pto_tp_var(bj, rb), pto_tp_const(0)},
                     PTO_TP_TRANS);
    pto_tprog_op(tp, "TMATMUL", 1, &c, 2, ab, NULL);
    const int k = pto_tprog_for(tp, pto_tp_const(C / cb - 1));
    pto_tprog_load(tp, a, in,
                   (pto_tp_expr[]){pto_tp_var(bi, rb), pto_tp_axpb(k, cb, cb)});
    pto_tprog_load_t(tp, b, in,
                     (pto_tp_expr[]){pto_tp_var(bj, rb), pto_tp_axpb(k, cb, cb)},
                     PTO_TP_TRANS);
    pto_tprog_op(tp, "TMATMUL_ACC", 1, &c, 2, ab, NULL);
    pto_tprog_end(tp);
    pto_tprog_store(tp, c, out,
                    (pto_tp_expr[]){pto_tp_var(bi, rb), pto_tp_var(bj, rb)});
  }
  pto_tensor *y = NULL;
  if (pto_tprog_status(tp))
    pto_program_fail(p, pto_tprog_status(tp), "rp_tprog", "%s",
                     pto_tprog_error(tp));
  else
    pto_tile_program(p, tp, 1, &x, &y);
  pto_tprog_free(tp);
  return y;
}
