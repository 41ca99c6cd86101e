/* Tile programs (pto/tileprog.h): the builder, its checks against the
 * instruction table (core/isa.h) and the operand rules (tileops/check.c),
 * the op a tensor program records (core/tprog.h), and the evaluator that
 * runs a program's instructions with the scalar reference. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/build.h"
#include "core/custom.h"
#include "core/error.h"
#include "core/tprog.h"
#include "pto/tileop.h"
#include "tileops/tileops.h"

struct pto_tprog {
  pto_tprog_def d;
  unsigned cap_args, cap_tiles, cap_insts;
  uint32_t open[PTO_TP_VARS]; /* the open loops' FOR instructions */
  int depth;
  pto_error err;
};

static pto_status tp_fail(pto_tprog *tp, pto_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pto_status tp_fail(pto_tprog *tp, pto_status st, const char *fmt, ...) {
  if (tp->err.status)
    return tp->err.status;
  char m[PTO_ERROR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  return pto__error_set(&tp->err, st, "tile program '%s': %s", tp->d.name, m);
}

static pto_status tprog_eval(const pto_tprog_def *d, const pto_tp_view *views,
                             char *msg, size_t msg_size);

pto_tprog *pto_tprog_new(const char *name, int ngrid, const int64_t *grid) {
  pto_tprog *tp = calloc(1, sizeof *tp);
  if (!tp || !(tp->d.name = strdup(name && name[0] ? name : "tile_program"))) {
    free(tp);
    return NULL;
  }
  tp->d.eval = tprog_eval;
  tp->d.core = PTO_CORE_VECTOR;
  if (ngrid < 1 || ngrid > PTO_TP_GRID_MAX || !grid) {
    tp_fail(tp, PTO_EINVAL, "a grid of %d dims (1..%d)", ngrid,
            PTO_TP_GRID_MAX);
    return tp;
  }
  int64_t blocks = 1;
  for (int g = 0; g < ngrid; g++) {
    if (grid[g] < 1 || grid[g] > (INT64_C(1) << 31) / blocks) {
      tp_fail(tp, PTO_EINVAL,
              "grid dim %d has %" PRId64 " blocks (>= 1, and 2^31 in all)", g,
              grid[g]);
      return tp;
    }
    blocks *= grid[g];
    tp->d.grid[g] = grid[g];
  }
  tp->d.ngrid = ngrid;
  return tp;
}

void pto_tprog_free(pto_tprog *tp) {
  if (!tp)
    return;
  for (int i = 0; i < tp->d.n_args; i++)
    free((char *)tp->d.args[i].name);
  for (int i = 0; i < tp->d.n_tiles; i++)
    free((char *)tp->d.tiles[i].name);
  free(tp->d.args);
  free(tp->d.tiles);
  free(tp->d.insts);
  free((char *)tp->d.name);
  free(tp);
}

pto_status pto_tprog_status(const pto_tprog *tp) {
  return tp ? tp->err.status : PTO_EINVAL;
}

const char *pto_tprog_error(const pto_tprog *tp) {
  return tp ? tp->err.msg : "no tile program";
}

pto_status pto_tprog_fail(pto_tprog *tp, pto_status status, const char *fmt,
                          ...) {
  if (!tp || !fmt || status >= 0)
    return PTO_EINVAL;
  char m[PTO_ERROR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  return tp_fail(tp, status, "%s", m);
}

int pto_tprog_block(pto_tprog *tp, int dim) {
  if (!tp)
    return -1;
  if (dim < 0 || dim >= tp->d.ngrid) {
    tp_fail(tp, PTO_EINVAL, "block index of grid dim %d: the grid has %d",
            dim, tp->d.ngrid);
    return -1;
  }
  return dim;
}

/* ---- declarations ------------------------------------------------------- */

static int add_arg(pto_tprog *tp, const char *name, pto_dtype dt, int ndim,
                   const int64_t *shape, int is_out) {
  if (!tp || tp->err.status)
    return -1;
  const char *what = is_out ? "output" : "input";
  name = name && name[0] ? name : what;
  if ((unsigned)dt >= PTO_DTYPE_COUNT)
    return tp_fail(tp, PTO_EDTYPE, "%s '%s' has dtype %d", what, name,
                   (int)dt),
           -1;
  if (ndim < 1 || ndim > 4 || !shape)
    return tp_fail(tp, PTO_EINVAL, "%s '%s' has %d dims (1..4)", what, name,
                   ndim),
           -1;
  for (int x = 0; x < ndim; x++)
    if (shape[x] < 1 || shape[x] > (INT64_C(1) << 40))
      return tp_fail(tp, PTO_ESHAPE,
                     "%s '%s' dim %d is %" PRId64 " (static, >= 1)", what,
                     name, x, shape[x]),
             -1;
  pto_tprog_def *d = &tp->d;
  const int n_same = is_out ? d->n_outputs : d->n_inputs;
  const int max = is_out ? PTO_NODE_MAX_OUT : PTO_NODE_MAX_IN;
  if (n_same >= max)
    return tp_fail(tp, PTO_EINVAL, "%s '%s': at most %d %ss", what, name, max,
                   what),
           -1;
  if (pto__grow((void **)&d->args, sizeof *d->args, &tp->cap_args,
                (unsigned)d->n_args + 1))
    return tp_fail(tp, PTO_ENOMEM, "out of memory"), -1;
  pto_tp_arg *a = &d->args[d->n_args];
  memset(a, 0, sizeof *a);
  if (!(a->name = strdup(name)))
    return tp_fail(tp, PTO_ENOMEM, "out of memory"), -1;
  a->dtype = dt;
  a->ndim = ndim;
  memcpy(a->shape, shape, (size_t)ndim * sizeof *shape);
  a->is_out = (uint8_t)is_out;
  a->index = (uint8_t)n_same;
  if (is_out)
    d->n_outputs++;
  else
    d->n_inputs++;
  return d->n_args++;
}

int pto_tprog_input(pto_tprog *tp, const char *name, pto_dtype dt, int ndim,
                    const int64_t *shape) {
  return add_arg(tp, name, dt, ndim, shape, 0);
}

int pto_tprog_output(pto_tprog *tp, const char *name, pto_dtype dt, int ndim,
                     const int64_t *shape) {
  return add_arg(tp, name, dt, ndim, shape, 1);
}

int pto_tprog_tile(pto_tprog *tp, const char *name, pto_mem_level lvl,
                   pto_dtype dt, uint32_t rows, uint32_t cols, int count) {
  if (!tp || tp->err.status)
    return -1;
  name = name && name[0] ? name : "tile";
  if ((unsigned)lvl >= PTO_MEM_LEVEL_COUNT)
    return tp_fail(tp, PTO_EINVAL, "tile '%s' has memory level %d", name,
                   (int)lvl),
           -1;
  if ((unsigned)dt >= PTO_DTYPE_COUNT)
    return tp_fail(tp, PTO_EDTYPE, "tile '%s' has dtype %d", name, (int)dt),
           -1;
  if (rows < 1 || cols < 1 || rows > 65536 || cols > 65536)
    return tp_fail(tp, PTO_ESHAPE, "tile '%s' is %" PRIu32 "x%" PRIu32
                   " (1..65536 each way)", name, rows, cols),
           -1;
  if (count < 1 || count > 2)
    return tp_fail(tp, PTO_EINVAL, "tile '%s' has %d buffers (1 or 2)", name,
                   count),
           -1;
  pto_tprog_def *d = &tp->d;
  if (d->n_tiles >= INT16_MAX)
    return tp_fail(tp, PTO_EINVAL, "tile '%s': too many tiles", name), -1;
  if (pto__grow((void **)&d->tiles, sizeof *d->tiles, &tp->cap_tiles,
                (unsigned)d->n_tiles + 1))
    return tp_fail(tp, PTO_ENOMEM, "out of memory"), -1;
  pto_tp_tile *t = &d->tiles[d->n_tiles];
  if (!(t->name = strdup(name)))
    return tp_fail(tp, PTO_ENOMEM, "out of memory"), -1;
  t->level = lvl;
  t->dtype = dt;
  t->rows = rows;
  t->cols = cols;
  t->count = count;
  return d->n_tiles++;
}

/* ---- the block's instructions ------------------------------------------- */

static pto_tp_inst *add_inst(pto_tprog *tp, int kind) {
  pto_tprog_def *d = &tp->d;
  if (d->n_insts >= INT32_MAX ||
      pto__grow((void **)&d->insts, sizeof *d->insts, &tp->cap_insts,
                d->n_insts + 1)) {
    tp_fail(tp, PTO_ENOMEM, "out of memory");
    return NULL;
  }
  pto_tp_inst *in = &d->insts[d->n_insts++];
  memset(in, 0, sizeof *in);
  in->kind = (uint8_t)kind;
  in->arg = -1;
  in->var = -1;
  return in;
}

/* e uses only the grid's vars and those of the open loops. */
static int expr_ok(pto_tprog *tp, const pto_tp_expr *e, const char *what,
                   uint32_t at) {
  if (e->c == INT64_MIN)
    return tp_fail(tp, PTO_EINVAL,
                   "instruction %" PRIu32 ": %s uses a var outside 0..%d", at,
                   what, PTO_TP_VARS - 1),
           0;
  for (int v = tp->d.ngrid + tp->depth; v < PTO_TP_VARS; v++)
    if (e->k[v])
      return tp_fail(tp, PTO_EINVAL,
                     "instruction %" PRIu32 ": %s uses var %d, which is no "
                     "block index (%d) nor an open loop's (%d open)",
                     at, what, v, tp->d.ngrid, tp->depth),
             0;
  return 1;
}

int pto_tprog_for(pto_tprog *tp, pto_tp_expr trip) {
  if (!tp || tp->err.status)
    return -1;
  const int var = tp->d.ngrid + tp->depth;
  if (var >= PTO_TP_VARS)
    return tp_fail(tp, PTO_EINVAL, "loops nest %d deep: at most %d with a "
                   "%d-dim grid", tp->depth + 1, PTO_TP_VARS - tp->d.ngrid,
                   tp->d.ngrid),
           -1;
  if (!expr_ok(tp, &trip, "the trip count", tp->d.n_insts))
    return -1;
  pto_tp_inst *in = add_inst(tp, PTO_TPI_FOR);
  if (!in)
    return -1;
  in->trip = trip;
  in->var = (int8_t)var;
  tp->open[tp->depth++] = tp->d.n_insts - 1;
  return var;
}

pto_status pto_tprog_end(pto_tprog *tp) {
  if (!tp)
    return PTO_EINVAL;
  if (tp->err.status)
    return tp->err.status;
  if (!tp->depth)
    return tp_fail(tp, PTO_EINVAL, "pto_tprog_end with no open loop");
  if (!add_inst(tp, PTO_TPI_END))
    return tp->err.status;
  tp->d.insts[tp->open[--tp->depth]].end = tp->d.n_insts - 1;
  return PTO_OK;
}

static int tile_ok(pto_tprog *tp, int tile, const char *insn) {
  if (tile >= 0 && tile < tp->d.n_tiles)
    return 1;
  tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 " (%s): tile %d is not "
          "declared (%d tiles)", tp->d.n_insts, insn, tile, tp->d.n_tiles);
  return 0;
}

static pto_status move(pto_tprog *tp, int is_store, int tile, int arg,
                       const pto_tp_expr *at, unsigned flags) {
  if (!tp)
    return PTO_EINVAL;
  if (tp->err.status)
    return tp->err.status;
  const char *insn = is_store ? "TSTORE" : "TLOAD";
  const uint32_t idx = tp->d.n_insts;
  if (!tile_ok(tp, tile, insn))
    return tp->err.status;
  const pto_tp_tile *t = &tp->d.tiles[tile];
  if (arg < 0 || arg >= tp->d.n_args)
    return tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 " (%s of tile '%s')"
                   ": arg %d is not declared (%d args)", idx, insn, t->name,
                   arg, tp->d.n_args);
  const pto_tp_arg *a = &tp->d.args[arg];
  if (a->is_out != is_store)
    return tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 " (%s of tile '%s')"
                   ": '%s' is an %s: blocks load inputs and store outputs",
                   idx, insn, t->name, a->name, a->is_out ? "output" : "input");
  if (flags & ~(unsigned)PTO_TP_TRANS || (is_store && flags))
    return tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 " (%s of tile '%s')"
                   ": flags 0x%x", idx, insn, t->name, flags);
  const pto_operand o = pto__insn_operand(is_store ? PTO_OP_TSTORE
                                                   : PTO_OP_TLOAD,
                                          !is_store, 0);
  if (!(o.dtypes & PTO_DT(t->dtype)))
    return tp_fail(tp, PTO_EDTYPE, "instruction %" PRIu32 " (%s of tile '%s')"
                   ": a %s tile cannot be %s", idx, insn, t->name,
                   pto_dtype_name(t->dtype), is_store ? "stored" : "loaded");
  if (!at)
    return tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 " (%s of tile '%s')"
                   ": no origin", idx, insn, t->name);
  for (int x = 0; x < a->ndim; x++)
    if (!expr_ok(tp, &at[x], "the window's origin", idx))
      return tp->err.status;
  pto_tp_inst *in = add_inst(tp, is_store ? PTO_TPI_STORE : PTO_TPI_LOAD);
  if (!in)
    return tp->err.status;
  in->arg = (int16_t)arg;
  in->flags = (uint8_t)flags;
  in->n_src = (uint8_t)is_store;
  in->n_dst = (uint8_t)!is_store;
  (is_store ? in->src : in->dst)[0] = (int16_t)tile;
  memcpy(in->at, at, (size_t)a->ndim * sizeof *at);
  return PTO_OK;
}

