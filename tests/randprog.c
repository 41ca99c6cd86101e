/* Random programs over the whole builder API, checked against the reference
 * evaluator: generation (from a seed or fuzzer bytes), building, printing as
 * C, running under random configs and runtimes, and a supervisor that turns
 * hangs and crashes into reports naming the seed. See randprog.h.
 *
 * This file: the switches, the case, and the generator's core (choices,
 * state, picking tensors, inputs, scopes, outputs, config and runs). The
 * ops are in randprog_ops.c, randprog_matmul.c, randprog_movement.c and
 * randprog_attention.c, building and printing in randprog_print.c, running
 * and checking in randprog_run.c, the supervisor and the minimizer in
 * randprog_supervise.c; what they share is in randprog_impl.h. */
#include "tests/randprog_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
#define RP__PR(name, open)                                                     \
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

/* Its types (steps, tracked values, config, runs) are in randprog_impl.h. */

uint64_t rp_case_seed(const rp_case *c) {
  return c->seed;
}
int rp_case_num_ops(const rp_case *c) {
  int n = 0;
  for (int i = 0; i < c->n_steps; i++)
    n += c->steps[i].kind == S_OP;
  return n;
}

int rp_case_num_dims(const rp_case *c) {
  return c->n_dims;
}
int rp_case_num_binds(const rp_case *c) {
  return c->n_binds;
}

void rp_case_free(rp_case *c) {
  if (!c)
    return;
  free(c->steps);
  free(c->vals);
  free(c);
}

/* ---- choices: a PRNG or fuzzer bytes ------------------------------------ */

