/* randprog_impl.h (internal to tests/randprog*.c): what the files of the
 * random program generator and runner share: the case as steps and tracked
 * values, the generator's state and helpers, and the liveness, building and
 * printing functions the runner, supervisor and minimizer use. */
#ifndef PTO_TESTS_RANDPROG_IMPL_H
#define PTO_TESTS_RANDPROG_IMPL_H

#include "tests/randprog.h"

#include <stdint.h>
#include <stdio.h>

/* randprog_inc.h is printed verbatim into the C programs too, so each of its
 * functions is static; a file here uses only some of them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tests/randprog_inc.h"
#pragma GCC diagnostic pop

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
  int posinf;                       /* +inf too (an lse): output only */
  int neginf; /* -inf past a mask's diagonal: output or softmax only */
  int hidden; /* made by the nn stream (randprog_nn.c): the main stream
                 never sees it */
  int live;
  int8_t dim[4]; /* dynamic dims (randprog_dims.c): 1 + the dim of each axis
                    that is the whole dim (valid length its extent), else 0 */
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
       S_SET_CUBE,
       S_PUSH_SCOPE, /* a label (name, "" for none) and a tile together */
       S_POP_SCOPE
};

#define RP_OPS(X)                                                              \
  X(ADD, "add")                                                                \
  X(SUB, "sub")                                                                \
  X(MUL, "mul")                                                                \
  X(DIV, "div") X(MAX, "max") X(MIN, "min") X(ADDS, "adds") X(SUBS, "subs")    \
      X(MULS, "muls") X(DIVS, "divs") X(MAXS, "maxs") X(MINS, "mins")          \
          X(EXP, "exp") X(LOG, "log") X(SQRT, "sqrt") X(RSQRT, "rsqrt")        \
              X(RECIP, "recip") X(RELU, "relu") X(ABS, "abs") X(NEG, "neg") X( \
                  CAST, "cast") X(CMP, "cmp") X(SELECT, "select")              \
                  X(ROWSUM, "rowsum") X(ROWMAX, "rowmax") X(ROWMIN, "rowmin")  \
                      X(COLSUM, "colsum") X(COLMAX, "colmax")                  \
                          X(MATMUL, "matmul") X(MATMUL_ACC, "matmul_acc")      \
                              X(SOFTMAX, "softmax") X(TOPK, "topk")            \
                                  X(GATHER, "gather") X(CONCAT, "concat")      \
                                      X(FULL, "full") X(IOTA, "iota")          \
                                          X(ATTENTION, "sparse_attention")     \
                                          X(SLICE, "slice")                    \
                                              X(RESHAPE, "reshape")            \
                                                  X(TRANSPOSE, "transpose")    \
  X(SIGMOID, "sigmoid") X(SILU, "silu") X(GELU, "gelu") X(MEAN, "mean")        \
      X(VAR, "var") X(LAYER_NORM, "layer_norm") X(RMS_NORM, "rms_norm")        \
          X(MATMUL_MASKED, "matmul_masked") X(IOTA_AXIS, "iota_axis")          \
              X(ASSEMBLE, "assemble") X(TPROG, "tile_program")

enum {
#define RP__OPE(n, s) O_##n,
  RP_OPS(RP__OPE)
#undef RP__OPE
      O_COUNT
};

#define MAX_IN 24
enum { RP_TOPK_MASKED = 1u << 0 };

