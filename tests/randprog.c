/* Random programs over the whole builder API, checked against the reference
 * evaluator: generation (from a seed or fuzzer bytes), building, printing as
 * C, running under random configs and runtimes, and a supervisor that turns
 * hangs and crashes into reports naming the seed. See randprog.h. */
#include "tests/randprog.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "randprog_inc_str.h" /* rp_inc_lines: randprog_inc.h as text */
#include "tests/randprog_inc.h"

#include "core/exe.h" /* the op of an unfused task (check_parallel) */

/* ---- switches ------------------------------------------------------------ */

rp_switches rp_switches_default(void) {
  rp_switches sw;
#define RP__ON(name, open) sw.name = open;
  RP_KNOWN_BUGS(RP__ON)
#undef RP__ON
  return sw;
}

/* Sets the switches env names (a list, or "all") to value. */
static int switches_set(rp_switches *sw, const char *var, int value, char *msg,
                        size_t size) {
  const char *env = getenv(var);
  if (!env || !env[0])
    return 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", env);
  for (char *save = NULL, *w = strtok_r(buf, ", ", &save); w;
       w = strtok_r(NULL, ", ", &save)) {
    int all = strcmp(w, "all") == 0, hit = all;
#define RP__SET(name, open)                                                    \
  if (all || strcmp(w, #name) == 0) {                                          \
    sw->name = value;                                                          \
    hit = 1;                                                                   \
  }
    RP_KNOWN_BUGS(RP__SET)
#undef RP__SET
    if (!hit) {
      snprintf(msg, size, "%s: no known bug is named '%s'", var, w);
      return -1;
    }
  }
  return 0;
}

int rp_switches_from_env(rp_switches *sw, char *msg, size_t size) {
  *sw = rp_switches_default();
  if (switches_set(sw, "PTO_RP_KNOWN", 1, msg, size))
    return -1;
  return switches_set(sw, "PTO_RP_FIXED", 0, msg, size);
}

void rp_switches_print(const rp_switches *sw, FILE *out) {
  const char *sep = "";
#define RP__PR(name, open)                                                       \
  fprintf(out, "%s%s=%d", sep, #name, sw->name);                               \
  sep = " ";
  RP_KNOWN_BUGS(RP__PR)
#undef RP__PR
}

const char *rp_stage_name(int stage) {
  static const char *names[] = {
#define RP__SN(n) #n,
      RP_STAGES(RP__SN)
#undef RP__SN
  };
  return stage >= 0 && stage < RP_STAGE_COUNT ? names[stage] : "?";
}

/* ---- the case ------------------------------------------------------------ */

enum { L_GRID, L_EXACT, L_APPROX, L_NOUSE }; /* what is known of values */

typedef struct rp_val {
  pto_dtype dt;
  int nd;
  int64_t shape[4], stride[4], off; /* strides and offset in the root */
  int root;                         /* id of the root tensor */
  int lvl, q;                       /* level; GRID: multiples of 2^-q */
  double lo, hi;                    /* bounds of every value, both runs */
  double err;                       /* APPROX: |compiled - eval| <= err */
  int special;                      /* may hold NaN, inf: bit-exact only */
  int zsign;                        /* a zero's sign is not specified */
  int mm;                           /* on roots: 1 matmul operand, 2 acc */
  int live;
} rp_val;

enum { /* steps */
       S_INPUT,
       S_OP,
       S_OUTPUT,
       S_PUSH_LABEL,
       S_POP_LABEL,
       S_PUSH_TILE,
       S_POP_TILE,
       S_SET_VEC,
       S_SET_CUBE
};

#define RP_OPS(X)                                                              \
  X(ADD, "add")                                                                \
  X(SUB, "sub")                                                                \
  X(MUL, "mul") X(DIV, "div") X(MAX, "max") X(MIN, "min") X(ADDS, "adds")      \
      X(SUBS, "subs") X(MULS, "muls") X(DIVS, "divs") X(MAXS, "maxs")          \
          X(MINS, "mins") X(EXP, "exp") X(LOG, "log") X(SQRT, "sqrt") X(       \
              RSQRT, "rsqrt") X(RECIP, "recip") X(RELU, "relu") X(ABS, "abs")  \
              X(NEG, "neg") X(CAST, "cast") X(CMP, "cmp") X(SELECT, "select")  \
                  X(ROWSUM, "rowsum") X(ROWMAX, "rowmax") X(ROWMIN, "rowmin")  \
                      X(COLSUM, "colsum") X(COLMAX, "colmax")                  \
                          X(MATMUL, "matmul") X(MATMUL_ACC, "matmul_acc")      \
                              X(SOFTMAX, "softmax") X(TOPK, "topk")            \
                                  X(GATHER, "gather") X(CONCAT, "concat")      \
                                      X(FULL, "full") X(IOTA, "iota")          \
                                          X(SLICE, "slice")                    \
                                              X(RESHAPE, "reshape")            \
                                                  X(TRANSPOSE, "transpose")

enum {
#define RP__OPE(n, s) O_##n,
  RP_OPS(RP__OPE)
#undef RP__OPE
      O_COUNT
};

#define MAX_IN 6

typedef struct rp_step {
  int kind, op;
  int n_in, in[MAX_IN];
  int out, out2;
  pto_dtype dt;
  int nd;
  int64_t shape[4], end[4]; /* shape; slice begin (shape) and end */
  int a0, a1;               /* transpose axes; concat axis; cmp mode */
  unsigned flags;
  double scalar;
  int64_t ival;
  uint32_t tile[5];
  int has_tile;
  char name[48];         /* input, output or label name */
  char label[96];        /* full label in force (ops) */
  int fill_kind, fill_q; /* inputs */
  double fill_lo, fill_hi;
  uint64_t fill_seed;
} rp_step;

typedef struct rp_label_cfg {
  char label[96];
  int knob_set; /* bit per pto_knob */
  int64_t knob[PTO_KNOB_COUNT];
  int vec_set, cube_set;
  uint32_t vec[2], cube[3];
} rp_label_cfg;

enum { CFG_NULL, CFG_API, CFG_JSON };
enum { M_HOST, M_ASCEND, M_CUSTOM };

typedef struct rp_cfg {
  int mode, machine;
  uint32_t workers[2];
  int shared;
  uint64_t mem[PTO_MEM_LEVEL_COUNT];
  int knob_set;
  int64_t knob[PTO_KNOB_COUNT];
  int n_labels;
  rp_label_cfg labels[4];
} rp_cfg;

typedef struct rp_rt_spec {
  int shared, variant, policy, repeat;
} rp_rt_spec;

struct rp_case {
  uint64_t seed;
  int from_bytes;
  int huge; /* huge_shapes fixed: which op must refuse a 2^40 shape */
  rp_switches sw;
  int special, n_ops;
  rp_step *steps;
  int n_steps, cap_steps;
  rp_val *vals;
  int n_vals, cap_vals;
  rp_cfg cfg;
  int n_rts;
  rp_rt_spec rts[3];
};

uint64_t rp_case_seed(const rp_case *c) {
  return c->seed;
}
int rp_case_num_ops(const rp_case *c) {
  int n = 0;
  for (int i = 0; i < c->n_steps; i++)
    n += c->steps[i].kind == S_OP;
  return n;
}

void rp_case_free(rp_case *c) {
  if (!c)
    return;
  free(c->steps);
  free(c->vals);
  free(c);
}

/* ---- choices: a PRNG or fuzzer bytes ------------------------------------ */

typedef struct rp_src {
  uint64_t s;
  const uint8_t *data;
  size_t size, pos;
  int bytes;
} rp_src;

static uint32_t pick(rp_src *r, uint32_t n) {
  if (n <= 1)
    return 0;
  if (!r->bytes)
    return (uint32_t)(rp_next(&r->s) % n);
  uint32_t v = 0;
  for (uint32_t span = 1; span < n && span < (1u << 24); span <<= 8) {
    v = v << 8 | (r->pos < r->size ? r->data[r->pos] : 0);
    r->pos++;
  }
  return v % n;
}
static int chance(rp_src *r, int pct) {
  return (int)pick(r, 100) < pct;
}
#define PICK_OF(r, arr)                                                        \
  (arr)[pick((r), (uint32_t)(sizeof(arr) / sizeof((arr)[0])))]

/* ---- generator state ------------------------------------------------------
 */

#define NUMEL_MAX 16384
#define MM_COST_MAX (1 << 20)
#define MAX_STEPS 400
#define MAX_VALS 400

typedef struct gen {
  rp_case *c;
  rp_src *r;
  int64_t dims[6];
  int n_dims;
  char labels[4][96];
  int n_labels, n_tiles;
  int input_seq, output_seq;
  int failed; /* out of room */
} gen;

static const double U = 0x1p-22; /* two f32 roundings, with margin */

static rp_step *add_step(gen *g, int kind) {
  rp_case *c = g->c;
  if (c->n_steps >= MAX_STEPS) {
    g->failed = 1;
    static rp_step sink;
    memset(&sink, 0, sizeof sink);
    return &sink;
  }
  if (c->n_steps == c->cap_steps) {
    int cap = c->cap_steps ? 2 * c->cap_steps : 64;
    rp_step *s = realloc(c->steps, (size_t)cap * sizeof *s);
    if (!s)
      abort();
    c->steps = s;
    c->cap_steps = cap;
  }
  rp_step *s = &c->steps[c->n_steps++];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->out = s->out2 = -1;
  snprintf(s->label, sizeof s->label, "%s",
           g->n_labels ? g->labels[g->n_labels - 1] : "");
  return s;
}

static int64_t numel_of(int nd, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++)
    n *= shape[i];
  return n;
}

static rp_val *V(gen *g, int id) {
  return &g->c->vals[id];
}

static double mag(const rp_val *v) {
  return fmax(fabs(v->lo), fabs(v->hi));
}

/* A new tensor value; a root with dense strides unless it is a view. */
static int new_val(gen *g, pto_dtype dt, int nd, const int64_t *shape) {
  rp_case *c = g->c;
  if (c->n_vals >= MAX_VALS) {
    g->failed = 1;
    return 0;
  }
  if (c->n_vals == c->cap_vals) {
    int cap = c->cap_vals ? 2 * c->cap_vals : 64;
    rp_val *v = realloc(c->vals, (size_t)cap * sizeof *v);
    if (!v)
      abort();
    c->vals = v;
    c->cap_vals = cap;
  }
  int id = c->n_vals++;
  rp_val *v = &c->vals[id];
  memset(v, 0, sizeof *v);
  v->dt = dt;
  v->nd = nd;
  memcpy(v->shape, shape, (size_t)nd * sizeof *shape);
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    v->stride[i] = s;
    s *= shape[i];
  }
  v->root = id;
  v->lvl = L_EXACT;
  return id;
}

static int is_float(pto_dtype dt) {
  return dt != PTO_I32;
}

/* Does value level v fit a GRID of 2^-q in f32 (or the storage dtype)? */
static int grid_fits(double m, int q, pto_dtype dt) {
  int bits = dt == PTO_BF16 ? 8 : dt == PTO_F16 ? 11 : 24;
  if (q > 40 || q < 0)
    return 0;
  if (dt == PTO_F16 && m > 60000)
    return 0;
  return m * ldexp(1.0, q) <= ldexp(1.0, bits);
}

/* Finishes a float result: GRID when every input is GRID and the values fit,
 * else EXACT when the op is correctly rounded and no input is APPROX, else
 * APPROX with err (the caller's propagated error) plus rounding. */
static void settle(rp_val *r, int grid_ok, int exact_op, int worst,
                   double err) {
  if (r->special) {
    r->lvl = L_EXACT;
    r->err = 0;
    return;
  }
  if (r->dt == PTO_I32) {
    r->lvl = L_EXACT;
    r->err = 0;
    return;
  }
  double m = mag(r);
  if (worst == L_GRID && grid_ok && grid_fits(m, r->q, r->dt)) {
    r->lvl = L_GRID;
    r->err = 0;
    return;
  }
  r->lvl = worst <= L_EXACT && exact_op ? L_EXACT : L_APPROX;
  r->err = r->lvl == L_APPROX ? err + U * m + 1e-38 : 0;
  /* rounding is monotonic: each end moves by its own ulp at most (a few
   * for the inexact ops: exp, log, rsqrt, sums) */
  double w = exact_op ? U : 4 * U;
  r->lo -= fabs(r->lo) * w + 1e-38;
  r->hi += fabs(r->hi) * w + 1e-38;
  /* both runs' values lie in [lo, hi]: they differ by its width at most */
  if (r->lvl == L_APPROX && r->err > r->hi - r->lo)
    r->err = r->hi - r->lo;
  if (!(r->err >= 0 && r->err < 1e30 && fabs(r->lo) < 1e30 &&
        fabs(r->hi) < 1e30 && r->lo <= r->hi))
    r->lvl = L_NOUSE; /* the test knows too little to check it: never used */
}

static int worst2(const rp_val *a, const rp_val *b) {
  return a->lvl > b->lvl ? a->lvl : b->lvl;
}

/* i32 intervals wrap: outside i32 they become the whole range. */
static void i32_clip(rp_val *r) {
  if (r->lo < INT32_MIN || r->hi > INT32_MAX) {
    r->lo = INT32_MIN;
    r->hi = INT32_MAX;
  }
}

/* r holds some of src's values (reordered, a subset, or copies): the same
 * bounds, grid, level, error and specials. */
static void holds_values_of(rp_val *r, const rp_val *src) {
  r->lo = src->lo;
  r->hi = src->hi;
  r->q = src->q;
  r->lvl = src->lvl;
  r->err = src->err;
  r->special = src->special;
}

/* ---- picking tensors --------------------------------------------------------
 */

typedef int (*val_pred)(gen *g, const rp_val *v, const void *ctx);

/* A usable tensor satisfying ok, favouring recent ones; -1 if none. */
static int pick_val(gen *g, val_pred ok, const void *ctx) {
  int cand[MAX_VALS], n = 0;
  for (int i = 0; i < g->c->n_vals; i++) {
    const rp_val *v = V(g, i);
    if (v->lvl != L_NOUSE && (!ok || ok(g, v, ctx)))
      cand[n++] = i;
  }
  if (!n)
    return -1;
  if (n > 6 && chance(g->r, 50))
    return cand[n - 1 - (int)pick(g->r, 6)];
  return cand[pick(g->r, (uint32_t)n)];
}

static int pred_float(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return is_float(v->dt);
}

/* ---- inputs
 * ------------------------------------------------------------------ */

static void rand_shape(gen *g, int *nd, int64_t *shape) {
  static const int nds[] = {1, 2, 2, 2, 2, 2, 3, 3, 4};
  *nd = PICK_OF(g->r, nds);
  for (int i = 0; i < *nd; i++)
    shape[i] = chance(g->r, 12) ? 1 : g->dims[pick(g->r, (uint32_t)g->n_dims)];
  while (numel_of(*nd, shape) > NUMEL_MAX) {
    int big = 0;
    for (int i = 1; i < *nd; i++)
      big = shape[i] > shape[big] ? i : big;
    shape[big] = (shape[big] + 1) / 2;
  }
}

/* A new input; range_lo/hi force an integer range (gather indices). */
static int new_input(gen *g, pto_dtype dt, int nd, const int64_t *shape,
                     int force_int, double ilo, double ihi) {
  int id = new_val(g, dt, nd, shape);
  if (g->failed)
    return 0;
  rp_step *s = add_step(g, S_INPUT);
  if (g->failed)
    return 0;
  s->out = id;
  s->dt = dt;
  s->nd = nd;
  memcpy(s->shape, shape, (size_t)nd * sizeof *shape);
  snprintf(s->name, sizeof s->name, "in%d", g->input_seq++);
  s->fill_seed = rp_next(&g->c->seed) ^ (uint64_t)id * 0x9e37u;
  rp_val *v = V(g, id);
  if (dt == PTO_I32) {
    if (force_int || !chance(g->r, 15)) {
      double lo = force_int ? ilo : chance(g->r, 70) ? -20 : 0;
      double hi = force_int ? ihi : lo < 0 ? 20 : 50;
      s->fill_kind = RP_FILL_INT;
      s->fill_lo = lo;
      s->fill_hi = hi;
      v->lo = lo;
      v->hi = hi;
    } else {
      s->fill_kind = RP_FILL_WILD;
      v->lo = INT32_MIN;
      v->hi = INT32_MAX;
    }
    v->lvl = L_EXACT;
    return id;
  }
  if (g->c->special) {
    s->fill_kind = RP_FILL_SPECIAL;
    s->fill_q = 2;
    s->fill_lo = -4;
    s->fill_hi = 4;
    v->special = 1;
    v->lo = -INFINITY;
    v->hi = INFINITY;
    v->lvl = L_EXACT;
    return id;
  }
  static const double ranges[] = {1, 2, 4, 8};
  int q = (int)pick(g->r, 4);
  double R = PICK_OF(g->r, ranges);
  int cap = dt == PTO_BF16 ? 7 : dt == PTO_F16 ? 10 : 20; /* bits */
  while (R * ldexp(1.0, q) > ldexp(1.0, cap)) {
    if (q > 0)
      q--;
    else
      R /= 2;
  }
  double lo = -R, hi = R;
  int shape_kind = (int)pick(g->r, 10);
  if (shape_kind == 0)
    lo = ldexp(1.0, -q); /* positive */
  else if (shape_kind == 1)
    lo = 0;
  if (dt == PTO_F32 && chance(g->r, 12)) {
    s->fill_kind = RP_FILL_FINE;
    v->lvl = L_EXACT;
  } else {
    s->fill_kind = RP_FILL_GRID;
    v->lvl = L_GRID;
  }
  s->fill_q = q;
  s->fill_lo = lo;
  s->fill_hi = hi;
  v->q = q;
  v->lo = lo;
  v->hi = hi;
  return id;
}

