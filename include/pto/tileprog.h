/* pto/tileprog.h: expert mode, tile programs.
 *
 * Developer mode (pto/program.h) lets the compiler tile every tensor op.
 * A tile program is the scalpel: its author writes one block's work as PTO
 * tile instructions on local tiles the program declares, and a grid of
 * blocks covers the op's outputs. It becomes an op of a tensor program
 * (pto_tile_program), so its blocks are tasks beside the compiler's, with
 * the same labels, traces, dumps and reference evaluator.
 *
 *   int64_t grid[1] = {M / 64};
 *   pto_tprog *tp = pto_tprog_new("rowscale", 1, grid);
 *   int64_t xs[2] = {M, N};
 *   int x = pto_tprog_input(tp, "x", PTO_F32, 2, xs);
 *   int y = pto_tprog_output(tp, "y", PTO_F32, 2, xs);
 *   int t = pto_tprog_tile(tp, "t", PTO_MEM_UB, PTO_F32, 64, N, 1);
 *   int m = pto_tprog_tile(tp, "m", PTO_MEM_UB, PTO_F32, 64, 1, 1);
 *   pto_tp_expr at[2] = {pto_tp_var(pto_tprog_block(tp, 0), 64),
 *                        pto_tp_const(0)};
 *   pto_tprog_load(tp, t, x, at);
 *   pto_tprog_op(tp, "TROWMAX", 1, &m, 1, &t, NULL);
 *   int tm[2] = {t, m};
 *   pto_tprog_op(tp, "TROWEXPANDDIV", 1, &t, 2, tm, NULL);
 *   pto_tprog_store(tp, t, y, at);
 *   pto_tensor *out;
 *   pto_tile_program(p, tp, 1, &X, &out);  then pto_tprog_free(tp)
 *
 * Semantics. Blocks run in any order and at once: a block reads inputs
 * only and writes outputs only, and every element of every output is
 * written by exactly one store of one block (checked). Inside a block the
 * instructions run in program order on the tiles' current values: an
 * instruction reading a tile sees the value the last instruction writing
 * it left (the compiler gives each value its own buffer or reuses one, as
 * the data dependencies allow, and plans local memory as in Developer
 * mode). An instruction that accumulates (TMATMUL_ACC) adds into its
 * destination's current value. Windows are whole tiles: a load or store
 * moves the tile's rows x cols at the window's origin, which must lie
 * inside the tensor. Instruction names, operands and dtypes are those of
 * docs/isa.md; the memory instructions are pto_tprog_load and
 * pto_tprog_store. Static shapes only: a tensor with a dynamic dim is
 * refused, and loop trip counts are affine in the block indices and outer
 * loop indices.
 *
 * Errors. A bad call records a sticky error (the first is kept, with a
 * message naming the program, the instruction and the sizes) and returns it
 * or -1; read it with pto_tprog_status / pto_tprog_error. pto_tile_program
 * refuses a program with an error, or whose windows leave their tensors or
 * whose stores do not cover its outputs exactly once, naming the block. */
#ifndef PTO_TILEPROG_H
#define PTO_TILEPROG_H

#include <stdint.h>

#include "pto/config.h"
#include "pto/export.h"
#include "pto/program.h"
#include "pto/status.h"
#include "pto/types.h"

PTO_EXTERN_C_BEGIN

/* Index variables: the grid's block indices (vars 0 .. ngrid-1), then one
 * per loop nesting depth. */
#define PTO_TP_VARS 8
#define PTO_TP_GRID_MAX 3

/* An index expression: c + sum k[v] * var v, evaluated per block and loop
 * iteration. */
typedef struct pto_tp_expr {
  int64_t c;
  int64_t k[PTO_TP_VARS];
} pto_tp_expr;

