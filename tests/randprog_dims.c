/* Random programs (randprog.h): dynamic dims. A fraction of cases, chosen
 * by a PRNG of its own (so that every seed's steps, config and runs stay
 * what they were: a dynamic case is the same program with some axes made
 * dynamic, and at the maxima it computes what the static one does),
 * declares up to four dims, each with the extent of some input axes as its
 * maximum, and gives them to those axes and to fills' and iotas' shapes;
 * the ops carry them on.
 *
 * What the builder refuses on a dynamic axis (concat along it, plain topk
 * over it, attention's heads, keys and slots, causal masks, assemble,
 * reshapes that split a dim, two slices of a dim matched) is found by
 * building the program: the dim the refusal names is made static at the
 * input it names, or everywhere, and the program is built again, so a
 * refusal is never a finding (a plain topk whose results only outputs read
 * becomes pto_topk_masked instead, which takes a dynamic axis). The value
 * tracking was done at the maxima; it stays sound at smaller extents
 * (sums and matmuls over fewer terms have smaller rounding bounds, the
 * exactness conditions only get easier) except where a bound used the
 * count of terms: a sum, max or min over a dynamic axis of values of one
 * sign (fewer terms, or none at an extent of 0, which gives 0, fall
 * outside [n lo, n hi]), a mean tracked as exact (it divides by the bound
 * extent k, and 1 / k rounds), and sparse attention over fewer keys where
 * its result has no room for a query without any. Those dims are made
 * static too, as are those an open bug's pattern needs (randprog.h); a
 * mean's or a variance's rows are kept from an extent of 0 (0 / 0). A dim
 * an op pins to its maximum (matched with a static axis of that extent) is
 * given every static axis of its extent once, to free it. A case that
 * keeps no dim is left as the seed made it.
 *
 * A case that keeps some dims gets bindings: all ones, the maxima, a tile
 * boundary, some zeros, random ones, each repaired to satisfy the
 * equalities the ops recorded (read from the program), and sometimes one
 * that breaks an equality on purpose (the run and the evaluator must
 * refuse it with PTO_ESHAPE). */
#include "tests/randprog_impl.h"

#include <stdlib.h>
#include <string.h>

#include "core/program.h" /* the equalities the ops recorded, axes' drefs */

/* ---- choosing dims ------------------------------------------------------- */

static int has_shape(const rp_step *s) {
  return s->kind == S_INPUT ||
         (s->kind == S_OP &&
          (s->op == O_FULL || s->op == O_IOTA || s->op == O_IOTA_AXIS));
}

static void choose(rp_case *c, rp_src *r) {
  int64_t ext[256];
  int n_ext = 0;
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    for (int d = 0; has_shape(s) && d < s->nd && d < 4 && n_ext < 256; d++)
      if (s->shape[d] >= 2)
        ext[n_ext++] = s->shape[d];
  }
  if (!n_ext)
    return;
  const int n = 1 + (int)pick(r, chance(r, 20) ? 4 : 3);
  int pct[RP_MAX_DIMS];
  for (int k = 0; k < n; k++) {
    rp_dim *d = &c->dims[k];
    /* now and then a twin: two dims of one maximum, which the ops that
     * match their axes make equal at bind time */
    d->max = k && chance(r, 25) ? c->dims[pick(r, (uint32_t)k)].max
                                : ext[pick(r, (uint32_t)n_ext)];
    snprintf(d->name, sizeof d->name, "D%d", k);
    pct[k] = chance(r, 65) ? 100 : 40 + (int)pick(r, 50);
  }
  c->n_dims = n;
  for (int i = 0; i < c->n_steps; i++) {
    rp_step *s = &c->steps[i];
    for (int d = 0; has_shape(s) && d < s->nd && d < 4; d++) {
      int cand[RP_MAX_DIMS], nc = 0;
      for (int k = 0; k < n; k++)
        if (c->dims[k].max == s->shape[d])
          cand[nc++] = k;
      if (!nc)
        continue;
      const int k = cand[pick(r, (uint32_t)nc)];
      if (chance(r, pct[k]))
        s->dim[d] = (int8_t)(k + 1);
    }
  }
}

