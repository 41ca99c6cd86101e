/* A tile program as an op (pto/tileprog.h): every block and iteration
 * checked when it is recorded (windows, reads, the outputs' coverage), a
 * tuned program built again for a config's tile, and the evaluator that
 * runs its instructions block by block with the scalar reference. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/build.h"
#include "pto/tileop.h"
#include "tileops/tileops.h"
#include "tileops/tprog.h"

/* ---- the op: every block checked -------------------------------------- */

typedef struct vcheck {
  const pto_tprog_def *d;
  int64_t block;
  uint8_t *defined;    /* per tile: written in this block */
  uint8_t *cover[PTO_NODE_MAX_OUT]; /* per output element: stored */
  int64_t insts, total;                 /* unrolled: this block's, all */
  char *msg;
  size_t size;
  pto_status st;
} vcheck;

static int vfail(vcheck *c, pto_status st, uint32_t i, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int vfail(vcheck *c, pto_status st, uint32_t i, const char *fmt, ...) {
  const pto_tp_inst *in = &c->d->insts[i];
  const char *insn = in->kind == PTO_TPI_LOAD    ? "TLOAD"
                     : in->kind == PTO_TPI_STORE ? "TSTORE"
                                                 : pto__insn_name(in->op);
  int n = snprintf(c->msg, c->size, "block %" PRId64 ", instruction %" PRIu32
                   " (%s): ", c->block, i, insn);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < c->size)
    vsnprintf(c->msg + n, c->size - (size_t)n, fmt, ap);
  va_end(ap);
  c->st = st;
  return 1;
}

static int check_window(vcheck *c, uint32_t i, const int64_t *vars) {
  const pto_tp_inst *in = &c->d->insts[i];
  const pto_tp_arg *a = &c->d->args[in->arg];
  const pto_tp_tile *t =
      &c->d->tiles[in->kind == PTO_TPI_LOAD ? in->dst[0] : in->src[0]];
  int64_t at[4], ext[4], shape[4];
  pto__tprog_window(c->d, in, vars, at, ext);
  const int pad = 4 - a->ndim;
  for (int x = 0; x < 4; x++)
    shape[x] = x < pad ? 1 : a->shape[x - pad];
  for (int x = 0; x < 4; x++)
    if (at[x] < 0 || ext[x] > shape[x] || at[x] > shape[x] - ext[x]) {
      char o[96], e[96], s[96];
      int no = 0, ne = 0, ns = 0;
      for (int y = pad; y < 4; y++) {
        no += snprintf(o + no, sizeof o - (size_t)no, "%s%" PRId64,
                       y > pad ? "," : "", at[y]);
        ne += snprintf(e + ne, sizeof e - (size_t)ne, "%s%" PRId64,
                       y > pad ? "," : "", ext[y]);
        ns += snprintf(s + ns, sizeof s - (size_t)ns, "%s%" PRId64,
                       y > pad ? "," : "", shape[y]);
      }
      return vfail(c, PTO_ERANGE, i,
                   "tile '%s' %" PRIu32 "x%" PRIu32 "%s: window [%s] from "
                   "[%s] leaves %s '%s' %s[%s]",
                   t->name, t->rows, t->cols,
                   in->flags & PTO_TP_TRANS ? " (transposed)" : "", e, o,
                   a->is_out ? "output" : "input", a->name,
                   pto_dtype_name(a->dtype), s);
    }
  if (!a->is_out)
    return 0;
  /* every element of an output stored once */
  int64_t stride[4];
  int64_t s = 1;
  for (int x = 3; x >= 0; x--) {
    stride[x] = s;
    s *= shape[x];
  }
  uint8_t *cv = c->cover[a->index];
  for (int64_t b0 = 0; b0 < ext[0]; b0++)
    for (int64_t b1 = 0; b1 < ext[1]; b1++)
      for (int64_t r = 0; r < ext[2]; r++)
        for (int64_t q = 0; q < ext[3]; q++) {
          const int64_t j = (at[0] + b0) * stride[0] + (at[1] + b1) * stride[1] +
                            (at[2] + r) * stride[2] + (at[3] + q) * stride[3];
          if (cv[j >> 3] & (1u << (j & 7)))
            return vfail(c, PTO_EINVAL, i,
                         "tile '%s' stores element %" PRId64 " of output '%s' "
                         "again: every element is stored by one store",
                         t->name, j, a->name);
          cv[j >> 3] |= (uint8_t)(1u << (j & 7));
        }
  return 0;
}

