/* core/isa.h (internal): opcodes and the instruction table, generated from
 * core/isa.def, and the argument block every tile instruction takes.
 *
 * Every fact a pass needs about an instruction is a column of the table
 * (pto__insn_info) or of its operand class (pto__insn_facts): operand
 * counts, roles and dtypes, core type, the levels a cube program keeps its
 * operands in, what it does with global memory, the scratch it needs, its
 * local footprint, flops and bytes moved as functions of its operands'
 * shapes. Passes ask these, never the opcode (the tiler, which emits
 * instructions, and the rewrite rules, which name the patterns they fuse,
 * excepted). */
#ifndef PTO_CORE_ISA_H
#define PTO_CORE_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "pto/config.h"
#include "pto/tileop.h"
#include "pto/types.h"

/* Instruction flags. */
enum {
  PTO_IF_GLOBAL = 1u << 0, /* touches global memory (a.g) */
  PTO_IF_INT = 1u << 1,    /* accepts i32 tiles */
  PTO_IF_EXACT = 1u << 2,  /* result is bit-exact against a plain C oracle */
  PTO_IF_REDUCE = 1u << 3, /* accumulates: compared with a tolerance */
  /* loads its window a row at a time, each row fetched while it works on
   * the one before: the executor prefetches only its first row */
  PTO_IF_ROW_AHEAD = 1u << 4,
  /* also writes a second global view (a.g2) while it reads a.g */
  PTO_IF_STORE2 = 1u << 5,
  /* its result is its one input's values, converted at most (a load, a
   * store, a move): what fusion forwards a store to a load through, and
   * the tile copy the planner inserts (pto__insn_copy) */
  PTO_IF_COPY = 1u << 6,
};

typedef enum pto_insn_family {
  PTO_FAMILY_MEMORY,
  PTO_FAMILY_ELEMENT,
  PTO_FAMILY_SCALAR,
  PTO_FAMILY_AXIS,
  PTO_FAMILY_MATMUL,
  PTO_FAMILY_MOVE,
  PTO_FAMILY_COMPLEX,
  PTO_FAMILY_CUSTOM,
  PTO_FAMILY_COUNT
} pto_insn_family;

/* The operand classes: instructions whose operands have the same roles,
 * dtypes, global access and cost functions (their facts, core/isa.c) and
 * the same operand rules (tileops/check.c: rule_<CLASS>). A class is the
 * last column of an isa.def row. CUSTOM is first, so that a custom
 * instruction's zeroed info is of it. */
/* clang-format off */
#define PTO_CLASS_MAP(X)                                                       \
  X(CUSTOM)                                                                    \
  X(LOAD) X(STORE) X(MULSTORE) X(LOADMAX) X(LOADEXPSUM) X(LOADSTORE)           \
  X(GATHER) X(GATHERELSE) X(BINARY) X(UNARY) X(CMP) X(SEL) X(CONVERT)        \
  X(SCALAR) X(FILL)                                                            \
  X(ROWRED) X(COLRED) X(ROWEXPAND) X(ROWEXPAND2) X(ROWEXPDIF) X(ROWEXPSUM)     \
  X(COLEXPAND) X(COLEXPAND2) X(MATMUL) X(MATMUL_ACC) X(MATMUL_WSUM)            \
  X(MATMUL_WSUM_G) X(MATMUL_GA) X(MATMUL_GB) X(SMONLINE)                       \
  X(SMFINAL) X(EXTRACT) X(INSERT) X(TRANS) X(FILLPAD) X(SORT32) X(MRGSORT)     \
  X(TOPK) X(MRGTOPK)
/* clang-format on */

typedef enum pto_insn_class {
#define PTO__CLASS_ENUM(name) PTO_CLASS_##name,
  PTO_CLASS_MAP(PTO__CLASS_ENUM)
#undef PTO__CLASS_ENUM
      PTO_CLASS_COUNT
} pto_insn_class;

typedef enum pto_opcode {
#define PTO_INSN(name, fam, core, nsrc, ndst, cls, flags) PTO_OP_##name,
#include "core/isa.def"
#undef PTO_INSN
  PTO_OP_COUNT /* custom instructions are numbered from here */
} pto_opcode;

typedef struct pto_insn_info {
  const char *name;
  pto_insn_family family;
  pto_core_type core;
  uint8_t n_src, n_dst;
  uint32_t flags;
  pto_insn_class cls; /* its operand class: pto__insn_facts */
} pto_insn_info;