static pto_dtype rand_dtype(gen *g) {
  static const pto_dtype dts[] = {PTO_F32, PTO_F32, PTO_F32, PTO_F32,
                                  PTO_F32, PTO_F32, PTO_F32, PTO_BF16,
                                  PTO_F16, PTO_I32, PTO_I32};
  return PICK_OF(g->r, dts);
}

static int rand_input(gen *g) {
  int nd;
  int64_t shape[4];
  rand_shape(g, &nd, shape);
  return new_input(g, rand_dtype(g), nd, shape, 0, 0, 0);
}

/* ---- ops
 * ---------------------------------------------------------------------- */

static rp_step *op_step(gen *g, int op, int n_in, const int *in, int out) {
  rp_step *s = add_step(g, S_OP);
  s->op = op;
  s->n_in = n_in;
  for (int i = 0; i < n_in; i++) {
    s->in[i] = in[i];
    V(g, out)->zsign |= V(g, in[i])->zsign;
  }
  s->out = out;
  g->c->n_ops++;
  return s;
}

/* numpy broadcast of two shapes; 0 when they do not. */
static int bcast(int na, const int64_t *a, int nb, const int64_t *b, int *nr,
                 int64_t *r) {
  int n = na > nb ? na : nb;
  for (int d = 0; d < n; d++) {
    int ia = na - n + d, ib = nb - n + d;
    int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
    if (x != y && x != 1 && y != 1)
      return 0;
    r[d] = x > y ? x : y;
  }
  *nr = n;
  return 1;
}

/* Unary value-preserving op on the tracker. */
static int make_unary_like(gen *g, int op, int a, pto_dtype dt) {
  rp_val av = *V(g, a);
  int out = new_val(g, dt, av.nd, av.shape);
  if (g->failed)
    return a;
  op_step(g, op, 1, &a, out);
  rp_val *r = V(g, out);
  r->special = av.special;
  r->q = av.q;
  return out;
}

static int do_scalar(gen *g, int op, int a, double s);
static int do_unary(gen *g, int op, int a);
static void track_unary(gen *g, int op, int a, int out);

/* clamp a float tensor into [-C, C] (exact: keeps GRID and error bound) */
static int guard_clamp(gen *g, int a, double C) {
  if (V(g, a)->special || mag(V(g, a)) <= C)
    return a;
  return do_scalar(g, O_MINS, do_scalar(g, O_MAXS, a, -C), C);
}

/* a tensor whose values (in both runs) are >= minv > 0 */
static int guard_pos(gen *g, int a, double minv) {
  if (V(g, a)->special || V(g, a)->lo >= minv)
    return a;
  static const double cs[] = {0.25, 0.5, 1, 2, 4};
  double c = minv;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
    if (cs[i] >= minv) {
      c = cs[i];
      break;
    }
  if (chance(g->r, 50) || V(g, a)->err > 0.1)
    return do_scalar(g, O_MAXS, a, c);
  return do_scalar(g, O_ADDS, do_unary(g, O_ABS, a), c);
}

static int do_unary(gen *g, int op, int a) {
  const rp_val *av = V(g, a);
  if (!av->special) {
    if (op == O_EXP)
      a = guard_clamp(g, a, chance(g->r, 50) ? 4 : 8);
    else if (op == O_LOG || op == O_RSQRT || op == O_RECIP)
      a = guard_pos(g, a, 0.25);
    else if (op == O_SQRT)
      a = guard_pos(g, a, chance(g->r, 70) ? 0.25 : 0);
  }
  pto_dtype dt = V(g, a)->dt == PTO_I32 ? PTO_I32 : PTO_F32;
  int out = make_unary_like(g, op, a, dt);
  if (out != a)
    track_unary(g, op, a, out);
  return out;
}

static void track_unary(gen *g, int op, int a, int out) {
  rp_val av = *V(g, a), *r = V(g, out);
  double lo = av.lo, hi = av.hi, e = av.err;
  int exact = 1, grid = 1;
  double err = e;
  switch (op) {
  case O_ABS:
    r->lo = lo >= 0 ? lo : hi <= 0 ? -hi : 0;
    r->hi = fmax(fabs(lo), fabs(hi));
    if (av.dt == PTO_I32 && lo <= INT32_MIN)
      r->lo = INT32_MIN; /* abs(INT32_MIN) wraps */
    break;
  case O_NEG:
    r->lo = -hi;
    r->hi = -lo;
    if (av.dt == PTO_I32)
      i32_clip(r);
    break;
  case O_RELU:
    r->lo = fmax(lo, 0);
    r->hi = fmax(hi, 0);
    break;
  case O_EXP:
    r->lo = exp(lo);
    r->hi = exp(hi);
    exact = grid = 0;
    err = r->hi * expm1(e) + 8 * U * r->hi;
    break;
  case O_LOG:
    r->lo = log(lo);
    r->hi = log(hi);
    exact = grid = 0;
    err = e / (lo - e > 0 ? lo - e : 1e-30) +
          8 * U * fmax(fabs(r->lo), fabs(r->hi));
    break;
  case O_SQRT:
    r->lo = sqrt(fmax(lo, 0));
    r->hi = sqrt(fmax(hi, 0));
    grid = 0;
    err = lo > 0 ? e / (2 * sqrt(lo)) : sqrt(e);
    break;
  case O_RSQRT:
    r->lo = 1 / sqrt(hi);
    r->hi = 1 / sqrt(lo);
    exact = grid = 0;
    err = 0.5 * e * pow(lo - e > 0 ? lo - e : 1e-30, -1.5) + 8 * U * r->hi;
    break;
  case O_RECIP:
    r->lo = 1 / hi;
    r->hi = 1 / lo;
    grid = 0;
    err = e / (lo * (lo - e > 0 ? lo - e : 1e-30));
    break;
  }
  settle(r, grid, exact, av.lvl, err);
}

/* tensor-scalar ops; the scalar is rounded to f32 (i32: to an integer) */
static int do_scalar(gen *g, int op, int a, double s) {
  rp_val av = *V(g, a);
  pto_dtype dt = av.dt == PTO_I32 ? PTO_I32 : PTO_F32;
  int out = new_val(g, dt, av.nd, av.shape);
  if (g->failed)
    return a;
  rp_step *st = op_step(g, op, 1, &a, out);
  st->scalar = s;
  rp_val *r = V(g, out);
  r->special = av.special;
  double sv = dt == PTO_I32 ? nearbyint(s) : (double)(float)s;
  /* grid of the scalar: fraction bits, if it is dyadic with few */
  int qs = -1;
  for (int k = 0; k <= 8 && qs < 0; k++)
    if (ldexp(sv, k) == nearbyint(ldexp(sv, k)) && fabs(ldexp(sv, k)) < 4096)
      qs = k;
  double lo = av.lo, hi = av.hi, e = av.err;
  int grid = qs >= 0, exact = 1;
  double err = e;
  switch (op) {
  case O_ADDS:
  case O_SUBS: {
    double t = op == O_ADDS ? sv : -sv;
    r->lo = lo + t;
    r->hi = hi + t;
    r->q = av.q > qs ? av.q : qs;
    break;
  }
  case O_MULS:
    r->lo = fmin(lo * sv, hi * sv);
    r->hi = fmax(lo * sv, hi * sv);
    r->q = av.q + qs;
    err = e * fabs(sv);
    break;
  case O_DIVS:
    if (dt == PTO_I32) {
      double m = fmax(fabs(lo), fabs(hi));
      r->lo = sv == 0 ? 0 : -m;
      r->hi = sv == 0 ? 0 : m;
      r->lo = fmin(r->lo, 0);
      if (lo <= INT32_MIN)
        r->hi = fmax(r->hi, -(double)INT32_MIN); /* wraps: clip below */
      break;
    }
    r->lo = fmin(lo / sv, hi / sv);
    r->hi = fmax(lo / sv, hi / sv);
    {
      int e2;
      double fr = frexp(fabs(sv), &e2);
      grid = fr == 0.5;
      r->q = av.q + (e2 - 1) > 0 ? av.q + (e2 - 1) : 0;
    }
    err = e / fabs(sv);
    break;
  case O_MAXS:
    r->lo = fmax(lo, sv);
    r->hi = fmax(hi, sv);
    r->q = av.q > qs ? av.q : qs;
    break;
  default: /* O_MINS */
    r->lo = fmin(lo, sv);
    r->hi = fmin(hi, sv);
    r->q = av.q > qs ? av.q : qs;
    break;
  }
  if (dt == PTO_I32) {
    if (op == O_MULS || op == O_ADDS || op == O_SUBS)
      i32_clip(r);
    if (op == O_DIVS && (r->lo < INT32_MIN || r->hi > INT32_MAX))
      i32_clip(r);
  }
  settle(r, grid, exact, av.lvl, err);
  return out;
}

static const double scalars[] = {-3,  -2,  -1.5, -1,  -0.5,        -0.25, 0.25,
                                 0.5, 1,   1.5,  2,   3,           4,     0.125,
                                 0,   0.1, -7,   1e3, 0.3333333333};

static int gen_scalar_op(gen *g) {
  static const int ops[] = {O_ADDS, O_SUBS, O_MULS, O_DIVS, O_MAXS, O_MINS};
  int op = PICK_OF(g->r, ops);
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  double s = PICK_OF(g->r, scalars);
  const rp_val *av = V(g, a);
  if (op == O_DIVS && s == 0 && !av->special && av->dt != PTO_I32)
    s = 2;
  if (op == O_MULS && !av->special && mag(av) * fabs(s) > 1e6)
    s = 0.5;
  if (op == O_ADDS && !av->special && mag(av) > 1e8)
    op = O_MINS;
  do_scalar(g, op, a, s);
  return 1;
}

static int gen_unary(gen *g) {
  static const int ops[] = {O_EXP,   O_LOG,  O_SQRT, O_RSQRT,
                            O_RECIP, O_RELU, O_ABS,  O_NEG};
  int op = PICK_OF(g->r, ops);
  int int_ok = op == O_RELU || op == O_ABS || op == O_NEG;
  int a = pick_val(g, int_ok ? NULL : pred_float, NULL);
  if (a < 0)
    return 0;
  if (g->c->special && (op == O_EXP || op == O_LOG || op == O_RSQRT))
    op = O_SQRT; /* inexact ops have no bit-exact answer at specials */
  do_unary(g, op, a);
  return 1;
}

/* binary element-wise ops and cmp/select: the second operand broadcasts */
typedef struct bin_ctx {
  const rp_val *a;
  int need_exact;
} bin_ctx;

static int pred_bin(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  const bin_ctx *b = ctx;
  int nr;
  int64_t r[4];
  if (is_float(v->dt) != is_float(b->a->dt))
    return 0;
  if (b->need_exact && v->lvl == L_APPROX)
    return 0;
  if (!bcast(b->a->nd, b->a->shape, v->nd, v->shape, &nr, r))
    return 0;
  return numel_of(nr, r) <= NUMEL_MAX;
}

/* a second operand for a: itself, a broadcast-compatible tensor, a row or
 * column reduction of a, or a new input of a compatible shape */
static int second_operand(gen *g, int a, int need_exact) {
  const rp_val *av = V(g, a);
  int k = (int)pick(g->r, 10);
  if (k < 2)
    return a;
  if (k < 6) {
    bin_ctx ctx = {av, need_exact};
    int b = pick_val(g, pred_bin, &ctx);
    if (b >= 0)
      return b;
  }
  int nd = av->nd;
  int64_t shape[4];
  memcpy(shape, av->shape, sizeof shape);
  int kind = (int)pick(g->r, 5);
  if (kind == 0 && nd >= 1)
    shape[nd - 1] = 1; /* row vector [.., M, 1] */
  else if (kind == 1 && nd >= 2)
    shape[nd - 2] = 1;             /* column vector [.., 1, N] */
  else if (kind == 2 && nd >= 2) { /* fewer dims */
    int drop = 1 + (int)pick(g->r, (uint32_t)nd - 1);
    memmove(shape, shape + drop, (size_t)(nd - drop) * sizeof *shape);
    nd -= drop;
  } else if (kind == 3) {
    for (int d = 0; d < nd; d++)
      if (chance(g->r, 30))
        shape[d] = 1;
  }
  pto_dtype dt = is_float(av->dt) ? (chance(g->r, 80)   ? PTO_F32
                                     : chance(g->r, 50) ? PTO_BF16
                                                        : PTO_F16)
                                  : PTO_I32;
  return new_input(g, dt, nd, shape, 0, 0, 0);
}

static int do_binary(gen *g, int op, int a, int b) {
  const rp_val *av0 = V(g, a), *bv0 = V(g, b);
  if (!av0->special && !bv0->special && is_float(av0->dt)) {
    if (op == O_DIV)
      b = guard_pos(g, b, 0.25);
    if (op == O_MUL && mag(V(g, a)) * mag(V(g, b)) > 1e6) {
      a = guard_clamp(g, a, 64);
      b = guard_clamp(g, b, 64);
    }
  }
  rp_val av = *V(g, a), bv = *V(g, b);
  int nd;
  int64_t shape[4];
  if (!bcast(av.nd, av.shape, bv.nd, bv.shape, &nd, shape))
    return -1;
  pto_dtype dt = is_float(av.dt) ? PTO_F32 : PTO_I32;
  int out = new_val(g, dt, nd, shape);
  if (g->failed)
    return -1;
  int in[2] = {a, b};
  op_step(g, op, 2, in, out);
  rp_val *r = V(g, out);
  r->special = av.special || bv.special;
  double ma = mag(&av), mb = mag(&bv), ea = av.err, eb = bv.err;
  double p[4] = {av.lo * bv.lo, av.lo * bv.hi, av.hi * bv.lo, av.hi * bv.hi};
  int grid = 1;
  double err = 0;
  r->q = av.q > bv.q ? av.q : bv.q;
  switch (op) {
  case O_ADD:
    r->lo = av.lo + bv.lo;
    r->hi = av.hi + bv.hi;
    err = ea + eb;
    break;
  case O_SUB:
    r->lo = av.lo - bv.hi;
    r->hi = av.hi - bv.lo;
    err = ea + eb;
    break;
  case O_MUL:
    r->lo = fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
    r->hi = fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
    r->q = av.q + bv.q;
    err = ea * mb + eb * ma + ea * eb;
    break;
  case O_DIV:
    if (dt == PTO_I32) {
      r->lo = -fmax(ma, 0);
      r->hi = fmax(ma, 0);
      if (av.lo <= INT32_MIN)
        i32_clip(r);
      break;
    }
    grid = 0;
    r->lo = fmin(fmin(av.lo / bv.lo, av.lo / bv.hi),
                 fmin(av.hi / bv.lo, av.hi / bv.hi));
    r->hi = fmax(fmax(av.lo / bv.lo, av.lo / bv.hi),
                 fmax(av.hi / bv.lo, av.hi / bv.hi));
    err = (ea + fmax(fabs(r->lo), fabs(r->hi)) * eb) /
          (bv.lo - eb > 0 ? bv.lo - eb : 1e-30);
    break;
  case O_MAX:
    r->lo = fmax(av.lo, bv.lo);
    r->hi = fmax(av.hi, bv.hi);
    err = fmax(ea, eb);
    break;
  default: /* O_MIN */
    r->lo = fmin(av.lo, bv.lo);
    r->hi = fmin(av.hi, bv.hi);
    err = fmax(ea, eb);
    break;
  }
  if (dt == PTO_I32)
    i32_clip(r);
  settle(r, grid, 1, worst2(&av, &bv), err);
  return out;
}

static int gen_binary(gen *g) {
  static const int ops[] = {O_ADD, O_SUB, O_MUL, O_DIV, O_MAX, O_MIN};
  int op = PICK_OF(g->r, ops);
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  int b = second_operand(g, a, 0);
  if (g->failed)
    return 0;
  if (chance(g->r, 50)) {
    int t = a;
    a = b;
    b = t;
  }
  return do_binary(g, op, a, b) >= 0;
}

static int pred_exact(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return v->lvl != L_APPROX;
}

