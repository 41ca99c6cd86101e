/* pto/program.h: building a fused operator as a graph of tensor operations.
 *
 * A program owns every tensor and op created in it (an arena; nothing is freed
 * one by one). Ops return a new tensor, or NULL when the op is invalid. The
 * first error is sticky: it is kept, with a message naming the op, its tensors
 * and their sizes, and every later op that receives a NULL tensor returns NULL
 * without overwriting it. Read it with pto_program_status() and
 * pto_program_error(); every call that ends a phase (eval, compile) returns it.
 *
 *   pto_program *p = pto_program_new("example");
 *   int64_t s[2] = {64, 64}, w[2] = {64, 32};
 *   pto_tensor *a = pto_input(p, "A", PTO_F32, 2, s);
 *   pto_tensor *b = pto_input(p, "B", PTO_F32, 2, s);
 *   pto_tensor *W = pto_input(p, "W", PTO_F32, 2, w);
 *   pto_program_set_vec_tile(p, 32, 32);
 *   pto_tensor *c = pto_rowsum(p, pto_matmul(p, pto_add(p, pto_muls(p, a, 2), b), W, 0));
 *   pto_output(p, c, "C");
 *   if (pto_program_status(p) < 0) puts(pto_program_error(p));
 */
#ifndef PTO_PROGRAM_H
#define PTO_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "pto/config.h"
#include "pto/export.h"
#include "pto/status.h"
#include "pto/types.h"

PTO_EXTERN_C_BEGIN

typedef struct pto_program pto_program;
typedef struct pto_tensor pto_tensor;

/* ---- program ---------------------------------------------------------- */

PTO_API pto_program *pto_program_new(const char *name); /* NULL on ENOMEM */
PTO_API void pto_program_free(pto_program *p);           /* NULL is a no-op */
PTO_API const char *pto_program_name(const pto_program *p);

/* The first build error recorded (0 if none), and a message: the build
 * error's if there is one, else the last eval's or compile's run-time error
 * ("" if none). A run-time error does not stick: the next eval or compile
 * starts clean. */
PTO_API pto_status pto_program_status(const pto_program *p);
PTO_API const char *pto_program_error(const pto_program *p);

/* Records a build error, as an invalid op does, for operators composed
 * from ops (pto/indexer.h): "<op> '<label>': <message>" with the current
 * label, kept only if no error is recorded yet (errors are sticky). Returns
 * status; PTO_EINVAL when p or op is NULL or status is not an error. */