/* A plain topk over a dynamic last axis is refused: the topks whose
 * results nothing reads (outputs may) become pto_topk_masked, which takes
 * one (a row of fewer than k valid entries is padded with -inf and -1,
 * which only an output sees); how many did. While known bug
 * topk_bcast_tail is open, only topks of an input (or a view of one). */
static int topk_to_masked(rp_case *c) {
  int n = 0;
  for (int i = 0; i < c->n_steps; i++) {
    rp_step *s = &c->steps[i];
    if (s->kind != S_OP || s->op != O_TOPK || (s->flags & RP_TOPK_MASKED))
      continue;
    int of_input = 0;
    for (int j = 0; j < i && !of_input; j++)
      of_input = c->steps[j].kind == S_INPUT &&
                 c->steps[j].out == c->vals[s->in[0]].root;
    if (c->sw.topk_bcast_tail && !of_input)
      continue;
    int read = 0;
    for (int j = i + 1; j < c->n_steps && !read; j++)
      for (int k = 0; k < c->steps[j].n_in && c->steps[j].kind == S_OP; k++)
        read |= c->steps[j].in[k] == s->out || c->steps[j].in[k] == s->out2;
    if (!read) {
      s->flags |= RP_TOPK_MASKED;
      c->vals[s->out].neginf = 1;
      c->vals[s->out2].lo = -1;
      n++;
    }
  }
  return n;
}

/* Known bug strict_gather_tail: a strict gather checks the index rows of
 * a tile past the extent too, which hold what an earlier execution left.
 * While it is open, the live strict gathers whose index has a dynamic axis
 * become plain ones (an index out of range gives a row of zeros, which the
 * tracking has room for); how many did. */
static int unstrict(rp_case *c, pto_tensor *const *T) {
  int n = 0;
  for (int i = 0; i < c->n_steps && c->sw.strict_gather_tail; i++) {
    rp_step *s = &c->steps[i];
    if (s->kind != S_OP || s->op != O_GATHER ||
        !(s->flags & PTO_GATHER_STRICT) || !step_live(c, s) || !T[s->in[1]])
      continue;
    int dyn = 0;
    for (int d = 0; d < c->vals[s->in[1]].nd; d++)
      dyn |= pto_tensor_dim_dynamic(T[s->in[1]], d) >= 0;
    if (dyn) {
      s->flags &= ~(unsigned)PTO_GATHER_STRICT;
      n++;
    }
  }
  return n;
}

/* Drops the dims no axis has. */
static void drop_unused(rp_case *c) {
  for (int k = c->n_dims - 1; k >= 0; k--) {
    int used = 0;
    for (int i = 0; i < c->n_steps && !used; i++)
      for (int d = 0; d < 4 && !used; d++)
        used = c->steps[i].dim[d] == k + 1;
    if (!used)
      dims_drop(c, k);
  }
}

void dims_drop(rp_case *c, int k) {
  for (int i = 0; i < c->n_steps; i++)
    for (int d = 0; d < 4; d++) {
      int8_t *x = &c->steps[i].dim[d];
      *x = *x == k + 1 ? 0 : *x > k + 1 ? (int8_t)(*x - 1) : *x;
    }
  for (int i = 0; i < c->n_vals; i++)
    for (int d = 0; d < 4; d++) {
      int8_t *x = &c->vals[i].dim[d];
      *x = *x == k + 1 ? 0 : *x > k + 1 ? (int8_t)(*x - 1) : *x;
    }
  for (int b = 0; b < c->n_binds; b++)
    memmove(&c->binds[b].ext[k], &c->binds[b].ext[k + 1],
            (size_t)(c->n_dims - k - 1) * sizeof c->binds[b].ext[0]);
  memmove(&c->dims[k], &c->dims[k + 1],
          (size_t)(c->n_dims - k - 1) * sizeof c->dims[0]);
  c->n_dims--;
  if (!c->n_dims)
    c->n_binds = 0;
}

/* ---- what the builder and the tracking accept ---------------------------- */

/* The dims msg names ("dynamic dim 'D1'", or a shape "[D1<=33,...]",
 * "[D1[3:4],...]"), as a mask. */
