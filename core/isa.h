/* core/isa.h (internal): opcodes and per-instruction metadata, generated from
 * core/isa.def, and the argument block every tile instruction takes. */
#ifndef PTO_CORE_ISA_H
#define PTO_CORE_ISA_H

#include <stdint.h>

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

typedef enum pto_opcode {
#define PTO_INSN(name, fam, core, nsrc, ndst, flags) PTO_OP_##name,
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
} pto_insn_info;

/* Per-call flags (pto_targs.flags). */
enum {
  /* TSTORE: accumulate into global; TSOFTMAXONLINE: continue the state
   * in src2 */
  PTO_TF_ACC = 1u << 0,
  PTO_TF_STRICT = 1u << 1,  /* TGATHER: out-of-range index is an error */
  PTO_TF_TRANS_A = 1u << 2, /* TMATMUL*: src0 stored transposed */
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
#define PTO_MAX_DST 2

struct pto_pf;

/* Everything one tile instruction needs. */
typedef struct pto_targs {
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

/* Whether op writes its global window (a.g) rather than reading it (a
 * PTO_IF_STORE2 instruction reads a.g and writes a.g2). */
static inline int pto__insn_stores(int op) {
  return op == PTO_OP_TSTORE || op == PTO_OP_TROWEXPANDMULSTORE;
}
/* Whether op is a matmul: operands in its first two sources, packed or
 * not, the result in dst0 (L0C). */
static inline int pto__insn_matmul(int op) {
  return op == PTO_OP_TMATMUL || op == PTO_OP_TMATMUL_ACC ||
         op == PTO_OP_TMATMUL_RELU_WSUM || op == PTO_OP_TMATMUL_GA ||
         op == PTO_OP_TMATMUL_GB || op == PTO_OP_TMATMUL_RELU_WSUM_G;
}
/* The floating-point operations of a matmul, 2 M N K (0 for any other
 * instruction), from the valid (rows, cols) of its src0, src1 and dst0 as
 * tileops/check_matmul.c reads them: M x K by K x N, the table's rows in
 * place of TMATMUL_GA's src0 (its indices) and of TMATMUL_RELU_WSUM_G's
 * left operand (its N keys). */
static inline uint64_t pto__insn_flops(int op, uint32_t flags,
                                       const uint32_t s0[2],
                                       const uint32_t s1[2],
                                       const uint32_t d[2]) {
  uint64_t M, N, K;
  if (op == PTO_OP_TMATMUL_GA) {
    M = (uint64_t)s0[0] * s0[1];
    K = s1[0];
    N = s1[1];
  } else if (op == PTO_OP_TMATMUL_GB) {
    M = s0[0];
    K = s0[1];
    N = d[1];
  } else if (op == PTO_OP_TMATMUL_RELU_WSUM_G) {
    K = s0[0];
    M = s0[1];
    N = d[1];
  } else if (pto__insn_matmul(op)) {
    const int ta = (flags & PTO_TF_TRANS_A) != 0,
              tb = (flags & PTO_TF_TRANS_B) != 0;
    M = s0[ta];
    K = s0[!ta];
    N = s1[!tb];
  } else {
    return 0;
  }
  return 2 * M * N * K;
}
/* The part source r of a matmul plays: its left operand (packed as
 * PTO_TF_PACK_A packs, in L0A), its right one (PTO_TF_PACK_B, L0B), or
 * neither (never packed): the indices of rows read from the global window
 * (TMATMUL_GA's src0, TMATMUL_GB's src1), TMATMUL_RELU_WSUM_G's weights
 * (src1; its src0 is Q^T, a right operand: the keys, read in place, are
 * the left), and every source past the first two. */
enum { PTO_MM_PLAIN, PTO_MM_A, PTO_MM_B };
static inline int pto__insn_mm_role(int op, int r) {
  if (op == PTO_OP_TMATMUL_GA)
    return r == 1 ? PTO_MM_B : PTO_MM_PLAIN;
  if (op == PTO_OP_TMATMUL_GB)
    return r == 0 ? PTO_MM_A : PTO_MM_PLAIN;
  if (op == PTO_OP_TMATMUL_RELU_WSUM_G)
    return r == 0 ? PTO_MM_B : PTO_MM_PLAIN;
  return r == 0 ? PTO_MM_A : r == 1 ? PTO_MM_B : PTO_MM_PLAIN;
}
/* Whether an instruction of the tile graph accumulates into the value of
 * its src2 (in place once planned): TMATMUL_ACC, and TMATMUL_GB with
 * PTO_TF_ACC; n_src counts the accumulator. */
static inline int pto__insn_accumulates(int op, uint32_t flags, int n_src) {
  return n_src >= 3 &&
         (op == PTO_OP_TMATMUL_ACC ||
          (op == PTO_OP_TMATMUL_GB && (flags & PTO_TF_ACC)));
}
/* Whether op reads its global window into a tile as TLOAD does. */
static inline int pto__insn_loads(int op) {
  return op == PTO_OP_TLOAD || op == PTO_OP_TLOADROWMAX ||
         op == PTO_OP_TLOADEXPDIFSUM || op == PTO_OP_TLOADSOFTMAXSTORE;
}

#endif /* PTO_CORE_ISA_H */