static int gen_cmp_select(gen *g) {
  int a = pick_val(g, pred_exact, NULL);
  if (a < 0)
    return 0;
  int b = second_operand(g, a, 1);
  if (g->failed)
    return 0;
  rp_val av = *V(g, a), bv = *V(g, b);
  int nd;
  int64_t shape[4];
  if (!bcast(av.nd, av.shape, bv.nd, bv.shape, &nd, shape))
    return 0;
  int m = new_val(g, PTO_I32, nd, shape);
  if (g->failed)
    return 0;
  int in[3] = {a, b, 0};
  rp_step *s = op_step(g, O_CMP, 2, in, m);
  s->a0 = (int)pick(g->r, PTO_CMP_MODE_COUNT);
  V(g, m)->lo = 0;
  V(g, m)->hi = 1;
  if (chance(g->r, 25))
    return 1;
  /* select between two tensors of one class, broadcast with the mask */
  int x = pick_val(g, NULL, NULL);
  if (x < 0)
    return 1;
  int y = second_operand(g, x, 0);
  if (g->failed)
    return 0;
  rp_val xv = *V(g, x), yv = *V(g, y), mv = *V(g, m);
  int nd2, nd3;
  int64_t s2[4], s3[4];
  if (!bcast(xv.nd, xv.shape, yv.nd, yv.shape, &nd2, s2) ||
      !bcast(nd2, s2, mv.nd, mv.shape, &nd3, s3) ||
      numel_of(nd3, s3) > NUMEL_MAX) {
    /* the mask alone does not broadcast: select with the mask's shape */
    x = m;
    y = chance(g->r, 50) ? m : new_input(g, PTO_I32, mv.nd, mv.shape, 0, 0, 0);
    xv = *V(g, x);
    yv = *V(g, y);
    nd3 = mv.nd;
    memcpy(s3, mv.shape, sizeof s3);
  }
  pto_dtype dt = is_float(xv.dt) ? PTO_F32 : PTO_I32;
  int out = new_val(g, dt, nd3, s3);
  if (g->failed)
    return 0;
  in[0] = m;
  in[1] = x;
  in[2] = y;
  op_step(g, O_SELECT, 3, in, out);
  rp_val *r = V(g, out);
  r->special = xv.special || yv.special;
  r->lo = fmin(xv.lo, yv.lo);
  r->hi = fmax(xv.hi, yv.hi);
  r->q = xv.q > yv.q ? xv.q : yv.q;
  r->lvl = worst2(&xv, &yv);
  r->err = fmax(xv.err, yv.err);
  if (r->dt == PTO_I32 || r->special) {
    r->lvl = L_EXACT;
    r->err = 0;
  }
  return 1;
}

static int gen_cast(gen *g) {
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  static const pto_dtype dts[] = {PTO_F32, PTO_I32, PTO_BF16, PTO_F16};
  pto_dtype to = PICK_OF(g->r, dts);
  rp_val *av = V(g, a);
  if (av->lvl == L_APPROX && to == PTO_I32)
    to = PTO_BF16; /* a rounding boundary may fall between the runs */
  if (to == PTO_F16 && !av->special && is_float(av->dt))
    a = guard_clamp(g, a, 60000);
  if (to == PTO_F16 && !is_float(av->dt) && mag(av) > 60000) {
    a = do_scalar(g, O_MINS, do_scalar(g, O_MAXS, a, -60000), 60000);
  }
  rp_val src = *V(g, a);
  int out = new_val(g, to, src.nd, src.shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_CAST, 1, &a, out);
  s->dt = to;
  rp_val *r = V(g, out);
  r->special = src.special && to != PTO_I32;
  r->lo = src.lo;
  r->hi = src.hi;
  r->q = src.q;
  if (to == PTO_I32) {
    r->lo = src.special ? INT32_MIN : fmax(nearbyint(src.lo), INT32_MIN);
    r->hi = src.special ? INT32_MAX : fmin(nearbyint(src.hi), INT32_MAX);
    r->lvl = L_EXACT;
    return 1;
  }
  if (r->special) {
    r->lvl = L_EXACT;
    return 1;
  }
  if (src.dt == PTO_I32) {
    r->q = 0;
    settle(r, 1, 1, L_GRID, 0);
    if (r->lvl != L_GRID) { /* an f32 of a big i32: EXACT */
      r->lvl = L_EXACT;
      r->err = 0;
    }
    return 1;
  }
  double m = mag(&src);
  if (to == PTO_F32 || (src.lvl == L_GRID && grid_fits(m, src.q, to))) {
    /* the values are representable: unchanged */
    r->lvl = src.lvl;
    r->err = src.err;
    return 1;
  }
  double rel = to == PTO_BF16 ? 0x1p-8 : 0x1p-11;
  double step = to == PTO_F16 ? 0x1p-24 : 0;
  r->lo = src.lo - rel * m - step;
  r->hi = src.hi + rel * m + step;
  if (src.lvl == L_APPROX) {
    r->lvl = L_APPROX;
    r->err = src.err + 2 * rel * (m + src.err) + 2 * step;
  } else {
    r->lvl = L_EXACT;
    r->err = 0;
  }
  return 1;
}

static int gen_reduce(gen *g) {
  static const int ops[] = {O_ROWSUM, O_ROWMAX, O_ROWMIN, O_COLSUM, O_COLMAX};
  int op = PICK_OF(g->r, ops);
  int col = op == O_COLSUM || op == O_COLMAX;
  int sum = op == O_ROWSUM || op == O_COLSUM;
  if (g->c->special && sum)
    op = col ? O_COLMAX : O_ROWMAX, sum = 0;
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  if (col && V(g, a)->nd < 2)
    return 0;
  rp_val av = *V(g, a);
  int64_t shape[4];
  memcpy(shape, av.shape, sizeof shape);
  int ax = av.nd - 1 - col;
  double n = (double)shape[ax];
  shape[ax] = 1;
  pto_dtype dt = is_float(av.dt) ? PTO_F32 : PTO_I32;
  int out = new_val(g, dt, av.nd, shape);
  if (g->failed)
    return 0;
  op_step(g, op, 1, &a, out);
  rp_val *r = V(g, out);
  if (!sum) {
    holds_values_of(r, &av);
    return 1;
  }
  r->special = av.special;
  r->q = av.q;
  r->lo = n * av.lo;
  r->hi = n * av.hi;
  r->zsign = 1; /* a sum of -0s: -0 or +0 by where it starts */
  if (dt == PTO_I32) {
    i32_clip(r);
    return 1;
  }
  double m = mag(&av);
  /* f32 sums in any order: (n + 1) u sum |x| each side, with margin */
  double err = n * av.err + 2 * (n + 2) * 0x1p-24 * n * (m + av.err);
  settle(r, 1, 0, av.lvl, err);
  return 1;
}

/* ---- matmul
 * ---------------------------------------------------------------------- */

typedef struct mm_ctx {
  int64_t K;
  int tb, nd_batch;
  const int64_t *batch; /* a's batch dims */
  int a_root, acc_excl;
} mm_ctx;

static int batch_ok(int na, const int64_t *a, int nb, const int64_t *b) {
  int nr;
  int64_t r[4];
  return bcast(na, a, nb, b, &nr, r);
}

static int pred_mm_b(gen *g, const rp_val *v, const void *ctx) {
  const mm_ctx *m = ctx;
  if (!is_float(v->dt) || v->special || v->nd < 2)
    return 0;
  if (g->c->sw.matmul_acc_alias && (V(g, v->root)->mm & 2))
    return 0;
  if (v->shape[v->nd - 2 + m->tb] != m->K)
    return 0;
  return batch_ok(m->nd_batch, m->batch, v->nd - 2, v->shape);
}

static int pred_mm_a(gen *g, const rp_val *v, const void *ctx) {
  (void)ctx;
  if (!is_float(v->dt) || v->special || v->nd < 2)
    return 0;
  return !(g->c->sw.matmul_acc_alias && (V(g, v->root)->mm & 2));
}

typedef struct acc_ctx {
  int nd;
  const int64_t *shape;
  int ra, rb;
} acc_ctx;

static int pred_acc(gen *g, const rp_val *v, const void *ctx) {
  const acc_ctx *a = ctx;
  if (v->dt != PTO_F32 || v->special || v->nd != a->nd)
    return 0;
  for (int d = 0; d < a->nd; d++)
    if (v->shape[d] != a->shape[d])
      return 0;
  if (g->c->sw.matmul_acc_alias &&
      (V(g, v->root)->mm || v->root == a->ra || v->root == a->rb))
    return 0;
  return 1;
}

static int view_transpose(gen *g, int t, int a0, int a1);

/* The matmul node a x b (+ acc) of result shape nd/shape and depth K, and
 * what is known of its values; the result's id, or -1. */
static int make_matmul(gen *g, int a, int b, int acc, unsigned flags, int nd,
                       const int64_t *shape, int64_t K) {
  rp_val av = *V(g, a), bv = *V(g, b);
  int with_acc = acc >= 0;
  int out = new_val(g, PTO_F32, nd, shape);
  if (g->failed)
    return -1;
  int in[3] = {a, b, acc};
  rp_step *s =
      op_step(g, with_acc ? O_MATMUL_ACC : O_MATMUL, with_acc ? 3 : 2, in, out);
  s->flags = flags;
  V(g, V(g, a)->root)->mm |= 1;
  V(g, V(g, b)->root)->mm |= 1;
  rp_val *r = V(g, out);
  r->zsign = 1;
  double p[4] = {av.lo * bv.lo, av.lo * bv.hi, av.hi * bv.lo, av.hi * bv.hi};
  double Kd = (double)K, ma = mag(&av), mb = mag(&bv);
  r->lo = Kd * fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
  r->hi = Kd * fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
  r->q = av.q + bv.q;
  int worst = worst2(&av, &bv);
  double S = Kd * ma * mb,
         err = Kd * (av.err * mb + bv.err * ma + av.err * bv.err);
  if (with_acc) {
    rp_val cv = *V(g, acc);
    V(g, cv.root)->mm |= 2;
    r->lo += cv.lo;
    r->hi += cv.hi;
    r->q = r->q > cv.q ? r->q : cv.q;
    worst = worst > cv.lvl ? worst : cv.lvl;
    S += mag(&cv);
    err += cv.err;
  }
  err += 2 * (Kd + 2) * 0x1p-24 * S;
  /* exact when every partial sum is on the grid: S 2^q <= 2^24 */
  int grid = worst == L_GRID && grid_fits(S, r->q, PTO_F32);
  settle(r, grid, 0, worst, err);
  return out;
}

static int gen_matmul(gen *g, int with_acc) {
  if (g->c->special)
    return 0;
  int a = pick_val(g, pred_mm_a, NULL);
  if (a < 0) {
    int64_t shape[2] = {g->dims[pick(g->r, (uint32_t)g->n_dims)],
                        g->dims[pick(g->r, (uint32_t)g->n_dims)]};
    a = new_input(g, chance(g->r, 70) ? PTO_F32 : PTO_BF16, 2, shape, 0, 0, 0);
    if (g->failed)
      return 0;
  }
  unsigned flags = (chance(g->r, 25) ? PTO_MATMUL_TRANS_A : 0) |
                   (chance(g->r, 25) ? PTO_MATMUL_TRANS_B : 0);
  int ta = (flags & PTO_MATMUL_TRANS_A) != 0,
      tb = (flags & PTO_MATMUL_TRANS_B) != 0;
  rp_val av = *V(g, a);
  int64_t M = av.shape[av.nd - 2 + ta], K = av.shape[av.nd - 1 - ta];
  int b = -1;
  int k = (int)pick(g->r, 10);
  int64_t kb_self = av.shape[av.nd - 2 + tb];
  if (k < 2 && kb_self == K)
    b = a; /* a x a^T, a^T x a or a square a x a */
  else if (k < 7) {
    mm_ctx ctx = {K, tb, av.nd - 2, av.shape, av.root, 0};
    b = pick_val(g, pred_mm_b, &ctx);
  }
  if (b < 0 && k == 7) { /* a transposed view of something with K last */
    for (int i = g->c->n_vals - 1; i >= 0 && b < 0; i--) {
      const rp_val *v = V(g, i);
      if (v->lvl != L_NOUSE && is_float(v->dt) && !v->special && v->nd == 2 &&
          v->shape[1 - tb] == K &&
          !(g->c->sw.matmul_acc_alias && (V(g, v->root)->mm & 2)))
        b = view_transpose(g, i, 0, 1);
    }
  }
  if (b < 0) {
    int64_t N = g->dims[pick(g->r, (uint32_t)g->n_dims)];
    int nd = 2;
    int64_t shape[4];
    if (av.nd > 2 && chance(g->r, 30)) { /* batch dims of its own */
      nd = av.nd;
      for (int d = 0; d < nd - 2; d++)
        shape[d] = chance(g->r, 30) ? 1 : av.shape[d];
    }
    shape[nd - 2] = tb ? N : K;
    shape[nd - 1] = tb ? K : N;
    static const pto_dtype dts[] = {PTO_F32, PTO_F32, PTO_F32, PTO_BF16,
                                    PTO_F16};
    b = new_input(g, PICK_OF(g->r, dts), nd, shape, 0, 0, 0);
    if (g->failed)
      return 0;
  }
  rp_val bv = *V(g, b);
  int64_t N = bv.shape[bv.nd - 1 - tb];
  int nd;
  int64_t shape[4];
  if (!bcast(av.nd - 2, av.shape, bv.nd - 2, bv.shape, &nd, shape))
    return 0;
  shape[nd] = M;
  shape[nd + 1] = N;
  nd += 2;
  int64_t batch = numel_of(nd - 2, shape);
  if (numel_of(nd, shape) > NUMEL_MAX || batch * M * N * K > MM_COST_MAX)
    return 0;
  /* keep sums small enough to stay exact often */
  if (mag(&av) * mag(&bv) * (double)K > 1e7) {
    a = guard_clamp(g, a, 4);
    b = a == b ? a : guard_clamp(g, b, 4);
    av = *V(g, a);
    bv = *V(g, b);
  }
  int acc = -1;
  if (with_acc) {
    acc_ctx ac = {nd, shape, av.root, bv.root};
    int kk = (int)pick(g->r, 10);
    if (kk < 5)
      acc = pick_val(g, pred_acc, &ac);
    if (acc < 0 && kk == 5 && nd == 2) { /* a transposed view */
      for (int i = g->c->n_vals - 1; i >= 0 && acc < 0; i--) {
        const rp_val *v = V(g, i);
        if (v->lvl != L_NOUSE && v->dt == PTO_F32 && !v->special &&
            v->nd == 2 && v->shape[0] == N && v->shape[1] == M &&
            !(g->c->sw.matmul_acc_alias &&
              (V(g, v->root)->mm || v->root == av.root || v->root == bv.root)))
          acc = view_transpose(g, i, 0, 1);
      }
    }
    if (acc < 0)
      acc = new_input(g, PTO_F32, nd, shape, 0, 0, 0);
    if (g->failed)
      return 0;
    if (mag(V(g, acc)) > 1e4)
      acc = guard_clamp(g, acc, 16);
  }
  return make_matmul(g, a, b, acc, flags, nd, shape, K) >= 0;
}

/* Cube and vector work interleaved, as attention is: A = X x X on the
 * cube, R = f(X) on the vector cores, then a cube op reading R and A
 * (R as its accumulator) and a vector op reading R and A. Fusion must not
 * join these into clusters waiting on each other (known bug 2). */
static int gen_motif(gen *g) {
  if (g->c->special)
    return 0;
  int64_t n = g->dims[pick(g->r, (uint32_t)g->n_dims)];
  n = n > 64 ? 64 : n;
  int x = new_input(g, PTO_F32, 2, (const int64_t[]){n, n}, 0, 0, 0);
  if (g->failed)
    return 0;
  x = guard_clamp(g, x, 2);
  int64_t shape[2] = {n, n};
  int A = make_matmul(g, x, x, -1, 0, 2, shape, n);
  if (A < 0)
    return 0;
  static const int un[] = {O_EXP, O_ABS, O_NEG, O_RELU, O_SQRT};
  int R = do_unary(g, PICK_OF(g->r, un), x);
  if (chance(g->r, 50) || V(g, R)->mm) {
    if (make_matmul(g, R, A, -1, 0, 2, shape, n) < 0)
      return 0;
  } else if (make_matmul(g, A, x, R, 0, 2, shape, n) < 0) {
    return 0;
  }
  static const int bin[] = {O_ADD, O_SUB, O_MUL, O_MAX};
  return do_binary(g, PICK_OF(g->r, bin), R, A) >= 0;
}

/* ---- composites and data movement
 * ------------------------------------------------ */

static int gen_softmax(gen *g) {
  if (g->c->special)
    return 0;
  int a = pick_val(g, pred_float, NULL);
  if (a < 0)
    return 0;
  rp_val av = *V(g, a);
  int out = new_val(g, PTO_F32, av.nd, av.shape);
  if (g->failed)
    return 0;
  op_step(g, O_SOFTMAX, 1, &a, out);
  rp_val *r = V(g, out);
  double n = (double)av.shape[av.nd - 1];
  r->lo = 0;
  r->hi = 1;
  r->lvl = L_APPROX;
  r->err = expm1(4 * av.err) + (n + 8) * 0x1p-21;
  return 1;
}