static int check_visit(void *ctx, uint32_t i, const int64_t *vars) {
  vcheck *c = ctx;
  const pto_tp_inst *in = &c->d->insts[i];
  if (++c->insts > PTO_TPROG_BLOCK_INSTS_MAX)
    return vfail(c, PTO_ECAPACITY, i, "block %" PRId64 "'s loops unroll to "
                 "more than %d instructions, which run as one task: split "
                 "its work over more blocks", c->block,
                 PTO_TPROG_BLOCK_INSTS_MAX);
  if (++c->total > PTO_TPROG_INSTS_MAX)
    return vfail(c, PTO_ECAPACITY, i, "its %" PRId64 " blocks unroll to "
                 "more than %d instructions in all (at block %" PRId64 ")",
                 pto__tprog_blocks(c->d), PTO_TPROG_INSTS_MAX, c->block);
  if (in->kind == PTO_TPI_LOAD || in->kind == PTO_TPI_STORE)
    if (check_window(c, i, vars))
      return 1;
  for (int k = 0; k < in->n_src; k++)
    if (!c->defined[in->src[k]])
      return vfail(c, PTO_EINVAL, i, "reads tile '%s' before anything wrote "
                   "it in this block", c->d->tiles[in->src[k]].name);
  if (in->kind == PTO_TPI_INSN && !c->defined[in->dst[0]] &&
      pto__facts_acc(pto__insn_facts(in->op), in->iflags))
    return vfail(c, PTO_EINVAL, i, "accumulates into tile '%s' before "
                 "anything wrote it in this block (TMATMUL starts it)",
                 c->d->tiles[in->dst[0]].name);
  for (int k = 0; k < in->n_dst; k++)
    c->defined[in->dst[k]] = 1;
  return 0;
}

static int64_t arg_numel(const pto_tp_arg *a) {
  int64_t n = 1;
  for (int x = 0; x < a->ndim; x++)
    n *= a->shape[x];
  return n;
}

/* Every block's windows inside their tensors, no tile read before it is
 * written, every output element stored exactly once. */
static pto_status check_blocks(const pto_tprog_def *d, char *msg,
                               size_t size) {
  vcheck c = {d, 0, NULL, {NULL}, 0, 0, msg, size, PTO_OK};
  for (int a = 0; a < d->n_args; a++) {
    const pto_tp_arg *g = &d->args[a];
    if (!g->is_out)
      continue;
    if (arg_numel(g) > (INT64_C(1) << 34)) {
      snprintf(msg, size, "output '%s' has %" PRId64 " elements: at most 2^34",
               g->name, arg_numel(g));
      c.st = PTO_ENOTSUP;
      goto out;
    }
    if (!(c.cover[g->index] = calloc((size_t)(arg_numel(g) + 7) / 8, 1))) {
      c.st = PTO_ENOMEM;
      snprintf(msg, size, "out of memory");
      goto out;
    }
  }
  if (!(c.defined = malloc((size_t)d->n_tiles + 1))) {
    c.st = PTO_ENOMEM;
    snprintf(msg, size, "out of memory");
    goto out;
  }
  const int64_t nb = pto__tprog_blocks(d);
  for (c.block = 0; c.block < nb && !c.st; c.block++) {
    memset(c.defined, 0, (size_t)d->n_tiles + 1);
    c.insts = 0;
    pto__tprog_walk(d, c.block, check_visit, &c);
  }
  for (int a = 0; a < d->n_args && !c.st; a++) {
    const pto_tp_arg *g = &d->args[a];
    if (!g->is_out)
      continue;
    for (int64_t j = 0; j < arg_numel(g); j++)
      if (!(c.cover[g->index][j >> 3] & (1u << (j & 7)))) {
        snprintf(msg, size, "no block stores element %" PRId64 " of output "
                 "'%s' (every element is stored by one store)", j, g->name);
        c.st = PTO_EINVAL;
        break;
      }
  }
out:
  free(c.defined);
  for (int k = 0; k < PTO_NODE_MAX_OUT; k++)
    free(c.cover[k]);
  return c.st;
}