PTO_API pto_status pto_program_fail(pto_program *p, pto_status status,
                                    const char *op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---- scopes: tile shapes and semantic labels ---------------------------- */

/* Push a copy of the current tile shape (or *shape when not NULL); ops added
 * until the matching pop use it. set_* change the innermost scope. */
PTO_API pto_status pto_program_push_tile(pto_program *p,
                                         const pto_tile_shape *shape);
PTO_API pto_status pto_program_pop_tile(pto_program *p);
PTO_API pto_status pto_program_set_vec_tile(pto_program *p, uint32_t rows,
                                            uint32_t cols);
PTO_API pto_status pto_program_set_cube_tile(pto_program *p, uint32_t m,
                                             uint32_t n, uint32_t k);
/* The ops added in the innermost scope (not the program's own: push one
 * first, else PTO_ESTATE) get their cube (vector) tile from the compiler,
 * for the machine it compiles for, as if no scope had set one; a config's
 * label setting still wins. What an operator builder calls when its user
 * gave no tile: an enclosing scope's tile does not leak into its ops, and
 * no size fit for one machine is baked into a program compiled for
 * another. */
PTO_API pto_status pto_program_auto_cube_tile(pto_program *p);
PTO_API pto_status pto_program_auto_vec_tile(pto_program *p);
PTO_API pto_tile_shape pto_program_tile(const pto_program *p);
/* Recommends knob k (pto/config.h: nbuffer, l1_reuse, fuse) for the ops
 * added in the current tile scope (push_tile copies the recommendations,
 * pop_tile drops the scope's): an operator builder's default, which a
 * config's label setting for those ops overrides and which overrides the
 * config's global value. PTO_EINVAL for a value out of range, PTO_ECONFIG
 * for policy (one run has one), both recorded as the program's error. */
PTO_API pto_status pto_program_set_knob(pto_program *p, pto_knob k,
                                        int64_t value);

/* Labels nest with '.': push "indexer" then "qk" labels ops "indexer.qk".
 * Every tile instruction and task derived from an op carries its label. */
PTO_API pto_status pto_program_push_label(pto_program *p, const char *label);
PTO_API pto_status pto_program_pop_label(pto_program *p);

/* One scope for a label and a tile shape together: push_label(label)
 * (label NULL: the labels stay as they are) and push_tile(tile) (tile NULL:
 * a copy of the current shape), undone together by pop_scope. Scopes nest
 * with labels and tile scopes: a pop_label or pop_tile that would undo
 * part of the innermost open scope, and a pop_scope while a label or tile
 * pushed inside it is still open, are PTO_ESTATE errors, as unmatched pops
 * are (recorded as the program's error).
 *
 *   pto_program_push_scope(p, "ffn.up", &(pto_tile_shape){16, 256, 64, 64, 0});
 *   h = pto_silu(p, pto_matmul(p, x, w, 0));
 *   pto_program_pop_scope(p);
 */
PTO_API pto_status pto_program_push_scope(pto_program *p, const char *label,
                                          const pto_tile_shape *tile);
PTO_API pto_status pto_program_pop_scope(pto_program *p);
/* ---- dynamic dims ------------------------------------------------------- */

/* A dim whose extent is known only when a run binds it (pto_run_bind in
 * pto/runtime.h): a batch, a sequence length. It has a maximum, which is
 * what the program is compiled for: tile grids cover the maxima, and a
 * tensor with a dynamic axis is laid out (strides, buffer sizes) as if
 * that axis had its maximum; a run then dispatches only the tasks inside
 * the bound extents and clips the tiles that cross them. Returns the dim's
 * code, a negative number that stands for it wherever a shape is given
 * (pto_input, pto_full, pto_iota, pto_reshape), or 0 when the call fails
 * (a name that is empty, taken or longer than 31 characters, a maximum
 * < 1, more than PTO_DIMS_MAX dims; the error is recorded). Ops join the
 * dims of their operands as they join static ones: a dynamic axis against
 * a static one of its maximum, or against another dynamic dim, is checked
 * when a run binds them (they must then be equal); against any other
 * extent it is an error now. */
#define PTO_DIM_CODE_BASE (-(INT64_C(1) << 40))
#define PTO_DIMS_MAX 64
PTO_API int64_t pto_dim_dynamic(pto_program *p, const char *name,
                                int64_t max);
PTO_API int pto_program_num_dims(const pto_program *p);
PTO_API const char *pto_program_dim_name(const pto_program *p, int i);
PTO_API int64_t pto_program_dim_max(const pto_program *p, int i);
/* The index of the dim named name, or -1. */
PTO_API int pto_program_find_dim(const pto_program *p, const char *name);

/* ---- inputs, outputs and tensor queries --------------------------------- */

/* A named input, dense row-major; 1 <= ndim <= PTO_MAX_DIMS, every dim >= 1
 * or a dynamic dim's code (its buffer is laid out with the maximum). */
PTO_API pto_tensor *pto_input(pto_program *p, const char *name, pto_dtype dt,
                              int ndim, const int64_t *shape);
/* Marks t as an output named name (copied out dense row-major). */
PTO_API pto_status pto_output(pto_program *p, pto_tensor *t, const char *name);

PTO_API int pto_program_num_inputs(const pto_program *p);
PTO_API int pto_program_num_outputs(const pto_program *p);
PTO_API pto_tensor *pto_program_input(const pto_program *p, int i);
PTO_API pto_tensor *pto_program_output(const pto_program *p, int i);
/* Index of the input or output with that name, or -1. */
PTO_API int pto_program_find_input(const pto_program *p, const char *name);
PTO_API int pto_program_find_output(const pto_program *p, const char *name);
/* Number of ops recorded (composites such as softmax count their parts). */
PTO_API int pto_program_num_ops(const pto_program *p);

PTO_API const char *pto_tensor_name(const pto_tensor *t);
/* "'name' f32[64,32]" into buf (64 bytes or more hold any shape); returns
 * buf, or "" when t or buf is NULL. For messages naming a tensor. */
PTO_API const char *pto_tensor_describe(const pto_tensor *t, char *buf,
                                        size_t size);
PTO_API pto_dtype pto_tensor_dtype(const pto_tensor *t);
PTO_API int pto_tensor_ndim(const pto_tensor *t);
PTO_API int64_t pto_tensor_dim(const pto_tensor *t, int axis); /* -1: last */
/* Axis's dynamic dim (an index for pto_program_dim_name), or -1 when it is
 * static (pto_tensor_dim gives a dynamic axis's maximum). */
PTO_API int pto_tensor_dim_dynamic(const pto_tensor *t, int axis);
/* Axis as a shape value: its dim's code when the axis is that dynamic dim
 * itself, else its extent (a slice or a merge of a dim gives its length:
 * pto_reshape finds the dims of a reshaped tensor by where they lie, so
 * codes are needed only where a shape is made from nothing, as pto_full's
 * or pto_iota's). */
PTO_API int64_t pto_tensor_dim_code(const pto_tensor *t, int axis);
PTO_API int64_t pto_tensor_numel(const pto_tensor *t);

/* ---- views (zero-copy) -------------------------------------------------- */

/* [begin, end) along every axis. */
PTO_API pto_tensor *pto_slice(pto_program *p, pto_tensor *t,
                              const int64_t *begin, const int64_t *end);
/* Only for tensors whose layout is contiguous; numel must match. */
PTO_API pto_tensor *pto_reshape(pto_program *p, pto_tensor *t, int ndim,
                                const int64_t *shape);
/* Swap two axes (negative axes count from the end). */
PTO_API pto_tensor *pto_transpose(pto_program *p, pto_tensor *t, int axis0,
                                  int axis1);

/* ---- element-wise ------------------------------------------------------- */

/* Binary ops broadcast numpy-style (right-aligned; a dim of 1 stretches), so
 * a [M,1] operand is a row broadcast and a [1,N] operand a column broadcast.
 * Operands are f32 or i32 (or bf16/f16, computed in f32); dtypes must match
 * after that promotion. i32 arithmetic wraps; i32 division truncates and x/0
 * is 0. */
PTO_API pto_tensor *pto_add(pto_program *p, pto_tensor *a, pto_tensor *b);
PTO_API pto_tensor *pto_sub(pto_program *p, pto_tensor *a, pto_tensor *b);
PTO_API pto_tensor *pto_mul(pto_program *p, pto_tensor *a, pto_tensor *b);
PTO_API pto_tensor *pto_div(pto_program *p, pto_tensor *a, pto_tensor *b);
PTO_API pto_tensor *pto_max(pto_program *p, pto_tensor *a, pto_tensor *b);
PTO_API pto_tensor *pto_min(pto_program *p, pto_tensor *a, pto_tensor *b);

/* Tensor-scalar ops; for i32 tensors the scalar is rounded to an integer. */
PTO_API pto_tensor *pto_adds(pto_program *p, pto_tensor *a, double s);
PTO_API pto_tensor *pto_subs(pto_program *p, pto_tensor *a, double s);
PTO_API pto_tensor *pto_muls(pto_program *p, pto_tensor *a, double s);
PTO_API pto_tensor *pto_divs(pto_program *p, pto_tensor *a, double s);
PTO_API pto_tensor *pto_maxs(pto_program *p, pto_tensor *a, double s);
PTO_API pto_tensor *pto_mins(pto_program *p, pto_tensor *a, double s);

/* Unary ops. exp log sqrt rsqrt recip need a floating tensor; relu abs neg
 * accept i32 as well. */
PTO_API pto_tensor *pto_exp(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_log(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_sqrt(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_rsqrt(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_recip(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_relu(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_abs(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_neg(pto_program *p, pto_tensor *a);

/* Convert to dt: float to i32 rounds to nearest even and saturates (NaN gives
 * 0); to bf16/f16 rounds to nearest even. */
PTO_API pto_tensor *pto_cast(pto_program *p, pto_tensor *a, pto_dtype dt);

/* Compare (broadcasting) into an i32 mask of 0/1, and select where the mask
 * is non-zero. NaN compares false except for NE. */
typedef enum pto_cmp_mode {
  PTO_CMP_EQ,
  PTO_CMP_NE,
  PTO_CMP_LT,
  PTO_CMP_LE,
  PTO_CMP_GT,
  PTO_CMP_GE,
  PTO_CMP_MODE_COUNT
} pto_cmp_mode;
PTO_API pto_tensor *pto_cmp(pto_program *p, pto_tensor *a, pto_tensor *b,
                            pto_cmp_mode mode);
PTO_API pto_tensor *pto_select(pto_program *p, pto_tensor *mask,
                               pto_tensor *a, pto_tensor *b);

/* ---- reductions (dims are kept: [..,M,N] -> [..,M,1] or [..,1,N]) -------- */

PTO_API pto_tensor *pto_rowsum(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_rowmax(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_rowmin(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_colsum(pto_program *p, pto_tensor *a);
PTO_API pto_tensor *pto_colmax(pto_program *p, pto_tensor *a);

/* ---- matmul ------------------------------------------------------------- */

/* a [..,M,K] x b [..,K,N] -> f32 [..,M,N]; with PTO_MATMUL_TRANS_A a is
 * [..,K,M], with PTO_MATMUL_TRANS_B b is [..,N,K]. Leading (batch) dims
 * broadcast. Operands f32, bf16 or f16. With PTO_MATMUL_CAUSAL (below) it
 * is pto_matmul_masked with diag = N - M: the causal mask of attention
 * scores q x k^T, end-aligned as pto_mask_mode's (the M queries are the
 * last M of the N positions: query i sees key j <= N - M + i), so a
 * softmax after it gives the masked keys weight 0. */
enum { PTO_MATMUL_TRANS_A = 1u << 0, PTO_MATMUL_TRANS_B = 1u << 1 };
PTO_API pto_tensor *pto_matmul(pto_program *p, pto_tensor *a, pto_tensor *b,
                               unsigned flags);
/* acc + a x b; acc must have the shape of a x b (flags TRANS_A, TRANS_B). */
PTO_API pto_tensor *pto_matmul_acc(pto_program *p, pto_tensor *acc,
                                   pto_tensor *a, pto_tensor *b,
                                   unsigned flags);
/* a x b above a diagonal masked with -inf:
 *   out[.., i, j] = (a x b)[.., i, j] for j <= i + diag, -inf for j > i + diag
 * for every matrix of the batch; flags TRANS_A, TRANS_B (CAUSAL changes
 * nothing: diag says where the mask starts). diag 0 is the lower triangle
 * with its diagonal; diag >= N - 1 masks nothing and diag < -(M - 1) masks
 * every entry. |diag| <= 2^52. The products are pto_matmul's, bit for bit.
 * Tiles wholly past the diagonal are never computed (filled with -inf on
 * the vector cores); tiles it crosses are masked on the cube's way out
 * (TTRIFILL), so the mask costs no pass over the result. */
PTO_API pto_tensor *pto_matmul_masked(pto_program *p, pto_tensor *a,
                                      pto_tensor *b, unsigned flags,
                                      int64_t diag);

/* The weighted ReLU sum of each group of `group` consecutive rows of a
 * matmul, in one op (the lightning indexer's score: a query's H heads are
 * a group):
 *   out[.., r, n] = sum_{g < group} w[.., r*group + g, 0] *
 *                   ReLU((a x b)[.., r*group + g, n])
 * a [..,M,K] and b [..,K,N] as pto_matmul's (flags TRANS_A, TRANS_B; batch
 * dims broadcast), w f32 [..,M,1], group >= 1 dividing M; out f32
 * [..,M/group,N]. With PTO_MATMUL_CAUSAL, out[.., r, n] = -inf where
 * n > r + diag, and tiles wholly past that diagonal are never computed.
 * It runs on the cube as one instruction (TMATMUL_RELU_WSUM): the M x N
 * product never reaches memory. Cube tile {m, n, k}: m rows of a (rounded
 * down to whole groups, at least one), n cols; K is never split (ReLU
 * needs whole dot products), so k is ignored. */
enum { PTO_MATMUL_CAUSAL = 1u << 2 };
/* With PTO_MATMUL_CAUSAL on pto_matmul_relu_wsum: the diagonal is
 * end-aligned, diag = N - R for the N keys and R = M / group rows (diag is
 * ignored), and where N or R is a dynamic dim it follows the extents a run
 * binds (the lightning indexer's mask: query i sees key j <= S2 - S1 + i). */
enum { PTO_MATMUL_CAUSAL_END = 1u << 3 };
PTO_API pto_tensor *pto_matmul_relu_wsum(pto_program *p, pto_tensor *a,
                                         pto_tensor *b, pto_tensor *w,
                                         int64_t group, unsigned flags,
                                         int64_t diag);

/* Sparse attention (DeepSeek's sparse MLA) with an online softmax, in one
 * op. For query i of batch b and each of its T slots whose index
 * j = idx[b,i,t] is valid (0 <= j < S2; any other value is skipped,
 * wherever it sits in the row):
 *   x_t[h] = scale * q[b,i,h,:] . kv[b,j,:]
 *   lse[b,i,h] = ln sum_t exp(x_t[h])
 *   out[b,i,h,:] = sum_t exp(x_t[h] - lse[b,i,h]) * kv[b,j,:dv]
 * q [B,S1,H,D], kv [B,S2,D] (one head shared by all queries' heads; its
 * first dv columns are the values), both f32 or both bf16 (widened to f32
 * exactly as they are loaded and gathered: scores, softmax and sums run in
 * f32), idx i32 [B,S1,T],
 * 1 <= dv <= D. Returns out f32 [B,S1,H,dv] and sets *lse to f32
 * [B,S1,H]; a query with no valid index gets out 0 and lse +inf.
 * Tiled per query on the cube: cube tile {m, n, k} = m heads per task (0:
 * all), n slots per block of the online softmax (0: all T); k is ignored.
 * Unset, or {0, 0}: chosen for the machine compiled for
 * (pto_sparse_attention_tile in pto/executable.h).
 * The selected rows are read where they lie by both matmuls (TMATMUL_GA
 * for S^T = G Q^T, TMATMUL_GB for P V; bf16 rows widened a few at a time
 * in local memory): no copy of them exists in global memory. */
PTO_API pto_tensor *pto_sparse_attention(pto_program *p, pto_tensor *q,
                                         pto_tensor *kv, pto_tensor *idx,
                                         int64_t dv, double scale,
                                         pto_tensor **lse);

/* ---- composites and data movement --------------------------------------- */

/* Softmax along the last axis: exp(x - rowmax) * (1 / rowsum); built from
 * the primitive ops above (6 of them). Multiplying by the rounded reciprocal
 * of the row sum is within 1.5 ulp of dividing by the sum (one rounding
 * more), at the cost of one division per row instead of one per element. */
PTO_API pto_tensor *pto_softmax(pto_program *p, pto_tensor *a);

/* ---- activations, row statistics and norms (composites) ----------------
 *
 * Each is a short chain of the primitive ops above, so it fuses like any
 * chain (pto_program_num_ops counts its parts, and dumps and traces show
 * them under the current label); x is f32, bf16 or f16 (computed in f32),
 * never i32. The row ops reduce the last axis, of N entries, and keep
 * dims as the reductions do: [..,M,N] -> [..,M,1]. Bounds below are
 * against the exact value of the stated formula on the f32 inputs
 * (computed in double), with u = 2^-24, for the SIMD tables as for the
 * scalar reference (exp and rsqrt within 2 ulp, the other parts
 * correctly rounded, sums in any order).
 *
 * sigmoid(x) = 1 / (1 + exp(-x)) (recip, adds, exp, neg): relative error
 * <= 6u (3 ulp) where sigmoid(x) >= 2^-126 (x >= -87.3), absolute below
 * 2^-126 beyond; 0 at -inf, 1 at +inf, NaN at NaN. */
PTO_API pto_tensor *pto_sigmoid(pto_program *p, pto_tensor *x);
/* SiLU (swish): x sigmoid(x), computed as x / (1 + exp(-x)) (one rounding
 * and one pass fewer than the product): relative error <= 6u for x >=
 * -88, absolute < 2^-120 below (where it returns -0); NaN at -inf and NaN,
 * +inf at +inf (as x sigmoid(x) is). */
PTO_API pto_tensor *pto_silu(pto_program *p, pto_tensor *x);
/* GELU in its tanh form, PyTorch's gelu(approximate='tanh'):
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed exactly as
 * x / (1 + exp(v)) with v = x (A + B x^2), A = -2 sqrt(2/pi), B = 0.044715 A
 * (both rounded to f32; 7 ops). |error| <= 2^-21 (1 + |x|) against that
 * formula in double (relative <= (8 + 5 |v|) u). It is not the erf form
 * (PyTorch's default), from which it differs by up to 4.8e-4. */
PTO_API pto_tensor *pto_gelu(pto_program *p, pto_tensor *x);
/* The mean of each row: rowsum(x) times 1/N (rounded to f32), 2 ops:
 * |error| <= (N + 1) u mean(|x|). */
PTO_API pto_tensor *pto_mean(pto_program *p, pto_tensor *x);
/* The population variance of each row (divided by N, not N - 1), in two
 * passes: mean((x - mean(x))^2), 6 ops. With d the mean's error above,
 * |error| <= (N + 5) u var + d^2: the error of the mean enters squared. */
PTO_API pto_tensor *pto_var(pto_program *p, pto_tensor *x);
/* RMS norm over each row: y = x rsqrt(mean(x^2) + eps) gamma, 6 ops (7
 * with gamma); eps >= 0 is added as an f32. gamma (NULL: none) is f32,
 * bf16 or f16 with N entries along its last axis and 1 along any other
 * ([N], [1,N], ...), broadcast over the rows. Relative error <= (N/2 + 8) u
 * against the formula with that f32 eps. */
PTO_API pto_tensor *pto_rms_norm(pto_program *p, pto_tensor *x,
                                 pto_tensor *gamma, double eps);
/* Layer norm over each row: y = (x - mean) rsqrt(var + eps) gamma + beta,
 * var the population variance of pto_var (x - mean computed once); 9 ops,
 * one more for each of gamma and beta (shaped as rms_norm's gamma; NULL:
 * none); eps >= 0 is added as an f32. With s = sqrt(var + eps) and z =
 * (x - mean) / s the exact normalised value:
 * |error| <= |gamma| ((N + 1) u mean(|x|) / s + (N/2 + 9) u |z|) + u |y|.
 * kernels/dsa_prolog.c's RMS and layer norms are these calls. */
PTO_API pto_tensor *pto_layer_norm(pto_program *p, pto_tensor *x,
                                   pto_tensor *gamma, pto_tensor *beta,
                                   double eps);

/* The k largest values along the last axis of a floating tensor, ordered by
 * value descending and then index ascending (NaN ranks below -inf), and
 * their int32 indices.
 * Returns the values; *indices receives the indices. 1 <= k <= last dim. */
PTO_API pto_tensor *pto_topk(pto_program *p, pto_tensor *a, int64_t k,
                             pto_tensor **indices);

/* pto_topk where -inf marks an excluded entry (a masked-out score): excluded
 * entries are never selected, and when fewer than k entries of a row
 * remain, the slots past them hold -inf and index -1. k >= 1 may exceed
 * the last dim (every row is then padded). The result is [..., k].
 *
 * Both top-k ops are computed incrementally: each vector tile {rows, cols}
 * keeps the min(k, cols) best of its block of cols columns of a row
 * (TTOPK), and a tree of merges (TMRGTOPK, 4 sorted runs each) reduces the
 * blocks' sorted candidates to the row's k as blocks finish, spread over
 * the vector workers. cols 0 (or >= the last dim) selects whole rows at
 * once; merges take as many rows as keep them within the selection's
 * local memory. */
PTO_API pto_tensor *pto_topk_masked(pto_program *p, pto_tensor *a, int64_t k,
                                    pto_tensor **indices);

/* Rows of a 2-D table [N,D] chosen by an i32 index tensor of any shape S:
 * result [S..., D]. An index outside [0, N) yields a row of zeros, unless
 * PTO_GATHER_STRICT is given, in which case running the program fails with
 * PTO_ERANGE naming the op and the index. With PTO_GATHER_PAD an index of
 * -1 is padding, a row of zeros, strict or not (top-k pads its selections
 * with -1): a strict gather then fails on every other index outside. */
enum { PTO_GATHER_STRICT = 1u << 0, PTO_GATHER_PAD = 1u << 1 };
PTO_API pto_tensor *pto_gather(pto_program *p, pto_tensor *table,
                               pto_tensor *index, unsigned flags);
/* pto_gather where an index of -1 takes the row of `other` instead of a row
 * of zeros: other has the result's shape [S..., D] and the table's dtype.
 * Every other index outside [0, N) gives a zero row, or with
 * PTO_GATHER_STRICT fails the run (PTO_ERANGE, naming the op and the
 * index). Rows of two sources merged in one pass, as a cache's rows and a
 * step's new ones: two padded gathers and their sum give the same values
 * and move every row three more times. */
PTO_API pto_tensor *pto_gather_else(pto_program *p, pto_tensor *table,
                                    pto_tensor *index, pto_tensor *other,
                                    unsigned flags);

/* Concatenate n >= 1 tensors (same dtype, equal dims except axis; any
 * count) along axis (negative counts from the end). One op: each input is
 * copied once into its place, a tile at a time. */
PTO_API pto_tensor *pto_concat(pto_program *p, int n, pto_tensor *const *ts,
                               int axis);

/* PyPTO's assemble: a tensor equal to dst with src written over the window
 * of dst that starts at begin (src's dims d span [begin[d], begin[d] +
 * src dim d), which must lie inside dst; same dtype and rank; values are
 * moved bit for bit). Assembling onto the result of an assemble extends
 * it: a chain of n assembles is one op with n blocks (a later block wins
 * where two overlap), the intermediate results are computed only if
 * something else reads them, and the chain's first dst is read only where
 * no block covers it. So writing 16 blocks into one output is 16 copies
 * of one block each, not a tree of copies of the output, and a block made
 * by vector ops under the same vector tile as the assemble fuses with its
 * copy: its tiles are stored straight into the output.
 *
 *   pto_tensor *y = pto_full(p, PTO_F32, 2, (int64_t[]){64, 64}, 0);
 *   for (int i = 0; i < 4; i++)
 *     for (int j = 0; j < 4; j++)
 *       y = pto_assemble(p, y, block[i][j], (int64_t[]){16 * i, 16 * j});
 */
PTO_API pto_tensor *pto_assemble(pto_program *p, pto_tensor *dst,
                                 pto_tensor *src, const int64_t *begin);

/* A tensor filled with value, and one counting start, start+1, ... along its
 * last axis (the same in every row). iota's values start + i (i below the
 * axis' extent) must lie in i32 (they are counted in i32, then an f32 iota
 * converts them: exact while |value| <= 2^24). */
PTO_API pto_tensor *pto_full(pto_program *p, pto_dtype dt, int ndim,
                             const int64_t *shape, double value);
PTO_API pto_tensor *pto_iota(pto_program *p, pto_dtype dt, int ndim,
                             const int64_t *shape, int64_t start);
/* pto_iota counting along any axis (negative counts from the end):
 * out[idx] = start + idx[axis], i32 or f32. Along the rows of a [S,1]
 * tensor it is the query positions a causal mask compares against. */
PTO_API pto_tensor *pto_iota_axis(pto_program *p, pto_dtype dt, int ndim,
                                  const int64_t *shape, int axis,
                                  int64_t start);

/* ---- reference evaluator ------------------------------------------------ */

/* Runs the program op by op in plain C, accumulating in double and storing
 * each tensor in its dtype. inputs[i] and outputs[i] are dense row-major
 * buffers in declaration order. It is slow and obviously right: the oracle
 * every compiled run is checked against. Like pto_compile, it runs only the
 * ops some output depends on (a strict gather nothing reads cannot fail
 * it). Returns the program's sticky error if it has one, else any run-time
 * error (a strict gather out of range). */
PTO_API pto_status pto_program_eval(pto_program *p, const void *const *inputs,
                                    void *const *outputs);
/* pto_program_eval of a program with dynamic dims at the extents dims[i]
 * (one per dim, in declaration order; a program with none ignores dims):
 * buffers are laid out for the maxima, as a run's are, and only the valid
 * region of each output is written. pto_program_eval evaluates at the
 * maxima. PTO_ERANGE for an extent outside [1, its maximum] and
 * PTO_ESHAPE when two axes an op matches get different extents, naming
 * the dims and the values. */
PTO_API pto_status pto_program_eval_dims(pto_program *p, const int64_t *dims,
                                         const void *const *inputs,
                                         void *const *outputs);

PTO_EXTERN_C_END

#endif /* PTO_PROGRAM_H */