static int gen_topk(gen *g) {
  int a = pick_val(g, pred_float, NULL);
  if (a < 0)
    return 0;
  rp_val av = *V(g, a);
  int64_t last = av.shape[av.nd - 1];
  int64_t k = chance(g->r, 20)
                  ? last
                  : 1 + (int64_t)pick(g->r, (uint32_t)(last < 40 ? last : 40));
  int64_t shape[4];
  memcpy(shape, av.shape, sizeof shape);
  shape[av.nd - 1] = k;
  int out = new_val(g, PTO_F32, av.nd, shape);
  int idx = new_val(g, PTO_I32, av.nd, shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_TOPK, 1, &a, out);
  s->out2 = idx;
  s->ival = k;
  holds_values_of(V(g, out), &av);
  rp_val *ri = V(g, idx);
  ri->lo = 0;
  ri->hi = (double)(last - 1);
  ri->lvl = av.lvl == L_APPROX ? L_NOUSE : L_EXACT; /* ties may swap */
  return 1;
}

static int pred_table(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return v->nd == 2;
}
static int pred_index(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  const int64_t *D = ctx;
  return v->dt == PTO_I32 && v->nd <= 3 &&
         numel_of(v->nd, v->shape) * *D <= NUMEL_MAX;
}

static int gen_gather(gen *g) {
  int t = pick_val(g, pred_table, NULL);
  if (t < 0) {
    int64_t shape[2] = {g->dims[pick(g->r, (uint32_t)g->n_dims)],
                        g->dims[pick(g->r, (uint32_t)g->n_dims)]};
    t = new_input(g, rand_dtype(g), 2, shape, 0, 0, 0);
    if (g->failed)
      return 0;
  }
  rp_val tv = *V(g, t);
  int64_t N = tv.shape[0], D = tv.shape[1];
  unsigned flags = chance(g->r, 30) ? PTO_GATHER_STRICT : 0;
  int idx = -1;
  if (chance(g->r, 50))
    idx = pick_val(g, pred_index, &D);
  if (idx >= 0 && flags && (V(g, idx)->lo < 0 || V(g, idx)->hi >= (double)N) &&
      chance(g->r, 80))
    flags = 0; /* mostly: strict only when every index is in range */
  if (idx < 0) {
    int nd = 1 + (int)pick(g->r, 3);
    int64_t shape[3];
    for (int d = 0; d < nd; d++)
      shape[d] = d == nd - 1 ? 1 + (int64_t)pick(g->r, 40)
                             : 1 + (int64_t)pick(g->r, 4);
    while (numel_of(nd, shape) * D > NUMEL_MAX && shape[nd - 1] > 1)
      shape[nd - 1] /= 2;
    if (numel_of(nd, shape) * D > NUMEL_MAX)
      return 0;
    double lo = flags ? 0 : -2, hi = flags ? (double)N - 1 : (double)N + 1;
    idx = new_input(g, PTO_I32, nd, shape, 1, lo, hi);
    if (g->failed)
      return 0;
  }
  rp_val iv = *V(g, idx);
  int64_t shape[4];
  memcpy(shape, iv.shape, (size_t)iv.nd * sizeof *shape);
  shape[iv.nd] = D;
  int out = new_val(g, tv.dt, iv.nd + 1, shape);
  if (g->failed)
    return 0;
  int in[2] = {t, idx};
  rp_step *s = op_step(g, O_GATHER, 2, in, out);
  s->flags = flags;
  rp_val *r = V(g, out);
  r->special = tv.special;
  r->lo = fmin(tv.lo, 0);
  r->hi = fmax(tv.hi, 0);
  r->q = tv.q;
  r->lvl = tv.lvl;
  r->err = tv.err;
  return 1;
}

static int view_slice(gen *g, int t, int axis, int64_t b0, int64_t e0);

typedef struct cat_ctx {
  const rp_val *a;
  int ax;
} cat_ctx;

static int pred_cat(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  const cat_ctx *c = ctx;
  if (v->dt != c->a->dt || v->nd != c->a->nd)
    return 0;
  for (int d = 0; d < v->nd; d++)
    if (d != c->ax && v->shape[d] != c->a->shape[d])
      return 0;
  return 1;
}

static int gen_concat(gen *g) {
  int a = pick_val(g, NULL, NULL);
  if (a < 0)
    return 0;
  rp_val av = *V(g, a);
  int ax = (int)pick(g->r, (uint32_t)av.nd);
  int n = 1 + (int)pick(g->r, 4);
  int in[MAX_IN] = {a};
  for (int i = 1; i < n; i++) {
    int k = (int)pick(g->r, 4);
    int b = -1;
    if (k == 0)
      b = a;
    else if (k == 1) {
      cat_ctx cc = {&av, ax};
      b = pick_val(g, pred_cat, &cc);
    } else if (k == 2 && av.shape[ax] > 1) {
      int64_t b0 = (int64_t)pick(g->r, (uint32_t)av.shape[ax]);
      b = view_slice(g, a, ax, b0,
                     b0 + 1 +
                         (int64_t)pick(g->r, (uint32_t)(av.shape[ax] - b0)));
    }
    if (b < 0) {
      int64_t shape[4];
      memcpy(shape, av.shape, sizeof shape);
      shape[ax] = 1 + (int64_t)pick(g->r, 9);
      b = new_input(g, av.dt, av.nd, shape, 0, 0, 0);
    }
    if (g->failed)
      return 0;
    in[i] = b;
  }
  int64_t shape[4];
  memcpy(shape, av.shape, sizeof shape);
  shape[ax] = 0;
  rp_val rv = {0};
  rv.lo = INFINITY;
  rv.hi = -INFINITY;
  for (int i = 0; i < n; i++) {
    const rp_val *v = V(g, in[i]);
    shape[ax] += v->shape[ax];
    rv.lo = fmin(rv.lo, v->lo);
    rv.hi = fmax(rv.hi, v->hi);
    rv.q = v->q > rv.q ? v->q : rv.q;
    rv.lvl = v->lvl > rv.lvl ? v->lvl : rv.lvl;
    rv.err = fmax(rv.err, v->err);
    rv.special |= v->special;
  }
  if (numel_of(av.nd, shape) > NUMEL_MAX)
    return 0;
  int out = new_val(g, av.dt, av.nd, shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_CONCAT, n, in, out);
  s->a0 = chance(g->r, 20) ? ax - av.nd : ax;
  holds_values_of(V(g, out), &rv);
  return 1;
}

static int gen_fill(gen *g) {
  int nd;
  int64_t shape[4];
  rand_shape(g, &nd, shape);
  if (chance(g->r, 50)) {
    static const pto_dtype dts[] = {PTO_F32, PTO_I32, PTO_BF16, PTO_F16};
    pto_dtype dt = PICK_OF(g->r, dts);
    static const double vals[] = {0, 1, -2.5, 0.75, 3, -1, 0.5};
    double v = PICK_OF(g->r, vals);
    if (dt == PTO_I32)
      v = nearbyint(v);
    int out = new_val(g, dt, nd, shape);
    if (g->failed)
      return 0;
    rp_step *s = op_step(g, O_FULL, 0, NULL, out);
    s->dt = dt;
    s->nd = nd;
    memcpy(s->shape, shape, sizeof shape);
    s->scalar = v;
    rp_val *r = V(g, out);
    r->lo = r->hi = v;
    r->q = 2;
    r->lvl = L_GRID;
    return 1;
  }
  pto_dtype dt = chance(g->r, 50) ? PTO_I32 : PTO_F32;
  int64_t start = (int64_t)pick(g->r, 40) - 10;
  int out = new_val(g, dt, nd, shape);
  if (g->failed)
    return 0;
  rp_step *s = op_step(g, O_IOTA, 0, NULL, out);
  s->dt = dt;
  s->nd = nd;
  memcpy(s->shape, shape, sizeof shape);
  s->ival = start;
  rp_val *r = V(g, out);
  r->lo = (double)start;
  r->hi = (double)(start + shape[nd - 1] - 1);
  r->q = 0;
  r->lvl = L_GRID;
  return 1;
}

/* ---- views
 * ---------------------------------------------------------------------- */

static int view_of(gen *g, int t, int op) {
  rp_val tv = *V(g, t);
  int out = new_val(g, tv.dt, tv.nd, tv.shape);
  if (g->failed)
    return -1;
  rp_val *r = V(g, out);
  int keep_id_root = tv.root;
  *r = tv;
  r->root = keep_id_root;
  r->mm = 0;
  r->live = 0;
  op_step(g, op, 1, &t, out)->n_in = 1;
  g->c->n_ops--; /* views are not ops */
  return out;
}

static int view_slice(gen *g, int t, int axis, int64_t b0, int64_t e0) {
  rp_val tv = *V(g, t);
  int out = view_of(g, t, O_SLICE);
  if (out < 0)
    return -1;
  rp_step *s = &g->c->steps[g->c->n_steps - 1];
  rp_val *r = V(g, out);
  for (int d = 0; d < tv.nd; d++) {
    int64_t b = 0, e = tv.shape[d];
    if (d == axis) {
      b = b0;
      e = e0;
    } else if (axis < 0 && chance(g->r, 60) && e > 1) {
      b = (int64_t)pick(g->r, (uint32_t)e);
      e = b + 1 + (int64_t)pick(g->r, (uint32_t)(e - b));
    }
    s->shape[d] = b;
    s->end[d] = e;
    r->off += b * tv.stride[d];
    r->shape[d] = e - b;
  }
  s->nd = tv.nd;
  return out;
}

static int view_transpose(gen *g, int t, int a0, int a1) {
  rp_val tv = *V(g, t);
  int out = view_of(g, t, O_TRANSPOSE);
  if (out < 0)
    return -1;
  rp_step *s = &g->c->steps[g->c->n_steps - 1];
  int x0 = a0 < 0 ? a0 + tv.nd : a0, x1 = a1 < 0 ? a1 + tv.nd : a1;
  s->a0 = a0;
  s->a1 = a1;
  rp_val *r = V(g, out);
  r->shape[x0] = tv.shape[x1];
  r->shape[x1] = tv.shape[x0];
  r->stride[x0] = tv.stride[x1];
  r->stride[x1] = tv.stride[x0];
  return out;
}

static int contiguous(const rp_val *v) {
  int64_t s = 1;
  for (int i = v->nd - 1; i >= 0; i--) {
    if (v->shape[i] != 1 && v->stride[i] != s)
      return 0;
    s *= v->shape[i];
  }
  return 1;
}

static int pred_contig(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return contiguous(v);
}

static int gen_view(gen *g) {
  int k = (int)pick(g->r, 3);
  if (k == 0) {
    int t = pick_val(g, NULL, NULL);
    return t >= 0 && view_slice(g, t, -1, 0, 0) >= 0;
  }
  if (k == 1) {
    int t = pick_val(g, NULL, NULL);
    if (t < 0)
      return 0;
    int nd = V(g, t)->nd;
    int a0 = (int)pick(g->r, (uint32_t)nd), a1 = (int)pick(g->r, (uint32_t)nd);
    if (chance(g->r, 20))
      a0 -= nd;
    if (nd >= 2 && a0 == a1 && chance(g->r, 80))
      a1 = (a1 + 1) % nd;
    return view_transpose(g, t, a0, a1) >= 0;
  }
  int t = pick_val(g, pred_contig, NULL);
  if (t < 0)
    return 0;
  rp_val tv = *V(g, t);
  int64_t n = numel_of(tv.nd, tv.shape), rem = n;
  int nd = 1 + (int)pick(g->r, 4);
  int64_t shape[4];
  for (int d = 0; d < nd - 1; d++) {
    int64_t divs[64];
    int nv = 0;
    for (int64_t x = 1; x * x <= rem && nv < 62; x++)
      if (rem % x == 0) {
        divs[nv++] = x;
        if (x != rem / x)
          divs[nv++] = rem / x;
      }
    shape[d] = divs[pick(g->r, (uint32_t)nv)];
    rem /= shape[d];
  }
  shape[nd - 1] = rem;
  int out = view_of(g, t, O_RESHAPE);
  if (out < 0)
    return 0;
  rp_step *s = &g->c->steps[g->c->n_steps - 1];
  s->nd = nd;
  memcpy(s->shape, shape, sizeof shape);
  rp_val *r = V(g, out);
  r->nd = nd;
  memcpy(r->shape, shape, sizeof shape);
  int64_t st = 1;
  for (int i = nd - 1; i >= 0; i--) {
    r->stride[i] = st;
    st *= shape[i];
  }
  r->off = tv.off;
  return 1;
}

/* ---- scopes
 * ------------------------------------------------------------------------ */

static const uint32_t vec_rows[] = {0, 1, 2, 3, 4, 5, 8, 13, 16, 32, 64, 7};
static const uint32_t vec_cols[] = {0, 1, 3, 7, 8, 16, 31, 32, 64, 128, 5};
static const uint32_t cube_mn[] = {0, 0, 1, 6, 7, 12, 16, 13, 32, 48, 64};
static const uint32_t cube_k[] = {0, 0, 1, 5, 8, 16, 17, 32, 64};

static void rand_vec(gen *g, uint32_t *t) {
  t[0] = PICK_OF(g->r, vec_rows);
  t[1] = PICK_OF(g->r, vec_cols);
  int64_t big = 0;
  for (int i = 0; i < g->n_dims; i++)
    big = g->dims[i] > big ? g->dims[i] : big;
  if (t[0] && t[1] && t[0] * t[1] < 8 && big > 24 && chance(g->r, 60))
    t[1] = 32; /* a tiny tile over big tensors: many thousands of tiles */
  if (g->c->sw.slow_split_plan && t[0] && t[1] && t[0] * t[1] < 64 &&
      big > 32) {
    t[0] = t[0] < 4 ? 4 : t[0];   /* a subgraph of ~10^5 instructions that */
    t[1] = t[1] < 16 ? 16 : t[1]; /* overflows plans for minutes */
  }
}
static void rand_cube(gen *g, uint32_t *t) {
  t[0] = PICK_OF(g->r, cube_mn);
  t[1] = PICK_OF(g->r, cube_mn);
  t[2] = PICK_OF(g->r, cube_k);
}

static const char *const label_words[] = {"a", "b", "mm", "sm", "x"};

static void gen_scope(gen *g) {
  int k = (int)pick(g->r, 6);
  if (k == 0 && g->n_labels < 3) {
    rp_step *s = add_step(g, S_PUSH_LABEL);
    snprintf(s->name, sizeof s->name, "%s", PICK_OF(g->r, label_words));
    snprintf(g->labels[g->n_labels], sizeof g->labels[0], "%s%s%s",
             g->n_labels ? g->labels[g->n_labels - 1] : "",
             g->n_labels ? "." : "", s->name);
    g->n_labels++;
  } else if (k == 1 && g->n_labels) {
    add_step(g, S_POP_LABEL);
    g->n_labels--;
  } else if (k == 2 && g->n_tiles < 4) {
    rp_step *s = add_step(g, S_PUSH_TILE);
    s->has_tile = chance(g->r, 50);
    if (s->has_tile) {
      rand_vec(g, s->tile);
      rand_cube(g, s->tile + 2);
    }
    g->n_tiles++;
  } else if (k == 3 && g->n_tiles) {
    add_step(g, S_POP_TILE);
    g->n_tiles--;
  } else if (k == 4) {
    rand_vec(g, add_step(g, S_SET_VEC)->tile);
  } else {
    rand_cube(g, add_step(g, S_SET_CUBE)->tile);
  }
}

/* ---- liveness, outputs, config and runs
 * -------------------------------------- */

static void mark_live(rp_case *c) {
  for (int i = 0; i < c->n_vals; i++)
    c->vals[i].live = 0;
  for (int i = c->n_steps - 1; i >= 0; i--) {
    rp_step *s = &c->steps[i];
    if (s->kind == S_OUTPUT) {
      c->vals[s->in[0]].live = 1;
      continue;
    }
    if (s->kind != S_OP)
      continue;
    int live = c->vals[s->out].live || (s->out2 >= 0 && c->vals[s->out2].live);
    /* a root's producer is needed when any view of it is */
    for (int v = 0; v < c->n_vals && !live; v++)
      if (c->vals[v].live && c->vals[v].root == s->out)
        live = 1;
    if (!live)
      continue;
    c->vals[s->out].live = 1;
    for (int k = 0; k < s->n_in; k++)
      c->vals[s->in[k]].live = 1;
  }
}

static int step_live(const rp_case *c, const rp_step *s) {
  return s->kind == S_OP &&
         (c->vals[s->out].live || (s->out2 >= 0 && c->vals[s->out2].live));
}

/* Every label a step of c carries (live_only: a live op), and each of its
 * prefixes, into set (96 bytes each, cap at the most); how many. */
static int case_labels(const rp_case *c, int live_only, char (*set)[96],
                       int cap) {
  int n = 0;
  for (int i = 0; i < c->n_steps; i++) {
    if (live_only && !step_live(c, &c->steps[i]))
      continue;
    char buf[96];
    snprintf(buf, sizeof buf, "%s", c->steps[i].label);
    while (buf[0]) {
      int dup = 0;
      for (int j = 0; j < n && !dup; j++)
        dup = strcmp(set[j], buf) == 0;
      if (!dup && n < cap)
        memcpy(set[n++], buf, sizeof buf);
      char *dot = strrchr(buf, '.');
      if (!dot)
        break;
      *dot = 0;
    }
  }
  return n;
}