static unsigned named_dims(const rp_case *c, const char *msg) {
  unsigned m = 0;
  const char *dd = strstr(msg, "dynamic dim '");
  for (int k = 0; dd && k < c->n_dims; k++) { /* the one refused */
    const size_t n = strlen(c->dims[k].name);
    if (!strncmp(dd + 13, c->dims[k].name, n) && dd[13 + n] == '\'')
      return 1u << k;
  }
  for (int k = 0; k < c->n_dims; k++) {
    char q[16], le[16], sl[16];
    snprintf(q, sizeof q, "'%s'", c->dims[k].name);
    snprintf(le, sizeof le, "%s<=", c->dims[k].name);
    snprintf(sl, sizeof sl, "%s[", c->dims[k].name);
    if (strstr(msg, q) || strstr(msg, le) || strstr(msg, sl))
      m |= 1u << k;
  }
  return m;
}

/* A refusal naming an input ("axis 1 of 'in3' f32[...]"): that input's
 * axes of the dims in mask become static; 0 if msg names no input. */
static int drop_at_input(rp_case *c, const char *msg, unsigned mask) {
  const char *q = strstr(msg, " of '");
  if (!q)
    return 0;
  q += 5;
  const size_t n = strcspn(q, "'");
  for (int i = 0; i < c->n_steps; i++) {
    rp_step *s = &c->steps[i];
    if (s->kind != S_INPUT || strlen(s->name) != n || strncmp(s->name, q, n))
      continue;
    int hit = 0;
    for (int d = 0; d < s->nd && d < 4; d++)
      if (s->dim[d] && (mask >> (s->dim[d] - 1) & 1)) {
        s->dim[d] = 0;
        hit = 1;
      }
    return hit;
  }
  return 0;
}

static int has_zero(const rp_val *v) {
  return v->special || (v->lo <= 0 && v->hi >= 0);
}

/* Axis `axis` of t must not be empty (an open bug's pattern needs it):
 * the least extent of its dim that keeps it so, into low. */
static void not_empty(const pto_tensor *t, int axis, int64_t *low) {
  const int k = t->dyn[axis];
  if (k < 0)
    return;
  const int64_t e = (t->dyn_off[axis] + t->dyn_mul[axis]) / t->dyn_mul[axis];
  low[k] = e > low[k] ? e : low[k];
}

/* The dims (a mask) whose extents the tracked values of c's live ops do
 * not follow (see the top of the file), or that an open bug's pattern
 * needs; T is c built. low[k]: the least extent of dim k an open bug
 * leaves alone. */