pto_status pto_tile_program(pto_program *p, const pto_tprog *tp, int n_in,
                            pto_tensor *const *in, pto_tensor **out) {
  if (!p)
    return PTO_EINVAL;
  const int n_out = tp ? tp->d.n_outputs : 0;
  for (int k = 0; out && k < n_out; k++)
    out[k] = NULL;
  if (!tp || !out)
    return pto_program_fail(p, PTO_EINVAL, "tile_program",
                            "no tile program or no array for its outputs");
  const pto_tprog_def *d = &tp->d;
  if (tp->err.status)
    return pto_program_fail(p, tp->err.status, "tile_program", "%s",
                            tp->err.msg);
  if (tp->depth)
    return pto_program_fail(p, PTO_EINVAL, "tile_program",
                            "tile program '%s': %d loops not ended", d->name,
                            tp->depth);
  if (!n_out)
    return pto_program_fail(p, PTO_EINVAL, "tile_program",
                            "tile program '%s' has no output", d->name);
  if (n_in != d->n_inputs || (n_in && !in))
    return pto_program_fail(p, PTO_EINVAL, "tile_program",
                            "tile program '%s' takes %d inputs, it was "
                            "given %d", d->name, d->n_inputs, n_in);
  if (!pto__check_operands(p, "tile_program", n_in, in))
    return pto_program_status(p);
  for (int a = 0; a < d->n_args; a++) {
    const pto_tp_arg *g = &d->args[a];
    if (g->is_out)
      continue;
    const pto_tensor *t = in[g->index];
    int same = t->dtype == g->dtype && t->ndim == g->ndim;
    for (int x = 0; same && x < g->ndim; x++)
      same = t->shape[x] == g->shape[x];
    if (!same) {
      char want[96], have[64];
      pto__shape_str(g->ndim, g->shape, want, sizeof want);
      return pto_program_fail(p, PTO_ESHAPE, "tile_program",
                              "tile program '%s': input '%s' is declared "
                              "%s%s, it was given %s",
                              d->name, g->name, pto_dtype_name(g->dtype), want,
                              pto__tensor_desc(t, have, sizeof have));
    }
  }
  char msg[400];
  pto_status st = check_blocks(d, msg, sizeof msg);
  if (st)
    return pto_program_fail(p, st, "tile_program", "tile program '%s': %s",
                            d->name, msg);
  const pto_tp_arg *o[PTO_NODE_MAX_OUT] = {NULL, NULL};
  for (int a = 0; a < d->n_args; a++)
    if (d->args[a].is_out)
      o[d->args[a].index] = &d->args[a];
  pto_node *n = pto__new_node(p, PTO_TOP_TILE_PROGRAM, n_in, in, o[0]->dtype,
                              o[0]->ndim, o[0]->shape);
  if (!n)
    return pto_program_status(p);
  if (n_out > 1) {
    pto_tensor *t = pto__new_root(p, "tile_program", o[1]->dtype, o[1]->ndim,
                                  o[1]->shape, NULL);
    if (!t)
      return pto_program_status(p);
    t->producer = n;
    n->out[1] = t;
    n->n_out = 2;
  }
  if (!(n->tprog = pto__tprog_copy(&p->arena, d)))
    return pto_program_fail(p, PTO_ENOMEM, "tile_program", "out of memory");
  if (!pto__node_dims(p, n))
    return pto_program_status(p);
  for (int k = 0; k < n_out; k++)
    out[k] = n->out[k];
  return PTO_OK;
}

/* ---- tuned programs: built again for a config's tile -------------------- */