static inline pto_tp_expr pto_tp_const(int64_t c) {
  pto_tp_expr e = {c, {0}};
  return e;
}
/* mul * var v (a var from pto_tprog_block or pto_tprog_for). */
static inline pto_tp_expr pto_tp_var(int v, int64_t mul) {
  pto_tp_expr e = {0, {0}};
  if (v >= 0 && v < PTO_TP_VARS)
    e.k[v] = mul;
  else
    e.c = INT64_MIN; /* refused where it is used */
  return e;
}
static inline pto_tp_expr pto_tp_add(pto_tp_expr a, pto_tp_expr b) {
  if (a.c == INT64_MIN || b.c == INT64_MIN)
    return pto_tp_var(-1, 0);
  a.c += b.c;
  for (int v = 0; v < PTO_TP_VARS; v++)
    a.k[v] += b.k[v];
  return a;
}
/* mul * var v + add. */
static inline pto_tp_expr pto_tp_axpb(int v, int64_t mul, int64_t add) {
  return pto_tp_add(pto_tp_var(v, mul), pto_tp_const(add));
}

typedef struct pto_tprog pto_tprog;

/* A block program over a grid of ngrid (1..PTO_TP_GRID_MAX) dims of
 * grid[d] >= 1 blocks. NULL on ENOMEM; a bad grid is its first error. */
PTO_API pto_tprog *pto_tprog_new(const char *name, int ngrid,
                                 const int64_t *grid);
PTO_API void pto_tprog_free(pto_tprog *tp); /* NULL is a no-op */
PTO_API pto_status pto_tprog_status(const pto_tprog *tp);
PTO_API const char *pto_tprog_error(const pto_tprog *tp); /* "" if none */

/* Records an error of the program's author (a builder's: sizes it cannot
 * take), "tile program '<name>': <message>", kept if it is the first;
 * returns status (PTO_EINVAL when tp or fmt is NULL or status is no
 * error). */