static unsigned unsound_dims(const rp_case *c, pto_tensor *const *T,
                             int64_t *low) {
  unsigned bad = 0;
  for (int k = 0; k < c->n_dims; k++)
    low[k] = 0;
  for (int i = 0; i < c->n_steps; i++) {
    const rp_step *s = &c->steps[i];
    if (s->kind != S_OP || !step_live(c, s) || !s->n_in || !T[s->in[0]])
      continue;
    const rp_val *a = &c->vals[s->in[0]];
    const pto_tensor *ta = T[s->in[0]];
    int dim = -1;
    const int maxlike =
        s->op == O_ROWMAX || s->op == O_ROWMIN || s->op == O_COLMAX;
    switch (s->op) {
    case O_MEAN:
    case O_VAR:
    case O_LAYER_NORM:
    case O_RMS_NORM:
      /* they divide by the bound extent k: a mean of k terms lies in
       * [lo, hi] and their error bounds grow with the count of terms, but
       * 1 / k rounds (a mean tracked as exact is not), and k = 0 makes a
       * mean or a variance 0 / 0 */
      dim = pto_tensor_dim_dynamic(ta, a->nd - 1);
      if (dim >= 0 && s->op == O_MEAN && c->vals[s->out].lvl != L_APPROX)
        break;
      if (s->op == O_MEAN || s->op == O_VAR)
        not_empty(ta, a->nd - 1, low);
      dim = -1;
      break;
    case O_ATTENTION: /* fewer keys: a query may have none (out 0, lse inf) */
      if (s->n_in == 3 && T[s->in[1]] &&
          pto_tensor_dim_dynamic(T[s->in[1]], 1) >= 0 &&
          !(has_zero(&c->vals[s->out]) && c->vals[s->out2].posinf))
        dim = pto_tensor_dim_dynamic(T[s->in[1]], 1);
      break;
    case O_ROWSUM:
    case O_ROWMAX:
    case O_ROWMIN:
    case O_COLSUM:
    case O_COLMAX: {
      const int col = s->op == O_COLSUM || s->op == O_COLMAX;
      dim = pto_tensor_dim_dynamic(ta, a->nd - 1 - col);
      if (maxlike && c->sw.empty_max_reduce)
        not_empty(ta, a->nd - 1 - col, low);
      if (dim >= 0 && has_zero(a))
        dim = -1;
      break;
    }
    case O_GATHER:
      if ((s->flags & PTO_GATHER_STRICT) && c->sw.empty_strict_gather)
        not_empty(ta, 1, low);
      /* its reader may be empty where it is not: no dim of the case is
       * bound to 0 while fused_empty_strict_gather is open */
      for (int k = 0; k < c->n_dims && (s->flags & PTO_GATHER_STRICT) &&
                      c->sw.fused_empty_strict_gather;
           k++)
        low[k] = low[k] > 1 ? low[k] : 1;
      break;
    case O_SOFTMAX: /* fused, it writes rows past a batch dim's extent */
      for (int d = 0; d < a->nd - 2 && c->sw.softmax_batch_tail; d++)
        if (pto_tensor_dim_dynamic(ta, d) >= 0)
          bad |= 1u << pto_tensor_dim_dynamic(ta, d);
      break;
    case O_MATMUL:
    case O_MATMUL_ACC:
    case O_MATMUL_MASKED: {
      const rp_val *b = &c->vals[s->in[1]];
      const int ta_ = (s->flags & PTO_MATMUL_TRANS_A) != 0,
                tb = (s->flags & PTO_MATMUL_TRANS_B) != 0;
      if (!T[s->in[1]] || has_zero(a) || has_zero(b))
        break; /* products of both signs: k terms lie in K terms' bounds */
      const int da = pto_tensor_dim_dynamic(ta, a->nd - 1 - ta_),
                db = pto_tensor_dim_dynamic(T[s->in[1]], b->nd - 2 + tb);
      if (da >= 0)
        bad |= 1u << da;
      dim = db;
      break;
    }
    default:
      break;
    }
    if (dim >= 0)
      bad |= 1u << dim;
  }
  return bad;
}

static pto_program *build(const rp_case *c, pto_tensor **T) {
  pto_program *p = pto_program_new("random");
  if (!p)
    abort();
  memset(T, 0, ((size_t)c->n_vals + 1) * sizeof *T);
  emit_program(c, p, T, NULL);
  return p;
}

/* ---- bindings ------------------------------------------------------------ */

typedef struct eqs {
  int n;
  pto_dim_eq *q; /* copies of the program's, without op and label */
} eqs;

static int eq_holds(const pto_dim_eq *q, const int64_t *ext) {
  return pto__dref_len(q->a, q->len, ext) == pto__dref_len(q->b, q->len, ext);
}

static int all_hold(const eqs *E, const int64_t *ext) {
  for (int i = 0; i < E->n; i++)
    if (!eq_holds(&E->q[i], ext))
      return 0;
  return 1;
}

/* The extent of r's dim that gives an axis of length len the valid length
 * want (or the nearest one below it), within [0, max]. */
static int64_t extent_for(pto_dref r, int64_t len, int64_t want, int64_t max) {
  int64_t e;
  if (want >= len)
    e = (len + r.off + r.mul - 1) / r.mul;
  else if (want <= 0)
    e = r.off / r.mul;
  else
    e = (want + r.off) / r.mul;
  return e < 0 ? 0 : e > max ? max : e;
}

static int find(int *up, int i) {
  while (up[i] != i)
    i = up[i] = up[up[i]];
  return i;
}

/* Changes ext until every equality holds: each broken one moves one of
 * its dims to the extent the other side asks for; what is still broken
 * after a few passes takes the maxima for every dim joined to it (every
 * axis is whole there, so every equality holds). */