/* Whether b takes and gives a's tensors: names in the message. */
static int same_args(const pto_tprog_def *a, const pto_tprog_def *b,
                     char *msg, size_t size) {
  if (a->n_args != b->n_args || a->n_inputs != b->n_inputs) {
    snprintf(msg, size, "built again for the config's tile, '%s' has %d "
             "inputs and %d outputs, it had %d and %d", b->name, b->n_inputs,
             b->n_outputs, a->n_inputs, a->n_outputs);
    return 0;
  }
  for (int i = 0; i < a->n_args; i++) {
    const pto_tp_arg *x = &a->args[i], *y = &b->args[i];
    int same = x->is_out == y->is_out && x->dtype == y->dtype &&
               x->ndim == y->ndim;
    for (int k = 0; same && k < x->ndim; k++)
      same = x->shape[k] == y->shape[k];
    if (!same) {
      char sx[96], sy[96];
      pto__shape_str(x->ndim, x->shape, sx, sizeof sx);
      pto__shape_str(y->ndim, y->shape, sy, sizeof sy);
      snprintf(msg, size, "built again for the config's tile, '%s' %s %d is "
               "'%s' %s%s, it was '%s' %s%s", b->name,
               y->is_out ? "output" : "input", y->index, y->name,
               pto_dtype_name(y->dtype), sy, x->name,
               pto_dtype_name(x->dtype), sx);
      return 0;
    }
  }
  return 1;
}

static pto_status tprog_rebuild(const pto_tprog_def *d,
                                const pto_tile_shape *tile, int n_in,
                                pto_tensor *const *in, pto_arena *a,
                                const pto_tprog_def **out, char *msg,
                                size_t size) {
  pto_tprog *tp = d->build(tile, n_in, in, d->user);
  char tl[96];
  snprintf(tl, sizeof tl, "vec %ux%u, cube %ux%ux%u", tile->vec_rows,
           tile->vec_cols, tile->cube_m, tile->cube_n, tile->cube_k);
  pto_status st = PTO_OK;
  if (!tp) {
    snprintf(msg, size, "tile program '%s': its builder gave no program for "
             "the config's tile (%s)", d->name, tl);
    return PTO_EINVAL;
  }
  if (tp->err.status || tp->depth) {
    st = tp->err.status ? tp->err.status : PTO_EINVAL;
    snprintf(msg, size, "for the config's tile (%s): %s", tl,
             tp->err.status ? tp->err.msg : "loops not ended");
  } else if (!same_args(d, &tp->d, msg, size)) {
    st = PTO_EINVAL;
  } else {
    char m[400];
    st = check_blocks(&tp->d, m, sizeof m);
    if (st)
      snprintf(msg, size, "tile program '%s' for the config's tile (%s): %s",
               tp->d.name, tl, m);
  }
  if (!st) {
    tp->d.build = d->build;
    tp->d.user = d->user;
    tp->d.rebuild = d->rebuild;
    if (!(*out = pto__tprog_copy(a, &tp->d))) {
      st = PTO_ENOMEM;
      snprintf(msg, size, "out of memory");
    }
  }
  pto_tprog_free(tp);
  return st;
}

pto_status pto_tile_program_tuned(pto_program *p, pto_tprog_build_fn build,
                                  void *user, int n_in, pto_tensor *const *in,
                                  pto_tensor **out) {
  if (!p)
    return PTO_EINVAL;
  if (!build || !out)
    return pto_program_fail(p, PTO_EINVAL, "tile_program",
                            "no builder or no array for its outputs");
  if (!pto__check_operands(p, "tile_program", n_in, in))
    return pto_program_status(p);
  const pto_tile_shape tile = pto_program_tile(p);
  pto_tprog *tp = build(&tile, n_in, in, user);
  if (!tp)
    return pto_program_fail(p, PTO_EINVAL, "tile_program",
                            "its builder gave no program");
  tp->d.build = build;
  tp->d.user = user;
  tp->d.rebuild = tprog_rebuild;
  pto_status st = pto_tile_program(p, tp, n_in, in, out);
  pto_tprog_free(tp);
  return st;
}

/* ---- the evaluator ------------------------------------------------------ */

typedef struct veval {
  const pto_tprog_def *d;
  const pto_tp_view *views;
  /* per declared tile: its buffer, and a spare made the first time an
   * instruction reads its old value while writing it */
  pto_tile *tiles, *tmp;
  char *msg;
  size_t size;
} veval;