pto_status pto_tprog_load_t(pto_tprog *tp, int tile, int arg,
                            const pto_tp_expr *at, unsigned flags) {
  return move(tp, 0, tile, arg, at, flags);
}

pto_status pto_tprog_load(pto_tprog *tp, int tile, int arg,
                          const pto_tp_expr *at) {
  return move(tp, 0, tile, arg, at, 0);
}

pto_status pto_tprog_store(pto_tprog *tp, int tile, int arg,
                           const pto_tp_expr *at) {
  return move(tp, 1, tile, arg, at, 0);
}

/* A tile shaped as t is declared, at a distinct address per operand slot:
 * what the operand rules read (never dereferenced). */
static pto_tile fake_tile(const pto_tp_tile *t, int slot) {
  pto_tile f;
  f.data = (void *)(uintptr_t)((uint64_t)(slot + 1) << 36);
  f.dtype = t->dtype;
  f.rows = f.valid_rows = t->rows;
  f.cols = f.valid_cols = t->cols;
  f.stride = pto_tile_stride(t->dtype, t->cols);
  return f;
}

static int find_insn(const char *name) {
  for (int op = 0; op < PTO_OP_COUNT; op++)
    if (!strcmp(pto__insn_rows[op].name, name))
      return op;
  return pto_custom_op_find(name);
}