static void repair(const rp_case *c, const eqs *E, rp_src *r, int64_t *ext) {
  for (int pass = 0; pass < 6 && !all_hold(E, ext); pass++)
    for (int i = 0; i < E->n; i++) {
      const pto_dim_eq *q = &E->q[i];
      const int64_t la = pto__dref_len(q->a, q->len, ext),
                    lb = pto__dref_len(q->b, q->len, ext);
      if (la == lb)
        continue;
      const int move_b = q->a.dim < 0 || (q->b.dim >= 0 && chance(r, 50));
      const pto_dref m = move_b ? q->b : q->a;
      ext[m.dim] = extent_for(m, q->len, move_b ? la : lb, c->dims[m.dim].max);
    }
  if (all_hold(E, ext))
    return;
  int up[RP_MAX_DIMS];
  for (int k = 0; k < c->n_dims; k++)
    up[k] = k;
  for (int i = 0; i < E->n; i++)
    if (E->q[i].a.dim >= 0 && E->q[i].b.dim >= 0)
      up[find(up, E->q[i].a.dim)] = find(up, E->q[i].b.dim);
  for (int i = 0; i < E->n; i++)
    if (!eq_holds(&E->q[i], ext)) {
      const int root =
          find(up, E->q[i].a.dim >= 0 ? E->q[i].a.dim : E->q[i].b.dim);
      for (int k = 0; k < c->n_dims; k++)
        if (find(up, k) == root)
          ext[k] = c->dims[k].max;
    }
}

/* The tile extents in force somewhere in c (and the defaults' usual
 * ones): where a tile grid's boundaries are. */
static int tile_sizes(const rp_case *c, int64_t *t) {
  int n = 0;
  uint32_t v[8];
  static const int64_t usual[] = {8, 16, 32, 64, 128};
  for (size_t i = 0; i < sizeof usual / sizeof usual[0]; i++)
    t[n++] = usual[i];
  for (int i = 0; i < c->n_steps + c->cfg.n_labels; i++) {
    int m = 0;
    if (i < c->n_steps) {
      const rp_step *s = &c->steps[i];
      const int k = s->kind;
      if (k == S_SET_VEC)
        m = 2;
      else if (k == S_SET_CUBE)
        m = 3;
      else if ((k == S_PUSH_TILE || k == S_PUSH_SCOPE) && s->has_tile)
        m = 5;
      memcpy(v, s->tile, sizeof s->tile);
    } else {
      const rp_label_cfg *l = &c->cfg.labels[i - c->n_steps];
      if (l->vec_set)
        v[m++] = l->vec[0], v[m++] = l->vec[1];
      if (l->cube_set)
        v[m++] = l->cube[0], v[m++] = l->cube[1], v[m++] = l->cube[2];
    }
    for (int j = 0; j < m && n < 64; j++) {
      int dup = v[j] < 2;
      for (int u = 0; u < n && !dup; u++)
        dup = t[u] == v[j];
      if (!dup)
        t[n++] = v[j];
    }
  }
  return n;
}

enum { B_ONES, B_MAX, B_TILE, B_ZERO, B_RANDOM };

static void propose(const rp_case *c, rp_src *r, int kind, const int64_t *tiles,
                    int n_tiles, int64_t *ext) {
  int zero_done = 0;
  for (int k = 0; k < c->n_dims; k++) {
    const int64_t M = c->dims[k].max;
    int64_t v = M;
    if (kind == B_ONES)
      v = 1;
    else if (kind == B_TILE) {
      int64_t t = tiles[pick(r, (uint32_t)n_tiles)];
      if (t > M)
        t = M;
      v = t * (1 + (int64_t)pick(r, (uint32_t)(M / t)));
      v += (int64_t)pick(r, 3) - 1; /* on it, or just either side */
    } else if (kind == B_ZERO &&
               (chance(r, 50) || (!zero_done && k == c->n_dims - 1))) {
      v = 0;
      zero_done = 1;
    } else if (kind == B_ZERO || kind == B_RANDOM) {
      v = chance(r, 30) ? 1 + (int64_t)pick(r, M < 4 ? (uint32_t)M : 4)
                        : (int64_t)pick(r, (uint32_t)M + 1);
    }
    ext[k] = v < 0 ? 0 : v > M ? M : v;
  }
}

/* One binding that breaks an equality: the maxima but one dim moved so
 * that an equality's two sides differ; 0 when none can be. */