static void gen_outputs(gen *g) {
  rp_case *c = g->c;
  int n = 1 + (int)pick(g->r, 3);
  int last = -1;
  for (int i = c->n_vals - 1; i >= 0 && last < 0; i--)
    if (c->vals[i].lvl != L_NOUSE)
      last = i;
  /* most leaves (results nothing reads) too, so that few ops are dead */
  uint8_t *read = calloc((size_t)c->n_vals + 1, 1);
  if (!read)
    abort();
  for (int i = 0; i < c->n_steps; i++)
    for (int k = 0; k < c->steps[i].n_in; k++)
      read[c->steps[i].in[k]] = 1;
  int leaves[MAX_VALS], n_leaves = 0;
  for (int i = 0; i < c->n_vals; i++)
    if (!read[i] && i != last && c->vals[i].lvl != L_NOUSE &&
        c->vals[i].root == i && chance(g->r, 75))
      leaves[n_leaves++] = i;
  free(read);
  n += n_leaves < 6 ? n_leaves : 6;
  for (int k = 0; k < n; k++) {
    int t = k == 0                    ? last
            : k <= n_leaves && k <= 6 ? leaves[n_leaves - k]
                                      : pick_val(g, NULL, NULL);
    if (t < 0)
      continue;
    rp_step *s = add_step(g, S_OUTPUT);
    s->in[0] = t;
    s->n_in = 1;
    snprintf(s->name, sizeof s->name, "out%d", g->output_seq++);
  }
}

static void gen_config(gen *g) {
  rp_case *c = g->c;
  rp_cfg *f = &c->cfg;
  memset(f, 0, sizeof *f);
  int k = (int)pick(g->r, 10);
  f->mode = k == 0 ? CFG_NULL : k < 6 ? CFG_API : CFG_JSON;
  if (f->mode == CFG_NULL)
    return;
  k = (int)pick(g->r, 10);
  f->machine = k < 4 ? M_HOST : k < 7 ? M_ASCEND : M_CUSTOM;
  if (f->machine == M_CUSTOM) {
    static const uint64_t mems[] = {1 << 10,   4 << 10,   16 << 10,  32 << 10,
                                    64 << 10,  128 << 10, 192 << 10, 256 << 10,
                                    512 << 10, 1 << 20,   4 << 20};
    f->shared = chance(g->r, 40);
    f->workers[0] = 1 + pick(g->r, chance(g->r, 70) ? 4 : 64);
    f->workers[1] =
        f->shared ? f->workers[0] : 1 + pick(g->r, chance(g->r, 70) ? 8 : 128);
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
      f->mem[l] = mems[3 + pick(g->r, 8)];
    if (chance(g->r, 15))
      f->mem[pick(g->r, PTO_MEM_LEVEL_COUNT)] = PICK_OF(g->r, mems);
  }
  static const int64_t nbuf[] = {0, 0, 0, 1, 2, 3, 7, 64, 65536};
  static const int64_t reuse[] = {1, 1, 1, 2, 3, 4, 8, 32, 65536};
  if (chance(g->r, 50)) {
    f->knob_set |= 1 << PTO_KNOB_NBUFFER;
    f->knob[PTO_KNOB_NBUFFER] = PICK_OF(g->r, nbuf);
  }
  int reuse_ok = !(c->from_bytes && c->sw.l1_reuse_hang);
  if (chance(g->r, 40) && reuse_ok) {
    f->knob_set |= 1 << PTO_KNOB_L1_REUSE;
    f->knob[PTO_KNOB_L1_REUSE] = PICK_OF(g->r, reuse);
  }
  if (chance(g->r, 40)) {
    f->knob_set |= 1 << PTO_KNOB_POLICY;
    f->knob[PTO_KNOB_POLICY] = pick(g->r, 3);
  }
  if (chance(g->r, 40)) {
    f->knob_set |= 1 << PTO_KNOB_FUSE;
    f->knob[PTO_KNOB_FUSE] = chance(g->r, 60);
  }
  /* label overrides, only for labels some live op carries (or a prefix) */
  char cands[64][96];
  int n_c = case_labels(c, 1, cands, 60);
  int n = n_c ? (int)pick(g->r, 4) : 0;
  for (int i = 0; i < n; i++) {
    rp_label_cfg *l = &f->labels[f->n_labels];
    memset(l, 0, sizeof *l);
    memcpy(l->label, cands[pick(g->r, (uint32_t)n_c)], sizeof l->label);
    int dup = 0;
    for (int j = 0; j < f->n_labels; j++)
      dup |= strcmp(f->labels[j].label, l->label) == 0;
    if (dup)
      continue;
    f->n_labels++;
    if (chance(g->r, 40)) {
      l->knob_set |= 1 << PTO_KNOB_NBUFFER;
      l->knob[PTO_KNOB_NBUFFER] = PICK_OF(g->r, nbuf);
    }
    if (chance(g->r, 30) && reuse_ok) {
      l->knob_set |= 1 << PTO_KNOB_L1_REUSE;
      l->knob[PTO_KNOB_L1_REUSE] = PICK_OF(g->r, reuse);
    }
    if (chance(g->r, 30)) {
      l->knob_set |= 1 << PTO_KNOB_FUSE;
      l->knob[PTO_KNOB_FUSE] = chance(g->r, 50);
    }
    int both = f->mode == CFG_API; /* pto_config_set_tile sets both parts */
    l->vec_set = both || chance(g->r, 50);
    l->cube_set = both || chance(g->r, 40);
    if (both && chance(g->r, 30)) {
      l->vec_set = l->cube_set = 0;
    }
    if (l->vec_set)
      rand_vec(g, l->vec);
    if (l->cube_set)
      rand_cube(g, l->cube);
  }
}

static void gen_runs(gen *g) {
  rp_case *c = g->c;
  c->n_rts = 1 + (int)pick(g->r, 2);
  for (int i = 0; i < c->n_rts; i++) {
    rp_rt_spec *r = &c->rts[i];
    r->shared = chance(g->r, 50);
    r->variant = (int)pick(g->r, 3);
    r->policy = (int)pick(g->r, PTO_POLICY_COUNT);
    r->repeat = chance(g->r, 15);
  }
}

static void gen_case(gen *g) {
  rp_case *c = g->c;
  static const int64_t dim_pool[] = {1,   2,   3,   4,   5,  7,  8,  9,  13, 16,
                                     17,  24,  31,  32,  33, 48, 63, 64, 65, 96,
                                     100, 127, 128, 129, 6,  11, 12, 20, 37};
  c->special = chance(g->r, 6);
  g->n_dims = 3 + (int)pick(g->r, 3);
  int small = chance(g->r, 50);
  for (int i = 0; i < g->n_dims; i++) {
    g->dims[i] = dim_pool[pick(
        g->r, small ? 16 : (uint32_t)(sizeof dim_pool / sizeof dim_pool[0]))];
  }
  int n_in = 1 + (int)pick(g->r, 3);
  for (int i = 0; i < n_in && !g->failed; i++)
    rand_input(g);
  int n_ops = 1 + (int)pick(g->r, chance(g->r, 40) ? 40 : 14);
  int tries = 0;
  while (c->n_ops < n_ops && !g->failed && tries++ < 4 * n_ops + 8) {
    int k = (int)pick(g->r, 100);
    if (k < 9)
      gen_scope(g);
    else if (k < 28)
      gen_binary(g);
    else if (k < 36)
      gen_scalar_op(g);
    else if (k < 46)
      gen_unary(g);
    else if (k < 50)
      gen_cast(g);
    else if (k < 55)
      gen_cmp_select(g);
    else if (k < 63)
      gen_reduce(g);
    else if (k < 70)
      gen_matmul(g, 0);
    else if (k < 74)
      gen_matmul(g, 1);
    else if (k < 76)
      gen_softmax(g);
    else if (k < 79)
      gen_topk(g);
    else if (k < 82)
      gen_gather(g);
    else if (k < 85)
      gen_concat(g);
    else if (k < 87)
      gen_fill(g);
    else if (k < 97)
      gen_view(g);
    else if (k < 98 || chance(g->r, g->c->sw.fusion_cycle ? 75 : 0))
      rand_input(g);
    else
      gen_motif(g);
  }
  g->failed = 0;
  gen_outputs(g);
  mark_live(c);
  if (c->sw.dead_strict_gather)
    for (int i = 0; i < c->n_steps; i++) {
      rp_step *s = &c->steps[i];
      const rp_val *idx =
          s->kind == S_OP && s->op == O_GATHER ? &c->vals[s->in[1]] : NULL;
      if (idx && !step_live(c, s) &&
          (idx->lo < 0 || idx->hi >= (double)c->vals[s->in[0]].shape[0]))
        s->flags &=
            ~(unsigned)PTO_GATHER_STRICT; /* eval would fail, compiled not */
    }
  gen_config(g);
  gen_runs(g);
  if (!c->sw.huge_shapes && chance(g->r, 10))
    c->huge = 1 + (int)pick(g->r, 5);
}

static void prune(rp_case *c);

static rp_case *generate(rp_src *r, uint64_t seed, const rp_switches *sw) {
  rp_case *c = calloc(1, sizeof *c);
  if (!c)
    abort();
  c->seed = seed;
  c->from_bytes = r->bytes;
  c->sw = sw ? *sw : rp_switches_default();
  gen g;
  memset(&g, 0, sizeof g);
  g.c = c;
  g.r = r;
  gen_case(&g);
  if (c->sw.dead_op_store)
    prune(c); /* no dead ops: they may make a live tensor lose its storage */
  c->seed = seed; /* inputs drew their fill seeds from it */
  return c;
}

rp_case *rp_generate(uint64_t seed, const rp_switches *sw) {
  rp_src r = {seed * 0x2545f4914f6cdd1dull + 1, NULL, 0, 0, 0};
  return generate(&r, seed, sw);
}

rp_case *rp_generate_bytes(const uint8_t *data, size_t size,
                           const rp_switches *sw) {
  rp_src r = {0, data, size, 0, 1};
  return generate(&r, 0, sw);
}

/* ---- building and printing
 * ------------------------------------------------------ */

static const char *dt_c(pto_dtype dt) {
  static const char *names[] = {"PTO_F32", "PTO_I32", "PTO_BF16", "PTO_F16"};
  return (unsigned)dt < 4 ? names[dt] : "?";
}

static void print_shape(FILE *o, int nd, const int64_t *s) {
  fprintf(o, "(const int64_t[]){");
  for (int i = 0; i < nd; i++)
    fprintf(o, "%s%" PRId64, i ? ", " : "", s[i]);
  fprintf(o, "}");
}

/* Builds the program into p (tensors into T) or, with o non-NULL, prints
 * the same calls as C. */