pto_status pto_tprog_op(pto_tprog *tp, const char *insn, int n_dst,
                        const int *dst, int n_src, const int *src,
                        const pto_tp_opargs *a) {
  if (!tp)
    return PTO_EINVAL;
  if (tp->err.status)
    return tp->err.status;
  const uint32_t idx = tp->d.n_insts;
  const int op = insn ? find_insn(insn) : -1;
  if (op < 0)
    return tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 ": '%s' is no "
                   "instruction (docs/isa.md lists them)", idx,
                   insn ? insn : "(null)");
  const pto_insn_info *info = pto__insn_info(op);
  const pto_insn_facts *f = pto__insn_facts(op);
  if (info->family == PTO_FAMILY_MEMORY ||
      (f && (f->g != PTO_GA_NONE || f->g2 != PTO_GA_NONE)))
    return tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 " (%s) moves global "
                   "memory: a tile program loads and stores with "
                   "pto_tprog_load and pto_tprog_store", idx, insn);
  pto_tp_opargs none;
  memset(&none, 0, sizeof none);
  if (!a)
    a = &none;
  if (a->flags & ~(unsigned)PTO_TP_ROWSCALE)
    return tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 " (%s): flags 0x%x "
                   "(PTO_TP_ROWSCALE is the one there is)", idx, insn,
                   a->flags);
  const uint32_t iflags = a->flags & PTO_TP_ROWSCALE ? PTO_TF_ROWSCALE : 0;
  if (iflags && !(pto__insn_facts(op)->src_if & iflags))
    return tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 " (%s) takes no "
                   "PTO_TP_ROWSCALE", idx, insn);
  const int want_src = pto__insn_n_src(op, iflags);
  if (n_src != want_src || n_dst != info->n_dst || (n_src && !src) ||
      (n_dst && !dst))
    return tp_fail(tp, PTO_EINVAL, "instruction %" PRIu32 " (%s) takes %d "
                   "sources and %d destinations, it was given %d and %d",
                   idx, insn, want_src, info->n_dst, n_src, n_dst);
  for (int k = 0; k < n_src; k++)
    if (!tile_ok(tp, src[k], insn))
      return tp->err.status;
  for (int k = 0; k < n_dst; k++)
    if (!tile_ok(tp, dst[k], insn))
      return tp->err.status;
  for (int k = 0; k < 2; k++)
    if (!expr_ok(tp, &a->imm[k], "an immediate", idx))
      return tp->err.status;
  /* dtypes and shapes: the operand rules, on tiles as declared */
  pto_tile tiles[PTO_MAX_SRC + PTO_MAX_DST];
  pto_targs ta;
  memset(&ta, 0, sizeof ta);
  for (int k = 0; k < n_src; k++) {
    tiles[k] = fake_tile(&tp->d.tiles[src[k]], k);
    ta.src[k] = &tiles[k];
  }
  for (int k = 0; k < n_dst; k++) {
    tiles[PTO_MAX_SRC + k] = fake_tile(&tp->d.tiles[dst[k]], PTO_MAX_SRC + k);
    ta.dst[k] = &tiles[PTO_MAX_SRC + k];
  }
  const int64_t zero[PTO_TP_VARS] = {0};
  ta.s = a->s;
  ta.flags = iflags;
  for (int k = 0; k < 2; k++)
    ta.imm[k] = (int32_t)pto__tp_eval(&a->imm[k], zero);
  char msg[256];
  pto_status st = pto__tileop_check(op, &ta, msg, sizeof msg);
  if (st) {
    char names[160] = "";
    size_t n = 0;
    for (int k = 0; k < n_dst + n_src && n < sizeof names; k++) {
      const pto_tp_tile *t = &tp->d.tiles[k < n_dst ? dst[k] : src[k - n_dst]];
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s%d %s %s[%" PRIu32
                            "x%" PRIu32 "]", k ? ", " : "",
                            k < n_dst ? "dst" : "src", k < n_dst ? k : k - n_dst,
                            t->name,
                            pto_dtype_name(t->dtype), t->rows, t->cols);
    }
    return tp_fail(tp, st, "instruction %" PRIu32 " (%s; %s): %s", idx, insn,
                   names, msg);
  }
  pto_tp_inst *in = add_inst(tp, PTO_TPI_INSN);
  if (!in)
    return tp->err.status;
  in->op = op;
  in->n_src = (uint8_t)n_src;
  in->n_dst = (uint8_t)n_dst;
  for (int k = 0; k < n_src; k++)
    in->src[k] = (int16_t)src[k];
  for (int k = 0; k < n_dst; k++)
    in->dst[k] = (int16_t)dst[k];
  in->s = a->s;
  in->iflags = iflags;
  in->imm[0] = a->imm[0];
  in->imm[1] = a->imm[1];
  if (info->core == PTO_CORE_CUBE)
    tp->d.core = PTO_CORE_CUBE;
  return PTO_OK;
}

