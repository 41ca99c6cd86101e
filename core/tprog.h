/* core/tprog.h (internal): a tile program (pto/tileprog.h) as an op of a
 * tensor program holds it: its args, tiles and instruction list, the walk
 * that runs its list for one block with every index known (what the
 * tiler, the checks and the evaluator share), and its copy into a
 * program's arena. The builder and the evaluator are tileops/tprog.c;
 * the tiler is core/tiling_tprog.c. */
#ifndef PTO_CORE_TPROG_H
#define PTO_CORE_TPROG_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/isa.h"
#include "pto/tileprog.h"

typedef struct pto_tp_arg {
  const char *name;
  pto_dtype dtype;
  int ndim;
  int64_t shape[4];
  uint8_t is_out;
  uint8_t index; /* among the inputs, or among the outputs */
} pto_tp_arg;

typedef struct pto_tp_tile {
  const char *name;
  pto_mem_level level;
  pto_dtype dtype;
  uint32_t rows, cols;
  int count;
} pto_tp_tile;

enum { PTO_TPI_INSN, PTO_TPI_LOAD, PTO_TPI_STORE, PTO_TPI_FOR, PTO_TPI_END };

typedef struct pto_tp_inst {
  uint8_t kind; /* PTO_TPI_* */
  int32_t op;   /* INSN: its opcode */
  uint8_t n_src, n_dst;
  int16_t src[PTO_MAX_SRC], dst[2]; /* tiles; LOAD: dst[0]; STORE: src[0] */
  int16_t arg;                      /* LOAD, STORE */
  uint8_t flags;                    /* LOAD: PTO_TP_TRANS */
  uint32_t iflags;                  /* INSN: PTO_TF_* (core/isa.h) */
  pto_tp_expr at[4];                /* LOAD, STORE: the origin per axis */
  pto_tp_expr trip;                 /* FOR */
  int8_t var;                       /* FOR: its var */
  uint32_t end;                     /* FOR: the index of its END */
  double s;
  pto_tp_expr imm[2];
} pto_tp_inst;

typedef struct pto_tprog_def pto_tprog_def;

/* A view of arg i for the evaluator: base, dtype, 4-D right-aligned
 * shape and strides (elements). */
typedef struct pto_tp_view {
  void *base;
  pto_dtype dtype;
  int64_t shape[4], stride[4];
} pto_tp_view;

/* Runs d over views[0 .. n_args) block by block with the scalar
 * reference of its instructions; 0 or a status with msg set. */
typedef pto_status (*pto_tprog_eval_fn)(const pto_tprog_def *d,
                                        const pto_tp_view *views, char *msg,
                                        size_t msg_size);

/* d built again by its builder for tile on inputs in (a tuned program,
 * pto_tile_program_tuned), checked as pto_tile_program checks it and to
 * take and give d's tensors, copied into a as *out; 0 or a status with
 * msg set. */
typedef pto_status (*pto_tprog_rebuild_fn)(const pto_tprog_def *d,
                                           const pto_tile_shape *tile,
                                           int n_in, pto_tensor *const *in,
                                           pto_arena *a,
                                           const pto_tprog_def **out,
                                           char *msg, size_t msg_size);

struct pto_tprog_def {
  const char *name;
  int ngrid;
  int64_t grid[PTO_TP_GRID_MAX];
  int n_inputs, n_outputs;
  pto_tp_arg *args;
  int n_args;
  pto_tp_tile *tiles;
  int n_tiles;
  pto_tp_inst *insts;
  uint32_t n_insts;
  pto_core_type core; /* CUBE when an instruction is the cube's */
  pto_tprog_eval_fn eval;
  /* a tuned program's builder, its user pointer, and the rebuild */
  pto_tprog_build_fn build;
  void *user;
  pto_tprog_rebuild_fn rebuild;
};

/* The number of blocks (the grid's product). */
int64_t pto__tprog_blocks(const pto_tprog_def *d);

static inline int64_t pto__tp_eval(const pto_tp_expr *e, const int64_t *vars) {
  int64_t v = e->c;
  for (int i = 0; i < PTO_TP_VARS; i++)
    v += e->k[i] * vars[i];
  return v;
}

/* Calls fn(ctx, inst index, vars) for each instruction of block b in
 * program order, loops unrolled (FOR and END are not visited); vars[0 ..
 * ngrid) hold b's indices (row-major in the grid), the loops' vars their
 * iteration. Stops at fn's first nonzero return and returns it. */
typedef int (*pto_tp_visit_fn)(void *ctx, uint32_t i, const int64_t *vars);
int pto__tprog_walk(const pto_tprog_def *d, int64_t b, pto_tp_visit_fn fn,
                    void *ctx);

/* The origin of a window of arg (right-aligned into 4 axes), the extent
 * of tile on each axis, at vars. */
void pto__tprog_window(const pto_tprog_def *d, const pto_tp_inst *in,
                       const int64_t *vars, int64_t at[4], int64_t ext[4]);

/* Where that window lies in its arg's storage, read through strides (4-D,
 * right-aligned): its offset, and rows x cols at row stride rs and col
 * stride cs as the tile sees it (transposed with PTO_TP_TRANS). */
typedef struct pto_tp_span {
  int64_t off, rows, cols, rs, cs;
} pto_tp_span;
pto_tp_span pto__tprog_span(const pto_tprog_def *d, const pto_tp_inst *in,
                            const int64_t *vars, const int64_t stride[4]);

/* A deep copy of d in a (strings too); NULL on ENOMEM. */
pto_tprog_def *pto__tprog_copy(pto_arena *a, const pto_tprog_def *d);

#endif /* PTO_CORE_TPROG_H */