static void emit_program(const rp_case *c, pto_program *p, pto_tensor **T,
                         FILE *o) {
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    const int *in = s->in;
    switch (s->kind) {
    case S_INPUT:
      if (o) {
        fprintf(o, "  t[%d] = pto_input(p, \"%s\", %s, %d, ", s->out, s->name,
                dt_c(s->dt), s->nd);
        print_shape(o, s->nd, s->shape);
        fprintf(o, ");\n");
      } else
        T[s->out] = pto_input(p, s->name, s->dt, s->nd, s->shape);
      break;
    case S_OUTPUT:
      if (o)
        fprintf(o, "  pto_output(p, t[%d], \"%s\");\n", in[0], s->name);
      else
        pto_output(p, T[in[0]], s->name);
      break;
    case S_PUSH_LABEL:
      if (o)
        fprintf(o, "  pto_program_push_label(p, \"%s\");\n", s->name);
      else
        pto_program_push_label(p, s->name);
      break;
    case S_POP_LABEL:
      if (o)
        fprintf(o, "  pto_program_pop_label(p);\n");
      else
        pto_program_pop_label(p);
      break;
    case S_PUSH_TILE:
      if (o && s->has_tile)
        fprintf(o,
                "  pto_program_push_tile(p, &(pto_tile_shape){%u, %u, %u, %u, "
                "%u});\n",
                s->tile[0], s->tile[1], s->tile[2], s->tile[3], s->tile[4]);
      else if (o)
        fprintf(o, "  pto_program_push_tile(p, NULL);\n");
      else {
        pto_tile_shape ts = {s->tile[0], s->tile[1], s->tile[2], s->tile[3],
                             s->tile[4]};
        pto_program_push_tile(p, s->has_tile ? &ts : NULL);
      }
      break;
    case S_POP_TILE:
      if (o)
        fprintf(o, "  pto_program_pop_tile(p);\n");
      else
        pto_program_pop_tile(p);
      break;
    case S_SET_VEC:
      if (o)
        fprintf(o, "  pto_program_set_vec_tile(p, %u, %u);\n", s->tile[0],
                s->tile[1]);
      else
        pto_program_set_vec_tile(p, s->tile[0], s->tile[1]);
      break;
    case S_SET_CUBE:
      if (o)
        fprintf(o, "  pto_program_set_cube_tile(p, %u, %u, %u);\n", s->tile[0],
                s->tile[1], s->tile[2]);
      else
        pto_program_set_cube_tile(p, s->tile[0], s->tile[1], s->tile[2]);
      break;
    case S_OP:
      break;
    }
    if (s->kind != S_OP)
      continue;
    int op = s->op;
    if (o && op != O_SLICE && op != O_RESHAPE && op != O_TRANSPOSE) {
      const rp_val *v = &c->vals[s->out];
      static const char *const lv[] = {"grid", "exact", "approx", "unused"};
      fprintf(o, "  /* %s%s", v->special ? "special " : "", lv[v->lvl]);
      if (v->lvl == L_GRID)
        fprintf(o, " 2^-%d", v->q);
      if (v->lvl == L_APPROX)
        fprintf(o, " +-%.3g", v->err);
      if (!v->special)
        fprintf(o, " in [%.6g, %.6g]", v->lo, v->hi);
      fprintf(o, " */\n");
    }
    if (o)
      fprintf(o, "  t[%d] = ", s->out);
    pto_tensor *r = NULL;
    switch (op) {
#define BIN(OP, fn)                                                            \
  case OP:                                                                     \
    if (o)                                                                     \
      fprintf(o, #fn "(p, t[%d], t[%d]);\n", in[0], in[1]);                    \
    else                                                                       \
      r = fn(p, T[in[0]], T[in[1]]);                                           \
    break;
      BIN(O_ADD, pto_add)
      BIN(O_SUB, pto_sub)
      BIN(O_MUL, pto_mul)
      BIN(O_DIV, pto_div)
      BIN(O_MAX, pto_max)
      BIN(O_MIN, pto_min)
#undef BIN
#define SCL(OP, fn)                                                            \
  case OP:                                                                     \
    if (o)                                                                     \
      fprintf(o, #fn "(p, t[%d], %.17g);\n", in[0], s->scalar);                \
    else                                                                       \
      r = fn(p, T[in[0]], s->scalar);                                          \
    break;
      SCL(O_ADDS, pto_adds)
      SCL(O_SUBS, pto_subs)
      SCL(O_MULS, pto_muls)
      SCL(O_DIVS, pto_divs)
      SCL(O_MAXS, pto_maxs)
      SCL(O_MINS, pto_mins)
#undef SCL
#define UN(OP, fn)                                                             \
  case OP:                                                                     \
    if (o)                                                                     \
      fprintf(o, #fn "(p, t[%d]);\n", in[0]);                                  \
    else                                                                       \
      r = fn(p, T[in[0]]);                                                     \
    break;
      UN(O_EXP, pto_exp)
      UN(O_LOG, pto_log)
      UN(O_SQRT, pto_sqrt)
      UN(O_RSQRT, pto_rsqrt)
      UN(O_RECIP, pto_recip)
      UN(O_RELU, pto_relu)
      UN(O_ABS, pto_abs)
      UN(O_NEG, pto_neg)
      UN(O_ROWSUM, pto_rowsum)
      UN(O_ROWMAX, pto_rowmax)
      UN(O_ROWMIN, pto_rowmin)
      UN(O_COLSUM, pto_colsum)
      UN(O_COLMAX, pto_colmax)
      UN(O_SOFTMAX, pto_softmax)
#undef UN
    case O_CAST:
      if (o)
        fprintf(o, "pto_cast(p, t[%d], %s);\n", in[0], dt_c(s->dt));
      else
        r = pto_cast(p, T[in[0]], s->dt);
      break;
    case O_CMP:
      if (o)
        fprintf(o, "pto_cmp(p, t[%d], t[%d], (pto_cmp_mode)%d);\n", in[0],
                in[1], s->a0);
      else
        r = pto_cmp(p, T[in[0]], T[in[1]], (pto_cmp_mode)s->a0);
      break;
    case O_SELECT:
      if (o)
        fprintf(o, "pto_select(p, t[%d], t[%d], t[%d]);\n", in[0], in[1],
                in[2]);
      else
        r = pto_select(p, T[in[0]], T[in[1]], T[in[2]]);
      break;
    case O_MATMUL:
      if (o)
        fprintf(o, "pto_matmul(p, t[%d], t[%d], %u);\n", in[0], in[1],
                s->flags);
      else
        r = pto_matmul(p, T[in[0]], T[in[1]], s->flags);
      break;
    case O_MATMUL_ACC:
      if (o)
        fprintf(o, "pto_matmul_acc(p, t[%d], t[%d], t[%d], %u);\n", in[2],
                in[0], in[1], s->flags);
      else
        r = pto_matmul_acc(p, T[in[2]], T[in[0]], T[in[1]], s->flags);
      break;
    case O_TOPK:
      if (o)
        fprintf(o, "pto_topk(p, t[%d], %" PRId64 ", &t[%d]);\n", in[0], s->ival,
                s->out2);
      else
        r = pto_topk(p, T[in[0]], s->ival, &T[s->out2]);
      break;
    case O_GATHER:
      if (o)
        fprintf(o, "pto_gather(p, t[%d], t[%d], %u);\n", in[0], in[1],
                s->flags);
      else
        r = pto_gather(p, T[in[0]], T[in[1]], s->flags);
      break;
    case O_CONCAT:
      if (o) {
        fprintf(o, "pto_concat(p, %d, (pto_tensor *const[]){", s->n_in);
        for (int k = 0; k < s->n_in; k++)
          fprintf(o, "%st[%d]", k ? ", " : "", in[k]);
        fprintf(o, "}, %d);\n", s->a0);
      } else {
        pto_tensor *ts[MAX_IN];
        for (int k = 0; k < s->n_in; k++)
          ts[k] = T[in[k]];
        r = pto_concat(p, s->n_in, ts, s->a0);
      }
      break;
    case O_FULL:
      if (o) {
        fprintf(o, "pto_full(p, %s, %d, ", dt_c(s->dt), s->nd);
        print_shape(o, s->nd, s->shape);
        fprintf(o, ", %.17g);\n", s->scalar);
      } else
        r = pto_full(p, s->dt, s->nd, s->shape, s->scalar);
      break;
    case O_IOTA:
      if (o) {
        fprintf(o, "pto_iota(p, %s, %d, ", dt_c(s->dt), s->nd);
        print_shape(o, s->nd, s->shape);
        fprintf(o, ", %" PRId64 ");\n", s->ival);
      } else
        r = pto_iota(p, s->dt, s->nd, s->shape, s->ival);
      break;
    case O_SLICE:
      if (o) {
        fprintf(o, "pto_slice(p, t[%d], ", in[0]);
        print_shape(o, s->nd, s->shape);
        fprintf(o, ", ");
        print_shape(o, s->nd, s->end);
        fprintf(o, ");\n");
      } else
        r = pto_slice(p, T[in[0]], s->shape, s->end);
      break;
    case O_RESHAPE:
      if (o) {
        fprintf(o, "pto_reshape(p, t[%d], %d, ", in[0], s->nd);
        print_shape(o, s->nd, s->shape);
        fprintf(o, ");\n");
      } else
        r = pto_reshape(p, T[in[0]], s->nd, s->shape);
      break;
    case O_TRANSPOSE:
      if (o)
        fprintf(o, "pto_transpose(p, t[%d], %d, %d);\n", in[0], s->a0, s->a1);
      else
        r = pto_transpose(p, T[in[0]], s->a0, s->a1);
      break;
    }
    if (!o)
      T[s->out] = r;
  }
}

static void cfg_json(const rp_cfg *f, char *buf, size_t size) {
  size_t n = 0;
#define PUT(...)                                                               \
  do {                                                                         \
    if (n < size)                                                              \
      n += (size_t)snprintf(buf + n, size - n, __VA_ARGS__);                   \
  } while (0)
  const char *sep = "";
  PUT("{");
  if (f->machine == M_HOST) {
    PUT("\"machine\": \"host\"");
    sep = ", ";
  } else if (f->machine == M_ASCEND) {
    PUT("\"machine\": \"ascend\"");
    sep = ", ";
  } else if (f->machine == M_CUSTOM) {
    PUT("\"machine\": {\"name\": \"rp\", \"cube_workers\": %u, "
        "\"vector_workers\": %u, \"shared\": %s, \"memory\": {",
        f->workers[0], f->workers[1], f->shared ? "true" : "false");
    for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
      PUT("%s\"%s\": %" PRIu64, l ? ", " : "",
          pto_mem_level_name((pto_mem_level)l), f->mem[l]);
    PUT("}}");
    sep = ", ";
  }
  static const char *const policies[] = {"\"fifo\"", "\"critical-path\"",
                                         "\"locality\""};
  if (f->knob_set) {
    PUT("%s\"knobs\": {", sep);
    const char *s2 = "";
    for (int k = 0; k < PTO_KNOB_COUNT; k++)
      if (f->knob_set & (1 << k)) {
        if (k == PTO_KNOB_POLICY)
          PUT("%s\"policy\": %s", s2, policies[f->knob[k]]);
        else if (k == PTO_KNOB_FUSE)
          PUT("%s\"fuse\": %s", s2, f->knob[k] ? "true" : "false");
        else
          PUT("%s\"%s\": %" PRId64, s2, pto_knob_name((pto_knob)k), f->knob[k]);
        s2 = ", ";
      }
    PUT("}");
    sep = ", ";
  }
  if (f->n_labels) {
    PUT("%s\"labels\": {", sep);
    for (int i = 0; i < f->n_labels; i++) {
      const rp_label_cfg *l = &f->labels[i];
      PUT("%s\"%s\": {", i ? ", " : "", l->label);
      const char *s2 = "";
      for (int k = 0; k < PTO_KNOB_COUNT; k++)
        if (l->knob_set & (1 << k)) {
          PUT("%s\"%s\": %" PRId64, s2, pto_knob_name((pto_knob)k), l->knob[k]);
          s2 = ", ";
        }
      if (l->vec_set) {
        PUT("%s\"vec_tile\": [%u, %u]", s2, l->vec[0], l->vec[1]);
        s2 = ", ";
      }
      if (l->cube_set)
        PUT("%s\"cube_tile\": [%u, %u, %u]", s2, l->cube[0], l->cube[1],
            l->cube[2]);
      PUT("}");
    }
    PUT("}");
  }
  PUT("}");
#undef PUT
}

/* The config (NULL for CFG_NULL), built or printed. l1_one: every l1_reuse
 * setting forced to 1 (the probe for known bug 3). */
static pto_config *emit_config(const rp_case *c, FILE *o, int l1_one, char *err,
                               size_t size) {
  rp_cfg f = c->cfg;
  if (l1_one) {
    if (f.knob_set & (1 << PTO_KNOB_L1_REUSE))
      f.knob[PTO_KNOB_L1_REUSE] = 1;
    for (int i = 0; i < f.n_labels; i++)
      if (f.labels[i].knob_set & (1 << PTO_KNOB_L1_REUSE))
        f.labels[i].knob[PTO_KNOB_L1_REUSE] = 1;
  }
  if (f.mode == CFG_NULL) {
    if (o)
      fprintf(o, "  pto_config *c = NULL; /* the defaults */\n");
    return NULL;
  }
  if (f.mode == CFG_JSON) {
    char json[4096];
    cfg_json(&f, json, sizeof json);
    if (o) {
      fprintf(o, "  pto_config *c = pto_config_new();\n  if "
                 "(pto_config_load_string(c, \"");
      for (const char *q = json; *q; q++) {
        if (*q == '"')
          fputc('\\', o);
        fputc(*q, o);
      }
      fprintf(o, "\"))\n    return fprintf(stderr, \"config: %%s\\n\", "
                 "pto_config_error(c)), 1;\n");
      return NULL;
    }
    pto_config *cfg = pto_config_new();
    if (cfg && pto_config_load_string(cfg, json) != PTO_OK) {
      snprintf(err, size, "config %.300s: %.200s", json, pto_config_error(cfg));
      pto_config_free(cfg);
      return NULL;
    }
    return cfg;
  }
  pto_config *cfg = o ? NULL : pto_config_new();
  int bad = 0;
  if (o)
    fprintf(o, "  pto_config *c = pto_config_new();\n");
  if (f.machine == M_ASCEND) {
    if (o)
      fprintf(o, "  {\n    pto_machine m = pto_machine_ascend();\n"
                 "    pto_config_set_machine(c, &m);\n  }\n");
    else {
      pto_machine m = pto_machine_ascend();
      bad |= pto_config_set_machine(cfg, &m) != PTO_OK;
    }
  } else if (f.machine == M_CUSTOM) {
    if (o) {
      fprintf(
          o,
          "  {\n    pto_machine m;\n    memset(&m, 0, sizeof m);\n"
          "    strcpy(m.name, \"rp\");\n    m.workers[PTO_CORE_CUBE] = %u;\n"
          "    m.workers[PTO_CORE_VECTOR] = %u;\n    m.shared = %d;\n",
          f.workers[0], f.workers[1], f.shared);
      for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
        fprintf(o, "    m.mem[PTO_MEM_%s] = %" PRIu64 ";\n",
                pto_mem_level_name((pto_mem_level)l), f.mem[l]);
      fprintf(o, "    pto_config_set_machine(c, &m);\n  }\n");
    } else {
      pto_machine m;
      memset(&m, 0, sizeof m);
      strcpy(m.name, "rp");
      m.workers[PTO_CORE_CUBE] = f.workers[0];
      m.workers[PTO_CORE_VECTOR] = f.workers[1];
      m.shared = f.shared;
      for (int l = 0; l < PTO_MEM_LEVEL_COUNT; l++)
        m.mem[l] = (size_t)f.mem[l];
      bad |= pto_config_set_machine(cfg, &m) != PTO_OK;
    }
  }
  static const char *const knob_c[] = {"PTO_KNOB_NBUFFER", "PTO_KNOB_L1_REUSE",
                                       "PTO_KNOB_POLICY", "PTO_KNOB_FUSE"};
  for (int k = 0; k < PTO_KNOB_COUNT; k++)
    if (f.knob_set & (1 << k)) {
      if (o)
        fprintf(o, "  pto_config_set_knob(c, NULL, %s, %" PRId64 ");\n",
                knob_c[k], f.knob[k]);
      else
        bad |= pto_config_set_knob(cfg, NULL, (pto_knob)k, f.knob[k]) != PTO_OK;
    }
  for (int i = 0; i < f.n_labels; i++) {
    const rp_label_cfg *l = &f.labels[i];
    for (int k = 0; k < PTO_KNOB_COUNT; k++)
      if (l->knob_set & (1 << k)) {
        if (o)
          fprintf(o, "  pto_config_set_knob(c, \"%s\", %s, %" PRId64 ");\n",
                  l->label, knob_c[k], l->knob[k]);
        else
          bad |= pto_config_set_knob(cfg, l->label, (pto_knob)k, l->knob[k]) !=
                 PTO_OK;
      }
    if (l->vec_set || l->cube_set) {
      pto_tile_shape ts = {l->vec[0], l->vec[1], l->cube[0], l->cube[1],
                           l->cube[2]};
      if (o)
        fprintf(o,
                "  pto_config_set_tile(c, \"%s\", &(pto_tile_shape){%u, %u, "
                "%u, %u, %u});\n",
                l->label, ts.vec_rows, ts.vec_cols, ts.cube_m, ts.cube_n,
                ts.cube_k);
      else
        bad |= pto_config_set_tile(cfg, l->label, &ts) != PTO_OK;
    }
  }
  if (bad && cfg) {
    snprintf(err, size, "config: %s", pto_config_error(cfg));
    pto_config_free(cfg);
    return NULL;
  }
  return cfg;
}

static int cfg_has_l1_reuse(const rp_cfg *f) {
  if ((f->knob_set & (1 << PTO_KNOB_L1_REUSE)) &&
      f->knob[PTO_KNOB_L1_REUSE] > 1)
    return 1;
  for (int i = 0; i < f->n_labels; i++)
    if ((f->labels[i].knob_set & (1 << PTO_KNOB_L1_REUSE)) &&
        f->labels[i].knob[PTO_KNOB_L1_REUSE] > 1)
      return 1;
  return 0;
}

static int cfg_fuses(const rp_cfg *f) {
  if (f->mode != CFG_NULL && (f->knob_set & (1 << PTO_KNOB_FUSE)) &&
      !f->knob[PTO_KNOB_FUSE])
    return 0;
  return 1;
}

/* How outputs are compared: a tolerance < 0 is bit-exact. */
static double out_tol(const rp_val *v) {
  if (v->lvl != L_APPROX || v->special || v->dt == PTO_I32)
    return v->zsign ? -2 : -1;
  return v->err;
}

static void rt_machine(const rp_rt_spec *r, uint32_t *cube, uint32_t *vec) {
  static const uint32_t ded[3][2] = {{1, 1}, {1, 2}, {2, 1}};
  *cube = r->shared ? (uint32_t)r->variant + 1 : ded[r->variant][0];
  *vec = r->shared ? (uint32_t)r->variant + 1 : ded[r->variant][1];
}

void rp_print_c(const rp_case *c, FILE *o) {
  fprintf(o, "/* Random differential test case: seed %" PRIu64 " (", c->seed);
  rp_switches_print(&c->sw, o);
  fprintf(
      o,
      ").\n * Reproduce: tests/fuzz_diff --print-c %" PRIu64
      "; build: cc -std=c11 THIS.c $(pkg-config --cflags --libs pto) -lm */\n",
      c->seed);
  fprintf(o, "#define _GNU_SOURCE\n#include <stdlib.h>\n#include <unistd.h>\n");
  for (size_t i = 0; i < sizeof rp_inc_lines / sizeof rp_inc_lines[0]; i++)
    fprintf(o, "%s\n", rp_inc_lines[i]);
  int n_in = 0, n_out = 0;
  for (int i = 0; i < c->n_steps; i++) {
    n_in += c->steps[i].kind == S_INPUT;
    n_out += c->steps[i].kind == S_OUTPUT;
  }
  fprintf(o,
          "\nint main(void) {\n  alarm(120); /* a hang ends the program */\n");
  fprintf(o, "  pto_program *p = pto_program_new(\"seed%" PRIu64 "\");\n",
          c->seed);
  fprintf(o, "  pto_tensor *t[%d] = {0};\n", c->n_vals + 1);
  emit_program(c, NULL, NULL, o);
  fprintf(o, "  if (pto_program_status(p))\n    return fprintf(stderr, "
             "\"build: %%s\\n\", pto_program_error(p)), 1;\n");
  /* inputs */
  fprintf(o, "  void *in[%d], *want[%d], *got[%d];\n", n_in + 1, n_out + 1,
          n_out + 1);
  fprintf(o,
          "  int64_t n_out[%d];\n  pto_dtype dt_out[%d];\n  double tol[%d];\n",
          n_out + 1, n_out + 1, n_out + 1);
  int k = 0;
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    if (s->kind != S_INPUT)
      continue;
    fprintf(o, "  in[%d] = malloc(%" PRId64 " * 4);\n", k,
            numel_of(s->nd, s->shape));
    fprintf(o,
            "  rp_fill(in[%d], %s, %" PRId64 ", UINT64_C(%" PRIu64
            "), %d, %d, %.17g, %.17g);\n",
            k, dt_c(s->dt), numel_of(s->nd, s->shape), s->fill_seed,
            s->fill_kind, s->fill_q, s->fill_lo, s->fill_hi);
    k++;
  }
  k = 0;
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    if (s->kind != S_OUTPUT)
      continue;
    const rp_val *v = &c->vals[s->in[0]];
    fprintf(o,
            "  n_out[%d] = %" PRId64
            ";\n  dt_out[%d] = %s;\n  tol[%d] = %.17g;\n",
            k, numel_of(v->nd, v->shape), k, dt_c(v->dt), k, out_tol(v));
    fprintf(o,
            "  want[%d] = calloc((size_t)n_out[%d], 4);\n  got[%d] = "
            "calloc((size_t)n_out[%d], 4);\n",
            k, k, k, k);
    k++;
  }
  fprintf(o, "  pto_status est = pto_program_eval(p, (const void *const *)in, "
             "want);\n");
  fprintf(o, "  printf(\"eval: %%s %%s\\n\", pto_status_name(est), "
             "pto_program_error(p));\n");
  emit_config(c, o, 0, NULL, 0);
  fprintf(
      o,
      "  pto_executable *e = NULL;\n  pto_status st = pto_compile(p, c, &e);\n"
      "  if (st)\n    return printf(\"compile: %%s: %%s\\n\", "
      "pto_status_name(st), "
      "pto_program_error(p)), 1;\n");
  fprintf(o, "  int bad = 0;\n  char msg[256];\n");
  fprintf(o, "  for (int run = 0; run <= %d; run++) {\n", c->n_rts);
  fprintf(o,
          "    pto_runtime *rt = NULL;\n    for (int j = 0; j < %d; j++)\n"
          "      memset(got[j], run ? 0x5a : 0xa5, (size_t)n_out[j] * 4);\n",
          n_out);
  fprintf(o, "    if (run == 0) {\n      st = pto_executable_run_serial(e, "
             "(const void *const *)in, got);\n"
             "    } else {\n");
  fprintf(o, "      static const unsigned rts[][4] = {");
  for (int i = 0; i < c->n_rts; i++) {
    uint32_t cu, ve;
    rt_machine(&c->rts[i], &cu, &ve);
    fprintf(o, "%s{%u, %u, %d, %d}", i ? ", " : "", cu, ve, c->rts[i].shared,
            c->rts[i].policy);
  }
  fprintf(o, "};\n      pto_machine m;\n      pto_machine_host(&m);\n"
             "      m.workers[PTO_CORE_CUBE] = rts[run - 1][0];\n"
             "      m.workers[PTO_CORE_VECTOR] = rts[run - 1][1];\n"
             "      m.shared = (int)rts[run - 1][2];\n"
             "      pto_runtime_params prm = pto_runtime_params_default();\n"
             "      prm.machine = &m;\n      prm.policy = (pto_policy)rts[run "
             "- 1][3];\n"
             "      if (pto_runtime_new(&prm, &rt))\n"
             "        return printf(\"runtime: %%s\\n\", "
             "pto_runtime_error(NULL)), 1;\n"
             "      st = pto_runtime_run(rt, e, (const void *const *)in, "
             "got);\n    }\n");
  fprintf(
      o,
      "    const char *what = run ? \"runtime\" : \"serial\";\n"
      "    if (st != est) {\n      printf(\"%%s run %%d: %%s (%%s), eval: "
      "%%s\\n\", what, run, "
      "pto_status_name(st), pto_executable_error(e), pto_status_name(est));\n"
      "      bad = 1;\n    }\n");
  fprintf(o,
          "    for (int j = 0; j < %d && !st && !est; j++)\n"
          "      if (rp_compare(got[j], want[j], dt_out[j], n_out[j], tol[j], "
          "msg, sizeof msg) >= 0) {\n"
          "        printf(\"%%s run %%d, output %%d: %%s\\n\", what, run, j, "
          "msg);\n"
          "        bad = 1;\n      }\n"
          "    pto_runtime_free(rt);\n  }\n",
          n_out);
  fprintf(o, "  printf(\"%%s\\n\", bad ? \"FAIL\" : \"ok\");\n"
             "  pto_executable_free(e);\n  pto_config_free(c);\n  "
             "pto_program_free(p);\n"
             "  return bad;\n}\n");
}