/* Per-call flags (pto_targs.flags). */
enum {
  /* TSTORE: accumulate into global; TSOFTMAXONLINE: continue the state
   * in src2 */
  PTO_TF_ACC = 1u << 0,
  PTO_TF_STRICT = 1u << 1, /* TGATHER: out-of-range index is an error */
  /* TMATMUL*, TSOFTMAXONLINE, TTRIFILL: src0 stored transposed */
  PTO_TF_TRANS_A = 1u << 2,
  PTO_TF_TRANS_B = 1u << 3, /* TMATMUL*: src1 stored transposed */
  PTO_TF_RELU = 1u << 4,    /* TMOV: fused ReLU */
  PTO_TF_STREAM = 1u << 5,  /* TSTORE: nothing reads g soon: a table may
                               write around the caches (same results) */
  /* TLOAD: pack the window as a matmul left operand, panels of imm[0] rows;
   * TMATMUL*: src0 is so packed, panels of imm[0] rows (core/isa.def) */
  PTO_TF_PACK_A = 1u << 6,
  /* TLOAD: pack the window as a matmul right operand, panels of imm[0]
   * cols; TMATMUL*: src1 is so packed, panels of imm[1] cols */
  PTO_TF_PACK_B = 1u << 7,
  /* TMATMUL_RELU_WSUM: -inf where col > row + s (core/isa.def) */
  PTO_TF_CAUSAL = 1u << 8,
  /* TMATMUL_ACC: scale dst's rows by src2's column 0 first */
  PTO_TF_ROWSCALE = 1u << 9,
  /* the planner gave the instruction its scratch (pto_insn_facts.scratch):
   * the tile after its destinations, dst[n_dst] (pto__targs_scratch) */
  PTO_TF_SCRATCH = 1u << 10,
  /* TGATHER: an index of -1 is padding (a zero row), strict or not */
  PTO_TF_PAD = 1u << 11,
};

/* Largest panel width a packed operand may have. */
#define PTO_MM_PANEL_MAX 64

/* A 2-D window of a global tensor: element (r, c) is at
 * base + (r * row_stride + c * col_stride) * dtype size. */
typedef struct pto_gview {
  void *base;
  pto_dtype dtype;
  int64_t rows, cols;
  int64_t row_stride, col_stride;
} pto_gview;

#define PTO_MAX_SRC 4
/* two destinations, and the scratch tile the plan may add after them */
#define PTO_MAX_DST 3

struct pto_pf;

/* Everything one tile instruction needs. */
typedef struct pto_targs {
  /* dst[0 .. n_dst): the destinations; with PTO_TF_SCRATCH, dst[n_dst] is
   * the scratch the plan reserved (pto__targs_scratch) */
  pto_tile *dst[PTO_MAX_DST];
  const pto_tile *src[PTO_MAX_SRC];
  pto_gview g;
  pto_gview g2; /* the view a PTO_IF_STORE2 instruction writes */
  double s;     /* scalar operand */
  int32_t imm[2];
  uint32_t flags;
  /* the windows the task's next instructions will TLOAD, when this one
   * computes: a hint a long instruction may use to prefetch them while it
   * runs (n_ahead may be 0; results never depend on it) */
  const pto_gview *ahead;
  uint32_t n_ahead;
  /* lines to prefetch for what runs next (core/prefetch.h), a few at a
   * time while this instruction runs; NULL: none. Never changes results. */
  struct pto_pf *pf;
} pto_targs;

/* Most windows pto_targs.ahead lists. */
#define PTO_AHEAD_MAX 4

/* Returns 0 or a negative pto_status. */
typedef int (*pto_tileop_fn)(int op, const pto_targs *a);

/* Metadata of built-in op (0 <= op < PTO_OP_COUNT) or custom op, or NULL. */
const pto_insn_info *pto__insn_info(int op);
const char *pto__insn_name(int op); /* "?" when unknown */
const char *pto__family_name(pto_insn_family f);
const char *pto__class_name(pto_insn_class c); /* "binary", ...; "?" */

/* ---- the facts of an operand class -------------------------------------- */

/* Dtype sets (pto_operand.dtypes): bit d for pto_dtype d, and PTO_DT_NUM
 * for "f32, or i32 when the instruction has PTO_IF_INT" (resolved by
 * pto__insn_operand). */
#define PTO_DT(d) (1u << (d))
enum {
  PTO_DT_F32 = PTO_DT(PTO_F32),
  PTO_DT_I32 = PTO_DT(PTO_I32),
  PTO_DT_MM = PTO_DT(PTO_F32) | PTO_DT(PTO_BF16) | PTO_DT(PTO_F16),
  PTO_DT_ANY = (1u << PTO_DTYPE_COUNT) - 1,
  PTO_DT_NUM = 1u << 15,
};