static int breaking(const rp_case *c, const eqs *E, rp_src *r, int64_t *ext) {
  if (!E->n)
    return 0;
  for (int tries = 0; tries < 8; tries++) {
    for (int k = 0; k < c->n_dims; k++)
      ext[k] = c->dims[k].max;
    const pto_dim_eq *q = &E->q[pick(r, (uint32_t)E->n)];
    const pto_dref m = q->b.dim >= 0 && chance(r, 50) ? q->b : q->a;
    if (m.dim < 0)
      continue;
    const int64_t M = c->dims[m.dim].max;
    const int64_t vs[4] = {M - 1, 0, 1, M / 2};
    for (int j = 0; j < 4; j++) {
      ext[m.dim] = vs[j] < 0 ? 0 : vs[j];
      if (!eq_holds(q, ext))
        return 1;
    }
  }
  return 0;
}

static void choose_bindings(rp_case *c, const eqs *E, const int64_t *low,
                            rp_src *r) {
  int64_t tiles[64];
  const int n_tiles = tile_sizes(c, tiles);
  static const int kinds[] = {B_ONES,   B_MAX,    B_TILE, B_ZERO,
                              B_RANDOM, B_RANDOM, B_TILE};
  const int n = 4 + (int)pick(r, 4);
  c->n_binds = 0;
  for (int i = 0; i < n; i++) {
    rp_bind *b = &c->binds[c->n_binds];
    memset(b, 0, sizeof *b);
    propose(c, r, kinds[i], tiles, n_tiles, b->ext);
    repair(c, E, r, b->ext);
    int below = 0; /* an open bug keeps these dims from small extents */
    for (int k = 0; k < c->n_dims; k++)
      if (b->ext[k] < low[k])
        b->ext[k] = low[k], below = 1;
    if (below)
      repair(c, E, r, b->ext);
    for (int k = 0; k < c->n_dims; k++)
      if (b->ext[k] < low[k])
        for (int j = 0; j < c->n_dims; j++)
          b->ext[j] = c->dims[j].max;
    int dup = 0;
    for (int j = 0; j < c->n_binds && !dup; j++)
      dup = !memcmp(c->binds[j].ext, b->ext, sizeof b->ext);
    if (!dup)
      c->n_binds++;
  }
  if (c->n_binds < RP_MAX_BINDS && chance(r, 40)) {
    rp_bind *b = &c->binds[c->n_binds];
    memset(b, 0, sizeof *b);
    if (breaking(c, E, r, b->ext)) {
      b->expect = PTO_ESHAPE;
      /* somewhere in the middle: the run must still work after it */
      const int at = (int)pick(r, (uint32_t)c->n_binds + 1);
      rp_bind t = *b;
      memmove(&c->binds[at + 1], &c->binds[at],
              (size_t)(c->n_binds - at) * sizeof *b);
      c->binds[at] = t;
      c->n_binds++;
    }
  }
}

/* A dim an op matched with a static axis of its maximum can only be bound
 * to that: widening gives it every static axis of that extent of the
 * inputs and fills too, which frees it where the static axis was one of
 * them. The steps' dims go to before first; 0 if nothing is pinned. */
static int widen(rp_case *c, const pto_program *p, int8_t (*before)[4]) {
  unsigned pinned = 0;
  for (unsigned i = 0; i < p->n_eqs; i++)
    if ((p->eqs[i].a.dim < 0) != (p->eqs[i].b.dim < 0))
      pinned |=
          1u << (p->eqs[i].a.dim >= 0 ? p->eqs[i].a.dim : p->eqs[i].b.dim);
  if (!pinned)
    return 0;
  int n = 0;
  for (int i = 0; i < c->n_steps; i++) {
    rp_step *s = &c->steps[i];
    memcpy(before[i], s->dim, sizeof s->dim);
    for (int d = 0; has_shape(s) && d < s->nd && d < 4; d++)
      for (int k = 0; k < c->n_dims && !s->dim[d]; k++)
        if (pinned >> k & 1 && s->shape[d] == c->dims[k].max) {
          s->dim[d] = (int8_t)(k + 1);
          n++;
        }
  }
  return n > 0;
}

/* ---- the overlay --------------------------------------------------------- */

