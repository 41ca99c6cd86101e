/* core/program.h (internal): the tensor graph behind pto_program. */
#ifndef PTO_CORE_PROGRAM_H
#define PTO_CORE_PROGRAM_H

#include <stdarg.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/error.h"
#include "pto/config.h"
#include "pto/program.h"

typedef enum pto_top {
#define PTO_TOP(name, str, cls) PTO_TOP_##name,
#include "core/ops.def"
#undef PTO_TOP
  PTO_TOP_COUNT
} pto_top;

typedef enum pto_top_class {
  PTO_TC_BINARY,
  PTO_TC_SCALAR,
  PTO_TC_UNARY,
  PTO_TC_CAST,
  PTO_TC_CMP,
  PTO_TC_SELECT,
  PTO_TC_REDUCE,
  PTO_TC_MATMUL,
  PTO_TC_TOPK,
  PTO_TC_GATHER,
  PTO_TC_CONCAT,
  PTO_TC_FILL,
  PTO_TC_IOTA,
  PTO_TC_CUSTOM,
  PTO_TC_ATTENTION,
  PTO_TC_ASSEMBLE,
  PTO_TC_TPROG, /* a tile program (pto/tileprog.h, core/tprog.h) */
  PTO_TC_COUNT
} pto_top_class;

const char *pto__top_name(pto_top op);
pto_top_class pto__top_class(pto_top op);
/* The core type an op's tiles run on: CUBE for matmuls and attention,
 * VECTOR for the rest. */
pto_core_type pto__top_core(pto_top op);

typedef struct pto_node pto_node;

/* A tensor is a strided window on a storage. A root tensor (input or op
 * result) owns a dense row-major storage; a view shares its root's. */
struct pto_tensor {
  uint32_t id;        /* index in pto_program.tensors */
  const char *name;   /* arena-owned; "t<id>" when unnamed */
  pto_dtype dtype;
  int ndim;
  int64_t shape[PTO_MAX_DIMS];
  int64_t stride[PTO_MAX_DIMS]; /* elements, into the root's storage */
  int64_t offset;               /* elements, into the root's storage */
  pto_tensor *root;             /* itself for a root */
  pto_node *producer;           /* NULL for inputs, fills are nodes */
  int input_index;              /* >= 0 for a program input root */
  /* per axis, the dynamic dim whose extent it has at run time (an index
   * into pto_program.dims), or -1 for a static axis; shape[] holds the
   * maxima, which the layout (strides, storage) is built for. A slice of a
   * dynamic axis starts dyn_off into the dim: at extent E its valid length
   * is min(shape, max(0, E - dyn_off)) */
  int8_t dyn[PTO_MAX_DIMS];
  int64_t dyn_off[PTO_MAX_DIMS];
  /* an axis merged with the static axes inside it (a reshape of [S, H] to
   * [S*H]) is dyn_mul elements per unit of the dim: its valid length is
   * min(shape, max(0, E * dyn_mul - dyn_off)); 1 otherwise */
  int64_t dyn_mul[PTO_MAX_DIMS];
  /* how a view was made from its parent (PTO_VIEW_*), so a program bound
   * to other extents (pto__program_bind) can make it again */
  uint8_t view;
  int8_t view_axes[2];          /* TRANSPOSE: the axes swapped */
  int64_t view_begin[PTO_MAX_DIMS]; /* SLICE: where it starts */
  pto_tensor *parent;           /* a view's parent tensor, else NULL */
  const pto_program *prog;      /* its program, for the names of its dims */
};

enum { PTO_VIEW_NONE, PTO_VIEW_SLICE, PTO_VIEW_RESHAPE, PTO_VIEW_TRANSPOSE };

/* The code pto_dim_dynamic returns for dim i (pto/program.h). */
#define PTO__DIM_CODE(i) (PTO_DIM_CODE_BASE - (int64_t)(i))
/* An axis as far as dims go: its dynamic dim (-1: static) and where it
 * starts in it. */
typedef struct pto_dref {
  int8_t dim;
  int64_t off, mul; /* valid length min(len, max(0, E * mul - off)) */
} pto_dref;

/* A term of a scalar that follows the extents: sign times the valid length
 * of an axis (dref r of static length len), less that length at the
 * maxima (base), so the scalar is right at the maxima and moves with the
 * binding; or, with recip, the scalar is 1 / that valid length (a mean's
 * divisor). */
typedef struct pto_sterm {
  pto_dref r;
  int64_t len, base;
  int8_t sign;   /* 0: no term */
  uint8_t recip; /* s = 1 / valid length, not s + sign (valid length - base) */
} pto_sterm;