/* What an operand is to its instruction (pto_operand.role). */
typedef enum pto_role {
  PTO_ROLE_NONE,   /* no such operand */
  PTO_ROLE_TILE,   /* a tile (its shape: the class's operand rules) */
  PTO_ROLE_ROWVEC, /* one column: a value per row */
  PTO_ROLE_COLVEC, /* one row: a value per column */
  PTO_ROLE_INDEX,  /* i32 indices, row-major over its valid region */
  PTO_ROLE_STATE,  /* an online softmax's (alpha, m, l) per row */
  /* a matmul's left operand (L0A), packed or not as PTO_TF_PACK_A says,
   * panels of imm[0] rows */
  PTO_ROLE_MM_A,
  /* its right operand (L0B), PTO_TF_PACK_B, panels of imm[1] cols */
  PTO_ROLE_MM_B,
  PTO_ROLE_MM_C, /* its result, in L0C */
  /* a destination written packed as PTO_TF_PACK_A (PACKED_A) or
   * PTO_TF_PACK_B (PACKED_B) packs, panels of imm[0]: born a matmul's
   * left or right operand */
  PTO_ROLE_PACKED_A,
  PTO_ROLE_PACKED_B,
  PTO_ROLE_COUNT
} pto_role;

/* What an instruction may write of a destination (pto_operand.writes). */
typedef enum pto_extent {
  PTO_EXT_VALID,    /* its valid region */
  PTO_EXT_CAPACITY, /* its rows x cols (TFILLPAD: the valid region too) */
  /* the panels packing its valid region (PTO_TF_PACK_A / PACK_B, or its
   * PACKED_A / PACKED_B role), their padding included; plain: VALID */
  PTO_EXT_PANELS,
  PTO_EXT_WINDOW, /* src0's valid region at (imm[0], imm[1]) (TINSERT) */
} pto_extent;

/* Operand attributes (pto_operand.attr). */
enum {
  /* a TLOAD's destination: may be loaded packed as either matmul operand
   * (PTO_TF_PACK_A or PACK_B, panel imm[0]) */
  PTO_OA_PACKABLE = 1u << 0,
  /* its valid region is set by the instruction (TFILLPAD), not read */
  PTO_OA_SETS_VALID = 1u << 1,
};

typedef struct pto_operand {
  uint8_t role;    /* pto_role */
  uint8_t level;   /* a cube program keeps it in this pto_mem_level;
                      PTO_MEM_LEVEL_COUNT: its program's default level */
  uint8_t writes;  /* destinations: pto_extent */
  uint8_t attr;    /* PTO_OA_* */
  uint16_t dtypes; /* accepted: PTO_DT_* */
} pto_operand;

/* What an instruction does with a global view (pto_insn_facts.g, g2). */
typedef enum pto_gaccess {
  PTO_GA_NONE,
  PTO_GA_READ,  /* reads it */
  PTO_GA_WRITE, /* writes it (with its accumulate flag: adds into it) */
} pto_gaccess;

/* Which part of the view it touches (pto_insn_facts.gpart). */
typedef enum pto_gpart {
  PTO_GP_NONE,
  PTO_GP_DST0, /* the window dst0's valid region covers, from (0, 0) */
  PTO_GP_SRC0, /* the window src0's valid region covers */
  /* the rows its index operand picks (those in [0, g.rows)), their first
   * pto_insn_facts.gcols(shape) columns */
  PTO_GP_ROWS,
  PTO_GP_ALL, /* the whole view */
} pto_gpart;

/* Which engine-native dtype a matmul's packed operands may keep
 * (pto_insn_facts.native): operands that must all be native and of one
 * dtype: bits 1 << r for source r, PTO_NATIVE_G for the global view. 0:
 * the instruction widens every operand to f32. */
#define PTO_NATIVE_G 0x80u

/* An instruction's operands as its functions read them: valid shapes
 * (rows, cols) and dtypes of every source (optional ones included) and
 * destination, the global views' shapes and dtypes, its flags and
 * immediates, and the matmul micro-kernel's row block mr of the table that
 * runs it (scratch). Built from pto_targs (pto__shape_of) or from a
 * program (partitioner). */