typedef struct rp_step {
  int kind, op;
  int n_in, in[MAX_IN];
  int out, out2;
  pto_dtype dt;
  int nd;
  int64_t shape[4], end[4]; /* shape; slice begin (shape) and end */
  int a0, a1;               /* transpose axes; concat axis; cmp mode */
  unsigned flags; /* O_TOPK: RP_TOPK_MASKED for pto_topk_masked */
  double scalar;
  int64_t ival;
  uint32_t tile[5];
  int has_tile;
  int nn;                /* made by the nn stream (randprog_nn.c) */
  char name[48];         /* input, output or label name */
  char label[96];        /* full label in force (ops) */
  int fill_kind, fill_q; /* inputs */
  double fill_lo, fill_hi;
  uint64_t fill_seed;
  int8_t dim[4]; /* shapes of inputs, fills and iotas: 1 + the case's
                    dynamic dim of each axis, 0 for a static one */
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

/* Dynamic dims (randprog_dims.c): each declared with the extent of the
 * axes it is given as its maximum; a binding gives each one an extent. */
#define RP_MAX_DIMS 4
#define RP_MAX_BINDS 8
typedef struct rp_dim {
  char name[16];
  int64_t max;
} rp_dim;
typedef struct rp_bind {
  int64_t ext[RP_MAX_DIMS];
  int expect; /* PTO_OK, or PTO_ESHAPE: an equality the ops recorded is
                 broken on purpose */
} rp_bind;

struct rp_case {
  uint64_t seed;
  int from_bytes;
  int huge; /* huge_shapes fixed: which op must refuse a 2^40 shape */
  int untiled; /* no tile set anywhere (program or config): every tile is
                  the compiler's, and on the host or ascend machine each
                  must compile (ECAPACITY fails the case) */
  rp_switches sw;
  int special, n_ops;
  rp_step *steps;
  int n_steps, cap_steps;
  rp_val *vals;
  int n_vals, cap_vals;
  rp_cfg cfg;
  int n_rts;
  rp_rt_spec rts[3];
  int n_dims; /* none: a static case, run as before dims existed */
  rp_dim dims[RP_MAX_DIMS];
  int n_binds;
  rp_bind binds[RP_MAX_BINDS];
};

/* ---- choices: a PRNG or fuzzer bytes (randprog.c) ------------------------ */

typedef struct rp_src {
  uint64_t s;
  const uint8_t *data;
  size_t size, pos;
  int bytes;
} rp_src;

uint32_t pick(rp_src *r, uint32_t n);
int chance(rp_src *r, int pct);
#define PICK_OF(r, arr)                                                        \
  (arr)[pick((r), (uint32_t)(sizeof(arr) / sizeof((arr)[0])))]

/* ---- generator state (randprog.c) ---------------------------------------- */

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
  /* the nn stream (randprog_nn.c): the newer ops, chosen by a PRNG of
   * their own and made of values the main stream never picks, so that
   * what the main stream makes of a seed stays what it was */
  rp_src nn_r, *main_r;
  int nn_mode;      /* generating for the nn stream now */
  uint64_t nn_seed; /* its inputs' fill seeds */
  int nn_inputs, nn_outputs;
} gen;

static const double U = 0x1p-22; /* two f32 roundings, with margin */

rp_step *add_step(gen *g, int kind);
/* A label scope (at most 3 deep): pushes name, 0 when it cannot; pops the
 * innermost. */
int push_label(gen *g, const char *name);
void pop_label(gen *g);
int64_t numel_of(int nd, const int64_t *shape);
rp_val *V(gen *g, int id);
double mag(const rp_val *v);
int new_val(gen *g, pto_dtype dt, int nd, const int64_t *shape);
int is_float(pto_dtype dt);
int grid_fits(double m, int q, pto_dtype dt);
void settle(rp_val *r, int grid_ok, int exact_op, int worst, double err);
int worst2(const rp_val *a, const rp_val *b);
void i32_clip(rp_val *r);
void holds_values_of(rp_val *r, const rp_val *src);

/* ---- picking tensors and inputs (randprog.c) ----------------------------- */

typedef int (*val_pred)(gen *g, const rp_val *v, const void *ctx);

int pick_val(gen *g, val_pred ok, const void *ctx);
int pred_float(gen *g, const rp_val *v, const void *ctx);
void rand_shape(gen *g, int *nd, int64_t *shape);
int new_input(gen *g, pto_dtype dt, int nd, const int64_t *shape, int force_int,
              double ilo, double ihi);
pto_dtype rand_dtype(gen *g);