/* A bind-time equality between two axes of length len that an op matches:
 * each one's valid length (len when static, min(len, max(0, E - off))
 * when dynamic) must be equal; op named for the message. */
typedef struct pto_dim_eq {
  pto_dref a, b;
  int64_t len;
  const char *op;    /* arena-owned */
  const char *label; /* arena-owned */
} pto_dim_eq;

/* The valid length of an axis of length len that is r, at extents ext. */
static inline int64_t pto__dref_len(pto_dref r, int64_t len,
                                    const int64_t *ext) {
  if (r.dim < 0)
    return len;
  const int64_t left = ext[r.dim] * r.mul - r.off;
  return left <= 0 ? 0 : left < len ? left : len;
}

/* Scalar s with term t applied at extents ext. */
static inline double pto__sterm_apply(double s, const pto_sterm *t,
                                      const int64_t *ext) {
  if (!t->sign)
    return s;
  const int64_t l = pto__dref_len(t->r, t->len, ext);
  return t->recip ? 1.0 / (double)l : s + (double)t->sign * (double)(l - t->base);
}

#define PTO_NODE_MAX_IN 8
#define PTO_NODE_MAX_OUT 2

struct pto_node {
  uint32_t id; /* index in pto_program.nodes: nodes are in topological order */
  pto_top op;
  int n_in, n_out;
  /* the n_in inputs: in_buf, or an arena array when there are more than
   * PTO_NODE_MAX_IN (concat, assemble); a copy of a node calls
   * pto__node_copy, which gives it arrays of its own */
  pto_tensor **in;
  pto_tensor *in_buf[PTO_NODE_MAX_IN];
  pto_tensor *out[PTO_NODE_MAX_OUT];
  double scalar;  /* SCALAR, FULL value; MATMUL with CAUSAL: the diagonal */
  int64_t ival;   /* TOPK k, IOTA start, CONCAT axis, CMP mode, CUSTOM id,
                     ASSEMBLE uncovered boxes */
  int axis;       /* IOTA: the axis it counts along */
  const int64_t *offs; /* ASSEMBLE's begin and boxes (below); arena-owned */
  unsigned flags; /* PTO_MATMUL_TRANS_*, PTO_MATMUL_CAUSAL, PTO_GATHER_STRICT,
                     PTO_TOPK_MASKED; MATMUL with in[2] set accumulates */
  const char *label; /* arena-owned, "" when none */
  /* TILE_PROGRAM: the program, arena-owned (core/tprog.h) */
  const struct pto_tprog_def *tprog;
  /* scalar's terms on dynamic axes, applied at run time: a causal
   * diagonal's (MATMUL_RELU_WSUM with PTO_MATMUL_CAUSAL_END), a mean's
   * 1 / N (MULS) */
  pto_sterm st[2];
  pto_tile_shape tile;
  /* which parts of tile the program set (PTO_TILE_SET_*): a part nobody
   * set, here or in a config, is chosen by the compiler */
  uint8_t tile_set;
  /* knobs the program recommends for this op (pto_program_set_knob):
   * bit k of knob_set says knob[k] is set */
  uint32_t knob_set;
  int64_t knob[PTO_KNOB_COUNT];
};

/* Parts of a tile shape set by the program (pto_node.tile_set). */
enum { PTO_TILE_SET_VEC = 1u << 0, PTO_TILE_SET_CUBE = 1u << 1 };

/* TOPK flags: pto_topk_masked's (-inf entries excluded, padding). */
enum { PTO_TOPK_MASKED = 1u << 0 };

/* ASSEMBLE: in[0] is dst, in[1] the block written over it at offs[0 ..
 * nd) (nd the result's rank). When dst is itself an ASSEMBLE's result
 * (its root), the two are one chain: walking in[0] back through them gives
 * the chain's blocks, last first, and its base (the first dst), and eval
 * and tiling write the chain's blocks over its base in one op without
 * reading the intermediate results (pto__live_nodes does not need them).
 * offs[nd ..] holds ival boxes ([lo, hi) per axis: 2 nd each) of the base
 * no block of the chain covers yet (ival -1: too many to follow); with
 * PTO_ASSEMBLE_COVERED there are none and the base is never read. */
enum { PTO_ASSEMBLE_COVERED = 1u << 0 };
/* The previous op of n's chain (an ASSEMBLE whose result is n's dst), or
 * NULL when n's dst is the chain's base. */
static inline const pto_node *pto__assemble_prev(const pto_node *n) {
  const pto_tensor *d = n->in[0];
  return d->root == d && d->producer && d->producer->op == PTO_TOP_ASSEMBLE
             ? d->producer
             : NULL;
}