typedef struct pto_insn_shape {
  int op;
  uint8_t n_src, n_dst;
  uint32_t src[PTO_MAX_SRC][2], dst[PTO_MAX_DST][2];
  pto_dtype sdt[PTO_MAX_SRC], ddt[PTO_MAX_DST];
  int64_t g[2], g2[2];
  pto_dtype gdt, g2dt;
  uint32_t flags;
  int32_t imm[2];
  uint32_t mr;
} pto_insn_shape;

typedef uint64_t (*pto_shape_fn)(const pto_insn_shape *s);

/* The facts of an operand class (core/isa.c). */
typedef struct pto_insn_facts {
  /* src[0 .. n_src) and, where src_if allows, src[n_src]: the optional
   * source its flags add; dst[0 .. n_dst) */
  pto_operand src[PTO_MAX_SRC], dst[PTO_MAX_DST];
  uint16_t gdtypes, g2dtypes; /* the views' accepted dtypes (PTO_DT_*) */
  uint8_t g, g2;              /* pto_gaccess */
  uint8_t gpart, g2part;      /* pto_gpart */
  uint8_t native;             /* PTO_NATIVE_G | 1 << r */
  /* its dst element (r, c) depends only on source elements at (r, c), or
   * on a block it reads whole first: a destination may be the very buffer
   * of a source of its valid shape (tileops/tileops.h) */
  uint8_t inplace;
  /* per-call flags any of which adds a source after the row's n_src (a
   * row scale, a softmax state to continue) */
  uint32_t src_if;
  /* its result accumulates into its previous value: always
   * (PTO_ACC_ALWAYS), under any of these per-call flags, or never (0).
   * A tile result (dst0, PTO_ROLE_MM_C) is given its previous value in
   * the tile graph as the source after the row's n_src (the planner
   * makes dst0 that source's buffer); a global one adds into g. */
  uint32_t acc_if;
  /* flops: arithmetic operations on its elements, as functions of the
   * valid shapes: 2 M N K for a matmul (an epilogue not counted), one per
   * element per arithmetic step for the vector instructions (a compare, a
   * select or a transcendental is one), 0 for moves, loads and sorts.
   * bytes: global bytes read plus written, every index valid.
   * scratch: local bytes it needs beyond its operands, which the planner
   * reserves in its program's level (PTO_TF_SCRATCH); 0 for most.
   * gcols: the columns a PTO_GP_ROWS view is read in. NULL: 0. */
  pto_shape_fn flops, bytes, scratch, gcols;
} pto_insn_facts;

#define PTO_ACC_ALWAYS UINT32_MAX

/* The facts of op's class; NULL for an unknown op. */
const pto_insn_facts *pto__insn_facts(int op);
const pto_insn_facts *pto__class_facts(pto_insn_class c);

/* Source r (is_dst 0) or destination r (is_dst 1) of op as the table
 * declares it, PTO_DT_NUM resolved for op; role PTO_ROLE_NONE past the
 * operands the row and the optional source declare (and for a custom
 * instruction's: tiles of any dtype). */
pto_operand pto__insn_operand(int op, int is_dst, int r);

/* How many sources op takes under per-call flags: the row's n_src, plus
 * one when a flag of src_if is set. */
int pto__insn_n_src(int op, uint32_t flags);

/* Whether op's result accumulates into its previous value under flags. */
static inline int pto__facts_acc(const pto_insn_facts *f, uint32_t flags) {
  return f->acc_if == PTO_ACC_ALWAYS || (f->acc_if & flags) != 0;
}

/* Whether an instruction of the tile graph with n_src sources accumulates
 * into the tile its extra source holds (in place once planned). */
int pto__insn_accumulates(int op, uint32_t flags, int n_src);

/* The built-in rows and the classes' facts, for the inline queries. */
extern const pto_insn_info pto__insn_rows[PTO_OP_COUNT];
extern const pto_insn_facts pto__class_table[PTO_CLASS_COUNT];

/* Whether op writes its global window (a.g) rather than reading it (a
 * PTO_IF_STORE2 instruction reads a.g and writes a.g2). */
static inline int pto__insn_stores(int op) {
  return op >= 0 && op < PTO_OP_COUNT &&
         pto__class_table[pto__insn_rows[op].cls].g == PTO_GA_WRITE;
}
/* Whether op reads the window its dst0's valid region covers into its
 * destinations, row by row, as TLOAD does (what the executor prefetches). */
static inline int pto__insn_loads(int op) {
  if (op < 0 || op >= PTO_OP_COUNT)
    return 0;
  const pto_insn_facts *f = &pto__class_table[pto__insn_rows[op].cls];
  return f->g == PTO_GA_READ && f->gpart == PTO_GP_DST0;
}
/* The instruction a pass inserts to copy a tile into another of the same
 * shape and dtype: the table's first PTO_IF_COPY instruction between two
 * tiles. */