/* ---- running and checking
 * -------------------------------------------------------- */

struct rp_env {
  rp_progress *prog;
  rp_progress local;
  int serial_only;
  int repeat; /* extra runs on each runtime */
  pto_runtime *rt[2][3][PTO_POLICY_COUNT];
};

rp_env *rp_env_new(rp_progress *progress) {
  rp_env *e = calloc(1, sizeof *e);
  if (e)
    e->prog = progress ? progress : &e->local;
  return e;
}

void rp_env_serial_only(rp_env *env, int on) {
  env->serial_only = on;
}
void rp_env_repeat(rp_env *env, int n) {
  env->repeat = n;
}

void rp_env_free(rp_env *env) {
  if (!env)
    return;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < PTO_POLICY_COUNT; c++)
        pto_runtime_free(env->rt[a][b][c]);
  free(env);
}

static void stage(rp_env *env, int st) {
  env->prog->stage = st;
  env->prog->beat++;
}

static pto_runtime *env_runtime(rp_env *env, const rp_rt_spec *r, char *msg,
                                size_t size) {
  pto_runtime **slot = &env->rt[r->shared][r->variant][r->policy];
  if (*slot)
    return *slot;
  pto_machine m;
  if (pto_machine_host(&m) != PTO_OK) {
    snprintf(msg, size, "pto_machine_host failed");
    return NULL;
  }
  rt_machine(r, &m.workers[PTO_CORE_CUBE], &m.workers[PTO_CORE_VECTOR]);
  m.shared = r->shared;
  pto_runtime_params prm = pto_runtime_params_default();
  prm.machine = &m;
  prm.policy = (pto_policy)r->policy;
  prm.spin_us = 20; /* other processes share this machine's cores */
  prm.yield_us = 200;
  prm.pin = r->variant != 1;
  prm.trace = r->variant == 2; /* tracing runs too */
  if (pto_runtime_new(&prm, slot) != PTO_OK) {
    snprintf(msg, size, "pto_runtime_new: %s", pto_runtime_error(NULL));
    return NULL;
  }
  return *slot;
}

/* Kahn's algorithm over e's task graph: how many tasks it orders (fewer
 * than all: the graph has a cycle), and in *width (unless NULL) the most
 * tasks of one depth (longest path from a source): what a level of the
 * graph gives the workers to run at once. */
static uint32_t graph_order(const pto_executable *e, uint32_t *width) {
  uint32_t n = pto_executable_num_tasks(e), best = 0;
  uint32_t *pend = calloc(n + 1, sizeof *pend),
           *q = malloc((n + 1) * sizeof *q),
           *depth = calloc(n + 1, sizeof *depth),
           *count = calloc(n + 1, sizeof *count);
  if (!pend || !q || !depth || !count)
    abort();
  for (uint32_t t = 0; t < n; t++) {
    const uint32_t *succ;
    uint32_t k = pto_executable_task_succ(e, t, &succ);
    for (uint32_t j = 0; j < k; j++)
      pend[succ[j]]++;
  }
  uint32_t head = 0, tail = 0;
  for (uint32_t t = 0; t < n; t++)
    if (!pend[t])
      q[tail++] = t;
  while (head < tail) {
    uint32_t t = q[head++];
    if (++count[depth[t]] > best)
      best = count[depth[t]];
    const uint32_t *succ;
    uint32_t k = pto_executable_task_succ(e, t, &succ);
    for (uint32_t j = 0; j < k; j++) {
      if (depth[succ[j]] < depth[t] + 1)
        depth[succ[j]] = depth[t] + 1;
      if (--pend[succ[j]] == 0)
        q[tail++] = succ[j];
    }
  }
  free(pend);
  free(q);
  free(depth);
  free(count);
  if (width)
    *width = best;
  return tail;
}

typedef struct run_bufs {
  int n_in, n_out;
  void **in, **want, **got;
  const rp_val **outv;
  const char **names;
} run_bufs;

static rp_outcome fail_msg(char *msg, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static rp_outcome fail_msg(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, size, fmt, ap);
  va_end(ap);
  return RP_FAIL;
}

/* One run's outputs against the evaluator's. */
static rp_outcome check_outputs(const run_bufs *b, const char *what, char *msg,
                                size_t size) {
  for (int j = 0; j < b->n_out; j++) {
    const rp_val *v = b->outv[j];
    char m[384];
    if (rp_compare(b->got[j], b->want[j], v->dt, numel_of(v->nd, v->shape),
                   out_tol(v), m, sizeof m) >= 0)
      return fail_msg(msg, size, "%s: output %s: %s", what, b->names[j], m);
  }
  return RP_PASS;
}

static void fill_pattern(const run_bufs *b, int pat) {
  for (int j = 0; j < b->n_out; j++) {
    const rp_val *v = b->outv[j];
    memset(b->got[j], pat,
           (size_t)numel_of(v->nd, v->shape) * pto_dtype_size(v->dt));
  }
}

static rp_outcome run_impl(rp_env *env, const rp_case *c, int ext,
                           const pto_config *ext_cfg, char *msg, size_t size);

rp_outcome rp_run(rp_env *env, const rp_case *c, char *msg, size_t size) {
  return run_impl(env, c, 0, NULL, msg, size);
}

rp_outcome rp_run_config(rp_env *env, const rp_case *c, const pto_config *cfg,
                         char *msg, size_t size) {
  return run_impl(env, c, 1, cfg, msg, size);
}

/* Known bug 4 fixed: an op deriving a shape of 2^40 elements or more is
 * refused with a message, as pto_input refuses one. */
static rp_outcome check_huge(int kind, char *msg, size_t size) {
  pto_program *p = pto_program_new("huge");
  const int64_t k20 = INT64_C(1) << 20, k21 = INT64_C(1) << 21;
  pto_tensor *r = NULL;
  const char *what = "";
  if (kind == 1) {
    what = "add of [2^20,1] and [1,2^21]";
    r = pto_add(p, pto_input(p, "a", PTO_F32, 2, (const int64_t[]){k20, 1}),
                pto_input(p, "b", PTO_F32, 2, (const int64_t[]){1, k21}));
  } else if (kind == 2) {
    what = "matmul of [2^21,1] and [1,2^21]";
    r = pto_matmul(p, pto_input(p, "a", PTO_F32, 2, (const int64_t[]){k21, 1}),
                   pto_input(p, "b", PTO_F32, 2, (const int64_t[]){1, k21}), 0);
  } else if (kind == 3) {
    what = "gather of table [4,2^21] by index [2^20]";
    r = pto_gather(p, pto_input(p, "t", PTO_F32, 2, (const int64_t[]){4, k21}),
                   pto_input(p, "i", PTO_I32, 1, (const int64_t[]){k20}), 0);
  } else if (kind == 4) {
    what = "concat of two [2^39+1]";
    pto_tensor *a = pto_input(p, "a", PTO_F32, 1,
                              (const int64_t[]){(INT64_C(1) << 39) + 1});
    r = pto_concat(p, 2, (pto_tensor *const[]){a, a}, 0);
  } else {
    what = "cmp of [2^21,1] and [1,2^21]";
    r = pto_cmp(p, pto_input(p, "a", PTO_F32, 2, (const int64_t[]){k21, 1}),
                pto_input(p, "b", PTO_F32, 2, (const int64_t[]){1, k21}),
                PTO_CMP_LT);
  }
  rp_outcome res = RP_PASS;
  if (r || pto_program_status(p) == PTO_OK || !pto_program_error(p)[0])
    res = fail_msg(msg, size,
                   "build: %s accepted (status %s, numel %" PRId64
                   "): a 2^40-element shape must be refused",
                   what, pto_status_name(pto_program_status(p)),
                   pto_tensor_numel(r));
  pto_program_free(p);
  return res;
}

/* Known bug 5 fixed: fusion leaves the workers something to do. The
 * partitioner's rule (pto__fuse_split_for_parallelism) keeps a fused
 * cluster at least as wide as min(workers, the most tasks one of its ops
 * has alone); fusing independent siblings of two tiles each into one
 * cluster of two subgraphs is within it, however wide the unfused graph of
 * all those siblings is. So with nbuffer auto, a fused graph narrower than
 * min(workers, 4, the most tasks one op has in the unfused executable),
 * where the unfused graph is at least twice as wide as the workers and
 * moves 64 KiB per worker, is a failure. */
static uint32_t most_tasks_of_one_op(const pto_executable *u) {
  uint32_t best = 0, n = u->n_tasks;
  uint32_t *per = calloc(n + 1, sizeof *per);
  uint32_t *node = malloc((n + 1) * sizeof *node);
  if (!per || !node)
    abort();
  uint32_t nn = 0; /* distinct nodes seen, in node[] */
  for (uint32_t t = 0; t < n; t++) {
    uint32_t v = u->tasks[t].node, i = 0;
    if (v == PTO_NONE)
      continue;
    while (i < nn && node[i] != v)
      i++;
    if (i == nn)
      node[nn++] = v;
    if (++per[i] > best)
      best = per[i];
  }
  free(per);
  free(node);
  return best;
}

static rp_outcome check_parallel(const rp_case *c, pto_program *p,
                                 const pto_config *cfg, const pto_executable *e,
                                 char *msg, size_t size) {
  const rp_cfg *f = &c->cfg;
  if ((f->knob_set & (1 << PTO_KNOB_NBUFFER)) && f->knob[PTO_KNOB_NBUFFER])
    return RP_PASS;
  for (int i = 0; i < f->n_labels; i++)
    if (f->labels[i].knob_set & (1 << PTO_KNOB_NBUFFER))
      return RP_PASS;
  pto_config *nf = cfg ? pto_config_clone(cfg) : pto_config_new();
  char labels[64][96];
  int n = case_labels(c, 0, labels, 64);
  pto_config_set_knob(nf, NULL, PTO_KNOB_FUSE, 0);
  for (int i = 0; i < n; i++)
    pto_config_set_knob(nf, labels[i], PTO_KNOB_FUSE, 0);
  const pto_machine *m = pto_config_machine(nf);
  uint32_t w = m->shared ? m->workers[0] : m->workers[0] + m->workers[1];
  w = w > 4 ? 4 : w;
  pto_executable *u = NULL;
  rp_outcome res = RP_PASS;
  if (pto_compile(p, nf, &u) == PTO_OK) {
    uint32_t fused, unfused;
    graph_order(e, &fused);
    graph_order(u, &unfused);
    pto_exe_stats us;
    pto_executable_stats(u, &us);
    /* only where there is work to share: 64 KiB moved per worker */
    uint32_t alone = most_tasks_of_one_op(u), need = alone < w ? alone : w;
    if (unfused >= 2 * w && fused < need &&
        us.boundary_bytes >= (uint64_t)w << 16)
      res = fail_msg(msg, size,
                     "compile: fusion leaves %u tasks at once for %u workers "
                     "where the unfused graph has %u and one op alone %u",
                     fused, w, unfused, alone);
  }
  pto_executable_free(u);
  pto_config_free(nf);
  return res;
}

static rp_outcome run_impl(rp_env *env, const rp_case *c, int ext,
                           const pto_config *ext_cfg, char *msg, size_t size) {
  rp_outcome res = RP_PASS;
  if (c->huge && (res = check_huge(c->huge, msg, size)) != RP_PASS)
    return res;
  msg[0] = 0;
  stage(env, RP_STAGE_BUILD);
  pto_program *p = pto_program_new("random");
  pto_tensor **T = calloc((size_t)c->n_vals + 1, sizeof *T);
  run_bufs b;
  memset(&b, 0, sizeof b);
  for (int i = 0; i < c->n_steps; i++) {
    b.n_in += c->steps[i].kind == S_INPUT;
    b.n_out += c->steps[i].kind == S_OUTPUT;
  }
  b.in = calloc((size_t)b.n_in + 1, sizeof *b.in);
  b.want = calloc((size_t)b.n_out + 1, sizeof *b.want);
  b.got = calloc((size_t)b.n_out + 1, sizeof *b.got);
  b.outv = calloc((size_t)b.n_out + 1, sizeof *b.outv);
  b.names = calloc((size_t)b.n_out + 1, sizeof *b.names);
  pto_config *cfg = NULL;
  pto_executable *e = NULL;
  if (!p || !T || !b.in || !b.want || !b.got || !b.outv || !b.names)
    abort();
  emit_program(c, p, T, NULL);
  if (pto_program_status(p) != PTO_OK) {
    res =
        fail_msg(msg, size, "build: %s: %s",
                 pto_status_name(pto_program_status(p)), pto_program_error(p));
    goto done;
  }
  int ki = 0, ko = 0;
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    if (s->kind == S_INPUT) {
      int64_t n = numel_of(s->nd, s->shape);
      b.in[ki] = malloc((size_t)n * 4 + 64);
      rp_fill(b.in[ki], s->dt, n, s->fill_seed, s->fill_kind, s->fill_q,
              s->fill_lo, s->fill_hi);
      ki++;
    } else if (s->kind == S_OUTPUT) {
      const rp_val *v = &c->vals[s->in[0]];
      int64_t n = numel_of(v->nd, v->shape);
      b.outv[ko] = v;
      b.names[ko] = s->name;
      b.want[ko] = calloc((size_t)n, 4);
      b.got[ko] = calloc((size_t)n, 4);
      ko++;
    }
  }
  stage(env, RP_STAGE_EVAL);
  pto_status est = pto_program_eval(p, (const void *const *)b.in, b.want);
  if (est != PTO_OK && est != PTO_ERANGE) {
    res = fail_msg(msg, size, "eval: %s: %s", pto_status_name(est),
                   pto_program_error(p));
    goto done;
  }
  char cmsg[512] = "";
  stage(env, RP_STAGE_COMPILE);
  if (ext) {
    cfg = ext_cfg ? pto_config_clone(ext_cfg) : pto_config_new();
    if (!cfg)
      abort();
    if (c->sw.l1_reuse_hang) { /* known bug 3: no l1_reuse >= 2 at all */
      char labels[64][96];
      int n = case_labels(c, 0, labels, 64);
      pto_config_set_knob(cfg, NULL, PTO_KNOB_L1_REUSE, 1);
      for (int i = 0; i < n; i++)
        pto_config_set_knob(cfg, labels[i], PTO_KNOB_L1_REUSE, 1);
    }
  } else if (c->cfg.mode != CFG_NULL) {
    cfg = emit_config(c, NULL, 0, cmsg, sizeof cmsg);
    if (!cfg) {
      res = fail_msg(msg, size, "%s", cmsg);
      goto done;
    }
  }
  if (!ext && c->sw.l1_reuse_hang && cfg_has_l1_reuse(&c->cfg)) {
    /* known bug 3: l1_reuse >= 2 may loop forever where l1_reuse 1 fails
     * with ECAPACITY (probed here, with every l1_reuse at 1), and also
     * where it compiles (K slices of 1: the supervisor's timeout in stage
     * COMPILE_L1_REUSE classifies those as known) */
    pto_config *probe = emit_config(c, NULL, 1, cmsg, sizeof cmsg);
    pto_executable *pe = NULL;
    pto_status pst = pto_compile(p, probe, &pe);
    pto_executable_free(pe);
    pto_config_free(probe);
    if (pst == PTO_ECAPACITY) {
      res = RP_KNOWN;
      snprintf(msg, size,
               "known bug l1_reuse_hang: l1_reuse >= 2 and the "
               "l1_reuse 1 compile overflows: %s",
               pto_program_error(p));
      goto done;
    }
    stage(env, RP_STAGE_COMPILE_L1_REUSE);
  }
  pto_status st = pto_compile(p, cfg, &e);
  if (st != PTO_OK) {
    const char *em = pto_program_error(p);
    if (!em[0]) {
      res = fail_msg(msg, size, "compile: %s with an empty message",
                     pto_status_name(st));
    } else if (st == PTO_ECAPACITY) {
      res = RP_SKIP;
      snprintf(msg, size, "compile: %s", em);
    } else if (st == PTO_ERANGE && strstr(em, "fit a program") &&
               (ext || cfg_fuses(&c->cfg)) && c->sw.fusion_parallelism) {
      res = RP_KNOWN;
      snprintf(msg, size, "known bug fusion_parallelism: %s", em);
    } else {
      res = fail_msg(msg, size, "compile: %s: %s", pto_status_name(st), em);
    }
    goto done;
  }
  if (!c->sw.fusion_parallelism &&
      (res = check_parallel(c, p, cfg, e, msg, size)) != RP_PASS)
    goto done;
  if (graph_order(e, NULL) != pto_executable_num_tasks(e)) {
    if (c->sw.fusion_cycle) {
      res = RP_KNOWN;
      snprintf(msg, size, "known bug fusion_cycle: the task graph has a cycle");
    } else
      res = fail_msg(msg, size, "compile: the task graph has a cycle");
    goto done;
  }
  stage(env, RP_STAGE_SERIAL);
  fill_pattern(&b, 0xa5);
  st = pto_executable_run_serial(e, (const void *const *)b.in, b.got);
  if (st != est) {
    res = fail_msg(msg, size, "serial: %s (%s), eval: %s (%s)",
                   pto_status_name(st), pto_executable_error(e),
                   pto_status_name(est), pto_program_error(p));
    goto done;
  }
  if (est == PTO_OK &&
      (res = check_outputs(&b, "serial", msg, size)) != RP_PASS)
    goto done;
  for (int i = 0; i < c->n_rts && !env->serial_only; i++) {
    const rp_rt_spec *r = &c->rts[i];
    stage(env, RP_STAGE_RUNTIME);
    pto_runtime *rt = env_runtime(env, r, msg, size);
    if (!rt) {
      res = RP_FAIL;
      goto done;
    }
    for (int rep = 0; rep <= r->repeat + env->repeat; rep++) {
      fill_pattern(&b, 0x5a + (rep & 1));
      st = pto_runtime_run(rt, e, (const void *const *)b.in, b.got);
      char what[96];
      uint32_t cu, ve;
      rt_machine(r, &cu, &ve);
      snprintf(what, sizeof what, "runtime (%u cube + %u vector%s, %s%s)", cu,
               ve, r->shared ? " shared" : "",
               pto_policy_name((pto_policy)r->policy), rep ? ", again" : "");
      if (st != est) {
        res = fail_msg(msg, size, "%s: %s (%s), eval: %s", what,
                       pto_status_name(st), pto_executable_error(e),
                       pto_status_name(est));
        goto done;
      }
      if (est == PTO_OK &&
          (res = check_outputs(&b, what, msg, size)) != RP_PASS)
        goto done;
      if (r->variant == 2) { /* the trace of a traced run summarises */
        char *text = NULL;
        size_t len = 0;
        FILE *mf = open_memstream(&text, &len);
        st = mf ? pto_executable_trace_summary(e, mf) : PTO_ENOMEM;
        if (mf)
          fclose(mf);
        free(text);
        if (st != PTO_OK) {
          res = fail_msg(msg, size, "%s: trace summary: %s (%s)", what,
                         pto_status_name(st), pto_executable_error(e));
          goto done;
        }
      }
    }
  }