#define PTO_SCOPE_MAX 32

struct pto_program {
  pto_arena arena;
  const char *name;
  pto_error err;     /* the sticky build error */
  pto_error run_err; /* the last eval's run-time error, cleared by each eval;
                        pto_program_error() shows it when err is clear */
  /* growable arrays of arena-owned objects */
  pto_tensor **tensors;
  uint32_t n_tensors, cap_tensors;
  pto_node **nodes;
  uint32_t n_nodes, cap_nodes;
  pto_tensor **inputs;
  uint32_t n_inputs, cap_inputs;
  pto_tensor **outputs;
  const char **output_names;
  uint32_t n_outputs, cap_outputs;
  /* scopes */
  pto_tile_shape tiles[PTO_SCOPE_MAX];
  int n_tiles; /* >= 1: tiles[0] is the program default */
  uint8_t tile_set[PTO_SCOPE_MAX]; /* PTO_TILE_SET_* per scope */
  /* the knobs recommended in each tile scope (pto_program_set_knob) */
  uint32_t knob_set[PTO_SCOPE_MAX];
  int64_t knobs[PTO_SCOPE_MAX][PTO_KNOB_COUNT];
  const char *labels[PTO_SCOPE_MAX]; /* full dotted label per depth */
  int n_labels;
  /* the open pto_program_push_scope's, innermost last: the label and tile
   * depths each left (a pop_label or pop_tile may not undo them, and its
   * pop_scope finds them again) and whether it pushed a label */
  struct {
    int8_t labels, tiles, has_label;
  } scopes[PTO_SCOPE_MAX];
  int n_scopes;
  /* dynamic dims (pto_dim_dynamic): name (arena) and maximum */
  struct {
    const char *name;
    int64_t max;
  } dims[PTO_DIMS_MAX];
  int n_dims;
  /* what binding must check: equalities between dims the ops joined */
  pto_dim_eq *eqs;
  unsigned n_eqs, cap_eqs;
};

/* Whether shape value v is a dynamic dim's code of p: its index, or -1. */
int pto__dim_of_code(const pto_program *p, int64_t v);
/* A static copy of p at run-time extents: every dynamic axis takes the
 * extent of its dim, ext[i] for dim i (1 <= ext[i] <= its maximum),
 * roots are dense at those extents and views are made again from their
 * parents; the dims are gone. What the evaluator runs to check a dynamic
 * program at a binding. NULL on ENOMEM. */
pto_program *pto__program_bind(const pto_program *p, const int64_t *ext);

/* A copy of p's tensor graph (tensors, ops, inputs, outputs, names and
 * labels; not its scopes) that p's later changes and pto_program_free do
 * not touch: what an executable keeps. NULL on ENOMEM. */
pto_program *pto__program_snapshot(const pto_program *p);

/* *dst = *src, with arrays of its own in a: the inputs (pointing at the
 * same tensors: the caller maps them to its copies) and ASSEMBLE's block
 * offsets. 0, or -1 when a runs out of memory. */
int pto__node_copy(pto_arena *a, pto_node *dst, const pto_node *src);

/* Dense row-major strides for shape. */
void pto__dense_strides(int ndim, const int64_t *shape, int64_t *stride);
/* 1 when t's elements are dense row-major in its root from t->offset. */
int pto__tensor_is_contiguous(const pto_tensor *t);
/* The nodes some output depends on: live[i] is 1 for node i when one of its
 * results holds (or shares storage with) a tensor an output needs. Ops no
 * output depends on are neither compiled nor evaluated. free() it; NULL on
 * ENOMEM. */
uint8_t *pto__live_nodes(const pto_program *p);
/* The same with node i reading the NULL-terminated tensors reads[i]
 * instead of its inputs where reads (NULL: none) and reads[i] are set: an
 * op tiled as one with the ops behind it (core/tiling_flash.c) needs what
 * they read, not their results. */
uint8_t *pto__live_nodes_using(const pto_program *p,
                               const pto_tensor *const *const *reads);
/* "f32[64,32]" into buf (size >= 64). */
const char *pto__tensor_desc(const pto_tensor *t, char *buf, size_t size);
/* Records "<op>[ '<label>']: <message>" in e, the message from fmt and ap:
 * over any earlier error, or with first only when none is recorded (the
 * build's sticky error, pto__fail, and eval's run-time one share it). */
pto_status pto__error_op(pto_error *e, int first, pto_status st,
                         const char *op, const char *label, const char *fmt,
                         va_list ap) __attribute__((format(printf, 6, 0)));

#endif /* PTO_CORE_PROGRAM_H */
