/* Tile programs (pto/tileprog.h): the builder, and its checks of each
 * call against the instruction table (core/isa.h) and the operand rules
 * (tileops/check.c). The op it becomes is tileops/tprog_op.c. */
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
#include "tileops/tprog.h"

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


pto_tprog *pto_tprog_new(const char *name, int ngrid, const int64_t *grid) {
  pto_tprog *tp = calloc(1, sizeof *tp);
  if (!tp || !(tp->d.name = strdup(name && name[0] ? name : "tile_program"))) {
    free(tp);
    return NULL;
  }
  tp->d.eval = pto__tprog_eval;
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
  if (tp->open[tp->depth - 1] == tp->d.n_insts - 1)
    return tp_fail(tp, PTO_EINVAL, "the loop opened by instruction %" PRIu32
                   " has no instruction", tp->d.n_insts - 1);
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
  if (flags & ~(unsigned)PTO_TP_TRANS)
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
  return pto__tprog_tile(t, (void *)(uintptr_t)((uint64_t)(slot + 1) << 36));
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