/* ---- the op: every block checked -------------------------------------- */

typedef struct vcheck {
  const pto_tprog_def *d;
  int64_t block;
  uint8_t *defined;    /* per tile: written in this block */
  uint8_t *cover[PTO_NODE_MAX_OUT]; /* per output element: stored */
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
  vcheck c = {d, 0, NULL, {NULL}, msg, size, PTO_OK};
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
  pto_tile *tiles, *tmp; /* per declared tile: its buffer, a spare */
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
      memcpy(c->data, s->data, pto_tile_bytes(s->dtype, s->rows, s->cols));
      s = c;
    }
    a.src[k] = s;
  }
  a.s = in->s;
  a.flags = in->iflags;
  for (int k = 0; k < 2; k++)
    a.imm[k] = (int32_t)pto__tp_eval(&in->imm[k], vars);
  int st;
  if (op < PTO_OP_COUNT) {
    st = pto__isa_ref(op, &a);
  } else {
    const pto_custom_op *c = pto__custom_get(op);
    st = c ? c->desc.fn(a.dst[0], a.src, c->desc.n_src, c->desc.user)
           : PTO_ENOTFOUND;
  }
  if (st) {
    snprintf(v->msg, v->size, "instruction %" PRIu32 " (%s) failed: %s", i,
             pto__insn_name(op), pto_status_name(st));
    return st < 0 ? st : PTO_EINVAL;
  }
  return 0;
}

static pto_status tprog_eval(const pto_tprog_def *d, const pto_tp_view *views,
                             char *msg, size_t msg_size) {
  veval v = {d, views, calloc((size_t)d->n_tiles + 1, sizeof *v.tiles),
             calloc((size_t)d->n_tiles + 1, sizeof *v.tmp), msg, msg_size};
  pto_status st = v.tiles && v.tmp ? PTO_OK : PTO_ENOMEM;
  for (int i = 0; !st && i < d->n_tiles; i++) {
    const pto_tp_tile *t = &d->tiles[i];
    const size_t bytes = pto_tile_bytes(t->dtype, t->rows, t->cols);
    for (int k = 0; k < 2; k++) {
      pto_tile *x = k ? &v.tmp[i] : &v.tiles[i];
      x->dtype = t->dtype;
      x->rows = x->valid_rows = t->rows;
      x->cols = x->valid_cols = t->cols;
      x->stride = pto_tile_stride(t->dtype, t->cols);
      if (!(x->data = aligned_alloc(PTO_TILE_ALIGN, bytes)))
        st = PTO_ENOMEM;
      else
        memset(x->data, 0, bytes);
    }
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