int pto__insn_copy(void);

/* The shape block of op's arguments a; mr: the running table's matmul row
 * block (0 when it does not matter). */
void pto__shape_of(int op, const pto_targs *a, uint32_t mr, pto_insn_shape *s);

/* The flops, global bytes and scratch bytes of op on operands of shape s
 * (pto_insn_facts); 0 for an unknown op. */
uint64_t pto__insn_flops_of(const pto_insn_shape *s);
uint64_t pto__insn_bytes_of(const pto_insn_shape *s);
uint64_t pto__insn_scratch_of(const pto_insn_shape *s);
uint64_t pto__insn_gcols_of(const pto_insn_shape *s);

/* The local bytes of op's operands per level (bytes[PTO_MEM_LEVEL_COUNT],
 * added to): each tile's capacity in cap (rows, cols of source r at
 * cap[2 r], cap[2 r + 1], of destination d at cap[2 (PTO_MAX_SRC + d)]
 * ...), in the level a program of core type `core` keeps it, and its
 * scratch in the program's level. */
void pto__insn_footprint(const pto_insn_shape *s, pto_core_type core,
                         const uint32_t *cap,
                         uint64_t bytes[PTO_MEM_LEVEL_COUNT]);

/* Whether op may write element i (in elements from its data) of its
 * destination d, given the arguments a it runs with (pto_operand.writes). */
int pto__insn_may_write(int op, int d, const pto_targs *a, size_t i);

/* The floating-point operations of a matmul, 2 M N K (0 for any other
 * instruction), from the valid (rows, cols) of its src0, src1 and dst0:
 * the table's flops for the matmul family, for traces. */
uint64_t pto__insn_flops(int op, uint32_t flags, const uint32_t s0[2],
                         const uint32_t s1[2], const uint32_t d[2]);

/* The scratch the plan gave op's call a (PTO_TF_SCRATCH), at least `need`
 * bytes, or NULL: the kernel then does without (a stack buffer or the
 * reference). */
static inline void *pto__targs_scratch(const pto_targs *a, int n_dst,
                                       size_t need) {
  if (!(a->flags & PTO_TF_SCRATCH))
    return NULL;
  const pto_tile *t = a->dst[n_dst];
  const size_t have = (size_t)t->rows * t->stride * 4; /* an i32 tile */
  return have >= need ? t->data : NULL;
}

/* The scratch TMATMUL and TMATMUL_ACC take to pack, in f32, the operands
 * the plan left unpacked (a tile an instruction computed): A's panels of
 * mr rows (*a_bytes; 0 when pack_a, or mr 0: no table packs), then B's
 * panels of at most PTO_MM_PANEL_MAX cols (*b_bytes; 0 when pack_b), each
 * 64-byte aligned. The table's facts declare it (core/isa.c) and the
 * kernels pack into it so (tileops/mm_loops.h). */
static inline void pto__mm_pack_scratch(uint64_t M, uint64_t N, uint64_t K,
                                        uint64_t mr, int pack_a, int pack_b,
                                        uint64_t *a_bytes, uint64_t *b_bytes) {
  const uint64_t a = mr ? 4 * ((M + mr - 1) / mr * mr) * ((K + 15) / 16 * 16)
                        : 0,
                 b = 4 * K * ((N + PTO_MM_PANEL_MAX - 1) / PTO_MM_PANEL_MAX *
                              PTO_MM_PANEL_MAX);
  *a_bytes = pack_a ? 0 : (a + 63) / 64 * 64;
  *b_bytes = pack_b ? 0 : (b + 63) / 64 * 64;
}

/* The stack buffers of the kernels whose scratch the table declares
 * (core/isa.c): past them a kernel works in its scratch. */
#define PTO_GA_SLOTS_STACK 2048 /* TMATMUL_GA: valid slots listed */
#define PTO_WSG_WEIGHTS 1024    /* TMATMUL_RELU_WSUM_G: weights of a pass */
/* TMATMUL_GA, TMATMUL_RELU_WSUM_G: K of a group of bf16 rows widened */
#define PTO_WIDEN_K_STACK 512
#define PTO_TOPK_BUF 4096u      /* TTOPK: pairs a row selects among */
#define PTO_TOPK_MSD_MAX 65535u /* TTOPK: most pairs sorted by radix */

#endif /* PTO_CORE_ISA_H */