uint32_t pick(rp_src *r, uint32_t n) {
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
int chance(rp_src *r, int pct) {
  return (int)pick(r, 100) < pct;
}

/* ---- generator state ------------------------------------------------------
 */

enum { OUTPUT_ROOM = 16 };

rp_step *add_step(gen *g, int kind) {
  rp_case *c = g->c;
  /* the last OUTPUT_ROOM steps are kept for the outputs (gen_outputs and
   * nn_outputs add 15 at most), so that a full case still has some */
  if (c->n_steps >= MAX_STEPS - (kind == S_OUTPUT ? 0 : OUTPUT_ROOM)) {
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
  s->nn = g->nn_mode;
  s->out = s->out2 = -1;
  snprintf(s->label, sizeof s->label, "%s",
           g->n_labels ? g->labels[g->n_labels - 1] : "");
  return s;
}

int64_t numel_of(int nd, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++)
    n *= shape[i];
  return n;
}

rp_val *V(gen *g, int id) {
  return &g->c->vals[id];
}

double mag(const rp_val *v) {
  return fmax(fabs(v->lo), fabs(v->hi));
}

/* A new tensor value; a root with dense strides unless it is a view. */
int new_val(gen *g, pto_dtype dt, int nd, const int64_t *shape) {
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
  v->hidden = g->nn_mode;
  return id;
}

int is_float(pto_dtype dt) {
  return dt != PTO_I32;
}

/* Does value level v fit a GRID of 2^-q in f32 (or the storage dtype)? */
int grid_fits(double m, int q, pto_dtype dt) {
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
void settle(rp_val *r, int grid_ok, int exact_op, int worst, double err) {
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

int worst2(const rp_val *a, const rp_val *b) {
  return a->lvl > b->lvl ? a->lvl : b->lvl;
}

/* i32 intervals wrap: outside i32 they become the whole range. */
void i32_clip(rp_val *r) {
  if (r->lo < INT32_MIN || r->hi > INT32_MAX) {
    r->lo = INT32_MIN;
    r->hi = INT32_MAX;
  }
}

/* r holds some of src's values (reordered, a subset, or copies): the same
 * bounds, grid, level, error and specials. */
void holds_values_of(rp_val *r, const rp_val *src) {
  r->lo = src->lo;
  r->hi = src->hi;
  r->q = src->q;
  r->lvl = src->lvl;
  r->err = src->err;
  r->special = src->special;
}

/* ---- picking tensors --------------------------------------------------------
 */

/* A usable tensor satisfying ok, favouring recent ones; -1 if none. The
 * main stream never sees the nn stream's tensors. */
int pick_val(gen *g, val_pred ok, const void *ctx) {
  int cand[MAX_VALS], n = 0;
  for (int i = 0; i < g->c->n_vals; i++) {
    const rp_val *v = V(g, i);
    if (v->lvl != L_NOUSE && !v->posinf && !v->neginf &&
        (g->nn_mode || !v->hidden) && (!ok || ok(g, v, ctx)))
      cand[n++] = i;
  }
  if (!n)
    return -1;
  if (n > 6 && chance(g->r, 50))
    return cand[n - 1 - (int)pick(g->r, 6)];
  return cand[pick(g->r, (uint32_t)n)];
}

int pred_float(gen *g, const rp_val *v, const void *ctx) {
  (void)g;
  (void)ctx;
  return is_float(v->dt);
}

/* ---- inputs
 * ------------------------------------------------------------------ */

void rand_shape(gen *g, int *nd, int64_t *shape) {
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
int new_input(gen *g, pto_dtype dt, int nd, const int64_t *shape, int force_int,
              double ilo, double ihi) {
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
  if (g->nn_mode)
    snprintf(s->name, sizeof s->name, "nin%d", g->nn_inputs++);
  else
    snprintf(s->name, sizeof s->name, "in%d", g->input_seq++);
  s->fill_seed = rp_next(g->nn_mode ? &g->nn_seed : &g->c->seed) ^
                 (uint64_t)id * 0x9e37u;
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

pto_dtype rand_dtype(gen *g) {
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

int push_label(gen *g, const char *name) {
  if (g->n_labels >= 3)
    return 0;
  rp_step *s = add_step(g, S_PUSH_LABEL);
  if (g->failed)
    return 0;
  snprintf(s->name, sizeof s->name, "%s", name);
  snprintf(g->labels[g->n_labels], sizeof g->labels[0], "%.60s%s%s",
           g->n_labels ? g->labels[g->n_labels - 1] : "",
           g->n_labels ? "." : "", name);
  g->n_labels++;
  return 1;
}

void pop_label(gen *g) {
  add_step(g, S_POP_LABEL);
  g->n_labels--;
}

static void gen_scope(gen *g) {
  int k = (int)pick(g->r, 6);
  if (k == 0 && g->n_labels < 3)
    push_label(g, PICK_OF(g->r, label_words));
  else if (k == 1 && g->n_labels)
    pop_label(g);
  else if (k == 2 && g->n_tiles < 4) {
    rp_step *s = add_step(g, S_PUSH_TILE);
    s->has_tile = chance(g->r, 50) && !g->c->untiled;
    if (s->has_tile) {
      rand_vec(g, s->tile);
      rand_cube(g, s->tile + 2);
    }
    g->n_tiles++;
  } else if (k == 3 && g->n_tiles) {
    add_step(g, S_POP_TILE);
    g->n_tiles--;
  } else if (g->c->untiled) {
    return;
  } else if (k == 4) {
    rand_vec(g, add_step(g, S_SET_VEC)->tile);
  } else {
    rand_cube(g, add_step(g, S_SET_CUBE)->tile);
  }
}

/* ---- liveness, outputs, config and runs
 * -------------------------------------- */

void mark_live(rp_case *c) {
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

int step_live(const rp_case *c, const rp_step *s) {
  return s->kind == S_OP &&
         (c->vals[s->out].live || (s->out2 >= 0 && c->vals[s->out2].live));
}

/* Every label a step of c carries (live_only: a live op), and each of its
 * prefixes, into set (96 bytes each, cap at the most); how many. */
int case_labels(const rp_case *c, int live_only, char (*set)[96], int cap) {
  int n = 0;
  for (int i = 0; i < c->n_steps; i++) {
    if (live_only && !step_live(c, &c->steps[i]))
      continue;
    if (c->steps[i].nn) /* the main stream's choices ignore the nn stream */
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
    if (c->vals[i].lvl != L_NOUSE && !c->vals[i].hidden)
      last = i;
  /* most leaves (results nothing reads) too, so that few ops are dead */
  uint8_t *read = calloc((size_t)c->n_vals + 1, 1);
  if (!read)
    abort();
  for (int i = 0; i < c->n_steps; i++)
    for (int k = 0; k < c->steps[i].n_in && !c->steps[i].nn; k++)
      read[c->steps[i].in[k]] = 1;
  int leaves[MAX_VALS], n_leaves = 0;
  for (int i = 0; i < c->n_vals; i++)
    if (!read[i] && i != last && c->vals[i].lvl != L_NOUSE &&
        !c->vals[i].hidden && c->vals[i].root == i && chance(g->r, 75))
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
  nn_outputs(g);
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
    if (c->untiled)
      l->vec_set = l->cube_set = 0;
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

/* A case that ran out of steps may hold values of the op that did not fit
 * (its step went to add_step's sink): nothing may use or output them. */
static void drop_orphans(rp_case *c) {
  uint8_t *made = calloc((size_t)c->n_vals + 1, 1);
  if (!made)
    abort();
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    if (s->out >= 0)
      made[s->out] = 1;
    if (s->out2 >= 0)
      made[s->out2] = 1;
  }
  for (int i = 0; i < c->n_vals; i++)
    if (!made[i])
      c->vals[i].lvl = L_NOUSE;
  free(made);
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
    nn_step(g);
    int k = (int)pick(g->r, 100);
    if (k < 9)
      gen_scope(g);
    else if (k < 27)
      gen_binary(g);
    else if (k < 35)
      gen_scalar_op(g);
    else if (k < 44)
      gen_unary(g);
    else if (k < 47)
      gen_attention(g);
    else if (k < 51)
      gen_cast(g);
    else if (k < 56)
      gen_cmp_select(g);
    else if (k < 64)
      gen_reduce(g);
    else if (k < 71)
      gen_matmul(g, 0);
    else if (k < 75)
      gen_matmul(g, 1);
    else if (k < 77)
      gen_softmax(g);
    else if (k < 80)
      gen_topk(g);
    else if (k < 83)
      gen_gather(g);
    else if (k < 86)
      gen_concat(g);
    else if (k < 88)
      gen_fill(g);
    else if (k < 97)
      gen_view(g);
    else if (k < 98 || chance(g->r, g->c->sw.fusion_cycle ? 75 : 0))
      rand_input(g);
    else
      gen_motif(g);
  }
  if (g->failed)
    drop_orphans(c);
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
  const uint64_t side = r->bytes ? (uint64_t)r->size * 0x9e3779b97f4a7c15ull ^
                                       (r->size ? r->data[0] : 0)
                                 : seed;
  nn_init(&g, side);
  /* a fifth of the cases set no tile (from the side stream: the main
   * stream's choices stay what they were) */
  c->untiled = (side * 0x9e3779b97f4a7c15ull >> 40) % 5 == 0;
  gen_case(&g);
  if (c->sw.dead_op_store)
    prune(c); /* no dead ops: they may make a live tensor lose its storage */
  c->seed = seed; /* inputs drew their fill seeds from it */
  /* the dims come from a stream of their own too (fuzzer bytes: all of
   * them), so the steps stay what they were */
  uint64_t h = side;
  for (size_t i = 0; r->bytes && i < r->size; i++)
    h = (h ^ r->data[i]) * 0x100000001b3ull;
  dims_overlay(c, h);
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