done:
  stage(env, RP_STAGE_IDLE);
  pto_executable_free(e);
  pto_config_free(cfg);
  pto_program_free(p);
  for (int i = 0; i < b.n_in; i++)
    free(b.in[i]);
  for (int i = 0; i < b.n_out; i++) {
    free(b.want[i]);
    free(b.got[i]);
  }
  free(b.in);
  free(b.want);
  free(b.got);
  free(b.outv);
  free(b.names);
  free(T);
  return res;
}

/* ---- the supervisor
 * ---------------------------------------------------------------- */

typedef struct shared_state {
  rp_progress prog;
  volatile uint64_t next; /* the seed the child works on next */
  volatile int in_seed;   /* the child is inside prog.seed */
  volatile int l1_reuse;  /* that case compiles with l1_reuse >= 2 */
  rp_totals tot;
} shared_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void report_case(const rp_case *c, const char *kind, const char *msg,
                        const char *dir, FILE *out) {
  fprintf(out, "==== %s: seed %" PRIu64 ": %s\n", kind, c->seed, msg);
  rp_print_c(c, out);
  fprintf(out, "==== end of seed %" PRIu64 "\n", c->seed);
  fflush(out);
  if (dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/seed-%" PRIu64 ".c", dir, c->seed);
    FILE *f = fopen(path, "w");
    if (f) {
      fprintf(f, "/* %s: %s */\n", kind, msg);
      rp_print_c(c, f);
      fclose(f);
    }
  }
}

static void child_loop(shared_state *sh, uint64_t end, const rp_switches *sw,
                       const char *dir, int verbose, FILE *out) {
  rp_env *env = rp_env_new(&sh->prog);
  char msg[1024];
  while (sh->next < end) {
    uint64_t seed = sh->next;
    sh->prog.seed = seed;
    sh->prog.stage = RP_STAGE_GENERATE;
    sh->prog.beat++;
    sh->in_seed = 1;
    rp_case *c = rp_generate(seed, sw);
    sh->l1_reuse = cfg_has_l1_reuse(&c->cfg);
    rp_outcome r = rp_run(env, c, msg, sizeof msg);
    sh->tot.by[r]++;
    sh->tot.seeds++;
    sh->tot.ops += (uint64_t)c->n_ops;
    if (r == RP_FAIL) {
      if (sh->tot.first_fail == UINT64_MAX)
        sh->tot.first_fail = seed;
      report_case(c, "FAIL", msg, dir, out);
    } else if (verbose > 1 || (verbose && r != RP_PASS)) {
      fprintf(out, "seed %" PRIu64 ": %s %s\n", seed,
              r == RP_PASS   ? "pass"
              : r == RP_SKIP ? "skip"
                             : "known",
              msg);
      fflush(out);
    }
    rp_case_free(c);
    sh->in_seed = 0;
    sh->next = seed + 1;
  }
  rp_env_free(env);
}

int rp_supervise(uint64_t start, uint64_t count, const rp_switches *sw,
                 double timeout_s, const char *dir, int verbose, FILE *out,
                 rp_totals *totals) {
  shared_state *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED)
    return -1;
  memset(sh, 0, sizeof *sh);
  sh->tot.first_fail = UINT64_MAX;
  sh->next = start;
  uint64_t end = start + count;
  while (sh->next < end) {
    fflush(out);
    pid_t pid = fork();
    if (pid < 0) {
      munmap(sh, sizeof *sh);
      return -1;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphan when the watcher dies */
      child_loop(sh, end, sw, dir, verbose, out);
      fflush(out);
      _exit(0);
    }
    uint64_t beat = sh->prog.beat;
    double since = now_s();
    int status = 0, hung = 0;
    for (;;) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid)
        break;
      if (w < 0 && errno != EINTR)
        break;
      if (sh->prog.beat != beat) {
        beat = sh->prog.beat;
        since = now_s();
      } else if (sh->in_seed && now_s() - since > timeout_s) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        hung = 1;
        break;
      }
      usleep(20000);
    }
    if (!hung && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !sh->in_seed)
      continue; /* the child finished its seeds */
    uint64_t seed = sh->prog.seed;
    int st = sh->prog.stage;
    rp_case *c = rp_generate(seed, sw);
    char msg[256];
    if (hung && st == RP_STAGE_COMPILE_L1_REUSE && sw->l1_reuse_hang) {
      sh->tot.by[RP_KNOWN]++;
      if (verbose)
        fprintf(out,
                "seed %" PRIu64 ": known l1_reuse_hang (compile did not "
                "return in %.0f s)\n",
                seed, timeout_s);
    } else {
      if (hung) {
        snprintf(msg, sizeof msg, "no progress for %.0f s in stage %s",
                 timeout_s, rp_stage_name(st));
        sh->tot.hangs++;
      } else {
        snprintf(msg, sizeof msg, "the process died in stage %s (%s %d)",
                 rp_stage_name(st), WIFSIGNALED(status) ? "signal" : "exit",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        sh->tot.crashes++;
      }
      sh->tot.by[RP_FAIL]++;
      if (sh->tot.first_fail == UINT64_MAX)
        sh->tot.first_fail = seed;
      report_case(c, hung ? "HANG" : "CRASH", msg, dir, out);
    }
    sh->tot.seeds++;
    rp_case_free(c);
    sh->in_seed = 0;
    sh->next = seed + 1;
  }
  if (totals)
    *totals = sh->tot;
  munmap(sh, sizeof *sh);
  return 0;
}

/* ---- minimizing a failing case
 * ----------------------------------------------------- */

static rp_case *case_copy(const rp_case *c) {
  rp_case *d = malloc(sizeof *d);
  if (!d)
    abort();
  *d = *c;
  d->steps = malloc((size_t)c->cap_steps * sizeof *d->steps);
  d->vals = malloc((size_t)c->cap_vals * sizeof *d->vals);
  if (!d->steps || !d->vals)
    abort();
  memcpy(d->steps, c->steps, (size_t)c->n_steps * sizeof *d->steps);
  memcpy(d->vals, c->vals, (size_t)c->n_vals * sizeof *d->vals);
  return d;
}

/* Drops ops no output needs and inputs nothing reads. */
static void prune(rp_case *c) {
  mark_live(c);
  int n = 0;
  c->n_ops = 0;
  for (int i = 0; i < c->n_steps; i++) {
    rp_step *s = &c->steps[i];
    if (s->kind == S_OP && !step_live(c, s))
      continue;
    if (s->kind == S_INPUT && !c->vals[s->out].live)
      continue;
    if (s->kind == S_OP && s->op != O_SLICE && s->op != O_RESHAPE &&
        s->op != O_TRANSPOSE)
      c->n_ops++;
    c->steps[n++] = *s;
  }
  c->n_steps = n;
}

/* rp_run in a child process, so that a crash or a hang is an outcome. */
static rp_outcome run_isolated(const rp_case *c, double timeout_s, char *msg,
                               size_t size) {
  typedef struct {
    volatile int done, outcome;
    char msg[1024];
    rp_progress prog;
  } box;
  box *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED)
    abort();
  memset(b, 0, sizeof *b);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) { /* sanitizer reports of candidates would drown the log */
      dup2(fd, 2);
      close(fd);
    }
    rp_env *env = rp_env_new(&b->prog);
    b->outcome = rp_run(env, c, b->msg, sizeof b->msg);
    b->done = 1;
    _exit(0); /* without freeing the runtimes: quicker */
  }
  double t0 = now_s();
  int status = 0, hung = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (now_s() - t0 > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      hung = 1;
      break;
    }
    usleep(2000);
  }
  rp_outcome r;
  if (b->done) {
    r = (rp_outcome)b->outcome;
    snprintf(msg, size, "%s", b->msg);
  } else {
    r = RP_FAIL;
    if (hung)
      snprintf(msg, size, "hang: no end in %.0f s in stage %s", timeout_s,
               rp_stage_name(b->prog.stage));
    else
      snprintf(msg, size, "crash: %s %d in stage %s",
               WIFSIGNALED(status) ? "signal" : "exit",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
               rp_stage_name(b->prog.stage));
  }
  munmap(b, sizeof *b);
  return r;
}

/* Failures are the same when their messages agree up to the first ':'
 * ("serial", "compile", "crash", ...) and, for output mismatches, in being
 * one. */
static int same_failure(const char *a, const char *b) {
  size_t la = strcspn(a, ":"), lb = strcspn(b, ":");
  if (la != lb || strncmp(a, b, la))
    return 0;
  return (strstr(a, ": output ") != NULL) == (strstr(b, ": output ") != NULL) &&
         (strstr(a, "signal") != NULL) == (strstr(b, "signal") != NULL);
}

static int still_fails(const rp_case *c, const char *want, double timeout_s) {
  char msg[1024];
  return run_isolated(c, timeout_s, msg, sizeof msg) == RP_FAIL &&
         same_failure(msg, want);
}

/* d, a smaller *c, takes its place if it still fails as wanted (1, and a
 * line to log unless NULL); else d is freed (0). */
static int adopt_if_fails(rp_case **c, rp_case *d, const char *want,
                          double timeout_s, FILE *log) {
  if (!still_fails(d, want, timeout_s)) {
    rp_case_free(d);
    return 0;
  }
  rp_case_free(*c);
  *c = d;
  if (log)
    fprintf(log, "minimize: %d steps, %d ops\n", d->n_steps, d->n_ops);
  return 1;
}

rp_case *rp_minimize(const rp_case *orig, double timeout_s, char *msg,
                     size_t size, FILE *log) {
  char want[1024];
  if (run_isolated(orig, timeout_s, want, sizeof want) != RP_FAIL) {
    snprintf(msg, size, "the case does not fail");
    return NULL;
  }
  rp_case *c = case_copy(orig);
  prune(c);
  if (!still_fails(c, want, timeout_s)) {
    rp_case_free(c);
    c = case_copy(orig);
  }
  for (int changed = 1; changed;) {
    changed = 0;
    /* one step at a time, from the end: outputs, ops (a bypass would change
     * what the tracker knows, so ops go only as dead code), scopes */
    for (int i = c->n_steps - 1; i >= 0; i--) {
      if (i >= c->n_steps)
        continue;
      int kind = c->steps[i].kind;
      mark_live(c);
      if (kind == S_OP && step_live(c, &c->steps[i]))
        continue; /* a bypass would change what the tracker knows */
      if (kind == S_INPUT && c->vals[c->steps[i].out].live)
        continue;
      if (kind == S_OUTPUT) {
        int outs = 0;
        for (int j = 0; j < c->n_steps; j++)
          outs += c->steps[j].kind == S_OUTPUT;
        if (outs < 2)
          continue;
      }
      rp_case *d = case_copy(c);
      memmove(&d->steps[i], &d->steps[i + 1],
              (size_t)(d->n_steps - i - 1) * sizeof *d->steps);
      d->n_steps--;
      rp_case *e = case_copy(d);
      prune(e);
      adopt_if_fails(&d, e, want, timeout_s, NULL); /* pruned, if it can be */
      changed |= adopt_if_fails(&c, d, want, timeout_s, log);
    }
    /* where values do not matter (a crash, a hang, a compile error): an op
     * becomes an input of its shape, cutting the graph above it */
    int any_values = strstr(want, ": output ") != NULL;
    for (int i = c->n_steps - 1; i >= 0 && !any_values; i--) {
      if (i >= c->n_steps)
        continue;
      const rp_step *s = &c->steps[i];
      if (s->kind != S_OP || s->out2 >= 0 || s->op == O_SLICE ||
          s->op == O_RESHAPE || s->op == O_TRANSPOSE)
        continue;
      rp_case *d = case_copy(c);
      rp_step *t = &d->steps[i];
      const rp_val *v = &d->vals[t->out];
      int out = t->out;
      memset(t, 0, sizeof *t);
      t->kind = S_INPUT;
      t->out = out;
      t->out2 = -1;
      t->dt = v->dt;
      t->nd = v->nd;
      memcpy(t->shape, v->shape, sizeof t->shape);
      snprintf(t->name, sizeof t->name, "m%d", out);
      t->fill_seed = (uint64_t)out * 7919u;
      t->fill_kind = v->dt == PTO_I32 ? RP_FILL_INT : RP_FILL_GRID;
      t->fill_q = 2;
      t->fill_lo = v->dt == PTO_I32 ? 0 : -4;
      t->fill_hi = v->dt == PTO_I32 ? 3 : 4;
      prune(d);
      changed |= adopt_if_fails(&c, d, want, timeout_s, log);
    }
    /* the config and the runs, one setting at a time */
    for (int k = 0; k < 12; k++) {
      rp_case *d = case_copy(c);
      rp_cfg *f = &d->cfg;
      int did = 1;
      if (k == 0 && f->mode != CFG_NULL)
        f->mode = CFG_NULL;
      else if (k == 1 && f->mode != CFG_NULL && f->machine != M_HOST)
        f->machine = M_HOST;
      else if (k >= 2 && k < 2 + PTO_KNOB_COUNT &&
               (f->knob_set & (1 << (k - 2))))
        f->knob_set &= ~(1 << (k - 2));
      else if (k == 6 && f->n_labels)
        f->n_labels--;
      else if (k == 7 && d->n_rts)
        d->n_rts--;
      else if (k == 8 && f->n_labels && f->labels[0].knob_set)
        f->labels[0].knob_set = 0;
      else if (k == 9 && f->n_labels &&
               (f->labels[0].vec_set || f->labels[0].cube_set))
        f->labels[0].vec_set = f->labels[0].cube_set = 0;
      else if (k == 10 && d->n_rts && d->rts[0].repeat)
        d->rts[0].repeat = 0;
      else
        did = 0;
      if (did)
        changed |= adopt_if_fails(&c, d, want, timeout_s, NULL);
      else
        rp_case_free(d);
    }
  }
  snprintf(msg, size, "%s", want);
  return c;
}