void dims_overlay(rp_case *c, uint64_t seed) {
  rp_src r;
  memset(&r, 0, sizeof r);
  r.s = seed * 0xd1342543de82ef95ull ^ 0x2545f4914f6cdd1dull;
  c->n_dims = c->n_binds = 0;
  if (!chance(&r, 35))
    return;
  /* the case as the seed made it: what a case that keeps no dim goes back
   * to (topks made masked and gathers made plain included) */
  rp_step *steps0 = malloc(((size_t)c->n_steps + 1) * sizeof *steps0);
  rp_val *vals0 = malloc(((size_t)c->n_vals + 1) * sizeof *vals0);
  pto_tensor **T = calloc((size_t)c->n_vals + 1, sizeof *T);
  if (!steps0 || !vals0 || !T)
    abort();
  memcpy(steps0, c->steps, (size_t)c->n_steps * sizeof *steps0);
  memcpy(vals0, c->vals, (size_t)c->n_vals * sizeof *vals0);
  choose(c, &r);
  mark_live(c);
  /* the steps' dims before widening (below), while it is tried */
  int8_t(*before)[4] = malloc(((size_t)c->n_steps + 1) * sizeof *before);
  int widened = 0, trying = 0;
  if (!before)
    abort();
  for (;;) {
    drop_unused(c);
    if (!c->n_dims)
      break;
    pto_program *p = build(c, T);
    unsigned drop = 0;
    int64_t low[RP_MAX_DIMS] = {0};
    if (trying && (pto_program_status(p) != PTO_OK ||
                   unsound_dims(c, T, low))) { /* back to what worked */
      for (int i = 0; i < c->n_steps; i++)
        memcpy(c->steps[i].dim, before[i], sizeof before[i]);
      trying = 0;
      pto_program_free(p);
      continue;
    }
    trying = 0;
    if (pto_program_status(p) != PTO_OK) {
      drop = named_dims(c, pto_program_error(p));
      if (drop && strstr(pto_program_error(p), "pto_topk_masked selects") &&
          topk_to_masked(c)) {
        pto_program_free(p);
        continue;
      }
      if (drop && pto_program_status(p) == PTO_ENOTSUP &&
          drop_at_input(c, pto_program_error(p), drop)) {
        pto_program_free(p);
        continue; /* that input static, the dim elsewhere kept */
      }
      if (!drop) { /* not about a dim: what the static program does */
        const int n = c->n_dims;
        rp_dim keep[RP_MAX_DIMS];
        memcpy(keep, c->dims, sizeof keep);
        c->n_dims = 0;
        pto_program *q = build(c, T);
        const int static_ok = pto_program_status(q) == PTO_OK;
        pto_program_free(q);
        c->n_dims = n;
        memcpy(c->dims, keep, sizeof keep);
        if (static_ok) { /* dynamic only: a finding the run reports */
          pto_program_free(p);
          c->n_binds = 1;
          for (int k = 0; k < n; k++)
            c->binds[0].ext[k] = c->dims[k].max;
          break;
        }
        drop = (1u << c->n_dims) - 1;
      }
    } else {
      drop = unsound_dims(c, T, low);
    }
    if (!drop && unstrict(c, T)) {
      pto_program_free(p);
      continue;
    }
    if (!drop && !widened && widen(c, p, before)) {
      widened = trying = 1; /* once: if it fails, back to this */
      pto_program_free(p);
      continue;
    }
    if (!drop) {
      eqs E = {(int)p->n_eqs, malloc(((size_t)p->n_eqs + 1) * sizeof *E.q)};
      if (!E.q)
        abort();
      for (int i = 0; i < E.n; i++)
        E.q[i] = p->eqs[i];
      for (int i = 0; i < c->n_vals; i++) {
        const pto_tensor *t = T[i];
        for (int d = 0; t && d < t->ndim && d < 4; d++)
          c->vals[i].dim[d] =
              (int8_t)(t->dyn[d] >= 0 && !t->dyn_off[d] && t->dyn_mul[d] == 1
                           ? t->dyn[d] + 1
                           : 0);
      }
      pto_program_free(p);
      choose_bindings(c, &E, low, &r);
      free(E.q);
      break;
    }
    pto_program_free(p);
    for (int k = c->n_dims - 1; k >= 0; k--)
      if (drop >> k & 1)
        dims_drop(c, k);
  }
  if (!c->n_dims) {
    memcpy(c->steps, steps0, (size_t)c->n_steps * sizeof *steps0);
    memcpy(c->vals, vals0, (size_t)c->n_vals * sizeof *vals0);
  }
  free(steps0);
  free(vals0);
  free(before);
  free(T);
}