/* ---- ops (randprog_ops.c) ------------------------------------------------ */

rp_step *op_step(gen *g, int op, int n_in, const int *in, int out);
int bcast(int na, const int64_t *a, int nb, const int64_t *b, int *nr,
          int64_t *r);
int guard_clamp(gen *g, int a, double C);
int do_unary(gen *g, int op, int a);
int do_binary(gen *g, int op, int a, int b);
int gen_scalar_op(gen *g);
int gen_unary(gen *g);
int gen_binary(gen *g);
int gen_cmp_select(gen *g);
int gen_cast(gen *g);
int gen_reduce(gen *g);

/* ---- matmul (randprog_matmul.c) ------------------------------------------ */

int gen_matmul(gen *g, int with_acc);
/* The step op (O_MATMUL, O_MATMUL_ACC with acc >= 0, O_MATMUL_MASKED) of
 * a x b (+ acc), result nd/shape, depth K, and what is known of its
 * values (a mask's -inf entries aside); the result's id, or -1. */
int matmul_step(gen *g, int op, int a, int b, int acc, unsigned flags, int nd,
                const int64_t *shape, int64_t K);
int gen_motif(gen *g);

/* ---- composites, data movement and views (randprog_movement.c) ----------- */

int gen_softmax(gen *g);
int gen_topk(gen *g);
int gen_gather(gen *g);
int gen_concat(gen *g);
int gen_fill(gen *g);
int view_slice(gen *g, int t, int axis, int64_t b0, int64_t e0);
int view_transpose(gen *g, int t, int a0, int a1);
int gen_view(gen *g);

/* ---- the nn stream (randprog_nn.c) ---------------------------------------- */

/* Seeds the nn stream from the main one's seed (or bytes). */
void nn_init(gen *g, uint64_t seed);
/* Maybe (by the nn stream alone) adds one of the newer ops: composites,
 * masked matmuls, iota along an axis, assemble chains, many-input concats,
 * scopes; the main stream's state is left as it was. */
void nn_step(gen *g);
/* Outputs for the nn stream's leaves. */
void nn_outputs(gen *g);
/* A tile program (randprog_tprog.c, rp_tprog in randprog_inc.h). */
int gen_tprog(gen *g);

/* ---- dynamic dims (randprog_dims.c) -------------------------------------- */

/* Maybe (by a PRNG of its own, from seed) makes some axes of c's inputs
 * and fills dynamic, keeping only the dims the builder accepts and the
 * value tracking stays sound for at every extent, and picks c's bindings;
 * c's steps are otherwise unchanged. */
void dims_overlay(rp_case *c, uint64_t seed);
/* Makes dim k static everywhere (its bindings' column goes too). */
void dims_drop(rp_case *c, int k);
/* Declares c's dims in p: codes[k] is case dim k's code. */
void dims_declare(const rp_case *c, pto_program *p, int64_t *codes);
/* "D0=5 D1=1" */
void dims_describe(const rp_case *c, const int64_t *ext, char *buf,
                   size_t size);

/* ---- sparse attention (randprog_attention.c) ----------------------------- */

int gen_attention(gen *g);

/* ---- liveness (randprog.c) and pruning (randprog_supervise.c) ------------ */

void mark_live(rp_case *c);
int step_live(const rp_case *c, const rp_step *s);
int case_labels(const rp_case *c, int live_only, char (*set)[96], int cap);
void prune(rp_case *c);

/* ---- building and printing (randprog_print.c) ---------------------------- */

void emit_program(const rp_case *c, pto_program *p, pto_tensor **T, FILE *o);
pto_config *emit_config(const rp_case *c, FILE *o, int l1_one, char *err,
                        size_t size);
int cfg_has_l1_reuse(const rp_cfg *f);
int cfg_fuses(const rp_cfg *f);
double out_tol(const rp_val *v);
void rt_machine(const rp_rt_spec *r, uint32_t *cube, uint32_t *vec);

#endif /* PTO_TESTS_RANDPROG_IMPL_H */