PTO_API pto_status pto_tprog_fail(pto_tprog *tp, pto_status status,
                                  const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The var of the block index along grid dim d, or -1. */
PTO_API int pto_tprog_block(pto_tprog *tp, int dim);

/* Its global operands, numbered together in declaration order (an "arg"):
 * inputs in the order pto_tile_program receives their tensors, outputs in
 * the order it returns them (at most 2). ndim 1..4. Returns the arg, or -1. */
PTO_API int pto_tprog_input(pto_tprog *tp, const char *name, pto_dtype dt,
                            int ndim, const int64_t *shape);
PTO_API int pto_tprog_output(pto_tprog *tp, const char *name, pto_dtype dt,
                             int ndim, const int64_t *shape);

/* A local tile: its memory level (PTO_MEM_UB for vector work, L1/L0A/L0B/
 * L0C for the cube's), dtype, capacity rows x cols, and buffers (1, or 2
 * to double-buffer it: what its footprint counts). Returns it, or -1. The
 * declared footprint per level must fit the machine compiled for. */
PTO_API int pto_tprog_tile(pto_tprog *tp, const char *name, pto_mem_level lvl,
                           pto_dtype dt, uint32_t rows, uint32_t cols,
                           int count);

/* A loop of trip >= 0 iterations (affine in the enclosing vars; it may be
 * 0 for some blocks) around what follows, up to its pto_tprog_end (a loop
 * with no instruction is refused there). Returns its var, or -1. */
PTO_API int pto_tprog_for(pto_tprog *tp, pto_tp_expr trip);
PTO_API pto_status pto_tprog_end(pto_tprog *tp);

/* Loops unroll: a block runs its instructions as one task, and the
 * compiler expands each block's. pto_tile_program refuses (PTO_ECAPACITY,
 * naming the block and the count) a block past PTO_TPROG_BLOCK_INSTS_MAX
 * unrolled instructions and a program past PTO_TPROG_INSTS_MAX over all
 * its blocks: more blocks of less work each is the way out. */
#define PTO_TPROG_BLOCK_INSTS_MAX 65536
#define PTO_TPROG_INSTS_MAX (1 << 24)

/* Window flags. */
enum {
  /* the tile holds the window transposed: tile (r, c) is the tensor's
   * element at (origin + c along its second last axis, origin + r along
   * its last): a K^T from K's rows */
  PTO_TP_TRANS = 1u << 0,
};

/* TLOAD: tile = the window of input arg at origin at[0 .. ndim) (one
 * expression per axis of arg; the window spans the tile's rows x cols on
 * the last two axes, or cols x rows with PTO_TP_TRANS, and 1 on the
 * others). */
PTO_API pto_status pto_tprog_load(pto_tprog *tp, int tile, int arg,
                                  const pto_tp_expr *at);
PTO_API pto_status pto_tprog_load_t(pto_tprog *tp, int tile, int arg,
                                    const pto_tp_expr *at, unsigned flags);
/* TSTORE: the window of output arg at origin at = tile. */
PTO_API pto_status pto_tprog_store(pto_tprog *tp, int tile, int arg,
                                   const pto_tp_expr *at);

/* Instruction flags (pto_tp_opargs.flags). */
enum {
  /* TMATMUL_ACC: dst = dst * src2[r][0] + A x B, src2 a third source (an
   * online softmax's rescale of its output, folded into the matmul) */
  PTO_TP_ROWSCALE = 1u << 8,
};

/* What some instructions also take: the scalar operand (TADDS's, a fill
 * value), the immediates (a compare mode, a diagonal offset), which may
 * follow the block and loop indices, and flags (PTO_TP_ROWSCALE). */
typedef struct pto_tp_opargs {
  double s;
  pto_tp_expr imm[2];
  unsigned flags;
} pto_tp_opargs;

/* Instruction insn (a name of docs/isa.md: "TADD", "TROWMAX", "TMATMUL",
 * "TMATMUL_ACC", ...) writing tiles dst[0 .. n_dst) from src[0 .. n_src);
 * a NULL a is all zeros. Its operand counts, dtypes and shapes are checked
 * against the instruction table here. */
PTO_API pto_status pto_tprog_op(pto_tprog *tp, const char *insn, int n_dst,
                                const int *dst, int n_src, const int *src,
                                const pto_tp_opargs *a);

/* Records tp as an op of p on inputs in[0 .. n_in) (the tile program's
 * inputs in order: dtypes and shapes must match, static), returning its
 * outputs in out[0 .. n): NULL-filled and p's error set when it is
 * refused. tp is copied: free it when you like. The op takes p's current
 * label (traces, dumps and config files name it). */
PTO_API pto_status pto_tile_program(pto_program *p, const pto_tprog *tp,
                                    int n_in, pto_tensor *const *in,
                                    pto_tensor **out);

/* A tile program built for a tile shape, for tuning: build(tile, n_in,
 * in, user) returns a new program (PTO takes it and frees it) whose
 * sizes follow tile as its author decides (the flash attention of
 * kernels/examples_flash.c takes its query block from cube_m and its key
 * step from cube_n), for the inputs in. pto_tile_program_tuned records
 * build(the current tile scope's shape, ...) as pto_tile_program does;
 * when a config sets the op's label's tile ("vec_tile" or "cube_tile",
 * pto/config.h), pto_compile calls build again with the tile the config
 * gives and compiles that program instead, which must take and give the
 * same tensors (else the compile fails naming both). The evaluator runs
 * the program recorded first. build must stay callable, and user valid,
 * while p may be compiled. */
typedef pto_tprog *(*pto_tprog_build_fn)(const pto_tile_shape *tile, int n_in,
                                         pto_tensor *const *in, void *user);
PTO_API pto_status pto_tile_program_tuned(pto_program *p,
                                          pto_tprog_build_fn build,
                                          void *user, int n_in,
                                          pto_tensor *const *in,
                                          pto_tensor **out);

PTO_EXTERN_C_END

#endif /* PTO_TILEPROG_H */