static pto_gview gview_of(const veval *v, const pto_tp_inst *in,
                          const int64_t *vars) {
  const pto_tp_view *w = &v->views[in->arg];
  const pto_tp_span s = pto__tprog_span(v->d, in, vars, w->stride);
  pto_gview g;
  g.base = (char *)w->base + (size_t)s.off * pto_dtype_size(w->dtype);
  g.dtype = w->dtype;
  g.rows = s.rows;
  g.cols = s.cols;
  g.row_stride = s.rs;
  g.col_stride = s.cs;
  return g;
}

static int eval_visit(void *ctx, uint32_t i, const int64_t *vars) {
  veval *v = ctx;
  const pto_tp_inst *in = &v->d->insts[i];
  pto_targs a;
  memset(&a, 0, sizeof a);
  int op = in->op;
  if (in->kind != PTO_TPI_INSN) {
    op = in->kind == PTO_TPI_LOAD ? PTO_OP_TLOAD : PTO_OP_TSTORE;
    a.g = gview_of(v, in, vars);
  }
  for (int k = 0; k < in->n_dst; k++)
    a.dst[k] = &v->tiles[in->dst[k]];
  for (int k = 0; k < in->n_src; k++) {
    const pto_tile *s = &v->tiles[in->src[k]];
    int alias = 0;
    for (int j = 0; j < in->n_dst; j++)
      alias |= in->dst[j] == in->src[k];
    if (alias && !pto__insn_facts(op)->inplace) { /* read the old value */
      pto_tile *c = &v->tmp[in->src[k]];
      const size_t bytes = pto_tile_bytes(s->dtype, s->rows, s->cols);
      if (!c->data &&
          !(*c = pto__tprog_tile(&v->d->tiles[in->src[k]],
                                 aligned_alloc(PTO_TILE_ALIGN, bytes)))
               .data) {
        snprintf(v->msg, v->size, "out of memory for its tiles");
        return PTO_ENOMEM;
      }
      memcpy(c->data, s->data, bytes);
      s = c;
    }
    a.src[k] = s;
  }
  a.s = in->s;
  a.flags = in->iflags;
  for (int k = 0; k < 2; k++)
    a.imm[k] = (int32_t)pto__tp_eval(&in->imm[k], vars);
  const int st = op < PTO_OP_COUNT ? pto__isa_ref(op, &a)
                                   : pto__custom_run(op, &a);
  if (st) {
    snprintf(v->msg, v->size, "instruction %" PRIu32 " (%s) failed: %s", i,
             pto__insn_name(op), pto_status_name(st));
    return st < 0 ? st : PTO_EINVAL;
  }
  return 0;
}

pto_status pto__tprog_eval(const pto_tprog_def *d, const pto_tp_view *views,
                           char *msg, size_t msg_size) {
  veval v = {d, views, calloc((size_t)d->n_tiles + 1, sizeof *v.tiles),
             calloc((size_t)d->n_tiles + 1, sizeof *v.tmp), msg, msg_size};
  pto_status st = v.tiles && v.tmp ? PTO_OK : PTO_ENOMEM;
  for (int i = 0; !st && i < d->n_tiles; i++) {
    const pto_tp_tile *t = &d->tiles[i];
    const size_t bytes = pto_tile_bytes(t->dtype, t->rows, t->cols);
    v.tiles[i] = pto__tprog_tile(t, aligned_alloc(PTO_TILE_ALIGN, bytes));
    if (!v.tiles[i].data)
      st = PTO_ENOMEM;
    else
      memset(v.tiles[i].data, 0, bytes);
  }
  if (st == PTO_ENOMEM)
    snprintf(msg, msg_size, "out of memory for its tiles");
  const int64_t nb = pto__tprog_blocks(d);
  for (int64_t b = 0; !st && b < nb; b++)
    st = pto__tprog_walk(d, b, eval_visit, &v);
  for (int i = 0; i < d->n_tiles; i++) {
    if (v.tiles)
      free(v.tiles[i].data);
    if (v.tmp)
      free(v.tmp[i].data);
  }
  free(v.tiles);
  free(v.tmp);
  return st;
}
